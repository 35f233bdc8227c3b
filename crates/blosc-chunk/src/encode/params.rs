//! Compression parameters.

use crate::codec_id::Codec;
use crate::header::{Filter, MAX_FILTERS, SplitMode};

/// The chunk format [`compress`](crate::compress) writes, and whose writer rules it follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum Format {
    /// What C-Blosc2 3.3.5 writes: format version 5, the 32-byte extended header (or the
    /// 16-byte one with [`CParams::blosc1_header`]). C-Blosc 1.x cannot read these chunks.
    #[default]
    Blosc2,
    /// What C-Blosc 1.21 writes (the Blosc1 format of python-blosc 1.11, numcodecs and the
    /// `blosc-src` crate, hence of most Zarr `blosc` chunks): format version 2, a 16-byte
    /// header, C-Blosc 1's block-size and split rules and BloscLZ 2.5.1, byte-identical to
    /// C-Blosc 1.21 for BloscLZ, LZ4, LZ4HC and zstd (zlib streams are valid but differ, see
    /// `FORMAT.md`). Readable by C-Blosc 1.x and C-Blosc2.
    ///
    /// Only no filter, or one [`Filter::Shuffle`] or [`Filter::BitShuffle`] (in any slot), can
    /// be written; `filters_meta`, [`CParams::blosc1_header`] and dictionaries do not apply.
    /// [`CParams::splitmode`] follows C-Blosc 1's `blosc_set_splitmode` rules.
    Blosc1,
}

/// Compression parameters, like C-Blosc2's `blosc2_cparams`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct CParams {
    /// Codec.
    pub codec: Codec,
    /// Compression level 0–9 (0 = store raw).
    pub clevel: u8,
    /// Item size in bytes; above 255 it is treated as 1, as C-Blosc2 does.
    pub typesize: usize,
    /// Filter pipeline, applied from slot 0 to slot 5.
    pub filters: [Filter; MAX_FILTERS],
    /// Per-slot filter metadata.
    pub filters_meta: [u8; MAX_FILTERS],
    /// Block size in bytes, 0 = automatic (C-Blosc2's `stune` rules). Must be a multiple of
    /// `typesize`. With [`Format::Blosc1`] this is C-Blosc 1's forced block size: raised to at
    /// least 128 bytes, enlarged for split blocks and rounded down to a multiple of `typesize`
    /// as C-Blosc 1.21 does.
    pub blocksize: usize,
    /// When to split blocks into one stream per byte of the type.
    pub splitmode: SplitMode,
    /// Threads for block-parallel compression (1 = serial; output is identical either way;
    /// 0 = all cores). Needs the `parallel` feature.
    pub nthreads: usize,
    /// Write a 16-byte Blosc1 header instead of the 32-byte extended one. Only SHUFFLE or
    /// BITSHUFFLE in slot 5 and DELTA in slot 4 can be expressed (other pipelines are refused);
    /// `filters_meta` cannot be stored and is ignored.
    pub blosc1_header: bool,
    /// Build a dictionary from the chunk and compress every stream with it (C-Blosc2's
    /// `use_dict`; zstd, LZ4 and LZ4HC only, extended header only). Inputs too small for a
    /// useful dictionary (under 5 120 bytes) are compressed without one. Dictionary chunks are
    /// encoded on one thread.
    pub use_dict: bool,
    /// The chunk format to write (default [`Format::Blosc2`]).
    pub format: Format,
    /// Codec metadata (header byte 23), passed to plugin codecs: the cell edge (4 or 8) for
    /// [`Codec::NdLz`].
    pub codec_meta: u8,
    /// The b2nd block shape of the array the chunk belongs to, needed by the NDCELL and
    /// NDMEAN filters and the NDLZ codec (C-Blosc2 reads it from the super-chunk's `b2nd`
    /// metalayer). The block size must then be the block's byte size.
    pub blockshape: Option<crate::BlockShape>,
}

impl Default for CParams {
    /// C-Blosc2's `BLOSC2_CPARAMS_DEFAULTS`: BloscLZ, clevel 5, typesize 8, SHUFFLE in slot 5,
    /// automatic block size, forward-compatible split mode, one thread.
    fn default() -> Self {
        Self {
            codec: Codec::BloscLz,
            clevel: 5,
            typesize: 8,
            filters: [
                Filter::NoFilter,
                Filter::NoFilter,
                Filter::NoFilter,
                Filter::NoFilter,
                Filter::NoFilter,
                Filter::Shuffle,
            ],
            filters_meta: [0; MAX_FILTERS],
            blocksize: 0,
            splitmode: SplitMode::ForwardCompat,
            nthreads: 1,
            blosc1_header: false,
            use_dict: false,
            format: Format::Blosc2,
            codec_meta: 0,
            blockshape: None,
        }
    }
}

impl CParams {
    /// Parameters for a C-Blosc 1.21 chunk ([`Format::Blosc1`]), as python-blosc's
    /// `blosc.compress(data, typesize, clevel, shuffle, cname)` or numcodecs' `Blosc` would
    /// write it: `filter` is [`Filter::NoFilter`], [`Filter::Shuffle`] or
    /// [`Filter::BitShuffle`]; automatic block size, forward-compatible split mode, one thread.
    #[must_use]
    pub fn blosc1(codec: Codec, clevel: u8, typesize: usize, filter: Filter) -> Self {
        let mut filters = [Filter::NoFilter; MAX_FILTERS];
        filters[MAX_FILTERS - 1] = filter;
        Self {
            codec,
            clevel,
            typesize,
            filters,
            format: Format::Blosc1,
            ..Self::default()
        }
    }

    /// Parameters with one filter in slot 0 (what python-blosc2's `filters=[f]` does).
    #[must_use]
    pub fn new(codec: Codec, clevel: u8, typesize: usize, filter: Filter) -> Self {
        let mut filters = [Filter::NoFilter; MAX_FILTERS];
        filters[0] = filter;
        Self {
            codec,
            clevel,
            typesize,
            filters,
            splitmode: SplitMode::Auto,
            ..Self::default()
        }
    }
}
