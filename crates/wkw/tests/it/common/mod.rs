//! Shared helpers: fixture paths, expected.json, hashing, and the fixture formulas of
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers outside #[test] fns
//! `testdata/generators/wkw/generate.py` (the reference's inputs, rebuilt here to replay its writes).
#![allow(
    dead_code,
    clippy::cast_possible_truncation,
    clippy::cast_possible_wrap,
    clippy::cast_sign_loss,
    clippy::cast_precision_loss
)]

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};
use wkw::{Array, Order, VoxelType};

pub(crate) fn testdata() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/wkw")
}

pub(crate) fn expected() -> serde_json::Value {
    let text = std::fs::read_to_string(testdata().join("expected.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

pub(crate) fn sha256(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

pub(crate) fn xyz(v: &serde_json::Value) -> [u32; 3] {
    let a = v.as_array().unwrap();
    [0, 1, 2].map(|i| u32::try_from(a[i].as_u64().unwrap()).unwrap())
}

/// Copies a fixture dataset into a fresh temporary directory.
pub(crate) fn copy_fixture(name: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    copy_dir(&testdata().join(name), dir.path());
    dir
}

pub(crate) fn copy_dir(src: &Path, dst: &Path) {
    std::fs::create_dir_all(dst).unwrap();
    for e in std::fs::read_dir(src).unwrap() {
        let e = e.unwrap();
        let to = dst.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &to);
        } else {
            std::fs::copy(e.path(), &to).unwrap();
        }
    }
}

/// Builds a (C, X, Y, Z) array in `order` from `f(c, X, Y, Z)` (absolute coordinates) as
/// little-endian bytes of `N` bytes per value.
pub(crate) fn build<const N: usize>(
    vt: VoxelType,
    channels: u8,
    off: [u32; 3],
    shape: [u32; 3],
    order: Order,
    f: impl Fn(u32, u64, u64, u64) -> [u8; N],
) -> Array {
    let mut a = Array::zeros(vt, channels, shape, Order::Fortran).unwrap();
    {
        let bytes = a.as_bytes_mut();
        let mut i = 0;
        for z in 0..shape[2] {
            for y in 0..shape[1] {
                for x in 0..shape[0] {
                    for c in 0..u32::from(channels) {
                        let v = f(
                            c,
                            u64::from(off[0] + x),
                            u64::from(off[1] + y),
                            u64::from(off[2] + z),
                        );
                        bytes[i..i + N].copy_from_slice(&v);
                        i += N;
                    }
                }
            }
        }
    }
    a.to_order(order)
}

/// F1 data: u8 (X + 3Y + 7Z) mod 256.
pub(crate) fn f1_value(_c: u32, x: u64, y: u64, z: u64) -> [u8; 1] {
    [((x + 3 * y + 7 * z) % 256) as u8]
}

/// F2 data: u16 (X + 64Y + 2048Z + 21845c) mod 65536.
pub(crate) fn f2_value(c: u32, x: u64, y: u64, z: u64) -> [u8; 2] {
    (((x + 64 * y + 2048 * z + 21845 * u64::from(c)) % 65536) as u16).to_le_bytes()
}

/// F3 data: f32 (X − 2Y + 3Z) / 4.
pub(crate) fn f3_value(_c: u32, x: u64, y: u64, z: u64) -> [u8; 4] {
    let v = (x as f64 - 2.0 * y as f64 + 3.0 * z as f64) / 4.0;
    (v as f32).to_le_bytes()
}

/// F4 write 1: u64 2⁴⁰ + X + 1000Y + 10⁶Z.
pub(crate) fn f4_d1(_c: u32, x: u64, y: u64, z: u64) -> [u8; 8] {
    ((1u64 << 40) + x + 1000 * y + 1_000_000 * z).to_le_bytes()
}

/// F4 write 2: u64 2⁶³ + X + 100Y + 10⁴Z.
pub(crate) fn f4_d2(_c: u32, x: u64, y: u64, z: u64) -> [u8; 8] {
    ((1u64 << 63) + x + 100 * y + 10_000 * z).to_le_bytes()
}

/// F5 data: i16 s_c (X − 7Y + 13Z), s = (+1, −1).
pub(crate) fn f5_value(c: u32, x: u64, y: u64, z: u64) -> [u8; 2] {
    let v = x as i64 - 7 * y as i64 + 13 * z as i64;
    let v = if c == 0 { v } else { -v };
    (v as i16).to_le_bytes()
}

/// One read of `expected.json` in one layout: (dataset name, offset, shape, order, sha256 of the
/// reference's array bytes in that order).
pub(crate) type FixtureRead = (String, [u32; 3], [u32; 3], Order, String);

/// Every read of `expected.json` in both layouts.
pub(crate) fn fixture_reads() -> Vec<FixtureRead> {
    let exp = expected();
    let mut out = Vec::new();
    for (name, e) in exp.as_object().unwrap() {
        let Some(reads) = e.get("reads").and_then(|r| r.as_array()) else {
            continue;
        };
        for r in reads {
            let (off, shape) = (xyz(&r["offset_xyz"]), xyz(&r["shape_xyz"]));
            for (order, key) in [
                (Order::Fortran, "sha256_fortran_bytes"),
                (Order::C, "sha256_c_bytes"),
            ] {
                let hash = r[key].as_str().unwrap().to_owned();
                out.push((name.clone(), off, shape, order, hash));
            }
        }
    }
    out
}

/// Runs `$body` with `$t` bound to the Rust type of voxel type `$vt` (`wkw::with_voxel_type`).
#[allow(unused_macros)]
macro_rules! with_voxel {
    ($vt:expr, $t:ident => $body:expr) => {
        wkw::with_voxel_type!($vt, $t => $body, other => panic!("no Rust type for {other:?}"))
    };
}
#[allow(unused_imports)]
pub(crate) use with_voxel;
