//! Strided copies of 4-D (c, x, y, z) boxes between blocks and arrays in either layout.
//!
//! Callers guarantee (from validated geometry) that every addressed byte lies inside both
//! buffers; the kernels nevertheless only use checked slicing, so a bug shows up as a short
//! copy in tests, never as a panic or out-of-bounds access.

/// Copies the box of `extent` (c, x, y, z) elements of `ts` bytes from `src` (starting at byte
/// `src_off`, byte strides `ss`) to `dst` (starting at `dst_off`, strides `sd`).
#[allow(clippy::too_many_arguments)] // a plain kernel: two (buffer, offset, strides) triples
pub(crate) fn copy_4d(
    dst: &mut [u8],
    dst_off: usize,
    sd: [usize; 4],
    src: &[u8],
    src_off: usize,
    ss: [usize; 4],
    extent: [usize; 4],
    ts: usize,
) {
    copy_4d_impl(dst, dst_off, sd, src, src_off, ss, extent, ts, true);
}

/// [`copy_4d`] transposing directly, never through a staging buffer (the caller staged).
#[allow(clippy::too_many_arguments)]
pub(crate) fn copy_4d_direct(
    dst: &mut [u8],
    dst_off: usize,
    sd: [usize; 4],
    src: &[u8],
    src_off: usize,
    ss: [usize; 4],
    extent: [usize; 4],
    ts: usize,
) {
    copy_4d_impl(dst, dst_off, sd, src, src_off, ss, extent, ts, false);
}

#[allow(clippy::too_many_arguments)]
fn copy_4d_impl(
    dst: &mut [u8],
    dst_off: usize,
    sd: [usize; 4],
    src: &[u8],
    src_off: usize,
    ss: [usize; 4],
    extent: [usize; 4],
    ts: usize,
    stage: bool,
) {
    if extent.contains(&0) {
        return;
    }
    let [ec, ex, ey, ez] = extent;
    // Channel and x contiguous on both sides: one memcpy per (y, z) row.
    if sd[0] == ts && ss[0] == ts && sd[1] == ts * ec && ss[1] == ts * ec {
        let run = ts * ec * ex;
        let rows = Rows {
            dst_off,
            src_off,
            sd: [sd[2], sd[3]],
            ss: [ss[2], ss[3]],
            ey,
            ez,
        };
        // Short fixed-size rows (whole blocks of 8..64 bytes per row) as inline moves instead
        // of a memcpy call per row.
        match run {
            8 => rows.copy_fixed::<8>(dst, src),
            16 => rows.copy_fixed::<16>(dst, src),
            32 => rows.copy_fixed::<32>(dst, src),
            64 => rows.copy_fixed::<64>(dst, src),
            _ => rows.copy(dst, src, run),
        }
        return;
    }
    // z contiguous on both sides (C ↔ C): one memcpy per (c, x, y) row.
    if sd[3] == ts && ss[3] == ts {
        let run = ts * ez;
        // The same (y, z) row kernels with the roles of the outer axes permuted.
        for c in 0..ec {
            let rows = Rows {
                dst_off: dst_off + c * sd[0],
                src_off: src_off + c * ss[0],
                sd: [sd[2], sd[1]],
                ss: [ss[2], ss[1]],
                ey,
                ez: ex,
            };
            match run {
                8 => rows.copy_fixed::<8>(dst, src),
                16 => rows.copy_fixed::<16>(dst, src),
                32 => rows.copy_fixed::<32>(dst, src),
                64 => rows.copy_fixed::<64>(dst, src),
                _ => rows.copy(dst, src, run),
            }
        }
        return;
    }
    // A transpose (different contiguous axes on both sides, e.g. C array <-> Fortran block):
    // 8x8 tiles so both sides are accessed in short contiguous runs.
    let contiguous = |st: [usize; 4]| (0..4).find(|&a| st[a] == ts && extent[a] > 1);
    if let (Some(a), Some(b)) = (contiguous(sd), contiguous(ss))
        && a != b
    {
        let others: Vec<usize> = (0..4).filter(|&x| x != a && x != b).collect();
        if let [o0, o1] = others[..] {
            let t = Transpose {
                a,
                b,
                o0,
                o1,
                extent,
                ts,
            };
            if !(stage && staged(dst, dst_off, sd, src, src_off, ss, &t)) {
                t.tiles(dst, dst_off, sd, src, src_off, ss);
            }
            return;
        }
    }
    // General transpose: the innermost loop runs along the axis that is contiguous in the
    // larger buffer (the array; it streams), gathering from or scattering into the smaller one
    // (a block, cache-resident). Outer loops by decreasing stride of the larger buffer.
    let big = if dst.len() >= src.len() { sd } else { ss };
    let inner = (0..4)
        .filter(|&a| extent[a] > 1)
        .min_by_key(|&a| big[a])
        .unwrap_or(0);
    let mut outer: Vec<usize> = (0..4).filter(|&a| a != inner).collect();
    outer.sort_by_key(|&a| core::cmp::Reverse(big[a]));
    let (o0, o1, o2) = match outer.as_slice() {
        [a, b, c] => (*a, *b, *c),
        _ => return,
    };
    let n = extent[inner];
    for i0 in 0..extent[o0] {
        for i1 in 0..extent[o1] {
            for i2 in 0..extent[o2] {
                let d = dst_off + i0 * sd[o0] + i1 * sd[o1] + i2 * sd[o2];
                let s = src_off + i0 * ss[o0] + i1 * ss[o1] + i2 * ss[o2];
                strided(dst, d, sd[inner], src, s, ss[inner], n, ts);
            }
        }
    }
}

/// The (y, z) rows of a copy whose (c, x) part is contiguous on both sides.
struct Rows {
    dst_off: usize,
    src_off: usize,
    sd: [usize; 2],
    ss: [usize; 2],
    ey: usize,
    ez: usize,
}

impl Rows {
    fn copy(&self, dst: &mut [u8], src: &[u8], run: usize) {
        for z in 0..self.ez {
            for y in 0..self.ey {
                let d = self.dst_off + y * self.sd[0] + z * self.sd[1];
                let s = self.src_off + y * self.ss[0] + z * self.ss[1];
                if let (Some(dr), Some(sr)) = (dst.get_mut(d..d + run), src.get(s..s + run)) {
                    dr.copy_from_slice(sr);
                }
            }
        }
    }

    fn copy_fixed<const K: usize>(&self, dst: &mut [u8], src: &[u8]) {
        for z in 0..self.ez {
            for y in 0..self.ey {
                let d = self.dst_off + y * self.sd[0] + z * self.sd[1];
                let s = self.src_off + y * self.ss[0] + z * self.ss[1];
                let dr = dst
                    .get_mut(d..d + K)
                    .and_then(|r| <&mut [u8; K]>::try_from(r).ok());
                let sr = src.get(s..s + K).and_then(|r| <&[u8; K]>::try_from(r).ok());
                if let (Some(dr), Some(sr)) = (dr, sr) {
                    *dr = *sr;
                }
            }
        }
    }
}

/// A transpose of a 4-D box: axis `a` is contiguous in the destination, `b` in the source,
/// `o0`, `o1` the other two.
struct Transpose {
    a: usize,
    b: usize,
    o0: usize,
    o1: usize,
    extent: [usize; 4],
    ts: usize,
}

impl Transpose {
    /// The (a, b) planes in 8×8 tiles.
    fn tiles(
        &self,
        dst: &mut [u8],
        dst_off: usize,
        sd: [usize; 4],
        src: &[u8],
        src_off: usize,
        ss: [usize; 4],
    ) {
        let (a, b, o0, o1) = (self.a, self.b, self.o0, self.o1);
        for i0 in 0..self.extent[o0] {
            for i1 in 0..self.extent[o1] {
                let plane = Plane {
                    d: dst_off + i0 * sd[o0] + i1 * sd[o1],
                    s: src_off + i0 * ss[o0] + i1 * ss[o1],
                    sd_a: sd[a],
                    sd_b: sd[b],
                    ss_a: ss[a],
                    ss_b: ss[b],
                    ea: self.extent[a],
                    eb: self.extent[b],
                };
                match self.ts {
                    1 => transpose_plane::<1>(dst, src, &plane),
                    2 => transpose_plane::<2>(dst, src, &plane),
                    4 => transpose_plane::<4>(dst, src, &plane),
                    _ => transpose_plane::<8>(dst, src, &plane),
                }
            }
        }
    }
}

/// Largest box (bytes) transposed through a staging copy.
const STAGE_MAX: usize = 1 << 20;

std::thread_local! {
    /// Per-thread staging buffer of [`staged`].
    static STAGE: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// A block-sized transpose against a large array (the larger buffer) in two passes: the
/// array's part is first copied row by row to (or finally from) a compact staging buffer with
/// the array's axis order, padded so that its rows do not share cache sets, and the 8×8 tile
/// transpose runs between the staging buffer and the small buffer. Transposing straight from a
/// large array reads (or writes) 8 rows one array stride apart per tile; with power-of-two
/// strides (e.g. 256² bytes) they all map to the same cache set and miss on every tile.
/// `false` if not applicable (nothing was written).
fn staged(
    dst: &mut [u8],
    dst_off: usize,
    sd: [usize; 4],
    src: &[u8],
    src_off: usize,
    ss: [usize; 4],
    t: &Transpose,
) -> bool {
    let big_is_src = src.len() > dst.len();
    let big = if big_is_src { ss } else { sd };
    let small_len = if big_is_src { dst.len() } else { src.len() };
    let Some(bytes) = t.extent.iter().try_fold(t.ts, |acc, &e| acc.checked_mul(e)) else {
        return false;
    };
    // Only worth it when the large side is much larger than the box (a block of an array).
    if !(4096..=STAGE_MAX).contains(&bytes) || small_len.saturating_mul(4) > big_len(dst, src) {
        return false;
    }
    let mut order = [0usize, 1, 2, 3];
    order.sort_by_key(|&ax| (big[ax], ax));
    let mut tstr = [0usize; 4];
    let mut st = t.ts;
    for (i, &ax) in order.iter().enumerate() {
        tstr[ax] = st;
        st = st * t.extent[ax] + if i >= 1 { 64 } else { 0 };
    }
    let contiguous = |s: [usize; 4]| (0..4).find(|&ax| s[ax] == t.ts && t.extent[ax] > 1);
    if contiguous(tstr) != contiguous(big) {
        return false;
    }
    STAGE.with_borrow_mut(|stage| {
        if stage.len() < st {
            stage.resize(st, 0);
        }
        let Some(stage) = stage.get_mut(..st) else {
            return false;
        };
        if big_is_src {
            copy_4d_direct(stage, 0, tstr, src, src_off, ss, t.extent, t.ts);
            t.tiles(dst, dst_off, sd, stage, 0, tstr);
        } else {
            t.tiles(stage, 0, tstr, src, src_off, ss);
            copy_4d_direct(dst, dst_off, sd, stage, 0, tstr, t.extent, t.ts);
        }
        true
    })
}

fn big_len(dst: &[u8], src: &[u8]) -> usize {
    dst.len().max(src.len())
}

/// A 2-D slice of a transpose: axis `a` is contiguous in `dst`, axis `b` in `src`.
struct Plane {
    d: usize,
    s: usize,
    sd_a: usize,
    sd_b: usize,
    ss_a: usize,
    ss_b: usize,
    ea: usize,
    eb: usize,
}

const TILE: usize = 8;

/// Copies the `ea × eb` plane: single bytes in 16×16 tiles with SSE2 on x86-64 ([`sse2`]), the
/// rest (and other voxel sizes) in 8×8 tiles ([`transpose_tiles`]).
fn transpose_plane<const N: usize>(dst: &mut [u8], src: &[u8], p: &Plane) {
    #[allow(unused_mut, reason = "assigned on x86-64 only")]
    let (mut a16, mut b16) = (0, 0);
    #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
    if N == 1 {
        (a16, b16) = (p.ea / 16 * 16, p.eb / 16 * 16);
        // SAFETY: the kernel only needs SSE2, which every x86-64 CPU has (and this code is
        // compiled only with `target_feature = "sse2"`).
        #[allow(unsafe_code, reason = "calling an SSE2 kernel; see SAFETY")]
        let done = unsafe { sse2::bytes_16x16(dst, src, p, a16, b16) };
        if !done {
            (a16, b16) = (0, 0);
        }
    }
    transpose_tiles::<N>(dst, src, p, 0..p.ea, b16..p.eb);
    transpose_tiles::<N>(dst, src, p, a16..p.ea, 0..b16);
}

/// 16×16 tiles of single bytes as sixteen 16-byte vectors, transposed by four interleaving
/// steps: with vector `v` and lane `l` (4 bits each), one step ([`zip`]) moves the byte at
/// `v ++ l` to the address rotated left by one bit, so four steps swap `v` and `l`.
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
mod sse2 {
    use core::arch::x86_64::{__m128i, _mm_unpackhi_epi8, _mm_unpacklo_epi8};

    use super::Plane;

    /// One interleaving step: outputs `2k` / `2k+1` are the low / high byte interleave of
    /// vectors `k` and `k + 8`.
    #[inline]
    #[target_feature(enable = "sse2")]
    fn zip(v: &[__m128i; 16]) -> [__m128i; 16] {
        let mut out = *v;
        for k in 0..8 {
            out[2 * k] = _mm_unpacklo_epi8(v[k], v[k + 8]);
            out[2 * k + 1] = _mm_unpackhi_epi8(v[k], v[k + 8]);
        }
        out
    }

    /// Transposes the `a < a16`, `b < b16` part of the plane (multiples of 16); `false` if a
    /// run is out of bounds (then some tiles may have been written).
    #[target_feature(enable = "sse2")]
    pub(super) fn bytes_16x16(
        dst: &mut [u8],
        src: &[u8],
        p: &Plane,
        a16: usize,
        b16: usize,
    ) -> bool {
        for a0 in (0..a16).step_by(16) {
            for b0 in (0..b16).step_by(16) {
                let mut v = [bytemuck::cast::<[u8; 16], __m128i>([0; 16]); 16];
                for (i, x) in v.iter_mut().enumerate() {
                    let s = p.s + (a0 + i) * p.ss_a + b0 * p.ss_b;
                    let Some(row) = src
                        .get(s..s + 16)
                        .and_then(|r| <[u8; 16]>::try_from(r).ok())
                    else {
                        return false;
                    };
                    *x = bytemuck::cast(row);
                }
                for _ in 0..4 {
                    v = zip(&v);
                }
                for (j, x) in v.iter().enumerate() {
                    let d = p.d + (b0 + j) * p.sd_b + a0 * p.sd_a;
                    let Some(run) = dst.get_mut(d..d + 16) else {
                        return false;
                    };
                    run.copy_from_slice(&bytemuck::cast::<__m128i, [u8; 16]>(*x));
                }
            }
        }
        true
    }
}

/// Copies the part `a_range × b_range` of the plane in 8×8 tiles: 8 source runs along `b`
/// into a tile, then 8 destination runs along `a` out of it.
fn transpose_tiles<const N: usize>(
    dst: &mut [u8],
    src: &[u8],
    p: &Plane,
    a_range: core::ops::Range<usize>,
    b_range: core::ops::Range<usize>,
) {
    let mut tile = [[0u8; N]; TILE * TILE];
    for a0 in a_range.clone().step_by(TILE) {
        let wa = TILE.min(a_range.end - a0);
        for b0 in b_range.clone().step_by(TILE) {
            let wb = TILE.min(b_range.end - b0);
            if N == 1 && wa == TILE && wb == TILE && bytes_tile(dst, src, p, a0, b0) {
                continue;
            }
            for i in 0..wa {
                let s = p.s + (a0 + i) * p.ss_a + b0 * p.ss_b;
                let (Some(run), Some(row)) = (
                    src.get(s..s + wb * N),
                    tile.get_mut(i * TILE..i * TILE + wb),
                ) else {
                    return;
                };
                for (t, v) in row.iter_mut().zip(run.chunks_exact(N)) {
                    t.copy_from_slice(v);
                }
            }
            for j in 0..wb {
                let d = p.d + (b0 + j) * p.sd_b + a0 * p.sd_a;
                let Some(run) = dst.get_mut(d..d + wa * N) else {
                    return;
                };
                for (i, v) in run.chunks_exact_mut(N).enumerate() {
                    if let Some(t) = tile.get(i * TILE + j) {
                        v.copy_from_slice(t);
                    }
                }
            }
        }
    }
}

/// A full 8×8 tile of single bytes as eight `u64` rows, transposed in registers. `false` if a
/// run is out of bounds (then nothing was written).
#[inline]
fn bytes_tile(dst: &mut [u8], src: &[u8], p: &Plane, a0: usize, b0: usize) -> bool {
    let mut rows = [0u64; 8];
    for (i, row) in rows.iter_mut().enumerate() {
        let s = p.s + (a0 + i) * p.ss_a + b0 * p.ss_b;
        let Some(run) = src.get(s..s + 8).and_then(|r| <[u8; 8]>::try_from(r).ok()) else {
            return false;
        };
        *row = u64::from_le_bytes(run);
    }
    let cols = transpose_8x8(rows);
    let last = p.d + (b0 + 7) * p.sd_b + a0 * p.sd_a;
    if dst.len() < last + 8 {
        return false;
    }
    for (j, col) in cols.iter().enumerate() {
        let d = p.d + (b0 + j) * p.sd_b + a0 * p.sd_a;
        if let Some(run) = dst.get_mut(d..d + 8) {
            run.copy_from_slice(&col.to_le_bytes());
        }
    }
    true
}

/// Transposes an 8×8 byte matrix held as rows (byte j of row i = element (i, j)): three rounds
/// swapping 1-, 2- and 4-byte sub-blocks between row pairs.
#[inline]
pub(crate) fn transpose_8x8(mut r: [u64; 8]) -> [u64; 8] {
    const M1: u64 = 0x00ff_00ff_00ff_00ff;
    const M2: u64 = 0x0000_ffff_0000_ffff;
    const M4: u64 = 0x0000_0000_ffff_ffff;
    for (shift, mask, step) in [(8u32, M1, 1usize), (16, M2, 2), (32, M4, 4)] {
        for base in (0..8).step_by(2 * step) {
            for k in base..base + step {
                let (a, b) = (r[k], r[k + step]);
                let t = ((a >> shift) ^ b) & mask;
                r[k + step] = b ^ t;
                r[k] = a ^ (t << shift);
            }
        }
    }
    r
}

/// `n` elements of `ts` bytes, strides in bytes.
#[allow(clippy::too_many_arguments)]
#[inline]
fn strided(
    dst: &mut [u8],
    d: usize,
    dstride: usize,
    src: &[u8],
    s: usize,
    sstride: usize,
    n: usize,
    ts: usize,
) {
    match ts {
        1 => strided_n::<1>(dst, d, dstride, src, s, sstride, n),
        2 => strided_n::<2>(dst, d, dstride, src, s, sstride, n),
        4 => strided_n::<4>(dst, d, dstride, src, s, sstride, n),
        _ => strided_n::<8>(dst, d, dstride, src, s, sstride, n),
    }
}

#[inline]
fn strided_n<const N: usize>(
    dst: &mut [u8],
    d: usize,
    dstride: usize,
    src: &[u8],
    s: usize,
    sstride: usize,
    n: usize,
) {
    if n == 0 {
        return;
    }
    if n == 1 || dstride < N || sstride < N {
        // Degenerate strides (single element, or overlapping elements): element by element.
        for i in 0..n {
            let (dd, ss) = (d + i * dstride, s + i * sstride);
            if let (Some(dv), Some(sv)) = (dst.get_mut(dd..dd + N), src.get(ss..ss + N)) {
                dv.copy_from_slice(sv);
            }
        }
        return;
    }
    let span = |stride: usize| (n - 1) * stride + N;
    let (Some(dr), Some(sr)) = (
        dst.get_mut(d..d + span(dstride)),
        src.get(s..s + span(sstride)),
    ) else {
        return;
    };
    if dstride == N && sstride == N {
        dr.copy_from_slice(sr);
        return;
    }
    if dstride == N {
        for (dc, sc) in dr.chunks_exact_mut(N).zip(sr.chunks(sstride)) {
            if let Some(sv) = sc.get(..N) {
                dc.copy_from_slice(sv);
            }
        }
    } else {
        for (dc, sc) in dr.chunks_mut(dstride).zip(sr.chunks(sstride)) {
            if let (Some(dv), Some(sv)) = (dc.get_mut(..N), sc.get(..N)) {
                dv.copy_from_slice(sv);
            }
        }
    }
}

/// Fills the box of `extent` (c, x, y, z) elements of `ts` bytes in `dst` with zeros.
pub(crate) fn zero_4d(
    dst: &mut [u8],
    dst_off: usize,
    sd: [usize; 4],
    extent: [usize; 4],
    ts: usize,
) {
    if extent.contains(&0) {
        return;
    }
    let [ec, ex, ey, ez] = extent;
    if sd[0] == ts && sd[1] == ts * ec {
        let run = ts * ec * ex;
        for z in 0..ez {
            for y in 0..ey {
                let d = dst_off + y * sd[2] + z * sd[3];
                if let Some(v) = dst.get_mut(d..d + run) {
                    v.fill(0);
                }
            }
        }
        return;
    }
    if sd[3] == ts {
        let run = ts * ez;
        for c in 0..ec {
            for x in 0..ex {
                for y in 0..ey {
                    let d = dst_off + c * sd[0] + x * sd[1] + y * sd[2];
                    if let Some(v) = dst.get_mut(d..d + run) {
                        v.fill(0);
                    }
                }
            }
        }
        return;
    }
    for c in 0..ec {
        for x in 0..ex {
            for y in 0..ey {
                for z in 0..ez {
                    let d = dst_off + c * sd[0] + x * sd[1] + y * sd[2] + z * sd[3];
                    if let Some(v) = dst.get_mut(d..d + ts) {
                        v.fill(0);
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_transpose_8x8() {
        let rows: [u64; 8] = core::array::from_fn(|i| {
            u64::from_le_bytes(core::array::from_fn(|j| u8::try_from(i * 8 + j).unwrap()))
        });
        let cols = transpose_8x8(rows);
        for (j, c) in cols.iter().enumerate() {
            let b = c.to_le_bytes();
            for (i, v) in b.iter().enumerate() {
                assert_eq!(usize::from(*v), i * 8 + j);
            }
        }
    }

    /// u8 C (3, 20, 17, 19) array to a Fortran layout and back (tiles and edges).
    #[test]
    fn byte_transpose_round_trip() {
        let ext = [3usize, 20, 17, 19];
        let n: usize = ext.iter().product();
        let f_str = [1, 3, 60, 1020];
        let c_str = [20 * 17 * 19, 17 * 19, 19, 1];
        let src: Vec<u8> = (0..n)
            .map(|i| u8::try_from(i * 13 % 256).unwrap())
            .collect();
        let mut f = vec![0u8; n];
        copy_4d(&mut f, 0, f_str, &src, 0, c_str, ext, 1);
        for c in 0..3 {
            for x in 0..20 {
                for y in 0..17 {
                    for z in 0..19 {
                        let fo = c * f_str[0] + x * f_str[1] + y * f_str[2] + z * f_str[3];
                        let co = c * c_str[0] + x * c_str[1] + y * c_str[2] + z * c_str[3];
                        assert_eq!(f[fo], src[co]);
                    }
                }
            }
        }
        let mut back = vec![0u8; n];
        copy_4d(&mut back, 0, c_str, &f, 0, f_str, ext, 1);
        assert_eq!(back, src);
    }

    /// u8 C arrays to Fortran layouts inside larger buffers (offsets, several 16×16 tiles and
    /// ragged edges, staged and direct), checked element by element against the definition.
    #[test]
    fn byte_transposes_match_the_definition() {
        for ext in [[1usize, 40, 37, 50], [2, 16, 33, 17], [1, 64, 3, 48]] {
            let n: usize = ext.iter().product();
            let c_str = [ext[1] * ext[2] * ext[3], ext[2] * ext[3], ext[3], 1];
            let f_str = [1, ext[0], ext[0] * ext[1], ext[0] * ext[1] * ext[2]];
            let src: Vec<u8> = (0..n + 7)
                .map(|i| u8::try_from(i * 29 % 251).unwrap())
                .collect();
            for direct in [false, true] {
                let mut f = vec![0u8; n + 5];
                if direct {
                    copy_4d_direct(&mut f, 5, f_str, &src, 7, c_str, ext, 1);
                } else {
                    copy_4d(&mut f, 5, f_str, &src, 7, c_str, ext, 1);
                }
                for c in 0..ext[0] {
                    for x in 0..ext[1] {
                        for y in 0..ext[2] {
                            for z in 0..ext[3] {
                                let fo = c * f_str[0] + x * f_str[1] + y * f_str[2] + z * f_str[3];
                                let co = c * c_str[0] + x * c_str[1] + y * c_str[2] + z * c_str[3];
                                assert_eq!(f[5 + fo], src[7 + co], "{ext:?} {direct}");
                            }
                        }
                    }
                }
                assert_eq!(f[..5], [0; 5]);
            }
        }
    }

    /// Fortran (2,3,4,5) u16 array to C order and back, checked element by element.
    #[test]
    fn transpose_round_trip() {
        let ext = [2usize, 3, 4, 5];
        let ts = 2;
        let n: usize = ext.iter().product();
        let f_str = [ts, ts * 2, ts * 6, ts * 24];
        let c_str = [ts * 60, ts * 20, ts * 5, ts];
        let src: Vec<u8> = (0..n * ts)
            .map(|i| u8::try_from(i * 7 % 251).unwrap())
            .collect();
        let mut c = vec![0u8; n * ts];
        copy_4d(&mut c, 0, c_str, &src, 0, f_str, ext, ts);
        for ci in 0..2 {
            for x in 0..3 {
                for y in 0..4 {
                    for z in 0..5 {
                        let fo = ci * f_str[0] + x * f_str[1] + y * f_str[2] + z * f_str[3];
                        let co = ci * c_str[0] + x * c_str[1] + y * c_str[2] + z * c_str[3];
                        assert_eq!(c[co..co + 2], src[fo..fo + 2]);
                    }
                }
            }
        }
        let mut back = vec![0u8; n * ts];
        copy_4d(&mut back, 0, f_str, &c, 0, c_str, ext, ts);
        assert_eq!(back, src);
        zero_4d(&mut back, 0, f_str, [2, 1, 1, 1], ts);
        assert_eq!(back[..4], [0, 0, 0, 0]);
        assert_eq!(back[4..], src[4..]);
    }
}
