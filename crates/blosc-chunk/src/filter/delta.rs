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

/// Decodes block 0 in place: `buf[i] ^= buf[i - u]` for every byte of the word-aligned body,
/// a prefix XOR with stride `u`, computed eight bytes at a time (a byte-serial loop is bound to
/// one byte per cycle by its dependency chain).
pub(crate) fn decode_first(ts: usize, buf: &mut [u8]) {
    let u = word_width(ts);
    let body = buf.len() / u * u;
    let Some(head) = buf.get_mut(..body) else {
        return;
    };
    // Within a little-endian u64, byte j must become the XOR of bytes j, j - u, j - 2u, …: a
    // log-step prefix over lanes of `u` bytes; then every lane XORs the last lane of the
    // previous (already decoded) word, broadcast.
    let (broadcast, lane_shift) = match u {
        1 => (0x0101_0101_0101_0101_u64, 56),
        2 => (0x0001_0001_0001_0001, 48),
        4 => (0x0000_0001_0000_0001, 32),
        _ => (1, 0),
    };
    let mut carry = 0u64;
    let mut words = head.chunks_exact_mut(8);
    for w8 in &mut words {
        let mut w = u64::from_le_bytes(<[u8; 8]>::try_from(&*w8).unwrap_or_default());
        let mut shift = 8 * u;
        while shift < 64 {
            w ^= w << shift;
            shift *= 2;
        }
        w ^= (carry >> lane_shift).wrapping_mul(broadcast);
        w8.copy_from_slice(&w.to_le_bytes());
        carry = w;
    }
    let done = body - words.into_remainder().len();
    for i in done.max(u)..body {
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
    fn word_parallel_decode_first_equals_the_byte_loop() {
        for ts in [1, 2, 3, 4, 8, 12, 16, 24] {
            for len in [0u32, 1, 5, 7, 8, 9, 15, 16, 17, 63, 64, 100, 1000] {
                let src: Vec<u8> = (0..len)
                    .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
                    .collect();
                let mut fast = src.clone();
                decode_first(ts, &mut fast);
                let mut slow = src.clone();
                let u = word_width(ts);
                let body = slow.len() / u * u;
                for i in u..body {
                    slow[i] ^= slow[i - u];
                }
                assert_eq!(fast, slow, "ts {ts} len {len}");
            }
        }
    }

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
