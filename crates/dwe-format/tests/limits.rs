//! Resource limits: small hostile `.dwe` files whose headers claim huge dimensions are refused
//! before any large allocation, and whole-file decodes respect the caller's caps. A counting
//! global allocator measures the peak heap growth of each call.

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

use std::path::PathBuf;

use dwe_format::{Limits, OpenOptions};

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

fn fixture(layout: &str, name: &str) -> Vec<u8> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../testdata/dwe")
        .join(layout)
        .join(name);
    std::fs::read(p).unwrap()
}

fn set_word(data: &mut [u8], i: usize, v: u32) {
    data[4 * i..4 * i + 4].copy_from_slice(&v.to_le_bytes());
}

#[test]
fn headers_claiming_huge_dimensions_are_refused_before_allocating() {
    let _g = lock();
    for (layout, name) in [
        ("stream", "random_6_100_16_j20.dwe"),
        ("block", "random_6_100_16_c20.dwe"),
    ] {
        let good = fixture(layout, name);
        assert!(OpenOptions::new().open(&good).is_ok());
        // Words 5, 6, 7 of the header are T, V, K.
        for (t, v, k) in [
            (1 << 24, 100, 16),       // 2^24 time steps: 384 GiB of decoder tables
            (6, 1 << 30, 1 << 10),    // V·K = 2^40 values per step
            (6, u32::MAX, u32::MAX),  // V·K overflows
            (u32::MAX, u32::MAX, 16), // everything
        ] {
            let mut bad = good.clone();
            set_word(&mut bad, 5, t);
            set_word(&mut bad, 6, v);
            set_word(&mut bad, 7, k);
            let (peak, r) = peak_during(|| OpenOptions::new().open(&bad).map(|f| f.decode_all()));
            assert!(
                !matches!(r, Ok(Ok(_))),
                "{layout} T={t} V={v} K={k} decoded from a {}-byte file",
                bad.len()
            );
            assert!(
                peak < SMALL,
                "{layout} T={t} V={v} K={k}: refusing it allocated {peak} bytes"
            );
        }
    }
}

#[test]
fn whole_file_decodes_respect_the_caps() {
    let _g = lock();
    let data = fixture("stream", "random_6_100_16_j20.dwe");
    // T·V·K = 9600 values: above a 1000-value cap for whole-file decodes.
    let l = Limits {
        max_total_values: 1000,
        ..Limits::default()
    };
    let f = OpenOptions::new().limits(l).open(&data).unwrap();
    let (peak, r) = peak_during(|| f.decode_all());
    assert!(r.is_err());
    assert!(
        peak < 64 << 10,
        "refusing decode_all allocated {peak} bytes"
    );
    // One time step (V·K = 1600) is within the caps.
    assert_eq!(f.timestep(2).unwrap().len(), 1600);
    // V·K = 1600 above a 1000-value per-step cap: refused at open.
    let l = Limits {
        max_timestep_values: 1000,
        ..Limits::default()
    };
    let (peak, r) = peak_during(|| OpenOptions::new().limits(l).open(&data).map(|_| ()));
    assert!(r.is_err());
    assert!(peak < 64 << 10, "refusing the open allocated {peak} bytes");
}
