"""Shared objects used from many Python threads at once.

The extension declares itself free-threading-safe (``gil_used = false``): on a free-threaded
interpreter these threads run truly in parallel, on a GIL build the calls still overlap (each
releases the GIL while it reads, decodes or writes). Every result is checked against the
reference packages' or a single-threaded read.
"""

import concurrent.futures as futures
import sys
import sysconfig

import numpy as np
import pytest

import scifmt.b2nd as b2nd
import scifmt.blosc as blosc
import scifmt.wkw as wkw

ref = pytest.importorskip("wkw")
blosc2 = pytest.importorskip("blosc2")

THREADS = 8
ROUNDS = 6


def test_importing_the_extension_keeps_the_gil_off():
    # A module that does not declare itself free-threading-safe turns the GIL back on when
    # imported into a free-threaded interpreter.
    if not sysconfig.get_config_var("Py_GIL_DISABLED"):
        pytest.skip("free-threaded interpreters only (the release workflow's 3.13t/3.14t jobs)")
    import scifmt._scifmt  # noqa: F401

    assert not sys._is_gil_enabled()


def test_one_wkw_dataset_read_by_many_threads(testdata):
    path = str(testdata / "wkw" / "u16_3ch_lz4_b8_f4")
    with ref.Dataset.open(path) as r:
        boxes = [((x, y, z), (24, 20, 16)) for x in (0, 17) for y in (0, 9) for z in (0, 33)]
        expected = [r.read(off, shape) for off, shape in boxes]
    with wkw.Dataset.open(path) as ds:

        def work(i):
            for k in range(ROUNDS):
                j = (i + k) % len(boxes)
                off, shape = boxes[j]
                np.testing.assert_array_equal(ds.read(off, shape), expected[j])
            return True

        with futures.ThreadPoolExecutor(THREADS) as pool:
            assert all(pool.map(work, range(THREADS)))


def test_many_threads_write_one_wkw_dataset(tmp_path):
    # Each thread writes its own files (whole file-aligned boxes); then every box reads back
    # with the reference package.
    path = str(tmp_path / "ds")
    ds = wkw.Dataset.create(path, wkw.Header(np.uint8, block_len=8, file_len=2))
    side = 16  # one file
    data = {i: np.full((side, side, side), i + 1, np.uint8) for i in range(THREADS)}

    def work(i):
        ds.write((i * side, 0, 0), data[i])
        return True

    with futures.ThreadPoolExecutor(THREADS) as pool:
        assert all(pool.map(work, range(THREADS)))
    ds.close()
    with ref.Dataset.open(path) as r:
        for i in range(THREADS):
            np.testing.assert_array_equal(r.read((i * side, 0, 0), (side, side, side))[0], data[i])


def test_one_b2nd_array_read_by_many_threads(testdata):
    path = str(testdata / "blosc" / "frames" / "b2nd_u2_7x9x11.b2nd")
    expected = blosc2.open(path)[...]
    arr = b2nd.open(path)
    regions = [((a, b, c), (a + 3, b + 5, c + 4)) for a in (0, 4) for b in (0, 4) for c in (0, 7)]

    def work(i):
        for k in range(ROUNDS):
            start, stop = regions[(i + k) % len(regions)]
            got = arr.read_region(start, stop)
            want = expected[start[0]:stop[0], start[1]:stop[1], start[2]:stop[2]]
            np.testing.assert_array_equal(got, want)
        return True

    with futures.ThreadPoolExecutor(THREADS) as pool:
        assert all(pool.map(work, range(THREADS)))
    arr.close()


def test_blosc_from_many_threads_gives_the_single_thread_bytes():
    rng = np.random.default_rng(7)
    inputs = [(rng.integers(0, 50, 40_000) * (i + 1)).astype(np.int32) for i in range(THREADS)]
    expected = [blosc.compress(a.tobytes(), typesize=4) for a in inputs]

    def work(i):
        for _ in range(ROUNDS):
            c = blosc.compress(inputs[i].tobytes(), typesize=4)
            assert c == expected[i]
            assert blosc.decompress(c) == inputs[i].tobytes()
        return True

    with futures.ThreadPoolExecutor(THREADS) as pool:
        assert all(pool.map(work, range(THREADS)))


def test_closing_while_other_threads_read_is_an_error_never_a_crash(testdata):
    path = str(testdata / "wkw" / "u16_3ch_lz4_b8_f4")
    ds = wkw.Dataset.open(path)
    outcomes = []

    def work(i):
        for _ in range(ROUNDS * 4):
            try:
                ds.read((0, 0, 0), (16, 16, 16))
                outcomes.append("read")
            except Exception as e:  # noqa: BLE001 - a closed dataset raises; anything else fails
                assert "closed" in str(e).lower(), e
                outcomes.append("closed")
        return True

    with futures.ThreadPoolExecutor(THREADS) as pool:
        running = [pool.submit(work, i) for i in range(THREADS)]
        ds.close()
        assert all(f.result() for f in running)
    assert set(outcomes) <= {"read", "closed"}
    with pytest.raises(Exception, match="(?i)closed"):
        ds.read((0, 0, 0), (1, 1, 1))
