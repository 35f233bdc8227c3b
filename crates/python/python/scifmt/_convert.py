"""``scifmt.convert``: webKNOSSOS WKW datasets, WKW mags and Zarr v3 arrays converted into each
other block by block (the ``wkw-zarr`` crate, as the ``scifmt convert`` command), in this
process or spread over a Dask cluster.

A conversion is planned here (the target refused, emptied or resumed, and marked as
unfinished with ``.wkw-zarr-conversion.json``; the source's files listed as units), its units
(one per source WKW file or shard) are converted, by this process or by the workers of a
``dask.distributed.Client`` in groups, and it is finished here (the metadata written last, the
marker removed). Every shard or file appears complete under its name (renamed or uploaded into
place), so a failed or interrupted conversion is resumed with ``resume=True``.
"""

import dataclasses
import os
import re
import time
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

from scifmt._scifmt import convert as _core

__all__ = ["ConvertError", "ConvertSummary", "convert"]

ConvertError = _core.ConvertError

_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")

#: The most threads a call may use.
_MAX_JOBS = 1024

#: Groups of units per worker thread of a Dask cluster (several, so faster workers take more).
_GROUPS_PER_THREAD = 4

_COUNTS = ("shards_written", "shards_skipped", "shards_empty", "blocks", "bytes_in", "bytes_out")


@dataclasses.dataclass(frozen=True)
class ConvertSummary:
    """What a conversion did (the fields of ``scifmt convert --json``)."""

    #: ``"zarr3"`` or ``"wkw"``.
    to: str
    #: Arrays (mags) converted.
    arrays: int
    #: Shards (Zarr) or files (WKW) written.
    shards_written: int
    #: Shards or files kept because an interrupted run had completed them.
    shards_skipped: int
    #: Source shards or files whose blocks were all zero (nothing written for them in Zarr).
    shards_empty: int
    #: Non-zero blocks (inner chunks) written.
    blocks: int
    #: Bytes read from source shards or files.
    bytes_in: int
    #: Bytes written to target shards or files.
    bytes_out: int
    #: Wall-clock seconds of the conversion (planning, units, finishing; not ``verify``).
    seconds: float
    #: Blocks compared by ``verify=True`` (``None`` without it).
    verified_blocks: Optional[int] = None

    def to_dict(self) -> Dict[str, Any]:
        """The fields as a dict."""
        return dataclasses.asdict(self)


def _location(value: Any, what: str) -> str:
    """A path (``str`` or ``os.PathLike``) or URL as ``str``."""
    try:
        text = os.fspath(value)
    except TypeError:
        raise TypeError(f"{what} must be a str or os.PathLike, not {type(value).__name__}") from None
    if not isinstance(text, str):
        raise TypeError(f"{what} must be a str path or URL, not {type(text).__name__}")
    if not text or "\0" in text:
        raise ValueError(f"{what} must be a non-empty path or URL without NUL characters")
    return text


def _name(value: Any, what: str) -> str:
    """A choice by name, case-insensitive."""
    if not isinstance(value, str):
        raise TypeError(f"{what} must be a str, not {type(value).__name__}")
    return value.lower()


def _flag(value: Any, what: str) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"{what} must be a bool, not {type(value).__name__}")
    return value


def _jobs(value: Any) -> Optional[int]:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"jobs must be an int or None, not {type(value).__name__}")
    if not 1 <= value <= _MAX_JOBS:
        raise ValueError(f"jobs={value}: must be 1..={_MAX_JOBS} (or None for every core)")
    return value


def _pairs(storage_options: Any) -> Optional[List[Tuple[str, str]]]:
    """``storage_options`` (a mapping of str to str, or None) as a list of pairs."""
    if storage_options is None:
        return None
    if not hasattr(storage_options, "items"):
        raise TypeError(f"storage_options must be a dict, not {type(storage_options).__name__}")
    pairs = []
    for k, v in storage_options.items():
        if not isinstance(k, str) or not isinstance(v, (str, bool, int)):
            raise TypeError(f"storage_options: {k!r} must map a str to a str")
        pairs.append((k, str(v).lower() if isinstance(v, bool) else str(v)))
    return pairs


def _groups(units: Sequence[Tuple[str, int]], count: int) -> List[List[str]]:
    """``units`` (id, source bytes) in at most ``count`` runs of neighbours with about equal
    bytes."""
    total = sum(max(1, b) for _, b in units)
    share = total / max(1, count)
    groups: List[List[str]] = []
    current: List[str] = []
    filled = 0.0
    for uid, b in units:
        current.append(uid)
        filled += max(1, b)
        if filled >= share * (len(groups) + 1) and len(groups) < count - 1:
            groups.append(current)
            current = []
    if current:
        groups.append(current)
    return groups


def _run_units(
    src: str,
    dst: str,
    plan_json: str,
    ids: List[str],
    jobs: Optional[int],
    pairs: Optional[List[Tuple[str, str]]],
    opts: Dict[str, Any],
) -> Dict[str, int]:
    """A Dask task: converts the units ``ids`` (a ``ConvertError`` names them)."""
    try:
        return _core.convert_units(
            src, dst, plan_json, ids, jobs=jobs, storage_options=pairs, **opts
        )
    except ConvertError as e:
        shown = ids[0] if len(ids) == 1 else f"{ids[0]} … {ids[-1]} ({len(ids)} units)"
        raise ConvertError(f"units {shown}: {e}") from None


def _on_cluster(
    client: Any,
    src: str,
    dst: str,
    plan_json: str,
    units: Sequence[Tuple[str, int]],
    jobs: Optional[int],
    pairs: Optional[List[Tuple[str, str]]],
    opts: Dict[str, Any],
    progress: Optional[Callable[[int, int], Any]],
) -> Dict[str, int]:
    """Converts ``units`` in groups on the workers of ``client``; the summed counts."""
    from distributed import as_completed

    counts = dict.fromkeys(_COUNTS, 0)
    if not units:
        return counts
    threads = sum(client.nthreads().values()) or 1
    groups = _groups(units, threads * _GROUPS_PER_THREAD)
    # The plan (which grows with the number of units) goes to each worker once.
    plan = client.scatter(plan_json, broadcast=True)
    futures = {
        client.submit(_run_units, src, dst, plan, ids, jobs, pairs, opts, pure=False): len(ids)
        for ids in groups
    }
    done = 0
    try:
        for future in as_completed(list(futures)):
            part = future.result()
            for k in _COUNTS:
                counts[k] += int(part[k])
            done += futures[future]
            if progress is not None:
                progress(done, len(units))
    except BaseException:
        client.cancel(list(futures))
        raise
    return counts


def convert(
    src: Union[str, "os.PathLike[str]"],
    dst: Union[str, "os.PathLike[str]"],
    *,
    to: str,
    codec: str = "auto",
    zstd_level: Optional[int] = None,
    blosc_cname: Optional[str] = None,
    clevel: Optional[int] = None,
    shuffle: Optional[str] = None,
    typesize: Optional[int] = None,
    blocksize: Optional[int] = None,
    block_type: str = "lz4",
    jobs: Optional[int] = None,
    overwrite: bool = False,
    resume: bool = False,
    verify: bool = False,
    fsync: bool = False,
    progress: Optional[Callable[[int, int], Any]] = None,
    client: Any = None,
    storage_options: Optional[Dict[str, str]] = None,
) -> ConvertSummary:
    """Converts ``src`` into ``to`` at ``dst``, like ``scifmt convert SRC DST --to TO``.

    ``src`` is a webKNOSSOS dataset root (``datasource-properties.json``; converted with every
    layer and mag into a dataset), a WKW mag directory (``header.wkw``; into one Zarr array) or
    a Zarr v3 array (``zarr.json``; into one WKW mag). Each side is a local path or a URL
    (``s3://``, ``gs://``, ``az://``, ``http(s)://``, ``file://``), configured from the
    environment (``AWS_*``, ``GOOGLE_*``, ``AZURE_*``) and then ``storage_options`` (the same
    keys, e.g. ``{"aws_endpoint_url": ...}``; used for both sides).

    ``to``: ``"zarr3"`` or ``"wkw"``. ``codec``: the Zarr inner-chunk compressor, ``"auto"``
    (zstd level 5 for compressed WKW files, none for raw ones, as webknossos-libs writes),
    ``"zstd"`` (at ``zstd_level``, default 5), ``"blosc"`` (Blosc1 chunks as C-Blosc 1.21 and
    zarr-python write them: ``blosc_cname`` ``"blosclz"``/``"lz4"``/``"lz4hc"``/``"zlib"``/
    ``"zstd"`` (default), ``clevel`` 0–9 (default 5), ``shuffle`` ``"auto"`` (zarr-python's
    choice: bitshuffle for 1-byte voxels, shuffle otherwise), ``"noshuffle"``, ``"shuffle"`` or
    ``"bitshuffle"``, ``typesize`` (default the voxel size), ``blocksize`` (default 0:
    automatic)) or ``"none"``. ``block_type``: the WKW files
    written, ``"raw"``, ``"lz4"`` or ``"lz4hc"``. ``jobs``: threads (``None``: every core; with
    a ``client``, per task, default 1). An existing target is refused unless ``overwrite``
    (deleted first) or ``resume`` (an interrupted conversion with the same options continued,
    its complete shards kept). ``verify`` compares both sides (paths or URLs) block by block
    afterwards. ``fsync`` syncs every local file before it is renamed into place.
    ``progress(done, total)`` is called after every unit (a source file or shard; with a
    ``client``, after every group of units).

    With ``client`` (a ``dask.distributed.Client``) the units are converted in groups by the
    cluster's workers, each opening the source and target itself (local paths must be shared
    with the workers); the result is byte for byte that of a single-process run.

    Returns a ``ConvertSummary``. Raises ``ConvertError`` when the conversion fails (the
    message names the file or URL, and with a client the units), ``ValueError`` /
    ``TypeError`` for invalid arguments. An existing target without ``overwrite`` or ``resume``
    is a ``ConvertError`` that is also a ``FileExistsError`` (its message names the target and
    says ``overwrite=True`` replaces it); a target that is the source, lies inside it or
    contains it (also through symlinks or ``..``) is refused before anything is written, with
    a ``ConvertError`` that is also a ``ValueError``. The GIL is released while converting.

    Ctrl-C (``SIGINT``) stops the conversion between batches of blocks, also during ``verify``:
    the workers stop, every shard or file completed so far stays, the target keeps its
    unfinished-conversion marker, and ``KeyboardInterrupt`` is raised; run the same call with
    ``resume=True`` to finish it.
    """
    src = _location(src, "src")
    dst = _location(dst, "dst")
    to = _name(to, "to")
    codec = _name(codec, "codec")
    block_type = _name(block_type, "block_type")
    overwrite = _flag(overwrite, "overwrite")
    resume = _flag(resume, "resume")
    verify = _flag(verify, "verify")
    fsync = _flag(fsync, "fsync")
    jobs = _jobs(jobs)
    if overwrite and resume:
        raise ValueError("overwrite and resume exclude each other")
    if progress is not None and not callable(progress):
        raise TypeError(f"progress must be callable, not {type(progress).__name__}")
    if client is not None and not (hasattr(client, "submit") and hasattr(client, "nthreads")):
        raise TypeError(f"client must be a dask.distributed.Client, not {type(client).__name__}")
    pairs = _pairs(storage_options)
    settings = {"blosc_cname": blosc_cname, "clevel": clevel, "shuffle": shuffle,
                "typesize": typesize, "blocksize": blocksize}
    blosc = None  # the blosc settings; given with another codec, they are refused
    if codec == "blosc" or any(v is not None for v in settings.values()):
        blosc = tuple(
            _name(v, k) if k in ("blosc_cname", "shuffle") and v is not None else v
            for k, v in settings.items()
        )
    opts = {"codec": codec, "zstd_level": zstd_level, "blosc": blosc, "block_type": block_type,
            "fsync": fsync}
    existing = "overwrite" if overwrite else "resume" if resume else "refuse"

    start = time.perf_counter()
    plan_json, units, arrays = _core.plan(
        src, dst, to, existing=existing, storage_options=pairs, **opts
    )
    ids = [uid for uid, _ in units]
    # A KeyboardInterrupt (Ctrl-C) or failure below propagates before `finish`: the target
    # stays marked unfinished, and `resume=True` continues it.
    if client is None:
        counts = _core.convert_units(
            src, dst, plan_json, ids, jobs=jobs, storage_options=pairs, progress=progress, **opts
        )
    else:
        # The workers' working directory may differ: they get absolute paths.
        there = [u if _URL.match(u) else os.path.abspath(u) for u in (src, dst)]
        counts = _on_cluster(
            client, there[0], there[1], plan_json, units, 1 if jobs is None else jobs, pairs, opts, progress
        )
    _core.finish(src, dst, plan_json, storage_options=pairs, **opts)
    seconds = round(time.perf_counter() - start, 3)

    verified = None
    if verify:
        blocks, differing, differences = _core.verify(src, dst, jobs=jobs, storage_options=pairs)
        if differing:
            shown = "; ".join(differences[:5])
            raise ConvertError(f"{src} and {dst} differ in {differing} blocks: {shown}")
        verified = blocks
    return ConvertSummary(
        to=to,
        arrays=arrays,
        seconds=seconds,
        verified_blocks=verified,
        **{k: int(counts[k]) for k in _COUNTS},
    )


def __dir__() -> list:
    """The public API only (the modules this one imports stay out of ``dir()``)."""
    return sorted(__all__)
