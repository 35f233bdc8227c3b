//! The fixed 87-byte part of the frame header (`new_header_frame` in C-Blosc2's `frame.c`).
//!
//! The header is a msgpack array, but C-Blosc2 reads and patches it at fixed offsets, and so do
//! we: the flags "string" is not UTF-8 and the metalayers that follow can hold non-msgpack data
//! (16-D b2nd), so a generic msgpack parser is the wrong tool.

use blosc_chunk::{Codec, Filter, SplitMode};

use crate::bytes::Bytes;
use crate::error::{Error, Result};

/// Length of the fixed part of the header (`FRAME_HEADER_MINLEN`); metalayers follow it.
pub const HEADER_FIXED_LEN: usize = 87;

/// `b2frame\0` at offset 2.
pub(crate) const MAGIC: &[u8; 8] = b"b2frame\0";

/// Highest frame format version C-Blosc2 reads (`BLOSC2_VERSION_FRAME_FORMAT_VL_BLOCKS`).
pub const MAX_FRAME_FORMAT_VERSION: u8 = 3;

/// Frame format version written for fixed-chunksize frames (`BLOSC2_VERSION_FRAME_FORMAT_RC1`).
pub(crate) const FRAME_FORMAT_VERSION_FIXED: u8 = 2;

/// Frame format version written when chunks vary in size or use VL blocks.
pub(crate) const FRAME_FORMAT_VERSION_VARIABLE: u8 = 3;

// Field offsets (`FRAME_*` in `blosc/frame.h`).
const OFF_HEADER_LEN: usize = 11;
const OFF_FRAME_LEN: usize = 16;
const OFF_FLAGS: usize = 25;
const OFF_NBYTES: usize = 30;
const OFF_CBYTES: usize = 39;
const OFF_TYPESIZE: usize = 48;
const OFF_BLOCKSIZE: usize = 53;
const OFF_CHUNKSIZE: usize = 58;
const OFF_TCOMP: usize = 63;
const OFF_TDECOMP: usize = 66;
const OFF_HAS_VLMETA: usize = 68;
const OFF_NFILTERS: usize = 70;
const OFF_FILTERS: usize = 71;
const OFF_UDCODEC: usize = 77;
const OFF_CODEC_META: usize = 78;
const OFF_FILTERS_META: usize = 79;
const OFF_OTHER_FLAGS2: usize = 85;

/// What kind of storage the frame describes (byte 26).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
#[non_exhaustive]
pub enum FrameType {
    /// A single file or buffer: header, chunks, index, trailer.
    Contiguous,
    /// A directory: `chunks.b2frame` (header, index, trailer) plus one file per chunk.
    Sparse,
    /// A value C-Blosc2 reserves (2..=255).
    Other(u8),
}

impl FrameType {
    /// The byte stored in the header.
    #[must_use]
    pub fn code(self) -> u8 {
        match self {
            Self::Contiguous => 0,
            Self::Sparse => 1,
            Self::Other(v) => v,
        }
    }

    fn from_code(v: u8) -> Self {
        match v {
            0 => Self::Contiguous,
            1 => Self::Sparse,
            v => Self::Other(v),
        }
    }
}

/// The frame header's fixed fields with every flag byte decoded.
///
/// Integers are stored big-endian (msgpack); sizes that C stores signed are validated to be
/// non-negative and exposed unsigned.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[non_exhaustive]
pub struct FrameHeader {
    /// Header length including metalayers (offset 11).
    pub header_len: u32,
    /// Whole frame length including chunks, index and trailer (offset 16).
    pub frame_len: u64,
    /// Frame format version, `general_flags` bits 0-3 (2 fixed-size chunks, 3 variable/VL blocks).
    pub format_version: u8,
    /// Offsets width code, `general_flags` bits 4-5 (1 = 64-bit, the only one written).
    pub offsets_width: u8,
    /// Chunks of variable size, `general_flags` bit 6.
    pub variable_chunks: bool,
    /// Chunks use variable-length blocks, `general_flags` bit 7.
    pub vl_blocks: bool,
    /// Contiguous or sparse (byte 26).
    pub frame_type: FrameType,
    /// Codec code, low nibble of byte 27: 0 BloscLZ, 1 LZ4, 2 LZ4HC, 4 zlib, 5 zstd, 6 = see
    /// [`FrameHeader::udcodec`] (the *compcode*, not the chunk format's codec number that
    /// C-Blosc2's README shows).
    pub codec_code: u8,
    /// Default compression level, high nibble of byte 27.
    pub clevel: u8,
    /// Split mode as C's enum value (1 always, 2 never, 3 auto, 4 forward-compat); stored minus 1
    /// in bits 0-1 of byte 28.
    pub splitmode: u8,
    /// Uncompressed size of all chunks (offset 30).
    pub nbytes: u64,
    /// Compressed size of all stored chunks, special chunks count 0 (offset 39).
    pub cbytes: u64,
    /// Item size in bytes (offset 48); 1 when the real item is wider than 255 bytes.
    pub typesize: u32,
    /// Default block size (offset 53); 0 = automatic.
    pub blocksize: u32,
    /// Chunk size (offset 58); 0 = chunks vary in size.
    pub chunksize: u32,
    /// Compression threads (offset 63, informational).
    pub nthreads_compress: i16,
    /// Decompression threads (offset 66, informational).
    pub nthreads_decompress: i16,
    /// The trailer holds vlmetalayers (offset 68; informational, the trailer is authoritative).
    pub has_vlmetalayers: bool,
    /// Default filter pipeline, slot 0 applied first (offsets 71-76).
    pub filters: [u8; 6],
    /// Codec id (offset 77); the codec when `codec_code == 6`.
    pub udcodec: u8,
    /// Codec metadata (offset 78).
    pub compcode_meta: u8,
    /// Filter metadata per slot (offsets 79-84).
    pub filters_meta: [u8; 6],
    /// Chunks are compressed with a dictionary (`other_flags2` bit 0, offset 85).
    pub use_dict: bool,
}

impl FrameHeader {
    /// Parses the fixed part of a frame header from the first [`HEADER_FIXED_LEN`] bytes.
    ///
    /// Checks the msgpack markers C-Blosc2 writes, the magic, the version (≤ 3), and that
    /// every size is non-negative, `header_len >= 87`, `header_len <= frame_len`,
    /// `typesize > 0` and at most 6 filters. Consistency with the real input length is checked
    /// by the frame reader.
    ///
    /// # Errors
    /// [`Error::Truncated`] for fewer than 87 bytes, [`Error::BadMagic`], [`Error::Marker`],
    /// [`Error::UnsupportedVersion`] or [`Error::Invalid`] naming the field.
    pub fn parse(buf: &[u8]) -> Result<Self> {
        let b = Bytes::new(buf, 0);
        b.get("frame header", 0, HEADER_FIXED_LEN)?;
        b.marker("header array", 0, 0x9e)?;
        b.marker("magic string", 1, 0xa8)?;
        if b.get("magic", 2, 8)? != MAGIC {
            return Err(Error::BadMagic);
        }
        b.marker("header_len", 10, 0xd2)?;
        b.marker("frame_len", 15, 0xcf)?;
        b.marker("flags", 24, 0xa4)?;
        b.marker("nbytes", 29, 0xd3)?;
        b.marker("cbytes", 38, 0xd3)?;
        b.marker("typesize", 47, 0xd2)?;
        b.marker("blocksize", 52, 0xd2)?;
        b.marker("chunksize", 57, 0xd2)?;
        b.marker("compression threads", 62, 0xd1)?;
        b.marker("decompression threads", 65, 0xd1)?;
        b.marker("filter pipeline", 69, 0xd8)?;

        let header_len = b.be_i32("header_len", OFF_HEADER_LEN)?;
        let frame_len = b.be_u64("frame_len", OFF_FRAME_LEN)?;
        let header_len = u32::try_from(header_len)
            .ok()
            .filter(|&h| h as usize >= HEADER_FIXED_LEN && u64::from(h) <= frame_len)
            .ok_or_else(|| {
                Error::invalid(
                    "header_len",
                    OFF_HEADER_LEN as u64,
                    format!("{header_len} not in 87..={frame_len} (frame_len)"),
                )
            })?;
        let [general, frame_type, codec_flags, other_flags] = b.array::<4>("flags", OFF_FLAGS)?;
        let format_version = general & 0x0f;
        if format_version > MAX_FRAME_FORMAT_VERSION {
            return Err(Error::UnsupportedVersion(format_version));
        }
        let nbytes = non_negative_i64(&b, "nbytes", OFF_NBYTES)?;
        let cbytes = non_negative_i64(&b, "cbytes", OFF_CBYTES)?;
        let typesize = non_negative_i32(&b, "typesize", OFF_TYPESIZE)?;
        if typesize == 0 {
            return Err(Error::invalid("typesize", OFF_TYPESIZE as u64, "0"));
        }
        let blocksize = non_negative_i32(&b, "blocksize", OFF_BLOCKSIZE)?;
        let chunksize = non_negative_i32(&b, "chunksize", OFF_CHUNKSIZE)?;
        let has_vlmetalayers = match b.u8("has_vlmetalayers", OFF_HAS_VLMETA)? {
            0xc2 => false,
            0xc3 => true,
            found => {
                return Err(Error::Marker {
                    what: "has_vlmetalayers",
                    offset: OFF_HAS_VLMETA as u64,
                    expected: 0xc2,
                    found,
                });
            }
        };
        let nfilters = b.u8("number of filters", OFF_NFILTERS)?;
        if nfilters > 6 {
            return Err(Error::invalid(
                "number of filters",
                OFF_NFILTERS as u64,
                format!("{nfilters} > 6"),
            ));
        }
        Ok(Self {
            header_len,
            frame_len,
            format_version,
            offsets_width: (general >> 4) & 0x03,
            variable_chunks: general & 0x40 != 0,
            vl_blocks: general & 0x80 != 0,
            frame_type: FrameType::from_code(frame_type),
            codec_code: codec_flags & 0x0f,
            clevel: codec_flags >> 4,
            splitmode: (other_flags & 0x03) + 1,
            nbytes,
            cbytes,
            typesize,
            blocksize,
            chunksize,
            nthreads_compress: b.be_i16("compression threads", OFF_TCOMP)?,
            nthreads_decompress: b.be_i16("decompression threads", OFF_TDECOMP)?,
            has_vlmetalayers,
            filters: b.array("filters", OFF_FILTERS)?,
            udcodec: b.u8("udcodec", OFF_UDCODEC)?,
            compcode_meta: b.u8("compcode_meta", OFF_CODEC_META)?,
            filters_meta: b.array("filters_meta", OFF_FILTERS_META)?,
            use_dict: b.u8("other_flags2", OFF_OTHER_FLAGS2)? & 0x01 != 0,
        })
    }

    /// The codec id chunks are compressed with by default: `codec_code`, or `udcodec` when
    /// `codec_code` is 6 (user codec).
    #[must_use]
    pub fn codec_id(&self) -> u8 {
        if self.codec_code == 6 {
            self.udcodec
        } else {
            self.codec_code
        }
    }

    /// The default codec as [`blosc_chunk::Codec`] (from [`FrameHeader::codec_id`]).
    #[must_use]
    pub fn codec(&self) -> Codec {
        Codec::from_id(self.codec_id())
    }

    /// The default filter pipeline as [`blosc_chunk::Filter`]s.
    #[must_use]
    pub fn filter_pipeline(&self) -> [Filter; 6] {
        self.filters.map(Filter::from_id)
    }

    /// The split mode as [`blosc_chunk::SplitMode`] (`None` for values C never writes).
    #[must_use]
    pub fn split_mode(&self) -> Option<SplitMode> {
        match self.splitmode {
            1 => Some(SplitMode::Always),
            2 => Some(SplitMode::Never),
            3 => Some(SplitMode::Auto),
            4 => Some(SplitMode::ForwardCompat),
            _ => None,
        }
    }

    /// The `general_flags` byte (offset 25).
    #[must_use]
    pub fn general_flags(&self) -> u8 {
        (self.format_version & 0x0f)
            | ((self.offsets_width & 0x03) << 4)
            | (u8::from(self.variable_chunks) << 6)
            | (u8::from(self.vl_blocks) << 7)
    }

    /// Encodes the fixed 87 bytes exactly as C-Blosc2's `new_header_frame` lays them out.
    ///
    /// Values that do not fit their msgpack field (`header_len`, `typesize`, `blocksize`,
    /// `chunksize` above `i32::MAX`, sizes above `i64::MAX`) are clamped by the caller's
    /// validation; this function saturates them.
    #[must_use]
    pub fn to_bytes(&self) -> [u8; HEADER_FIXED_LEN] {
        let mut h = [0u8; HEADER_FIXED_LEN];
        h[0] = 0x9e;
        h[1] = 0xa8;
        h[2..10].copy_from_slice(MAGIC);
        h[10] = 0xd2;
        h[11..15].copy_from_slice(&sat_i32(u64::from(self.header_len)).to_be_bytes());
        h[15] = 0xcf;
        h[16..24].copy_from_slice(&self.frame_len.to_be_bytes());
        h[24] = 0xa4;
        h[25] = self.general_flags();
        h[26] = self.frame_type.code();
        h[27] = (self.codec_code & 0x0f) | (self.clevel << 4);
        h[28] = self.splitmode.wrapping_sub(1) & 0x03;
        h[29] = 0xd3;
        h[30..38].copy_from_slice(&sat_i64(self.nbytes).to_be_bytes());
        h[38] = 0xd3;
        h[39..47].copy_from_slice(&sat_i64(self.cbytes).to_be_bytes());
        h[47] = 0xd2;
        h[48..52].copy_from_slice(&sat_i32(u64::from(self.typesize)).to_be_bytes());
        h[52] = 0xd2;
        h[53..57].copy_from_slice(&sat_i32(u64::from(self.blocksize)).to_be_bytes());
        h[57] = 0xd2;
        h[58..62].copy_from_slice(&sat_i32(u64::from(self.chunksize)).to_be_bytes());
        h[62] = 0xd1;
        h[63..65].copy_from_slice(&self.nthreads_compress.to_be_bytes());
        h[65] = 0xd1;
        h[66..68].copy_from_slice(&self.nthreads_decompress.to_be_bytes());
        h[68] = if self.has_vlmetalayers { 0xc3 } else { 0xc2 };
        h[69] = 0xd8;
        h[70] = 6;
        h[71..77].copy_from_slice(&self.filters);
        h[77] = self.udcodec;
        h[78] = self.compcode_meta;
        h[79..85].copy_from_slice(&self.filters_meta);
        h[85] = u8::from(self.use_dict);
        h
    }
}

fn non_negative_i64(b: &Bytes<'_>, what: &'static str, at: usize) -> Result<u64> {
    let v = b.be_i64(what, at)?;
    u64::try_from(v).map_err(|_| Error::invalid(what, at as u64, format!("negative: {v}")))
}

fn non_negative_i32(b: &Bytes<'_>, what: &'static str, at: usize) -> Result<u32> {
    let v = b.be_i32(what, at)?;
    u32::try_from(v).map_err(|_| Error::invalid(what, at as u64, format!("negative: {v}")))
}

fn sat_i32(v: u64) -> i32 {
    i32::try_from(v).unwrap_or(i32::MAX)
}

fn sat_i64(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_then_encode_is_identity_on_fixture_prefix() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../testdata/blosc/frames/lz4_shuffle_meta_vlmeta.b2frame"
        );
        let bytes = std::fs::read(path).unwrap();
        let h = FrameHeader::parse(&bytes).unwrap();
        assert_eq!(h.header_len, 135);
        assert_eq!(h.frame_len, 2200);
        assert_eq!(h.format_version, 2);
        assert_eq!(h.offsets_width, 1);
        assert_eq!(h.frame_type, FrameType::Contiguous);
        assert_eq!((h.codec_code, h.clevel, h.splitmode), (1, 5, 3));
        assert_eq!((h.nbytes, h.typesize, h.chunksize), (240_000, 4, 100_000));
        assert!(h.has_vlmetalayers);
        assert_eq!(h.filters, [1, 0, 0, 0, 0, 0]);
        assert_eq!(h.udcodec, 1);
        assert_eq!(h.codec(), Codec::Lz4);
        assert_eq!(h.filter_pipeline()[0], Filter::Shuffle);
        assert_eq!(h.split_mode(), Some(SplitMode::Auto));
        assert_eq!(&h.to_bytes()[..], &bytes[..HEADER_FIXED_LEN]);
    }

    #[test]
    fn rejects_bad_fields() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../testdata/blosc/frames/fill_special_zero.b2frame"
        );
        let good = std::fs::read(path).unwrap();
        let mut v = good.clone();
        v[25] = 0x14; // version 4
        assert!(matches!(
            FrameHeader::parse(&v),
            Err(Error::UnsupportedVersion(4))
        ));
        let mut v = good.clone();
        v[11..15].copy_from_slice(&86i32.to_be_bytes());
        assert!(matches!(
            FrameHeader::parse(&v),
            Err(Error::Invalid {
                what: "header_len",
                ..
            })
        ));
        let mut v = good.clone();
        v[48..52].copy_from_slice(&0i32.to_be_bytes());
        assert!(matches!(
            FrameHeader::parse(&v),
            Err(Error::Invalid {
                what: "typesize",
                ..
            })
        ));
        let mut v = good.clone();
        v[5] = b'X';
        assert!(matches!(FrameHeader::parse(&v), Err(Error::BadMagic)));
        let mut v = good;
        v[30..38].copy_from_slice(&(-1i64).to_be_bytes());
        assert!(matches!(
            FrameHeader::parse(&v),
            Err(Error::Invalid { what: "nbytes", .. })
        ));
        assert!(matches!(
            FrameHeader::parse(&[0x9e; 86]),
            Err(Error::Truncated { .. })
        ));
    }
}
