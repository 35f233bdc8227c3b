#![allow(
    clippy::cast_possible_truncation,
    reason = "positions are < 2 GiB (blocks are < 512 MiB) and tokens are masked to 8 bits"
)]

//! BloscLZ, the FastLZ-derived default codec of C-Blosc (format of C-Blosc2's
//! `blosc/blosclz.c`, <https://github.com/Blosc/c-blosc2/blob/main/blosc/blosclz.c>, summarised
//! in `FORMAT.md`). The encoder is byte-compatible with BloscLZ 2.5.3 (C-Blosc2 3.3.5) and, as
//! [`Flavor::V2_5_1`], with BloscLZ 2.5.1 (C-Blosc 1.21): the two differ only in how the
//! entropy probe samples the input and in the shortest match they encode (see [`Flavor`]).
//!
//! Stream: tokens. A control byte `c < 32` is a literal run of `c + 1` bytes; `c >= 32` is a
//! match of length class `c >> 5` (7 = extended by 255-runs) with a 13-bit distance, or a
//! 16-bit big-endian "far" distance (+ 8191) when the near distance reads as 8191. The first
//! byte of every stream has bit 5 set and is masked with 31 by the decoder.

use core::mem::MaybeUninit;

const MAX_COPY: usize = 32;
const MAX_DISTANCE: usize = 8191;
const MAX_FARDISTANCE: usize = 65535 + MAX_DISTANCE - 1;
const HASHLOG: [u32; 10] = [12, 12, 13, 14, 14, 14, 14, 14, 14, 14];
/// Hash bits of BloscLZ 2.5.1's entropy probe (every clevel).
const PROBE_HASHLOG_2_5_1: u32 = 12;
/// Hash table entries for the largest `HASHLOG`.
const HTAB_SIZE: usize = 1 << 14;
const CRATIO: [f64; 10] = [0.0, 2.0, 1.5, 1.2, 1.2, 1.2, 1.2, 1.15, 1.1, 1.0];

/// Decompresses `input` into `output`; returns the number of bytes written, or `None` when the
/// stream is malformed (C returns 0 in all these cases).
///
/// The token loop reads and writes through raw pointers: it is the hot path of BloscLZ
/// decoding, and slice indexing put a bounds check on every token byte and every 16-byte copy
/// (C-Blosc 1.21 decoded the benchmark's `uint16` blocks in 20 % less time). Every access is
/// preceded by the check that keeps it in bounds, the same checks as C-Blosc's decoder; the
/// tests compare it with a slice-indexed twin on valid and corrupted streams.
#[allow(
    unsafe_code,
    reason = "the BloscLZ token loop; see the SAFETY comments"
)]
pub(crate) fn decompress(input: &[u8], output: &mut [u8]) -> Option<usize> {
    let ilen = input.len();
    let olen = output.len();
    // `output` is also written through slices on the rare careful paths, so its pointer is
    // taken afresh for each use (a slice access would invalidate an older one).
    let inp = input.as_ptr();
    let mut ip = 1usize;
    let mut op = 0usize;
    let mut ctrl = usize::from(*input.first()? & 31);
    // Invariants at the top of the loop: ip <= ilen, op <= olen.
    loop {
        if ctrl >= 32 {
            let mut len = (ctrl >> 5) - 1;
            let hi = ctrl & 31;
            if len == 6 {
                loop {
                    if ip + 1 >= ilen {
                        return None;
                    }
                    // SAFETY: ip + 1 < ilen.
                    let code = usize::from(unsafe { *inp.add(ip) });
                    ip += 1;
                    len += code;
                    if code != 255 {
                        break;
                    }
                }
            }
            if ip + 1 >= ilen {
                return None;
            }
            // SAFETY: ip + 1 < ilen.
            let lo = usize::from(unsafe { *inp.add(ip) });
            ip += 1;
            len += 3;
            let distance = if lo == 255 && hi == 31 {
                if ip + 1 >= ilen {
                    return None;
                }
                // SAFETY: ip + 1 < ilen.
                let far =
                    unsafe { (usize::from(*inp.add(ip)) << 8) | usize::from(*inp.add(ip + 1)) };
                ip += 2;
                far + MAX_DISTANCE + 1
            } else {
                (hi << 8) + lo + 1
            };
            // `olen - op` does not underflow (op <= olen); `len` may be huge, so no `op + len`.
            if len > olen - op || distance > op {
                return None;
            }
            if ip >= ilen {
                break;
            }
            // SAFETY: ip < ilen.
            let next = usize::from(unsafe { *inp.add(ip) });
            ip += 1;
            if len + 16 <= olen - op {
                // SAFETY: 1 <= distance <= op and op + len + 16 <= olen, which is what
                // `copy_match_wild` requires.
                unsafe { copy_match_wild(output.as_mut_ptr(), op, distance, len) };
            } else {
                copy_match(output, op, distance, len);
            }
            op += len;
            ctrl = next;
        } else {
            let run = ctrl + 1;
            if MAX_COPY <= olen - op && MAX_COPY <= ilen - ip {
                // A run is at most 32 bytes: copy a fixed 32 (the overrun is overwritten by
                // the following tokens).
                // SAFETY: ip + 32 <= ilen and op + 32 <= olen; `input` and `output` are
                // distinct slices (one shared, one exclusive), so they do not overlap.
                unsafe {
                    core::ptr::copy_nonoverlapping(
                        inp.add(ip),
                        output.as_mut_ptr().add(op),
                        MAX_COPY,
                    );
                };
            } else if run > olen - op || run > ilen - ip {
                return None;
            } else {
                output[op..op + run].copy_from_slice(&input[ip..ip + run]);
            }
            op += run;
            ip += run;
            if ip >= ilen {
                break;
            }
            // SAFETY: ip < ilen.
            ctrl = usize::from(unsafe { *inp.add(ip) });
            ip += 1;
        }
    }
    Some(op)
}

/// [`copy_match`] for a match followed by at least 16 bytes of output: copies in 16-byte
/// steps that may run past the match (the overrun is overwritten by the following tokens).
/// Every step reads bytes at least 16 behind the ones it writes, so it reads final bytes.
///
/// # Safety
///
/// `out` points to at least `op + len + 16` writable bytes, the first `op` of them
/// initialized, and `1 <= distance <= op`.
#[inline]
#[allow(unsafe_code, reason = "see the SAFETY comments")]
unsafe fn copy_match_wild(out: *mut u8, op: usize, distance: usize, len: usize) {
    use core::ptr::{copy_nonoverlapping, read_unaligned, write_bytes, write_unaligned};

    if distance >= 16 {
        let mut k = 0;
        while k < len {
            // SAFETY: reads [op + k - distance, +16), which ends at or before op + k (distance
            // >= 16), so it does not overlap the write [op + k, +16); k < len, so the write
            // ends before op + len + 16.
            unsafe { copy_nonoverlapping(out.add(op + k - distance), out.add(op + k), 16) };
            k += 16;
        }
    } else if distance == 1 {
        // SAFETY: op >= 1; the fill ends at op + len.
        unsafe { write_bytes(out.add(op), *out.add(op - 1), len) };
    } else {
        // A period below 16: a 16-byte register holding the period from its first byte,
        // stored every `stride` bytes (the largest multiple of the period up to 16, so every
        // store starts at the period's first byte; the tail of the last one is overwritten by
        // the following tokens). The register is built from one 16-byte load at the period's
        // start, [op - distance, op - distance + 16), which ends before op + 16 <= op + len +
        // 16; only its first `distance` bytes are kept, and repeated by one multiplication
        // ([`PERIOD`]; byte stores into a buffer and one wide load of it would stall store
        // forwarding).
        // SAFETY: as just said.
        let raw: [u8; 16] = unsafe { read_unaligned(out.add(op - distance).cast()) };
        let (mask, repeat, stride) = PERIOD[distance];
        let pat = (u128::from_le_bytes(raw) & mask)
            .wrapping_mul(repeat)
            .to_le_bytes();
        let mut k = 0;
        while k < len {
            // SAFETY: k < len, so the store ends before op + len + 16.
            unsafe { write_unaligned(out.add(op + k).cast::<[u8; 16]>(), pat) };
            k += stride;
        }
    }
}

/// For each period `d` below 16: the mask of its first `d` bytes, the factor that repeats them
/// over 16 bytes (ones every `8 d` bits: the copies do not overlap, so the product has no
/// carries; the part of the last copy beyond 16 bytes wraps away), and the stride of the pattern stores (the largest multiple of `d` up to 16).
/// Tables, because a division or a loop per match costs a sixth of the decoding time.
const PERIOD: [(u128, u128, usize); 16] = {
    let mut t = [(0, 0, 16); 16];
    let mut d = 1;
    while d < 16 {
        let mut repeat = 0u128;
        let mut at = 0;
        while at < 128 {
            repeat |= 1 << at;
            at += 8 * d;
        }
        t[d] = ((1 << (8 * d)) - 1, repeat, 16 - 16 % d);
        d += 1;
    }
    t
};

/// LZ77 copy of `len` bytes from `op - distance` to `op` (overlap allowed); bounds checked by
/// the caller.
#[inline]
fn copy_match(out: &mut [u8], op: usize, distance: usize, len: usize) {
    let from = op - distance;
    if distance >= len {
        out.copy_within(from..from + len, op);
    } else if distance == 1 {
        let b = out[from];
        out[op..op + len].fill(b);
    } else {
        // The copied region is periodic with period `distance`: double the step each time.
        let mut done = 0;
        let mut step = distance;
        while done < len {
            let n = step.min(len - done);
            let s = op + done - step;
            out.copy_within(s..s + n, op + done);
            done += n;
            step *= 2;
        }
    }
}

#[inline]
fn read_u32(b: &[u8], i: usize) -> u32 {
    u32::from_le_bytes(b[i..i + 4].try_into().unwrap_or([0; 4]))
}

#[inline]
fn hash(seq: u32, hashlog: u32) -> usize {
    // The mask is a no-op (hashlog <= 14); it lets the compiler drop the table bounds checks.
    (seq.wrapping_mul(2_654_435_761) >> (32 - hashlog)) as usize & (HTAB_SIZE - 1)
}

/// Reads 4 bytes of `b` at `i` (little-endian) without a bounds check.
///
/// # Safety
/// `i + 4 <= b.len()`.
#[allow(unsafe_code, reason = "hot-path load; callers check the bound")]
#[inline]
unsafe fn load32(b: &[u8], i: usize) -> u32 {
    debug_assert!(i + 4 <= b.len());
    // SAFETY: the caller guarantees `i + 4 <= b.len()`; the read is unaligned.
    u32::from_le(unsafe { b.as_ptr().add(i).cast::<u32>().read_unaligned() })
}

/// End of the match starting at `ip` against `r`: the position after the first mismatching
/// byte, or `bound` when everything up to `bound` matches.
///
/// # Safety
/// `r < ip` and `bound <= b.len()`.
#[allow(
    unsafe_code,
    reason = "hot-path loads; the loop bounds keep them in `b`"
)]
#[inline]
unsafe fn match_end(b: &[u8], mut ip: usize, mut r: usize, bound: usize) -> usize {
    debug_assert!(r < ip && bound <= b.len());
    let p = b.as_ptr();
    while ip + 8 < bound {
        // SAFETY: r < ip and ip + 8 < bound <= b.len(): both 8-byte reads are in `b`.
        let (x, y) = unsafe {
            (
                p.add(ip).cast::<u64>().read_unaligned(),
                p.add(r).cast::<u64>().read_unaligned(),
            )
        };
        if x != y {
            return ip + (u64::from_le(x ^ y).trailing_zeros() / 8) as usize + 1;
        }
        ip += 8;
        r += 8;
    }
    while ip < bound {
        // SAFETY: r < ip < bound <= b.len().
        let eq = unsafe { *p.add(r) == *p.add(ip) };
        ip += 1;
        r += 1;
        if !eq {
            return ip;
        }
    }
    ip
}

/// Which BloscLZ encoder to reproduce. Both write the same stream format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Flavor {
    /// BloscLZ 2.5.3 (C-Blosc2 3.3.5): the probe samples the last 1/8 (clevel 1), 1/4 (2–3),
    /// 1/2 (4–6) or all (7–9) of the stream with the clevel's hash size; matches are at least
    /// 4 bytes long (`ipshift` and `minlen` 4).
    V2_5_3,
    /// BloscLZ 2.5.1 (C-Blosc 1.21): the probe samples the last quarter of the stream at every
    /// clevel, with a 12-bit hash and 3-byte matches; the encoder then takes 3-byte matches
    /// (`ipshift` and `minlen` 3) unless the chunk splits its blocks (`split`) and the probed
    /// ratio is at least 4, when it takes 4-byte ones.
    V2_5_1 {
        /// Whether the chunk splits blocks into one stream per byte of the type (the
        /// header's "don't split" bit is clear).
        split: bool,
    },
}

/// Match-length parameters: matches end `ipshift` bytes before the first mismatch and must be
/// at least `minlen` long.
#[derive(Debug, Clone, Copy)]
struct MatchRule {
    ipshift: usize,
    minlen: usize,
}

const RULE_4: MatchRule = MatchRule {
    ipshift: 4,
    minlen: 4,
};
const RULE_3: MatchRule = MatchRule {
    ipshift: 3,
    minlen: 3,
};

/// The compressor's entropy probe: estimated compression ratio of `window`.
#[allow(unsafe_code, reason = "calls `match_end`; see the SAFETY comment")]
fn probe_cratio(window: &[u8], htab: &mut [u32; HTAB_SIZE], hashlog: u32, rule: MatchRule) -> f64 {
    let limit = window.len();
    htab[..1 << hashlog].fill(0);
    let ip_bound = limit.saturating_sub(1);
    let ip_limit = limit.saturating_sub(12);
    let mut ip = 0usize;
    let mut copy = 4usize;
    let mut oc: i64 = 5;
    while ip < ip_limit {
        let anchor = ip;
        let seq = read_u32(window, ip);
        let hv = hash(seq, hashlog);
        let r = htab[hv] as usize;
        // 1 <= distance < MAX_FARDISTANCE below, whatever the table holds: r < anchor.
        let distance = anchor.wrapping_sub(r);
        htab[hv] = anchor as u32;
        let literal = if distance == 0 || distance >= MAX_FARDISTANCE || read_u32(window, r) != seq
        {
            true
        } else {
            // SAFETY: r < anchor and ip_bound < window.len().
            let end = unsafe { match_end(window, anchor + 4, r + 4, ip_bound) };
            let len = (end - rule.ipshift).saturating_sub(anchor);
            if end - rule.ipshift < anchor + rule.minlen {
                true
            } else {
                if copy == 0 {
                    oc -= 1;
                }
                copy = 0;
                if len >= 7 {
                    oc += i64::try_from((len - 7) / 255).unwrap_or(0) + 1;
                }
                oc += if distance - 1 < MAX_DISTANCE { 2 } else { 4 };
                let p = end - rule.ipshift;
                let hv = hash(read_u32(window, p), hashlog);
                htab[hv] = p as u32;
                ip = p + 2;
                oc += 1;
                false
            }
        };
        if literal {
            oc += 1;
            ip = anchor + 1;
            copy += 1;
            if copy == MAX_COPY {
                copy = 0;
                oc += 1;
            }
        }
    }
    #[allow(
        clippy::cast_precision_loss,
        reason = "ratio estimate, as C computes it"
    )]
    let r = ip as f64 / oc as f64;
    r
}

/// Compresses `input` into `output` (capacity = `output.len()`; its bytes need not be
/// initialized), as BloscLZ `flavor` does at `clevel` (1–9). Returns the compressed size `n`
/// (`output[..n]` is then initialized), or 0 when the data should be stored raw (entropy probe
/// says it will not pay, input < 16 bytes, capacity < 66 bytes, or the output does not fit).
pub(crate) fn compress(
    flavor: Flavor,
    clevel: u8,
    input: &[u8],
    output: &mut [MaybeUninit<u8>],
    htab: &mut Vec<u32>,
) -> usize {
    let clevel = usize::from(clevel.clamp(1, 9));
    let length = input.len();
    let hashlog = HASHLOG[clevel];
    htab.resize(HTAB_SIZE, 0);
    let htab = &mut htab.as_chunks_mut::<HTAB_SIZE>().0[0];
    let (maxlen, probe_hashlog, probe_rule) = match flavor {
        Flavor::V2_5_3 => {
            let maxlen = match clevel {
                0..=1 => length / 8,
                2..=3 => length / 4,
                4..=6 => length / 2,
                _ => length,
            };
            (maxlen, hashlog, RULE_4)
        }
        Flavor::V2_5_1 { .. } => (length / 4, PROBE_HASHLOG_2_5_1, RULE_3),
    };
    let shift = length - maxlen;
    let limit = maxlen.min(1 << probe_hashlog);
    let cratio = probe_cratio(
        &input[shift..shift + limit],
        htab,
        probe_hashlog,
        probe_rule,
    );
    if cratio < CRATIO[clevel] {
        return 0;
    }
    let rule = match flavor {
        Flavor::V2_5_1 { split } if !split || cratio < 4.0 => RULE_3,
        _ => RULE_4,
    };
    // `encode` stores nothing for inputs under 16 bytes or outputs under 66 (C's limits).
    htab[..1 << hashlog].fill(0);
    encode(input, output, htab, hashlog, rule, clevel == 9)
}

/// The token loop of [`compress`] (`input` at least 16 bytes, `output` at least 66).
///
/// It reads the input and writes the output without bounds checks: it is the hot path of
/// BloscLZ encoding, and with slice indexing (a check on every load and store, the loop's
/// state spilled to the stack) it ran 4–5 % slower than C-Blosc 1.21's encoder on the
/// literal-heavy `uint8` writes of the zarrs benchmark. Each access follows the check that
/// keeps it in bounds, the checks C's encoder makes; the tests compare it with a
/// slice-indexed twin.
#[allow(
    unsafe_code,
    reason = "the BloscLZ token loop; see the SAFETY comments"
)]
fn encode(
    input: &[u8],
    output: &mut [MaybeUninit<u8>],
    htab: &mut [u32; HTAB_SIZE],
    hashlog: u32,
    rule: MatchRule,
    hash_next: bool,
) -> usize {
    let length = input.len();
    let maxout = output.len();
    if length < 16 || maxout < 66 {
        return 0;
    }
    let ip_bound = length - 1;
    let ip_limit = length - 12;
    // The first token: a literal run, rewritten when the run ends; bit 5 is set at the end.
    let mut lead = (MAX_COPY - 1) as u8;
    output[0].write(lead);
    for k in 0..4 {
        output[1 + k].write(input[k]);
    }
    let mut op = 5usize;
    let mut ip = 4usize;
    let mut copy = 4usize;
    while ip < ip_limit {
        let anchor = ip;
        // SAFETY: anchor < ip_limit = length - 12, so anchor + 4 <= length.
        let seq = unsafe { load32(input, anchor) };
        let hv = hash(seq, hashlog);
        let r = htab[hv] as usize;
        htab[hv] = anchor as u32;
        let distance = anchor.wrapping_sub(r);
        // 1 <= distance < MAX_FARDISTANCE, whatever the table holds: r < anchor.
        let candidate = distance.wrapping_sub(1) < MAX_FARDISTANCE - 1
            // SAFETY: r < anchor, so r + 4 <= length.
            && unsafe { load32(input, r) } == seq;
        let mut matched = None;
        if candidate {
            // SAFETY: r < anchor and anchor + 4 <= ip_bound < length.
            let end = unsafe { match_end(input, anchor + 4, r + 4, ip_bound) };
            let p = end - rule.ipshift;
            let d = distance - 1;
            if p >= anchor + rule.minlen && !(p - anchor <= 5 && d >= MAX_DISTANCE) {
                matched = Some((p - anchor, d, p));
            }
        }
        let Some((len, d, p)) = matched else {
            if op + 2 > maxout {
                return 0;
            }
            // SAFETY: op + 2 <= maxout (both stores fit) and anchor < length.
            unsafe {
                output
                    .get_unchecked_mut(op)
                    .write(*input.get_unchecked(anchor));
            }
            op += 1;
            ip = anchor + 1;
            copy += 1;
            if copy == MAX_COPY {
                copy = 0;
                // SAFETY: as above.
                unsafe {
                    output.get_unchecked_mut(op).write((MAX_COPY - 1) as u8);
                }
                op += 1;
            }
            continue;
        };
        if copy > 0 {
            // The run's token, written `copy + 1` bytes back.
            let at = op - copy - 1;
            let token = (copy - 1) as u8;
            output[at].write(token);
            if at == 0 {
                lead = token;
            }
        } else {
            op -= 1;
        }
        copy = 0;
        let extra = if len >= 7 { (len - 7) / 255 + 1 } else { 0 };
        let enc_len = if d < MAX_DISTANCE {
            2 + extra
        } else {
            4 + extra
        };
        if op + enc_len + 1 > maxout {
            return 0;
        }
        op = encode_match(output, op, len, d);
        // SAFETY: end <= ip_bound = length - 1 and ipshift >= 3, so p + 4 <= length.
        let seq = unsafe { load32(input, p) };
        htab[hash(seq, hashlog)] = p as u32;
        if hash_next {
            htab[hash(seq >> 8, hashlog)] = (p + 1) as u32;
        }
        ip = p + 2;
        output[op].write((MAX_COPY - 1) as u8);
        op += 1;
    }
    while ip <= ip_bound {
        if op + 2 > maxout {
            return 0;
        }
        output[op].write(input[ip]);
        op += 1;
        ip += 1;
        copy += 1;
        if copy == MAX_COPY {
            copy = 0;
            output[op].write((MAX_COPY - 1) as u8);
            op += 1;
        }
    }
    if copy > 0 {
        let at = op - copy - 1;
        let token = (copy - 1) as u8;
        output[at].write(token);
        if at == 0 {
            lead = token;
        }
    } else {
        op -= 1;
    }
    output[0].write(lead | 1 << 5);
    op
}

#[allow(
    clippy::cast_possible_truncation,
    reason = "values are masked to 8 bits"
)]
fn encode_match(out: &mut [MaybeUninit<u8>], mut op: usize, len: usize, d: usize) -> usize {
    let (hi, far) = if d < MAX_DISTANCE {
        ((d >> 8) as u8, None)
    } else {
        (31u8, Some(d - MAX_DISTANCE))
    };
    if len < 7 {
        out[op].write(((len as u8) << 5) + hi);
        op += 1;
    } else {
        out[op].write((7 << 5) + hi);
        op += 1;
        let mut rest = len - 7;
        while rest >= 255 {
            out[op].write(255);
            op += 1;
            rest -= 255;
        }
        out[op].write(rest as u8);
        op += 1;
    }
    match far {
        None => {
            out[op].write((d & 255) as u8);
            op += 1;
        }
        Some(f) => {
            out[op].write(255);
            out[op + 1].write((f >> 8) as u8);
            out[op + 2].write((f & 255) as u8);
            op += 3;
        }
    }
    op
}

#[cfg(test)]
#[allow(
    clippy::cast_possible_truncation,
    reason = "test patterns wrap on purpose"
)]
mod tests {
    use super::*;
    use crate::testutil::written;

    /// The decoder with slice indexing everywhere: the oracle for [`decompress`].
    /// Decompresses `input` into `output`; returns the number of bytes written, or `None` when the
    /// stream is malformed (C returns 0 in all these cases).
    fn decompress_checked(input: &[u8], output: &mut [u8]) -> Option<usize> {
        let ilen = input.len();
        let olen = output.len();
        let mut ip = 1usize;
        let mut op = 0usize;
        let mut ctrl = usize::from(*input.first()? & 31);
        loop {
            if ctrl >= 32 {
                let mut len = (ctrl >> 5) - 1;
                let hi = ctrl & 31;
                if len == 6 {
                    loop {
                        if ip + 1 >= ilen {
                            return None;
                        }
                        let code = usize::from(input[ip]);
                        ip += 1;
                        len += code;
                        if code != 255 {
                            break;
                        }
                    }
                }
                if ip + 1 >= ilen {
                    return None;
                }
                let lo = usize::from(input[ip]);
                ip += 1;
                len += 3;
                let distance = if lo == 255 && hi == 31 {
                    if ip + 1 >= ilen {
                        return None;
                    }
                    let far = (usize::from(input[ip]) << 8) | usize::from(input[ip + 1]);
                    ip += 2;
                    far + MAX_DISTANCE + 1
                } else {
                    (hi << 8) + lo + 1
                };
                if op + len > olen || distance > op {
                    return None;
                }
                let next = if ip < ilen {
                    let c = usize::from(input[ip]);
                    ip += 1;
                    Some(c)
                } else {
                    None
                };
                let Some(next) = next else { break };
                if op + len + 16 <= olen {
                    copy_match_wild_checked(output, op, distance, len);
                } else {
                    copy_match(output, op, distance, len);
                }
                op += len;
                ctrl = next;
            } else {
                let run = ctrl + 1;
                if op + MAX_COPY <= olen && ip + MAX_COPY <= ilen {
                    // A run is at most 32 bytes: copy a fixed 32 (the overrun is overwritten by
                    // the following tokens).
                    output[op..op + MAX_COPY].copy_from_slice(&input[ip..ip + MAX_COPY]);
                } else if op + run > olen || ip + run > ilen {
                    return None;
                } else {
                    output[op..op + run].copy_from_slice(&input[ip..ip + run]);
                }
                op += run;
                ip += run;
                if ip >= ilen {
                    break;
                }
                ctrl = usize::from(input[ip]);
                ip += 1;
            }
        }
        Some(op)
    }

    /// [`copy_match`] for a match followed by at least 16 bytes of `out`: copies in 16-byte steps
    /// that may run past the match (the overrun is overwritten by the following tokens). Every
    /// step reads bytes at least 16 behind the ones it writes, so it reads final bytes.
    fn copy_match_wild_checked(out: &mut [u8], op: usize, distance: usize, len: usize) {
        if distance >= 16 {
            let mut k = 0;
            while k < len {
                let from = op + k - distance;
                out.copy_within(from..from + 16, op + k);
                k += 16;
            }
        } else if distance == 1 {
            let b = out[op - 1];
            out[op..op + len].fill(b);
        } else if distance.is_power_of_two() {
            // Period 2, 4 or 8: store a 16-byte pattern register.
            let seed = &out[op - distance..op];
            let word = match *seed {
                [a, b] => u64::from(u16::from_le_bytes([a, b])) * 0x0001_0001_0001_0001,
                [a, b, c, d] => u64::from(u32::from_le_bytes([a, b, c, d])) * 0x0000_0001_0000_0001,
                _ => seed.iter().rev().fold(0, |w, &b| (w << 8) | u64::from(b)),
            };
            let pat = (u128::from(word) * ((1u128 << 64) | 1)).to_le_bytes();
            for c in out[op..op + len.next_multiple_of(16)].chunks_exact_mut(16) {
                c.copy_from_slice(&pat);
            }
        } else {
            // Any other period below 16: a 16-byte register holding the period from its first
            // byte, stored every `stride` bytes (the largest multiple of the period up to 16, so
            // every store starts at the period's first byte; the tail of the last one is
            // overwritten by the following tokens). The load reads 16 bytes from the period's
            // start, in bounds since 16 bytes follow `op`; only its first `distance` are kept.
            let mut pat = [0u8; 16];
            pat.copy_from_slice(&out[op - distance..op - distance + 16]);
            for i in distance..16 {
                pat[i] = pat[i - distance];
            }
            let stride = 16 - 16 % distance;
            let mut k = 0;
            while k < len {
                out[op + k..op + k + 16].copy_from_slice(&pat);
                k += stride;
            }
        }
    }

    /// The encoder with slice indexing everywhere: the oracle for [`encode`].
    fn encode_checked(
        input: &[u8],
        output: &mut [u8],
        htab: &mut [u32; HTAB_SIZE],
        hashlog: u32,
        rule: MatchRule,
        hash_next: bool,
    ) -> usize {
        let length = input.len();
        let maxout = output.len();
        if length < 16 || maxout < 66 {
            return 0;
        }
        let read = |i: usize| u32::from_le_bytes(input[i..i + 4].try_into().unwrap());
        let match_end = |mut ip: usize, mut r: usize, bound: usize| {
            while ip < bound {
                let eq = input[r] == input[ip];
                ip += 1;
                r += 1;
                if !eq {
                    return ip;
                }
            }
            ip
        };
        let ip_bound = length - 1;
        let ip_limit = length - 12;
        output[0] = (MAX_COPY - 1) as u8;
        output[1..5].copy_from_slice(&input[..4]);
        let mut op = 5;
        let mut ip = 4;
        let mut copy = 4;
        while ip < ip_limit {
            let anchor = ip;
            let seq = read(ip);
            let hv = hash(seq, hashlog);
            let r = htab[hv] as usize;
            let distance = anchor.wrapping_sub(r);
            htab[hv] = anchor as u32;
            let mut matched = None;
            if distance != 0 && distance < MAX_FARDISTANCE && read(r) == seq {
                let p = match_end(anchor + 4, r + 4, ip_bound) - rule.ipshift;
                let d = distance - 1;
                if p >= anchor + rule.minlen && !(p - anchor <= 5 && d >= MAX_DISTANCE) {
                    matched = Some((p - anchor, d, p));
                }
            }
            let Some((len, d, p)) = matched else {
                if op + 2 > maxout {
                    return 0;
                }
                output[op] = input[anchor];
                op += 1;
                ip = anchor + 1;
                copy += 1;
                if copy == MAX_COPY {
                    copy = 0;
                    output[op] = (MAX_COPY - 1) as u8;
                    op += 1;
                }
                continue;
            };
            if copy > 0 {
                output[op - copy - 1] = (copy - 1) as u8;
            } else {
                op -= 1;
            }
            copy = 0;
            let mut token = vec![MaybeUninit::uninit(); len / 255 + 8];
            let k = encode_match(&mut token, 0, len, d);
            if op + k + 1 > maxout {
                return 0;
            }
            for t in &token[..k] {
                // SAFETY: `encode_match` wrote the first `k` bytes.
                #[allow(unsafe_code, reason = "reading what was written")]
                let b = unsafe { t.assume_init() };
                output[op] = b;
                op += 1;
            }
            let seq = read(p);
            htab[hash(seq, hashlog)] = p as u32;
            if hash_next {
                htab[hash(seq >> 8, hashlog)] = (p + 1) as u32;
            }
            ip = p + 2;
            output[op] = (MAX_COPY - 1) as u8;
            op += 1;
        }
        while ip <= ip_bound {
            if op + 2 > maxout {
                return 0;
            }
            output[op] = input[ip];
            op += 1;
            ip += 1;
            copy += 1;
            if copy == MAX_COPY {
                copy = 0;
                output[op] = (MAX_COPY - 1) as u8;
                op += 1;
            }
        }
        if copy > 0 {
            output[op - copy - 1] = (copy - 1) as u8;
        } else {
            op -= 1;
        }
        output[0] |= 1 << 5;
        op
    }

    /// `compress` into uninitialized memory of `capacity` bytes: the stream, empty when the
    /// input is to be stored raw.
    fn compress_vec(
        flavor: Flavor,
        clevel: u8,
        src: &[u8],
        capacity: usize,
        htab: &mut Vec<u32>,
    ) -> Vec<u8> {
        let mut out = vec![MaybeUninit::uninit(); capacity];
        let n = compress(flavor, clevel, src, &mut out, htab);
        written(&out, n)
    }

    /// Test inputs: runs, short periods, copies from far back and noise, mixed.
    fn samples(sizes: &[usize], mut seed: u32) -> Vec<Vec<u8>> {
        let mut rnd = move || {
            seed ^= seed << 13;
            seed ^= seed >> 17;
            seed ^= seed << 5;
            seed
        };
        let mut samples: Vec<Vec<u8>> = Vec::new();
        for &n in sizes {
            let mut v = Vec::with_capacity(n);
            while v.len() < n {
                match rnd() % 5 {
                    0 => v.extend(std::iter::repeat_n(
                        (rnd() & 0xff) as u8,
                        (rnd() % 300) as usize,
                    )),
                    1 => {
                        let period = 1 + (rnd() % 17) as usize;
                        let pat: Vec<u8> = (0..period).map(|_| rnd() as u8).collect();
                        v.extend(pat.iter().cycle().take((rnd() % 500) as usize));
                    }
                    2 if v.len() > 70 => {
                        let d = 1 + (rnd() as usize % (v.len() - 1));
                        for _ in 0..(rnd() % 100) {
                            v.push(v[v.len() - d]);
                        }
                    }
                    _ => v.extend((0..(rnd() % 64)).map(|_| rnd() as u8)),
                }
            }
            v.truncate(n);
            samples.push(v);
        }
        samples
    }

    /// The unchecked encoder writes what the slice-indexed one writes, for every hash size,
    /// match rule and clevel-9 rehash, into outputs that fit, that run out at every stage
    /// and of the smallest size; and it stays in bounds (Miri checks every access) when the
    /// hash table holds positions it never wrote, as a reused table could.
    #[test]
    fn unchecked_encoder_agrees_with_the_checked_one() {
        let sizes: &[usize] = if cfg!(miri) {
            &[16, 17, 100, 700]
        } else {
            &[16, 17, 100, 700, 5000, 70_000, 300_000]
        };
        let mut htab_a = Box::new([0u32; HTAB_SIZE]);
        let mut htab_b = Box::new([0u32; HTAB_SIZE]);
        for (k, data) in samples(sizes, 0x7f4a_7c15).iter().enumerate() {
            let len = data.len();
            let mut caps = vec![len * 2 + 64, len + len / 32 + 8, len / 2, 66, 65];
            if !cfg!(miri) {
                caps.extend((1..8).map(|i| 66 + i * len / 8));
            }
            for hashlog in [12, 13, 14] {
                for rule in [RULE_3, RULE_4] {
                    for hash_next in [false, true] {
                        for &cap in &caps {
                            htab_a.fill(0);
                            htab_b.fill(0);
                            let mut a = vec![MaybeUninit::uninit(); cap];
                            let mut b = vec![0u8; cap];
                            let na = encode(data, &mut a, &mut htab_a, hashlog, rule, hash_next);
                            let nb =
                                encode_checked(data, &mut b, &mut htab_b, hashlog, rule, hash_next);
                            assert_eq!(na, nb, "sample {k}, hashlog {hashlog}, cap {cap}");
                            assert!(written(&a, na) == b[..nb], "sample {k}, cap {cap}");
                            assert!(htab_a == htab_b);
                        }
                    }
                }
            }
            // A table full of stale and out-of-range positions.
            let mut x = 0x9e37_79b9u32;
            for (i, e) in htab_a.iter_mut().enumerate() {
                x = x.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                *e = match i % 4 {
                    0 => x,
                    1 => u32::MAX,
                    2 => x % (len as u32 + 64),
                    _ => x % (len as u32).max(1),
                };
            }
            *htab_b = *htab_a;
            let mut a = vec![MaybeUninit::uninit(); len * 2 + 64];
            let mut b = vec![0u8; len * 2 + 64];
            let na = encode(data, &mut a, &mut htab_a, 14, RULE_3, true);
            let nb = encode_checked(data, &mut b, &mut htab_b, 14, RULE_3, true);
            assert_eq!(na, nb, "sample {k}, stale table");
            assert!(written(&a, na) == b[..nb]);
        }
    }

    #[test]
    fn roundtrip_various() {
        let mut htab = Vec::new();
        let mut data: Vec<u8> = Vec::new();
        for i in 0..20000u32 {
            data.push(((i / 7) % 251) as u8);
        }
        for flavor in [
            Flavor::V2_5_3,
            Flavor::V2_5_1 { split: true },
            Flavor::V2_5_1 { split: false },
        ] {
            for clevel in 1..=9 {
                for len in [16, 100, 1000, 20000] {
                    let src = &data[..len];
                    let out = compress_vec(flavor, clevel, src, len, &mut htab);
                    if !out.is_empty() {
                        let mut back = vec![0; len];
                        assert_eq!(decompress(&out, &mut back), Some(len));
                        assert_eq!(back, src);
                    }
                }
            }
        }
    }

    #[test]
    fn far_match_roundtrip() {
        let mut htab = Vec::new();
        let mut data: Vec<u8> = (0..30000u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect();
        let head: Vec<u8> = data[..200].to_vec();
        data.extend_from_slice(&head);
        for flavor in [Flavor::V2_5_3, Flavor::V2_5_1 { split: false }] {
            let out = compress_vec(flavor, 9, &data, data.len() * 2, &mut htab);
            if !out.is_empty() {
                let mut back = vec![0; data.len()];
                assert_eq!(decompress(&out, &mut back), Some(data.len()));
                assert_eq!(back, data);
            }
        }
    }

    /// Hand-made streams with matches of every distance 1..=40 and many lengths (wild and
    /// exact copy paths, periodic and non-overlapping), checked against byte-by-byte LZ77.
    /// The pointer decoder agrees with the slice-indexed one on valid streams (every clevel,
    /// both flavors, data with runs, periods and noise), on every truncation of them, on
    /// corrupted copies (bytes flipped) and on random bytes, into outputs of the exact size,
    /// shorter and longer.
    #[test]
    fn pointer_decoder_agrees_with_the_checked_one() {
        let mut seed = 0x2545_f491u32;
        let mut rnd = move || {
            seed ^= seed << 13;
            seed ^= seed >> 17;
            seed ^= seed << 5;
            seed
        };
        // Under Miri (which checks every pointer access of the decoder), fewer and shorter
        // streams.
        let (sizes, flips): (&[usize], usize) = if cfg!(miri) {
            (&[1, 7, 40, 300], 4)
        } else {
            (&[1, 7, 40, 300, 5000, 70_000], 40)
        };
        let samples = samples(sizes, 0x2545_f491);
        let mut htab = Vec::new();
        let check = |stream: &[u8], want: usize| {
            for olen in [want, want.saturating_sub(1), want + 17] {
                let mut a = vec![0xa5u8; olen];
                let mut b = vec![0xa5u8; olen];
                let (ra, rb) = (
                    decompress(stream, &mut a),
                    decompress_checked(stream, &mut b),
                );
                assert_eq!(ra, rb, "stream of {} bytes, output {olen}", stream.len());
                if let Some(n) = ra {
                    assert_eq!(a[..n], b[..n]);
                }
            }
        };
        for data in &samples {
            for flavor in [
                Flavor::V2_5_1 { split: false },
                Flavor::V2_5_1 { split: true },
                Flavor::V2_5_3,
            ] {
                for clevel in 1..=9 {
                    let comp = compress_vec(flavor, clevel, data, data.len() * 2 + 64, &mut htab);
                    let n = comp.len();
                    if n == 0 {
                        continue;
                    }
                    let stream = &comp[..];
                    check(stream, data.len());
                    for cut in (1..n).step_by(1 + n / 40) {
                        check(&stream[..cut], data.len());
                    }
                    for _ in 0..flips {
                        let mut bad = stream.to_vec();
                        let at = rnd() as usize % n;
                        bad[at] ^= 1 << (rnd() % 8);
                        check(&bad, data.len());
                    }
                }
            }
        }
        for len in [1usize, 2, 3, 10, 100, 1000, 10_000] {
            for _ in 0..flips {
                let noise: Vec<u8> = (0..len).map(|_| rnd() as u8).collect();
                check(&noise, len * 4);
            }
        }
    }

    #[test]
    fn decodes_every_match_distance_and_length() {
        let mut seed = 0x9e37_79b9u32;
        let mut byte = || {
            seed = seed.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            (seed >> 24) as u8
        };
        for distance in 1..=40usize {
            let mut stream = Vec::new();
            let mut expected = Vec::new();
            for first in [31 | 32, 31] {
                stream.push(first);
                for _ in 0..32 {
                    let b = byte();
                    stream.push(b);
                    expected.push(b);
                }
            }
            for l in [1usize, 2, 5, 6, 7, 13, 14, 30, 31, 32, 33, 100, 300] {
                let mut tok = [MaybeUninit::uninit(); 8];
                let n = encode_match(&mut tok, 0, l, distance - 1);
                stream.extend_from_slice(&written(&tok, n));
                for _ in 0..l + 2 {
                    expected.push(expected[expected.len() - distance]);
                }
                let b = byte();
                stream.extend_from_slice(&[0, b]);
                expected.push(b);
            }
            let mut out = vec![0u8; expected.len()];
            assert_eq!(
                decompress(&stream, &mut out),
                Some(expected.len()),
                "d {distance}"
            );
            assert_eq!(out, expected, "distance {distance}");
        }
    }
}
