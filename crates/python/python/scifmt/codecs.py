"""The ``lz4-block`` codec: chunks that are one raw LZ4 block, without a size prefix.

That is how WKW (webKNOSSOS wrapper) files store their LZ4 and LZ4HC blocks, so these classes
let zarr-python and numcodecs read such blocks where they are. The decoded size is not stored:
it is the chunk's size, which zarr-python knows. A block that does not decode to exactly that
size raises :class:`LZ4BlockError` (a ``ValueError``); encoding is liblz4's own.

* :class:`LZ4BlockCodec`: the Zarr v3 codec for zarr-python 3, name ``"lz4-block"``, found by
  zarr-python through the ``scifmt`` wheel's ``zarr.codecs`` entry point (nothing to
  configure). Configuration ``{"mode": "fast", "acceleration": 1}`` (the default; WKW's LZ4) or
  ``{"mode": "hc", "level": 9}`` (WKW's LZ4HC).
* :class:`LZ4Block`: the numcodecs codec, id ``"lz4-block"`` (registered with numcodecs through
  the ``numcodecs.codecs`` entry point), for Zarr v2 metadata and kerchunk references. numcodecs
  passes no chunk size to ``decode``: give the chunk's byte size as ``size`` in the
  configuration, or an ``out`` buffer.

The codec's specification is the ``spec/`` page of the ``lz4-block-codec`` crate.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

import numpy as np

from scifmt import _scifmt

_core = _scifmt.lz4_block

__all__ = ["LZ4Block", "LZ4BlockCodec", "LZ4BlockError", "NAME"]

#: The codec's name (Zarr v3) and id (numcodecs).
NAME = _core.NAME
LZ4BlockError = _core.LZ4BlockError

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


_zarr_codec_class = None


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

        def __init__(self, *, mode: str = "fast", acceleration: Optional[int] = None,
                     level: Optional[int] = None) -> None:  # fmt: skip
            if mode == "hc" and acceleration is not None:
                raise LZ4BlockError("`acceleration` belongs to mode \"fast\"")
            m, a, lv = _parameters(mode, None if mode == "hc" else acceleration, level)
            object.__setattr__(self, "mode", m)
            object.__setattr__(self, "acceleration", a)
            object.__setattr__(self, "level", lv)

        @classmethod
        def from_dict(cls, data: dict) -> "LZ4BlockCodec":
            if data.get("name") != NAME:
                raise LZ4BlockError(f"codec entry names {data.get('name')!r}, not {NAME!r}")
            config = data.get("configuration") or {}
            unknown = set(config) - {"mode", "acceleration", "level"}
            if unknown:
                raise LZ4BlockError(f"unknown lz4-block configuration keys: {sorted(unknown)}")
            return cls(**config)

        def to_dict(self) -> dict:
            if self.mode == "hc":
                config = {"mode": "hc", "level": self.level}
            else:
                config = {"mode": "fast", "acceleration": self.acceleration}
            return {"name": NAME, "configuration": config}

        def _decoded_size(self, chunk_spec: Any) -> int:
            dtype = chunk_spec.dtype
            native = dtype.to_native_dtype() if hasattr(dtype, "to_native_dtype") else np.dtype(dtype)
            return int(np.prod(chunk_spec.shape, dtype=np.int64)) * native.itemsize

        def _decode_sync(self, chunk_bytes: Any, chunk_spec: Any) -> Any:
            data = _bytes_view(chunk_bytes.as_numpy_array(), "chunk")
            out = _core.decode(data, self._decoded_size(chunk_spec))
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


def __getattr__(name: str) -> Any:
    global _zarr_codec_class
    if name == "LZ4BlockCodec":
        if _zarr_codec_class is None:
            _zarr_codec_class = _make_zarr_codec()
        return _zarr_codec_class
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list:
    """The public API only (the modules this one imports stay out of ``dir()``)."""
    return sorted(__all__)
