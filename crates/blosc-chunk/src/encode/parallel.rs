//! Block-parallel encoding on the thread pools of [`crate::pool`], byte-identical to the serial
//! encoder.

use rayon::prelude::*;

use super::block::{BlockResult, FilterBufs, encode_block, forward, is_run, with_encode_state};
use super::plan::Plan;
use crate::codecs::{self, EncodeScratch};
use crate::error::Result;
use crate::pool::with_pool;

enum StreamKind {
    Run(u8),
    Raw,
    Coded(usize),
}

/// One block encoded as if the chunk budget were unlimited.
struct EncodedBlock {
    bytes: Vec<u8>,
    streams: Vec<StreamKind>,
}

fn encode_unbounded(
    p: &Plan,
    data: &[u8],
    j: usize,
    bufs: &mut FilterBufs,
    scratch: &mut EncodeScratch,
) -> Result<EncodedBlock> {
    let filtered = forward(p, data, j, bufs)?;
    let bsize = filtered.len();
    let nstreams = p.nstreams(bsize);
    let neblock = bsize / nstreams;
    let mut bytes = Vec::with_capacity(bsize + 5 * nstreams);
    let mut streams = Vec::with_capacity(nstreams);
    let mut buf = core::mem::take(&mut scratch.stream);
    if buf.len() < neblock {
        buf.resize(neblock, 0);
    }
    for stream in filtered.chunks_exact(neblock).take(nstreams) {
        if p.extended && is_run(stream) {
            let v = stream[0];
            bytes.extend_from_slice(&(-i32::from(v)).to_le_bytes());
            if v != 0 {
                bytes.push(1);
            }
            streams.push(StreamKind::Run(v));
            continue;
        }
        let c = codecs::compress_stream(p.codec, p.clevel, stream, &mut buf[..neblock], scratch);
        let (kind, payload) = if c == 0 || c >= neblock {
            (StreamKind::Raw, stream)
        } else {
            (StreamKind::Coded(c), &buf[..c])
        };
        let cs = i32::try_from(payload.len()).unwrap_or(i32::MAX);
        bytes.extend_from_slice(&cs.to_le_bytes());
        bytes.extend_from_slice(payload);
        streams.push(kind);
    }
    scratch.stream = buf;
    Ok(EncodedBlock { bytes, streams })
}
/// Whether the block fits at `ntbytes` with exactly the decisions the serial encoder would
/// make (no stream hits the chunk budget). Returns the new `ntbytes` if so.
fn fits_unconstrained(
    p: &Plan,
    blk: &EncodedBlock,
    bsize: usize,
    mut ntbytes: usize,
) -> Option<usize> {
    let neblock = bsize / p.nstreams(bsize);
    for s in &blk.streams {
        ntbytes += 4;
        match *s {
            StreamKind::Run(v) => {
                if ntbytes > p.destsize {
                    return None;
                }
                if v != 0 {
                    ntbytes += 1;
                }
            }
            StreamKind::Raw | StreamKind::Coded(_) => {
                if ntbytes + neblock > p.destsize {
                    return None;
                }
                ntbytes += match *s {
                    StreamKind::Coded(c) => c,
                    _ => neblock,
                };
            }
        }
    }
    Some(ntbytes)
}

/// Encodes all blocks in parallel, then lays them out with the serial budget rules, so the
/// result equals the single-threaded output: the offsets of the blocks that fit are a prefix
/// sum of their sizes, and the blocks are copied to them in parallel (into a zeroed buffer of
/// the exact size, whose pages the copying threads touch first). Returns `None` when the chunk
/// must be memcpyed.
pub(super) fn encode_blocks(
    p: &Plan,
    data: &[u8],
    nthreads: usize,
) -> Result<Option<(Vec<u8>, usize)>> {
    let blocks: Vec<EncodedBlock> = with_pool(nthreads, || {
        (0..p.nblocks)
            .into_par_iter()
            .map(|j| {
                with_encode_state(|st| encode_unbounded(p, data, j, &mut st.bufs, &mut st.codec))
            })
            .collect::<Result<Vec<_>>>()
    })??;
    let head = p.header_len + 4 * p.nblocks;
    let mut starts = Vec::with_capacity(p.nblocks);
    let mut ntbytes = head;
    let mut serial_from = None;
    for (j, blk) in blocks.iter().enumerate() {
        let Some(next) = fits_unconstrained(p, blk, p.bsize(j), ntbytes) else {
            serial_from = Some(j);
            break;
        };
        debug_assert_eq!(next, ntbytes + blk.bytes.len());
        starts.push(ntbytes);
        ntbytes = next;
    }
    let mut out = vec![0u8; ntbytes];
    for (j, &start) in starts.iter().enumerate() {
        p.write_bstart_at(&mut out, j, start);
    }
    let fitted = &blocks[..starts.len()];
    let mut dsts = Vec::with_capacity(fitted.len());
    let mut rest = &mut out[head..];
    for blk in fitted {
        let (dst, tail) = rest.split_at_mut(blk.bytes.len());
        dsts.push(dst);
        rest = tail;
    }
    with_pool(nthreads, || {
        dsts.into_par_iter()
            .zip(fitted.par_iter())
            .for_each(|(dst, blk)| dst.copy_from_slice(&blk.bytes));
    })?;
    if let Some(start) = serial_from {
        out.reserve((p.destsize + 8).saturating_sub(ntbytes));
        // Near the budget: redo the remaining blocks exactly as the serial encoder does.
        let done = with_encode_state(|st| -> Result<bool> {
            for j in start..p.nblocks {
                p.write_bstart(&mut out, j);
                let filtered = forward(p, data, j, &mut st.bufs)?;
                if let BlockResult::GiveUp = encode_block(p, filtered, &mut out, &mut st.codec) {
                    return Ok(false);
                }
            }
            Ok(true)
        })?;
        if !done {
            return Ok(None);
        }
    }
    let ntbytes = out.len();
    Ok(Some((out, ntbytes)))
}
