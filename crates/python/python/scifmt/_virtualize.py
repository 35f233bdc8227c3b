"""``scifmt.virtualize``: WKW data and b2nd arrays as virtual Zarr v3 references (the
``scifmt virtualize`` command in this process): every block of every WKW file, every chunk of a
``.b2nd`` frame one chunk, referenced in place by file URL, offset and length, without reading
a voxel."""

import os
from typing import Any, Dict, List, Optional, Sequence, Union

from scifmt._convert import _flag, _location, _name, _pairs
from scifmt._scifmt import virtualize as _core

__all__ = ["OutputExistsError", "OverlapError", "VirtualizeError", "virtualize"]

VirtualizeError = _core.VirtualizeError
OutputExistsError = _core.OutputExistsError
OverlapError = _core.OverlapError

#: The most requests in flight a call may ask for.
MAX_CONCURRENCY = _core.MAX_CONCURRENCY

_PathLike = Union[str, "os.PathLike[str]"]


def _sources(sources: Any) -> List[str]:
    """One source (``str`` or ``os.PathLike``) or a sequence of them, as a list of ``str``."""
    if isinstance(sources, (str, os.PathLike)):
        return [_location(sources, "sources")]
    if isinstance(sources, (bytes, bytearray)) or not hasattr(sources, "__iter__"):
        raise TypeError(
            "sources must be a str or os.PathLike, or a sequence of them, "
            f"not {type(sources).__name__}"
        )
    out = [_location(s, "sources[]") for s in sources]
    if not out:
        raise ValueError("sources is empty: give at least one WKW dataset or mag, or b2nd file")
    return out


def _concurrency(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"concurrency must be an int, not {type(value).__name__}")
    if not 1 <= value <= MAX_CONCURRENCY:
        raise ValueError(f"concurrency={value}: must be 1..={MAX_CONCURRENCY}")
    return value


def virtualize(
    sources: Union[_PathLike, Sequence[_PathLike]],
    dst: _PathLike,
    to: str = "icechunk",
    *,
    overwrite: bool = False,
    fsync: bool = False,
    concurrency: int = 8,
    storage_options: Optional[Dict[str, str]] = None,
    record_size: int = 100_000,
) -> Dict[str, Any]:
    """Writes the virtual Zarr v3 references of ``sources`` to ``dst``, like
    ``scifmt virtualize SRC... DST --to TO``.

    A source is a webKNOSSOS WKW dataset root (``datasource-properties.json``: every layer and
    mag; a group per layer with its OME-NGFF ``multiscales``, an array per mag at
    ``<layer>/<mag>``), a WKW mag directory (``header.wkw``: the array at the root) or a b2nd
    array (python-blosc2's ``.b2nd`` files: a contiguous Blosc2 frame with the ``b2nd``
    metalayer; the array at the root). A source is taken for a b2nd frame, as ``scifmt
    virtualize`` tells them apart, when it is a local file starting with the frame magic, a
    path or URL named ``*.b2nd`` or ``*.b2frame``, or a directory holding ``chunks.b2frame``
    (a sparse frame, each chunk referenced as its whole chunk file); for WKW otherwise. Several sources, of either kind, each become
    the group (dataset) or array (mag, frame) named like their directory or file (``a.b2nd``
    stays ``a.b2nd``) under a root group; two of one name are refused.

    WKW arrays have the shape ``(c, x, y, z)`` and one WKW block per chunk, decoded through the
    ``transpose`` codec and, for LZ4 and LZ4HC files, scifmt's ``lz4-block`` codec (registered
    with zarr-python and numcodecs by this package); a missing file is a run of missing chunks
    (fill value 0). Only headers and jump tables are read. A b2nd array keeps its shape, dtype
    (bool, integers, floats, complex, either byte order) and chunk shape, one frame chunk per
    chunk, decoded by scifmt's ``b2nd`` codec with the frame's block shape; chunks stored as
    runs of zeros or left uninitialised are missing chunks (fill value 0), runs of NaNs are
    written inline (each a 32-byte Blosc2 chunk of NaNs). Only the frame's header, metalayers,
    index and trailer are read (for a sparse frame, ``chunks.b2frame`` and the chunk files'
    metadata). Refused with ``VirtualizeError`` naming the file:
    frames without the ``b2nd`` metalayer (plain super-chunks), 0-D arrays, dtypes without a
    Zarr v3 data type (structured, strings, datetimes) and damaged or truncated frames.

    Each side is a local path or a URL (``s3://``, ``gs://``, ``az://``, ``http(s)://``,
    ``file://``), configured from the environment (``AWS_*``, ``GOOGLE_*``, ``AZURE_*``) and
    then ``storage_options`` (the same keys, for every side).

    ``to``: ``"icechunk"`` (the default: an Icechunk repository, format 1, which icechunk 1.x
    and 2.x read; each chunk carries its file's modification time or ETag, so Icechunk refuses
    a chunk whose file changed since; its virtual chunk containers are the sources'
    directories (``file:///…/``, ``s3://…/``, ``az://…/``, ``gs://…/``), which a reader
    authorizes when opening it:
    ``Repository.open(storage, authorize_virtual_chunk_access={prefix: None})`` (for
    ``gs://``, with ``icechunk.gcs_credentials(...)``: Icechunk reads GCS anonymously
    otherwise; for ``http(s)://``, ``None``: the chunks of an HTTP source carry its
    ``Last-Modified`` time, which Icechunk checks with ``If-Unmodified-Since``; icechunk 1.x
    drops a URL's port when it reads chunk locations, so an HTTP source on a port other than
    the scheme's default needs icechunk 2 to be read). ``dst`` is a
    local directory, an ``s3://`` or ``gs://`` prefix or an ``az://container/`` prefix.
    An existing repository is updated with ``overwrite=True``: one new commit on ``main`` that
    sets only what changed, skipping files whose modification time or ETag is the one
    recorded; its earlier snapshots stay in its history. A local directory that is not a
    repository is replaced with ``overwrite=True`` once the new repository is complete; an
    object store prefix holding other objects is refused),
    ``"kerchunk"`` (a kerchunk JSON file, version 1, that fsspec's
    ``ReferenceFileSystem`` reads and zarr-python 3 through it; each source file's modification
    time or ETag is kept under its top-level ``scifmt`` key), ``"kerchunk-parquet"`` (kerchunk's
    Parquet reference directory, for datasets with millions of chunks: ``record_size`` chunks
    per Parquet file, default 100000; fsspec's ``ReferenceFileSystem`` given the directory and
    its ``remote_protocol`` reads it, with fastparquet, as a Zarr v2 hierarchy, the chunks
    through this package's numcodecs codecs; an array needs a group: a dataset root or several
    sources; an object store prefix must be empty). An existing kerchunk output is refused
    unless ``overwrite`` (it is replaced only once the new one is complete); an output that is a
    source, lies inside one or contains one is refused either way. ``fsync`` syncs a local
    kerchunk output before it is renamed into place (Icechunk writes its files itself, without
    it). ``concurrency``: requests in flight to an object
    store (the headers and jump tables of ``4 × concurrency`` WKW files per round; local files
    are read one at a time; a frame's metadata takes one or two rounds), 1..1024.

    Returns the summary as a dict: ``to``, ``sources``, ``groups``, ``arrays``, ``files``,
    ``unchanged_files`` (files an Icechunk update kept without reading them; 0 otherwise),
    ``references`` (chunks), ``inline`` (chunks written inline: a frame's runs of NaNs),
    ``bytes_read`` (headers and jump tables, frames' metadata), ``seconds``, and
    ``bytes_written`` (kerchunk) or ``snapshot`` (Icechunk: the snapshot id ``main`` now points
    at) and, for an update, ``update`` (a dict: ``unchanged``, ``set`` and ``deleted`` chunks,
    ``nodes_deleted``).

    Raises ``VirtualizeError`` when it fails (the message names the file or URL, never
    credentials); ``OutputExistsError`` (also a ``FileExistsError``) for an existing output
    without ``overwrite``; ``OverlapError`` (also a ``ValueError``) for an output inside or
    around a source; ``ValueError`` / ``TypeError`` for invalid arguments. The GIL is released
    while it runs. Ctrl-C (``SIGINT``) stops it between files and raises ``KeyboardInterrupt``:
    nothing is written and an existing output is untouched.
    """
    srcs = _sources(sources)
    dst = _location(dst, "dst")
    to = _name(to, "to")
    overwrite = _flag(overwrite, "overwrite")
    fsync = _flag(fsync, "fsync")
    concurrency = _concurrency(concurrency)
    pairs = _pairs(storage_options)
    if isinstance(record_size, bool) or not isinstance(record_size, int):
        raise TypeError(f"record_size must be an int, not {type(record_size).__name__}")
    if not 1 <= record_size <= 100_000_000:
        raise ValueError(f"record_size={record_size}: must be 1..=100000000")
    return dict(
        _core.virtualize(
            srcs, dst, to, overwrite=overwrite, fsync=fsync, concurrency=concurrency,
            storage_options=pairs, record_size=record_size,
        )
    )  # fmt: skip


def __dir__() -> list:
    """The public API only."""
    return sorted(__all__)
