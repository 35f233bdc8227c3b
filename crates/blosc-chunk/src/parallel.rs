//! Block-parallel decoding and encoding on rayon thread pools (feature `parallel`).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use rayon::prelude::*;

use crate::codecs::with_decode_scratch;
use crate::decode::{Blocks, decode_block};
use crate::error::{Error, Result};

/// Whether `nthreads` asks for parallel work and there is more than one block.
pub(crate) fn use_threads(nthreads: usize, nblocks: usize) -> bool {
    nthreads != 1 && nblocks > 1
}

static POOLS: Mutex<Vec<(usize, Arc<rayon::ThreadPool>)>> = Mutex::new(Vec::new());

/// The cached pool with `nthreads` threads (`None` = rayon's global pool for 0). Pools are
/// built once per thread count.
fn pool(nthreads: usize) -> Result<Option<Arc<rayon::ThreadPool>>> {
    if nthreads == 0 {
        return Ok(None);
    }
    let mut pools = POOLS.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some((_, p)) = pools.iter().find(|(n, _)| *n == nthreads) {
        return Ok(Some(Arc::clone(p)));
    }
    let p = rayon::ThreadPoolBuilder::new()
        .num_threads(nthreads)
        .build()
        .map_err(|e| Error::Codec {
            codec: "thread pool",
            why: e.to_string(),
        })?;
    let p = Arc::new(p);
    pools.push((nthreads, Arc::clone(&p)));
    Ok(Some(p))
}

/// Runs `f` on the pool with `nthreads` threads (0 = rayon's global pool).
pub(crate) fn with_pool<R: Send>(nthreads: usize, f: impl FnOnce() -> R + Send) -> Result<R> {
    Ok(match pool(nthreads)? {
        Some(p) => p.install(f),
        None => f(),
    })
}

/// Runs `work` on the calling thread and on `nthreads - 1` threads of the pool at once (the
/// caller works too, so no hand-off is needed before the first block starts).
fn on_threads<'a>(nthreads: usize, work: &'a (dyn Fn() + Sync)) -> Result<()> {
    let helpers = if nthreads == 0 {
        rayon::current_num_threads()
    } else {
        nthreads
    }
    .saturating_sub(1);
    let pool = pool(nthreads)?;
    let run = |s: &rayon::Scope<'a>| {
        for _ in 0..helpers {
            s.spawn(|_| work());
        }
        work();
    };
    match pool {
        Some(p) => p.in_place_scope(run),
        None => rayon::in_place_scope(run),
    }
    Ok(())
}

/// A block waiting to be decoded: its index and output; taken by the thread that decodes it.
type Slot<'a> = Mutex<Option<(usize, &'a mut [u8])>>;

/// Decodes all blocks in parallel: every thread takes the next undecoded block until none is
/// left. With the delta filter, block 0 is decoded first because every other block refers to
/// it.
pub(crate) fn decode_blocks(b: &Blocks<'_>, out: &mut [u8], nthreads: usize) -> Result<()> {
    let bs = b.blocksize;
    let has_delta = b
        .pipeline
        .iter()
        .any(|(f, _)| *f == crate::header::Filter::Delta);
    let (first, rest) = out.split_at_mut(bs.min(out.len()));
    let mut slots: Vec<Slot<'_>> = Vec::with_capacity(b.nblocks);
    let dref: Option<&[u8]> = if has_delta {
        with_decode_scratch(|s| decode_block(b, 0, first, None, s))?;
        Some(first)
    } else {
        slots.push(Mutex::new(Some((0, first))));
        None
    };
    for (k, blk) in rest.chunks_mut(bs).enumerate() {
        slots.push(Mutex::new(Some((k + 1, blk))));
    }
    let next = AtomicUsize::new(0);
    let failed: Mutex<Option<Error>> = Mutex::new(None);
    let work = || {
        loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            let Some(slot) = slots.get(i) else { break };
            let taken = slot.lock().unwrap_or_else(PoisonError::into_inner).take();
            let Some((j, blk)) = taken else { continue };
            if let Err(e) = with_decode_scratch(|s| decode_block(b, j, blk, dref, s)) {
                *failed.lock().unwrap_or_else(PoisonError::into_inner) = Some(e);
                next.store(usize::MAX / 2, Ordering::Relaxed);
                break;
            }
        }
    };
    on_threads(nthreads, &work)?;
    match failed.into_inner().unwrap_or_else(PoisonError::into_inner) {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

use crate::codecs::{self, EncodeScratch};
use crate::encode::{
    BlockResult, FilterBufs, Plan, encode_block, forward, is_run, with_encode_state,
};

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
/// result equals the single-threaded output. Returns `None` when the chunk must be memcpyed.
pub(crate) fn encode_blocks(
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
    let mut out = p.output_start();
    let mut serial_from = None;
    for (j, blk) in blocks.iter().enumerate() {
        let ntbytes = out.len();
        let Some(next) = fits_unconstrained(p, blk, p.bsize(j), ntbytes) else {
            serial_from = Some(j);
            break;
        };
        debug_assert_eq!(next, ntbytes + blk.bytes.len());
        let pos = p.header_len + 4 * j;
        out[pos..pos + 4]
            .copy_from_slice(&i32::try_from(ntbytes).unwrap_or(i32::MAX).to_le_bytes());
        out.extend_from_slice(&blk.bytes);
    }
    if let Some(start) = serial_from {
        // Near the budget: redo the remaining blocks exactly as the serial encoder does.
        let done = with_encode_state(|st| -> Result<bool> {
            for j in start..p.nblocks {
                let pos = p.header_len + 4 * j;
                let ntbytes = out.len();
                out[pos..pos + 4]
                    .copy_from_slice(&i32::try_from(ntbytes).unwrap_or(i32::MAX).to_le_bytes());
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
