"""The wheel's ``scifmt`` command: installed with the package, the same command as the
cargo-built binary (same version, output, messages and exit status), without Rust on the
machine.

`cargo xtask python` installs the wheel it tests into the venv, runs pytest with a PATH that has
no ``cargo`` or ``rustc``, and names the cargo-built CLI in ``SCIFMT_CARGO_CLI``.
"""

import os
import pathlib
import shutil
import signal
import subprocess
import sys
import time

import pytest

import scifmt

REPO = pathlib.Path(__file__).resolve().parents[3]
TESTDATA = REPO / "testdata"


def _wheel_cli():
    found = shutil.which("scifmt")
    assert found is not None, "the wheel installs a `scifmt` command on the venv's PATH"
    return found


@pytest.fixture(scope="module")
def cargo_cli():
    named = os.environ.get("SCIFMT_CARGO_CLI")
    if not named or not pathlib.Path(named).exists():
        pytest.skip("SCIFMT_CARGO_CLI names no cargo-built scifmt (cargo xtask python sets it)")
    return named


def test_the_command_is_the_installed_packages():
    cli = pathlib.Path(_wheel_cli()).resolve()
    # A console script of this environment, not a binary from elsewhere on PATH.
    assert cli.parent == pathlib.Path(sys.prefix).resolve() / "bin"
    out = subprocess.run([str(cli), "--version"], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == f"scifmt {scifmt.__version__}"


def test_the_package_is_installed_not_developed():
    # The suite tests what users install: the package from site-packages, not the source tree.
    package = pathlib.Path(scifmt.__file__).resolve()
    assert REPO / "crates" / "python" / "python" not in package.parents, package
    assert "site-packages" in package.parts, package
    if os.environ.get("SCIFMT_WHEEL_UNDER_TEST"):
        assert shutil.which("cargo") is None and shutil.which("rustc") is None


CASES = [
    ["--version"],
    ["--help"],
    ["wkw", "--help"],
    ["info", str(TESTDATA / "wkw" / "u16_3ch_lz4_b8_f4"), "--json"],
    ["info", str(TESTDATA / "blosc" / "frames" / "b2nd_i4_12x11.b2nd"), "--json"],
    ["wkw", "verify", str(TESTDATA / "wkw" / "i16_2ch_raw_b8_f2"), "--json"],
    ["blosc", "decompress", str(TESTDATA / "blosc" / "chunks" / "blosclz_bitshuffle_ts4.cdata"), "-"],
    # Usage errors and bad input: one line on stderr, status 2.
    ["info"],
    ["wkw"],
    ["info", str(TESTDATA / "does-not-exist")],
    ["convert", str(TESTDATA / "wkw" / "i8_raw_b8_f2"), "/x", "--to", "nothing"],
]


@pytest.mark.parametrize("args", CASES, ids=[" ".join(a[:2]) for a in CASES])
def test_same_behaviour_as_the_cargo_built_binary(args, cargo_cli):
    wheel = subprocess.run([_wheel_cli(), *args], capture_output=True)
    cargo = subprocess.run([cargo_cli, *args], capture_output=True)
    assert (wheel.returncode, wheel.stdout, wheel.stderr) == (
        cargo.returncode,
        cargo.stdout,
        cargo.stderr,
    )


def test_large_output_is_complete_and_flushed(tmp_path, cargo_cli):
    # Standard output is flushed before the command returns to Python.
    args = ["blosc", "decompress", str(TESTDATA / "blosc" / "chunks" / "blosclz_bitshuffle_ts4.cdata"), "-"]
    wheel = subprocess.run([_wheel_cli(), *args], capture_output=True, check=True)
    cargo = subprocess.run([cargo_cli, *args], capture_output=True, check=True)
    assert wheel.stdout == cargo.stdout and len(wheel.stdout) > 0


def _wait_until_reading_stdin(proc):
    """Waits until the process's main thread is blocked in read(0, ...) (Linux: its current
    system call in /proc), so the signal arrives while the command runs, not during start-up."""
    deadline = time.monotonic() + 120  # a guard against hanging, not a bound on speed
    while time.monotonic() < deadline:
        assert proc.poll() is None, "the command ended before reading its input"
        try:
            call = pathlib.Path(f"/proc/{proc.pid}/syscall").read_text().split()
        except OSError:
            call = []
        if call[:2] == ["0", "0x0"]:  # read(2) on file descriptor 0
            return
        time.sleep(0.01)
    raise AssertionError("the command never waited for its input")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="SIGINT, /proc")
def test_ctrl_c_ends_a_waiting_command_as_it_ends_the_binary(cargo_cli):
    # `blosc decompress -` waits for its input on stdin; Ctrl-C must end it (Python's own
    # SIGINT handler would only set a flag that the running command never looks at).
    results = []
    for cli in (_wheel_cli(), cargo_cli):
        proc = subprocess.Popen(
            [cli, "blosc", "decompress", "-", "-"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            # As from an interactive shell: a runner started in the background (SIGINT ignored,
            # which exec keeps) must not make the binary immune to Ctrl-C.
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        )
        try:
            _wait_until_reading_stdin(proc)
            proc.send_signal(signal.SIGINT)
            results.append(proc.wait(timeout=60))
        finally:
            proc.kill()
            proc.stdin.close()
    assert results == [-signal.SIGINT, -signal.SIGINT]
