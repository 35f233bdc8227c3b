//! Resource limits: small hostile frames that claim huge sizes (chunk counts, chunk sizes,
//! output sizes) are refused before any large allocation. A counting global allocator measures
//! the peak heap growth of each call.

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

use blosc2_frame::blosc_chunk::{CParams, zeros_chunk};
use blosc2_frame::{Frame, FrameParams, FrameWriter, Limits};

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

/// A valid frame of three 8-byte chunks.
fn small_frame() -> Vec<u8> {
    let mut cp = CParams::default();
    cp.typesize = 1;
    let mut w = FrameWriter::new(FrameParams::new(cp, 8)).unwrap();
    w.append_data(&[7u8; 24]).unwrap();
    w.to_bytes().unwrap()
}

/// Offset of the big-endian i64 holding `nbytes` (24) in the header (after its 0xd3 marker).
fn nbytes_at(frame: &[u8]) -> usize {
    let at = (0..87 - 9)
        .find(|&i| frame[i] == 0xd3 && frame[i + 1..i + 9] == 24i64.to_be_bytes())
        .unwrap();
    at + 1
}

#[test]
fn header_claiming_2_pow_37_chunks_is_refused_before_allocating() {
    let _g = lock();
    let mut f = small_frame();
    assert_eq!(Frame::from_slice(&f).unwrap().nchunks(), 3);
    let at = nbytes_at(&f);
    // 2^40 bytes in 8-byte chunks: 2^37 index entries (a 1 TiB index) from an ~200-byte file.
    f[at..at + 8].copy_from_slice(&(1i64 << 40).to_be_bytes());
    let (peak, r) = peak_during(|| Frame::from_slice(&f).map(|fr| fr.nchunks()));
    let err = r.unwrap_err().to_string();
    assert!(err.contains("number of chunks"), "{err}");
    assert!(peak < SMALL, "refusing it allocated {peak} bytes");
    // Exactly the default maximum (2^26 chunks): the 24-byte index chunk cannot hold it.
    let n = i64::try_from(Limits::default().max_nchunks).unwrap() * 8;
    f[at..at + 8].copy_from_slice(&n.to_be_bytes());
    let (peak, r) = peak_during(|| Frame::from_slice(&f).map(|fr| fr.nchunks()));
    assert!(r.is_err());
    assert!(peak < SMALL, "refusing it allocated {peak} bytes");
}

#[test]
fn max_nchunks_is_applied() {
    let _g = lock();
    let f = small_frame();
    let mut l = Limits::default();
    l.max_nchunks = 2;
    let (peak, r) = peak_during(|| Frame::from_slice_with(&f, &l).map(|fr| fr.nchunks()));
    assert!(r.unwrap_err().to_string().contains("number of chunks"));
    assert!(peak < SMALL, "refusing it allocated {peak} bytes");
}

#[test]
fn chunk_and_output_sizes_are_capped_before_allocating() {
    let _g = lock();
    // A legitimate frame holding one 1 GiB all-zeros chunk: a few hundred bytes on disk.
    let mut cp = CParams::default();
    cp.typesize = 1;
    let mut w = FrameWriter::new(FrameParams::new(cp, 1 << 30)).unwrap();
    w.append_chunk(zeros_chunk(1 << 30, 1).unwrap()).unwrap();
    let bytes = w.to_bytes().unwrap();
    assert!(bytes.len() < 4096);
    let mut l = Limits::default();
    l.max_chunk_nbytes = 1 << 20;
    l.max_output_bytes = 1 << 20;
    let frame = Frame::from_slice_with(&bytes, &l).unwrap();
    let (peak, r) = peak_during(|| frame.decompress_chunk(0));
    assert!(r.is_err());
    assert!(peak < SMALL, "decompress_chunk allocated {peak} bytes");
    let (peak, r) = peak_during(|| frame.decompress_all());
    assert!(r.is_err());
    assert!(peak < SMALL, "decompress_all allocated {peak} bytes");
    let (peak, r) = peak_during(|| frame.get_slice(0, 1 << 30));
    assert!(r.is_err());
    assert!(peak < SMALL, "get_slice allocated {peak} bytes");
    // A small slice of it is fine.
    let (peak, r) = peak_during(|| frame.get_slice(0, 1 << 10));
    assert_eq!(r.unwrap(), vec![0u8; 1 << 10]);
    assert!(peak < SMALL, "a 1 KiB slice allocated {peak} bytes");
}
