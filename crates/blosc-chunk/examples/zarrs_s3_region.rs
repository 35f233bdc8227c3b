//! A 64³ region of a 256³-voxel `blosc` chunk (uint8, zstd, bitshuffle, 16 KiB blocks) read
//! through zarrs' sync API over `zarrs_object_store` from the in-process S3 test server with
//! 20 ms injected latency per request: the partial path (blosc-chunk's partial decoder: header,
//! block starts, the region's blocks) against the whole-chunk path (the chunk read and decoded
//! whole, then cut, as a codec without partial decoding does). Interleaved rounds; prints
//! bytes sent by the server, requests and the median time of each path, and their ratios.
//!
//! `cargo run -p blosc-chunk --profile bench --example zarrs_s3_region`

#![allow(
    missing_docs,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::cast_possible_truncation,
    clippy::cast_precision_loss,
    reason = "example: synthetic data, printed figures"
)]

use std::sync::Arc;
use std::time::{Duration, Instant};

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

const N: u64 = 256;
const ROUNDS: usize = 7;

fn voxel(i: u64, j: u64, k: u64) -> u8 {
    let noise = (i.wrapping_mul(2_654_435_761) ^ j.wrapping_mul(40_503) ^ k.wrapping_mul(97)) % 13;
    ((i / 4 + j / 2 + k + noise) % 256) as u8
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() {
    let _registration = blosc_chunk::register(blosc_chunk::ZarrsOptions::default());
    let tmp = tempfile::tempdir().unwrap();
    let meta: ArrayMetadata = serde_json::from_value(json!({
        "zarr_format": 3, "node_type": "array", "shape": [N, N, N], "data_type": "uint8",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [N, N, N]}},
        "chunk_key_encoding": {"name": "default"}, "fill_value": 0, "attributes": {},
        "codecs": [{"name": "bytes"},
                   {"name": "blosc", "configuration": {"cname": "zstd", "clevel": 5,
                    "shuffle": "bitshuffle", "typesize": 1, "blocksize": 16384}}]
    }))
    .unwrap();
    let local = Array::new_with_metadata(
        Arc::new(FilesystemStore::new(tmp.path()).unwrap()),
        "/",
        meta,
    )
    .unwrap();
    local.store_metadata().unwrap();
    let all: Vec<u8> = (0..N)
        .flat_map(|i| (0..N).flat_map(move |j| (0..N).map(move |k| voxel(i, j, k))))
        .collect();
    local.store_array_subset(&local.subset_all(), all).unwrap();
    let chunk_len = std::fs::metadata(tmp.path().join("c/0/0/0")).unwrap().len();

    let server = TestServer::start().unwrap();
    server.upload_dir(tmp.path(), "arr").unwrap();
    server.faults().set_latency(Duration::from_millis(20));
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let rooted = object_store::prefix::PrefixStore::new(server.store(), "arr");
    let storage: Arc<dyn ReadableStorageTraits> = Arc::new(AsyncToSyncStorageAdapter::new(
        Arc::new(AsyncObjectStore::new(rooted)),
        BlockOn(runtime.handle().clone()),
    ));
    let array = Array::open(storage, "/").unwrap();
    let region = ArraySubset::new_with_ranges(&[64..128, 64..128, 64..128]);

    let (mut t_part, mut t_whole) = (Vec::new(), Vec::new());
    let (mut b_part, mut b_whole, mut r_part, mut r_whole) = (0, 0, 0, 0);
    for _ in 0..ROUNDS {
        server.reset_stats();
        let t = Instant::now();
        let part: Vec<u8> = array.retrieve_array_subset(&region).unwrap();
        t_part.push(t.elapsed());
        let s = server.stats();
        (b_part, r_part) = (s.bytes_sent, s.requests);

        server.reset_stats();
        let t = Instant::now();
        let whole: Vec<u8> = array.retrieve_chunk(&[0, 0, 0]).unwrap();
        let mut cut = Vec::with_capacity(64 * 64 * 64);
        for i in 64..128usize {
            for j in 64..128usize {
                let at = (i * 256 + j) * 256 + 64;
                cut.extend_from_slice(&whole[at..at + 64]);
            }
        }
        t_whole.push(t.elapsed());
        let s = server.stats();
        (b_whole, r_whole) = (s.bytes_sent, s.requests);
        assert!(part == cut);
    }
    let (tp, tw) = (median(t_part), median(t_whole));
    println!(
        "chunk: 256^3 uint8, {chunk_len} bytes stored; region 64^3 at (64,64,64); latency 20 ms"
    );
    println!("partial path: {b_part} bytes in {r_part} requests, median {tp:?}");
    println!("whole-chunk path: {b_whole} bytes in {r_whole} requests, median {tw:?}");
    println!(
        "bytes partial/chunk = 1/{:.1}; time whole/partial = {:.2}x",
        chunk_len as f64 / b_part as f64,
        tw.as_secs_f64() / tp.as_secs_f64()
    );
}
