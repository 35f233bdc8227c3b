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

/// Comma-joined numbers of a JSON array (`[1,2,3]` -> `1,2,3`), for `--offset` / `--shape`.
pub(crate) fn xyz(v: &serde_json::Value) -> String {
    v.as_array()
        .unwrap()
        .iter()
        .map(|n| n.to_string())
        .collect::<Vec<_>>()
        .join(",")
}

/// A python-blosc2 frame fixture rebuilt by `frame create`: its path under `testdata/blosc`,
/// the raw input and the `frame create` flags of the call that made it.
pub(crate) struct FrameRecipe {
    pub(crate) fixture: &'static str,
    pub(crate) data: Vec<u8>,
    pub(crate) flags: &'static [&'static str],
}

/// 40 x append_data(arange(1000,i8)*(k+1)+k); append_data(arange(300,i8)), chunksize 8000,
/// ZSTD clevel 5 typesize 8, filters [DELTA, SHUFFLE].
pub(crate) fn many_chunks_recipe() -> FrameRecipe {
    let i64s = |v: &mut Vec<u8>, it: &mut dyn Iterator<Item = i64>| {
        v.extend(it.flat_map(i64::to_le_bytes));
    };
    let mut data = Vec::new();
    for k in 0..40i64 {
        i64s(&mut data, &mut (0..1000).map(|i| i * (k + 1) + k));
    }
    i64s(&mut data, &mut (0..300));
    FrameRecipe {
        fixture: "frames/zstd_delta_shuffle_many_chunks.b2frame",
        data,
        flags: &[
            "--typesize",
            "8",
            "--chunksize",
            "8000",
            "--codec",
            "zstd",
            "--clevel",
            "5",
            "--filter",
            "delta",
            "--filter",
            "shuffle",
            "--splitmode",
            "auto",
        ],
    }
}

/// meta={'m1': [1,2,3], 'mymeta': {'a': 1}}; arange(25000,i4), zeros(25000,i4),
/// arange(10000,i4)*3; vlmeta info={'hello':'world'}, bin=b'\x00\x01\x02'.
pub(crate) fn meta_recipe() -> FrameRecipe {
    let mut data: Vec<u8> = (0..25000i32).flat_map(i32::to_le_bytes).collect();
    data.extend(std::iter::repeat_n(0u8, 100_000));
    data.extend((0..10000i32).flat_map(|i| (i * 3).to_le_bytes()));
    FrameRecipe {
        fixture: "frames/lz4_shuffle_meta_vlmeta.b2frame",
        data,
        flags: &[
            "--typesize",
            "4",
            "--chunksize",
            "100000",
            "--codec",
            "lz4",
            "--filter",
            "shuffle",
            "--splitmode",
            "auto",
            "--meta",
            "m1=[1,2,3]",
            "--meta",
            r#"mymeta={"a":1}"#,
            "--vlmeta",
            r#"info={"hello":"world"}"#,
            "--vlmeta",
            r#"bin={"$bin":"000102"}"#,
        ],
    }
}

/// `wkw create` flags of the reference dataset `testdata/wkw/u16_3ch_lz4_b8_f4`.
pub(crate) const U16_3CH_LZ4_CREATE: &[&str] = &[
    "--voxel-type",
    "u16",
    "--channels",
    "3",
    "--block-len",
    "8",
    "--file-len",
    "4",
    "--block-type",
    "lz4",
];
