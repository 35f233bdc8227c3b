//! Concurrency: many threads reading one `Dataset` get exactly the serial results; concurrent
//! writers to disjoint boxes of one raw file, and to disjoint boxes of one compressed file
//! (read-modify-write serialised by the file lock), end with exactly the expected content.
//! Schedules vary with a seeded pseudo-random order per thread.

#![allow(
    clippy::unwrap_used,
    clippy::cast_possible_truncation,
    reason = "a failed unwrap is a failed test; test sizes are small"
)]

use std::sync::Barrier;
use testkit::Lcg;

use wkw::{Array, BlockType, Dataset, Header, Order, VoxelType};

const THREADS: usize = 8;

fn pattern(shape: [u32; 3], seed: u64) -> Array {
    let n: usize = shape.iter().map(|&s| s as usize).product::<usize>() * 2;
    let mut rng = Lcg(seed);
    let data = (0..n).map(|_| rng.next_u64() as u8).collect();
    Array::from_bytes(VoxelType::U16, 1, shape, Order::Fortran, data).unwrap()
}

/// 8³ blocks, 4³ blocks per file (32³ voxels per file).
fn dataset(dir: &std::path::Path, block_type: BlockType) -> Dataset {
    Dataset::create(
        dir,
        Header::new(VoxelType::U16, 1, 8, 4, block_type).unwrap(),
    )
    .unwrap()
}

#[test]
fn parallel_readers_see_serial_results() {
    for block_type in [BlockType::Raw, BlockType::Lz4] {
        let dir = tempfile::tempdir().unwrap();
        let ds = dataset(dir.path(), block_type);
        ds.write([0; 3], &pattern([64, 64, 40], 7).view()).unwrap();
        // Boxes of every kind: inside one block, across blocks, across files, partly missing.
        let boxes: Vec<([u32; 3], [u32; 3])> = vec![
            ([0, 0, 0], [64, 64, 40]),
            ([3, 5, 7], [4, 4, 4]),
            ([30, 30, 30], [5, 5, 5]),
            ([10, 20, 0], [40, 1, 33]),
            ([60, 60, 36], [20, 20, 20]),
            ([0, 31, 0], [64, 2, 1]),
        ];
        let serial: Vec<Array> = boxes
            .iter()
            .map(|&(at, shape)| ds.read(at, shape, Order::C).unwrap())
            .collect();
        let barrier = Barrier::new(THREADS);
        std::thread::scope(|s| {
            for t in 0..THREADS {
                let (ds, boxes, serial, barrier) = (&ds, &boxes, &serial, &barrier);
                s.spawn(move || {
                    let mut rng = Lcg(t as u64 + 100);
                    barrier.wait();
                    for _ in 0..40 {
                        let i = rng.next_u64() as usize % boxes.len();
                        let (at, shape) = boxes[i];
                        assert_eq!(ds.read(at, shape, Order::C).unwrap(), serial[i], "box {i}");
                    }
                });
            }
        });
    }
}

/// Every thread writes its own boxes (disjoint), in a pseudo-random order, into the same file;
/// the end result must hold every write.
fn disjoint_writers(block_type: BlockType, boxes_per_thread: usize, edge: u32) {
    let dir = tempfile::tempdir().unwrap();
    let ds = dataset(dir.path(), block_type);
    // Split the 32³ file into cubes of `edge` voxels and deal them out to the threads.
    let per_axis = 32 / edge;
    let cubes: Vec<[u32; 3]> = (0..per_axis.pow(3))
        .map(|i| {
            [
                i % per_axis * edge,
                i / per_axis % per_axis * edge,
                i / per_axis / per_axis * edge,
            ]
        })
        .collect();
    assert!(cubes.len() >= THREADS * boxes_per_thread);
    let barrier = Barrier::new(THREADS);
    std::thread::scope(|s| {
        for t in 0..THREADS {
            let (ds, cubes, barrier) = (&ds, &cubes, &barrier);
            s.spawn(move || {
                let mut mine: Vec<usize> = (0..boxes_per_thread).map(|k| k * THREADS + t).collect();
                let mut rng = Lcg(t as u64 + 1);
                for i in (1..mine.len()).rev() {
                    mine.swap(i, rng.next_u64() as usize % (i + 1));
                }
                barrier.wait();
                for c in mine {
                    let a = pattern([edge; 3], c as u64);
                    ds.write(cubes[c], &a.view()).unwrap();
                }
            });
        }
    });
    let ds = Dataset::open(dir.path()).unwrap();
    assert_eq!(ds.list_files().unwrap().len(), 1);
    for (c, &at) in cubes.iter().enumerate().take(THREADS * boxes_per_thread) {
        let got = ds.read(at, [edge; 3], Order::Fortran).unwrap();
        assert_eq!(
            got,
            pattern([edge; 3], c as u64),
            "{block_type:?}: cube {c} at {at:?} lost"
        );
    }
    assert!(
        wkw::verify(dir.path(), wkw::Options::default(), &|_| {})
            .unwrap()
            .is_ok()
    );
}

#[test]
fn concurrent_writers_to_disjoint_boxes_of_one_raw_file() {
    // Unaligned 4³ boxes: several writers share each 8³ block.
    disjoint_writers(BlockType::Raw, 6, 4);
}

#[test]
fn concurrent_writers_to_one_compressed_file_are_serialised() {
    // Each write decodes, merges and recompresses the whole file: without the lock, updates
    // would be lost.
    disjoint_writers(BlockType::Lz4, 3, 8);
}
