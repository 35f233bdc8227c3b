"""What a Python user sees: errors that name the object and say what is wrong (and how to fix
it), one set of defaults shared with the ``scifmt`` command, and the conventions of the
packages this one stands in for (context managers, ``dir()``, exception modules, reprs).

Cloud-credential tests never reach a cloud: the credential variables are removed and the
instance-metadata services point at a closed loopback port."""

import os
import pathlib
import re

import blosc2
import numpy as np
import pytest

import scifmt
import scifmt.b2nd as b2nd
import scifmt.codecs as codecs
import scifmt.blosc as blosc
import scifmt.dwe as dwe
import scifmt.wkw as wkw
import scifmt.wkw.dask as wkw_dask

CLOSED = "127.0.0.1:1"
REPO = pathlib.Path(__file__).resolve().parents[3]


@pytest.fixture
def no_credentials(monkeypatch, tmp_path):
    for k in list(os.environ):
        if k.upper().startswith(("AWS_", "GOOGLE_", "AZURE_", "GCE_")):
            monkeypatch.delenv(k)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("AWS_METADATA_ENDPOINT", f"http://{CLOSED}")
    monkeypatch.setenv("GCE_METADATA_HOST", CLOSED)
    monkeypatch.setenv("GCE_METADATA_IP", CLOSED)
    monkeypatch.setenv("AZURE_MSI_ENDPOINT", f"http://{CLOSED}/metadata/identity/oauth2/token")


@pytest.mark.parametrize(
    "url, needles",
    [
        ("s3://my-bucket/volume", ["no AWS credentials found", "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY", "AWS_SKIP_SIGNATURE=true"]),
        ("gs://my-bucket/volume", ["no Google Cloud credentials found", "GOOGLE_APPLICATION_CREDENTIALS", "GOOGLE_SKIP_SIGNATURE=true"]),
    ],
)
def test_missing_credentials_say_how_to_provide_them(no_credentials, url, needles):
    with pytest.raises(wkw.WKWException) as e:
        wkw.Dataset.open(url)
    msg = str(e.value)
    for n in needles:
        assert n in msg, msg
    assert f"(the instance-metadata service at http://{CLOSED}, asked last, gave none)" in msg
    assert "Generic" not in msg and "169.254" not in msg
    with pytest.raises(OSError) as e:
        b2nd.open(url + "/a.b2nd")
    assert needles[0] in str(e.value), str(e.value)
    assert str(e.value).startswith(url + "/a.b2nd: "), str(e.value)


def test_azure_without_account_says_how_to_name_it(no_credentials):
    with pytest.raises(wkw.WKWException) as e:
        wkw.Dataset.open("az://container/volume")
    assert "no Azure storage account given: set AZURE_STORAGE_ACCOUNT_NAME" in str(e.value)


def test_bytes_that_are_no_blosc_chunk_say_so_first():
    with pytest.raises(blosc.BloscError) as e:
        blosc.decompress(b"This is a text file, not a Blosc chunk at all.\n")
    assert str(e.value) == "not a Blosc chunk: invalid format version 84"
    zero_typesize = bytes([2, 1, 1, 0, 16, 0, 0, 0, 16, 0, 0, 0, 32, 0, 0, 0]) + bytes(16)
    with pytest.raises(blosc.BloscError, match=r"^not a Blosc chunk: invalid typesize 0$"):
        blosc.info(zero_typesize)


def test_staged_writes_name_the_target(tmp_path):
    (tmp_path / "file").write_text("x")
    target = tmp_path / "file" / "a.b2nd"
    with pytest.raises(OSError) as e:
        b2nd.save(np.arange(10, dtype=np.int32), target)
    msg = str(e.value)
    assert ".tmp" not in msg and not re.search(r"\.a\.b2nd\.\w+", msg), msg
    assert str(target) in msg, msg


def test_defaults_are_python_blosc2s():
    rng = np.random.default_rng(7)
    i = np.arange(3000)
    raw = (100000 + 7 * i + rng.integers(0, 16, 3000)).astype("<i8").tobytes()
    assert blosc.compress(raw) == blosc2.compress2(raw)
    assert blosc.compress2(raw) == blosc2.compress2(raw)
    info = blosc.info(blosc.compress(raw))
    assert (info.codec, info.typesize) == (blosc.Codec.ZSTD, 8)
    # The scifmt command has the same defaults: `scifmt blosc compress IN OUT` (checked by the
    # CLI's tests against the same python-blosc2 call).


def test_names_are_case_insensitive_and_numpy_dtype_names_work(tmp_path):
    data = np.arange(1000, dtype=np.uint16)
    assert blosc.compress(data, codec="LZ4") == blosc.compress(data, codec="lz4")
    for name in ["uint16", "UINT16", "u16", "<u2", np.dtype("uint16"), np.uint16]:
        assert wkw.Header(voxel_type=name).voxel_type is np.uint16, name
    with wkw.Dataset.create(str(tmp_path / "ds"), wkw.Header(voxel_type="float32")) as ds:
        ds.write((0, 0, 0), np.ones((1, 2, 2, 2), dtype=np.float32))
        assert ds.read((0, 0, 0), (2, 2, 2), order="c").dtype == np.float32


def test_one_version_for_the_package_and_the_command():
    import importlib.metadata
    import tomllib

    root = tomllib.loads((REPO / "Cargo.toml").read_text())
    assert scifmt.__version__ == root["workspace"]["package"]["version"]
    assert importlib.metadata.version("scifmt") == scifmt.__version__
    for manifest in ["crates/cli/Cargo.toml", "crates/python/Cargo.toml"]:
        pkg = tomllib.loads((REPO / manifest).read_text())["package"]
        assert pkg["version"] == {"workspace": True}, manifest


def test_arrays_and_files_are_context_managers(tmp_path, testdata):
    path = tmp_path / "a.b2nd"
    b2nd.save(np.arange(12, dtype=np.int32).reshape(3, 4), path)
    with b2nd.open(path) as a:
        assert a[1, 2] == 6
        assert not a.closed
    assert a.closed
    assert repr(a) == f"B2ndArray({str(path)!r}, closed)"
    with pytest.raises(b2nd.B2ndError, match=r": the array is closed$"):
        a[0, 0]
    a.close()  # twice: a no-op

    src = next((testdata / "dwe").rglob("*.dwe"))
    with dwe.open(src) as f:
        assert f.num_timesteps > 0
    assert f.closed
    with pytest.raises(dwe.DweError, match=r": the file is closed$"):
        f.vector(0, 0)


def test_dir_shows_only_the_public_api():
    for module in [b2nd, blosc, dwe, wkw, wkw.wkw, wkw_dask, codecs]:
        names = dir(module)
        assert names == sorted(module.__all__), module.__name__
        for leak in ["np", "os", "re", "Optional", "Any", "annotations", "_core"]:
            assert leak not in names, (module.__name__, leak)


def test_exceptions_live_in_scifmt_modules():
    assert blosc.BloscError.__module__ == "scifmt.blosc"
    assert b2nd.B2ndError.__module__ == "scifmt.b2nd"
    assert dwe.DweError.__module__ == "scifmt.dwe"
    assert wkw.WKWException.__module__ == "scifmt.wkw"
    assert blosc.BloscError.__qualname__ == "BloscError"


def test_header_repr_names_the_block_type():
    h = wkw.Header(np.uint8, block_type=wkw.Header.BLOCK_TYPE_LZ4HC)
    assert repr(h) == (
        "Header(voxel_type=uint8, num_channels=1, version=1, block_len=32, file_len=32, "
        "block_type=Header.BLOCK_TYPE_LZ4HC)"
    )


@pytest.mark.parametrize("threads", [-1, 0, 1025, 1.5, "2", True])
def test_bad_threads_are_a_value_error_naming_the_argument(tmp_path, threads):
    root = tmp_path / "ds"
    wkw.Dataset.create(root, wkw.Header(np.uint8)).close()
    for call in (
        lambda: wkw.Dataset.open(root, threads=threads),
        lambda: wkw.Dataset.create(tmp_path / "new", wkw.Header(np.uint8), threads=threads),
        lambda: wkw.verify(root, threads=threads),
    ):
        with pytest.raises(ValueError, match=r"^threads must be None \(every core\) or an integer"):
            call()
        with pytest.raises(wkw.InvalidArgumentError):
            call()
    assert not (tmp_path / "new").exists()
