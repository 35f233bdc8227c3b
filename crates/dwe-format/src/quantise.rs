//! From float embeddings to the quantised i16 tensor the format stores.

use crate::error::{Error, Result};
use crate::writer::{Dims, WriteLayout, encode};

/// Quantises `values` with `scale_factor`: each value becomes `round(v / scale_factor)` (f32
/// division, then rounding half away from zero, as `f32::round`), which must lie in
/// `-32768..=32767`. Reading the file back gives `scale_factor × q`.
///
/// # Errors
/// [`Error::InvalidParameter`] if `scale_factor` is not finite and > 0; [`Error::Quantise`] for
/// a non-finite value or one whose quantised value does not fit in i16.
pub fn quantise(values: &[f32], scale_factor: f32) -> Result<Vec<i16>> {
    if !(scale_factor.is_finite() && scale_factor > 0.0) {
        return Err(Error::InvalidParameter {
            what: "scale_factor",
            reason: format!("{scale_factor} is not a finite positive number"),
        });
    }
    values
        .iter()
        .enumerate()
        .map(|(index, &value)| {
            let q = (value / scale_factor).round();
            if q.is_finite() && (-32768.0..=32767.0).contains(&q) {
                // In range and integral: the conversion is exact.
                #[allow(clippy::cast_possible_truncation)]
                Ok(q as i16)
            } else {
                Err(Error::Quantise {
                    index,
                    value,
                    scale_factor,
                })
            }
        })
        .collect()
}

/// [`quantise`] followed by [`encode`](crate::encode): float embeddings `[T][V][K]` to `.dwe`
/// bytes in one call.
///
/// # Errors
/// As [`quantise`] and [`encode`](crate::encode).
pub fn encode_f32(
    values: &[f32],
    dims: Dims,
    scale_factor: f32,
    layout: WriteLayout,
) -> Result<Vec<u8>> {
    encode(&quantise(values, scale_factor)?, dims, scale_factor, layout)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounds_half_away_from_zero() {
        assert_eq!(
            quantise(&[0.25, -0.25, 0.75, 1.0, 0.2, -0.2], 0.5).unwrap(),
            [1, -1, 2, 2, 0, 0]
        );
        assert_eq!(
            quantise(&[-65536.0, 65534.0], 2.0).unwrap(),
            [-32768, 32767]
        );
    }

    #[test]
    fn rejects_out_of_range_and_non_finite() {
        assert!(matches!(
            quantise(&[0.0, 65536.0], 2.0),
            Err(Error::Quantise { index: 1, .. })
        ));
        assert!(quantise(&[f32::NAN], 1.0).is_err());
        assert!(quantise(&[1.0], 0.0).is_err());
        assert!(quantise(&[1.0], f32::INFINITY).is_err());
    }
}
