//! Replays the kept fuzz findings and hand-made hostile chunks in
//! `testdata/regressions/blosc-chunk/blosc_decompress/` through the decode entry points the
//! `blosc_decompress` fuzz target drives: each must give `Ok` or a typed `Err`, never a panic,
//! and a chunk that decodes must decode identically through every entry point.

#![allow(clippy::unwrap_used, reason = "a failed unwrap is a failed test")]

use blosc_chunk::{ChunkHeader, LazyChunk, Limits, decompress_into, decompress_with, getitem};

/// The `blosc_decompress` fuzz target's checks; returns whether the chunk decoded.
fn replay(data: &[u8]) -> bool {
    const MAX: usize = 64 << 20;
    let _ = LazyChunk::parse(data);
    let out = match decompress_with(data, &Limits::default().with_max_nbytes(MAX)) {
        Ok(out) => out,
        Err(e) => {
            assert!(!e.to_string().is_empty());
            return false;
        }
    };
    assert!(out.len() <= MAX);
    let mut buf = vec![0u8; out.len()];
    assert_eq!(decompress_into(data, &mut buf).unwrap(), out.len());
    assert_eq!(buf, out);
    let mut fresh: Vec<u8> = Vec::with_capacity(out.len());
    let got = blosc_chunk::decompress_into_uninit_ctx(
        data,
        fresh.spare_capacity_mut(),
        &blosc_chunk::DParams::default(),
    )
    .unwrap();
    assert_eq!(got, &out[..]);
    let h = ChunkHeader::parse(data).unwrap();
    let ts = h.typesize().max(1);
    let nitems = out.len() / ts;
    for (start, n) in [
        (0, nitems),
        (nitems / 3, nitems / 2),
        (nitems.saturating_sub(1), 1),
    ] {
        if start + n <= nitems {
            assert_eq!(
                getitem(data, start, n).unwrap(),
                out[start * ts..(start + n) * ts]
            );
        }
    }
    true
}

#[test]
fn decompress_regressions_replay() {
    testkit::replay_all("blosc-chunk", "blosc_decompress", |d| {
        replay(d);
    });
}

/// Fuzz finding (`blosc_roundtrip`, kept as
/// `testdata/regressions/blosc-chunk/blosc_roundtrip/crash-blosc1-header-reordered-filters`,
/// an `arbitrary` input replayed by `cargo xtask fuzz`): with `blosc1_header`, a pipeline the
/// 16-byte header cannot express (filters repeated or in another order than delta → shuffle)
/// was silently collapsed, and the chunk decoded to different data. It must be refused, and
/// every expressible pipeline must round-trip.
#[test]
fn blosc1_header_never_changes_the_filter_pipeline() {
    use blosc_chunk::{CParams, Codec, Filter, SplitMode, compress, decompress};
    let data: Vec<u8> = (0..32u8)
        .map(|i| if (14..19).contains(&i) { 65 } else { 193 })
        .collect();
    let mut p = CParams::default();
    p.codec = Codec::BloscLz;
    p.clevel = 1;
    p.typesize = 5;
    p.filters = [
        Filter::NoFilter,
        Filter::NoFilter,
        Filter::Delta,
        Filter::Shuffle,
        Filter::Delta,
        Filter::Shuffle,
    ];
    p.filters_meta = [35, 0, 159, 32, 193, 193];
    p.blocksize = 115_137;
    p.splitmode = SplitMode::Never;
    p.blosc1_header = true;
    assert!(
        compress(&data, &p).is_err(),
        "an inexpressible pipeline must be refused"
    );
    p.blocksize = 0;
    // Expressible pipelines round-trip (filters_meta, which the header cannot hold, is ignored).
    for filters in [
        [Filter::NoFilter; 6],
        [
            Filter::Delta,
            Filter::NoFilter,
            Filter::NoFilter,
            Filter::NoFilter,
            Filter::NoFilter,
            Filter::NoFilter,
        ],
        [
            Filter::NoFilter,
            Filter::NoFilter,
            Filter::NoFilter,
            Filter::NoFilter,
            Filter::Delta,
            Filter::Shuffle,
        ],
        [
            Filter::Delta,
            Filter::BitShuffle,
            Filter::NoFilter,
            Filter::NoFilter,
            Filter::NoFilter,
            Filter::NoFilter,
        ],
    ] {
        p.filters = filters;
        let chunk = compress(&data, &p).unwrap();
        assert_eq!(decompress(&chunk).unwrap(), data, "{filters:?}");
    }
    for filters in [
        [
            Filter::Shuffle,
            Filter::Delta,
            Filter::NoFilter,
            Filter::NoFilter,
            Filter::NoFilter,
            Filter::NoFilter,
        ],
        [
            Filter::Delta,
            Filter::Delta,
            Filter::NoFilter,
            Filter::NoFilter,
            Filter::NoFilter,
            Filter::NoFilter,
        ],
    ] {
        p.filters = filters;
        assert!(compress(&data, &p).is_err(), "{filters:?} must be refused");
    }
}

/// Fuzz finding (`blosc_roundtrip`, kept as
/// `testdata/regressions/blosc-chunk/blosc_roundtrip/crash-split-block-smaller-than-typesize`):
/// a user block size below the type size (18 < 39) with `SplitMode::Always` wrote one stream
/// per block without the "don't split" flag, and the decoder (expecting `typesize` streams)
/// refused our own chunk.
#[cfg(feature = "zlib")]
#[test]
fn split_mode_with_a_block_smaller_than_the_type_round_trips() {
    use blosc_chunk::{CParams, Codec, Filter, SplitMode, compress, decompress};
    let mut data = vec![194u8];
    data.extend([13; 6]);
    data.extend([255; 34]);
    data.extend([13, 13, 223, 255, 255, 243]);
    for blosc1_header in [false, true] {
        for splitmode in [SplitMode::Always, SplitMode::Auto, SplitMode::ForwardCompat] {
            let mut p = CParams::default();
            p.codec = Codec::Zlib;
            p.clevel = 1;
            p.typesize = 39;
            p.filters = [Filter::NoFilter; 6];
            p.blocksize = 18;
            p.splitmode = splitmode;
            p.nthreads = 2;
            p.blosc1_header = blosc1_header;
            let chunk = compress(&data, &p).unwrap();
            assert_eq!(
                decompress(&chunk).unwrap(),
                data,
                "{splitmode:?} {blosc1_header}"
            );
        }
    }
}

/// Blocks without a filter are decoded straight into the output (LZ4 streams through liblz4
/// into memory never written, the other codecs into zero-filled memory): every byte of a fresh
/// output must come out right for each kind of stream (coded, stored raw, zero run, value run)
/// and each codec, through both headers, on one and on two threads. The spare capacity holds
/// stale 0xAA bytes, so a byte the decoder skipped would show.
#[test]
fn unfiltered_blocks_decode_into_fresh_memory() {
    use blosc_chunk::{CParams, Codec, DParams, Filter, compress, decompress};
    let mut x = 0x2545_f491_4f6c_dd1d_u64;
    let mut data: Vec<u8> = (0..40_000u32)
        .map(|i| (i / 3 % 7).to_le_bytes()[0])
        .collect();
    data.extend((0..40_000).map(|_| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x.to_le_bytes()[0]
    }));
    data.extend([0u8; 40_000]);
    data.extend([9u8; 40_000]);
    data.extend((0..37_001u32).map(|i| (i % 97).to_le_bytes()[0]));
    for codec in [
        Codec::BloscLz,
        Codec::Lz4,
        Codec::Lz4Hc,
        Codec::Zstd,
        Codec::Zlib,
    ] {
        // A byte shuffle of type size 1 moves nothing and takes the same path as no filter.
        for (blosc1, filter) in [
            (false, Filter::NoFilter),
            (true, Filter::NoFilter),
            (false, Filter::Shuffle),
            (true, Filter::Shuffle),
        ] {
            let mut p = if blosc1 {
                CParams::blosc1(codec, 5, 1, filter)
            } else {
                CParams::new(codec, 5, 1, filter)
            };
            p.blocksize = 16 << 10;
            let Ok(chunk) = compress(&data, &p) else {
                continue; // codec disabled
            };
            assert_eq!(
                decompress(&chunk).unwrap(),
                data,
                "{codec:?} {blosc1} {filter:?}"
            );
            for threads in [1, 2] {
                let mut fresh = vec![0xAAu8; data.len() + 5];
                fresh.clear();
                let got = blosc_chunk::decompress_into_uninit_ctx(
                    &chunk,
                    fresh.spare_capacity_mut(),
                    &DParams::default().with_threads(threads),
                )
                .unwrap();
                assert!(
                    got == &data[..],
                    "{codec:?} {blosc1} {filter:?} {threads} threads"
                );
            }
        }
    }
}
