"""scifmt.wkw vs the reference wkw package, same process, same files: prints ratios.

Run (after `cargo xtask python`, which installs both into target/python-venv):

    target/python-venv/bin/python crates/python/bench/bench_wkw.py [--reps N] [--dir DIR]

Cases: 256³ uint8 reads of one whole file (raw, LZ4, LZ4HC), 100³ unaligned reads crossing
files, and 4-D C-order writes of 256³ uint8 (raw, whole file, the case the reference
transposes). Reads start after `os.sync()`, so no write-back of the files just made runs
meanwhile. The data are smooth with noise, so LZ4 compresses them like image data. Each
case is timed `--reps` times alternating the two libraries; the table shows medians.
"""

import argparse
import os
import shutil
import statistics
import tempfile
import time

# numpy's OpenBLAS threads spin after BLAS calls and take cores from both libraries' threads.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import wkw as ref  # noqa: E402

import scifmt.wkw as ours  # noqa: E402

N = 256


def volume(shape, seed=0):
    rng = np.random.default_rng(seed)
    x, y, z = np.meshgrid(*(np.arange(s, dtype=np.float32) for s in shape), indexing="ij")
    smooth = 100 + 60 * np.sin(x / 17) * np.cos(y / 23) + 40 * np.sin(z / 11)
    return (smooth + rng.normal(0, 4, shape)).clip(0, 255).astype(np.uint8)


def timed(fn, reps):
    out = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return statistics.median(out)


def compare(name, ref_fn, our_fn, reps, nbytes):
    ref_fn(), our_fn()  # warm up (page cache, thread pools)
    t_ref, t_ours = [], []
    for _ in range(reps):
        t_ref.append(timed(ref_fn, 1))
        t_ours.append(timed(our_fn, 1))
    r, o = statistics.median(t_ref), statistics.median(t_ours)
    mib = nbytes / 2**20
    print(f"| {name:<34} | {r * 1e3:9.1f} | {o * 1e3:9.1f} | {mib / r:8.0f} | {mib / o:8.0f} | {r / o:6.2f}× |")
    return r / o


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--dir", default=None, help="scratch directory (default: a temporary one)")
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(dir=args.dir, prefix="bench_wkw_")
    try:
        data = volume((N, N, N))
        print(f"scifmt.wkw vs wkw {getattr(ref, '__version__', '1.1.x')}, {os.cpu_count()} cores, "
              f"median of {args.reps}")
        print("| case | wkw ms | scifmt ms | wkw MiB/s | scifmt MiB/s | speed-up |")
        print("|---|---:|---:|---:|---:|---:|")
        names = {1: "raw", 2: "LZ4", 3: "LZ4HC"}
        for bt in (1, 2, 3):
            root = os.path.join(tmp, f"read_{bt}")
            h = ref.Header(np.uint8, block_len=32, file_len=8, block_type=bt)
            with ref.Dataset.create(root, h) as ds:
                # Two whole files along x, so the unaligned box crosses a file boundary.
                ds.write((0, 0, 0), np.concatenate([data, data[::-1]], axis=0))
            os.sync()  # no write-back of the new files while reads are timed
            r, o = ref.Dataset.open(root), ours.Dataset.open(root)
            compare(f"256³ read {names[bt]}", lambda: r.read((0, 0, 0), (N, N, N)),
                    lambda: o.read((0, 0, 0), (N, N, N)), args.reps, N**3)
            off, sh = (200, 37, 81), (100, 100, 100)
            compare(f"100³ unaligned read {names[bt]}", lambda: r.read(off, sh),
                    lambda: o.read(off, sh), args.reps, 100**3)
        c_data = np.ascontiguousarray(data[np.newaxis])
        r = ref.Dataset.create(os.path.join(tmp, "w_ref"), ref.Header(np.uint8, block_len=32, file_len=8))
        o = ours.Dataset.create(os.path.join(tmp, "w_ours"), ours.Header(np.uint8, block_len=32, file_len=8))
        compare("256³ C-order 4-D write raw", lambda: r.write((0, 0, 0), c_data),
                lambda: o.write((0, 0, 0), c_data), args.reps, N**3)
        rl = ref.Dataset.create(os.path.join(tmp, "wl_ref"),
                                ref.Header(np.uint8, block_len=32, file_len=8, block_type=2))
        ol = ours.Dataset.create(os.path.join(tmp, "wl_ours"),
                                 ours.Header(np.uint8, block_len=32, file_len=8, block_type=2))
        compare("256³ C-order 4-D write LZ4", lambda: rl.write((0, 0, 0), c_data),
                lambda: ol.write((0, 0, 0), c_data), args.reps, N**3)
        np.testing.assert_array_equal(o.read((0, 0, 0), (N, N, N)), r.read((0, 0, 0), (N, N, N)))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
