//! Damaged inputs: truncations across the whole file and bit flips in the headers give status 0
//! or 2 with one stderr line, never a panic (status 101) or a partial output file.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::cast_possible_truncation
)] // test helpers outside #[test] fns

use crate::common;

use std::path::Path;

use common::{run, testdata, tmp};

/// Runs `args` and checks the status contract; returns whether it succeeded.
fn status_ok(args: &[&str], out: &Path) -> bool {
    let o = run(args);
    let err = String::from_utf8_lossy(&o.stderr);
    match o.status.code() {
        Some(0) => true,
        Some(2) => {
            assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
            assert!(!err.contains("internal error"), "{args:?}: {err}");
            assert!(!out.exists(), "{args:?}: output left behind on failure");
            false
        }
        other => panic!("{args:?}: status {other:?}: {err}"),
    }
}

/// (fixture, the command that reads all of it besides `info`)
const CASES: &[(&str, &[&str])] = &[
    (
        "blosc/chunks/lz4_shuffle_ts4.cdata",
        &["blosc", "decompress"],
    ),
    (
        "blosc/frames/lz4_shuffle_meta_vlmeta.b2frame",
        &["frame", "extract"],
    ),
    ("blosc/frames/b2nd_u2_7x9x11.b2nd", &["b2nd", "read"]),
    ("dwe/stream/small_2_4_4_j2.dwe", &["dwe", "decode"]),
    ("dwe/block/small_2_4_4_c4.dwe", &["dwe", "decode"]),
];

#[test]
fn truncated_inputs_never_panic() {
    let dir = tmp();
    let out = dir.path().join("out");
    let o = out.to_str().unwrap();
    for (rel, cmd) in CASES {
        let bytes = std::fs::read(testdata(rel)).unwrap();
        let name = Path::new(rel).file_name().unwrap();
        let cut = dir.path().join(name);
        let c = cut.to_str().unwrap();
        // Every length for small files, a stride for larger ones (plus the last 8 lengths).
        let stride = (bytes.len() / 150).max(1);
        let lengths = (0..bytes.len())
            .step_by(stride)
            .chain(bytes.len().saturating_sub(8)..bytes.len());
        let mut failed = 0;
        for len in lengths {
            std::fs::write(&cut, &bytes[..len]).unwrap();
            let mut args = cmd.to_vec();
            args.extend([c, o]);
            if !status_ok(&args, &out) {
                failed += 1;
            }
            std::fs::remove_file(&out).ok();
            status_ok(&["info", c, "--json"], &out);
        }
        assert!(failed > 0, "{rel}: some truncation must be detected");
    }
}

#[test]
fn bit_flips_in_headers_never_panic() {
    let dir = tmp();
    let out = dir.path().join("out");
    let o = out.to_str().unwrap();
    for (rel, cmd) in CASES {
        let bytes = std::fs::read(testdata(rel)).unwrap();
        let name = Path::new(rel).file_name().unwrap();
        let bad = dir.path().join(name);
        let b = bad.to_str().unwrap();
        for pos in 0..bytes.len().min(96) {
            let mut v = bytes.clone();
            v[pos] ^= 1 << (pos % 8);
            std::fs::write(&bad, &v).unwrap();
            let mut args = cmd.to_vec();
            args.extend([b, o]);
            status_ok(&args, &out);
            std::fs::remove_file(&out).ok();
            status_ok(&["info", b], &out);
        }
    }
}

#[test]
fn damaged_wkw_files_never_panic() {
    let dir = tmp();
    let out = dir.path().join("out");
    let ds = dir.path().join("ds");
    common::copy_dir(&testdata("wkw/u16_3ch_lz4_b8_f4"), &ds);
    let victim = ds.join("z0/y0/x0.wkw");
    let bytes = std::fs::read(&victim).unwrap();
    let args = [
        "wkw",
        "read",
        ds.to_str().unwrap(),
        out.to_str().unwrap(),
        "--offset",
        "0,0,0",
        "--shape",
        "32,32,32",
    ];
    for len in (0..bytes.len())
        .step_by(bytes.len() / 40)
        .chain([15, 16, 17, 527, 528])
    {
        std::fs::write(&victim, &bytes[..len]).unwrap();
        status_ok(&args, &out);
        std::fs::remove_file(&out).ok();
        status_ok(&["info", victim.to_str().unwrap()], &out);
        let v = run(&["wkw", "verify", ds.to_str().unwrap()]);
        assert!(matches!(v.status.code(), Some(0 | 1)), "verify at {len}");
    }
    for pos in 0..64 {
        let mut v = bytes.clone();
        v[pos] ^= 0x10;
        std::fs::write(&victim, &v).unwrap();
        status_ok(&args, &out);
        std::fs::remove_file(&out).ok();
    }
}
