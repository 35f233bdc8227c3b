//! SSE2 kernels for the byte shuffle and the bit transpose (x86-64, where SSE2 is part of the
//! base instruction set), AVX2 versions of them that run when the CPU has AVX2, and AVX-512
//! versions of the byte shuffle that run when it has AVX-512 F, BW and VBMI (detected at run
//! time, see [`avx2`] and [`avx512`]).
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
//! The shuffle's wide kernels write whole vectors into the byte planes; it leaves the first
//! (up to three) tiles to SSE2 so that those stores are aligned ([`head_tiles`]).
//!
//! This is one of the two modules with `unsafe`: unaligned 16-, 32- and 64-byte loads and
//! stores from and to fixed-size array references, the calls into the
//! `#[target_feature(enable = "sse2")]` kernels from code compiled with SSE2
//! (`cfg(target_feature = "sse2")`, always true on x86-64), and the calls into the AVX2 and
//! AVX-512 kernels after `is_x86_feature_detected!` said the CPU has their features. Tests
//! compare every kernel with the definitions for every length class and buffer alignment, on
//! every path, and the paths with each other.
#![allow(unsafe_code, reason = "SSE2 intrinsics; see the SAFETY comments")]

use core::mem::MaybeUninit;
use core::ops::Range;

use core::arch::x86_64::{
    __m128i, _mm_add_epi8, _mm_and_si128, _mm_cvtsi128_si32, _mm_loadu_si128, _mm_set1_epi8,
    _mm_set1_epi64x, _mm_setzero_si128, _mm_shuffle_epi32, _mm_shufflehi_epi16, _mm_slli_epi64,
    _mm_slli_si128, _mm_srli_epi64, _mm_storeu_si128, _mm_unpackhi_epi8, _mm_unpacklo_epi8,
    _mm_xor_si128,
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

/// [`store`] into memory that may not be initialized yet (the unshuffle kernels write
/// decoded output there directly).
#[inline]
#[target_feature(enable = "sse2")]
fn store_uninit(b: &mut [MaybeUninit<u8>; 16], v: __m128i) {
    // SAFETY: `b` is 16 writable bytes; `storeu` has no alignment requirement.
    unsafe { _mm_storeu_si128(b.as_mut_ptr().cast(), v) }
}

/// `len` vectors of `W` bytes of `s` from byte `off` (callers check the bounds up front).
#[inline]
fn vectors<const W: usize>(s: &[u8], off: usize, len: usize) -> &[[u8; W]] {
    &s[off..off + W * len].as_chunks::<W>().0[..len]
}

/// Mutable [`vectors`].
#[inline]
fn vectors_mut<T, const W: usize>(s: &mut [T], off: usize, len: usize) -> &mut [[T; W]] {
    &mut s[off..off + W * len].as_chunks_mut::<W>().0[..len]
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

/// The bit-shuffle filter's 8×8 bit transpose on both 64-bit halves of `x`.
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

/// Shuffles the tiles `range` (of the `n / 16` whole tiles of 16 elements of `TS` bytes, `TS`
/// = 2, 4, 8 or 16) from `src` into the planes of `dst` (`n` elements each).
#[target_feature(enable = "sse2")]
fn shuffle_tiles<const TS: usize>(src: &[u8], dst: &mut [u8], n: usize, range: Range<usize>) {
    let tiles = n / 16;
    let input = vectors(src, 0, tiles * TS);
    let mut planes: [&mut [[u8; 16]]; TS] = split_planes(dst, n, 0, tiles);
    let tiles = input.chunks_exact(TS).enumerate();
    for (t, tile) in tiles.take(range.end).skip(range.start) {
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
}

/// `len` vectors (of `W` bytes) from byte `off` of each of the `TS` planes (`n` bytes apart)
/// of `dst`.
fn split_planes<const TS: usize, const W: usize>(
    dst: &mut [u8],
    n: usize,
    off: usize,
    len: usize,
) -> [&mut [[u8; W]]; TS] {
    let mut rest = dst;
    core::array::from_fn(|_| {
        let at = n.min(rest.len());
        let (plane, tail) = core::mem::take(&mut rest).split_at_mut(at);
        rest = tail;
        vectors_mut(plane, off, len)
    })
}

/// How many 16-element tiles to leave to SSE2 before the first tile of a kernel that stores
/// `W`-byte vectors into the planes of `dst`, so that those stores are aligned (0 to `W / 16 -
/// 1`; exact for the first plane, and for all when the planes are a multiple of `W` bytes
/// long). A store that straddles two cache lines costs about twice as much, and a buffer from
/// `malloc` is often 16 bytes off a 64-byte boundary.
fn head_tiles<const W: usize>(dst: &[u8]) -> usize {
    let off = dst.as_ptr().align_offset(W);
    if off.is_multiple_of(16) { off / 16 } else { 0 }
}

/// Inverse of [`shuffle_tiles`]: `log2(TS)` steps. Plane `b` is `planes[b]` (each at least `n`
/// bytes; checked by the caller). With `SUM`, each plane is replaced by its running byte sum
/// first, starting from `acc[b]` (which is updated): BYTEDELTA's backward filter in the same
/// pass.
#[target_feature(enable = "sse2")]
fn unshuffle_tiles<const TS: usize, const SUM: bool>(
    planes: &[&[u8]],
    dst: &mut [MaybeUninit<u8>],
    n: usize,
    from: usize,
    acc: &mut [u8; 16],
) -> usize {
    let tiles = n / 16;
    let steps = TS.trailing_zeros();
    let planes: [&[[u8; 16]]; TS] = core::array::from_fn(|b| vectors(planes[b], 0, tiles));
    let mut carry: [__m128i; TS] = core::array::from_fn(|b| _mm_set1_epi8(acc[b].cast_signed()));
    let output = vectors_mut(dst, 0, tiles * TS);
    for (t, tile) in output.chunks_exact_mut(TS).enumerate().skip(from) {
        let mut v = [_mm_setzero_si128(); TS];
        for ((x, plane), c) in v.iter_mut().zip(planes).zip(carry.iter_mut()) {
            *x = load(&plane[t]);
            if SUM {
                *x = running_sum(*x, c);
            }
        }
        for _ in 0..steps {
            v = zip_step(&v);
        }
        for (x, bytes) in v.iter().zip(tile) {
            store_uninit(bytes, *x);
        }
    }
    if SUM {
        for (a, c) in acc.iter_mut().zip(carry) {
            *a = low_byte(c);
        }
    }
    tiles * 16
}

/// The running byte sum (wrapping) of the 16 lanes of `x` plus the carry `c` (the sum before
/// them, in every lane), and the carry after them into `c`. The in-vector prefix sum takes four
/// shift-and-add steps (by 1, 2, 4 and 8 lanes). The vector's sum (its lane 15) goes into every
/// lane with bytes 8..15 doubled, 16-bit lane 7 into lanes 4..7 and 32-bit lane 3 into all,
/// and is added to the carry off the result's path, so the loop-carried chain is one add.
#[inline]
#[target_feature(enable = "sse2")]
fn running_sum(x: __m128i, c: &mut __m128i) -> __m128i {
    let mut x = x;
    x = _mm_add_epi8(x, _mm_slli_si128::<1>(x));
    x = _mm_add_epi8(x, _mm_slli_si128::<2>(x));
    x = _mm_add_epi8(x, _mm_slli_si128::<4>(x));
    x = _mm_add_epi8(x, _mm_slli_si128::<8>(x));
    let out = _mm_add_epi8(x, *c);
    let hi = _mm_unpackhi_epi8(x, x);
    *c = _mm_add_epi8(
        *c,
        _mm_shuffle_epi32::<0xFF>(_mm_shufflehi_epi16::<0xFF>(hi)),
    );
    out
}

/// Lane 0 of a carry vector.
#[inline]
#[target_feature(enable = "sse2")]
fn low_byte(c: __m128i) -> u8 {
    // Truncation intended: the low byte of lane 0 is the running sum.
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let b = _mm_cvtsi128_si32(c) as u8;
    b
}

/// Bit-transposes whole tiles of 128 bytes of one byte plane: `src` holds `8 * groups`
/// elements, `dst` 8 rows of `groups` bytes. Returns how many groups were done.
#[target_feature(enable = "sse2")]
fn bit_transpose_tiles(src: &[u8], dst: &mut [u8], groups: usize, from: usize) -> usize {
    let tiles = groups / 16;
    let input = vectors(src, 0, 8 * tiles);
    let mut rows: [&mut [[u8; 16]]; 8] = split_planes(dst, groups, 0, tiles);
    for (t, tile) in input.chunks_exact(8).enumerate().skip(from) {
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
fn bit_untranspose_tiles(src: &[u8], dst: &mut [u8], groups: usize, from: usize) -> usize {
    let tiles = groups / 16;
    let rows: [&[[u8; 16]]; 8] = core::array::from_fn(|k| vectors(src, k * groups, tiles));
    let output = vectors_mut(dst, 0, 8 * tiles);
    for (t, tile) in output.chunks_exact_mut(8).enumerate().skip(from) {
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
    if !matches!(ts, 2 | 4 | 8 | 16) {
        return 0;
    }
    // The wide kernels do the tiles `head..end`, SSE2 the others.
    let tiles = n / 16;
    let (head, end) = match level() {
        Level::Avx512 => {
            let head = head_tiles::<64>(dst);
            // SAFETY: AVX-512 F, BW and VBMI are available (checked at run time); the lengths
            // are checked above.
            (head, unsafe { avx512::shuffle(ts, src, dst, n, head) })
        }
        Level::Avx2 => {
            let head = head_tiles::<32>(dst);
            // SAFETY: AVX2 is available (checked at run time); the lengths are checked above.
            (head, unsafe { avx2::shuffle(ts, src, dst, n, head) })
        }
        Level::Sse2 => (0, 0),
    };
    for range in [0..head.min(tiles), end.min(tiles)..tiles] {
        // SAFETY: the kernels only need SSE2, which every x86-64 CPU has (this module is
        // compiled only with `target_feature = "sse2"`).
        unsafe {
            match ts {
                2 => shuffle_tiles::<2>(src, dst, n, range),
                4 => shuffle_tiles::<4>(src, dst, n, range),
                8 => shuffle_tiles::<8>(src, dst, n, range),
                _ => shuffle_tiles::<16>(src, dst, n, range),
            }
        }
    }
    16 * tiles
}

/// Inverse of [`shuffle`].
pub(crate) fn unshuffle(ts: usize, src: &[u8], dst: &mut [u8], n: usize) -> usize {
    let planes: [&[u8]; 16] =
        core::array::from_fn(|b| src.get(b * n..(b + 1) * n).unwrap_or_default());
    // SAFETY: same layout; the kernels store only initialized vectors into `dst`, so it stays
    // initialized.
    let dst = unsafe { &mut *(core::ptr::from_mut::<[u8]>(dst) as *mut [MaybeUninit<u8>]) };
    unshuffle_planes(planes.get(..ts).unwrap_or_default(), dst, n)
}

/// [`unshuffle`] with the `ts = planes.len()` planes given separately (each at least `n`
/// bytes, else nothing is done).
pub(crate) fn unshuffle_planes(planes: &[&[u8]], dst: &mut [MaybeUninit<u8>], n: usize) -> usize {
    unshuffle_planes_with::<false>(planes, dst, n, &mut [0; 16])
}

/// [`unshuffle_planes`] of the running byte sums of the planes (BYTEDELTA's backward filter
/// on each plane, then the unshuffle, in one pass): plane `b`'s sum starts from `acc[b]`, which
/// is updated to the sum after the elements done.
pub(crate) fn unshuffle_planes_summed(
    planes: &[&[u8]],
    dst: &mut [MaybeUninit<u8>],
    n: usize,
    acc: &mut [u8; 16],
) -> usize {
    unshuffle_planes_with::<true>(planes, dst, n, acc)
}

fn unshuffle_planes_with<const SUM: bool>(
    planes: &[&[u8]],
    dst: &mut [MaybeUninit<u8>],
    n: usize,
    acc: &mut [u8; 16],
) -> usize {
    let ts = planes.len();
    if dst.len() < n * ts || planes.iter().any(|p| p.len() < n) {
        return 0;
    }
    let from = match level() {
        // SAFETY: as in `shuffle`.
        Level::Avx512 => unsafe { avx512::unshuffle_planes::<SUM>(planes, dst, n, acc) / 16 },
        // SAFETY: as in `shuffle`.
        Level::Avx2 => unsafe { avx2::unshuffle_planes::<SUM>(planes, dst, n, acc) / 16 },
        Level::Sse2 => 0,
    };
    // SAFETY: as in `shuffle`.
    unsafe {
        match ts {
            2 => unshuffle_tiles::<2, SUM>(planes, dst, n, from, acc),
            4 => unshuffle_tiles::<4, SUM>(planes, dst, n, from, acc),
            8 => unshuffle_tiles::<8, SUM>(planes, dst, n, from, acc),
            16 => unshuffle_tiles::<16, SUM>(planes, dst, n, from, acc),
            _ => 0,
        }
    }
}

/// Running byte sum (wrapping) of the first `16 * floor(len / 16)` bytes of `src` into `dst`,
/// starting from `acc`: BYTEDELTA's backward filter on one stream. Returns the number of bytes
/// done and the running sum after them. Each vector's prefix sum takes four shift-and-add
/// steps (by 1, 2, 4 and 8 lanes); the carry-in is the sum of the vectors before, broadcast.
pub(crate) fn prefix_sum_bytes(src: &[u8], dst: &mut [u8], acc: u8) -> (usize, u8) {
    let len = src.len().min(dst.len());
    let (mut done, mut acc) = (0, acc);
    if level() >= Level::Avx2 {
        let n = len / 32;
        // SAFETY: the CPU has AVX2 (`level`).
        acc = unsafe { avx2::prefix_sum_tiles(vectors(src, 0, n), vectors_mut(dst, 0, n), acc) };
        done = 32 * n;
    }
    let n = (len - done) / 16;
    // SAFETY: SSE2 is enabled for this module (`cfg(target_feature = "sse2")`).
    let acc = unsafe { prefix_sum_tiles(vectors(src, done, n), vectors_mut(dst, done, n), acc) };
    (done + 16 * n, acc)
}

#[target_feature(enable = "sse2")]
fn prefix_sum_tiles(src: &[[u8; 16]], dst: &mut [[u8; 16]], acc: u8) -> u8 {
    let mut carry = _mm_set1_epi8(acc.cast_signed());
    for (s, d) in src.iter().zip(dst.iter_mut()) {
        store(d, running_sum(load(s), &mut carry));
    }
    low_byte(carry)
}

/// Bit-transposes the first `16 * floor(groups / 16)` groups of one byte plane (`src`:
/// `8 * groups` bytes; `dst`: 8 rows of `groups` bytes). Returns the number of groups done.
pub(crate) fn bit_transpose(src: &[u8], dst: &mut [u8], groups: usize) -> usize {
    if src.len() < 8 * groups || dst.len() < 8 * groups {
        return 0;
    }
    let from = if level() >= Level::Avx2 {
        // SAFETY: as in `shuffle`.
        unsafe { avx2::bit_transpose(src, dst, groups) / 16 }
    } else {
        0
    };
    // SAFETY: as in `shuffle`.
    unsafe { bit_transpose_tiles(src, dst, groups, from) }
}

/// Inverse of [`bit_transpose`].
pub(crate) fn bit_untranspose(src: &[u8], dst: &mut [u8], groups: usize) -> usize {
    if src.len() < 8 * groups || dst.len() < 8 * groups {
        return 0;
    }
    let from = if level() >= Level::Avx2 {
        // SAFETY: as in `shuffle`.
        unsafe { avx2::bit_untranspose(src, dst, groups) / 16 }
    } else {
        0
    };
    // SAFETY: as in `shuffle`.
    unsafe { bit_untranspose_tiles(src, dst, groups, from) }
}

/// The widest kernels that may run, in increasing order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Level {
    /// SSE2 (every x86-64 CPU).
    Sse2,
    /// AVX2.
    Avx2,
    /// AVX-512 F, BW and VBMI for the byte shuffle (`vpermt2b`); the bit transpose stays on
    /// AVX2 (which every such CPU has).
    Avx512,
}

/// The kernels the CPU can run: detected at run time (the result is cached by `std`), and
/// capped by `capped` in tests.
#[inline]
fn level() -> Level {
    use std::arch::is_x86_feature_detected as has;
    let cpu = if has!("avx512f") && has!("avx512bw") && has!("avx512vbmi") {
        Level::Avx512
    } else if has!("avx2") {
        Level::Avx2
    } else {
        Level::Sse2
    };
    #[cfg(test)]
    let cpu = cpu.min(CAP.with(core::cell::Cell::get));
    cpu
}

#[cfg(test)]
std::thread_local! {
    static CAP: core::cell::Cell<Level> = const { core::cell::Cell::new(Level::Avx512) };
}

/// Runs `f` with the kernels above `cap` switched off on this thread (tests compare the
/// paths).
#[cfg(test)]
fn capped<R>(cap: Level, f: impl FnOnce() -> R) -> R {
    let old = CAP.with(|c| c.replace(cap));
    let r = f();
    CAP.with(|c| c.set(old));
    r
}

/// AVX2 versions of the tile kernels, run when the CPU has AVX2. The byte interleave of AVX2
/// works within each 128-bit half, so one 256-bit vector carries the same vector of two
/// neighbouring tiles (tile `2p` in the low half, `2p + 1` in the high half) and every step
/// above does two tiles at once: the side of a transpose that holds one tile's vectors
/// together loads / stores the halves separately, the side with planes or rows (where the two
/// tiles' vectors are adjacent) moves 32 bytes at once. They do whole pairs of tiles and
/// return the number of elements (groups) done; the SSE2 kernels finish the odd tile.
mod avx2 {
    use core::arch::x86_64::{
        __m256i, _mm256_add_epi8, _mm256_and_si256, _mm256_cvtsi256_si32, _mm256_loadu_si256,
        _mm256_loadu2_m128i, _mm256_permute2x128_si256, _mm256_set1_epi8, _mm256_set1_epi64x,
        _mm256_setzero_si256, _mm256_shuffle_epi8, _mm256_slli_epi64, _mm256_slli_si256,
        _mm256_srli_epi64, _mm256_storeu_si256, _mm256_storeu2_m128i, _mm256_unpackhi_epi8,
        _mm256_unpacklo_epi8, _mm256_xor_si256,
    };

    use super::{split_planes, vectors, vectors_mut};
    use core::mem::MaybeUninit;

    /// [`super::prefix_sum_bytes`] on 32-byte vectors.
    #[target_feature(enable = "avx2")]
    pub(super) fn prefix_sum_tiles(src: &[[u8; 32]], dst: &mut [[u8; 32]], acc: u8) -> u8 {
        let mut carry = _mm256_set1_epi8(acc.cast_signed());
        for (s, d) in src.iter().zip(dst.iter_mut()) {
            // SAFETY: `s` is 32 readable bytes; `loadu` has no alignment requirement.
            let x = unsafe { _mm256_loadu_si256(s.as_ptr().cast()) };
            // SAFETY: `d` is 32 writable bytes; `storeu` has no alignment requirement.
            unsafe { _mm256_storeu_si256(d.as_mut_ptr().cast(), running_sum(x, &mut carry)) };
        }
        low_byte(carry)
    }

    /// [`super::running_sum`] on 32 lanes: the prefix sum within each 128-bit half, then the
    /// low half's sum added to the high half, then the carry.
    #[inline]
    #[target_feature(enable = "avx2")]
    fn running_sum(x: __m256i, c: &mut __m256i) -> __m256i {
        let last = _mm256_set1_epi8(15);
        let mut x = x;
        x = _mm256_add_epi8(x, _mm256_slli_si256::<1>(x));
        x = _mm256_add_epi8(x, _mm256_slli_si256::<2>(x));
        x = _mm256_add_epi8(x, _mm256_slli_si256::<4>(x));
        x = _mm256_add_epi8(x, _mm256_slli_si256::<8>(x));
        // Each half's sum in all its lanes; the low half's moved to the high half (the low
        // half zeroed: imm bit 3).
        let sums = _mm256_shuffle_epi8(x, last);
        x = _mm256_add_epi8(x, _mm256_permute2x128_si256::<0x08>(sums, sums));
        let out = _mm256_add_epi8(x, *c);
        // The vector's sum (byte 31) into every lane.
        let t = _mm256_shuffle_epi8(x, last);
        *c = _mm256_add_epi8(*c, _mm256_permute2x128_si256::<0x11>(t, t));
        out
    }

    /// Lane 0 of a carry vector.
    #[inline]
    #[target_feature(enable = "avx2")]
    fn low_byte(c: __m256i) -> u8 {
        // Truncation intended: the low byte of lane 0 is the running sum.
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let b = _mm256_cvtsi256_si32(c) as u8;
        b
    }

    /// Vector `lo` of one tile and vector `hi` of the next, as one 256-bit vector.
    #[inline]
    #[target_feature(enable = "avx2")]
    fn load2(lo: &[u8; 16], hi: &[u8; 16]) -> __m256i {
        // SAFETY: both are 16 readable bytes; the loads have no alignment requirement.
        unsafe { _mm256_loadu2_m128i(hi.as_ptr().cast(), lo.as_ptr().cast()) }
    }

    /// Inverse of [`load2`].
    #[inline]
    #[target_feature(enable = "avx2")]
    fn store2(lo: &mut [u8; 16], hi: &mut [u8; 16], v: __m256i) {
        // SAFETY: both are 16 writable bytes; the stores have no alignment requirement.
        unsafe { _mm256_storeu2_m128i(hi.as_mut_ptr().cast(), lo.as_mut_ptr().cast(), v) }
    }

    /// [`store2`] into memory that may not be initialized yet.
    #[inline]
    #[target_feature(enable = "avx2")]
    fn store2_uninit(lo: &mut [MaybeUninit<u8>; 16], hi: &mut [MaybeUninit<u8>; 16], v: __m256i) {
        // SAFETY: both are 16 writable bytes; the stores have no alignment requirement.
        unsafe { _mm256_storeu2_m128i(hi.as_mut_ptr().cast(), lo.as_mut_ptr().cast(), v) }
    }

    /// Two adjacent 16-byte vectors.
    #[inline]
    #[target_feature(enable = "avx2")]
    fn load(b: &[[u8; 16]; 2]) -> __m256i {
        // SAFETY: `b` is 32 readable bytes; `loadu` has no alignment requirement.
        unsafe { _mm256_loadu_si256(b.as_ptr().cast()) }
    }

    /// Inverse of [`load`].
    #[inline]
    #[target_feature(enable = "avx2")]
    fn store(b: &mut [[u8; 16]; 2], v: __m256i) {
        // SAFETY: `b` is 32 writable bytes; `storeu` has no alignment requirement.
        unsafe { _mm256_storeu_si256(b.as_mut_ptr().cast(), v) }
    }

    /// [`super::zip_step`] on both 128-bit halves.
    #[inline]
    #[target_feature(enable = "avx2")]
    fn zip_step<const N: usize>(v: &[__m256i; N]) -> [__m256i; N] {
        let mut out = [_mm256_setzero_si256(); N];
        let h = N / 2;
        for k in 0..h {
            out[2 * k] = _mm256_unpacklo_epi8(v[k], v[k + h]);
            out[2 * k + 1] = _mm256_unpackhi_epi8(v[k], v[k + h]);
        }
        out
    }

    /// [`super::transpose8x2`] on the four 64-bit quarters of `x`.
    #[inline]
    #[target_feature(enable = "avx2")]
    fn transpose8x4(x: __m256i) -> __m256i {
        let m1 = _mm256_set1_epi64x(0x00AA_00AA_00AA_00AA);
        let m2 = _mm256_set1_epi64x(0x0000_CCCC_0000_CCCC);
        let m3 = _mm256_set1_epi64x(0x0000_0000_F0F0_F0F0);
        let t = _mm256_and_si256(_mm256_xor_si256(x, _mm256_srli_epi64::<7>(x)), m1);
        let x = _mm256_xor_si256(x, _mm256_xor_si256(t, _mm256_slli_epi64::<7>(t)));
        let t = _mm256_and_si256(_mm256_xor_si256(x, _mm256_srli_epi64::<14>(x)), m2);
        let x = _mm256_xor_si256(x, _mm256_xor_si256(t, _mm256_slli_epi64::<14>(t)));
        let t = _mm256_and_si256(_mm256_xor_si256(x, _mm256_srli_epi64::<28>(x)), m3);
        _mm256_xor_si256(x, _mm256_xor_si256(t, _mm256_slli_epi64::<28>(t)))
    }

    /// [`super::shuffle_tiles`] on pairs of tiles from tile `from` on; returns the tile after
    /// the last one done.
    #[target_feature(enable = "avx2")]
    fn shuffle_pairs<const TS: usize>(src: &[u8], dst: &mut [u8], n: usize, from: usize) -> usize {
        let pairs = n.saturating_sub(16 * from) / 32;
        if pairs == 0 {
            return from;
        }
        let input = vectors(src, 16 * from * TS, 2 * pairs * TS);
        let planes: [&mut [[u8; 16]]; TS] = split_planes(dst, n, 16 * from, 2 * pairs);
        let mut planes = planes.map(|p| p.as_chunks_mut::<2>().0);
        for (t, two) in input.chunks_exact(2 * TS).enumerate() {
            let (a, b) = two.split_at(TS);
            let mut v = [_mm256_setzero_si256(); TS];
            for (x, (lo, hi)) in v.iter_mut().zip(a.iter().zip(b)) {
                *x = load2(lo, hi);
            }
            for _ in 0..4 {
                v = zip_step(&v);
            }
            for (x, plane) in v.iter().zip(planes.iter_mut()) {
                store(&mut plane[t], *x);
            }
        }
        from + 2 * pairs
    }

    /// [`super::unshuffle_tiles`] on pairs of tiles.
    #[target_feature(enable = "avx2")]
    fn unshuffle_pairs<const TS: usize, const SUM: bool>(
        planes: &[&[u8]],
        dst: &mut [MaybeUninit<u8>],
        n: usize,
        acc: &mut [u8; 16],
    ) -> usize {
        let pairs = n / 32;
        let steps = TS.trailing_zeros();
        let planes: [&[[[u8; 16]; 2]]; TS] =
            core::array::from_fn(|b| vectors(planes[b], 0, 2 * pairs).as_chunks::<2>().0);
        let mut carry: [__m256i; TS] =
            core::array::from_fn(|b| _mm256_set1_epi8(acc[b].cast_signed()));
        let output = vectors_mut(dst, 0, 2 * pairs * TS);
        for (t, two) in output.chunks_exact_mut(2 * TS).enumerate() {
            let mut v = [_mm256_setzero_si256(); TS];
            for ((x, plane), c) in v.iter_mut().zip(planes).zip(carry.iter_mut()) {
                *x = load(&plane[t]);
                if SUM {
                    *x = running_sum(*x, c);
                }
            }
            for _ in 0..steps {
                v = zip_step(&v);
            }
            let (a, b) = two.split_at_mut(TS);
            for (x, (lo, hi)) in v.iter().zip(a.iter_mut().zip(b)) {
                store2_uninit(lo, hi, *x);
            }
        }
        if SUM {
            for (a, c) in acc.iter_mut().zip(carry) {
                *a = low_byte(c);
            }
        }
        32 * pairs
    }

    /// [`super::bit_transpose_tiles`] on pairs of tiles.
    #[target_feature(enable = "avx2")]
    fn bit_transpose_pairs(src: &[u8], dst: &mut [u8], groups: usize) -> usize {
        let pairs = groups / 32;
        let input = vectors(src, 0, 16 * pairs);
        let rows: [&mut [[u8; 16]]; 8] = split_planes(dst, groups, 0, 2 * pairs);
        let mut rows = rows.map(|r| r.as_chunks_mut::<2>().0);
        for (t, two) in input.chunks_exact(16).enumerate() {
            let (a, b) = two.split_at(8);
            let mut v = [_mm256_setzero_si256(); 8];
            for (x, (lo, hi)) in v.iter_mut().zip(a.iter().zip(b)) {
                *x = transpose8x4(load2(lo, hi));
            }
            for _ in 0..4 {
                v = zip_step(&v);
            }
            for (x, row) in v.iter().zip(rows.iter_mut()) {
                store(&mut row[t], *x);
            }
        }
        32 * pairs
    }

    /// [`super::bit_untranspose_tiles`] on pairs of tiles.
    #[target_feature(enable = "avx2")]
    fn bit_untranspose_pairs(src: &[u8], dst: &mut [u8], groups: usize) -> usize {
        let pairs = groups / 32;
        let rows: [&[[[u8; 16]; 2]]; 8] =
            core::array::from_fn(|k| vectors(src, k * groups, 2 * pairs).as_chunks::<2>().0);
        let output = vectors_mut(dst, 0, 16 * pairs);
        for (t, two) in output.chunks_exact_mut(16).enumerate() {
            let mut v = [_mm256_setzero_si256(); 8];
            for (x, row) in v.iter_mut().zip(rows) {
                *x = load(&row[t]);
            }
            for _ in 0..3 {
                v = zip_step(&v);
            }
            let (a, b) = two.split_at_mut(8);
            for (x, (lo, hi)) in v.iter().zip(a.iter_mut().zip(b)) {
                store2(lo, hi, transpose8x4(*x));
            }
        }
        32 * pairs
    }

    /// AVX2 [`shuffle`](crate::filter::simd::shuffle) of whole tile pairs from tile `from` on (lengths checked by
    /// the caller); returns the tile after the last one done.
    #[target_feature(enable = "avx2")]
    pub(super) fn shuffle(ts: usize, src: &[u8], dst: &mut [u8], n: usize, from: usize) -> usize {
        match ts {
            2 => shuffle_pairs::<2>(src, dst, n, from),
            4 => shuffle_pairs::<4>(src, dst, n, from),
            8 => shuffle_pairs::<8>(src, dst, n, from),
            16 => shuffle_pairs::<16>(src, dst, n, from),
            _ => from,
        }
    }

    /// AVX2 [`super::unshuffle_planes_with`] of whole tile pairs (lengths checked by the
    /// caller).
    #[target_feature(enable = "avx2")]
    pub(super) fn unshuffle_planes<const SUM: bool>(
        planes: &[&[u8]],
        dst: &mut [MaybeUninit<u8>],
        n: usize,
        acc: &mut [u8; 16],
    ) -> usize {
        match planes.len() {
            2 => unshuffle_pairs::<2, SUM>(planes, dst, n, acc),
            4 => unshuffle_pairs::<4, SUM>(planes, dst, n, acc),
            8 => unshuffle_pairs::<8, SUM>(planes, dst, n, acc),
            16 => unshuffle_pairs::<16, SUM>(planes, dst, n, acc),
            _ => 0,
        }
    }

    /// AVX2 [`super::bit_transpose`] of whole tile pairs (lengths checked by the caller).
    #[target_feature(enable = "avx2")]
    pub(super) fn bit_transpose(src: &[u8], dst: &mut [u8], groups: usize) -> usize {
        bit_transpose_pairs(src, dst, groups)
    }

    /// AVX2 [`super::bit_untranspose`] of whole tile pairs (lengths checked by the caller).
    #[target_feature(enable = "avx2")]
    pub(super) fn bit_untranspose(src: &[u8], dst: &mut [u8], groups: usize) -> usize {
        bit_untranspose_pairs(src, dst, groups)
    }
}

/// AVX-512 versions of the byte shuffle kernels, run when the CPU has AVX-512 F, BW and VBMI.
/// The interleave here is VBMI's two-source byte permute (`vpermt2b`), which crosses the
/// 128-bit lanes, so one 512-bit vector is one vector of the rotation argument above, with
/// tiles of 64 elements (`e ++ b`, 6 + t bits) and no lane boundaries:
///
/// * `zip_step` interleaves the low / high 32 bytes of vectors `k` and `k + N/2` into
///   outputs `2k` / `2k+1`: it rotates each byte's `vector ++ byte` address left by one bit,
///   as the SSE2 `zip_step` does;
/// * `unzip_step` takes the even / odd bytes of vectors `2k` and `2k+1` into outputs `k` /
///   `k + N/2`: the inverse, a rotation right by one bit.
///
/// Shuffling a tile (`e ++ b` into `b ++ e`) is a rotation right by `t`: `t` unzip steps;
/// unshuffling is `t` zip steps. Both sides of the transpose then move whole 64-byte vectors
/// and each step costs one permute per vector. The kernels do whole tiles and return the
/// number of elements done; the SSE2 kernels finish the last (up to three) 16-element tiles.
mod avx512 {
    use core::arch::x86_64::{
        __m512i, _mm_cvtsi128_si32, _mm512_add_epi8, _mm512_alignr_epi64, _mm512_castsi512_si128,
        _mm512_loadu_si512, _mm512_permutex2var_epi8, _mm512_permutexvar_epi64, _mm512_set1_epi8,
        _mm512_set1_epi64, _mm512_setzero_si512, _mm512_shuffle_epi8, _mm512_slli_epi64,
        _mm512_storeu_si512,
    };

    use super::{split_planes, vectors, vectors_mut};
    use core::mem::MaybeUninit;

    /// `_mm512_permutex2var_epi8(a, idx, b)` indices (0..64 pick byte `i` of `a`, 64..128
    /// byte `i - 64` of `b`) of the interleave of the low (`half` 0) or high (`half` 1) 32
    /// bytes of `a` and `b`: output byte `2i` is `a[32 half + i]`, `2i + 1` is `b[32 half + i]`.
    const fn zip_index(half: u8) -> [u8; 64] {
        let mut idx = [0u8; 64];
        let mut i = 0u8;
        while i < 32 {
            idx[2 * i as usize] = 32 * half + i;
            idx[2 * i as usize + 1] = 64 + 32 * half + i;
            i += 1;
        }
        idx
    }

    /// Indices of the even (`odd` 0) or odd (`odd` 1) bytes of the 128 bytes `a ++ b`.
    const fn unzip_index(odd: u8) -> [u8; 64] {
        let mut idx = [0u8; 64];
        let mut i = 0u8;
        while i < 64 {
            idx[i as usize] = 2 * i + odd;
            i += 1;
        }
        idx
    }

    /// `_mm512_shuffle_epi8` indices (within each 128-bit lane) that put byte 7 of each
    /// 64-bit lane into all of its bytes.
    const fn qword_last_index() -> [u8; 64] {
        let mut idx = [0u8; 64];
        let mut i = 0;
        while i < 64 {
            idx[i] = if i % 16 < 8 { 7 } else { 15 };
            i += 1;
        }
        idx
    }

    static ZIP: [[u8; 64]; 2] = [zip_index(0), zip_index(1)];
    static QWORD_LAST: [u8; 64] = qword_last_index();
    static UNZIP: [[u8; 64]; 2] = [unzip_index(0), unzip_index(1)];

    #[inline]
    #[target_feature(enable = "avx512f")]
    fn load(b: &[u8; 64]) -> __m512i {
        // SAFETY: `b` is 64 readable bytes; `loadu` has no alignment requirement.
        unsafe { _mm512_loadu_si512(b.as_ptr().cast()) }
    }

    #[inline]
    #[target_feature(enable = "avx512f")]
    fn store(b: &mut [u8; 64], v: __m512i) {
        // SAFETY: `b` is 64 writable bytes; `storeu` has no alignment requirement.
        unsafe { _mm512_storeu_si512(b.as_mut_ptr().cast(), v) }
    }

    /// [`store`] into memory that may not be initialized yet.
    #[inline]
    #[target_feature(enable = "avx512f,avx512bw,avx512vbmi")]
    fn store_uninit(b: &mut [MaybeUninit<u8>; 64], v: __m512i) {
        // SAFETY: `b` is 64 writable bytes; `storeu` has no alignment requirement.
        unsafe { _mm512_storeu_si512(b.as_mut_ptr().cast(), v) }
    }

    /// One interleaving step (rotates each byte's address left by one bit); `idx` holds
    /// [`ZIP`].
    #[inline]
    #[target_feature(enable = "avx512f,avx512bw,avx512vbmi")]
    fn zip_step<const N: usize>(v: &[__m512i; N], idx: &[__m512i; 2]) -> [__m512i; N] {
        let mut out = [_mm512_setzero_si512(); N];
        let h = N / 2;
        for k in 0..h {
            out[2 * k] = _mm512_permutex2var_epi8(v[k], idx[0], v[k + h]);
            out[2 * k + 1] = _mm512_permutex2var_epi8(v[k], idx[1], v[k + h]);
        }
        out
    }

    /// Inverse of [`zip_step`] (rotates each byte's address right by one bit); `idx` holds
    /// [`UNZIP`].
    #[inline]
    #[target_feature(enable = "avx512f,avx512bw,avx512vbmi")]
    fn unzip_step<const N: usize>(v: &[__m512i; N], idx: &[__m512i; 2]) -> [__m512i; N] {
        let mut out = [_mm512_setzero_si512(); N];
        let h = N / 2;
        for k in 0..h {
            out[k] = _mm512_permutex2var_epi8(v[2 * k], idx[0], v[2 * k + 1]);
            out[k + h] = _mm512_permutex2var_epi8(v[2 * k], idx[1], v[2 * k + 1]);
        }
        out
    }

    /// [`super::shuffle_tiles`] on tiles of 64 elements from 16-element tile `from` on;
    /// returns the 16-element tile after the last one done.
    #[target_feature(enable = "avx512f,avx512bw,avx512vbmi")]
    fn shuffle_tiles<const TS: usize>(src: &[u8], dst: &mut [u8], n: usize, from: usize) -> usize {
        let tiles = n.saturating_sub(16 * from) / 64;
        if tiles == 0 {
            return from;
        }
        let steps = TS.trailing_zeros();
        let idx = [load(&UNZIP[0]), load(&UNZIP[1])];
        let input = vectors(src, 16 * from * TS, tiles * TS);
        let mut planes: [&mut [[u8; 64]]; TS] = split_planes(dst, n, 16 * from, tiles);
        for (t, tile) in input.chunks_exact(TS).enumerate() {
            let mut v = [_mm512_setzero_si512(); TS];
            for (x, bytes) in v.iter_mut().zip(tile) {
                *x = load(bytes);
            }
            for _ in 0..steps {
                v = unzip_step(&v, &idx);
            }
            for (x, plane) in v.iter().zip(planes.iter_mut()) {
                store(&mut plane[t], *x);
            }
        }
        from + 4 * tiles
    }

    /// [`super::unshuffle_tiles`] on tiles of 64 elements.
    #[target_feature(enable = "avx512f,avx512bw,avx512vbmi")]
    fn unshuffle_tiles<const TS: usize, const SUM: bool>(
        planes: &[&[u8]],
        dst: &mut [MaybeUninit<u8>],
        n: usize,
        acc: &mut [u8; 16],
    ) -> usize {
        let tiles = n / 64;
        let steps = TS.trailing_zeros();
        let idx = [load(&ZIP[0]), load(&ZIP[1])];
        let last = load(&QWORD_LAST);
        let planes: [&[[u8; 64]]; TS] = core::array::from_fn(|b| vectors(planes[b], 0, tiles));
        let mut carry: [__m512i; TS] =
            core::array::from_fn(|b| _mm512_set1_epi8(acc[b].cast_signed()));
        let output = vectors_mut(dst, 0, tiles * TS);
        for (t, tile) in output.chunks_exact_mut(TS).enumerate() {
            let mut v = [_mm512_setzero_si512(); TS];
            for ((x, plane), c) in v.iter_mut().zip(planes).zip(carry.iter_mut()) {
                *x = load(&plane[t]);
                if SUM {
                    *x = running_sum(*x, c, last);
                }
            }
            for _ in 0..steps {
                v = zip_step(&v, &idx);
            }
            for (x, bytes) in v.iter().zip(tile) {
                store_uninit(bytes, *x);
            }
        }
        if SUM {
            for (a, c) in acc.iter_mut().zip(carry) {
                // Truncation intended: the low byte of lane 0 is the running sum.
                #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
                let b = _mm_cvtsi128_si32(_mm512_castsi512_si128(c)) as u8;
                *a = b;
            }
        }
        tiles * 64
    }

    /// [`super::running_sum`] on 64 lanes, mostly with shifts of whole 64-bit lanes (which do
    /// not compete with the byte permutes of the unshuffle for the shuffle unit): the prefix
    /// sum within each 64-bit lane (shift-and-add by 1, 2 and 4 bytes), each lane's sum (its
    /// byte 7, `last` holds [`QWORD_LAST`]) in all its bytes, the inclusive prefix sum of those
    /// over the eight 64-bit lanes (shifts by 1, 2 and 4 lanes), and lane `k - 1`'s of that
    /// added to lane `k`; then the carry, and the vector's sum (lane 7's) added to it.
    #[inline]
    #[target_feature(enable = "avx512f,avx512bw,avx512vbmi")]
    fn running_sum(x: __m512i, c: &mut __m512i, last: __m512i) -> __m512i {
        let zero = _mm512_setzero_si512();
        let mut x = x;
        x = _mm512_add_epi8(x, _mm512_slli_epi64::<8>(x));
        x = _mm512_add_epi8(x, _mm512_slli_epi64::<16>(x));
        x = _mm512_add_epi8(x, _mm512_slli_epi64::<32>(x));
        let t = _mm512_shuffle_epi8(x, last);
        // `alignr::<8 - k>(s, 0)` moves the 64-bit lanes of `s` up by `k`, zeros below.
        let mut s = _mm512_add_epi8(t, _mm512_alignr_epi64::<7>(t, zero));
        s = _mm512_add_epi8(s, _mm512_alignr_epi64::<6>(s, zero));
        s = _mm512_add_epi8(s, _mm512_alignr_epi64::<4>(s, zero));
        let out = _mm512_add_epi8(_mm512_add_epi8(x, _mm512_alignr_epi64::<7>(s, zero)), *c);
        *c = _mm512_add_epi8(*c, _mm512_permutexvar_epi64(_mm512_set1_epi64(7), s));
        out
    }

    /// AVX-512 [`shuffle`](crate::filter::simd::shuffle) of whole 64-element tiles from 16-element tile `from` on
    /// (lengths checked by the caller); returns the 16-element tile after the last one done.
    #[target_feature(enable = "avx512f,avx512bw,avx512vbmi")]
    pub(super) fn shuffle(ts: usize, src: &[u8], dst: &mut [u8], n: usize, from: usize) -> usize {
        match ts {
            2 => shuffle_tiles::<2>(src, dst, n, from),
            4 => shuffle_tiles::<4>(src, dst, n, from),
            8 => shuffle_tiles::<8>(src, dst, n, from),
            16 => shuffle_tiles::<16>(src, dst, n, from),
            _ => from,
        }
    }

    /// AVX-512 [`super::unshuffle_planes_with`] of whole 64-element tiles (lengths checked by
    /// the caller).
    #[target_feature(enable = "avx512f,avx512bw,avx512vbmi")]
    pub(super) fn unshuffle_planes<const SUM: bool>(
        planes: &[&[u8]],
        dst: &mut [MaybeUninit<u8>],
        n: usize,
        acc: &mut [u8; 16],
    ) -> usize {
        match planes.len() {
            2 => unshuffle_tiles::<2, SUM>(planes, dst, n, acc),
            4 => unshuffle_tiles::<4, SUM>(planes, dst, n, acc),
            8 => unshuffle_tiles::<8, SUM>(planes, dst, n, acc),
            16 => unshuffle_tiles::<16, SUM>(planes, dst, n, acc),
            _ => 0,
        }
    }
}

#[cfg(test)]
#[allow(
    clippy::cast_possible_truncation,
    reason = "test patterns wrap on purpose"
)]
mod tests {
    use super::*;

    const LEVELS: [Level; 3] = [Level::Avx512, Level::Avx2, Level::Sse2];

    /// Whether the CPU runs the kernels of `l`; else prints why a test skips them.
    fn runs(l: Level) -> bool {
        let ok = level() >= l;
        if !ok {
            println!("skipped: this CPU lacks the {l:?} kernels");
        }
        ok
    }

    /// The running byte sum on every path equals the byte loop, for every length around the
    /// vectors, every carry-in and every buffer offset.
    #[test]
    fn prefix_sum_bytes_on_every_path() {
        let src: Vec<u8> = (0..300u32).map(|i| (i * 7919 % 251) as u8).collect();
        for l in LEVELS {
            if !runs(l) {
                continue;
            }
            for off in 0..4 {
                for len in 0..200 {
                    for acc in [0u8, 1, 200] {
                        let s = &src[off..off + len];
                        let mut got = vec![0u8; len];
                        let (done, out) = capped(l, || prefix_sum_bytes(s, &mut got, acc));
                        assert_eq!(done, len / 16 * 16, "{l:?} len {len}");
                        let mut a = acc;
                        for (i, &b) in s[..done].iter().enumerate() {
                            a = a.wrapping_add(b);
                            assert_eq!(got[i], a, "{l:?} len {len} off {off} acc {acc} byte {i}");
                        }
                        assert_eq!(out, a, "{l:?} len {len} off {off} acc {acc}");
                    }
                }
            }
        }
    }

    /// The fused running sum + unshuffle on every path equals the running sum of each plane
    /// (from its carry-in) unshuffled, for every type size, element counts around the 16-,
    /// 32- and 64-element tiles, carries-in and plane offsets; the carries out are the sums
    /// after the elements done.
    #[test]
    fn unshuffle_planes_summed_on_every_path() {
        let mut x = 0x9e37_79b9u32;
        let src: Vec<u8> = (0..16 * 300)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                x.to_le_bytes()[1]
            })
            .collect();
        for l in LEVELS.into_iter().filter(|&l| runs(l)) {
            for ts in [2usize, 4, 8, 16] {
                for n in (0..=140).chain([191, 192, 193, 255, 256, 257]) {
                    for off in [0usize, 1, 7] {
                        let planes: Vec<&[u8]> =
                            (0..ts).map(|b| &src[off + b * (n + 3)..][..n]).collect();
                        let acc0: [u8; 16] = core::array::from_fn(|b| (b * 37 + off) as u8);
                        let mut acc = acc0;
                        let mut got = vec![0u8; n * ts];
                        let done = capped(l, || {
                            // SAFETY: same layout as `[u8]`; the kernels store initialized
                            // bytes only.
                            let d = unsafe {
                                &mut *(core::ptr::from_mut::<[u8]>(&mut got)
                                    as *mut [MaybeUninit<u8>])
                            };
                            unshuffle_planes_summed(&planes, d, n, &mut acc)
                        });
                        assert_eq!(done, n / 16 * 16, "{l:?} ts {ts} n {n}");
                        for (b, plane) in planes.iter().enumerate() {
                            let mut a = acc0[b];
                            for (i, &v) in plane[..done].iter().enumerate() {
                                a = a.wrapping_add(v);
                                let g = got[i * ts + b];
                                assert_eq!(g, a, "{l:?} ts {ts} n {n} off {off} plane {b} i {i}");
                            }
                            assert_eq!(acc[b], a, "{l:?} ts {ts} n {n} off {off} carry {b}");
                        }
                    }
                }
            }
        }
    }

    /// The kernels run (whole tiles) and agree with the definitions; the portable paths and
    /// the full filters are tested in `shuffle` and `bitshuffle`.
    #[test]
    fn kernels_cover_whole_tiles_and_match_definitions() {
        // AVX-512 tiles of 64 elements (when the CPU has AVX-512 VBMI), AVX2 pairs of tiles
        // (when it has AVX2), each with the tiles they leave to SSE2; then SSE2 alone.
        for l in LEVELS.into_iter().filter(|&l| runs(l)) {
            capped(l, kernels_match_definitions);
        }
    }

    /// The AVX-512, AVX2 and SSE2 paths give the same bytes (checked against each other here,
    /// and against the definitions in `kernels_match_definitions`).
    #[test]
    fn simd_paths_agree() {
        for len in [0usize, 16, 32, 48, 96, 128, 4000, 4096, 65_536 + 48] {
            let src: Vec<u8> = (0..len).map(|i| (i * 131 + i / 3) as u8).collect();
            for ts in [2usize, 4, 8, 16] {
                let n = len / ts;
                let run = || {
                    let mut sh = vec![0u8; len];
                    let a = shuffle(ts, &src, &mut sh, n);
                    let mut un = vec![0u8; len];
                    let b = unshuffle(ts, &src, &mut un, n);
                    (a, b, sh, un)
                };
                let sse2 = capped(Level::Sse2, run);
                for l in [Level::Avx512, Level::Avx2]
                    .into_iter()
                    .filter(|&l| runs(l))
                {
                    assert!(capped(l, run) == sse2, "{l:?} ts {ts} len {len}");
                }
            }
            let groups = len / 8;
            let run = || {
                let mut t = vec![0u8; len];
                let a = bit_transpose(&src, &mut t, groups);
                let mut u = vec![0u8; len];
                let b = bit_untranspose(&src, &mut u, groups);
                (a, b, t, u)
            };
            assert!(
                run() == capped(Level::Sse2, run),
                "bit transpose, len {len}"
            );
        }
    }

    /// The shuffle leaves the first tiles to SSE2 so that the wide kernels store aligned
    /// vectors (`head_tiles`): every offset of the output (and of the input) relative to a
    /// 64-byte boundary, on every path, with element counts below, at and above what the
    /// head and one wide tile take.
    #[test]
    fn shuffle_at_every_alignment_matches_definition() {
        for l in LEVELS.into_iter().filter(|&l| runs(l)) {
            for ts in [2usize, 4, 8, 16] {
                for n in [16usize, 47, 48, 64, 111, 112, 127, 128, 176, 300] {
                    let mut sbuf = vec![0u8; n * ts + 128];
                    let mut dbuf = vec![0u8; n * ts + 128];
                    let (sa, da) = (
                        sbuf.as_ptr().align_offset(64),
                        dbuf.as_ptr().align_offset(64),
                    );
                    for off in [0usize, 1, 15, 16, 32, 48, 63] {
                        let src = &mut sbuf[sa + (off * 7) % 64..][..n * ts];
                        for (i, b) in src.iter_mut().enumerate() {
                            *b = (i * 29 + i / 11 + off) as u8;
                        }
                        let src = &*src;
                        let dst = &mut dbuf[da + off..][..n * ts];
                        dst.fill(0);
                        assert_eq!(capped(l, || shuffle(ts, src, dst, n)), n / 16 * 16);
                        for i in 0..n / 16 * 16 {
                            for j in 0..ts {
                                let (got, want) = (dst[j * n + i], src[i * ts + j]);
                                assert_eq!(got, want, "{l:?} ts {ts} n {n} offset {off}");
                            }
                        }
                    }
                }
            }
        }
    }

    fn kernels_match_definitions() {
        for ts in [2usize, 4, 8, 16] {
            for n in [16usize, 17, 48, 64, 80, 127, 128, 200, 1000] {
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
        for groups in [16usize, 33, 48, 160, 1000] {
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
