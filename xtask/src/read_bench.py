"""zarr-python side of `cargo xtask read-bench` (run by the xtask from this file).

icechunk --source DATASET --layer LAYER --repo DIR
    Writes a fresh local Icechunk repository at DIR holding the virtual references of
    LAYER's mags (scifmt.virtual.WKWParser, axes "cxyz", + VirtualiZarr's .vz.to_icechunk,
    as docs/wkw-virtual-zarr.md shows): the arrays at LAYER/<mag>, each chunk a byte range of
    a WKW file of DATASET read through a local-filesystem virtual chunk container.

run --config JSON
    Reads the same regions from every contender named in the config and prints one JSON line
    per timed read: {"side": "python", "contender", "rep", "region", "seconds", "crc32"}.
    Config keys: source (dataset root), mag (WKW mag directory), array (e.g. "color/1"),
    zarr3 (the converted dataset root), kerchunk (reference JSON), icechunk (repository),
    regions ([[x, y, z], ...]), side (voxels per axis), reps, contenders (names below).

    First an untimed pass over every region and contender checks each region against the
    direct WKW read (scifmt.wkw, C order), exiting with status 1 on a difference; it also
    opens every store and warms the page cache and the stores' metadata caches. Then `reps`
    timed passes; for each region the contenders run in rotated order (A B C, B C A, ...),
    the rotation advancing with the region and the repetition. A timed read is the region as
    a C-order numpy array of shape (1, side, side, side) from an already open array.

Contenders: "wkw" (scifmt.wkw.Dataset.read(..., order="C")), "zarr3" (zarr-python over a
LocalStore of the converted Zarr3), "icechunk" (zarr-python over the Icechunk repository's
read-only session store), "kerchunk" (zarr-python over an FsspecStore of fsspec's
ReferenceFileSystem). zarr-python's configuration is left at its defaults.
"""

import argparse
import json
import pathlib
import shutil
import sys
import time
import zlib

import numpy as np


def icechunk_repo(source, layer, repo_dir):
    import icechunk
    from obspec_utils.registry import ObjectStoreRegistry
    from obstore.store import LocalStore
    from scifmt.virtual import WKWParser
    from virtualizarr import open_virtual_dataset

    source = pathlib.Path(source).resolve()
    prefix = f"file://{source}/"
    config = icechunk.RepositoryConfig.default()
    config.set_virtual_chunk_container(
        icechunk.VirtualChunkContainer(prefix, icechunk.local_filesystem_store(str(source)))
    )
    shutil.rmtree(repo_dir, ignore_errors=True)
    repo = icechunk.Repository.create(
        icechunk.local_filesystem_storage(str(repo_dir)), config,
        authorize_virtual_chunk_access={prefix: None},
    )
    registry = ObjectStoreRegistry({"file:///": LocalStore()})
    vds = open_virtual_dataset(str(source), registry=registry,
                               parser=WKWParser(group=layer, axes="cxyz"))
    session = repo.writable_session("main")
    vds.vz.to_icechunk(session.store, group=layer)
    session.commit("read-bench: virtual WKW")


def open_icechunk(source, repo_dir):
    import icechunk

    source = pathlib.Path(source).resolve()
    prefix = f"file://{source}/"
    config = icechunk.RepositoryConfig.default()
    config.set_virtual_chunk_container(
        icechunk.VirtualChunkContainer(prefix, icechunk.local_filesystem_store(str(source)))
    )
    repo = icechunk.Repository.open(
        icechunk.local_filesystem_storage(str(repo_dir)), config,
        authorize_virtual_chunk_access={prefix: None},
    )
    return repo.readonly_session("main").store


def readers(cfg):
    """name -> function(origin) returning the region (1, s, s, s) in C order."""
    import zarr
    from zarr.storage import FsspecStore, LocalStore

    import scifmt.wkw as wkw

    s = cfg["side"]
    out = {}
    names = cfg["contenders"]
    if "wkw" in names:
        ds = wkw.Dataset.open(cfg["mag"])
        out["wkw"] = lambda o: ds.read(tuple(o), (s, s, s), order="C")

    def zarr_reader(store):
        arr = zarr.open_group(store, mode="r", zarr_format=3)[cfg["array"]]
        return lambda o: arr[0:1, o[0]:o[0] + s, o[1]:o[1] + s, o[2]:o[2] + s]

    if "zarr3" in names:
        out["zarr3"] = zarr_reader(LocalStore(cfg["zarr3"], read_only=True))
    if "icechunk" in names:
        out["icechunk"] = zarr_reader(open_icechunk(cfg["source"], cfg["icechunk"]))
    if "kerchunk" in names:
        import fsspec

        fs = fsspec.filesystem("reference", fo=cfg["kerchunk"], asynchronous=True)
        out["kerchunk"] = zarr_reader(FsspecStore(fs, read_only=True, path=""))
    missing = set(names) - set(out)
    if missing:
        sys.exit(f"unknown contenders: {sorted(missing)}")
    return [(n, out[n]) for n in names]


def run(cfg):
    import scifmt.wkw as wkw

    s = cfg["side"]
    regions = cfg["regions"]
    contenders = readers(cfg)
    with wkw.Dataset.open(cfg["mag"]) as ds:
        want = [ds.read(tuple(o), (s, s, s), order="C") for o in regions]
    crcs = [zlib.crc32(np.ascontiguousarray(w)) for w in want]
    # The untimed pass: every contender's region equals the direct read.
    for i, o in enumerate(regions):
        for name, read in contenders:
            got = np.asarray(read(o))
            if got.shape != want[i].shape or not np.array_equal(got, want[i]):
                sys.exit(f"{name}: region {i} at {o} differs from the direct WKW read")
    del want
    n = len(contenders)
    for rep in range(cfg["reps"]):
        for i, o in enumerate(regions):
            k = (rep + i) % n
            for name, read in contenders[k:] + contenders[:k]:
                t0 = time.perf_counter()
                got = read(o)
                dt = time.perf_counter() - t0
                crc = zlib.crc32(np.ascontiguousarray(got))
                if crc != crcs[i]:
                    sys.exit(f"{name}: region {i} at {o}, repetition {rep}: CRC-32 differs")
                print(json.dumps({"side": "python", "contender": name, "rep": rep,
                                  "region": i, "seconds": dt, "crc32": crc}), flush=True)


def main():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    ic = sub.add_parser("icechunk")
    ic.add_argument("--source", required=True)
    ic.add_argument("--layer", required=True)
    ic.add_argument("--repo", required=True)
    r = sub.add_parser("run")
    r.add_argument("--config", required=True)
    a = p.parse_args()
    if a.cmd == "icechunk":
        icechunk_repo(a.source, a.layer, a.repo)
    else:
        run(json.loads(pathlib.Path(a.config).read_text()))


if __name__ == "__main__":
    main()
