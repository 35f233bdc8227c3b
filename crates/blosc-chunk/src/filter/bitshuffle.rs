//! Bit shuffle: a whole-block bit transpose (bit-plane layout).
//!
//! With `n = len / ts` elements and `n8 = n - n % 8`, the first `n8 * ts` bytes become `8 * ts`
//! bit planes of `n8 / 8` bytes: plane `8*j + k` holds bit `k` of byte `j` of every element,
//! element `i` at bit `i % 8` of byte `i / 8`. The remaining bytes are copied unchanged.
//!
//! Equivalently: a byte shuffle ([`shuffle`](super::shuffle)) followed by a bit transpose of each byte
//! plane, which is how both directions are computed (AVX2 or SSE2 tiles on x86-64, see
//! [`crate::filter::simd`]).

use super::shuffle;

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

/// Element and group counts of a bit-shuffled buffer of `len` bytes.
struct Layout {
    /// Whole groups of 8 elements.
    groups: usize,
    /// Bytes per byte plane (`8 * groups`).
    n8: usize,
    /// Bytes covered by the transpose (`n8 * ts`).
    body: usize,
}

fn layout(ts: usize, len: usize) -> Layout {
    let groups = len / ts / 8;
    Layout {
        groups,
        n8: 8 * groups,
        body: 8 * groups * ts,
    }
}

/// Bit-transposes one byte plane: `src` holds `8 * groups` bytes, `dst` receives 8 rows of
/// `groups` bytes (row `k`, byte `g`, bit `e` = bit `k` of `src[8g + e]`).
fn transpose_plane(src: &[u8], dst: &mut [u8], groups: usize) {
    for g in simd_bit_transpose(src, dst, groups)..groups {
        let x: [u8; 8] = src[8 * g..].as_chunks().0[0];
        let y = transpose8(u64::from_le_bytes(x)).to_le_bytes();
        for (k, &b) in y.iter().enumerate() {
            dst[k * groups + g] = b;
        }
    }
}

/// Inverse of [`transpose_plane`].
fn untranspose_plane(src: &[u8], dst: &mut [u8], groups: usize) {
    for g in simd_bit_untranspose(src, dst, groups)..groups {
        let mut x = [0u8; 8];
        for (k, b) in x.iter_mut().enumerate() {
            *b = src[k * groups + g];
        }
        let y = transpose8(u64::from_le_bytes(x)).to_le_bytes();
        dst[8 * g..8 * g + 8].copy_from_slice(&y);
    }
}

#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
use super::simd::{bit_transpose as simd_bit_transpose, bit_untranspose as simd_bit_untranspose};

#[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
fn simd_bit_transpose(_: &[u8], _: &mut [u8], _: usize) -> usize {
    0
}

#[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
fn simd_bit_untranspose(_: &[u8], _: &mut [u8], _: usize) -> usize {
    0
}

/// Bit-shuffles `src` into `dst` (same length): a byte shuffle into `scratch`, then a bit
/// transpose of every byte plane.
pub(crate) fn bitshuffle(ts: usize, src: &[u8], dst: &mut [u8], scratch: &mut Vec<u8>) {
    let len = src.len().min(dst.len());
    let ts = ts.max(1);
    let Layout { groups, n8, body } = layout(ts, len);
    if ts == 1 || groups == 0 {
        transpose_plane(&src[..body], &mut dst[..body], groups);
    } else {
        if scratch.len() < body {
            scratch.resize(body, 0);
        }
        shuffle::shuffle(ts, &src[..body], &mut scratch[..body]);
        for (plane, rows) in scratch[..body]
            .chunks_exact(n8)
            .zip(dst[..body].chunks_exact_mut(n8))
        {
            transpose_plane(plane, rows, groups);
        }
    }
    dst[body..len].copy_from_slice(&src[body..len]);
}

/// Inverse of [`bitshuffle`].
pub(crate) fn bitunshuffle(ts: usize, src: &[u8], dst: &mut [u8], scratch: &mut Vec<u8>) {
    let len = src.len().min(dst.len());
    let ts = ts.max(1);
    let Layout { groups, n8, body } = layout(ts, len);
    if ts == 1 || groups == 0 {
        untranspose_plane(&src[..body], &mut dst[..body], groups);
    } else {
        if scratch.len() < body {
            scratch.resize(body, 0);
        }
        for (rows, plane) in src[..body]
            .chunks_exact(n8)
            .zip(scratch[..body].chunks_exact_mut(n8))
        {
            untranspose_plane(rows, plane, groups);
        }
        shuffle::unshuffle(ts, &scratch[..body], &mut dst[..body]);
    }
    dst[body..len].copy_from_slice(&src[body..len]);
}

/// Bit-shuffle as C-Blosc 1.x does it (format version 2): the whole block is transposed when
/// the element count is a multiple of 8, else copied unchanged.
pub(crate) fn bitshuffle_v2(ts: usize, src: &[u8], dst: &mut [u8], scratch: &mut Vec<u8>) {
    let len = src.len().min(dst.len());
    let n = len / ts.max(1);
    if n.is_multiple_of(8) {
        bitshuffle(ts, src, dst, scratch);
    } else {
        dst[..len].copy_from_slice(&src[..len]);
    }
}

/// Bit-unshuffle as C-Blosc2 does it for format-version-2 (Blosc 1.x) chunks: the whole block
/// is untransposed when the element count is a multiple of 8, else copied unchanged.
pub(crate) fn bitunshuffle_v2(ts: usize, src: &[u8], dst: &mut [u8], scratch: &mut Vec<u8>) {
    let len = src.len().min(dst.len());
    let n = len / ts.max(1);
    if n.is_multiple_of(8) {
        bitunshuffle(ts, src, dst, scratch);
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
        for ts in [1, 2, 3, 4, 5, 8, 12, 16] {
            for len in [0, 5, 8, 64, 100, 1000, 4096, 4099, 8192 + 136, 65536 + 8] {
                let src: Vec<u8> = (0..len).map(|i| (i * 37 + i / 5) as u8).collect();
                let mut dst = vec![0; len];
                let mut scratch = Vec::new();
                bitshuffle(ts, &src, &mut dst, &mut scratch);
                assert_eq!(dst, naive(ts, &src), "ts {ts} len {len}");
                let mut back = vec![0; len];
                bitunshuffle(ts, &dst, &mut back, &mut scratch);
                assert_eq!(back, src, "ts {ts} len {len}");
            }
        }
    }
}
