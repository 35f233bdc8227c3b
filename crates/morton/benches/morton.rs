//! Morton encode/decode against the peer crates, in the same criterion groups.
//!
//! `cargo bench -p morton-code --bench morton`
//!
//! Scalar groups call each function once per point with the input behind `black_box`, so no
//! implementation can be vectorised across calls; batch groups convert 1 M points into an
//! output slice (peers in a plain loop, which the compiler may vectorise for them too).
//! Coordinates are random 21-bit values; `zorder`'s BMI2 path only takes 16-bit coordinates
//! for a u64 key, so it gets the same values masked to 16 bits.

#![allow(missing_docs, clippy::unwrap_used, clippy::cast_possible_truncation)]

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use morton_code::portable;

const SCALAR_N: usize = 4096;
const BATCH_N: usize = 1 << 20;

/// Deterministic xorshift so every run sees the same points.
fn points(n: usize) -> Vec<[u32; 3]> {
    let mut s = 0x9e37_79b9_7f4a_7c15_u64;
    let mut next = move || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        (s & 0x1f_ffff) as u32
    };
    (0..n).map(|_| [next(), next(), next()]).collect()
}

fn scalar_encode(c: &mut Criterion) {
    let pts = points(SCALAR_N);
    let pts16: Vec<[u16; 3]> = pts.iter().map(|p| p.map(|v| v as u16)).collect();
    let mut g = c.benchmark_group("encode_3d_u64_scalar");
    g.throughput(Throughput::Elements(SCALAR_N as u64));
    g.bench_function("ours_dispatched_checked", |b| {
        b.iter(|| {
            pts.iter().fold(0u64, |a, p| {
                a ^ morton_code::encode_3d_u64(black_box(*p)).unwrap()
            })
        });
    });
    g.bench_function("ours_dispatched_wrapping", |b| {
        b.iter(|| {
            pts.iter().fold(0u64, |a, p| {
                a ^ morton_code::encode_3d_u64_wrapping(black_box(*p))
            })
        });
    });
    g.bench_function("ours_portable", |b| {
        b.iter(|| {
            pts.iter()
                .fold(0u64, |a, p| a ^ portable::encode_3d_u64(black_box(*p)))
        });
    });
    #[cfg(target_arch = "x86_64")]
    if let Some(t) = morton_code::Bmi2::detect() {
        g.bench_function("ours_bmi2", |b| {
            b.iter(|| {
                pts.iter()
                    .fold(0u64, |a, p| a ^ t.encode_3d_u64(black_box(*p)))
            });
        });
    }
    g.bench_function("morton_encoding", |b| {
        b.iter(|| {
            pts.iter().fold(0u128, |a, p| {
                let [x, y, z] = black_box(*p);
                a ^ morton_encoding::morton_encode([z, y, x])
            })
        });
    });
    g.bench_function("lindel", |b| {
        b.iter(|| {
            pts.iter().fold(0u128, |a, p| {
                let [x, y, z] = black_box(*p);
                a ^ lindel::morton_encode([z, y, x])
            })
        });
    });
    g.bench_function("zorder_software", |b| {
        b.iter(|| {
            pts.iter()
                .fold(0u128, |a, p| a ^ zorder::index_of(black_box(*p)))
        });
    });
    if let Some(t) = zorder::bmi2::HardwareSupportToken::new() {
        g.bench_function("zorder_bmi2_16bit", |b| {
            b.iter(|| {
                pts16
                    .iter()
                    .fold(0u64, |a, p| a ^ zorder::bmi2::index_of(black_box(*p), t))
            });
        });
    }
    g.finish();
}

fn scalar_decode(c: &mut Criterion) {
    let keys: Vec<u64> = points(SCALAR_N)
        .iter()
        .map(|p| portable::encode_3d_u64(*p))
        .collect();
    let keys128: Vec<u128> = keys.iter().map(|&k| u128::from(k)).collect();
    let keys48: Vec<u64> = keys.iter().map(|&k| k & ((1 << 48) - 1)).collect();
    let mut g = c.benchmark_group("decode_3d_u64_scalar");
    g.throughput(Throughput::Elements(SCALAR_N as u64));
    let xor = |a: u32, p: [u32; 3]| a ^ p[0] ^ p[1] ^ p[2];
    g.bench_function("ours_dispatched_checked", |b| {
        b.iter(|| {
            keys.iter().fold(0, |a, &k| {
                xor(a, morton_code::decode_3d_u64(black_box(k)).unwrap())
            })
        });
    });
    g.bench_function("ours_portable", |b| {
        b.iter(|| {
            keys.iter()
                .fold(0, |a, &k| xor(a, portable::decode_3d_u64(black_box(k))))
        });
    });
    #[cfg(target_arch = "x86_64")]
    if let Some(t) = morton_code::Bmi2::detect() {
        g.bench_function("ours_bmi2", |b| {
            b.iter(|| {
                keys.iter()
                    .fold(0, |a, &k| xor(a, t.decode_3d_u64(black_box(k))))
            });
        });
    }
    g.bench_function("morton_encoding", |b| {
        b.iter(|| {
            keys128.iter().fold(0, |a, &k| {
                xor(a, morton_encoding::morton_decode::<u32, 3>(black_box(k)))
            })
        });
    });
    g.bench_function("lindel", |b| {
        b.iter(|| {
            keys128.iter().fold(0, |a, &k| {
                xor(a, lindel::morton_decode::<u32, 3>(black_box(k)))
            })
        });
    });
    g.bench_function("zorder_software", |b| {
        b.iter(|| {
            keys128
                .iter()
                .fold(0, |a, &k| xor(a, zorder::coord_of::<u128, 3>(black_box(k))))
        });
    });
    if let Some(t) = zorder::bmi2::HardwareSupportToken::new() {
        g.bench_function("zorder_bmi2_16bit", |b| {
            b.iter(|| {
                keys48.iter().fold(0, |a, &k| {
                    let p: [u16; 3] = zorder::bmi2::coord_of(black_box(k), t);
                    a ^ u32::from(p[0]) ^ u32::from(p[1]) ^ u32::from(p[2])
                })
            });
        });
    }
    g.finish();
}

fn batch_encode(c: &mut Criterion) {
    let pts = points(BATCH_N);
    let pts16: Vec<[u16; 3]> = pts.iter().map(|p| p.map(|v| v as u16)).collect();
    let mut out = vec![0u64; BATCH_N];
    let mut out128 = vec![0u128; BATCH_N];
    let mut g = c.benchmark_group("encode_3d_u64_batch_1M");
    g.throughput(Throughput::Elements(BATCH_N as u64));
    g.bench_function(BenchmarkId::new("ours_batch", "dispatched"), |b| {
        b.iter(|| morton_code::encode_3d_u64_batch(&pts, &mut out).unwrap());
    });
    g.bench_function(BenchmarkId::new("ours_batch", "parallel_2_threads"), |b| {
        b.iter(|| morton_code::encode_3d_u64_batch_parallel(&pts, &mut out, 2).unwrap());
    });
    g.bench_function("ours_portable_loop", |b| {
        b.iter(|| {
            for (o, p) in out.iter_mut().zip(&pts) {
                *o = portable::encode_3d_u64(*p);
            }
        });
    });
    g.bench_function("morton_encoding", |b| {
        b.iter(|| {
            for (o, &[x, y, z]) in out128.iter_mut().zip(&pts) {
                *o = morton_encoding::morton_encode([z, y, x]);
            }
        });
    });
    g.bench_function("lindel", |b| {
        b.iter(|| {
            for (o, &[x, y, z]) in out128.iter_mut().zip(&pts) {
                *o = lindel::morton_encode([z, y, x]);
            }
        });
    });
    g.bench_function("zorder_software", |b| {
        b.iter(|| {
            for (o, p) in out128.iter_mut().zip(&pts) {
                *o = zorder::index_of(*p);
            }
        });
    });
    if let Some(t) = zorder::bmi2::HardwareSupportToken::new() {
        g.bench_function("zorder_bmi2_16bit", |b| {
            b.iter(|| {
                for (o, p) in out.iter_mut().zip(&pts16) {
                    *o = zorder::bmi2::index_of(*p, t);
                }
            });
        });
    }
    g.finish();
}

fn batch_decode(c: &mut Criterion) {
    let keys: Vec<u64> = points(BATCH_N)
        .iter()
        .map(|p| portable::encode_3d_u64(*p))
        .collect();
    let keys128: Vec<u128> = keys.iter().map(|&k| u128::from(k)).collect();
    let mut out = vec![[0u32; 3]; BATCH_N];
    let mut g = c.benchmark_group("decode_3d_u64_batch_1M");
    g.throughput(Throughput::Elements(BATCH_N as u64));
    g.bench_function(BenchmarkId::new("ours_batch", "dispatched"), |b| {
        b.iter(|| morton_code::decode_3d_u64_batch(&keys, &mut out).unwrap());
    });
    g.bench_function(BenchmarkId::new("ours_batch", "parallel_2_threads"), |b| {
        b.iter(|| morton_code::decode_3d_u64_batch_parallel(&keys, &mut out, 2).unwrap());
    });
    g.bench_function("morton_encoding", |b| {
        b.iter(|| {
            for (o, &k) in out.iter_mut().zip(&keys128) {
                let [z, y, x] = morton_encoding::morton_decode::<u32, 3>(k);
                *o = [x, y, z];
            }
        });
    });
    g.bench_function("zorder_software", |b| {
        b.iter(|| {
            for (o, &k) in out.iter_mut().zip(&keys128) {
                *o = zorder::coord_of::<u128, 3>(k);
            }
        });
    });
    let keys48: Vec<u64> = keys.iter().map(|&k| k & ((1 << 48) - 1)).collect();
    let mut out16 = vec![[0u16; 3]; BATCH_N];
    if let Some(t) = zorder::bmi2::HardwareSupportToken::new() {
        g.bench_function("zorder_bmi2_16bit", |b| {
            b.iter(|| {
                for (o, &k) in out16.iter_mut().zip(&keys48) {
                    *o = zorder::bmi2::coord_of(k, t);
                }
            });
        });
    }
    g.finish();
}

criterion_group!(
    benches,
    scalar_encode,
    scalar_decode,
    batch_encode,
    batch_decode
);
criterion_main!(benches);
