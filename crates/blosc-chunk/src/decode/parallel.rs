//! Block-parallel decoding of regular chunks on the thread pools of [`crate::pool`].

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};

use super::blocks::{Blocks, decode_block};
use crate::codecs::with_decode_scratch;
use crate::error::{Error, Result};
use crate::pool::on_threads;

/// A block waiting to be decoded: its index and output; taken by the thread that decodes it.
type Slot<'a> = Mutex<Option<(usize, &'a mut [u8])>>;

/// Decodes all blocks in parallel: every thread takes the next undecoded block until none is
/// left. With the delta filter, block 0 is decoded first because every other block refers to
/// it.
pub(super) fn decode_blocks(b: &Blocks<'_>, out: &mut [u8], nthreads: usize) -> Result<()> {
    let bs = b.blocksize;
    let (first, rest) = out.split_at_mut(bs.min(out.len()));
    let mut slots: Vec<Slot<'_>> = Vec::with_capacity(b.nblocks);
    let dref: Option<&[u8]> = if b.has_delta() {
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
