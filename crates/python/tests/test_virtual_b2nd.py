"""b2nd arrays virtualized from Python: ``scifmt.virtual.B2ndParser`` (VirtualiZarr 2.5) and
``scifmt.virtualize`` with b2nd sources (beside WKW ones). ``.b2nd`` files written here by
python-blosc2 (several dtypes and byte orders, blocks smaller than chunks, edge chunks, chunks
stored as runs of zeros or NaNs, uninitialised chunks) are read back through VirtualiZarr's
``ManifestStore`` (``loadable_variables``), through its Icechunk writer, through Kerchunk
references read by fsspec + zarr-python, locally and on the S3 test server, and compared with
``blosc2.open(path)[...]``. What cannot be virtualized, and damaged frames, raise
``VirtualizeError`` naming the file."""

import datetime
import json
import os
import subprocess
import urllib.request

import numpy as np
import pytest
from conftest import local_registry, scifmt_command

import scifmt

blosc2 = pytest.importorskip("blosc2")
zarr = pytest.importorskip("zarr")
reference = pytest.importorskip("fsspec.implementations.reference")
zarr_storage = pytest.importorskip("zarr.storage")
pytest.importorskip("scifmt.codecs")  # the `b2nd` codec's entry points

from test_virtualize_b2nd import ARRAYS as CLI_ARRAYS  # noqa: E402
from test_virtualize_b2nd import _values as _real_values  # noqa: E402


def _values(shape, dtype):
    """Values of every kind: complex ones with distinct real and imaginary parts."""
    dtype = np.dtype(dtype)
    if dtype.kind == "c":
        n = int(np.prod(shape))
        v = (np.arange(n) - n / 3) / 7.0 + 1j * (np.arange(n) % 5 - 2.5)
        return v.astype(dtype).reshape(shape)
    return _real_values(shape, dtype)


# (name, shape, dtype, chunks, blocks): those of the CLI's tests, complex numbers and more;
# blocks always smaller than chunks, shapes that are not multiples of them.
ARRAYS = CLI_ARRAYS + [
    ("c8_2d", (13, 7), "<c8", (6, 4), (3, 2)),
    ("be_c16", (9, 5), ">c16", (4, 4), (2, 2)),
    ("i8_3d", (7, 9, 5), "<i8", (4, 4, 4), (2, 2, 2)),
    ("f2_1d", (100,), "<f2", (32,), (8,)),
    ("be_u2", (10, 10), ">u2", (4, 8), (2, 4)),
]


def _write(tmp_path, name, shape, dtype, chunks, blocks, values=None, **kwargs):
    path = tmp_path / f"{name}.b2nd"
    x = _values(shape, dtype) if values is None else values
    blosc2.asarray(x, urlpath=str(path), mode="w", chunks=chunks, blocks=blocks, **kwargs)
    return path


def _parser(**kwargs):
    from scifmt.virtual import B2ndParser

    return B2ndParser(**kwargs)


def _open(vz, url, parser=None, loadable=None, registry=None):
    return vz.open_virtual_dataset(str(url), registry=registry or local_registry(),
                                   parser=parser or _parser(),
                                   loadable_variables=loadable)  # fmt: skip


def _want(path):
    return blosc2.open(str(path))[...]


def _kerchunk_array(refs, node=None):
    fs = reference.ReferenceFileSystem(str(refs), asynchronous=True)
    store = zarr_storage.FsspecStore(fs, read_only=True, path="")
    if node is None:
        return zarr.open_array(store=store, mode="r", zarr_format=3)
    return zarr.open_group(store=store, mode="r", zarr_format=3)[node]


# --- B2ndParser ---------------------------------------------------------------------------------


@pytest.mark.parametrize("name,shape,dtype,chunks,blocks", ARRAYS)
def test_parser_loads_like_blosc2(vz, tmp_path, name, shape, dtype, chunks, blocks):
    path = _write(tmp_path, name, shape, dtype, chunks, blocks)
    parser = _parser()
    vds = _open(vz, path, parser)
    assert list(vds.data_vars) == [name]
    var = vds[name]
    assert var.dims == tuple(f"dim_{i}" for i in range(len(shape)))
    assert var.shape == shape
    assert type(var.data).__name__ == "ManifestArray"
    want = _want(path)
    assert var.dtype == want.dtype.newbyteorder("=")
    loaded = _open(vz, path, loadable=[name])[name].values
    assert loaded.shape == want.shape
    np.testing.assert_array_equal(loaded, want)
    # Only the metadata was read.
    assert parser.summary["arrays"] == 1 and parser.summary["files"] == 1
    assert 0 < parser.summary["bytes_read"] < path.stat().st_size
    # The file's modification time, which a ManifestArray cannot carry.
    ((url, checksum),) = parser.checksums.items()
    assert url == path.resolve().as_uri()
    seconds, nanos = checksum["last_modified"]
    assert seconds * 10**9 + nanos == path.stat().st_mtime_ns


def test_parser_manifest_references_each_stored_chunk(vz, tmp_path):
    name, shape, dtype, chunks, blocks = ARRAYS[1]
    path = _write(tmp_path, name, shape, dtype, chunks, blocks)
    parser = _parser()
    store = parser(path.resolve().as_uri(), local_registry())
    marr = store._group[name]
    grid = tuple(-(-s // c) for s, c in zip(shape, chunks))
    assert marr.manifest.shape_chunk_grid == grid
    entries = marr.manifest.dict()
    assert len(entries) == parser.summary["references"] > 0
    size = path.stat().st_size
    spans = []
    for key, entry in entries.items():
        assert entry["path"] == path.resolve().as_uri()
        assert entry["offset"] > 0 and entry["offset"] + entry["length"] <= size
        spans.append((entry["offset"], entry["offset"] + entry["length"]))
    spans.sort()
    assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:]))  # no chunk overlaps another
    # Each referenced byte range is that chunk as python-blosc2 stores it: it decodes (through
    # the b2nd codec of the array's metadata) to the chunk python-blosc2 reads.
    arr = blosc2.open(str(path))
    raw = path.read_bytes()
    codec = scifmt.codecs.B2nd(chunkshape=chunks, dtype=dtype, blockshape=blocks)
    for key, entry in entries.items():
        idx = tuple(int(i) for i in key.split("."))
        chunk = np.frombuffer(codec.decode(raw[entry["offset"]:entry["offset"] + entry["length"]]),
                              dtype=dtype).reshape(chunks)  # fmt: skip
        region = tuple(slice(i * c, min((i + 1) * c, s)) for i, c, s in zip(idx, chunks, shape))
        part = arr[region]
        np.testing.assert_array_equal(chunk[tuple(slice(0, p) for p in part.shape)], part)


def test_parser_names_the_variable_like_the_file_stem(vz, tmp_path):
    (tmp_path / "with space").mkdir()
    path = _write(tmp_path / "with space", "my.data", (6, 5), "<i4", (4, 4), (2, 2))
    # A file:// URL with percent-encoding, as VirtualiZarr makes of paths.
    vds = _open(vz, path.resolve().as_uri(), loadable=["my.data"])
    assert list(vds.data_vars) == ["my.data"]
    np.testing.assert_array_equal(vds["my.data"].values, _want(path))
    # A frame named otherwise is still a frame for B2ndParser (told by what it is given).
    other = tmp_path / "frame.bin"
    other.write_bytes(path.read_bytes())
    vds = _open(vz, other, loadable=["frame"])
    np.testing.assert_array_equal(vds["frame"].values, _want(path))


def test_parser_zero_and_uninitialised_chunks_are_missing(vz, tmp_path):
    # blosc2.zeros stores every chunk as a run of zeros (no bytes): those have no reference
    # and read as the fill value 0, the written ones are referenced.
    path = tmp_path / "z.b2nd"
    z = blosc2.zeros((50, 40), dtype="<f8", urlpath=str(path), mode="w", chunks=(20, 20),
                     blocks=(10, 10))  # fmt: skip
    z[0:5, 0:5] = 1.0
    z[45:50, 30:35] = -2.5
    del z
    parser = _parser()
    store = parser(str(path), local_registry())
    paths = store._group["z"].manifest._paths
    assert paths.shape == (3, 2)
    written = {(0, 0), (2, 1)}
    for i in range(3):
        for j in range(2):
            assert (paths[i, j] != "") == ((i, j) in written), (i, j)
    assert parser.summary["references"] == 2
    loaded = _open(vz, path, loadable=["z"])["z"].values
    np.testing.assert_array_equal(loaded, _want(path))
    # blosc2.empty leaves chunks uninitialised (content unspecified): unreferenced, they read
    # as 0; the written chunk as written.
    path = tmp_path / "e.b2nd"
    e = blosc2.empty((30,), dtype="<i4", urlpath=str(path), mode="w", chunks=(10,), blocks=(5,))
    e[0:10] = np.arange(10, dtype="<i4") + 1
    del e
    parser = _parser()
    store = parser(str(path), local_registry())
    paths = store._group["e"].manifest._paths
    got = _open(vz, path, loadable=["e"])["e"].values
    np.testing.assert_array_equal(got[0:10], _want(path)[0:10])
    for j in range(3):
        if paths[j] == "":
            np.testing.assert_array_equal(got[j * 10:(j + 1) * 10], 0)


def _nan_frame(tmp_path, dtype="<f8"):
    """A frame of ``blosc2.nans`` (its chunks stored as runs of NaNs), a few values written."""
    path = tmp_path / f"nan{np.dtype(dtype).itemsize}.b2nd"
    f = blosc2.nans((30, 20), dtype=dtype, urlpath=str(path), mode="w", chunks=(10, 8),
                    blocks=(5, 4))  # fmt: skip
    f[0:3, 0:3] = 1
    del f
    return path


@pytest.mark.parametrize("dtype", ["<f8", "<f4"])
def test_parser_refuses_nan_runs_and_virtualize_writes_them_inline(vz, tmp_path, dtype):
    path = _nan_frame(tmp_path, dtype)
    # scifmt.virtualize writes python-blosc2's runs of NaNs inline in Kerchunk references...
    refs = tmp_path / "refs.json"
    summary = scifmt.virtualize(path, refs, to="kerchunk")
    assert summary["inline"] > 0
    np.testing.assert_array_equal(_kerchunk_array(refs)[...], _want(path))
    # ... which a VirtualiZarr 2.5 manifest cannot hold: B2ndParser refuses the frame, naming
    # the file, the first such chunk and what to use instead (rather than reading them as 0).
    stem = path.name.removesuffix(".b2nd")
    with pytest.raises(scifmt.VirtualizeError) as e:
        _open(vz, path)
    msg = str(e.value)
    assert path.name in msg and f"array {stem!r}" in msg
    assert "c/0/1" in msg and "to='kerchunk'" in msg, msg


def test_parser_to_icechunk_round_trip(vz, tmp_path):
    icechunk = pytest.importorskip("icechunk")
    src = tmp_path / "src"
    src.mkdir()
    paths = [_write(src, *a) for a in ARRAYS]
    z = blosc2.zeros((50, 40), dtype="<i2", urlpath=str(src / "zeros.b2nd"), mode="w",
                     chunks=(20, 20), blocks=(10, 10))  # fmt: skip
    z[10:30, 5:25] = 7
    del z
    paths.append(src / "zeros.b2nd")
    prefix = f"file://{src.resolve()}/"
    config = icechunk.RepositoryConfig.default()
    config.set_virtual_chunk_container(
        icechunk.VirtualChunkContainer(prefix, icechunk.local_filesystem_store(str(src.resolve())))
    )
    storage = icechunk.local_filesystem_storage(str(tmp_path / "repo"))
    repo = icechunk.Repository.create(storage, config,
                                      authorize_virtual_chunk_access={prefix: None})  # fmt: skip
    session = repo.writable_session("main")
    for path in paths:
        vds = _open(vz, path)
        vds.vz.to_icechunk(session.store, group=path.stem)
    session.commit("virtual b2nd")
    group = zarr.open_group(repo.readonly_session("main").store, mode="r")
    for path in paths:
        a = group[f"{path.stem}/{path.stem}"]
        assert a.metadata.codecs[0].to_dict()["name"] == "b2nd"
        np.testing.assert_array_equal(a[...], _want(path), err_msg=path.name)


def test_a_source_rewritten_after_virtualizing_fails_the_icechunk_read(vz, tmp_path):
    """Icechunk refuses chunks of a file modified after ``last_updated_at`` (the modification
    time B2ndParser reports): no wrong data. The rewrite keeps every chunk's offset and length
    (uncompressed chunks of one shape), so without the check the new values would be read, as
    they are while the file's modification time is put back."""
    icechunk = pytest.importorskip("icechunk")
    src = tmp_path / "src"
    src.mkdir()
    path = src / "a.b2nd"
    x = np.arange(24 * 10, dtype="<f4").reshape(24, 10)
    cparams = {"clevel": 0}
    blosc2.asarray(x, urlpath=str(path), mode="w", chunks=(8, 10), blocks=(4, 5), cparams=cparams)
    before = path.read_bytes()
    parser = _parser()
    vds = _open(vz, path, parser)
    seconds, _ = parser.checksums[path.resolve().as_uri()]["last_modified"]
    prefix = f"file://{src.resolve()}/"
    config = icechunk.RepositoryConfig.default()
    config.set_virtual_chunk_container(icechunk.VirtualChunkContainer(
        prefix, icechunk.local_filesystem_store(str(src.resolve()))))  # fmt: skip
    repo = icechunk.Repository.create(icechunk.local_filesystem_storage(str(tmp_path / "repo")),
                                      config, authorize_virtual_chunk_access={prefix: None})  # fmt: skip
    session = repo.writable_session("main")
    stamp = datetime.datetime.fromtimestamp(seconds + 1, tz=datetime.timezone.utc)
    vds.vz.to_icechunk(session.store, last_updated_at=stamp)
    session.commit("virtual b2nd")

    def read():
        return zarr.open_group(repo.readonly_session("main").store, mode="r")["a"][...]

    np.testing.assert_array_equal(read(), x)
    stat = path.stat()
    # The same layout, other values.
    blosc2.asarray(-x, urlpath=str(path), mode="w", chunks=(8, 10), blocks=(4, 5),
                   cparams=cparams)  # fmt: skip
    after = path.read_bytes()
    assert len(after) == len(before) and after != before
    # With the old modification time put back, the new values are read: the hazard is real...
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    np.testing.assert_array_equal(read(), -x)
    # ... and with a modification time after the stamp, as a rewrite has, the read is refused.
    os.utime(path, (seconds + 120, seconds + 120))
    with pytest.raises(Exception, match="(?i)modified|changed|match|precondition"):
        read()


def test_the_command_s_icechunk_repository_with_split_manifests_reads_like_blosc2(tmp_path):
    """``scifmt virtualize a.b2nd REPO`` (``--to icechunk``) of an array of 70 × 2 chunks: the
    writer splits manifests every 32 chunks along each axis (3 manifests here), and Python
    ``icechunk`` 1.1 + zarr-python read it equal to ``blosc2.open(...)[...]``."""
    icechunk = pytest.importorskip("icechunk")
    command = scifmt_command()
    path = _write(tmp_path, "long", (70, 10), "<i4", (1, 5), (1, 5))
    repo = tmp_path / "repo"
    out = subprocess.run([command, "virtualize", str(path), str(repo), "--json"],
                         capture_output=True, text=True)  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["references"] == 140
    assert len(list((repo / "manifests").iterdir())) == 3
    prefix = f"file://{tmp_path.resolve()}/"
    r = icechunk.Repository.open(icechunk.local_filesystem_storage(str(repo)),
                                 authorize_virtual_chunk_access={prefix: None})  # fmt: skip
    a = zarr.open_array(r.readonly_session("main").store, mode="r")
    np.testing.assert_array_equal(a[...], _want(path))


def test_parser_to_kerchunk_is_refused_not_wrong(vz, tmp_path):
    """VirtualiZarr 2.5's Kerchunk writer converts to Zarr v2 metadata, dropping array→bytes
    codecs such as ``b2nd``: it fails (inside VirtualiZarr) rather than write references whose
    chunks would not be decoded; ``scifmt.virtualize(..., to="kerchunk")`` writes them."""
    name, shape, dtype, chunks, blocks = ARRAYS[0]
    path = _write(tmp_path, name, shape, dtype, chunks, blocks)
    vds = _open(vz, path)
    refs = tmp_path / "vz.json"
    with pytest.raises(Exception):
        vds.vz.to_kerchunk(str(refs), format="json")
    assert not refs.exists()
    ours = tmp_path / "ours.json"
    scifmt.virtualize(path, ours, to="kerchunk")
    np.testing.assert_array_equal(_kerchunk_array(ours)[...], _want(path))


def test_parser_arguments_and_sources_that_are_refused(vz, tmp_path):
    from scifmt.virtual import B2ndParser, WKWParser

    for kwargs, error in [
        ({"concurrency": 0}, ValueError), ({"concurrency": 2000}, ValueError),
        ({"concurrency": None}, TypeError), ({"concurrency": True}, TypeError),
        ({"storage_options": "x"}, TypeError), ({"storage_options": ["a"]}, TypeError),
    ]:  # fmt: skip
        with pytest.raises(error):
            B2ndParser(**kwargs)
    with pytest.raises(TypeError):
        B2ndParser()(None, local_registry())
    with pytest.raises(TypeError):
        B2ndParser(2)  # keyword-only
    assert "concurrency=3" in repr(B2ndParser(concurrency=3))
    with pytest.raises(scifmt.VirtualizeError, match="nowhere"):
        _open(vz, tmp_path / "nowhere.b2nd")
    # A WKW mag is no frame; a frame is no WKW.
    mag = os.path.join(os.path.dirname(__file__), "..", "..", "..", "testdata", "wkw",
                       "u8_raw_b8_f4")  # fmt: skip
    with pytest.raises(scifmt.VirtualizeError, match="u8_raw_b8_f4"):
        _open(vz, mag)
    path = _write(tmp_path, "f", (6, 5), "<i4", (4, 4), (2, 2))
    with pytest.raises(scifmt.VirtualizeError):
        vz.open_virtual_dataset(str(path), registry=local_registry(), parser=WKWParser())


# --- What is not a virtualizable b2nd array, damaged frames --------------------------------------


def _refused_sources(tmp_path):
    """(path, words of the message) of sources blosc2 makes that are refused."""
    out = []
    # (Sparse b2nd arrays are virtualized: test_virtual_b2nd_sparse.py.)
    plain = tmp_path / "plain.b2frame"
    schunk = blosc2.SChunk(chunksize=400, urlpath=str(plain), mode="w", contiguous=True)
    schunk.append_data(np.arange(100, dtype="<i4"))
    del schunk
    out.append((plain, "metalayer"))
    zero_d = tmp_path / "scalar.b2nd"
    blosc2.asarray(np.array(2.5), urlpath=str(zero_d), mode="w")
    out.append((zero_d, "0-dimensional"))
    structured = tmp_path / "structured.b2nd"
    blosc2.asarray(np.zeros(10, dtype=[("a", "<i4"), ("b", "<f8")]), urlpath=str(structured),
                   mode="w")  # fmt: skip
    out.append((structured, "dtype"))
    return out


def test_what_is_not_a_b2nd_array_is_refused_naming_the_file(vz, tmp_path):
    for path, words in _refused_sources(tmp_path):
        assert path.exists(), path
        refs = tmp_path / "refs.json"
        with pytest.raises(scifmt.VirtualizeError, match=words) as e:
            scifmt.virtualize(path, refs, to="kerchunk")
        assert path.name in str(e.value), e.value
        assert not refs.exists()
        with pytest.raises(scifmt.VirtualizeError, match=words) as e:
            _open(vz, path)
        assert path.name in str(e.value), e.value


def _damaged(tmp_path):
    """Damaged frames: truncated, garbage, a bad index; each named ``*.b2nd``."""
    good = _write(tmp_path, "good", (40, 30), "<f8", (16, 16), (8, 8))
    raw = good.read_bytes()
    rng = np.random.default_rng(7)
    cases = {
        "empty": b"",
        "magic_only": raw[:12],
        "half": raw[: len(raw) // 2],
        "no_trailer": raw[:-8],
        "garbage": rng.integers(0, 256, size=len(raw), dtype=np.uint8).tobytes(),
        "garbage_with_magic": raw[:16] + rng.integers(0, 256, size=len(raw) - 16,
                                                      dtype=np.uint8).tobytes(),  # fmt: skip
    }
    # The header's frame length (an int64 after its marker at byte 16) far past the file's end.
    bad_len = bytearray(raw)
    bad_len[17:25] = (2**62).to_bytes(8, "big")
    cases["bad_frame_len"] = bytes(bad_len)
    out = []
    for name, data in cases.items():
        p = tmp_path / f"{name}.b2nd"
        p.write_bytes(data)
        out.append(p)
    return out


def test_damaged_frames_raise_virtualize_error(vz, tmp_path):
    for path in _damaged(tmp_path):
        refs = tmp_path / "refs.json"
        with pytest.raises(scifmt.VirtualizeError) as e:
            scifmt.virtualize(path, refs, to="kerchunk")
        assert path.name in str(e.value), (path.name, str(e.value))
        assert not refs.exists()
        with pytest.raises(scifmt.VirtualizeError) as e:
            _parser()(str(path), local_registry())
        assert path.name in str(e.value), (path.name, str(e.value))


# --- scifmt.virtualize with b2nd sources -------------------------------------------------------


def test_virtualize_one_b2nd_file_is_the_root_array(tmp_path):
    for name, shape, dtype, chunks, blocks in ARRAYS:
        path = _write(tmp_path, name, shape, dtype, chunks, blocks)
        refs = tmp_path / f"{name}.json"
        summary = scifmt.virtualize(path, refs, concurrency=1, to="kerchunk")
        assert (summary["arrays"], summary["groups"], summary["files"]) == (1, 0, 1)
        assert summary["inline"] == 0 and summary["references"] > 0
        assert summary["bytes_written"] == refs.stat().st_size
        a = _kerchunk_array(refs)
        assert a.chunks == chunks
        np.testing.assert_array_equal(a[...], _want(path), err_msg=name)


def test_virtualize_b2nd_beside_wkw_matches_the_command(tmp_path, testdata_root):
    src = tmp_path / "src"
    src.mkdir()
    paths = [_write(src, *a) for a in ARRAYS[:4]]
    nan = _nan_frame(src)
    mag = testdata_root / "wkw" / "u8_raw_b8_f4"
    sources = [*paths, nan, mag]
    ours = tmp_path / "ours.json"
    summary = scifmt.virtualize(sources, ours, to="kerchunk")
    assert summary["groups"] == 1 and summary["arrays"] == len(sources)
    assert summary["inline"] > 0
    theirs = tmp_path / "theirs.json"
    out = subprocess.run([scifmt_command(), "virtualize", *map(str, sources), str(theirs),
                          "--to", "kerchunk", "--json"], capture_output=True, text=True)  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert json.loads(ours.read_text()) == json.loads(theirs.read_text())
    cli = json.loads(out.stdout)
    for k in ("groups", "arrays", "files", "references", "inline", "bytes_read"):
        assert summary[k] == cli[k], k
    # Each source the node of its file name, read back like python-blosc2 (and wkw).
    for path in [*paths, nan]:
        np.testing.assert_array_equal(_kerchunk_array(ours, path.name)[...], _want(path),
                                      err_msg=path.name)  # fmt: skip
    wkw = pytest.importorskip("wkw")
    a = _kerchunk_array(ours, mag.name)
    with wkw.Dataset.open(str(mag)) as ds:
        np.testing.assert_array_equal(a[...], ds.read((0, 0, 0), a.shape[1:]))
    # Two sources of one name are refused, as the command refuses them.
    other = tmp_path / "other"
    other.mkdir()
    twin = _write(other, *ARRAYS[0])
    with pytest.raises(scifmt.VirtualizeError, match="two sources are named"):
        scifmt.virtualize([paths[0], twin], tmp_path / "x.json", to="kerchunk")
    assert not (tmp_path / "x.json").exists()


# --- the S3 test server -------------------------------------------------------------------------


def _s3_store(server):
    from obstore.store import S3Store

    env = server.storage_options
    return S3Store(server.bucket, endpoint=env["aws_endpoint_url"], region=env["aws_region"],
                   access_key_id=env["aws_access_key_id"],
                   secret_access_key=env["aws_secret_access_key"],
                   virtual_hosted_style_request=False, client_options={"allow_http": True})  # fmt: skip


def _control(server, what):
    with urllib.request.urlopen(server.control.rstrip("/") + "/" + what, timeout=30) as r:
        return r.read().decode()


def _log(server):
    """The server's request log: (method, key, range, status, bytes sent) per request."""
    rows = []
    for line in _control(server, "log").splitlines():
        f = line.split("\t")
        if len(f) >= 6 and f[0].isdigit():
            rows.append((f[1], f[2], f[3], f[4], int(f[5])))
    return rows


def test_parser_over_s3_reads_only_the_metadata(vz, server, tmp_path):
    import obstore
    from obspec_utils.registry import ObjectStoreRegistry

    # Incompressible values: the chunks are most of the file's 2 MB.
    x = np.random.default_rng(3).standard_normal((512, 512))
    path = _write(tmp_path, "big", x.shape, "<f8", (128, 128), (32, 64), values=x)
    store = _s3_store(server)
    key = f"virtual-b2nd/{tmp_path.name}/big.b2nd"
    obstore.put(store, key, path.read_bytes())
    url = f"s3://{server.bucket}/{key}"
    _control(server, "reset")
    parser = _parser(concurrency=2)
    vds = _open(vz, url, parser, registry=ObjectStoreRegistry({f"s3://{server.bucket}": store}))
    log = _log(server)
    assert log and all(k == key for _, k, *_ in log), log
    sent = sum(r[4] for r in log if r[0] == "GET")
    assert sent == parser.summary["bytes_read"]
    assert sent < path.stat().st_size // 20, (sent, path.stat().st_size)
    ((u, checksum),) = parser.checksums.items()
    assert u == url and checksum.get("etag")
    manifest = vds["big"].data.manifest
    assert len(manifest.dict()) == parser.summary["references"] == 16
    assert all(e["path"] == url for e in manifest.dict().values())
    # The chunks load through the registry's S3 store, like python-blosc2 reads the file.
    loaded = _open(vz, url, loadable=["big"],
                   registry=ObjectStoreRegistry({f"s3://{server.bucket}": store}))  # fmt: skip
    np.testing.assert_array_equal(loaded["big"].values, _want(path))
    # scifmt.virtualize reads the same bytes of the object.
    _control(server, "reset")
    summary = scifmt.virtualize(url, tmp_path / "refs.json", concurrency=2, to="kerchunk")
    assert summary["bytes_read"] == sent
    assert sum(r[4] for r in _log(server) if r[0] == "GET") == sent
    # A missing object names its URL, never the credentials.
    with pytest.raises(scifmt.VirtualizeError) as e:
        _parser(storage_options={"aws_secret_access_key": "hunter2-secret"})(
            f"s3://{server.bucket}/virtual-b2nd/nothing-here.b2nd", local_registry())
    assert "nothing-here" in str(e.value) and "hunter2" not in str(e.value)
