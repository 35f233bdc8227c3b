//! Helpers shared by the fuzz targets.
//!
//! Some entry points read a directory tree (sparse frames, WKW datasets). Their fuzz input is a
//! small container of records, each `tag: u8, len: u32 LE, bytes[len]` (a record whose length
//! runs past the end of the input is cut short). `cargo xtask fuzz` writes seeds in this format
//! from `testdata/`.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// One record of a multi-file fuzz input.
#[derive(Debug, Clone, Copy)]
pub struct Record<'a> {
    /// What the record is (meaning depends on the target).
    pub tag: u8,
    /// The record's bytes.
    pub bytes: &'a [u8],
}

/// Splits `data` into at most `max` records (see the module docs).
pub fn records(mut data: &[u8], max: usize) -> Vec<Record<'_>> {
    let mut out = Vec::new();
    while out.len() < max && data.len() >= 5 {
        let tag = data[0];
        let len = u32::from_le_bytes([data[1], data[2], data[3], data[4]]) as usize;
        let rest = &data[5..];
        let n = len.min(rest.len());
        out.push(Record {
            tag,
            bytes: &rest[..n],
        });
        data = &rest[n..];
    }
    out
}

/// Encodes records in the format [`records`] reads.
pub fn encode_records(recs: &[(u8, &[u8])]) -> Vec<u8> {
    let mut out = Vec::new();
    for (tag, bytes) in recs {
        out.push(*tag);
        out.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
        out.extend_from_slice(bytes);
    }
    out
}

/// A fresh empty directory for one fuzz iteration, on tmpfs when available. The previous
/// iteration's directory (same process) is removed first.
pub fn scratch_dir() -> PathBuf {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let base = if Path::new("/dev/shm").is_dir() {
        PathBuf::from("/dev/shm")
    } else {
        std::env::temp_dir()
    };
    let base = base.join(format!("scifmt-fuzz-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&base);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let dir = base.join(n.to_string());
    std::fs::create_dir_all(&dir).expect("create scratch dir");
    dir
}

/// Little-endian u32 from up to 4 bytes at `at` (missing bytes read as 0).
pub fn u32_at(data: &[u8], at: usize) -> u32 {
    let mut b = [0u8; 4];
    for (i, x) in b.iter_mut().enumerate() {
        *x = data.get(at + i).copied().unwrap_or(0);
    }
    u32::from_le_bytes(b)
}
