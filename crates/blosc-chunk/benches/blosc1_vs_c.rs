//! Blosc1 format (`Format::Blosc1`) encode and decode against C-Blosc 1.21 (the `blosc-src`
//! crate, the C-Blosc zarrs links), same data and settings, 1 and 2 threads, peer in the same
//! criterion group. Before timing, each configuration checks that both write the same chunk
//! (C-Blosc 1's one-thread chunk: with threads it stores blocks in the order they finish; zlib:
//! both decode each other's, C-Blosc 1 links stock zlib) so the rows compare like with like.
//!
//! `cargo bench -p blosc-chunk --bench blosc1_vs_c`

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

use blosc_chunk::{CParams, Codec, Filter};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

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

fn bench(c: &mut Criterion) {
    let data = u16_signal();
    for (codec, filter) in [
        (Codec::BloscLz, Filter::Shuffle),
        (Codec::Lz4, Filter::Shuffle),
        (Codec::Lz4, Filter::BitShuffle),
        (Codec::Lz4Hc, Filter::Shuffle),
        (Codec::Zstd, Filter::Shuffle),
        (Codec::Zlib, Filter::Shuffle),
        (Codec::Lz4, Filter::NoFilter),
    ] {
        for threads in [1usize, 2] {
            let mut cp = CParams::blosc1(codec, 5, 2, filter);
            cp.nthreads = threads;
            let ours = blosc_chunk::compress(&data, &cp).unwrap();
            // C-Blosc 1 with threads stores blocks in the order they finish, so its
            // one-thread chunk is the reference (ours does not depend on the thread count).
            let theirs = c_compress(codec, 5, 2, filter, &data, 1);
            if codec == Codec::Zlib {
                assert_eq!(blosc_chunk::decompress(&theirs).unwrap(), data);
                let mut back = vec![0u8; data.len()];
                c_decompress(&ours, &mut back, 1);
                assert!(back == data);
            } else {
                assert!(ours == theirs, "{codec:?} {filter:?}: different chunks");
            }
            let label = format!("{}-{}-t{threads}", codec.name(), filter.id());
            let mut g = c.benchmark_group(format!("blosc1/compress/{label}"));
            g.throughput(Throughput::Bytes(data.len() as u64));
            g.bench_function("ours", |b| {
                b.iter(|| blosc_chunk::compress(black_box(&data), &cp).unwrap());
            });
            g.bench_function("c-blosc-1.21", |b| {
                b.iter(|| c_compress(codec, 5, 2, filter, black_box(&data), threads));
            });
            g.finish();
            let mut g = c.benchmark_group(format!("blosc1/decompress/{label}"));
            g.throughput(Throughput::Bytes(data.len() as u64));
            let dp = blosc_chunk::DParams::default().with_threads(threads);
            let mut out = vec![0u8; data.len()];
            g.bench_function("ours", |b| {
                b.iter(|| {
                    blosc_chunk::decompress_into_ctx(black_box(&theirs), &mut out, &dp).unwrap()
                });
            });
            g.bench_function("c-blosc-1.21", |b| {
                b.iter(|| c_decompress(black_box(&theirs), &mut out, threads));
            });
            g.finish();
        }
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20).warm_up_time(std::time::Duration::from_millis(500)).measurement_time(std::time::Duration::from_secs(2));
    targets = bench
}
criterion_main!(benches);
