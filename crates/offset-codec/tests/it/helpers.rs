//! TIFF and N5 helpers, byte for byte against the proposal (with the corrections in the crate's
//! `FORMAT.md`: the Example 1 hexdump is wrong, its base64 is right) and the reference-made
//! fixtures.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers outside #[test] fns
#![allow(clippy::cast_possible_truncation, clippy::cast_precision_loss)] // small test sizes

use base64::Engine as _;
use offset_codec::{
    Error, N5BlockHeader, N5Mode, N5ZarrJson, OffsetCodec, TiffCompression, TiffSampleType,
    check_padded_block, n5_default_header, n5_header_len, tiff_dynamic_prefix,
    tiff_offset_configuration, tiff_prefix, tiff_prefix_len,
};
use serde_json::{Value, json};
use std::io::Cursor;
use std::path::{Path, PathBuf};

fn testdata() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/offset")
}

fn read(rel: &str) -> Vec<u8> {
    std::fs::read(testdata().join(rel)).unwrap()
}

/// The proposal's base64 prefix (Example 1): 110 bytes, the output of the proposal's own
/// `generate_tiff_header.py`, read as a 256×256 `uint16` image by libtiff (see `FORMAT.md`).
const PROPOSAL_TIFF_B64: &str = "SUkqAAgAAAAIAAABAwABAAAAAAEAAAEBAwABAAAAAAEAAAIBAwABAAAAEAAAAAMBAwABAAAAAQAAAAYBAwABAAAAAQAAABEBBAABAAAAbgAAABYBAwABAAAAAAEAABcBBAABAAAAAAACAAAAAAA=";

#[test]
fn tiff_prefix_reproduces_the_proposal_bytes() {
    let ours = tiff_prefix(
        256,
        256,
        TiffSampleType::U16,
        TiffCompression::None,
        131_072,
    )
    .unwrap();
    let proposal = base64::engine::general_purpose::STANDARD
        .decode(PROPOSAL_TIFF_B64)
        .unwrap();
    assert_eq!(ours.len(), 110);
    assert_eq!(ours, proposal);
    // the fixture's zarr.json carries the same text, and its chunk starts with these bytes
    let doc: Value = serde_json::from_slice(&read("zarr/tiff_u16_le.zarr/zarr.json")).unwrap();
    assert_eq!(
        doc["codecs"][1]["configuration"]["prefix"],
        PROPOSAL_TIFF_B64
    );
    let chunk = read("zarr/tiff_u16_le.zarr/c/0/0");
    assert_eq!(chunk.len(), 131_182);
    assert_eq!(&chunk[..110], &ours[..]);
    // the configuration helper emits the same canonical base64
    let cfg = tiff_offset_configuration(256, 256, TiffSampleType::U16).unwrap();
    assert_eq!(cfg.prefix_base64(), Some(PROPOSAL_TIFF_B64));
    assert_eq!(cfg.offset(), 110);
}

#[test]
fn tiff_prefix_entries_match_the_verified_table() {
    // offsets and bytes of each 12-byte IFD entry (tag, type, count, value; little-endian) as
    // the proposal's base64 has them — its hexdump drops bytes and is wrong (FORMAT.md)
    let p = tiff_prefix(
        256,
        256,
        TiffSampleType::U16,
        TiffCompression::None,
        131_072,
    )
    .unwrap();
    let table: [(usize, [u8; 12]); 8] = [
        (0x0a, [0, 1, 3, 0, 1, 0, 0, 0, 0, 1, 0, 0]),
        (0x16, [1, 1, 3, 0, 1, 0, 0, 0, 0, 1, 0, 0]),
        (0x22, [2, 1, 3, 0, 1, 0, 0, 0, 0x10, 0, 0, 0]),
        (0x2e, [3, 1, 3, 0, 1, 0, 0, 0, 1, 0, 0, 0]),
        (0x3a, [6, 1, 3, 0, 1, 0, 0, 0, 1, 0, 0, 0]),
        (0x46, [0x11, 1, 4, 0, 1, 0, 0, 0, 0x6e, 0, 0, 0]),
        (0x52, [0x16, 1, 3, 0, 1, 0, 0, 0, 0, 1, 0, 0]),
        (0x5e, [0x17, 1, 4, 0, 1, 0, 0, 0, 0, 0, 2, 0]),
    ];
    for (at, bytes) in table {
        assert_eq!(&p[at..at + 12], &bytes, "entry at {at:#x}");
    }
    assert_eq!(&p[0x6a..], &[0, 0, 0, 0]);
}

fn tiff_decode_u16(file: &[u8]) -> (u32, u32, Vec<u16>) {
    let mut dec = tiff::decoder::Decoder::new(Cursor::new(file)).unwrap();
    let (w, h) = dec.dimensions().unwrap();
    match dec.read_image().unwrap() {
        tiff::decoder::DecodingResult::U16(v) => (w, h, v),
        other => panic!("not u16: {:?}", std::mem::discriminant(&other)),
    }
}

#[test]
fn fixture_tiff_chunk_reads_as_a_tiff() {
    let chunk = read("zarr/tiff_u16_le.zarr/c/0/0");
    let (w, h, values) = tiff_decode_u16(&chunk);
    assert_eq!((w, h), (256, 256));
    for (i, v) in values.iter().enumerate() {
        let (i0, i1) = (i / 256, i % 256);
        assert_eq!(*v as usize, (i0 << 8) | i1, "[{i0},{i1}]");
    }
}

#[test]
fn other_sample_types_read_back_with_the_tiff_crate() {
    // u8 (8 entries) and f32 / i16 (SampleFormat: 9 entries, 122 bytes)
    assert_eq!(tiff_prefix_len(TiffSampleType::U8), 110);
    assert_eq!(tiff_prefix_len(TiffSampleType::F32), 122);
    let (w, h) = (5u32, 3u32);
    let u8data: Vec<u8> = (0..15).collect();
    let mut file = tiff_prefix(w, h, TiffSampleType::U8, TiffCompression::None, 15).unwrap();
    file.extend_from_slice(&u8data);
    let mut dec = tiff::decoder::Decoder::new(Cursor::new(&file)).unwrap();
    assert_eq!(dec.dimensions().unwrap(), (5, 3));
    assert!(
        matches!(dec.read_image().unwrap(), tiff::decoder::DecodingResult::U8(v) if v == u8data)
    );

    let f: Vec<f32> = (0..15).map(|i| i as f32 * 0.5 - 3.0).collect();
    let mut file = tiff_prefix(w, h, TiffSampleType::F32, TiffCompression::None, 60).unwrap();
    assert_eq!(file.len(), 122);
    for x in &f {
        file.extend_from_slice(&x.to_le_bytes());
    }
    let mut dec = tiff::decoder::Decoder::new(Cursor::new(&file)).unwrap();
    assert!(matches!(dec.read_image().unwrap(), tiff::decoder::DecodingResult::F32(v) if v == f));

    let s: Vec<i16> = (0..15).map(|i| i * -1000).collect();
    let mut file = tiff_prefix(w, h, TiffSampleType::I16, TiffCompression::None, 30).unwrap();
    for x in &s {
        file.extend_from_slice(&x.to_le_bytes());
    }
    let mut dec = tiff::decoder::Decoder::new(Cursor::new(&file)).unwrap();
    assert!(matches!(dec.read_image().unwrap(), tiff::decoder::DecodingResult::I16(v) if v == s));

    // widths beyond u16 use LONG entries; the length stays 110
    let wide = tiff_prefix(70_000, 1, TiffSampleType::U8, TiffCompression::None, 70_000).unwrap();
    assert_eq!(wide.len(), 110);
    assert_eq!(
        &wide[0x0a..0x16],
        &[0, 1, 4, 0, 1, 0, 0, 0, 0x70, 0x11, 1, 0]
    );
}

#[test]
fn tiff_prefix_rejections() {
    assert!(matches!(
        tiff_prefix(0, 1, TiffSampleType::U8, TiffCompression::None, 0),
        Err(Error::TiffZeroDimension { field: "width" })
    ));
    assert!(matches!(
        tiff_prefix(1, 0, TiffSampleType::U8, TiffCompression::None, 0),
        Err(Error::TiffZeroDimension { field: "height" })
    ));
    assert!(matches!(
        tiff_prefix(256, 256, TiffSampleType::U16, TiffCompression::None, 2),
        Err(Error::TiffStripByteCount {
            actual: 2,
            expected: 131_072,
            ..
        })
    ));
    assert!(matches!(
        tiff_prefix(1, 1, TiffSampleType::U8, TiffCompression::Deflate, 1 << 32),
        Err(Error::TiffStripTooLarge { .. })
    ));
    assert!(matches!(
        tiff_prefix(
            u32::MAX,
            u32::MAX,
            TiffSampleType::U16,
            TiffCompression::None,
            1
        ),
        Err(Error::Overflow { .. })
    ));
}

#[test]
fn deflate_dynamic_prefix_only_changes_compression_and_count() {
    let codec = OffsetCodec::offset_zeros(110)
        .unwrap()
        .with_dynamic_prefix(tiff_dynamic_prefix(256, 256, TiffSampleType::U16));
    let stored = codec.encode(&[7u8; 1234]).unwrap();
    let static_prefix = tiff_prefix(
        256,
        256,
        TiffSampleType::U16,
        TiffCompression::None,
        131_072,
    )
    .unwrap();
    let diff: Vec<usize> = (0..110)
        .filter(|&i| stored[i] != static_prefix[i])
        .collect();
    // Compression value (0x36) and StripByteCounts value (0x66..0x6a)
    assert_eq!(diff, vec![0x36, 0x66, 0x67, 0x68]);
    assert_eq!(stored[0x36], 8);
    assert_eq!(&stored[0x66..0x6a], &1234u32.to_le_bytes());
}

#[test]
fn n5_header_helpers_match_the_fixture_blocks() {
    assert_eq!(n5_header_len(2, false).unwrap(), 12);
    assert_eq!(n5_header_len(2, true).unwrap(), 16);
    assert_eq!(n5_header_len(3, false).unwrap(), 16);
    assert!(matches!(
        n5_header_len(0, false),
        Err(Error::N5DimensionCount { ndim: 0 })
    ));
    assert!(matches!(
        n5_header_len(65_536, false),
        Err(Error::N5DimensionCount { .. })
    ));
    let h = n5_default_header(&[64, 64]).unwrap();
    assert_eq!(h, [0, 0, 0, 2, 0, 0, 0, 0x40, 0, 0, 0, 0x40]);
    assert_eq!(
        base64::engine::general_purpose::STANDARD.encode(&h),
        "AAAAAgAAAEAAAABA"
    );
    // every padded block of the three writers starts with exactly this header
    for ds in [
        "n5/tensorstore_zstd.n5/data",
        "n5/zarr2_gzip.n5/data",
        "zarr/n5_via_offset_zstd.n5",
    ] {
        for key in ["0/0", "0/1", "1/0", "1/1", "2/0", "2/1"] {
            let block = read(&format!("{ds}/{key}"));
            assert_eq!(&block[..12], &h[..], "{ds}/{key}");
            let header = check_padded_block(&block, &[64, 64]).unwrap();
            assert_eq!(header.mode, N5Mode::Default);
            assert_eq!(header.len(), 12);
        }
    }
}

#[test]
fn z5py_truncated_edge_blocks_are_recognised() {
    // MANIFEST: headers 64x6 (0/1, 1/1), 2x64 (2/0), 2x6 (2/1)
    let expected: [(&str, Option<[u32; 2]>); 6] = [
        ("0/0", None),
        ("1/0", None),
        ("0/1", Some([64, 6])),
        ("1/1", Some([64, 6])),
        ("2/0", Some([2, 64])),
        ("2/1", Some([2, 6])),
    ];
    for (key, truncated) in expected {
        let block = read(&format!("n5/z5py_gzip.n5/data/{key}"));
        let parsed = N5BlockHeader::parse(&block).unwrap();
        match truncated {
            None => {
                assert_eq!(parsed.dims, [64, 64]);
                assert!(check_padded_block(&block, &[64, 64]).is_ok());
            }
            Some(dims) => {
                assert_eq!(parsed.dims, dims, "{key}");
                let e = check_padded_block(&block, &[64, 64]).unwrap_err();
                assert!(
                    matches!(&e, Error::N5TruncatedBlock { header, .. } if header == &dims),
                    "{key}: {e}"
                );
                assert!(e.to_string().contains("n5_default"));
            }
        }
    }
}

#[test]
fn n5_header_parse_rejections() {
    assert!(matches!(
        N5BlockHeader::parse(&[0, 0, 0]),
        Err(Error::N5HeaderTruncated { needed: 4, .. })
    ));
    assert!(matches!(
        N5BlockHeader::parse(&[0, 0, 0, 2, 0, 0, 0, 64]),
        Err(Error::N5HeaderTruncated {
            needed: 12,
            available: 8
        })
    ));
    assert!(matches!(
        N5BlockHeader::parse(&[0, 2, 0, 1, 0, 0, 0, 1]),
        Err(Error::N5UnsupportedMode { mode: 2 })
    ));
    assert!(matches!(
        N5BlockHeader::parse(&[0, 0, 0, 0]),
        Err(Error::N5DimensionCount { ndim: 0 })
    ));
    // ndim 65535 in a 4-byte block: refused before allocating
    assert!(matches!(
        N5BlockHeader::parse(&[0, 0, 0xff, 0xff]),
        Err(Error::N5HeaderTruncated {
            needed: 262_144,
            ..
        })
    ));
    let var = [0, 1, 0, 1, 0, 0, 0, 9, 0, 0, 0, 7];
    let h = N5BlockHeader::parse(&var).unwrap();
    assert_eq!(
        (h.mode, h.dims.clone(), h.num_elements),
        (N5Mode::Varlength, vec![9], Some(7))
    );
    assert!(matches!(
        check_padded_block(&var, &[9]),
        Err(Error::N5Varlength)
    ));
}

#[test]
fn n5_zarr_json_builder_reproduces_the_overlays() {
    let cases = [
        (
            "n5/tensorstore_zstd.n5/data/zarr.json",
            json!({"name": "zstd", "configuration": {"level": 3, "checksum": false}}),
        ),
        (
            "n5/zarr2_gzip.n5/data/zarr.json",
            json!({"name": "gzip", "configuration": {"level": 5}}),
        ),
        (
            "n5/z5py_gzip.n5/data/zarr.json",
            json!({"name": "gzip", "configuration": {"level": 5}}),
        ),
    ];
    for (path, compressor) in cases {
        let built = N5ZarrJson {
            dimensions: vec![130, 70],
            block_size: vec![64, 64],
            data_type: "uint16".into(),
            compressor: Some(compressor),
        }
        .to_json()
        .unwrap();
        let fixture: Value = serde_json::from_slice(&read(path)).unwrap();
        assert_eq!(built, fixture, "{path}");
        assert_eq!(
            built["codecs"][0]["name"], "transpose",
            "the transpose the proposal forgot"
        );
    }
    // 3-D, non-square: reversed transpose order, 16-byte header of the block size
    let j = N5ZarrJson {
        dimensions: vec![10, 20, 30],
        block_size: vec![2, 3, 4],
        data_type: "float32".into(),
        compressor: None,
    };
    let v = j.to_json().unwrap();
    assert_eq!(v["codecs"][0]["configuration"]["order"], json!([2, 1, 0]));
    assert_eq!(v["codecs"].as_array().unwrap().len(), 3);
    assert_eq!(v["codecs"][2]["configuration"]["offset"], 16);
    assert_eq!(
        j.offset_configuration().unwrap().prefix_bytes().unwrap(),
        [0, 0, 0, 3, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 4]
    );
    let bad = |f: fn(&mut N5ZarrJson)| {
        let mut k = j.clone();
        f(&mut k);
        k.to_json().unwrap_err()
    };
    assert!(matches!(
        bad(|k| k.block_size.pop().map(drop).unwrap_or(())),
        Error::N5RankMismatch { .. }
    ));
    assert!(matches!(
        bad(|k| k.block_size[1] = 0),
        Error::N5ZeroBlockSize { index: 1 }
    ));
    assert!(matches!(
        bad(|k| k.data_type = "uint128".into()),
        Error::N5DataType { .. }
    ));
}
