//! Hostile input: every fixture data file truncated at every length (a stride past the header
//! and jump table for the large files) and with single-bit flips, read under both policies and
//! verified: always `Ok` or `Err`, never a panic and never [`wkw::Error::Internal`] (which would
//! mean a broken invariant, not bad input); random bytes likewise (proptest).
// Helpers outside #[test] functions unwrap and panic like the tests themselves.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::path::Path;

use common::*;
use proptest::prelude::*;
use wkw::{Dataset, MissingOrCorrupt, Options, Order};

/// Whether `r` is `Ok`; panics on an internal error (hostile input must never reach one).
fn is_ok<T>(r: wkw::Result<T>) -> bool {
    if let Err(e @ wkw::Error::Internal { .. }) = &r {
        panic!("hostile input reached an internal invariant: {e}");
    }
    r.is_ok()
}

fn opts(policy: MissingOrCorrupt) -> Options {
    Options::default()
        .with_missing_or_corrupt(policy)
        .with_cache_capacity(0)
}

/// Reads the whole cube of file `idx` under both policies and (if asked) runs verify; returns how many
/// reads succeeded (the rest were errors — a panic fails the test).
fn exercise(root: &Path, idx: [u32; 3], verify: bool) -> usize {
    let mut ok = 0;
    for (policy, order) in [
        (MissingOrCorrupt::Error, Order::Fortran),
        (MissingOrCorrupt::Zeros, Order::C),
    ] {
        let ds = Dataset::open_with(root, opts(policy)).unwrap();
        let side = ds.header().file_len_vx();
        let off = idx.map(|i| i * side);
        ok += usize::from(is_ok(ds.read(off, [side; 3], order)));
        // A partial read straddling the file.
        ok += usize::from(is_ok(ds.read(
            off.map(|o| o.saturating_sub(1)),
            [3; 3],
            order,
        )));
    }
    if verify {
        let report = wkw::verify(root, Options::default(), &|_| {}).unwrap();
        for f in report.files {
            if let Some(e) = f.problem {
                is_ok::<()>(Err(e));
            }
        }
    }
    ok
}

fn mutate_fixture(name: &str, dense_limit: usize, stride: usize) {
    let dir = copy_fixture(name);
    let root = dir.path();
    let ds = Dataset::open(root).unwrap();
    let files = ds.list_files().unwrap();
    let meta_len = usize::try_from(16 + 8 * ds.header().blocks_per_file()).unwrap();
    let mut cases = 0;
    for (idx, path) in files {
        let original = std::fs::read(&path).unwrap();
        let len = original.len();
        let dense = if len <= dense_limit {
            len
        } else {
            meta_len + 64
        };
        let lengths = (0..=len).filter(|&l| l <= dense || l % stride == 0);
        for l in lengths {
            std::fs::write(&path, &original[..l]).unwrap();
            exercise(root, idx, cases % 8 == 0);
            cases += 1;
        }
        // Bit flips: every byte of header and jump table, then every `flip_stride`-th byte.
        let flip_stride = stride.max(5);
        let bytes = (0..len).filter(|&i| i < meta_len + 16 || i % flip_stride == 0);
        for i in bytes {
            let bits: Vec<u8> = if i < 16 {
                (0..8).collect()
            } else {
                vec![u8::try_from(i % 8).unwrap()]
            };
            for bit in bits {
                let mut m = original.clone();
                m[i] ^= 1 << bit;
                std::fs::write(&path, &m).unwrap();
                exercise(root, idx, cases % 8 == 0);
                cases += 1;
            }
        }
        std::fs::write(&path, &original).unwrap();
        assert_eq!(
            exercise(root, idx, true),
            4,
            "{name}: restored file must read"
        );
    }
    assert!(cases > 0);
}

#[test]
fn mutate_f3_lz4hc() {
    mutate_fixture("f32_lz4hc_b16_f2", 6000, 1);
}

#[test]
fn mutate_f6_lz4hc_multi() {
    mutate_fixture("u64_lz4hc_from_compress", 1300, 1);
}

#[test]
fn mutate_f4_raw_multi() {
    // 13 raw files of 4112 bytes: dense header, a stride over the blocks.
    mutate_fixture("u64_raw_b4_f2_multi", 0, 97);
}

#[test]
fn mutate_f2_lz4_channels() {
    mutate_fixture("u16_3ch_lz4_b8_f4", 0, 997);
}

#[test]
fn mutate_f5_raw_channels() {
    mutate_fixture("i16_2ch_raw_b8_f2", 0, 331);
}

#[test]
fn mutate_f7_lz4_default_block() {
    mutate_fixture("u8_lz4_b32_f4", 0, 4999);
}

#[test]
fn mutate_header_wkw() {
    let dir = copy_fixture("u8_raw_b8_f4");
    let path = dir.path().join("header.wkw");
    let original = std::fs::read(&path).unwrap();
    for l in 0..=original.len() {
        std::fs::write(&path, &original[..l]).unwrap();
        assert_eq!(Dataset::open(dir.path()).is_ok(), l == 16);
    }
    for i in 0..16 {
        for bit in 0..8 {
            let mut m = original.clone();
            m[i] ^= 1 << bit;
            std::fs::write(&path, &m).unwrap();
            if let Ok(ds) = Dataset::open(dir.path()) {
                is_ok(ds.read([0; 3], [40; 3], Order::Fortran));
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn random_header_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..40)) {
        if let Ok(h) = wkw::Header::parse(&bytes) {
            prop_assert_eq!(&h.to_bytes()[..], &bytes[..16]);
            let _ = h.check_data_offset();
        }
    }

    /// A valid header (from the F3 file) followed by random bytes, and fully random files.
    #[test]
    fn random_data_files_never_panic(
        tail in proptest::collection::vec(any::<u8>(), 0..400),
        keep_header in any::<bool>(),
        jt in proptest::collection::vec(0u64..600, 8),
    ) {
        let dir = copy_fixture("f32_lz4hc_b16_f2");
        let path = dir.path().join("z1/y0/x1.wkw");
        let mut bytes = Vec::new();
        if keep_header {
            bytes.extend_from_slice(&std::fs::read(&path).unwrap()[..16]);
            let mut jt = jt;
            jt.sort_unstable();
            for e in jt {
                bytes.extend_from_slice(&(80 + e).to_le_bytes());
            }
        }
        bytes.extend_from_slice(&tail);
        std::fs::write(&path, &bytes).unwrap();
        exercise(dir.path(), [1, 0, 1], true);
    }
}
