//! A 64³ region of a 256³-voxel `blosc` chunk (uint8, zstd, bitshuffle, 16 KiB blocks) read
//! through zarrs' sync API from the in-process S3 test server with 20 ms injected latency per
//! request: the partial path (blosc-chunk's partial decoder: header with block starts, then
//! the region's blocks) over `scifmt_io::ZarrsStore` (planned ranges fetched concurrently, no
//! size requests) and over `zarrs_object_store` (object_store's `get_ranges`: a HEAD before
//! every read, ranges closer than 1 MiB merged), against the whole-chunk path (the chunk read
//! in one GET and decoded whole, then cut, as a codec without partial decoding does).
//! Interleaved rounds; prints bytes sent by the server, requests and the median time of each
//! path, and the ratios.
//!
//! `cargo run -p blosc-chunk --profile bench --features zarrs --example zarrs_s3_region -- [ROUNDS]`

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
    let rounds: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(7);
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let rooted = object_store::prefix::PrefixStore::new(server.store(), "arr");
    let via_zos: Arc<dyn ReadableStorageTraits> = Arc::new(AsyncToSyncStorageAdapter::new(
        Arc::new(AsyncObjectStore::new(rooted)),
        BlockOn(runtime.handle().clone()),
    ));
    let options = scifmt_io::RemoteOptions::default()
        .with_concurrency(64)
        .with_coalesce_gap(0);
    let via_io: Arc<dyn ReadableStorageTraits> = Arc::new(scifmt_io::ZarrsStore::new(
        server.store(),
        "arr".into(),
        options,
    ));
    let array_io = Array::open(via_io, "/").unwrap();
    let array_zos = Array::open(via_zos, "/").unwrap();
    let region = ArraySubset::new_with_ranges(&[64..128, 64..128, 64..128]);

    // Paths: (name, run) -> the region's values.
    let whole = |array: &Array<dyn ReadableStorageTraits>| -> Vec<u8> {
        let whole: Vec<u8> = array.retrieve_chunk(&[0, 0, 0]).unwrap();
        let mut cut = Vec::with_capacity(64 * 64 * 64);
        for i in 64..128usize {
            for j in 64..128usize {
                let at = (i * 256 + j) * 256 + 64;
                cut.extend_from_slice(&whole[at..at + 64]);
            }
        }
        cut
    };
    let paths: [(&str, &dyn Fn() -> Vec<u8>); 3] = [
        ("partial, ZarrsStore", &|| {
            array_io.retrieve_array_subset(&region).unwrap()
        }),
        ("partial, zarrs_object_store", &|| {
            array_zos.retrieve_array_subset(&region).unwrap()
        }),
        ("whole chunk, ZarrsStore", &|| whole(&array_io)),
    ];
    let mut times = vec![Vec::new(); paths.len()];
    let mut counts = vec![(0, 0); paths.len()];
    let mut want: Option<Vec<u8>> = None;
    for round in 0..rounds {
        for k in 0..paths.len() {
            let p = (round + k) % paths.len();
            server.reset_stats();
            let t = Instant::now();
            let got = (paths[p].1)();
            times[p].push(t.elapsed());
            let s = server.stats();
            counts[p] = (s.bytes_sent, s.requests);
            match &want {
                Some(w) => assert!(*w == got, "{} gave other values", paths[p].0),
                None => want = Some(got),
            }
        }
    }
    let medians: Vec<Duration> = times.into_iter().map(median).collect();
    println!(
        "chunk: 256^3 uint8, {chunk_len} bytes stored; region 64^3 at (64,64,64); \
         latency 20 ms; {rounds} rounds"
    );
    println!("| path | bytes sent | of the chunk | requests | median | whole / this |");
    println!("|---|---:|---:|---:|---:|---:|");
    for (p, (name, _)) in paths.iter().enumerate() {
        let (bytes, requests) = counts[p];
        println!(
            "| {name} | {bytes} | 1/{:.1} | {requests} | {:.1} ms | {:.2}x |",
            chunk_len as f64 / bytes as f64,
            medians[p].as_secs_f64() * 1e3,
            medians[2].as_secs_f64() / medians[p].as_secs_f64()
        );
    }
}
