"""``scifmt.virtualize`` (in this process) and ``scifmt.virtual.WKWParser`` (VirtualiZarr 2.5):
WKW data written here by the reference ``wkw`` package (raw, LZ4 and LZ4HC files, several voxel
types, 1–3 channels, a missing file, a second mag) is virtualized, read back through fsspec's
``ReferenceFileSystem`` + zarr-python, through VirtualiZarr's ``ManifestStore`` (``.load()``),
through VirtualiZarr's Kerchunk and Icechunk writers, and compared with ``wkw.Dataset.read``.
Bad arguments and sources raise Python exceptions (never a Rust panic)."""

import json
import os
import pathlib
import re
import shutil
import subprocess

import numpy as np
import pytest

import scifmt
from conftest import local_registry, scifmt_command

wkw = pytest.importorskip("wkw")
zarr = pytest.importorskip("zarr")
reference = pytest.importorskip("fsspec.implementations.reference")
zarr_storage = pytest.importorskip("zarr.storage")

REPO = pathlib.Path(__file__).resolve().parents[3]

# (layer, numpy type, channels, block type, block_len, file_len)
LAYERS = [
    ("u8_raw", np.uint8, 1, wkw.Header.BLOCK_TYPE_RAW, 8, 2),
    ("u16_lz4_3ch", np.uint16, 3, wkw.Header.BLOCK_TYPE_LZ4, 8, 2),
    ("f32_lz4hc", np.float32, 1, wkw.Header.BLOCK_TYPE_LZ4HC, 16, 2),
    ("i64_raw_2ch", np.int64, 2, wkw.Header.BLOCK_TYPE_RAW, 4, 2),
    ("i8_lz4", np.int8, 1, wkw.Header.BLOCK_TYPE_LZ4, 8, 1),
]


def _data(dtype, shape, seed):
    rng = np.random.default_rng(seed)
    if np.issubdtype(dtype, np.floating):
        return rng.standard_normal(shape).astype(dtype)
    info = np.iinfo(dtype)
    # Runs of equal values, so LZ4 blocks really compress.
    data = rng.integers(info.min, info.max, size=shape, dtype=dtype, endpoint=True)
    data[..., ::2] = data[..., :1]
    return data


def _write_mag(root, dtype, channels, block_type, block_len, file_len, files_x, seed):
    """A mag whose data fills files 1..files_x along x (file 0 missing); its side per file."""
    side = block_len * file_len
    header = wkw.Header(dtype, block_len=block_len, file_len=file_len, block_type=block_type,
                        num_channels=channels)  # fmt: skip
    data = _data(dtype, (channels, files_x * side, side, side), seed)
    with wkw.Dataset.create(str(root), header) as ds:
        ds.write((side, 0, 0), np.asfortranarray(data))
    return side


def _dataset(tmp_path):
    """A webKNOSSOS WKW dataset: one layer per entry of LAYERS with mag 1, the first layer
    also with mag 2-2-1 (smaller). Returns the root and {(layer, mag): mag directory}."""
    root = tmp_path / "ds"
    layers, mags = [], {}
    for i, (name, dtype, channels, block_type, block_len, file_len) in enumerate(LAYERS):
        mag = root / name / "1"
        side = _write_mag(mag, dtype, channels, block_type, block_len, file_len, 2, i)
        mags[(name, "1")] = mag
        entries = [{"mag": [1, 1, 1], "path": f"./{name}/1", "cubeLength": side}]
        if i == 0:
            mag2 = root / name / "2-2-1"
            _write_mag(mag2, dtype, channels, block_type, block_len, file_len, 1, 99)
            mags[(name, "2-2-1")] = mag2
            entries.append({"mag": [2, 2, 1], "path": f"./{name}/2-2-1", "cubeLength": side})
        layers.append({
            "name": name, "category": "color", "dataFormat": "wkw",
            "elementClass": np.dtype(dtype).name, "numChannels": channels,
            "boundingBox": {"topLeft": [side, 0, 0], "width": 2 * side, "height": side,
                            "depth": side},
            "mags": entries,
        })  # fmt: skip
    props = {"id": {"name": "ds", "team": ""}, "scale": {"factor": [1.0, 1.0, 1.0],
             "unit": "nanometer"}, "dataLayers": layers}  # fmt: skip
    (root / "datasource-properties.json").write_text(json.dumps(props))
    return root, mags


@pytest.fixture
def dataset(tmp_path):
    return _dataset(tmp_path)


def _wkw_read(mag, shape_xyz):
    with wkw.Dataset.open(str(mag)) as ds:
        return ds.read((0, 0, 0), tuple(shape_xyz))


def _refs_group(refs, zarr_format=3):
    fs = reference.ReferenceFileSystem(str(refs), asynchronous=True)
    store = zarr_storage.FsspecStore(fs, read_only=True, path="")
    return zarr.open_group(store=store, mode="r", zarr_format=zarr_format)


# --- scifmt.virtualize -------------------------------------------------------------------------


def test_virtualize_to_kerchunk_reads_like_wkw(dataset, tmp_path):
    root, mags = dataset
    refs = tmp_path / "refs.json"
    summary = scifmt.virtualize(root, refs, to="kerchunk")
    assert summary["to"] == "kerchunk"
    assert summary["sources"] == 1
    assert summary["arrays"] == len(mags)
    assert summary["groups"] == 1 + len(LAYERS)
    assert summary["files"] == 2 * len(LAYERS) + 1
    assert summary["bytes_written"] == refs.stat().st_size
    assert summary["bytes_read"] > 0 and summary["references"] > 0
    group = _refs_group(refs)
    for (layer, mag_name), mag in mags.items():
        a = group[f"{layer}/{mag_name}"]
        dtype, channels = next((l[1], l[2]) for l in LAYERS if l[0] == layer)
        assert a.dtype == np.dtype(dtype) and a.shape[0] == channels
        got = a[...]
        want = _wkw_read(mag, a.shape[1:])
        np.testing.assert_array_equal(got, want, err_msg=f"{layer}/{mag_name}")
        side = a.shape[2]
        assert not got[:, :side].any() and got[:, side:].any()  # the missing file: zeros


def test_virtualize_matches_the_command(dataset, tmp_path):
    """The same references as ``scifmt virtualize --to kerchunk`` (the wheel's command)."""
    root, mags = dataset
    ours = tmp_path / "ours.json"
    two = [str(mags[("u16_lz4_3ch", "1")]), str(mags[("u8_raw", "2-2-1")])]
    scifmt.virtualize(two, ours, to="kerchunk")
    command = shutil.which("scifmt") or os.environ.get("SCIFMT_CARGO_CLI")
    if not command:
        pytest.skip("no scifmt command on PATH")
    theirs = tmp_path / "theirs.json"
    out = subprocess.run([command, "virtualize", *two, str(theirs), "--to", "kerchunk"],
                         capture_output=True, text=True)  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert json.loads(ours.read_text()) == json.loads(theirs.read_text())
    # Two sources: each the array named like its directory.
    doc = json.loads(ours.read_text())
    assert "1/zarr.json" in doc["refs"] and "2-2-1/zarr.json" in doc["refs"]


def test_virtualize_one_mag_is_the_root_array(dataset, tmp_path):
    root, mags = dataset
    mag = mags[("i8_lz4", "1")]
    refs = tmp_path / "mag.json"
    summary = scifmt.virtualize(mag, refs, concurrency=1, to="kerchunk")
    assert summary["arrays"] == 1 and summary["groups"] == 0
    fs = reference.ReferenceFileSystem(str(refs), asynchronous=True)
    arr = zarr.open_array(store=zarr_storage.FsspecStore(fs, read_only=True, path=""), mode="r",
                          zarr_format=3)  # fmt: skip
    np.testing.assert_array_equal(arr[...], _wkw_read(mag, arr.shape[1:]))


def test_virtualize_refuses_an_existing_output_unless_overwrite(dataset, tmp_path):
    root, mags = dataset
    refs = tmp_path / "refs.json"
    refs.write_text("keep")
    with pytest.raises(FileExistsError, match="overwrite=True") as e:
        scifmt.virtualize(root, refs, to="kerchunk")
    assert isinstance(e.value, scifmt.VirtualizeError)
    assert refs.read_text() == "keep"
    summary = scifmt.virtualize(root, refs, overwrite=True, fsync=True, to="kerchunk")
    assert refs.stat().st_size == summary["bytes_written"]
    # A directory is never replaced by the file.
    (tmp_path / "dir").mkdir()
    with pytest.raises(scifmt.VirtualizeError, match="directory"):
        scifmt.virtualize(root, tmp_path / "dir", overwrite=True, to="kerchunk")


def test_virtualize_refuses_an_output_inside_or_around_a_source(dataset, tmp_path):
    root, mags = dataset
    for dst in (root / "refs.json", mags[("u8_raw", "1")] / "x.json", root, tmp_path):
        with pytest.raises(ValueError, match=str(root.name)) as e:
            scifmt.virtualize(root, dst, overwrite=True, to="kerchunk")
        assert isinstance(e.value, scifmt.VirtualizeError), dst
    assert not (root / "refs.json").exists()


def test_virtualize_errors_name_the_source(tmp_path):
    missing = tmp_path / "nowhere"
    with pytest.raises(scifmt.VirtualizeError, match="nowhere"):
        scifmt.virtualize(missing, tmp_path / "r.json", to="kerchunk")
    # Not WKW: a Zarr array.
    z = tmp_path / "a.zarr"
    zarr.create_array(str(z), shape=(4,), chunks=(2,), dtype="u1")
    with pytest.raises(scifmt.VirtualizeError):
        scifmt.virtualize(z, tmp_path / "r.json", to="kerchunk")
    # A WKW file whose jump table is damaged.
    mag = tmp_path / "bad"
    _write_mag(mag, np.uint8, 1, wkw.Header.BLOCK_TYPE_LZ4, 8, 1, 1, 3)
    f = next(mag.glob("z*/y*/x*.wkw"))
    raw = bytearray(f.read_bytes())
    raw[16:24] = (2**40).to_bytes(8, "little")
    f.write_bytes(bytes(raw))
    with pytest.raises(scifmt.VirtualizeError, match=f.name):
        scifmt.virtualize(mag, tmp_path / "r.json", to="kerchunk")
    assert not (tmp_path / "r.json").exists()


@pytest.mark.parametrize(
    "kwargs, error",
    [
        ({"concurrency": -1}, ValueError),
        ({"concurrency": 0}, ValueError),
        ({"concurrency": 1025}, ValueError),
        ({"concurrency": 2**70}, ValueError),
        ({"concurrency": "8"}, TypeError),
        ({"concurrency": 1.5}, TypeError),
        ({"concurrency": True}, TypeError),
        ({"overwrite": "yes"}, TypeError),
        ({"fsync": 1}, TypeError),
        ({"to": "zarr"}, ValueError),
        ({"to": "parquet"}, ValueError),
        ({"to": 3}, TypeError),
        ({"storage_options": ["a"]}, TypeError),
        ({"storage_options": {"a": object()}}, TypeError),
    ],
)
def test_virtualize_hostile_arguments_raise(dataset, tmp_path, kwargs, error):
    root, _ = dataset
    with pytest.raises(error):
        scifmt.virtualize(root, tmp_path / "r.json", **{"to": "kerchunk", **kwargs})
    assert not (tmp_path / "r.json").exists()


@pytest.mark.parametrize("sources", [[], 5, b"ds", [None], ["a\0b"], [""]])
def test_virtualize_bad_sources_raise(tmp_path, sources):
    with pytest.raises((TypeError, ValueError)):
        scifmt.virtualize(sources, tmp_path / "r.json", to="kerchunk")
    with pytest.raises((TypeError, ValueError)):
        scifmt.virtualize(tmp_path, None, to="kerchunk")


def test_virtualize_to_icechunk_reads_like_wkw_refuses_changed_files_and_updates(dataset,
                                                                                  tmp_path):
    """``scifmt.virtualize(DATASET, REPO)`` (``to="icechunk"``, the default) read by Python
    ``icechunk`` 1.1 + zarr-python equals ``wkw``'s reads of every layer and mag. Once a file
    is rewritten, Icechunk refuses its chunks (never the old voxels' places with new bytes);
    ``overwrite=True`` then commits only that file's chunks, reading no other file, and the
    repository reads the new voxels (the first snapshot stays in its history)."""
    icechunk = pytest.importorskip("icechunk")
    root, mags = dataset
    repo = tmp_path / "repo"
    first = scifmt.virtualize(root, repo)
    assert first["to"] == "icechunk" and "bytes_written" not in first and "update" not in first
    assert first["arrays"] == len(mags) and first["unchanged_files"] == 0

    def check():
        return _repository_reads_like_wkw(icechunk, repo, root, mags)

    check()
    with pytest.raises(FileExistsError, match="is an Icechunk repository"):
        scifmt.virtualize(root, repo)
    # One raw file rewritten with other voxels, in place (same size, every block where it was).
    mag = mags[("u8_raw", "1")]
    (changed,) = mag.rglob("x1.wkw")
    size = changed.stat().st_size
    with wkw.Dataset.open(str(mag)) as ds:
        side = ds.header.block_len * ds.header.file_len
        ds.write((side, 0, 0), np.full((side, side, side), 7, np.uint8, order="F"))
    assert changed.stat().st_size == size
    later = changed.stat().st_mtime + 10
    os.utime(changed, (later, later))
    _, group = _read_repository(icechunk, repo, root)
    with pytest.raises(Exception, match="(?i)modified|changed|match|precondition"):
        group["u8_raw/1"][...]
    update = scifmt.virtualize(root, repo, overwrite=True)
    blocks = (side // 8) ** 3
    assert update["update"] == {"unchanged": first["references"] - blocks, "set": blocks,
                                "deleted": 0, "nodes_deleted": 0}, update  # fmt: skip
    assert update["files"] == first["files"] and update["unchanged_files"] == first["files"] - 1
    r = check()
    snapshots = [s.id for s in r.ancestry(branch="main")]
    assert snapshots[0] == update["snapshot"] and first["snapshot"] in snapshots


def test_virtualize_to_icechunk_replaces_only_with_overwrite_and_never_a_source(dataset,
                                                                                tmp_path):
    """A local directory that is not a repository is replaced only with ``overwrite=True``,
    once the new repository is complete; a repository inside a source is refused."""
    icechunk = pytest.importorskip("icechunk")
    root, mags = dataset
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "keep.txt").write_text("mine")
    with pytest.raises(FileExistsError, match="overwrite=True replaces it"):
        scifmt.virtualize(root, repo, to="icechunk")
    assert (repo / "keep.txt").read_text() == "mine"
    summary = scifmt.virtualize(mags[("u8_raw", "1")], repo, overwrite=True)
    assert not (repo / "keep.txt").exists() and summary["arrays"] == 1
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".repo")] == []
    r = icechunk.Repository.open(
        icechunk.local_filesystem_storage(str(repo)),
        authorize_virtual_chunk_access={f"file://{mags[('u8_raw', '1')].resolve()}/": None})
    a = zarr.open_array(r.readonly_session("main").store, mode="r")
    np.testing.assert_array_equal(a[...], _wkw_read(mags[("u8_raw", "1")], a.shape[1:]))
    with pytest.raises(ValueError, match=root.name):
        scifmt.virtualize(root, root / "repo", overwrite=True)
    assert not (root / "repo").exists()
    with pytest.raises(ValueError, match="icechunk"):
        scifmt.virtualize(root, tmp_path / "z", to="zarr")


def test_virtualize_two_sources_of_one_name_are_refused(dataset, tmp_path):
    root, mags = dataset
    with pytest.raises(scifmt.VirtualizeError, match="named"):
        scifmt.virtualize([mags[("u8_raw", "1")], mags[("i8_lz4", "1")]], tmp_path / "r.json",
                          to="kerchunk")


# --- scifmt.virtual.WKWParser (VirtualiZarr) ----------------------------------------------------


def _open(vz, url, loadable=None, **kwargs):
    from scifmt.virtual import WKWParser

    return vz.open_virtual_dataset(str(url), registry=local_registry(), parser=WKWParser(**kwargs),
                                   loadable_variables=loadable)  # fmt: skip


def _load(vz, url, **kwargs):
    """The Dataset with every variable loaded through the ManifestStore and its registry."""
    names = list(_open(vz, url, **kwargs).data_vars)
    return _open(vz, url, loadable=names, **kwargs).load()


@pytest.mark.parametrize("layer", [l[0] for l in LAYERS])
def test_parser_loads_like_wkw(vz, dataset, layer):
    root, mags = dataset
    vds = _open(vz, root, group=layer, array="1")
    assert list(vds.data_vars) == ["1"]
    assert vds["1"].dims == ("z", "y", "x", "c")
    assert type(vds["1"].data).__name__ == "ManifestArray"
    got = _load(vz, root, group=layer, array="1")["1"].transpose("c", "x", "y", "z").values
    want = _wkw_read(mags[(layer, "1")], got.shape[1:])
    np.testing.assert_array_equal(got, want)
    # scifmt.virtualize's layout: (c, x, y, z) through a transpose codec.
    vds = _open(vz, root, group=layer, array="1", axes="cxyz")
    assert vds["1"].dims == ("c", "x", "y", "z")
    loaded = _load(vz, root, group=layer, array="1", axes="cxyz")
    np.testing.assert_array_equal(loaded["1"].values, want)


def test_parser_a_layer_with_several_mags(vz, dataset):
    root, mags = dataset
    vds = _open(vz, root, group="u8_raw")
    assert sorted(vds.data_vars) == ["1", "2-2-1"]
    assert vds["2-2-1"].dims == ("z_2-2-1", "y_2-2-1", "x_2-2-1", "c")
    # The layer's attributes (OME-NGFF multiscales) are the Dataset's.
    assert "ome" in vds.attrs or "multiscales" in json.dumps(vds.attrs)
    loaded = _load(vz, root, group="u8_raw")
    for mag in ("1", "2-2-1"):
        got = loaded[mag].transpose("c", *(f"{a}_{mag}" for a in "xyz")).values
        np.testing.assert_array_equal(got, _wkw_read(mags[("u8_raw", mag)], got.shape[1:]))


def test_parser_a_mag_given_directly(vz, dataset):
    root, mags = dataset
    mag = mags[("u16_lz4_3ch", "1")]
    # A file:// URL with percent-encoding, as VirtualiZarr makes of paths.
    vds = _open(vz, mag.resolve().as_uri())
    assert list(vds.data_vars) == ["1"]
    got = _load(vz, mag.resolve().as_uri())["1"].transpose("c", "x", "y", "z").values
    assert got.shape[0] == 3
    np.testing.assert_array_equal(got, _wkw_read(mag, got.shape[1:]))


def test_parser_manifests_come_in_bulk(vz, dataset):
    from scifmt.virtual import WKWParser

    root, mags = dataset
    parser = WKWParser(group="f32_lz4hc", array="1", axes="cxyz")
    store = parser(root.resolve().as_uri(), local_registry())
    marr = store._group["1"]
    manifest = marr.manifest
    # Grid (c, x, y, z): 1 × 6 × 2 × 2 blocks (the layer's bounding box ends at x = 96); the
    # first file (x blocks 0, 1) is missing.
    assert manifest.shape_chunk_grid == (1, 6, 2, 2)
    paths = manifest._paths
    assert (paths[:, :2] == "").all() and (paths[:, 2:] != "").all()
    for key, entry in manifest.dict().items():
        path = pathlib.Path(entry["path"].removeprefix("file://"))
        assert path.is_file() and entry["offset"] >= 16 + 8 * 8
        assert entry["offset"] + entry["length"] <= path.stat().st_size
    # The source files' modification times, which a ManifestArray cannot carry.
    assert parser.checksums
    for url, checksum in parser.checksums.items():
        seconds, nanos = checksum["last_modified"]
        assert seconds * 10**9 + nanos == pathlib.Path(url.removeprefix("file://")).stat().st_mtime_ns
    # Only the chosen mag's files were read (its two files' headers and jump tables).
    assert parser.summary["files"] == 2 and parser.summary["arrays"] == 1
    assert parser.summary["bytes_read"] == 2 * (16 + 8 * 2**3)
    assert int((paths != "").sum()) == 2 * 2 * 2 * 2


def test_parser_to_kerchunk_round_trip(vz, dataset, tmp_path):
    root, mags = dataset
    for layer, *_ in LAYERS:
        vds = _open(vz, root, group=layer, array="1")
        refs = tmp_path / f"{layer}.json"
        vds.vz.to_kerchunk(str(refs), format="json")
        doc = json.loads(refs.read_text())
        zarray = json.loads(doc["refs"]["1/.zarray"])
        if layer in ("u16_lz4_3ch", "f32_lz4hc", "i8_lz4"):
            # numcodecs' lz4-block needs the decoded size: the codec carries it.
            (lz4,) = zarray["filters"]
            assert lz4["id"] == "lz4-block" and lz4["size"] > 0
        got = _refs_group(refs, zarr_format=2)["1"][...]
        want = _wkw_read(mags[(layer, "1")], got.shape[:3][::-1])
        np.testing.assert_array_equal(got.transpose(3, 2, 1, 0), want, err_msg=layer)


def test_parser_to_icechunk_round_trip(vz, dataset, tmp_path):
    icechunk = pytest.importorskip("icechunk")
    root, mags = dataset
    prefix = f"file://{root.resolve()}/"
    config = icechunk.RepositoryConfig.default()
    config.set_virtual_chunk_container(
        icechunk.VirtualChunkContainer(prefix, icechunk.local_filesystem_store(str(root.resolve())))
    )
    storage = icechunk.local_filesystem_storage(str(tmp_path / "repo"))
    repo = icechunk.Repository.create(storage, config,
                                      authorize_virtual_chunk_access={prefix: None})  # fmt: skip
    session = repo.writable_session("main")
    for layer in ("u8_raw", "u16_lz4_3ch", "f32_lz4hc"):
        vds = _open(vz, root, group=layer, array="1", axes="cxyz")
        vds.vz.to_icechunk(session.store, group=layer)
    session.commit("virtual WKW")
    read = repo.readonly_session("main")
    group = zarr.open_group(read.store, mode="r")
    for layer in ("u8_raw", "u16_lz4_3ch", "f32_lz4hc"):
        a = group[f"{layer}/1"]
        np.testing.assert_array_equal(a[...], _wkw_read(mags[(layer, "1")], a.shape[1:]),
                                      err_msg=layer)  # fmt: skip


def _repository_reads_like_wkw(icechunk, repo, root, mags):
    """Every mag of ``mags`` read from the repository ``repo`` (its chunks below ``root``)
    equals ``wkw``'s read; returns the repository."""
    r, group = _read_repository(icechunk, repo, root)
    for (layer, mag_name), mag in mags.items():
        a = group[f"{layer}/{mag_name}"]
        np.testing.assert_array_equal(a[...], _wkw_read(mag, a.shape[1:]),
                                      err_msg=f"{layer}/{mag_name}")  # fmt: skip
    return r


def _read_repository(icechunk, repo, root):
    """The group at ``main`` of the Icechunk repository ``repo``, its virtual chunks below
    ``root`` authorized."""
    prefix = f"file://{root.resolve()}/"
    r = icechunk.Repository.open(icechunk.local_filesystem_storage(str(repo)),
                                 authorize_virtual_chunk_access={prefix: None})  # fmt: skip
    return r, zarr.open_group(r.readonly_session("main").store, mode="r")


def test_the_command_s_icechunk_repository_reads_like_wkw_and_updates(dataset, tmp_path):
    """``scifmt virtualize DATASET REPO`` (``--to icechunk``, the default) read by Python
    ``icechunk`` 1.1 + zarr-python equals ``wkw``'s reads of every layer and mag; after one file
    is rewritten, ``--overwrite`` commits only its chunks, and the repository reads the new
    voxels (the first snapshot stays in its history)."""
    icechunk = pytest.importorskip("icechunk")
    command = scifmt_command()
    root, mags = dataset
    repo = tmp_path / "repo"

    def run(*extra):
        out = subprocess.run([command, "virtualize", str(root), str(repo), "--json", *extra],
                             capture_output=True, text=True)  # fmt: skip
        assert out.returncode == 0, out.stderr
        return json.loads(out.stdout)

    first = run()
    assert first["to"] == "icechunk"

    def check():
        return _repository_reads_like_wkw(icechunk, repo, root, mags)

    check()
    again = subprocess.run([command, "virtualize", str(root), str(repo)],
                           capture_output=True, text=True)  # fmt: skip
    assert again.returncode == 2 and "is an Icechunk repository" in again.stderr
    # One raw file rewritten with other voxels (its modification time moved on, as a later
    # write's would be).
    mag = mags[("u8_raw", "1")]
    with wkw.Dataset.open(str(mag)) as ds:
        side = ds.header.block_len * ds.header.file_len
        ds.write((side, 0, 0), np.full((side, side, side), 7, np.uint8, order="F"))
    (changed,) = [f for f in mag.rglob("x1.wkw")]
    later = changed.stat().st_mtime + 10
    os.utime(changed, (later, later))
    update = run("--overwrite")
    u = update["update"]
    blocks = (side // 8) ** 3
    assert u == {"unchanged": first["references"] - blocks, "set": blocks, "deleted": 0,
                 "nodes_deleted": 0}, update  # fmt: skip
    r = check()
    snapshots = [s.id for s in r.ancestry(branch="main")]
    assert snapshots[0] == update["snapshot"] and first["snapshot"] in snapshots


def test_parser_selection_errors(vz, dataset, tmp_path):
    from scifmt.virtual import WKWParser

    root, mags = dataset
    with pytest.raises(scifmt.VirtualizeError, match="pick one with WKWParser\\(group=...\\)"):
        _open(vz, root)
    with pytest.raises(scifmt.VirtualizeError, match="'nope'"):
        _open(vz, root, group="nope")
    with pytest.raises(scifmt.VirtualizeError, match="'u8_raw/9'"):
        _open(vz, root, group="u8_raw", array="9")
    with pytest.raises(scifmt.VirtualizeError, match="nowhere"):
        _open(vz, tmp_path / "nowhere")
    for kwargs, error in [
        ({"axes": "xyz"}, ValueError), ({"axes": 1}, TypeError), ({"group": 3}, TypeError),
        ({"group": "/"}, ValueError), ({"array": ""}, ValueError),
        ({"concurrency": 0}, ValueError), ({"concurrency": -5}, ValueError),
        ({"concurrency": None}, TypeError), ({"storage_options": "x"}, TypeError),
    ]:  # fmt: skip
        with pytest.raises(error):
            WKWParser(**kwargs)
    with pytest.raises(TypeError):
        WKWParser()(None, local_registry())


# --- object stores (the S3 test server) ---------------------------------------------------------


def _s3_registry(server):
    from obspec_utils.registry import ObjectStoreRegistry
    from obstore.store import S3Store

    env = server.storage_options
    store = S3Store(server.bucket, endpoint=env["aws_endpoint_url"], region=env["aws_region"],
                    access_key_id=env["aws_access_key_id"],
                    secret_access_key=env["aws_secret_access_key"],
                    virtual_hosted_style_request=False, client_options={"allow_http": True})  # fmt: skip
    return ObjectStoreRegistry({f"s3://{server.bucket}": store})


@pytest.mark.parametrize("name", ["u16_3ch_lz4_b8_f4", "f32_lz4hc_b16_f2", "i8_raw_b8_f2"])
def test_parser_reads_headers_and_loads_chunks_over_s3(vz, server, testdata_root, name):
    from scifmt.virtual import WKWParser

    url = f"s3://{server.bucket}/wkw/{name}"
    parser = WKWParser(concurrency=2)
    vds = vz.open_virtual_dataset(url, registry=_s3_registry(server), parser=parser,
                                  loadable_variables=[name])  # fmt: skip
    got = vds[name].transpose("c", "x", "y", "z").values
    want = _wkw_read(testdata_root / "wkw" / name, got.shape[1:])
    np.testing.assert_array_equal(got, want)
    # On a store the checksums are the objects' ETags.
    assert parser.checksums and all(u.startswith(url + "/") and "etag" in c
                                    for u, c in parser.checksums.items())  # fmt: skip


def test_virtualize_from_and_to_s3(server, testdata_root, tmp_path):
    src = f"s3://{server.bucket}/wkw/u16_3ch_lz4_b8_f4"
    dst = f"s3://{server.bucket}/virtual/refs-{tmp_path.name}.json"
    summary = scifmt.virtualize(src, dst, concurrency=3, to="kerchunk")
    assert summary["references"] > 0 and summary["bytes_written"] > 0
    local = scifmt.virtualize(testdata_root / "wkw" / "u16_3ch_lz4_b8_f4", tmp_path / "l.json",
                              to="kerchunk")
    assert {k: summary[k] for k in ("arrays", "files", "references", "bytes_read")} == \
        {k: local[k] for k in ("arrays", "files", "references", "bytes_read")}  # fmt: skip
    with pytest.raises(FileExistsError, match="overwrite=True"):
        scifmt.virtualize(src, dst, to="kerchunk")
    with pytest.raises(ValueError, match="inside|contains|same"):
        scifmt.virtualize(src, f"{src}/refs.json", overwrite=True, to="kerchunk")
    with pytest.raises(scifmt.VirtualizeError) as e:
        scifmt.virtualize(f"s3://{server.bucket}/wkw/nothing-here", tmp_path / "x.json",
                          to="kerchunk",
                          storage_options={"aws_secret_access_key": "hunter2-secret"})  # fmt: skip
    assert "nothing-here" in str(e.value) and "hunter2" not in str(e.value)


def test_virtualize_to_icechunk_from_and_to_s3(server, testdata_root, tmp_path):
    """An ``s3://`` WKW mag virtualized into an Icechunk repository under an ``s3://`` prefix
    (``storage_options`` reaching the repository and the sources' container), read by Python
    ``icechunk`` through its S3 virtual chunk container equal to ``wkw``; a second run without
    ``overwrite`` is refused, with it an update that reads no file again."""
    icechunk = pytest.importorskip("icechunk")
    name = "u16_3ch_lz4_b8_f4"
    src = f"s3://{server.bucket}/wkw/{name}"
    prefix = f"repos/{tmp_path.name}"
    dst = f"s3://{server.bucket}/{prefix}"
    env = server.storage_options
    summary = scifmt.virtualize(src, dst, concurrency=3, storage_options=env)
    assert summary["to"] == "icechunk" and summary["references"] > 0
    storage = icechunk.s3_storage(bucket=server.bucket, prefix=prefix, region=env["aws_region"],
                                  endpoint_url=env["aws_endpoint_url"], allow_http=True,
                                  access_key_id=env["aws_access_key_id"],
                                  secret_access_key=env["aws_secret_access_key"],
                                  force_path_style=True)  # fmt: skip
    credentials = icechunk.containers_credentials({f"{src}/": icechunk.s3_credentials(
        access_key_id=env["aws_access_key_id"],
        secret_access_key=env["aws_secret_access_key"])})  # fmt: skip
    repo = icechunk.Repository.open(storage, authorize_virtual_chunk_access=credentials)
    a = zarr.open_array(repo.readonly_session("main").store, mode="r")
    np.testing.assert_array_equal(a[...], _wkw_read(testdata_root / "wkw" / name, a.shape[1:]))
    with pytest.raises(FileExistsError, match="is an Icechunk repository"):
        scifmt.virtualize(src, dst)
    update = scifmt.virtualize(src, dst, overwrite=True)
    assert update["unchanged_files"] == summary["files"] and update["bytes_read"] == 0
    assert update["update"]["set"] == 0 and update["update"]["deleted"] == 0


# --- Google Cloud Storage (fake-gcs-server) ------------------------------------------------------


def test_virtualize_to_icechunk_from_gcs(fake_gcs, dataset, tmp_path):
    """A ``gs://`` webKNOSSOS dataset on fake-gcs-server virtualized into a local Icechunk
    repository, read by Python ``icechunk`` through the GCS virtual chunk container the
    repository configures (the service's base URL; credentials given by the reader) equal to
    ``wkw`` for every layer and mag; an update reads no WKW file again. (The emulator ignores
    ``If-Match``, so a rewritten object cannot be shown to be refused here; the S3 and Azure
    tests show it.)"""
    icechunk = pytest.importorskip("icechunk")
    root, mags = dataset
    base = f"py-{tmp_path.name}"
    fake_gcs.put_dir(f"{base}/ds", root)
    src = f"gs://{fake_gcs.bucket}/{base}/ds"
    opts = fake_gcs.storage_options
    repo = tmp_path / "repo"
    summary = scifmt.virtualize(src, repo, storage_options=opts)
    assert summary["to"] == "icechunk" and summary["arrays"] == len(mags)
    credentials = icechunk.containers_credentials({f"{src}/": icechunk.gcs_credentials(
        anonymous=True)})  # fmt: skip
    r = icechunk.Repository.open(icechunk.local_filesystem_storage(str(repo)),
                                 authorize_virtual_chunk_access=credentials)  # fmt: skip
    [container] = r.config.virtual_chunk_containers.values()
    assert container.url_prefix == f"{src}/"
    group = zarr.open_group(r.readonly_session("main").store, mode="r")
    for (layer, mag_name), mag in mags.items():
        a = group[f"{layer}/{mag_name}"]
        np.testing.assert_array_equal(a[...], _wkw_read(mag, a.shape[1:]),
                                      err_msg=f"{layer}/{mag_name}")  # fmt: skip
    update = scifmt.virtualize(src, repo, storage_options=opts, overwrite=True)
    assert update["bytes_read"] == 0 and update["update"]["set"] == 0


def test_virtualize_to_icechunk_on_gcs(gcs_server, dataset, tmp_path, monkeypatch):
    """A ``gs://`` webKNOSSOS dataset virtualized into an Icechunk repository on ``gs://``
    (s3-testserver's Cloud Storage dialect), with the credentials of a Compute Engine VM (the
    metadata server's token): Python ``icechunk`` opens the repository on Cloud Storage and
    reads every layer and mag equal to ``wkw``; a second run is refused without ``overwrite``,
    with it an update reads no WKW file again."""
    icechunk = pytest.importorskip("icechunk")
    root, mags = dataset
    base = f"py-{tmp_path.name}"
    gcs_server.put_dir(f"{base}/ds", root)
    for k, v in gcs_server.env.items():
        monkeypatch.setenv(k, v)
    src = f"gs://{gcs_server.bucket}/{base}/ds"
    dst = f"gs://{gcs_server.bucket}/{base}/repo"
    summary = scifmt.virtualize(src, dst)
    assert summary["to"] == "icechunk" and summary["arrays"] == len(mags)
    storage = icechunk.gcs_storage(bucket=gcs_server.bucket, prefix=f"{base}/repo",
                                   bearer_token=gcs_server.token,
                                   config={"google_base_url": gcs_server.endpoint})  # fmt: skip
    credentials = icechunk.containers_credentials({f"{src}/": icechunk.gcs_credentials(
        bearer_token=gcs_server.token)})  # fmt: skip
    r = icechunk.Repository.open(storage, authorize_virtual_chunk_access=credentials)
    group = zarr.open_group(r.readonly_session("main").store, mode="r")
    for (layer, mag_name), mag in mags.items():
        a = group[f"{layer}/{mag_name}"]
        np.testing.assert_array_equal(a[...], _wkw_read(mag, a.shape[1:]),
                                      err_msg=f"{layer}/{mag_name}")  # fmt: skip
    with pytest.raises(FileExistsError, match="is an Icechunk repository"):
        scifmt.virtualize(src, dst)
    update = scifmt.virtualize(src, dst, overwrite=True)
    assert update["bytes_read"] == 0 and update["update"]["set"] == 0


# --- HTTP (a WebDAV server) -----------------------------------------------------------------------


def test_virtualize_to_icechunk_from_http(webdav, dataset, tmp_path):
    """An ``http://`` webKNOSSOS dataset (on a WebDAV server, listed a level at a time)
    virtualized into a local Icechunk repository with an HTTP virtual chunk container; an
    update reads no WKW file again. Python ``icechunk`` 1.1 cannot read it back: it drops a
    URL's port from the chunk locations it reads (``http://127.0.0.1/…`` for
    ``http://127.0.0.1:PORT/…``), so no container matches; icechunk 2 keeps it (the Rust tests
    read such repositories back with it). Asserted, so a fixed release shows up here."""
    icechunk = pytest.importorskip("icechunk")
    root, mags = dataset
    base = f"py-{tmp_path.name}"
    shutil.copytree(root, webdav.root / base / "ds")
    src = f"{webdav.endpoint}/{base}/ds"
    repo = tmp_path / "repo"
    summary = scifmt.virtualize(src, repo)
    assert summary["to"] == "icechunk" and summary["arrays"] == len(mags)
    local = scifmt.virtualize(root, tmp_path / "refs.json", to="kerchunk")
    for k in ["groups", "arrays", "files", "references", "bytes_read"]:
        assert summary[k] == local[k], k
    update = scifmt.virtualize(src, repo, overwrite=True)
    assert update["bytes_read"] == 0 and update["update"]["set"] == 0
    r = icechunk.Repository.open(icechunk.local_filesystem_storage(str(repo)),
                                 authorize_virtual_chunk_access={f"{src}/": None})  # fmt: skip
    [container] = r.config.virtual_chunk_containers.values()
    assert container.url_prefix == f"{src}/"
    group = zarr.open_group(r.readonly_session("main").store, mode="r")
    (layer, mag_name), _ = next(iter(mags.items()))
    assert icechunk.__version__.startswith("1."), icechunk.__version__
    portless = re.escape(webdav.endpoint.rsplit(":", 1)[0] + f"/{base}/")
    with pytest.raises(Exception, match=f"no virtual chunk container can handle the chunk "
                                        f"location \\({portless}"):  # fmt: skip
        group[f"{layer}/{mag_name}"][...]


# --- Azure (Azurite) -----------------------------------------------------------------------------


def test_virtualize_to_icechunk_from_and_to_azure(azurite, testdata_root, tmp_path):
    """An ``az://`` WKW mag on Azurite virtualized into an Icechunk repository under an
    ``az://`` prefix, read by Python ``icechunk`` through the Azure virtual chunk container the
    repository configures (its account and endpoint; the key given by the reader) equal to
    ``wkw``; a blob rewritten afterwards is refused, never read as other voxels."""
    icechunk = pytest.importorskip("icechunk")
    from obstore.store import AzureStore

    local = testdata_root / "wkw" / "i8_raw_b8_f2"
    opts = azurite.storage_options
    store = AzureStore(azurite.container, account_name=opts["azure_storage_account_name"],
                       account_key=opts["azure_storage_account_key"],
                       endpoint=azurite.endpoint, client_options={"allow_http": True})  # fmt: skip
    base = f"py-{tmp_path.name}"
    files = [p for p in local.rglob("*") if p.is_file()]
    for p in files:
        store.put(f"{base}/wkw/{p.relative_to(local).as_posix()}", p.read_bytes())
    src = f"az://{azurite.container}/{base}/wkw"
    summary = scifmt.virtualize(src, f"az://{azurite.container}/{base}/repo",
                                storage_options=opts)  # fmt: skip
    assert summary["to"] == "icechunk" and summary["references"] > 0

    def read():
        storage = icechunk.azure_storage(account=opts["azure_storage_account_name"],
                                         container=azurite.container, prefix=f"{base}/repo",
                                         access_key=opts["azure_storage_account_key"],
                                         config={"azure_storage_endpoint": azurite.endpoint,
                                                 "azure_allow_http": "true"})  # fmt: skip
        credentials = icechunk.containers_credentials({f"{src}/": icechunk.azure_credentials(
            access_key=opts["azure_storage_account_key"])})  # fmt: skip
        repo = icechunk.Repository.open(storage, authorize_virtual_chunk_access=credentials)
        return zarr.open_array(repo.readonly_session("main").store, mode="r")

    a = read()
    np.testing.assert_array_equal(a[...], _wkw_read(local, a.shape[1:]))
    # One data file rewritten in place with other bytes of the same length: a new ETag.
    data = sorted(p for p in files if p.name != "header.wkw")[0]
    key = f"{base}/wkw/{data.relative_to(local).as_posix()}"
    store.put(key, bytes(255 - b for b in data.read_bytes()))
    with pytest.raises(Exception, match="checksum of the object owning the virtual chunk"):
        read()[...]

