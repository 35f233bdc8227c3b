//! The zarrs `blosc` codec over S3 (the in-process test server, zarrs' sync API over
//! `zarrs_object_store` and over `scifmt_io::ZarrsStore`): a small region of a large chunk
//! fetches the header, the block starts and a few blocks — a small part of the chunk — and
//! gives the bytes the whole-array read gives.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use s3_testserver::TestServer;
use serde_json::json;
use zarrs::array::{Array, ArrayMetadata, ArraySubset};
use zarrs::filesystem::FilesystemStore;
use zarrs::storage::ReadableStorageTraits;
use zarrs::storage::storage_adapter::async_to_sync::{
    AsyncToSyncBlockOn, AsyncToSyncStorageAdapter,
};
use zarrs_object_store::AsyncObjectStore;

struct BlockOn(tokio::runtime::Handle);

impl AsyncToSyncBlockOn for BlockOn {
    fn block_on<F: core::future::Future>(&self, future: F) -> F::Output {
        self.0.block_on(future)
    }
}

const N: u64 = 128;

fn voxel(i: u64, j: u64, k: u64) -> u8 {
    let noise = (i.wrapping_mul(2_654_435_761) ^ j.wrapping_mul(40_503) ^ k.wrapping_mul(97)) % 7;
    u8::try_from((i + 2 * j + 3 * k + noise) % 256).unwrap()
}

/// A new N³ uint8 array of one chunk in `dir` (metadata stored), with `blosc` as the blosc
/// codec's configuration.
fn local_array(
    dir: &std::path::Path,
    fill_value: u8,
    blosc: serde_json::Value,
) -> Array<FilesystemStore> {
    let meta: ArrayMetadata = serde_json::from_value(json!({
        "zarr_format": 3, "node_type": "array", "shape": [N, N, N], "data_type": "uint8",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [N, N, N]}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": fill_value, "attributes": {},
        "codecs": [{"name": "bytes"}, {"name": "blosc", "configuration": blosc}]
    }))
    .unwrap();
    let array =
        Array::new_with_metadata(Arc::new(FilesystemStore::new(dir).unwrap()), "/", meta).unwrap();
    array.store_metadata().unwrap();
    array
}

/// The N³ test volume, `voxel(i, j, k)` in C order.
fn volume() -> Vec<u8> {
    (0..N)
        .flat_map(|i| (0..N).flat_map(move |j| (0..N).map(move |k| voxel(i, j, k))))
        .collect()
}

#[test]
fn a_small_region_fetches_a_small_part_of_the_chunk() {
    let _registration = blosc_chunk::register(blosc_chunk::ZarrsOptions::default());
    let tmp = tempfile::tempdir().unwrap();
    let local = local_array(
        tmp.path(),
        0,
        json!({"cname": "zstd", "clevel": 5, "shuffle": "bitshuffle", "typesize": 1, "blocksize": 4096}),
    );
    let all = volume();
    local
        .store_array_subset(&local.subset_all(), all.clone())
        .unwrap();
    let chunk_len = std::fs::metadata(tmp.path().join("c/0/0/0")).unwrap().len();

    let server = TestServer::start().unwrap();
    assert!(server.upload_dir(tmp.path(), "arr").unwrap() > 0);
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let rooted = object_store::prefix::PrefixStore::new(server.store(), "arr");
    let storage: Arc<dyn ReadableStorageTraits> = Arc::new(AsyncToSyncStorageAdapter::new(
        Arc::new(AsyncObjectStore::new(rooted)),
        BlockOn(runtime.handle().clone()),
    ));
    let array = Array::open(storage, "/").unwrap();

    // A 4 x 16 x 16 region: 4 of the 128 planes, a quarter-block of rows in each.
    server.reset_stats();
    let r = [60..64, 64..80, 32..48];
    let got: Vec<u8> = array
        .retrieve_array_subset(&ArraySubset::new_with_ranges(&r))
        .unwrap();
    let want: Vec<u8> = r[0]
        .clone()
        .flat_map(|i| {
            let (jr, kr) = (r[1].clone(), r[2].clone());
            jr.flat_map(move |j| kr.clone().map(move |k| voxel(i, j, k)))
        })
        .collect();
    assert_eq!(got, want);
    let stats = server.stats();
    let fetched: u64 = server
        .log()
        .iter()
        .filter(|rec| rec.is_object_get() && rec.key.ends_with("c/0/0/0"))
        .map(|rec| rec.bytes_sent)
        .sum();
    assert!(
        fetched * 16 < chunk_len,
        "fetched {fetched} of the {chunk_len}-byte chunk ({stats:?})"
    );

    // The whole array reads the whole chunk, and gives the same bytes.
    server.reset_stats();
    let back: Vec<u8> = array.retrieve_array_subset(&array.subset_all()).unwrap();
    assert_eq!(back, all);
    assert!(server.stats().bytes_sent >= chunk_len);
}

/// A 32³ region of a 128³-voxel chunk (16 KiB planes of four 4 KiB blocks; the region needs
/// block 1 of 32 planes, 1/16 of the blocks) through `scifmt_io::ZarrsStore`, which fetches
/// the planned ranges concurrently instead of merging everything closer than 1 MiB: at most
/// 1/8 of the chunk is fetched, with one request for the header and block starts, no size
/// request, and the values are those of the whole-chunk read.
#[test]
fn a_region_through_zarrs_store_fetches_at_most_an_eighth() {
    let _registration = blosc_chunk::register(blosc_chunk::ZarrsOptions::default());
    let tmp = tempfile::tempdir().unwrap();
    let local = local_array(
        tmp.path(),
        0,
        json!({"cname": "zstd", "clevel": 5, "shuffle": "bitshuffle", "typesize": 1, "blocksize": 4096}),
    );
    let all = volume();
    local.store_array_subset(&local.subset_all(), all).unwrap();
    let chunk_len = std::fs::metadata(tmp.path().join("c/0/0/0")).unwrap().len();

    let server = TestServer::start().unwrap();
    assert!(server.upload_dir(tmp.path(), "arr").unwrap() > 0);
    let options = scifmt_io::RemoteOptions::default()
        .with_concurrency(64)
        .with_coalesce_gap(0);
    let storage: Arc<dyn ReadableStorageTraits> = Arc::new(scifmt_io::ZarrsStore::new(
        server.store(),
        "arr".into(),
        options,
    ));
    let array = Array::open(storage, "/").unwrap();

    server.reset_stats();
    let region = [32..64u64, 32..64, 32..64];
    let part: Vec<u8> = array
        .retrieve_array_subset(&ArraySubset::new_with_ranges(&region))
        .unwrap();
    let log = server.log();
    let on_chunk: Vec<_> = log.iter().filter(|r| r.key.ends_with("c/0/0/0")).collect();
    let fetched: u64 = on_chunk.iter().map(|r| r.bytes_sent).sum();
    assert!(
        fetched * 8 <= chunk_len,
        "fetched {fetched} of the {chunk_len}-byte chunk in {} requests",
        on_chunk.len()
    );
    assert!(on_chunk.iter().all(|r| r.method == "GET"), "{on_chunk:?}");
    let from_zero = on_chunk
        .iter()
        .filter(|r| {
            r.range
                .as_deref()
                .is_some_and(|h| h.starts_with("bytes=0-"))
        })
        .count();
    assert_eq!(
        from_zero, 1,
        "one read of the header and block starts: {on_chunk:?}"
    );

    // The whole chunk, read in one GET, cut to the region.
    server.reset_stats();
    let whole: Vec<u8> = array.retrieve_chunk(&[0, 0, 0]).unwrap();
    assert_eq!(server.stats().bytes_sent, chunk_len);
    let n = usize::try_from(N).unwrap();
    let mut cut = Vec::new();
    for i in 32..64usize {
        for j in 32..64usize {
            let at = (i * n + j) * n + 32;
            cut.extend_from_slice(&whole[at..at + 32]);
        }
    }
    assert_eq!(part, cut);
}

/// A chunk whose prefix is shorter than the first read guesses (a 32-byte Blosc2 zeros chunk in
/// place of the 128³ Blosc1 chunk): the guessed read fails (the range reaches past the end of
/// the object) and the partial decoder reads the header alone, then decodes the region.
#[test]
fn a_chunk_shorter_than_the_guessed_prefix_still_decodes() {
    let _registration = blosc_chunk::register(blosc_chunk::ZarrsOptions::default());
    let tmp = tempfile::tempdir().unwrap();
    local_array(
        tmp.path(),
        7,
        json!({"cname": "lz4", "clevel": 5, "shuffle": "shuffle", "typesize": 1, "blocksize": 4096}),
    );
    let n = usize::try_from(N).unwrap();
    let zeros = blosc_chunk::zeros_chunk(n * n * n, 1).unwrap();
    assert_eq!(zeros.len(), 32);
    std::fs::create_dir_all(tmp.path().join("c/0/0")).unwrap();
    std::fs::write(tmp.path().join("c/0/0/0"), &zeros).unwrap();

    let server = TestServer::start().unwrap();
    assert!(server.upload_dir(tmp.path(), "arr").unwrap() > 0);
    let storage: Arc<dyn ReadableStorageTraits> = Arc::new(scifmt_io::ZarrsStore::new(
        server.store(),
        "arr".into(),
        scifmt_io::RemoteOptions::default(),
    ));
    let array = Array::open(storage, "/").unwrap();
    server.reset_stats();
    let got: Vec<u8> = array
        .retrieve_array_subset(&ArraySubset::new_with_ranges(&[3..5, 10..20, 100..128]))
        .unwrap();
    assert_eq!(got, vec![0u8; 2 * 10 * 28]);
    // The guessed read, then the 16-byte header and the rest of the 32-byte extended header;
    // nothing else (a special chunk has no blocks).
    let gets: Vec<_> = server
        .log()
        .into_iter()
        .filter(|r| r.key.ends_with("c/0/0/0"))
        .map(|r| r.range.unwrap_or_default())
        .collect();
    assert_eq!(gets.len(), 3, "{gets:?}");
    assert_eq!(gets[1..], ["bytes=0-15", "bytes=16-31"]);
}
