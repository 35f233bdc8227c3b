"""scifmt.blosc vs python-blosc2 on 4 MiB buffers: compress and decompress, same process.

Run (after ``cargo xtask python`` or ``maturin develop --release``):

    target/python-venv/bin/python crates/python/bench/bench_blosc.py [--reps 15] [--nthreads 1]
        [--clock wall|cpu]

For each data set (int32 / float32 / uint16, 4 MiB) and parameter set (codec, filter), both
libraries compress the same buffer with the same parameters (typesize = item size, clevel 5,
automatic block size, AUTO_SPLIT) and decompress their own chunk; the repetitions of the two
libraries are interleaved, and the medians are compared. ``c ratio`` / ``d ratio`` =
python-blosc2 time / scifmt time (> 1: scifmt is faster); ``cratio`` is the compression ratio.
Chunks are also checked to be byte-identical.
"""

import argparse
import statistics
import time

import numpy as np

import blosc2
import scifmt.blosc as sb

MIB = 1 << 20


def datasets():
    rng = np.random.default_rng(12345)
    n4 = 4 * MIB // 4
    n2 = 4 * MIB // 2
    i = np.arange(n4)
    yield "int32", (1_000_000 + 3 * i + rng.integers(0, 16, n4)).astype(np.int32)
    yield "float32", (np.sin(i / 300.0) * 1000 + rng.normal(0, 0.01, n4)).astype(np.float32)
    walk = np.cumsum(rng.integers(-3, 4, n2)) + 30_000
    yield "uint16", np.clip(walk, 0, 65535).astype(np.uint16)


PARAMS = [
    ("blosclz", "shuffle"),
    ("lz4", "shuffle"),
    ("lz4", "bitshuffle"),
    ("zstd", "shuffle"),
    ("zstd", "bitshuffle"),
    ("lz4hc", "shuffle"),
    ("zlib", "shuffle"),
]


CLOCK = time.perf_counter


def timed(fn):
    t0 = CLOCK()
    fn()
    return CLOCK() - t0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--nthreads", type=int, default=1)
    ap.add_argument("--clock", choices=["wall", "cpu"], default="wall",
                    help="cpu: the calling thread's CPU time (time.thread_time), less sensitive to "
                         "other processes on a busy machine; only meaningful with --nthreads 1")
    args = ap.parse_args()
    global CLOCK
    if args.clock == "cpu":
        if args.nthreads != 1:
            ap.error("--clock cpu needs --nthreads 1 (work on other threads is not counted)")
        CLOCK = time.thread_time
    nt = args.nthreads
    blosc2.set_nthreads(nt)  # decompress2 uses the global thread count
    print(f"python-blosc2 {blosc2.__version__} (C-Blosc2 {blosc2.blosclib_version}), scifmt "
          f"{sb.__name__}, nthreads={nt}, reps={args.reps}, clock={args.clock}, 4 MiB per buffer")
    print(f"{'data':8} {'codec':8} {'filter':10} {'cratio':>7} | {'c MB/s b2':>10} {'c MB/s ours':>11} "
          f"{'c ratio':>8} | {'d MB/s b2':>10} {'d MB/s ours':>11} {'d ratio':>8} | same bytes")
    c_ratios, d_ratios = [], []
    for name, data in datasets():
        for codec, filt in PARAMS:
            ts = data.dtype.itemsize
            b2kw = dict(codec=blosc2.Codec[codec.upper()], clevel=5, typesize=ts, nthreads=nt,
                        filters=[blosc2.Filter[filt.upper()]], splitmode=blosc2.SplitMode.AUTO_SPLIT)
            ourkw = dict(codec=codec, clevel=5, typesize=ts, nthreads=nt,
                         filters=[sb.Filter[filt.upper()]], splitmode=sb.SplitMode.AUTO_SPLIT)
            ref = blosc2.compress2(data, **b2kw)
            ours = sb.compress(data, **ourkw)
            same = ref == ours
            assert sb.decompress(ref) == blosc2.decompress2(ours) == data.tobytes()
            tc_b2, tc_us, td_b2, td_us = [], [], [], []
            for _ in range(args.reps):
                tc_b2.append(timed(lambda: blosc2.compress2(data, **b2kw)))
                tc_us.append(timed(lambda: sb.compress(data, **ourkw)))
                td_b2.append(timed(lambda: blosc2.decompress2(ref)))
                td_us.append(timed(lambda: sb.decompress(ours, nthreads=nt)))
            mc_b2, mc_us = statistics.median(tc_b2), statistics.median(tc_us)
            md_b2, md_us = statistics.median(td_b2), statistics.median(td_us)
            cr, dr = mc_b2 / mc_us, md_b2 / md_us
            c_ratios.append(cr)
            d_ratios.append(dr)
            mb = data.nbytes / 1e6
            print(f"{name:8} {codec:8} {filt:10} {len(data.tobytes()) / len(ours):7.2f} | "
                  f"{mb / mc_b2:10.0f} {mb / mc_us:11.0f} {cr:8.2f} | "
                  f"{mb / md_b2:10.0f} {mb / md_us:11.0f} {dr:8.2f} | {'yes' if same else 'NO'}")
    gm = lambda xs: float(np.exp(np.mean(np.log(xs))))  # noqa: E731
    print(f"geometric mean ratio (python-blosc2 time / scifmt time): compress {gm(c_ratios):.2f}, "
          f"decompress {gm(d_ratios):.2f}; min compress {min(c_ratios):.2f}, min decompress "
          f"{min(d_ratios):.2f}")


if __name__ == "__main__":
    main()
