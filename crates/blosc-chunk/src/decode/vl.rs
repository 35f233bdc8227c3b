//! Variable-length-block chunks (format version 6): each block is one stream preceded by its
//! uncompressed size.

use super::blocks::Blocks;
use crate::codec::{self, DecodeScratch};
use crate::error::{Error, Result};
use crate::filter::bitshuffle;
use crate::filter::delta;
use crate::filter::shuffle;
use crate::header::{Filter, read_i32};

/// Decodes a VL-block chunk into `out`.
pub(super) fn decode_vl_blocks(b: &Blocks<'_>, out: &mut [u8]) -> Result<()> {
    let hl = b.h.header_len();
    let mut scratch = DecodeScratch::default();
    let mut pos = 0usize;
    let mut dref: Vec<u8> = Vec::new();
    for j in 0..b.nblocks {
        let start = b.bstart(j)?;
        let end = if j + 1 < b.nblocks {
            b.bstart(j + 1)?
        } else {
            b.src.len()
        };
        let usize_field = read_i32(b.src, start)
            .ok_or_else(|| Error::truncated("vl block size", start, 4, b.src.len()))?;
        let usz =
            usize::try_from(usize_field).map_err(|_| Error::corrupt("vl block size", j, start))?;
        let payload = b
            .src
            .get(start + 4..end)
            .ok_or_else(|| Error::corrupt("vl block bounds", j, hl + 4 * j))?;
        let dst = pos
            .checked_add(usz)
            .and_then(|e| out.get_mut(pos..e))
            .ok_or_else(|| Error::corrupt("vl block size", j, start))?;
        let moves = b.pipeline.iter().any(|(f, _)| *f != Filter::Delta);
        if moves {
            let mut tmp = vec![0u8; usz];
            if !codec::decompress_stream(b.format, payload, &mut tmp, b.dict.as_ref(), &mut scratch)
            {
                return Err(Error::corrupt("codec data", j, start + 4));
            }
            apply_backward_simple(b, &tmp, dst, if j == 0 { None } else { Some(&dref) });
        } else {
            if !codec::decompress_stream(b.format, payload, dst, b.dict.as_ref(), &mut scratch) {
                return Err(Error::corrupt("codec data", j, start + 4));
            }
            if b.has_delta() {
                match j {
                    0 => delta::decode_first(b.h.typesize(), dst),
                    _ => delta::decode_other(b.h.typesize(), &dref, dst),
                }
            }
        }
        if j == 0 && b.has_delta() {
            dref = dst.to_vec();
        }
        pos += usz;
    }
    if pos != out.len() {
        return Err(Error::corrupt(
            "vl block sizes do not add up to nbytes",
            b.nblocks,
            hl,
        ));
    }
    Ok(())
}

/// Backward pipeline for VL blocks (rare path: allocates).
fn apply_backward_simple(b: &Blocks<'_>, src: &[u8], dst: &mut [u8], dref: Option<&[u8]>) {
    let ts = b.h.typesize();
    let mut cur = src.to_vec();
    for &(f, meta) in &b.pipeline {
        match f {
            Filter::Shuffle => {
                let mut next = vec![0; cur.len()];
                shuffle::unshuffle(shuffle::group(ts, meta), &cur, &mut next);
                cur = next;
            }
            Filter::BitShuffle => {
                let mut next = vec![0; cur.len()];
                bitshuffle::bitunshuffle(ts, &cur, &mut next, &mut Vec::new());
                cur = next;
            }
            Filter::Delta => match dref {
                None => delta::decode_first(ts, &mut cur),
                Some(r) => delta::decode_other(ts, r, &mut cur),
            },
            _ => {}
        }
    }
    dst.copy_from_slice(&cur);
}
