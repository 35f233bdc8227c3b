"""Scientific formats from Rust (see the package README).

Submodules: ``scifmt.wkw`` (a drop-in for the ``wkw`` package) and ``scifmt.wkw.dask``.
"""

from scifmt._scifmt import __version__

__all__ = ["__version__"]
