//! Byte shuffle: byte `j` of every element is grouped into plane `j`.
//!
//! With `n = len / ts` elements, output byte `j*n + i` is input byte `i*ts + j`; the trailing
//! `len % ts` bytes are copied unchanged. Fixed-size fast paths for the common type sizes let
//! the compiler keep everything in registers and vectorise.

/// Shuffles `src` into `dst` (same length) with type size `ts`.
pub(crate) fn shuffle(ts: usize, src: &[u8], dst: &mut [u8]) {
    let len = src.len().min(dst.len());
    if ts <= 1 || len < ts {
        copy(src, dst, len);
        return;
    }
    let n = len / ts;
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
    dst[body..len].copy_from_slice(&src[body..len]);
}

/// Inverse of [`shuffle`].
pub(crate) fn unshuffle(ts: usize, src: &[u8], dst: &mut [u8]) {
    let len = src.len().min(dst.len());
    if ts <= 1 || len < ts {
        copy(src, dst, len);
        return;
    }
    let n = len / ts;
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
    dst[body..len].copy_from_slice(&src[body..len]);
}

fn copy(src: &[u8], dst: &mut [u8], len: usize) {
    dst[..len].copy_from_slice(&src[..len]);
}

/// Elements handled per inner step of the fixed-size paths.
const LANES: usize = 16;

fn shuffle_n<const TS: usize>(src: &[u8], dst: &mut [u8]) {
    let n = src.len() / TS;
    let mut planes: [&mut [u8]; TS] = split_planes::<TS>(dst, n);
    let whole = n / LANES * LANES;
    for (g, block) in src[..whole * TS].chunks_exact(TS * LANES).enumerate() {
        let base = g * LANES;
        for (j, plane) in planes.iter_mut().enumerate() {
            let out = &mut plane[base..base + LANES];
            for (e, o) in out.iter_mut().enumerate() {
                *o = block[e * TS + j];
            }
        }
    }
    for i in whole..n {
        for (j, plane) in planes.iter_mut().enumerate() {
            plane[i] = src[i * TS + j];
        }
    }
}

fn unshuffle_n<const TS: usize>(src: &[u8], dst: &mut [u8]) {
    let n = src.len() / TS;
    let planes: [&[u8]; TS] = core::array::from_fn(|j| &src[j * n..(j + 1) * n]);
    let whole = n / LANES * LANES;
    for (g, block) in dst[..whole * TS].chunks_exact_mut(TS * LANES).enumerate() {
        let base = g * LANES;
        for (j, plane) in planes.iter().enumerate() {
            let inp = &plane[base..base + LANES];
            for (e, &b) in inp.iter().enumerate() {
                block[e * TS + j] = b;
            }
        }
    }
    for i in whole..n {
        for (j, plane) in planes.iter().enumerate() {
            dst[i * TS + j] = plane[i];
        }
    }
}

fn split_planes<const TS: usize>(dst: &mut [u8], n: usize) -> [&mut [u8]; TS] {
    let mut rest = dst;
    core::array::from_fn(|_| {
        let (head, tail) = core::mem::take(&mut rest).split_at_mut(n);
        rest = tail;
        head
    })
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
