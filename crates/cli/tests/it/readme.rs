//! The READMEs tell the truth: every `sh` example of this crate's README runs (twice, as pasted
//! again), and every
//! `console` session (here and in the workspace README) prints what it shows.

#![cfg(target_os = "linux")] // the sessions use bash, sha256sum, od, cmp
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

/// The fenced blocks of `markdown` whose info string is `lang`, as lists of lines.
fn blocks(markdown: &str, lang: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let mut current: Option<Vec<String>> = None;
    for line in markdown.lines() {
        match (&mut current, line.trim_start().strip_prefix("```")) {
            (None, Some(info)) if info.trim() == lang => current = Some(Vec::new()),
            (Some(_), Some(_)) => out.extend(current.take()),
            (Some(b), None) => b.push(line.to_owned()),
            (None, _) => {}
        }
    }
    out
}

/// A scratch directory with `testdata` linked in, and a PATH that finds the built `scifmt`.
fn workdir() -> (tempfile::TempDir, String) {
    let dir = common::tmp();
    std::os::unix::fs::symlink(common::testdata(""), dir.path().join("testdata")).unwrap();
    let bin = Path::new(env!("CARGO_BIN_EXE_scifmt")).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    (dir, path)
}

/// Runs `script` with bash (pipefail) in `dir`; returns status, stdout and stderr.
fn bash(dir: &Path, path: &str, script: &str) -> (Option<i32>, String, String) {
    let out = Command::new("bash")
        .arg("-c")
        .arg(format!("set -o pipefail\n{script}"))
        .current_dir(dir)
        .env("PATH", path)
        .output()
        .expect("run bash");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn readme(rel: &str) -> String {
    let p: PathBuf = Path::new(env!("CARGO_MANIFEST_DIR")).join(rel);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// The scratch directory the README's examples start in (its first line makes it afresh).
const SCRATCH: &str = "/tmp/scifmt-try";

#[test]
fn every_sh_example_of_the_readme_runs() {
    // The repository's root as a reader has it (with `testdata/`), and this test's own scratch
    // directory in place of the README's `/tmp/scifmt-try`.
    let (root, path) = workdir();
    let scratch = common::tmp();
    let scratch = scratch.path().join("scifmt-try");
    let mut ran = 0;
    // Twice: a reader may paste the examples again (the first line starts afresh).
    for run in 1..=2 {
        let mut cwd = root.path().to_path_buf();
        for block in blocks(&readme("README.md"), "sh") {
            for line in block {
                let line = line.trim();
                if line.is_empty() || line.starts_with('#') {
                    continue;
                }
                let script = line.replace(SCRATCH, &scratch.display().to_string());
                let (code, _, err) = bash(&cwd, &path, &script);
                assert_eq!(code, Some(0), "run {run}: `{line}`: {err}");
                assert!(err.is_empty(), "run {run}: `{line}`: stderr {err}");
                if line.contains(SCRATCH) {
                    // It ends with `cd` into the scratch directory: the next lines run there.
                    assert!(line.ends_with(&format!("cd {SCRATCH}")), "{line}");
                    cwd.clone_from(&scratch);
                }
                ran += 1;
            }
        }
        // Nothing was written beside the checkout's `testdata/`.
        let names: Vec<_> = std::fs::read_dir(root.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["testdata"], "run {run}: the checkout got {names:?}");
    }
    assert!(ran >= 2 * 28, "{ran} examples");
}

/// The commands of a console block with the output lines each shows (blank lines dropped).
fn session(block: &[String]) -> Vec<(String, Vec<String>)> {
    let mut out: Vec<(String, Vec<String>)> = Vec::new();
    let mut continued = false;
    for line in block {
        if let Some(cmd) = line.strip_prefix("$ ") {
            out.push((cmd.to_owned(), Vec::new()));
            continued = cmd.ends_with('\\');
        } else if continued {
            let last = out.last_mut().unwrap();
            last.0.push('\n');
            last.0.push_str(line);
            continued = line.ends_with('\\');
        } else if !line.trim().is_empty() {
            out.last_mut()
                .expect("output before the first command")
                .1
                .push(line.trim_end().to_owned());
        }
    }
    out
}

/// Commands a console session may run.
const SAFE: &[&str] = &[
    "scifmt",
    "cmp",
    "od",
    "sha256sum",
    "cat",
    "head",
    "tail",
    "grep",
    "echo",
    "ls",
];

#[test]
fn console_sessions_print_what_they_show() {
    let mut checked = 0;
    for rel in ["README.md", "../../README.md"] {
        let (dir, path) = workdir();
        for block in blocks(&readme(rel), "console") {
            for (cmd, want) in session(&block) {
                // Only the tools of the sessions (never, say, a `cargo install` shown there).
                let first = cmd.split_whitespace().next().unwrap_or_default();
                if !SAFE.contains(&first) {
                    continue;
                }
                let (_, out, _) = bash(dir.path(), &path, &format!("{{ {cmd}\n}} 2>&1"));
                let got: Vec<&str> = out
                    .lines()
                    .map(str::trim_end)
                    .filter(|l| !l.is_empty())
                    .collect();
                assert_eq!(got, want, "{rel}: `{cmd}`");
                checked += 1;
            }
        }
    }
    assert!(checked >= 20, "{checked} commands");
}
