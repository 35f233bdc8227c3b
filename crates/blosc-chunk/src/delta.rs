//! Delta filter: XOR against block 0, word-wise.
//!
//! The word width is the type size for 1, 2, 4 and 8, else 8 when the type size is a multiple
//! of 8, else 1. Block 0 XORs each word with the previous word of the same block; every other
//! block XORs each word with the same word of block 0 (the unfiltered source when encoding, the
//! decoded output when decoding). Trailing bytes that do not fill a word are copied unchanged.

fn word_width(ts: usize) -> usize {
    match ts {
        1 | 2 | 4 | 8 => ts,
        _ if ts.is_multiple_of(8) => 8,
        _ => 1,
    }
}

/// Encodes `src` (a block starting at chunk offset `offset`) into `dst`; `dref` is the
/// unfiltered first block of the chunk (ignored for block 0).
pub(crate) fn encode(ts: usize, offset: usize, dref: &[u8], src: &[u8], dst: &mut [u8]) {
    let len = src.len().min(dst.len());
    let u = word_width(ts);
    let body = len / u * u;
    if offset == 0 {
        dst[..u.min(body)].copy_from_slice(&src[..u.min(body)]);
        for i in u..body {
            dst[i] = src[i] ^ src[i - u];
        }
    } else {
        let body = body.min(dref.len() / u * u);
        for ((d, &s), &r) in dst[..body].iter_mut().zip(&src[..body]).zip(&dref[..body]) {
            *d = s ^ r;
        }
        dst[body..len / u * u].copy_from_slice(&src[body..len / u * u]);
    }
    dst[len / u * u..len].copy_from_slice(&src[len / u * u..len]);
}

/// Decodes block 0 in place.
pub(crate) fn decode_first(ts: usize, buf: &mut [u8]) {
    let u = word_width(ts);
    let body = buf.len() / u * u;
    for i in u..body {
        buf[i] ^= buf[i - u];
    }
}

/// Decodes a later block in place against the decoded block 0 `dref`.
pub(crate) fn decode_other(ts: usize, dref: &[u8], buf: &mut [u8]) {
    let u = word_width(ts);
    let body = (buf.len() / u * u).min(dref.len() / u * u);
    for (b, &r) in buf[..body].iter_mut().zip(&dref[..body]) {
        *b ^= r;
    }
}

#[cfg(test)]
#[allow(
    clippy::cast_possible_truncation,
    reason = "test patterns wrap on purpose"
)]
mod tests {
    use super::*;

    #[test]
    fn roundtrip() {
        for ts in [1, 2, 3, 4, 8, 12, 16] {
            let b0: Vec<u8> = (0..100u32).map(|i| (i * 13) as u8).collect();
            let b1: Vec<u8> = (0..96u32).map(|i| (i * 7 + 3) as u8).collect();
            let mut e0 = vec![0; 100];
            let mut e1 = vec![0; 96];
            encode(ts, 0, &b0, &b0, &mut e0);
            encode(ts, 100, &b0, &b1, &mut e1);
            decode_first(ts, &mut e0);
            assert_eq!(e0, b0);
            decode_other(ts, &e0, &mut e1);
            assert_eq!(e1, b1);
        }
    }
}
