//! BYTEDELTA (filter 35): within each of `n` consecutive byte streams of `len / n` bytes
//! (the layout SHUFFLE leaves), every byte minus the byte before it (wrapping; the first byte
//! of a stream against 0). `n` is the filter meta, or the typesize when the meta is 0.
//! Bytes past `n * (len / n)` are not touched by C-Blosc2; we copy them through.

use super::geometry;
use crate::error::Result;

/// The number of streams: the meta, or `typesize` when it is 0.
pub(crate) fn streams(meta: u8, typesize: usize) -> Result<usize> {
    let n = if meta == 0 {
        typesize
    } else {
        usize::from(meta)
    };
    if n == 0 {
        return Err(geometry("bytedelta", "typesize 0"));
    }
    Ok(n)
}

/// Forward filter: `src` → `dst` (same length).
pub(crate) fn encode(meta: u8, typesize: usize, src: &[u8], dst: &mut [u8]) -> Result<()> {
    let n = streams(meta, typesize)?;
    let slen = src.len() / n;
    let body = slen * n;
    if slen > 0 {
        for (s, d) in src[..body]
            .chunks_exact(slen)
            .zip(dst[..body].chunks_exact_mut(slen))
        {
            let mut prev = 0u8;
            for (o, &v) in d.iter_mut().zip(s) {
                *o = v.wrapping_sub(prev);
                prev = v;
            }
        }
    }
    dst[body..].copy_from_slice(&src[body..]);
    Ok(())
}

/// Backward filter: `src` → `dst` (same length), a running byte sum per stream.
pub(crate) fn decode(meta: u8, typesize: usize, src: &[u8], dst: &mut [u8]) -> Result<()> {
    let n = streams(meta, typesize)?;
    let slen = src.len() / n;
    let body = slen * n;
    if slen > 0 {
        for (s, d) in src[..body]
            .chunks_exact(slen)
            .zip(dst[..body].chunks_exact_mut(slen))
        {
            #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
            let (done, mut acc) = crate::filter::simd::prefix_sum_bytes(s, d, 0);
            #[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
            let (done, mut acc) = (0, 0u8);
            for (o, &v) in d[done..].iter_mut().zip(&s[done..]) {
                acc = acc.wrapping_add(v);
                *o = acc;
            }
        }
    }
    dst[body..].copy_from_slice(&src[body..]);
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn round_trip_with_a_tail() {
        let src: Vec<u8> = (0..103u32).map(|i| (i * i % 251) as u8).collect();
        let mut f = vec![0; src.len()];
        let mut back = vec![0; src.len()];
        for meta in [0u8, 1, 3, 4, 8, 200] {
            super::encode(meta, 4, &src, &mut f).unwrap();
            super::decode(meta, 4, &f, &mut back).unwrap();
            assert_eq!(back, src, "meta {meta}");
        }
    }

    /// The backward filter is each stream's running byte sum, for every stream length around
    /// the 16-byte vectors and every offset of the streams in the buffer.
    #[test]
    fn decode_is_the_running_sum() {
        let mut x = 0x1234_5678u32;
        let src: Vec<u8> = (0..700)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                x.to_le_bytes()[0]
            })
            .collect();
        for n in [1u8, 2, 3, 4, 7] {
            for len in (0..=140).chain([333, 699, 700]) {
                for off in 0..3 {
                    let s = &src[off..off + len.min(700 - off)];
                    let mut got = vec![0; s.len()];
                    super::decode(n, 4, s, &mut got).unwrap();
                    let slen = s.len() / usize::from(n);
                    let mut want = s.to_vec();
                    for stream in want[..slen * usize::from(n)].chunks_exact_mut(slen.max(1)) {
                        let mut acc = 0u8;
                        for b in stream {
                            acc = acc.wrapping_add(*b);
                            *b = acc;
                        }
                    }
                    assert_eq!(got, want, "streams {n}, len {len}, offset {off}");
                }
            }
        }
    }

    /// The unshuffle of the planes' running sums (`shuffle::unshuffle_planes` with
    /// `running_sum`) gives the bytes of the backward filter followed by the unshuffle, for every kernel type size, element counts around the vector widths,
    /// and planes at any offset.
    #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
    #[test]
    fn summed_unshuffle_is_decode_then_unshuffle() {
        let mut x = 0x2545_f491u32;
        let src: Vec<u8> = (0..16 * 400)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                x.to_le_bytes()[2]
            })
            .collect();
        for ts in [2usize, 4, 8, 16] {
            for n in (0..=70).chain([127, 128, 129, 200, 383]) {
                for off in [0usize, 3] {
                    let filtered = &src[off..off + n * ts];
                    let mut summed = vec![0; n * ts];
                    super::decode(0, ts, filtered, &mut summed).unwrap();
                    let mut want = vec![0; n * ts];
                    crate::filter::shuffle::unshuffle(ts, &summed, &mut want);
                    let planes: Vec<&[u8]> = filtered.chunks_exact(n.max(1)).take(ts).collect();
                    let planes = if n == 0 { vec![&[][..]; ts] } else { planes };
                    let mut got = vec![core::mem::MaybeUninit::new(0xAA); n * ts];
                    assert!(crate::filter::shuffle::unshuffle_planes(
                        &planes, &mut got, n, true
                    ));
                    // SAFETY: every element was initialized above.
                    #[allow(unsafe_code, reason = "reading back initialized bytes")]
                    let got: Vec<u8> = got.iter().map(|b| unsafe { b.assume_init() }).collect();
                    assert_eq!(got, want, "ts {ts} n {n} off {off}");
                }
            }
        }
        let mut d = vec![core::mem::MaybeUninit::new(0); 12];
        let three: [&[u8]; 3] = [&[0; 4], &[0; 4], &[0; 4]];
        assert!(!crate::filter::shuffle::unshuffle_planes(
            &three, &mut d, 4, true
        ));
    }
}
