"""`scifmt virtualize --to kerchunk-parquet` read by the Python Zarr stack: kerchunk's Parquet
reference directory, opened with fsspec's ``ReferenceFileSystem`` (its ``LazyReferenceMapper``,
loading the record files with fastparquet) and zarr-python 3 as a Zarr v2 hierarchy. The WKW
dataset (written by the reference ``wkw``: raw, LZ4 and LZ4HC mags, channels, a missing file)
reads like ``wkw.Dataset.read``; b2nd files written by python-blosc2 (big-endian, blocks smaller
than chunks, runs of NaNs stored inline) read like ``blosc2.open``."""

import json
import subprocess

import numpy as np
import pytest
from conftest import scifmt_command
from test_virtualize import MAGS, _dataset
from test_virtualize_b2nd import ARRAYS, _values

wkw = pytest.importorskip("wkw")
blosc2 = pytest.importorskip("blosc2")
zarr = pytest.importorskip("zarr")
reference = pytest.importorskip("fsspec.implementations.reference")
zarr_storage = pytest.importorskip("zarr.storage")
pytest.importorskip("fastparquet")  # fsspec's engine for the record files
pytest.importorskip("scifmt.codecs")  # the numcodecs `lz4-block` and `b2nd` codecs


def _virtualize(*args, record_size=None):
    extra = [] if record_size is None else ["--record-size", str(record_size)]
    out = subprocess.run([scifmt_command(), "virtualize", *map(str, args), "--to",
                          "kerchunk-parquet", "--json", *extra],
                         capture_output=True, text=True)  # fmt: skip
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def _open_group(refs):
    # `remote_protocol` named: otherwise fsspec loads every record to find the protocols.
    fs = reference.ReferenceFileSystem(str(refs), remote_protocol="file", asynchronous=True)
    store = zarr_storage.FsspecStore(fs, read_only=True, path="")
    return zarr.open_group(store=store, mode="r", zarr_format=2)


@pytest.mark.parametrize("record_size", [None, 5])
def test_zarr_python_reads_the_parquet_references_of_a_dataset_like_wkw(tmp_path, record_size):
    root, mags = _dataset(tmp_path)
    refs = tmp_path / "refs"
    summary = _virtualize(root, refs, record_size=record_size)
    assert summary["to"] == "kerchunk-parquet" and summary["arrays"] == len(MAGS)
    meta = json.loads((refs / ".zmetadata").read_text())
    assert meta["record_size"] == (record_size or 100_000)
    group = _open_group(refs)
    for name, dtype, channels, block_type, block_len, _ in MAGS:
        a = group[f"{name}/1"]
        assert a.dtype == np.dtype(dtype)
        assert a.chunks == (channels, block_len, block_len, block_len)
        zarray = meta["metadata"][f"{name}/1/.zarray"]
        assert zarray["order"] == "F"
        raw = block_type == wkw.Header.BLOCK_TYPE_RAW
        assert (zarray["compressor"] is None) == raw
        if not raw:
            assert zarray["compressor"]["id"] == "lz4-block"
        with wkw.Dataset.open(str(mags[name])) as ds:
            want = ds.read((0, 0, 0), a.shape[1:])
        # File 0 is missing: its chunks have no row (records of 5) or a null path.
        assert not want[:, : 2 * block_len].any()
        np.testing.assert_array_equal(a[...], want, err_msg=name)
    if record_size:
        # The grid's first records lie in the missing file: no record files for them.
        files = sorted(p.name for p in (refs / "u8_raw" / "1").iterdir())
        assert "refs.0.parq" not in files and len(files) > 1


def test_b2nd_files_read_like_blosc2_through_parquet_references(tmp_path):
    paths = []
    for name, shape, dtype, chunks, blocks in ARRAYS:
        path = tmp_path / f"{name}.b2nd"
        blosc2.asarray(_values(shape, dtype), urlpath=str(path), mode="w", chunks=chunks,
                       blocks=blocks)  # fmt: skip
        paths.append(path)
    # Runs of NaNs: chunks the frame stores only as a flag, written inline (the `raw` column).
    nan = tmp_path / "nan.b2nd"
    f = blosc2.full((30, 20), np.nan, dtype="<f8", urlpath=str(nan), mode="w", chunks=(10, 8),
                    blocks=(5, 4))  # fmt: skip
    f[0:3, 0:3] = 1
    del f
    paths.append(nan)
    refs = tmp_path / "refs"
    summary = _virtualize(*paths, refs, record_size=2)
    assert summary["arrays"] == len(paths)
    group = _open_group(refs)
    for path in paths:
        want = blosc2.open(str(path))[...]
        got = group[path.name][...]
        assert got.shape == want.shape and got.dtype.newbyteorder("=") == want.dtype.newbyteorder(
            "="), path  # fmt: skip
        np.testing.assert_array_equal(got, want, err_msg=str(path))


def test_a_single_array_is_refused_with_the_reason_and_nothing_is_left(tmp_path):
    path = tmp_path / "one.b2nd"
    blosc2.asarray(np.arange(10, dtype="<i4"), urlpath=str(path), mode="w", chunks=(5,),
                   blocks=(5,))  # fmt: skip
    refs = tmp_path / "refs"
    out = subprocess.run([scifmt_command(), "virtualize", str(path), str(refs), "--to",
                          "kerchunk-parquet"], capture_output=True, text=True)  # fmt: skip
    assert out.returncode != 0
    assert "root" in out.stderr and "kerchunk JSON" in out.stderr, out.stderr
    assert not refs.exists()
    assert [p.name for p in tmp_path.iterdir()] == ["one.b2nd"]


def test_scifmt_virtualize_writes_parquet_references_like_the_command(tmp_path):
    import scifmt

    root, mags = _dataset(tmp_path)
    refs = tmp_path / "refs"
    summary = scifmt.virtualize(root, refs, to="kerchunk-parquet")
    assert summary["to"] == "kerchunk-parquet" and summary["arrays"] == len(MAGS)
    assert json.loads((refs / ".zmetadata").read_text())["record_size"] == 100_000
    group = _open_group(refs)
    name = MAGS[1][0]
    with wkw.Dataset.open(str(mags[name])) as ds:
        want = ds.read((0, 0, 0), group[f"{name}/1"].shape[1:])
    np.testing.assert_array_equal(group[f"{name}/1"][...], want)
    with pytest.raises(FileExistsError, match="overwrite=True"):
        scifmt.virtualize(root, refs, to="kerchunk-parquet")
    again = scifmt.virtualize(root, refs, to="kerchunk-parquet", overwrite=True, record_size=3)
    assert again["references"] == summary["references"]
    assert json.loads((refs / ".zmetadata").read_text())["record_size"] == 3
    with pytest.raises(ValueError, match="record_size"):
        scifmt.virtualize(root, tmp_path / "r2", to="kerchunk-parquet", record_size=0)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ds", "refs"]
