"""C-Blosc2's in-library plugins (BYTEDELTA, INT_TRUNC, NDCELL, NDMEAN, NDLZ, ZFP) in
scifmt.blosc and scifmt.b2nd, against the python-blosc2 fixtures in testdata/blosc/plugins and
live against python-blosc2."""

import json

import numpy as np
import pytest

import scifmt.b2nd as b2
import scifmt.blosc as sb


def _entries(testdata):
    d = testdata / "blosc" / "plugins"
    return d, json.loads((d / "manifest.json").read_text())["entries"]


def test_fixture_chunks_byte_identical_both_ways(testdata):
    d, entries = _entries(testdata)
    for e in entries:
        raw = (d / e["files"]["c0.raw"]).read_bytes()
        stored = (d / e["files"]["c0.cdata"]).read_bytes()
        want = (d / e["files"].get("c0.dec", e["files"]["c0.raw"])).read_bytes()
        blocks = e["blocks"]
        ts = e["itemsize"]
        ours = sb.compress(
            raw,
            typesize=ts,
            clevel=e["clevel"],
            codec=e["codec"],
            filters=e["filters"] or [sb.Filter.NOFILTER],
            filters_meta=e["filters_meta"] or None,
            blocksize=int(np.prod(blocks)) * ts,
            splitmode=e["splitmode"],
            nthreads=1,
            codec_meta=e["codec_meta"],
            blockshape=blocks,
        )
        assert ours == stored, e["name"]
        assert sb.decompress(stored, blockshape=blocks) == want, e["name"]
    assert len(entries) == 34


def test_fixture_frames_read(testdata):
    d, entries = _entries(testdata)
    for e in entries:
        a = b2.from_cframe((d / e["files"]["b2nd"]).read_bytes())
        want = (d / e["files"].get("out.bin", e["files"]["in.bin"])).read_bytes()
        assert a[...].tobytes() == want, e["name"]


def test_cell_chunk_needs_the_block_shape(testdata):
    c = (testdata / "blosc" / "plugins" / "ndcell_f8_meta2_3d.c0.cdata").read_bytes()
    with pytest.raises(sb.BloscError, match="block shape"):
        sb.decompress(c)


@pytest.mark.parametrize(
    "kw",
    [
        dict(filters=[sb.Filter.SHUFFLE, sb.Filter.BYTEDELTA], filters_meta=[0, 4]),
        dict(filters=[sb.Filter.NDCELL], filters_meta=[3]),
        dict(filters=[sb.Filter.NDMEAN], filters_meta=[4]),
        dict(filters=[], codec=sb.Codec.ZFP_PREC, codec_meta=12),
        dict(filters=[], codec=sb.Codec.ZFP_RATE, codec_meta=40),
    ],
    ids=["bytedelta", "ndcell", "ndmean", "zfp_prec", "zfp_rate"],
)
def test_live_round_trip_with_python_blosc2(kw):
    blosc2 = pytest.importorskip("blosc2")
    a = (np.sin(np.arange(23 * 31) / 13.0) * 50).astype("<f4").reshape(23, 31)
    frame = b2.to_cframe(a, chunks=(12, 16), blocks=(6, 8), codec=kw.get("codec", sb.Codec.ZSTD), **{k: v for k, v in kw.items() if k != "codec"})
    theirs = blosc2.ndarray_from_cframe(frame)[...]
    ours = b2.from_cframe(frame)[...]
    np.testing.assert_array_equal(ours, theirs)
    b2kw = dict(
        codec=blosc2.Codec(int(kw.get("codec", sb.Codec.ZSTD))),
        codec_meta=kw.get("codec_meta", 0),
        filters=[blosc2.Filter(int(f)) for f in kw["filters"]],
        filters_meta=list(kw.get("filters_meta", [])),
        nthreads=1,
    )
    if not b2kw["filters"]:
        b2kw["filters"], b2kw["filters_meta"] = [blosc2.Filter.NOFILTER], [0]
    arr = blosc2.asarray(a, chunks=(12, 16), blocks=(6, 8), cparams=blosc2.CParams(**b2kw))
    np.testing.assert_array_equal(b2.from_cframe(arr.schunk.to_cframe())[...], arr[...])
