//! The 16-byte (Blosc1) and 32-byte (extended, Blosc2) chunk header.

use crate::codec_id::Codec;
use crate::error::{Error, Result};
use crate::flags::{Blosc2Flags, Flags};

/// Length of the Blosc1 header.
pub const MIN_HEADER_LENGTH: usize = 16;
/// Length of the extended (Blosc2) header.
pub const EXTENDED_HEADER_LENGTH: usize = 32;
/// Extra bytes a chunk may need beyond its uncompressed size (`BLOSC2_MAX_OVERHEAD`).
pub const MAX_OVERHEAD: usize = 32;
/// Largest uncompressed chunk size C-Blosc2 accepts (`BLOSC2_MAX_BUFFERSIZE = INT_MAX - 32`).
pub const MAX_BUFFERSIZE: usize = (i32::MAX as usize) - MAX_OVERHEAD;
/// Largest block size (`BLOSC2_MAXBLOCKSIZE`).
pub const MAX_BLOCKSIZE: usize = 536_866_816;
/// Inputs smaller than this are always stored uncompressed (`BLOSC_MIN_BUFFERSIZE`).
pub const MIN_BUFFERSIZE: usize = 32;
/// Largest dictionary (`BLOSC2_MAXDICTSIZE`).
pub const MAX_DICT_SIZE: usize = 32_768;
/// Number of filter slots.
pub const MAX_FILTERS: usize = 6;
/// Highest chunk format version C-Blosc2 writes (VL blocks).
pub const VERSION_FORMAT_VL_BLOCKS: u8 = 6;
/// Version C-Blosc 1.x writes (the Blosc1 format, [`Format::Blosc1`](crate::Format::Blosc1)).
pub const VERSION_FORMAT_BLOSC1: u8 = 2;
/// Version written for regular chunks.
pub const VERSION_FORMAT_STABLE: u8 = 5;

pub(crate) const FLAGS2_VL_BLOCKS: u8 = 0x01;

/// A filter in one of the six pipeline slots.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Filter {
    /// Empty slot (id 0).
    NoFilter,
    /// Byte shuffle (id 1); `filters_meta` is the byte-group size when non-zero.
    Shuffle,
    /// Bit shuffle (id 2).
    BitShuffle,
    /// XOR delta against block 0 (id 3).
    Delta,
    /// Lossy mantissa truncation of float32/float64 (id 4); `filters_meta` is the precision.
    TruncPrec,
    /// NDCELL plugin (id 32): the items of a b2nd block regrouped by cells of `meta` items
    /// per dimension. Needs the block shape ([`BlockShape`](crate::BlockShape)).
    NdCell,
    /// NDMEAN plugin (id 33): lossy, every cell of `meta` items per dimension (cut to the
    /// block) replaced by its mean; float32/float64. Needs the block shape.
    NdMean,
    /// BYTEDELTA plugin (id 35): byte-wise delta inside each of `meta` byte streams (the
    /// typesize when `meta` is 0); usually after [`Filter::Shuffle`].
    ByteDelta,
    /// INT_TRUNC plugin (id 36): lossy truncation of 1/2/4/8-byte integers; `meta` as `i8` is
    /// the number of bits kept (≥ 0) or zeroed (< 0).
    IntTrunc,
    /// Any other id (BYTEDELTA_BUGGY = 34, user filters ≥ 160): not supported.
    Other(u8),
}

impl Filter {
    /// The numeric filter id.
    #[must_use]
    pub fn id(self) -> u8 {
        match self {
            Self::NoFilter => 0,
            Self::Shuffle => 1,
            Self::BitShuffle => 2,
            Self::Delta => 3,
            Self::TruncPrec => 4,
            Self::NdCell => 32,
            Self::NdMean => 33,
            Self::ByteDelta => 35,
            Self::IntTrunc => 36,
            Self::Other(id) => id,
        }
    }

    /// The filter with numeric id `id`.
    #[must_use]
    pub fn from_id(id: u8) -> Self {
        match id {
            0 => Self::NoFilter,
            1 => Self::Shuffle,
            2 => Self::BitShuffle,
            3 => Self::Delta,
            4 => Self::TruncPrec,
            32 => Self::NdCell,
            33 => Self::NdMean,
            35 => Self::ByteDelta,
            36 => Self::IntTrunc,
            other => Self::Other(other),
        }
    }
}

/// When blocks are split into one stream per byte of the type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum SplitMode {
    /// Always split (`BLOSC_ALWAYS_SPLIT`).
    Always,
    /// Never split (`BLOSC_NEVER_SPLIT`).
    Never,
    /// Split when it usually pays (`BLOSC_AUTO_SPLIT`).
    Auto,
    /// Same rule as `Auto` (`BLOSC_FORWARD_COMPAT_SPLIT`, the C default).
    #[default]
    ForwardCompat,
}

/// The kind of a special-value chunk (no compressed data).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SpecialValue {
    /// All bytes zero.
    Zeros,
    /// NaN of the chunk's float type (typesize 4 or 8).
    Nan,
    /// One value of `typesize` bytes, stored after the header, repeated.
    Value,
    /// Uninitialised content; this crate decodes it as zeros.
    Uninit,
}

impl SpecialValue {
    pub(crate) fn code(self) -> u8 {
        match self {
            Self::Zeros => 1,
            Self::Nan => 2,
            Self::Value => 3,
            Self::Uninit => 4,
        }
    }
}

/// A parsed chunk header: a view of the first 16 or 32 bytes, with no decoding done.
///
/// [`ChunkHeader::parse`] validates the fields the way C-Blosc2's reader does (sizes, typesize,
/// blocksize range, special-value code), so the accessors can be trusted by the decoder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChunkHeader {
    version: u8,
    versionlz: u8,
    flags: Flags,
    typesize: u8,
    nbytes: usize,
    blocksize_field: usize,
    cbytes: usize,
    extended: bool,
    filters: [u8; MAX_FILTERS],
    udcodec: u8,
    compcode_meta: u8,
    filters_meta: [u8; MAX_FILTERS],
    flags2: u8,
    blosc2_flags: Blosc2Flags,
}

/// Reads a little-endian `i32` at `off` of `b` (`None` past the end).
pub(crate) fn read_i32(b: &[u8], off: usize) -> Option<i32> {
    let s = b.get(off..off.checked_add(4)?)?;
    Some(i32::from_le_bytes([s[0], s[1], s[2], s[3]]))
}

fn read_u8(b: &[u8], off: usize) -> Option<u8> {
    b.get(off).copied()
}

/// The highest format version byte taken for a Blosc chunk at all. The format went from 1 to 6
/// in fifteen years; a larger byte (text starts with 32 or more) is other data, not a chunk of
/// a future version, which [`Error::Unsupported`] is kept for. (Version 0 is read, as C-Blosc2
/// reads it.)
const MAX_PLAUSIBLE_VERSION: u8 = 15;

fn nonneg(what: &'static str, v: i32) -> Result<usize> {
    usize::try_from(v).map_err(|_| Error::NotAChunk {
        what,
        value: i64::from(v),
    })
}

impl ChunkHeader {
    /// Parses and validates the header at the start of `chunk`.
    ///
    /// Only the header bytes are read; `chunk` may be shorter than `cbytes`.
    ///
    /// # Errors
    ///
    /// [`Error::Truncated`] if `chunk` is shorter than the header, [`Error::NotAChunk`] for
    /// negative sizes, `typesize == 0`, a block size outside `1..=536866816`, `cbytes` smaller
    /// than the header or a reserved special-value code, [`Error::Unsupported`] for a version
    /// above 6 with unknown `blosc2_flags2` bits.
    pub fn parse(chunk: &[u8]) -> Result<Self> {
        let b16 = chunk
            .get(..MIN_HEADER_LENGTH)
            .ok_or_else(|| Error::truncated("header", 0, MIN_HEADER_LENGTH, chunk.len()))?;
        let version = b16[0];
        if version > MAX_PLAUSIBLE_VERSION {
            return Err(Error::NotAChunk {
                what: "format version",
                value: i64::from(version),
            });
        }
        let versionlz = b16[1];
        let flags = Flags::from_bits_retain(b16[2]);
        let typesize = b16[3];
        let nbytes = nonneg("nbytes", read_i32(b16, 4).unwrap_or(0))?;
        let blocksize_raw = read_i32(b16, 8).unwrap_or(0);
        let cbytes = nonneg("cbytes", read_i32(b16, 12).unwrap_or(0))?;
        let extended = flags.contains(Flags::EXTENDED);
        let mut h = Self {
            version,
            versionlz,
            flags,
            typesize,
            nbytes,
            blocksize_field: 0,
            cbytes,
            extended,
            filters: [0; MAX_FILTERS],
            udcodec: 0,
            compcode_meta: 0,
            filters_meta: [0; MAX_FILTERS],
            flags2: 0,
            blosc2_flags: Blosc2Flags::empty(),
        };
        if extended {
            let b32 = chunk.get(..EXTENDED_HEADER_LENGTH).ok_or_else(|| {
                Error::truncated("extended header", 0, EXTENDED_HEADER_LENGTH, chunk.len())
            })?;
            for i in 0..MAX_FILTERS {
                h.filters[i] = read_u8(b32, 16 + i).unwrap_or(0);
                h.filters_meta[i] = read_u8(b32, 24 + i).unwrap_or(0);
            }
            h.udcodec = b32[22];
            h.compcode_meta = b32[23];
            h.flags2 = b32[30];
            h.blosc2_flags = Blosc2Flags::from_bits_retain(b32[31]);
            if version == 3 {
                // The alpha format did not initialise the last slot.
                h.filters[MAX_FILTERS - 1] = 0;
                h.filters_meta[MAX_FILTERS - 1] = 0;
            }
        } else {
            if flags.contains(Flags::SHUFFLE) {
                h.filters[5] = Filter::Shuffle.id();
            } else if flags.contains(Flags::BITSHUFFLE) {
                h.filters[5] = Filter::BitShuffle.id();
            }
            if flags.contains(Flags::DELTA) {
                h.filters[4] = Filter::Delta.id();
            }
        }
        if typesize == 0 {
            return Err(Error::NotAChunk {
                what: "typesize",
                value: 0,
            });
        }
        if cbytes < h.header_len() {
            return Err(Error::NotAChunk {
                what: "cbytes",
                value: i64::from(read_i32(b16, 12).unwrap_or(0)),
            });
        }
        if version > VERSION_FORMAT_VL_BLOCKS && h.flags2 & !FLAGS2_VL_BLOCKS != 0 {
            return Err(Error::Unsupported {
                what: "chunk format version",
                id: u32::from(version),
            });
        }
        let bs = nonneg("blocksize", blocksize_raw)?;
        if bs == 0 || bs > MAX_BLOCKSIZE {
            return Err(Error::NotAChunk {
                what: "blocksize",
                value: i64::from(blocksize_raw),
            });
        }
        h.blocksize_field = bs;
        let special = h.blosc2_flags.special_code();
        if special > 4 {
            return Err(Error::NotAChunk {
                what: "special value code",
                value: i64::from(special),
            });
        }
        if h.vl_blocks() && (special != 0 || h.is_memcpyed()) {
            return Err(Error::NotAChunk {
                what: "flags of a vl-block chunk",
                value: i64::from(flags.bits()),
            });
        }
        Ok(h)
    }

    /// Format version byte (1–6 in the wild).
    #[must_use]
    pub fn version(&self) -> u8 {
        self.version
    }

    /// Codec format version byte (1 for built-in codecs; never checked).
    #[must_use]
    pub fn versionlz(&self) -> u8 {
        self.versionlz
    }

    /// The raw flags byte.
    #[must_use]
    pub fn flags(&self) -> u8 {
        self.flags.bits()
    }

    /// Uncompressed size in bytes.
    #[must_use]
    pub fn nbytes(&self) -> usize {
        self.nbytes
    }

    /// Total chunk size in bytes, header included.
    #[must_use]
    pub fn cbytes(&self) -> usize {
        self.cbytes
    }

    /// Effective block size: the header field clamped to `nbytes` (at least 1). For VL-block
    /// chunks the header field is the block count; see [`ChunkHeader::nblocks`].
    #[must_use]
    pub fn blocksize(&self) -> usize {
        if self.vl_blocks() {
            return self.blocksize_field;
        }
        self.blocksize_field.min(self.nbytes).max(1)
    }

    /// The raw header `blocksize` field (block count for VL-block chunks).
    #[must_use]
    pub fn blocksize_field(&self) -> usize {
        self.blocksize_field
    }

    /// Number of blocks (0 for an empty chunk).
    #[must_use]
    pub fn nblocks(&self) -> usize {
        if self.vl_blocks() {
            return self.blocksize_field;
        }
        self.nbytes.div_ceil(self.blocksize())
    }

    /// Size of one item as stored in the header (1 when the real type is wider than 255).
    #[must_use]
    pub fn typesize(&self) -> usize {
        usize::from(self.typesize)
    }

    /// Stream format code, flags bits 5–7.
    #[must_use]
    pub fn codec_format(&self) -> u8 {
        self.flags.codec_format()
    }

    /// The codec. LZ4 and LZ4HC share a stream format; they are told apart by the
    /// `udcodec` byte of the extended header.
    #[must_use]
    pub fn codec(&self) -> Codec {
        match self.codec_format() {
            0 => Codec::BloscLz,
            1 if self.extended && self.udcodec == 2 => Codec::Lz4Hc,
            1 => Codec::Lz4,
            2 => Codec::Other(3),
            3 => Codec::Zlib,
            4 => Codec::Zstd,
            _ => Codec::from_id(self.udcodec),
        }
    }

    /// The six filter slots (for Blosc1 headers: mapped from the flags as C-Blosc2 does).
    #[must_use]
    pub fn filters(&self) -> [Filter; MAX_FILTERS] {
        self.filters.map(Filter::from_id)
    }

    /// The raw filter ids.
    #[must_use]
    pub fn filter_ids(&self) -> [u8; MAX_FILTERS] {
        self.filters
    }

    /// Per-slot filter metadata.
    #[must_use]
    pub fn filters_meta(&self) -> [u8; MAX_FILTERS] {
        self.filters_meta
    }

    /// The `udcodec` byte (codec id; 0 with a Blosc1 header).
    #[must_use]
    pub fn udcodec(&self) -> u8 {
        self.udcodec
    }

    /// Codec metadata byte (used by plugin codecs).
    #[must_use]
    pub fn compcode_meta(&self) -> u8 {
        self.compcode_meta
    }

    /// The `blosc2_flags` byte (0 with a Blosc1 header).
    #[must_use]
    pub fn blosc2_flags(&self) -> u8 {
        self.blosc2_flags.bits()
    }

    /// The `blosc2_flags2` byte (0 with a Blosc1 header).
    #[must_use]
    pub fn blosc2_flags2(&self) -> u8 {
        self.flags2
    }

    /// Special-value kind, if this is a special chunk.
    #[must_use]
    pub fn special(&self) -> Option<SpecialValue> {
        match self.blosc2_flags.special_code() {
            1 => Some(SpecialValue::Zeros),
            2 => Some(SpecialValue::Nan),
            3 => Some(SpecialValue::Value),
            4 => Some(SpecialValue::Uninit),
            _ => None,
        }
    }

    /// Header length: 32 for an extended header, else 16.
    #[must_use]
    pub fn header_len(&self) -> usize {
        if self.extended {
            EXTENDED_HEADER_LENGTH
        } else {
            MIN_HEADER_LENGTH
        }
    }

    /// Whether the 32-byte extended header is present.
    #[must_use]
    pub fn is_extended(&self) -> bool {
        self.extended
    }

    /// Whether the payload is the raw, unfiltered data.
    #[must_use]
    pub fn is_memcpyed(&self) -> bool {
        self.flags.contains(Flags::MEMCPYED)
    }

    /// Whether blocks hold a single stream each (flags bit 4).
    #[must_use]
    pub fn dont_split(&self) -> bool {
        self.flags.contains(Flags::DONT_SPLIT)
    }

    /// Whether a dictionary section follows the block starts.
    #[must_use]
    pub fn uses_dict(&self) -> bool {
        self.blosc2_flags.contains(Blosc2Flags::USE_DICT)
    }

    /// Whether this is an in-memory lazy chunk (header + bstarts + trailer, no data).
    #[must_use]
    pub fn is_lazy(&self) -> bool {
        self.blosc2_flags.contains(Blosc2Flags::LAZY)
    }

    /// Whether the streams hold instrumentation records instead of data.
    #[must_use]
    pub fn is_instrumented(&self) -> bool {
        self.blosc2_flags.contains(Blosc2Flags::INSTRUMENTED)
    }

    /// Whether blocks have individual sizes (format version 6, `blosc2_flags2` bit 0).
    #[must_use]
    pub fn vl_blocks(&self) -> bool {
        self.flags2 & FLAGS2_VL_BLOCKS != 0
    }

    /// Number of streams in block `j` (the leftover block is never split).
    pub(crate) fn nstreams(&self, bsize: usize) -> usize {
        if !self.dont_split() && !self.vl_blocks() && bsize == self.blocksize() {
            self.typesize()
        } else {
            1
        }
    }
}

/// Fields of a header to write.
#[derive(Debug, Clone, Copy)]
pub(crate) struct HeaderFields {
    pub(crate) version: u8,
    pub(crate) flags: Flags,
    pub(crate) typesize: u8,
    pub(crate) nbytes: usize,
    pub(crate) blocksize: usize,
    pub(crate) cbytes: usize,
    pub(crate) filters: [u8; MAX_FILTERS],
    pub(crate) udcodec: u8,
    pub(crate) compcode_meta: u8,
    pub(crate) filters_meta: [u8; MAX_FILTERS],
    pub(crate) blosc2_flags: Blosc2Flags,
}

fn i32_bytes(what: &'static str, v: usize) -> Result<[u8; 4]> {
    i32::try_from(v)
        .map(i32::to_le_bytes)
        .map_err(|_| Error::InvalidParam {
            what,
            why: "does not fit in a 32-bit header field",
        })
}

impl HeaderFields {
    /// Writes the header into `out[..16]` or `out[..32]`.
    pub(crate) fn write(&self, out: &mut [u8], extended: bool) -> Result<()> {
        let len = if extended {
            EXTENDED_HEADER_LENGTH
        } else {
            MIN_HEADER_LENGTH
        };
        let h = out.get_mut(..len).ok_or(Error::OutputTooSmall {
            needed: len,
            available: 0,
        })?;
        h[0] = self.version;
        h[1] = 1;
        h[2] = self.flags.bits();
        h[3] = self.typesize;
        h[4..8].copy_from_slice(&i32_bytes("nbytes", self.nbytes)?);
        h[8..12].copy_from_slice(&i32_bytes("blocksize", self.blocksize)?);
        h[12..16].copy_from_slice(&i32_bytes("cbytes", self.cbytes)?);
        if extended {
            h[16..22].copy_from_slice(&self.filters);
            h[22] = self.udcodec;
            h[23] = self.compcode_meta;
            h[24..30].copy_from_slice(&self.filters_meta);
            h[30] = 0;
            h[31] = self.blosc2_flags.bits();
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A Blosc2 header: version 5, flags 0x31 (extended, no shuffle), typesize 4, 1000 bytes in
    /// one block of 1000, 1032 compressed bytes.
    fn header() -> [u8; 32] {
        let mut h = [0u8; 32];
        h[0] = 5;
        h[1] = 1;
        h[2] = 0x31;
        h[3] = 4;
        h[4..8].copy_from_slice(&1000i32.to_le_bytes());
        h[8..12].copy_from_slice(&1000i32.to_le_bytes());
        h[12..16].copy_from_slice(&1032i32.to_le_bytes());
        h
    }

    #[test]
    fn implausible_headers_are_not_blosc_chunks_first() {
        assert!(ChunkHeader::parse(&header()).is_ok());
        let cases: [(usize, i32, &str); 5] = [
            (0, 35, "not a Blosc chunk: invalid format version 35"),
            (3, 0, "not a Blosc chunk: invalid typesize 0"),
            (4, -5, "not a Blosc chunk: invalid nbytes -5"),
            (
                8,
                744_778_866,
                "not a Blosc chunk: invalid blocksize 744778866",
            ),
            (
                12,
                -588_726_258,
                "not a Blosc chunk: invalid cbytes -588726258",
            ),
        ];
        for (off, value, msg) in cases {
            let mut h = header();
            if off < 4 {
                h[off] = u8::try_from(value).unwrap_or(0);
            } else {
                h[off..off + 4].copy_from_slice(&value.to_le_bytes());
            }
            let e = ChunkHeader::parse(&h).err();
            assert!(matches!(e, Some(Error::NotAChunk { .. })), "{e:?}");
            assert_eq!(e.map(|e| e.to_string()).as_deref(), Some(msg));
        }
    }
}
