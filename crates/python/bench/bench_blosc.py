"""scifmt.blosc vs python-blosc2 on 4 MiB buffers: compress and decompress, same process.

Run (after ``cargo xtask python`` or ``maturin develop --release``):

    target/python-venv/bin/python crates/python/bench/bench_blosc.py [--reps 15] [--nthreads 1]
        [--clock wall|cpu] [--plugins | --blosc1]

``--plugins`` times C-Blosc2's in-library plugins instead of the codec/filter grid:
SHUFFLE + BYTEDELTA (float32, typesize 4, filters_meta [0, 4], zstd and lz4; plain
``blosc2.compress2`` / ``blosc2.decompress2``) and ZFP_ACC / ZFP_PREC / ZFP_RATE on 4 MiB
float32 and float64 3-D fields with a b2nd block shape. ZFP needs the block shape, which
C-Blosc2 takes from the b2nd metalayer of the array, so python-blosc2's side is a single-chunk
b2nd array: encode = ``arr.schunk.update_data(0, raw, copy=True)``, decode =
``arr.schunk.decompress_chunk(0)``, on the chunk's raw (block-major) bytes; scifmt's side is
``compress(raw, ..., blockshape=blocks)`` / ``decompress(chunk, blockshape=blocks)`` on the
same bytes. ZFP chunks are checked byte-identical and both decoders bit-identical.

``--blosc1`` compares Blosc1 chunks (what Zarr's ``blosc`` codec writes): scifmt's
``compress(..., format="blosc1")`` / ``decompress`` against python-blosc 1.11.4
(C-Blosc 1.21.7.dev; ``blosc.compress(raw, typesize, 5, shuffle, cname)`` / ``blosc.decompress``
with ``blosc.set_nthreads(N)``), on the same data for every cname x noshuffle/shuffle/bitshuffle,
automatic block size. ``same bytes`` compares our chunk (made with N threads) with C-Blosc 1's
single-threaded chunk (with several threads, C-Blosc 1 places blocks in completion order, so
its own bytes vary); ``zlib`` chunks are never identical (zlib-rs vs zlib 1.3.1).

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
    ap.add_argument("--plugins", action="store_true",
                    help="time the plugin rows (BYTEDELTA, ZFP) instead of the codec/filter grid")
    ap.add_argument("--blosc1", action="store_true",
                    help="Blosc1 chunks against python-blosc 1.11.4 (C-Blosc 1.21) instead of "
                         "python-blosc2")
    args = ap.parse_args()
    global CLOCK
    if args.clock == "cpu":
        if args.nthreads != 1:
            ap.error("--clock cpu needs --nthreads 1 (work on other threads is not counted)")
        CLOCK = time.thread_time
    nt = args.nthreads
    if args.blosc1:
        blosc1_rows(args, nt)
        return
    blosc2.set_nthreads(nt)  # decompress2 uses the global thread count
    print(f"python-blosc2 {blosc2.__version__} (C-Blosc2 {blosc2.blosclib_version}), scifmt "
          f"{sb.__name__}, nthreads={nt}, reps={args.reps}, clock={args.clock}, 4 MiB per buffer")
    print(f"{'data':8} {'codec':8} {'filter':10} {'cratio':>7} | {'c MB/s b2':>10} {'c MB/s ours':>11} "
          f"{'c ratio':>8} | {'d MB/s b2':>10} {'d MB/s ours':>11} {'d ratio':>8} | same bytes")
    c_ratios, d_ratios = [], []
    if args.plugins:
        plugin_rows(args, nt, c_ratios, d_ratios)
        report(c_ratios, d_ratios)
        return
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
    report(c_ratios, d_ratios)


def interleave(reps, c_b2, c_us, d_b2, d_us):
    tc_b2, tc_us, td_b2, td_us = [], [], [], []
    for _ in range(reps):
        tc_b2.append(timed(c_b2))
        tc_us.append(timed(c_us))
        td_b2.append(timed(d_b2))
        td_us.append(timed(d_us))
    return (statistics.median(tc_b2), statistics.median(tc_us), statistics.median(td_b2),
            statistics.median(td_us))


def row(name, codec, filt, nbytes, clen, same, times, c_ratios, d_ratios):
    mc_b2, mc_us, md_b2, md_us = times
    cr, dr = mc_b2 / mc_us, md_b2 / md_us
    c_ratios.append(cr)
    d_ratios.append(dr)
    mb = nbytes / 1e6
    print(f"{name:8} {codec:8} {filt:11} {nbytes / clen:7.2f} | "
          f"{mb / mc_b2:10.0f} {mb / mc_us:11.0f} {cr:8.2f} | "
          f"{mb / md_b2:10.0f} {mb / md_us:11.0f} {dr:8.2f} | {'yes' if same else 'NO'}")


def field3d(dtype, shape):
    """A smooth 3-D field with a little noise (what ZFP is made for)."""
    rng = np.random.default_rng(777)
    z, y, x = np.meshgrid(*[np.linspace(0, 1, n) for n in shape], indexing="ij")
    v = np.sin(6 * x) * np.cos(5 * y) + z * z + rng.normal(0, 1e-3, shape)
    return v.astype(dtype)


# ZFP rows: (codec, codec_meta, label). Accuracy 10**-3; precision meta + 3 + 2*3 bits; rate
# in percent of the input.
ZFP = [("ZFP_ACC", (-3) & 0xFF, "acc=-3"), ("ZFP_PREC", 12, "prec=12"),
       ("ZFP_RATE", 25, "rate=25")]


def plugin_rows(args, nt, c_ratios, d_ratios):
    # SHUFFLE + BYTEDELTA on the float32 data set (python-blosc2's pipeline for floats).
    data = dict(datasets())["float32"]
    for codec in ("zstd", "lz4"):
        b2kw = dict(codec=blosc2.Codec[codec.upper()], clevel=5, typesize=4, nthreads=nt,
                    filters=[blosc2.Filter.SHUFFLE, blosc2.Filter.BYTEDELTA],
                    filters_meta=[0, 4], splitmode=blosc2.SplitMode.AUTO_SPLIT)
        ourkw = dict(codec=codec, clevel=5, typesize=4, nthreads=nt,
                     filters=[sb.Filter.SHUFFLE, sb.Filter.BYTEDELTA], filters_meta=[0, 4],
                     splitmode=sb.SplitMode.AUTO_SPLIT)
        ref = blosc2.compress2(data, **b2kw)
        ours = sb.compress(data, **ourkw)
        assert sb.decompress(ref) == blosc2.decompress2(ours) == data.tobytes()
        times = interleave(args.reps, lambda: blosc2.compress2(data, **b2kw),
                           lambda: sb.compress(data, **ourkw), lambda: blosc2.decompress2(ref),
                           lambda: sb.decompress(ours, nthreads=nt))
        row("float32", codec, "shuf+bdelta", data.nbytes, len(ours), ref == ours, times,
            c_ratios, d_ratios)
    # ZFP on single-chunk b2nd arrays (4 MiB), blocks of 16 x 32 x 32 items.
    for dtype, shape in (("float32", (64, 128, 128)), ("float64", (64, 64, 128))):
        a = field3d(dtype, shape)
        blocks = (16, 32, 32)
        dp = blosc2.DParams(nthreads=nt)
        twin = blosc2.asarray(a, chunks=shape, blocks=blocks, dparams=dp,
                              cparams=blosc2.CParams(nthreads=nt, clevel=0, filters=[],
                                                     filters_meta=[]))
        raw = twin.schunk.decompress_chunk(0)  # the chunk's block-major bytes
        for codec, meta, label in ZFP:
            cp = blosc2.CParams(codec=blosc2.Codec[codec], codec_meta=meta, clevel=5,
                                filters=[], filters_meta=[], nthreads=nt)
            arr = blosc2.asarray(a, chunks=shape, blocks=blocks, cparams=cp, dparams=dp)
            ourkw = dict(codec=sb.Codec[codec], codec_meta=meta, clevel=5, filters=[],
                         typesize=a.dtype.itemsize, blocksize=int(np.prod(blocks)) * a.itemsize,
                         nthreads=nt, blockshape=blocks)
            ref = arr.schunk.get_chunk(0)
            ours = sb.compress(raw, **ourkw)
            dec_b2 = arr.schunk.decompress_chunk(0)
            assert sb.decompress(ref, blockshape=blocks) == dec_b2, codec
            same = ref == ours

            def c_b2():
                arr.schunk.update_data(0, raw, copy=True)

            times = interleave(args.reps, c_b2, lambda: sb.compress(raw, **ourkw),
                               lambda: arr.schunk.decompress_chunk(0),
                               lambda: sb.decompress(ours, nthreads=nt, blockshape=blocks))
            assert arr.schunk.get_chunk(0) == ref
            row(dtype, codec.lower(), label, len(raw), len(ours), same, times, c_ratios,
                d_ratios)


BLOSC1_CODECS = ["blosclz", "lz4", "lz4hc", "zlib", "zstd"]
BLOSC1_SHUFFLES = ["noshuffle", "shuffle", "bitshuffle"]


def blosc1_rows(args, nt):
    import os

    for k in list(os.environ):
        if k.startswith("BLOSC_"):  # C-Blosc 1 reads these on every call
            del os.environ[k]
    import blosc  # python-blosc 1.11.4: C-Blosc 1.21

    blosc.set_blocksize(0)
    print(f"python-blosc {blosc.__version__} (C-Blosc {blosc.blosclib_version}), scifmt "
          f"{sb.__name__} format=blosc1, nthreads={nt}, reps={args.reps}, clock={args.clock}, "
          f"4 MiB per buffer")
    print(f"{'data':8} {'codec':8} {'filter':10} {'cratio':>7} | {'c MB/s C1':>10} {'c MB/s ours':>11} "
          f"{'c ratio':>8} | {'d MB/s C1':>10} {'d MB/s ours':>11} {'d ratio':>8} | same bytes")
    c_ratios, d_ratios = [], []
    for name, data in datasets():
        raw = data.tobytes()
        ts = data.dtype.itemsize
        for codec in BLOSC1_CODECS:
            for filt in BLOSC1_SHUFFLES:
                shuffle = getattr(blosc, filt.upper())
                ourkw = dict(typesize=ts, clevel=5, codec=codec, nthreads=nt, format="blosc1",
                             filters=[sb.Filter[filt.upper()] if filt != "noshuffle"
                                      else sb.Filter.NOFILTER])
                blosc.set_nthreads(1)
                ref1 = blosc.compress(raw, ts, 5, shuffle, codec)
                blosc.set_nthreads(nt)
                ref = blosc.compress(raw, ts, 5, shuffle, codec)
                ours = sb.compress(raw, **ourkw)
                assert sb.decompress(ref) == blosc.decompress(ours) == raw
                times = interleave(args.reps, lambda: blosc.compress(raw, ts, 5, shuffle, codec),
                                   lambda: sb.compress(raw, **ourkw), lambda: blosc.decompress(ref),
                                   lambda: sb.decompress(ours, nthreads=nt))
                row(name, codec, filt, len(raw), len(ours), ours == ref1, times, c_ratios,
                    d_ratios)
    report(c_ratios, d_ratios, "C-Blosc 1.21")


def report(c_ratios, d_ratios, peer="python-blosc2"):
    gm = lambda xs: float(np.exp(np.mean(np.log(xs))))  # noqa: E731
    print(f"geometric mean ratio ({peer} time / scifmt time): compress {gm(c_ratios):.2f}, "
          f"decompress {gm(d_ratios):.2f}; min compress {min(c_ratios):.2f}, min decompress "
          f"{min(d_ratios):.2f}")


if __name__ == "__main__":
    main()
