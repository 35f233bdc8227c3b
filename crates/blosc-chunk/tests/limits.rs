//! Resource limits: small hostile chunks that claim huge sizes are refused before any large
//! allocation. A counting global allocator measures the peak heap growth of each call.

#![allow(clippy::unwrap_used, reason = "a failed unwrap is a failed test")]

use blosc_chunk::{Limits, decompress, decompress_with, getitem, zeros_chunk};

use testkit::{lock_serial, peak_during};

#[global_allocator]
static GLOBAL: testkit::CountingAlloc = testkit::CountingAlloc;

/// Nothing a refused input does may come near this (the inputs claim ~2 GiB).
const SMALL: usize = 1 << 20;

/// A 32-byte extended Blosc2 header (no special value unless `blosc2_flags` says so).
fn header(flags: u8, nbytes: i32, blocksize: i32, cbytes: i32, blosc2_flags: u8) -> Vec<u8> {
    let mut h = vec![5, 1, flags, 1];
    h.extend_from_slice(&nbytes.to_le_bytes());
    h.extend_from_slice(&blocksize.to_le_bytes());
    h.extend_from_slice(&cbytes.to_le_bytes());
    h.extend_from_slice(&[0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, blosc2_flags]);
    assert_eq!(h.len(), 32);
    h
}

const HUGE: i32 = i32::MAX - 32;

#[test]
fn chunk_claiming_2_gib_of_data_is_refused_before_allocating() {
    let _g = lock_serial();
    // Extended header (flags 0x05), 2 GiB claimed, 256 KiB blocks, one block offset, no data.
    let mut chunk = header(0x05, HUGE, 1 << 18, 40, 0);
    chunk.extend_from_slice(&40i32.to_le_bytes());
    chunk.extend_from_slice(&0i32.to_le_bytes());
    let (peak, r) = peak_during(|| decompress(&chunk));
    assert!(r.is_err(), "a 40-byte chunk cannot hold 2 GiB");
    assert!(peak < SMALL, "refusing it allocated {peak} bytes");
    let (peak, r) = peak_during(|| getitem(&chunk, 0, 4));
    assert!(r.is_err());
    assert!(peak < SMALL, "getitem allocated {peak} bytes");
}

#[test]
fn memcpyed_chunk_claiming_2_gib_is_refused_before_allocating() {
    let _g = lock_serial();
    // flags 0x07: extended + memcpyed, but only the 32-byte header is present.
    let chunk = header(0x07, HUGE, 1 << 18, 32, 0);
    let (peak, r) = peak_during(|| decompress(&chunk));
    assert!(r.is_err());
    assert!(peak < SMALL, "refusing it allocated {peak} bytes");
}

#[test]
fn special_chunk_beyond_max_nbytes_is_refused_before_allocating() {
    let _g = lock_serial();
    // A valid 32-byte "all zeros" chunk of 2 GiB: legitimate data, but above the caller's cap.
    let chunk = zeros_chunk(usize::try_from(HUGE).unwrap(), 1).unwrap();
    assert_eq!(chunk.len(), 32);
    let (peak, r) = peak_during(|| decompress_with(&chunk, &Limits::with_max_nbytes(1 << 20)));
    let err = r.unwrap_err();
    assert!(
        err.to_string().contains("limit") || err.to_string().contains("exceed"),
        "{err}"
    );
    assert!(peak < SMALL, "refusing it allocated {peak} bytes");
    // Within the cap the same kind of chunk decodes, allocating about its size. The counters are
    // process-wide, so the test harness freeing a few bytes on another thread can pull the
    // measured peak slightly below 64 KiB: the lower bound only shows the counter is live.
    let small = zeros_chunk(1 << 16, 1).unwrap();
    let (peak, r) = peak_during(|| decompress_with(&small, &Limits::with_max_nbytes(1 << 20)));
    assert_eq!(r.unwrap(), vec![0u8; 1 << 16]);
    assert!(
        (1 << 15..SMALL).contains(&peak),
        "decoding 64 KiB allocated {peak} bytes"
    );
}

#[test]
fn default_limit_is_the_format_maximum() {
    let _g = lock_serial();
    assert_eq!(Limits::default().max_nbytes, blosc_chunk::MAX_BUFFERSIZE);
    // Above the default maximum (C-Blosc2's BLOSC2_MAX_BUFFERSIZE): refused by default.
    let chunk = header(0x05, i32::MAX, 1 << 18, 32, 0x10);
    let (peak, r) = peak_during(|| decompress(&chunk));
    assert!(r.is_err());
    assert!(peak < SMALL, "refusing it allocated {peak} bytes");
}
