"""`scifmt.zarr` against the reference: numcodecs 0.16 (`numcodecs.Blosc`, C-Blosc 1.21) and
zarr-python 3 with its own `BloscCodec`.

* `Blosc` gives numcodecs' bytes for every cname x shuffle x typesize x clevel x block size
  tried (zlib and zstd with blocks of 256 KiB or more: see `assert_same_or_allowed`), and each
  side decodes the other's chunks.
* Arrays written by zarr-python with its own codec (Zarr v3, sharded and not; Zarr v2 with
  numcodecs' `Blosc`) are read by zarr-python with ours, and the other way round; every stored
  file (metadata, chunks, shards) is compared byte for byte.
* Hostile chunks (truncated, bit flips, huge size claims) raise `BloscError`, never crash.
"""

import json
import os
import pathlib
import subprocess
import sys

import numcodecs
import numcodecs.blosc
import numpy as np
import pytest
import zarr
import zarr.storage
from numcodecs.registry import codec_registry

import scifmt.blosc
import scifmt.zarr as sz
from scifmt.zarr import Blosc, BloscError

# numcodecs uses C-Blosc's global context (and its threads) from the main thread; C-Blosc 1
# lays out blocks in completion order with several threads, so its single-threaded output is
# the reference. zarr-python sets the same when it is imported.
numcodecs.blosc.use_threads = False

CNAMES = ["blosclz", "lz4", "lz4hc", "zlib", "zstd"]
SHUFFLES = [Blosc.NOSHUFFLE, Blosc.SHUFFLE, Blosc.BITSHUFFLE, Blosc.AUTOSHUFFLE]
SHUFFLE_NAMES = ["noshuffle", "shuffle", "bitshuffle"]


def data_of(dtype, n, seed=0):
    """Compressible but not trivial data of `n` items: a ramp with noise (integers), a noisy
    sine (floats), a repeating record (structured types)."""
    rng = np.random.default_rng(seed)
    dtype = np.dtype(dtype)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        v = (np.arange(n) * 3 + rng.integers(0, 8, n)) % min(int(info.max), 1 << 30)
        return v.astype(dtype)
    if dtype.kind == "f":
        return (np.sin(np.arange(n) / 50.0) * 1000 + rng.normal(0, 0.01, n)).astype(dtype)
    if dtype.kind == "b":
        return rng.integers(0, 2, n).astype(bool) | (np.arange(n) % 7 == 0)
    raw = (np.arange(n * dtype.itemsize) // 5 % 251).astype(np.uint8)
    return raw.view(dtype)


def blocksize_of(chunk):
    return int.from_bytes(bytes(chunk[8:12]), "little")


def assert_same_or_allowed(ours, ref, cname, what):
    """Our chunk equals C-Blosc 1.21's, except where the codec libraries differ: zlib (zlib-rs
    here, zlib 1.3.1 there: different deflate streams) and zstd blocks of 256 KiB and more
    (libzstd 1.5.7 here, 1.5.6 in the numcodecs wheel). Those must agree on the header fields
    that do not depend on the compressed stream (version, versionlz, typesize, nbytes,
    blocksize) and decode on both sides (checked by the callers)."""
    ours, ref = bytes(ours), bytes(ref)
    if ours == ref:
        return True
    allowed = cname == "zlib" or (cname == "zstd" and blocksize_of(ref) >= 1 << 18)
    assert allowed, f"{what}: {len(ours)} bytes, numcodecs {len(ref)} bytes"
    assert ours[:2] == ref[:2] and ours[3:12] == ref[3:12], what
    # Flags: equal apart from the memcpy bit (one deflate stream may fit, the other not).
    assert ours[2] & ~0x02 == ref[2] & ~0x02, what
    return False


# --- Blosc against numcodecs.Blosc ------------------------------------------------------


@pytest.mark.parametrize("cname", CNAMES)
def test_blosc_matches_numcodecs_byte_for_byte(cname):
    cases = exact = 0
    for dtype in ["u1", "<i2", "<i4", "<f4", "<f8", "V3", "V16", "?"]:
        for n_bytes in [0, 1, 7, 1000, 40_001, 300_000]:
            n = n_bytes // np.dtype(dtype).itemsize
            data = data_of(dtype, n)
            for shuffle in SHUFFLES:
                for clevel, blocksize in [(5, 0), (1, 0), (9, 0), (0, 0), (5, 4096), (5, 1000)]:
                    if n_bytes < 1000 and (clevel, blocksize) != (5, 0):
                        continue
                    ref_codec = numcodecs.Blosc(cname, clevel, shuffle, blocksize)
                    ours_codec = Blosc(cname, clevel, shuffle, blocksize)
                    ref = ref_codec.encode(data)
                    ours = ours_codec.encode(data)
                    what = f"{cname} {dtype} {n_bytes} B shuffle {shuffle} clevel {clevel} " \
                        f"bs {blocksize}"
                    exact += assert_same_or_allowed(ours, ref, cname, what)
                    cases += 1
                    # Each side decodes the other's chunk (numcodecs fails on empty chunks, its
                    # own too: C-Blosc returns 0 bytes decoded, which numcodecs takes for an
                    # error).
                    if data.nbytes:
                        assert bytes(ref_codec.decode(ours)) == data.tobytes(), what
                    assert ours_codec.decode(ref) == data.tobytes(), what
    assert cases == 672
    if cname in ("blosclz", "lz4", "lz4hc"):
        assert exact == cases, f"{exact} of {cases} identical"
    elif cname == "zstd":
        # Only the automatic 256 KiB blocks of the 300 000-byte inputs may differ.
        assert exact >= cases - 8 * len(SHUFFLES) * 4, f"{exact} of {cases} identical"
    print(f"{cname}: {exact} of {cases} chunks identical to numcodecs'")


@pytest.mark.parametrize("typesize", [1, 2, 3, 4, 8, 16, 255, 256, 1000])
def test_blosc_typesize_argument_matches_numcodecs(typesize):
    raw = data_of("<i4", 30_000).view(np.uint8)
    for cname in ["lz4", "blosclz", "zstd"]:
        for shuffle in SHUFFLES:
            ref = numcodecs.Blosc(cname, 5, shuffle, 0, typesize=typesize).encode(raw)
            ours = Blosc(cname, 5, shuffle, 0, typesize=typesize).encode(raw)
            assert ours == ref, (cname, shuffle, typesize)


def test_blosc_takes_every_buffer_kind_like_numcodecs():
    a = data_of("<i4", 50_000).reshape(100, 500)
    kinds = [
        a,
        np.asfortranarray(a),  # zarr v2 arrays with order="F" hand over Fortran-ordered chunks
        a.tobytes(),
        bytearray(a.tobytes()),
        memoryview(a),
        a.view("<f4"),
        a[:50],  # a contiguous slice
    ]
    for buf in kinds:
        for shuffle in SHUFFLES:
            ref = numcodecs.Blosc("lz4", 5, shuffle).encode(buf)
            assert Blosc("lz4", 5, shuffle).encode(buf) == ref, (type(buf), shuffle)
    with pytest.raises(ValueError):
        Blosc().encode(a[:, ::2])
    with pytest.raises(ValueError):
        numcodecs.Blosc().encode(a[:, ::2])


def test_blosc_output_does_not_depend_on_threads():
    data = data_of("<f4", 1_000_000)
    for cname in CNAMES:
        one = Blosc(cname, 5, Blosc.SHUFFLE, nthreads=1).encode(data)
        for nthreads in (2, 3, 0):
            assert Blosc(cname, 5, Blosc.SHUFFLE, nthreads=nthreads).encode(data) == one
        assert Blosc(cname, nthreads=2).decode(one) == data.tobytes()


def test_blosc_api_is_numcodecs_api():
    assert (Blosc.NOSHUFFLE, Blosc.SHUFFLE, Blosc.BITSHUFFLE, Blosc.AUTOSHUFFLE) == (
        numcodecs.Blosc.NOSHUFFLE, numcodecs.Blosc.SHUFFLE, numcodecs.Blosc.BITSHUFFLE,
        numcodecs.Blosc.AUTOSHUFFLE)  # fmt: skip
    assert Blosc.codec_id == numcodecs.Blosc.codec_id == "blosc"
    assert Blosc.max_buffer_size == numcodecs.Blosc.max_buffer_size
    assert isinstance(Blosc(), numcodecs.abc.Codec)
    configs = [(), ("zstd",), ("zstd", 9, -1), ("blosclz", 1, 2, 4096), ("lz4hc", 0, 0, 100, 4)]
    for args in configs:
        ours, ref = Blosc(*args), numcodecs.Blosc(*args)
        assert ours.get_config() == ref.get_config(), args
        assert repr(ours) == repr(ref), args
        assert Blosc.from_config(ref.get_config()) == ours
        config = dict(ref.get_config())
        del config["id"]
        assert Blosc.from_config(config) == ours
        assert numcodecs.get_codec(ours.get_config()) == ref
    assert Blosc("zstd") != Blosc("lz4")
    with pytest.raises(ValueError, match="typesize"):
        Blosc(typesize=0)


def memory_of(buf):
    """The bytes of a C- or Fortran-contiguous buffer in memory order."""
    a = np.asarray(buf)
    return (a if a.flags.c_contiguous else a.T).tobytes()


def test_blosc_decode_into_out_like_numcodecs():
    data = data_of("<i2", 20_000).reshape(100, 200)
    chunk = Blosc("zstd", 5, Blosc.SHUFFLE).encode(data)
    for make in (lambda: np.empty_like(data), lambda: np.empty((200, 100), "<i2", order="F"),
                 lambda: bytearray(data.nbytes), lambda: np.empty(data.nbytes + 10, np.uint8)):
        out_ours, out_ref = make(), make()
        assert Blosc().decode(chunk, out=out_ours) is out_ours
        numcodecs.Blosc().decode(chunk, out=out_ref)
        # (The tail of a larger `out` is left as it was: uninitialized here.)
        assert memory_of(out_ours)[: data.nbytes] == memory_of(out_ref)[: data.nbytes]
        assert memory_of(out_ours)[: data.nbytes] == data.tobytes()
    with pytest.raises(ValueError):
        Blosc().decode(chunk, out=np.empty(data.size - 1, "<i2"))
    with pytest.raises(ValueError):
        numcodecs.Blosc().decode(chunk, out=np.empty(data.size - 1, "<i2"))
    with pytest.raises(ValueError):
        Blosc().decode(chunk, out=bytes(data.nbytes))


def test_blosc_bad_parameters_raise_value_error():
    data = data_of("<i4", 1000)
    for codec in (Blosc("snappy"), Blosc("nope"), Blosc(shuffle=3), Blosc(shuffle=-2), Blosc(clevel=10),
                  Blosc(clevel=-1)):
        with pytest.raises(ValueError):
            codec.encode(data)
    with pytest.raises(TypeError):
        Blosc().encode(np.array([object()] * 3))
    with pytest.raises(TypeError):
        Blosc().encode(12)


# --- hostile chunks -------------------------------------------------------------------


def test_hostile_chunks_raise_blosc_error():
    data = data_of("<i4", 30_000)
    rng = np.random.default_rng(7)
    for cname in CNAMES:
        for shuffle in (Blosc.NOSHUFFLE, Blosc.SHUFFLE, Blosc.BITSHUFFLE):
            chunk = bytearray(Blosc(cname, 5, shuffle, 4096).encode(data))
            codec = Blosc(cname)
            # Truncated anywhere: always an error.
            for cut in list(range(0, 40)) + list(rng.integers(40, len(chunk), 40)):
                with pytest.raises(BloscError):
                    codec.decode(bytes(chunk[:cut]))
            # Flipped bits: an error or some bytes of the right size, never a crash.
            for _ in range(150):
                bad = bytearray(chunk)
                pos = int(rng.integers(0, len(bad)))
                bad[pos] ^= 1 << int(rng.integers(0, 8))
                try:
                    out = codec.decode(bytes(bad))
                except BloscError:
                    continue
                assert isinstance(out, bytes)
    assert issubclass(BloscError, ValueError)
    assert BloscError is scifmt.blosc.BloscError


def test_huge_size_claims_are_refused_before_allocating():
    chunk = bytearray(Blosc("lz4").encode(data_of("<i4", 1000)))
    for nbytes in (2**31 - 1, 2**32 - 1):
        bad = bytearray(chunk)
        bad[4:8] = nbytes.to_bytes(4, "little")
        with pytest.raises(BloscError):
            Blosc().decode(bytes(bad))
        with pytest.raises(BloscError):
            Blosc().decode(bytes(bad), out=np.empty(4000, np.uint8))
    # Random junk of every small length.
    rng = np.random.default_rng(3)
    for n in range(64):
        junk = rng.integers(0, 256, n).astype(np.uint8).tobytes()
        try:
            Blosc().decode(junk)
        except BloscError:
            pass


# --- zarr-python, Zarr v3 -------------------------------------------------------------


@pytest.fixture
def ours_for_v3():
    """zarr-python configured to use scifmt.zarr.BloscCodec for `blosc`."""
    with zarr.config.set({"codecs.blosc": "scifmt.zarr.BloscCodec"}):
        yield


def files_of(root):
    root = pathlib.Path(root)
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def blosc_codecs_of(array):
    """The blosc codec objects of an opened array (inside sharding too)."""
    found = []

    def walk(codecs):
        for c in codecs:
            if isinstance(c, zarr.codecs.BloscCodec):
                found.append(c)
            walk(getattr(c, "codecs", ()))

    walk(array.metadata.codecs)
    return found


def write_v3(path, data, cname, shuffle, sharded):
    # The codec as metadata (a dict): zarr-python picks the configured implementation. (A codec
    # object is used as it is.)
    codec = {"name": "blosc", "configuration": {"cname": cname, "clevel": 5, "shuffle": shuffle}}
    a = zarr.create_array(
        zarr.storage.LocalStore(path), shape=data.shape, dtype=data.dtype,
        chunks=(8, 10) if sharded else (16, 20), shards=(16, 20) if sharded else None,
        compressors=[codec], fill_value=0,
    )  # fmt: skip
    a[...] = data
    return a


V3_DTYPES = ["u1", "<i2", "<u4", "<f4", "<f8", "<i8"]


@pytest.mark.parametrize("sharded", [False, True], ids=["chunks", "sharded"])
@pytest.mark.parametrize("cname", CNAMES)
def test_zarr_v3_arrays_both_ways(cname, sharded, tmp_path, ours_for_v3):
    identical = total = 0
    for dtype in V3_DTYPES:
        data = data_of(dtype, 45 * 55).reshape(45, 55)  # edge chunks in both dimensions
        for shuffle in SHUFFLE_NAMES:
            case = f"{dtype}-{shuffle}"
            with zarr.config.set({"codecs.blosc": "zarr.codecs.blosc.BloscCodec"}):
                ref = write_v3(tmp_path / f"ref-{case}", data, cname, shuffle, sharded)
                assert not any(isinstance(c, sz.BloscCodec) for c in blosc_codecs_of(ref))
            ours = write_v3(tmp_path / f"ours-{case}", data, cname, shuffle, sharded)
            ours_codecs = blosc_codecs_of(ours)
            assert ours_codecs and all(isinstance(c, sz.BloscCodec) for c in ours_codecs)
            # zarr-python with our codec reads the reference array, and the other way round.
            np.testing.assert_array_equal(zarr.open_array(tmp_path / f"ref-{case}", mode="r")[...], data)
            with zarr.config.set({"codecs.blosc": "zarr.codecs.blosc.BloscCodec"}):
                back = zarr.open_array(tmp_path / f"ours-{case}", mode="r")
                assert not any(isinstance(c, sz.BloscCodec) for c in blosc_codecs_of(back))
                np.testing.assert_array_equal(back[...], data)
            # The same files, byte for byte (metadata included).
            ref_files = files_of(tmp_path / f"ref-{case}")
            our_files = files_of(tmp_path / f"ours-{case}")
            assert ref_files.keys() == our_files.keys(), case
            assert ref_files["zarr.json"] == our_files["zarr.json"], case
            for name in ref_files:
                if name == "zarr.json":
                    continue
                total += 1
                if ref_files[name] == our_files[name]:
                    identical += 1
                elif sharded:
                    # A shard holds blosc chunks and an index: allowed only where the chunks may
                    # differ (zlib; see assert_same_or_allowed).
                    assert cname == "zlib", f"{case} {name}"
                else:
                    assert_same_or_allowed(our_files[name], ref_files[name], cname, f"{case} {name}")
    assert total >= len(V3_DTYPES) * len(SHUFFLE_NAMES) * 4
    if cname != "zlib":
        assert identical == total, f"{identical} of {total} files identical"


def test_zarr_v3_codec_metadata_and_tuning(tmp_path, ours_for_v3):
    # typesize/shuffle left open are chosen from the data type, as zarr-python does.
    for dtype, shuffle in (("u1", "bitshuffle"), ("<f8", "shuffle")):
        a = zarr.create_array(tmp_path / dtype, shape=(100,), chunks=(30,), dtype=dtype,
                              compressors=[sz.BloscCodec(cname="lz4")])
        a[...] = data_of(dtype, 100)
        meta = json.loads((tmp_path / dtype / "zarr.json").read_text())
        blosc_meta = meta["codecs"][-1]
        assert blosc_meta == {"name": "blosc", "configuration": {
            "typesize": np.dtype(dtype).itemsize, "cname": "lz4", "clevel": 5, "shuffle": shuffle,
            "blocksize": 0}}  # fmt: skip
    c = sz.BloscCodec(cname="zstd", clevel=3, shuffle="bitshuffle", typesize=4, blocksize=4096)
    assert c.to_dict() == zarr.codecs.BloscCodec(cname="zstd", clevel=3, shuffle="bitshuffle",
                                                 typesize=4, blocksize=4096).to_dict()
    assert sz.BloscCodec.from_dict(c.to_dict()) == c
    assert f"{sz.BloscCodec.__module__}.{sz.BloscCodec.__qualname__}" == "scifmt.zarr.BloscCodec"


def test_zarr_v3_explicit_blocksize_and_typesize(tmp_path, ours_for_v3):
    data = data_of("<f4", 64 * 64).reshape(64, 64)
    for cname in ("lz4", "blosclz", "zstd"):
        for blocksize, typesize in ((1000, 4), (4096, 2), (0, 8)):
            paths = []
            for impl in ("zarr.codecs.blosc.BloscCodec", "scifmt.zarr.BloscCodec"):
                with zarr.config.set({"codecs.blosc": impl}):
                    p = tmp_path / f"{cname}-{blocksize}-{typesize}-{impl}"
                    codec = {"name": "blosc", "configuration": {
                        "cname": cname, "shuffle": "shuffle", "typesize": typesize,
                        "blocksize": blocksize}}  # fmt: skip
                    a = zarr.create_array(p, shape=data.shape, chunks=(32, 64), dtype=data.dtype,
                                          compressors=[codec])
                    a[...] = data
                    paths.append(p)
            assert files_of(paths[0]) == files_of(paths[1])


def test_zarr_finds_the_codec_through_its_entry_point():
    # A fresh interpreter that never imports scifmt.zarr itself: the configuration alone
    # selects our codec (zarr-python loads it from the `zarr.codecs` entry point).
    code = (
        "import zarr, numpy as np\n"
        "zarr.config.set({'codecs.blosc': 'scifmt.zarr.BloscCodec'})\n"
        "a = zarr.create_array({}, shape=(10,), chunks=(5,), dtype='i4',"
        " compressors=[{'name': 'blosc', 'configuration': {'cname': 'lz4'}}])\n"
        "a[...] = np.arange(10)\n"
        "c = a.metadata.codecs[-1]\n"
        "print(type(c).__module__ + '.' + type(c).__qualname__, list(a[...]))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    assert out.stdout.split()[0] == "scifmt.zarr.BloscCodec", out.stdout
    assert "[0, 1, 2, 3, 4, 5, 6, 7, 8, 9]" in out.stdout.replace("np.int32(", "").replace(")", "")


def test_zarr_v3_hostile_chunk_raises(tmp_path, ours_for_v3):
    data = data_of("<i4", 40 * 40).reshape(40, 40)
    a = zarr.create_array(tmp_path / "a", shape=data.shape, chunks=(20, 20), dtype=data.dtype,
                          compressors=[sz.BloscCodec(cname="lz4")])
    a[...] = data
    chunk_file = tmp_path / "a" / "c" / "0" / "1"
    good = chunk_file.read_bytes()
    for bad in (good[:20], good[:-1], b"\x02\x01\x13\x04" + (2**31 - 1).to_bytes(4, "little") + good[8:],
                os.urandom(64)):
        chunk_file.write_bytes(bad)
        b = zarr.open_array(tmp_path / "a", mode="r")
        with pytest.raises(BloscError):
            b[...]
        np.testing.assert_array_equal(b[:20, :20], data[:20, :20])  # other chunks still read


# --- zarr-python, Zarr v2 (numcodecs compressor) --------------------------------------


@pytest.fixture
def numcodecs_blosc():
    """Restores numcodecs' own `blosc` after a test that registers ours."""
    saved = codec_registry.get("blosc")
    yield
    codec_registry["blosc"] = saved


def write_v2(path, data, compressor, order="C"):
    a = zarr.create_array(zarr.storage.LocalStore(path), shape=data.shape, dtype=data.dtype,
                          chunks=(16, 20), zarr_format=2, compressors=compressor, order=order,
                          fill_value=0)
    a[...] = data
    return a


@pytest.mark.parametrize("cname", CNAMES)
def test_zarr_v2_arrays_both_ways(cname, tmp_path, numcodecs_blosc):
    identical = total = 0
    for dtype in ["u1", "<i2", "<f4", "<f8", ">i4"]:
        data = data_of(dtype, 45 * 55).reshape(45, 55)
        for shuffle in SHUFFLES:
            for order in ("C", "F"):
                case = f"{dtype}-{shuffle}-{order}"
                codec_registry["blosc"] = numcodecs.Blosc
                write_v2(tmp_path / f"ref-{case}", data, numcodecs.Blosc(cname, 5, shuffle), order)
                write_v2(tmp_path / f"ours-{case}", data, Blosc(cname, 5, shuffle), order)
                # numcodecs' Blosc reads ours ...
                back = zarr.open_array(tmp_path / f"ours-{case}", mode="r")
                assert type(back.metadata.compressor) is numcodecs.Blosc
                np.testing.assert_array_equal(back[...], data)
                # ... and ours, registered in numcodecs, reads numcodecs'.
                codec_registry["blosc"] = Blosc
                back = zarr.open_array(tmp_path / f"ref-{case}", mode="r")
                assert type(back.metadata.compressor) is Blosc
                np.testing.assert_array_equal(back[...], data)
                ref_files = files_of(tmp_path / f"ref-{case}")
                our_files = files_of(tmp_path / f"ours-{case}")
                assert ref_files.keys() == our_files.keys()
                assert ref_files[".zarray"] == our_files[".zarray"], case
                for name in ref_files:
                    if name.startswith("."):
                        continue
                    total += 1
                    identical += assert_same_or_allowed(our_files[name], ref_files[name], cname,
                                                        f"{case} {name}")
    if cname != "zlib":
        assert identical == total, f"{identical} of {total} chunk files identical"


def test_zarr_v2_hostile_chunk_raises(tmp_path, numcodecs_blosc):
    codec_registry["blosc"] = Blosc
    data = data_of("<f8", 30 * 30).reshape(30, 30)
    write_v2(tmp_path / "a", data, Blosc("zstd"))
    (tmp_path / "a" / "1.0").write_bytes(b"\x02\x01\x01\x08" + b"\xff" * 12)
    b = zarr.open_array(tmp_path / "a", mode="r")
    with pytest.raises(BloscError):
        b[...]
    np.testing.assert_array_equal(b[:16, :20], data[:16, :20])


def test_importing_scifmt_zarr_leaves_numcodecs_alone():
    # Importing the module neither imports zarr nor replaces numcodecs' codec.
    code = (
        "import sys, numcodecs, scifmt.zarr\n"
        "assert 'zarr' not in sys.modules, 'zarr imported'\n"
        "assert numcodecs.get_codec({'id': 'blosc'}).__class__ is numcodecs.Blosc\n"
        "print('ok')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    assert out.stdout.strip() == "ok"


def test_codecs_pickle():
    # Dask and multiprocessing ship codecs (and arrays holding them) to other processes.
    import pickle

    codec = Blosc("zstd", 3, Blosc.BITSHUFFLE, 4096, typesize=4)
    back = pickle.loads(pickle.dumps(codec))
    assert back == codec and back._typesize == 4
    data = data_of("<i4", 10_000)
    assert back.encode(data) == codec.encode(data)
    v3 = sz.BloscCodec(cname="lz4", clevel=7, shuffle="shuffle", typesize=2)
    back = pickle.loads(pickle.dumps(v3))
    assert type(back) is sz.BloscCodec and back == v3
