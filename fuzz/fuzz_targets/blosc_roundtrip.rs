//! blosc-chunk: compress arbitrary data with arbitrary parameters (C-Blosc2's format, or
//! C-Blosc 1.21's with its BloscLZ 2.5.1 encoder), then decompress; lossless pipelines must
//! give the input back, and `getitem` must agree with the full decode.
#![no_main]

use arbitrary::Arbitrary;
use blosc_chunk::{
    CParams, Codec, Filter, Format, MAX_FILTERS, SplitMode, compress, decompress, getitem,
};
use libfuzzer_sys::fuzz_target;

#[derive(Debug, Arbitrary)]
struct Input {
    codec: u8,
    clevel: u8,
    typesize: u16,
    filters: [u8; MAX_FILTERS],
    filters_meta: [u8; MAX_FILTERS],
    blocksize: u32,
    splitmode: u8,
    nthreads: u8,
    blosc1_header: bool,
    use_dict: bool,
    blosc1_format: bool,
    data: Vec<u8>,
}

fuzz_target!(|inp: Input| {
    let mut p = CParams::default();
    p.codec = match inp.codec % 5 {
        0 => Codec::BloscLz,
        1 => Codec::Lz4,
        2 => Codec::Lz4Hc,
        3 => Codec::Zlib,
        _ => Codec::Zstd,
    };
    p.clevel = inp.clevel % 10;
    p.typesize = usize::from(inp.typesize % 300).max(1);
    let mut lossy = false;
    for (slot, &f) in p.filters.iter_mut().zip(&inp.filters) {
        *slot = match f % 6 {
            0 | 5 => Filter::NoFilter,
            1 => Filter::Shuffle,
            2 => Filter::BitShuffle,
            3 => Filter::Delta,
            _ => {
                lossy = true;
                Filter::TruncPrec
            }
        };
    }
    p.filters_meta = inp.filters_meta;
    // Mostly automatic, sometimes an explicit (possibly invalid) block size.
    p.blocksize = if inp.blocksize % 4 == 0 {
        0
    } else {
        (inp.blocksize as usize) % (1 << 20)
    };
    p.splitmode = match inp.splitmode % 4 {
        0 => SplitMode::Always,
        1 => SplitMode::Never,
        2 => SplitMode::Auto,
        _ => SplitMode::ForwardCompat,
    };
    p.nthreads = usize::from(inp.nthreads % 3).max(1);
    p.blosc1_header = inp.blosc1_header;
    // Dictionaries exist for zstd, LZ4 and LZ4HC in the extended header only.
    p.use_dict = inp.use_dict
        && !p.blosc1_header
        && matches!(p.codec, Codec::Lz4 | Codec::Lz4Hc | Codec::Zstd);
    if inp.blosc1_format {
        // The Blosc1 format: one shuffle or bit shuffle (or none), no metadata, no dictionary.
        let filter = match inp.filters[0] % 3 {
            0 => Filter::NoFilter,
            1 => Filter::Shuffle,
            _ => Filter::BitShuffle,
        };
        let mut b = CParams::blosc1(p.codec, p.clevel, p.typesize, filter);
        b.blocksize = p.blocksize;
        b.nthreads = p.nthreads;
        lossy = false;
        p = b;
        debug_assert_eq!(p.format, Format::Blosc1);
    }

    let Ok(chunk) = compress(&inp.data, &p) else {
        return;
    };
    let out = decompress(&chunk).expect("a chunk we wrote must decode");
    assert_eq!(out.len(), inp.data.len());
    if !lossy {
        assert_eq!(out, inp.data, "round trip changed the data with {p:?}");
    }
    let ts = if p.typesize > 255 { 1 } else { p.typesize };
    let nitems = out.len() / ts;
    if nitems > 0 {
        let start = nitems / 2;
        let got = getitem(&chunk, start, nitems - start).expect("getitem on our chunk");
        assert_eq!(got, out[start * ts..nitems * ts]);
    }
});
