//! Decode and encode throughput of blosc-chunk against C-Blosc2 (the `blosc2-src` build of
//! C-Blosc2 2.15.3.dev, global API) in the same criterion group, so each ratio comes from one
//! run. Data: 4 MiB of (a) int32 ramp + noise, (b) float32 sine + noise; codecs BloscLZ, LZ4,
//! zstd with shuffle and LZ4 with bitshuffle, clevel 5; 1 and 2 threads. Both decoders read the
//! same chunk (made by blosc-chunk).
//!
//! Run: `cargo bench -p blosc-chunk --bench blosc -- --warm-up-time 1 --measurement-time 3`
#![allow(
    missing_docs,
    unsafe_code,
    clippy::unwrap_used,
    clippy::cast_possible_truncation,
    clippy::cast_possible_wrap,
    clippy::cast_sign_loss,
    reason = "benchmark: FFI calls into the C peer, synthetic data"
)]

use std::ffi::CString;
use std::hint::black_box;

use blosc_chunk::{CParams, Codec, DParams, Filter};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

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

fn bench(crit: &mut Criterion) {
    // SAFETY: one-time library initialisation.
    unsafe { blosc2_src::blosc2_init() };
    for (dname, data) in [
        ("int32-ramp", int32_ramp_noise()),
        ("f32-sine", f32_sine_noise()),
    ] {
        for c in &CONFIGS {
            for nthreads in [1usize, 2] {
                let chunk = blosc_chunk::compress(&data, &ours_params(c, 1)).unwrap();
                let mut out = vec![0u8; N];
                c_setup(c, nthreads);
                c_decompress(&chunk, &mut out);
                assert_eq!(out, data);
                let dparams = DParams::with_threads(nthreads);

                let mut g = crit.benchmark_group(format!("decode/{dname}/{}/t{nthreads}", c.name));
                g.throughput(Throughput::Bytes(N as u64));
                g.bench_function("ours", |b| {
                    b.iter(|| {
                        blosc_chunk::decompress_into_ctx(black_box(&chunk), &mut out, &dparams)
                            .unwrap()
                    });
                });
                g.bench_function("c-blosc2", |b| {
                    b.iter(|| c_decompress(black_box(&chunk), &mut out));
                });
                g.finish();

                let params = ours_params(c, nthreads);
                let mut cbuf = vec![0u8; N + 32];
                let mut g = crit.benchmark_group(format!("encode/{dname}/{}/t{nthreads}", c.name));
                g.throughput(Throughput::Bytes(N as u64));
                g.bench_function("ours", |b| {
                    b.iter(|| blosc_chunk::compress(black_box(&data), &params).unwrap());
                });
                g.bench_function("c-blosc2", |b| {
                    b.iter(|| c_compress(c, black_box(&data), &mut cbuf));
                });
                g.finish();
            }
        }
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
