//! Run-time registration of the zarrs `blosc` codec: it takes precedence over the
//! compile-time plugin (its options apply) until it is unregistered. A separate test binary:
//! the registration is process-wide.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use blosc_chunk::{Limits, ZarrsOptions};
use serde_json::json;
use zarrs::array::{Array, ArrayMetadata};
use zarrs::filesystem::FilesystemStore;

#[test]
fn runtime_registration_takes_precedence_until_unregistered() {
    let tmp = tempfile::tempdir().unwrap();
    let meta: ArrayMetadata = serde_json::from_value(json!({
        "zarr_format": 3, "node_type": "array", "shape": [64, 64], "data_type": "uint16",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [64, 64]}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": 0, "attributes": {},
        "codecs": [{"name": "bytes", "configuration": {"endian": "little"}},
                   {"name": "blosc", "configuration": {"cname": "lz4", "clevel": 5,
                    "shuffle": "shuffle", "typesize": 2, "blocksize": 0}}]
    }))
    .unwrap();
    let store = Arc::new(FilesystemStore::new(tmp.path()).unwrap());
    let array = Array::new_with_metadata(store.clone(), "/", meta).unwrap();
    array.store_metadata().unwrap();
    let data: Vec<u16> = (0..4096u16).map(|i| i / 3).collect();
    array
        .store_array_subset(&array.subset_all(), data.clone())
        .unwrap();

    // Limits below the chunk's 8 KiB: the run-time plugin's codec refuses it.
    let registration = blosc_chunk::register(
        ZarrsOptions::default().with_limits(Limits::default().with_max_nbytes(1024)),
    );
    let limited = Array::open(store.clone(), "/").unwrap();
    let err = limited
        .retrieve_array_subset::<Vec<u16>>(&limited.subset_all())
        .unwrap_err()
        .to_string();
    assert!(err.contains("limit"), "{err}");
    assert!(registration.unregister());

    let array = Array::open(store, "/").unwrap();
    let back: Vec<u16> = array.retrieve_array_subset(&array.subset_all()).unwrap();
    assert_eq!(back, data);
}
