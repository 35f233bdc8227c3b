//! The zarrs `blosc` codec (feature `zarrs`): Zarr v3 and v2 arrays through zarrs on a
//! filesystem store, sharded and not, every cname and shuffle; chunks as `compress` writes the
//! Blosc1 format; partial decoding (random regions equal the whole array's bytes, a small
//! range reads a small part of the chunk); hostile chunks give errors.
//!
//! zarrs is built here without its own `blosc` feature, so every `blosc` chunk goes through
//! this crate's compile-time plugin.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::unwrap_in_result
)]

use std::borrow::Cow;
use std::path::Path;
use std::sync::{Arc, Mutex};

use blosc_chunk::{BloscConfig, BloscShuffle, Codec, ZarrsBloscCodec, ZarrsOptions};
use serde_json::{Value, json};
use zarrs::array::codec::api::{
    ArrayBytesRaw, BytesPartialDecoderTraits, BytesRepresentation, BytesToBytesCodecTraits,
    CodecError, CodecOptions,
};
use zarrs::array::{Array, ArrayMetadata, ArraySubset};
use zarrs::filesystem::FilesystemStore;
use zarrs::storage::StorageError;
use zarrs::storage::byte_range::{ByteRange, ByteRangeIterator};

const CNAMES: [&str; 5] = ["blosclz", "lz4", "lz4hc", "zlib", "zstd"];
const SHUFFLES: [&str; 3] = ["noshuffle", "shuffle", "bitshuffle"];
const SHAPE: [u64; 3] = [40, 50, 30];

/// Compressible but not constant: smooth ramps plus a little hashed noise.
fn value(i: u64, j: u64, k: u64) -> u16 {
    let noise = (i.wrapping_mul(2_654_435_761) ^ j.wrapping_mul(40_503) ^ k.wrapping_mul(97)) % 5;
    u16::try_from((i * 3 + j * 5 + k * 7 + noise) % 65_536).unwrap()
}

fn data(shape: [u64; 3]) -> Vec<u16> {
    let mut v = Vec::new();
    for i in 0..shape[0] {
        for j in 0..shape[1] {
            for k in 0..shape[2] {
                v.push(value(i, j, k));
            }
        }
    }
    v
}

fn v3_metadata(shape: [u64; 3], chunk: [u64; 3], codecs: &Value) -> Value {
    json!({
        "zarr_format": 3, "node_type": "array", "shape": shape, "data_type": "uint16",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": chunk}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": 0, "codecs": codecs, "attributes": {}
    })
}

fn blosc(cname: &str, shuffle: &str, blocksize: u64) -> Value {
    json!({"name": "blosc", "configuration": {
        "cname": cname, "clevel": 5, "shuffle": shuffle, "typesize": 2, "blocksize": blocksize}})
}

fn create(dir: &Path, metadata: Value) -> Array<FilesystemStore> {
    let store = Arc::new(FilesystemStore::new(dir).unwrap());
    let meta: ArrayMetadata = serde_json::from_value(metadata).unwrap();
    let array = Array::new_with_metadata(store, "/", meta).unwrap();
    array.store_metadata().unwrap();
    array
}

fn slice(all: &[u16], shape: [u64; 3], r: &[std::ops::Range<u64>; 3]) -> Vec<u16> {
    let mut v = Vec::new();
    for i in r[0].clone() {
        for j in r[1].clone() {
            for k in r[2].clone() {
                v.push(all[usize::try_from((i * shape[1] + j) * shape[2] + k).unwrap()]);
            }
        }
    }
    v
}

/// Deterministic pseudo-random regions inside `shape`.
fn regions(shape: [u64; 3], n: usize) -> Vec<[std::ops::Range<u64>; 3]> {
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = |m: u64| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x % m
    };
    (0..n)
        .map(|_| {
            let mut dim = |d: usize| {
                let a = next(shape[d]);
                let b = a + 1 + next(shape[d] - a);
                a..b
            };
            [dim(0), dim(1), dim(2)]
        })
        .collect()
}

fn check_regions(array: &Array<FilesystemStore>, all: &[u16]) {
    for r in regions(SHAPE, 12) {
        let got: Vec<u16> = array
            .retrieve_array_subset(&ArraySubset::new_with_ranges(&r))
            .unwrap();
        assert_eq!(got, slice(all, SHAPE, &r), "{r:?}");
    }
}

fn le_bytes(v: &[u16]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

#[test]
fn v3_arrays_round_trip_with_every_cname_and_shuffle() {
    let all = data(SHAPE);
    for cname in CNAMES {
        for shuffle in SHUFFLES {
            let tmp = tempfile::tempdir().unwrap();
            let codecs = json!([{"name": "bytes", "configuration": {"endian": "little"}},
                blosc(cname, shuffle, 0)]);
            let array = create(tmp.path(), v3_metadata(SHAPE, [20, 25, 30], &codecs));
            array
                .store_array_subset(&array.subset_all(), all.clone())
                .unwrap();
            let back: Vec<u16> = array.retrieve_array_subset(&array.subset_all()).unwrap();
            assert_eq!(back, all, "{cname} {shuffle}");
            check_regions(&array, &all);
            // The chunk file is the Blosc1 chunk `compress` writes for these settings.
            let raw = std::fs::read(tmp.path().join("c/1/0/0")).unwrap();
            assert_eq!(raw[0], 2, "Blosc1 format version");
            let config = BloscConfig::from_v3(
                &serde_json::from_value(codecs[1]["configuration"].clone()).unwrap(),
            )
            .unwrap();
            let chunk: Vec<u16> = slice(&all, SHAPE, &[20..40, 0..25, 0..30]);
            let want = blosc_chunk::compress(&le_bytes(&chunk), &config.cparams(1)).unwrap();
            assert!(raw == want, "{cname} {shuffle}: chunk bytes");
            // The stored metadata keeps the configuration.
            let stored: Value =
                serde_json::from_slice(&std::fs::read(tmp.path().join("zarr.json")).unwrap())
                    .unwrap();
            assert_eq!(stored["codecs"][1], codecs[1]);
        }
    }
}

#[test]
fn sharded_v3_arrays_round_trip_and_read_regions() {
    let all = data(SHAPE);
    for (cname, shuffle) in [
        ("lz4", "shuffle"),
        ("zstd", "bitshuffle"),
        ("blosclz", "noshuffle"),
    ] {
        let tmp = tempfile::tempdir().unwrap();
        let codecs = json!([{"name": "sharding_indexed", "configuration": {
            "chunk_shape": [10, 25, 15],
            "codecs": [{"name": "transpose", "configuration": {"order": [2, 1, 0]}},
                       {"name": "bytes", "configuration": {"endian": "little"}},
                       blosc(cname, shuffle, 256)],
            "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}},
                             {"name": "crc32c"}],
            "index_location": "end"}}]);
        let array = create(tmp.path(), v3_metadata(SHAPE, [20, 50, 30], &codecs));
        array
            .store_array_subset(&array.subset_all(), all.clone())
            .unwrap();
        let back: Vec<u16> = array.retrieve_array_subset(&array.subset_all()).unwrap();
        assert_eq!(back, all, "{cname} {shuffle}");
        check_regions(&array, &all);
    }
}

fn v2_metadata(shuffle: i64, cname: &str) -> Value {
    json!({
        "zarr_format": 2, "shape": SHAPE, "chunks": [20, 25, 30], "dtype": "<u2",
        "compressor": {"id": "blosc", "cname": cname, "clevel": 5, "shuffle": shuffle,
                       "blocksize": 0},
        "fill_value": 0, "order": "C", "filters": null, "dimension_separator": "."
    })
}

#[test]
fn v2_arrays_round_trip_with_every_numcodecs_shuffle() {
    let all = data(SHAPE);
    for (cname, shuffle) in [
        ("blosclz", 0),
        ("lz4", 1),
        ("zstd", 2),
        ("lz4hc", -1),
        ("zlib", 1),
    ] {
        let tmp = tempfile::tempdir().unwrap();
        let array = create(tmp.path(), v2_metadata(shuffle, cname));
        array
            .store_array_subset(&array.subset_all(), all.clone())
            .unwrap();
        let back: Vec<u16> = array.retrieve_array_subset(&array.subset_all()).unwrap();
        assert_eq!(back, all, "{cname} {shuffle}");
        check_regions(&array, &all);
        let stored: Value =
            serde_json::from_slice(&std::fs::read(tmp.path().join(".zarray")).unwrap()).unwrap();
        assert_eq!(stored["compressor"]["shuffle"], json!(shuffle));
        assert_eq!(stored["compressor"]["id"], json!("blosc"));
    }
}

#[test]
fn v2_chunks_as_numcodecs_writes_them_read_through_zarrs() {
    // numcodecs' Blosc compresses with the array's item size as the type size (C-Blosc 1.21;
    // `compress` with `Format::Blosc1` writes the same bytes, see tests/blosc1_*.rs).
    let all = data(SHAPE);
    for (shuffle, filter) in [
        (1, blosc_chunk::Filter::Shuffle),
        (-1, blosc_chunk::Filter::Shuffle),
        (2, blosc_chunk::Filter::BitShuffle),
        (0, blosc_chunk::Filter::NoFilter),
    ] {
        let tmp = tempfile::tempdir().unwrap();
        let meta = v2_metadata(shuffle, "lz4");
        std::fs::write(tmp.path().join(".zarray"), meta.to_string()).unwrap();
        for (c0, c1) in [(0u64, 0u64), (0, 1), (1, 0), (1, 1)] {
            let chunk = slice(
                &all,
                SHAPE,
                &[c0 * 20..c0 * 20 + 20, c1 * 25..c1 * 25 + 25, 0..30],
            );
            let bytes = blosc_chunk::compress(
                &le_bytes(&chunk),
                &blosc_chunk::CParams::blosc1(Codec::Lz4, 5, 2, filter),
            )
            .unwrap();
            std::fs::write(tmp.path().join(format!("{c0}.{c1}.0")), bytes).unwrap();
        }
        let store = Arc::new(FilesystemStore::new(tmp.path()).unwrap());
        let array = Array::open(store, "/").unwrap();
        let back: Vec<u16> = array.retrieve_array_subset(&array.subset_all()).unwrap();
        assert_eq!(back, all, "shuffle {shuffle}");
        check_regions(&array, &all);
    }
}

/// A byte source that records the ranges asked of it.
struct Counting {
    bytes: Vec<u8>,
    asked: Mutex<Vec<(u64, u64)>>,
}

impl BytesPartialDecoderTraits for Counting {
    fn exists(&self) -> Result<bool, StorageError> {
        Ok(true)
    }

    fn size_held(&self) -> usize {
        0
    }

    fn partial_decode_many(
        &self,
        decoded_regions: ByteRangeIterator<'_>,
        _options: &CodecOptions,
    ) -> Result<Option<Vec<ArrayBytesRaw<'_>>>, CodecError> {
        let n = self.bytes.len() as u64;
        let mut out = Vec::new();
        for r in decoded_regions {
            let (a, b) = (r.start(n), r.end(n));
            if b > n || a > b {
                return Err(CodecError::Other("out of bounds".into()));
            }
            self.asked.lock().unwrap().push((a, b));
            out.push(Cow::Borrowed(
                &self.bytes[usize::try_from(a).unwrap()..usize::try_from(b).unwrap()],
            ));
        }
        Ok(Some(out))
    }

    fn supports_partial_decode(&self) -> bool {
        true
    }
}

fn codec(cname: Codec, shuffle: BloscShuffle, blocksize: usize) -> Arc<ZarrsBloscCodec> {
    Arc::new(ZarrsBloscCodec::new(
        BloscConfig::new(cname, 5, shuffle, Some(2), blocksize).unwrap(),
        ZarrsOptions::default(),
    ))
}

#[test]
fn partial_decoder_reads_only_the_blocks_it_needs() {
    // 2 MiB: C-Blosc 1 enlarges split blocks to at least 64 KiB, so 32 blocks or more.
    let raw = le_bytes(&data([128, 128, 64]));
    let options = CodecOptions::default();
    for (c, s) in [
        (Codec::Lz4, BloscShuffle::Shuffle),
        (Codec::Zstd, BloscShuffle::BitShuffle),
        (Codec::BloscLz, BloscShuffle::NoShuffle),
    ] {
        let codec = codec(c, s, 8192);
        let encoded = codec
            .encode(Cow::Borrowed(&raw), &options)
            .unwrap()
            .into_owned();
        let input = Arc::new(Counting {
            bytes: encoded.clone(),
            asked: Mutex::new(Vec::new()),
        });
        let rep = BytesRepresentation::FixedSize(raw.len() as u64);
        let dec = Arc::clone(&codec)
            .partial_decoder(input.clone(), &rep, &options)
            .unwrap();
        let ranges = [(100_000u64, 100_040u64), (1_300_001, 1_300_002), (0, 7)];
        let got = dec
            .partial_decode_many(
                Box::new(
                    ranges
                        .iter()
                        .map(|&(a, b)| ByteRange::FromStart(a, Some(b - a))),
                ),
                &options,
            )
            .unwrap()
            .unwrap();
        for ((a, b), g) in ranges.iter().zip(&got) {
            assert_eq!(
                &g[..],
                &raw[usize::try_from(*a).unwrap()..usize::try_from(*b).unwrap()]
            );
        }
        let read: u64 = input.asked.lock().unwrap().iter().map(|(a, b)| b - a).sum();
        assert!(
            read * 8 < encoded.len() as u64,
            "{c:?}: read {read} of {}",
            encoded.len()
        );
        // Suffix ranges and the whole chunk decode too.
        let got = dec
            .partial_decode_many(
                Box::new([ByteRange::Suffix(10), ByteRange::FromStart(0, None)].into_iter()),
                &options,
            )
            .unwrap()
            .unwrap();
        assert_eq!(&got[0][..], &raw[raw.len() - 10..]);
        assert_eq!(&got[1][..], &raw[..]);
    }
}

#[test]
fn hostile_chunks_are_errors() {
    let raw = le_bytes(&data([16, 16, 16]));
    let options = CodecOptions::default();
    let codec = codec(Codec::Lz4, BloscShuffle::Shuffle, 1024);
    let good = codec
        .encode(Cow::Borrowed(&raw), &options)
        .unwrap()
        .into_owned();
    let rep = BytesRepresentation::FixedSize(raw.len() as u64);
    let mut cases: Vec<Vec<u8>> = (0..good.len().min(80))
        .map(|n| good[..n].to_vec())
        .collect();
    for pos in 0..good.len().min(64) {
        let mut bad = good.clone();
        bad[pos] ^= 0xa5;
        cases.push(bad);
    }
    for bad in cases {
        let _ = codec.decode(Cow::Borrowed(&bad), &rep, &options);
        let input = Arc::new(Counting {
            bytes: bad,
            asked: Mutex::new(Vec::new()),
        });
        let dec = Arc::clone(&codec)
            .partial_decoder(input, &rep, &options)
            .unwrap();
        let _ = dec.partial_decode_many(
            Box::new([ByteRange::FromStart(10, Some(100))].into_iter()),
            &options,
        );
    }
    // A range beyond the chunk and a chunk above the limits are errors.
    let dec = Arc::clone(&codec)
        .partial_decoder(
            Arc::new(Counting {
                bytes: good.clone(),
                asked: Mutex::new(Vec::new()),
            }),
            &rep,
            &options,
        )
        .unwrap();
    let beyond = ByteRange::FromStart(raw.len() as u64 - 2, Some(4));
    assert!(
        dec.partial_decode_many(Box::new([beyond].into_iter()), &options)
            .is_err()
    );
    let small = Arc::new(ZarrsBloscCodec::new(
        *codec.config(),
        ZarrsOptions::default().with_limits(blosc_chunk::Limits::default().with_max_nbytes(1000)),
    ));
    let err = small
        .decode(Cow::Borrowed(&good), &rep, &options)
        .unwrap_err()
        .to_string();
    assert!(err.contains("limit"), "{err}");
}

#[test]
fn configurations_parse_and_refuse() {
    let v3 = |v: Value| BloscConfig::from_v3(&serde_json::from_value(v).unwrap());
    let c = v3(
        json!({"cname": "zstd", "clevel": 3, "shuffle": "bitshuffle", "typesize": 4,
                      "blocksize": 0}),
    )
    .unwrap();
    assert_eq!(
        (c.codec(), c.clevel(), c.shuffle()),
        (Codec::Zstd, 3, BloscShuffle::BitShuffle)
    );
    assert_eq!(c.typesize(), Some(4));
    assert!(
        v3(json!({"cname": "snappy", "clevel": 3, "shuffle": "noshuffle", "blocksize": 0}))
            .is_err()
    );
    assert!(
        v3(json!({"cname": "lz4", "clevel": 12, "shuffle": "noshuffle", "blocksize": 0})).is_err()
    );
    assert!(v3(json!({"cname": "lz4", "clevel": 1, "shuffle": "shuffle", "typesize": 0, "blocksize": 0})).is_err());
    assert!(v3(json!({"cname": "lz4"})).is_err());
    let v2 =
        |v: Value, itemsize| BloscConfig::from_v2(&serde_json::from_value(v).unwrap(), itemsize);
    let auto = json!({"cname": "lz4", "clevel": 5, "shuffle": -1, "blocksize": 0});
    assert_eq!(
        v2(auto.clone(), Some(1)).unwrap().shuffle(),
        BloscShuffle::BitShuffle
    );
    assert_eq!(
        v2(auto.clone(), Some(4)).unwrap().shuffle(),
        BloscShuffle::Shuffle
    );
    assert_eq!(v2(auto, Some(4)).unwrap().typesize(), Some(4));
    assert!(v2(json!({"cname": "lz4", "clevel": 5, "shuffle": 7}), None).is_err());
}
