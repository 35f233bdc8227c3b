#!/usr/bin/env python3
"""Writes testdata/blosc/plugins/: b2nd arrays compressed with C-Blosc2's in-library plugin
filters (BYTEDELTA, INT_TRUNC, NDCELL, NDMEAN) and codecs (NDLZ, ZFP_ACC/PREC/RATE), by python-blosc2 4.14.1
(C-Blosc2 3.3.5), with the values python-blosc2 decodes.

Usage (in a venv with `pip install blosc2==4.14.1 numpy==2.4.6`):

    python testdata/generators/blosc/gen_plugin_fixtures.py testdata/blosc/plugins

For every case NAME it writes
  NAME.b2nd        the whole array, `arr.schunk.to_cframe()` (a contiguous b2nd frame)
  NAME.in.bin      the input array, C order, as numpy holds it (little-endian dtypes)
  NAME.out.bin     `arr[...]`: what python-blosc2 decodes, C order (only when it differs
                   from the input, i.e. for the lossy INT_TRUNC and NDMEAN)
  NAME.c0.cdata    chunk 0 as stored (`arr.schunk.get_chunk(0)`)
  NAME.c0.raw      chunk 0 before compression (block-major, zero padded): chunk 0 of a twin
                   array made with no filter and clevel 0
  NAME.c0.dec      chunk 0 as python-blosc2 decompresses it (`arr.schunk.decompress_chunk(0)`;
                   only when it differs from NAME.c0.raw)
and manifest.json with the parameters of every case. Always nthreads=1 and BLOSC_* cleared.
"""

import hashlib
import json
import os
import sys

for k in list(os.environ):
    if k.startswith("BLOSC_"):
        del os.environ[k]

import blosc2  # noqa: E402
import numpy as np  # noqa: E402

F = blosc2.Filter
C = blosc2.Codec


def values(kind, dtype, shape, seed):
    """Smooth-ish data with repeats (so that the filters and NDLZ find something)."""
    rng = np.random.default_rng(seed)
    n = int(np.prod(shape))
    i = np.arange(n)
    dt = np.dtype(dtype)
    if kind == "smooth":
        if dt.kind == "f":
            v = np.sin(i / 17.0) * 100.0 + rng.normal(scale=0.01, size=n)
        else:
            info = np.iinfo(dt)
            span = min(int(info.max), 1 << 40)
            step = 37 if dt.itemsize > 1 else 1
            v = ((i * step) // (1 if dt.itemsize > 1 else 9) + rng.integers(0, 3, n)) % span
            if dt.kind == "i":
                v = v - span // 2 if info.min < 0 else v
        return v.astype(dt).reshape(shape)
    if kind == "tiles":
        # u1 image made of repeated 4x4 / 8x8 motifs, constant areas and noise (for NDLZ).
        assert len(shape) == 2
        h, w = shape
        y, x = np.mgrid[0:h, 0:w]
        v = ((x // 4) % 3) * 40 + ((y // 4) % 2) * 7 + (x % 4) * ((y % 4) + 1)
        v = np.where((y // 8) % 3 == 1, 200, v)  # constant bands
        v = np.where(((x // 8) + (y // 8)) % 5 == 4, rng.integers(0, 256, (h, w)), v)
        v = np.where(((x // 4) % 4 == 2) & ((y // 4) % 2 == 0), (x % 4) * 3 + (y % 2) * 50, v)
        return v.astype(dt)
    raise ValueError(kind)


CASES = []


def case(name, dtype, shape, chunks, blocks, kind="smooth", seed=0, **cp):
    CASES.append(dict(name=name, dtype=dtype, shape=shape, chunks=chunks, blocks=blocks,
                      kind=kind, seed=seed, cparams=cp))


# BYTEDELTA (35), usually after SHUFFLE. python-blosc2 writes the meta itself: it becomes
# CParams.typesize (8 by default, whatever the dtype), unless the typesize is passed.
case("bytedelta_shuffle_f4_2d", "<f4", (30, 45), (16, 20), (8, 10),
     filters=[F.SHUFFLE, F.BYTEDELTA], filters_meta=[0, 0], codec=C.ZSTD, clevel=5)
case("bytedelta_shuffle_f4_meta4_2d", "<f4", (30, 45), (16, 20), (8, 10), seed=1,
     filters=[F.SHUFFLE, F.BYTEDELTA], filters_meta=[0, 4], typesize=4, codec=C.ZSTD, clevel=5)
case("bytedelta_shuffle_f8_1d", "<f8", (1000,), (300,), (64,), seed=2,
     filters=[F.SHUFFLE, F.BYTEDELTA], filters_meta=[0, 8], typesize=8, codec=C.LZ4, clevel=5)
case("bytedelta_shuffle_i2_3d", "<i2", (9, 10, 11), (5, 6, 7), (3, 3, 4), seed=3,
     filters=[F.SHUFFLE, F.BYTEDELTA], filters_meta=[0, 2], typesize=2, codec=C.BLOSCLZ, clevel=5)
case("bytedelta_u1_1d", "|u1", (5000,), (2048,), (512,), seed=4,
     filters=[F.BYTEDELTA], filters_meta=[1], typesize=1, codec=C.ZSTD, clevel=3)
case("bytedelta_shuffle_i4_meta3_1d", "<i4", (777,), (400,), (100,), seed=5,
     filters=[F.SHUFFLE, F.BYTEDELTA], filters_meta=[0, 3], typesize=4, codec=C.LZ4, clevel=5)

# INT_TRUNC (36): meta is signed precision bits (>= 0 keep, < 0 zero that many low bits).
case("int_trunc_i4_keep20_2d", "<i4", (40, 50), (16, 32), (8, 16), seed=10,
     filters=[F.INT_TRUNC, F.SHUFFLE], filters_meta=[20, 0], codec=C.LZ4, clevel=5)
case("int_trunc_u2_minus5_1d", "<u2", (3000,), (1000,), (256,), seed=11,
     filters=[F.INT_TRUNC], filters_meta=[-5], codec=C.ZSTD, clevel=5)
case("int_trunc_i8_minus30_1d", "<i8", (1500,), (600,), (128,), seed=12,
     filters=[F.INT_TRUNC, F.SHUFFLE], filters_meta=[-30, 0], codec=C.BLOSCLZ, clevel=5)
case("int_trunc_u1_keep5_3d", "|u1", (10, 12, 14), (6, 6, 8), (3, 3, 4), seed=13,
     filters=[F.INT_TRUNC], filters_meta=[5], codec=C.LZ4, clevel=5)

# NDCELL (32): meta = cell edge (the same in every dimension).
case("ndcell_f4_meta4_2d", "<f4", (30, 45), (16, 20), (8, 10), seed=20,
     filters=[F.NDCELL, F.SHUFFLE], filters_meta=[4, 0], codec=C.LZ4, clevel=5)
case("ndcell_i2_meta3_3d", "<i2", (9, 10, 11), (6, 6, 7), (6, 6, 7), seed=21,
     filters=[F.NDCELL], filters_meta=[3], codec=C.ZSTD, clevel=5)
case("ndcell_u1_meta2_1d", "|u1", (1000,), (300,), (100,), seed=22,
     filters=[F.NDCELL], filters_meta=[2], codec=C.ZSTD, clevel=5)
case("ndcell_f8_meta2_3d", "<f8", (7, 8, 9), (4, 5, 6), (4, 5, 6), seed=23,
     filters=[F.NDCELL, F.SHUFFLE], filters_meta=[2, 0], codec=C.ZSTD, clevel=5)
case("ndcell_u1_meta5_2d", "|u1", (40, 33), (20, 20), (20, 13), seed=24,
     filters=[F.NDCELL], filters_meta=[5], codec=C.LZ4, clevel=5)

# NDMEAN (33): lossy, float32/float64 only; meta = cell edge, cut to the block edge.
case("ndmean_f4_meta4_2d", "<f4", (30, 45), (16, 20), (8, 10), seed=30,
     filters=[F.NDMEAN], filters_meta=[4], codec=C.LZ4, clevel=5)
case("ndmean_f8_meta3_3d", "<f8", (9, 10, 11), (6, 6, 7), (6, 6, 7), seed=31,
     filters=[F.NDMEAN, F.SHUFFLE], filters_meta=[3, 0], codec=C.ZSTD, clevel=5)
case("ndmean_f4_meta5_1d", "<f4", (1000,), (300,), (100,), seed=32,
     filters=[F.NDMEAN], filters_meta=[5], codec=C.BLOSCLZ, clevel=5)
case("ndmean_f8_meta8_2d", "<f8", (20, 30), (10, 20), (10, 6), seed=33,
     filters=[F.NDMEAN], filters_meta=[8], codec=C.LZ4, clevel=5)

# NDLZ (codec 32): 2-D, typesize 1; codec meta = cell edge 4 or 8.
case("ndlz4_u1_64x64", "|u1", (64, 64), (32, 32), (16, 16), kind="tiles", seed=40,
     filters=[], codec=C.NDLZ, codec_meta=4, clevel=5)
case("ndlz4_u1_edges", "|u1", (70, 61), (40, 33), (18, 22), kind="tiles", seed=41,
     filters=[], codec=C.NDLZ, codec_meta=4, clevel=5)
case("ndlz8_u1_64x64", "|u1", (64, 64), (32, 32), (32, 32), kind="tiles", seed=42,
     filters=[], codec=C.NDLZ, codec_meta=8, clevel=5)
case("ndlz8_u1_edges", "|u1", (90, 77), (45, 40), (45, 27), kind="tiles", seed=43,
     filters=[], codec=C.NDLZ, codec_meta=8, clevel=5)
case("ndlz4_u1_bigblock", "|u1", (128, 128), (128, 128), (64, 128), kind="tiles", seed=44,
     filters=[], codec=C.NDLZ, codec_meta=4, clevel=5)
case("ndlz8_u1_bigblock", "|u1", (128, 160), (128, 160), (128, 80), kind="tiles", seed=45,
     filters=[], codec=C.NDLZ, codec_meta=8, clevel=5)

# ZFP (codecs 33-35, lossy, float32/float64, 1-4-D): meta is the accuracy exponent (as int8:
# tolerance 10**meta), the precision (meta + 3 + 2*ndim bits), or the rate in
# percent of the input size. Negative metas are passed as their uint8 value.
case("zfp_acc_f4_m3_2d", "<f4", (30, 45), (16, 20), (8, 10), seed=50,
     filters=[], filters_meta=[], codec=C.ZFP_ACC, codec_meta=(-3) & 0xFF, clevel=5)
case("zfp_acc_f8_m6_3d", "<f8", (9, 10, 11), (6, 6, 7), (6, 6, 7), seed=51,
     filters=[], filters_meta=[], codec=C.ZFP_ACC, codec_meta=(-6) & 0xFF, clevel=5)
case("zfp_acc_f8_p1_1d", "<f8", (1000,), (300,), (100,), seed=52,
     filters=[], filters_meta=[], codec=C.ZFP_ACC, codec_meta=1, clevel=5)
case("zfp_prec_f4_10_1d", "<f4", (1000,), (300,), (100,), seed=53,
     filters=[], filters_meta=[], codec=C.ZFP_PREC, codec_meta=10, clevel=5)
case("zfp_prec_f8_20_2d", "<f8", (30, 45), (16, 20), (8, 10), seed=54,
     filters=[], filters_meta=[], codec=C.ZFP_PREC, codec_meta=20, clevel=5)
case("zfp_prec_f4_12_3d", "<f4", (9, 10, 11), (6, 6, 7), (6, 6, 7), seed=55,
     filters=[], filters_meta=[], codec=C.ZFP_PREC, codec_meta=12, clevel=5)
case("zfp_rate_f4_50_2d", "<f4", (30, 45), (16, 20), (8, 10), seed=56,
     filters=[], filters_meta=[], codec=C.ZFP_RATE, codec_meta=50, clevel=5)
case("zfp_rate_f8_25_3d", "<f8", (9, 10, 11), (6, 6, 7), (4, 4, 4), seed=57,
     filters=[], filters_meta=[], codec=C.ZFP_RATE, codec_meta=25, clevel=5)
case("zfp_rate_f8_40_1d", "<f8", (1000,), (300,), (100,), seed=58,
     filters=[], filters_meta=[], codec=C.ZFP_RATE, codec_meta=40, clevel=5)


def sha(b):
    return hashlib.sha256(b).hexdigest()


def main(outdir):
    os.makedirs(outdir, exist_ok=True)
    entries = []
    for c in CASES:
        a = values(c["kind"], c["dtype"], c["shape"], c["seed"])
        cp = dict(c["cparams"])
        cp["nthreads"] = 1
        arr = blosc2.asarray(a, chunks=c["chunks"], blocks=c["blocks"],
                             cparams=blosc2.CParams(**cp), dparams=blosc2.DParams(nthreads=1))
        twin = blosc2.asarray(a, chunks=c["chunks"], blocks=c["blocks"],
                              cparams=blosc2.CParams(nthreads=1, clevel=0, filters=[],
                                                     filters_meta=[]),
                              dparams=blosc2.DParams(nthreads=1))
        name = c["name"]
        frame = arr.schunk.to_cframe()
        out = np.ascontiguousarray(arr[...])
        c0 = arr.schunk.get_chunk(0)
        raw0 = twin.schunk.decompress_chunk(0)
        dec0 = arr.schunk.decompress_chunk(0)
        files = {}

        def put(suffix, data):
            p = f"{name}.{suffix}"
            with open(os.path.join(outdir, p), "wb") as f:
                f.write(data)
            files[suffix] = p

        put("b2nd", frame)
        put("in.bin", a.tobytes())
        if out.tobytes() != a.tobytes():
            put("out.bin", out.tobytes())
        put("c0.cdata", c0)
        put("c0.raw", raw0)
        if dec0 != raw0:
            put("c0.dec", dec0)
        scp = arr.schunk.cparams
        e = dict(
            name=name,
            files=files,
            dtype=c["dtype"],
            itemsize=a.dtype.itemsize,
            shape=list(c["shape"]),
            chunks=list(c["chunks"]),
            blocks=list(c["blocks"]),
            values=c["kind"],
            seed=c["seed"],
            call=("blosc2.asarray(values, chunks=%r, blocks=%r, cparams=blosc2.CParams(%s))"
                  % (tuple(c["chunks"]), tuple(c["blocks"]),
                     ", ".join(f"{k}={v!r}" for k, v in cp.items()))),
            codec=int(scp.codec.value),
            codec_meta=int(scp.codec_meta),
            clevel=int(scp.clevel),
            typesize=int(scp.typesize),
            filters=[int(f.value) for f in scp.filters],
            filters_meta=[int(m) & 0xFF for m in scp.filters_meta],
            splitmode=int(scp.splitmode.value),
            blocksize=int(scp.blocksize),
            nchunks=int(arr.schunk.nchunks),
            chunk0_header=c0[:32].hex(),
            lossy=out.tobytes() != a.tobytes(),
            sha256_in=sha(a.tobytes()),
            sha256_out=sha(out.tobytes()),
            sha256_frame=sha(frame),
        )
        entries.append(e)
        print(name, len(frame), "bytes; chunk0", c0[:32].hex())
    meta = dict(
        generator="testdata/generators/blosc/gen_plugin_fixtures.py",
        blosc2=blosc2.__version__,
        c_blosc2=blosc2.blosclib_version,
        numpy=np.__version__,
        entries=entries,
    )
    with open(os.path.join(outdir, "manifest.json"), "w") as f:
        json.dump(meta, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "testdata/blosc/plugins")
