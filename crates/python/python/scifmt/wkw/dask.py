"""WKW datasets as Dask arrays: ``from_wkw`` (read) and ``to_wkw`` (write with file-aligned tasks).

``WKWArray`` is an array-like view of a bounding box of a dataset (shape ``(C, X, Y, Z)``,
``dtype``, ``ndim``, ``__getitem__``/``__setitem__``) that ``dask.array.from_array`` and
``dask.array.store`` accept. It pickles as its path and box, so every worker process opens the
dataset itself. Writes of different tasks into the same data file are safe: the ``wkw`` crate
takes a per-file lock (``.wkw-locks`` in the dataset) around every read-modify-write, across
processes, and replaces files atomically. ``path`` may be an object-store URL (see
``scifmt.wkw``); there every file update is a conditional put, so concurrent tasks lose no
update either, and ``storage_options`` travel with the pickled array to the workers.

Needs ``dask[array]`` (not a dependency of ``scifmt`` itself).
"""

import operator

import numpy as np

from .wkw import Dataset, WKWException

__all__ = ["WKWArray", "file_aligned_chunks", "from_wkw", "to_wkw"]


def _file_vx(header):
    return int(header.block_len) * int(header.file_len)


class WKWArray:
    """The box ``offset`` (x, y, z) + ``shape`` (x, y, z) of the dataset at ``path``, as an
    array of shape ``(channels, x, y, z)``.

    Without ``shape``, the box runs from ``offset`` to the end of the last existing data file in
    each axis. ``threads`` is passed to ``Dataset.open`` (1: each read uses only its calling
    thread, the right choice when Dask already runs one task per core).
    """

    ndim = 4

    def __init__(self, path, offset=(0, 0, 0), shape=None, *, threads=1, storage_options=None):
        self.path = str(path)
        self.offset = tuple(operator.index(v) for v in offset)
        self.threads = threads
        self.storage_options = storage_options
        self._ds = None
        ds = self.dataset
        if shape is None:
            fv = _file_vx(ds.header)
            ends = [0, 0, 0]
            for p in ds.list_files():
                parts = p.replace("\\", "/").split("/")[-3:]
                idx = (int(parts[2][1:-4]), int(parts[1][1:]), int(parts[0][1:]))
                ends = [max(e, (i + 1) * fv) for e, i in zip(ends, idx)]
            shape = tuple(max(0, e - o) for e, o in zip(ends, self.offset))
        self.box_shape = tuple(operator.index(v) for v in shape)
        if len(self.offset) != 3 or len(self.box_shape) != 3:
            raise WKWException(f"{self.path}: offset and shape need three values (x, y, z)")
        if min(self.offset + self.box_shape) < 0:
            raise WKWException(f"{self.path}: offset and shape must not be negative")
        if any(o + n > 2**32 for o, n in zip(self.offset, self.box_shape)):
            raise WKWException(f"{self.path}: the box ends beyond the u32 coordinate range")
        self.header = ds.header
        self.dtype = np.dtype(ds.header.voxel_type)
        self.shape = (int(ds.header.num_channels),) + self.box_shape

    @property
    def dataset(self):
        """The open dataset (opened on first use in each process)."""
        if self._ds is None:
            self._ds = Dataset.open(
                self.path, threads=self.threads, storage_options=self.storage_options
            )
        return self._ds

    @property
    def size(self):
        return int(np.prod(self.shape))

    def __len__(self):
        return self.shape[0]

    def __repr__(self):
        return (
            f"WKWArray({self.path!r}, offset={self.offset}, shape={self.box_shape}, "
            f"dtype={self.dtype}, channels={self.shape[0]})"
        )

    def __reduce__(self):
        return (
            _rebuild,
            (self.path, self.offset, self.box_shape, self.threads, self.storage_options),
        )

    def __array__(self, dtype=None, copy=None):
        a = self[...]
        return a if dtype is None else a.astype(dtype, copy=False)

    def _normalize(self, key):
        """(read box per spatial axis, index to apply to the read array)."""
        if not isinstance(key, tuple):
            key = (key,)
        if sum(k is Ellipsis for k in key) > 1:
            raise IndexError("an index can only have a single ellipsis ('...')")
        if Ellipsis in key:
            i = key.index(Ellipsis)
            key = key[:i] + (slice(None),) * (4 - len(key) + 1) + key[i + 1 :]
        if len(key) > 4:
            raise IndexError(f"too many indices for a 4-D array: {len(key)}")
        key = key + (slice(None),) * (4 - len(key))
        lo, hi, local = [], [], [key[0]]
        for axis, k in enumerate(key[1:], start=1):
            n = self.shape[axis]
            if isinstance(k, slice):
                start, stop, step = k.indices(n)
                r = range(start, stop, step)
                if len(r) == 0:
                    lo.append(0)
                    hi.append(0)
                    local.append(slice(0, 0))
                    continue
                a, b = min(r[0], r[-1]), max(r[0], r[-1]) + 1
                lo.append(a)
                hi.append(b)
                first, last = r[0] - a, r[-1] - a
                if step > 0:
                    local.append(slice(first, last + 1, step))
                else:
                    local.append(slice(first, last - 1 if last > 0 else None, step))
            else:
                try:
                    i = operator.index(k)
                except TypeError:
                    raise IndexError(f"unsupported index {k!r} (integers and slices only)") from None
                if i < 0:
                    i += n
                if not 0 <= i < n:
                    raise IndexError(f"index {k} is out of bounds for axis {axis} with size {n}")
                lo.append(i)
                hi.append(i + 1)
                local.append(0)
        return lo, hi, tuple(local)

    def __getitem__(self, key):
        lo, hi, local = self._normalize(key)
        off = [o + a for o, a in zip(self.offset, lo)]
        shape = [b - a for a, b in zip(lo, hi)]
        block = self.dataset.read(off, shape)
        return block[local]

    def __setitem__(self, key, value):
        """Writes ``value`` into a box: slices with step 1 (what ``dask.array.store`` uses)."""
        if not isinstance(key, tuple):
            key = (key,)
        key = key + (slice(None),) * (4 - len(key))
        if len(key) != 4 or not all(isinstance(k, slice) for k in key):
            raise IndexError("WKWArray assignment takes four slices (channels, x, y, z)")
        ranges = []
        for axis, k in enumerate(key):
            start, stop, step = k.indices(self.shape[axis])
            if step != 1:
                raise IndexError("WKWArray assignment needs slices with step 1")
            ranges.append((start, max(start, stop)))
        if ranges[0] != (0, self.shape[0]):
            raise IndexError("WKWArray assignment must cover every channel")
        shape = tuple(b - a for a, b in ranges)
        value = np.asarray(value)
        if value.dtype != self.dtype:
            value = value.astype(self.dtype)
        value = np.broadcast_to(value, shape)
        off = [o + a for o, (a, _) in zip(self.offset, ranges[1:])]
        self.dataset.write(off, value)


def _rebuild(path, offset, shape, threads, storage_options=None):
    return WKWArray(path, offset, shape, threads=threads, storage_options=storage_options)


def file_aligned_chunks(header, offset, shape, files_per_chunk=1):
    """Dask chunks for the box ``offset`` + ``shape`` whose boundaries fall on data-file
    boundaries of a dataset with ``header`` (one task per file, or per ``files_per_chunk``
    files along each axis); the channel axis is one chunk."""
    side = _file_vx(header) * int(files_per_chunk)
    out = [(int(header.num_channels),)]
    for o, n in zip(offset, shape):
        sizes, pos, end = [], o, o + n
        while pos < end:
            nxt = min(end, (pos // side + 1) * side)
            sizes.append(nxt - pos)
            pos = nxt
        out.append(tuple(sizes) or (0,))
    return tuple(out)


def from_wkw(path, offset=(0, 0, 0), shape=None, chunks=None, *, files_per_chunk=1, threads=1,
             storage_options=None):
    """A dask array of shape (C, X, Y, Z) reading the box from the dataset at ``path`` (a
    directory or an object-store URL); chunks default to one data file each
    (``file_aligned_chunks``)."""
    import dask.array as da
    from dask.base import tokenize

    arr = WKWArray(path, offset, shape, threads=threads, storage_options=storage_options)
    if chunks is None:
        chunks = file_aligned_chunks(arr.header, arr.offset, arr.box_shape, files_per_chunk)
    name = "wkw-" + tokenize(arr.path, arr.offset, arr.box_shape)
    return da.from_array(arr, chunks=chunks, name=name, asarray=False, fancy=False, lock=False)


def to_wkw(
    data,
    path,
    offset=(0, 0, 0),
    header=None,
    *,
    files_per_chunk=1,
    compute=True,
    threads=1,
    storage_options=None,
):
    """Writes the dask array ``data`` of shape (C, X, Y, Z) (or (X, Y, Z) for one channel) into
    the dataset at ``path`` at ``offset``, creating it with ``header`` if given and missing.

    ``data`` is rechunked so that every task writes whole data files (except at the box's
    edges); tasks that share a file at the edges are serialized by the dataset's file locks.
    Returns the result of ``dask.array.store`` (a delayed value with ``compute=False``).
    """
    import dask.array as da

    data = da.asarray(data)
    if data.ndim == 3:
        data = data[np.newaxis]
    if data.ndim != 4:
        raise WKWException("Data must be three- or four-dimensional")
    if header is not None:
        Dataset.open(str(path), header, storage_options=storage_options).close()
    shape = tuple(int(v) for v in data.shape[1:])
    target = WKWArray(path, offset, shape, threads=threads, storage_options=storage_options)
    if data.shape[0] != target.shape[0]:
        raise WKWException(f"Data volume must have {target.shape[0]} channels")
    if data.dtype != target.dtype:
        raise WKWException(f"Data elements must be of type {target.header.voxel_type}")
    chunks = file_aligned_chunks(target.header, target.offset, shape, files_per_chunk)
    data = data.rechunk(chunks)
    return da.store(data, target, lock=False, compute=compute)


def __dir__() -> list:
    """The public API only (the modules this one imports stay out of ``dir()``)."""
    return sorted(__all__)
