//! Bit shuffle: a whole-block bit transpose (bit-plane layout).
//!
//! With `n = len / ts` elements and `n8 = n - n % 8`, the first `n8 * ts` bytes become `8 * ts`
//! bit planes of `n8 / 8` bytes: plane `8*j + k` holds bit `k` of byte `j` of every element,
//! element `i` at bit `i % 8` of byte `i / 8`. The remaining bytes are copied unchanged.

/// Transposes the 8×8 bit matrix held in `x` (row `r` = byte `r`, column `c` = bit `c`).
#[inline]
fn transpose8(mut x: u64) -> u64 {
    let t = (x ^ (x >> 7)) & 0x00AA_00AA_00AA_00AA;
    x ^= t ^ (t << 7);
    let t = (x ^ (x >> 14)) & 0x0000_CCCC_0000_CCCC;
    x ^= t ^ (t << 14);
    let t = (x ^ (x >> 28)) & 0x0000_0000_F0F0_F0F0;
    x ^ t ^ (t << 28)
}

/// Bit-shuffles `src` into `dst` (same length).
pub(crate) fn bitshuffle(ts: usize, src: &[u8], dst: &mut [u8]) {
    let len = src.len().min(dst.len());
    let ts = ts.max(1);
    let n = len / ts;
    let n8 = n - n % 8;
    let groups = n8 / 8;
    let body = n8 * ts;
    for j in 0..ts {
        for g in 0..groups {
            let base = g * 8 * ts + j;
            let mut x = 0u64;
            for e in 0..8 {
                x |= u64::from(src[base + e * ts]) << (8 * e);
            }
            let y = transpose8(x).to_le_bytes();
            for (k, &b) in y.iter().enumerate() {
                dst[(8 * j + k) * groups + g] = b;
            }
        }
    }
    dst[body..len].copy_from_slice(&src[body..len]);
}

/// Inverse of [`bitshuffle`].
pub(crate) fn bitunshuffle(ts: usize, src: &[u8], dst: &mut [u8]) {
    let len = src.len().min(dst.len());
    let ts = ts.max(1);
    let n = len / ts;
    let n8 = n - n % 8;
    let groups = n8 / 8;
    let body = n8 * ts;
    if ts == 1 {
        for g in 0..groups {
            let mut x = [0u8; 8];
            for (k, b) in x.iter_mut().enumerate() {
                *b = src[k * groups + g];
            }
            let y = transpose8(u64::from_le_bytes(x)).to_le_bytes();
            dst[g * 8..g * 8 + 8].copy_from_slice(&y);
        }
    } else {
        for j in 0..ts {
            let planes = &src[8 * j * groups..8 * (j + 1) * groups];
            for g in 0..groups {
                let mut x = [0u8; 8];
                for (k, b) in x.iter_mut().enumerate() {
                    *b = planes[k * groups + g];
                }
                let y = transpose8(u64::from_le_bytes(x)).to_le_bytes();
                let base = g * 8 * ts + j;
                for (e, &b) in y.iter().enumerate() {
                    dst[base + e * ts] = b;
                }
            }
        }
    }
    dst[body..len].copy_from_slice(&src[body..len]);
}

/// Bit-unshuffle as C-Blosc2 does it for format-version-2 (Blosc 1.x) chunks: the whole block
/// is untransposed when the element count is a multiple of 8, else copied unchanged.
pub(crate) fn bitunshuffle_v2(ts: usize, src: &[u8], dst: &mut [u8]) {
    let len = src.len().min(dst.len());
    let n = len / ts.max(1);
    if n.is_multiple_of(8) {
        bitunshuffle(ts, src, dst);
    } else {
        dst[..len].copy_from_slice(&src[..len]);
    }
}

#[cfg(test)]
#[allow(
    clippy::cast_possible_truncation,
    reason = "test patterns wrap on purpose"
)]
mod tests {
    use super::*;

    fn naive(ts: usize, src: &[u8]) -> Vec<u8> {
        let n = src.len() / ts;
        let n8 = n - n % 8;
        let mut out = src.to_vec();
        for b in out[..n8 * ts].iter_mut() {
            *b = 0;
        }
        let plane_len = n8 / 8;
        for i in 0..n8 {
            for j in 0..ts {
                for k in 0..8 {
                    let bit = (src[i * ts + j] >> k) & 1;
                    let p = 8 * j + k;
                    out[p * plane_len + i / 8] |= bit << (i % 8);
                }
            }
        }
        out
    }

    #[test]
    fn matches_definition_and_inverts() {
        for ts in [1, 2, 3, 4, 8, 16] {
            for len in [0, 5, 8, 64, 100, 1000, 4096, 4099] {
                let src: Vec<u8> = (0..len).map(|i| (i * 37 + i / 5) as u8).collect();
                let mut dst = vec![0; len];
                bitshuffle(ts, &src, &mut dst);
                assert_eq!(dst, naive(ts, &src), "ts {ts} len {len}");
                let mut back = vec![0; len];
                bitunshuffle(ts, &dst, &mut back);
                assert_eq!(back, src, "ts {ts} len {len}");
            }
        }
    }
}
