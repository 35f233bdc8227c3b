//! Concurrency: many threads reading one `Dataset` get exactly the serial results; concurrent
//! writers to disjoint boxes of one raw file, and to disjoint boxes of one compressed file
//! (read-modify-write serialised by the file lock), end with exactly the expected content.
//! Schedules vary with a seeded pseudo-random order per thread. Writers in separate processes
//! are serialised by the same locks, which live only in `.wkw-locks/` and never among the
//! data (the test binary is its own child: `process_writer_child` does nothing unless
//! `WKW_WRITER_CHILD` is set).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::cast_possible_truncation,
    reason = "a failed unwrap is a failed test; test sizes are small"
)]

use std::path::{Path, PathBuf};
use std::sync::Barrier;
use std::time::Duration;
use testkit::Lcg;

use wkw::{Array, BlockType, Dataset, Header, Order, VoxelType};

const THREADS: usize = 8;

fn pattern(shape: [u32; 3], seed: u64) -> Array {
    let n: usize = shape.iter().map(|&s| s as usize).product::<usize>() * 2;
    let mut rng = Lcg(seed);
    let data = (0..n).map(|_| rng.next_u64() as u8).collect();
    Array::from_bytes(VoxelType::U16, 1, shape, Order::Fortran, data).unwrap()
}

/// 8³ blocks, 4³ blocks per file (32³ voxels per file).
fn dataset(dir: &std::path::Path, block_type: BlockType) -> Dataset {
    Dataset::create(
        dir,
        Header::new(VoxelType::U16, 1, 8, 4, block_type).unwrap(),
    )
    .unwrap()
}

#[test]
fn parallel_readers_see_serial_results() {
    for block_type in [BlockType::Raw, BlockType::Lz4] {
        let dir = tempfile::tempdir().unwrap();
        let ds = dataset(dir.path(), block_type);
        ds.write([0; 3], &pattern([64, 64, 40], 7).view()).unwrap();
        // Boxes of every kind: inside one block, across blocks, across files, partly missing.
        let boxes: Vec<([u32; 3], [u32; 3])> = vec![
            ([0, 0, 0], [64, 64, 40]),
            ([3, 5, 7], [4, 4, 4]),
            ([30, 30, 30], [5, 5, 5]),
            ([10, 20, 0], [40, 1, 33]),
            ([60, 60, 36], [20, 20, 20]),
            ([0, 31, 0], [64, 2, 1]),
        ];
        let serial: Vec<Array> = boxes
            .iter()
            .map(|&(at, shape)| ds.read(at, shape, Order::C).unwrap())
            .collect();
        let barrier = Barrier::new(THREADS);
        std::thread::scope(|s| {
            for t in 0..THREADS {
                let (ds, boxes, serial, barrier) = (&ds, &boxes, &serial, &barrier);
                s.spawn(move || {
                    let mut rng = Lcg(t as u64 + 100);
                    barrier.wait();
                    for _ in 0..40 {
                        let i = rng.next_u64() as usize % boxes.len();
                        let (at, shape) = boxes[i];
                        assert_eq!(ds.read(at, shape, Order::C).unwrap(), serial[i], "box {i}");
                    }
                });
            }
        });
    }
}

/// Every thread writes its own boxes (disjoint), in a pseudo-random order, into the same file;
/// the end result must hold every write.
fn disjoint_writers(block_type: BlockType, boxes_per_thread: usize, edge: u32) {
    let dir = tempfile::tempdir().unwrap();
    let ds = dataset(dir.path(), block_type);
    // Split the 32³ file into cubes of `edge` voxels and deal them out to the threads.
    let per_axis = 32 / edge;
    let cubes: Vec<[u32; 3]> = (0..per_axis.pow(3))
        .map(|i| {
            [
                i % per_axis * edge,
                i / per_axis % per_axis * edge,
                i / per_axis / per_axis * edge,
            ]
        })
        .collect();
    assert!(cubes.len() >= THREADS * boxes_per_thread);
    let barrier = Barrier::new(THREADS);
    std::thread::scope(|s| {
        for t in 0..THREADS {
            let (ds, cubes, barrier) = (&ds, &cubes, &barrier);
            s.spawn(move || {
                let mut mine: Vec<usize> = (0..boxes_per_thread).map(|k| k * THREADS + t).collect();
                let mut rng = Lcg(t as u64 + 1);
                for i in (1..mine.len()).rev() {
                    mine.swap(i, rng.next_u64() as usize % (i + 1));
                }
                barrier.wait();
                for c in mine {
                    let a = pattern([edge; 3], c as u64);
                    ds.write(cubes[c], &a.view()).unwrap();
                }
            });
        }
    });
    let ds = Dataset::open(dir.path()).unwrap();
    assert_eq!(ds.list_files().unwrap().len(), 1);
    for (c, &at) in cubes.iter().enumerate().take(THREADS * boxes_per_thread) {
        let got = ds.read(at, [edge; 3], Order::Fortran).unwrap();
        assert_eq!(
            got,
            pattern([edge; 3], c as u64),
            "{block_type:?}: cube {c} at {at:?} lost"
        );
    }
    assert!(
        wkw::verify(dir.path(), wkw::Options::default(), &|_| {})
            .unwrap()
            .is_ok()
    );
}

#[test]
fn concurrent_writers_to_disjoint_boxes_of_one_raw_file() {
    // Unaligned 4³ boxes: several writers share each 8³ block.
    disjoint_writers(BlockType::Raw, 6, 4);
}

#[test]
fn concurrent_writers_to_one_compressed_file_are_serialised() {
    // Each write decodes, merges and recompresses the whole file: without the lock, updates
    // would be lost.
    disjoint_writers(BlockType::Lz4, 3, 8);
}

/// Every file below `dir`, relative to it, sorted.
fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            if e.file_type().unwrap().is_dir() {
                todo.push(e.path());
            } else {
                out.push(e.path().strip_prefix(dir).unwrap().to_path_buf());
            }
        }
    }
    out.sort();
    out
}

#[test]
fn lock_files_live_only_in_the_lock_directory_and_are_never_listed() {
    for block_type in [BlockType::Raw, BlockType::Lz4] {
        let dir = tempfile::tempdir().unwrap();
        let ds = dataset(dir.path(), block_type);
        // Three files: (0,0,0), (1,0,0), (0,1,1).
        ds.write([20, 0, 0], &pattern([20, 8, 8], 1).view())
            .unwrap();
        ds.write([0, 40, 40], &pattern([8, 8, 8], 2).view())
            .unwrap();
        let data = [[0, 0, 0], [1, 0, 0], [0, 1, 1]];
        let mut expected: Vec<PathBuf> = vec![PathBuf::from(wkw::HEADER_FILE_NAME)];
        for idx in data {
            let lock = ds.lock_path(idx);
            assert!(lock.starts_with(dir.path().join(wkw::LOCK_DIR_NAME)));
            assert_eq!(
                lock.strip_prefix(dir.path()).unwrap(),
                Path::new(&format!(
                    ".wkw-locks/z{}/y{}/x{}.lock",
                    idx[2], idx[1], idx[0]
                ))
            );
            expected.push(lock.strip_prefix(dir.path()).unwrap().to_path_buf());
            expected.push(
                ds.file_path(idx)
                    .strip_prefix(dir.path())
                    .unwrap()
                    .to_path_buf(),
            );
        }
        expected.sort();
        assert_eq!(
            walk(dir.path()),
            expected,
            "{block_type:?}: files after writing"
        );
        // Stray files of older versions and of interrupted writes are not data either.
        std::fs::write(dir.path().join("z0/y0/x0.wkw.lock"), b"").unwrap();
        std::fs::write(dir.path().join("z0/y0/.x0.wkw.abc123.tmp"), b"junk").unwrap();
        let listed: Vec<[u32; 3]> = ds.list_files().unwrap().into_iter().map(|f| f.0).collect();
        assert_eq!(listed, [[0, 0, 0], [1, 0, 0], [0, 1, 1]]);
        let report = wkw::verify(dir.path(), wkw::Options::default(), &|_| {}).unwrap();
        assert_eq!(report.files.len(), 3);
        assert!(report.is_ok());
        // Beside the dataset: a destination inside it would change the source (refused).
        let beside = tempfile::tempdir().unwrap();
        let dst = beside.path().join("converted");
        let out = wkw::compress(
            dir.path(),
            &dst,
            BlockType::Lz4Hc,
            wkw::Options::default(),
            &|_| {},
        )
        .unwrap();
        assert_eq!(out.list_files().unwrap().len(), 3);
        assert!(!dst.join(wkw::LOCK_DIR_NAME).exists());
        // The lock directory may be deleted while no writer runs; writes recreate it.
        std::fs::remove_dir_all(dir.path().join(wkw::LOCK_DIR_NAME)).unwrap();
        ds.write([0; 3], &pattern([4, 4, 4], 3).view()).unwrap();
        assert!(ds.lock_path([0; 3]).is_file());
        assert_eq!(
            ds.read([0; 3], [4, 4, 4], Order::Fortran).unwrap(),
            pattern([4, 4, 4], 3)
        );
    }
}

/// Returns once some thread waits for the lock of `path` (Linux: a blocked request on its inode
/// in `/proc/locks`, looked for for up to a minute); elsewhere after a pause, as the best there
/// is without such a list.
fn wait_for_a_blocked_locker(path: &Path) {
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::fs::MetadataExt;
        let ino = std::fs::metadata(path).unwrap().ino();
        let suffix = format!(":{ino}");
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        loop {
            let locks = std::fs::read_to_string("/proc/locks").unwrap();
            let blocked = locks.lines().any(|l| {
                let f: Vec<&str> = l.split_whitespace().collect();
                f.get(1) == Some(&"->") && f.get(6).is_some_and(|d| d.ends_with(&suffix))
            });
            if blocked {
                return;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "no writer waited for the held lock within a minute"
            );
            std::thread::sleep(Duration::from_millis(1));
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = path;
        std::thread::sleep(Duration::from_millis(300));
    }
}

#[test]
fn a_held_lock_file_blocks_writers_of_that_file_only() {
    let dir = tempfile::tempdir().unwrap();
    let ds = dataset(dir.path(), BlockType::Lz4);
    ds.write([0; 3], &pattern([1, 1, 1], 0).view()).unwrap();
    // Another program holding the documented lock of file (0,0,0).
    let held = std::fs::OpenOptions::new()
        .write(true)
        .open(ds.lock_path([0; 3]))
        .unwrap();
    held.lock().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::scope(|s| {
        let (ds, tx0) = (&ds, tx.clone());
        s.spawn(move || {
            ds.write([0; 3], &pattern([8, 8, 8], 5).view()).unwrap();
            tx0.send("file 0").unwrap();
        });
        s.spawn(move || {
            ds.write([32, 0, 0], &pattern([8, 8, 8], 6).view()).unwrap();
            tx.send("file 1").unwrap();
        });
        assert_eq!(rx.recv_timeout(Duration::from_secs(30)).unwrap(), "file 1");
        wait_for_a_blocked_locker(&ds.lock_path([0; 3]));
        assert!(
            rx.try_recv().is_err(),
            "a writer of file 0 went ahead while its lock was held"
        );
        held.unlock().unwrap();
        assert_eq!(rx.recv_timeout(Duration::from_secs(30)).unwrap(), "file 0");
    });
    assert_eq!(
        ds.read([0; 3], [8, 8, 8], Order::Fortran).unwrap(),
        pattern([8, 8, 8], 5)
    );
}

const CHILD_ENV: &str = "WKW_WRITER_CHILD";
const PROCESSES: usize = 3;
const CUBES_PER_PROCESS: usize = 6;

/// Cube `c` (8³ voxels) of the 32³ file (0,0,0).
fn cube_at(c: usize) -> [u32; 3] {
    let c = c as u32;
    [c % 4 * 8, c / 4 % 4 * 8, c / 16 * 8]
}

/// The child: `root:p` writes cubes `p, p + PROCESSES, …` one write each.
#[test]
fn process_writer_child() {
    let Ok(spec) = std::env::var(CHILD_ENV) else {
        return;
    };
    let (root, p) = spec.rsplit_once(':').unwrap();
    let p: usize = p.parse().unwrap();
    let ds = Dataset::open(root).unwrap();
    for k in 0..CUBES_PER_PROCESS {
        let c = k * PROCESSES + p;
        ds.write(cube_at(c), &pattern([8; 3], c as u64).view())
            .unwrap();
    }
}

#[test]
fn writers_in_separate_processes_are_serialised() {
    let dir = tempfile::tempdir().unwrap();
    // Every write rebuilds the one compressed file: without a lock that holds across
    // processes, concurrent read-modify-writes would drop each other's cubes.
    let _ = dataset(dir.path(), BlockType::Lz4);
    let exe = std::env::current_exe().unwrap();
    let children: Vec<_> = (0..PROCESSES)
        .map(|p| {
            std::process::Command::new(&exe)
                .args([
                    "--exact",
                    "concurrency::process_writer_child",
                    "--test-threads=1",
                ])
                .env(CHILD_ENV, format!("{}:{p}", dir.path().display()))
                .stdout(std::process::Stdio::null())
                .spawn()
                .expect("start a writer process")
        })
        .collect();
    for mut c in children {
        assert!(c.wait().unwrap().success(), "a writer process failed");
    }
    let ds = Dataset::open(dir.path()).unwrap();
    for c in 0..PROCESSES * CUBES_PER_PROCESS {
        assert_eq!(
            ds.read(cube_at(c), [8; 3], Order::Fortran).unwrap(),
            pattern([8; 3], c as u64),
            "cube {c} written by process {} lost",
            c % PROCESSES
        );
    }
}

/// Writers sharing one small rayon pool (each write inside `pool.install`, as the Python
/// bindings run them, and others from plain threads through the global pool), all writing
/// overlapping boxes of the same two compressed files, must all finish. A writer holding a
/// file's lock used to wait for rayon work: a pool thread waiting in a join ran another
/// queued write, which blocked on the same lock further up that thread's own stack, and the
/// whole pool hung.
#[cfg(feature = "parallel")]
#[test]
fn writers_sharing_a_pool_never_deadlock_on_file_locks() {
    let dir = tempfile::tempdir().unwrap();
    let ds = dataset(dir.path(), BlockType::Lz4);
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(2)
        .build()
        .unwrap();
    let (done, finished) = std::sync::mpsc::channel();
    let root = dir.path().to_path_buf();
    // The writers run on their own threads so that a hang fails the test instead of CI.
    std::thread::spawn(move || {
        let ds = &ds;
        let pool = &pool;
        std::thread::scope(|s| {
            for t in 0..THREADS {
                s.spawn(move || {
                    let mut rng = Lcg(t as u64 + 100);
                    for i in 0..25u64 {
                        // Boxes inside file x0 (one file) or across files x0 and x1 (two).
                        let x = (rng.next_u64() % 40) as u32;
                        let shape = [12 + (rng.next_u64() % 12) as u32, 20, 20];
                        let a = pattern(shape, i + 1000 * t as u64);
                        if t % 2 == 0 {
                            pool.install(|| ds.write([x, 3, 5], &a.view())).unwrap();
                        } else {
                            ds.write([x, 3, 5], &a.view()).unwrap();
                        }
                    }
                });
            }
        });
        done.send(()).unwrap();
    });
    finished
        .recv_timeout(Duration::from_secs(300))
        .expect("writers sharing a pool deadlocked");
    let report = wkw::verify(&root, wkw::Options::default(), &|_| {}).unwrap();
    assert!(report.is_ok(), "{report:?}");
}

/// A write that replaces a compressed file leaves no handle on the old file behind: with
/// rayon threads it is closed on a background thread soon after the write, with
/// `Threads::Caller` before the write returns. (Linux: open handles from `/proc/self/fd`.)
#[cfg(target_os = "linux")]
#[test]
fn replaced_files_are_closed() {
    use std::os::unix::fs::MetadataExt;
    use std::time::Instant;
    // An open handle on one of this dataset's replaced files: same inode *and* a link into
    // this test's directory. The inode alone is not enough: once a replaced file's last handle
    // is closed its inode number can be reused by a file another test holds open.
    let open_here = |dir: &std::path::Path, ino: u64| {
        std::fs::read_dir("/proc/self/fd").unwrap().any(|e| {
            let fd = e.unwrap().path();
            std::fs::read_link(&fd).is_ok_and(|target| target.starts_with(dir))
                && std::fs::metadata(&fd).is_ok_and(|m| m.ino() == ino)
        })
    };
    for threads in [wkw::Threads::Rayon, wkw::Threads::Caller] {
        let dir = tempfile::tempdir().unwrap();
        let real_dir = std::fs::canonicalize(dir.path()).unwrap();
        let ds = Dataset::create_with(
            dir.path(),
            Header::new(VoxelType::U16, 1, 8, 4, BlockType::Lz4).unwrap(),
            wkw::Options::default().with_threads(threads),
        )
        .unwrap();
        let file = dir.path().join("z0").join("y0").join("x0.wkw");
        let mut replaced = Vec::new();
        for seed in 0..5 {
            ds.write([0, 0, 0], &pattern([32, 32, 32], seed).view())
                .unwrap();
            replaced.push(std::fs::metadata(&file).unwrap().ino());
        }
        // The last inode is the current file (never opened by the dataset after the write).
        replaced.pop();
        if threads == wkw::Threads::Caller {
            assert!(
                !replaced.iter().any(|&i| open_here(&real_dir, i)),
                "{threads:?}"
            );
            continue;
        }
        let deadline = Instant::now() + Duration::from_secs(20);
        while replaced.iter().any(|&i| open_here(&real_dir, i)) {
            assert!(
                Instant::now() < deadline,
                "replaced files still open after 20 s"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}
