//! Byte-shuffled chunks do not depend on where the caller's buffers sit: the SIMD shuffle
//! picks its first tiles by the alignment of the buffer it writes (`src/filter/simd.rs`,
//! `head_tiles`), and the unshuffle writes into the caller's buffer at any offset. Every type
//! size with a kernel, input and output at several offsets from a 64-byte boundary, block
//! sizes that are and are not multiples of 64 elements, 1 and 2 threads.
#![allow(
    missing_docs,
    clippy::unwrap_used,
    clippy::cast_possible_truncation,
    reason = "test: fails loudly; patterns wrap on purpose"
)]

use blosc_chunk::{CParams, Codec, DParams, Filter, SplitMode};

/// `len` bytes of a ramp with noise (compressible, but not only runs).
fn data(len: usize, ts: usize) -> Vec<u8> {
    let mut s = 0x9e37_79b9_7f4a_7c15u64;
    (0..len)
        .map(|i| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            match i % ts {
                0 => (s & 0x0f) as u8,
                1 => (i / ts / 64) as u8,
                _ => (i / 4096) as u8 ^ (s >> 60) as u8,
            }
        })
        .collect()
}

/// A buffer of `len` bytes starting `off` bytes after a 64-byte boundary, inside `backing`.
fn at_offset(backing: &mut Vec<u8>, len: usize, off: usize) -> &mut [u8] {
    backing.clear();
    backing.resize(len + 128, 0);
    let start = backing.as_ptr().align_offset(64) + off;
    &mut backing[start..start + len]
}

#[test]
fn shuffled_chunks_ignore_buffer_alignment() {
    let mut in_backing = Vec::new();
    let mut out_backing = Vec::new();
    for ts in [2usize, 4, 8, 16] {
        let len = 200_000 / ts * ts;
        let reference = data(len, ts);
        for (blocksize, splitmode) in [
            (0, SplitMode::ForwardCompat),
            (16_384, SplitMode::Always),
            (16_384 + 48 * ts, SplitMode::Always),
            (4_096 + 16 * ts, SplitMode::Never),
        ] {
            for codec in [Codec::BloscLz, Codec::Lz4]
                .into_iter()
                .filter(|c| c.is_enabled())
            {
                let mut p = CParams::default();
                p.codec = codec;
                p.typesize = ts;
                p.clevel = 5;
                p.blocksize = blocksize;
                p.splitmode = splitmode;
                p.filters = [Filter::NoFilter; 6];
                p.filters[5] = Filter::Shuffle;
                let chunk = blosc_chunk::compress(&reference, &p).unwrap();
                for off in [0usize, 1, 16, 48] {
                    let what = format!("{codec:?} ts {ts} blocksize {blocksize} offset {off}");
                    let input = at_offset(&mut in_backing, len, off);
                    input.copy_from_slice(&reference);
                    for nthreads in [1, 2] {
                        p.nthreads = nthreads;
                        let again = blosc_chunk::compress(input, &p).unwrap();
                        assert!(again == chunk, "{what}, {nthreads} threads: chunk differs");
                    }
                    p.nthreads = 1;
                    for nthreads in [1, 2] {
                        let out = at_offset(&mut out_backing, len, off);
                        let dp = DParams::default().with_threads(nthreads);
                        assert_eq!(
                            blosc_chunk::decompress_into_ctx(&chunk, out, &dp).unwrap(),
                            len
                        );
                        assert!(*out == reference, "{what}, {nthreads} threads: decode");
                    }
                }
            }
        }
    }
}
