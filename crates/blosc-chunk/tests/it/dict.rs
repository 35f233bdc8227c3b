//! Dictionary chunks (`use_dict`): byte-exactness against C-Blosc2 is checked on the reference
//! fixtures in `fixtures.rs`; here, multi-block and split chunks round-trip, the dictionary
//! section is laid out as C lays it out, small inputs get no dictionary, and unsupported
//! combinations are refused.

#![allow(clippy::unwrap_used, reason = "a failed unwrap is a failed test")]

use blosc_chunk::{CParams, ChunkHeader, Codec, Error, Filter, SplitMode};

fn text(n: usize) -> Vec<u8> {
    let words = [
        "alpha ", "beta ", "gamma ", "delta ", "epsilon ", "zeta ", "eta ",
    ];
    let mut s = 0x2545_f491_4f6c_dd1du64;
    let mut out = Vec::with_capacity(n);
    while out.len() < n {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        out.extend_from_slice(words[(s % 7) as usize].as_bytes());
    }
    out.truncate(n);
    out
}

fn params(codec: Codec, typesize: usize, filter: Filter, split: SplitMode) -> CParams {
    let mut cp = CParams::new(codec, 5, typesize, filter);
    cp.splitmode = split;
    cp.blocksize = 32 * 1024;
    cp.use_dict = true;
    cp
}

#[test]
fn multi_block_dictionary_chunks_round_trip() {
    let data = text(200_000);
    // Codecs whose Cargo feature is off are covered by `features.rs`.
    for codec in [Codec::Zstd, Codec::Lz4, Codec::Lz4Hc]
        .into_iter()
        .filter(|c| c.is_enabled())
    {
        for (ts, filter, split) in [
            (1, Filter::NoFilter, SplitMode::Never),
            (4, Filter::Shuffle, SplitMode::Always),
            (8, Filter::BitShuffle, SplitMode::Never),
        ] {
            let cp = params(codec, ts, filter, split);
            let chunk = blosc_chunk::compress(&data, &cp).unwrap();
            let h = ChunkHeader::parse(&chunk).unwrap();
            assert!(h.uses_dict(), "{codec:?} ts {ts}");
            // Dictionary section right after the block starts; block 0 right after it.
            let bstarts_end = 32 + 4 * h.nblocks();
            let dsize = i32::from_le_bytes(chunk[bstarts_end..bstarts_end + 4].try_into().unwrap());
            let dsize = usize::try_from(dsize).unwrap();
            assert!((256..=32_768).contains(&dsize));
            assert!(dsize <= data.len() / 20);
            let b0 = i32::from_le_bytes(chunk[32..36].try_into().unwrap());
            assert_eq!(usize::try_from(b0).unwrap(), bstarts_end + 4 + dsize);
            assert_eq!(blosc_chunk::decompress(&chunk).unwrap(), data);
            // Threads do not change a dictionary chunk.
            let mut par = cp.clone();
            par.nthreads = 2;
            assert_eq!(blosc_chunk::compress(&data, &par).unwrap(), chunk);
        }
    }
}

#[cfg(feature = "lz4")]
#[test]
fn lz4_dictionary_holds_its_size_where_c_overwrites_it() {
    // C writes the dictionary size over bytes 4*nblocks.. of the copied blocks before taking
    // the LZ4 dictionary from them (as in misc/lz4_dict_text.cdata).
    let data = text(100_000);
    let chunk = blosc_chunk::compress(
        &data,
        &params(Codec::Lz4, 1, Filter::NoFilter, SplitMode::Never),
    )
    .unwrap();
    let h = ChunkHeader::parse(&chunk).unwrap();
    let at = 32 + 4 * h.nblocks();
    let dsize = &chunk[at..at + 4];
    let dict = &chunk[at + 4..];
    let k = 4 * h.nblocks();
    assert_eq!(&dict[..k], &data[..k]);
    assert_eq!(&dict[k..k + 4], dsize);
    assert_eq!(&dict[k + 4..k + 64], &data[k + 4..k + 64]);
}

#[cfg(feature = "zstd")]
#[test]
fn small_inputs_get_no_dictionary() {
    let data = text(4_000);
    let chunk = blosc_chunk::compress(
        &data,
        &params(Codec::Zstd, 1, Filter::NoFilter, SplitMode::Never),
    )
    .unwrap();
    assert!(!ChunkHeader::parse(&chunk).unwrap().uses_dict());
    assert_eq!(blosc_chunk::decompress(&chunk).unwrap(), data);
}

#[test]
fn unsupported_dictionary_parameters_are_refused() {
    let data = text(50_000);
    for codec in [Codec::BloscLz, Codec::Zlib]
        .into_iter()
        .filter(|c| c.is_enabled())
    {
        let r = blosc_chunk::compress(&data, &params(codec, 1, Filter::NoFilter, SplitMode::Never));
        assert!(
            matches!(
                r,
                Err(Error::InvalidParam {
                    what: "use_dict",
                    ..
                })
            ),
            "{codec:?}"
        );
    }
    // A Blosc1 header has no room for a dictionary (with any dictionary codec this build has).
    let Some(codec) = [Codec::Zstd, Codec::Lz4]
        .into_iter()
        .find(|c| c.is_enabled())
    else {
        return;
    };
    let mut cp = params(codec, 4, Filter::Shuffle, SplitMode::Never);
    cp.blosc1_header = true;
    assert!(matches!(
        blosc_chunk::compress(&data, &cp),
        Err(Error::InvalidParam {
            what: "use_dict",
            ..
        })
    ));
}
