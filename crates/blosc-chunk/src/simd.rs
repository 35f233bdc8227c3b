//! SSE2 kernels for the byte shuffle and the bit transpose (x86-64, where SSE2 is part of the
//! base instruction set, so no runtime detection is needed).
//!
//! Both filters are matrix transposes. The kernels move 16-byte vectors with one primitive,
//! [`zip_step`]: with `N` vectors numbered `x` and lanes numbered `l`, it interleaves vector
//! `k` with vector `k + N/2` (`unpacklo`/`unpackhi` on bytes). Writing a byte's place as the
//! bit string `x ++ l`, one step rotates that string left by one bit. A transpose is then a
//! fixed number of steps:
//!
//! * shuffling 16 elements of `2^t` bytes (`e ++ b`, 4 + t bits) into `2^t` planes (`b ++ e`)
//!   is a rotation by 4; unshuffling is a rotation by `t`;
//! * 16 groups of 8 bit-plane rows (`k ++ g`, 3 + 4 bits) become 8 vectors holding two
//!   groups' 8×8 bit matrices each (`g ++ k`) after 3 steps, and back after 4.
//!
//! The 8×8 bit transposes themselves run on both 64-bit halves of a vector at once.
//!
//! This is one of the two modules with `unsafe`: unaligned 16-byte loads and stores from and to
//! fixed-size array references, and the calls into the `#[target_feature(enable = "sse2")]`
//! kernels from code compiled with SSE2 (`cfg(target_feature = "sse2")`, always true on
//! x86-64). Tests compare every kernel with the portable code for every length class.
#![allow(unsafe_code, reason = "SSE2 intrinsics; see the SAFETY comments")]

use core::arch::x86_64::{
    __m128i, _mm_and_si128, _mm_loadu_si128, _mm_set1_epi64x, _mm_setzero_si128, _mm_slli_epi64,
    _mm_srli_epi64, _mm_storeu_si128, _mm_unpackhi_epi8, _mm_unpacklo_epi8, _mm_xor_si128,
};

#[inline]
#[target_feature(enable = "sse2")]
fn load(b: &[u8; 16]) -> __m128i {
    // SAFETY: `b` is 16 readable bytes; `loadu` has no alignment requirement.
    unsafe { _mm_loadu_si128(b.as_ptr().cast()) }
}

#[inline]
#[target_feature(enable = "sse2")]
fn store(b: &mut [u8; 16], v: __m128i) {
    // SAFETY: `b` is 16 writable bytes; `storeu` has no alignment requirement.
    unsafe { _mm_storeu_si128(b.as_mut_ptr().cast(), v) }
}

/// `len` 16-byte vectors of `s` from byte `off` (callers check the bounds up front).
#[inline]
fn vectors(s: &[u8], off: usize, len: usize) -> &[[u8; 16]] {
    &s[off..off + 16 * len].as_chunks::<16>().0[..len]
}

/// Mutable [`vectors`].
#[inline]
fn vectors_mut(s: &mut [u8], off: usize, len: usize) -> &mut [[u8; 16]] {
    &mut s[off..off + 16 * len].as_chunks_mut::<16>().0[..len]
}

/// One interleaving step: output `2k` / `2k+1` are the low / high byte interleave of inputs
/// `k` and `k + N/2` (rotates each byte's `vector ++ lane` address left by one bit).
#[inline]
#[target_feature(enable = "sse2")]
fn zip_step<const N: usize>(v: &[__m128i; N]) -> [__m128i; N] {
    let mut out = [_mm_setzero_si128(); N];
    let h = N / 2;
    for k in 0..h {
        out[2 * k] = _mm_unpacklo_epi8(v[k], v[k + h]);
        out[2 * k + 1] = _mm_unpackhi_epi8(v[k], v[k + h]);
    }
    out
}

/// [`crate::bitshuffle`]'s 8×8 bit transpose on both 64-bit halves of `x`.
#[inline]
#[target_feature(enable = "sse2")]
fn transpose8x2(x: __m128i) -> __m128i {
    let m1 = _mm_set1_epi64x(0x00AA_00AA_00AA_00AA);
    let m2 = _mm_set1_epi64x(0x0000_CCCC_0000_CCCC);
    let m3 = _mm_set1_epi64x(0x0000_0000_F0F0_F0F0);
    let t = _mm_and_si128(_mm_xor_si128(x, _mm_srli_epi64::<7>(x)), m1);
    let x = _mm_xor_si128(x, _mm_xor_si128(t, _mm_slli_epi64::<7>(t)));
    let t = _mm_and_si128(_mm_xor_si128(x, _mm_srli_epi64::<14>(x)), m2);
    let x = _mm_xor_si128(x, _mm_xor_si128(t, _mm_slli_epi64::<14>(t)));
    let t = _mm_and_si128(_mm_xor_si128(x, _mm_srli_epi64::<28>(x)), m3);
    _mm_xor_si128(x, _mm_xor_si128(t, _mm_slli_epi64::<28>(t)))
}

/// Shuffles whole tiles of 16 elements of `TS` bytes (`TS` = 2, 4, 8 or 16) from `src` into
/// the planes of `dst` (`n` elements each). Returns how many elements were done.
#[target_feature(enable = "sse2")]
fn shuffle_tiles<const TS: usize>(src: &[u8], dst: &mut [u8], n: usize) -> usize {
    let tiles = n / 16;
    let input = vectors(src, 0, tiles * TS);
    let mut planes: [&mut [[u8; 16]]; TS] = split_planes(dst, n, tiles);
    for (t, tile) in input.chunks_exact(TS).enumerate() {
        let mut v = [_mm_setzero_si128(); TS];
        for (x, bytes) in v.iter_mut().zip(tile) {
            *x = load(bytes);
        }
        for _ in 0..4 {
            v = zip_step(&v);
        }
        for (x, plane) in v.iter().zip(planes.iter_mut()) {
            store(&mut plane[t], *x);
        }
    }
    tiles * 16
}

/// The first `tiles` vectors of each of the `TS` planes (`n` bytes apart) of `dst`.
fn split_planes<const TS: usize>(dst: &mut [u8], n: usize, tiles: usize) -> [&mut [[u8; 16]]; TS] {
    let mut rest = dst;
    core::array::from_fn(|_| {
        let at = n.min(rest.len());
        let (plane, tail) = core::mem::take(&mut rest).split_at_mut(at);
        rest = tail;
        vectors_mut(plane, 0, tiles)
    })
}

/// Inverse of [`shuffle_tiles`]: `log2(TS)` steps. Plane `b` is `planes[b]` (each at least `n`
/// bytes; checked by the caller).
#[target_feature(enable = "sse2")]
fn unshuffle_tiles<const TS: usize>(planes: &[&[u8]], dst: &mut [u8], n: usize) -> usize {
    let tiles = n / 16;
    let steps = TS.trailing_zeros();
    let planes: [&[[u8; 16]]; TS] = core::array::from_fn(|b| vectors(planes[b], 0, tiles));
    let output = vectors_mut(dst, 0, tiles * TS);
    for (t, tile) in output.chunks_exact_mut(TS).enumerate() {
        let mut v = [_mm_setzero_si128(); TS];
        for (x, plane) in v.iter_mut().zip(planes) {
            *x = load(&plane[t]);
        }
        for _ in 0..steps {
            v = zip_step(&v);
        }
        for (x, bytes) in v.iter().zip(tile) {
            store(bytes, *x);
        }
    }
    tiles * 16
}

/// Bit-transposes whole tiles of 128 bytes of one byte plane: `src` holds `8 * groups`
/// elements, `dst` 8 rows of `groups` bytes. Returns how many groups were done.
#[target_feature(enable = "sse2")]
fn bit_transpose_tiles(src: &[u8], dst: &mut [u8], groups: usize) -> usize {
    let tiles = groups / 16;
    let input = vectors(src, 0, 8 * tiles);
    let mut rows: [&mut [[u8; 16]]; 8] = split_planes(dst, groups, tiles);
    for (t, tile) in input.chunks_exact(8).enumerate() {
        let mut v = [_mm_setzero_si128(); 8];
        for (x, bytes) in v.iter_mut().zip(tile) {
            *x = transpose8x2(load(bytes));
        }
        for _ in 0..4 {
            v = zip_step(&v);
        }
        for (x, row) in v.iter().zip(rows.iter_mut()) {
            store(&mut row[t], *x);
        }
    }
    tiles * 16
}

/// Inverse of [`bit_transpose_tiles`].
#[target_feature(enable = "sse2")]
fn bit_untranspose_tiles(src: &[u8], dst: &mut [u8], groups: usize) -> usize {
    let tiles = groups / 16;
    let rows: [&[[u8; 16]]; 8] = core::array::from_fn(|k| vectors(src, k * groups, tiles));
    let output = vectors_mut(dst, 0, 8 * tiles);
    for (t, tile) in output.chunks_exact_mut(8).enumerate() {
        let mut v = [_mm_setzero_si128(); 8];
        for (x, row) in v.iter_mut().zip(rows) {
            *x = load(&row[t]);
        }
        for _ in 0..3 {
            v = zip_step(&v);
        }
        for (x, bytes) in v.iter().zip(tile) {
            store(bytes, transpose8x2(*x));
        }
    }
    tiles * 16
}

/// Byte-shuffles the first `16 * floor(n / 16)` elements of `src` (`n` elements of `ts`
/// bytes; `dst` holds `ts` planes of `n` bytes). Returns the number of elements done (0 when
/// `ts` has no kernel).
pub(crate) fn shuffle(ts: usize, src: &[u8], dst: &mut [u8], n: usize) -> usize {
    if src.len() < n * ts || dst.len() < n * ts {
        return 0;
    }
    // SAFETY: the kernels only need SSE2, which every x86-64 CPU has (this module is compiled
    // only with `target_feature = "sse2"`).
    unsafe {
        match ts {
            2 => shuffle_tiles::<2>(src, dst, n),
            4 => shuffle_tiles::<4>(src, dst, n),
            8 => shuffle_tiles::<8>(src, dst, n),
            16 => shuffle_tiles::<16>(src, dst, n),
            _ => 0,
        }
    }
}

/// Inverse of [`shuffle`].
pub(crate) fn unshuffle(ts: usize, src: &[u8], dst: &mut [u8], n: usize) -> usize {
    let planes: [&[u8]; 16] =
        core::array::from_fn(|b| src.get(b * n..(b + 1) * n).unwrap_or_default());
    unshuffle_planes(planes.get(..ts).unwrap_or_default(), dst, n)
}

/// [`unshuffle`] with the `ts = planes.len()` planes given separately (each at least `n`
/// bytes, else nothing is done).
pub(crate) fn unshuffle_planes(planes: &[&[u8]], dst: &mut [u8], n: usize) -> usize {
    let ts = planes.len();
    if dst.len() < n * ts || planes.iter().any(|p| p.len() < n) {
        return 0;
    }
    // SAFETY: as in `shuffle`.
    unsafe {
        match ts {
            2 => unshuffle_tiles::<2>(planes, dst, n),
            4 => unshuffle_tiles::<4>(planes, dst, n),
            8 => unshuffle_tiles::<8>(planes, dst, n),
            16 => unshuffle_tiles::<16>(planes, dst, n),
            _ => 0,
        }
    }
}

/// Bit-transposes the first `16 * floor(groups / 16)` groups of one byte plane (`src`:
/// `8 * groups` bytes; `dst`: 8 rows of `groups` bytes). Returns the number of groups done.
pub(crate) fn bit_transpose(src: &[u8], dst: &mut [u8], groups: usize) -> usize {
    if src.len() < 8 * groups || dst.len() < 8 * groups {
        return 0;
    }
    // SAFETY: as in `shuffle`.
    unsafe { bit_transpose_tiles(src, dst, groups) }
}

/// Inverse of [`bit_transpose`].
pub(crate) fn bit_untranspose(src: &[u8], dst: &mut [u8], groups: usize) -> usize {
    if src.len() < 8 * groups || dst.len() < 8 * groups {
        return 0;
    }
    // SAFETY: as in `shuffle`.
    unsafe { bit_untranspose_tiles(src, dst, groups) }
}

#[cfg(test)]
#[allow(
    clippy::cast_possible_truncation,
    reason = "test patterns wrap on purpose"
)]
mod tests {
    use super::*;

    /// The kernels run (whole tiles) and agree with the definitions; the portable paths and
    /// the full filters are tested in `shuffle` and `bitshuffle`.
    #[test]
    fn kernels_cover_whole_tiles_and_match_definitions() {
        for ts in [2usize, 4, 8, 16] {
            for n in [16usize, 17, 48, 1000] {
                let src: Vec<u8> = (0..n * ts).map(|i| (i * 31 + i / 7) as u8).collect();
                let mut dst = vec![0u8; n * ts];
                assert_eq!(shuffle(ts, &src, &mut dst, n), n / 16 * 16);
                for i in 0..n / 16 * 16 {
                    for j in 0..ts {
                        assert_eq!(dst[j * n + i], src[i * ts + j], "ts {ts} n {n}");
                    }
                }
                let mut back = vec![0u8; n * ts];
                assert_eq!(unshuffle(ts, &dst, &mut back, n), n / 16 * 16);
                assert_eq!(back[..n / 16 * 16 * ts], src[..n / 16 * 16 * ts]);
            }
        }
        for groups in [16usize, 33, 160] {
            let src: Vec<u8> = (0..8 * groups).map(|i| (i * 37 + i / 5) as u8).collect();
            let mut rows = vec![0u8; 8 * groups];
            let done = bit_transpose(&src, &mut rows, groups);
            assert_eq!(done, groups / 16 * 16);
            for g in 0..done {
                for k in 0..8 {
                    for e in 0..8 {
                        let bit = (rows[k * groups + g] >> e) & 1;
                        assert_eq!(bit, (src[8 * g + e] >> k) & 1, "groups {groups}");
                    }
                }
            }
            let mut back = vec![0u8; 8 * groups];
            assert_eq!(bit_untranspose(&rows, &mut back, groups), done);
            assert_eq!(back[..8 * done], src[..8 * done]);
        }
    }
}
