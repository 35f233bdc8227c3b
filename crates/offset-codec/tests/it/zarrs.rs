//! zarrs 0.23 integration: every fixture store read through zarrs with our `offset` / `pad`
//! plugins (registered by `inventory`), compared with the manifest's formula
//! `v[i0, i1] = (i0 << 8) | i1`; the truncated z5py N5 edge chunks fail; partial decoding; the
//! write path reproduces the reference-made TIFF chunk byte for byte.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers outside #[test] fns
#![allow(clippy::cast_possible_truncation)] // small test sizes

use std::borrow::Cow;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use offset_codec::{
    Location, OffsetCodec, OffsetConfiguration, PadConfiguration, TiffSampleType, ZarrsOffsetCodec,
    ZarrsPadCodec, tiff_offset_configuration,
};
use serde_json::{Value, json};
use zarrs::array::codec::api::{
    BytesPartialDecoderTraits, BytesRepresentation, BytesToBytesCodecTraits, CodecOptions,
};
use zarrs::array::{Array, ArrayMetadata, ArraySubset};
use zarrs::filesystem::FilesystemStore;
use zarrs::metadata::v3::MetadataV3;
use zarrs::storage::byte_range::ByteRange;

fn testdata() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/offset")
}

fn open(dir: &Path) -> Array<FilesystemStore> {
    let store = Arc::new(FilesystemStore::new(dir).unwrap());
    Array::open(store, "/").unwrap()
}

fn expected(i0: u64, i1: u64) -> u16 {
    u16::try_from((i0 << 8) | i1).unwrap()
}

/// All stores that must read correctly (zarr stores and padded N5 overlays).
const GOOD: &[&str] = &[
    "zarr/tiff_u16_le.zarr",
    "zarr/gzip_custom_header.zarr",
    "zarr/zstd_zero_prefix.zarr",
    "zarr/offset0_empty_prefix.zarr",
    "zarr/n5_via_offset_zstd.n5",
    "zarr/pad_start_gzip.zarr",
    "zarr/pad_end_zero.zarr",
    "n5/tensorstore_zstd.n5/data",
    "n5/zarr2_gzip.n5/data",
];

#[test]
fn every_good_fixture_store_reads_the_manifest_values() {
    for rel in GOOD {
        let array = open(&testdata().join(rel));
        let shape = array.shape().to_vec();
        let values: Vec<u16> = array.retrieve_array_subset(&array.subset_all()).unwrap();
        assert_eq!(values.len() as u64, shape[0] * shape[1], "{rel}");
        for i0 in 0..shape[0] {
            for i1 in 0..shape[1] {
                let v = values[(i0 * shape[1] + i1) as usize];
                assert_eq!(v, expected(i0, i1), "{rel} [{i0},{i1}]");
            }
        }
    }
}

#[test]
fn edge_chunks_hold_the_fill_value_outside_the_array() {
    // A padded N5 edge block read as a whole chunk: outside the array it holds 0 (fill value).
    let array = open(&testdata().join("n5/tensorstore_zstd.n5/data"));
    let chunk: Vec<u16> = array.retrieve_chunk(&[2, 1]).unwrap();
    assert_eq!(chunk.len(), 64 * 64);
    for a in 0..64u64 {
        for b in 0..64u64 {
            let (i0, i1) = (128 + a, 64 + b);
            let want = if i0 < 130 && i1 < 70 {
                expected(i0, i1)
            } else {
                0
            };
            assert_eq!(chunk[(a * 64 + b) as usize], want, "[{i0},{i1}]");
        }
    }
}

#[test]
fn z5py_truncated_edge_chunks_fail_with_a_clear_error() {
    let dir = testdata().join("n5/z5py_gzip.n5/data");
    let array = open(&dir);
    for ok in [[0u64, 0], [1, 0]] {
        let chunk: Vec<u16> = array.retrieve_chunk(&ok).unwrap();
        for a in 0..64u64 {
            for b in 0..64u64 {
                assert_eq!(chunk[(a * 64 + b) as usize], expected(ok[0] * 64 + a, b));
            }
        }
    }
    // MANIFEST: 384, 384, 128 and 12 elements instead of 4096 (768, 768, 256, 24 bytes)
    for (idx, bytes) in [([0u64, 1], 768), ([1, 1], 768), ([2, 0], 256), ([2, 1], 24)] {
        let err = array
            .retrieve_chunk::<Vec<u16>>(&idx)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains(&bytes.to_string()) && err.contains("8192"),
            "{idx:?}: {err}"
        );
        // The raw block says why: a truncated header (our helper names the cause).
        let raw = array.retrieve_encoded_chunk(&idx).unwrap().unwrap();
        let why = offset_codec::check_padded_block(&raw, &[64, 64]).unwrap_err();
        assert!(matches!(why, offset_codec::Error::N5TruncatedBlock { .. }));
    }
    // The whole array therefore fails too.
    assert!(
        array
            .retrieve_array_subset::<Vec<u16>>(&array.subset_all())
            .is_err()
    );
}

#[test]
fn tiff_chunk_is_a_standalone_tiff() {
    let raw = std::fs::read(testdata().join("zarr/tiff_u16_le.zarr/c/0/0")).unwrap();
    let mut dec = tiff::decoder::Decoder::new(std::io::Cursor::new(&raw)).unwrap();
    assert_eq!(dec.dimensions().unwrap(), (256, 256));
    let tiff::decoder::DecodingResult::U16(tiff_values) = dec.read_image().unwrap() else {
        panic!("not u16")
    };
    let array = open(&testdata().join("zarr/tiff_u16_le.zarr"));
    let zarr_values: Vec<u16> = array.retrieve_chunk(&[0, 0]).unwrap();
    assert_eq!(tiff_values, zarr_values);
}

#[test]
fn partial_reads_through_zarrs_are_exact() {
    // bytes → offset without compression: zarrs reads sub-regions through our partial decoder
    for (rel, ranges) in [
        ("zarr/tiff_u16_le.zarr", [3..17u64, 250..256]),
        ("zarr/offset0_empty_prefix.zarr", [1..9, 2..7]),
    ] {
        let array = open(&testdata().join(rel));
        let subset = ArraySubset::new_with_ranges(&ranges);
        let values: Vec<u16> = array.retrieve_array_subset(&subset).unwrap();
        let mut k = 0;
        for i0 in ranges[0].clone() {
            for i1 in ranges[1].clone() {
                assert_eq!(values[k], expected(i0, i1), "{rel} [{i0},{i1}]");
                k += 1;
            }
        }
    }
}

fn model(payload: &[u8], r: ByteRange) -> Option<Vec<u8>> {
    let len = payload.len() as u64;
    match r {
        ByteRange::FromStart(o, l) => {
            let end = match l {
                Some(l) => o.checked_add(l)?,
                None => len.max(o),
            };
            (end <= len).then(|| payload[o as usize..end as usize].to_vec())
        }
        // zarrs semantics: a suffix longer than the value is an invalid range (never clamped,
        // and above all never filled up with header bytes)
        ByteRange::Suffix(k) => (k <= len).then(|| payload[(len - k) as usize..].to_vec()),
    }
}

#[test]
fn partial_decoder_maps_ranges_like_the_model() {
    let payload: Vec<u8> = (0..20).collect();
    let codecs: Vec<Arc<dyn BytesToBytesCodecTraits>> = vec![
        Arc::new(ZarrsOffsetCodec::new(
            OffsetCodec::new(OffsetConfiguration::from_prefix(b"HEADER")).unwrap(),
        )),
        Arc::new(ZarrsPadCodec::new(
            OffsetCodec::new(PadConfiguration::from_padding(Location::End, b"TRAIL")).unwrap(),
        )),
    ];
    let opts = CodecOptions::default();
    for codec in codecs {
        let stored = codec
            .encode(Cow::Borrowed(&payload), &opts)
            .unwrap()
            .into_owned();
        let input: Arc<dyn BytesPartialDecoderTraits> =
            Arc::new(Cow::<'static, [u8]>::Owned(stored.clone()));
        let repr = BytesRepresentation::UnboundedSize;
        let decoder = codec.clone().partial_decoder(input, &repr, &opts).unwrap();
        // full decode is zero-copy on borrowed input
        let full = codec.decode(Cow::Borrowed(&stored), &repr, &opts).unwrap();
        assert!(matches!(full, Cow::Borrowed(_)));
        assert_eq!(&*full, &payload[..]);
        for o in 0..23u64 {
            let mut ranges = vec![ByteRange::FromStart(o, None), ByteRange::Suffix(o)];
            ranges.extend((0..23).map(|l| ByteRange::FromStart(o, Some(l))));
            for r in ranges {
                let got = decoder
                    .partial_decode(r, &opts)
                    .ok()
                    .flatten()
                    .map(|c| c.into_owned());
                assert_eq!(got, model(&payload, r), "{r:?}");
            }
        }
        assert_eq!(
            codec.encoded_representation(&BytesRepresentation::FixedSize(20)),
            BytesRepresentation::FixedSize(stored.len() as u64)
        );
        assert_eq!(
            codec.encoded_representation(&BytesRepresentation::FixedSize(u64::MAX)),
            BytesRepresentation::UnboundedSize
        );
        assert!(codec.partial_decoder_capability().partial_read);
    }
}

#[test]
fn plugin_configuration_round_trips_and_rejects_bad_entries() {
    use zarrs::array::codec::api::CodecMetadataOptions;
    use zarrs::plugin::ZarrVersion;
    for entry in [
        json!({"name": "offset", "configuration": {"offset": 8}}),
        json!({"name": "offset", "configuration": {"offset": 0, "prefix": ""}}),
        json!({"name": "pad", "configuration": {"location": "end", "nbytes": 4}}),
    ] {
        let meta: MetadataV3 = serde_json::from_value(entry.clone()).unwrap();
        let codec = zarrs::array::codec::api::Codec::from_metadata(&meta).unwrap();
        let zarrs::array::codec::api::Codec::BytesToBytes(c) = codec else {
            panic!("not bytes->bytes")
        };
        let cfg = c
            .configuration(ZarrVersion::V3, &CodecMetadataOptions::default())
            .unwrap();
        assert_eq!(serde_json::to_value(&cfg).unwrap(), entry["configuration"]);
    }
    // Our typed errors surface through zarrs' plugin error.
    for (entry, needle) in [
        (
            json!({"name": "offset", "configuration": {"offset": -1}}),
            "non-negative",
        ),
        (
            json!({"name": "offset", "configuration": {"offset": 1, "x": 0}}),
            "unknown key `x`",
        ),
        (
            json!({"name": "offset", "configuration": {"offset": 2, "prefix": "AA=="}}),
            "has 1 bytes",
        ),
        (
            json!({"name": "pad", "configuration": {"location": "middle", "nbytes": 1}}),
            "location",
        ),
    ] {
        let meta: MetadataV3 = serde_json::from_value(entry).unwrap();
        let err = zarrs::array::codec::api::Codec::from_metadata(&meta)
            .err()
            .unwrap()
            .to_string();
        assert!(err.contains(needle), "{err}");
    }
}

fn write_array(
    dir: &Path,
    metadata: Value,
    chunks: &[[u64; 2]],
    shape: [u64; 2],
    chunk: [u64; 2],
) -> Array<FilesystemStore> {
    let store = Arc::new(FilesystemStore::new(dir).unwrap());
    let meta: ArrayMetadata = serde_json::from_value(metadata).unwrap();
    let array = Array::new_with_metadata(store, "/", meta).unwrap();
    array.store_metadata().unwrap();
    for c in chunks {
        let mut data = Vec::with_capacity((chunk[0] * chunk[1]) as usize);
        for a in 0..chunk[0] {
            for b in 0..chunk[1] {
                let (i0, i1) = (c[0] * chunk[0] + a, c[1] * chunk[1] + b);
                data.push(if i0 < shape[0] && i1 < shape[1] {
                    expected(i0, i1)
                } else {
                    0
                });
            }
        }
        array.store_chunk(c, data).unwrap();
    }
    array
}

fn metadata(shape: [u64; 2], chunk: [u64; 2], codecs: Value) -> Value {
    json!({
        "zarr_format": 3, "node_type": "array", "shape": shape, "data_type": "uint16",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": chunk}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": 0, "codecs": codecs, "attributes": {}
    })
}

#[test]
fn writing_the_tiff_store_reproduces_the_reference_chunk_byte_for_byte() {
    let tmp = tempfile::tempdir().unwrap();
    let cfg = tiff_offset_configuration(256, 256, TiffSampleType::U16).unwrap();
    let codecs = json!([
        {"name": "bytes", "configuration": {"endian": "little"}},
        {"name": "offset", "configuration": Value::Object(cfg.to_json())},
    ]);
    write_array(
        tmp.path(),
        metadata([256, 256], [256, 256], codecs),
        &[[0, 0]],
        [256, 256],
        [256, 256],
    );
    let ours = std::fs::read(tmp.path().join("c/0/0")).unwrap();
    let reference = std::fs::read(testdata().join("zarr/tiff_u16_le.zarr/c/0/0")).unwrap();
    assert_eq!(ours, reference);
    // and the codec entry zarrs wrote back is the fixture's
    let ours_json: Value =
        serde_json::from_slice(&std::fs::read(tmp.path().join("zarr.json")).unwrap()).unwrap();
    let ref_json: Value = serde_json::from_slice(
        &std::fs::read(testdata().join("zarr/tiff_u16_le.zarr/zarr.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(ours_json["codecs"], ref_json["codecs"]);
}

#[test]
fn written_stores_read_back_and_carry_their_headers() {
    let shape = [130u64, 70];
    let chunk = [64u64, 64];
    let all: Vec<[u64; 2]> = (0..3).flat_map(|a| (0..2).map(move |b| [a, b])).collect();
    let cases = [
        (
            json!([
                {"name": "bytes", "configuration": {"endian": "little"}},
                {"name": "gzip", "configuration": {"level": 5}},
                {"name": "offset", "configuration": {"offset": 16, "prefix": "TVlfQ1VTVE9NX0hFQURFUg=="}},
            ]),
            Some(&b"MY_CUSTOM_HEADER"[..]),
            None,
        ),
        (
            json!([
                {"name": "bytes", "configuration": {"endian": "little"}},
                {"name": "gzip", "configuration": {"level": 5}},
                {"name": "pad", "configuration": {"location": "end", "nbytes": 4}},
            ]),
            None,
            Some(&[0u8, 0, 0, 0][..]),
        ),
        (
            json!([
                {"name": "transpose", "configuration": {"order": [1, 0]}},
                {"name": "bytes", "configuration": {"endian": "big"}},
                {"name": "zstd", "configuration": {"level": 3, "checksum": false}},
                {"name": "offset", "configuration": {"offset": 12, "prefix": "AAAAAgAAAEAAAABA"}},
            ]),
            Some(&[0u8, 0, 0, 2, 0, 0, 0, 0x40, 0, 0, 0, 0x40][..]),
            None,
        ),
    ];
    for (codecs, head, tail) in cases {
        let tmp = tempfile::tempdir().unwrap();
        let array = write_array(
            tmp.path(),
            metadata(shape, chunk, codecs.clone()),
            &all,
            shape,
            chunk,
        );
        let values: Vec<u16> = array.retrieve_array_subset(&array.subset_all()).unwrap();
        for i0 in 0..shape[0] {
            for i1 in 0..shape[1] {
                assert_eq!(values[(i0 * shape[1] + i1) as usize], expected(i0, i1));
            }
        }
        for c in &all {
            let raw = std::fs::read(tmp.path().join(format!("c/{}/{}", c[0], c[1]))).unwrap();
            if let Some(h) = head {
                assert_eq!(&raw[..h.len()], h, "{codecs}");
            }
            if let Some(t) = tail {
                assert_eq!(&raw[raw.len() - t.len()..], t, "{codecs}");
            }
        }
    }
}

#[test]
fn damaged_chunks_through_zarrs_are_ok_or_err_never_a_panic() {
    use zarrs::storage::store::MemoryStore;
    use zarrs::storage::{StoreKey, WritableStorageTraits};
    let stores = [
        ("zarr/gzip_custom_header.zarr", "c/2/1"),
        ("zarr/zstd_zero_prefix.zarr", "c/2/1"),
        ("zarr/pad_end_zero.zarr", "c/2/1"),
        ("zarr/pad_start_gzip.zarr", "c/0/1"),
        ("n5/tensorstore_zstd.n5/data", "2/1"),
        ("zarr/offset0_empty_prefix.zarr", "c/1/1"),
    ];
    let mut outcomes = [0usize; 2];
    for (rel, key) in stores {
        let dir = testdata().join(rel);
        let store = Arc::new(MemoryStore::new());
        let meta = std::fs::read(dir.join("zarr.json")).unwrap();
        store
            .set(&StoreKey::new("zarr.json").unwrap(), meta.into())
            .unwrap();
        let array = Array::open(store.clone(), "/").unwrap();
        let chunk = std::fs::read(dir.join(key)).unwrap();
        let indices: Vec<u64> = key
            .trim_start_matches("c/")
            .split('/')
            .map(|k| k.parse().unwrap())
            .collect();
        let chunk_key = StoreKey::new(key).unwrap();
        let try_bytes = |bytes: Vec<u8>| {
            store.set(&chunk_key, bytes.into()).unwrap();
            array.retrieve_chunk::<Vec<u16>>(&indices).is_ok()
        };
        assert!(try_bytes(chunk.clone()), "{rel}: the intact chunk reads");
        for len in 0..chunk.len() {
            outcomes[usize::from(try_bytes(chunk[..len].to_vec()))] += 1;
        }
        for bit in 0..chunk.len() * 8 {
            let mut flipped = chunk.clone();
            flipped[bit / 8] ^= 1 << (bit % 8);
            outcomes[usize::from(try_bytes(flipped))] += 1;
        }
    }
    // truncated compressed chunks fail; flips in skipped header bytes (or raw data) still read
    assert!(outcomes[0] > 0 && outcomes[1] > 0, "{outcomes:?}");
}
