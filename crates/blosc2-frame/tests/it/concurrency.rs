//! Concurrency: many threads reading one `Frame` (file-backed with positional reads, and
//! in-memory) get exactly the serial results, in pseudo-random per-thread orders.

#![allow(
    clippy::unwrap_used,
    clippy::cast_possible_truncation,
    reason = "a failed unwrap is a failed test; test sizes are small"
)]

use std::sync::Barrier;
use testkit::Lcg;

use blosc2_frame::blosc_chunk::{CParams, Codec, Filter};
use blosc2_frame::{Durability, Frame, FrameParams, FrameWriter};

const THREADS: usize = 8;

/// Reads of every kind, as (what, result) pairs.
fn reads(frame: &Frame<'_>, order: &[usize]) -> Vec<(usize, Vec<u8>)> {
    let n = frame.nchunks();
    order
        .iter()
        .map(|&k| {
            let out = match k % 4 {
                0 => frame.decompress_chunk(k / 4 % n).unwrap(),
                1 => frame.chunk(k / 4 % n).unwrap().into_owned(),
                2 => {
                    let start = (k as u64 * 7919) % 45_000; // items (typesize 4)
                    frame.get_slice(start, start + 5_000).unwrap()
                }
                _ => frame.vlmetalayer("note").unwrap(),
            };
            (k, out)
        })
        .collect()
}

fn check(frame: &Frame<'_>) {
    let all: Vec<usize> = (0..4 * frame.nchunks()).collect();
    let serial = reads(frame, &all);
    let barrier = Barrier::new(THREADS);
    std::thread::scope(|s| {
        for t in 0..THREADS {
            let (serial, barrier, all) = (&serial, &barrier, &all);
            s.spawn(move || {
                let mut order = all.clone();
                let mut rng = Lcg(t as u64 + 5);
                for i in (1..order.len()).rev() {
                    order.swap(i, rng.next_u64() as usize % (i + 1));
                }
                barrier.wait();
                for (k, got) in reads(frame, &order) {
                    assert_eq!(got, serial[k].1, "read {k} differs from the serial one");
                }
            });
        }
    });
}

#[test]
fn parallel_readers_see_serial_results() {
    let mut cp = CParams::new(Codec::Lz4, 5, 4, Filter::Shuffle);
    cp.typesize = 4;
    let mut w = FrameWriter::new(FrameParams::new(cp, 16_384)).unwrap();
    let mut rng = Lcg(42);
    let data: Vec<u8> = (0..200_000u32)
        .map(|i| (i / 64) as u8 ^ (rng.next_u64() as u8 & 3))
        .collect();
    w.append_data(&data).unwrap();
    w.set_vlmetalayer("note", b"concurrent readers").unwrap();
    let bytes = w.to_bytes().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("f.b2frame");
    w.write_file(&path, Durability::None).unwrap();

    let in_memory = Frame::from_slice(&bytes).unwrap();
    assert_eq!(in_memory.decompress_all().unwrap(), data);
    check(&in_memory);
    let on_disk = Frame::open(&path).unwrap();
    assert_eq!(on_disk.decompress_all().unwrap(), data);
    check(&on_disk);
}
