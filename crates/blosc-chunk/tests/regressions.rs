//! Replays the kept fuzz findings and hand-made hostile chunks in
//! `testdata/regressions/blosc-chunk/blosc_decompress/` through the decode entry points the
//! `blosc_decompress` fuzz target drives: each must give `Ok` or a typed `Err`, never a panic,
//! and a chunk that decodes must decode identically through every entry point.

#![allow(clippy::unwrap_used, reason = "a failed unwrap is a failed test")]

use std::path::PathBuf;

use blosc_chunk::{ChunkHeader, LazyChunk, Limits, decompress_into, decompress_with, getitem};

fn files(target: &str) -> Vec<(PathBuf, Vec<u8>)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../testdata/regressions/blosc-chunk")
        .join(target);
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut out: Vec<_> = entries
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file() && p.extension().is_none_or(|x| x != "md"))
        .map(|p| {
            let b = std::fs::read(&p).unwrap();
            (p, b)
        })
        .collect();
    out.sort();
    out
}

/// The `blosc_decompress` fuzz target's checks; returns whether the chunk decoded.
fn replay(data: &[u8]) -> bool {
    const MAX: usize = 64 << 20;
    let _ = LazyChunk::parse(data);
    let out = match decompress_with(data, &Limits::with_max_nbytes(MAX)) {
        Ok(out) => out,
        Err(e) => {
            assert!(!e.to_string().is_empty());
            return false;
        }
    };
    assert!(out.len() <= MAX);
    let mut buf = vec![0u8; out.len()];
    assert_eq!(decompress_into(data, &mut buf).unwrap(), out.len());
    assert_eq!(buf, out);
    let h = ChunkHeader::parse(data).unwrap();
    let ts = h.typesize().max(1);
    let nitems = out.len() / ts;
    for (start, n) in [
        (0, nitems),
        (nitems / 3, nitems / 2),
        (nitems.saturating_sub(1), 1),
    ] {
        if start + n <= nitems {
            assert_eq!(
                getitem(data, start, n).unwrap(),
                out[start * ts..(start + n) * ts]
            );
        }
    }
    true
}

#[test]
fn decompress_regressions_replay() {
    let files = files("blosc_decompress");
    let mut failed = Vec::new();
    for (path, data) in &files {
        if std::panic::catch_unwind(|| replay(data)).is_err() {
            failed.push(path.display().to_string());
        }
    }
    assert!(failed.is_empty(), "regressions failing: {failed:#?}");
}
