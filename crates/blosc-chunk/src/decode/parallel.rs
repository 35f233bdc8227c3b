//! Block-parallel decoding of regular chunks, and the parallel copy of memcpyed ones, on the
//! thread pools of [`crate::pool`].

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};

use super::blocks::{Blocks, decode_block};
use super::output::Output;
use crate::codec::with_decode_scratch;
use crate::error::{Error, Result};
use crate::pool::on_threads;

/// A piece of output waiting to be written: its index and bytes; taken by the thread that
/// writes it.
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
    each_slot(&slots, nthreads, &|j, blk| {
        with_decode_scratch(|s| decode_block(b, j, blk, dref, s)).map(|_| ())
    })
}

/// Copies `src` (as long as `out`) into `out` in pieces of `piece` bytes on `nthreads`
/// threads, as C-Blosc copies a memcpyed chunk block by block on its threads.
/// On success every byte of `out` has been written.
pub(super) fn copy(src: &[u8], out: &mut Output<'_>, piece: usize, nthreads: usize) -> Result<()> {
    let slots: Vec<Slot<'_>> = out
        .pieces(piece)
        .enumerate()
        .map(|p| Mutex::new(Some(p)))
        .collect();
    each_slot(&slots, nthreads, &|k, to| {
        let from = k * piece;
        let bytes = src.get(from..from + to.len()).ok_or(Error::InvalidHeader {
            what: "nbytes of a memcpyed chunk",
            value: i64::try_from(src.len()).unwrap_or(i64::MAX),
        })?;
        to.copy_from(bytes);
        Ok(())
    })
}

/// Runs `write` on every slot's piece, on `nthreads` threads: each thread takes the next
/// untaken slot until none is left; the first error stops the others and is returned.
fn each_slot<'o>(
    slots: &[Slot<'o>],
    nthreads: usize,
    write: &(dyn Fn(usize, Output<'o>) -> Result<()> + Sync),
) -> Result<()> {
    let next = AtomicUsize::new(0);
    let failed: Mutex<Option<Error>> = Mutex::new(None);
    let work = || {
        loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            let Some(slot) = slots.get(i) else { break };
            let taken = slot.lock().unwrap_or_else(PoisonError::into_inner).take();
            let Some((j, piece)) = taken else { continue };
            if let Err(e) = write(j, piece) {
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
