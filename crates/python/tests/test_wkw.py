"""scifmt.wkw against the reference `wkw` package (PyPI wkw 1.1.24) and its fixtures."""

import hashlib
import json
import os
import pickle
import shutil
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import scifmt.wkw as wkw
import scifmt.wkw.wkw as wkw_module

ref = pytest.importorskip("wkw", reason="the reference package wkw==1.1.24 is needed")

VOXEL_TYPES = [
    np.uint8,
    np.uint16,
    np.uint32,
    np.uint64,
    np.float32,
    np.float64,
    np.int8,
    np.int16,
    np.int32,
    np.int64,
]
BLOCK_TYPES = [1, 2, 3]  # raw, LZ4, LZ4HC
# block_len 8, file_len 2: a file is 16³ voxels, so small boxes cross files.
BLOCK_LEN, FILE_LEN = 8, 2
FILE_VX = BLOCK_LEN * FILE_LEN


def make_data(voxel_type, channels, shape, seed=0):
    rng = np.random.default_rng(seed)
    dt = np.dtype(voxel_type)
    full = (channels,) + tuple(shape)
    if dt.kind == "f":
        return (rng.standard_normal(full) * 1000).astype(dt)
    info = np.iinfo(dt)
    return rng.integers(info.min, info.max, size=full, dtype=dt, endpoint=True)


def in_order(data, order):
    return np.asfortranarray(data) if order == "F" else np.ascontiguousarray(data)


def header(mod, voxel_type, channels, block_type):
    return mod.Header(
        voxel_type,
        num_channels=channels,
        block_len=BLOCK_LEN,
        file_len=FILE_LEN,
        block_type=block_type,
    )


# ---- cross-checks with the reference, both ways -------------------------------------------


@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize("block_type", BLOCK_TYPES)
@pytest.mark.parametrize("channels", [1, 3])
@pytest.mark.parametrize("voxel_type", VOXEL_TYPES, ids=lambda t: np.dtype(t).name)
def test_written_by_us_read_by_reference(tmp_path, voxel_type, channels, block_type, order):
    root = str(tmp_path / "ds")
    # Unaligned and crossing files, also in compressed datasets (which the reference refuses).
    off, shape = (5, 13, 30), (20, 7, 19)
    data = make_data(voxel_type, channels, shape)
    with wkw.Dataset.create(root, header(wkw, voxel_type, channels, block_type)) as ds:
        ds.write(off, in_order(data, order))
    with ref.Dataset.open(root) as r:
        assert r.header.voxel_type == voxel_type
        assert r.header.num_channels == channels
        assert r.header.block_type == block_type
        got = r.read(off, shape)
        np.testing.assert_array_equal(got, data)
        around = r.read((0, 0, 16), (32, 32, 64))
        assert around.sum(dtype=np.float64) == pytest.approx(
            data.sum(dtype=np.float64), rel=1e-9
        )
    if channels == 1:
        # 3-D input of a one-channel dataset.
        with wkw.Dataset.open(root) as ds:
            ds.write((40, 0, 0), in_order(data[0], order))
        with ref.Dataset.open(root) as r:
            np.testing.assert_array_equal(r.read((40, 0, 0), shape), data)


@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize("block_type", BLOCK_TYPES)
@pytest.mark.parametrize("channels", [1, 2])
@pytest.mark.parametrize("voxel_type", VOXEL_TYPES, ids=lambda t: np.dtype(t).name)
def test_written_by_reference_read_by_us(tmp_path, voxel_type, channels, block_type, order):
    root = str(tmp_path / "ds")
    # The reference needs whole files in compressed datasets: write two files along x.
    off = (FILE_VX, 0, FILE_VX) if block_type != 1 else (3, 17, 9)
    shape = (2 * FILE_VX, FILE_VX, FILE_VX) if block_type != 1 else (21, 11, 30)
    data = make_data(voxel_type, channels, shape, seed=1)
    with ref.Dataset.create(root, header(ref, voxel_type, channels, block_type)) as r:
        r.write(off, in_order(data, order))
    with wkw.Dataset.open(root) as ds:
        assert ds.header.voxel_type == voxel_type
        assert vars(ds.header) == vars(ref.Dataset.open(root).header)
        got = ds.read(off, shape)
        assert got.shape == (channels,) + shape
        assert got.dtype == np.dtype(voxel_type)
        assert got.flags.f_contiguous
        np.testing.assert_array_equal(got, data)
        got_c = ds.read(off, shape, order="C")
        assert got_c.flags.c_contiguous
        np.testing.assert_array_equal(got_c, data)
        # A box reaching into missing files: zeros there, as the reference.
        wide = ds.read((0, 0, 0), (64, 32, 48))
        np.testing.assert_array_equal(wide, ref.Dataset.open(root).read((0, 0, 0), (64, 32, 48)))
        assert sorted(ds.list_files()) == sorted(ref.Dataset.open(root).list_files())


@pytest.mark.parametrize("block_type", BLOCK_TYPES)
def test_reads_match_reference_on_random_boxes(tmp_path, block_type):
    root = str(tmp_path / "ds")
    data = make_data(np.uint16, 2, (48, 32, 32), seed=2)
    with ref.Dataset.create(root, header(ref, np.uint16, 2, block_type)) as r:
        r.write((0, 0, 0), data)
    rng = np.random.default_rng(3)
    with wkw.Dataset.open(root) as ds, ref.Dataset.open(root) as r:
        for _ in range(40):
            off = tuple(int(v) for v in rng.integers(0, 40, 3))
            shape = tuple(int(v) for v in rng.integers(1, 30, 3))
            np.testing.assert_array_equal(ds.read(off, shape), r.read(off, shape))


def test_strided_views_are_written_like_copies(tmp_path):
    base = make_data(np.int32, 2, (40, 30, 24), seed=4)
    views = {
        "stepped": base[:, ::2, 1::3, ::2],
        "reversed": base[:, ::-1, :, ::-1],
        "permuted": np.transpose(base, (0, 3, 2, 1)),
        "channel_last_fortran": np.asfortranarray(np.moveaxis(base, 0, -1)).transpose(3, 0, 1, 2),
    }
    for name, view in views.items():
        root = str(tmp_path / name)
        with wkw.Dataset.create(root, header(wkw, np.int32, 2, 2)) as ds:
            ds.write((7, 3, 1), view)
            np.testing.assert_array_equal(ds.read((7, 3, 1), view.shape[1:]), view)
        with ref.Dataset.open(root) as r:
            np.testing.assert_array_equal(r.read((7, 3, 1), view.shape[1:]), view)


def test_readonly_and_non_native_inputs(tmp_path):
    root = str(tmp_path / "ds")
    data = make_data(np.uint16, 1, (10, 10, 10))
    ro = data.copy()
    ro.flags.writeable = False
    with wkw.Dataset.create(root, header(wkw, np.uint16, 1, 1)) as ds:
        ds.write((0, 0, 0), ro)
        np.testing.assert_array_equal(ds.read((0, 0, 0), (10, 10, 10)), data)
        with pytest.raises(wkw.WKWException, match="must be of type"):
            ds.write((0, 0, 0), data.astype(">u2"))


def test_compress_both_ways(tmp_path):
    data = make_data(np.float32, 1, (40, 20, 36), seed=5)
    # Reference raw dataset -> our compress -> reference reads.
    src = str(tmp_path / "src")
    with ref.Dataset.create(src, header(ref, np.float32, 1, 1)) as r:
        r.write((1, 2, 3), data)
    with wkw.Dataset.open(src) as ds:
        out = ds.compress(str(tmp_path / "ours"), compress_files=True)
        assert out.header.block_type == wkw.Header.BLOCK_TYPE_LZ4HC
        out.close()
        empty = ds.compress(str(tmp_path / "header_only"))
        assert list(empty.list_files()) == []
        assert empty.header.block_type == 3
    with ref.Dataset.open(str(tmp_path / "ours")) as r:
        assert r.header.block_type == 3
        np.testing.assert_array_equal(r.read((1, 2, 3), data.shape[1:]), data)
    # Reference compress -> we read.
    with ref.Dataset.open(src) as r:
        r.compress(str(tmp_path / "theirs"), compress_files=True).close()
    with wkw.Dataset.open(str(tmp_path / "theirs")) as ds:
        np.testing.assert_array_equal(ds.read((1, 2, 3), data.shape[1:]), data)
    assert wkw.verify(str(tmp_path / "theirs")) == []
    with pytest.raises(wkw.WKWException, match="already exists"):
        wkw.Dataset.open(src).compress(str(tmp_path / "ours"), compress_files=True)


def test_file_compress_in_place_is_read_by_both(tmp_path):
    root = str(tmp_path / "ds")
    data = make_data(np.uint8, 1, (16, 16, 16), seed=6)
    with wkw.Dataset.create(root, header(wkw, np.uint8, 1, 1)) as ds:
        ds.write((0, 0, 0), data)
    path = os.path.join(root, "z0", "y0", "x0.wkw")
    wkw.File.compress(path, path + ".tmp")
    os.replace(path + ".tmp", path)
    # header.wkw still says raw: both read the LZ4HC file by its own block type.
    np.testing.assert_array_equal(ref.Dataset.open(root).read((0, 0, 0), (16, 16, 16)), data)
    np.testing.assert_array_equal(wkw.Dataset.open(root).read((0, 0, 0), (16, 16, 16)), data)
    with pytest.raises(wkw.WKWException, match="blockType"):
        wkw.Dataset.open(root, strict_headers=True).read((0, 0, 0), (1, 1, 1))
    with pytest.raises(wkw.WKWException):
        wkw.File.compress(str(tmp_path / "missing.wkw"), str(tmp_path / "out.wkw"))


# ---- the reference's fixtures ---------------------------------------------------------------


def fixture_cases(testdata):
    expected = json.loads((testdata / "wkw" / "expected.json").read_text())
    return [(name, case) for name, case in expected.items() if not name.startswith("_")]


def test_reference_fixtures(testdata):
    cases = fixture_cases(testdata)
    assert len(cases) >= 8
    reads = 0
    for name, case in cases:
        root = str(testdata / "wkw" / name)
        with wkw.Dataset.open(root) as ds:
            h = case["header"]
            assert np.dtype(ds.header.voxel_type).name == h["voxel_type"]
            for field in ("num_channels", "block_len", "file_len", "block_type", "version"):
                assert getattr(ds.header, field) == h[field], (name, field)
            for rd in case.get("reads", []):
                arr = ds.read(rd["offset_xyz"], rd["shape_xyz"])
                assert list(arr.shape) == rd["array_shape_cxyz"]
                assert arr.dtype.name == rd["dtype"]
                assert int(np.count_nonzero(np.any(arr != 0, axis=0))) == rd[
                    "nonzero_voxels"
                ] or int(np.count_nonzero(arr)) == rd["nonzero_voxels"]
                f = hashlib.sha256(arr.tobytes(order="F")).hexdigest()
                assert f == rd["sha256_fortran_bytes"], (name, rd["offset_xyz"])
                c = ds.read(rd["offset_xyz"], rd["shape_xyz"], order="C")
                assert hashlib.sha256(c.tobytes()).hexdigest() == rd["sha256_c_bytes"]
                reads += 1
        assert wkw.verify(root) == []
    assert reads >= 10


# ---- behaviours of the reference we match ----------------------------------------------------

BOTH = pytest.mark.parametrize("mod", [ref, wkw], ids=["reference", "scifmt"])


@BOTH
def test_header_defaults_and_checks(mod):
    h = mod.Header(np.uint8)
    assert (h.num_channels, h.version, h.block_len, h.file_len, h.block_type) == (1, 1, 32, 32, 1)
    assert (mod.Header.BLOCK_TYPE_RAW, mod.Header.BLOCK_TYPE_LZ4, mod.Header.BLOCK_TYPE_LZ4HC) == (
        1,
        2,
        3,
    )
    for kwargs in (
        {"block_len": 3},
        {"file_len": 6},
        {"block_type": 4},
        {"num_channels": 0},
    ):
        with pytest.raises(AssertionError):
            mod.Header(np.uint8, **kwargs)
    with pytest.raises(AssertionError):
        mod.Header(np.bool_)


@BOTH
def test_error_cases_match(mod, tmp_path):
    root = str(tmp_path / "ds")
    with pytest.raises(mod.wkw.WKWException):
        mod.Dataset.open(str(tmp_path / "missing"))
    ds = mod.Dataset.create(root, mod.Header(np.uint8, num_channels=2))
    with pytest.raises(mod.wkw.WKWException):
        mod.Dataset.create(root, mod.Header(np.uint8))
    # open with a header on an existing dataset opens it unchanged
    assert mod.Dataset.open(root, mod.Header(np.uint16)).header.voxel_type == np.uint8
    with pytest.raises(AssertionError):
        ds.read((-1, 0, 0), (1, 1, 1))
    with pytest.raises(AssertionError):
        ds.read((0, 0, 0), (1, -1, 1))
    with pytest.raises(mod.wkw.WKWException, match="NumPy ndarray"):
        ds.write((0, 0, 0), [[[1]]])
    with pytest.raises(mod.wkw.WKWException, match="three- or four-dimensional"):
        ds.write((0, 0, 0), np.zeros((2, 2), np.uint8))
    with pytest.raises(mod.wkw.WKWException, match="three- or four-dimensional"):
        ds.write((0, 0, 0), np.zeros((1, 2, 2, 2, 2), np.uint8))
    with pytest.raises(mod.wkw.WKWException, match="2 channels"):
        ds.write((0, 0, 0), np.zeros((3, 2, 2, 2), np.uint8))
    with pytest.raises(mod.wkw.WKWException, match="2 channels"):
        ds.write((0, 0, 0), np.zeros((2, 2, 2), np.uint8))
    with pytest.raises(mod.wkw.WKWException, match="must be of type"):
        ds.write((0, 0, 0), np.zeros((2, 2, 2, 2), np.uint16))
    with pytest.raises(mod.wkw.WKWException):
        ds.read((2**32 - 1, 0, 0), (10, 1, 1))
    os.makedirs(tmp_path / "garbage")
    (tmp_path / "garbage" / "header.wkw").write_bytes(b"garbage")
    with pytest.raises(mod.wkw.WKWException):
        mod.Dataset.open(str(tmp_path / "garbage"))
    ds.close()


def _broken_datasets(base):
    """Datasets the reference made, each broken in one way: (what, root, read it or open it)."""
    import struct

    def made(name, block_type=2):
        root = os.path.join(base, name)
        h = ref.Header(np.uint8, block_len=8, file_len=2, block_type=block_type)
        with ref.Dataset.create(root, h) as ds:
            ds.write((0, 0, 0), make_data(np.uint8, 1, (16, 16, 16), seed=4))
        return root, os.path.join(root, "z0", "y0", "x0.wkw")

    def patched(path, offset, new):
        b = bytearray(open(path, "rb").read())
        b[offset : offset + len(new)] = new
        open(path, "wb").write(bytes(b))

    cases = []
    root, f = made("jump_table")
    patched(f, 16 + 8 * 3, struct.pack("<Q", 5))  # an entry below the previous one
    cases.append(("corrupt jump table", root, "read"))
    root, f = made("long_block")
    patched(f, 16 + 8 * 7, struct.pack("<Q", 10**9))
    cases.append(("block length", root, "read"))
    root, f = made("truncated")
    os.truncate(f, os.path.getsize(f) - 100)
    cases.append(("truncated LZ4 file", root, "read"))
    root, f = made("lz4_garbage")
    (block1,) = struct.unpack_from("<Q", open(f, "rb").read(), 16)
    patched(f, block1, b"\x00" * 8)  # a match at offset 0: no LZ4 decoder accepts it
    cases.append(("LZ4 garbage", root, "read"))
    root, f = made("raw_truncated", block_type=1)
    os.truncate(f, 1000)
    cases.append(("truncated raw file", root, "read"))
    for name, offset, new in [
        ("magic", 0, b"XYZ"),
        ("version", 3, b"\x07"),
        ("voxel_type", 6, b"\x63"),
        ("block_type", 5, b"\x09"),
    ]:
        root = os.path.join(base, "header_" + name)
        ref.Dataset.create(root, ref.Header(np.uint8)).close()
        patched(os.path.join(root, "header.wkw"), offset, new)
        cases.append((f"header.wkw {name}", root, "open"))
    root = os.path.join(base, "header_short")
    os.makedirs(root)
    open(os.path.join(root, "header.wkw"), "wb").write(b"WKW")
    cases.append(("header.wkw too short", root, "open"))
    os.makedirs(os.path.join(base, "no_header"))
    cases.append(("no header.wkw", os.path.join(base, "no_header"), "open"))
    cases.append(("missing root", os.path.join(base, "missing"), "open"))
    return cases


def test_error_messages_start_with_the_references_words(tmp_path):
    """For every failure the reference reports, our message starts with the reference's whole
    message (callers match on it) and adds our detail after it."""
    cases = _broken_datasets(str(tmp_path))
    for what, root, action in cases:
        messages = []
        for mod in (ref, wkw):
            with pytest.raises(mod.wkw.WKWException) as e:
                if action == "read":
                    mod.Dataset.open(root).read((0, 0, 0), (16, 16, 16))
                else:
                    mod.Dataset.open(root)
            messages.append(str(e.value))
        theirs, ours = messages
        assert ours.startswith(theirs + ": "), (what, theirs, ours)
        assert len(ours) > len(theirs) + 2, (what, ours)  # our detail follows
    with pytest.raises(ref.wkw.WKWException) as theirs:
        ref.Dataset.create(cases[0][1], ref.Header(np.uint8))
    with pytest.raises(wkw.WKWException) as ours:
        wkw.Dataset.create(cases[0][1], wkw.Header(np.uint8))
    assert str(ours.value).startswith(str(theirs.value) + ": ")
    # The words callers match on, spelled out.
    with pytest.raises(wkw.WKWException, match='^Error while reading from file ".*": Corrupt jump table: '):
        wkw.Dataset.open(cases[0][1]).read((0, 0, 0), (16, 16, 16))


def test_compressed_writes_clean_up_the_references_leftover(tmp_path):
    """The reference writes a compressed file as `<name>.wkw_tmp` and renames it; an interrupted
    write leaves that file, and the next write of the same file (by the reference or by us)
    removes it. A raw write, in place for both, leaves it."""
    for block_type, removed in ((2, True), (3, True), (1, False)):
        root = str(tmp_path / f"bt{block_type}")
        folder = os.path.join(root, "z0", "y0")
        data = make_data(np.uint8, 1, (16, 16, 16), seed=block_type)
        outcomes = []
        for mod in (ref, wkw):
            h = ref.Header(np.uint8, block_len=8, file_len=2, block_type=block_type)
            ref.Dataset.create(root, h)
            os.makedirs(folder, exist_ok=True)
            leftover = os.path.join(folder, "x0.wkw_tmp")
            open(leftover, "wb").write(b"an interrupted write")
            mod.Dataset.open(root).write((0, 0, 0), data)
            outcomes.append(not os.path.exists(leftover))
            np.testing.assert_array_equal(ref.Dataset.open(root).read((0, 0, 0), (16, 16, 16)), data)
            shutil.rmtree(root)
        assert outcomes == [removed, removed], (block_type, outcomes)


@BOTH
def test_public_names(mod):
    for name in ("Header", "Dataset", "File"):
        assert hasattr(mod, name)
    for name in ("open", "create"):
        assert callable(getattr(mod.Dataset, name))
    for name in ("read", "write", "compress", "list_files", "close", "__enter__", "__exit__"):
        assert callable(getattr(mod.Dataset, name))
    assert issubclass(mod.wkw.WKWException, Exception)
    assert callable(mod.File.compress)


def test_exception_is_the_same_class_everywhere():
    from scifmt._scifmt import wkw as core

    assert wkw.WKWException is wkw_module.WKWException is core.WKWException
    assert wkw.wkw.WKWException is wkw.WKWException


def test_unchanged_reference_code_runs(tmp_path):
    """A snippet in the style of webKNOSSOS tools, written against `wkw`, run on scifmt.wkw."""
    import scifmt.wkw as wkw_alias  # noqa: F401  (the documented import)

    code = """
import numpy as np
with wkw.Dataset.open(root, wkw.Header(np.uint8, num_channels=1, file_len=4)) as dataset:
    data = np.arange(64 * 64 * 64, dtype=np.uint8).reshape(64, 64, 64)
    dataset.write((0, 0, 0), data)
    out = dataset.read((0, 0, 0), (64, 64, 64))
    assert out.shape == (1, 64, 64, 64)
    assert (out[0] == data).all()
    files = list(dataset.list_files())
    assert len(files) == 1, files
    compressed = dataset.compress(root + "_c", compress_files=True)
    assert compressed.header.block_type == wkw.Header.BLOCK_TYPE_LZ4HC
    assert (compressed.read((0, 0, 0), (64, 64, 64)) == out).all()
    try:
        dataset.write((0, 0, 0), data.astype(np.uint16))
    except wkw.wkw.WKWException:
        pass
    else:
        raise RuntimeError("no exception")
"""
    exec(code, {"wkw": wkw, "root": str(tmp_path / "ds")})
    np.testing.assert_array_equal(
        ref.Dataset.open(str(tmp_path / "ds_c")).read((0, 0, 0), (64, 64, 64))[0],
        np.arange(64 * 64 * 64, dtype=np.uint8).reshape(64, 64, 64),
    )


# ---- where we are deliberately different -----------------------------------------------------


def test_unaligned_compressed_writes_accepted_where_reference_refuses(tmp_path):
    root = str(tmp_path / "ds")
    data = make_data(np.uint8, 1, (5, 6, 7))
    ref.Dataset.create(root, header(ref, np.uint8, 1, 2)).close()
    with pytest.raises(ref.wkw.WKWException, match="as a whole"):
        ref.Dataset.open(root).write((1, 2, 3), data)
    ds = wkw.Dataset.open(root)
    ds.write((1, 2, 3), data)
    ds.write((10, 2, 3), data)  # merges into the same compressed file
    np.testing.assert_array_equal(ref.Dataset.open(root).read((1, 2, 3), (5, 6, 7)), data)
    np.testing.assert_array_equal(ref.Dataset.open(root).read((10, 2, 3), (5, 6, 7)), data)


def test_corrupt_files_are_errors_not_zeros(tmp_path):
    root = str(tmp_path / "ds")
    data = make_data(np.uint16, 1, (16, 16, 16)) | 1
    with wkw.Dataset.create(root, header(wkw, np.uint16, 1, 2)) as ds:
        ds.write((0, 0, 0), data)
    path = os.path.join(root, "z0", "y0", "x0.wkw")
    with open(path, "r+b") as f:
        f.write(b"XXXX")
    assert ref.Dataset.open(root).read((0, 0, 0), (4, 4, 4)).sum() == 0  # reference: zeros
    with pytest.raises(wkw.WKWException) as e:
        wkw.Dataset.open(root).read((0, 0, 0), (4, 4, 4))
    assert path in str(e.value) and "magic" in str(e.value)
    with pytest.raises(wkw.WKWException, match="x0.wkw"):
        wkw.Dataset.open(root).write((0, 0, 0), data[:, :2, :2, :2])
    zeros = wkw.Dataset.open(root, corrupt_as_zeros=True).read((0, 0, 0), (4, 4, 4))
    assert zeros.sum() == 0
    problems = wkw.Dataset.open(root).verify()
    assert [p for p, _ in problems] == [path]
    assert "magic" in problems[0][1]
    # Truncated compressed data inside a block: an error naming the file.
    with wkw.Dataset.create(str(tmp_path / "t"), header(wkw, np.uint16, 1, 2)) as ds:
        ds.write((0, 0, 0), data)
    tpath = os.path.join(str(tmp_path / "t"), "z0", "y0", "x0.wkw")
    os.truncate(tpath, os.path.getsize(tpath) - 100)
    with pytest.raises(wkw.WKWException, match="x0.wkw"):
        wkw.Dataset.open(str(tmp_path / "t")).read((0, 0, 0), (16, 16, 16))


def test_empty_reads_return_empty_arrays(tmp_path):
    with wkw.Dataset.create(str(tmp_path / "ds"), wkw.Header(np.float64, 2)) as ds:
        assert ds.read((3, 3, 3), (0, 4, 4)).shape == (2, 0, 4, 4)


# ---- extras -------------------------------------------------------------------------------------


@pytest.mark.parametrize("threads", [None, 1, 2, 3])
def test_threads_give_identical_results(tmp_path, threads):
    root = str(tmp_path / "ds")
    data = make_data(np.uint32, 2, (40, 33, 35), seed=7)
    with wkw.Dataset.create(root, header(wkw, np.uint32, 2, 3), threads=threads) as ds:
        ds.write((1, 1, 1), data)
        np.testing.assert_array_equal(ds.read((1, 1, 1), data.shape[1:]), data)
    with wkw.Dataset.open(root, threads=threads) as ds:
        np.testing.assert_array_equal(ds.read((1, 1, 1), data.shape[1:], order="C"), data)
        out = ds.compress(str(tmp_path / "c"), compress_files=True)
        np.testing.assert_array_equal(out.read((1, 1, 1), data.shape[1:]), data)


def test_concurrent_python_threads(tmp_path):
    """Reads and writes from many Python threads at once, into shared compressed files."""
    root = str(tmp_path / "ds")
    ds = wkw.Dataset.create(root, header(wkw, np.uint16, 1, 2))
    cubes = {i: np.full((1, 8, 8, 8), i + 1, np.uint16) for i in range(16)}

    def write(i):
        ds.write(((i % 4) * 8, (i // 4) * 8, 3), cubes[i])

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(write, range(16)))
        reads = list(pool.map(lambda i: ds.read(((i % 4) * 8, (i // 4) * 8, 3), (8, 8, 8)), range(16)))
    for i, r in enumerate(reads):
        np.testing.assert_array_equal(r, cubes[i])


def test_pickle_reopens_by_path(tmp_path):
    root = str(tmp_path / "ds")
    with wkw.Dataset.create(root, wkw.Header(np.int8), threads=1) as ds:
        ds.write((0, 0, 0), np.full((1, 2, 2, 2), -3, np.int8))
        clone = pickle.loads(pickle.dumps(ds))
    assert clone.root == root
    assert clone.read((0, 0, 0), (2, 2, 2)).sum() == -24


def test_closed_dataset_raises(tmp_path):
    ds = wkw.Dataset.create(str(tmp_path / "ds"), wkw.Header(np.uint8))
    ds.close()
    ds.close()  # twice is fine
    with pytest.raises(wkw.WKWException, match="closed"):
        ds.read((0, 0, 0), (1, 1, 1))
    with pytest.raises(wkw.WKWException, match="closed"):
        ds.write((0, 0, 0), np.zeros((1, 1, 1), np.uint8))
    with pytest.raises(wkw.WKWException, match="closed"):
        list(ds.list_files())


def test_path_like_roots(tmp_path):
    with wkw.Dataset.create(tmp_path / "ds", wkw.Header(np.uint8)) as ds:
        ds.write((0, 0, 0), np.ones((1, 1, 1), np.uint8))
        assert ds.root == str(tmp_path / "ds")
    assert wkw.Dataset.open(tmp_path / "ds").read((0, 0, 0), (1, 1, 1)).item() == 1


# ---- hostile arguments --------------------------------------------------------------------------


@pytest.fixture
def small(tmp_path):
    ds = wkw.Dataset.create(str(tmp_path / "ds"), wkw.Header(np.uint8, block_type=2))
    yield ds
    ds.close()


@pytest.mark.parametrize(
    "off,shape,exc",
    [
        ((2**32, 0, 0), (1, 1, 1), wkw.WKWException),
        ((0, 0, 0), (2**32, 1, 1), wkw.WKWException),
        ((2**64, 0, 0), (1, 1, 1), wkw.WKWException),
        ((0, 0, 2**32 - 1), (1, 1, 2), wkw.WKWException),
        # 2^31 × 2^31 × 2^31 voxels: refused by the read limit before any allocation
        ((0, 0, 0), (2**31, 2**31, 2**31), wkw.WKWException),
        ((0, 0, 0), (2**20, 2**20, 2**20), wkw.WKWException),
        ((-(2**70), 0, 0), (1, 1, 1), AssertionError),
        ((0, 0), (1, 1, 1), wkw.WKWException),
        (None, (1, 1, 1), wkw.WKWException),
        ("abc", (1, 1, 1), wkw.WKWException),
        ((0, 0, 0), (1.5, 1, 1), wkw.WKWException),
        ((0, 0, 0), ("1", 1, 1), wkw.WKWException),
        ((0, 0, 0), (object(), 1, 1), wkw.WKWException),
    ],
)
def test_hostile_read_arguments(small, off, shape, exc):
    with pytest.raises(exc):
        small.read(off, shape)


def test_acceptable_coordinate_types(small):
    for off in ((1, 2, 3), [1, 2, 3], np.array([1, 2, 3], np.int64), (np.uint32(1), 2.0, 3)):
        assert small.read(off, np.array([2, 2, 2])).shape == (1, 2, 2, 2)
    assert small.read((2**32 - 2, 0, 0), (1, 1, 1)).shape == (1, 1, 1, 1)


def test_hostile_write_arguments(small):
    data = np.ones((1, 2, 2, 2), np.uint8)
    for off in ((2**32, 0, 0), (2**32 - 1, 0, 0), (0, 0, 2**40)):
        with pytest.raises(wkw.WKWException):
            small.write(off, data)
    with pytest.raises(AssertionError):
        small.write((-1, 0, 0), data)
    with pytest.raises(wkw.WKWException, match="order"):
        small.read((0, 0, 0), (1, 1, 1), order="K")
    # The raw core refuses what the Python layer would have caught, without crashing.
    raw = small._raw
    for args in (
        ((0, 0, 0), np.ones((2, 2, 2), np.uint8)),
        ((0, 0, 0), np.ones((1, 2, 2, 2), np.float32)),
        ((0, 0, 0), "not an array"),
        ((0, 0, 0), np.ones((300, 1, 1, 1), np.uint8)),
    ):
        with pytest.raises(wkw.WKWException):
            raw.write(*args)
    with pytest.raises(OverflowError):
        raw.read((-1, 0, 0), (1, 1, 1))
    # Zero-size writes are no-ops.
    small.write((5, 5, 5), np.ones((1, 0, 3, 3), np.uint8))
    assert small.read((0, 0, 0), (8, 8, 8)).sum() == 0


@pytest.mark.parametrize(
    "kwargs",
    [
        {"threads": 0},
        {"threads": 10**6},
        {"threads": -1},
    ],
)
def test_hostile_options(tmp_path, kwargs):
    with pytest.raises((wkw.WKWException, OverflowError)):
        wkw.Dataset.create(str(tmp_path / "ds"), wkw.Header(np.uint8), **kwargs)


def test_hostile_headers(tmp_path):
    for h in (
        wkw.Header(np.uint8, file_len=2**20),
        wkw.Header(np.uint64, num_channels=100),
        wkw.Header(np.uint8, block_len=2**16),
    ):
        with pytest.raises(wkw.WKWException):
            wkw.Dataset.create(str(tmp_path / "ds"), h)
    h = wkw.Header(np.uint8)
    h.num_channels = 2**40
    with pytest.raises(wkw.WKWException):
        wkw.Dataset.create(str(tmp_path / "ds"), h)
    h = wkw.Header(np.uint8)
    h.voxel_type = np.complex64
    with pytest.raises(AssertionError):
        wkw.Dataset.create(str(tmp_path / "ds"), h)
    assert not os.path.exists(tmp_path / "ds" / "header.wkw")


def test_hostile_files(tmp_path):
    """Headers that claim huge geometries are refused by the limits, not allocated."""
    root = tmp_path / "ds"
    with wkw.Dataset.create(str(root), wkw.Header(np.uint8, block_type=2, file_len=2)) as ds:
        ds.write((0, 0, 0), np.ones((1, 64, 64, 64), np.uint8))
    path = root / "z0" / "y0" / "x0.wkw"
    raw = bytearray(path.read_bytes())
    raw[4] = 0xFF  # perDimLog2: 2^15 blocks of 2^15 voxels per side
    path.write_bytes(bytes(raw))
    with pytest.raises(wkw.WKWException, match="x0.wkw"):
        wkw.Dataset.open(str(root)).read((0, 0, 0), (2, 2, 2))
    raw[4] = 0x15
    raw[16:24] = (2**63).to_bytes(8, "little")  # a jump-table entry far past the end
    path.write_bytes(bytes(raw))
    with pytest.raises(wkw.WKWException, match="x0.wkw"):
        wkw.Dataset.open(str(root)).read((0, 0, 0), (2, 2, 2))
    shutil.rmtree(root / "z0")
    (root / "header.wkw").write_bytes(b"WKW\x01\xff\x01\x01\x01" + bytes(8))
    with pytest.raises(wkw.WKWException, match="header.wkw"):
        wkw.Dataset.open(str(root))


_INHERITED = {}


def _read_sum_in_child(args):
    root, threads = args
    total = int(wkw.Dataset.open(root, threads=threads).read((0, 0, 0), (64, 64, 64)).sum())
    # The parent's Dataset object itself, copied by fork (not pickled).
    return total + int(_INHERITED["ds"].read((0, 0, 0), (64, 64, 64)).sum())


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
@pytest.mark.parametrize("threads", [None, 1, 2])
def test_forked_children_do_not_hang(tmp_path, threads):
    """multiprocessing's fork start method after the parent used its thread pools."""
    import multiprocessing

    root = str(tmp_path / "ds")
    ds = wkw.Dataset.create(root, wkw.Header(np.uint8, block_type=2, file_len=2), threads=threads)
    ds.write((0, 0, 0), np.ones((1, 64, 64, 64), np.uint8))
    assert ds.read((0, 0, 0), (64, 64, 64)).sum() == 64**3  # pools started in the parent
    _INHERITED["ds"] = ds
    with multiprocessing.get_context("fork").Pool(2) as pool:
        result = pool.map_async(_read_sum_in_child, [(root, threads)] * 4)
        assert result.get(timeout=60) == [2 * 64**3] * 4


def _open_inodes():
    inodes = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            inodes.add(os.stat(f"/proc/self/fd/{fd}").st_ino)
        except OSError:
            pass
    return inodes


def _rewrite_in_child(root):
    ds = wkw.Dataset.open(root)
    path = os.path.join(root, "z0", "y0", "x0.wkw")
    replaced = []
    for value in range(2, 7):
        replaced.append(os.stat(path).st_ino)
        ds.write((0, 0, 0), np.full((1, 64, 64, 64), value, np.uint8))
    deadline = time.monotonic() + 20
    while set(replaced) & _open_inodes() - {os.stat(path).st_ino}:
        if time.monotonic() > deadline:
            return "replaced files still open"
        time.sleep(0.005)
    return int(ds.read((0, 0, 0), (64, 64, 64)).sum())


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs fork and /proc")
def test_forked_children_close_replaced_files(tmp_path):
    """A compressed rewrite closes the replaced file on a background thread; a forked child
    (whose parent had started that thread) gets its own, and nothing stays open."""
    import multiprocessing

    root = str(tmp_path / "ds")
    ds = wkw.Dataset.create(root, wkw.Header(np.uint8, block_type=2, file_len=2))
    for value in range(2):
        ds.write((0, 0, 0), np.full((1, 64, 64, 64), value, np.uint8))  # starts the thread
    with multiprocessing.get_context("fork").Pool(1) as pool:
        assert pool.apply_async(_rewrite_in_child, (root,)).get(timeout=60) == 6 * 64**3


def test_unaligned_input_arrays(tmp_path):
    buf = np.arange(1 + 8 * 27, dtype=np.uint8).tobytes()
    a = np.frombuffer(buf, dtype=np.uint64, offset=1, count=27).reshape(3, 3, 3)
    assert not a.flags.aligned
    with wkw.Dataset.create(str(tmp_path / "ds"), wkw.Header(np.uint64)) as ds:
        ds.write((1, 1, 1), a)
        np.testing.assert_array_equal(ds.read((1, 1, 1), (3, 3, 3))[0], a)


def test_every_dataset_error_names_the_dataset(small):
    root = small.root
    calls = [
        lambda: small.write((0, 0, 0), [[[1]]]),
        lambda: small.write((0, 0, 0), np.zeros((2, 2), np.uint8)),
        lambda: small.write((0, 0, 0), np.zeros((2, 2, 2, 2), np.uint8)),
        lambda: small.write((0, 0, 0), np.zeros((2, 2, 2), np.int8)),
        lambda: small.write((2**32, 0, 0), np.zeros((2, 2, 2), np.uint8)),
        lambda: small.read((0, 0), (1, 1, 1)),
        lambda: small.read((0, 0, 0), (1.5, 1, 1)),
        lambda: small.read((0, 0, 0), (1, 1, 1), order="K"),
        lambda: small.read((0, 0, 0), (2**20, 2**20, 2**20)),
        lambda: small.read((2**32 - 1, 0, 0), (2, 1, 1)),
    ]
    for call in calls:
        with pytest.raises(wkw.WKWException) as e:
            call()
        assert root in str(e.value), str(e.value)


GIL_SCRIPT = r"""
import errno, os, sys, threading, time
import numpy as np
import scifmt.wkw as wkw

root = sys.argv[1]
ds = wkw.Dataset.create(root, wkw.Header(np.uint8, file_len=1, block_len=8))
os.makedirs(os.path.join(root, "z0", "y0"))
fifo = os.path.join(root, "z0", "y0", "x0.wkw")
os.mkfifo(fifo)
result = {}

def reader():
    try:
        ds.read((0, 0, 0), (8, 8, 8))
    except wkw.WKWException as e:
        result["error"] = str(e)

t = threading.Thread(target=reader)
t.start()
# The FIFO can be opened for writing without blocking only once a reader has it open or is
# blocked opening it, and only the Rust call opens it. This thread runs these lines while that
# call is inside open(2), which it can only do if the call released the GIL (were the GIL held,
# the reader would block forever and the test would time out).
deadline = time.monotonic() + 60
while True:
    try:
        fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
        break
    except OSError as e:
        if e.errno != errno.ENXIO or time.monotonic() > deadline:
            raise
        time.sleep(0.001)  # polling for the reader; the condition above is what synchronizes
squares = sum(i * i for i in range(100000))
try:
    os.write(fd, b"not a wkw file")
except BrokenPipeError:
    pass  # the reader already gave up on the empty FIFO
os.close(fd)
t.join(30)
print("released", squares, result.get("error", ""))
"""


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_gil_is_released_during_io(tmp_path):
    import subprocess
    import sys

    out = subprocess.run(
        [sys.executable, "-c", GIL_SCRIPT, str(tmp_path / "ds")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("released"), out.stdout
    assert "x0.wkw" in out.stdout  # the read then failed on the FIFO's bytes, naming the file


@pytest.mark.parametrize("threads", [None, 2])
def test_small_and_large_boxes_agree(tmp_path, threads):
    """Small boxes run on the calling thread, large ones in the pool: same bytes either way."""
    root = str(tmp_path / "ds")
    data = make_data(np.int16, 2, (40, 40, 40), seed=9)
    with wkw.Dataset.create(root, header(wkw, np.int16, 2, 2), threads=threads) as ds:
        for x in range(0, 40, 5):  # many small unaligned writes into compressed files
            ds.write((x, 0, 0), data[:, x : x + 5])
        raw = wkw.Dataset.create(str(tmp_path / "raw"), header(wkw, np.int16, 2, 1), threads=threads)
        raw.write((3, 3, 3), data[:, :2, :2, :2])  # one block
        raw.write((0, 0, 0), data)  # many
        for d in (ds, raw):
            for off, shape in (((7, 9, 11), (1, 1, 1)), ((6, 6, 6), (4, 4, 4)), ((0, 0, 0), (40, 40, 40))):
                want = data[:, off[0] : off[0] + shape[0], off[1] : off[1] + shape[1], off[2] : off[2] + shape[2]]
                np.testing.assert_array_equal(d.read(off, shape), want)
