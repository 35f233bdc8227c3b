"""b2nd arrays (N-dimensional arrays in Blosc2 frames, python-blosc2's ``.b2nd`` files) from
Rust (the ``blosc2-frame`` crate).

Quick start::

    import numpy as np
    import scifmt.b2nd as b2nd

    a = np.arange(2 * 300 * 400, dtype=np.float32).reshape(2, 300, 400)
    b2nd.save(a, "a.b2nd", chunks=(1, 100, 400), blocks=(1, 20, 400), codec="lz4")

    arr = b2nd.open("a.b2nd")       # python-blosc2 opens it too: blosc2.open("a.b2nd")
    arr.shape, arr.dtype, arr.chunks, arr.blocks, arr.meta, arr.vlmeta
    part = arr[1, 10:250:3, -5:]    # reads only the chunks and blocks this touches
    whole = arr[...]                # or arr.to_numpy(), np.asarray(arr)

Slicing takes integers (negative ones too), slices with any step and ``Ellipsis``; the
bounding box of the selection is decoded (chunks and blocks outside it are never read) and
steps are applied to it; when steps skip whole chunks, the selection is read chunk by chunk and
the skipped chunks are not read either. Other keys (``None``, integer or boolean arrays) are applied by numpy
to the bounding box of the basic part of the key. Decoding runs with the GIL released. Errors
are :class:`B2ndError` (a ``ValueError``) naming the file, ``FileNotFoundError``/``OSError``
for I/O errors and ``IndexError`` for out-of-range indices.

``open`` also takes object-store URLs (``s3://``, ``gs://``, ``az://``, ``http(s)://``,
configured from the ``AWS_*``, ``GOOGLE_*``, ``AZURE_*`` environment): the open fetches header,
index and trailer in at most two requests, each read only the chunks it touches.
"""

from __future__ import annotations

import ast
import itertools
import math
import os
import re
from typing import Any, Dict, Iterable, Optional, Sequence, Tuple

import numpy as np

from scifmt._outputs import check_file_output
from scifmt._scifmt import b2nd as _core
from scifmt.blosc import Codec, Filter, SplitMode, _enum_number, _threads

__all__ = ["B2ndArray", "B2ndError", "MAX_DIM", "open", "save", "from_cframe", "to_cframe",
           "default_chunks_blocks"]

B2ndError = _core.B2ndError
MAX_DIM: int = _core.MAX_DIM


class _Closed:
    """Stands in for the native file of a closed object: every use raises ``exc``."""

    def __init__(self, path: str, exc: type, what: str):
        self._path, self._exc, self._what = path, exc, what

    def __getattr__(self, name: str) -> Any:
        if name == "path":
            return self._path
        raise self._exc(f"{self._path}: the {self._what} is closed")


def _dtype_from_str(s: str) -> np.dtype:
    """The numpy dtype of a b2nd dtype string (``dtype.str`` or a structured ``descr`` repr)."""
    try:
        if s.startswith("["):
            return np.dtype(ast.literal_eval(s))
        return np.dtype(s)
    except (ValueError, TypeError, SyntaxError) as e:
        raise B2ndError(f"unsupported dtype {s!r}: {e}") from None


def _dtype_to_str(dt: np.dtype) -> str:
    """The b2nd dtype string python-blosc2 writes for ``dt``."""
    return dt.str if dt.fields is None else str(dt.descr)


class _Meta:
    """Read-only mapping of metalayer names to their msgpack-decoded values."""

    def __init__(self, names, get, get_raw):
        self._names = list(names)
        self._get = get
        self._get_raw = get_raw

    def __getitem__(self, name: str) -> Any:
        if name not in self._names:
            raise KeyError(name)
        return self._get(name)

    def raw(self, name: str) -> bytes:
        """The stored bytes of ``name`` (msgpack)."""
        if name not in self._names:
            raise KeyError(name)
        return self._get_raw(name)

    def __contains__(self, name: object) -> bool:
        return name in self._names

    def __iter__(self):
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)

    def keys(self):
        return list(self._names)

    def items(self):
        return [(n, self[n]) for n in self._names]

    def get(self, name: str, default: Any = None) -> Any:
        return self[name] if name in self._names else default

    def to_dict(self) -> Dict[str, Any]:
        """All entries decoded."""
        return dict(self.items())

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.keys()})"


def _normalize_key(key: Any, shape: Tuple[int, ...]):
    """Splits a basic index into (box start, box stop, local key) or returns None when the key
    needs numpy's advanced indexing."""
    if not isinstance(key, tuple):
        key = (key,)
    n_ell = sum(1 for k in key if k is Ellipsis)
    if n_ell > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    basic = all(
        k is Ellipsis or isinstance(k, slice) or (isinstance(k, (int, np.integer)) and not isinstance(k, (bool, np.bool_)))
        for k in key
    )
    if not basic:
        return None
    explicit = len(key) - n_ell
    if explicit > len(shape):
        raise IndexError(f"too many indices: the array is {len(shape)}-dimensional, {explicit} were indexed")
    if n_ell:
        i = next(j for j, k in enumerate(key) if k is Ellipsis)
        key = key[:i] + (slice(None),) * (len(shape) - explicit) + key[i + 1 :]
    else:
        key = key + (slice(None),) * (len(shape) - len(key))
    start, stop, local = [], [], []
    for dim, (k, n) in enumerate(zip(key, shape)):
        if isinstance(k, slice):
            a, b, step = k.indices(n)
            count = len(range(a, b, step))
            if count == 0:
                start.append(0)
                stop.append(0)
                local.append(slice(0, 0))
            elif step > 0:
                start.append(a)
                stop.append(a + (count - 1) * step + 1)
                local.append(slice(None, None, step))
            else:
                lo = a + (count - 1) * step
                start.append(lo)
                stop.append(a + 1)
                local.append(slice(None, None, step))
        else:
            i = int(k)
            if i < -n or i >= n:
                raise IndexError(f"index {i} is out of bounds for axis {dim} with size {n}")
            i %= n
            start.append(i)
            stop.append(i + 1)
            local.append(0)
    return start, stop, tuple(local)


class B2ndArray:
    """A b2nd array opened from a file (see :func:`open`)."""

    def __init__(self, path: "os.PathLike[str] | str", max_output_bytes: Optional[int] = None,
                 _core_file: Any = None):
        if _core_file is not None:
            self._f = _core_file
        elif _is_url(path):
            self._f = _core.File.open_url(path, max_output_bytes)
        else:
            self._f = _core.File(os.fspath(path), max_output_bytes)
        self._reopen = None if _core_file is not None else (path if _is_url(path) else os.fspath(path), max_output_bytes)
        self._dtype = _dtype_from_str(self._f.dtype)
        if self._dtype.itemsize != self._f.itemsize:
            raise B2ndError(
                f"{self._f.path}: dtype {self._f.dtype!r} has {self._dtype.itemsize}-byte items, "
                f"the frame stores {self._f.itemsize}"
            )
        self._shape = tuple(int(s) for s in self._f.shape)
        self.meta = _Meta(self._f.metalayer_names(), self._f.metalayer, self._f.metalayer_raw)
        self.vlmeta = _Meta(self._f.vlmeta_names(), self._f.vlmeta, self._f.vlmeta_raw)

    # --- description ------------------------------------------------------------------------
    @property
    def path(self) -> str:
        """The file name."""
        return self._f.path

    @property
    def shape(self) -> Tuple[int, ...]:
        return self._shape

    @property
    def dtype(self) -> np.dtype:
        return self._dtype

    @property
    def chunks(self) -> Tuple[int, ...]:
        return tuple(int(c) for c in self._f.chunks)

    @property
    def blocks(self) -> Tuple[int, ...]:
        return tuple(int(b) for b in self._f.blocks)

    @property
    def ndim(self) -> int:
        return len(self._shape)

    @property
    def size(self) -> int:
        return math.prod(self._shape)

    @property
    def nbytes(self) -> int:
        return self.size * self._dtype.itemsize

    @property
    def nchunks(self) -> int:
        return self._f.nchunks

    @property
    def frame_len(self) -> int:
        """Bytes of the frame (header, chunks, index, trailer)."""
        return self._f.frame_len

    @property
    def cparams(self) -> Dict[str, Any]:
        """The frame's recorded default compression parameters."""
        codec, clevel, typesize = self._f.cparams
        try:
            codec = Codec(codec)
        except ValueError:
            pass
        return {"codec": codec, "clevel": clevel, "typesize": typesize}

    # --- lifetime ---------------------------------------------------------------------------
    def close(self) -> None:
        """Closes the file (later reads raise :class:`B2ndError`); closing twice is a no-op.
        ``with b2nd.open(path) as a:`` closes it at the end of the block."""
        if not isinstance(self._f, _Closed):
            self._f = _Closed(self._f.path, B2ndError, "array")

    @property
    def closed(self) -> bool:
        return isinstance(self._f, _Closed)

    def __enter__(self) -> "B2ndArray":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __reduce__(self):
        """Pickles as "open this path again" (for multiprocessing and Dask workers)."""
        if self._reopen is None:
            raise TypeError("an array read from an in-memory frame cannot be pickled")
        return (B2ndArray, self._reopen)

    def __len__(self) -> int:
        if not self._shape:
            raise TypeError("len() of a 0-d array")
        return self._shape[0]

    def __repr__(self) -> str:
        if self.closed:
            return f"B2ndArray({self.path!r}, closed)"
        return (f"B2ndArray({self.path!r}, shape={self.shape}, dtype={self.dtype}, "
                f"chunks={self.chunks}, blocks={self.blocks})")

    # --- reading ----------------------------------------------------------------------------
    def read_region(self, start: Sequence[int], stop: Sequence[int]) -> np.ndarray:
        """The box ``start..stop`` (``stop`` exclusive per dimension) as a C-order array."""
        shape = tuple(int(b) - int(a) for a, b in zip(start, stop))
        raw = self._f.read([int(a) for a in start], [int(b) for b in stop])
        return raw.view(self._dtype).reshape(shape)

    def __getitem__(self, key: Any) -> np.ndarray:
        norm = _normalize_key(key, self._shape)
        if norm is None:
            return self._advanced(key)
        start, stop, local = norm
        if any(isinstance(k, slice) and k.step not in (None, 1) for k in local):
            stepped = self._read_stepped(start, stop, local)
            if stepped is not None:
                return stepped
        box = self.read_region(start, stop)
        out = box[local]
        if isinstance(out, np.ndarray) and not out.flags.c_contiguous:
            out = np.ascontiguousarray(out)
        return out

    def _read_stepped(self, start, stop, local) -> Optional[np.ndarray]:
        """A selection with steps, read chunk by chunk when the steps skip whole chunks of its
        bounding box (so skipped chunks are never read); ``None`` when they skip none."""
        chunks = self.chunks
        idx = []
        for a, b, k in zip(start, stop, local):
            if isinstance(k, slice):
                step = 1 if k.step is None else k.step
                sel = np.arange(a, b)[::step] if b > a else np.empty(0, np.int64)
            else:
                sel = np.array([a])
            idx.append(sel)
        box_chunks = 1
        sel_chunks = 1
        for a, b, sel, c in zip(start, stop, idx, chunks):
            box_chunks *= (b - 1) // c - a // c + 1 if b > a else 0
            sel_chunks *= len(np.unique(sel // c))
        if sel_chunks >= box_chunks:
            return None
        groups = []
        for sel, c in zip(idx, chunks):
            cid = sel // c
            groups.append([(np.nonzero(cid == u)[0], sel[cid == u]) for u in np.unique(cid)])
        out = np.empty([len(sel) for sel in idx], dtype=self._dtype)
        for combo in itertools.product(*groups):
            lo = [int(ind.min()) for _, ind in combo]
            hi = [int(ind.max()) + 1 for _, ind in combo]
            box = self.read_region(lo, hi)
            out[np.ix_(*[pos for pos, _ in combo])] = box[np.ix_(*[ind - l for (_, ind), l in zip(combo, lo)])]
        return out.reshape([len(sel) for sel, k in zip(idx, local) if isinstance(k, slice)])

    def _advanced(self, key: Any) -> np.ndarray:
        """Keys with None / arrays: numpy indexes the whole array (bounded by the limits)."""
        return self.to_numpy()[key]

    def to_numpy(self) -> np.ndarray:
        """The whole array."""
        return self.read_region([0] * self.ndim, list(self._shape))

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        a = self.to_numpy()
        return a if dtype is None else a.astype(dtype, copy=False)

    def _chunk_offsets(self):
        return self._f.chunk_offsets()


def _is_url(path: Any) -> bool:
    """Whether ``path`` is an object-store URL (``scheme://...``) rather than a file name."""
    return isinstance(path, str) and re.match(r"^[A-Za-z][A-Za-z0-9+.-]*://", path) is not None


def open(path: "os.PathLike[str] | str", max_output_bytes: Optional[int] = None) -> B2ndArray:  # noqa: A001
    """Opens a ``.b2nd`` file: header, index and trailer are read and checked, chunks are read
    on demand. ``max_output_bytes`` caps the bytes one read may return (default 4 GiB).

    ``path`` may be an object-store URL (``s3://bucket/a.b2nd``, ``gs://``, ``az://``,
    ``http(s)://``): the open fetches header and trailer (at most two requests), each read only
    the chunks it touches. Credentials and endpoints come from the environment (``AWS_*``,
    ``GOOGLE_*``, ``AZURE_*``).
    """
    return B2ndArray(path, max_output_bytes)


def from_cframe(cframe: Any, max_output_bytes: Optional[int] = None) -> B2ndArray:
    """Reads an in-memory frame (``bytes`` or any contiguous buffer, e.g. python-blosc2's
    ``NDArray.to_cframe()`` or :func:`to_cframe`); the bytes are copied once."""
    from scifmt.blosc import _u8

    return B2ndArray("<cframe>", None, _core.File.from_cframe(_u8(cframe, "cframe"), max_output_bytes))


def _fit(shape: Sequence[int], itemsize: int, target: int) -> list:
    """Shrinks ``shape`` from the first axis on until it holds at most ``target`` bytes."""
    out = [max(1, int(s)) for s in shape]
    for i in range(len(out)):
        if math.prod(out) * itemsize <= target:
            break
        rest = math.prod(out[i + 1 :]) * itemsize
        out[i] = max(1, target // rest) if rest <= target else 1
    return out


def default_chunks_blocks(shape: Sequence[int], itemsize: int) -> Tuple[list, list]:
    """This package's default chunk and block shapes: chunks of at most 4 MiB and blocks of at
    most 128 KiB, keeping the trailing axes whole as far as possible (python-blosc2 uses its
    own cache-size based rules, so its defaults may differ)."""
    chunks = _fit(shape, itemsize, 4 << 20)
    blocks = _fit(chunks, itemsize, 128 << 10)
    return chunks, blocks


def _block_major(chunk: np.ndarray, ext: Sequence[int], blocks: Sequence[int]) -> np.ndarray:
    """``chunk`` zero-padded to ``ext`` and laid out block by block (C order of blocks, C order
    inside a block), as raw bytes."""
    if tuple(chunk.shape) != tuple(ext):
        padded = np.zeros(ext, dtype=chunk.dtype)
        padded[tuple(slice(0, s) for s in chunk.shape)] = chunk
        chunk = padded
    n = len(ext)
    if n == 0:
        return np.ascontiguousarray(chunk).reshape(-1).view(np.uint8)
    split = []
    for e, b in zip(ext, blocks):
        split += [e // b, b]
    t = chunk.reshape(split).transpose(list(range(0, 2 * n, 2)) + list(range(1, 2 * n, 2)))
    return np.ascontiguousarray(t).reshape(-1).view(np.uint8)


def _build(
    array: Any,
    chunks: Optional[Sequence[int]] = None,
    blocks: Optional[Sequence[int]] = None,
    *,
    codec: Any = Codec.ZSTD,
    clevel: int = 5,
    filters: Optional[Iterable[Any]] = None,
    filters_meta: Optional[Iterable[int]] = None,
    splitmode: Any = SplitMode.AUTO_SPLIT,
    nthreads: Optional[int] = None,
    use_dict: bool = False,
    codec_meta: int = 0,
    meta: Optional[Dict[str, Any]] = None,
    vlmeta: Optional[Dict[str, Any]] = None,
) -> Any:
    """The frame writer for ``array`` with every chunk appended (see :func:`save`)."""
    a = np.asarray(array)
    if a.dtype.hasobject:
        raise TypeError("arrays of Python objects cannot be stored in a b2nd frame")
    if a.ndim > MAX_DIM:
        raise B2ndError(f"b2nd arrays have at most {MAX_DIM} dimensions, this one has {a.ndim}")
    itemsize = a.dtype.itemsize
    if itemsize == 0:
        raise B2ndError(f"dtype {a.dtype} has no bytes per item")
    dchunks, dblocks = default_chunks_blocks(a.shape, itemsize)
    chunks = dchunks if chunks is None else [int(c) for c in chunks]
    if blocks is None:
        blocks = dblocks if chunks == dchunks else _fit(chunks, itemsize, 128 << 10)
    blocks = [int(b) for b in blocks]
    for what, v in (("chunks", chunks), ("blocks", blocks)):
        if len(v) != a.ndim:
            raise B2ndError(f"{what} {tuple(v)} does not have {a.ndim} dimensions")
    fs = [Filter.NOFILTER] * 5 + [Filter.SHUFFLE] if filters is None else list(filters)
    w = _core.Writer(
        list(a.shape), chunks, blocks, _dtype_to_str(a.dtype), itemsize,
        _enum_number(codec, Codec, "codec"), int(clevel),
        [_enum_number(f, Filter, "filter") for f in fs],
        [0] * 6 if filters_meta is None else [int(m) for m in filters_meta],
        _enum_number(splitmode, SplitMode, "splitmode"), _threads(nthreads), bool(use_dict),
        int(codec_meta),
    )
    for name, value in (meta or {}).items():
        w.add_metalayer(name, value)
    ext = [-(-c // b) * b for c, b in zip(chunks, blocks)]
    grid = [-(-s // c) for s, c in zip(a.shape, chunks)]
    for idx in np.ndindex(*grid):
        sl = tuple(slice(i * c, min((i + 1) * c, s)) for i, c, s in zip(idx, chunks, a.shape))
        w.append(_block_major(a[sl], ext, blocks))
    for name, value in (vlmeta or {}).items():
        w.set_vlmeta(name, value)
    return w


def save(array: Any, path: "os.PathLike[str] | str", chunks: Optional[Sequence[int]] = None,
         blocks: Optional[Sequence[int]] = None, *, overwrite: bool = False, fsync: bool = False,
         **kwargs: Any) -> None:
    """Writes ``array`` (anything ``np.asarray`` takes) as a b2nd frame file that python-blosc2
    opens with ``blosc2.open``, written beside ``path`` and renamed into place (``fsync=True``
    also flushes it to disk).

    An existing ``path`` is ``FileExistsError`` unless ``overwrite=True`` (then it is replaced
    atomically), a directory there ``IsADirectoryError``; ``path`` naming the file ``array``
    was opened from (a :class:`B2ndArray`), also through a symlink, ``..`` or a hard link, is
    ``ValueError``.

    Keyword arguments: ``codec``, ``clevel``, ``filters``, ``filters_meta``, ``splitmode``,
    ``nthreads``, ``use_dict``, ``codec_meta`` (as in :func:`scifmt.blosc.compress`; the plugins
    NDCELL, NDMEAN, NDLZ and ZFP get the block shape from ``blocks``; python-blosc2's defaults:
    zstd, clevel 5, SHUFFLE), ``meta`` (extra fixed-size metalayers) and ``vlmeta``
    (variable-length metalayers), each a name → value dict stored as msgpack (None, bool, int,
    float, str, bytes, list, tuple, dict).

    ``chunks``/``blocks``: shapes (``None``: :func:`default_chunks_blocks`; a block is at most
    its chunk). Chunks are padded and laid out block by block like C-Blosc2 and compressed with
    the item size as typesize and the block's byte size as blocksize.
    """
    path = os.fspath(path)
    source = None
    if isinstance(array, B2ndArray) and array._reopen is not None and not _is_url(array._reopen[0]):
        source = array._reopen[0]
    check_file_output(path, overwrite, source)
    _build(array, chunks, blocks, **kwargs).write(path, bool(fsync), overwrite=bool(overwrite))


def to_cframe(array: Any, chunks: Optional[Sequence[int]] = None,
              blocks: Optional[Sequence[int]] = None, **kwargs: Any) -> bytes:
    """Like :func:`save`, returning the frame as ``bytes`` (python-blosc2 reads it with
    ``blosc2.ndarray_from_cframe``)."""
    return _build(array, chunks, blocks, **kwargs).to_bytes()


def __dir__() -> list:
    """The public API only (the modules this one imports stay out of ``dir()``)."""
    return sorted(__all__)
