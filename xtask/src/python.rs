//! `cargo xtask python [PYTEST ARGS…]`: the Python package's test suite (crates/python).
//!
//! Tests the package **as installed**: builds the release wheel as `cargo xtask dist` does
//! (manylinux2014, abi3, with the `scifmt` command; `--wheel PATH` tests a wheel already built,
//! e.g. by `dist`, instead), creates (or reuses) the virtualenv `target/python-venv`,
//! pip-installs the pinned test tools and reference packages ([`REQUIREMENTS`], skipped when the
//! venv already has exactly these pins) and the wheel itself (not a develop build), and runs
//! pytest with a `PATH` of the venv's tools and no `cargo` or `rustc`. It prints the wheel's
//! size and the time `import scifmt` takes.
//!
//! The debug builds of `s3-testserver` and `scifmt` come from the workspace's binaries
//! ([`crate::util::build_workspace_bins`]: after `cargo test --workspace` they are already
//! built): the remote tests start the server as a process (`SCIFMT_S3_TESTSERVER` names it) and
//! the CLI tests compare the wheel's `scifmt` with the cargo-built one (`SCIFMT_CARGO_CLI`).
//! `--prebuilt` takes them from `target/debug` as they are, without running cargo (`.ci/run`
//! built them and runs this beside `xtask ci`, whose cargo runs hold the build directory's lock).
//! pytest runs `crates/python/tests` (every `test_*.py`; extra arguments go to pytest).
//! `cargo xtask python --prepare` only makes the venv (no wheel, no tests). Needs
//! `python3` (3.9 or newer) with the `venv` module; fails when it is missing.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::util::project_root;

/// What the suite installs, pinned: the runtime and test dependencies, and
/// the reference packages the tests cross-check against (`wkw` for `scifmt.wkw`, `blosc2` for
/// the Blosc/b2nd modules, `zarr` + `numcodecs` + `blosc` (python-blosc, C-Blosc 1.21) for
/// `scifmt.zarr`, `virtualizarr` + `xarray` + `obstore` + `icechunk` for `scifmt.virtual`, `fastparquet` for
/// kerchunk Parquet references).
pub(crate) const REQUIREMENTS: &[&str] = &[
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
    // `scifmt.virtual.WKWParser` (test_virtual.py): VirtualiZarr 2.5 (the newest for Python
    // 3.11), the xarray and obstore it loads through, and Icechunk for `.vz.to_icechunk` (about
    // 40 MB of wheels with their dependencies, pandas among them; 15 s to install).
    "virtualizarr==2.5.1",
    "xarray==2026.9.0",
    "obstore==0.12.1",
    "obspec-utils==0.9.0",
    "icechunk==1.1.21",
    // fsspec's engine for kerchunk Parquet references (test_virtualize_parquet.py).
    "fastparquet==2026.9.0",
];

/// Seconds one test may take (the slowest, the Dask cluster tests, take about 20).
const PYTEST_TIMEOUT: u32 = 600;

pub(crate) fn run(args: &[String]) -> Result<(), String> {
    let root = project_root();
    let mut wheel = None;
    let mut prebuilt = false;
    let mut pytest_args = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        if a == "--wheel" {
            wheel = Some(PathBuf::from(it.next().ok_or("--wheel needs a path")?));
        } else if a == "--prebuilt" {
            prebuilt = true;
        } else if a == "--prepare" && args.len() == 1 {
            // Only the venv with the pinned packages (.ci/run makes it while the wheel builds).
            crate::util::venv_at(&root.join("target").join("python-venv"), REQUIREMENTS)?;
            return Ok(());
        } else {
            pytest_args.push(a.clone());
        }
    }
    // The wheel under test: the one given (`cargo xtask dist` built it), else built here as
    // `dist` builds it.
    let wheel = match wheel {
        Some(w) => w,
        None => crate::dist::build_wheel(
            &crate::dist::tools()?,
            &root.join("target").join("python-wheel"),
            "release",
        )?,
    };
    let size = std::fs::metadata(&wheel).map_err(|e| format!("{}: {e}", wheel.display()))?;
    eprintln!(
        "python: testing {} ({:.1} MB)",
        wheel.display(),
        size.len() as f64 / 1e6
    );

    let venv = root.join("target").join("python-venv");
    let bin = venv.join("bin");
    let python = crate::util::venv_at(&venv, REQUIREMENTS)?;
    // The wheel as a user installs it (not an editable or develop build), replacing the last.
    crate::util::pip_install(
        &python,
        &[
            std::ffi::OsStr::new("--force-reinstall"),
            std::ffi::OsStr::new("--no-deps"),
            wheel.as_os_str(),
        ],
    )?;

    // The venv's tools first, and no directory that has `cargo` or `rustc`: the tests run what
    // a user without Rust has.
    let path = std::env::var_os("PATH").unwrap_or_default();
    let mut paths = vec![bin.clone()];
    paths.extend(
        std::env::split_paths(&path)
            .filter(|d| !d.join("cargo").exists() && !d.join("rustc").exists()),
    );
    let path = std::env::join_paths(paths).map_err(|e| format!("PATH: {e}"))?;
    report_import_time(&python, &path)?;

    // The S3 test server and the cargo-built CLI (the wheel's `scifmt` is compared with it),
    // built with the workspace's binaries (the build of `cargo test --workspace`, so after the
    // tests nothing is compiled again).
    let debug = if prebuilt {
        let debug = crate::util::cargo_target_dir().join("debug");
        for bin in ["s3-testserver", "scifmt"] {
            if !debug.join(bin).is_file() {
                return Err(format!(
                    "--prebuilt: {} is missing (build it with `cargo build --workspace --bins \
                     --examples`)",
                    debug.join(bin).display()
                ));
            }
        }
        debug
    } else {
        crate::util::build_workspace_bins()?
    };
    let mut pytest = Command::new(&python);
    pytest
        .args(["-m", "pytest", "-q", "-p", "no:cacheprovider"])
        .arg(format!("--timeout={PYTEST_TIMEOUT}"))
        .arg(root.join("crates").join("python").join("tests"))
        .args(&pytest_args)
        .env("VIRTUAL_ENV", &venv)
        .env("PATH", &path)
        .env("SCIFMT_S3_TESTSERVER", debug.join("s3-testserver"))
        .env("SCIFMT_CARGO_CLI", debug.join("scifmt"))
        .env("SCIFMT_WHEEL_UNDER_TEST", &wheel)
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

/// Prints how long `python -c "import scifmt"` takes in the venv (the median of five fresh
/// interpreters, minus a bare interpreter's start).
fn report_import_time(python: &Path, path: &std::ffi::OsStr) -> Result<(), String> {
    let time = |code: &str| -> Result<f64, String> {
        let mut runs = Vec::new();
        for _ in 0..5 {
            let t0 = std::time::Instant::now();
            let st = Command::new(python)
                .args(["-c", code])
                .env("PATH", path)
                .status()
                .map_err(|e| format!("cannot start {}: {e}", python.display()))?;
            if !st.success() {
                return Err(format!("python -c {code:?} failed with {st}"));
            }
            runs.push(t0.elapsed().as_secs_f64());
        }
        Ok(crate::util::median(runs))
    };
    let bare = time("pass")?;
    let import = time("import scifmt")?;
    eprintln!(
        "python: `import scifmt` takes {:.0} ms (interpreter start {:.0} ms not counted)",
        (import - bare).max(0.0) * 1e3,
        bare * 1e3
    );
    Ok(())
}
