//! Truncate-precision filter (lossy): zeroes low mantissa bits of float32/float64 values.

use crate::error::{Error, Result};

/// Applies the filter from `src` to `dst`; `meta` is the signed precision byte.
pub(crate) fn encode(ts: usize, meta: u8, src: &[u8], dst: &mut [u8]) -> Result<()> {
    let prec = i32::from(i8::from_le_bytes([meta]));
    let mantissa = match ts {
        4 => 23,
        8 => 52,
        _ => {
            return Err(Error::InvalidParam {
                what: "trunc_prec typesize",
                why: "only typesize 4 and 8 are supported",
            });
        }
    };
    let zeroed = if prec >= 0 { mantissa - prec } else { -prec };
    if prec.abs() > mantissa || zeroed >= mantissa || zeroed < 0 {
        return Err(Error::InvalidParam {
            what: "trunc_prec precision",
            why: "more bits than the mantissa has",
        });
    }
    let len = src.len().min(dst.len());
    let body = len / ts * ts;
    let zeroed = u32::try_from(zeroed).unwrap_or(0);
    if ts == 4 {
        let mask = !((1u32 << zeroed) - 1);
        for (d, s) in dst[..body]
            .chunks_exact_mut(4)
            .zip(src[..body].chunks_exact(4))
        {
            let v = u32::from_le_bytes([s[0], s[1], s[2], s[3]]) & mask;
            d.copy_from_slice(&v.to_le_bytes());
        }
    } else {
        let mask = !((1u64 << zeroed) - 1);
        for (d, s) in dst[..body]
            .chunks_exact_mut(8)
            .zip(src[..body].chunks_exact(8))
        {
            let mut a = [0u8; 8];
            a.copy_from_slice(s);
            d.copy_from_slice(&(u64::from_le_bytes(a) & mask).to_le_bytes());
        }
    }
    dst[body..len].copy_from_slice(&src[body..len]);
    Ok(())
}
