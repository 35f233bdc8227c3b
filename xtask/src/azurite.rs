//! `cargo xtask azurite`: installs Azurite, the Azure Storage emulator whose Blob service the
//! tests of `az://` URLs start (testkit's `azurite` module), into `target/azurite/`.
//!
//! Azurite is a Node.js program: `npm ci` installs exactly what `xtask/azurite/package-lock.json`
//! lists (the release pinned in its `package.json`, every package checked against the lock
//! file's integrity hash), without install scripts. Skipped when `target/azurite/` holds that
//! installation already. Needs `node` and `npm` (the download is about 100 MB, 360 MB
//! unpacked).

use std::path::Path;
use std::process::Command;

use crate::util::{exec, project_root};

/// The Blob service's entry point below the installation.
const MAIN_JS: &str = "node_modules/azurite/dist/src/blob/main.js";

/// Installs Azurite into `target/azurite/` unless it is there already.
///
/// # Errors
/// When the lock file cannot be read or copied, or npm fails.
pub(crate) fn install() -> Result<(), String> {
    let root = project_root();
    let src = root.join("xtask").join("azurite");
    let dst = root.join("target").join("azurite");
    let lock = read(&src.join("package-lock.json"))?;
    if dst.join(MAIN_JS).is_file()
        && std::fs::read(dst.join("package-lock.json")).ok() == Some(lock)
    {
        println!("azurite: {} is up to date", dst.display());
        return Ok(());
    }
    if dst.exists() {
        std::fs::remove_dir_all(&dst).map_err(|e| format!("{}: {e}", dst.display()))?;
    }
    std::fs::create_dir_all(&dst).map_err(|e| format!("{}: {e}", dst.display()))?;
    for f in ["package.json", "package-lock.json"] {
        std::fs::copy(src.join(f), dst.join(f)).map_err(|e| format!("{f}: {e}"))?;
    }
    exec(
        Command::new("npm")
            .args([
                "ci",
                "--omit=dev",
                "--ignore-scripts",
                "--no-audit",
                "--no-fund",
            ])
            .current_dir(&dst),
    )?;
    if dst.join(MAIN_JS).is_file() {
        Ok(())
    } else {
        Err(format!("npm ci left no {MAIN_JS} in {}", dst.display()))
    }
}

fn read(p: &Path) -> Result<Vec<u8>, String> {
    std::fs::read(p).map_err(|e| format!("{}: {e}", p.display()))
}

pub(crate) fn run(args: &[String]) -> Result<(), String> {
    if let Some(extra) = args.first() {
        return Err(format!("unexpected argument `{extra}`"));
    }
    install()
}
