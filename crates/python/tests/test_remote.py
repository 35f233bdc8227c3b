"""scifmt.wkw and scifmt.b2nd on an object store: URLs against the project's S3 test server.

The `server` fixture (conftest.py) runs the S3 test server with the reference-made fixtures
uploaded and points the `object_store` client at it through the `AWS_*` environment.
"""

import hashlib
import json
import os
import pickle
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import scifmt.b2nd as b2nd
import scifmt.wkw as wkw

ref = pytest.importorskip("wkw", reason="the reference package wkw==1.1.24 is needed")
blosc2 = pytest.importorskip("blosc2", reason="the reference package blosc2==4.14.1 is needed")


def _stats(control):
    import urllib.request

    with urllib.request.urlopen(control.rstrip("/") + "/stats", timeout=10) as r:
        return json.loads(r.read())


def _reset(control):
    import urllib.request

    with urllib.request.urlopen(control.rstrip("/") + "/reset", timeout=10) as r:
        r.read()


# ---- WKW ---------------------------------------------------------------------------------


def test_every_wkw_fixture_reads_over_s3_like_the_reference(server, testdata_root):
    bucket = server.bucket
    expected = json.loads((testdata_root / "wkw" / "expected.json").read_text())
    cases = [(n, c) for n, c in expected.items() if not n.startswith("_")]
    assert len(cases) >= 13
    reads = 0
    for name, case in cases:
        url = f"s3://{bucket}/wkw/{name}"
        local = ref.Dataset.open(str(testdata_root / "wkw" / name))
        with wkw.Dataset.open(url) as ds:
            assert ds.root == url
            for field in ("num_channels", "block_len", "file_len", "block_type", "version"):
                assert getattr(ds.header, field) == case["header"][field], (name, field)
            assert np.dtype(ds.header.voxel_type).name == case["header"]["voxel_type"]
            for rd in case.get("reads", []):
                arr = ds.read(rd["offset_xyz"], rd["shape_xyz"])
                assert arr.flags.f_contiguous
                digest = hashlib.sha256(arr.tobytes(order="F")).hexdigest()
                assert digest == rd["sha256_fortran_bytes"], (name, rd["offset_xyz"])
                np.testing.assert_array_equal(arr, local.read(rd["offset_xyz"], rd["shape_xyz"]))
                c = ds.read(rd["offset_xyz"], rd["shape_xyz"], order="C")
                assert c.flags.c_contiguous
                assert hashlib.sha256(c.tobytes()).hexdigest() == rd["sha256_c_bytes"]
                reads += 1
            files = list(ds.list_files())
            local_files = sorted(
                os.path.relpath(p, testdata_root / "wkw" / name) for p in local.list_files()
            )
            assert sorted(f.split(f"/wkw/{name}/", 1)[1] for f in files) == local_files
            assert ds.verify() == []
        local.close()
    assert reads >= 24


@pytest.mark.parametrize("block_type", [1, 2, 3])
def test_remote_writes_are_read_by_the_reference(server, tmp_path, block_type):
    bucket = server.bucket
    url = f"s3://{bucket}/written/bt{block_type}"
    h = wkw.Header(np.uint16, num_channels=2, block_len=8, file_len=2, block_type=block_type)
    rng = np.random.default_rng(block_type)
    data = rng.integers(0, 2**16, size=(2, 40, 23, 19), dtype=np.uint16)
    with wkw.Dataset.create(url, h) as ds:
        ds.write([3, 5, 7], data)  # unaligned: read-modify-writes across 12 files, 13 in all below
        ds.write([0, 0, 0], np.asfortranarray(data[:, :9, :9, :9]))
        ds.write([30, 0, 0], data[:, ::2, ::3, ::2])  # a strided view
        got = ds.read([0, 0, 0], [48, 32, 32])
        files = list(ds.list_files())
    # The same writes locally, through the reference package (aligned writes only for
    # compressed datasets there, so write its raw twin and compare values).
    local = str(tmp_path / "local")
    ref_h = ref.Header(np.uint16, num_channels=2, block_len=8, file_len=2, block_type=1)
    with ref.Dataset.create(local, ref_h) as rd:
        rd.write([3, 5, 7], data)
        rd.write([0, 0, 0], np.asfortranarray(data[:, :9, :9, :9]))
        rd.write([30, 0, 0], np.ascontiguousarray(data[:, ::2, ::3, ::2]))
        want = rd.read([0, 0, 0], [48, 32, 32])
    np.testing.assert_array_equal(got, want)
    # Our uploads, converted by the remote `compress` into a local directory (a `file://`
    # URL), are read by the reference.
    down = tmp_path / "down"
    with wkw.Dataset.open(url) as ds:
        ds.compress(down.as_uri(), compress_files=True).close()
    with ref.Dataset.open(str(down)) as rd:
        assert rd.header.block_type == 3
        np.testing.assert_array_equal(rd.read([0, 0, 0], [48, 32, 32]), want)
    assert len(files) == 13


def test_concurrent_remote_writers_lose_no_update(server):
    bucket = server.bucket
    url = f"s3://{bucket}/concurrent"
    h = wkw.Header(np.uint8, block_len=8, file_len=2, block_type=2)
    wkw.Dataset.create(url, h).close()

    def write(i):
        # Each thread writes its own voxel column in every one of the same two files.
        with wkw.Dataset.open(url, threads=1) as ds:
            for x in range(0, 32, 4):
                ds.write([x, i, 0], np.full((1, 1, 1, 16), i + 1, np.uint8))

    with ThreadPoolExecutor(6) as ex:
        list(ex.map(write, range(6)))
    with wkw.Dataset.open(url) as ds:
        got = ds.read([0, 0, 0], [32, 6, 16])
    for i in range(6):
        assert (got[0, ::4, i, :] == i + 1).all(), i
        assert (got[0, 1::4, i, :] == 0).all(), i


def test_remote_dataset_pickles_and_reopens(server):
    bucket = server.bucket
    url = f"s3://{bucket}/wkw/u8_raw_b8_f4"
    with wkw.Dataset.open(url, threads=1) as ds:
        again = pickle.loads(pickle.dumps(ds))
        np.testing.assert_array_equal(again.read([0, 0, 0], [9, 9, 9]), ds.read([0, 0, 0], [9, 9, 9]))
        again.close()


def test_remote_errors_name_the_url_and_never_the_secret(server):
    bucket = server.bucket
    missing = f"s3://{bucket}/no/such/dataset"
    with pytest.raises(wkw.WKWException, match="no/such/dataset"):
        wkw.Dataset.open(missing)
    secret = "sekrit-value-123"
    with pytest.raises(wkw.WKWException) as e:
        wkw.Dataset.open(f"s3://{bucket}/wkw/u8_raw_b8_f4",
                         storage_options={"aws_secret_access_key": secret})
    assert secret not in str(e.value)
    assert "u8_raw_b8_f4" in str(e.value)
    with pytest.raises(wkw.WKWException) as e:
        wkw.Dataset.open(f"http://user:{secret}@127.0.0.1:9/x")
    assert secret not in str(e.value)
    with pytest.raises(wkw.WKWException) as e:
        wkw.Dataset.open(f"http://user:{secret}@x@127.0.0.1:9/x")  # a raw '@' in the password
    assert secret not in str(e.value)
    with pytest.raises(wkw.WKWException, match="storage_options"):
        wkw.Dataset.open("/tmp/not-a-url", storage_options={"a": "b"})
    with pytest.raises(wkw.WKWException, match="storage_options"):
        wkw.Dataset.open(missing, storage_options=["not", "a", "dict"])
    ds = wkw.Dataset.open(f"s3://{bucket}/wkw/u8_raw_b8_f4")
    ds.close()
    with pytest.raises(wkw.WKWException, match="closed"):
        ds.read([0, 0, 0], [1, 1, 1])
    with pytest.raises(wkw.WKWException, match="both local or both URLs"):
        wkw.Dataset.open(f"s3://{bucket}/wkw/u8_raw_b8_f4").compress("/tmp/x", compress_files=True)


# ---- b2nd --------------------------------------------------------------------------------


def _b2nd_fixtures(testdata_root):
    return sorted(p.name for p in (testdata_root / "blosc" / "frames").glob("*.b2nd"))


def test_every_b2nd_fixture_reads_over_s3_like_python_blosc2(server, testdata_root):
    bucket = server.bucket
    names = _b2nd_fixtures(testdata_root)
    assert len(names) >= 12
    for name in names:
        path = testdata_root / "blosc" / "frames" / name
        want = blosc2.open(str(path))[...]
        arr = b2nd.open(f"s3://{bucket}/frames/{name}")
        local = b2nd.open(path)
        assert arr.shape == want.shape and arr.dtype == want.dtype, name
        assert (arr.chunks, arr.blocks) == (local.chunks, local.blocks)
        assert dict(arr.meta.items()) == dict(local.meta.items())
        assert dict(arr.vlmeta.items()) == dict(local.vlmeta.items())
        np.testing.assert_array_equal(arr[...], want)
        inner = tuple(slice(s // 3, s - s // 4) for s in want.shape)
        np.testing.assert_array_equal(arr[inner], want[inner])
        again = pickle.loads(pickle.dumps(arr))
        np.testing.assert_array_equal(again[inner], want[inner])


def test_b2nd_slices_fetch_only_the_chunks_they_touch(server, testdata_root):
    bucket, control = server.bucket, server.control
    name = "b2nd_u4_500.b2nd"  # 500 items in chunks of 128
    want = blosc2.open(str(testdata_root / "blosc" / "frames" / name))[...]
    arr = b2nd.open(f"s3://{bucket}/frames/{name}")
    assert arr.chunks == (128,)
    _reset(control)
    part = arr[130:140]  # inside chunk 1
    assert _stats(control)["get"] == 1
    np.testing.assert_array_equal(part, want[130:140])
    _reset(control)
    part = arr[100:300]  # chunks 0, 1 and 2: adjacent, fetched by one ranged request
    assert 1 <= _stats(control)["get"] <= 3
    np.testing.assert_array_equal(part, want[100:300])


def test_b2nd_remote_errors(server):
    bucket = server.bucket
    with pytest.raises(FileNotFoundError, match="missing.b2nd"):
        b2nd.open(f"s3://{bucket}/frames/missing.b2nd")
    with pytest.raises(b2nd.B2ndError):
        b2nd.open(f"s3://{bucket}/wkw/u8_raw_b8_f4/header.wkw")
    secret = "sekrit-value-456"
    with pytest.raises(OSError) as e:
        b2nd.open(f"http://user:{secret}@127.0.0.1:9/x.b2nd")
    assert secret not in str(e.value) and "127.0.0.1:9/x.b2nd" in str(e.value)


def test_one_remote_dataset_shared_by_threads(server):
    url = f"s3://{server.bucket}/shared"
    h = wkw.Header(np.int32, block_len=8, file_len=2, block_type=2)
    data = np.arange(4 * 32 * 16 * 16, dtype=np.int32).reshape(4, 32, 16, 16)
    with wkw.Dataset.create(url, h) as ds:

        def work(i):
            # Writes of different files, then reads of all of them, on one dataset object.
            ds.write([0, 0, 16 * i], data[i][np.newaxis])
            return ds.read([0, 0, 0], [32, 16, 64])

        with ThreadPoolExecutor(4) as ex:
            list(ex.map(work, range(4)))
        got = ds.read([0, 0, 0], [32, 16, 64])
    for i in range(4):
        np.testing.assert_array_equal(got[0, :, :, 16 * i:16 * (i + 1)], data[i])
