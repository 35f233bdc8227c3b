//! Scalar keys: checked and wrapping encode/decode, dispatched to the fastest implementation.

use crate::error::{Error, Result};
use crate::portable;

/// Bits per axis of a 2-D `u32` key.
pub const BITS_2D_U32: u32 = 16;
/// Bits per axis of a 2-D `u64` key.
pub const BITS_2D_U64: u32 = 32;
/// Bits per axis of a 3-D `u32` key (bits 30–31 of the key are unused).
pub const BITS_3D_U32: u32 = 10;
/// Bits per axis of a 3-D `u64` key (bit 63 of the key is unused).
pub const BITS_3D_U64: u32 = 21;

/// Checks that every coordinate fits `bits` bits.
#[inline]
pub(crate) fn check_coords<const D: usize>(
    p: [u32; D],
    bits: u32,
    index: Option<usize>,
) -> Result<()> {
    for (axis, &value) in p.iter().enumerate() {
        if value >> bits != 0 {
            return Err(Error::CoordinateOutOfRange {
                axis,
                value,
                bits,
                index,
            });
        }
    }
    Ok(())
}

/// 2-D key with 16 bits per axis; every input fits.
///
/// Bit convention: x in bit 0, y in bit 1, then alternating.
#[inline]
#[must_use]
pub fn encode_2d_u32(p: [u16; 2]) -> u32 {
    portable::encode_2d_u32(p)
}

/// Coordinates `[x, y]` of a 2-D `u32` key; every key is valid.
#[inline]
#[must_use]
pub fn decode_2d_u32(key: u32) -> [u16; 2] {
    portable::decode_2d_u32(key)
}

/// 2-D key with 32 bits per axis; every input fits.
#[inline]
#[must_use]
pub fn encode_2d_u64(p: [u32; 2]) -> u64 {
    #[cfg(target_arch = "x86_64")]
    if let Some(t) = crate::dispatch::fast_bmi2() {
        return t.encode_2d_u64(p);
    }
    portable::encode_2d_u64(p)
}

/// Coordinates `[x, y]` of a 2-D `u64` key; every key is valid.
#[inline]
#[must_use]
pub fn decode_2d_u64(key: u64) -> [u32; 2] {
    #[cfg(target_arch = "x86_64")]
    if let Some(t) = crate::dispatch::fast_bmi2() {
        return t.decode_2d_u64(key);
    }
    portable::decode_2d_u64(key)
}

/// 3-D key with 10 bits per axis: x in bit 0, y in bit 1, z in bit 2, then repeating.
///
/// # Errors
/// [`Error::CoordinateOutOfRange`] if a coordinate is ≥ 2¹⁰.
#[inline]
pub fn encode_3d_u32(p: [u32; 3]) -> Result<u32> {
    check_coords(p, BITS_3D_U32, None)?;
    Ok(encode_3d_u32_wrapping(p))
}

/// Like [`encode_3d_u32`], but each coordinate is masked to its low 10 bits first.
#[inline]
#[must_use]
pub fn encode_3d_u32_wrapping(p: [u32; 3]) -> u32 {
    #[cfg(target_arch = "x86_64")]
    if let Some(t) = crate::dispatch::fast_bmi2() {
        return t.encode_3d_u32(p);
    }
    portable::encode_3d_u32(p)
}

/// Coordinates `[x, y, z]` of a 3-D `u32` key.
///
/// # Errors
/// [`Error::KeyOutOfRange`] if bit 30 or 31 is set (no coordinates encode to such a key).
#[inline]
pub fn decode_3d_u32(key: u32) -> Result<[u32; 3]> {
    if key >> (3 * BITS_3D_U32) != 0 {
        return Err(Error::KeyOutOfRange {
            key: u64::from(key),
            bits: 3 * BITS_3D_U32,
            index: None,
        });
    }
    Ok(decode_3d_u32_wrapping(key))
}

/// Like [`decode_3d_u32`], but bits 30 and 31 are ignored.
#[inline]
#[must_use]
pub fn decode_3d_u32_wrapping(key: u32) -> [u32; 3] {
    // Both paths meet as one packed integer so the array is built once, in registers.
    #[cfg(target_arch = "x86_64")]
    let packed = match crate::dispatch::fast_bmi2() {
        Some(t) => t.decode_3d_u32_packed(key),
        None => portable::pack3(portable::decode_3d_u32(key)),
    };
    #[cfg(not(target_arch = "x86_64"))]
    let packed = portable::pack3(portable::decode_3d_u32(key));
    portable::unpack3(packed)
}

/// 3-D key with 21 bits per axis: x in bit 0, y in bit 1, z in bit 2, then repeating.
///
/// This is the WKW block order: `encode_3d_u64([29, 20, 3]) == Ok(13029)`.
///
/// # Errors
/// [`Error::CoordinateOutOfRange`] if a coordinate is ≥ 2²¹.
#[inline]
pub fn encode_3d_u64(p: [u32; 3]) -> Result<u64> {
    check_coords(p, BITS_3D_U64, None)?;
    Ok(encode_3d_u64_wrapping(p))
}

/// Like [`encode_3d_u64`], but each coordinate is masked to its low 21 bits first.
#[inline]
#[must_use]
pub fn encode_3d_u64_wrapping(p: [u32; 3]) -> u64 {
    #[cfg(target_arch = "x86_64")]
    if let Some(t) = crate::dispatch::fast_bmi2() {
        return t.encode_3d_u64(p);
    }
    portable::encode_3d_u64(p)
}

/// Coordinates `[x, y, z]` of a 3-D `u64` key.
///
/// # Errors
/// [`Error::KeyOutOfRange`] if bit 63 is set (no coordinates encode to such a key).
#[inline]
pub fn decode_3d_u64(key: u64) -> Result<[u32; 3]> {
    if key >> (3 * BITS_3D_U64) != 0 {
        return Err(Error::KeyOutOfRange {
            key,
            bits: 3 * BITS_3D_U64,
            index: None,
        });
    }
    Ok(decode_3d_u64_wrapping(key))
}

/// Like [`decode_3d_u64`], but bit 63 is ignored.
#[inline]
#[must_use]
pub fn decode_3d_u64_wrapping(key: u64) -> [u32; 3] {
    // Both paths meet as one packed integer so the array is built once, in registers.
    #[cfg(target_arch = "x86_64")]
    let packed = match crate::dispatch::fast_bmi2() {
        Some(t) => t.decode_3d_u64_packed(key),
        None => portable::pack3(portable::decode_3d_u64(key)),
    };
    #[cfg(not(target_arch = "x86_64"))]
    let packed = portable::pack3(portable::decode_3d_u64(key));
    portable::unpack3(packed)
}
