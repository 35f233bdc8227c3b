#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::cast_possible_truncation,
    clippy::cast_possible_wrap,
    clippy::cast_sign_loss
)]
//! Hostile input: every fixture frame truncated at every length and with bit flips, random
//! bytes, and a counting reader proving that one chunk costs O(chunk + index) bytes of I/O.

use crate::common;

use std::io;
use std::sync::atomic::{AtomicU64, Ordering};

use blosc2_frame::blosc_chunk::{CParams, Codec, Filter};
use blosc2_frame::{
    B2ndArray, B2ndMeta, ChunkLocation, Frame, FrameParams, FrameWriter, Limits, ReadAt,
};
use common::{contiguous_frames, testdata};
use proptest::prelude::*;

/// Tight limits so that a corrupted size field cannot make a test allocate much.
fn limits() -> Limits {
    let mut l = Limits::default();
    l.max_chunk_nbytes = 4 << 20;
    l.max_output_bytes = 16 << 20;
    l.max_nchunks = 1 << 16;
    l
}

/// Uses every read path; errors are fine, panics are not. `hot` is a byte position whose
/// chunk is decoded in any case (the rest of a large frame is sampled to keep debug runs short).
fn exercise(frame: &Frame<'_>, hot: Option<u64>) {
    let h = frame.header();
    let n = frame.nchunks();
    if h.nbytes <= 64 << 10 {
        let _ = frame.decompress_all();
    }
    let mut picks: Vec<usize> = if hot.is_some() {
        vec![n.saturating_sub(1)]
    } else {
        vec![0, 1, n.saturating_sub(1)]
    };
    if let Some(pos) = hot {
        // The stored chunk holding `pos`: the one with the largest start at or before it.
        let start = |i: usize| match frame.index()[i] {
            ChunkLocation::Stored(o) => Some(u64::from(h.header_len) + o),
            _ => None,
        };
        if let Some(i) = (0..n)
            .filter(|&i| start(i).is_some_and(|s| s <= pos))
            .max_by_key(|&i| start(i))
        {
            picks.push(i);
        } else {
            picks.push(0);
        }
    }
    for i in picks.into_iter().filter(|&i| i < n) {
        let _ = frame.chunk(i);
        let _ = frame.decompress_chunk(i);
    }
    let ts = u64::from(h.typesize);
    let _ = frame.get_slice(1, (h.nbytes / ts).min(3000));
    for l in frame.metalayers() {
        let _ = frame.metalayer_value(&l.name);
    }
    for l in frame.vlmetalayers() {
        let _ = frame.vlmetalayer_value(&l.name);
    }
}

fn exercise_bytes(bytes: &[u8], hot: Option<u64>) {
    if let Ok(f) = Frame::from_slice_with(bytes, &limits()) {
        exercise(&f, hot);
        if let Ok(a) = B2ndArray::new(f) {
            let _ = a.read_all();
            let n = a.meta().ndim();
            let _ = a.read_region(&vec![1; n], a.shape());
        }
    }
}

#[test]
fn truncation_at_every_length_never_panics() {
    for (path, bytes) in contiguous_frames() {
        for len in 0..bytes.len() {
            let cut = &bytes[..len];
            assert!(
                Frame::from_slice_with(cut, &limits()).is_err(),
                "{path} cut at {len}"
            );
            // Through a reader the frame may not end where the data ends.
            if let Ok(f) = Frame::from_reader(cut, 0, &limits()) {
                exercise(&f, None);
            }
        }
        exercise_bytes(&bytes, None);
    }
}

#[test]
fn bit_flips_never_panic() {
    for (path, bytes) in contiguous_frames() {
        let n = bytes.len();
        // The first 200 and last 200 bytes (header, metalayers, index, trailer): all 8 bits;
        // elsewhere one bit per byte, rotating.
        for i in 0..n {
            let bits: &[u8] = if i < 200 || i + 200 >= n {
                &[0, 1, 2, 3, 4, 5, 6, 7]
            } else {
                &[0]
            };
            for &b in bits {
                let bit = if bits.len() == 1 { (i % 8) as u8 } else { b };
                let mut v = bytes.clone();
                v[i] ^= 1 << bit;
                exercise_bytes(&v, Some(i as u64));
            }
        }
        let _ = path;
    }
}

#[test]
fn sparse_frame_mutations_never_panic() {
    let src = testdata().join("frames/sparse_lz4.b2frame");
    let dir = tempfile::tempdir().unwrap();
    let files: Vec<(std::ffi::OsString, Vec<u8>)> = std::fs::read_dir(&src)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            (e.file_name(), std::fs::read(e.path()).unwrap())
        })
        .collect();
    let reset = || {
        for (name, data) in &files {
            std::fs::write(dir.path().join(name), data).unwrap();
        }
    };
    reset();
    for (name, data) in &files {
        for i in 0..data.len() {
            let mut v = data.clone();
            v[i] ^= 1 << (i % 8);
            std::fs::write(dir.path().join(name), &v).unwrap();
            if let Ok(f) = Frame::open_with(dir.path(), &limits()) {
                exercise(&f, None);
            }
        }
        for len in [0, 1, 15, 16, 31, 32, data.len() - 1] {
            std::fs::write(dir.path().join(name), &data[..len]).unwrap();
            if let Ok(f) = Frame::open_with(dir.path(), &limits()) {
                exercise(&f, None);
            }
        }
        reset();
    }
    // A missing chunk file is an I/O error, not a panic.
    std::fs::remove_file(dir.path().join("00000003.chunk")).unwrap();
    let f = Frame::open(dir.path()).unwrap();
    assert!(f.decompress_chunk(1).is_err());
    assert!(f.decompress_chunk(0).is_ok());
}

#[test]
fn limits_stop_large_claims() {
    let bytes =
        std::fs::read(testdata().join("frames/zstd_delta_shuffle_many_chunks.b2frame")).unwrap();
    let mut l = Limits::default();
    l.max_nchunks = 40;
    assert!(matches!(
        Frame::from_slice_with(&bytes, &l),
        Err(blosc2_frame::Error::LimitExceeded { .. })
    ));
    let mut l = Limits::default();
    l.max_output_bytes = 1000;
    let f = Frame::from_slice_with(&bytes, &l).unwrap();
    assert!(matches!(
        f.decompress_all(),
        Err(blosc2_frame::Error::LimitExceeded { .. })
    ));
    assert!(f.get_slice(0, 100).is_ok());
    // A header claiming 2^62 bytes in 8000-byte chunks is refused before any allocation.
    let mut v = bytes.clone();
    v[30..38].copy_from_slice(&(1i64 << 62).to_be_bytes());
    assert!(Frame::from_slice(&v).is_err());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn random_bytes_never_panic(data in proptest::collection::vec(any::<u8>(), 0..512)) {
        exercise_bytes(&data, None);
        let _ = B2ndMeta::parse(&data);
        let _ = blosc2_frame::FrameHeader::parse(&data);
    }

    #[test]
    fn random_edits_of_a_valid_frame_never_panic(
        edits in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..8)
    ) {
        let mut v = std::fs::read(testdata().join("frames/lz4_shuffle_meta_vlmeta.b2frame")).unwrap();
        let n = v.len();
        for (pos, byte) in edits {
            v[pos % n] = byte;
        }
        exercise_bytes(&v, None);
    }
}

/// A [`ReadAt`] that counts the bytes it hands out.
struct Counting<'a> {
    inner: &'a [u8],
    bytes: AtomicU64,
    calls: AtomicU64,
}

impl ReadAt for Counting<'_> {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        self.bytes.fetch_add(buf.len() as u64, Ordering::Relaxed);
        self.calls.fetch_add(1, Ordering::Relaxed);
        self.inner.read_exact_at(buf, offset)
    }

    fn size(&self) -> io::Result<u64> {
        self.inner.size()
    }
}

#[test]
fn reading_one_chunk_costs_chunk_plus_index_not_the_file() {
    // 256 chunks of 256 KiB of incompressible data: a 64 MiB frame.
    let chunk = 256 << 10;
    let mut cp = CParams::new(Codec::Lz4, 5, 8, Filter::Shuffle);
    cp.nthreads = 1;
    let mut w = FrameWriter::new(FrameParams::new(cp, chunk)).unwrap();
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let mut data = vec![0u8; chunk];
    for k in 0..256 {
        for b in data.chunks_mut(8) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            b.copy_from_slice(&x.to_le_bytes());
        }
        data[0] = k as u8;
        w.append_buffer(&data).unwrap();
    }
    let bytes = w.to_bytes().unwrap();
    assert!(bytes.len() > 64 << 20);
    let src = Counting {
        inner: &bytes,
        bytes: AtomicU64::new(0),
        calls: AtomicU64::new(0),
    };
    let f = Frame::from_reader(&src, 0, &Limits::default()).unwrap();
    let h = f.header();
    let open_cost = src.bytes.load(Ordering::Relaxed);
    let index_len = h.frame_len - f.trailer_len() - u64::from(h.header_len) - h.cbytes;
    // Opening: fixed header (87) + header (with metalayers) + 23-byte tail + trailer + index.
    assert_eq!(
        open_cost,
        87 + u64::from(h.header_len) + 23 + f.trailer_len() + index_len,
        "open read {open_cost} bytes"
    );
    let before = src.bytes.load(Ordering::Relaxed);
    let c = f.chunk(200).unwrap();
    let one = src.bytes.load(Ordering::Relaxed) - before;
    assert_eq!(
        one,
        16 + c.len() as u64,
        "reading chunk 200 read {one} bytes"
    );
    let before = src.bytes.load(Ordering::Relaxed);
    let d = f.decompress_chunk(17).unwrap();
    assert_eq!(d.len(), chunk);
    let cost = src.bytes.load(Ordering::Relaxed) - before;
    assert!(
        cost < (chunk as u64) + 1024,
        "decompress_chunk read {cost} bytes"
    );
    // Total for open + one chunk is a tiny fraction of the file.
    assert!(src.bytes.load(Ordering::Relaxed) < bytes.len() as u64 / 100);
}

#[test]
fn b2nd_region_reads_only_the_chunks_it_touches() {
    let bytes = std::fs::read(testdata().join("frames/b2nd_u2_7x9x11.b2nd")).unwrap();
    let src = Counting {
        inner: &bytes,
        bytes: AtomicU64::new(0),
        calls: AtomicU64::new(0),
    };
    let a = B2ndArray::new(Frame::from_reader(&src, 0, &Limits::default()).unwrap()).unwrap();
    let f = a.frame();
    // Chunk grid 2x2x2 over (7, 9, 11) with chunks (4, 5, 6): [0..4, 0..5, 6..11] is chunk 1 only.
    let stored_len = |i: usize| f.chunk(i).unwrap().len() as u64;
    let c1 = stored_len(1);
    let before = src.bytes.load(Ordering::Relaxed);
    let r = a.read_region(&[0, 0, 6], &[4, 5, 11]).unwrap();
    assert_eq!(r.len(), 4 * 5 * 5 * 2);
    let cost = src.bytes.load(Ordering::Relaxed) - before;
    // One chunk: 16-byte header probe + the chunk (read once per touched block at most).
    assert!(
        cost >= c1 && cost <= 8 * (16 + c1),
        "region read {cost} bytes, chunk is {c1}"
    );
    let whole: u64 = (0..f.nchunks()).map(stored_len).sum();
    assert!(
        cost < whole / 2,
        "region read {cost} of {whole} chunk bytes"
    );
}

#[test]
fn b2nd_meta_cannot_claim_huge_chunks() {
    use blosc2_frame::blosc_chunk::{CParams, Codec, Filter};
    // A variable-size frame whose b2nd metalayer claims 2^31-1 x 2^31-1 blocks.
    let mut cp = CParams::new(Codec::Lz4, 5, 1, Filter::NoFilter);
    cp.nthreads = 1;
    let mut w = FrameWriter::new(FrameParams::new(cp, 0)).unwrap();
    let big = i32::MAX as u64;
    let meta = B2ndMeta::new(&[big, big], &[big, big], &[big, big], "|u1").unwrap();
    w.add_metalayer("b2nd", &meta.to_bytes().unwrap()).unwrap();
    w.append_buffer(&[1u8; 100]).unwrap();
    let bytes = w.to_bytes().unwrap();
    let f = Frame::from_slice(&bytes).unwrap();
    assert!(B2ndArray::new(f).is_err());
}
