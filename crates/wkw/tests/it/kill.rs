//! Crash safety: a child process writes in a loop and is SIGKILLed at pseudo-random moments,
//! 100 times per scenario; after every kill the dataset must read without error and hold a
//! consistent state.
//!
//! * compressed (LZ4) files are replaced atomically: every file holds entirely the content of
//!   one write, never a mix, and leftover temporary files are never listed as data;
//! * raw files are updated in place block by block: every block holds the content of one write,
//!   or (a kill in the middle of the block's `pwrite`, where the block crosses a page boundary)
//!   the previous write's bytes followed by this write's, never anything else; such torn blocks
//!   are counted and printed.
//!
//! * `compress` of a dataset: every destination is absent, or a dataset whose every listed
//!   file is complete and equal to its source file (files may be missing); the source is
//!   untouched.
//!
//! The test binary is its own child: `kill_child` does nothing unless `WKW_KILL_CHILD` is set.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::cast_possible_truncation,
    reason = "a failed unwrap or panic is a failed test; test sizes are small"
)]

use std::path::Path;
use testkit::{Lcg, run_and_kill};

use wkw::{Array, BlockType, Dataset, Header, Order, VoxelType};

const KILLS: usize = 100;
const ENV: &str = "WKW_KILL_CHILD";
/// 8³-voxel blocks, 4³ blocks per file: 32³-voxel files.
const FILE: u32 = 32;
/// Every write: x in 16..48 (half of file x0, half of file x1), all of y and z.
const BOX_AT: [u32; 3] = [16, 0, 0];
const BOX: [u32; 3] = [32, 32, 32];
/// Content outside the written box.
const BACKGROUND: u8 = 0xAA;

fn header(block_type: BlockType) -> Header {
    Header::new(VoxelType::U8, 1, 8, 4, block_type).unwrap()
}

fn fill(shape: [u32; 3], v: u8) -> Array {
    let n = shape.iter().map(|&s| s as usize).product();
    Array::from_bytes(VoxelType::U8, 1, shape, Order::Fortran, vec![v; n]).unwrap()
}

/// The child: fills the box with value V, then the next value, and so on (1 to 200, cycling)
/// until killed.
#[test]
fn kill_child() {
    let Ok(spec) = std::env::var(ENV) else {
        return;
    };
    if let Some(base) = spec.strip_prefix("compress:") {
        // Convert the raw source into fresh destinations until killed.
        let base = Path::new(base);
        for i in 0u32.. {
            let dst = base.join(format!("dst-{}-{i}", std::process::id()));
            wkw::compress(
                base.join("src"),
                &dst,
                BlockType::Lz4,
                wkw::Options::default(),
                &|_| {},
            )
            .unwrap();
            testkit::kill_child_step_done();
        }
    }
    // "ROOT@V": start with value V, the newest one the parent saw in the box, so that a
    // block torn by this child's first write holds two consecutive values like every other.
    let (root, start) = spec.rsplit_once('@').unwrap();
    let ds = Dataset::open(Path::new(root)).unwrap();
    let mut v: u8 = start.parse().unwrap();
    loop {
        ds.write(BOX_AT, &fill(BOX, v).view()).unwrap();
        testkit::kill_child_step_done();
        v = next(v);
    }
}

/// The value written after `v`: 1, 2, …, 200, 1, …
fn next(v: u8) -> u8 {
    v % 200 + 1
}

/// Checks the invariants; returns the value of each touched block region in file x0 and x1,
/// and the newest value found in the box.
fn check(root: &Path, block_type: BlockType) -> (Vec<u8>, u8) {
    let ds = Dataset::open(root).unwrap();
    let files = ds.list_files().unwrap();
    let names: Vec<_> = files.iter().map(|(i, _)| *i).collect();
    assert_eq!(
        names,
        vec![[0, 0, 0], [1, 0, 0]],
        "stray files listed as data"
    );
    let report = wkw::verify(root, wkw::Options::default(), &|_| {}).unwrap();
    assert!(report.is_ok(), "verify after a kill: {report:?}");
    let all = ds
        .read([0; 3], [2 * FILE, FILE, FILE], Order::Fortran)
        .unwrap();
    let b = all.as_bytes();
    // Fortran order: x fastest.
    let at = |x: u32, y: u32, z: u32| b[((z * FILE + y) * 2 * FILE + x) as usize];
    for z in 0..FILE {
        for y in 0..FILE {
            for x in (0..16).chain(48..64) {
                assert_eq!(at(x, y, z), BACKGROUND, "outside the box at ({x},{y},{z})");
            }
        }
    }
    // Unit of atomicity: the written part of each file (compressed) or one 8³ block (raw).
    let units: Vec<[u32; 3]> = if block_type.is_compressed() {
        vec![[16, 0, 0], [32, 0, 0]]
    } else {
        let mut u = Vec::new();
        for x in (16..48).step_by(8) {
            for y in (0..FILE).step_by(8) {
                for z in (0..FILE).step_by(8) {
                    u.push([x, y, z]);
                }
            }
        }
        u
    };
    let size = if block_type.is_compressed() {
        [16, FILE, FILE]
    } else {
        [8; 3]
    };
    let mut values = Vec::new();
    let mut all_seen: Vec<u8> = Vec::new();
    for [ux, uy, uz] in units {
        let mut seen = Vec::new();
        for z in uz..uz + size[2] {
            for y in uy..uy + size[1] {
                for x in ux..ux + size[0] {
                    let v = at(x, y, z);
                    if !seen.contains(&v) {
                        seen.push(v);
                    }
                }
            }
        }
        seen.sort_unstable();
        match seen[..] {
            [_] => {}
            // Raw blocks are written in place with one pwrite each; a kill can tear the write
            // where the block crosses a page boundary, leaving the previous write's bytes on one
            // side and this write's on the other, never anything else.
            [a, b] if !block_type.is_compressed() && consecutive(a, b) => {
                TORN.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
            _ => panic!("{block_type:?}: values {seen:?} in the unit at ({ux},{uy},{uz})"),
        }
        for v in seen {
            if !all_seen.contains(&v) {
                all_seen.push(v);
            }
        }
        values.push(at(ux, uy, uz));
    }
    // One write covers every unit: a kill during it leaves the previous write's value in some
    // units and this write's in the others, never anything older.
    all_seen.sort_unstable();
    let newest = match all_seen[..] {
        [v] => v,
        [a, b] if b == next(a) => b,
        [a, b] if a == next(b) => a,
        _ => panic!("{block_type:?}: values {all_seen:?} across the box"),
    };
    (values, newest)
}

/// Whether the sorted pair `a < b` are two consecutive writes' values.
fn consecutive(a: u8, b: u8) -> bool {
    b == next(a) || a == next(b)
}

/// Raw blocks found torn between two consecutive writes (reported, allowed).
static TORN: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

fn scenario(block_type: BlockType, seed: u64) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let ds = Dataset::create(root, header(block_type)).unwrap();
    ds.write([0; 3], &fill([2 * FILE, FILE, FILE], BACKGROUND).view())
        .unwrap();
    let mut rng = Lcg(seed);
    let mut changed = 0;
    let (mut last, mut newest) = check(root, block_type);
    for _ in 0..KILLS {
        let spec = format!("{}@{newest}", root.display());
        run_and_kill("kill::kill_child", ENV, &spec, &mut rng);
        let now;
        (now, newest) = check(root, block_type);
        if now != last {
            changed += 1;
        }
        last = now;
    }
    // The kills must have landed while the child was writing, not only before it started.
    assert!(
        changed >= KILLS / 4,
        "only {changed} of {KILLS} kills saw new data"
    );
    // Whatever the kills left behind, the dataset is still writable (no stale lock).
    let ds = Dataset::open(root).unwrap();
    ds.write(BOX_AT, &fill(BOX, 250).view()).unwrap();
    assert!(check(root, block_type).0.iter().all(|&v| v == 250));
}

#[test]
fn compressed_writes_survive_sigkill() {
    scenario(BlockType::Lz4, 1);
}

#[test]
fn raw_writes_survive_sigkill_per_block() {
    scenario(BlockType::Raw, 2);
    eprintln!(
        "raw kill test: {} torn block observations in {KILLS} kills",
        TORN.load(std::sync::atomic::Ordering::Relaxed)
    );
}

#[test]
fn compress_survives_sigkill() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path();
    let src = base.join("src");
    let ds = Dataset::create(&src, header(BlockType::Raw)).unwrap();
    // 2×2×2 files of distinct content.
    let n = (2 * FILE as usize).pow(3);
    let data: Vec<u8> = (0..n).map(|i| (i % 251) as u8).collect();
    let all = Array::from_bytes(VoxelType::U8, 1, [2 * FILE; 3], Order::Fortran, data).unwrap();
    ds.write([0; 3], &all.view()).unwrap();
    let snapshot = |root: &Path| -> Vec<(std::path::PathBuf, Vec<u8>)> {
        let mut v: Vec<_> = Dataset::open(root)
            .unwrap()
            .list_files()
            .unwrap()
            .into_iter()
            .map(|(_, p)| {
                let b = std::fs::read(&p).unwrap();
                (p, b)
            })
            .collect();
        v.push((
            root.join("header.wkw"),
            std::fs::read(root.join("header.wkw")).unwrap(),
        ));
        v
    };
    let before = snapshot(&src);
    let mut rng = Lcg(3);
    let (mut complete, mut partial, mut absent) = (0, 0, 0);
    let spec = format!("compress:{}", base.display());
    for _ in 0..KILLS {
        run_and_kill("kill::kill_child", ENV, &spec, &mut rng);
        assert_eq!(snapshot(&src), before, "the source changed");
        for e in std::fs::read_dir(base).unwrap() {
            let dst = e.unwrap().path();
            if dst == src {
                continue;
            }
            if !dst.join("header.wkw").exists() {
                absent += 1;
            } else {
                let out = Dataset::open(&dst).unwrap();
                assert_eq!(out.header().block_type(), BlockType::Lz4);
                let files = out.list_files().unwrap();
                for (idx, _) in &files {
                    let at = idx.map(|i| i * FILE);
                    let got = out.read(at, [FILE; 3], Order::Fortran).unwrap();
                    let want = ds.read(at, [FILE; 3], Order::Fortran).unwrap();
                    assert_eq!(
                        got, want,
                        "destination file {idx:?} differs from its source"
                    );
                }
                if files.len() == 8 {
                    complete += 1;
                } else {
                    partial += 1;
                }
            }
            std::fs::remove_dir_all(&dst).unwrap();
        }
    }
    // Kills landed in every phase often enough to mean something.
    assert!(
        complete > 0 && partial + absent > 0,
        "{complete} {partial} {absent}"
    );
}
