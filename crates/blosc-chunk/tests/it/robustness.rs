//! Hostile input: every fixture chunk truncated at every length (every byte up to 4 kB, then a
//! stride) and with single-bit flips (every bit of the header, one bit of every byte up to 256,
//! then a sample of the payload), plus random bytes and random bodies behind plausible headers,
//! must give `Ok` or `Err` from every decode entry point, never a panic, and never allocate
//! beyond the configured limit.

#![allow(
    clippy::unwrap_used,
    clippy::cast_possible_truncation,
    reason = "a failed unwrap is a failed test; bit numbers are < 8"
)]

use std::path::PathBuf;

use blosc_chunk::{ChunkHeader, DParams, Limits};
use proptest::prelude::*;

fn fixtures() -> Vec<(String, Vec<u8>)> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../testdata/blosc");
    let mut out = Vec::new();
    for dir in ["chunks", "misc", "blosc1hdr", "legacy"] {
        let mut paths: Vec<_> = std::fs::read_dir(root.join(dir))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "cdata" || e == "bin"))
            .collect();
        paths.sort();
        for p in paths {
            out.push((p.display().to_string(), std::fs::read(&p).unwrap()));
        }
    }
    out
}

/// Small enough that corrupted headers cannot make a test allocate much.
const LIMIT: usize = 8 << 20;

fn all_entry_points(chunk: &[u8]) {
    entry_points_with_limit(chunk, LIMIT);
}

fn entry_points_with_limit(chunk: &[u8], limit: usize) {
    let limits = Limits::default().with_max_nbytes(limit);
    let _ = ChunkHeader::parse(chunk);
    let r = blosc_chunk::decompress_with(chunk, &limits);
    let _ = blosc_chunk::LazyChunk::parse(chunk);
    if let Ok(h) = ChunkHeader::parse(chunk) {
        // Large chunks (the 4 MB legacy ones) get the single-threaded decoder only: the other
        // entry points share its code and would only multiply the run time.
        if h.nbytes() > 300_000 {
            return;
        }
        if let Ok(v) = &r {
            assert_eq!(v.len(), h.nbytes());
        }
        if h.nbytes() <= limit {
            let mut out = vec![0u8; h.nbytes()];
            let _ = blosc_chunk::decompress_into(chunk, &mut out);
            // Into memory never written: the same result as the allocating decoder.
            let mut fresh: Vec<u8> = Vec::with_capacity(h.nbytes());
            let u = blosc_chunk::decompress_into_uninit_ctx(
                chunk,
                fresh.spare_capacity_mut(),
                &DParams::default().with_threads(2),
            );
            if let (Ok(v), Ok(u)) = (&r, u) {
                assert_eq!(&v[..], &u[..]);
            }
            let items = h.nbytes() / h.typesize();
            let _ = blosc_chunk::getitem(chunk, items / 2, items / 4);
            let _ = blosc_chunk::getitem(chunk, 0, 1);
        }
    }
    let mut params = DParams::default().with_threads(2);
    params.limits = limits;
    let _ = blosc_chunk::decompress_ctx(chunk, &params);
}

#[test]
fn truncated_at_every_length() {
    for (name, chunk) in fixtures() {
        // Every length up to 600 bytes, then a stride (the large legacy chunks are 26 kB+).
        let step = if chunk.len() > 4000 { 13 } else { 1 };
        let mut len = 0;
        while len < chunk.len() {
            let cut = &chunk[..len];
            let r = blosc_chunk::decompress_with(cut, &Limits::default().with_max_nbytes(LIMIT));
            assert!(
                r.is_err() || ChunkHeader::parse(cut).is_ok(),
                "{name} cut at {len}"
            );
            if len < 600 || len % 8 == 0 {
                all_entry_points(cut);
            }
            len += if len < 600 { 1 } else { step };
        }
    }
}

#[test]
fn single_bit_flips() {
    for (name, chunk) in fixtures() {
        // Every bit of the header (32 bytes); in the bstarts / dictionary / stream-size area
        // (bytes 32..256) one bit per byte, rotating; then one bit of every 97th byte (every
        // 1009th in chunks above 20 kB). Each mutant goes through the one-shot decoder and
        // item access; the full set of entry points runs on every 8th mutant.
        let nbytes = ChunkHeader::parse(&chunk).unwrap().nbytes();
        // The 4 MB legacy chunks: header validation and the limit path only.
        let limit = if nbytes > 300_000 { 300_000 } else { LIMIT };
        let limits = Limits::default().with_max_nbytes(limit);
        let stride = if chunk.len() > 20_000 { 1009 } else { 97 };
        let mut flips: Vec<(usize, u8)> = Vec::new();
        for pos in 0..chunk.len().min(32) {
            flips.extend((0..8).map(|bit| (pos, bit)));
        }
        flips.extend((32..chunk.len().min(256)).map(|pos| (pos, (pos % 8) as u8)));
        flips.extend(
            (256..chunk.len())
                .step_by(stride)
                .map(|pos| (pos, (pos % 8) as u8)),
        );
        let mut c = chunk.clone();
        for (k, &(pos, bit)) in flips.iter().enumerate() {
            c[pos] ^= 1 << bit;
            if k % 8 == 0 {
                entry_points_with_limit(&c, limit);
            } else {
                let _ = blosc_chunk::decompress_with(&c, &limits);
                let _ = blosc_chunk::getitem(&c, 1, 3);
            }
            c[pos] ^= 1 << bit;
        }
        assert_eq!(c, chunk, "{name}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1000, ..ProptestConfig::default() })]

    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
        all_entry_points(&bytes);
    }

    /// Random bodies behind a plausible header (so decoding gets past the header checks).
    #[test]
    fn random_body_behind_valid_header(
        flags in any::<u8>(),
        typesize in 1u8..=16,
        nbytes in 0i32..100_000,
        blocksize in 1i32..70_000,
        b2flags in any::<u8>(),
        filters in proptest::array::uniform6(0u8..5),
        body in proptest::collection::vec(any::<u8>(), 0..600),
    ) {
        let mut c = vec![5u8, 1, flags | 0x05, typesize];
        c.extend_from_slice(&nbytes.to_le_bytes());
        c.extend_from_slice(&blocksize.to_le_bytes());
        let cbytes = i32::try_from(32 + body.len()).unwrap();
        c.extend_from_slice(&cbytes.to_le_bytes());
        c.extend_from_slice(&filters);
        c.extend_from_slice(&[5, 0, 0, 0, 0, 0, 0, 0, 0, b2flags & 0x7f]);
        c.extend_from_slice(&body);
        all_entry_points(&c);
    }
}
