"""The checks every function that writes a file runs first (``scifmt.b2nd.save``,
``scifmt.dwe.write``): an output that is its input is refused, an existing one is replaced only
with ``overwrite=True``, and a directory is never replaced by a file."""

import os
from typing import Optional

from scifmt import _scifmt


def check_file_output(path: str, overwrite: bool, source: Optional[str] = None) -> None:
    """Raises ``ValueError`` when ``path`` is ``source`` (the file the data comes from), inside
    it or around it, compared by file identity (symlinks, ``..`` and hard links see through);
    ``IsADirectoryError`` when ``path`` is a directory; ``FileExistsError`` when it exists and
    ``overwrite`` is false. ``TypeError`` for an ``overwrite`` that is not a bool."""
    if not isinstance(overwrite, bool):
        raise TypeError(f"overwrite must be a bool, not {type(overwrite).__name__}")
    if source is not None:
        _scifmt.ensure_apart(source, path)
    if os.path.isdir(path):
        raise IsADirectoryError(
            f"{path} is a directory: a file never replaces it (also not with overwrite=True)"
        )
    if not overwrite and os.path.lexists(path):
        raise FileExistsError(f"{path} exists: overwrite=True replaces it")
