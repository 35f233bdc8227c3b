//! Ours vs the reference Rust core `wkwrap` 1.6 on the same files: one 256³ u8 file (block 32,
//! file_len 8) of smooth data `(x/4 + y/4 + z/4) mod 256`, read whole, read as an unaligned 100³
//! box, written whole in both layouts, and compressed to LZ4HC (see BENCHMARKS.md).
//!
//! `cargo bench -p wkw --bench wkw -- --warm-up-time 1 --measurement-time 3`
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]
#![allow(clippy::cast_possible_truncation)] // u8 test data

use std::path::{Path, PathBuf};

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use wkw::{Array, BlockType, Dataset, Header, Options, Order, Threads, VoxelType};

const SIDE: u32 = 256;

fn smooth(order: Order) -> Array {
    let n = SIDE as usize;
    let mut f = vec![0u8; n * n * n];
    for z in 0..n {
        for y in 0..n {
            for x in 0..n {
                f[(z * n + y) * n + x] = ((x / 4 + y / 4 + z / 4) % 256) as u8;
            }
        }
    }
    Array::from_bytes(VoxelType::U8, 1, [SIDE; 3], Order::Fortran, f)
        .unwrap()
        .to_order(order)
}

fn header(bt: BlockType) -> Header {
    Header::new(VoxelType::U8, 1, 32, 8, bt).unwrap()
}

fn make(root: &Path, bt: BlockType, data: &Array) -> PathBuf {
    let dir = root.join(format!("{bt:?}"));
    let ds = Dataset::create(&dir, header(bt)).unwrap();
    ds.write([0; 3], &data.view()).unwrap();
    dir
}

/// The same dataset with [`Threads::Caller`]: the work stays on the benchmark's thread.
fn on_caller(ds: &Dataset) -> Dataset {
    Dataset::open_with(ds.root(), Options::default().with_threads(Threads::Caller)).unwrap()
}

fn peer_read(ds: &wkwrap::Dataset, off: [u32; 3], shape: [u32; 3]) -> Vec<u8> {
    let mut buf = vec![0u8; shape.iter().map(|&s| s as usize).product()];
    let v = |a: [u32; 3]| wkwrap::Vec3 {
        x: a[0],
        y: a[1],
        z: a[2],
    };
    let mut mat = wkwrap::Mat::new(&mut buf, v(shape), 1, wkwrap::VoxelType::U8, false).unwrap();
    ds.read_mat(v(off), &mut mat).unwrap();
    buf
}

fn reads(c: &mut Criterion) {
    let tmp = tempfile::tempdir().unwrap();
    let data = smooth(Order::Fortran);
    for bt in [BlockType::Raw, BlockType::Lz4, BlockType::Lz4Hc] {
        let dir = make(tmp.path(), bt, &data);
        let ours = Dataset::open(&dir).unwrap();
        let single = on_caller(&ours);
        let peer = wkwrap::Dataset::new(&dir).unwrap();
        assert_eq!(
            peer_read(&peer, [0; 3], [SIDE; 3]),
            ours.read([0; 3], [SIDE; 3], Order::Fortran)
                .unwrap()
                .into_bytes()
        );
        for (label, off, shape) in [
            ("256", [0; 3], [SIDE; 3]),
            ("100_unaligned", [50, 60, 70], [100; 3]),
        ] {
            let mut g = c.benchmark_group(format!("read_{label}_{bt:?}"));
            g.throughput(Throughput::Bytes(
                shape.iter().map(|&s| u64::from(s)).product(),
            ));
            g.bench_function("wkwrap", |b| b.iter(|| peer_read(&peer, off, shape)));
            g.bench_function("ours_1_thread", |b| {
                b.iter(|| single.read(off, shape, Order::Fortran).unwrap())
            });
            g.bench_function("ours", |b| {
                b.iter(|| ours.read(off, shape, Order::Fortran).unwrap())
            });
            g.bench_function("ours_c_order", |b| {
                b.iter(|| ours.read(off, shape, Order::C).unwrap())
            });
            g.finish();
        }
    }
}

fn writes(c: &mut Criterion) {
    let tmp = tempfile::tempdir().unwrap();
    for bt in [BlockType::Raw, BlockType::Lz4, BlockType::Lz4Hc] {
        for order in [Order::Fortran, Order::C] {
            let data = smooth(order);
            let mut bytes = data.as_bytes().to_vec();
            let ours = Dataset::create(
                tmp.path().join(format!("ours-{bt:?}-{order:?}")),
                header(bt),
            )
            .unwrap();
            let single = on_caller(&ours);
            let peer_dir = tmp.path().join(format!("peer-{bt:?}-{order:?}"));
            let peer_header = wkwrap::Header {
                version: 1,
                block_len_log2: 5,
                file_len_log2: 3,
                // The wkwrap 1.6.0 release compresses both LZ4 block types with LZ4HC level 9
                // (see BENCHMARKS.md), so its LZ4 rows are LZ4HC files either way.
                block_type: match bt {
                    BlockType::Raw => wkwrap::BlockType::Raw,
                    BlockType::Lz4 => wkwrap::BlockType::LZ4,
                    _ => wkwrap::BlockType::LZ4HC,
                },
                voxel_type: wkwrap::VoxelType::U8,
                voxel_size: 1,
                data_offset: 0,
                jump_table: None,
            };
            let peer = wkwrap::Dataset::create(&peer_dir, peer_header).unwrap();
            let mut g = c.benchmark_group(format!("write_256_{bt:?}_{order:?}"));
            g.throughput(Throughput::Bytes(u64::from(SIDE).pow(3)));
            g.bench_function("wkwrap", |b| {
                b.iter(|| {
                    let v = wkwrap::Vec3 {
                        x: SIDE,
                        y: SIDE,
                        z: SIDE,
                    };
                    let mat = wkwrap::Mat::new(
                        &mut bytes,
                        v,
                        1,
                        wkwrap::VoxelType::U8,
                        order == Order::C,
                    )
                    .unwrap();
                    peer.write_mat(wkwrap::Vec3 { x: 0, y: 0, z: 0 }, &mat)
                        .unwrap()
                })
            });
            g.bench_function("ours_1_thread", |b| {
                b.iter(|| single.write([0; 3], &data.view()).unwrap())
            });
            g.bench_function("ours", |b| {
                b.iter(|| ours.write([0; 3], &data.view()).unwrap())
            });
            g.finish();
            // Same content on both sides (when both ran, i.e. no filter excluded one).
            if peer_dir.join("z0").exists() && ours.root().join("z0").exists() {
                let ours_read = ours
                    .read([0; 3], [SIDE; 3], Order::Fortran)
                    .unwrap()
                    .into_bytes();
                let peer = wkwrap::Dataset::new(&peer_dir).unwrap();
                assert_eq!(peer_read(&peer, [0; 3], [SIDE; 3]), ours_read);
            }
        }
    }
}

fn compress(c: &mut Criterion) {
    let tmp = tempfile::tempdir().unwrap();
    let src = make(tmp.path(), BlockType::Raw, &smooth(Order::Fortran));
    let mut g = c.benchmark_group("compress_256_lz4hc");
    g.throughput(Throughput::Bytes(u64::from(SIDE).pow(3)));
    let dst = tmp.path().join("dst");
    g.bench_function("wkwrap", |b| {
        b.iter(|| {
            let out = dst.join("x0.wkw");
            let _ = std::fs::remove_dir_all(&dst);
            wkwrap::File::open(&src.join("z0/y0/x0.wkw"))
                .unwrap()
                .compress(&out)
                .unwrap();
        })
    });
    for (name, threads) in [("ours_1_thread", Threads::Caller), ("ours", Threads::Rayon)] {
        g.bench_function(BenchmarkId::from_parameter(name), |b| {
            b.iter(|| {
                let _ = std::fs::remove_dir_all(&dst);
                let options = Options::default().with_threads(threads);
                wkw::compress(&src, &dst, BlockType::Lz4Hc, options, &|_| {}).unwrap();
            })
        });
    }
    g.finish();
}

criterion_group!(benches, reads, writes, compress);
criterion_main!(benches);
