//! Resource limits: small hostile WKW files whose headers claim huge geometry (jump tables,
//! blocks) and huge read requests are refused before any large allocation. A counting global
//! allocator measures the peak heap growth of each call.

#![allow(
    unsafe_code,
    reason = "a counting global allocator needs `unsafe impl GlobalAlloc`"
)]
#![allow(
    clippy::unwrap_used,
    clippy::cast_possible_truncation,
    reason = "a failed unwrap is a failed test; test sizes are small"
)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};

use std::path::Path;

use wkw::{BlockType, Dataset, Header, Limits, Options, Order, VoxelType};

struct Counting;

static CURRENT: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call forwards to `System` unchanged; the counters are only bookkeeping.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: same contract as the caller's.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            let now = CURRENT.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
            PEAK.fetch_max(now, Ordering::Relaxed);
        }
        p
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: same contract as the caller's.
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            let now = CURRENT.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
            PEAK.fetch_max(now, Ordering::Relaxed);
        }
        p
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as the caller's.
        unsafe { System.dealloc(ptr, layout) };
        CURRENT.fetch_sub(layout.size(), Ordering::Relaxed);
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: same contract as the caller's.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            if new_size >= layout.size() {
                let now = CURRENT.fetch_add(new_size - layout.size(), Ordering::Relaxed)
                    + (new_size - layout.size());
                PEAK.fetch_max(now, Ordering::Relaxed);
            } else {
                CURRENT.fetch_sub(layout.size() - new_size, Ordering::Relaxed);
            }
        }
        p
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Tests in this binary run one at a time so the counters see only their own allocations.
static SERIAL: Mutex<()> = Mutex::new(());

/// Peak heap growth (bytes) while `f` runs, and its result.
fn peak_during<T>(f: impl FnOnce() -> T) -> (usize, T) {
    let base = CURRENT.load(Ordering::Relaxed);
    PEAK.store(base, Ordering::Relaxed);
    let out = f();
    (PEAK.load(Ordering::Relaxed).saturating_sub(base), out)
}

const SMALL: usize = 1 << 20;

fn lock() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A raw 16-byte WKW header.
fn header(per_dim_log2: u8, block_type: u8, voxel_type: u8, voxel_size: u8, off: u64) -> Vec<u8> {
    let mut h = b"WKW".to_vec();
    h.extend_from_slice(&[1, per_dim_log2, block_type, voxel_type, voxel_size]);
    h.extend_from_slice(&off.to_le_bytes());
    h
}

/// A dataset whose `header.wkw` and only data file `z0/y0/x0.wkw` are given.
fn dataset(root: &Path, dataset_header: &[u8], file: &[u8]) {
    std::fs::write(root.join(wkw::HEADER_FILE_NAME), dataset_header).unwrap();
    std::fs::create_dir_all(root.join("z0/y0")).unwrap();
    std::fs::write(root.join("z0/y0/x0.wkw"), file).unwrap();
}

#[test]
fn jump_table_of_2_pow_45_entries_is_refused_before_allocating() {
    let _g = lock();
    let dir = tempfile::tempdir().unwrap();
    // 2^15 blocks per dimension (2^45 per file) of LZ4 blocks: a 256 TiB jump table claimed by a
    // 24-byte file.
    let n: u64 = 1 << 45;
    let mut file = header(0xf0, 2, 1, 1, 16 + 8 * n);
    file.extend_from_slice(&u64::MAX.to_le_bytes());
    dataset(dir.path(), &header(0xf0, 2, 1, 1, 0), &file);
    let (peak, r) = peak_during(|| {
        Dataset::open(dir.path()).and_then(|ds| ds.read([0; 3], [1, 1, 1], Order::Fortran))
    });
    assert!(
        r.is_err(),
        "a 24-byte file cannot hold a 2^45-entry jump table"
    );
    assert!(peak < SMALL, "refusing it allocated {peak} bytes");
    // Also under the reference-compatible policy that reads corrupt files as zeros.
    let opts = Options::default().missing_or_corrupt(wkw::MissingOrCorrupt::Zeros);
    let (peak, _) = peak_during(|| {
        Dataset::open_with(dir.path(), opts).and_then(|ds| ds.read([0; 3], [1, 1, 1], Order::C))
    });
    assert!(peak < SMALL, "reading it as zeros allocated {peak} bytes");
}

#[test]
fn huge_blocks_are_refused_before_allocating() {
    let _g = lock();
    let dir = tempfile::tempdir().unwrap();
    // 2^15-voxel blocks of 255-byte voxels: one block claims 2^45 * 255 bytes. LZ4, one block
    // per file, whose jump table entry points at 8 bytes of garbage.
    let mut file = header(0x0f, 2, 1, 255, 24);
    file.extend_from_slice(&32u64.to_le_bytes());
    file.extend_from_slice(&[0x55; 8]);
    dataset(dir.path(), &header(0x0f, 2, 1, 255, 0), &file);
    let (peak, r) = peak_during(|| {
        Dataset::open(dir.path()).and_then(|ds| ds.read([0; 3], [2, 2, 2], Order::Fortran))
    });
    assert!(
        r.is_err(),
        "a 2^45-byte block is above Limits::max_block_bytes"
    );
    assert!(peak < SMALL, "refusing it allocated {peak} bytes");
}

#[test]
fn huge_read_requests_are_refused_before_allocating() {
    let _g = lock();
    let dir = tempfile::tempdir().unwrap();
    let h = Header::new(VoxelType::U64, 1, 8, 4, BlockType::Lz4).unwrap();
    let ds = Dataset::create(dir.path(), h).unwrap();
    // 2^20 voxels per side of u64: 2^63 bytes.
    let (peak, r) = peak_during(|| ds.read([0; 3], [1 << 20; 3], Order::C));
    assert!(r.is_err());
    assert!(peak < SMALL, "refusing it allocated {peak} bytes");
    // A caller-lowered cap applies too.
    let mut l = Limits::default();
    l.max_read_bytes = 1 << 16;
    let ds = Dataset::open_with(dir.path(), Options::default().limits(l)).unwrap();
    let (peak, r) = peak_during(|| ds.read([0; 3], [64, 64, 64], Order::C));
    assert!(r.is_err(), "2 MiB read above a 64 KiB cap");
    assert!(peak < SMALL, "refusing it allocated {peak} bytes");
    let (_, r) = peak_during(|| ds.read([0; 3], [8, 8, 8], Order::C));
    assert_eq!(r.unwrap().as_bytes(), vec![0u8; 8 * 8 * 8 * 8].as_slice());
}
