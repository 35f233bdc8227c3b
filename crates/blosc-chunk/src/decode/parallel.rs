//! Block-parallel decoding of regular chunks on the thread pools of [`crate::pool`].

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};

use super::blocks::{Blocks, decode_block};
use super::output::Output;
use crate::codecs::with_decode_scratch;
use crate::error::{Error, Result};
use crate::pool::on_threads;

/// A block waiting to be decoded: its index and output; taken by the thread that decodes it.
type Slot<'a> = Mutex<Option<(usize, Output<'a>)>>;

/// Decodes all blocks in parallel: every thread takes the next undecoded block until none is
/// left. With the delta filter, block 0 is decoded first because every other block refers to
/// it.
/// On success every piece of `out` has been written by [`decode_block`].
pub(super) fn decode_blocks(b: &Blocks<'_>, out: &mut Output<'_>, nthreads: usize) -> Result<()> {
    let mut pieces = out.pieces(b.blocksize);
    let Some(first) = pieces.next() else {
        return Ok(());
    };
    let mut slots: Vec<Slot<'_>> = Vec::with_capacity(b.nblocks);
    let dref: Option<&[u8]> = if b.has_delta() {
        Some(&*with_decode_scratch(|s| {
            decode_block(b, 0, first, None, s)
        })?)
    } else {
        slots.push(Mutex::new(Some((0, first))));
        None
    };
    for (k, blk) in pieces.enumerate() {
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
