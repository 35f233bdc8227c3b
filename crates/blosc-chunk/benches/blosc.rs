//! Decode and encode throughput of blosc-chunk against C-Blosc2 in the same criterion group, so
//! each ratio comes from one run. Peers: the `blosc2-src` build of C-Blosc2 2.15.3.dev (SSE2,
//! no zlib) and, when `SCIFMT_BLOSC2_LIB` names a `libblosc2.so` (`cargo xtask blosc-peer`
//! fetches C-Blosc2 3.3.5), that library; both through the context API. Data: 4 MiB of int32
//! ramp + noise, float32 sine + noise, uint16 sine + noise; BloscLZ, LZ4, LZ4HC, zstd and zlib
//! with shuffle, LZ4 with bitshuffle, and LZ4 and zstd with shuffle + BYTEDELTA (only the loaded
//! library has that plugin), clevel 5; 1 and 2 threads. All decoders read the same chunk (made
//! by blosc-chunk). A peer that cannot handle a row is left out of it.
//!
//! Run: `cargo bench -p blosc-chunk --bench blosc -- --warm-up-time 1 --measurement-time 3`
//! (the interleaved `examples/interleaved_vs_c.rs` is the steadier comparison).
#![allow(
    missing_docs,
    clippy::unwrap_used,
    reason = "benchmark: fails loudly on a broken setup"
)]

use std::hint::black_box;

use blosc_chunk::DParams;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

mod common;

use common::{CONFIGS, N, ours_params, peers, workloads};

fn bench(crit: &mut Criterion) {
    let peers = peers();
    for w in workloads() {
        let data = &w.data;
        for c in &CONFIGS {
            let chunk = blosc_chunk::compress(data, &ours_params(c, w.typesize, 1)).unwrap();
            for nthreads in [1usize, 2] {
                let mut out = vec![0u8; N];
                let dparams = DParams::default().with_threads(nthreads);
                let mut g =
                    crit.benchmark_group(format!("decode/{}/{}/t{nthreads}", w.name, c.name));
                g.throughput(Throughput::Bytes(N as u64));
                g.bench_function("ours", |b| {
                    b.iter(|| {
                        blosc_chunk::decompress_into_ctx(black_box(&chunk), &mut out, &dparams)
                            .unwrap()
                    });
                });
                for p in &peers {
                    let mut ctx = p.dctx(nthreads).unwrap();
                    if ctx.decompress(&chunk, &mut out) != Some(N) {
                        continue;
                    }
                    assert!(out == *data, "{} does not restore the data", p.label);
                    g.bench_function(&p.label, |b| {
                        b.iter(|| ctx.decompress(black_box(&chunk), &mut out).unwrap());
                    });
                }
                g.finish();

                let params = ours_params(c, w.typesize, nthreads);
                let mut cbuf = vec![0u8; N + blosc_chunk::MAX_OVERHEAD];
                let mut g =
                    crit.benchmark_group(format!("encode/{}/{}/t{nthreads}", w.name, c.name));
                g.throughput(Throughput::Bytes(N as u64));
                g.bench_function("ours", |b| {
                    b.iter(|| blosc_chunk::compress(black_box(data), &params).unwrap());
                });
                for p in &peers {
                    let mut ctx = p.cctx(c, w.typesize, nthreads).unwrap();
                    if ctx.compress(data, &mut cbuf).is_none() {
                        continue;
                    }
                    g.bench_function(&p.label, |b| {
                        b.iter(|| ctx.compress(black_box(data), &mut cbuf).unwrap());
                    });
                }
                g.finish();
            }
        }
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
