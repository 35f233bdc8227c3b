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

/// Contiguous fixture frames (not the sparse directories) with their bytes.
pub(crate) fn contiguous_frames() -> Vec<(String, Vec<u8>)> {
    frame_entries()
        .iter()
        .map(|e| e["path"].as_str().unwrap().to_string())
        .filter(|p| !testdata().join(p).is_dir())
        .map(|p| {
            let bytes = std::fs::read(testdata().join(&p)).unwrap();
            (p, bytes)
        })
        .collect()
}

/// Remote and local reads agree on metadata, every chunk, every chunk at once (asked in
/// reverse order), the whole frame and item slices (including an empty one at the end).
pub(crate) fn assert_same(
    local: &blosc2_frame::Frame<'_>,
    remote: &blosc2_frame::BlockingRemoteFrame,
    what: &str,
) {
    assert_eq!(local.header(), remote.header(), "{what}");
    assert_eq!(local.index(), remote.index(), "{what}");
    assert_eq!(local.metalayers(), remote.metalayers(), "{what}");
    assert_eq!(local.vlmetalayers(), remote.vlmetalayers(), "{what}");
    let reversed: Vec<usize> = (0..local.nchunks()).rev().collect();
    let many = remote.decompress_chunks(&reversed).unwrap();
    for (k, &i) in reversed.iter().enumerate() {
        let want = local.decompress_chunk(i).unwrap();
        assert_eq!(
            want,
            remote.decompress_chunk(i).unwrap(),
            "{what} chunk {i}"
        );
        assert_eq!(many[k], want, "{what} chunk {i} of many");
        assert_eq!(
            &local.chunk(i).unwrap()[..],
            &remote.chunk(i).unwrap()[..],
            "{what} chunk {i}"
        );
    }
    assert_eq!(
        local.decompress_all().unwrap(),
        remote.decompress_all().unwrap(),
        "{what}"
    );
    let n = local.header().nbytes / u64::from(local.header().typesize);
    for (a, b) in [
        (0, n),
        (n / 3, n / 2),
        (1.min(n), n.saturating_sub(1).max(1.min(n))),
        (n, n),
    ] {
        assert_eq!(
            local.get_slice(a, b).unwrap(),
            remote.get_slice(a, b).unwrap(),
            "{what} slice {a}..{b}"
        );
    }
}

/// Every contiguous frame fixture (the manifest's `frame` and `b2nd` entries but the sparse
/// directory).
pub(crate) const CONTIGUOUS: &[&str] = &[
    "frames/b2nd_be_f8_11x10.b2nd",
    "frames/b2nd_be_i4_9x13.b2nd",
    "frames/b2nd_f4_20x30.b2nd",
    "frames/b2nd_i1_5x6x7.b2nd",
    "frames/b2nd_i2_40x9.b2nd",
    "frames/b2nd_i4_12x11.b2nd",
    "frames/b2nd_i8_25x7.b2nd",
    "frames/b2nd_u1_33x17.b2nd",
    "frames/b2nd_u2_7x9x11.b2nd",
    "frames/b2nd_u4_500.b2nd",
    "frames/b2nd_u8_5x4x3x3.b2nd",
    "frames/b2nd_zeros_f8_50x40.b2nd",
    "frames/fill_special_nan.b2frame",
    "frames/fill_special_uninit.b2frame",
    "frames/fill_special_value.b2frame",
    "frames/fill_special_zero.b2frame",
    "frames/lz4_shuffle_meta_vlmeta.b2frame",
    "frames/lz4_shuffle_meta_vlmeta.cframe.b2frame",
    "frames/zstd_delta_shuffle_many_chunks.b2frame",
    "legacy/varchunks-lz4-3.0.0.b2frame",
    "legacy/vlblocks-lz4-fixed-3.0.0.b2frame",
];

pub(crate) const SPARSE: &str = "frames/sparse_lz4.b2frame";
/// The sparse b2nd array fixture (a directory, like [`SPARSE`]).
pub(crate) const SPARSE_B2ND: &str = "frames/b2nd_sparse_i4_37x45.b2nd";

/// The chunk key (`c/i/j`) of chunk `i` of a chunk grid `grid` (C order).
pub(crate) fn key_of(i: usize, grid: &[u64]) -> (String, Vec<u64>) {
    let mut rest = i as u64;
    let mut idx = vec![0; grid.len()];
    for d in (0..grid.len()).rev() {
        idx[d] = rest % grid[d];
        rest /= grid[d];
    }
    let key = format!(
        "c/{}",
        idx.iter().map(u64::to_string).collect::<Vec<_>>().join("/")
    );
    (key, idx)
}
