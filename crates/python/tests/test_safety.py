"""Never lose a user's data: every writing call refuses an output that is its own input (also
through a symlink, `..` or a hard link), lies inside it or contains it, refuses an existing
output unless `overwrite=True`, and leaves the source byte for byte unchanged, locally and on
the S3 test server; long calls stop at Ctrl-C (SIGINT) between units of work, raise
KeyboardInterrupt and leave a state the same call (with `resume=True` for conversions)
finishes.

The Ctrl-C tests run the call in a child Python process. Its progress callback reports the
first unit on stdout and then waits until the child's SIGINT handler has run, so the parent
sends SIGINT while the call is provably unfinished; the handler runs on the main thread while
the call waits for its worker, holding the GIL until the worker is told to stop. Nothing waits
for a time.
"""

import hashlib
import os
import pathlib
import signal
import subprocess
import sys
import textwrap
import uuid

import numpy as np
import pytest

import scifmt
import scifmt.b2nd as b2nd
import scifmt.dwe as dwe
import scifmt.wkw as wkw

zarr = pytest.importorskip("zarr")

MARKER = ".wkw-zarr-conversion.json"

# A WKW mag of 64 data files (4 × 4 × 4 files of 16³ voxels: 8³ blocks, 2³ blocks per file).
FILES = 4
SIDE = 16 * FILES


def make_mag(root, block_type=wkw.Header.BLOCK_TYPE_LZ4, seed=0):
    """A uint8 WKW mag of FILES³ data files at `root` (a path or URL); returns its voxels."""
    data = np.random.default_rng(seed).integers(1, 255, (1, SIDE, SIDE, SIDE), dtype=np.uint8)
    header = wkw.Header(np.uint8, block_len=8, file_len=2, block_type=block_type)
    with wkw.Dataset.create(str(root), header) as ds:
        ds.write((0, 0, 0), data)
    return data


def read_mag(root):
    with wkw.Dataset.open(str(root)) as ds:
        return ds.read((0, 0, 0), (SIDE, SIDE, SIDE))


def digest(data):
    return hashlib.sha256(data).hexdigest()


def snapshot(path):
    """Every entry below `path` (a file, or a directory tree; symlinks not followed): relative
    path -> content hash, link target or "dir"."""
    path = pathlib.Path(path)
    if path.is_symlink():
        return {"": "link:" + os.readlink(path)}
    if path.is_file():
        return {"": digest(path.read_bytes())}
    if not path.exists():
        return None
    out = {}
    for p in sorted(path.rglob("*")):
        rel = p.relative_to(path).as_posix()
        if p.is_symlink():
            out[rel] = "link:" + os.readlink(p)
        elif p.is_file():
            out[rel] = digest(p.read_bytes())
        else:
            out[rel] = "dir"
    return out


# ---- the writers --------------------------------------------------------------------------


def _zarr_equals_mag(dst, data):
    array = zarr.open_array(str(dst), mode="r")
    np.testing.assert_array_equal(array[:, :SIDE, :SIDE, :SIDE], data)


def _convert(src, dst, overwrite):
    scifmt.convert(src, dst, to="zarr3", overwrite=overwrite)


def _convert_check(src, dst, data):
    assert not (pathlib.Path(dst) / MARKER).exists()
    _zarr_equals_mag(dst, data)


def _compress_files(src, dst, overwrite):
    with wkw.Dataset.open(str(src)) as ds:
        ds.compress(str(dst), compress_files=True, overwrite=overwrite).close()


def _compress_files_check(src, dst, data):
    with wkw.Dataset.open(str(dst)) as ds:
        assert ds.header.block_type == wkw.Header.BLOCK_TYPE_LZ4HC
        np.testing.assert_array_equal(ds.read((0, 0, 0), (SIDE, SIDE, SIDE)), data)
    assert wkw.verify(str(dst)) == []


def _compress_header(src, dst, overwrite):
    with wkw.Dataset.open(str(src)) as ds:
        ds.compress(str(dst), overwrite=overwrite).close()


def _compress_header_check(src, dst, data):
    with wkw.Dataset.open(str(dst)) as ds:
        assert ds.header.block_type == wkw.Header.BLOCK_TYPE_LZ4HC
        assert list(ds.list_files()) == []


#: Writers of a dataset from a dataset: (name, write(src, dst, overwrite), check(src, dst, data)).
DATASET_WRITERS = {
    "convert": (_convert, _convert_check),
    "wkw.Dataset.compress(compress_files=True)": (_compress_files, _compress_files_check),
    "wkw.Dataset.compress": (_compress_header, _compress_header_check),
}


def _make_wkw_file(path):
    root = path.parent / (path.name + ".ds")
    make_mag(root, block_type=wkw.Header.BLOCK_TYPE_RAW)
    os.replace(root / "z0" / "y0" / "x0.wkw", path)
    return path.read_bytes()


def _file_compress(src, dst, overwrite):
    wkw.File.compress(str(src), str(dst), overwrite=overwrite)


def _file_compress_check(src, dst, data):
    head = pathlib.Path(dst).read_bytes()[:8]
    assert head[:3] == b"WKW" and head[5] == wkw.Header.BLOCK_TYPE_LZ4HC


def _make_b2nd(path):
    data = np.arange(600, dtype=np.int32).reshape(20, 30)
    b2nd.save(data, path, chunks=(10, 10), blocks=(5, 5))
    return data


def _b2nd_save(src, dst, overwrite):
    with b2nd.open(src) as a:
        b2nd.save(a, dst, overwrite=overwrite)


def _b2nd_check(src, dst, data):
    with b2nd.open(dst) as a:
        np.testing.assert_array_equal(a[...], data)


def _make_dwe(path):
    data = np.arange(3 * 4 * 2, dtype=np.int16).reshape(3, 4, 2)
    dwe.write(path, data, 0.5, jump_interval=2)
    return data


def _dwe_write(src, dst, overwrite):
    with dwe.open(src) as f:
        dwe.write(dst, f, 0.5, jump_interval=2, overwrite=overwrite)


def _dwe_check(src, dst, data):
    with dwe.open(dst) as f:
        np.testing.assert_array_equal(f.to_numpy(), data)


#: Writers of a file from a file: (make(path) -> expected, write, check).
FILE_WRITERS = {
    "wkw.File.compress": (_make_wkw_file, _file_compress, _file_compress_check),
    "b2nd.save": (_make_b2nd, _b2nd_save, _b2nd_check),
    "dwe.write": (_make_dwe, _dwe_write, _dwe_check),
}

#: Outputs that are the input or overlap it: refused with ValueError, with or without
#: overwrite, before anything is written.
OVERLAPS = ["same", "inside", "around", "symlink", "dotdot"]


def _target(case, work, src):
    """The output path for `case`; `work` is the directory holding the source `src`."""
    if case == "same":
        return src
    if case == "inside":
        return src / "sub"
    if case == "around":
        return work
    if case == "symlink":
        link = work.parent / "link"
        link.symlink_to(src, target_is_directory=src.is_dir())
        return link
    if case == "dotdot":
        (work / "other").mkdir()
        return pathlib.Path(f"{work}/other/../{src.name}")
    if case == "hardlink":
        hard = work.parent / "hard"
        os.link(src, hard)
        return hard
    if case == "existing-dataset":
        out = work.parent / "out"
        make_mag(out, seed=7)
        return out
    if case == "existing-file":
        out = work.parent / "out"
        out.write_bytes(b"precious bytes")
        return out
    raise AssertionError(case)


@pytest.mark.parametrize("overwrite", [False, True])
@pytest.mark.parametrize("case", OVERLAPS + ["existing-dataset", "existing-file"])
@pytest.mark.parametrize("writer", sorted(DATASET_WRITERS))
def test_dataset_writers_keep_the_source(tmp_path, writer, case, overwrite):
    write, check = DATASET_WRITERS[writer]
    work = tmp_path / "work"
    src = work / "src"
    data = make_mag(src)
    dst = _target(case, work, src)
    before = snapshot(work)
    out_before = snapshot(dst) if case.startswith("existing") else None
    if case in OVERLAPS:
        with pytest.raises(ValueError) as e:
            write(src, dst, overwrite)
        assert "input" in str(e.value), str(e.value)
    elif not overwrite:
        with pytest.raises(FileExistsError) as e:
            write(src, dst, overwrite)
        assert str(dst) in str(e.value) and "overwrite=True" in str(e.value), str(e.value)
        assert snapshot(dst) == out_before
    else:
        write(src, dst, overwrite)
        check(src, dst, data)
    assert snapshot(work) == before
    np.testing.assert_array_equal(read_mag(src), data)


@pytest.mark.parametrize("overwrite", [False, True])
@pytest.mark.parametrize("case", OVERLAPS + ["hardlink", "existing-dataset", "existing-file"])
@pytest.mark.parametrize("writer", sorted(FILE_WRITERS))
def test_file_writers_keep_the_source(tmp_path, writer, case, overwrite):
    make, write, check = FILE_WRITERS[writer]
    work = tmp_path / "work"
    work.mkdir()
    src = work / "src.bin"
    data = make(src)
    dst = _target(case, work, src)
    before = snapshot(work)
    out_before = snapshot(dst) if case.startswith("existing") else None
    if case in OVERLAPS + ["hardlink"]:
        with pytest.raises(ValueError):
            write(src, dst, overwrite)
    elif case == "existing-dataset":
        # A directory is never replaced by a file.
        with pytest.raises(IsADirectoryError, match="overwrite=True"):
            write(src, dst, overwrite)
        assert snapshot(dst) == out_before
    elif not overwrite:
        with pytest.raises(FileExistsError) as e:
            write(src, dst, overwrite)
        assert str(dst) in str(e.value) and "overwrite=True" in str(e.value), str(e.value)
        assert snapshot(dst) == out_before
    else:
        write(src, dst, overwrite)
        check(src, dst, data if writer != "wkw.File.compress" else None)
    assert snapshot(work) == before


def test_a_file_that_appears_after_the_check_is_not_replaced(tmp_path, monkeypatch):
    """The check before writing can be outrun by another process; without overwrite=True the
    file is then renamed into place only onto a free name, so what appeared is kept."""
    for module in (b2nd, dwe):
        monkeypatch.setattr(module, "check_file_output", lambda *args, **kwargs: None)
    writers = {
        "x.b2nd": lambda p, **kw: b2nd.save(np.arange(100, dtype=np.int32), p, **kw),
        "x.dwe": lambda p, **kw: dwe.write(
            p, np.zeros((2, 3, 4), np.int16), scale_factor=0.5, jump_interval=1, **kw),
    }
    for name, write in writers.items():
        path = tmp_path / name
        path.write_bytes(b"someone else's")
        with pytest.raises(FileExistsError) as e:
            write(path)
        assert "appeared" in str(e.value) and "overwrite=True" in str(e.value)
        assert path.read_bytes() == b"someone else's"
        assert sorted(os.listdir(tmp_path)) == sorted(n for n in writers if (tmp_path / n).exists())
        write(path, overwrite=True)
        assert path.read_bytes() != b"someone else's"


def test_the_refusals_are_also_the_modules_own_errors(tmp_path):
    """Code written for the reference (or for earlier versions) catches WKWException and
    ConvertError; the new refusals are both those and the built-in exception."""
    src = tmp_path / "src"
    make_mag(src)
    make_mag(tmp_path / "out")
    with pytest.raises(wkw.WKWException) as e:
        wkw.Dataset.open(str(src)).compress(str(tmp_path / "out"), compress_files=True)
    assert isinstance(e.value, FileExistsError) and isinstance(e.value, wkw.OutputExistsError)
    with pytest.raises(wkw.WKWException) as e:
        wkw.Dataset.open(str(src)).compress(str(src / "inner"), compress_files=True)
    assert isinstance(e.value, ValueError) and isinstance(e.value, wkw.OverlapError)
    with pytest.raises(scifmt.ConvertError) as e:
        scifmt.convert(src, tmp_path / "out", to="zarr3")
    assert isinstance(e.value, FileExistsError)
    assert f"{tmp_path / 'out'}" in str(e.value) and "overwrite=True" in str(e.value)
    for bad in ("yes", 1, None):
        with pytest.raises(TypeError, match="overwrite"):
            wkw.Dataset.open(str(src)).compress(str(tmp_path / "x"), overwrite=bad)
        with pytest.raises(TypeError, match="overwrite"):
            b2nd.save(np.zeros(3), tmp_path / "x.b2nd", overwrite=bad)


@pytest.mark.parametrize("overwrite", [False, True])
@pytest.mark.parametrize("case", ["missing", "empty-dir", "other-dir", "existing-dataset", "existing-file"])
def test_dataset_create(tmp_path, case, overwrite):
    root = tmp_path / "ds"
    if case == "empty-dir":
        root.mkdir()
    elif case == "other-dir":
        root.mkdir()
        (root / "notes.txt").write_text("mine")
    elif case == "existing-dataset":
        make_mag(root)
    elif case == "existing-file":
        root.write_bytes(b"precious bytes")
    before = snapshot(root)
    header = wkw.Header(np.uint16, block_len=16, file_len=4)
    refused = case.startswith("existing") and not overwrite
    if refused:
        with pytest.raises(FileExistsError) as e:
            wkw.Dataset.create(str(root), header, overwrite=overwrite)
        assert isinstance(e.value, wkw.WKWException)
        assert str(root) in str(e.value) and "overwrite=True" in str(e.value), str(e.value)
        assert snapshot(root) == before
        return
    with wkw.Dataset.create(str(root), header, overwrite=overwrite) as ds:
        assert ds.header.voxel_type == np.uint16 and list(ds.list_files()) == []
    if case == "other-dir":
        # As the reference: header.wkw is added, nothing else touched.
        assert (root / "notes.txt").read_text() == "mine"
    # Opening with a header keeps the dataset it finds (the reference's `open`).
    with wkw.Dataset.open(str(root), wkw.Header(np.uint8)) as ds:
        assert ds.header.voxel_type == np.uint16


# ---- the same on the S3 test server -------------------------------------------------------


def remote_snapshot(url):
    """What a dataset on the store holds: header, data file names and every voxel."""
    with wkw.Dataset.open(url) as ds:
        names = sorted("/".join(f.split("/")[-3:]) for f in ds.list_files())
        voxels = ds.read((0, 0, 0), (SIDE, SIDE, SIDE))
        return repr(ds.header), names, digest(voxels.tobytes()), ds.verify()


def _remote_convert(src, dst, overwrite):
    scifmt.convert(src, dst, to="zarr3", overwrite=overwrite)


def _remote_convert_check(src, dst, data, tmp_path):
    back = tmp_path / "back"
    scifmt.convert(dst, back, to="wkw")
    np.testing.assert_array_equal(read_mag(back), data)


def _remote_compress_check(src, dst, data, tmp_path):
    _compress_files_check(src, dst, data)


def _remote_header_check(src, dst, data, tmp_path):
    _compress_header_check(src, dst, data)


REMOTE_WRITERS = {
    "convert": (_remote_convert, _remote_convert_check),
    "wkw.Dataset.compress(compress_files=True)": (_compress_files, _remote_compress_check),
    "wkw.Dataset.compress": (_compress_header, _remote_header_check),
}


@pytest.mark.parametrize("overwrite", [False, True])
@pytest.mark.parametrize("case", ["same", "inside", "around", "dotdot", "existing-dataset"])
@pytest.mark.parametrize("writer", sorted(REMOTE_WRITERS))
def test_dataset_writers_keep_the_source_on_s3(server, tmp_path, writer, case, overwrite):
    write, check = REMOTE_WRITERS[writer]
    work = f"s3://{server.bucket}/safety/{uuid.uuid4().hex}"
    src = f"{work}/src"
    data = make_mag(src)
    dst = {
        "same": src,
        "inside": f"{src}/sub",
        "around": work,
        "dotdot": f"{work}/other/../src",
        "existing-dataset": f"{work}/out",
    }[case]
    if case == "existing-dataset":
        make_mag(dst, seed=7)
        out_before = remote_snapshot(dst)
    before = remote_snapshot(src)
    if case != "existing-dataset":
        with pytest.raises(ValueError) as e:
            write(src, dst, overwrite)
        assert "input" in str(e.value), str(e.value)
    elif not overwrite:
        with pytest.raises(FileExistsError) as e:
            write(src, dst, overwrite)
        assert "overwrite=True" in str(e.value), str(e.value)
        assert remote_snapshot(dst) == out_before
    elif writer != "convert":
        # A WKW dataset at a URL is never replaced: a store cannot swap it in one step.
        with pytest.raises(FileExistsError) as e:
            write(src, dst, overwrite)
        assert "never replaced" in str(e.value), str(e.value)
        assert remote_snapshot(dst) == out_before
    else:
        write(src, dst, overwrite)
        check(src, dst, data, tmp_path)
    assert remote_snapshot(src) == before


def test_dataset_create_on_s3(server):
    url = f"s3://{server.bucket}/safety/{uuid.uuid4().hex}/ds"
    make_mag(url)
    before = remote_snapshot(url)
    header = wkw.Header(np.uint16, block_len=16, file_len=4)
    with pytest.raises(FileExistsError) as e:
        wkw.Dataset.create(url, header)
    assert isinstance(e.value, wkw.WKWException) and "overwrite=True" in str(e.value)
    assert remote_snapshot(url) == before
    # Never replaced at a URL, even with overwrite=True (no one-step swap on a store).
    with pytest.raises(FileExistsError) as e:
        wkw.Dataset.create(url, header, overwrite=True)
    assert "never replaced" in str(e.value) and "delete it first" in str(e.value)
    assert remote_snapshot(url) == before
    # A new URL is created.
    fresh = url + "-new"
    with wkw.Dataset.create(fresh, header, overwrite=True) as ds:
        assert list(ds.list_files()) == []
    with wkw.Dataset.open(fresh) as ds:
        assert ds.header.voxel_type == np.uint16 and list(ds.list_files()) == []


# ---- Ctrl-C -------------------------------------------------------------------------------

#: The child's preamble: a SIGINT handler that records that it ran and raises
#: KeyboardInterrupt (as Python's default handler does), and a progress callback that reports
#: the first unit and then waits until the handler has run.
CHILD = textwrap.dedent(
    """
    import signal, sys, threading

    handled = threading.Event()
    done = [0, 0]

    def on_sigint(signum, frame):
        handled.set()
        raise KeyboardInterrupt

    signal.signal(signal.SIGINT, on_sigint)

    def progress(n, total):
        done[:] = [n, total]
        if n == 1:
            print(f"PROGRESS {n} {total}", flush=True)
            handled.wait()

    try:
        run(progress)
    except KeyboardInterrupt:
        print(f"INTERRUPTED {done[0]} {done[1]}", flush=True)
        sys.exit(0)
    print(f"FINISHED {done[0]} {done[1]}", flush=True)
    sys.exit(3)
    """
)


def interrupt(call, *args):
    """Runs `call` (Python source defining `run(progress)`; `args` are its `sys.argv[1:]`) in a
    child process, sends SIGINT once it reported its first unit, and returns (units done when
    it stopped, total units)."""
    proc = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(call) + CHILD, *map(str, args)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        first = proc.stdout.readline()
        assert first.startswith("PROGRESS 1 "), (first, proc.stderr.read())
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, (proc.returncode, out, err)
    word, done, total = out.split()
    assert word == "INTERRUPTED", out
    return int(done), int(total)


def test_ctrl_c_stops_a_conversion_that_resume_finishes(tmp_path):
    src, dst = tmp_path / "wkw", tmp_path / "zarr"
    data = make_mag(src)
    before = snapshot(src)
    done, total = interrupt(
        """
        import scifmt
        def run(progress):
            scifmt.convert(sys.argv[1], sys.argv[2], to="zarr3", jobs=1, progress=progress)
        """,
        src,
        dst,
    )
    assert total == FILES**3
    assert 1 <= done < total
    # Stopped before the end: marked unfinished, no metadata, fewer shards than units.
    assert (dst / MARKER).exists()
    assert not (dst / "zarr.json").exists()
    shards = [p for p in dst.rglob("*") if p.is_file() and p.name != MARKER]
    assert len(shards) < total
    assert snapshot(src) == before
    with pytest.raises(FileExistsError):
        scifmt.convert(src, dst, to="zarr3")
    rest = scifmt.convert(src, dst, to="zarr3", resume=True, verify=True)
    assert rest.shards_written + rest.shards_skipped == total
    assert rest.shards_skipped >= 1
    assert not (dst / MARKER).exists()
    _zarr_equals_mag(dst, data)
    assert snapshot(src) == before


def test_ctrl_c_stops_a_wkw_compress_and_leaves_no_partial_dataset(tmp_path):
    src, dst = tmp_path / "src", tmp_path / "dst"
    data = make_mag(src)
    before = snapshot(src)
    done, total = interrupt(
        """
        import scifmt.wkw as wkw
        def run(progress):
            with wkw.Dataset.open(sys.argv[1], threads=1) as ds:
                ds.compress(sys.argv[2], compress_files=True, progress=progress)
        """,
        src,
        dst,
    )
    assert total == FILES**3 and 1 <= done < total
    # The dataset was built beside `dst` and is gone with it: the call can simply run again.
    assert sorted(p.name for p in tmp_path.iterdir()) == ["src"]
    assert snapshot(src) == before
    with wkw.Dataset.open(str(src)) as ds:
        ds.compress(str(dst), compress_files=True).close()
    _compress_files_check(src, dst, data)
    assert snapshot(src) == before


def test_ctrl_c_stops_a_wkw_verify(tmp_path):
    src = tmp_path / "src"
    make_mag(src)
    done, total = interrupt(
        """
        import scifmt.wkw as wkw
        def run(progress):
            wkw.verify(sys.argv[1], threads=1, progress=progress)
        """,
        src,
    )
    assert total == FILES**3 and 1 <= done < total
    assert wkw.verify(str(src)) == []


def test_progress_callbacks_of_wkw_compress_and_verify(tmp_path):
    src = tmp_path / "src"
    make_mag(src)
    seen = []
    assert wkw.verify(str(src), progress=lambda d, t: seen.append((d, t))) == []
    assert sorted(seen) == [(i, FILES**3) for i in range(1, FILES**3 + 1)]
    seen.clear()
    with wkw.Dataset.open(str(src)) as ds:
        ds.compress(str(tmp_path / "dst"), compress_files=True,
                    progress=lambda d, t: seen.append((d, t))).close()
    assert sorted(seen) == [(i, FILES**3) for i in range(1, FILES**3 + 1)]

    def boom(done, total):
        raise KeyError("from progress")

    # The callback's exception propagates; the work itself completed.
    with pytest.raises(KeyError, match="from progress"):
        wkw.verify(str(src), progress=boom)
    with pytest.raises(TypeError, match="progress"):
        wkw.verify(str(src), progress=5)


@pytest.mark.parametrize("threads", [None, 1])
def test_boxes_of_64_mib_and_more_go_through_the_interruptible_path(tmp_path, threads):
    """Reads and writes of 64 MiB or more run on a worker thread with the dataset opened again
    with the call's own cancel flag: the same voxels as any other call, and later small calls
    see what the large ones wrote."""
    shape = (512, 512, 256)
    data = (np.arange(np.prod(shape), dtype=np.uint32) % 251).astype(np.uint8).reshape(shape)
    header = wkw.Header(np.uint8, block_len=32, file_len=8, block_type=wkw.Header.BLOCK_TYPE_LZ4)
    with wkw.Dataset.create(str(tmp_path / "ds"), header, threads=threads) as ds:
        ds.write((0, 0, 0), np.full((8, 8, 8), 9, np.uint8))
        assert ds.read((0, 0, 0), (1, 1, 1))[0, 0, 0, 0] == 9
        ds.write((3, 0, 0), data)
        np.testing.assert_array_equal(ds.read((3, 0, 0), shape)[0], data)
        np.testing.assert_array_equal(ds.read((3, 0, 0), shape, order="C")[0], data)
        assert ds.read((0, 0, 0), (4, 1, 1))[0, :, 0, 0].tolist() == [9, 9, 9, data[0, 0, 0]]
    assert wkw.verify(str(tmp_path / "ds")) == []
