//! Hostile input: every fixture truncated at every length and with single-bit flips, plus
//! hand-made malformed files. Errors are fine; panics, hangs and unbounded allocation are not.

// Casts are on fixture sizes far below every type limit; helpers unwrap.
#![allow(clippy::unwrap_used, clippy::cast_possible_truncation)]

use crate::common;

use common::fixtures;
use dwe_format::{DweFile, Error, Layout, Limits, OpenOptions, Prefix, PrefixStatus};

fn limits() -> Limits {
    Limits::default()
        .with_max_timestep_values(1 << 16)
        .with_max_total_values(1 << 18)
}

/// Opens `bytes` every way and exercises the decoding entry points on the first successful
/// opening (only whole-file decoding and `verify` when `light`); returns how many of the four
/// openings succeeded.
fn exercise(bytes: &[u8], light: bool) -> usize {
    let base = OpenOptions::new().with_limits(limits());
    let mut ok = 0;
    for opts in [
        base,
        base.with_layout(Layout::Stream),
        base.with_layout(Layout::Block),
        base.with_check_integrity(true),
    ] {
        let Ok(f) = opts.open(bytes) else { continue };
        ok += 1;
        let (t, v, k) = (
            f.num_timesteps(),
            f.vocab_size(),
            f.embedding_dim() as usize,
        );
        if ok > 1 {
            continue;
        }
        if let Ok(all) = f.decode_all() {
            assert_eq!(all.len(), t as usize * v as usize * k);
        }
        let _ = f.verify();
        if light {
            continue;
        }
        if let Ok(x) = f.vector(v - 1, t / 2) {
            assert_eq!(x.len(), k);
        }
        if let Ok(x) = f.trajectory(0) {
            assert_eq!(x.len(), t as usize * k);
        }
        let _ = f.most_related_to_at_t(&[0, v - 1], t / 2, 3);
        let _ = f.largest_changes_wrt(v / 2, 3, 1, 1);
        let _ = f.pairwise_trajectories(&[0], &[v - 1]);
    }
    for layout in [Layout::Stream, Layout::Block] {
        let _ = Prefix::parse(bytes, layout);
    }
    ok
}

#[test]
fn truncation_at_every_length() {
    for f in fixtures() {
        for path in [&f.stream, &f.block] {
            let bytes = std::fs::read(path).unwrap();
            for len in 0..bytes.len() {
                let cut = &bytes[..len];
                assert!(
                    DweFile::from_bytes(cut).is_err(),
                    "{} cut at {len}",
                    path.display()
                );
                if len < 1024 || len % 64 == 0 {
                    assert_eq!(exercise(cut, false), 0);
                }
                // Same cut with file_size patched to match: reaches the deeper checks.
                if len >= 40 && len % 4 == 0 && (len < 512 || len % 512 == 0) {
                    let mut patched = cut.to_vec();
                    patched[12..16].copy_from_slice(&((len / 4) as u32).to_le_bytes());
                    exercise(&patched, false);
                }
            }
        }
    }
}

#[test]
fn single_bit_flips() {
    let mut opened = 0usize;
    let mut rejected = 0usize;
    for f in fixtures() {
        for path in [&f.stream, &f.block] {
            let bytes = std::fs::read(path).unwrap();
            // Every bit of small files; for larger ones every bit of the first 64 bytes (header,
            // start of the models / addresses) and one bit of every 151st byte after that.
            let positions: Vec<usize> = (0..bytes.len() * 8)
                .filter(|&bit| {
                    let byte = bit / 8;
                    bytes.len() <= 2048 || byte < 64 || (byte % 151 == 0 && bit % 8 == byte % 8)
                })
                .collect();
            for bit in positions {
                let mut m = bytes.clone();
                m[bit / 8] ^= 1 << (bit % 8);
                let n = exercise(&m, true);
                if n > 0 {
                    opened += 1;
                } else {
                    rejected += 1;
                }
                if bit < 8 * 8 || (12 * 8..16 * 8).contains(&bit) {
                    // magic, major_version, file_size: always fatal.
                    assert_eq!(n, 0, "{} bit {bit}", path.display());
                }
            }
        }
    }
    assert!(opened > 0 && rejected > 0);
}

#[test]
fn hostile_headers_are_bounded() {
    // A valid header claiming V·K = 2^32 - 1 with tiny data: rejected by the limits, not by an
    // allocation failure.
    let mut b = std::fs::read(common::testdata().join("stream/small_2_4_4_j2.dwe")).unwrap();
    b[24..28].copy_from_slice(&u32::MAX.to_le_bytes());
    b[28..32].copy_from_slice(&u32::MAX.to_le_bytes());
    let err = OpenOptions::new()
        .with_layout(Layout::Stream)
        .open(&b[..])
        .unwrap_err();
    assert!(matches!(err, Error::LimitExceeded { .. }), "{err}");
    // Many time steps: decoder tables are bounded.
    let mut b = std::fs::read(common::testdata().join("stream/small_2_4_4_j2.dwe")).unwrap();
    b[20..24].copy_from_slice(&100_000u32.to_le_bytes());
    let err = OpenOptions::new()
        .with_layout(Layout::Stream)
        .open(&b[..])
        .unwrap_err();
    assert!(matches!(err, Error::LimitExceeded { .. }), "{err}");
}

#[test]
fn upstream_panics_are_errors() {
    let base = std::fs::read(common::testdata().join("stream/small_2_4_4_j2.dwe")).unwrap();
    let stream = OpenOptions::new().with_layout(Layout::Stream);
    // num_symbols = 0 (upstream underflows n - 1).
    let mut b = base.clone();
    b[40..42].copy_from_slice(&0u16.to_le_bytes());
    assert!(matches!(
        stream.open(&b[..]),
        Err(Error::InvalidModel { timestep: 0, .. })
    ));
    // num_symbols = 1.
    b[40..42].copy_from_slice(&1u16.to_le_bytes());
    assert!(matches!(
        stream.open(&b[..]),
        Err(Error::InvalidModel { .. })
    ));
    // Zero frequency: the packed words of model 0 start at u16 index 27 (byte 54).
    let mut b = base.clone();
    b[54..56].copy_from_slice(&0u16.to_le_bytes()); // 0x0a00 -> first frequency 0
    assert!(matches!(
        stream.open(&b[..]),
        Err(Error::InvalidModel { .. })
    ));
    // Overflowing frequencies (stored sum >= 4096).
    let mut b = base.clone();
    b[54..56].copy_from_slice(&0x0fffu16.to_le_bytes());
    b[56..58].copy_from_slice(&0xf001u16.to_le_bytes());
    assert!(matches!(
        stream.open(&b[..]),
        Err(Error::InvalidModel { .. })
    ));
    // Jump offset past the end (upstream: "Jump position out of bounds").
    let mut b = base.clone();
    let row1 = 22 * 4 + 8;
    b[row1..row1 + 4].copy_from_slice(&5u32.to_le_bytes());
    assert!(matches!(stream.open(&b[..]), Err(Error::OutOfRange { .. })));
    // file_size mismatch.
    let mut b = base.clone();
    b[12..16].copy_from_slice(&31u32.to_le_bytes());
    assert!(matches!(stream.open(&b[..]), Err(Error::FileSize { .. })));
    // Word underrun: drop the compressed words (file_size patched, offsets clamped to 0).
    let mut b = base[..120].to_vec();
    b[12..16].copy_from_slice(&30u32.to_le_bytes());
    for row in 0..4 {
        let at = 88 + 8 * row;
        b[at..at + 4].copy_from_slice(&0u32.to_le_bytes());
    }
    let f = stream.open(&b[..]).unwrap();
    assert!(matches!(
        f.residuals(0),
        Err(Error::WordUnderrun { timestep: 0, .. })
    ));
}

#[test]
fn block_addresses_are_checked() {
    let base = std::fs::read(common::testdata().join("block/small_2_4_4_c4.dwe")).unwrap();
    let block = OpenOptions::new().with_layout(Layout::Block);
    // timestep_addrs[1] = file_size.
    let mut b = base.clone();
    b[44..48].copy_from_slice(&31u32.to_le_bytes());
    assert!(matches!(block.open(&b[..]), Err(Error::OutOfRange { .. })));
    // chunk_addrs of t=0 (u32 index 18) out of range.
    let mut b = base.clone();
    b[72..76].copy_from_slice(&1000u32.to_le_bytes());
    assert!(matches!(block.open(&b[..]), Err(Error::OutOfRange { .. })));
    // chunk_size not dividing V.
    let mut b = base.clone();
    b[32..36].copy_from_slice(&3u32.to_le_bytes());
    assert!(matches!(
        block.open(&b[..]),
        Err(Error::InvalidHeader { .. })
    ));
    // A chunk pointing at the last word underruns.
    let mut b = base.clone();
    b[72..76].copy_from_slice(&30u32.to_le_bytes());
    let f = block.open(&b[..]).unwrap();
    assert!(matches!(f.residuals(0), Err(Error::WordUnderrun { .. })));
    // Integrity: a chunk that decodes but does not end in 0x10000.
    let mut b = base.clone();
    b[27 * 4 + 2] ^= 0x01; // low byte of state_lo of chunk t=0
    let f = block.with_check_integrity(true).open(&b[..]).unwrap();
    assert!(matches!(f.residuals(0), Err(Error::Integrity { .. })));
    assert!(matches!(f.verify(), Err(Error::Integrity { .. })));
}

#[test]
fn stream_integrity_checks() {
    let base = std::fs::read(common::testdata().join("stream/small_2_4_4_j2.dwe")).unwrap();
    // Corrupt the state of row 1: random access through row 1 still "works", but the
    // sequential pass disagrees with it.
    let mut b = base.clone();
    b[22 * 4 + 12] ^= 0x01;
    let f = DweFile::from_bytes(&b[..]).unwrap();
    assert!(matches!(f.verify(), Err(Error::Integrity { .. })));
    let checked = OpenOptions::new()
        .with_check_integrity(true)
        .open(&b[..])
        .unwrap();
    assert!(matches!(checked.residuals(0), Err(Error::Integrity { .. })));
    assert!(DweFile::from_bytes(&base[..]).unwrap().verify().is_ok());
}

#[test]
fn detection_failure_says_why() {
    let mut b = std::fs::read(common::testdata().join("stream/small_2_4_4_j2.dwe")).unwrap();
    b[40..42].copy_from_slice(&0u16.to_le_bytes());
    let err = DweFile::from_bytes(&b[..]).unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, Error::UnknownLayout { .. }));
    assert!(
        msg.contains("as stream") && msg.contains("as block"),
        "{msg}"
    );
    let err = DweFile::from_bytes(&b"\0dwf"[..]).unwrap_err();
    assert!(matches!(err, Error::Truncated { .. }), "{err}");
    let mut b = [0u8; 40];
    b[..4].copy_from_slice(b"\0dwf");
    assert!(matches!(
        DweFile::from_bytes(&b[..]),
        Err(Error::BadMagic { .. })
    ));
    b[..4].copy_from_slice(b"\0dwe");
    b[4] = 2;
    assert!(matches!(
        DweFile::from_bytes(&b[..]),
        Err(Error::UnsupportedVersion { major: 2 })
    ));
}

#[test]
fn prefix_parser_streams() {
    for f in fixtures() {
        for (path, layout) in [(&f.stream, Layout::Stream), (&f.block, Layout::Block)] {
            let bytes = std::fs::read(path).unwrap();
            let file = DweFile::from_bytes(&bytes[..]).unwrap();
            assert_eq!(
                Prefix::parse(&bytes[..10], layout).unwrap(),
                PrefixStatus::NeedBytes(40)
            );
            let need = match Prefix::parse(&bytes[..40], layout).unwrap() {
                PrefixStatus::NeedBytes(n) => n,
                PrefixStatus::Ready(_) => panic!("ready after the header"),
                _ => unreachable!(),
            };
            assert_eq!(need, 4 * u64::from(file.header().section_address));
            let PrefixStatus::Ready(p) = Prefix::parse(&bytes[..need as usize], layout).unwrap()
            else {
                panic!("not ready with {need} bytes");
            };
            assert_eq!(&p.header, file.header());
            for t in 0..file.num_timesteps() {
                assert_eq!(Some(&p.models[t as usize]), file.model(t));
            }
        }
    }
}
