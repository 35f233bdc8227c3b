//! Interleaved timing of ours against C-Blosc2 on the benchmark workloads: each repetition
//! runs one ours call and one C call back to back, and the medians of the two series are
//! compared, so slow drifts of a shared machine hit both sides alike (criterion measures the
//! two members of a group one after the other). Not a criterion benchmark; used for the
//! "interleaved" column of the README table.
//!
//! `cargo run --release -p blosc-chunk --example interleaved_vs_c -- [FILTER] [REPS]`
//! (FILTER: substring of the row name, e.g. `decode/f32-sine`; REPS default 300).
#![allow(
    missing_docs,
    unsafe_code,
    clippy::unwrap_used,
    clippy::cast_possible_truncation,
    clippy::cast_possible_wrap,
    clippy::cast_sign_loss,
    clippy::cast_precision_loss,
    clippy::undocumented_unsafe_blocks
)]

use std::hint::black_box;

use blosc_chunk::DParams;
use std::time::Instant;

#[path = "../benches/common/mod.rs"]
mod common;

use common::{
    CONFIGS, N, c_compress, c_decompress, c_setup, f32_sine_noise, int32_ramp_noise, ours_params,
};

fn med(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

fn main() {
    let filt = std::env::args().nth(1).unwrap_or_default();
    let reps: usize = std::env::args()
        .nth(2)
        .map(|s| s.parse().unwrap())
        .unwrap_or(300);
    // SAFETY: initialises C-Blosc2's global state once, before any other call.
    unsafe { blosc2_src::blosc2_init() };
    for (dname, data) in [
        ("int32-ramp", int32_ramp_noise()),
        ("f32-sine", f32_sine_noise()),
    ] {
        for c in &CONFIGS {
            for nthreads in [1usize, 2] {
                for op in ["decode", "encode"] {
                    let name = format!("{op}/{dname}/{}/t{nthreads}", c.name);
                    if !name.contains(&filt) {
                        continue;
                    }
                    let chunk = blosc_chunk::compress(&data, &ours_params(c, 1)).unwrap();
                    let mut out = vec![0u8; N];
                    let mut cbuf = vec![0u8; N + 32];
                    c_setup(c, nthreads);
                    let dparams = DParams::with_threads(nthreads);
                    let params = ours_params(c, nthreads);
                    let (mut a, mut b) = (Vec::new(), Vec::new());
                    for i in 0..reps + 10 {
                        let t = Instant::now();
                        if op == "decode" {
                            black_box(
                                blosc_chunk::decompress_into_ctx(
                                    black_box(&chunk),
                                    &mut out,
                                    &dparams,
                                )
                                .unwrap(),
                            );
                        } else {
                            black_box(blosc_chunk::compress(black_box(&data), &params).unwrap());
                        }
                        let ta = t.elapsed().as_secs_f64();
                        let t = Instant::now();
                        if op == "decode" {
                            black_box(c_decompress(black_box(&chunk), &mut out));
                        } else {
                            black_box(c_compress(c, black_box(&data), &mut cbuf));
                        }
                        let tb = t.elapsed().as_secs_f64();
                        if i >= 10 {
                            a.push(ta);
                            b.push(tb);
                        }
                    }
                    let (ma, mb) = (med(&mut a), med(&mut b));
                    let g = (N as f64) / (1u64 << 30) as f64;
                    println!(
                        "{name:40} ours {:6.2} GiB/s  c {:6.2}  ratio {:5.2}",
                        g / ma,
                        g / mb,
                        mb / ma
                    );
                }
            }
        }
    }
}
