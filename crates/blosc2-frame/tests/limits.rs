//! Resource limits: small hostile frames that claim huge sizes (chunk counts, chunk sizes,
//! output sizes) are refused before any large allocation. A counting global allocator measures
//! the peak heap growth of each call.

#![allow(
    clippy::unwrap_used,
    clippy::cast_possible_truncation,
    reason = "a failed unwrap is a failed test; test sizes are small"
)]

use blosc2_frame::blosc_chunk::{CParams, zeros_chunk};
use blosc2_frame::{Frame, FrameParams, FrameWriter, Limits};

use testkit::{lock_serial, peak_during};

#[global_allocator]
static GLOBAL: testkit::CountingAlloc = testkit::CountingAlloc;

const SMALL: usize = 1 << 20;

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
    let _g = lock_serial();
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
    let _g = lock_serial();
    let f = small_frame();
    let mut l = Limits::default();
    l.max_nchunks = 2;
    let (peak, r) = peak_during(|| Frame::from_slice_with(&f, &l).map(|fr| fr.nchunks()));
    assert!(r.unwrap_err().to_string().contains("number of chunks"));
    assert!(peak < SMALL, "refusing it allocated {peak} bytes");
}

#[test]
fn chunk_and_output_sizes_are_capped_before_allocating() {
    let _g = lock_serial();
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
