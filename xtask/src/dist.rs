//! `cargo xtask dist [--no-cli] [--profile NAME]`: the release artifacts, built into
//! `target/dist/`:
//!
//! * `scifmt-<version>-cp39-abi3-manylinux_2_17_x86_64.manylinux2014_x86_64.whl`: the Python
//!   package for Linux x86_64, glibc ≥ 2.17 (manylinux2014), one wheel for CPython ≥ 3.9 (abi3),
//!   built by maturin in its zig mode (`ziglang` from PyPI links against glibc 2.17's symbols, so
//!   no old-distribution container is needed). It carries the `scifmt` command: the CLI's code is
//!   linked into the extension module and `scifmt._cli` is its console script;
//! * `scifmt-<version>.tar.gz`: the source distribution (`pip install` builds it with Rust);
//! * `scifmt-<version>-x86_64-unknown-linux-gnu.tar.gz`: the `scifmt` binary for glibc ≥ 2.17
//!   (also linked by zig through maturin) with its README and licences (left out with
//!   `--no-cli`);
//! * `SHA256SUMS` of the three.
//!
//! Release builds are stripped (`[profile.release]`). `--profile ci-dist` builds them with the
//! workspace's `[profile.ci-dist]` instead: the release profile unoptimized but for the hot
//! spots the dev profile optimizes, for CI, which checks the packaging (tags, auditwheel,
//! glibc, the archive) and tests the wheel as installed, in about a third of the CPU time of
//! the release build; the published artifacts are built with the release profile. The tools are pinned ([`TOOLS`]) in a venv
//! of their own, `target/dist-tools`. The wheel is checked with `auditwheel show` (it must be
//! manylinux2014-compliant as built, not repaired) and the binary's newest glibc symbol version
//! must be 2.17 or older. `cargo xtask python` installs this wheel and tests it as installed.

use std::path::{Path, PathBuf};
use std::process::Command;

use sha2::{Digest, Sha256};

use crate::util::{exec, project_root, venv_at};

/// The build tools, pinned: maturin (wheel, sdist and the CLI binary, each linked by zig),
/// ziglang (zig itself), auditwheel (the manylinux check).
const TOOLS: &[&str] = &["maturin==1.16.0", "ziglang==0.15.2", "auditwheel==6.8.2"];

/// The one Linux target of the local builds; the release workflow builds the others.
const TARGET: &str = "x86_64-unknown-linux-gnu";
/// The oldest glibc the artifacts run on (manylinux2014).
const GLIBC: (u32, u32) = (2, 17);

/// The build tools' venv and a `PATH` with its `bin/` first (maturin finds zig through the
/// venv's `python -m ziglang`).
pub(crate) struct Tools {
    pub(crate) bin: PathBuf,
    pub(crate) path: std::ffi::OsString,
}

pub(crate) fn tools() -> Result<Tools, String> {
    let venv = project_root().join("target").join("dist-tools");
    venv_at(&venv, TOOLS)?;
    let bin = venv.join("bin");
    let path = std::env::var_os("PATH").unwrap_or_default();
    let mut paths = vec![bin.clone()];
    paths.extend(std::env::split_paths(&path));
    let path = std::env::join_paths(paths).map_err(|e| format!("PATH: {e}"))?;
    Ok(Tools { bin, path })
}

fn python_manifest() -> PathBuf {
    project_root()
        .join("crates")
        .join("python")
        .join("Cargo.toml")
}

/// Builds the manylinux2014 abi3 wheel into `out` and returns its path.
///
/// # Errors
/// When maturin fails or does not leave exactly one new wheel in `out`.
pub(crate) fn build_wheel(tools: &Tools, out: &Path, profile: &str) -> Result<PathBuf, String> {
    std::fs::create_dir_all(out).map_err(|e| format!("{}: {e}", out.display()))?;
    for old in wheels_in(out)? {
        std::fs::remove_file(&old).map_err(|e| format!("{}: {e}", old.display()))?;
    }
    exec(
        Command::new(tools.bin.join("maturin"))
            .args(["build", "--profile", profile, "--locked", "--zig"])
            .args(["--compatibility", "manylinux2014", "--target", TARGET])
            .arg("--manifest-path")
            .arg(python_manifest())
            .arg("--out")
            .arg(out)
            .env("PATH", &tools.path)
            .current_dir(project_root()),
    )?;
    let mut wheels = wheels_in(out)?;
    match (wheels.pop(), wheels.is_empty()) {
        (Some(w), true) => Ok(w),
        _ => Err(format!("expected one wheel in {}", out.display())),
    }
}

fn wheels_in(dir: &Path) -> Result<Vec<PathBuf>, String> {
    let mut found = Vec::new();
    for e in std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))? {
        let p = e.map_err(|e| e.to_string())?.path();
        if p.extension().is_some_and(|x| x == "whl") {
            found.push(p);
        }
    }
    Ok(found)
}

/// The workspace version (`[workspace.package] version`), the one version of every artifact.
fn version() -> Result<String, String> {
    let path = project_root().join("Cargo.toml");
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let doc: toml::Table = text.parse().map_err(|e| format!("Cargo.toml: {e}"))?;
    doc.get("workspace")
        .and_then(|w| w.get("package"))
        .and_then(|p| p.get("version"))
        .and_then(|v| v.as_str())
        .map(str::to_owned)
        .ok_or_else(|| "Cargo.toml: no [workspace.package] version".into())
}

pub(crate) fn run(args: &[String]) -> Result<(), String> {
    let mut cli = true;
    let mut profile = "release".to_owned();
    let mut args = args.iter();
    while let Some(a) = args.next() {
        match a.as_str() {
            "--no-cli" => cli = false,
            "--profile" => {
                profile = args
                    .next()
                    .filter(|p| !p.is_empty() && !p.starts_with('-'))
                    .ok_or("--profile needs a profile name (release, ci-dist)")?
                    .clone();
            }
            other => return Err(format!("unexpected argument `{other}`")),
        }
    }
    let root = project_root();
    let dist = root.join("target").join("dist");
    if dist.exists() {
        std::fs::remove_dir_all(&dist).map_err(|e| format!("{}: {e}", dist.display()))?;
    }
    std::fs::create_dir_all(&dist).map_err(|e| format!("{}: {e}", dist.display()))?;
    let version = version()?;
    let tools = tools()?;

    let wheel = build_wheel(&tools, &dist, &profile)?;
    check_wheel(&tools, &wheel)?;
    exec(
        Command::new(tools.bin.join("maturin"))
            .arg("sdist")
            .arg("--manifest-path")
            .arg(python_manifest())
            .arg("--out")
            .arg(&dist)
            .env("PATH", &tools.path)
            .current_dir(&root),
    )?;
    let sdist = dist.join(format!("scifmt-{version}.tar.gz"));
    if !sdist.is_file() {
        return Err(format!("maturin sdist did not write {}", sdist.display()));
    }
    let mut artifacts = vec![wheel, sdist];
    if cli {
        artifacts.push(cli_archive(&tools, &dist, &version, &profile)?);
    }
    write_sums(&dist, &artifacts)?;
    eprintln!("dist: in {}", dist.display());
    for a in &artifacts {
        let size = std::fs::metadata(a).map_or(0, |m| m.len());
        eprintln!(
            "  {:>8.1} MB  {}",
            size as f64 / 1e6,
            a.file_name().unwrap_or_default().to_string_lossy()
        );
    }
    Ok(())
}

/// `auditwheel show` must find the wheel consistent with manylinux2014 as built.
fn check_wheel(tools: &Tools, wheel: &Path) -> Result<(), String> {
    let out = Command::new(tools.bin.join("auditwheel"))
        .arg("show")
        .arg(wheel)
        .env("PATH", &tools.path)
        .output()
        .map_err(|e| format!("cannot run auditwheel: {e}"))?;
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    eprintln!("{}", text.trim());
    let tag = format!("manylinux_{}_{}_x86_64", GLIBC.0, GLIBC.1);
    if out.status.success() && text.contains(&format!("\"{tag}\"")) {
        Ok(())
    } else {
        Err(format!(
            "auditwheel show: {} is not {tag} (manylinux2014) compliant",
            wheel.display()
        ))
    }
}

/// Builds the CLI for glibc 2.17 and packs it with its README and licences.
///
/// maturin builds it too (as a binary-only wheel of `scifmt-cli-dist`, from which the executable
/// is taken), right after the Python wheel: its zig linker wrapper is then the one the wheel was
/// built with, and `crates/cli-dist` has the Python package's dependencies and features, so
/// cargo reuses every dependency compiled for the wheel and only compiles and links that
/// package. Anything else compiled again is an error: it means the two packages' dependencies
/// have drifted apart (scifmt-cli's own package resolves two features differently, numpy's
/// num-traits `default` and the Python package's wkw `ndarray`, which reach 26 crates: minutes
/// on two cores). (cargo-zigbuild's own wrapper lives at another path, which changes the
/// fingerprint of every unit: the whole tree would be compiled a second time.)
fn cli_archive(
    tools: &Tools,
    dist: &Path,
    version: &str,
    profile: &str,
) -> Result<PathBuf, String> {
    let root = project_root();
    let scratch = root.join("target").join("dist-cli");
    if scratch.exists() {
        std::fs::remove_dir_all(&scratch).map_err(|e| format!("{}: {e}", scratch.display()))?;
    }
    let compiled = exec_listing_compiled(
        Command::new(tools.bin.join("maturin"))
            .args([
                "build",
                "--profile",
                profile,
                "--locked",
                "--zig",
                "--bindings",
                "bin",
            ])
            .args(["--compatibility", "manylinux2014", "--target", TARGET])
            .arg("--manifest-path")
            .arg(root.join("crates").join("cli-dist").join("Cargo.toml"))
            .arg("--out")
            .arg(&scratch)
            .env("PATH", &tools.path)
            .current_dir(&root),
    )?;
    let again: Vec<&String> = compiled
        .iter()
        .filter(|c| c.as_str() != "scifmt-cli-dist")
        .collect();
    if !again.is_empty() {
        return Err(format!(
            "the CLI binary's build compiled {} crates again after the wheel's ({}): \
             crates/cli-dist/Cargo.toml's dependencies or features no longer match \
             crates/python/Cargo.toml's",
            again.len(),
            again
                .iter()
                .map(|c| c.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    let binary = crate::util::cargo_target_dir()
        .join(TARGET)
        .join(profile)
        .join("scifmt-cli-dist");
    check_glibc(&binary)?;
    // It is the `scifmt` command of this version (it runs, and names itself as the CLI does).
    let out = Command::new(&binary)
        .arg("--version")
        .output()
        .map_err(|e| format!("{}: {e}", binary.display()))?;
    let said = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() || said.trim() != format!("scifmt {version}") {
        return Err(format!(
            "{} --version said {:?}, expected \"scifmt {version}\"",
            binary.display(),
            said.trim()
        ));
    }
    let name = format!("scifmt-{version}-{TARGET}");
    let stage = scratch.join(&name);
    std::fs::create_dir_all(&stage).map_err(|e| format!("{}: {e}", stage.display()))?;
    let files = [
        (binary, "scifmt"),
        (root.join("crates/cli/README.md"), "README.md"),
        (root.join("LICENSE-MIT"), "LICENSE-MIT"),
        (root.join("LICENSE-APACHE"), "LICENSE-APACHE"),
    ];
    for (from, to) in &files {
        std::fs::copy(from, stage.join(to)).map_err(|e| format!("{}: {e}", from.display()))?;
    }
    let archive = dist.join(format!("{name}.tar.gz"));
    // Reproducible: sorted names, no owner, the time of the checked-out commit.
    let mtime = Command::new("git")
        .args(["log", "-1", "--format=%ct"])
        .current_dir(&root)
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "0".into());
    exec(
        Command::new("tar")
            .args(["--sort=name", "--owner=0", "--group=0", "--numeric-owner"])
            .arg(format!("--mtime=@{mtime}"))
            .arg("-czf")
            .arg(&archive)
            .arg("-C")
            .arg(&scratch)
            .arg(&name),
    )?;
    std::fs::remove_dir_all(&scratch).map_err(|e| format!("{}: {e}", scratch.display()))?;
    Ok(archive)
}

/// Runs a command (echoing it and its output) to completion, and returns the packages cargo
/// compiled in it (its `Compiling NAME vX.Y.Z` lines on standard error).
fn exec_listing_compiled(cmd: &mut Command) -> Result<Vec<String>, String> {
    use std::io::BufRead;
    eprintln!("$ {cmd:?}");
    let mut child = cmd
        .stderr(std::process::Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start {cmd:?}: {e}"))?;
    let mut compiled = Vec::new();
    if let Some(err) = child.stderr.take() {
        for line in std::io::BufReader::new(err).lines() {
            let line = line.map_err(|e| format!("reading {cmd:?}'s output: {e}"))?;
            eprintln!("{line}");
            let mut words = line.split_whitespace();
            if words.next() == Some("Compiling")
                && let Some(name) = words.next()
            {
                compiled.push(name.to_owned());
            }
        }
    }
    let status = child
        .wait()
        .map_err(|e| format!("waiting for {cmd:?}: {e}"))?;
    if status.success() {
        Ok(compiled)
    } else {
        Err(format!("{cmd:?} failed with {status}"))
    }
}

/// The binary's newest `GLIBC_x.y` symbol version must be at most [`GLIBC`].
fn check_glibc(binary: &Path) -> Result<(), String> {
    let out = Command::new("objdump")
        .arg("-T")
        .arg(binary)
        .output()
        .map_err(|e| format!("cannot run objdump: {e}"))?;
    if !out.status.success() {
        return Err(format!("objdump -T {} failed", binary.display()));
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let newest = text
        .split(|c: char| c.is_whitespace() || c == '(' || c == ')')
        .filter_map(|w| w.strip_prefix("GLIBC_"))
        .filter_map(|v| {
            let mut it = v.split('.').map(str::parse::<u32>);
            Some((
                it.next()?.ok()?,
                it.next().and_then(Result::ok).unwrap_or(0),
            ))
        })
        .max()
        .ok_or_else(|| format!("{}: no glibc symbol versions found", binary.display()))?;
    eprintln!(
        "{}: newest glibc symbol version {}.{}",
        binary.display(),
        newest.0,
        newest.1
    );
    if newest > GLIBC {
        return Err(format!(
            "{} needs glibc {}.{}, newer than {}.{}",
            binary.display(),
            newest.0,
            newest.1,
            GLIBC.0,
            GLIBC.1
        ));
    }
    Ok(())
}

fn write_sums(dist: &Path, artifacts: &[PathBuf]) -> Result<(), String> {
    let mut sums = String::new();
    for a in artifacts {
        let bytes = std::fs::read(a).map_err(|e| format!("{}: {e}", a.display()))?;
        let name = a.file_name().unwrap_or_default().to_string_lossy();
        sums.push_str(&format!(
            "{}  {name}\n",
            hex::encode(Sha256::digest(&bytes))
        ));
    }
    let path = dist.join("SHA256SUMS");
    std::fs::write(&path, sums).map_err(|e| format!("{}: {e}", path.display()))
}
