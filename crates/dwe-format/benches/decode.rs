//! Decoding speed against `constriction`'s `SmallAnsCoder` (the same coder) on a synthetic
//! stream-layout file with the real dimensions T=209, V=30 000, K=100, J=100, generated here.
//!
//! Every group has our implementation and the peer decoding the same words of the same file.
//! The peer gets the same help we get (jump table, bisection tree, model tables built once);
//! only the entropy decoding differs.
#![allow(
    missing_docs,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    clippy::cast_possible_wrap
)]

use std::hint::black_box;

use constriction::Seek;
use constriction::backends::{Cursor, Reverse};
use constriction::stream::Decode;
use constriction::stream::model::SmallNonContiguousLookupDecoderModel;
use constriction::stream::stack::SmallAnsCoder;
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use dwe_format::{Dims, DweFile, WriteLayout, encode};

const T: u32 = 209;
const V: u32 = 30_000;
const K: u32 = 100;
const J: u32 = 100;

/// A residual tensor with ~95% zeros and small values otherwise (like a typical
/// quantised embedding), turned into values through the bisection tree, then encoded.
fn synthetic_file() -> Vec<u8> {
    let vk = (V * K) as usize;
    let mut x = vec![0i16; T as usize * vk];
    let mut s: u64 = 0x2545_f491_4f6c_dd1d;
    for r in &mut x {
        s = s
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        let u = (s >> 33) as u32;
        *r = if u % 100 < 95 {
            0
        } else {
            ((u >> 8) % 15) as i16 - 7
        };
    }
    // Residuals -> values (parents first), so that encode() reproduces these residuals.
    let mut stack = vec![(0usize, T as usize - 1)];
    let mut order = Vec::new();
    while let Some((l, r)) = stack.pop() {
        let m = (l + r) / 2;
        if m == l {
            continue;
        }
        order.push((l, m, r));
        stack.push((m, r));
        stack.push((l, m));
    }
    for (l, m, r) in order {
        for i in 0..vk {
            let p = ((i32::from(x[l * vk + i]) + i32::from(x[r * vk + i])) / 2) as i16;
            x[m * vk + i] = x[m * vk + i].wrapping_add(p);
        }
    }
    encode(
        &x,
        Dims::new(T, V, K),
        0.01,
        WriteLayout::Stream { jump_interval: J },
    )
    .unwrap()
}

/// The peer: constriction over the same compressed words, with one lookup model per step.
struct Peer {
    words: Vec<u16>,
    rows: Vec<(usize, u32)>,
    models: Vec<SmallNonContiguousLookupDecoderModel<i16>>,
}

impl Peer {
    fn new(file: &DweFile<Vec<u8>>) -> Self {
        let bytes = file.as_bytes();
        let jta = file.header().section_address as usize * 4;
        let points = V.div_ceil(J) as usize;
        let rows: Vec<(usize, u32)> = (0..T as usize * points)
            .map(|r| {
                let at = jta + 8 * r;
                let o = u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap());
                let s = u32::from_le_bytes(bytes[at + 4..at + 8].try_into().unwrap());
                (o as usize, s)
            })
            .collect();
        let section = jta + 8 * rows.len();
        let words = bytes[section..]
            .chunks_exact(2)
            .map(|b| u16::from_le_bytes([b[0], b[1]]))
            .collect();
        let models = (0..T)
            .map(|t| {
                let m = file.model(t).unwrap();
                SmallNonContiguousLookupDecoderModel::from_symbols_and_nonzero_fixed_point_probabilities(
                    m.symbols().iter().copied(),
                    m.frequencies(),
                    false,
                )
                .unwrap()
            })
            .collect();
        Self {
            words,
            rows,
            models,
        }
    }

    /// Residuals of words `first..first + out.len()/K` of time step t.
    fn decode_words(&self, t: u32, first: usize, out: &mut [i16]) {
        let points = V.div_ceil(J) as usize;
        let (offset, state) = self.rows[t as usize * points + first / J as usize];
        let mut coder = SmallAnsCoder::from_raw_parts(
            Reverse(Cursor::new_at_write_beginning(&self.words[..])),
            state,
        );
        coder.seek((offset, state)).unwrap();
        let model = &self.models[t as usize];
        let skip = (first % J as usize) * K as usize;
        for _ in 0..skip {
            coder.decode_symbol(model).unwrap();
        }
        for o in out {
            *o = coder.decode_symbol(model).unwrap();
        }
    }
}

/// Values of words `first..` at time step `t` through the bisection tree, with any residual
/// decoder (shared by both implementations for the peer-side value benchmarks).
fn values_via(
    decode: &dyn Fn(u32, usize, &mut [i16]),
    t: u32,
    first: usize,
    len: usize,
) -> Vec<i16> {
    let mut left = vec![0i16; len];
    let mut right = vec![0i16; len];
    let mut cur = vec![0i16; len];
    decode(0, first, &mut left);
    if t == 0 {
        return left;
    }
    decode(T - 1, first, &mut right);
    if t == T - 1 {
        return right;
    }
    let (mut l, mut r) = (0u32, T - 1);
    loop {
        let m = (l + r) / 2;
        decode(m, first, &mut cur);
        for ((c, &a), &b) in cur.iter_mut().zip(&left).zip(&right) {
            *c = c.wrapping_add(((i32::from(a) + i32::from(b)) / 2) as i16);
        }
        if m == t {
            return cur;
        }
        if t < m {
            std::mem::swap(&mut right, &mut cur);
            r = m;
        } else {
            std::mem::swap(&mut left, &mut cur);
            l = m;
        }
    }
}

fn most_related(x: &[i16], target: usize, amt: usize) -> Vec<u32> {
    let k = K as usize;
    let tv = &x[target * k..target * k + k];
    let mut top = vec![(u32::MAX, i32::MIN); amt];
    for (w, v) in x.chunks(k).enumerate() {
        if w == target {
            continue;
        }
        let score = v.iter().zip(tv).fold(0i32, |a, (&p, &q)| {
            a.wrapping_add(i32::from(p) * i32::from(q))
        });
        if score > top[amt - 1].1 {
            top[amt - 1] = (w as u32, score);
            let mut i = amt - 1;
            while i > 0 && top[i - 1].1 < score {
                top.swap(i - 1, i);
                i -= 1;
            }
        }
    }
    top.into_iter().map(|e| e.0).collect()
}

fn benches(c: &mut Criterion) {
    let bytes = synthetic_file();
    eprintln!("synthetic file: {} bytes", bytes.len());
    let file = DweFile::from_bytes(bytes).unwrap();
    let peer = Peer::new(&file);
    let vk = (V * K) as usize;
    let k = K as usize;

    // Sanity: both decode the same residuals and values.
    let mut a = vec![0i16; vk];
    let mut b = vec![0i16; vk];
    file.residuals_into(104, &mut a).unwrap();
    peer.decode_words(104, 0, &mut b);
    assert_eq!(a, b);
    let peer_decode = |t: u32, first: usize, out: &mut [i16]| peer.decode_words(t, first, out);
    assert_eq!(
        file.timestep(69).unwrap(),
        values_via(&peer_decode, 69, 0, vk)
    );
    assert_eq!(
        file.vector(12_345, 77).unwrap(),
        values_via(&peer_decode, 77, 12_345, k)
    );

    let mut g = c.benchmark_group("timestep_residuals");
    g.throughput(Throughput::Elements(vk as u64));
    g.bench_function(BenchmarkId::new("dwe-format", "t=104"), |bench| {
        bench.iter(|| file.residuals_into(black_box(104), &mut a).unwrap());
    });
    g.bench_function(BenchmarkId::new("constriction", "t=104"), |bench| {
        bench.iter(|| peer.decode_words(black_box(104), 0, &mut b));
    });
    g.finish();

    let mut g = c.benchmark_group("random_vector");
    let picks: Vec<(u32, u32)> = (0..64u32)
        .map(|i| ((i * 7919 + 13) % V, (i * 31 + 5) % T))
        .collect();
    g.throughput(Throughput::Elements(picks.len() as u64));
    g.bench_function("dwe-format", |bench| {
        bench.iter(|| {
            for &(w, t) in &picks {
                black_box(file.vector(w, t).unwrap());
            }
        });
    });
    g.bench_function("constriction", |bench| {
        bench.iter(|| {
            for &(w, t) in &picks {
                black_box(values_via(&peer_decode, t, w as usize, k));
            }
        });
    });
    g.finish();

    let mut g = c.benchmark_group("timestep_values");
    g.sample_size(10);
    g.bench_function(BenchmarkId::new("dwe-format", "t=69"), |bench| {
        bench.iter(|| black_box(file.timestep(black_box(69)).unwrap()));
    });
    g.bench_function(BenchmarkId::new("constriction", "t=69"), |bench| {
        bench.iter(|| black_box(values_via(&peer_decode, black_box(69), 0, vk)));
    });
    g.finish();

    let mut g = c.benchmark_group("most_related_to_at_t");
    g.sample_size(10);
    let targets = [3u32, 1000, 20_000];
    g.bench_function(
        BenchmarkId::new("dwe-format", "3 targets, amt 10, t=104"),
        |bench| {
            bench.iter(|| black_box(file.most_related_to_at_t(&targets, 104, 10).unwrap()));
        },
    );
    g.bench_function(
        BenchmarkId::new("constriction", "3 targets, amt 10, t=104"),
        |bench| {
            bench.iter(|| {
                let x = values_via(&peer_decode, 104, 0, vk);
                black_box(
                    targets
                        .iter()
                        .flat_map(|&w| most_related(&x, w as usize, 10))
                        .collect::<Vec<_>>(),
                )
            });
        },
    );
    g.finish();
}

criterion_group!(decode, benches);
criterion_main!(decode);
