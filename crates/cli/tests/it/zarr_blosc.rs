//! `scifmt zarr read` on Zarr v2 and v3 arrays with the `blosc` codec (blosc-chunk's, zarrs
//! has no C-Blosc here) and with sharding in webKNOSSOS' Zarr3 layout (`sharding_indexed`
//! with inner `transpose`, `bytes`, `zstd` and a `crc32c` index), sharded `blosc` too. The
//! arrays are written with zarrs in this test; the binary reads them whole and by region.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::path::Path;
use std::sync::Arc;

use common::{fails, ok, tmp};
use serde_json::{Value, json};
use zarrs::array::{Array, ArrayMetadata};
use zarrs::filesystem::FilesystemStore;

fn voxel(i: u64, j: u64, k: u64, l: u64) -> u64 {
    let noise = (j.wrapping_mul(2_654_435_761) ^ k.wrapping_mul(40_503) ^ l.wrapping_mul(97)) % 5;
    i * 11 + j * 3 + k * 5 + l * 7 + noise
}

/// Writes an array of `shape` holding `voxel` values (cast to u8 or u16) with zarrs.
fn write(dir: &Path, metadata: Value, shape: [u64; 4], u16s: bool) -> Vec<u8> {
    let _blosc = blosc_chunk::register(blosc_chunk::ZarrsOptions::default());
    let meta: ArrayMetadata = serde_json::from_value(metadata).unwrap();
    let store = Arc::new(FilesystemStore::new(dir).unwrap());
    let array = Array::new_with_metadata(store, "/", meta).unwrap();
    array.store_metadata().unwrap();
    let mut le = Vec::new();
    let (mut a, mut b) = (Vec::<u8>::new(), Vec::<u16>::new());
    for i in 0..shape[0] {
        for j in 0..shape[1] {
            for k in 0..shape[2] {
                for l in 0..shape[3] {
                    let v = voxel(i, j, k, l);
                    if u16s {
                        let v = u16::try_from(v % 65_536).unwrap();
                        b.push(v);
                        le.extend(v.to_le_bytes());
                    } else {
                        let v = u8::try_from(v % 256).unwrap();
                        a.push(v);
                        le.push(v);
                    }
                }
            }
        }
    }
    if u16s {
        array.store_array_subset(&array.subset_all(), b).unwrap();
    } else {
        array.store_array_subset(&array.subset_all(), a).unwrap();
    }
    le
}

/// Reads the array whole and a region through the binary and compares.
fn check(dir: &Path, all: &[u8], shape: [u64; 4], item: usize) {
    let out = dir.parent().unwrap().join("out.raw");
    ok(&[
        "zarr",
        "read",
        dir.to_str().unwrap(),
        out.to_str().unwrap(),
        "--overwrite",
    ]);
    assert!(
        std::fs::read(&out).unwrap() == all,
        "{}: whole",
        dir.display()
    );
    let r = [0..1, 5..37, 30..33, 17..50];
    ok(&[
        "zarr",
        "read",
        dir.to_str().unwrap(),
        out.to_str().unwrap(),
        "--overwrite",
        "--region",
        "0:1,5:37,30:33,17:50",
    ]);
    let mut want = Vec::new();
    for i in r[0].clone() {
        for j in r[1].clone() {
            for k in r[2].clone() {
                for l in r[3].clone() {
                    let at = usize::try_from(((i * shape[1] + j) * shape[2] + k) * shape[3] + l)
                        .unwrap()
                        * item;
                    want.extend_from_slice(&all[at..at + item]);
                }
            }
        }
    }
    assert!(
        std::fs::read(&out).unwrap() == want,
        "{}: region",
        dir.display()
    );
}

fn v3(shape: [u64; 4], chunk: [u64; 4], dtype: &str, codecs: &Value) -> Value {
    json!({
        "zarr_format": 3, "node_type": "array", "shape": shape, "data_type": dtype,
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": chunk}},
        "chunk_key_encoding": {"name": "default"},
        "fill_value": 0, "codecs": codecs, "attributes": {},
        "dimension_names": ["c", "x", "y", "z"]
    })
}

/// webKNOSSOS' Zarr3 layout: one shard per chunk-grid cell, 32³ inner chunks.
fn webknossos_codecs(inner: &Value, endian: bool) -> Value {
    let bytes = if endian {
        json!({"name": "bytes", "configuration": {"endian": "little"}})
    } else {
        json!({"name": "bytes"})
    };
    json!([{"name": "sharding_indexed", "configuration": {
        "chunk_shape": [1, 32, 32, 32],
        "codecs": [{"name": "transpose", "configuration": {"order": [3, 2, 1, 0]}}, bytes, inner],
        "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}},
                         {"name": "crc32c"}],
        "index_location": "end"}}])
}

const SHAPE: [u64; 4] = [1, 64, 64, 64];
/// Smaller arrays for the unsharded cases (the region read stays inside).
const SMALL: [u64; 4] = [1, 40, 40, 56];

#[test]
fn webknossos_zarr3_sharded_zstd_and_blosc() {
    let t = tmp();
    let zstd = json!({"name": "zstd", "configuration": {"level": 5, "checksum": true}});
    let dir = t.path().join("wk_zstd");
    let all = write(
        &dir,
        v3(SHAPE, SHAPE, "uint8", &webknossos_codecs(&zstd, false)),
        SHAPE,
        false,
    );
    check(&dir, &all, SHAPE, 1);

    let blosc = json!({"name": "blosc", "configuration": {
        "cname": "lz4", "clevel": 5, "shuffle": "shuffle", "typesize": 2, "blocksize": 0}});
    let dir = t.path().join("wk_blosc");
    let all = write(
        &dir,
        v3(
            SHAPE,
            [1, 64, 32, 64],
            "uint16",
            &webknossos_codecs(&blosc, true),
        ),
        SHAPE,
        true,
    );
    check(&dir, &all, SHAPE, 2);
}

#[test]
fn v3_and_v2_blosc_arrays() {
    let t = tmp();
    for (cname, shuffle) in [
        ("lz4", "shuffle"),
        ("zstd", "bitshuffle"),
        ("blosclz", "noshuffle"),
    ] {
        let codecs = json!([{"name": "bytes", "configuration": {"endian": "little"}},
            {"name": "blosc", "configuration": {
                "cname": cname, "clevel": 5, "shuffle": shuffle, "typesize": 2,
                "blocksize": 0}}]);
        let dir = t.path().join(format!("v3_{cname}"));
        let all = write(
            &dir,
            v3(SMALL, [1, 32, 24, 40], "uint16", &codecs),
            SMALL,
            true,
        );
        check(&dir, &all, SMALL, 2);
    }
    for (cname, shuffle) in [("lz4", 1), ("zstd", -1), ("zlib", 2), ("lz4hc", 0)] {
        let dir = t.path().join(format!("v2_{cname}"));
        let meta = json!({
            "zarr_format": 2, "shape": SMALL, "chunks": [1, 32, 24, 40], "dtype": "<u2",
            "compressor": {"id": "blosc", "cname": cname, "clevel": 5, "shuffle": shuffle,
                           "blocksize": 0},
            "fill_value": 0, "order": "C", "filters": null, "dimension_separator": "/"
        });
        let all = write(&dir, meta, SMALL, true);
        assert!(dir.join(".zarray").is_file());
        check(&dir, &all, SMALL, 2);
    }
}

#[test]
fn a_corrupt_blosc_chunk_fails_cleanly() {
    let t = tmp();
    let codecs = json!([{"name": "bytes", "configuration": {"endian": "little"}},
        {"name": "blosc", "configuration": {
            "cname": "lz4", "clevel": 5, "shuffle": "shuffle", "typesize": 2, "blocksize": 0}}]);
    let dir = t.path().join("bad");
    write(
        &dir,
        v3(SHAPE, [1, 32, 64, 64], "uint16", &codecs),
        SHAPE,
        true,
    );
    let chunk = dir.join("c/0/1/0/0");
    let mut bytes = std::fs::read(&chunk).unwrap();
    let n = bytes.len();
    bytes.truncate(n / 2);
    std::fs::write(&chunk, bytes).unwrap();
    let out = t.path().join("out.raw");
    fails(
        &["zarr", "read", dir.to_str().unwrap(), out.to_str().unwrap()],
        2,
        "blosc",
    );
}
