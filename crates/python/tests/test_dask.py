"""scifmt.wkw.dask on a dask.distributed LocalCluster with two worker processes."""

import os

import numpy as np
import pytest

import scifmt.wkw as wkw
from scifmt.wkw.dask import WKWArray, file_aligned_chunks, from_wkw, to_wkw

da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("dask.distributed")
ref = pytest.importorskip("wkw")


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(
        n_workers=2,
        processes=True,
        threads_per_worker=2,
        dashboard_address=None,
        silence_logs=40,
    )
    with distributed.Client(cluster) as c:
        yield c
    cluster.close()


def header(block_type, channels=1, voxel_type=np.uint16):
    # 16³-voxel files: the boxes below span dozens of files.
    return wkw.Header(voxel_type, num_channels=channels, block_len=8, file_len=2, block_type=block_type)


def test_array_like_indexing_matches_numpy(tmp_path):
    root = str(tmp_path / "ds")
    rng = np.random.default_rng(0)
    data = rng.integers(0, 60000, (2, 37, 29, 41), dtype=np.uint16)
    with wkw.Dataset.create(root, header(2, channels=2)) as ds:
        ds.write((3, 4, 5), data)
    arr = WKWArray(root, (3, 4, 5), (37, 29, 41))
    assert arr.shape == data.shape and arr.dtype == data.dtype and arr.ndim == 4
    keys = [
        (...,),
        (0,),
        (slice(None), slice(2, 30), 7, slice(None, None, 3)),
        (1, -1, slice(None, None, -1), slice(40, 2, -7)),
        (..., 5),
        (slice(None), slice(5, 5)),
        (slice(1, 2), slice(-10, None), slice(0, 29, 28), slice(None)),
        (0, np.int64(3), 4, 5),
    ]
    for key in keys:
        np.testing.assert_array_equal(arr[key], data[key], err_msg=str(key))
    for bad in ((0, 37), (0, 0, 0, 0, 0), ("a",), (..., ..., 0)):
        with pytest.raises(IndexError):
            arr[bad]
    np.testing.assert_array_equal(np.asarray(arr), data)
    # Without a shape: up to the end of the last data file.
    assert WKWArray(root).shape == (2, 48, 48, 48)


def test_file_aligned_chunks():
    h = header(1)
    assert file_aligned_chunks(h, (5, 0, 16), (40, 16, 3)) == ((1,), (11, 16, 13), (16,), (3,))
    assert file_aligned_chunks(h, (0, 0, 0), (64, 1, 1), files_per_chunk=2) == (
        (1,),
        (32, 32),
        (1,),
        (1,),
    )


@pytest.mark.parametrize("block_type", [1, 2, 3])
def test_parallel_disjoint_writes_then_full_read(client, tmp_path, block_type):
    root = str(tmp_path / "ds")
    rng = np.random.default_rng(block_type)
    expected = rng.integers(0, 60000, (3, 70, 45, 38), dtype=np.uint16)
    off = (5, 3, 7)  # unaligned: edge tasks share files with their neighbours
    darr = da.from_array(expected, chunks=(3, 23, 17, 19))
    with distributed.get_task_stream(client) as stream:
        to_wkw(darr, root, off, header=header(block_type, channels=3))
    assert len({t["worker"] for t in stream.data}) == 2, "both worker processes ran tasks"
    # Every file written once by some worker process; the whole box equals the input.
    with wkw.Dataset.open(root) as ds:
        np.testing.assert_array_equal(ds.read(off, expected.shape[1:]), expected)
        assert ds.read((0, 0, 0), (5, 48, 48)).sum() == 0
    assert wkw.verify(root) == []
    with ref.Dataset.open(root) as r:
        np.testing.assert_array_equal(r.read(off, expected.shape[1:]), expected)
    # And back through the cluster with file-aligned read tasks.
    lazy = from_wkw(root, off, expected.shape[1:])
    assert lazy.chunks == file_aligned_chunks(header(block_type, 3), off, expected.shape[1:])
    np.testing.assert_array_equal(lazy.compute(), expected)
    np.testing.assert_array_equal(
        from_wkw(root, off, expected.shape[1:])[:, 10:60:3, ::-2, 5].compute(),
        expected[:, 10:60:3, ::-2, 5],
    )


def _write_cube(root, off, value):
    with wkw.Dataset.open(root, threads=1) as ds:
        ds.write(off, np.full((1, 4, 4, 4), value, np.uint16))
    return os.getpid()


def _write_region(root, value):
    with wkw.Dataset.open(root, threads=1) as ds:
        ds.write((8, 8, 8), np.full((1, 12, 12, 12), value, np.uint16))
    return os.getpid()


@pytest.mark.parametrize("block_type", [1, 2])
def test_overlapping_writes_into_the_same_files(client, tmp_path, block_type):
    root = str(tmp_path / "ds")
    # One 32³ file; 64 tasks each write a different 4³ cube of it (read-modify-write of the
    # same compressed file): without the per-file locks, updates would get lost.
    wkw.Dataset.create(root, wkw.Header(np.uint16, block_len=8, file_len=4, block_type=block_type)).close()
    cubes = [((x, y, z), 1 + x // 4 + 8 * (y // 4) + 64 * (z // 4))
             for x in range(0, 32, 4) for y in range(0, 32, 8) for z in range(0, 32, 16)]
    assert len(cubes) == 64
    futures = client.map(_write_cube, [root] * len(cubes), [c[0] for c in cubes], [c[1] for c in cubes])
    pids = set(client.gather(futures))
    assert len(pids) == 2, "both worker processes wrote"
    with wkw.Dataset.open(root) as ds:
        full = ds.read((0, 0, 0), (32, 32, 32))
    expected = np.zeros((1, 32, 32, 32), np.uint16)
    for (x, y, z), v in cubes:
        expected[0, x : x + 4, y : y + 4, z : z + 4] = v
    np.testing.assert_array_equal(full, expected)
    assert len(os.listdir(os.path.join(root, "z0", "y0"))) == 1  # no temporary files left

    # Tasks writing the very same region: the result is one task's data, never a mix.
    futures = client.map(_write_region, [root] * 24, list(range(100, 124)))
    client.gather(futures)
    with wkw.Dataset.open(root) as ds:
        region = ds.read((8, 8, 8), (12, 12, 12))
        assert len(np.unique(region)) == 1 and 100 <= int(region.flat[0]) < 124
        rest = ds.read((0, 0, 0), (32, 32, 32))
    expected[0, 8:20, 8:20, 8:20] = region[0]
    np.testing.assert_array_equal(rest, expected)
    assert wkw.verify(root) == []


@pytest.mark.parametrize("block_type", [1, 2])
def test_remote_dataset_written_and_read_by_the_cluster(client, server, block_type):
    # The workers were started before the client environment was set: the store
    # configuration reaches them through `storage_options`, pickled with each task.
    url = f"s3://{server.bucket}/dask/bt{block_type}"
    so = server.storage_options
    rng = np.random.default_rng(block_type)
    data = rng.integers(0, 60000, (1, 45, 38, 21), dtype=np.uint16)
    # An unaligned box: the tasks at its edges share data files (conditional puts).
    to_wkw(da.from_array(data, chunks=(1, 9, 7, 21)), url, offset=(5, 3, 1),
           header=header(block_type), storage_options=so)
    back = from_wkw(url, offset=(5, 3, 1), shape=(45, 38, 21), storage_options=so)
    assert back.npartitions > 4
    np.testing.assert_array_equal(back.compute(), data)
    # Overlapping updates of the same files from many tasks: none is lost.
    patch = np.full((1, 45, 38, 3), 7, np.uint16)
    to_wkw(da.from_array(patch, chunks=(1, 5, 5, 3)), url, offset=(5, 3, 10), storage_options=so)
    want = data.copy()
    want[:, :, :, 9:12] = 7
    with wkw.Dataset.open(url, storage_options=so) as ds:
        np.testing.assert_array_equal(ds.read((5, 3, 1), (45, 38, 21)), want)


def test_to_wkw_checks_its_input(tmp_path):
    root = str(tmp_path / "ds")
    wkw.Dataset.create(root, header(1, channels=2)).close()
    with pytest.raises(wkw.WKWException, match="channels"):
        to_wkw(da.zeros((3, 4, 4, 4), dtype=np.uint16), root)
    with pytest.raises(wkw.WKWException, match="type"):
        to_wkw(da.zeros((2, 4, 4, 4), dtype=np.float32), root)
    # 3-D input for a one-channel dataset, computed lazily.
    root1 = str(tmp_path / "one")
    d = to_wkw(da.ones((20, 20, 20), dtype=np.uint8, chunks=7), root1, (1, 1, 1),
               header=wkw.Header(np.uint8, block_len=8, file_len=1), compute=False)
    d.compute(scheduler="threads")
    assert wkw.Dataset.open(root1).read((0, 0, 0), (22, 22, 22)).sum() == 20**3


def test_hostile_boxes(tmp_path):
    root = str(tmp_path / "ds")
    wkw.Dataset.create(root, header(1)).close()
    for off, shape in (((-1, 0, 0), (1, 1, 1)), ((0, 0, 0), (2**32 + 1, 1, 1)), ((2**32 - 1, 0, 0), (2, 1, 1))):
        with pytest.raises(wkw.WKWException):
            WKWArray(root, off, shape)
    with pytest.raises(wkw.WKWException):
        WKWArray(root, (0, 0), (1, 1, 1))
    big = WKWArray(root, (0, 0, 0), (2**31, 2**31, 2**31))
    with pytest.raises(wkw.WKWException, match="limit"):
        big[...]  # refused before allocating
    assert big[0, 5, 6, 7] == 0
