"""The ``b2nd`` codec from Python against python-blosc2: the chunks of arrays python-blosc2 made
(``schunk.get_chunk(i)``) decode through numcodecs (``B2nd``) and through zarr-python (a Zarr v3
array whose chunk files are those bytes, codec ``B2ndCodec``) to what ``blosc2.open`` reads;
chunks both codecs encode, put into the frame with ``schunk.update_chunk``, read back the same
in python-blosc2; hostile chunks and arguments raise, never crash."""

import os
import shutil
import subprocess
import sys
import warnings

import numpy as np
import pytest

from scifmt import codecs

blosc2 = pytest.importorskip("blosc2")

DTYPES = ["|u1", "<i2", "<u4", "<i8", "<f4", ">f8", ">i4", "<c8", "|b1",
          [("a", "<i4"), ("b", "<f8")]]  # fmt: skip
# (shape, chunks, blocks): blocks other than the chunk everywhere, blocks that do not divide
# the chunk (padding inside every chunk), edge chunks (shapes not multiples of chunks), and one
# chunk = block case.
GEOMETRIES = [
    ((1000,), (300,), (64,)),
    ((37, 53), (10, 20), (3, 7)),
    ((9, 11, 13), (4, 5, 6), (2, 5, 3)),
    ((5, 6, 7, 8), (2, 3, 4, 5), (1, 2, 3, 5)),
    ((12, 10), (6, 10), (6, 10)),
]


def _values(shape, dtype, seed=0):
    dt = np.dtype(dtype)
    rng = np.random.default_rng(seed)
    n = int(np.prod(shape))
    if dt.fields is not None:
        a = np.zeros(n, dt)
        a["a"] = np.arange(n)
        a["b"] = rng.random(n)
        return a.reshape(shape)
    if dt.kind == "b":
        return (rng.random(shape) > 0.5).astype(dt)
    if dt.kind == "c":
        return (rng.random(shape) + 1j * np.arange(n).reshape(shape)).astype(dt)
    if dt.kind == "f":
        return (np.sin(np.arange(n) / 7.0) * 100).reshape(shape).astype(dt)
    return (np.arange(n) * 7 % 251 + rng.integers(0, 3, n)).reshape(shape).astype(dt)


def _make(path, shape, chunks, blocks, dtype, **kw):
    """A b2nd file made by python-blosc2, reopened from disk."""
    blosc2.asarray(_values(shape, dtype), urlpath=str(path), mode="w", chunks=chunks,
                   blocks=blocks, **kw)  # fmt: skip
    return blosc2.open(str(path))


def _grid(ref):
    return tuple(-(-s // c) for s, c in zip(ref.shape, ref.chunks))


def _chunk_slices(ref, coords):
    """The array region chunk ``coords`` covers, and its extent inside the chunk."""
    sl = tuple(slice(c * n, min((c + 1) * n, s)) for c, n, s in zip(coords, ref.chunks, ref.shape))
    return sl, tuple(slice(0, x.stop - x.start) for x in sl)


def _endian(dtype):
    return "big" if np.dtype(dtype).byteorder == ">" else "little"


CASES = [(g, d) for g in GEOMETRIES for d in DTYPES[:4]] + [(GEOMETRIES[2], d) for d in DTYPES[4:]] \
    + [(GEOMETRIES[1], d) for d in DTYPES[4:]]  # fmt: skip


def _id(case):
    (shape, _, _), dtype = case
    return f"{len(shape)}d-{np.dtype(dtype).str if not isinstance(dtype, list) else 'struct'}"


@pytest.fixture(params=CASES, ids=[_id(c) for c in CASES])
def ref(request, tmp_path):
    (shape, chunks, blocks), dtype = request.param
    return _make(tmp_path / "a.b2nd", shape, chunks, blocks, dtype,
                 cparams=blosc2.CParams(codec=blosc2.Codec.LZ4, nthreads=1))  # fmt: skip


def test_numcodecs_decodes_every_chunk_like_blosc2(ref):
    numcodecs = pytest.importorskip("numcodecs")
    want = ref[...]
    config = {"id": "b2nd", "chunkshape": list(ref.chunks), "dtype": ref.dtype.str,
              "blockshape": list(ref.blocks)}  # fmt: skip
    codec = numcodecs.get_codec(config)  # through the entry point
    assert isinstance(codec, codecs.B2nd)
    assert codec.get_config() == {**config, "cname": "zstd", "clevel": 5, "shuffle": "shuffle"}
    assert numcodecs.get_codec(codec.get_config()) == codec
    for i, coords in enumerate(np.ndindex(_grid(ref))):
        raw = ref.schunk.get_chunk(i)
        chunk = np.frombuffer(codec.decode(raw), dtype=ref.dtype).reshape(ref.chunks)
        region, inside = _chunk_slices(ref, coords)
        np.testing.assert_array_equal(chunk[inside], want[region])
        out = np.zeros(int(np.prod(ref.chunks)) * ref.dtype.itemsize, dtype=np.uint8)
        assert codec.decode(raw, out=out) is out
        assert out.tobytes() == chunk.tobytes()


def test_numcodecs_encoded_chunks_read_in_blosc2(ref, tmp_path):
    want = ref[...]
    codec = codecs.B2nd(ref.chunks, ref.dtype, ref.blocks, cname="zlib", clevel=9, shuffle=2)
    assert codec.shuffle == "bitshuffle"
    path = tmp_path / "copy.b2nd"
    shutil.copy(ref.schunk.urlpath, path)
    copy = blosc2.open(str(path), mode="a")
    for i, coords in enumerate(np.ndindex(_grid(ref))):
        region, inside = _chunk_slices(ref, coords)
        chunk = np.zeros(ref.chunks, dtype=ref.dtype)
        chunk[inside] = want[region]
        stored = codec.encode(chunk)
        # A Blosc2 chunk python-blosc2 decompresses: the chunk's items, block by block.
        assert len(blosc2.decompress2(stored)) == ref.schunk.chunksize
        copy.schunk.update_chunk(i, stored)
        back = np.frombuffer(codec.decode(stored), dtype=ref.dtype).reshape(ref.chunks)
        np.testing.assert_array_equal(back, chunk)
    del copy
    np.testing.assert_array_equal(blosc2.open(str(path))[...], want)


def _zarr_over_chunks(zarr, root, ref, **codec_kw):
    """A Zarr v3 array (local store) whose chunk files are the frame's chunks, unchanged."""
    codec = codecs.B2ndCodec(blockshape=ref.blocks, endian=_endian(ref.dtype), **codec_kw)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # structured dtypes are not in the Zarr v3 spec yet
        z = zarr.create_array(store=str(root), shape=ref.shape, chunks=ref.chunks,
                              dtype=ref.dtype, serializer=codec, compressors=None,
                              fill_value=None, config={"write_empty_chunks": True})  # fmt: skip
    for i, coords in enumerate(np.ndindex(_grid(ref))):
        p = root.joinpath("c", *map(str, coords))
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(ref.schunk.get_chunk(i))
    return z


def test_zarr_python_reads_the_frames_chunks_in_place(ref, tmp_path):
    zarr = pytest.importorskip("zarr")
    root = tmp_path / "view.zarr"
    _zarr_over_chunks(zarr, root, ref)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        z = zarr.open_array(str(root), mode="r")
    assert z.metadata.to_dict()["codecs"][0] == {
        "name": "b2nd", "configuration": {"blockshape": list(ref.blocks),
                                          "endian": _endian(ref.dtype), "cname": "zstd",
                                          "clevel": 5, "shuffle": "shuffle"}}  # fmt: skip
    want = ref[...]
    np.testing.assert_array_equal(z[...], want)
    # A region across chunks, up to the end.
    region = tuple(slice(s // 3, s) for s in ref.shape)
    np.testing.assert_array_equal(z[region], want[region])


def test_zarr_python_writes_chunks_blosc2_reads(ref, tmp_path):
    zarr = pytest.importorskip("zarr")
    root = tmp_path / "written.zarr"
    z = _zarr_over_chunks(zarr, root, ref, cname="lz4hc", clevel=3, shuffle="noshuffle")
    # Other values than the frame's: the array reversed along every axis.
    new = np.ascontiguousarray(ref[...][(slice(None, None, -1),) * len(ref.shape)])
    z[...] = new
    path = tmp_path / "copy.b2nd"
    shutil.copy(ref.schunk.urlpath, path)
    copy = blosc2.open(str(path), mode="a")
    for i, coords in enumerate(np.ndindex(_grid(ref))):
        stored = root.joinpath("c", *map(str, coords)).read_bytes()
        copy.schunk.update_chunk(i, stored)
    del copy
    np.testing.assert_array_equal(blosc2.open(str(path))[...], new)


@pytest.mark.parametrize("cname", ["blosclz", "lz4", "lz4hc", "zlib", "zstd"])
@pytest.mark.parametrize("shuffle", ["noshuffle", "shuffle", "bitshuffle"])
def test_encode_writes_python_blosc2s_bytes(cname, shuffle):
    """Decoded and encoded again with python-blosc2's parameters, every chunk is the bytes
    python-blosc2 wrote (edge chunks included: both pad with zeros)."""
    filters = [blosc2.Filter.NOFILTER] * 5 + [getattr(blosc2.Filter, shuffle.upper()
                                                       .replace("NOSHUFFLE", "NOFILTER"))]
    for dtype in DTYPES:
        for clevel in (1, 9):
            ref = blosc2.asarray(_values((9, 11, 13), dtype), chunks=(4, 5, 6), blocks=(2, 5, 3),
                                 cparams=blosc2.CParams(codec=getattr(blosc2.Codec, cname.upper()),
                                                        clevel=clevel, nthreads=1,
                                                        filters=filters))  # fmt: skip
            codec = codecs.B2nd(ref.chunks, ref.dtype, ref.blocks, cname=cname, clevel=clevel,
                                shuffle=shuffle)  # fmt: skip
            for i in range(ref.schunk.nchunks):
                raw = ref.schunk.get_chunk(i)
                assert codec.encode(codec.decode(raw)) == raw, (dtype, clevel, i)


def test_the_entry_point_needs_no_import(tmp_path):
    """A fresh interpreter that never imports scifmt reads the array through zarr-python."""
    pytest.importorskip("zarr")
    import zarr

    ref = _make(tmp_path / "a.b2nd", (37, 53), (10, 20), (3, 7), "<f8")
    root = tmp_path / "view.zarr"
    _zarr_over_chunks(zarr, root, ref)
    np.save(tmp_path / "want.npy", ref[...])
    code = (
        "import sys, numpy as np, zarr\n"
        "a = zarr.open_array(sys.argv[1], mode='r')\n"
        "np.testing.assert_array_equal(a[...], np.load(sys.argv[2]))\n"
        "assert 'scifmt.codecs' in sys.modules\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONSTARTUP"}
    subprocess.run([sys.executable, "-c", code, str(root), str(tmp_path / "want.npy")],
                   check=True, env=env)  # fmt: skip


def test_hostile_chunks_raise(tmp_path):
    ref = _make(tmp_path / "a.b2nd", (9, 11, 13), (4, 5, 6), (2, 5, 3), "<i2")
    codec = codecs.B2nd(ref.chunks, ref.dtype, ref.blocks)
    raw = ref.schunk.get_chunk(0)
    size = int(np.prod(ref.chunks)) * 2
    for cut in (0, 1, 15, 16, 31, 32, len(raw) // 2, len(raw) - 1):
        with pytest.raises(codecs.B2ndError):
            codec.decode(raw[:cut])
    with pytest.raises(ValueError):
        codec.decode(b"\xff" * 64)
    # Bit flips: an error, or the chunk's size (damaged data may still decode).
    rng = np.random.default_rng(1)
    for _ in range(300):
        bad = bytearray(raw)
        bad[int(rng.integers(0, len(bad)))] ^= int(rng.integers(1, 256))
        try:
            assert len(codec.decode(bytes(bad))) == size
        except ValueError:
            pass
    # Another chunk shape, item size or block shape than the chunk's.
    for other in (codecs.B2nd((4, 8, 6), ref.dtype, ref.blocks),
                  codecs.B2nd((4, 5, 6), "<i4", ref.blocks),
                  codecs.B2nd((8, 5, 6), "|u1", ref.blocks),
                  codecs.B2nd((4, 5, 6), ref.dtype, (4, 5, 6))):  # fmt: skip
        with pytest.raises(codecs.B2ndError):
            other.decode(raw)
    # A chunk shape no chunk can have is refused before anything is allocated.
    with pytest.raises(ValueError):
        codecs.B2nd((2**31 - 1,) * 3, "<f8", (1, 1, 1)).decode(raw)
    # Outputs and inputs of the wrong size or kind.
    with pytest.raises(ValueError):
        codec.decode(raw, out=bytearray(size - 1))
    with pytest.raises(ValueError):
        codec.decode(raw, out=bytes(size))
    with pytest.raises(ValueError):
        codec.encode(bytes(size + 2))
    with pytest.raises(TypeError):
        codec.encode(object())
    with pytest.raises(TypeError):
        codec.decode(3)


@pytest.mark.parametrize("kw, exc", [
    ({"chunkshape": (0, 4)}, ValueError),
    ({"chunkshape": (-1, 4)}, ValueError),
    ({"chunkshape": (2**40, 4)}, ValueError),
    ({"chunkshape": (2.0, 4)}, TypeError),
    ({"chunkshape": "44"}, TypeError),
    ({"chunkshape": 4}, TypeError),
    ({"chunkshape": ()}, ValueError),
    ({"blockshape": (2,)}, ValueError),
    ({"blockshape": (0, 2)}, ValueError),
    ({"blockshape": (True, 2)}, TypeError),
    ({"dtype": object}, ValueError),
    ({"dtype": "U0"}, ValueError),
    ({"dtype": "not a dtype"}, TypeError),
    ({"cname": "snappy"}, ValueError),
    ({"cname": 1}, TypeError),
    ({"clevel": 10}, ValueError),
    ({"clevel": -1}, ValueError),
    ({"clevel": "5"}, TypeError),
    ({"shuffle": -1}, ValueError),
    ({"shuffle": 7}, ValueError),
    ({"shuffle": "auto"}, ValueError),
    ({"shuffle": "twist"}, ValueError),
    ({"shuffle": None}, TypeError),
])  # fmt: skip
def test_bad_arguments_raise(kw, exc):
    args = {"chunkshape": (4, 6), "dtype": "<f4", "blockshape": (2, 4), **kw}
    with pytest.raises(exc):
        codecs.B2nd(**args)


def test_configurations():
    pytest.importorskip("zarr")
    c = codecs.B2ndCodec.from_dict({"name": "b2nd", "configuration": {"blockshape": [2, 3]}})
    assert c.to_dict() == {"name": "b2nd", "configuration": {
        "blockshape": [2, 3], "endian": "little", "cname": "zstd", "clevel": 5,
        "shuffle": "shuffle"}}  # fmt: skip
    assert codecs.B2ndCodec.from_dict(c.to_dict()) == c
    for bad in ({"name": "b2nd"}, {"name": "blosc", "configuration": {"blockshape": [2]}},
                {"name": "b2nd", "configuration": {}},
                {"name": "b2nd", "configuration": {"blockshape": [2], "typesize": 4}},
                {"name": "b2nd", "configuration": {"blockshape": [2], "endian": "middle"}},
                {"name": "b2nd", "configuration": {"blockshape": [2], "clevel": 12}}):  # fmt: skip
        with pytest.raises(ValueError):
            codecs.B2ndCodec.from_dict(bad)
    with pytest.raises(ValueError):
        codecs.B2nd.from_config({"id": "b2nd", "chunkshape": [4], "dtype": "<f4"})
    with pytest.raises(ValueError):
        codecs.B2nd.from_config({"chunkshape": [4], "dtype": "<f4", "blockshape": [2],
                                 "size": 3})  # fmt: skip
    b = codecs.B2nd([4, 6], np.float32, [2, 4], cname="LZ4", shuffle="BitShuffle")
    assert repr(b) == ("B2nd(chunkshape=[4, 6], dtype='<f4', blockshape=[2, 4], cname='lz4', "
                       "clevel=5, shuffle='bitshuffle')")  # fmt: skip
    assert codecs.B2nd.from_config(b.get_config()) == b


def test_zarr_python_refuses_mismatched_arrays_and_damaged_chunks(tmp_path):
    zarr = pytest.importorskip("zarr")
    with pytest.raises(ValueError):
        zarr.create_array(store=str(tmp_path / "x.zarr"), shape=(10, 10), chunks=(5, 5),
                          dtype="<f4", serializer=codecs.B2ndCodec(blockshape=(2,)),
                          compressors=None)  # fmt: skip
    with pytest.raises(ValueError):
        zarr.create_array(store=str(tmp_path / "y.zarr"), shape=(10, 10), chunks=(5, 5),
                          dtype="<f4", serializer=codecs.B2ndCodec(blockshape=(6, 2)),
                          compressors=None)  # fmt: skip
    ref = _make(tmp_path / "a.b2nd", (37, 53), (10, 20), (3, 7), "<u4")
    root = tmp_path / "view.zarr"
    _zarr_over_chunks(zarr, root, ref)
    (root / "c" / "1" / "1").write_bytes(b"\xff" * 40)
    z = zarr.open_array(str(root), mode="r")
    with pytest.raises(Exception, match="b2nd|Blosc|chunk"):
        z[10:20, 20:40]
    # The other chunks stay readable.
    np.testing.assert_array_equal(z[:10, :], ref[:10, :])
