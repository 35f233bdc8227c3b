//! Frame reading speed, with python-blosc2 4.14.1 (one thread) in the same groups as the peer.
//!
//! * `decode_all/*`: whole-frame decompression of a 64 MiB frame (python: `schunk[:]`).
//! * `read_one_chunk_1GiB/*`: open a 1 GiB frame on disk and decode one 4 MiB chunk (python:
//!   `blosc2.open` + `decompress_chunk`).
//!
//! Bench files are generated once under `target/blosc2-frame-bench/`. The python peer runs
//! `testdata/generators/blosc2-frame/bench.py`, which times the operations itself (so
//! interpreter start-up is excluded) and is used through `iter_custom`; it is skipped when
//! `target/xtask-venv/bin/python` (made by `cargo xtask conformance --live`) or
//! `$BLOSC2_FRAME_BENCH_PYTHON` cannot import blosc2.
#![allow(
    missing_docs,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    clippy::cast_precision_loss,
    clippy::cast_possible_wrap
)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use blosc2_frame::blosc_chunk::{CParams, Codec, Filter};
use blosc2_frame::{Durability, Frame, FrameFileWriter, FrameParams, FrameWriter};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn python() -> Option<PathBuf> {
    let p = std::env::var_os("BLOSC2_FRAME_BENCH_PYTHON").map_or_else(
        || root().join("target/xtask-venv/bin/python"),
        PathBuf::from,
    );
    let ok = Command::new(&p)
        .args(["-c", "import blosc2"])
        .output()
        .is_ok_and(|o| o.status.success());
    if ok {
        Some(p)
    } else {
        eprintln!(
            "python-blosc2 not available at {}: peer skipped",
            p.display()
        );
        None
    }
}

/// Times `iters` repetitions in the python peer.
fn py_time(python: &Path, args: &[String]) -> Duration {
    let out = Command::new(python)
        .arg(root().join("testdata/generators/blosc2-frame/bench.py"))
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let secs: f64 = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
    Duration::from_secs_f64(secs)
}

fn bench_path(name: &str, build: impl FnOnce(&Path)) -> PathBuf {
    let dir = root().join("target/blosc2-frame-bench");
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    if !p.exists() {
        build(&p);
    }
    p
}

/// i32 ramp with noise (compression ratio about 3-4, like typical numeric data).
fn ramp(n: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    (0..n as i32)
        .flat_map(|i| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (i.wrapping_mul(7) + (x % 64) as i32).to_le_bytes()
        })
        .collect()
}

fn decode_all(c: &mut Criterion) {
    let py = python();
    for (label, codec) in [("lz4_shuffle", Codec::Lz4), ("zstd_shuffle", Codec::Zstd)] {
        let path = bench_path(&format!("decode_64MiB_{label}.b2frame"), |p| {
            let mut cp = CParams::new(codec, 5, 4, Filter::Shuffle);
            cp.nthreads = 1;
            let mut w = FrameWriter::new(FrameParams::new(cp, 1 << 20)).unwrap();
            for k in 0..64 {
                w.append_buffer(&ramp(1 << 18, k + 1)).unwrap();
            }
            w.write_file(p, Durability::None).unwrap();
        });
        let f = Frame::open(&path).unwrap();
        let mut g = c.benchmark_group(format!("decode_all_64MiB_{label}"));
        g.throughput(Throughput::Bytes(f.header().nbytes));
        g.bench_function("ours", |b| b.iter(|| f.decompress_all().unwrap()));
        // The codec alone on chunks already in memory: the frame layer's overhead is the gap.
        let chunks: Vec<Vec<u8>> = (0..f.nchunks())
            .map(|i| f.chunk(i).unwrap().into_owned())
            .collect();
        g.bench_function("ours_codec_only", |b| {
            b.iter(|| {
                let mut out = vec![0u8; f.header().nbytes as usize];
                for (c, o) in chunks.iter().zip(out.chunks_mut(1 << 20)) {
                    blosc2_frame::blosc_chunk::decompress_into(c, o).unwrap();
                }
                out
            });
        });
        if let Some(py) = &py {
            let p = path.to_string_lossy().into_owned();
            g.bench_function("python-blosc2", |b| {
                b.iter_custom(|iters| {
                    py_time(py, &["decode".into(), p.clone(), iters.to_string()])
                });
            });
        }
        g.finish();
    }
}

fn read_one_chunk(c: &mut Criterion) {
    let py = python();
    const CHUNK: usize = 4 << 20;
    // 256 x 4 MiB incompressible chunks stored raw (clevel 0): a 1 GiB file.
    let path = bench_path("one_chunk_1GiB.b2frame", |p| {
        let mut cp = CParams::new(Codec::Lz4, 0, 8, Filter::NoFilter);
        cp.nthreads = 1;
        // Streamed to disk: the 1 GiB frame never sits in memory.
        let mut w =
            FrameFileWriter::create(p, FrameParams::new(cp, CHUNK), &[], Durability::None).unwrap();
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut buf = vec![0u8; CHUNK];
        for _ in 0..256 {
            for b in buf.chunks_mut(8) {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                b.copy_from_slice(&x.to_le_bytes());
            }
            w.append_data(&buf).unwrap();
        }
        w.finish().unwrap();
    });
    let mut g = c.benchmark_group("read_one_chunk_1GiB");
    g.throughput(Throughput::Bytes(CHUNK as u64));
    g.bench_function("ours", |b| {
        b.iter(|| {
            let f = Frame::open(&path).unwrap();
            f.decompress_chunk(137).unwrap()
        });
    });
    if let Some(py) = &py {
        let p = path.to_string_lossy().into_owned();
        g.bench_function("python-blosc2", |b| {
            b.iter_custom(|iters| {
                py_time(
                    py,
                    &[
                        "onechunk".into(),
                        p.clone(),
                        "137".into(),
                        iters.to_string(),
                    ],
                )
            });
        });
    }
    g.finish();
}

criterion_group!(benches, decode_all, read_one_chunk);
criterion_main!(benches);
