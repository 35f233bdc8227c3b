"""A faster drop-in for the ``wkw`` package: ``import scifmt.wkw as wkw``.

See ``scifmt.wkw.wkw`` for the differences from the reference and ``scifmt.wkw.dask`` for
Dask arrays.
"""

from .wkw import (
    Dataset,
    File,
    Header,
    InvalidArgumentError,
    OutputExistsError,
    OverlapError,
    WKWException,
    verify,
)

__all__ = [
    "Header", "Dataset", "File", "WKWException", "InvalidArgumentError", "OutputExistsError",
    "OverlapError", "verify",
]


def __dir__() -> list:
    """The public API only (the modules this one imports stay out of ``dir()``)."""
    return sorted(__all__)
