//! `cargo xtask fuzz [--secs N] [--target T] [--nice] [--seed-only]`: seed the fuzz corpora from
//! `testdata/` and run the cargo-fuzz targets of `fuzz/` one after another.
//!
//! Needs `cargo-fuzz` (`cargo install cargo-fuzz --locked`) and a C++ compiler; the nightly
//! flags cargo-fuzz passes to rustc are enabled on the stable toolchain with
//! `RUSTC_BOOTSTRAP=1` (see `fuzz/README.md`). Every run uses an RSS limit and a malloc limit of
//! 2 GiB, so running out of memory is reported like a crash, a 60 s per-input timeout, and a
//! target that leaves a new `slow-unit-*` (an input taking over 10 s) fails too. Corpora live in
//! `fuzz/corpus/<target>` (git-ignored) and are seeded, without overwriting, from `testdata/`;
//! `testdata/regressions/<crate>/<target>/` is passed as a second, read-only corpus so every kept crasher
//! is replayed first.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::util::project_root;

/// A fuzz target: name, dictionary (in `fuzz/dict/`), crate whose regressions it replays.
struct Target {
    name: &'static str,
    dict: Option<&'static str>,
    regressions: &'static str,
}

const TARGETS: &[Target] = &[
    target("blosc_decompress", Some("blosc"), "blosc-chunk"),
    target("blosc_roundtrip", None, "blosc-chunk"),
    target("frame_read", Some("frame"), "blosc2-frame"),
    target("b2nd_read", Some("frame"), "blosc2-frame"),
    target("frame_sparse", Some("frame"), "blosc2-frame"),
    target("wkw_header", Some("wkw"), "wkw"),
    target("wkw_file", Some("wkw"), "wkw"),
    target("wkw_dataset", Some("wkw"), "wkw"),
    target("dwe_read", Some("dwe"), "dwe-format"),
    target("dwe_roundtrip", None, "dwe-format"),
    target("offset_config", Some("offset"), "offset-codec"),
    target("morton_roundtrip", None, "morton"),
];

const fn target(
    name: &'static str,
    dict: Option<&'static str>,
    regressions: &'static str,
) -> Target {
    Target {
        name,
        dict,
        regressions,
    }
}

/// Memory limits passed to libFuzzer (MiB).
const RSS_LIMIT_MB: u32 = 2048;
const MALLOC_LIMIT_MB: u32 = 2048;
/// One input running longer than this many seconds is reported as a crash (`timeout-*`).
const TIMEOUT_SECS: u32 = 60;

struct Args {
    secs: u64,
    target: Option<String>,
    nice: bool,
    seed_only: bool,
}

fn parse_args(args: &[String]) -> Result<Args, String> {
    let mut out = Args {
        secs: 60,
        target: None,
        nice: false,
        seed_only: false,
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--secs" => {
                let v = it.next().ok_or("--secs needs a value")?;
                out.secs = v.parse().map_err(|e| format!("--secs {v}: {e}"))?;
            }
            "--target" => {
                let v = it.next().ok_or("--target needs a value")?;
                if !TARGETS.iter().any(|t| t.name == v) {
                    let names: Vec<&str> = TARGETS.iter().map(|t| t.name).collect();
                    return Err(format!(
                        "unknown target `{v}`; targets: {}",
                        names.join(", ")
                    ));
                }
                out.target = Some(v.clone());
            }
            "--nice" => out.nice = true,
            "--seed-only" => out.seed_only = true,
            other => return Err(format!("unexpected argument `{other}`")),
        }
    }
    Ok(out)
}

pub(crate) fn run(args: &[String]) -> Result<(), String> {
    let args = parse_args(args)?;
    let root = project_root();
    let fuzz = root.join("fuzz");
    let selected: Vec<&Target> = TARGETS
        .iter()
        .filter(|t| args.target.as_deref().is_none_or(|n| n == t.name))
        .collect();
    for t in &selected {
        let n = seed(&root, t.name)?;
        eprintln!("{}: {n} seed files added to fuzz/corpus/{}", t.name, t.name);
    }
    if args.seed_only {
        return Ok(());
    }
    let version = Command::new(cargo_bin())
        .args(["fuzz", "--version"])
        .output()
        .map_err(|e| format!("cannot run cargo: {e}"))?;
    if !version.status.success() {
        return Err("cargo-fuzz is not installed: `cargo install cargo-fuzz --locked`".into());
    }
    let mut rows = Vec::new();
    let mut failed = Vec::new();
    for t in &selected {
        let corpus = fuzz.join("corpus").join(t.name);
        let regressions = root
            .join("testdata/regressions")
            .join(t.regressions)
            .join(t.name);
        let mut cmd = if args.nice {
            let mut c = Command::new("nice");
            c.args(["-n", "19"]).arg(cargo_bin());
            c
        } else {
            Command::new(cargo_bin())
        };
        cmd.current_dir(&fuzz)
            .env("RUSTC_BOOTSTRAP", "1")
            // cargo-fuzz builds into fuzz/target (its own flags); never into the caller's dir.
            .env_remove("CARGO_TARGET_DIR")
            .args(["fuzz", "run", "-O", t.name])
            .arg(&corpus);
        if regressions.is_dir() {
            cmd.arg(&regressions);
        }
        cmd.arg("--")
            .arg(format!("-max_total_time={}", args.secs))
            .arg(format!("-rss_limit_mb={RSS_LIMIT_MB}"))
            .arg(format!("-malloc_limit_mb={MALLOC_LIMIT_MB}"))
            .arg(format!("-timeout={TIMEOUT_SECS}"))
            .arg("-print_final_stats=1");
        if let Some(d) = t.dict {
            cmd.arg(format!(
                "-dict={}",
                fuzz.join("dict").join(format!("{d}.dict")).display()
            ));
        }
        eprintln!("$ {cmd:?}");
        let started = std::time::SystemTime::now();
        let out = cmd
            .stdout(Stdio::inherit())
            .stderr(Stdio::piped())
            .output()
            .map_err(|e| format!("cannot start {cmd:?}: {e}"))?;
        let log = String::from_utf8_lossy(&out.stderr);
        // The whole log (crash reports are long) goes to fuzz/target/fuzz-logs/<target>.log.
        let logs = fuzz.join("target").join("fuzz-logs");
        if fs::create_dir_all(&logs).is_ok() {
            let _ = fs::write(logs.join(format!("{}.log", t.name)), log.as_bytes());
        }
        let tail: Vec<&str> = log.lines().rev().take(40).collect();
        for line in tail.iter().rev() {
            eprintln!("{line}");
        }
        let execs = stat(&log, "stat::number_of_executed_units").unwrap_or(0);
        let files = fs::read_dir(&corpus).map(Iterator::count).unwrap_or(0);
        // libFuzzer keeps inputs slower than 10 s as `slow-unit-*` without failing: a CPU
        // amplification on hostile input is a bug like a crash.
        let slow = new_slow_units(&fuzz.join("artifacts").join(t.name), started);
        let ok = out.status.success() && slow == 0;
        if !ok {
            failed.push(t.name);
        }
        rows.push((t.name, execs, files, ok));
    }
    eprintln!("\n| target | seconds | executions | corpus files | result |\n|---|---|---|---|---|");
    for (name, execs, files, ok) in &rows {
        let result = if *ok {
            "clean"
        } else {
            "FAILED (crash, timeout or slow unit: see fuzz/artifacts)"
        };
        eprintln!("| {name} | {} | {execs} | {files} | {result} |", args.secs);
    }
    if failed.is_empty() {
        Ok(())
    } else {
        Err(format!("fuzz targets failed: {}", failed.join(", ")))
    }
}

/// Number of `slow-unit-*` files in `dir` written at or after `since`.
fn new_slow_units(dir: &Path, since: std::time::SystemTime) -> usize {
    let Ok(entries) = fs::read_dir(dir) else {
        return 0;
    };
    entries
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().starts_with("slow-unit-"))
        .filter(|e| {
            e.metadata()
                .and_then(|m| m.modified())
                .is_ok_and(|m| m >= since)
        })
        .count()
}

fn cargo_bin() -> std::ffi::OsString {
    std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into())
}

/// The value of a `stat::name: value` line of libFuzzer's final statistics.
fn stat(log: &str, name: &str) -> Option<u64> {
    log.lines()
        .filter_map(|l| {
            l.strip_prefix(name)?
                .trim_start_matches(':')
                .trim()
                .parse()
                .ok()
        })
        .next_back()
}

/// Writes the seed files of `target` into `fuzz/corpus/<target>/` (existing files are kept).
/// Returns how many were written.
fn seed(root: &Path, target: &str) -> Result<usize, String> {
    let td = root.join("testdata");
    let dir = root.join("fuzz").join("corpus").join(target);
    fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let seeds: Vec<(String, Vec<u8>)> = match target {
        "blosc_decompress" => {
            let mut files = files_with(&td.join("blosc"), &["cdata"])?;
            files.extend(files_with(&td.join("blosc/misc"), &["bin"])?);
            read_all(&td, files)?
        }
        "frame_read" => read_all(&td, files_with(&td.join("blosc"), &["b2frame", "b2nd"])?)?,
        "b2nd_read" => read_all(&td, files_with(&td.join("blosc"), &["b2nd"])?)?,
        "frame_sparse" => sparse_seeds(&td)?,
        "wkw_header" => {
            let mut s = read_all(&td, files_with(&td.join("wkw"), &["wkw"])?)?;
            for (_, b) in &mut s {
                b.truncate(16);
            }
            s
        }
        "wkw_file" => {
            let files = files_with(&td.join("wkw"), &["wkw"])?
                .into_iter()
                .filter(|p| p.file_name().is_some_and(|n| n != "header.wkw"))
                .collect();
            read_all(&td, files)?
        }
        "wkw_dataset" => wkw_dataset_seeds(&td)?,
        "dwe_read" => read_all(&td, files_with(&td.join("dwe"), &["dwe"])?)?,
        "offset_config" => {
            let files = files_with(&td.join("offset"), &["json"])?
                .into_iter()
                .filter(|p| p.file_name().is_some_and(|n| n == "zarr.json"))
                .collect();
            let mut s = read_all(&td, files)?;
            for (i, j) in [
                r#"{"offset": 16, "prefix": "TVlfQ1VTVE9NX0hFQURFUg=="}"#,
                r#"{"location": "end", "nbytes": 4, "padding": "AAAAAA=="}"#,
                r#"{"name": "pad", "configuration": {"location": "start", "nbytes": 2}}"#,
                r#"{"name": "offset", "configuration": {"offset": 0}}"#,
            ]
            .iter()
            .enumerate()
            {
                s.push((format!("handmade-{i}"), j.as_bytes().to_vec()));
            }
            s
        }
        // Structured (`arbitrary`) inputs: libFuzzer starts from scratch.
        _ => Vec::new(),
    };
    let mut written = 0;
    for (name, bytes) in seeds {
        let path = dir.join(format!("seed-{name}"));
        if !path.exists() {
            fs::write(&path, bytes).map_err(|e| format!("{}: {e}", path.display()))?;
            written += 1;
        }
    }
    Ok(written)
}

/// Every file under `dir` (recursively) whose extension is one of `exts`, sorted.
fn files_with(dir: &Path, exts: &[&str]) -> Result<Vec<PathBuf>, String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let entries = fs::read_dir(&d).map_err(|e| format!("{}: {e}", d.display()))?;
        for e in entries {
            let p = e.map_err(|e| format!("{}: {e}", d.display()))?.path();
            if p.is_dir() {
                stack.push(p);
            } else if p
                .extension()
                .and_then(|x| x.to_str())
                .is_some_and(|x| exts.contains(&x))
            {
                out.push(p);
            }
        }
    }
    out.sort();
    Ok(out)
}

/// Reads `files`, naming each seed after its path below `testdata/`.
fn read_all(td: &Path, files: Vec<PathBuf>) -> Result<Vec<(String, Vec<u8>)>, String> {
    files
        .into_iter()
        .map(|p| {
            let bytes = fs::read(&p).map_err(|e| format!("{}: {e}", p.display()))?;
            Ok((seed_name(td, &p), bytes))
        })
        .collect()
}

fn seed_name(td: &Path, p: &Path) -> String {
    p.strip_prefix(td)
        .unwrap_or(p)
        .to_string_lossy()
        .replace(['/', '\\'], "_")
}

/// The record container of `fuzz/src/lib.rs`: `tag: u8, len: u32 LE, bytes`.
fn records(recs: &[(u8, Vec<u8>)]) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    for (tag, bytes) in recs {
        let len = u32::try_from(bytes.len()).map_err(|_| "seed record over 4 GiB".to_string())?;
        out.push(*tag);
        out.extend_from_slice(&len.to_le_bytes());
        out.extend_from_slice(bytes);
    }
    Ok(out)
}

/// Sparse frames (`chunks.b2frame` + `%08X.chunk`) as records: index first, then chunks.
fn sparse_seeds(td: &Path) -> Result<Vec<(String, Vec<u8>)>, String> {
    let mut out = Vec::new();
    for index in files_with(&td.join("blosc"), &["b2frame"])? {
        if index.file_name().is_none_or(|n| n != "chunks.b2frame") {
            continue;
        }
        let Some(dir) = index.parent() else { continue };
        let mut recs = vec![(0, fs::read(&index).map_err(|e| e.to_string())?)];
        for k in 0..8u32 {
            let p = dir.join(format!("{k:08X}.chunk"));
            match fs::read(&p) {
                Ok(b) => recs.push((0, b)),
                Err(_) => break,
            }
        }
        out.push((seed_name(td, dir), records(&recs)?));
    }
    Ok(out)
}

/// Each WKW dataset as records: `header.wkw`, then its files at x, y, z < 4 with the position
/// in the tag (bits 0–1 x, 2–3 y, 4–5 z).
fn wkw_dataset_seeds(td: &Path) -> Result<Vec<(String, Vec<u8>)>, String> {
    let mut out = Vec::new();
    let entries = fs::read_dir(td.join("wkw")).map_err(|e| e.to_string())?;
    let mut dirs: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.join("header.wkw").is_file())
        .collect();
    dirs.sort();
    for ds in dirs {
        let mut recs = vec![(
            0,
            fs::read(ds.join("header.wkw")).map_err(|e| e.to_string())?,
        )];
        for f in files_with(&ds, &["wkw"])? {
            let Ok(rel) = f.strip_prefix(&ds) else {
                continue;
            };
            let parts: Vec<u8> = rel
                .iter()
                .filter_map(|c| {
                    let s = c.to_str()?;
                    let digits = s
                        .trim_start_matches(['x', 'y', 'z'])
                        .trim_end_matches(".wkw");
                    digits.parse::<u8>().ok()
                })
                .collect();
            if let [z, y, x] = parts[..]
                && x < 4
                && y < 4
                && z < 4
            {
                let bytes = fs::read(&f).map_err(|e| e.to_string())?;
                recs.push((x | (y << 2) | (z << 4), bytes));
            }
        }
        out.push((seed_name(td, &ds), records(&recs)?));
    }
    Ok(out)
}
