//! Helpers shared by the integration tests: run the built `scifmt`, fixture paths, hashes.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use sha2::{Digest, Sha256};

/// `testdata/<rel>`.
pub(crate) fn testdata(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../testdata")
        .join(rel)
}

/// Runs `scifmt args…` with stdin closed.
pub(crate) fn run<S: AsRef<std::ffi::OsStr>>(args: &[S]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_scifmt"))
        .args(args)
        .stdin(std::process::Stdio::null())
        .output()
        .expect("spawn scifmt")
}

/// Runs `scifmt args…` with `input` on stdin (written from another thread, so a command that
/// writes stdout before it has read all of stdin cannot deadlock).
pub(crate) fn run_stdin<S: AsRef<std::ffi::OsStr>>(args: &[S], input: &[u8]) -> Output {
    use std::io::Write;
    use std::process::Stdio;
    let mut child = Command::new(env!("CARGO_BIN_EXE_scifmt"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn scifmt");
    let mut stdin = child.stdin.take().unwrap();
    let input = input.to_vec();
    // The command may stop reading early (an error): a broken pipe here is not a failure.
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(&input);
    });
    let out = child.wait_with_output().expect("wait for scifmt");
    writer.join().unwrap();
    out
}

/// Runs with `input` on stdin and asserts success with an empty stderr; returns stdout bytes.
pub(crate) fn ok_stdin<S: AsRef<std::ffi::OsStr> + std::fmt::Debug>(
    args: &[S],
    input: &[u8],
) -> Vec<u8> {
    let out = run_stdin(args, input);
    assert!(
        out.status.success(),
        "{args:?} failed ({:?}): {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.stderr.is_empty(),
        "{args:?}: stderr not empty: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// Runs and asserts success; returns stdout.
pub(crate) fn ok<S: AsRef<std::ffi::OsStr> + std::fmt::Debug>(args: &[S]) -> String {
    let out = run(args);
    assert!(
        out.status.success(),
        "{args:?} failed ({:?}): {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.stderr.is_empty(), "{args:?}: stderr not empty");
    String::from_utf8(out.stdout).unwrap()
}

/// Runs and asserts exit status `code` with one stderr line naming `needle`; returns the line.
pub(crate) fn fails<S: AsRef<std::ffi::OsStr> + std::fmt::Debug>(
    args: &[S],
    code: i32,
    needle: &str,
) -> String {
    let out = run(args);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(code), "{args:?}: stderr {err}");
    assert_eq!(err.lines().count(), 1, "{args:?}: not one line: {err}");
    assert!(err.starts_with("scifmt: "), "{args:?}: {err}");
    assert!(err.contains(needle), "{args:?}: `{needle}` not in {err}");
    assert!(!err.contains("panicked"), "{args:?}: {err}");
    err
}

/// Runs with `--json` output and parses it.
pub(crate) fn json<S: AsRef<std::ffi::OsStr> + std::fmt::Debug>(args: &[S]) -> serde_json::Value {
    let s = ok(args);
    assert_eq!(s.lines().count(), 1, "{args:?}: JSON is one line");
    serde_json::from_str(&s).unwrap()
}

/// Lowercase hex sha256 of bytes.
pub(crate) fn sha(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// sha256 of a file.
pub(crate) fn sha_file(path: &Path) -> String {
    sha(&std::fs::read(path).unwrap())
}

/// A fresh temporary directory.
pub(crate) fn tmp() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}

/// `testdata/blosc/manifest.json` entries.
pub(crate) fn blosc_manifest() -> Vec<serde_json::Value> {
    let m: serde_json::Value =
        serde_json::from_slice(&std::fs::read(testdata("blosc/manifest.json")).unwrap()).unwrap();
    m["entries"].as_array().unwrap().clone()
}

/// `testdata/wkw/expected.json`.
pub(crate) fn wkw_expected() -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(testdata("wkw/expected.json")).unwrap()).unwrap()
}

/// `SHA256SUMS` of a fixture folder as (relative path without `./`, sha).
pub(crate) fn sums(folder: &str) -> Vec<(String, String)> {
    std::fs::read_to_string(testdata(folder).join("SHA256SUMS"))
        .unwrap()
        .lines()
        .filter_map(|l| {
            let (h, p) = l.split_once("  ")?;
            Some((p.trim_start_matches("./").to_owned(), h.to_owned()))
        })
        .collect()
}

/// The sha256 recorded for `rel` in `folder/SHA256SUMS`.
pub(crate) fn sum_of(folder: &str, rel: &str) -> String {
    sums(folder)
        .into_iter()
        .find(|(p, _)| p == rel)
        .unwrap_or_else(|| panic!("{rel} not in {folder}/SHA256SUMS"))
        .1
}

/// Copies a directory tree.
pub(crate) fn copy_dir(src: &Path, dst: &Path) {
    std::fs::create_dir_all(dst).unwrap();
    for e in std::fs::read_dir(src).unwrap() {
        let e = e.unwrap();
        let to = dst.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &to);
        } else {
            std::fs::copy(e.path(), to).unwrap();
        }
    }
}
