//! Byte shuffle: byte `j` of every element is grouped into plane `j`.
//!
//! With `n = len / ts` elements, output byte `j*n + i` is input byte `i*ts + j`; the trailing
//! `len % ts` bytes are copied unchanged. On x86-64 the type sizes 2, 4, 8 and 16 run through
//! the SIMD kernels of [`crate::filter::simd`] (AVX-512 VBMI or AVX2 when the CPU has them, else
//! SSE2; tiles of 16 elements); elsewhere, and for the last partial tile, fixed-size portable
//! loops that LLVM can vectorise.

/// The element size of a shuffle filter: its meta, or the type size when the meta is 0.
pub(crate) fn group(ts: usize, meta: u8) -> usize {
    if meta == 0 { ts } else { usize::from(meta) }
}

/// Whether a (un)shuffle with element size `ts` of `len` bytes moves any byte: not for
/// `ts <= 1` or a block shorter than one element (C-Blosc treats both as no filter). Encoder
/// and decoder skip such a shuffle rather than copying the block to another buffer.
pub(crate) fn moves_bytes(ts: usize, len: usize) -> bool {
    ts > 1 && len >= ts
}

/// Shuffles `src` into `dst` (same length) with type size `ts`.
pub(crate) fn shuffle(ts: usize, src: &[u8], dst: &mut [u8]) {
    let len = src.len().min(dst.len());
    if !moves_bytes(ts, len) {
        copy(src, dst, len);
        return;
    }
    let n = len / ts;
    let body = n * ts;
    let done = simd_shuffle(ts, src, dst, n);
    if done > 0 {
        for (j, plane) in dst[..body].chunks_exact_mut(n).enumerate() {
            for (i, o) in plane.iter_mut().enumerate().skip(done) {
                *o = src[i * ts + j];
            }
        }
    } else {
        shuffle_scalar(ts, n, &src[..body], &mut dst[..body]);
    }
    dst[body..len].copy_from_slice(&src[body..len]);
}

/// Portable shuffle of whole elements (`n` of `ts` bytes).
fn shuffle_scalar(ts: usize, n: usize, src: &[u8], dst: &mut [u8]) {
    let body = n * ts;
    match ts {
        2 => shuffle_n::<2>(&src[..body], &mut dst[..body]),
        4 => shuffle_n::<4>(&src[..body], &mut dst[..body]),
        8 => shuffle_n::<8>(&src[..body], &mut dst[..body]),
        16 => shuffle_n::<16>(&src[..body], &mut dst[..body]),
        _ => {
            for (j, plane) in dst[..body].chunks_exact_mut(n).enumerate() {
                for (o, elem) in plane.iter_mut().zip(src[..body].chunks_exact(ts)) {
                    *o = elem.get(j).copied().unwrap_or(0);
                }
            }
        }
    }
}

/// Inverse of [`shuffle`].
pub(crate) fn unshuffle(ts: usize, src: &[u8], dst: &mut [u8]) {
    let len = src.len().min(dst.len());
    if !moves_bytes(ts, len) {
        copy(src, dst, len);
        return;
    }
    let n = len / ts;
    let body = n * ts;
    let done = simd_unshuffle(ts, src, dst, n);
    if done > 0 {
        for (j, plane) in src[..body].chunks_exact(n).enumerate() {
            for (i, &b) in plane.iter().enumerate().skip(done) {
                dst[i * ts + j] = b;
            }
        }
    } else {
        unshuffle_scalar(ts, n, &src[..body], &mut dst[..body]);
    }
    dst[body..len].copy_from_slice(&src[body..len]);
}

/// [`unshuffle`] of a block of whole elements whose `ts = planes.len()` planes (each `n`
/// bytes) lie in separate buffers, into `dst` (`n * ts` bytes, which need not be initialized).
/// With `running_sum`, each plane's running byte sum (wrapping) is unshuffled instead of the
/// plane: BYTEDELTA's backward filter with one stream per plane, in the same pass. Returns
/// `true` after writing every byte of `dst`; `false` (nothing written) if the lengths do not
/// fit or there is no kernel for `ts` (2, 4, 8, 16 on x86-64).
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
pub(crate) fn unshuffle_planes(
    planes: &[&[u8]],
    dst: &mut [core::mem::MaybeUninit<u8>],
    n: usize,
    running_sum: bool,
) -> bool {
    let ts = planes.len();
    if !matches!(ts, 2 | 4 | 8 | 16) || dst.len() != n * ts || planes.iter().any(|p| p.len() != n) {
        return false;
    }
    // The kernels write elements `..done` (leaving each plane's running sum in `acc`); the
    // loop below elements `done..n` of every plane.
    let mut acc = [0u8; 16];
    let done = if running_sum {
        super::simd::unshuffle_planes_summed(planes, dst, n, &mut acc)
    } else {
        super::simd::unshuffle_planes(planes, dst, n)
    };
    for ((j, plane), mut a) in planes.iter().enumerate().zip(acc) {
        for (i, &b) in plane.iter().enumerate().skip(done) {
            a = if running_sum { a.wrapping_add(b) } else { b };
            if let Some(o) = dst.get_mut(i * ts + j) {
                o.write(a);
            }
        }
    }
    true
}

/// Portable unshuffle of whole elements (`n` of `ts` bytes).
fn unshuffle_scalar(ts: usize, n: usize, src: &[u8], dst: &mut [u8]) {
    let body = n * ts;
    match ts {
        2 => unshuffle_n::<2>(&src[..body], &mut dst[..body]),
        4 => unshuffle_n::<4>(&src[..body], &mut dst[..body]),
        8 => unshuffle_n::<8>(&src[..body], &mut dst[..body]),
        16 => unshuffle_n::<16>(&src[..body], &mut dst[..body]),
        _ => {
            for (j, plane) in src[..body].chunks_exact(n).enumerate() {
                for (&b, elem) in plane.iter().zip(dst[..body].chunks_exact_mut(ts)) {
                    if let Some(o) = elem.get_mut(j) {
                        *o = b;
                    }
                }
            }
        }
    }
}

/// Elements shuffled by the SIMD kernel (a prefix of whole 16-element tiles; 0 if none).
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
fn simd_shuffle(ts: usize, src: &[u8], dst: &mut [u8], n: usize) -> usize {
    super::simd::shuffle(ts, src, dst, n)
}

#[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
fn simd_shuffle(_: usize, _: &[u8], _: &mut [u8], _: usize) -> usize {
    0
}

/// Elements unshuffled by the SIMD kernel (as [`simd_shuffle`]).
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
fn simd_unshuffle(ts: usize, src: &[u8], dst: &mut [u8], n: usize) -> usize {
    super::simd::unshuffle(ts, src, dst, n)
}

#[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
fn simd_unshuffle(_: usize, _: &[u8], _: &mut [u8], _: usize) -> usize {
    0
}

fn copy(src: &[u8], dst: &mut [u8], len: usize) {
    dst[..len].copy_from_slice(&src[..len]);
}

fn planes<const TS: usize>(src: &[u8], n: usize) -> [&[u8]; TS] {
    core::array::from_fn(|j| &src[j * n..(j + 1) * n])
}

/// Interleaving loops written as zips so that no index is bounds-checked and LLVM can
/// vectorise the strided accesses.
fn unshuffle_n<const TS: usize>(src: &[u8], dst: &mut [u8]) {
    let n = src.len() / TS;
    match TS {
        2 => {
            let [a, b] = planes::<2>(src, n);
            for ((o, &x), &y) in dst.chunks_exact_mut(2).zip(a).zip(b) {
                o.copy_from_slice(&[x, y]);
            }
        }
        4 => {
            let [a, b, c, d] = planes::<4>(src, n);
            for ((((o, &x), &y), &z), &w) in dst.chunks_exact_mut(4).zip(a).zip(b).zip(c).zip(d) {
                o.copy_from_slice(&[x, y, z, w]);
            }
        }
        8 => {
            let [a, b, c, d, e, f, g, h] = planes::<8>(src, n);
            let it = dst
                .chunks_exact_mut(8)
                .zip(a)
                .zip(b)
                .zip(c)
                .zip(d)
                .zip(e)
                .zip(f)
                .zip(g)
                .zip(h);
            for ((((((((o, &p0), &p1), &p2), &p3), &p4), &p5), &p6), &p7) in it {
                o.copy_from_slice(&[p0, p1, p2, p3, p4, p5, p6, p7]);
            }
        }
        _ => {
            let planes = planes::<TS>(src, n);
            for (i, o) in dst.chunks_exact_mut(TS).enumerate() {
                for (b, plane) in o.iter_mut().zip(planes.iter()) {
                    *b = plane.get(i).copied().unwrap_or(0);
                }
            }
        }
    }
}

fn shuffle_n<const TS: usize>(src: &[u8], dst: &mut [u8]) {
    let n = src.len() / TS;
    let mut rest = &mut dst[..n * TS];
    let mut outs: [&mut [u8]; TS] = core::array::from_fn(|_| {
        let (head, tail) = core::mem::take(&mut rest).split_at_mut(n);
        rest = tail;
        head
    });
    match TS {
        2 => {
            let [a, b] = &mut outs[..] else { return };
            for ((e, x), y) in src.chunks_exact(2).zip(a.iter_mut()).zip(b.iter_mut()) {
                *x = e[0];
                *y = e[1];
            }
        }
        4 => {
            let [a, b, c, d] = &mut outs[..] else { return };
            // Slicing to exact lengths lets LLVM prove every index in range and vectorise
            // the stride-4 loads.
            let (a, b, c, d) = (&mut a[..n], &mut b[..n], &mut c[..n], &mut d[..n]);
            let src = &src[..4 * n];
            for i in 0..n {
                a[i] = src[4 * i];
                b[i] = src[4 * i + 1];
                c[i] = src[4 * i + 2];
                d[i] = src[4 * i + 3];
            }
        }
        _ => {
            for (i, e) in src.chunks_exact(TS).enumerate() {
                for (&b, out) in e.iter().zip(outs.iter_mut()) {
                    if let Some(o) = out.get_mut(i) {
                        *o = b;
                    }
                }
            }
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

    fn naive(ts: usize, src: &[u8]) -> Vec<u8> {
        let n = src.len() / ts;
        let mut out = src.to_vec();
        for i in 0..n {
            for j in 0..ts {
                out[j * n + i] = src[i * ts + j];
            }
        }
        out
    }

    #[test]
    fn matches_definition_and_inverts() {
        for ts in [1, 2, 3, 4, 5, 8, 12, 16, 17] {
            for len in [0, 1, 7, 16, 33, 100, 256, 1000, 4099] {
                let src: Vec<u8> = (0..len).map(|i| (i * 7 + i / 3) as u8).collect();
                let mut dst = vec![0; len];
                shuffle(ts, &src, &mut dst);
                assert_eq!(dst, naive(ts, &src), "ts {ts} len {len}");
                let mut back = vec![0; len];
                unshuffle(ts, &dst, &mut back);
                assert_eq!(back, src, "ts {ts} len {len}");
            }
        }
    }
}
