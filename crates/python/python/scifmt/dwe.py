"""Compressed dynamic word embeddings (``.dwe`` files) from Rust (the ``dwe-format`` crate).

A ``.dwe`` file holds quantised embeddings of shape ``(T, V, K)`` (time steps, words,
components) as i16 values; real values are ``scale_factor * value``. Both container layouts
(``block`` and ``stream``) are read; the layout is detected.

Quick start::

    import scifmt.dwe as dwe

    f = dwe.open("embeddings.dwe")
    f.num_timesteps, f.vocab_size, f.embedding_dim, f.scale_factor, f.layout
    f.vector(word=12, t=3)                 # (K,) int16
    f.vector(12, 3, scaled=True)           # (K,) float32 = scale_factor * values
    f.timestep(3)                          # (V, K) int16
    f.trajectory(12)                       # (T, K) int16
    f.most_related_to_at_t([0, 2], t=5, amt=10)   # (2, 10) word ids
    f.pairwise_trajectories([0, 3], [99, 2])      # (2, T) float32 dot products
    f.largest_changes_wrt(0, amt=4, min_increasing=1, min_decreasing=1)

    dwe.write("out.dwe", values, scale_factor=0.01, jump_interval=20)   # values: (T, V, K) int16

The queries are the reference reader's (``RandomAccessReader``), bit for bit, and the ones
``scifmt dwe`` offers. Decoding runs with the GIL released. Errors are :class:`DweError`
(a ``ValueError``) naming the file, ``IndexError`` for word or time-step indices out of range,
``FileNotFoundError``/``OSError`` for I/O errors.
"""

from __future__ import annotations

import os
from typing import Any, Dict, List, Optional, Sequence

import numpy as np

from scifmt._outputs import check_file_output
from scifmt._scifmt import dwe as _core

__all__ = ["DweError", "DweFile", "open", "write"]

DweError = _core.DweError


class _Closed:
    """Stands in for the native file of a closed object: every use raises ``exc``."""

    def __init__(self, path: str, exc: type, what: str):
        self._path, self._exc, self._what = path, exc, what

    def __getattr__(self, name: str) -> Any:
        if name == "path":
            return self._path
        raise self._exc(f"{self._path}: the {self._what} is closed")


def _words(words: Any, what: str) -> List[int]:
    a = np.asarray(words)
    if a.ndim == 0:
        a = a.reshape(1)
    if a.ndim != 1 or (a.size and a.dtype.kind not in "iu"):
        raise TypeError(f"{what} must be a sequence of integer word ids")
    return [int(x) for x in a]


def _int(v: Any, what: str) -> int:
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
        raise TypeError(f"{what} must be an int, not {type(v).__name__}")
    return int(v)


class DweFile:
    """An opened ``.dwe`` file (see :func:`open`); the file is read into memory once."""

    def __init__(self, path: "os.PathLike[str] | str", layout: Optional[str] = None,
                 check_integrity: bool = False, max_file_bytes: Optional[int] = None):
        self._f = _core.File(os.fspath(path), layout, bool(check_integrity), max_file_bytes)
        self._args = (os.fspath(path), layout, bool(check_integrity), max_file_bytes)
        self._t = self._f.num_timesteps
        self._v = self._f.vocab_size
        self._k = self._f.embedding_dim

    def __reduce__(self):
        """Pickles as "open this path again" (for multiprocessing and Dask workers)."""
        return (DweFile, self._args)

    def close(self) -> None:
        """Releases the file's contents (later reads raise :class:`DweError`); closing twice
        is a no-op. ``with dwe.open(path) as f:`` closes it at the end of the block."""
        if not isinstance(self._f, _Closed):
            self._f = _Closed(self._f.path, DweError, "file")

    @property
    def closed(self) -> bool:
        return isinstance(self._f, _Closed)

    def __enter__(self) -> "DweFile":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    @property
    def path(self) -> str:
        return self._f.path

    @property
    def num_timesteps(self) -> int:
        """T."""
        return self._t

    @property
    def vocab_size(self) -> int:
        """V."""
        return self._v

    @property
    def embedding_dim(self) -> int:
        """K."""
        return self._k

    @property
    def shape(self) -> tuple:
        """``(T, V, K)``."""
        return (self._t, self._v, self._k)

    @property
    def scale_factor(self) -> float:
        """Real value = ``scale_factor * value`` (an f32)."""
        return self._f.scale_factor

    @property
    def layout(self) -> str:
        """``"block"`` or ``"stream"``."""
        return self._f.layout

    def info(self) -> Dict[str, Any]:
        """The header fields under their layout's names and the entropy model sizes, as
        ``scifmt dwe info`` prints them."""
        return self._f.info()

    def vector(self, word: int, t: int, scaled: bool = False) -> np.ndarray:
        """The ``(K,)`` embedding of ``word`` at time step ``t``: int16, or float32 with
        ``scaled=True``."""
        return self._f.vector(_int(word, "word"), _int(t, "t"), bool(scaled))

    def timestep(self, t: int, scaled: bool = False) -> np.ndarray:
        """All embeddings of time step ``t``, shape ``(V, K)``."""
        return self._f.timestep(_int(t, "t"), bool(scaled)).reshape(self._v, self._k)

    def trajectory(self, word: int, scaled: bool = False) -> np.ndarray:
        """The embeddings of ``word`` at every time step, shape ``(T, K)``."""
        return self._f.trajectory(_int(word, "word"), bool(scaled)).reshape(self._t, self._k)

    def residuals(self, t: int) -> np.ndarray:
        """The residuals the entropy coder stores for time step ``t``, shape ``(V, K)``."""
        return self._f.residuals(_int(t, "t")).reshape(self._v, self._k)

    def to_numpy(self) -> np.ndarray:
        """Every value, shape ``(T, V, K)`` int16 (bounded by the reader's limits)."""
        return self._f.decode_all().reshape(self._t, self._v, self._k)

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        a = self.to_numpy()
        return a if dtype is None else a.astype(dtype, copy=False)

    def pairwise_trajectories(self, words1: Sequence[int], words2: Sequence[int]) -> np.ndarray:
        """For each pair ``(words1[p], words2[p])`` and time step t, the dot product of the two
        embeddings as the reference computes it (``f32(s*s) * f32(i32 dot)``), shape
        ``(P, T)`` float32. The lists form pairs, so they must have the same length: lists of
        different lengths raise ``ValueError`` (as ``scifmt dwe trajectories`` refuses them; the
        reference silently returns an empty result)."""
        w1, w2 = _words(words1, "words1"), _words(words2, "words2")
        if len(w1) != len(w2):
            raise ValueError(
                f"words1 has {len(w1)} words, words2 has {len(w2)}: they form pairs"
            )
        out = self._f.pairwise_trajectories(w1, w2)
        return out.reshape(-1, self._t)

    def most_related_to_at_t(self, target_words: Sequence[int], t: int, amt: int) -> np.ndarray:
        """For each target word, the ``amt`` words with the largest dot product with it at time
        step ``t`` (itself excluded, ties to lower ids), shape ``(len(target_words), amt)``
        int64; ``-1`` marks ranks the vocabulary cannot fill (the reference's ``u32::MAX``).
        ``amt`` may be at most ``vocab_size``."""
        words = _words(target_words, "target_words")
        amt = _int(amt, "amt")
        if amt < 0 or amt > self._v:
            raise ValueError(f"amt {amt} is not in 0..={self._v} (the vocabulary size)")
        out = self._f.most_related_to_at_t(words, _int(t, "t"), amt).astype(np.int64)
        out[out == 0xFFFFFFFF] = -1
        return out.reshape(len(words), amt)

    def related(self, target_words: Sequence[int], t: int, amt: int) -> np.ndarray:
        """Alias of :meth:`most_related_to_at_t` (``scifmt dwe related``)."""
        return self.most_related_to_at_t(target_words, t, amt)

    def trajectories(self, words1: Sequence[int], words2: Sequence[int]) -> np.ndarray:
        """Alias of :meth:`pairwise_trajectories` (``scifmt dwe trajectories``)."""
        return self.pairwise_trajectories(words1, words2)

    def largest_changes_wrt(self, target_word: int, amt: int, min_increasing: int = 0,
                            min_decreasing: int = 0) -> List[int]:
        """The words whose dot product with ``target_word`` changed most between the first and
        the last time step, with the reference's mixing rule (``min_increasing`` increases and
        ``min_decreasing`` decreases are guaranteed places), ordered by change, descending."""
        amt = _int(amt, "amt")
        if amt > self._v:
            raise ValueError(f"amt {amt} is larger than the vocabulary size {self._v}")
        return self._f.largest_changes_wrt(_int(target_word, "target_word"), amt,
                                           _int(min_increasing, "min_increasing"),
                                           _int(min_decreasing, "min_decreasing"))

    def verify(self) -> None:
        """Decodes everything and checks every integrity invariant; raises :class:`DweError`."""
        self._f.verify()

    def __repr__(self) -> str:
        if self.closed:
            return f"DweFile({self.path!r}, closed)"
        return (f"DweFile({self.path!r}, layout={self.layout!r}, T={self._t}, V={self._v}, "
                f"K={self._k}, scale_factor={self.scale_factor!r})")


def open(path: "os.PathLike[str] | str", layout: Optional[str] = None,  # noqa: A001
         check_integrity: bool = False, max_file_bytes: Optional[int] = None) -> DweFile:
    """Opens a ``.dwe`` file (read into memory, at most ``max_file_bytes``, default 4 GiB).
    ``layout``: ``None`` (detect), ``"block"`` or ``"stream"``. ``check_integrity`` checks the
    decoder's end states while decoding (off by default, like the reference reader)."""
    return DweFile(path, layout, check_integrity, max_file_bytes)


def write(path: "os.PathLike[str] | str", values: Any, scale_factor: float,
          chunk_size: Optional[int] = None, jump_interval: Optional[int] = None,
          fsync: bool = False, *, overwrite: bool = False) -> None:
    """Encodes ``values`` (shape ``(T, V, K)``, T ≥ 2, converted to int16 only if every value
    fits) into a ``.dwe`` file, written beside ``path`` and renamed into place. Give
    ``jump_interval`` for the stream layout (what real files use) or ``chunk_size`` (dividing V)
    for the block layout.

    An existing ``path`` is ``FileExistsError`` unless ``overwrite=True`` (then it is replaced
    atomically), a directory there ``IsADirectoryError``; ``path`` naming the file ``values``
    was opened from (a :class:`DweFile`), also through a symlink, ``..`` or a hard link, is
    ``ValueError``.
    """
    path = os.fspath(path)
    source = values._args[0] if isinstance(values, DweFile) else None
    check_file_output(path, overwrite, source)
    a = np.asarray(values)
    if a.ndim != 3:
        raise ValueError(f"values must have shape (T, V, K), got {a.shape}")
    if a.dtype != np.int16:
        if a.dtype.kind not in "iu" or (a.size and (a.min() < -32768 or a.max() > 32767)):
            raise TypeError(f"values must be int16 (or integers that fit), not {a.dtype}")
        a = a.astype(np.int16)
    flat = np.ascontiguousarray(a).reshape(-1)
    _core.write(path, flat, tuple(int(s) for s in a.shape), float(scale_factor),
                chunk_size, jump_interval, bool(fsync), overwrite=bool(overwrite))


def __dir__() -> list:
    """The public API only (the modules this one imports stay out of ``dir()``)."""
    return sorted(__all__)
