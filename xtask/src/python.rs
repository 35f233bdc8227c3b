//! `cargo xtask python [PYTEST ARGS…]`: the Python package's test suite (crates/python).
//!
//! Creates (or reuses) the virtualenv `target/python-venv`, pip-installs the pinned tools and
//! reference packages ([`REQUIREMENTS`], skipped when the venv already has exactly these pins),
//! builds and installs the `scifmt` wheel with `maturin develop --release` (the one release
//! build of CI), builds the `s3-testserver` binary with the workspace's other binaries
//! ([`crate::util::build_workspace_bins`]: after `cargo test --workspace` it is already built; the
//! remote tests start it as a process and pass its S3 endpoint through the environment;
//! `SCIFMT_S3_TESTSERVER` names it), and runs pytest on
//! `crates/python/tests` (every `test_*.py`; extra arguments go to pytest). Needs `python3`
//! (3.9 or newer) with the `venv` module; fails when it is missing.

use std::path::Path;
use std::process::Command;

use crate::util::{exec, project_root};

/// What the suite installs, pinned: the build backend, the runtime and test dependencies, and
/// the reference packages the tests cross-check against (`wkw` for `scifmt.wkw`, `blosc2` for
/// the Blosc/b2nd modules, `zarr` + `numcodecs` + `blosc` (python-blosc, C-Blosc 1.21) for
/// `scifmt.zarr`).
const REQUIREMENTS: &[&str] = &[
    "maturin==1.16.0",
    "numpy==2.4.6",
    "pytest==9.2.0",
    // A hung test fails after `PYTEST_TIMEOUT` with every thread's stack, instead of holding
    // CI until its hard limit.
    "pytest-timeout==2.4.0",
    "dask[distributed]==2026.8.0",
    "wkw==1.1.24",
    "blosc2==4.14.1",
    "zarr==3.1.6",
    "numcodecs==0.16.6",
    "blosc==1.11.4",
];

/// Seconds one test may take (the slowest, the Dask cluster tests, take about 20).
const PYTEST_TIMEOUT: u32 = 600;

pub(crate) fn run(args: &[String]) -> Result<(), String> {
    let root = project_root();
    let venv = root.join("target").join("python-venv");
    let bin = venv.join("bin");
    let python = bin.join("python");
    if !python.exists() {
        exec(Command::new("python3").arg("-m").arg("venv").arg(&venv))?;
    }
    install_requirements(&python, &venv)?;

    // maturin develop installs into the venv named by VIRTUAL_ENV; PATH puts its tools first.
    let path = std::env::var_os("PATH").unwrap_or_default();
    let mut paths = vec![bin.clone()];
    paths.extend(std::env::split_paths(&path));
    let path = std::env::join_paths(paths).map_err(|e| format!("PATH: {e}"))?;
    let manifest = root.join("crates").join("python").join("Cargo.toml");
    exec(
        Command::new(bin.join("maturin"))
            .args(["develop", "--release", "--quiet", "--manifest-path"])
            .arg(&manifest)
            .env("VIRTUAL_ENV", &venv)
            .env("PATH", &path)
            .current_dir(&root),
    )?;
    // The S3 test server binary, built with the workspace's binaries (the build of
    // `cargo test --workspace`, so after the tests nothing is compiled again).
    let server = crate::util::build_workspace_bins()?.join("s3-testserver");
    let mut pytest = Command::new(&python);
    pytest
        .args(["-m", "pytest", "-q", "-p", "no:cacheprovider"])
        .arg(format!("--timeout={PYTEST_TIMEOUT}"))
        .arg(root.join("crates").join("python").join("tests"))
        .args(args)
        .env("VIRTUAL_ENV", &venv)
        .env("PATH", &path)
        .env("SCIFMT_S3_TESTSERVER", &server)
        .current_dir(&root);
    eprintln!("$ {pytest:?}");
    let status = pytest
        .status()
        .map_err(|e| format!("cannot start pytest: {e}"))?;
    match status.code() {
        Some(0) => Ok(()),
        // A run that tests nothing must not pass for a green one.
        Some(5) => Err("pytest collected no tests (exit 5): check the selection arguments".into()),
        _ => Err(format!("pytest failed with {status}")),
    }
}

/// Installs [`REQUIREMENTS`] unless the stamp file in the venv lists exactly them.
fn install_requirements(python: &Path, venv: &Path) -> Result<(), String> {
    let stamp = venv.join("scifmt-requirements.txt");
    let wanted = REQUIREMENTS.join("\n");
    if std::fs::read_to_string(&stamp).is_ok_and(|s| s == wanted) {
        return Ok(());
    }
    exec(
        Command::new(python)
            .args([
                "-m",
                "pip",
                "install",
                "--quiet",
                "--disable-pip-version-check",
            ])
            .args(REQUIREMENTS),
    )?;
    std::fs::write(&stamp, wanted).map_err(|e| format!("{}: {e}", stamp.display()))
}
