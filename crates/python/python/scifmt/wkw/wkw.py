"""WKW datasets: the API of the ``wkw`` package (``wkw.wkw``) on the Rust ``wkw`` crate.

Same names, arguments, return values and exceptions as ``wkw`` 1.1.x, so code written for it
runs after ``import scifmt.wkw as wkw``. Deliberate differences (see the package README):

* writes of any box are accepted in compressed (LZ4/LZ4HC) datasets, not only whole files;
* a data file that exists but is corrupt is an error (``WKWException``), not zeros
  (``corrupt_as_zeros=True`` gives the reference's behaviour);
* a read of an empty box returns an empty array instead of raising;
* ``Dataset.compress(dst, compress_files=True)`` converts the files in parallel, and a closed
  dataset raises ``WKWException`` instead of touching freed memory.

Extras: ``read(..., order="C")``, ``threads=`` on ``open``/``create``, ``Dataset.verify()``,
``corrupt_as_zeros=`` and ``strict_headers=``, and datasets on object stores: a root that is a
URL (``s3://bucket/prefix``, ``gs://``, ``az://``, ``http(s)://``, ``memory://``) opens the
dataset there, configured from the environment (``AWS_*``, ``GOOGLE_*``, ``AZURE_*``) and
``storage_options=`` (a dict with the same keys, e.g. ``{"aws_endpoint_url": ...}``).

Safety (keyword arguments the reference does not have): every call that writes a dataset or a
data file (``Dataset.create``, ``Dataset.compress``, ``File.compress``) refuses an existing
output unless ``overwrite=True`` (``OutputExistsError``: a ``WKWException`` and a
``FileExistsError``; the reference's ``File.compress`` replaces an existing file silently) and
refuses an output that is its input, lies inside it or contains it, also through symlinks,
``..`` or hard links (``OverlapError``: a ``WKWException`` and a ``ValueError``). Long calls
(``compress``, ``verify``, reads and writes of 64 MiB or more) stop at Ctrl-C between files or
blocks and raise ``KeyboardInterrupt``; a compressed dataset appears under its name complete,
so an interrupted ``compress`` leaves nothing behind.
"""

import operator
import os
import re
import shutil
import struct
import tempfile

import numpy as np

from scifmt import _scifmt

_core = _scifmt.wkw

#: Raised for every error a dataset operation reports (the message names the file).
WKWException = _core.WKWException

#: An output exists and ``overwrite=True`` was not given (also a ``FileExistsError``).
OutputExistsError = _core.OutputExistsError

#: An output is its own input, lies inside it or contains it (also a ``ValueError``).
OverlapError = _core.OverlapError



class InvalidArgumentError(WKWException, ValueError):
    """An argument out of its range (e.g. ``threads=-1``): a ``ValueError`` naming the
    argument, and a ``WKWException`` like every error of this module."""


InvalidArgumentError.__module__ = "scifmt.wkw"

__all__ = [
    "Header", "Dataset", "File", "WKWException", "InvalidArgumentError", "OutputExistsError",
    "OverlapError", "verify",
]

_U32_MAX = 2**32 - 1

_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")


def _is_url(root):
    """Whether ``root`` is an object-store URL (``scheme://...``) rather than a path."""
    return isinstance(root, str) and _URL.match(root) is not None


def _threads(threads):
    """``threads`` checked: None, or an integer in 1..1024 (:class:`InvalidArgumentError`
    naming the argument otherwise)."""
    if threads is None:
        return None
    if isinstance(threads, bool) or not isinstance(threads, (int, np.integer)) \
            or not 1 <= threads <= 1024:
        raise InvalidArgumentError(
            f"threads must be None (every core) or an integer from 1 to 1024, not {threads!r}"
        )
    return int(threads)


def _pairs(storage_options):
    """``storage_options`` (a mapping of str to str, or None) as a list of pairs."""
    if storage_options is None:
        return None
    if not hasattr(storage_options, "items"):
        raise WKWException(f"storage_options must be a dict, not {type(storage_options).__name__}")
    pairs = []
    for k, v in storage_options.items():
        if not isinstance(k, str) or not isinstance(v, (str, bool, int)):
            raise WKWException(f"storage_options: {k!r} must map a str to a str")
        pairs.append((k, str(v).lower() if isinstance(v, bool) else str(v)))
    return pairs


_BLOCK_TYPE_NAMES = {
    1: "Header.BLOCK_TYPE_RAW",
    2: "Header.BLOCK_TYPE_LZ4",
    3: "Header.BLOCK_TYPE_LZ4HC",
}


class Header:
    """A dataset header, as ``wkw.Header`` (invalid values raise ``AssertionError``)."""

    BLOCK_TYPE_RAW = 1
    BLOCK_TYPE_LZ4 = 2
    BLOCK_TYPE_LZ4HC = 3

    VALID_BLOCK_TYPES = [BLOCK_TYPE_RAW, BLOCK_TYPE_LZ4, BLOCK_TYPE_LZ4HC]
    VALID_VOXEL_TYPES = [
        np.uint8,
        np.uint16,
        np.uint32,
        np.uint64,
        np.float32,
        np.float64,
        np.int8,
        np.int16,
        np.int32,
        np.int64,
    ]

    def __init__(
        self,
        voxel_type: type,
        num_channels: int = 1,
        version: int = 1,
        block_len: int = 32,
        file_len: int = 32,
        block_type: int = 1,
    ):
        self.version = version
        _check(
            block_len & (block_len - 1) == 0,
            f"block_len must be a power of two, but is {block_len}",
        )
        self.block_len = block_len
        _check(
            file_len & (file_len - 1) == 0,
            f"file_len must be a power of two, but is {file_len}",
        )
        self.file_len = file_len
        _check(
            block_type in self.VALID_BLOCK_TYPES,
            f"block_type must be one of {self.VALID_BLOCK_TYPES}, but is {block_type}",
        )
        self.block_type = block_type
        voxel_type = _voxel_type(voxel_type)
        _check(
            voxel_type in self.VALID_VOXEL_TYPES,
            f"voxel_type must be one of {self.VALID_VOXEL_TYPES}, but is {voxel_type}",
        )
        self.voxel_type = voxel_type
        _check(num_channels > 0, f"num_channels must be >0, but is {num_channels}")
        self.num_channels = num_channels

    def __repr__(self):
        return (
            f"Header(voxel_type={np.dtype(self.voxel_type).name}, "
            f"num_channels={self.num_channels}, version={self.version}, "
            f"block_len={self.block_len}, file_len={self.file_len}, "
            f"block_type={_BLOCK_TYPE_NAMES.get(self.block_type, self.block_type)})"
        )

    def _voxel_code(self):
        return Header.VALID_VOXEL_TYPES.index(self.voxel_type) + 1

    @staticmethod
    def _from_fields(fields):
        version, block_len, file_len, block_type, voxel_code, num_channels = fields
        return Header(
            voxel_type=Header.VALID_VOXEL_TYPES[voxel_code - 1],
            num_channels=num_channels,
            version=version,
            block_len=block_len,
            file_len=file_len,
            block_type=block_type,
        )


def _flag(value, what):
    if not isinstance(value, bool):
        raise TypeError(f"{what} must be a bool, not {type(value).__name__}")
    return value


def _callback(progress):
    if progress is not None and not callable(progress):
        raise TypeError(f"progress must be callable, not {type(progress).__name__}")
    return progress


def _apart(src, dst):
    """``OverlapError`` when ``dst`` is ``src``, inside it or around it (compared by file
    identity; URLs by store and key prefix)."""
    try:
        _scifmt.ensure_apart(src, dst)
    except ValueError as e:
        raise OverlapError(str(e)) from None


def _check(ok, message):
    # The reference uses `assert`; raising explicitly keeps the checks under `python -O`.
    if not ok:
        raise AssertionError(message)


def _int(v, what, root):
    try:
        return operator.index(v)
    except TypeError:
        if isinstance(v, (float, np.floating)) and float(v).is_integer():
            return int(v)
        raise WKWException(f"{what} must be an integer, not {v!r} (dataset {root})") from None


def _xyz(values, what, root):
    """Three non-negative u32 coordinates from a sequence (as the reference's `_build_box`)."""
    try:
        vals = [values[0], values[1], values[2]]
    except (TypeError, IndexError, KeyError):
        raise WKWException(
            f"{what} must have three values (x, y, z), not {values!r} (dataset {root})"
        ) from None
    out = []
    for axis, v in zip("xyz", vals):
        v = _int(v, f"{what} {axis}", root)
        _check(v >= 0, f"{what} {axis} must be greater or equal to 0")
        if v > _U32_MAX:
            raise WKWException(
                f"{what} {axis} = {v} does not fit the u32 coordinate range (dataset {root})"
            )
        out.append(v)
    return out


_WKW_VOXEL_NAMES = {"u": "uint", "i": "int", "f": "float"}


def _voxel_type(voxel_type):
    """A numpy scalar type from a type (``np.uint16``), a dtype, or a name: numpy's
    (``"uint16"``, ``"<u2"``) or wkw's (``"u16"``), case-insensitive. Anything else is returned
    as given (``Header`` then rejects it with the reference's message)."""
    if isinstance(voxel_type, str):
        name = voxel_type.lower()
        names = [name]
        if name[:1] in _WKW_VOXEL_NAMES and name[1:].isdigit():
            # wkw's names first, as the CLI reads them: "u8" is uint8 (numpy's "u8" is uint64).
            names.insert(0, _WKW_VOXEL_NAMES[name[0]] + name[1:])
        for n in names:
            try:
                return np.dtype(n).type
            except TypeError:
                pass
        return voxel_type
    if isinstance(voxel_type, np.dtype):
        return voxel_type.type
    return voxel_type


def _voxel_code(voxel_type):
    return Header.VALID_VOXEL_TYPES.index(voxel_type) + 1


class File:
    """Single data files, as ``wkw.File``."""

    @staticmethod
    def compress(src_path: str, dst_path: str, *, overwrite: bool = False):
        """Writes the data file ``src_path`` LZ4HC-compressed to ``dst_path`` (written beside it
        and renamed into place).

        Unlike the reference, an existing ``dst_path`` is refused (``OutputExistsError``, also a
        ``FileExistsError``) unless ``overwrite=True``, a directory there is
        ``IsADirectoryError``, and ``dst_path`` naming ``src_path`` itself (also through a
        symlink, ``..`` or a hard link) is ``OverlapError`` (also a ``ValueError``).
        """
        src_path = os.fspath(src_path)
        dst_path = os.fspath(dst_path)
        overwrite = _flag(overwrite, "overwrite")
        _apart(src_path, dst_path)
        if os.path.isdir(dst_path):
            raise IsADirectoryError(
                f"{dst_path} is a directory: a data file never replaces it (also not with "
                "overwrite=True)"
            )
        if not overwrite and os.path.lexists(dst_path):
            raise OutputExistsError(f"{dst_path} exists: overwrite=True replaces it")
        try:
            with open(src_path, "rb") as f:
                head = f.read(16)
        except OSError as e:
            raise WKWException(f'Could not open WKW file "{src_path}": {e}') from None
        if len(head) < 16 or head[:3] != b"WKW":
            raise WKWException(f"{src_path}: not a WKW data file (bad magic or truncated)")
        per_dim, block_type, voxel_code, voxel_size = head[4], head[5], head[6], head[7]
        if not 1 <= voxel_code <= 10 or block_type not in (1, 2, 3):
            raise WKWException(f"{src_path}: invalid voxel or block type in the header")
        itemsize = np.dtype(Header.VALID_VOXEL_TYPES[voxel_code - 1]).itemsize
        if voxel_size == 0 or voxel_size % itemsize:
            raise WKWException(f"{src_path}: invalid voxelSize {voxel_size}")
        with tempfile.TemporaryDirectory(dir=os.path.dirname(os.path.abspath(dst_path))) as tmp:
            src_ds, dst_ds = os.path.join(tmp, "src"), os.path.join(tmp, "dst")
            _core.RawDataset.create(
                src_ds,
                voxel_code,
                voxel_size // itemsize,
                1 << (per_dim & 0x0F),
                1 << (per_dim >> 4),
                block_type,
            ).close()
            os.makedirs(os.path.join(src_ds, "z0", "y0"))
            linked = os.path.join(src_ds, "z0", "y0", "x0.wkw")
            try:
                os.link(src_path, linked)
            except OSError:
                shutil.copyfile(src_path, linked)
            _core.compress(src_ds, dst_ds, Header.BLOCK_TYPE_LZ4HC)
            os.replace(os.path.join(dst_ds, "z0", "y0", "x0.wkw"), dst_path)


class Dataset:
    """An open WKW dataset, as ``wkw.Dataset`` (use ``Dataset.open``/``Dataset.create``)."""

    def __init__(self, root, raw, _options=None):
        self.root = os.fspath(root)
        self._raw = raw
        self._options = _options or {}
        self.header = Header._from_fields(raw.header_fields())

    # -- opening ----------------------------------------------------------------------------

    @staticmethod
    def open(root, header=None, *, threads=None, corrupt_as_zeros=False, strict_headers=False,
             storage_options=None):
        """Opens the dataset at ``root``; with ``header``, creates it first if that succeeds.

        ``threads``: None uses every core (one shared pool), 1 only the calling thread, n a pool
        of n threads (shared by the datasets opened with the same n); with a pool the calling
        thread works too. ``corrupt_as_zeros=True`` reads corrupt data files as
        zeros like the reference (default: ``WKWException``). Like the reference, each data file
        is decoded with its own block type (files compressed in place with ``File.compress``
        read fine); ``strict_headers=True`` requires every file header to match ``header.wkw``.
        A URL ``root`` opens the dataset on its object store (``storage_options``: store
        configuration applied after the environment's; see the module docstring).
        """
        root = os.fspath(root)
        threads = _threads(threads)
        opts = {
            "threads": threads,
            "corrupt_as_zeros": corrupt_as_zeros,
            "strict_headers": strict_headers,
        }
        if storage_options is not None:
            opts["storage_options"] = storage_options
        if header is not None:
            try:
                return Dataset.create(root, header, **opts)
            except WKWException:
                pass
        if not _is_url(root):
            _local_only(storage_options, root)
        raw = _core.RawDataset.open(root, _pairs(storage_options), threads, corrupt_as_zeros,
                                    strict_headers)
        return Dataset(root, raw, opts)

    @staticmethod
    def create(root, header, *, threads=None, corrupt_as_zeros=False, strict_headers=False,
               storage_options=None, overwrite=False):
        """Creates a dataset with ``header`` at ``root``; a URL ``root`` creates it on the
        object store (see ``open``).

        A dataset at ``root`` is ``OutputExistsError`` (a ``WKWException``, as the reference
        raises, and a ``FileExistsError``) unless ``overwrite=True``: then a new empty dataset
        replaces it whole (locally built beside it and swapped in, so an interruption leaves
        the old or the new one; on an object store the old dataset's objects are deleted
        first). A file at ``root`` is refused the same way (and replaced with
        ``overwrite=True``); into a directory without ``header.wkw`` the header is written as
        by the reference.
        """
        root = os.fspath(root)
        threads = _threads(threads)
        overwrite = _flag(overwrite, "overwrite")
        _check(
            header.voxel_type in Header.VALID_VOXEL_TYPES,
            f"voxel_type must be one of {Header.VALID_VOXEL_TYPES}, but is {header.voxel_type}",
        )
        for name in ("num_channels", "block_len", "file_len", "block_type"):
            v = getattr(header, name)
            if not isinstance(v, (int, np.integer)) or not 0 < v < 2**32:
                raise WKWException(f"{root}: header {name} {v!r} is out of range")
        if header.num_channels * np.dtype(header.voxel_type).itemsize > 255:
            raise WKWException(
                f"{root}: {header.num_channels} channels of {np.dtype(header.voxel_type).name} "
                "do not fit the 255-byte voxel size"
            )
        opts = {
            "threads": threads,
            "corrupt_as_zeros": corrupt_as_zeros,
            "strict_headers": strict_headers,
        }
        fields = (
            _voxel_code(header.voxel_type),
            int(header.num_channels),
            int(header.block_len),
            int(header.file_len),
            int(header.block_type),
        )
        if not _is_url(root):
            _local_only(storage_options, root)
        raw = _core.RawDataset.create(root, *fields, _pairs(storage_options), **opts,
                                      overwrite=overwrite)
        if storage_options is not None:
            opts["storage_options"] = storage_options
        return Dataset(root, raw, opts)

    # -- data -------------------------------------------------------------------------------

    def read(self, off, shape, order="F"):
        """Reads the box at ``off`` (x, y, z) of ``shape`` voxels as an array of shape
        (channels, x, y, z); Fortran-contiguous like the reference, or C-contiguous with
        ``order="C"``. Missing files read as 0."""
        off = _xyz(off, "Offset", self.root)
        shape = _xyz(shape, "Shape", self.root)
        return self._raw.read(off, shape, order)

    def write(self, off, data):
        """Writes a numpy array of shape (x, y, z) or (channels, x, y, z) at ``off``; any
        memory layout (C order, Fortran order, strided views)."""
        if not isinstance(data, np.ndarray):
            raise self._error("Data must be a NumPy ndarray")
        if data.ndim not in (3, 4):
            raise self._error("Data must be three- or four-dimensional")
        if data.ndim == 3:
            data = data[np.newaxis]
        if not data.shape[0] == self.header.num_channels:
            raise self._error(
                "Data volume must have {} channels".format(self.header.num_channels)
            )
        if not data.dtype == self.header.voxel_type:
            raise self._error(
                "Data elements must be of type {}".format(self.header.voxel_type)
            )
        off = _xyz(off, "Offset", self.root)
        self._raw.write(off, data)

    def _error(self, message):
        # The reference's message first (code may match on it), then the dataset.
        return WKWException(f"{message} (dataset {self.root})")

    # -- files ------------------------------------------------------------------------------

    def compress(self, dst_path, compress_files: bool = False, *, overwrite: bool = False,
                 progress=None):
        """Creates an LZ4HC dataset at ``dst_path`` with this header and, with
        ``compress_files``, converts every data file into it (in parallel). Returns it.

        Beyond the reference: ``dst_path`` must not be this dataset, lie inside it or contain
        it (``OverlapError``, also a ``ValueError``); an existing dataset there is
        ``OutputExistsError`` (also a ``FileExistsError``) unless ``overwrite=True``, which
        replaces it. A local dataset is converted beside ``dst_path`` and put in place
        complete, so a failed or interrupted call (Ctrl-C stops it between files and batches
        of blocks, raising ``KeyboardInterrupt``) leaves ``dst_path`` as it was.
        ``progress(done, total)`` is called after each data file.
        """
        dst_path = os.fspath(dst_path)
        overwrite = _flag(overwrite, "overwrite")
        progress = _callback(progress)
        _apart(self.root, dst_path)
        if not compress_files:
            header = Header._from_fields(self._raw.header_fields())
            header.block_type = Header.BLOCK_TYPE_LZ4HC
            return Dataset.create(dst_path, header, **self._options, overwrite=overwrite)
        if _is_url(self.root) != _is_url(dst_path):
            raise self._error("compress_files=True needs source and destination both local "
                              f"or both URLs (destination {dst_path})")
        if _is_url(self.root):
            # The destination is configured from the environment.
            self._raw.compress(dst_path, Header.BLOCK_TYPE_LZ4HC, overwrite=overwrite,
                               progress=progress)
        else:
            _core.compress(
                self.root, dst_path, Header.BLOCK_TYPE_LZ4HC, self._options.get("threads"),
                overwrite, progress,
            )
        return Dataset.open(dst_path, **self._options)

    def list_files(self):
        """An iterator over the paths (URLs for a remote dataset) of the dataset's data files
        (``z*/y*/x*.wkw``)."""
        return iter([os.fspath(p) for p in self._raw.list_files()])

    def verify(self, *, progress=None):
        """Checks every data file: a list of ``(path, problem)`` for the broken ones;
        ``progress(done, total)`` is called after each file. Ctrl-C stops it
        (``KeyboardInterrupt``)."""
        progress = _callback(progress)
        if _is_url(self.root):
            return self._raw.verify(progress=progress)
        return verify(self.root, threads=self._options.get("threads"), progress=progress)

    def close(self):
        """Closes the dataset (later reads and writes raise ``WKWException``)."""
        self._raw.close()

    def __enter__(self):
        return self

    def __exit__(self, type, value, tb):
        self.close()

    def __repr__(self):
        state = " closed" if self._raw.closed else ""
        return f"<scifmt.wkw.Dataset {self.root!r}{state} {self.header!r}>"

    def __reduce__(self):
        # Pickles as "reopen the same path" (e.g. to send a dataset to Dask workers).
        return (_reopen, (self.root, self._options))


def _reopen(root, options):
    return Dataset.open(root, **options)


def verify(root, threads=None, storage_options=None, *, progress=None):
    """Checks every data file of the dataset at ``root`` (headers, jump tables, every block):
    a list of ``(path, problem)`` for the files with a problem, empty when all are sound. A URL
    ``root`` is checked on its object store. ``progress(done, total)`` is called after each
    file; Ctrl-C stops the check between files and blocks (``KeyboardInterrupt``)."""
    root = os.fspath(root)
    threads = _threads(threads)
    progress = _callback(progress)
    if _is_url(root):
        with Dataset.open(root, threads=threads, storage_options=storage_options) as ds:
            return ds._raw.verify(progress=progress)
    _local_only(storage_options, root)
    return [(os.fspath(p), msg) for p, msg in _core.verify(root, threads, progress)]


def _local_only(storage_options, root):
    if storage_options is not None:
        raise WKWException(f"{root}: storage_options apply to URLs only")


def __dir__() -> list:
    """The public API only (the modules this one imports stay out of ``dir()``)."""
    return sorted(__all__)
