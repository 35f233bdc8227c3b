//! The Blosc1 writer ([`Format::Blosc1`]) beyond the fixtures: round trips and thread
//! independence over random parameters, the parameters it refuses, and the header it writes.

#![allow(
    clippy::unwrap_used,
    clippy::panic,
    reason = "a failed unwrap or panic is a failed test"
)]

use blosc_chunk::{
    CParams, ChunkHeader, Codec, Error, Filter, Format, SplitMode, VERSION_FORMAT_BLOSC1, compress,
    decompress,
};
use proptest::prelude::*;

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
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn blosc1_round_trips_and_ignores_threads(
        data in data(),
        codec in codec(),
        clevel in 0u8..=9,
        typesize in prop_oneof![Just(1usize), Just(2), Just(3), Just(4), Just(8), Just(16), Just(17), Just(255), Just(300)],
        filter in prop_oneof![Just(Filter::NoFilter), Just(Filter::Shuffle), Just(Filter::BitShuffle)],
        splitmode in prop_oneof![Just(SplitMode::Never), Just(SplitMode::Auto), Just(SplitMode::ForwardCompat)],
        blocksize in prop_oneof![Just(0usize), 1usize..100_000],
    ) {
        let mut cp = CParams::blosc1(codec, clevel, typesize, filter);
        cp.splitmode = splitmode;
        cp.blocksize = blocksize;
        let chunk = compress(&data, &cp).unwrap();
        let h = ChunkHeader::parse(&chunk).unwrap();
        prop_assert_eq!(h.version(), VERSION_FORMAT_BLOSC1);
        prop_assert!(!h.is_extended());
        prop_assert!(chunk.len() <= data.len() + 16);
        prop_assert_eq!(decompress(&chunk).unwrap(), data.clone());
        cp.nthreads = 3;
        prop_assert_eq!(compress(&data, &cp).unwrap(), chunk);
    }
}

#[test]
fn refuses_what_c_blosc_1_cannot_express_or_read() {
    let data = vec![7u8; 10_000];
    let invalid = |cp: &CParams, what: &str| match compress(&data, cp) {
        Err(Error::InvalidParam { what: w, .. }) => assert_eq!(w, what),
        other => panic!("{what}: {other:?}"),
    };
    let mut cp = CParams::blosc1(Codec::BloscLz, 5, 4, Filter::Delta);
    invalid(&cp, "filters");
    cp.filters[0] = Filter::Shuffle;
    cp.filters[5] = Filter::BitShuffle;
    invalid(&cp, "filters");
    cp = CParams::blosc1(Codec::BloscLz, 5, 4, Filter::Shuffle);
    cp.filters[2] = Filter::TruncPrec;
    invalid(&cp, "filters");
    cp = CParams::blosc1(Codec::BloscLz, 5, 4, Filter::Shuffle);
    cp.use_dict = true;
    invalid(&cp, "use_dict");
    cp = CParams::blosc1(Codec::BloscLz, 10, 4, Filter::Shuffle);
    invalid(&cp, "clevel");
    cp = CParams::blosc1(Codec::BloscLz, 5, 0, Filter::Shuffle);
    invalid(&cp, "typesize");
    // Always splitting a 32-byte type: C-Blosc 1 would write streams its reader does not expect.
    cp = CParams::blosc1(Codec::BloscLz, 5, 32, Filter::Shuffle);
    cp.splitmode = SplitMode::Always;
    invalid(&cp, "splitmode");
    // ... but a chunk that is memcpyed anyway is fine.
    assert!(compress(&data[..100], &cp).is_ok());
    cp = CParams::blosc1(Codec::Other(3), 5, 4, Filter::Shuffle);
    assert!(matches!(
        compress(&data, &cp),
        Err(Error::Unsupported { what: "codec", .. })
    ));
}

#[test]
fn header_flags_follow_c_blosc_1() {
    let data: Vec<u8> = (0..4000u32).flat_map(|i| (i / 3).to_le_bytes()).collect();
    // Byte shuffle with typesize 1: the flag is written, nothing is shuffled.
    if Codec::Lz4.is_enabled() {
        let c = compress(&data, &CParams::blosc1(Codec::Lz4, 5, 1, Filter::Shuffle)).unwrap();
        assert_eq!(c[..4], [2, 1, 0x21, 1]);
    }
    // clevel 0: memcpyed, but shuffle, split and codec bits are kept.
    if Codec::Zstd.is_enabled() {
        let cp = CParams::blosc1(Codec::Zstd, 0, 4, Filter::BitShuffle);
        let c = compress(&data, &cp).unwrap();
        assert_eq!(c[..4], [2, 1, 0x96, 4]);
        assert_eq!(c.len(), data.len() + 16);
        assert_eq!(c[16..], data[..]);
    }
    let c = compress(
        &data,
        &CParams::blosc1(Codec::BloscLz, 0, 4, Filter::Shuffle),
    )
    .unwrap();
    assert_eq!(c[..4], [2, 1, 0x03, 4]);
    // The empty input: a 16-byte memcpyed chunk with block size 1.
    let c = compress(&[], &CParams::blosc1(Codec::BloscLz, 5, 4, Filter::Shuffle)).unwrap();
    assert_eq!(c, [2, 1, 0x13, 4, 0, 0, 0, 0, 1, 0, 0, 0, 16, 0, 0, 0]);
    // The default format is still C-Blosc2's.
    assert_eq!(CParams::default().format, Format::Blosc2);
}
