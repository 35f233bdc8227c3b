"""Sparse b2nd arrays virtualized from Python. python-blosc2 writes them here
(``contiguous=False``: a directory holding ``chunks.b2frame`` — header, metalayers, index,
trailer — and one ``%08X.chunk`` file per stored chunk), with several dtypes, blocks smaller
than chunks, partially filled edge chunks and a chunk never written (a run of zeros in the
index). ``scifmt.virtualize(..., to="kerchunk")`` read by fsspec's ReferenceFileSystem +
zarr-python, and ``scifmt.virtual.B2ndParser`` with VirtualiZarr, equal
``blosc2.open(path)[...]``; each reference is a whole chunk file carrying that file's
modification time (or ETag on the S3 test server, where the chunk files are listed and asked
for their metadata, never read). A missing chunk file raises ``VirtualizeError`` naming it."""

import json

import numpy as np
import pytest
import scifmt

blosc2 = pytest.importorskip("blosc2")
zarr = pytest.importorskip("zarr")
pytest.importorskip("fsspec.implementations.reference")
pytest.importorskip("scifmt.codecs")  # the `b2nd` codec's entry points

from test_virtual_b2nd import (  # noqa: E402
    _control,
    _kerchunk_array,
    _log,
    _open,
    _parser,
    _s3_store,
    _values,
    _want,
)

# (name, shape, dtype, chunks, blocks): blocks smaller than chunks, shapes that are not
# multiples of the chunks.
SPARSE = [
    ("i4_2d", (37, 45), "<i4", (16, 20), (8, 10)),
    ("f8_2d", (20, 30), "<f8", (8, 16), (4, 8)),
    ("u1_3d", (9, 10, 11), "|u1", (4, 5, 6), (2, 3, 4)),
    ("be_i2_1d", (50,), ">i2", (16,), (4,)),
    ("be_f4_2d", (13, 7), ">f4", (6, 4), (3, 2)),
    ("c16_2d", (13, 7), "<c16", (6, 4), (3, 2)),
    ("u8_4d", (5, 4, 3, 3), "<u8", (3, 4, 2, 3), (2, 3, 1, 2)),
    ("bool_2d", (17, 9), "|b1", (8, 8), (4, 4)),
]


def _write_sparse(tmp_path, name, shape, dtype, chunks, blocks):
    """A sparse b2nd array whose first chunk is never written (a zero run): ``blosc2.zeros``,
    then every chunk but the first assigned."""
    path = tmp_path / f"{name}.b2nd"
    x = _values(shape, dtype)
    z = blosc2.zeros(shape, dtype=x.dtype, urlpath=str(path), mode="w", contiguous=False,
                     chunks=chunks, blocks=blocks)  # fmt: skip
    grid = [-(-s // c) for s, c in zip(shape, chunks)]
    for i in range(1, int(np.prod(grid))):
        idx = np.unravel_index(i, grid)
        box = tuple(slice(k * c, min((k + 1) * c, s)) for k, c, s in zip(idx, chunks, shape))
        z[box] = np.ascontiguousarray(x[box])
    del z
    assert path.is_dir() and (path / "chunks.b2frame").is_file()
    return path


def _chunk_files(path):
    return sorted(p for p in path.iterdir() if p.name.endswith(".chunk"))


@pytest.mark.parametrize("name,shape,dtype,chunks,blocks", SPARSE)
def test_kerchunk_of_a_sparse_array_reads_like_blosc2(tmp_path, name, shape, dtype, chunks, blocks):
    path = _write_sparse(tmp_path, name, shape, dtype, chunks, blocks)
    want = _want(path)
    first = tuple(slice(0, c) for c in chunks)
    assert not want[first].any(), "the first chunk is never written"
    refs = tmp_path / "refs.json"
    summary = scifmt.virtualize(path, refs, to="kerchunk")
    files = _chunk_files(path)
    assert summary["references"] == len(files) > 0
    assert summary["files"] == 1 + len(files)
    got = _kerchunk_array(refs)[...]
    assert got.shape == want.shape
    np.testing.assert_array_equal(got, want)
    # Every reference is a whole chunk file, with that file's modification time.
    doc = json.loads(refs.read_text())
    chunk_refs = {k: v for k, v in doc["refs"].items() if k.startswith("c/")}
    assert "c/" + "/".join("0" * len(shape)) not in chunk_refs  # the zero run: fill value
    assert len(chunk_refs) == len(files)
    by_url = {f.resolve().as_uri(): f for f in files}
    assert sorted(u for u, _, _ in chunk_refs.values()) == sorted(by_url)
    for url, offset, length in chunk_refs.values():
        f = by_url[url]
        assert (offset, length) == (0, f.stat().st_size)
        seconds, nanos = doc["scifmt"]["checksums"][url]["last_modified"]
        assert seconds * 10**9 + nanos == f.stat().st_mtime_ns
    # The same from the index file's path.
    refs2 = tmp_path / "refs2.json"
    scifmt.virtualize(path / "chunks.b2frame", refs2, to="kerchunk")
    assert json.loads(refs2.read_text())["refs"] == doc["refs"]


@pytest.mark.parametrize("name,shape,dtype,chunks,blocks", SPARSE[:4])
def test_parser_loads_a_sparse_array_like_blosc2(vz, tmp_path, name, shape, dtype, chunks, blocks):
    path = _write_sparse(tmp_path, name, shape, dtype, chunks, blocks)
    parser = _parser()
    vds = _open(vz, path, parser)
    (var,) = vds.data_vars.values()
    assert var.shape == shape
    assert type(var.data).__name__ == "ManifestArray"
    files = _chunk_files(path)
    entries = var.data.manifest.dict()
    assert len(entries) == parser.summary["references"] == len(files)
    uris = sorted(f.resolve().as_uri() for f in files)
    assert sorted(e["path"] for e in entries.values()) == uris
    assert all(e["offset"] == 0 for e in entries.values())
    assert parser.summary["files"] == 1 + len(files)
    # One checksum per chunk file.
    assert sorted(parser.checksums) == uris
    loaded = _open(vz, path, loadable=[var.name])[var.name].values
    np.testing.assert_array_equal(loaded, _want(path))


def test_a_missing_chunk_file_is_named(vz, tmp_path):
    path = _write_sparse(tmp_path, "gone", (20, 30), "<f8", (8, 16), (4, 8))
    victim = _chunk_files(path)[1]
    victim.unlink()
    refs = tmp_path / "refs.json"
    with pytest.raises(scifmt.VirtualizeError, match=victim.name):
        scifmt.virtualize(path, refs, to="kerchunk")
    assert not refs.exists()
    with pytest.raises(scifmt.VirtualizeError, match=victim.name):
        _open(vz, path)


def test_a_sparse_array_on_s3_lists_its_chunk_files_without_reading_them(vz, server, tmp_path):
    import obstore
    from obspec_utils.registry import ObjectStoreRegistry

    path = _write_sparse(tmp_path, "remote", (37, 45), "<i4", (16, 20), (8, 10))
    store = _s3_store(server)
    prefix = f"virtual-b2nd-sparse/{tmp_path.name}/remote.b2nd"
    for f in path.iterdir():
        obstore.put(store, f"{prefix}/{f.name}", f.read_bytes())
    url = f"s3://{server.bucket}/{prefix}"
    _control(server, "reset")
    refs = tmp_path / "refs.json"
    summary = scifmt.virtualize(url, refs, to="kerchunk")
    log = _log(server)
    # No chunk file read: at most a HEAD each (the test server's listings carry no ETags).
    assert all(r[0] == "HEAD" and r[4] == 0 for r in log if r[1].endswith(".chunk")), log
    files = _chunk_files(path)
    assert summary["references"] == len(files)
    doc = json.loads(refs.read_text())
    for k, (u, offset, length) in ((k, v) for k, v in doc["refs"].items() if k.startswith("c/")):
        assert u.startswith(url + "/") and u.endswith(".chunk") and offset == 0, (k, u)
        assert length == (path / u.rsplit("/", 1)[1]).stat().st_size
        assert doc["scifmt"]["checksums"][u].get("etag"), u
    # Read back through VirtualiZarr from the server: python-blosc2's values.
    registry = ObjectStoreRegistry({f"s3://{server.bucket}": store})
    (name,) = _open(vz, url, registry=registry).data_vars
    loaded = _open(vz, url, loadable=[name], registry=registry)
    np.testing.assert_array_equal(loaded[name].values, _want(path))
