//! Round trips over codec × filter pipeline × typesize × clevel × blocksize × splitmode ×
//! header kind × threads, on data with structure (ramps, runs, noise) and on random data.

#![allow(clippy::unwrap_used, reason = "a failed unwrap is a failed test")]

use blosc_chunk::{CParams, ChunkHeader, Codec, DParams, Filter, SplitMode};
use proptest::prelude::*;

/// Every codec; one whose Cargo feature is off becomes BloscLZ (always built in), so the
/// strategy draws the same values as with all features on.
fn codec() -> impl Strategy<Value = Codec> {
    prop_oneof![
        Just(Codec::BloscLz),
        Just(Codec::Lz4),
        Just(Codec::Lz4Hc),
        Just(Codec::Zlib),
        Just(Codec::Zstd)
    ]
    .prop_map(|c| if c.is_enabled() { c } else { Codec::BloscLz })
}

fn filter() -> impl Strategy<Value = Filter> {
    prop_oneof![
        3 => Just(Filter::NoFilter),
        2 => Just(Filter::Shuffle),
        2 => Just(Filter::BitShuffle),
        1 => Just(Filter::Delta),
    ]
}

fn splitmode() -> impl Strategy<Value = SplitMode> {
    prop_oneof![
        Just(SplitMode::Always),
        Just(SplitMode::Never),
        Just(SplitMode::Auto),
        Just(SplitMode::ForwardCompat)
    ]
}

/// Structured data: a ramp of `typesize`-wide items with noise and occasional runs.
fn data() -> impl Strategy<Value = Vec<u8>> {
    (0usize..70_000, 0u8..8, any::<u64>(), 0usize..3).prop_map(|(n, noise_bits, seed, kind)| {
        let mut s = seed | 1;
        (0..n)
            .map(|i| {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                let noise = (s & ((1u64 << noise_bits) - 1)).to_le_bytes()[0];
                match kind {
                    0 => (i / 5).to_le_bytes()[0].wrapping_add(noise),
                    1 if i % 3000 < 1500 => 0,
                    _ => s.to_le_bytes()[0],
                }
            })
            .collect()
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn compress_then_decompress_is_identity(
        data in data(),
        codec in codec(),
        clevel in 0u8..=9,
        typesize in prop_oneof![Just(1usize), Just(2), Just(3), Just(4), Just(8), Just(16), Just(300)],
        filters in proptest::array::uniform6(filter()),
        splitmode in splitmode(),
        blocksize_items in prop_oneof![Just(0usize), 1usize..4096],
        blosc1 in any::<bool>(),
    ) {
        let ts_eff = if typesize > 255 { 1 } else { typesize };
        let mut cp = CParams::default();
        cp.codec = codec;
        cp.clevel = clevel;
        cp.typesize = typesize;
        cp.filters = filters;
        cp.splitmode = splitmode;
        cp.blocksize = blocksize_items * ts_eff;
        cp.blosc1_header = blosc1;
        let chunk = match blosc_chunk::compress(&data, &cp) {
            Ok(c) => c,
            // Blosc1 headers cannot express arbitrary pipelines; that is the only refusal.
            Err(blosc_chunk::Error::InvalidParam { .. }) if blosc1 => return Ok(()),
            Err(e) => panic!("{e}"),
        };
        prop_assert!(chunk.len() <= data.len() + 32);
        let h = ChunkHeader::parse(&chunk).unwrap();
        prop_assert_eq!(h.nbytes(), data.len());
        prop_assert_eq!(h.cbytes(), chunk.len());
        prop_assert_eq!(&blosc_chunk::decompress(&chunk).unwrap(), &data);
        let par = blosc_chunk::decompress_ctx(&chunk, &DParams::default().with_threads(2)).unwrap();
        prop_assert_eq!(&par, &data);
        // Multi-threaded encoding writes the same bytes.
        cp.nthreads = 2;
        prop_assert_eq!(blosc_chunk::compress(&data, &cp).unwrap(), chunk.clone());
        // Item access agrees with the full decode.
        let t = h.typesize();
        let items = data.len() / t;
        if items > 0 {
            let (a, n) = (items / 3, (items / 2).max(1).min(items - items / 3));
            prop_assert_eq!(
                blosc_chunk::getitem(&chunk, a, n).unwrap(),
                data[a * t..(a + n) * t].to_vec()
            );
        }
    }
}

#[test]
fn blocksize_not_multiple_of_typesize_is_rejected() {
    let data: Vec<u8> = (0..40_000u32).flat_map(u32::to_le_bytes).collect();
    let mut cp = CParams::default();
    cp.typesize = 4;
    cp.blocksize = 1001;
    assert!(matches!(
        blosc_chunk::compress(&data, &cp),
        Err(blosc_chunk::Error::InvalidParam {
            what: "blocksize",
            ..
        })
    ));
}

#[test]
fn empty_and_tiny_inputs() {
    for n in [0usize, 1, 31, 32, 33] {
        let data: Vec<u8> = (0..n).map(|i| i.to_le_bytes()[0]).collect();
        let chunk = blosc_chunk::compress(&data, &CParams::default()).unwrap();
        assert_eq!(blosc_chunk::decompress(&chunk).unwrap(), data);
    }
}

/// Split, byte-shuffled blocks whose planes are partly stored raw (noise) and partly
/// compressed or runs: the decoder unshuffles raw planes straight from the chunk; every
/// codec, type size with a SIMD kernel, a partial last block and both getitem and full decode.
#[test]
#[allow(
    clippy::cast_possible_truncation,
    reason = "test patterns wrap on purpose"
)]
fn split_shuffle_with_raw_planes() {
    let mut s = 0x2545_f491_4f6c_dd1du64;
    for ts in [2usize, 4, 8, 16] {
        let n = 10_000 + 7; // not a multiple of the block size: a partial last block
        let mut data = Vec::with_capacity(n * ts);
        for i in 0..n {
            for j in 0..ts {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                data.push(match j % 3 {
                    0 => s as u8,         // noise: stored raw
                    1 => (i / 256) as u8, // compressible
                    _ => 0x5a,            // a run
                });
            }
        }
        for codec in [
            Codec::BloscLz,
            Codec::Lz4,
            Codec::Lz4Hc,
            Codec::Zlib,
            Codec::Zstd,
        ]
        .into_iter()
        .filter(|c| c.is_enabled())
        {
            let mut p = CParams::default();
            p.codec = codec;
            p.typesize = ts;
            p.clevel = 5;
            p.blocksize = 4096;
            p.splitmode = SplitMode::Always;
            p.filters = [Filter::NoFilter; 6];
            p.filters[5] = Filter::Shuffle;
            let chunk = blosc_chunk::compress(&data, &p).unwrap();
            assert_eq!(
                blosc_chunk::decompress(&chunk).unwrap(),
                data,
                "{codec:?} ts {ts}"
            );
            let mut out = vec![0u8; data.len()];
            blosc_chunk::decompress_into_ctx(&chunk, &mut out, &DParams::default().with_threads(2))
                .unwrap();
            assert_eq!(out, data, "{codec:?} ts {ts}, 2 threads");
            let got = blosc_chunk::getitem(&chunk, 1000, 3000).unwrap();
            assert_eq!(got, data[1000 * ts..4000 * ts], "{codec:?} ts {ts} getitem");
        }
    }
}

/// A memcpyed chunk of several copy pieces (256 KiB each, rounded up to whole blocks) decodes
/// the same on any thread count, into a caller's buffer and into fresh memory, in both
/// formats; blocks of 4 KiB and of the automatic size, and a tail shorter than a block.
#[test]
fn memcpyed_chunks_decode_the_same_on_threads() {
    // xorshift bytes: incompressible, so clevel 9 falls back to a memcpyed chunk too.
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let data: Vec<u8> = (0..(1 << 20) + 4099)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x.to_le_bytes()[0]
        })
        .collect();
    for blosc1 in [false, true] {
        for (clevel, blocksize) in [(0, 0), (0, 4096), (9, 0)] {
            let mut cp = if blosc1 {
                CParams::blosc1(Codec::Lz4, clevel, 1, Filter::NoFilter)
            } else {
                let mut cp = CParams::default();
                cp.codec = Codec::Lz4;
                cp.clevel = clevel;
                cp.typesize = 1;
                cp
            };
            cp.blocksize = blocksize;
            let chunk = blosc_chunk::compress(&data, &cp).unwrap();
            let h = ChunkHeader::parse(&chunk).unwrap();
            assert!(
                h.is_memcpyed(),
                "blosc1 {blosc1} clevel {clevel} blocksize {blocksize}"
            );
            for threads in [1, 2, 3, 0] {
                let dp = DParams::default().with_threads(threads);
                assert!(blosc_chunk::decompress_ctx(&chunk, &dp).unwrap() == data);
                let mut out = vec![7u8; data.len() + 5];
                let n = blosc_chunk::decompress_into_ctx(&chunk, &mut out, &dp).unwrap();
                assert_eq!(n, data.len());
                assert!(out[..n] == data[..] && out[n..] == [7; 5]);
            }
        }
    }
}
