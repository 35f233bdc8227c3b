"""Zarr's ``blosc`` codec in Rust: Blosc1 chunks as C-Blosc 1.21 writes them.

Every Zarr implementation writes ``blosc`` chunks through C-Blosc 1.21 (numcodecs, hence
zarr-python; python-blosc; zarrs; tensorstore): the Blosc1 format, version byte 2, which
C-Blosc 1.x readers require. This module does the same with ``scifmt.blosc``
(``format="blosc1"``), compressing and decompressing with the GIL released:

* :class:`BloscCodec`: the Zarr v3 ``blosc`` codec for zarr-python 3 (a subclass of
  ``zarr.codecs.BloscCodec`` with the same configuration and metadata). zarr-python uses it
  when configured::

      import zarr
      zarr.config.set({"codecs.blosc": "scifmt.zarr.BloscCodec"})

  (the ``scifmt`` wheel registers it with zarr-python through the ``zarr.codecs`` entry point;
  importing this module and reading ``scifmt.zarr.BloscCodec`` registers it too).
* :class:`Blosc`: a drop-in for ``numcodecs.Blosc`` (same constructor, constants,
  ``encode``/``decode``, ``get_config``/``from_config`` and ``codec_id`` ``"blosc"``), for Zarr v2
  ``compressor`` metadata: pass it as ``compressor=`` when creating an array, or replace
  numcodecs' implementation for every array read with ``numcodecs.register_codec(Blosc)``.

Chunks are byte-identical to numcodecs 0.16's (C-Blosc 1.21.7.dev, one thread) for BloscLZ,
LZ4, LZ4HC and zstd with every shuffle, typesize, clevel and block size, except zstd blocks of
256 KiB and more (C-Blosc 1.21 in the wheels bundles libzstd 1.5.6, scifmt links 1.5.7, whose
streams for such large blocks differ). zlib chunks are valid Blosc1 chunks C-Blosc reads, but
their deflate streams differ (zlib-rs here, zlib 1.3.1 in C-Blosc 1.21). The output does not
depend on the thread count.

Differences from numcodecs:

* Errors are :class:`BloscError` (a ``ValueError``) where numcodecs raises ``RuntimeError``
  from C-Blosc (bad ``clevel``, corrupt chunks); a chunk is checked before anything is
  allocated, and a corrupt one never crashes the interpreter.
* :meth:`Blosc.decode` also reads chunks in the Blosc2 format (C-Blosc2), which C-Blosc 1.21
  refuses.
* ``Blosc(..., nthreads=1)``: the threads one call uses (numcodecs uses C-Blosc's global thread
  count from the main thread and one thread elsewhere). Not part of the configuration.
"""

from __future__ import annotations

import operator
from typing import Any, Optional

import numpy as np

from scifmt import blosc as _blosc
from scifmt._scifmt import blosc as _core
from scifmt.blosc import BloscError

__all__ = [
    "AUTOBLOCKS",
    "AUTOSHUFFLE",
    "BITSHUFFLE",
    "Blosc",
    "BloscCodec",
    "BloscError",
    "NOSHUFFLE",
    "SHUFFLE",
    "list_compressors",
]

#: The shuffle names (Zarr v3 metadata; ``auto`` for numcodecs' AUTOSHUFFLE) and numcodecs'
#: numbers, as the Rust core (blosc-chunk) defines them.
_SHUFFLES = dict(_core.shuffles())
#: Shuffle values, numbered as in numcodecs and C-Blosc 1.
AUTOSHUFFLE = _SHUFFLES["auto"]
NOSHUFFLE = _SHUFFLES["noshuffle"]
SHUFFLE = _SHUFFLES["shuffle"]
BITSHUFFLE = _SHUFFLES["bitshuffle"]
#: ``blocksize=0``: C-Blosc 1's automatic block size.
AUTOBLOCKS = 0

_SHUFFLE_NAMES = {AUTOSHUFFLE: "AUTOSHUFFLE", NOSHUFFLE: "NOSHUFFLE", SHUFFLE: "SHUFFLE",
                  BITSHUFFLE: "BITSHUFFLE"}  # fmt: skip
#: The ``cname`` values (blosclz, lz4, lz4hc, zlib, zstd), as the Rust core defines them.
_CNAMES = tuple(_core.cnames())


def list_compressors() -> list:
    """The ``cname`` values this codec takes (numcodecs' ``blosc.list_compressors()``; no
    snappy, which the numcodecs and python-blosc wheels leave out too)."""
    return list(_CNAMES)


try:  # numcodecs' base class, so that numcodecs and zarr take a Blosc for one of theirs.
    from numcodecs.abc import Codec as _CodecBase
except ImportError:  # numcodecs is optional: Blosc works without it.
    _CodecBase = object  # type: ignore[assignment,misc]


def _contiguous(buf: Any, what: str, writable: bool = False) -> np.ndarray:
    """A numpy view of ``buf`` in memory order (C- or Fortran-contiguous, never copied), as
    numcodecs' ``ensure_contiguous_ndarray`` takes it."""
    if isinstance(buf, np.ndarray):
        a = buf
    else:
        try:
            a = np.frombuffer(buf, dtype=np.uint8) if isinstance(buf, (bytes, bytearray)) \
                else np.asarray(memoryview(buf))
        except TypeError:
            raise TypeError(
                f"{what} must support the buffer protocol (bytes, bytearray, memoryview, numpy "
                f"array), not {type(buf).__name__}"
            ) from None
    if a.dtype.hasobject:
        raise TypeError(f"{what}: object arrays are not supported")
    if not a.flags.c_contiguous:
        if not a.flags.f_contiguous:
            raise ValueError(f"{what}: an array with contiguous memory is required")
        a = a.T  # the same memory, C-contiguous
    if writable and not a.flags.writeable:
        raise ValueError(f"{what}: the buffer is read-only")
    return a


class Blosc(_CodecBase):
    """Blosc1 compression (C-Blosc 1.21's format), a drop-in for ``numcodecs.Blosc``.

    Parameters (numcodecs' names and defaults):

    * ``cname``: ``"blosclz"``, ``"lz4"`` (default), ``"lz4hc"``, ``"zlib"`` or ``"zstd"``.
    * ``clevel``: 0 (store) to 9; default 5.
    * ``shuffle``: ``NOSHUFFLE`` (0), ``SHUFFLE`` (1, default), ``BITSHUFFLE`` (2) or
      ``AUTOSHUFFLE`` (-1: bitshuffle when the item size is 1, else shuffle).
    * ``blocksize``: bytes per block, 0 (default) for C-Blosc 1's automatic size.
    * ``typesize``: bytes per item for the shuffle; ``None`` (default) takes the item size of
      the buffer given to :meth:`encode` (1 for ``bytes``).
    * ``nthreads`` (keyword, not in numcodecs): threads per call, default 1; the bytes do not
      depend on it.
    """

    codec_id = "blosc"
    NOSHUFFLE = NOSHUFFLE
    SHUFFLE = SHUFFLE
    BITSHUFFLE = BITSHUFFLE
    AUTOSHUFFLE = AUTOSHUFFLE
    #: The largest buffer :meth:`encode` takes (numcodecs' limit, C-Blosc's 2 GiB − 1).
    max_buffer_size = 2**31 - 1

    def __init__(
        self,
        cname: str = "lz4",
        clevel: int = 5,
        shuffle: int = SHUFFLE,
        blocksize: int = AUTOBLOCKS,
        typesize: Optional[int] = None,
        *,
        nthreads: int = 1,
    ) -> None:
        if isinstance(typesize, int) and typesize < 1:
            raise ValueError(f"Cannot use typesize {typesize} less than 1.")
        self.cname = cname
        self.clevel = clevel
        self.shuffle = shuffle
        self.blocksize = blocksize
        self._typesize = typesize
        self._nthreads = nthreads

    def encode(self, buf: Any) -> bytes:
        """Compresses ``buf`` (any contiguous buffer) into one Blosc1 chunk."""
        a = _contiguous(buf, "buf")
        if a.nbytes > self.max_buffer_size:
            raise ValueError(f"Codec does not support buffers of > {self.max_buffer_size} bytes")
        cname = self.cname.decode("ascii") if isinstance(self.cname, bytes) else self.cname
        if cname not in _CNAMES:
            raise ValueError(f"compressor not supported: {cname!r} (one of {', '.join(_CNAMES)})")
        typesize = self._typesize if isinstance(self._typesize, int) else a.dtype.itemsize
        try:
            number = operator.index(self.shuffle)
        except TypeError:
            number = None
        if number not in _SHUFFLES.values():
            raise ValueError(f"invalid shuffle argument; expected -1, 0, 1 or 2, found {self.shuffle!r}")
        # The filter, AUTOSHUFFLE resolved by the item size.
        shuffle = _blosc.Filter(_core.shuffle_filter(number, min(typesize, 1 << 62)))
        return _blosc.compress(
            a,
            typesize=typesize,
            clevel=self.clevel,
            codec=cname,
            filters=[shuffle],
            blocksize=self.blocksize,
            nthreads=self._nthreads,
            format="blosc1",
        )

    def decode(self, buf: Any, out: Any = None) -> Any:
        """Decompresses one chunk into new ``bytes``, or into ``out`` (any writable contiguous
        buffer at least the chunk's ``nbytes`` long), which it then returns."""
        chunk = _contiguous(buf, "buf")
        if out is None:
            return _blosc.decompress(chunk, nthreads=self._nthreads, max_nbytes=self.max_buffer_size)
        _blosc.decompress_into(chunk, _contiguous(out, "out", writable=True), nthreads=self._nthreads)
        return out

    def get_config(self) -> dict:
        """``{"id": "blosc", "cname", "clevel", "shuffle", "blocksize"}``, as numcodecs writes it
        (``typesize`` is not part of it, as in numcodecs)."""
        return {"id": self.codec_id, "cname": self.cname, "clevel": self.clevel,
                "shuffle": self.shuffle, "blocksize": self.blocksize}  # fmt: skip

    @classmethod
    def from_config(cls, config: dict) -> "Blosc":
        """The codec for a configuration (``get_config()`` output, with or without ``id``)."""
        config = dict(config)
        config.pop("id", None)
        return cls(**config)

    def __eq__(self, other: object) -> bool:
        try:
            return self.get_config() == other.get_config()  # type: ignore[attr-defined]
        except AttributeError:
            return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # mutable, like numcodecs' codecs

    def __repr__(self) -> str:
        shuffle = _SHUFFLE_NAMES.get(self.shuffle, repr(self.shuffle))
        return (f"{type(self).__name__}(cname={self.cname!r}, clevel={self.clevel!r}, "
                f"shuffle={shuffle}, blocksize={self.blocksize})")  # fmt: skip


_SHUFFLE_NUMBERS = {name: number for name, number in _SHUFFLES.items() if name != "auto"}
_blosc_codec_class = None


def _make_blosc_codec() -> type:
    """Defines :class:`BloscCodec` (on first use: it needs zarr-python) and registers it."""
    try:
        from zarr.codecs.blosc import BloscCodec as ZarrBloscCodec
        from zarr.registry import register_codec
    except ImportError as e:
        raise ImportError(f"scifmt.zarr.BloscCodec needs zarr-python 3 ({e})") from e
    from functools import cached_property

    class BloscCodec(ZarrBloscCodec):
        """The Zarr v3 ``blosc`` codec computed by ``scifmt`` (see the module docstring).

        Constructor, attributes, metadata (``to_dict``/``from_dict``) and the choice of
        ``typesize``/``shuffle`` from the data type are zarr-python's ``BloscCodec``'s; chunks
        are encoded and decoded by :class:`Blosc`, one thread per chunk (zarr-python runs the
        chunks of a request in parallel).
        """

        @cached_property
        def _blosc_codec(self) -> Blosc:  # type: ignore[override]
            return Blosc(
                cname=self.cname.value,
                clevel=self.clevel,
                shuffle=_SHUFFLE_NUMBERS[self.shuffle.value],
                blocksize=self.blocksize,
                typesize=self.typesize,
            )

    BloscCodec.__module__ = __name__
    BloscCodec.__qualname__ = "BloscCodec"
    register_codec("blosc", BloscCodec)  # registered as "scifmt.zarr.BloscCodec"
    return BloscCodec


def __getattr__(name: str) -> Any:
    global _blosc_codec_class
    if name == "BloscCodec":
        if _blosc_codec_class is None:
            _blosc_codec_class = _make_blosc_codec()
        return _blosc_codec_class
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
