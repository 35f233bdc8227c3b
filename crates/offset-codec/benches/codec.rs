//! Decode and encode of the `offset` codec against the copying baseline, in the same groups.
//!
//! `cargo bench -p offset-codec --bench codec -- --warm-up-time 1 --measurement-time 3`
//!
//! The proposal ships no implementation to compare with, so the peer is what a straightforward
//! implementation does: decode copies the payload out (`chunk[n..].to_vec()`, as Python's
//! `raw[offset:]` does), encode concatenates a header vector and the payload. Ours decodes to a
//! borrowed slice (O(1) in the chunk size) and encodes into one exact-size allocation.

#![allow(missing_docs, clippy::unwrap_used)]

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use offset_codec::{OffsetCodec, OffsetConfiguration};

const SIZES: [usize; 3] = [4 << 10, 128 << 10, 4 << 20];

fn bench(c: &mut Criterion) {
    let prefix = [0xa5u8; 110];
    let codec = OffsetCodec::new(OffsetConfiguration::from_prefix(&prefix)).unwrap();
    let mut g = c.benchmark_group("decode");
    for size in SIZES {
        let chunk = codec.encode(&vec![7u8; size]).unwrap();
        g.throughput(Throughput::Bytes(size as u64));
        g.bench_with_input(
            BenchmarkId::new("offset-codec", size),
            &chunk,
            |b, chunk| {
                b.iter(|| black_box(codec.decode(black_box(chunk)).unwrap().len()));
            },
        );
        g.bench_with_input(BenchmarkId::new("copy (peer)", size), &chunk, |b, chunk| {
            b.iter(|| black_box(black_box(chunk).get(110..).unwrap().to_vec()));
        });
    }
    g.finish();
    let mut g = c.benchmark_group("encode");
    for size in SIZES {
        let payload = vec![7u8; size];
        g.throughput(Throughput::Bytes(size as u64));
        g.bench_with_input(BenchmarkId::new("offset-codec", size), &payload, |b, p| {
            b.iter(|| black_box(codec.encode(black_box(p)).unwrap()));
        });
        g.bench_with_input(BenchmarkId::new("concat (peer)", size), &payload, |b, p| {
            b.iter(|| {
                let mut v = prefix.to_vec();
                v.extend_from_slice(black_box(p));
                black_box(v)
            });
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
