"""scifmt.b2nd against python-blosc2 (frames both ways), numpy slicing and the fixtures."""

import hashlib
import json

import numpy as np
import pytest

import scifmt.b2nd as b2nd

blosc2 = pytest.importorskip("blosc2")

DTYPES = ["|u1", "<i2", "<u4", "<i8", "<f4", "<f8", ">f8", ">i4", "<c8", "|b1",
          [("a", "<i4"), ("b", "<f8")]]
# (shape, chunks, blocks): 1-D .. 4-D, edge chunks everywhere (shapes not multiples of chunks,
# chunks not multiples of blocks).
GEOMETRIES = [
    ((1000,), (300,), (64,)),
    ((37, 53), (10, 20), (3, 7)),
    ((9, 11, 13), (4, 5, 6), (2, 5, 3)),
    ((5, 6, 7, 8), (2, 3, 4, 5), (1, 2, 3, 5)),
    ((4, 1, 6), (4, 1, 6), (4, 1, 6)),
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


def _random_keys(shape, rng, count):
    keys = []
    for _ in range(count):
        key = []
        for n in shape:
            kind = rng.integers(0, 4)
            if kind == 0:
                key.append(int(rng.integers(-n, n)))
            elif kind == 1:
                a, b = sorted(rng.integers(-n - 2, n + 3, 2))
                key.append(slice(int(a), int(b)))
            elif kind == 2:
                step = int(rng.choice([-3, -2, -1, 1, 2, 3, 5]))
                a = int(rng.integers(-n, n + 1))
                b = int(rng.integers(-n, n + 1))
                key.append(slice(a, b, step))
            else:
                key.append(slice(None))
        # drop trailing dims or use an Ellipsis sometimes
        r = rng.integers(0, 3)
        if r == 1 and len(key) > 1:
            key = key[: int(rng.integers(1, len(key)))]
        elif r == 2 and len(key) > 1:
            i = int(rng.integers(0, len(key)))
            key = key[:i] + [Ellipsis] + key[i + 1 :]
        keys.append(tuple(key))
    return keys


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_scifmt_frames_open_in_blosc2(tmp_path, dtype):
    for g, (shape, chunks, blocks) in enumerate(GEOMETRIES):
        a = _values(shape, dtype, g)
        p = tmp_path / f"a{g}.b2nd"
        b2nd.save(a, p, chunks, blocks, codec="lz4", clevel=5,
                  meta={"extra": {"k": [1, 2, 3]}}, vlmeta={"note": "hi", "n": {"x": 1.5, "b": b"\x00\x01"}})
        ref = blosc2.open(str(p))
        assert ref.shape == shape and ref.chunks == chunks and ref.blocks == blocks
        assert ref.dtype == a.dtype
        np.testing.assert_array_equal(ref[...], a)
        assert ref.schunk.meta["extra"] == {"k": [1, 2, 3]}
        assert ref.schunk.vlmeta["note"] == "hi"
        assert ref.schunk.vlmeta["n"] == {"x": 1.5, "b": b"\x00\x01"}
        ours = b2nd.open(p)
        np.testing.assert_array_equal(ours[...], a)
        assert ours.meta["b2nd"] == ref.schunk.meta["b2nd"]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_blosc2_frames_read_and_sliced(tmp_path, dtype):
    rng = np.random.default_rng(42)
    for g, (shape, chunks, blocks) in enumerate(GEOMETRIES):
        a = _values(shape, dtype, 10 + g)
        p = tmp_path / f"r{g}.b2nd"
        ref = blosc2.asarray(a, urlpath=str(p), mode="w", chunks=chunks, blocks=blocks,
                             meta={"m1": [1, "two", 3.0]})
        ref.schunk.vlmeta["v"] = {"a": 1, "b": [1.5, "s", b"x", None, True]}
        del ref
        arr = b2nd.open(p)
        assert arr.shape == shape and arr.chunks == chunks and arr.blocks == blocks
        assert arr.dtype == a.dtype and arr.ndim == len(shape) and len(arr) == shape[0]
        assert arr.meta["m1"] == [1, "two", 3.0]
        assert set(arr.meta) == {"b2nd", "m1"}
        assert arr.vlmeta.to_dict() == {"v": {"a": 1, "b": [1.5, "s", b"x", None, True]}}
        np.testing.assert_array_equal(arr[...], a)
        np.testing.assert_array_equal(arr.to_numpy(), a)
        np.testing.assert_array_equal(np.asarray(arr), a)
        for key in _random_keys(shape, rng, 60):
            got = arr[key]
            want = a[key]
            assert got.shape == want.shape, key
            np.testing.assert_array_equal(got, want, err_msg=str(key))


def test_slicing_many_random_keys_4d(tmp_path):
    a = np.arange(6 * 7 * 8 * 9, dtype="<i4").reshape(6, 7, 8, 9)
    p = tmp_path / "s.b2nd"
    b2nd.save(a, p, chunks=(4, 3, 5, 4), blocks=(2, 3, 2, 3), codec="zstd")
    arr = b2nd.open(p)
    rng = np.random.default_rng(7)
    for key in _random_keys(a.shape, rng, 500):
        np.testing.assert_array_equal(arr[key], a[key], err_msg=str(key))
    # advanced keys fall back to numpy on the full array
    np.testing.assert_array_equal(arr[[0, 2], 1], a[[0, 2], 1])
    np.testing.assert_array_equal(arr[None, 1], a[None, 1])
    np.testing.assert_array_equal(arr[a > 100], a[a > 100])
    assert arr[1, 2, 3, 4] == a[1, 2, 3, 4]
    for bad in [(6,), (0, -8), (0, 0, 0, 0, 0), (Ellipsis, Ellipsis)]:
        with pytest.raises(IndexError):
            arr[bad]


def test_only_touched_chunks_are_read(tmp_path):
    """Corrupt one chunk: slices not touching it still read, slices touching it fail."""
    a = np.arange(40 * 50, dtype="<f8").reshape(40, 50)
    p = tmp_path / "c.b2nd"
    b2nd.save(a, p, chunks=(10, 25), blocks=(5, 5), codec="lz4", filters=[])
    arr = b2nd.open(p)
    offsets = arr._chunk_offsets()
    assert len(offsets) == 8 and all(o is not None for o in offsets)
    raw = bytearray(p.read_bytes())
    bad = 5  # chunk (2, 1): rows 20..30, cols 25..50
    raw[offsets[bad]] = 0xFF  # version byte: not a Blosc chunk any more
    raw[offsets[bad] + 3] = 0x00  # typesize 0
    p.write_bytes(bytes(raw))
    arr = b2nd.open(p)
    np.testing.assert_array_equal(arr[:20], a[:20])
    np.testing.assert_array_equal(arr[20:30, :25], a[20:30, :25])
    np.testing.assert_array_equal(arr[30:, 25:], a[30:, 25:])
    with pytest.raises(b2nd.B2ndError, match="c.b2nd"):
        arr[25, 30]
    # steps that skip the corrupt chunk never read it (rows 0, 15, 30; chunk rows 0, 1, 3)
    np.testing.assert_array_equal(arr[::15, 30], a[::15, 30])
    np.testing.assert_array_equal(arr[38::-36, 24:40:7], a[38::-36, 24:40:7])
    with pytest.raises(b2nd.B2ndError):
        arr[::20, 30]
    with pytest.raises(b2nd.B2ndError):
        arr[...]


def test_fixtures(testdata):
    entries = json.loads((testdata / "blosc" / "manifest.json").read_text())["entries"]
    n = n_dtype = 0
    for e in entries:
        if e["kind"] != "b2nd":
            continue
        arr = b2nd.open(testdata / "blosc" / e["path"])
        assert list(arr.shape) == e["shape"] and list(arr.chunks) == e["chunks"]
        assert list(arr.blocks) == e["blocks"] and arr.dtype.str == e["dtype"]
        whole = arr[...]
        assert hashlib.sha256(whole.tobytes()).hexdigest() == e["sha256_array_c_order"], e["path"]
        assert arr.meta.raw("b2nd").hex() == e["metalayers_raw_hex"]["b2nd"]
        for name, hexval in e.get("vlmetalayers_decompressed_hex", {}).items():
            assert arr.vlmeta.raw(name).hex() == hexval
        if "values" in e:
            # one array per dtype (big-endian ones included), made by the numpy expression `values`
            want = eval(e["values"], {"np": np})
            assert whole.dtype.str == want.dtype.str == e["dtype"], e["path"]
            np.testing.assert_array_equal(whole, want)
            for r in e["regions"]:
                box = tuple(slice(lo, hi) for lo, hi in zip(r["start"], r["stop"]))
                part = arr[box]
                assert hashlib.sha256(part.tobytes()).hexdigest() == r["sha256_c_order"], (e["path"], r)
                le = part.astype(part.dtype.newbyteorder("<"))
                assert hashlib.sha256(le.tobytes(order="F")).hexdigest() == r["sha256_le_f_order"], (e["path"], r)
            n_dtype += 1
        n += 1
    assert (n, n_dtype) == (13, 9)  # the sparse b2nd array has no `values` (written_values)
    f4 = b2nd.open(testdata / "blosc" / "frames" / "b2nd_f4_20x30.b2nd")
    assert f4.vlmeta["note"] == "hi"
    np.testing.assert_array_equal(f4[3:5, 2:6], np.arange(600, dtype="<f4").reshape(20, 30)[3:5, 2:6])


def test_default_chunks_and_compression(tmp_path):
    a = np.arange(300 * 400 * 20, dtype=np.float32).reshape(300, 400, 20)
    p = tmp_path / "d.b2nd"
    b2nd.save(a, p)
    arr = b2nd.open(p)
    assert np.prod(arr.chunks) * 4 <= 4 << 20 and np.prod(arr.blocks) * 4 <= 128 << 10
    assert arr.cparams["codec"] == b2nd.Codec.ZSTD
    np.testing.assert_array_equal(blosc2.open(str(p))[...], a)
    assert arr.frame_len < a.nbytes
    # non-contiguous input and Fortran order are copied into C order
    f = np.asfortranarray(a[:, ::2, 3])
    b2nd.save(f, tmp_path / "f.b2nd", chunks=(100, 50), blocks=(10, 50))
    np.testing.assert_array_equal(b2nd.open(tmp_path / "f.b2nd")[...], f)
    # empty arrays
    e = np.zeros((0, 5), np.int16)
    b2nd.save(e, tmp_path / "e.b2nd", chunks=(4, 5), blocks=(2, 5))
    assert b2nd.open(tmp_path / "e.b2nd")[...].shape == (0, 5)
    assert blosc2.open(str(tmp_path / "e.b2nd")).shape == (0, 5)


def test_errors_name_the_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope.b2nd"):
        b2nd.open(tmp_path / "nope.b2nd")
    # An existing directory that is no sparse frame is said to be one, not reported missing.
    (tmp_path / "plain_dir").mkdir()
    with pytest.raises(b2nd.B2ndError, match="plain_dir.*not a sparse frame") as e:
        b2nd.open(tmp_path / "plain_dir")
    assert not isinstance(e.value, FileNotFoundError)
    junk = tmp_path / "junk.b2nd"
    junk.write_bytes(b"not a frame at all" * 10)
    with pytest.raises(b2nd.B2ndError, match="junk.b2nd"):
        b2nd.open(junk)
    plain = tmp_path / "plain.b2frame"
    blosc2.SChunk(chunksize=400, data=np.arange(1000, dtype=np.int32), urlpath=str(plain), mode="w")
    with pytest.raises(b2nd.B2ndError, match="not a b2nd array"):
        b2nd.open(plain)
    a = np.arange(100.0)
    p = tmp_path / "ok.b2nd"
    b2nd.save(a, p, chunks=(10,), blocks=(5,))
    # truncated files
    raw = p.read_bytes()
    for cut in (10, len(raw) // 2, len(raw) - 3):
        (tmp_path / "t.b2nd").write_bytes(raw[:cut])
        with pytest.raises(b2nd.B2ndError, match="t.b2nd"):
            b2nd.open(tmp_path / "t.b2nd")[...]
    # limits: a read larger than max_output_bytes is refused before allocating
    with pytest.raises(b2nd.B2ndError, match="limit"):
        b2nd.open(p, max_output_bytes=100)[...]
    assert b2nd.open(p, max_output_bytes=100)[:10].tolist() == list(range(10))
    with pytest.raises(KeyError):
        b2nd.open(p).vlmeta["missing"]


def test_bad_save_arguments(tmp_path):
    a = np.arange(100.0).reshape(10, 10)
    p = tmp_path / "x.b2nd"
    for kw in [dict(chunks=(0, 5)), dict(chunks=(5,)), dict(chunks=(5, 5), blocks=(6, 5)),
               dict(chunks=(-1, 5)), dict(chunks=(5, 5), blocks=(5,)), dict(clevel=12),
               dict(codec=77), dict(filters=[9])]:
        with pytest.raises((b2nd.B2ndError, ValueError, OverflowError)):
            b2nd.save(a, p, **kw)
    with pytest.raises(TypeError):
        b2nd.save(np.array([object()]), p)
    with pytest.raises(TypeError):
        b2nd.save(a, p, vlmeta={"x": object()})
    with pytest.raises((b2nd.B2ndError, ValueError, OverflowError)):
        b2nd.save(a, p, chunks=(2**40, 2**40), blocks=(2**20, 2**20))
    assert not p.exists()


def test_corrupt_frames_raise_never_crash(tmp_path):
    a = np.arange(30 * 40, dtype="<i4").reshape(30, 40)
    p = tmp_path / "f.b2nd"
    b2nd.save(a, p, chunks=(10, 16), blocks=(5, 8), codec="zstd", vlmeta={"k": [1, 2]})
    raw = p.read_bytes()
    rng = np.random.default_rng(3)
    q = tmp_path / "g.b2nd"
    outcomes = {"error": 0, "read": 0}
    for _ in range(300):
        b = bytearray(raw)
        for pos in rng.integers(0, len(b), int(rng.integers(1, 4))):
            b[pos] = int(rng.integers(0, 256))
        q.write_bytes(bytes(b))
        try:
            arr = b2nd.open(q)
            arr[...]
            arr[3:17, 5]
            arr.vlmeta.to_dict()
            arr.meta.to_dict()
            outcomes["read"] += 1
        except (b2nd.B2ndError, KeyError, IndexError, ValueError, TypeError):
            outcomes["error"] += 1
    assert outcomes["error"] > 0 and sum(outcomes.values()) == 300


def test_concurrent_reads_from_threads(tmp_path):
    from concurrent.futures import ThreadPoolExecutor

    a = np.arange(64 * 64 * 8, dtype="<f8").reshape(64, 64, 8)
    p = tmp_path / "t.b2nd"
    b2nd.save(a, p, chunks=(16, 16, 8), blocks=(4, 8, 8), codec="lz4")
    arr = b2nd.open(p)
    keys = [(slice(i, i + 20), slice(None, None, 3), i % 8) for i in range(40)]
    with ThreadPoolExecutor(4) as ex:
        results = list(ex.map(lambda k: arr[k], keys))
    for k, r in zip(keys, results):
        np.testing.assert_array_equal(r, a[k])


def test_sparse_frames_from_blosc2(tmp_path):
    """python-blosc2's sparse frames (a directory of chunk files) open too."""
    a = np.arange(30 * 40, dtype="<i2").reshape(30, 40)
    p = tmp_path / "sp.b2nd"
    blosc2.asarray(a, urlpath=str(p), mode="w", contiguous=False, chunks=(10, 16), blocks=(5, 8))
    assert p.is_dir()
    arr = b2nd.open(p)
    np.testing.assert_array_equal(arr[...], a)
    np.testing.assert_array_equal(arr[3:27:4, -7], a[3:27:4, -7])
    np.testing.assert_array_equal(arr[::25, ::17], a[::25, ::17])


def test_cframes_both_ways():
    a = np.arange(7 * 9 * 11, dtype="<u2").reshape(7, 9, 11)
    ours = b2nd.to_cframe(a, (4, 5, 6), (2, 5, 3), codec="lz4", vlmeta={"k": "v"})
    assert isinstance(ours, bytes)
    ref = blosc2.ndarray_from_cframe(ours)
    np.testing.assert_array_equal(ref[...], a)
    assert ref.schunk.vlmeta["k"] == "v"
    theirs = blosc2.asarray(a, chunks=(3, 9, 4), blocks=(1, 3, 4)).to_cframe()
    arr = b2nd.from_cframe(theirs)
    assert arr.path == "<cframe>" and arr.chunks == (3, 9, 4)
    np.testing.assert_array_equal(arr[...], a)
    np.testing.assert_array_equal(arr[2:6:3, ::-2, 5], a[2:6:3, ::-2, 5])
    np.testing.assert_array_equal(b2nd.from_cframe(memoryview(ours))[...], a)
    with pytest.raises(b2nd.B2ndError, match="<cframe>"):
        b2nd.from_cframe(ours[: len(ours) // 2])
    with pytest.raises(TypeError):
        b2nd.save(a, "/nonexistent-dir/x.b2nd", codecc="lz4")


def test_pickle_reopens(tmp_path):
    import pickle

    a = np.arange(100, dtype="<i8").reshape(10, 10)
    p = tmp_path / "p.b2nd"
    b2nd.save(a, p, chunks=(5, 5), blocks=(5, 5))
    arr = pickle.loads(pickle.dumps(b2nd.open(p)))
    np.testing.assert_array_equal(arr[2:7, 3], a[2:7, 3])
    with pytest.raises(TypeError):
        pickle.dumps(b2nd.from_cframe(b2nd.to_cframe(a)))


def test_dask_from_array(tmp_path):
    da = pytest.importorskip("dask.array")
    a = np.arange(40 * 30 * 6, dtype="<f4").reshape(40, 30, 6)
    p = tmp_path / "d.b2nd"
    b2nd.save(a, p, chunks=(16, 16, 6), blocks=(4, 8, 6))
    arr = b2nd.open(p)
    d = da.from_array(arr, chunks=arr.chunks)
    np.testing.assert_array_equal(d.compute(scheduler="threads"), a)
    np.testing.assert_array_equal(d[5:33:2, ::-1, 3].compute(scheduler="processes"), a[5:33:2, ::-1, 3])
    assert float(d.astype("f8").sum().compute()) == float(a.sum(dtype=np.float64))
