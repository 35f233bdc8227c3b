//! Zarr stores on S3 through the libraries: every Zarr v3 fixture that uses the `offset` /
//! `pad` codecs (and the padded N5 datasets read through them), uploaded to the in-process S3
//! server and read with zarrs' async API over `zarrs_object_store`, with offset-codec's
//! plug-in registered, gives the bytes zarrs reads from the local directory: the whole array
//! and a region in its interior.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::PathBuf;
use std::sync::Arc;

use s3_testserver::TestServer;
use zarrs::array::{Array, ArrayBytes, ArraySubset};
use zarrs::filesystem::FilesystemStore;
use zarrs_object_store::AsyncObjectStore;

fn testdata() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../testdata")
}

/// Local reads: the whole array and a region in its interior (as far as the shape allows).
fn local_reads(dir: &std::path::Path) -> (Vec<u8>, Vec<u8>, ArraySubset) {
    let storage = Arc::new(FilesystemStore::new(dir).unwrap());
    let array = Array::open(storage, "/").unwrap();
    let all: ArrayBytes<'static> = array.retrieve_array_subset(&array.subset_all()).unwrap();
    let region: Vec<std::ops::Range<u64>> = array
        .shape()
        .iter()
        .map(|&n| (n / 3)..(n - n / 4).max(n / 3 + 1).min(n))
        .collect();
    let region = ArraySubset::new_with_ranges(&region);
    let part: ArrayBytes<'static> = array.retrieve_array_subset(&region).unwrap();
    (
        all.into_fixed().unwrap().into_owned(),
        part.into_fixed().unwrap().into_owned(),
        region,
    )
}

#[test]
fn every_zarr_fixture_reads_remotely_like_locally() {
    let _registration = offset_codec::register(offset_codec::ZarrsOptions::default());
    let server = TestServer::start().unwrap();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    for rel in testkit::ZARR_STORES {
        let dir = testdata().join(rel);
        let (want_all, want_part, region) = local_reads(&dir);
        assert!(!want_all.is_empty(), "{rel}");
        let prefix = rel.replace('/', "_");
        assert!(server.upload_dir(&dir, &prefix).unwrap() > 0, "{rel}");
        let rooted = object_store::prefix::PrefixStore::new(server.store(), prefix.as_str());
        let storage = Arc::new(AsyncObjectStore::new(rooted));
        let (all, part) = runtime.block_on(async {
            let array = Array::async_open(storage, "/").await.unwrap();
            let all: ArrayBytes<'static> = array
                .async_retrieve_array_subset(&array.subset_all())
                .await
                .unwrap();
            let part: ArrayBytes<'static> =
                array.async_retrieve_array_subset(&region).await.unwrap();
            (all, part)
        });
        assert!(
            all.into_fixed().unwrap().as_ref() == want_all.as_slice(),
            "{rel}: whole array"
        );
        assert!(
            part.into_fixed().unwrap().as_ref() == want_part.as_slice(),
            "{rel}: region"
        );
    }
}
