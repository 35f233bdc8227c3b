"""``scifmt.virtual``: WKW data and b2nd arrays for VirtualiZarr (2.5).

:class:`WKWParser` and :class:`B2ndParser` are VirtualiZarr parsers:
``virtualizarr.open_virtual_dataset(url, registry=registry, parser=WKWParser())`` returns an
``xarray.Dataset`` whose variables are virtual arrays over the blocks of WKW files (or, with
``B2ndParser()``, over the chunks of a python-blosc2 ``.b2nd`` file), read in place:
``.vz.to_icechunk(...)`` (and for WKW ``.vz.to_kerchunk(...)``) write them out, and
``loadable_variables=[...]`` (or ``xarray.open_zarr(parser(url, registry),
consolidated=False)``) loads the values through the registry's object stores (a Dataset of
virtual arrays itself cannot ``.load()``). The references come from Rust in bulk
(``scifmt.virtualize``'s producers, ``wkw_zarr::virtualize`` and ``blosc2_frame::virtualize``):
only the files' headers and jump tables (a frame's header, metalayers, index and trailer) are
read, and the manifests arrive as NumPy arrays, not one Python call per chunk.

VirtualiZarr is not a dependency of ``scifmt``: install ``virtualizarr`` (2.5) and ``obstore``
(``pip install 'scifmt[virtual]'``) to call the parsers.
"""

import os
import urllib.parse
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from scifmt._convert import _pairs
from scifmt._scifmt import virtualize as _core
from scifmt._virtualize import VirtualizeError, _concurrency

__all__ = ["AXES", "B2ndParser", "VirtualizeError", "WKWParser"]

#: The axis orders a :class:`WKWParser` gives its arrays.
AXES = ("zyxc", "cxyz")


def _local_or_url(url: str) -> str:
    """The source for Rust: a ``file://`` URL as its local path (VirtualiZarr percent-encodes
    it), any other URL as it is."""
    if url.startswith("file://"):
        parsed = urllib.parse.urlparse(url)
        if parsed.netloc not in ("", "localhost"):
            raise ValueError(f"{url}: a file:// URL of another host ({parsed.netloc!r})")
        return urllib.parse.unquote(parsed.path)
    return url


def _node_name(url: str) -> str:
    """The last segment of a path or URL (the name of a mag given as the source)."""
    name = _local_or_url(url).rstrip("/").rsplit("/", 1)[-1]
    return name or "data"


def _reorder(meta: Dict[str, Any], path: str) -> Dict[str, Any]:
    """An array's ``zarr.json`` ``(c, x, y, z)`` with a ``transpose [3, 2, 1, 0]`` codec as the
    same bytes in their storage order: ``(z, y, x, c)``, no transpose."""
    codecs = list(meta["codecs"])
    first = codecs[0] if codecs else {}
    if first.get("name") != "transpose" or list(first.get("configuration", {}).get("order", ())) != [3, 2, 1, 0]:
        raise VirtualizeError(f"array {path!r}: expected a transpose [3, 2, 1, 0] codec first")  # pragma: no cover
    meta = dict(meta)
    meta["codecs"] = codecs[1:]
    meta["shape"] = list(reversed(meta["shape"]))
    grid = dict(meta["chunk_grid"])
    config = dict(grid["configuration"])
    config["chunk_shape"] = list(reversed(config["chunk_shape"]))
    grid["configuration"] = config
    meta["chunk_grid"] = grid
    return meta


def _sized(meta: Dict[str, Any]) -> None:
    """Puts the decoded chunk size into an ``lz4-block`` codec's configuration (numcodecs'
    ``lz4-block``, into which VirtualiZarr's Kerchunk writer turns it, needs it)."""
    chunk = meta["chunk_grid"]["configuration"]["chunk_shape"]
    size = int(np.prod(chunk, dtype=np.int64)) * np.dtype(meta["data_type"]).itemsize
    for codec in meta["codecs"]:
        if codec.get("name") == "lz4-block":
            codec["configuration"] = {**codec.get("configuration", {}), "size": size}


def _manifest(url: str, name: str, grid: Tuple[int, ...], urls: List[str], index: Any,
              offsets: Any, lengths: Any, inline_at: Any,
              order: Optional[Tuple[int, ...]] = None) -> Any:  # fmt: skip
    """The ``ChunkManifest`` of one array as ``_core.collect`` gives it (flat C-order arrays
    over ``grid``), its axes permuted to ``order`` if given. A VirtualiZarr 2.5 manifest holds byte ranges of files only: an array with
    inline chunks (a b2nd frame's runs of NaNs, stored only as a flag in its index) is refused
    rather than given with those chunks missing (they would read as the fill value 0)."""
    from virtualizarr.manifests import ChunkManifest

    inline_at = np.asarray(inline_at)
    if inline_at.size:
        first = tuple(int(i) for i in np.unravel_index(int(inline_at.min()), grid))
        key = "c/" + "/".join(map(str, first))
        raise VirtualizeError(
            f"{url}: array {name!r} has {inline_at.size} chunk(s) stored only as a flag (runs "
            f"of NaNs), the first {key} (grid position {list(first)}): their bytes are in no "
            f"file, and a VirtualiZarr 2.5 ChunkManifest holds only byte ranges of files (no "
            f"inline chunks), so they would read as the fill value 0. Use "
            f"scifmt.virtualize(source, 'refs.json', to='kerchunk'), which writes them inline"
        )
    table = np.array(["", *urls], dtype=np.dtypes.StringDType())

    def shaped(a: Any) -> np.ndarray:
        a = np.asarray(a).reshape(grid)
        return a if order is None else np.ascontiguousarray(a.transpose(order))

    return ChunkManifest.from_arrays(paths=table[shaped(index)], offsets=shaped(offsets),
                                     lengths=shaped(lengths), validate_paths=False)  # fmt: skip


class WKWParser:
    """A VirtualiZarr 2.5 parser for WKW data (``Parser.__call__(url, registry) ->
    ManifestStore``).

    The source (the ``url`` given to ``open_virtual_dataset``: a local path, ``file://``,
    ``s3://``, ``gs://``, ``az://`` or ``http(s)://`` URL) is a WKW mag directory
    (``header.wkw``) or a webKNOSSOS WKW dataset root (``datasource-properties.json``). The
    nodes are those of ``scifmt.virtualize``: a mag is one array; a dataset is a group per
    layer holding an array per mag (``color/1``, ``color/2-2-1``, ...). VirtualiZarr's
    ``open_virtual_dataset`` shows one flat group, so for a dataset pick the layer with
    ``group="color"`` (its mags become the variables ``"1"``, ``"2-2-1"``, ...; the layer's
    attributes, OME-NGFF ``multiscales``, the Dataset's) and optionally one mag with
    ``array="1"``. Only the chosen layer's (or mag's) files are read. A mag given directly is
    the one variable named like its directory.

    ``axes``: ``"zyxc"`` (the default) gives each array the shape ``(z, y, x, c)``, the order
    in which a WKW block stores its voxels, so a chunk is decoded without a ``transpose``
    codec and every VirtualiZarr writer can write it (Kerchunk's Zarr v2 metadata has no
    transpose); ``ds["1"].transpose("c", "x", "y", "z")`` is what ``wkw.Dataset.read`` returns.
    ``"cxyz"`` gives ``scifmt.virtualize``'s layout, shape ``(c, x, y, z)`` through a
    ``transpose`` codec (loading and ``.vz.to_icechunk`` work; ``.vz.to_kerchunk`` does not:
    VirtualiZarr writes Zarr v2 metadata, which has no transpose filter). Dimension names
    are ``z``, ``y``, ``x``, ``c``; with several mags in one Dataset (they differ in size) the
    spatial ones are suffixed with the mag, ``z_2-2-1``.

    Chunks of LZ4 and LZ4HC files decode through scifmt's ``lz4-block`` codec (zarr-python
    finds it through the ``scifmt`` wheel's entry points; in Kerchunk output it is the
    numcodecs codec ``lz4-block`` with the decoded ``size``). Missing files are missing chunks
    (fill value 0).

    ``concurrency``: requests in flight while the headers and jump tables are read from an
    object store; ``storage_options``: the object-store settings for reading them (as
    ``scifmt.convert``; the environment's ``AWS_*``, ``GOOGLE_*``, ``AZURE_*`` first). Loading
    chunks goes through the ``registry`` given to VirtualiZarr instead: register a store for
    every URL prefix of the references, e.g. ``ObjectStoreRegistry({"file:///":
    obstore.store.LocalStore()})`` for local files.

    Checksums: a VirtualiZarr ``ManifestArray`` holds only path, offset and length per chunk,
    so the source files' modification times or ETags that ``scifmt.virtualize`` keeps are not
    in the ``ManifestStore``; they are in :attr:`checksums` after the call (URL →
    ``{"etag": ...}`` or ``{"last_modified": [seconds, nanoseconds]}``), e.g. for
    ``.vz.to_icechunk(last_updated_at=...)``.

    Raises ``VirtualizeError`` (the message names the file or URL) when the source cannot be
    read or the selection names nothing, ``ValueError`` / ``TypeError`` for invalid arguments.
    """

    def __init__(
        self,
        group: Optional[str] = None,
        *,
        array: Optional[str] = None,
        axes: str = "zyxc",
        concurrency: int = 8,
        storage_options: Optional[Dict[str, str]] = None,
    ) -> None:
        for name, value in (("group", group), ("array", array)):
            if value is not None and not isinstance(value, str):
                raise TypeError(f"{name} must be a str or None, not {type(value).__name__}")
            if value is not None and (not value.strip("/") or "\0" in value):
                raise ValueError(f"{name}={value!r}: must name a node (e.g. \"color\", \"1\")")
        if not isinstance(axes, str):
            raise TypeError(f"axes must be a str, not {type(axes).__name__}")
        if axes not in AXES:
            raise ValueError(f"axes={axes!r}: must be one of {list(AXES)}")
        self.group = None if group is None else group.strip("/")
        self.array = None if array is None else array.strip("/")
        self.axes = axes
        self.concurrency = _concurrency(concurrency)
        self._pairs = _pairs(storage_options)
        #: Per source URL (of the references) its checksum when it was read, from every call.
        self.checksums: Dict[str, Dict[str, Any]] = {}
        #: The counts of the last call (``groups``, ``arrays``, ``files``, ``references``,
        #: ``inline``, ``bytes_read``).
        self.summary: Dict[str, int] = {}

    def __repr__(self) -> str:
        return (f"WKWParser(group={self.group!r}, array={self.array!r}, axes={self.axes!r}, "
                f"concurrency={self.concurrency})")  # fmt: skip

    def _selected(self, arrays: List[tuple], groups: List[Tuple[str, str]],
                  url: str) -> Tuple[List[tuple], str]:  # fmt: skip
        """The arrays the selection names, each with its variable name first, and the
        attributes (JSON) of the group they are in."""
        sel = "/".join(p for p in (self.group, self.array) if p)
        attrs = dict(groups)

        def parent(path: str) -> str:
            return path.rsplit("/", 1)[0] if "/" in path else ""

        exact = [a for a in arrays if a[0] == sel]
        if exact:
            path = exact[0][0]
            name = path.rsplit("/", 1)[-1] if path else _node_name(url)
            return [(name, *exact[0][1:])], attrs.get(parent(path), "{}") if path else "{}"
        children = [a for a in arrays if a[0] and parent(a[0]) == sel]
        if children:
            return [(a[0].rsplit("/", 1)[-1], *a[1:]) for a in children], attrs.get(sel, "{}")
        below = sorted(g for g in attrs if g and parent(g) == sel)
        where = f"group {sel!r}" if sel else "the source"
        if below:
            raise VirtualizeError(
                f"{url}: {where} holds groups, not arrays: pick one with "
                f"WKWParser(group=...), one of {below}"
            )
        raise VirtualizeError(
            f"{url}: no array or group at {sel!r} (groups: {sorted(g for g in attrs if g)})"
        )

    def __call__(self, url: str, registry: Any) -> Any:
        """The ``ManifestStore`` of the WKW data at ``url`` (see the class docs)."""
        import json

        from virtualizarr.manifests import ManifestArray, ManifestGroup, ManifestStore
        from zarr.core.metadata.v3 import ArrayV3Metadata

        if not isinstance(url, (str, os.PathLike)):
            raise TypeError(f"url must be a str, not {type(url).__name__}")
        url = os.fspath(url)
        only = self.group or ""
        if self.array is not None:
            only = f"{only}/{self.array}" if only else self.array
        groups, arrays, checksums, summary = _core.collect(
            [_local_or_url(url)], only=only, kind="wkw", concurrency=self.concurrency,
            storage_options=self._pairs,
        )  # fmt: skip
        self.summary = dict(summary)
        for u, c in checksums.items():
            self.checksums[u] = json.loads(c)
        chosen, attrs = self._selected(arrays, groups, url)
        several = len(chosen) > 1
        members = {}
        for name, meta_json, grid, urls, index, offsets, lengths, inline_at, _, _ in chosen:
            meta = json.loads(meta_json)
            grid = tuple(int(g) for g in grid)
            if self.axes == "zyxc":
                meta = _reorder(meta, name)
                order, dims = (3, 2, 1, 0), ["z", "y", "x", "c"]
            else:
                order, dims = None, ["c", "x", "y", "z"]
            manifest = _manifest(url, name, grid, urls, index, offsets, lengths, inline_at, order)
            if several:
                dims = [d if d == "c" else f"{d}_{name}" for d in dims]
            meta["dimension_names"] = dims
            _sized(meta)
            members[name] = ManifestArray(
                metadata=ArrayV3Metadata.from_dict(meta), chunkmanifest=manifest
            )
        attributes = json.loads(attrs)
        return ManifestStore(ManifestGroup(arrays=members, attributes=attributes), registry=registry)


def _stem(url: str) -> str:
    """The file name of a path or URL without its last suffix (``a.b2nd`` -> ``a``)."""
    name = _node_name(url)
    stem = name.rsplit(".", 1)[0] if "." in name.lstrip(".") else name
    return stem or "data"


class B2ndParser:
    """A VirtualiZarr 2.5 parser for b2nd arrays (``Parser.__call__(url, registry) ->
    ManifestStore``): python-blosc2's ``.b2nd`` files, contiguous Blosc2 frames with the
    ``b2nd`` metalayer, and sparse ones (a directory of ``chunks.b2frame`` and ``%08X.chunk``
    files: each chunk is its whole chunk file, whose metadata alone is read).

    The source (the ``url`` given to ``open_virtual_dataset``: a local path, ``file://``,
    ``s3://``, ``gs://``, ``az://`` or ``http(s)://`` URL; taken for a frame whatever its name)
    is one frame: the Dataset has one variable, named like the file without its suffix
    (``temps.b2nd`` gives ``"temps"``; a WKW mag given to :class:`WKWParser` is named like its
    directory instead), with the dimensions ``dim_0``, ``dim_1``, ... Its metadata is
    ``scifmt.virtualize``'s for the frame: the b2nd shape and dtype (bool, integers, floats,
    complex, either byte order), the ``chunkshape`` as the chunk grid, fill value 0, and the
    ``b2nd`` codec with the frame's ``blockshape`` and byte order, which decodes every chunk
    where it is (zarr-python finds the codec through the ``scifmt`` wheel's entry points).
    Only the frame's header, metalayers, index and trailer are read (on an object store a
    4 KiB head and a 16 KiB tail, then the missing metadata in one round, every read pinned to
    the ETag of the first); never a chunk.

    Chunks the frame stores as runs of zeros, or leaves uninitialised, have no reference: they
    read as the fill value 0 (what python-blosc2 returns for them). Chunks stored as runs of NaNs
    have no bytes in the file either, and a VirtualiZarr 2.5 ``ChunkManifest`` holds byte ranges
    of files only (no inline chunks), so a frame with such chunks is refused: the
    ``VirtualizeError`` names the first such chunk; ``scifmt.virtualize(url, "refs.json",
    to="kerchunk")`` writes them inline instead. Refused likewise (``VirtualizeError`` naming the
    file): plain super-chunks (no ``b2nd`` metalayer), 0-D arrays,
    dtypes without a Zarr v3 data type (structured, strings, datetimes), and a damaged or
    truncated frame.

    Writing the references out: ``.vz.to_icechunk(...)`` keeps the Zarr v3 metadata and its
    ``b2nd`` codec. ``.vz.to_kerchunk(...)`` does not work: VirtualiZarr 2.5 writes Kerchunk's
    Zarr v2 metadata and drops every array→bytes codec from it, which would leave the chunks
    undecoded (it raises instead, inside VirtualiZarr); ``scifmt.virtualize(url, "refs.json",
    to="kerchunk")`` writes Kerchunk references of b2nd arrays (with the ``b2nd`` codec, Zarr v3
    metadata, which fsspec's ``ReferenceFileSystem`` and zarr-python 3 read).

    ``concurrency``: requests in flight while the metadata is read from an object store;
    ``storage_options``: the object-store settings for reading it (as ``scifmt.convert``; the
    environment's ``AWS_*``, ``GOOGLE_*``, ``AZURE_*`` first). Loading chunks goes through the
    ``registry`` given to VirtualiZarr instead, e.g. ``ObjectStoreRegistry({"file:///":
    obstore.store.LocalStore()})`` for local files.

    Checksums: the file's modification time or the object's ETag when it was read are in
    :attr:`checksums` after the call (URL → ``{"etag": ...}`` or ``{"last_modified": [seconds,
    nanoseconds]}``; a ``ManifestArray`` cannot hold them), e.g. for
    ``.vz.to_icechunk(last_updated_at=...)``, which makes Icechunk refuse chunks of a file
    modified later.

    Raises ``VirtualizeError`` (the message names the file or URL) when the source cannot be
    read or virtualized, ``ValueError`` / ``TypeError`` for invalid arguments.
    """

    def __init__(self, *, concurrency: int = 8,
                 storage_options: Optional[Dict[str, str]] = None) -> None:  # fmt: skip
        self.concurrency = _concurrency(concurrency)
        self._pairs = _pairs(storage_options)
        #: Per source URL (of the references) its checksum when it was read, from every call.
        self.checksums: Dict[str, Dict[str, Any]] = {}
        #: The counts of the last call (``groups``, ``arrays``, ``files``, ``references``,
        #: ``inline``, ``bytes_read``).
        self.summary: Dict[str, int] = {}

    def __repr__(self) -> str:
        return f"B2ndParser(concurrency={self.concurrency})"

    def __call__(self, url: str, registry: Any) -> Any:
        """The ``ManifestStore`` of the b2nd array at ``url`` (see the class docs)."""
        import json

        from virtualizarr.manifests import ManifestArray, ManifestGroup, ManifestStore
        from zarr.core.metadata.v3 import ArrayV3Metadata

        if not isinstance(url, (str, os.PathLike)):
            raise TypeError(f"url must be a str, not {type(url).__name__}")
        url = os.fspath(url)
        _, arrays, checksums, summary = _core.collect(
            [_local_or_url(url)], kind="b2nd", concurrency=self.concurrency,
            storage_options=self._pairs,
        )  # fmt: skip
        self.summary = dict(summary)
        for u, c in checksums.items():
            self.checksums[u] = json.loads(c)
        if len(arrays) != 1:  # pragma: no cover (one frame is one array)
            raise VirtualizeError(f"{url}: {len(arrays)} arrays, expected one")
        _, meta_json, grid, urls, index, offsets, lengths, inline_at, _, _ = arrays[0]
        name = _stem(url)
        meta = json.loads(meta_json)
        grid = tuple(int(g) for g in grid)
        manifest = _manifest(url, name, grid, urls, index, offsets, lengths, inline_at)
        meta["dimension_names"] = [f"dim_{i}" for i in range(len(grid))]
        array = ManifestArray(metadata=ArrayV3Metadata.from_dict(meta), chunkmanifest=manifest)
        return ManifestStore(ManifestGroup(arrays={name: array}, attributes={}), registry=registry)


def __dir__() -> list:
    """The public API only."""
    return sorted(__all__)
