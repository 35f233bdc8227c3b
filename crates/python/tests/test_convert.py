"""scifmt.convert: WKW <-> Zarr v3, read back with the reference packages (wkw 1.1.24,
zarr-python), in one process and on a dask.distributed LocalCluster of two worker processes
(byte-identical to the single-process run), locally and on the S3 test server."""

import json
import os
import pathlib
import shutil

import numpy as np
import pytest

import scifmt
import scifmt.wkw as swkw
from scifmt._scifmt import convert as core

ref = pytest.importorskip("wkw")
zarr = pytest.importorskip("zarr")

MARKER = ".wkw-zarr-conversion.json"
OFFSET = (5, 3, 1)
SHAPE = (70, 40, 30)


@pytest.fixture(scope="module")
def client():
    distributed = pytest.importorskip("dask.distributed")
    cluster = distributed.LocalCluster(
        n_workers=2,
        processes=True,
        threads_per_worker=1,
        dashboard_address=None,
        silence_logs=40,
    )
    with distributed.Client(cluster) as c:
        yield c
    cluster.close()


def make_mag(root, block_type=ref.Header.BLOCK_TYPE_LZ4, seed=0):
    """A WKW mag (uint16 × 2 channels, 8³ blocks, 2³ blocks per file: 30 files) with random
    values in OFFSET + SHAPE (unaligned, which the reference does not write compressed: written
    by scifmt.wkw, checked with the reference); returns the values."""
    rng = np.random.default_rng(seed)
    data = rng.integers(1, 60000, (2,) + SHAPE, dtype=np.uint16)
    header = swkw.Header(np.uint16, num_channels=2, block_len=8, file_len=2, block_type=block_type)
    with swkw.Dataset.open(str(root), header) as ds:
        ds.write(OFFSET, data)
    with ref.Dataset.open(str(root)) as ds:
        np.testing.assert_array_equal(ds.read(OFFSET, SHAPE), data)
    return data


def tree(root):
    """Every file below ``root``: relative path -> bytes."""
    root = pathlib.Path(root)
    return {
        p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


def box(arr):
    """The OFFSET + SHAPE box of a (c, x, y, z) array."""
    (x, y, z), (w, h, d) = OFFSET, SHAPE
    return arr[:, x : x + w, y : y + h, z : z + d]


def test_mag_to_zarr3_and_back_reads_the_same_voxels(tmp_path):
    data = make_mag(tmp_path / "wkw")
    s = scifmt.convert(tmp_path / "wkw", tmp_path / "zarr", to="zarr3", codec="zstd", zstd_level=3,
                       verify=True)
    assert isinstance(s, scifmt.ConvertSummary)
    assert (s.to, s.arrays, s.shards_written, s.shards_skipped) == ("zarr3", 1, 30, 0)
    assert s.verified_blocks == s.blocks > 0 and s.bytes_out > 0 and s.seconds >= 0
    assert s.to_dict()["shards_written"] == 30
    assert not (tmp_path / "zarr" / MARKER).exists()
    meta = json.loads((tmp_path / "zarr" / "zarr.json").read_text())
    assert meta["node_type"] == "array" and meta["shape"] == [2, 80, 48, 32]
    # zarr-python reads our shards.
    array = zarr.open_array(str(tmp_path / "zarr"), mode="r")
    np.testing.assert_array_equal(box(array[...]), data)
    assert array[...].sum(dtype=np.uint64) == data.sum(dtype=np.uint64)

    back = scifmt.convert(str(tmp_path / "zarr"), str(tmp_path / "back"), to="wkw",
                          block_type="raw", jobs=2)
    assert (back.to, back.shards_written, back.blocks) == ("wkw", 30, s.blocks)
    with ref.Dataset.open(str(tmp_path / "back")) as ds:
        assert ds.header.block_type == ref.Header.BLOCK_TYPE_RAW
        np.testing.assert_array_equal(ds.read(OFFSET, SHAPE), data)
        assert ds.read((0, 0, 0), (5, 48, 32)).sum() == 0


@pytest.mark.parametrize("cname,shuffle", [("zstd", None), ("lz4", "shuffle"), ("blosclz", "noshuffle")])
def test_blosc_chunks_read_by_zarr_python_and_back(tmp_path, cname, shuffle):
    data = make_mag(tmp_path / "wkw")
    s = scifmt.convert(tmp_path / "wkw", tmp_path / "zarr", to="zarr3", codec="blosc",
                       blosc_cname=cname, clevel=3, shuffle=shuffle, verify=True)
    assert s.verified_blocks == s.blocks > 0
    meta = json.loads((tmp_path / "zarr" / "zarr.json").read_text())
    inner = meta["codecs"][0]["configuration"]["codecs"]
    blosc = [c for c in inner if c["name"] == "blosc"]
    assert len(blosc) == 1 and blosc[0]["configuration"]["cname"] == cname
    assert blosc[0]["configuration"]["clevel"] == 3
    # zarr-python (numcodecs' C-Blosc) reads our Blosc1 chunks.
    array = zarr.open_array(str(tmp_path / "zarr"), mode="r")
    np.testing.assert_array_equal(box(array[...]), data)
    scifmt.convert(tmp_path / "zarr", tmp_path / "back", to="wkw", verify=True)
    with ref.Dataset.open(str(tmp_path / "back")) as ds:
        np.testing.assert_array_equal(ds.read(OFFSET, SHAPE), data)


def test_blosc_settings_are_checked(tmp_path):
    make_mag(tmp_path / "wkw")
    bad = [
        (dict(codec="zstd", clevel=3), ValueError, "need codec"),
        (dict(codec="blosc", blosc_cname="snappy"), ValueError, "blosc_cname"),
        (dict(codec="blosc", clevel=10), ValueError, "clevel"),
        (dict(codec="blosc", shuffle="sideways"), ValueError, "shuffle"),
        (dict(codec="blosc", typesize=0), ValueError, "typesize"),
        (dict(codec="blosc", blocksize=-1), ValueError, "blocksize"),
        (dict(codec="blosc", zstd_level=3), ValueError, "zstd_level"),
        (dict(codec="blosc", blosc_cname=4), TypeError, "blosc_cname"),
        (dict(codec="blosc", clevel="5"), TypeError, ""),
    ]
    for kwargs, exc, what in bad:
        with pytest.raises(exc, match=what):
            scifmt.convert(tmp_path / "wkw", tmp_path / "out", to="zarr3", **kwargs)
        assert not (tmp_path / "out").exists(), kwargs


def test_a_dataset_of_several_layers_converts_like_webknossos_libs(tmp_path, testdata):
    fixtures = testdata / "wkw-zarr" / "multi"
    # The target's directory name is the dataset's id.name, as in the fixture.
    ours = tmp_path / "zarr3"
    calls = []
    s = scifmt.convert(fixtures / "wkw", ours, to="zarr3", progress=lambda d, t: calls.append((d, t)))
    assert s.arrays == 5
    assert calls and calls[-1][0] == calls[-1][1] == len(calls)
    theirs = fixtures / "zarr3"
    docs = sorted(p.relative_to(theirs).as_posix() for p in theirs.rglob("*.json"))
    assert docs == sorted(p.relative_to(ours).as_posix() for p in ours.rglob("*.json"))
    for rel in docs:
        assert json.loads((ours / rel).read_text()) == json.loads((theirs / rel).read_text()), rel
    props = json.loads((fixtures / "wkw" / "datasource-properties.json").read_text())
    for layer in props["dataLayers"]:
        for mag in layer.get("mags") or layer["wkwResolutions"]:
            m = mag.get("mag", mag.get("resolution"))
            m = [m] * 3 if isinstance(m, int) else m
            name = str(m[0]) if len(set(m)) == 1 else "-".join(map(str, m))
            with ref.Dataset.open(str(fixtures / "wkw" / layer["name"] / name)) as ds:
                ours_arr = zarr.open_array(str(ours / layer["name"] / name), mode="r")[...]
                theirs_arr = zarr.open_array(str(theirs / layer["name"] / name), mode="r")[...]
                np.testing.assert_array_equal(ours_arr, theirs_arr)
                expected = ds.read((0, 0, 0), ours_arr.shape[1:])
                np.testing.assert_array_equal(ours_arr, expected)

    back = tmp_path / "wkw"
    scifmt.convert(ours, back, to="wkw", verify=True)
    for layer in props["dataLayers"]:
        mags = [d for d in (fixtures / "wkw" / layer["name"]).iterdir() if (d / "header.wkw").exists()]
        assert mags
        for mag_dir in mags:
            with ref.Dataset.open(str(mag_dir)) as a, ref.Dataset.open(
                str(back / layer["name"] / mag_dir.name)
            ) as b:
                size = (128, 128, 64)
                np.testing.assert_array_equal(a.read((0, 0, 0), size), b.read((0, 0, 0), size))


@pytest.mark.parametrize("block_type", [ref.Header.BLOCK_TYPE_RAW, ref.Header.BLOCK_TYPE_LZ4])
def test_a_dask_cluster_writes_the_bytes_of_one_process(client, tmp_path, block_type):
    distributed = pytest.importorskip("dask.distributed")
    make_mag(tmp_path / "wkw", block_type, seed=block_type)
    single = scifmt.convert(tmp_path / "wkw", tmp_path / "one" / "zarr", to="zarr3")
    calls = []
    with distributed.get_task_stream(client) as stream:
        spread = scifmt.convert(tmp_path / "wkw", tmp_path / "many" / "zarr", to="zarr3",
                                client=client, progress=lambda d, t: calls.append((d, t)))
    assert len({t["worker"] for t in stream.data}) == 2, "both worker processes converted units"
    assert calls[-1] == (30, 30)
    assert dataclass_counts(spread) == dataclass_counts(single)
    assert tree(tmp_path / "many" / "zarr") == tree(tmp_path / "one" / "zarr")

    # And back to WKW.
    scifmt.convert(tmp_path / "one" / "zarr", tmp_path / "one" / "wkw", to="wkw", block_type="lz4hc")
    scifmt.convert(tmp_path / "one" / "zarr", tmp_path / "many" / "wkw", to="wkw",
                   block_type="lz4hc", client=client)
    assert tree(tmp_path / "many" / "wkw") == tree(tmp_path / "one" / "wkw")
    assert len(tree(tmp_path / "one" / "wkw")) == 31


def dataclass_counts(s):
    d = s.to_dict()
    del d["seconds"]
    return d


def test_a_dataset_on_a_dask_cluster_is_byte_identical(client, tmp_path, testdata):
    src = testdata / "wkw-zarr" / "multi" / "wkw"
    for to, source in (("zarr3", src), ("wkw", tmp_path / "one" / "zarr3")):
        name = "zarr3" if to == "zarr3" else "wkw"
        single = scifmt.convert(source, tmp_path / "one" / name, to=to)
        spread = scifmt.convert(source, tmp_path / "many" / name, to=to, client=client)
        assert dataclass_counts(spread) == dataclass_counts(single)
        assert tree(tmp_path / "many" / name) == tree(tmp_path / "one" / name)


def test_an_interrupted_conversion_resumes_to_the_same_bytes(tmp_path):
    make_mag(tmp_path / "wkw")
    scifmt.convert(tmp_path / "wkw", tmp_path / "clean", to="zarr3")
    src, dst = str(tmp_path / "wkw"), str(tmp_path / "zarr")
    # Planned and half converted, then stopped (as a killed run leaves it).
    plan, units, _ = core.plan(src, dst, "zarr3")
    half = [uid for uid, _ in units[: len(units) // 2]]
    done = core.convert_units(src, dst, plan, half)
    assert (tmp_path / "zarr" / MARKER).exists()
    assert not (tmp_path / "zarr" / "zarr.json").exists()
    with pytest.raises(scifmt.ConvertError, match="target exists"):
        scifmt.convert(src, dst, to="zarr3")
    with pytest.raises(ValueError, match="exclude"):
        scifmt.convert(src, dst, to="zarr3", resume=True, overwrite=True)
    # Other options than the interrupted run's are refused.
    with pytest.raises(scifmt.ConvertError, match="same options"):
        scifmt.convert(src, dst, to="zarr3", resume=True, codec="none")
    rest = scifmt.convert(src, dst, to="zarr3", resume=True)
    assert rest.shards_skipped == done["shards_written"] > 0
    assert rest.shards_written + rest.shards_skipped == 30
    assert tree(dst) == tree(tmp_path / "clean")
    again = scifmt.convert(src, dst, to="zarr3", overwrite=True)
    assert again.shards_written == 30
    assert tree(dst) == tree(tmp_path / "clean")


def test_errors_are_exceptions_naming_what_failed(tmp_path):
    make_mag(tmp_path / "wkw")
    missing = tmp_path / "missing"
    with pytest.raises(scifmt.ConvertError, match="missing"):
        scifmt.convert(missing, tmp_path / "out", to="zarr3")
    assert not (tmp_path / "out").exists()
    with pytest.raises(scifmt.ConvertError, match="already (Zarr v3|WKW)"):
        scifmt.convert(tmp_path / "wkw", tmp_path / "out", to="wkw")
    bad = [
        ({"to": "n5"}, ValueError, "to="),
        ({"to": 3}, TypeError, "to"),
        ({"to": "zarr3", "codec": "gzip"}, ValueError, "codec"),
        ({"to": "zarr3", "zstd_level": 9}, ValueError, "zstd_level"),
        ({"to": "zarr3", "codec": "zstd", "zstd_level": 99}, ValueError, "zstd_level"),
        ({"to": "wkw", "block_type": "zip"}, ValueError, "block_type"),
        ({"to": "zarr3", "jobs": 0}, ValueError, "jobs"),
        ({"to": "zarr3", "jobs": 2.5}, TypeError, "jobs"),
        ({"to": "zarr3", "jobs": -1}, ValueError, "jobs"),
        ({"to": "zarr3", "overwrite": "yes"}, TypeError, "overwrite"),
        ({"to": "zarr3", "storage_options": ["a"]}, TypeError, "storage_options"),
        ({"to": "zarr3", "storage_options": {"a": None}}, TypeError, "storage_options"),
        ({"to": "zarr3", "progress": 5}, TypeError, "progress"),
        ({"to": "zarr3", "client": object()}, TypeError, "client"),
    ]
    for kwargs, exc, what in bad:
        with pytest.raises(exc, match=what):
            scifmt.convert(tmp_path / "wkw", tmp_path / "out", **kwargs)
        assert not (tmp_path / "out").exists(), kwargs
    for src in (None, 5, b"bytes", ""):
        with pytest.raises((TypeError, ValueError)):
            scifmt.convert(src, tmp_path / "out", to="zarr3")

    scifmt.convert(tmp_path / "wkw", tmp_path / "out", to="zarr3")
    with pytest.raises(scifmt.ConvertError, match="target exists"):
        scifmt.convert(tmp_path / "wkw", tmp_path / "out", to="zarr3")

    # A progress callback's exception propagates (the conversion itself completes).
    def boom(done, total):
        raise KeyError("from progress")

    with pytest.raises(KeyError, match="from progress"):
        scifmt.convert(tmp_path / "wkw", tmp_path / "p", to="zarr3", progress=boom)

    # Hostile plans and unit ids for the low-level steps.
    plan, units, _ = core.plan(str(tmp_path / "wkw"), str(tmp_path / "q"), "zarr3")
    for doc in ("", "{}", "null", plan.replace('"version":1', '"version":99')):
        with pytest.raises(ValueError, match="plan"):
            core.convert_units(str(tmp_path / "wkw"), str(tmp_path / "q"), doc, [])
    with pytest.raises(scifmt.ConvertError, match="not in the plan"):
        core.convert_units(str(tmp_path / "wkw"), str(tmp_path / "q"), plan, ["../../etc/passwd"])
    with pytest.raises(TypeError):
        core.convert_units(str(tmp_path / "wkw"), str(tmp_path / "q"), plan, [1, 2])


def test_a_failing_unit_on_a_worker_is_an_error_naming_it(client, tmp_path):
    make_mag(tmp_path / "wkw")
    broken = tmp_path / "wkw" / "z1" / "y1" / "x2.wkw"
    broken.write_bytes(b"not a WKW file at all" * 10)
    with pytest.raises(scifmt.ConvertError, match=r"units .*x2\.wkw"):
        scifmt.convert(tmp_path / "wkw", tmp_path / "zarr", to="zarr3", client=client)
    # The target stays marked unfinished, without metadata.
    assert (tmp_path / "zarr" / MARKER).exists()
    assert not (tmp_path / "zarr" / "zarr.json").exists()


def test_a_source_on_s3_and_a_target_on_s3_through_the_cluster(server, client, tmp_path, testdata):
    name = "u16_3ch_lz4_b8_f4"
    local = tmp_path / "local"
    scifmt.convert(testdata / "wkw" / name, local / "zarr", to="zarr3")
    scifmt.convert(local / "zarr", local / "wkw", to="wkw")

    # S3 source, local target.
    s = scifmt.convert(f"s3://{server.bucket}/wkw/{name}", tmp_path / "from-s3", to="zarr3")
    assert s.shards_written > 0
    assert tree(tmp_path / "from-s3") == tree(local / "zarr")

    # Local source, S3 target, converted by the workers (they get the storage options), and back.
    url = f"s3://{server.bucket}/converted/{name}"
    scifmt.convert(testdata / "wkw" / name, url, to="zarr3", client=client,
                   storage_options=server.storage_options)
    back = scifmt.convert(url, tmp_path / "back", to="wkw", client=client,
                          storage_options=server.storage_options, verify=True)
    assert back.verified_blocks > 0
    assert back.shards_written > 0
    assert tree(tmp_path / "back") == tree(local / "wkw")
    with pytest.raises(scifmt.ConvertError, match="target exists") as e:
        scifmt.convert(testdata / "wkw" / name, url, to="zarr3",
                       storage_options=server.storage_options)
    secret = server.storage_options.get("aws_secret_access_key")
    if secret:
        assert secret not in str(e.value)


def test_the_api_lives_in_scifmt():
    assert scifmt.ConvertError.__module__ == "scifmt"
    assert issubclass(scifmt.ConvertError, Exception)
    assert scifmt.convert.__module__ == "scifmt._convert"
    assert {"convert", "ConvertError", "ConvertSummary"} <= set(scifmt.__all__)
    fields = [f.name for f in __import__("dataclasses").fields(scifmt.ConvertSummary)]
    assert fields[:9] == ["to", "arrays", "shards_written", "shards_skipped", "shards_empty",
                          "blocks", "bytes_in", "bytes_out", "seconds"]


def test_an_empty_mag_converts_alone_and_on_the_cluster(client, tmp_path):
    header = swkw.Header(np.uint8, block_len=8, file_len=2, block_type=2)
    swkw.Dataset.create(str(tmp_path / "wkw"), header).close()
    one = scifmt.convert(tmp_path / "wkw", tmp_path / "one", to="zarr3")
    many = scifmt.convert(tmp_path / "wkw", tmp_path / "many", to="zarr3", client=client)
    assert dataclass_counts(one) == dataclass_counts(many)
    assert (one.arrays, one.shards_written) == (1, 0)
    assert tree(tmp_path / "one") == tree(tmp_path / "many")
    assert list(tree(tmp_path / "one")) == ["zarr.json"]
