#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::cast_possible_truncation,
    clippy::cast_possible_wrap,
    clippy::cast_sign_loss
)]
//! Shared helpers: fixture paths and the reference manifest.
#![allow(dead_code)]

use std::path::PathBuf;

use serde_json::Value;
use sha2::{Digest, Sha256};

pub(crate) fn testdata() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../testdata/blosc")
}

pub(crate) fn manifest() -> Value {
    let raw = std::fs::read_to_string(testdata().join("manifest.json")).unwrap();
    serde_json::from_str(&raw).unwrap()
}

/// Manifest entries for frames (`frames/*` and the two legacy frames).
pub(crate) fn frame_entries() -> Vec<Value> {
    manifest()["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| matches!(e["kind"].as_str(), Some("frame" | "b2nd")))
        .cloned()
        .collect()
}

pub(crate) fn sha256_hex(data: &[u8]) -> String {
    hex::encode(Sha256::digest(data))
}

/// Contiguous fixture frames (not the sparse directory) with their bytes.
pub(crate) fn contiguous_frames() -> Vec<(String, Vec<u8>)> {
    frame_entries()
        .iter()
        .map(|e| e["path"].as_str().unwrap().to_string())
        .filter(|p| !p.starts_with("frames/sparse"))
        .map(|p| {
            let bytes = std::fs::read(testdata().join(&p)).unwrap();
            (p, bytes)
        })
        .collect()
}
