"""Blosc2 chunks from Rust (the ``blosc-chunk`` crate).

``compress`` makes chunks byte-identical to python-blosc2's ``blosc2.compress2`` (C-Blosc2
3.3.5, one thread) for the same parameters with the BloscLZ, LZ4, LZ4HC and Zstd codecs, and
with zlib (zlib-rs here, zlib-ng in C-Blosc2) in every case the tests check. ``decompress`` reads
any chunk C-Blosc2 writes with these codecs (Blosc1 and Blosc2 headers, special-value chunks,
dictionaries, VL blocks). The codec runs with the GIL released.

Quick start::

    import numpy as np
    import scifmt.blosc as blosc

    a = np.arange(1_000_000, dtype=np.int32)
    chunk = blosc.compress(a, codec="lz4", filters=[blosc.Filter.BITSHUFFLE])
    info = blosc.info(chunk)            # nbytes, cbytes, blocksize, typesize, codec, ...
    b = np.frombuffer(blosc.decompress(chunk), dtype=np.int32)

Parameters are spelled as in python-blosc2: ``codec`` is a :class:`Codec` (or its name, or its
number, or a ``blosc2.Codec``), ``filters`` a list of :class:`Filter` filling the filter slots
from slot 0 (python-blosc2's ``filters=[...]``), ``splitmode`` a :class:`SplitMode`.

Differences from ``blosc2.compress2`` (documented in the package README):

* ``typesize=None`` (the default) takes the item size of a numpy array or typed memoryview and
  8 (python-blosc2's default) for untyped buffers such as ``bytes``; ``blosc2.compress2``
  always defaults to 8. Pass ``typesize`` explicitly for identical bytes.
* Besides the built-in codecs and filters, C-Blosc2's in-library plugins exist (NDLZ, ZFP;
  NDCELL, NDMEAN, BYTEDELTA, INT_TRUNC); those that need the b2nd block shape take it as
  ``blockshape=`` (python-blosc2 reads it from the array). No tuner.
* Errors are :class:`BloscError` (a ``ValueError``), non-contiguous buffers raise
  ``BufferError`` like python-blosc2.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any, Iterable, Optional, Tuple

import numpy as np

from scifmt._scifmt import blosc as _core

__all__ = [
    "BloscError",
    "ChunkInfo",
    "Codec",
    "Filter",
    "SplitMode",
    "SpecialValue",
    "MAX_BUFFERSIZE",
    "MAX_BLOCKSIZE",
    "MAX_OVERHEAD",
    "compress",
    "compress2",
    "decompress",
    "decompress_into",
    "info",
    "codecs",
]

BloscError = _core.BloscError
MAX_BUFFERSIZE: int = _core.MAX_BUFFERSIZE
MAX_BLOCKSIZE: int = _core.MAX_BLOCKSIZE
MAX_OVERHEAD: int = _core.MAX_OVERHEAD


class Codec(enum.IntEnum):
    """Compression codecs, numbered like ``blosc2.Codec`` (C-Blosc2's ``compcode``)."""

    BLOSCLZ = 0
    LZ4 = 1
    LZ4HC = 2
    ZLIB = 4
    ZSTD = 5
    #: C-Blosc2's NDLZ plugin: 2-D blocks of 1-byte items; ``codec_meta`` 4 or 8 (cell edge);
    #: needs ``blockshape``.
    NDLZ = 32
    #: ZFP, fixed accuracy (float32/64): tolerance ``10**codec_meta``; needs ``blockshape``.
    ZFP_ACC = 33
    #: ZFP, fixed precision: ``codec_meta + 3 + 2*ndim`` bits; needs ``blockshape``.
    ZFP_PREC = 34
    #: ZFP, fixed rate: ``codec_meta`` percent of the input size; needs ``blockshape``.
    ZFP_RATE = 35


class Filter(enum.IntEnum):
    """Filters, numbered like ``blosc2.Filter``."""

    NOFILTER = 0
    SHUFFLE = 1
    BITSHUFFLE = 2
    DELTA = 3
    TRUNC_PREC = 4
    #: Items regrouped by cells of ``filters_meta`` items per dimension; needs ``blockshape``.
    NDCELL = 32
    #: Lossy: every cell replaced by its mean (float32/64); needs ``blockshape``.
    NDMEAN = 33
    #: Byte-wise delta inside ``filters_meta`` byte streams (0 = typesize), after SHUFFLE.
    BYTEDELTA = 35
    #: Lossy integer truncation: ``filters_meta`` bits kept (or, negative, zeroed).
    INT_TRUNC = 36


class SplitMode(enum.IntEnum):
    """When blocks are split into one stream per byte of the type (``blosc2.SplitMode``)."""

    ALWAYS_SPLIT = 1
    NEVER_SPLIT = 2
    AUTO_SPLIT = 3
    FORWARD_COMPAT_SPLIT = 4


class SpecialValue(enum.Enum):
    """The content of a special-value chunk (no compressed data)."""

    ZEROS = "zeros"
    NAN = "nan"
    VALUE = "value"
    UNINIT = "uninit"


#: python-blosc2's default filter pipeline: SHUFFLE in the last slot.
DEFAULT_FILTERS = (Filter.NOFILTER,) * 5 + (Filter.SHUFFLE,)


def _enum_number(value: Any, enum_cls: type, what: str) -> int:
    """The number of a member of ``enum_cls`` given as member, name, number or foreign enum."""
    if isinstance(value, enum_cls):
        return int(value)
    if isinstance(value, str):
        try:
            return int(enum_cls[value.upper()])
        except KeyError:
            names = ", ".join(m.name.lower() for m in enum_cls)
            raise ValueError(f"unknown {what} {value!r} (one of {names})") from None
    if isinstance(value, enum.Enum):  # e.g. blosc2.Codec.LZ4
        value = value.value
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{what} must be a {enum_cls.__name__}, a name or a number, not {type(value).__name__}")
    return int(value)


def _u8(obj: Any, what: str) -> "np.ndarray":
    """A 1-D ``uint8`` view of a C-contiguous buffer (no copy)."""
    if isinstance(obj, np.ndarray):
        if not obj.flags.c_contiguous:
            raise BufferError(f"{what}: the array is not C-contiguous (use np.ascontiguousarray)")
        if obj.dtype.hasobject:
            raise TypeError(f"{what}: arrays of Python objects have no raw bytes")
        return obj.reshape(-1).view(np.uint8) if obj.ndim != 1 or obj.dtype != np.uint8 else obj
    if isinstance(obj, (bytes, bytearray)):
        return np.frombuffer(obj, dtype=np.uint8)
    try:
        m = memoryview(obj)
    except TypeError:
        raise TypeError(
            f"{what} must support the buffer protocol (bytes, bytearray, memoryview, numpy array), "
            f"not {type(obj).__name__}"
        ) from None
    if not m.c_contiguous:
        raise BufferError(f"{what}: the buffer is not C-contiguous")
    if m.nbytes == 0:
        return np.empty(0, dtype=np.uint8)
    return np.frombuffer(m.cast("B") if (m.ndim != 1 or m.format != "B") else m, dtype=np.uint8)


def _itemsize(obj: Any) -> Optional[int]:
    """The item size of a typed buffer, or None for untyped ones (bytes and the like)."""
    if isinstance(obj, np.ndarray):
        return obj.dtype.itemsize
    if isinstance(obj, (bytes, bytearray)):
        return None
    try:
        m = memoryview(obj)
    except TypeError:
        return None
    return m.itemsize if m.format not in ("B", "b", "c") else None


def _threads(nthreads: Optional[int]) -> int:
    if nthreads is None:
        return 0  # all cores, like python-blosc2's default (blosc2.nthreads)
    if isinstance(nthreads, bool) or not isinstance(nthreads, (int, np.integer)):
        raise TypeError("nthreads must be an int or None")
    if nthreads < 0:
        raise ValueError(f"nthreads {nthreads} is negative")
    return int(nthreads)


def compress(
    data: Any,
    typesize: Optional[int] = None,
    clevel: int = 5,
    codec: Any = Codec.ZSTD,
    filters: Optional[Iterable[Any]] = None,
    blocksize: int = 0,
    splitmode: Any = None,
    nthreads: Optional[int] = None,
    *,
    filters_meta: Optional[Iterable[int]] = None,
    use_dict: bool = False,
    format: str = "blosc2",
    codec_meta: int = 0,
    blockshape: Optional[Iterable[int]] = None,
) -> bytes:
    """Compresses a C-contiguous buffer into one Blosc2 chunk, or a Blosc1 one.

    Parameters (python-blosc2's names and defaults, see the module docstring for ``typesize``):

    * ``data``: any C-contiguous buffer (bytes, bytearray, memoryview, numpy array, ...), at
      most ``MAX_BUFFERSIZE`` bytes.
    * ``typesize``: bytes per item for the shuffle filters and the split decision.
    * ``clevel``: 0 (store) to 9.
    * ``codec``: :class:`Codec` (default ZSTD).
    * ``filters``: up to 6 :class:`Filter`, filling slots 0, 1, ...; ``None`` is python-blosc2's
      default (SHUFFLE in slot 5).
    * ``blocksize``: bytes per block, a multiple of ``typesize``; 0 = automatic (C-Blosc2's
      rules).
    * ``splitmode``: :class:`SplitMode` (``None``: AUTO_SPLIT, python-blosc2's default; with
      ``format="blosc1"`` FORWARD_COMPAT_SPLIT, C-Blosc 1's default).
    * ``nthreads``: threads (``None`` or 0 = all cores); the bytes do not depend on it.
    * ``filters_meta``: per-slot filter parameters (e.g. the bits TRUNC_PREC keeps, or a negative
      number of bits to drop).
    * ``use_dict``: build a dictionary (zstd, LZ4, LZ4HC).
    * ``format``: ``"blosc2"`` (default: what C-Blosc2 3.3.5 writes, format version 5) or
      ``"blosc1"``: what C-Blosc 1.21 writes (python-blosc 1.11's ``blosc.compress``, numcodecs'
      ``Blosc``, most Zarr blosc chunks), format version 2, which C-Blosc 1.x can read;
      byte-identical to C-Blosc 1.21 for BloscLZ, LZ4, LZ4HC and zstd. It takes at most one
      filter (SHUFFLE or BITSHUFFLE; ``filters=[Filter.NOFILTER]`` for none) and no
      ``filters_meta`` or ``use_dict``; ``blocksize`` follows C-Blosc 1's rules (any size,
      adjusted as C-Blosc 1 does).
    * ``codec_meta``: the codec's parameter byte (NDLZ: cell edge 4 or 8; ZFP: see
      :class:`Codec`), -128..=255.
    * ``blockshape``: the b2nd block shape (items per dimension) the chunk belongs to, which
      the NDCELL/NDMEAN filters and the NDLZ/ZFP codecs need (C-Blosc2 reads it from the array's
      ``b2nd`` metalayer); ``blocksize`` must then be the block's byte size.

    Returns the chunk as ``bytes``.

    Raises ``BloscError`` (a ``ValueError``) for invalid parameters, ``BufferError`` for a
    non-contiguous buffer, ``TypeError`` for objects without the buffer protocol.
    """
    src = _u8(data, "data")
    if typesize is None:
        typesize = _itemsize(data) or 8
    if isinstance(typesize, bool) or not isinstance(typesize, (int, np.integer)):
        raise TypeError("typesize must be an int")
    fs = list(DEFAULT_FILTERS) if filters is None else list(filters)
    fs = [_enum_number(f, Filter, "filter") for f in fs]
    meta = [0] * 6 if filters_meta is None else [int(m) for m in filters_meta]
    if format not in ("blosc2", "blosc1"):
        raise ValueError(f"format {format!r} is not 'blosc2' or 'blosc1'")
    blosc1 = format == "blosc1"
    if splitmode is None:
        splitmode = SplitMode.FORWARD_COMPAT_SPLIT if blosc1 else SplitMode.AUTO_SPLIT
    return _core.compress(
        src,
        int(typesize),
        int(clevel),
        _enum_number(codec, Codec, "codec"),
        fs,
        meta,
        int(blocksize),
        _enum_number(splitmode, SplitMode, "splitmode"),
        _threads(nthreads),
        bool(use_dict),
        blosc1,
        int(codec_meta),
        None if blockshape is None else [int(d) for d in blockshape],
    )


_COMPRESS2_KEYS = {
    "codec", "codec_meta", "clevel", "use_dict", "typesize", "nthreads", "blocksize",
    "splitmode", "filters", "filters_meta", "tuner",
}  # fmt: skip


def compress2(src: Any, **kwargs: Any) -> bytes:
    """``blosc2.compress2``'s signature and defaults: keyword parameters, or ``cparams=`` a dict
    or a ``blosc2.CParams``; ``typesize`` defaults to 8 whatever the buffer, like python-blosc2.

    ``tuner`` must be the default (STUNE). Plugins that need the b2nd block shape (NDCELL,
    NDMEAN, NDLZ, ZFP) fail here as in python-blosc2: use :func:`compress` with ``blockshape``.
    """
    if "cparams" in kwargs:
        if len(kwargs) > 1:
            raise AttributeError("Cannot pass both cparams and other kwargs already included in CParams")
        cp = kwargs["cparams"]
        if not isinstance(cp, dict):
            import dataclasses

            cp = dataclasses.asdict(cp) if dataclasses.is_dataclass(cp) else dict(vars(cp))
        kwargs = dict(cp)
    unknown = set(kwargs) - _COMPRESS2_KEYS
    if unknown:
        raise TypeError(f"unknown compression parameters: {sorted(unknown)}")
    tuner = kwargs.get("tuner", 0)
    if (tuner.value if isinstance(tuner, enum.Enum) else tuner) != 0:
        raise ValueError("only the default tuner (STUNE) is supported")
    return compress(
        src,
        typesize=kwargs.get("typesize", 8),
        clevel=kwargs.get("clevel", 5),
        codec=kwargs.get("codec", Codec.ZSTD),
        filters=kwargs.get("filters", DEFAULT_FILTERS),
        blocksize=kwargs.get("blocksize", 0),
        splitmode=kwargs.get("splitmode", SplitMode.AUTO_SPLIT),
        nthreads=kwargs.get("nthreads"),
        filters_meta=kwargs.get("filters_meta"),
        use_dict=kwargs.get("use_dict", False),
        codec_meta=int(kwargs.get("codec_meta", 0)),
    )


def decompress(
    chunk: Any,
    nthreads: Optional[int] = None,
    max_nbytes: int = MAX_BUFFERSIZE,
    *,
    blockshape: Optional[Iterable[int]] = None,
) -> bytes:
    """Decompresses one chunk (any C-contiguous buffer) into ``bytes``.

    ``max_nbytes`` bounds the output a chunk may ask for (default: C-Blosc2's 2 GiB maximum);
    the decoder checks it before allocating. ``nthreads``: ``None`` or 0 = all cores.
    ``blockshape``: the b2nd block shape, needed by chunks using NDCELL, NDMEAN or ZFP.

    Raises ``BloscError`` for a malformed, truncated, unsupported or too large chunk.
    """
    bs = None if blockshape is None else [int(d) for d in blockshape]
    return _core.decompress(_u8(chunk, "chunk"), _threads(nthreads), int(max_nbytes), bs)


def decompress_into(
    chunk: Any, out: Any, nthreads: Optional[int] = None, *, blockshape: Optional[Iterable[int]] = None
) -> int:
    """Decompresses one chunk into ``out`` (a writable C-contiguous numpy array, bytearray or
    memoryview at least ``nbytes`` long, of any dtype); returns the number of bytes written.
    """
    if isinstance(out, np.ndarray):
        if not out.flags.c_contiguous or not out.flags.writeable:
            raise BufferError("out: the array is not writable and C-contiguous")
        dst = out.reshape(-1).view(np.uint8)
    else:
        m = memoryview(out)
        if m.readonly or not m.c_contiguous:
            raise BufferError("out: the buffer is not writable and C-contiguous")
        dst = np.frombuffer(m.cast("B") if (m.ndim != 1 or m.format != "B") else m, dtype=np.uint8)
    bs = None if blockshape is None else [int(d) for d in blockshape]
    return _core.decompress_into(_u8(chunk, "chunk"), dst, _threads(nthreads), MAX_BUFFERSIZE, bs)


@dataclass(frozen=True)
class ChunkInfo:
    """The header of a chunk (no decoding done)."""

    #: Format version byte (5 for C-Blosc2 3.x chunks, 6 with VL blocks, 1–4 Blosc1).
    version: int
    #: Codec format version byte.
    versionlz: int
    #: The flags byte (byte 2).
    flags: int
    #: Uncompressed size in bytes.
    nbytes: int
    #: Compressed size in bytes (the whole chunk, header included).
    cbytes: int
    #: Block size in bytes.
    blocksize: int
    #: Number of blocks.
    nblocks: int
    #: Item size in bytes.
    typesize: int
    #: Codec (a :class:`Codec`, or the raw id for codecs this package lacks).
    codec: Any
    #: The 6 filter slots (:class:`Filter`, or raw ids).
    filters: Tuple[Any, ...]
    #: Per-slot filter metadata bytes.
    filters_meta: Tuple[int, ...]
    #: The codec's metadata byte.
    codec_meta: int
    #: The Blosc2 flags byte (byte 31 of an extended header).
    blosc2_flags: int
    #: 16 (Blosc1 header) or 32 (extended header).
    header_len: int
    #: Whether the header is the 32-byte extended one.
    extended_header: bool
    #: Whether the data is stored uncompressed.
    memcpyed: bool
    #: Whether blocks are split into one stream per byte of the type.
    split: bool
    #: Whether a dictionary is used.
    use_dict: bool
    #: Whether this is a lazy chunk (from a frame, without its blocks).
    lazy: bool
    #: Whether the chunk uses variable-length blocks (format version 6).
    vl_blocks: bool
    #: The special value, or ``None`` for a chunk with data.
    special: Optional[SpecialValue]


def _member(enum_cls: type, value: int) -> Any:
    try:
        return enum_cls(value)
    except ValueError:
        return value


def info(chunk: Any) -> ChunkInfo:
    """Parses the header of ``chunk`` (like ``blosc2.get_cbuffer_sizes`` and more).

    Raises ``BloscError`` for a malformed header.
    """
    d = _core.info(_u8(chunk, "chunk"))
    return ChunkInfo(
        version=d["version"],
        versionlz=d["versionlz"],
        flags=d["flags"],
        nbytes=d["nbytes"],
        cbytes=d["cbytes"],
        blocksize=d["blocksize"],
        nblocks=d["nblocks"],
        typesize=d["typesize"],
        codec=_member(Codec, d["codec"]),
        filters=tuple(_member(Filter, f) for f in d["filters"]),
        filters_meta=tuple(d["filters_meta"]),
        codec_meta=d["compcode_meta"],
        blosc2_flags=d["blosc2_flags"],
        header_len=d["header_len"],
        extended_header=d["extended_header"],
        memcpyed=d["memcpyed"],
        split=d["split"],
        use_dict=d["use_dict"],
        lazy=d["lazy"],
        vl_blocks=d["vl_blocks"],
        special=None if d["special"] is None else _member(SpecialValue, d["special"]),
    )


def codecs() -> list:
    """The codecs this build has, as :class:`Codec` members."""
    return [Codec(i) for _, i in _core.codecs()]



def __dir__() -> list:
    """The public API only (the modules this one imports stay out of ``dir()``)."""
    return sorted(__all__)
