//! Interleaved timing of ours against the C-Blosc2 peers on the benchmark workloads: each
//! repetition runs one call of every implementation back to back (in an order that rotates
//! from one repetition to the next), and the medians of the series are compared, so slow
//! drifts of a shared machine hit all sides alike (criterion measures the members of a group
//! one after the other). Not a criterion benchmark; used for the "interleaved" table.
//!
//! Peers: the C-Blosc2 2.15 that `blosc2-src` builds (SSE2 only, no zlib) and, when
//! `SCIFMT_BLOSC2_LIB` names a shared `libblosc2.so`, that library (`cargo xtask blosc-peer`
//! fetches C-Blosc2 3.3.5 from the python-blosc2 4.14.1 wheel and runs this with it). Both
//! through the context API with explicit thread counts.
//!
//! `cargo run --release -p blosc-chunk --example interleaved_vs_c -- [FILTER] [REPS]`
//! (FILTER: substring of the row name, e.g. `decode/f32-sine`; REPS default 300).
//!
//! Before timing, every row checks its inputs: decode rows check that each side restores the
//! data from our chunk; encode rows check that each peer's chunk decodes with ours and compare
//! it with our chunk byte for byte. With one thread our chunk must equal the loaded 3.x
//! library's (asserted; zlib included: zlib-rs deflates as the zlib-ng that C-Blosc2 3.x
//! bundles); every other comparison is reported in the last column.
//!
//! Output: a Markdown table on stdout, one row per (op, workload, codec, threads): the
//! compression ratio of our chunk, throughput of each side (GiB/s of uncompressed data, median
//! over REPS) and ours / peer speed ratios; rows below the targets against the last peer
//! (decode < 1.0, encode < 0.9) are marked `MISS`.
#![allow(
    missing_docs,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::cast_precision_loss,
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    reason = "benchmark harness: fails loudly on a broken setup"
)]

use std::hint::black_box;
use std::time::Instant;

use blosc_chunk::{ChunkHeader, DParams};

#[path = "../benches/common/mod.rs"]
mod common;

use common::{CONFIGS, CPeer, N, ours_params, peers, workloads};

const WARMUP: usize = 10;
/// Fewest repetitions of a row (unless REPS is lower).
const MIN_REPS: usize = 31;
/// Seconds one row may take, at most, once it has [`MIN_REPS`] repetitions.
const ROW_BUDGET: f64 = 6.0;

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// One timed side of a row: ours or a peer.
type Side<'a> = Box<dyn FnMut() + 'a>;

/// Runs every side once per repetition, rotating the order, and returns each side's median
/// seconds. After the warm-up, the number of repetitions is cut from `max_reps` to what fits
/// in [`ROW_BUDGET`] seconds, but never below [`MIN_REPS`] (the slow encoders take 40 ms and
/// more per call).
fn interleave(sides: &mut [Side<'_>], max_reps: usize) -> (Vec<f64>, usize) {
    let n = sides.len();
    let round = |sides: &mut [Side<'_>], i: usize, times: &mut [Vec<f64>]| {
        for k in 0..n {
            let j = (i + k) % n;
            let t = Instant::now();
            sides[j]();
            times[j].push(t.elapsed().as_secs_f64());
        }
    };
    let mut times = vec![Vec::new(); n];
    let t = Instant::now();
    for i in 0..WARMUP {
        round(sides, i, &mut times);
    }
    let per_round = t.elapsed().as_secs_f64() / WARMUP as f64;
    let reps = ((ROW_BUDGET / per_round) as usize).clamp(MIN_REPS.min(max_reps), max_reps);
    let mut times = vec![Vec::with_capacity(reps); n];
    for i in 0..reps {
        round(sides, i, &mut times);
    }
    (times.iter_mut().map(|t| median(t)).collect(), reps)
}

fn gib_s(secs: f64) -> f64 {
    N as f64 / f64::from(1u32 << 30) / secs
}

fn main() {
    let filt = std::env::args().nth(1).unwrap_or_default();
    let reps: usize = std::env::args()
        .nth(2)
        .map_or(300, |s| s.parse().expect("REPS must be a number"));
    let peers = peers();
    let reference = peers.len() - 1;
    for p in &peers {
        println!("- `{}`: C-Blosc2 {}", p.label, p.version);
    }
    println!(
        "- up to {reps} interleaved repetitions per row (at least {MIN_REPS}, else as many as \
         fit in {ROW_BUDGET} s; after {WARMUP} warm-up), medians; ratio = ours speed / peer \
         speed; targets vs `{}`: decode >= 1.0, encode >= 0.9\n",
        peers[reference].label
    );
    let mut head = String::from("| row | reps | cratio | ours GiB/s |");
    let mut rule = String::from("|---|---:|---:|---:|");
    for p in &peers {
        head += &format!(" {0} GiB/s | ours/{0} |", p.label);
        rule += "---:|---:|";
    }
    println!("{head} same bytes | target |\n{rule}---|---|");

    let mut misses = 0usize;
    let mut rows = 0usize;
    for w in workloads() {
        let data = &w.data;
        for c in &CONFIGS {
            // Made only for a row that runs, so that a filtered run (under a profiler) does
            // no other work.
            let mut chunk = None;
            for nthreads in [1usize, 2] {
                for op in ["decode", "encode"] {
                    let name = format!("{op}/{}/{}/t{nthreads}", w.name, c.name);
                    if !name.contains(&filt) {
                        continue;
                    }
                    let chunk = chunk.get_or_insert_with(|| {
                        blosc_chunk::compress(data, &ours_params(c, w.typesize, 1)).unwrap()
                    });
                    let (mut sides, avail, same) = if op == "decode" {
                        decode_sides(&peers, chunk, data, nthreads)
                    } else {
                        encode_sides(&peers, reference, c, w.typesize, data, nthreads)
                    };
                    let (med, done) = interleave(&mut sides, reps);
                    drop(sides);
                    let ours = med[0];
                    let mut line = format!(
                        "| {name} | {done} | {:.2} | {:.2} |",
                        N as f64 / chunk.len() as f64,
                        gib_s(ours)
                    );
                    let mut k = 1;
                    let mut last_ratio = None;
                    for ok in &avail {
                        if *ok {
                            let ratio = med[k] / ours;
                            line += &format!(" {:.2} | {ratio:.2} |", gib_s(med[k]));
                            last_ratio = Some(ratio);
                            k += 1;
                        } else {
                            line += " n/a | n/a |";
                            last_ratio = None;
                        }
                    }
                    let target = if op == "decode" { 1.0 } else { 0.9 };
                    let verdict = match last_ratio {
                        Some(r) if r < target => {
                            misses += 1;
                            "MISS"
                        }
                        Some(_) => "ok",
                        None => "n/a",
                    };
                    rows += 1;
                    println!("{line} {same} | {verdict} |");
                }
            }
        }
    }
    println!("\n{misses} of {rows} rows below target");
}

/// Sides of a decode row: all decode our chunk (made with one thread) with `nthreads`.
/// Returns the sides, which peers could decode it, and the (empty) same-bytes cell.
fn decode_sides<'a>(
    peers: &'a [CPeer],
    chunk: &'a [u8],
    data: &'a [u8],
    nthreads: usize,
) -> (Vec<Side<'a>>, Vec<bool>, String) {
    let dparams = DParams::default().with_threads(nthreads);
    let mut out = vec![0u8; N];
    assert_eq!(
        blosc_chunk::decompress_into_ctx(chunk, &mut out, &dparams).unwrap(),
        N
    );
    assert!(out == data, "ours does not restore the data");
    let mut sides: Vec<Side<'a>> = vec![Box::new(move || {
        black_box(blosc_chunk::decompress_into_ctx(black_box(chunk), &mut out, &dparams).unwrap());
    })];
    let mut avail = Vec::new();
    for p in peers {
        let mut ctx = p.dctx(nthreads).expect("blosc2_create_dctx");
        let mut out = vec![0u8; N];
        if ctx.decompress(chunk, &mut out) == Some(N) {
            assert!(out == data, "{} does not restore the data", p.label);
            sides.push(Box::new(move || {
                black_box(ctx.decompress(black_box(chunk), &mut out).unwrap());
            }));
            avail.push(true);
        } else {
            avail.push(false);
        }
    }
    (sides, avail, "-".into())
}

/// Sides of an encode row, after checking every peer's chunk against ours (see the module
/// docs). Returns the sides, which peers could encode, and the same-bytes cell.
fn encode_sides<'a>(
    peers: &'a [CPeer],
    reference: usize,
    c: &'a common::Config,
    typesize: usize,
    data: &'a [u8],
    nthreads: usize,
) -> (Vec<Side<'a>>, Vec<bool>, String) {
    let params = ours_params(c, typesize, nthreads);
    let ours = blosc_chunk::compress(data, &params).unwrap();
    let mut sides: Vec<Side<'a>> = vec![Box::new(move || {
        black_box(blosc_chunk::compress(black_box(data), &params).unwrap());
    })];
    let mut avail = Vec::new();
    let mut same = Vec::new();
    for (i, p) in peers.iter().enumerate() {
        let mut ctx = p.cctx(c, typesize, nthreads).expect("blosc2_create_cctx");
        let mut out = vec![0u8; N + blosc_chunk::MAX_OVERHEAD];
        let Some(n) = ctx.compress(data, &mut out) else {
            avail.push(false);
            same.push("n/a".to_string());
            continue;
        };
        let theirs = &out[..n];
        assert!(
            blosc_chunk::decompress(theirs).unwrap() == *data,
            "{}'s chunk does not decode to the data with ours",
            p.label
        );
        let identical = theirs == ours.as_slice();
        if i == reference && p.is_loaded() && nthreads == 1 {
            assert!(
                identical,
                "our chunk differs from {}'s ({} vs {n} bytes)",
                p.label,
                ours.len()
            );
        }
        same.push(if identical {
            "yes".to_string()
        } else if same_blocks(&ours, theirs) {
            "same blocks, other order".to_string()
        } else {
            format!("no ({} vs {n} B)", ours.len())
        });
        sides.push(Box::new(move || {
            black_box(ctx.compress(black_box(data), &mut out).unwrap());
        }));
        avail.push(true);
    }
    (sides, avail, same.join(" / "))
}

/// The header and the compressed block streams of `chunk`, streams in block order (wherever
/// the offsets table puts them).
fn blocks(chunk: &[u8]) -> (&[u8], Vec<&[u8]>) {
    let h = ChunkHeader::parse(chunk).unwrap();
    let (hl, nblocks) = (h.header_len(), h.nblocks());
    let starts: Vec<usize> = chunk[hl..hl + 4 * nblocks]
        .chunks_exact(4)
        .map(|b| u32::from_le_bytes(b.try_into().unwrap()) as usize)
        .collect();
    let mut sorted = starts.clone();
    sorted.sort_unstable();
    let end = |s: usize| {
        sorted
            .iter()
            .copied()
            .find(|&e| e > s)
            .unwrap_or(h.cbytes())
    };
    (
        &chunk[..hl],
        starts.iter().map(|&s| &chunk[s..end(s)]).collect(),
    )
}

/// Whether two chunks hold the same header and the same stream for every block, stored in a
/// different order (C-Blosc2's threads write blocks as they finish).
fn same_blocks(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && blocks(a) == blocks(b)
}
