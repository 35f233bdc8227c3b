//! INT_TRUNC (filter 36): lossy truncation of integers of 1, 2, 4 or 8 bytes (little-endian):
//! the meta, read as `i8`, keeps that many high bits when it is ≥ 0 and zeroes that many low
//! bits when it is negative. Decoding has nothing to undo (C-Blosc2 copies).

use super::geometry;
use crate::error::Result;

/// Forward filter: `src` → `dst` (same length). Bytes past the last whole item are copied.
pub(crate) fn encode(meta: u8, typesize: usize, src: &[u8], dst: &mut [u8]) -> Result<()> {
    if !matches!(typesize, 1 | 2 | 4 | 8) {
        return Err(geometry("int_trunc", "typesize must be 1, 2, 4 or 8"));
    }
    let bits: i32 = match typesize {
        1 => 8,
        2 => 16,
        4 => 32,
        _ => 64,
    };
    let prec = i32::from(meta.cast_signed());
    let zeroed = if prec >= 0 { bits - prec } else { -prec };
    // C computes `zeroed` in a `uint8_t`: a precision above the width wraps around to a huge
    // count and is refused like a reduction of the whole width.
    if zeroed < 0 || zeroed >= bits {
        return Err(geometry(
            "int_trunc",
            "the precision reduction must be smaller than the item width",
        ));
    }
    let mask: u64 = !((1u64 << zeroed) - 1);
    let body = src.len() / typesize * typesize;
    for (s, d) in src[..body]
        .chunks_exact(typesize)
        .zip(dst[..body].chunks_exact_mut(typesize))
    {
        for (k, (o, &v)) in d.iter_mut().zip(s).enumerate() {
            *o = v & mask.to_le_bytes()[k];
        }
    }
    dst[body..].copy_from_slice(&src[body..]);
    Ok(())
}
