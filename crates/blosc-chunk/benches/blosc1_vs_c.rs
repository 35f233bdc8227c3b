//! Blosc1 format (`Format::Blosc1`) encode and decode against C-Blosc 1.21 (the `blosc-src`
//! crate, the C-Blosc zarrs links), same data and settings, 1 and 2 threads, **interleaved**:
//! each repetition of a row runs one call of ours and one of C-Blosc's back to back (which one
//! goes first alternates), and the medians of the two series are compared, so the slow drifts
//! of a shared machine hit both sides alike. Before timing, each configuration checks that both
//! write the same chunk (C-Blosc 1's one-thread chunk: with threads it stores blocks in the
//! order they finish; zlib: both decode each other's, C-Blosc 1 links stock zlib) so the rows
//! compare like with like.
//!
//! `cargo bench -p blosc-chunk --bench blosc1_vs_c [-- FILTER [REPS]]` (FILTER: a substring
//! of the row name, e.g. `compress/lz4hc`; REPS: the fewest repetitions of a row, default 21;
//! a row repeats until it has them and has run for 4 s, at most 400 times).
//!
//! Output: a Markdown table, one row per (op, codec, filter, threads): the medians of each
//! side and C time ÷ ours (the target of issue 24 (a) is ≥ 1.0 on every row; rows below are
//! marked `MISS`), then the count of misses and the geometric mean.

#![allow(
    missing_docs,
    unsafe_code,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::cast_possible_truncation,
    clippy::cast_possible_wrap,
    clippy::cast_sign_loss,
    reason = "benchmark: FFI calls into the C peer, synthetic data"
)]

use std::ffi::{c_int, c_void};
use std::hint::black_box;
use std::time::{Duration, Instant};

use blosc_chunk::{CParams, Codec, Filter};

const WARMUP: usize = 5;
const BUDGET: Duration = Duration::from_secs(4);
const MAX_REPS: usize = 400;

/// 4 MiB of a detector-like 16-bit signal: a slow sine plus 0..31 counts of noise.
fn u16_signal() -> Vec<u8> {
    let mut s = 0x5a5a_1234_dead_beefu64;
    (0..(2 << 20))
        .flat_map(|i| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            let base = 30_000.0 + 2_000.0 * (i as f32 / 5000.0).sin();
            (base as u16 + (s % 32) as u16).to_le_bytes()
        })
        .collect()
}

fn c_compress(
    codec: Codec,
    clevel: u8,
    typesize: usize,
    filter: Filter,
    data: &[u8],
    threads: usize,
) -> Vec<u8> {
    let shuffle = match filter {
        Filter::Shuffle => 1,
        Filter::BitShuffle => 2,
        _ => 0,
    };
    let name = format!("{}\0", codec.name());
    let mut out = vec![0u8; data.len() + 16];
    // SAFETY: `data` and `out` are valid for the lengths passed; `name` is NUL-terminated; the
    // context API keeps no state between calls.
    let n = unsafe {
        blosc_src::blosc_compress_ctx(
            c_int::from(clevel),
            shuffle,
            typesize,
            data.len(),
            data.as_ptr().cast::<c_void>(),
            out.as_mut_ptr().cast::<c_void>(),
            out.len(),
            name.as_ptr().cast(),
            0,
            threads as c_int,
        )
    };
    assert!(n > 0, "C-Blosc compress failed: {n}");
    out.truncate(n as usize);
    out
}

fn c_decompress(chunk: &[u8], out: &mut [u8], threads: usize) {
    // SAFETY: `chunk` and `out` are valid for the lengths passed; C-Blosc writes at most
    // `out.len()` bytes.
    let n = unsafe {
        blosc_src::blosc_decompress_ctx(
            chunk.as_ptr().cast::<c_void>(),
            out.as_mut_ptr().cast::<c_void>(),
            out.len(),
            threads as c_int,
        )
    };
    assert_eq!(n as usize, out.len(), "C-Blosc decompress failed");
}

/// Runs `a` and `b` alternately (`a` first in even repetitions) after [`WARMUP`] rounds, at
/// least `reps` times and until [`BUDGET`] has passed (at most [`MAX_REPS`]); the median
/// seconds of each.
fn interleave(reps: usize, mut a: impl FnMut(), mut b: impl FnMut()) -> (f64, f64) {
    let timed = |f: &mut dyn FnMut()| {
        let t = Instant::now();
        f();
        t.elapsed().as_secs_f64()
    };
    let (mut ta, mut tb) = (Vec::new(), Vec::new());
    let start = Instant::now();
    let mut i = 0;
    while i < WARMUP + reps || (start.elapsed() < BUDGET && i < WARMUP + MAX_REPS) {
        let (da, db) = if i % 2 == 0 {
            let da = timed(&mut a);
            (da, timed(&mut b))
        } else {
            let db = timed(&mut b);
            (timed(&mut a), db)
        };
        if i >= WARMUP {
            ta.push(da);
            tb.push(db);
        }
        i += 1;
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    (median(&mut ta), median(&mut tb))
}

fn main() {
    // `cargo bench` passes `--bench`; the rest are ours.
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    let filter = args.first().cloned().unwrap_or_default();
    let reps: usize = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(21);
    let data = u16_signal();
    println!("| row | ours ms | C-Blosc 1.21 ms | C ÷ ours |");
    println!("|---|---:|---:|---:|");
    let mut ratios = Vec::new();
    let mut row = |name: String, ours: f64, theirs: f64| {
        let r = theirs / ours;
        let miss = if r < 1.0 { " MISS" } else { "" };
        println!(
            "| {name} | {:.3} | {:.3} | {r:.2}{miss} |",
            ours * 1e3,
            theirs * 1e3
        );
        ratios.push(r);
    };
    for (codec, filter_id) in [
        (Codec::BloscLz, Filter::Shuffle),
        (Codec::Lz4, Filter::Shuffle),
        (Codec::Lz4, Filter::BitShuffle),
        (Codec::Lz4Hc, Filter::Shuffle),
        (Codec::Zstd, Filter::Shuffle),
        (Codec::Zlib, Filter::Shuffle),
        (Codec::Lz4, Filter::NoFilter),
    ] {
        for threads in [1usize, 2] {
            let label = format!("{}-{}-t{threads}", codec.name(), filter_id.id());
            let (enc, dec) = (format!("compress/{label}"), format!("decompress/{label}"));
            if !enc.contains(&filter) && !dec.contains(&filter) {
                continue;
            }
            let mut cp = CParams::blosc1(codec, 5, 2, filter_id);
            cp.nthreads = threads;
            let ours = blosc_chunk::compress(&data, &cp).unwrap();
            // C-Blosc 1 with threads stores blocks in the order they finish, so its
            // one-thread chunk is the reference (ours does not depend on the thread count).
            let theirs = c_compress(codec, 5, 2, filter_id, &data, 1);
            if codec == Codec::Zlib {
                assert_eq!(blosc_chunk::decompress(&theirs).unwrap(), data);
                let mut back = vec![0u8; data.len()];
                c_decompress(&ours, &mut back, 1);
                assert!(back == data);
            } else {
                assert!(ours == theirs, "{codec:?} {filter_id:?}: different chunks");
            }
            if enc.contains(&filter) {
                let (a, b) = interleave(
                    reps,
                    || {
                        black_box(blosc_chunk::compress(black_box(&data), &cp).unwrap());
                    },
                    || {
                        black_box(c_compress(
                            codec,
                            5,
                            2,
                            filter_id,
                            black_box(&data),
                            threads,
                        ));
                    },
                );
                row(enc, a, b);
            }
            if dec.contains(&filter) {
                let dp = blosc_chunk::DParams::default().with_threads(threads);
                let mut out_a = vec![0u8; data.len()];
                let mut out_b = vec![0u8; data.len()];
                let (a, b) = interleave(
                    reps,
                    || {
                        blosc_chunk::decompress_into_ctx(black_box(&theirs), &mut out_a, &dp)
                            .unwrap();
                    },
                    || c_decompress(black_box(&theirs), &mut out_b, threads),
                );
                row(dec, a, b);
            }
        }
    }
    let below = ratios.iter().filter(|&&r| r < 1.0).count();
    let geomean = (ratios.iter().map(|r| r.ln()).sum::<f64>() / ratios.len().max(1) as f64).exp();
    println!(
        "\n{} rows, {below} below 1.0, geometric mean {geomean:.2}",
        ratios.len()
    );
}
