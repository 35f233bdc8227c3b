//! Many blocking remote objects of two format crates — several wkw datasets and several
//! blosc2-frame frames / b2nd arrays — sharing ONE store client (one connection pool) and used
//! from several threads at once, reading and writing. All blocking wrappers run on the one
//! runtime of `scifmt_io::runtime`; with a runtime per object, a pooled connection opened by one
//! object's idle runtime and reused by another would never make progress (the test would hang).
//!
//! Asserts: no error, and every read returns exactly the data written.

#![allow(clippy::unwrap_used, reason = "a failed unwrap is a failed test")]
#![allow(
    clippy::cast_possible_truncation,
    clippy::cast_precision_loss,
    reason = "small test values"
)]

use std::sync::{Arc, Barrier};

use blosc2_frame::blosc_chunk::CParams;
use blosc2_frame::{BlockingRemoteB2nd, BlockingRemoteFrame, b2nd_frame_from_slice};
use s3_testserver::TestServer;
use wkw::object_store::path::Path;
use wkw::{Array, BlockType, BlockingRemoteDataset, Header, Order, VoxelType};

const DATASETS: usize = 3;
const ARRAYS: usize = 3;
const ROUNDS: usize = 4;

/// Voxels of dataset `d`, round `r` (every byte depends on both).
fn voxels(d: usize, r: usize) -> Array {
    let mut a = Array::zeros(VoxelType::U8, 1, [24, 24, 24], Order::Fortran).unwrap();
    for (i, b) in a.as_bytes_mut().iter_mut().enumerate() {
        *b = ((i.wrapping_mul(31) ^ (d * 7 + r * 13)) & 0xff) as u8;
    }
    a
}

fn values(k: usize, r: usize) -> Vec<f64> {
    (0..30 * 40)
        .map(|i| (i + 1000 * k + 100_000 * r) as f64)
        .collect()
}

#[test]
fn blocking_objects_of_both_crates_share_one_store_across_threads() {
    let server = TestServer::start().unwrap();
    // One client for everything: one connection pool.
    let store = server.store();
    let datasets: Vec<Arc<BlockingRemoteDataset>> = (0..DATASETS)
        .map(|d| {
            let h = Header::new(VoxelType::U8, 1, 8, 4, BlockType::Lz4).unwrap();
            let ds = BlockingRemoteDataset::create(
                store.clone(),
                Path::from(format!("wkw/{d}")),
                h,
                wkw::RemoteOptions::default(),
            )
            .unwrap();
            ds.write([0, 0, 0], &voxels(d, 0).view()).unwrap();
            Arc::new(ds)
        })
        .collect();
    let keys: Vec<Path> = (0..ARRAYS)
        .map(|k| Path::from(format!("b2nd/{k}.b2nd")))
        .collect();
    let put = |k: usize, r: usize| {
        let w = b2nd_frame_from_slice(
            &values(k, r),
            &[30, 40],
            &[10, 10],
            &[5, 10],
            &CParams::default(),
        )
        .unwrap();
        BlockingRemoteFrame::put(
            store.clone(),
            &keys[k],
            &w,
            &blosc2_frame::RemoteOptions::default(),
        )
        .unwrap();
    };
    for k in 0..ARRAYS {
        put(k, 0);
    }

    // One thread per object, all started together: wkw threads write then read back their
    // dataset each round; frame threads read their array, put a new version, reopen and read.
    let start = Arc::new(Barrier::new(DATASETS + ARRAYS));
    std::thread::scope(|s| {
        for (d, ds) in datasets.iter().enumerate() {
            let start = start.clone();
            s.spawn(move || {
                start.wait();
                for r in 1..=ROUNDS {
                    let want = voxels(d, r);
                    ds.write([0, 0, 0], &want.view()).unwrap();
                    let got = ds.read([0, 0, 0], [24, 24, 24], Order::Fortran).unwrap();
                    assert!(got.as_bytes() == want.as_bytes(), "dataset {d} round {r}");
                    // A box across the block grid, read from another order.
                    let part = ds.read([3, 5, 7], [9, 8, 10], Order::C).unwrap();
                    assert_eq!(part.as_bytes().len(), 9 * 8 * 10);
                }
            });
        }
        for k in 0..ARRAYS {
            let start = start.clone();
            let (store, keys, put) = (store.clone(), &keys, &put);
            s.spawn(move || {
                start.wait();
                for r in 0..ROUNDS {
                    let a = BlockingRemoteB2nd::open(
                        store.clone(),
                        keys[k].clone(),
                        blosc2_frame::RemoteOptions::default().with_concurrency(4),
                    )
                    .unwrap();
                    assert_eq!(
                        a.read_all_as::<f64>().unwrap(),
                        values(k, r),
                        "array {k} round {r}"
                    );
                    let region = a.read_region_as::<f64>(&[2, 3], &[4, 15]).unwrap();
                    assert_eq!(region[0], values(k, r)[2 * 40 + 3]);
                    put(k, r + 1);
                }
            });
        }
    });

    // Everything visible to fresh objects on the same client.
    for d in 0..DATASETS {
        let again = BlockingRemoteDataset::open(
            store.clone(),
            Path::from(format!("wkw/{d}")),
            wkw::RemoteOptions::default(),
        )
        .unwrap();
        let got = again.read([0, 0, 0], [24, 24, 24], Order::Fortran).unwrap();
        assert!(got.as_bytes() == voxels(d, ROUNDS).as_bytes());
    }
    for (k, key) in keys.iter().enumerate() {
        let a = BlockingRemoteB2nd::open(store.clone(), key.clone(), Default::default()).unwrap();
        assert_eq!(a.read_all_as::<f64>().unwrap(), values(k, ROUNDS));
    }
}
