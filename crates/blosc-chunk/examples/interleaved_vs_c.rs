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
use std::ffi::CString;
use std::hint::black_box;

use blosc_chunk::{CParams, Codec, DParams, Filter};
use std::time::Instant;

const N: usize = 4 << 20;

fn int32_ramp_noise() -> Vec<u8> {
    let mut s = 0x1234_5678_9abc_def1u64;
    (0..N / 4)
        .flat_map(|i| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            let v = (i as u32).wrapping_mul(3).wrapping_add((s % 64) as u32);
            v.to_le_bytes()
        })
        .collect()
}

fn f32_sine_noise() -> Vec<u8> {
    let mut s = 0x0fed_cba9_8765_4321u64;
    (0..N / 4)
        .flat_map(|i| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            let noise = (s % 1000) as f32 / 1.0e5;
            ((i as f32 / 1000.0).sin() * 100.0 + noise).to_le_bytes()
        })
        .collect()
}

struct Config {
    name: &'static str,
    codec: Codec,
    cname: &'static str,
    filter: Filter,
}

const CONFIGS: [Config; 4] = [
    Config {
        name: "blosclz+shuffle",
        codec: Codec::BloscLz,
        cname: "blosclz",
        filter: Filter::Shuffle,
    },
    Config {
        name: "lz4+shuffle",
        codec: Codec::Lz4,
        cname: "lz4",
        filter: Filter::Shuffle,
    },
    Config {
        name: "zstd+shuffle",
        codec: Codec::Zstd,
        cname: "zstd",
        filter: Filter::Shuffle,
    },
    Config {
        name: "lz4+bitshuffle",
        codec: Codec::Lz4,
        cname: "lz4",
        filter: Filter::BitShuffle,
    },
];

fn ours_params(c: &Config, nthreads: usize) -> CParams {
    let mut p = CParams::default();
    p.codec = c.codec;
    p.clevel = 5;
    p.typesize = 4;
    p.filters = [Filter::NoFilter; 6];
    p.filters[5] = c.filter;
    p.nthreads = nthreads;
    p
}

fn c_setup(c: &Config, nthreads: usize) {
    let name = CString::new(c.cname).unwrap();
    // SAFETY: plain setters of C-Blosc2's global state; `name` outlives the call.
    unsafe {
        blosc2_src::blosc1_set_compressor(name.as_ptr());
        blosc2_src::blosc2_set_nthreads(nthreads as i16);
    }
}

fn c_compress(c: &Config, data: &[u8], out: &mut [u8]) -> usize {
    let doshuffle = if c.filter == Filter::BitShuffle { 2 } else { 1 };
    // SAFETY: `data` and `out` are live, non-overlapping buffers of the given lengths.
    let n = unsafe {
        blosc2_src::blosc2_compress(
            5,
            doshuffle,
            4,
            data.as_ptr().cast(),
            data.len() as i32,
            out.as_mut_ptr().cast(),
            out.len() as i32,
        )
    };
    assert!(n > 0);
    n as usize
}

fn c_decompress(chunk: &[u8], out: &mut [u8]) -> usize {
    // SAFETY: `chunk` and `out` are live, non-overlapping buffers of the given lengths.
    let n = unsafe {
        blosc2_src::blosc2_decompress(
            chunk.as_ptr().cast(),
            chunk.len() as i32,
            out.as_mut_ptr().cast(),
            out.len() as i32,
        )
    };
    assert!(n > 0);
    n as usize
}

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
