"""The ``lz4-block`` codec: chunks that are one raw LZ4 block, without a size prefix.

That is how WKW (webKNOSSOS wrapper) files store their LZ4 and LZ4HC blocks, so these classes
let zarr-python and numcodecs read such blocks where they are. The decoded size is not stored:
it is the chunk's size, which zarr-python knows. A block that does not decode to exactly that
size raises :class:`LZ4BlockError` (a ``ValueError``); encoding is liblz4's own.

* :class:`LZ4BlockCodec`: the Zarr v3 codec for zarr-python 3, name ``"lz4-block"``, found by
  zarr-python through the ``scifmt`` wheel's ``zarr.codecs`` entry point (nothing to
  configure). Configuration ``{"mode": "fast", "acceleration": 1}`` (the default; WKW's LZ4) or
  ``{"mode": "hc", "level": 9}`` (WKW's LZ4HC), optionally with ``"size"``: the decoded chunk
  size in bytes, checked when decoding and carried into the numcodecs equivalent
  (``codec_config``), so Zarr v2 / Kerchunk metadata converted from it decodes
  (``scifmt.virtual.WKWParser`` writes it). ``size`` is an optional key of the codec's
  specification; the Rust (zarrs) implementation checks it too.
* :class:`LZ4Block`: the numcodecs codec, id ``"lz4-block"`` (registered with numcodecs through
  the ``numcodecs.codecs`` entry point), for Zarr v2 metadata and kerchunk references. numcodecs
  passes no chunk size to ``decode``: give the chunk's byte size as ``size`` in the
  configuration, or an ``out`` buffer.

The codec's specification is the ``spec/`` page of the ``lz4-block-codec`` crate.

The ``b2nd`` codec: chunks that are one Blosc2 chunk of a b2nd array (python-blosc2's ``.b2nd``
files), whose items are stored block by block. It lets zarr-python and numcodecs read the chunks
of a ``.b2nd`` file where they are (each Zarr chunk the bytes of one chunk of the frame, e.g.
``schunk.get_chunk(i)``), with the Zarr chunk shape = the b2nd ``chunkshape``. Decoding moves
the items from b2nd block order to the chunk's C order; encoding writes chunks python-blosc2
reads. A chunk whose header does not describe a chunk of that shape, block shape and item size
raises :class:`B2ndError` (a ``ValueError``).

* :class:`B2ndCodec`: the Zarr v3 array→bytes codec, name ``"b2nd"`` (``zarr.codecs`` entry
  point). Configuration ``{"blockshape": [...], "endian": "little", "cname": "zstd",
  "clevel": 5, "shuffle": "shuffle"}``: ``blockshape`` (required) and ``endian`` (the byte order
  of the stored items: python-blosc2 stores the byte order of the array's NumPy dtype, ``big``
  for ``>f8``) decode; ``cname``, ``clevel`` and ``shuffle`` (the names of Zarr's ``blosc``
  codec; defaults python-blosc2's) only choose how chunks are written.
* :class:`B2nd`: the numcodecs codec, id ``"b2nd"`` (``numcodecs.codecs`` entry point), for Zarr
  v2 ``compressor`` metadata and kerchunk references. numcodecs codecs see only bytes, so its
  configuration also names the chunk's shape and data type: ``B2nd(chunkshape=(6, 4),
  dtype="<f8", blockshape=(3, 2))``. It decodes to the chunk's bytes in C order (in the dtype's
  byte order, as stored) and encodes such bytes.

The codec's specification is the ``spec/b2nd-codec`` page of the ``blosc2-frame`` crate.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

import numpy as np

from scifmt import _scifmt

_core = _scifmt.lz4_block
_b2nd = _scifmt.b2nd_codec

__all__ = [
    "B2ND_NAME", "B2nd", "B2ndCodec", "B2ndError", "LZ4Block", "LZ4BlockCodec", "LZ4BlockError",
    "NAME",
]  # fmt: skip

#: The ``lz4-block`` codec's name (Zarr v3) and id (numcodecs).
NAME = _core.NAME
LZ4BlockError = _core.LZ4BlockError
#: The ``b2nd`` codec's name (Zarr v3) and id (numcodecs).
B2ND_NAME = _b2nd.NAME
B2ndError = _b2nd.B2ndError

try:
    from numcodecs.abc import Codec as _CodecBase
except ImportError:  # numcodecs is optional: LZ4Block works without it.
    _CodecBase = object  # type: ignore[assignment,misc]


def _bytes_view(buf: Any, what: str, writable: bool = False) -> np.ndarray:
    """``buf`` as a 1-D uint8 array over the same memory (contiguous buffers only)."""
    try:
        a = np.frombuffer(buf, dtype=np.uint8) if isinstance(buf, (bytes, bytearray)) \
            else np.asarray(memoryview(buf)).reshape(-1).view(np.uint8)
    except (TypeError, ValueError):
        raise TypeError(
            f"{what} must be a contiguous buffer (bytes, bytearray, memoryview, numpy array), "
            f"not {type(buf).__name__}"
        ) from None
    if writable and not a.flags.writeable:
        raise ValueError(f"{what}: the buffer is read-only")
    return a


def _parameters(mode: Any, acceleration: Any, level: Any) -> tuple:
    """The checked configuration as ``(mode, acceleration, level)``."""
    if not isinstance(mode, str):
        raise LZ4BlockError(f"`mode` must be \"fast\" or \"hc\", not {mode!r}")
    for name, v in (("acceleration", acceleration), ("level", level)):
        if v is not None and (isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 0):
            raise LZ4BlockError(f"`{name}` must be a positive integer, not {v!r}")
    acceleration = 1 if acceleration is None else int(acceleration)
    level = None if level is None else int(level)
    _core.check_configuration(mode, acceleration, level)
    return mode, acceleration, level


class LZ4Block(_CodecBase):
    """The ``lz4-block`` codec for numcodecs (Zarr v2 ``compressor``, kerchunk references).

    Parameters: ``mode`` (``"fast"``, default, or ``"hc"``), ``acceleration`` (mode ``"fast"``,
    1..65537, default 1), ``level`` (mode ``"hc"``, 1..12), ``size`` (the decoded size of every
    chunk in bytes, which :meth:`decode` needs when it is given no ``out``).
    """

    codec_id = NAME

    def __init__(self, mode: str = "fast", acceleration: Optional[int] = None,
                 level: Optional[int] = None, size: Optional[int] = None) -> None:  # fmt: skip
        if mode == "hc" and acceleration is not None:
            raise LZ4BlockError("`acceleration` belongs to mode \"fast\"")
        self.mode, self.acceleration, self.level = _parameters(
            mode, None if mode == "hc" else acceleration, level)
        if size is not None and (isinstance(size, bool) or not isinstance(size, (int, np.integer))
                                 or size < 0):  # fmt: skip
            raise LZ4BlockError(f"`size` must be a non-negative integer, not {size!r}")
        self.size = None if size is None else int(size)

    def encode(self, buf: Any) -> bytes:
        """One chunk (any contiguous buffer) as one LZ4 block."""
        return _core.encode(_bytes_view(buf, "buf"), self.mode, self.acceleration, self.level)

    def decode(self, buf: Any, out: Any = None) -> Any:
        """The decoded chunk: into ``out`` (which it must fill exactly, and then returns), or
        as new ``bytes`` of the configured ``size``."""
        data = _bytes_view(buf, "buf")
        if out is not None:
            _core.decode_into(data, _bytes_view(out, "out", writable=True))
            return out
        if self.size is None:
            raise LZ4BlockError(
                "lz4-block stores no decoded size: give the chunk's byte size as `size` in the "
                "codec's configuration, or an `out` buffer"
            )
        return _core.decode(data, self.size)

    def get_config(self) -> dict:
        """``{"id": "lz4-block", "mode", "acceleration" | "level"[, "size"]}``."""
        config: dict = {"id": self.codec_id, "mode": self.mode}
        if self.mode == "hc":
            config["level"] = self.level
        else:
            config["acceleration"] = self.acceleration
        if self.size is not None:
            config["size"] = self.size
        return config

    @classmethod
    def from_config(cls, config: dict) -> "LZ4Block":
        """The codec for a configuration (``get_config()`` output, with or without ``id``)."""
        config = dict(config)
        config.pop("id", None)
        unknown = set(config) - {"mode", "acceleration", "level", "size"}
        if unknown:
            raise LZ4BlockError(f"unknown lz4-block configuration keys: {sorted(unknown)}")
        return cls(**config)

    def __eq__(self, other: object) -> bool:
        try:
            return self.get_config() == other.get_config()  # type: ignore[attr-defined]
        except AttributeError:
            return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        extra = f"level={self.level}" if self.mode == "hc" else f"acceleration={self.acceleration}"
        size = "" if self.size is None else f", size={self.size}"
        return f"LZ4Block(mode={self.mode!r}, {extra}{size})"


#: Largest extent of a b2nd chunk or block (C-Blosc2 stores them as int32).
_MAX_EXTENT = 2**31 - 1
#: numcodecs' shuffle numbers, as the Rust core (blosc-chunk) names them.
_SHUFFLE_NAMES = {number: name for name, number in _scifmt.blosc.shuffles()}


def _extents(value: Any, what: str) -> tuple:
    """``value`` as a tuple of extents 1..2**31-1 (``TypeError`` for other types)."""
    if isinstance(value, (str, bytes)) or not hasattr(value, "__iter__"):
        raise TypeError(f"`{what}` must be a sequence of integers, not {type(value).__name__}")
    out = []
    for x in value:
        if isinstance(x, bool) or not isinstance(x, (int, np.integer)):
            raise TypeError(f"`{what}` must hold integers, not {type(x).__name__}")
        if not 1 <= int(x) <= _MAX_EXTENT:
            raise B2ndError(f"`{what}` extents must be 1..{_MAX_EXTENT}, not {int(x)}")
        out.append(int(x))
    if not out:
        raise B2ndError(f"`{what}` needs at least one extent")
    return tuple(out)


def _b2nd_parameters(blockshape: Any, cname: Any, clevel: Any, shuffle: Any) -> tuple:
    """The checked encoding configuration as ``(blockshape, cname, clevel, shuffle)``."""
    blockshape = _extents(blockshape, "blockshape")
    if not isinstance(cname, str):
        raise TypeError(f"`cname` must be a string, not {type(cname).__name__}")
    if isinstance(clevel, bool) or not isinstance(clevel, (int, np.integer)):
        raise TypeError(f"`clevel` must be an integer, not {type(clevel).__name__}")
    if not 0 <= int(clevel) <= 9:
        raise B2ndError(f"`clevel` must be 0 to 9, not {int(clevel)}")
    if isinstance(shuffle, (int, np.integer)) and not isinstance(shuffle, bool):
        # numcodecs' numbers (0, 1, 2); AUTOSHUFFLE (-1) names no Zarr v3 value.
        if int(shuffle) not in _SHUFFLE_NAMES:
            raise B2ndError(f"`shuffle` {int(shuffle)} is not one of 0, 1, 2")
        shuffle = _SHUFFLE_NAMES[int(shuffle)]
    shuffle = getattr(shuffle, "value", shuffle)  # zarr-python's BloscShuffle enum
    if not isinstance(shuffle, str):
        raise TypeError(f"`shuffle` must be a string, not {type(shuffle).__name__}")
    _b2nd.check_configuration(list(blockshape), cname, int(clevel), shuffle)
    return blockshape, cname.lower(), int(clevel), shuffle.lower()


def _endian(endian: Any) -> str:
    """``"little"`` or ``"big"`` (also zarr-python's ``Endian`` enum)."""
    endian = getattr(endian, "value", endian)
    if endian not in ("little", "big"):
        raise B2ndError(f'`endian` must be "little" or "big", not {endian!r}')
    return endian


def _fixed_dtype(dtype: Any) -> np.dtype:
    """A NumPy dtype of fixed, positive item size."""
    dtype = np.dtype(dtype)
    if dtype.itemsize == 0 or dtype.hasobject:
        raise B2ndError(f"the b2nd codec needs a data type of fixed size, not {dtype}")
    return dtype


def _check_ndim(chunkshape: tuple, blockshape: tuple) -> None:
    if len(chunkshape) != len(blockshape):
        raise B2ndError(
            f"the chunk shape {list(chunkshape)} and the block shape {list(blockshape)} have "
            f"different numbers of dimensions"
        )


class B2nd(_CodecBase):
    """The ``b2nd`` codec for numcodecs (Zarr v2 ``compressor``, kerchunk references).

    Parameters: ``chunkshape`` (the chunk's shape: the b2nd ``chunkshape``), ``dtype`` (the
    array's NumPy dtype: its item size is the chunk's type size), ``blockshape`` (the b2nd block
    shape), and for encoding ``cname`` (``"zstd"``), ``clevel`` (5) and ``shuffle``
    (``"shuffle"``; numcodecs' numbers 0, 1, 2 are accepted). numcodecs passes only bytes to a
    codec, hence the shape and dtype in the configuration. :meth:`decode` returns the chunk's
    bytes in C order, in the dtype's byte order (as stored); :meth:`encode` takes such bytes.
    """

    codec_id = B2ND_NAME

    def __init__(self, chunkshape: Any, dtype: Any, blockshape: Any, cname: str = "zstd",
                 clevel: int = 5, shuffle: Any = "shuffle") -> None:  # fmt: skip
        self.chunkshape = _extents(chunkshape, "chunkshape")
        self.dtype = _fixed_dtype(dtype)
        self.blockshape, self.cname, self.clevel, self.shuffle = _b2nd_parameters(
            blockshape, cname, clevel, shuffle)
        _check_ndim(self.chunkshape, self.blockshape)

    def _shape(self) -> tuple:
        return list(self.chunkshape), self.dtype.itemsize, list(self.blockshape)

    def encode(self, buf: Any) -> bytes:
        """One chunk (any contiguous buffer of its C-order bytes) as one b2nd chunk."""
        return _b2nd.encode(_bytes_view(buf, "buf"), *self._shape(), self.cname, self.clevel,
                            self.shuffle)  # fmt: skip

    def decode(self, buf: Any, out: Any = None) -> Any:
        """The chunk's bytes in C order: into ``out`` (which it must fill exactly, and then
        returns), or as new ``bytes``."""
        data = _bytes_view(buf, "buf")
        if out is not None:
            _b2nd.decode_into(data, *self._shape(), _bytes_view(out, "out", writable=True))
            return out
        return _b2nd.decode(data, *self._shape())

    def get_config(self) -> dict:
        """``{"id": "b2nd", "chunkshape", "dtype", "blockshape", "cname", "clevel",
        "shuffle"}``."""
        return {
            "id": self.codec_id, "chunkshape": list(self.chunkshape), "dtype": self.dtype.str,
            "blockshape": list(self.blockshape), "cname": self.cname, "clevel": self.clevel,
            "shuffle": self.shuffle,
        }  # fmt: skip

    @classmethod
    def from_config(cls, config: dict) -> "B2nd":
        """The codec for a configuration (``get_config()`` output, with or without ``id``)."""
        config = dict(config)
        config.pop("id", None)
        keys = {"chunkshape", "dtype", "blockshape", "cname", "clevel", "shuffle"}
        unknown = set(config) - keys
        if unknown:
            raise B2ndError(f"unknown b2nd configuration keys: {sorted(unknown)}")
        missing = {"chunkshape", "dtype", "blockshape"} - set(config)
        if missing:
            raise B2ndError(f"the b2nd configuration needs {sorted(missing)}")
        return cls(**config)

    def __eq__(self, other: object) -> bool:
        try:
            return self.get_config() == other.get_config()  # type: ignore[attr-defined]
        except AttributeError:
            return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return (f"B2nd(chunkshape={list(self.chunkshape)}, dtype={self.dtype.str!r}, "
                f"blockshape={list(self.blockshape)}, cname={self.cname!r}, "
                f"clevel={self.clevel}, shuffle={self.shuffle!r})")  # fmt: skip


_zarr_codec_class = None
_zarr_b2nd_class = None


def _make_zarr_codec() -> type:
    """Defines :class:`LZ4BlockCodec` (on first use: it needs zarr-python) and registers it."""
    try:
        from zarr.abc.codec import BytesBytesCodec
        from zarr.core.buffer.cpu import as_numpy_array_wrapper  # noqa: F401
        from zarr.registry import register_codec
    except ImportError as e:
        raise ImportError(f"scifmt.codecs.LZ4BlockCodec needs zarr-python 3 ({e})") from e
    import asyncio

    @dataclass(frozen=True)
    class LZ4BlockCodec(BytesBytesCodec):
        """The Zarr v3 ``lz4-block`` codec (see the module docstring)."""

        is_fixed_size = False

        mode: str = "fast"
        acceleration: int = 1
        level: Optional[int] = None
        #: The decoded size of every chunk in bytes, if the configuration names it (optional;
        #: checked when decoding). It lets the codec's numcodecs equivalent
        #: (:attr:`codec_config`) decode, e.g. in Kerchunk references VirtualiZarr writes.
        size: Optional[int] = None

        def __init__(self, *, mode: str = "fast", acceleration: Optional[int] = None,
                     level: Optional[int] = None, size: Optional[int] = None) -> None:  # fmt: skip
            if mode == "hc" and acceleration is not None:
                raise LZ4BlockError("`acceleration` belongs to mode \"fast\"")
            m, a, lv = _parameters(mode, None if mode == "hc" else acceleration, level)
            if size is not None and (isinstance(size, bool)
                                     or not isinstance(size, (int, np.integer)) or size < 0):  # fmt: skip
                raise LZ4BlockError(f"`size` must be a non-negative integer, not {size!r}")
            object.__setattr__(self, "mode", m)
            object.__setattr__(self, "acceleration", a)
            object.__setattr__(self, "level", lv)
            object.__setattr__(self, "size", None if size is None else int(size))

        @property
        def codec_config(self) -> dict:
            """The equivalent numcodecs configuration (:class:`LZ4Block`, for Zarr v2 metadata
            and kerchunk references, e.g. VirtualiZarr's ``.vz.to_kerchunk``), with ``size``
            when the configuration has it."""
            return {"id": NAME, **self.to_dict()["configuration"]}

        @classmethod
        def from_dict(cls, data: dict) -> "LZ4BlockCodec":
            if data.get("name") != NAME:
                raise LZ4BlockError(f"codec entry names {data.get('name')!r}, not {NAME!r}")
            config = data.get("configuration") or {}
            unknown = set(config) - {"mode", "acceleration", "level", "size"}
            if unknown:
                raise LZ4BlockError(f"unknown lz4-block configuration keys: {sorted(unknown)}")
            return cls(**config)

        def to_dict(self) -> dict:
            if self.mode == "hc":
                config = {"mode": "hc", "level": self.level}
            else:
                config = {"mode": "fast", "acceleration": self.acceleration}
            if self.size is not None:
                config["size"] = self.size
            return {"name": NAME, "configuration": config}

        def _decoded_size(self, chunk_spec: Any) -> int:
            dtype = chunk_spec.dtype
            native = dtype.to_native_dtype() if hasattr(dtype, "to_native_dtype") else np.dtype(dtype)
            return int(np.prod(chunk_spec.shape, dtype=np.int64)) * native.itemsize

        def _decode_sync(self, chunk_bytes: Any, chunk_spec: Any) -> Any:
            data = _bytes_view(chunk_bytes.as_numpy_array(), "chunk")
            size = self._decoded_size(chunk_spec)
            if self.size is not None and self.size != size:
                raise LZ4BlockError(
                    f"the lz4-block configuration says chunks decode to {self.size} bytes, but "
                    f"this array's chunks have {size}"
                )
            out = _core.decode(data, size)
            return chunk_spec.prototype.buffer.from_bytes(out)

        async def _decode_single(self, chunk_bytes: Any, chunk_spec: Any) -> Any:
            return await asyncio.to_thread(self._decode_sync, chunk_bytes, chunk_spec)

        def _encode_sync(self, chunk_bytes: Any, chunk_spec: Any) -> Any:
            data = _bytes_view(chunk_bytes.as_numpy_array(), "chunk")
            out = _core.encode(data, self.mode, self.acceleration, self.level)
            return chunk_spec.prototype.buffer.from_bytes(out)

        async def _encode_single(self, chunk_bytes: Any, chunk_spec: Any) -> Any:
            return await asyncio.to_thread(self._encode_sync, chunk_bytes, chunk_spec)

        def compute_encoded_size(self, _input_byte_length: int, _chunk_spec: Any) -> int:
            raise NotImplementedError

    LZ4BlockCodec.__module__ = __name__
    LZ4BlockCodec.__qualname__ = "LZ4BlockCodec"
    register_codec(NAME, LZ4BlockCodec)
    return LZ4BlockCodec


def _make_zarr_b2nd_codec() -> type:
    """Defines :class:`B2ndCodec` (on first use: it needs zarr-python) and registers it."""
    try:
        from zarr.abc.codec import ArrayBytesCodec
        from zarr.core.dtype.common import HasEndianness
        from zarr.registry import register_codec
    except ImportError as e:
        raise ImportError(f"scifmt.codecs.B2ndCodec needs zarr-python >= 3.1 ({e})") from e
    import asyncio
    from dataclasses import replace

    @dataclass(frozen=True)
    class B2ndCodec(ArrayBytesCodec):
        """The Zarr v3 ``b2nd`` codec (see the module docstring)."""

        is_fixed_size = False

        blockshape: tuple = ()
        endian: str = "little"
        cname: str = "zstd"
        clevel: int = 5
        shuffle: str = "shuffle"

        def __init__(self, *, blockshape: Any, endian: Any = "little", cname: str = "zstd",
                     clevel: int = 5, shuffle: Any = "shuffle") -> None:  # fmt: skip
            b, c, lv, sh = _b2nd_parameters(blockshape, cname, clevel, shuffle)
            object.__setattr__(self, "blockshape", b)
            object.__setattr__(self, "endian", _endian(endian))
            object.__setattr__(self, "cname", c)
            object.__setattr__(self, "clevel", lv)
            object.__setattr__(self, "shuffle", sh)

        @classmethod
        def from_dict(cls, data: dict) -> "B2ndCodec":
            if data.get("name") != B2ND_NAME:
                raise B2ndError(f"codec entry names {data.get('name')!r}, not {B2ND_NAME!r}")
            config = data.get("configuration")
            if not isinstance(config, dict):
                raise B2ndError("the b2nd codec needs a configuration with a `blockshape`")
            unknown = set(config) - {"blockshape", "endian", "cname", "clevel", "shuffle"}
            if unknown:
                raise B2ndError(f"unknown b2nd configuration keys: {sorted(unknown)}")
            if "blockshape" not in config:
                raise B2ndError("the b2nd configuration needs a `blockshape`")
            return cls(**config)

        def to_dict(self) -> dict:
            return {"name": B2ND_NAME, "configuration": {
                "blockshape": list(self.blockshape), "endian": self.endian, "cname": self.cname,
                "clevel": self.clevel, "shuffle": self.shuffle,
            }}  # fmt: skip

        def validate(self, *, shape: Any, dtype: Any, chunk_grid: Any) -> None:
            chunk_shape = getattr(chunk_grid, "chunk_shape", None)
            if chunk_shape is not None:
                _check_ndim(tuple(chunk_shape), self.blockshape)
                if any(b > c for b, c in zip(self.blockshape, chunk_shape)):
                    raise B2ndError(
                        f"the block shape {list(self.blockshape)} is larger than the chunk "
                        f"shape {list(chunk_shape)}"
                    )
            self._stored_dtype(dtype)

        def _stored_dtype(self, zdtype: Any) -> np.dtype:
            """The NumPy dtype of the stored items: the array's, in the configured order."""
            if isinstance(zdtype, HasEndianness):
                zdtype = replace(zdtype, endianness=self.endian)
            return _fixed_dtype(zdtype.to_native_dtype())

        def _decode_sync(self, chunk_bytes: Any, chunk_spec: Any) -> Any:
            dtype = self._stored_dtype(chunk_spec.dtype)
            shape = tuple(chunk_spec.shape)
            out = np.empty(shape, dtype=dtype)
            _b2nd.decode_into(_bytes_view(chunk_bytes.as_numpy_array(), "chunk"), list(shape),
                              dtype.itemsize, list(self.blockshape),
                              out.reshape(-1).view(np.uint8))  # fmt: skip
            return chunk_spec.prototype.nd_buffer.from_ndarray_like(out)

        async def _decode_single(self, chunk_bytes: Any, chunk_spec: Any) -> Any:
            return await asyncio.to_thread(self._decode_sync, chunk_bytes, chunk_spec)

        def _encode_sync(self, chunk_array: Any, chunk_spec: Any) -> Any:
            dtype = self._stored_dtype(chunk_spec.dtype)
            a = np.ascontiguousarray(chunk_array.as_numpy_array(), dtype=dtype)
            out = _b2nd.encode(a.reshape(-1).view(np.uint8), list(chunk_spec.shape),
                               dtype.itemsize, list(self.blockshape), self.cname, self.clevel,
                               self.shuffle)  # fmt: skip
            return chunk_spec.prototype.buffer.from_bytes(out)

        async def _encode_single(self, chunk_array: Any, chunk_spec: Any) -> Any:
            return await asyncio.to_thread(self._encode_sync, chunk_array, chunk_spec)

        def compute_encoded_size(self, _input_byte_length: int, _chunk_spec: Any) -> int:
            raise NotImplementedError

    B2ndCodec.__module__ = __name__
    B2ndCodec.__qualname__ = "B2ndCodec"
    register_codec(B2ND_NAME, B2ndCodec)
    return B2ndCodec


def __getattr__(name: str) -> Any:
    global _zarr_codec_class, _zarr_b2nd_class
    if name == "LZ4BlockCodec":
        if _zarr_codec_class is None:
            _zarr_codec_class = _make_zarr_codec()
        return _zarr_codec_class
    if name == "B2ndCodec":
        if _zarr_b2nd_class is None:
            _zarr_b2nd_class = _make_zarr_b2nd_codec()
        return _zarr_b2nd_class
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list:
    """The public API only (the modules this one imports stay out of ``dir()``)."""
    return sorted(__all__)
