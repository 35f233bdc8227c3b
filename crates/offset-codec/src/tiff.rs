//! Little-endian single-strip TIFF headers for use as an `offset` prefix (proposal Example 1).
//!
//! Layout (all little-endian): `II`, 42, IFD offset 8; then one IFD with 8 entries
//! (ImageWidth, ImageLength, BitsPerSample, Compression, PhotometricInterpretation = 1,
//! StripOffsets = header length, RowsPerStrip = height, StripByteCounts), plus SampleFormat as
//! a 9th entry for signed and floating-point samples; next-IFD offset 0. That is 110 bytes
//! (122 with SampleFormat), and the image data follows immediately. ImageWidth is the last
//! (fastest) Zarr dimension of the chunk, ImageLength the first. The crate's `FORMAT.md` has the
//! byte table and why the proposal's hexdump (unlike its base64) is not to be trusted.

use serde::{Deserialize, Serialize};

use crate::codec::{DynamicPrefix, PrefixContext};
use crate::config::OffsetConfiguration;
use crate::error::{Error, Result};

/// The sample type of a single-channel image. Serialised as its Zarr v3 data type name
/// ([`zarr_name`](Self::zarr_name)): `"uint8"`, …, `"float64"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[non_exhaustive]
pub enum TiffSampleType {
    /// `uint8`
    #[serde(rename = "uint8")]
    U8,
    /// `uint16`
    #[serde(rename = "uint16")]
    U16,
    /// `uint32`
    #[serde(rename = "uint32")]
    U32,
    /// `uint64`
    #[serde(rename = "uint64")]
    U64,
    /// `int8`
    #[serde(rename = "int8")]
    I8,
    /// `int16`
    #[serde(rename = "int16")]
    I16,
    /// `int32`
    #[serde(rename = "int32")]
    I32,
    /// `int64`
    #[serde(rename = "int64")]
    I64,
    /// `float32`
    #[serde(rename = "float32")]
    F32,
    /// `float64`
    #[serde(rename = "float64")]
    F64,
}

impl TiffSampleType {
    /// Bits per sample.
    #[must_use]
    pub const fn bits(self) -> u16 {
        match self {
            Self::U8 | Self::I8 => 8,
            Self::U16 | Self::I16 => 16,
            Self::U32 | Self::I32 | Self::F32 => 32,
            Self::U64 | Self::I64 | Self::F64 => 64,
        }
    }

    /// Bytes per sample.
    #[must_use]
    pub const fn bytes(self) -> u16 {
        self.bits() / 8
    }

    /// TIFF SampleFormat: 1 unsigned, 2 signed, 3 IEEE float.
    #[must_use]
    pub const fn sample_format(self) -> u16 {
        match self {
            Self::U8 | Self::U16 | Self::U32 | Self::U64 => 1,
            Self::I8 | Self::I16 | Self::I32 | Self::I64 => 2,
            Self::F32 | Self::F64 => 3,
        }
    }

    /// The Zarr v3 data type name.
    #[must_use]
    pub const fn zarr_name(self) -> &'static str {
        match self {
            Self::U8 => "uint8",
            Self::U16 => "uint16",
            Self::U32 => "uint32",
            Self::U64 => "uint64",
            Self::I8 => "int8",
            Self::I16 => "int16",
            Self::I32 => "int32",
            Self::I64 => "int64",
            Self::F32 => "float32",
            Self::F64 => "float64",
        }
    }
}

/// TIFF Compression tag values supported by the builder. Serialised as `"none"` / `"deflate"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum TiffCompression {
    /// 1: uncompressed; the strip byte count must be width × height × bytes per sample.
    None,
    /// 8: Adobe Deflate. The strip must be a **zlib** stream (Zarr `numcodecs.zlib`), not gzip.
    Deflate,
}

impl TiffCompression {
    const fn code(self) -> u16 {
        match self {
            Self::None => 1,
            Self::Deflate => 8,
        }
    }
}

const SHORT: u16 = 3;
const LONG: u16 = 4;

/// Length of the prefix [`tiff_prefix`] builds for `sample`: 110, or 122 with SampleFormat.
#[must_use]
pub const fn tiff_prefix_len(sample: TiffSampleType) -> usize {
    8 + 2 + 12 * entry_count(sample) + 4
}

const fn entry_count(sample: TiffSampleType) -> usize {
    if sample.sample_format() == 1 { 8 } else { 9 }
}

/// Builds the header of a little-endian single-strip TIFF whose strip of `strip_byte_count`
/// bytes follows the header directly.
///
/// `tiff_prefix(256, 256, TiffSampleType::U16, TiffCompression::None, 131072)` is the
/// proposal's 110-byte prefix, byte for byte.
///
/// # Errors
/// [`Error::TiffZeroDimension`], [`Error::TiffStripTooLarge`] (more than `u32::MAX`), and for
/// uncompressed strips [`Error::TiffStripByteCount`] when the count is not
/// width × height × bytes per sample.
pub fn tiff_prefix(
    width: u32,
    height: u32,
    sample: TiffSampleType,
    compression: TiffCompression,
    strip_byte_count: u64,
) -> Result<Vec<u8>> {
    if width == 0 {
        return Err(Error::TiffZeroDimension { field: "width" });
    }
    if height == 0 {
        return Err(Error::TiffZeroDimension { field: "height" });
    }
    if compression == TiffCompression::None {
        let expected = u64::from(width)
            .checked_mul(u64::from(height))
            .and_then(|p| p.checked_mul(u64::from(sample.bytes())))
            .ok_or(Error::Overflow {
                what: "tiff strip size",
            })?;
        if strip_byte_count != expected {
            return Err(Error::TiffStripByteCount {
                actual: strip_byte_count,
                expected,
                width,
                height,
            });
        }
    }
    let count = u32::try_from(strip_byte_count).map_err(|_| Error::TiffStripTooLarge {
        len: strip_byte_count,
        max: u64::from(u32::MAX),
    })?;
    let len = tiff_prefix_len(sample);
    let mut out = Vec::with_capacity(len);
    out.extend_from_slice(b"II");
    out.extend_from_slice(&42u16.to_le_bytes());
    out.extend_from_slice(&8u32.to_le_bytes());
    let n = entry_count(sample);
    out.extend_from_slice(&u16::try_from(n).unwrap_or(9).to_le_bytes());
    let mut entry = |tag: u16, value: u32, short: bool| {
        out.extend_from_slice(&tag.to_le_bytes());
        out.extend_from_slice(&(if short { SHORT } else { LONG }).to_le_bytes());
        out.extend_from_slice(&1u32.to_le_bytes());
        // little-endian: a SHORT occupies the first two bytes of the value field
        out.extend_from_slice(&value.to_le_bytes());
    };
    let fits_short = |v: u32| u16::try_from(v).is_ok();
    entry(256, width, fits_short(width)); // ImageWidth
    entry(257, height, fits_short(height)); // ImageLength
    entry(258, u32::from(sample.bits()), true); // BitsPerSample
    entry(259, u32::from(compression.code()), true); // Compression
    entry(262, 1, true); // PhotometricInterpretation = BlackIsZero
    entry(273, u32::try_from(len).unwrap_or(u32::MAX), false); // StripOffsets
    entry(278, height, fits_short(height)); // RowsPerStrip
    entry(279, count, false); // StripByteCounts
    if n == 9 {
        entry(339, u32::from(sample.sample_format()), true); // SampleFormat
    }
    out.extend_from_slice(&0u32.to_le_bytes()); // no next IFD
    debug_assert_eq!(out.len(), len);
    Ok(out)
}

/// The `offset` configuration that makes every chunk of an uncompressed `height` × `width`
/// chunk (little-endian `bytes` codec) a standalone TIFF.
///
/// # Errors
/// As [`tiff_prefix`].
pub fn tiff_offset_configuration(
    width: u32,
    height: u32,
    sample: TiffSampleType,
) -> Result<OffsetConfiguration> {
    let count = u64::from(width)
        .checked_mul(u64::from(height))
        .and_then(|p| p.checked_mul(u64::from(sample.bytes())))
        .ok_or(Error::Overflow {
            what: "tiff strip size",
        })?;
    let prefix = tiff_prefix(width, height, sample, TiffCompression::None, count)?;
    Ok(OffsetConfiguration::from_prefix(&prefix))
}

/// A dynamic prefix for Deflate-compressed chunks: the header of [`tiff_prefix`] with
/// Compression = 8 and StripByteCounts = the length of each chunk's payload. Pair it with an
/// `offset` of [`tiff_prefix_len`] bytes placed after a `numcodecs.zlib` codec (not `gzip`:
/// TIFF readers reject gzip framing).
#[must_use]
pub fn tiff_dynamic_prefix(width: u32, height: u32, sample: TiffSampleType) -> DynamicPrefix {
    DynamicPrefix::new(move |ctx: &PrefixContext<'_>| {
        let len = u64::try_from(ctx.payload.len()).unwrap_or(u64::MAX);
        tiff_prefix(width, height, sample, TiffCompression::Deflate, len).map_err(Into::into)
    })
}
