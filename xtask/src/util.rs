//! Small helpers shared by the tasks.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The workspace root (parent of `xtask/`).
pub(crate) fn project_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf)
}

/// Cargo's output directory: `CARGO_TARGET_DIR` when set (relative to the workspace root, where
/// [`cargo`] runs), else `target/` in the workspace root.
pub(crate) fn cargo_target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map_or_else(|| project_root().join("target"), |d| project_root().join(d))
}

/// A `cargo` command running in the workspace root, using the cargo that runs us.
pub(crate) fn cargo() -> Command {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.current_dir(project_root());
    cmd
}

/// Builds every binary and example of the workspace (`cargo build --workspace --bins --examples`)
/// and returns the `debug` directory they are in (`<target>/debug`, examples in its `examples/`).
///
/// Why not `cargo build -p <package>`: Cargo resolves features over the packages of one
/// invocation, and a package alone turns fewer features of its dependencies on than the whole
/// workspace does, so each `-p` build compiled another copy of most dependencies. Selecting
/// examples brings in the dev-dependencies, which makes this the feature resolution of
/// `cargo test --workspace` (which also builds the binaries and examples): after the tests,
/// this builds nothing new.
///
/// # Errors
/// When the build fails.
pub(crate) fn build_workspace_bins() -> Result<PathBuf, String> {
    exec(cargo().args(["build", "--workspace", "--bins", "--examples"]))?;
    Ok(cargo_target_dir().join("debug"))
}

/// Runs a command to completion, echoing it first; a non-zero exit is an error.
pub(crate) fn exec(cmd: &mut Command) -> Result<(), String> {
    eprintln!("$ {cmd:?}");
    let status = cmd
        .status()
        .map_err(|e| format!("cannot start {cmd:?}: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("{cmd:?} failed with {status}"))
    }
}

/// A Python virtualenv under `target/xtask-venv` with `packages` pip-installed (pinned
/// `name==version` strings). Returns the venv's `python`, or `Ok(None)` with a message printed
/// when no `python3` is available (callers skip their live checks then).
///
/// # Errors
/// When venv creation or `pip install` fails.
#[allow(dead_code)] // used by the sections that drive reference implementations
pub(crate) fn python_venv(packages: &[&str]) -> Result<Option<PathBuf>, String> {
    let Ok(status) = Command::new("python3").arg("--version").output() else {
        eprintln!("python3 not found: skipping checks that need the reference implementations");
        return Ok(None);
    };
    if !status.status.success() {
        eprintln!("python3 unusable: skipping checks that need the reference implementations");
        return Ok(None);
    }
    let venv = project_root().join("target").join("xtask-venv");
    let python = venv.join("bin").join("python");
    if !python.exists() {
        exec(Command::new("python3").arg("-m").arg("venv").arg(&venv))?;
    }
    if !packages.is_empty() {
        pip_install(&python, packages)?;
    }
    Ok(Some(python))
}

/// Creates or reuses a virtualenv at `dir` with `requirements` pip-installed (reinstalled when
/// the list changes: a stamp file in the venv holds the last one); returns its `python`.
///
/// # Errors
/// When venv creation, `pip install` or writing the stamp fails.
pub(crate) fn venv_at(dir: &Path, requirements: &[&str]) -> Result<PathBuf, String> {
    let python = dir.join("bin").join("python");
    if !python.exists() {
        exec(Command::new("python3").arg("-m").arg("venv").arg(dir))?;
    }
    let stamp = dir.join("scifmt-requirements.txt");
    let wanted = requirements.join("\n");
    if !std::fs::read_to_string(&stamp).is_ok_and(|s| s == wanted) {
        pip_install(&python, requirements)?;
        std::fs::write(&stamp, wanted).map_err(|e| format!("{}: {e}", stamp.display()))?;
    }
    Ok(python)
}

/// `python -m pip install --quiet --disable-pip-version-check ARGS…` (packages, pins, wheel
/// paths or pip options).
///
/// # Errors
/// When pip fails.
pub(crate) fn pip_install<S: AsRef<std::ffi::OsStr>>(
    python: &Path,
    args: &[S],
) -> Result<(), String> {
    exec(
        Command::new(python)
            .args([
                "-m",
                "pip",
                "install",
                "--quiet",
                "--disable-pip-version-check",
            ])
            .args(args),
    )
}

/// The median of `v` (the mean of the middle two for an even count; NaN when empty).
pub(crate) fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n == 0 {
        f64::NAN
    } else if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// A task's command-line arguments read flag by flag: `--flag VALUE` pairs and bare
/// switches, the errors quoting the task's usage line.
pub(crate) struct Flags<'a> {
    it: std::slice::Iter<'a, String>,
    usage: &'static str,
}

impl<'a> Flags<'a> {
    pub(crate) fn new(args: &'a [String], usage: &'static str) -> Self {
        Self {
            it: args.iter(),
            usage,
        }
    }

    /// The next flag (or switch), if any.
    pub(crate) fn next_flag(&mut self) -> Option<&'a str> {
        self.it.next().map(String::as_str)
    }

    /// The value after `flag`.
    pub(crate) fn value(&mut self, flag: &str) -> Result<String, String> {
        self.it
            .next()
            .cloned()
            .ok_or_else(|| format!("{flag} needs a value ({})", self.usage))
    }

    /// The number after `flag`, which must lie in `range`.
    pub(crate) fn number<T>(
        &mut self,
        flag: &str,
        range: std::ops::RangeInclusive<T>,
    ) -> Result<T, String>
    where
        T: std::str::FromStr + PartialOrd + std::fmt::Display,
    {
        let v = self.value(flag)?;
        v.parse::<T>()
            .ok()
            .filter(|n| range.contains(n))
            .ok_or_else(|| {
                format!(
                    "{flag} {v}: need a number from {} to {} ({})",
                    range.start(),
                    range.end(),
                    self.usage
                )
            })
    }

    /// The power of two from `min` to `max` after `flag` (a cube's side).
    pub(crate) fn power_of_two(&mut self, flag: &str, min: u32, max: u32) -> Result<u32, String> {
        let v = self.value(flag)?;
        v.parse::<u32>()
            .ok()
            .filter(|&n| (min..=max).contains(&n) && n.is_power_of_two())
            .ok_or_else(|| {
                format!(
                    "{flag} {v}: need a power of two from {min} to {max} ({})",
                    self.usage
                )
            })
    }

    /// The error for an argument the task does not take.
    pub(crate) fn unknown(&self, flag: &str) -> String {
        format!("unknown argument `{flag}` ({})", self.usage)
    }
}
