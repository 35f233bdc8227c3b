//! The codec core: zero-copy decode, encode, strict mode, dynamic prefixes, range mapping, and
//! robustness on truncated / bit-flipped fixture chunks and random bytes.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers outside #[test] fns
#![allow(clippy::cast_possible_truncation, clippy::cast_precision_loss)] // small test sizes

use offset_codec::{
    ByteRange, DynamicPrefix, Error, Location, OffsetCodec, OffsetConfiguration, PadConfiguration,
    PrefixContext,
};
use std::path::{Path, PathBuf};

fn testdata() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/offset")
}

fn read(rel: &str) -> Vec<u8> {
    std::fs::read(testdata().join(rel)).unwrap()
}

#[test]
fn decode_borrows_the_input() {
    let codec = OffsetCodec::new(OffsetConfiguration::from_prefix(b"MY_CUSTOM_HEADER")).unwrap();
    let chunk = read("zarr/gzip_custom_header.zarr/c/0/0");
    let payload = codec.decode(&chunk).unwrap();
    // O(1): the payload is a view 16 bytes into the input, nothing was copied.
    assert_eq!(payload.as_ptr(), chunk[16..].as_ptr());
    assert_eq!(payload.len(), chunk.len() - 16);
    assert_eq!(
        &payload[..2],
        [0x1f, 0x8b],
        "a gzip stream follows the header"
    );

    let end = OffsetCodec::pad_zeros(Location::End, 4).unwrap();
    let chunk = read("zarr/pad_end_zero.zarr/c/1/1");
    let payload = end.decode(&chunk).unwrap();
    assert_eq!(payload.as_ptr(), chunk.as_ptr());
    assert_eq!(payload.len(), chunk.len() - 4);
}

#[test]
fn fixture_chunks_decode_and_re_encode_byte_exactly() {
    // Uncompressed fixtures: the stored chunk is prefix + payload, both known exactly.
    let off0 = OffsetCodec::new(
        OffsetConfiguration::from_json(&serde_json::json!({"offset": 0, "prefix": ""})).unwrap(),
    )
    .unwrap();
    for key in ["0/0", "0/1", "1/0", "1/1", "2/0", "2/1"] {
        let chunk = read(&format!("zarr/offset0_empty_prefix.zarr/c/{key}"));
        assert_eq!(chunk.len(), 32);
        let payload = off0.decode(&chunk).unwrap();
        assert_eq!(payload, &chunk[..]);
        assert_eq!(off0.encode(payload).unwrap(), chunk);
    }
    // Static prefixes / zero prefixes / trailers, re-encoded exactly.
    let cases: [(&str, OffsetCodec, usize); 4] = [
        (
            "zarr/gzip_custom_header.zarr/c",
            OffsetCodec::new(OffsetConfiguration::from_prefix(b"MY_CUSTOM_HEADER")).unwrap(),
            16,
        ),
        (
            "zarr/zstd_zero_prefix.zarr/c",
            OffsetCodec::offset_zeros(8).unwrap(),
            8,
        ),
        (
            "zarr/pad_start_gzip.zarr/c",
            OffsetCodec::new(PadConfiguration::from_padding(
                Location::Start,
                b"MY_CUSTOM_HEADER",
            ))
            .unwrap()
            .with_strict(true),
            16,
        ),
        (
            "zarr/pad_end_zero.zarr/c",
            OffsetCodec::pad_zeros(Location::End, 4)
                .unwrap()
                .with_strict(true),
            4,
        ),
    ];
    for (dir, codec, n) in cases {
        for key in ["0/0", "0/1", "1/0", "1/1", "2/0", "2/1"] {
            let chunk = read(&format!("{dir}/{key}"));
            let payload = codec.decode(&chunk).unwrap();
            assert_eq!(payload.len() + n, chunk.len());
            assert_eq!(codec.encode(payload).unwrap(), chunk, "{dir}/{key}");
        }
    }
}

#[test]
fn short_chunks_are_errors() {
    let codec = OffsetCodec::offset_zeros(12).unwrap();
    assert!(matches!(
        codec.decode(&[0; 11]),
        Err(Error::ChunkTooShort {
            len: 11,
            nbytes: 12
        })
    ));
    assert_eq!(codec.decode(&[0; 12]).unwrap(), b"");
    let end = OffsetCodec::pad_zeros(Location::End, 4).unwrap();
    assert!(matches!(
        end.decode(&[1, 2, 3]),
        Err(Error::ChunkTooShort { .. })
    ));
    assert_eq!(end.decode(&[1, 2, 3, 4, 5]).unwrap(), [1]);
}

#[test]
fn encode_prepends_or_appends() {
    let start = OffsetCodec::new(PadConfiguration::from_padding(Location::Start, b"<>")).unwrap();
    let end = OffsetCodec::new(PadConfiguration::from_padding(Location::End, b"<>")).unwrap();
    assert_eq!(start.encode(b"abc").unwrap(), b"<>abc");
    assert_eq!(end.encode(b"abc").unwrap(), b"abc<>");
    assert_eq!(
        OffsetCodec::offset_zeros(3).unwrap().encode(b"x").unwrap(),
        b"\0\0\0x"
    );
    let out = start.encode(b"abc").unwrap();
    assert_eq!(
        out.capacity(),
        out.len(),
        "one allocation of exactly the final size"
    );
    assert_eq!(start.encoded_len(3).unwrap(), 5);
    assert!(matches!(
        start.encoded_len(u64::MAX),
        Err(Error::Overflow { .. })
    ));
}

#[test]
fn strict_mode_checks_skipped_bytes() {
    let lax = OffsetCodec::new(OffsetConfiguration::from_prefix(b"HDR")).unwrap();
    let strict = lax.clone().with_strict(true);
    assert!(!lax.is_strict());
    assert_eq!(
        lax.decode(b"XYZdata").unwrap(),
        b"data",
        "default: skipped bytes ignored"
    );
    assert!(matches!(
        strict.decode(b"HXRdata"),
        Err(Error::PrefixMismatch {
            offset: 1,
            found: b'X',
            expected: b'D'
        })
    ));
    assert_eq!(strict.decode(b"HDRdata").unwrap(), b"data");
    // zeros when no literal is configured
    let zeros = OffsetCodec::offset_zeros(2).unwrap().with_strict(true);
    assert!(zeros.decode(b"\0\0x").is_ok());
    assert!(matches!(
        zeros.decode(b"\0\x01x"),
        Err(Error::PrefixMismatch { offset: 1, .. })
    ));
    // an N5 default header as literal: a different N5 header is named as a truncated block
    let n5 = OffsetCodec::new(OffsetConfiguration::from_prefix(
        &offset_codec::n5_default_header(&[64, 64]).unwrap(),
    ))
    .unwrap()
    .with_strict(true);
    let mut block = offset_codec::n5_default_header(&[64, 6]).unwrap();
    block.extend_from_slice(b"payload");
    assert!(matches!(
        n5.decode(&block),
        Err(Error::N5TruncatedBlock { ref header, ref block_size })
            if header == &[64, 6] && block_size == &[64, 64]
    ));
    block[0] = 9; // not an N5 header any more: a plain mismatch
    assert!(matches!(
        n5.decode(&block),
        Err(Error::PrefixMismatch {
            offset: 0,
            found: 9,
            expected: 0
        })
    ));
    // trailer offsets are reported in chunk coordinates
    let end = OffsetCodec::new(PadConfiguration::from_padding(Location::End, b"!!"))
        .unwrap()
        .with_strict(true);
    assert!(matches!(
        end.decode(b"abc!?"),
        Err(Error::PrefixMismatch {
            offset: 4,
            found: b'?',
            ..
        })
    ));
}

fn length_prefix() -> DynamicPrefix {
    DynamicPrefix::new(|ctx: &PrefixContext<'_>| {
        let n = u32::try_from(ctx.payload.len())?;
        Ok(n.to_be_bytes().to_vec())
    })
}

#[test]
fn dynamic_prefix_builds_headers_from_the_payload() {
    let codec = OffsetCodec::offset_zeros(4)
        .unwrap()
        .with_dynamic_prefix(length_prefix());
    assert_eq!(codec.encode(b"hello").unwrap(), b"\0\0\0\x05hello");
    // strict mode re-derives the expected header from the payload
    let strict = codec.clone().with_strict(true);
    assert_eq!(strict.decode(b"\0\0\0\x05hello").unwrap(), b"hello");
    assert!(matches!(
        strict.decode(b"\0\0\0\x06hello"),
        Err(Error::PrefixMismatch { offset: 3, .. })
    ));
}

#[test]
fn dynamic_prefix_sees_chunk_coordinates_when_given() {
    let codec = OffsetCodec::offset_zeros(2)
        .unwrap()
        .with_dynamic_prefix(DynamicPrefix::new(|ctx: &PrefixContext<'_>| {
            let idx = ctx.chunk_indices.ok_or("no coordinates")?;
            Ok(idx
                .iter()
                .map(|&i| u8::try_from(i).unwrap_or(255))
                .collect())
        }));
    let ctx = PrefixContext::new(b"p").with_chunk(&[3, 4], &[64, 64]);
    assert_eq!(codec.encode_with(&ctx).unwrap(), [3, 4, b'p']);
    // without coordinates the callback's own error surfaces as a typed error
    let e = codec.encode(b"p").unwrap_err();
    assert!(matches!(e, Error::DynamicPrefix { .. }));
    assert_eq!(
        e.to_string(),
        "dynamic prefix callback failed: no coordinates"
    );
}

#[test]
fn dynamic_prefix_length_is_checked() {
    let codec = OffsetCodec::offset_zeros(3)
        .unwrap()
        .with_dynamic_prefix(length_prefix());
    assert!(matches!(
        codec.encode(b"x"),
        Err(Error::DynamicPrefixLength {
            actual: 4,
            expected: 3
        })
    ));
}

/// Reference model of a range read: materialise the payload and slice it.
fn model(payload: &[u8], r: ByteRange) -> Option<Vec<u8>> {
    let len = payload.len() as u64;
    match r {
        ByteRange::FromStart { offset, length } => {
            let end = match length {
                Some(l) => offset.checked_add(l)?,
                None => len.max(offset),
            };
            (end <= len).then(|| payload[offset as usize..end as usize].to_vec())
        }
        ByteRange::Suffix(k) => Some(payload[(len - k.min(len)) as usize..].to_vec()),
    }
}

/// A store: serves `range` of `stored`, failing (like zarrs stores) when it is out of bounds.
fn store_read(stored: &[u8], r: ByteRange) -> Option<&[u8]> {
    let len = stored.len() as u64;
    match r {
        ByteRange::FromStart { offset, length } => {
            let end = match length {
                Some(l) => offset.checked_add(l)?,
                None => len,
            };
            (offset <= len && end <= len).then(|| &stored[offset as usize..end as usize])
        }
        ByteRange::Suffix(k) => Some(&stored[(len - k.min(len)) as usize..]),
    }
}

fn all_ranges(max: u64) -> Vec<ByteRange> {
    let mut v = Vec::new();
    for o in 0..=max + 1 {
        v.push(ByteRange::FromStart {
            offset: o,
            length: None,
        });
        for l in 0..=max + 1 {
            v.push(ByteRange::FromStart {
                offset: o,
                length: Some(l),
            });
        }
        v.push(ByteRange::Suffix(o));
    }
    v.push(ByteRange::Suffix(u64::MAX));
    v.push(ByteRange::FromStart {
        offset: u64::MAX,
        length: Some(1),
    });
    v.push(ByteRange::FromStart {
        offset: 1,
        length: Some(u64::MAX),
    });
    v
}

#[test]
fn range_mapping_matches_the_model_exhaustively() {
    let mut checked = 0;
    for location in [Location::Start, Location::End] {
        for n in [0u64, 1, 3] {
            let codec = OffsetCodec::pad_zeros(location, n).unwrap();
            for plen in 0..6usize {
                let payload: Vec<u8> = (1..=plen as u8).collect();
                let stored = codec.encode(&payload).unwrap();
                for r in all_ranges(plen as u64) {
                    let want = model(&payload, r);
                    // known length
                    let known = codec
                        .map_range(r, stored.len() as u64)
                        .ok()
                        .map(|iv| stored[iv.start as usize..iv.end as usize].to_vec());
                    assert_eq!(known, want, "map_range {location:?} n={n} plen={plen} {r}");
                    // unknown length: request, store read, trim
                    let got = codec.plan_range(r).ok().and_then(|plan| {
                        let fetched = store_read(&stored, plan.request())?;
                        plan.finish(fetched).ok().map(<[u8]>::to_vec)
                    });
                    assert_eq!(got, want, "plan_range {location:?} n={n} plen={plen} {r}");
                    checked += 1;
                }
            }
        }
    }
    assert!(checked > 1000);
}

#[test]
fn suffix_longer_than_payload_never_returns_header_bytes() {
    // the weakness of a plain `Suffix` pass-through: 10 bytes of a 5-byte payload
    let codec = OffsetCodec::new(OffsetConfiguration::from_prefix(b"HDR")).unwrap();
    let stored = codec.encode(b"hello").unwrap();
    let plan = codec.plan_range(ByteRange::Suffix(10)).unwrap();
    assert_eq!(plan.request(), ByteRange::Suffix(13));
    assert_eq!(plan.finish(&stored).unwrap(), b"hello");
    assert_eq!(codec.map_range(ByteRange::Suffix(10), 8).unwrap(), 3..8);
}

#[test]
fn range_arithmetic_overflow_is_an_error() {
    let codec = OffsetCodec::offset_zeros(16).unwrap();
    assert!(matches!(
        codec.plan_range(ByteRange::FromStart {
            offset: u64::MAX - 1,
            length: None
        }),
        Err(Error::Overflow { .. })
    ));
    assert!(matches!(
        codec.map_range(
            ByteRange::FromStart {
                offset: 5,
                length: Some(u64::MAX)
            },
            100
        ),
        Err(Error::Overflow { .. })
    ));
    let end = OffsetCodec::pad_zeros(Location::End, 16).unwrap();
    assert!(matches!(
        end.plan_range(ByteRange::FromStart {
            offset: 0,
            length: Some(u64::MAX)
        }),
        Err(Error::Overflow { .. })
    ));
    // a store that returns a wrong length for a bounded request is caught
    let plan = codec
        .plan_range(ByteRange::FromStart {
            offset: 0,
            length: Some(4),
        })
        .unwrap();
    assert!(matches!(
        plan.finish(&[0; 3]),
        Err(Error::UnexpectedReadLength {
            actual: 3,
            requested: 4
        })
    ));
}

fn all_fixture_chunks() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(&p, out);
            } else if !p
                .extension()
                .is_some_and(|x| x == "json" || x == "py" || x == "md" || x == "txt")
                && p.file_name().is_some_and(|n| n != "SHA256SUMS")
            {
                out.push(p);
            }
        }
    }
    let mut out = Vec::new();
    walk(&testdata(), &mut out);
    out.sort();
    out
}

#[test]
fn truncated_and_bit_flipped_chunks_never_panic() {
    let chunks = all_fixture_chunks();
    assert_eq!(
        chunks.len(),
        7 * 6 - 5 + 18,
        "every chunk / block file of the fixture set"
    );
    let codecs = [
        OffsetCodec::offset_zeros(12).unwrap().with_strict(true),
        OffsetCodec::new(OffsetConfiguration::from_prefix(b"MY_CUSTOM_HEADER"))
            .unwrap()
            .with_strict(true),
        OffsetCodec::pad_zeros(Location::End, 4)
            .unwrap()
            .with_strict(true),
    ];
    for path in chunks {
        let data = std::fs::read(&path).unwrap();
        // every truncation: a lax codec fails exactly when the header does not fit
        let lax = OffsetCodec::offset_zeros(12).unwrap();
        for len in 0..=data.len() {
            assert_eq!(
                lax.decode(&data[..len]).map(<[u8]>::len).ok(),
                len.checked_sub(12)
            );
            for c in &codecs {
                let _ = c.decode(&data[..len]);
            }
            let _ = offset_codec::N5BlockHeader::parse(&data[..len]);
        }
        // every single-bit flip
        let mut flipped = data.clone();
        for bit in 0..data.len() * 8 {
            flipped[bit / 8] ^= 1 << (bit % 8);
            for c in &codecs {
                let _ = c.decode(&flipped);
            }
            let _ = offset_codec::check_padded_block(&flipped, &[64, 64]);
            flipped[bit / 8] ^= 1 << (bit % 8);
        }
    }
}

proptest::proptest! {
    #[test]
    fn random_bytes_never_panic(
        data in proptest::collection::vec(proptest::num::u8::ANY, 0..200),
        n in 0u64..40,
        start in proptest::bool::ANY,
        o in proptest::num::u64::ANY,
        l in proptest::option::of(proptest::num::u64::ANY),
    ) {
        let loc = if start { Location::Start } else { Location::End };
        let codec = OffsetCodec::pad_zeros(loc, n).unwrap().with_strict(true);
        let _ = codec.decode(&data);
        for r in [ByteRange::FromStart { offset: o, length: l }, ByteRange::Suffix(o)] {
            let _ = codec.map_range(r, data.len() as u64);
            if let Ok(plan) = codec.plan_range(r) {
                let _ = plan.finish(&data);
            }
        }
        let _ = offset_codec::N5BlockHeader::parse(&data);
    }

    #[test]
    fn encode_decode_round_trip(
        payload in proptest::collection::vec(proptest::num::u8::ANY, 0..200),
        prefix in proptest::collection::vec(proptest::num::u8::ANY, 0..40),
        start in proptest::bool::ANY,
    ) {
        let loc = if start { Location::Start } else { Location::End };
        let codec = OffsetCodec::new(PadConfiguration::from_padding(loc, &prefix)).unwrap().with_strict(true);
        let stored = codec.encode(&payload).unwrap();
        proptest::prop_assert_eq!(stored.len(), payload.len() + prefix.len());
        proptest::prop_assert_eq!(codec.decode(&stored).unwrap(), &payload[..]);
    }
}
