"""`scifmt virtualize --to kerchunk` of b2nd arrays, read by the Python Zarr stack: ``.b2nd``
files written here by python-blosc2 (several dtypes and byte orders, blocks smaller than chunks,
edge chunks, arrays of zeros with a few chunks written, NaN fills, uninitialised chunks) are
virtualized by the ``scifmt`` command, opened with fsspec's ``ReferenceFileSystem`` and
zarr-python 3 (``FsspecStore``), their chunks decoded in place by scifmt's ``b2nd`` codec
(found through its ``zarr.codecs`` entry point), and compared with ``blosc2.open(path)[...]``."""

import json
import subprocess

import numpy as np
import pytest
from conftest import scifmt_command

blosc2 = pytest.importorskip("blosc2")
zarr = pytest.importorskip("zarr")
reference = pytest.importorskip("fsspec.implementations.reference")
zarr_storage = pytest.importorskip("zarr.storage")
pytest.importorskip("scifmt.codecs")  # the `b2nd` codec's entry point


def _virtualize(*args):
    out = subprocess.run([scifmt_command(), "virtualize", *map(str, args), "--to", "kerchunk",
                          "--json"], capture_output=True, text=True)  # fmt: skip
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def _store(refs):
    fs = reference.ReferenceFileSystem(str(refs), asynchronous=True)
    return zarr_storage.FsspecStore(fs, read_only=True, path="")


def _values(shape, dtype):
    """Values of every bit width, negative ones for signed types, fractions for floats."""
    n = int(np.prod(shape))
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        v = (np.arange(n) - n / 3) / 7.0
    elif dtype.kind == "i":
        info = np.iinfo(dtype)
        v = (np.arange(n, dtype=np.int64) * 7919 % (int(info.max) // 2 + 1)) - int(info.max) // 4
    elif dtype.kind == "u":
        v = np.arange(n, dtype=np.uint64) * np.uint64(7919)  # wraps to the type in astype
    else:
        v = np.arange(n) % 3 == 0
    return np.asarray(v).astype(dtype).reshape(shape)


# (name, shape, dtype, chunks, blocks): blocks always smaller than chunks, shapes that are not
# multiples of them.
ARRAYS = [
    ("f8_2d", (11, 10), "<f8", (6, 4), (3, 2)),
    ("f4_2d", (20, 30), "<f4", (8, 16), (4, 8)),
    ("i2_3d", (5, 6, 7), "<i2", (3, 4, 4), (2, 2, 3)),
    ("u1_1d", (500,), "|u1", (128,), (32,)),
    ("u8_4d", (5, 4, 3, 3), "<u8", (3, 4, 2, 3), (2, 3, 1, 2)),
    ("be_i4", (9, 13), ">i4", (4, 8), (2, 4)),
    ("be_f8", (11, 10), ">f8", (6, 4), (3, 2)),
    ("bool", (17, 9), "|b1", (8, 8), (4, 4)),
]


def _check(refs, path, node=None):
    """The array of the references (at ``node`` of a group, or the root) equals python-blosc2's
    read of ``path``."""
    want = blosc2.open(str(path))[...]
    if node is None:
        a = zarr.open_array(store=_store(refs), mode="r", zarr_format=3)
    else:
        a = zarr.open_group(store=_store(refs), mode="r", zarr_format=3)[node]
    got = a[...]
    assert got.shape == want.shape, path
    assert got.dtype == want.dtype.newbyteorder("=") or got.dtype == want.dtype, path
    np.testing.assert_array_equal(got, want, err_msg=str(path))
    return a


@pytest.mark.parametrize("name,shape,dtype,chunks,blocks", ARRAYS)
def test_zarr_python_reads_a_virtualized_b2nd_like_blosc2(tmp_path, name, shape, dtype, chunks,
                                                          blocks):  # fmt: skip
    path = tmp_path / f"{name}.b2nd"
    x = _values(shape, dtype)
    blosc2.asarray(x, urlpath=str(path), mode="w", chunks=chunks, blocks=blocks)
    refs = tmp_path / "refs.json"
    summary = _virtualize(path, refs)
    nchunks = int(np.prod([-(-s // c) for s, c in zip(shape, chunks)]))
    # python-blosc2 may store a chunk as a special run (no reference): at most one each.
    assert summary["arrays"] == 1 and 0 < summary["references"] <= nchunks
    assert summary["bytes_read"] < path.stat().st_size
    a = _check(refs, path)
    assert a.chunks == chunks
    meta = json.loads(json.loads(refs.read_text())["refs"]["zarr.json"])
    codec = meta["codecs"][0]
    assert codec["name"] == "b2nd"
    assert codec["configuration"]["blockshape"] == list(blocks)
    assert codec["configuration"]["endian"] == ("big" if dtype.startswith(">") else "little")
    # A region across chunks and blocks.
    region = tuple(slice(s // 3, s - s // 4) for s in shape)
    np.testing.assert_array_equal(a[region], x[region])


def test_chunks_of_zeros_read_as_zeros(tmp_path):
    # blosc2.zeros stores every chunk as a run of zeros (no bytes); the written ones are stored.
    path = tmp_path / "z.b2nd"
    z = blosc2.zeros((50, 40), dtype="<f8", urlpath=str(path), mode="w", chunks=(20, 20),
                     blocks=(10, 10))  # fmt: skip
    z[0:5, 0:5] = 1.0
    z[45:50, 30:35] = -2.5
    del z
    refs = tmp_path / "refs.json"
    summary = _virtualize(path, refs)
    assert summary["references"] == 2  # chunks (0, 0) and (2, 1)
    doc = json.loads(refs.read_text())["refs"]
    assert "c/0/1" not in doc and "c/0/0" in doc
    a = _check(refs, path)
    got = a[...]
    assert (got == 1.0).sum() == 25 and (got == -2.5).sum() == 25 and (got == 0).sum() == 2000 - 50


def test_nan_and_value_fills_read_like_blosc2(tmp_path):
    # Whatever python-blosc2 stores for these fills (runs of NaNs, repeated-value chunks),
    # the references read the same values.
    for name, value, dtype in [("nan", np.nan, "<f8"), ("nan4", np.nan, "<f4"),
                               ("value", 3.5, "<f8"), ("ivalue", -7, "<i4")]:  # fmt: skip
        path = tmp_path / f"{name}.b2nd"
        f = blosc2.full((30, 20), value, dtype=dtype, urlpath=str(path), mode="w",
                        chunks=(10, 8), blocks=(5, 4))  # fmt: skip
        f[0:3, 0:3] = 1
        del f
        refs = tmp_path / f"{name}.json"
        _virtualize(path, refs)
        _check(refs, path)


def test_uninitialised_chunks_read_as_the_fill_value(tmp_path):
    # blosc2.empty leaves chunks uninitialised (content unspecified): the references give
    # the fill value 0 there, and the written chunks as written.
    path = tmp_path / "e.b2nd"
    e = blosc2.empty((30,), dtype="<i4", urlpath=str(path), mode="w", chunks=(10,), blocks=(5,))
    e[0:10] = np.arange(10, dtype="<i4") + 1
    del e
    refs = tmp_path / "refs.json"
    summary = _virtualize(path, refs)
    a = zarr.open_array(store=_store(refs), mode="r", zarr_format=3)
    got = a[...]
    np.testing.assert_array_equal(got[0:10], np.arange(10) + 1)
    if summary["references"] == 1:
        np.testing.assert_array_equal(got[10:], 0)


def test_several_b2nd_files_are_arrays_of_one_group(tmp_path):
    paths = []
    for name, shape, dtype, chunks, blocks in ARRAYS[:3]:
        path = tmp_path / f"{name}.b2nd"
        blosc2.asarray(_values(shape, dtype), urlpath=str(path), mode="w", chunks=chunks,
                       blocks=blocks)  # fmt: skip
        paths.append(path)
    refs = tmp_path / "refs.json"
    summary = _virtualize(*paths, refs)
    assert summary["arrays"] == len(paths) and summary["groups"] == 1
    for path in paths:
        _check(refs, path, node=path.name)


def test_plain_super_chunks_are_refused(tmp_path):
    path = tmp_path / "s.b2frame"
    schunk = blosc2.SChunk(chunksize=400, urlpath=str(path), mode="w", contiguous=True)
    schunk.append_data(np.arange(100, dtype="<i4"))
    del schunk
    out = subprocess.run([scifmt_command(), "virtualize", str(path), str(tmp_path / "r.json"), "--to",
                          "kerchunk"], capture_output=True, text=True)  # fmt: skip
    assert out.returncode == 2
    assert "b2nd" in out.stderr and "metalayer" in out.stderr
    assert not (tmp_path / "r.json").exists()
