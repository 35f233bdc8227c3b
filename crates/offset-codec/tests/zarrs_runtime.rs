//! Runtime registration with zarrs (`offset_codec::register`). Runtime plugins are global and
//! take precedence over the `inventory` ones, so everything here runs in one test, in order,
//! in its own test binary.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers outside #[test] fns
#![allow(clippy::cast_possible_truncation)] // small test sizes

use std::path::{Path, PathBuf};
use std::sync::Arc;

use offset_codec::{TiffSampleType, ZarrsOptions, register, tiff_dynamic_prefix, tiff_prefix_len};
use serde_json::json;
use zarrs::array::{Array, ArrayMetadata};
use zarrs::filesystem::FilesystemStore;

fn testdata() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/offset")
}

fn open(dir: &Path) -> Array<FilesystemStore> {
    Array::open(Arc::new(FilesystemStore::new(dir).unwrap()), "/").unwrap()
}

fn expected(i0: u64, i1: u64) -> u16 {
    u16::try_from((i0 << 8) | i1).unwrap()
}

#[test]
fn runtime_registrations() {
    strict_mode_names_the_truncated_n5_header();
    dynamic_tiff_prefix_makes_deflate_tiffs();
}

fn strict_mode_names_the_truncated_n5_header() {
    let dir = testdata().join("n5/z5py_gzip.n5/data");
    let lax = open(&dir)
        .retrieve_chunk::<Vec<u16>>(&[2, 1])
        .unwrap_err()
        .to_string();
    assert!(!lax.contains("strict"), "{lax}");

    let registration = register(ZarrsOptions::default().with_strict(true));
    let array = open(&dir);
    // padded interior blocks pass the check
    let ok: Vec<u16> = array.retrieve_chunk(&[1, 0]).unwrap();
    assert_eq!(ok[0], expected(64, 0));
    // block 2/1 has header dims 2,6: strict mode names the truncated N5 edge block
    let err = array
        .retrieve_chunk::<Vec<u16>>(&[2, 1])
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("n5 block header dims [2, 6] differ from blockSize [64, 64]")
            && err.contains("n5_default"),
        "{err}"
    );
    // every good fixture store still reads under strict mode (their headers are exact)
    for rel in [
        "zarr/zstd_zero_prefix.zarr",
        "zarr/pad_end_zero.zarr",
        "n5/zarr2_gzip.n5/data",
    ] {
        let a = open(&testdata().join(rel));
        let v: Vec<u16> = a.retrieve_array_subset(&a.subset_all()).unwrap();
        assert_eq!(v[71], expected(1, 1), "{rel}");
    }
    assert!(registration.unregister());
    let again = open(&dir)
        .retrieve_chunk::<Vec<u16>>(&[2, 1])
        .unwrap_err()
        .to_string();
    assert_eq!(again, lax, "back to the inventory registration");
}

fn dynamic_tiff_prefix_makes_deflate_tiffs() {
    let registration = register(
        ZarrsOptions::default().with_dynamic_prefix(tiff_dynamic_prefix(
            64,
            32,
            TiffSampleType::U16,
        )),
    );
    let tmp = tempfile::tempdir().unwrap();
    let n = tiff_prefix_len(TiffSampleType::U16);
    let meta: ArrayMetadata = serde_json::from_value(json!({
        "zarr_format": 3, "node_type": "array", "shape": [64, 128], "data_type": "uint16",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [32, 64]}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": 0,
        "codecs": [
            {"name": "bytes", "configuration": {"endian": "little"}},
            {"name": "numcodecs.zlib", "configuration": {"level": 6}},
            {"name": "offset", "configuration": {"offset": n}},
        ],
        "attributes": {}
    }))
    .unwrap();
    let store = Arc::new(FilesystemStore::new(tmp.path()).unwrap());
    let array = Array::new_with_metadata(store, "/", meta).unwrap();
    array.store_metadata().unwrap();
    let data: Vec<u16> = (0..64u64)
        .flat_map(|i0| (0..128u64).map(move |i1| expected(i0, i1)))
        .collect();
    array
        .store_array_subset(&array.subset_all(), data.clone())
        .unwrap();
    let back: Vec<u16> = array.retrieve_array_subset(&array.subset_all()).unwrap();
    assert_eq!(back, data);
    // each chunk file is a Deflate TIFF of its 32 x 64 tile
    for (c0, c1) in [(0u64, 0u64), (0, 1), (1, 0), (1, 1)] {
        let raw = std::fs::read(tmp.path().join(format!("c/{c0}/{c1}"))).unwrap();
        assert_eq!(&raw[0x36..0x38], &[8, 0], "Compression = 8");
        let count = u32::from_le_bytes(raw[0x66..0x6a].try_into().unwrap());
        assert_eq!(
            count as usize,
            raw.len() - n,
            "StripByteCounts = zlib stream length"
        );
        let mut dec = tiff::decoder::Decoder::new(std::io::Cursor::new(&raw)).unwrap();
        assert_eq!(dec.dimensions().unwrap(), (64, 32));
        let tiff::decoder::DecodingResult::U16(tile) = dec.read_image().unwrap() else {
            panic!("not u16")
        };
        for (k, v) in tile.iter().enumerate() {
            let (a, b) = (k as u64 / 64, k as u64 % 64);
            assert_eq!(*v, expected(c0 * 32 + a, c1 * 64 + b));
        }
    }
    assert!(registration.unregister());
}
