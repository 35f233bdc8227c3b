"""`scifmt virtualize --to kerchunk` read by the Python Zarr stack: a WKW dataset written here by
the reference ``wkw`` package (raw, LZ4 and LZ4HC mags, several voxel types, channels, missing
files) is virtualized by the ``scifmt`` command, opened with fsspec's ``ReferenceFileSystem``
and zarr-python 3 (``FsspecStore``), its LZ4 blocks decoded in place by scifmt's ``lz4-block``
codec (found through its entry point), and compared with ``wkw.Dataset.read``."""

import json
import os
import pathlib
import subprocess

import numpy as np
import pytest
from conftest import scifmt_command

wkw = pytest.importorskip("wkw")
zarr = pytest.importorskip("zarr")
reference = pytest.importorskip("fsspec.implementations.reference")
zarr_storage = pytest.importorskip("zarr.storage")


# (mag name, numpy type, channels, block type, block_len, file_len)
MAGS = [
    ("u8_raw", np.uint8, 1, wkw.Header.BLOCK_TYPE_RAW, 8, 2),
    ("u16_lz4_3ch", np.uint16, 3, wkw.Header.BLOCK_TYPE_LZ4, 8, 2),
    ("f32_lz4hc", np.float32, 1, wkw.Header.BLOCK_TYPE_LZ4HC, 16, 2),
    ("i64_raw_2ch", np.int64, 2, wkw.Header.BLOCK_TYPE_RAW, 4, 2),
]


def _write_mag(root, dtype, channels, block_type, block_len, file_len):
    """A mag of two whole files along x at file index 1 and 2 (file 0 missing), and the data."""
    side = block_len * file_len
    header = wkw.Header(dtype, block_len=block_len, file_len=file_len, block_type=block_type,
                        num_channels=channels)  # fmt: skip
    rng = np.random.default_rng(7)
    shape = (channels, 2 * side, side, side)
    if np.issubdtype(dtype, np.floating):
        data = rng.standard_normal(shape).astype(dtype)
    else:
        info = np.iinfo(dtype)
        data = rng.integers(info.min, info.max, size=shape, dtype=dtype, endpoint=True)
    with wkw.Dataset.create(str(root), header) as ds:
        ds.write((side, 0, 0), np.asfortranarray(data))
    return side


def _dataset(tmp_path):
    """A webKNOSSOS WKW dataset (one layer per entry of MAGS, mag 1) and its mags' roots."""
    root = tmp_path / "ds"
    layers, mags = [], {}
    for name, dtype, channels, block_type, block_len, file_len in MAGS:
        mag = root / name / "1"
        side = _write_mag(mag, dtype, channels, block_type, block_len, file_len)
        mags[name] = mag
        layers.append({
            "name": name, "category": "color", "dataFormat": "wkw",
            "elementClass": np.dtype(dtype).name, "numChannels": channels,
            "boundingBox": {"topLeft": [side, 0, 0], "width": 2 * side, "height": side,
                            "depth": side},
            "mags": [{"mag": [1, 1, 1], "path": f"./{name}/1",
                      "cubeLength": side}],
        })  # fmt: skip
    props = {"id": {"name": "ds", "team": ""}, "scale": {"factor": [1.0, 1.0, 1.0],
             "unit": "nanometer"}, "dataLayers": layers}  # fmt: skip
    (root / "datasource-properties.json").write_text(json.dumps(props))
    return root, mags


def _store(refs):
    fs = reference.ReferenceFileSystem(str(refs), asynchronous=True)
    return zarr_storage.FsspecStore(fs, read_only=True, path="")


def _open_group(refs):
    return zarr.open_group(store=_store(refs), mode="r", zarr_format=3)


def _virtualize(*args):
    out = subprocess.run([scifmt_command(), "virtualize", *map(str, args), "--to", "kerchunk",
                          "--json"], capture_output=True, text=True)  # fmt: skip
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_zarr_python_reads_a_virtualized_dataset_like_wkw(tmp_path):
    root, mags = _dataset(tmp_path)
    refs = tmp_path / "refs.json"
    summary = _virtualize(root, refs)
    assert summary["arrays"] == len(MAGS)
    group = _open_group(refs)
    for name, dtype, channels, _, block_len, _ in MAGS:
        a = group[f"{name}/1"]
        assert a.dtype == np.dtype(dtype)
        assert a.shape[0] == channels
        assert a.chunks == (channels, block_len, block_len, block_len)
        got = a[...]
        with wkw.Dataset.open(str(mags[name])) as ds:
            want = ds.read((0, 0, 0), a.shape[1:])
        np.testing.assert_array_equal(got, want, err_msg=name)
        # The missing first file reads as zeros, and the data is there.
        side = a.shape[2]
        assert not got[:, :side].any() and got[:, side:].any()
        # A region across blocks and files.
        np.testing.assert_array_equal(a[:, side - 3: side + 5, 1:7, 2:9],
                                      want[:, side - 3: side + 5, 1:7, 2:9])  # fmt: skip


def test_the_references_point_into_the_wkw_files(tmp_path):
    root, mags = _dataset(tmp_path)
    refs = tmp_path / "refs.json"
    summary = _virtualize(mags["u16_lz4_3ch"], refs)
    doc = json.loads(refs.read_text())
    chunks = {k: v for k, v in doc["refs"].items() if k.startswith("c/")}
    assert len(chunks) == summary["references"] == 2 * 2**3
    for url, offset, length in chunks.values():
        path = pathlib.Path(url.removeprefix("file://"))
        assert path.is_file() and path.parent.parent.parent == mags["u16_lz4_3ch"].resolve()
        assert offset >= 16 + 8 * 8 and offset + length <= path.stat().st_size
    # The modification time of every file is kept beside the references.
    for url, checksum in doc["scifmt"]["checksums"].items():
        seconds, nanos = checksum["last_modified"]
        st = pathlib.Path(url.removeprefix("file://")).stat()
        assert seconds * 10**9 + nanos == st.st_mtime_ns
    # A single mag is the array at the root.
    arr = zarr.open_array(store=_store(refs), mode="r", zarr_format=3)
    with wkw.Dataset.open(str(mags["u16_lz4_3ch"])) as ds:
        np.testing.assert_array_equal(arr[...], ds.read((0, 0, 0), arr.shape[1:]))


def test_icechunk_reads_a_virtualized_dataset_like_wkw(tmp_path):
    """``--to icechunk`` (a ``scifmt`` built with the ``icechunk`` feature) read by Python
    icechunk 1.1 (the repository is in its format, spec version 1); a file changed since is
    refused."""
    icechunk = pytest.importorskip("icechunk")
    root, mags = _dataset(tmp_path)
    repo_dir = tmp_path / "repo"
    out = subprocess.run([scifmt_command(), "virtualize", str(root), str(repo_dir), "--to", "icechunk",
                          "--json"], capture_output=True, text=True)  # fmt: skip
    if out.returncode == 2 and "without Icechunk support" in out.stderr:
        pytest.skip("this scifmt was built without the icechunk feature")
    assert out.returncode == 0, out.stderr
    prefix = f"file://{root.resolve()}/"
    storage = icechunk.local_filesystem_storage(str(repo_dir))
    repo = icechunk.Repository.open(storage, authorize_virtual_chunk_access={prefix: None})
    group = zarr.open_group(repo.readonly_session("main").store, mode="r")
    for name, *_ in MAGS:
        a = group[f"{name}/1"]
        with wkw.Dataset.open(str(mags[name])) as ds:
            np.testing.assert_array_equal(a[...], ds.read((0, 0, 0), a.shape[1:]), err_msg=name)
    changed = next(mags["u8_raw"].glob("z*/y*/x*.wkw"))
    st = changed.stat()
    os.utime(changed, ns=(st.st_atime_ns, st.st_mtime_ns + 60 * 10**9))
    with pytest.raises(Exception, match="checksum"):
        group["u8_raw/1"][...]
