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

use std::hint::black_box;

use blosc_chunk::DParams;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

mod common;

use common::{
    CONFIGS, N, c_compress, c_decompress, c_setup, f32_sine_noise, int32_ramp_noise, ours_params,
};

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
