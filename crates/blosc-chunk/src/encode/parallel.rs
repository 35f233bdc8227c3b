//! Block-parallel encoding on the thread pools of [`crate::pool`], byte-identical to the serial
//! encoder.

use core::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};

use super::block::{BlockResult, FilterBufs, encode_block, forward, is_run, with_encode_state};
use super::plan::Plan;
use crate::codec::{self, EncodeScratch};
use crate::error::{Error, Result};
use crate::pool::on_threads;

enum StreamKind {
    Run(u8),
    Raw,
    Coded(usize),
}

/// One block encoded as if the chunk budget were unlimited: `bytes` (the buffer is reused from
/// block to block; streams are compressed straight into its spare capacity).
#[derive(Default)]
struct EncodedBlock {
    bytes: Vec<u8>,
    streams: Vec<StreamKind>,
}

/// Encodes block `j` into `blk`, compressing every stream straight into its place.
fn encode_unbounded(
    p: &Plan,
    data: &[u8],
    j: usize,
    bufs: &mut FilterBufs,
    scratch: &mut EncodeScratch,
    blk: &mut EncodedBlock,
) -> Result<()> {
    let filtered = forward(p, data, j, bufs)?;
    let bsize = filtered.len();
    let nstreams = p.nstreams(bsize);
    let neblock = bsize / nstreams;
    blk.bytes.clear();
    // At most 4 + max(neblock, 1) bytes per stream.
    blk.bytes.reserve(bsize + 5 * nstreams);
    blk.streams.clear();
    let bytes = &mut blk.bytes;
    for stream in filtered.chunks_exact(neblock).take(nstreams) {
        if p.extended && is_run(stream) {
            let v = stream[0];
            bytes.extend_from_slice(&(-i32::from(v)).to_le_bytes());
            if v != 0 {
                bytes.push(1);
            }
            blk.streams.push(StreamKind::Run(v));
            continue;
        }
        let pos = bytes.len();
        bytes.extend_from_slice(&[0; 4]);
        let c = codec::append_stream(
            p.codec, p.blosclz, p.clevel, stream, bytes, neblock, scratch,
        );
        let (kind, n) = if c == 0 || c >= neblock {
            bytes.truncate(pos + 4);
            bytes.extend_from_slice(stream);
            (StreamKind::Raw, neblock)
        } else {
            (StreamKind::Coded(c), c)
        };
        let cs = i32::try_from(n).unwrap_or(i32::MAX);
        bytes[pos..pos + 4].copy_from_slice(&cs.to_le_bytes());
        blk.streams.push(kind);
    }
    Ok(())
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
                    if ntbytes > p.destsize {
                        return None;
                    }
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

/// Block buffers kept between calls (the workers' own buffers live in their thread-local
/// state; these are the extra ones that hold blocks waiting for their predecessors).
static SPARES: Mutex<Vec<EncodedBlock>> = Mutex::new(Vec::new());

/// Most buffers kept in [`SPARES`], and the largest one kept.
const MAX_SPARES: usize = 8;
const MAX_SPARE_BYTES: usize = 4 << 20;

/// The chunk being laid out, shared by the workers: blocks are appended in order as soon as
/// all the blocks before them are in.
struct Layout {
    /// The serial output so far (header, block starts, blocks `..next`).
    out: Vec<u8>,
    /// The next block to append.
    next: usize,
    /// Encoded blocks waiting for the blocks before them.
    pending: Vec<Option<EncodedBlock>>,
    /// Buffers of appended blocks, for reuse.
    spare: Vec<EncodedBlock>,
    /// The first block that hits the budget: it and the blocks after it are encoded serially.
    serial_from: Option<usize>,
    error: Option<Error>,
}

impl Layout {
    /// Appends block `next` if it fits without hitting the budget; otherwise records where the
    /// serial encoder must take over and raises `stop`.
    fn append(&mut self, p: &Plan, blk: &EncodedBlock, stop: &AtomicBool) {
        let j = self.next;
        self.next += 1;
        if self.serial_from.is_some() {
            return;
        }
        let start = self.out.len();
        if fits_unconstrained(p, blk, p.bsize(j), start).is_some() {
            p.write_bstart_at(&mut self.out, j, start);
            self.out.extend_from_slice(&blk.bytes);
        } else {
            self.serial_from = Some(j);
            stop.store(true, Ordering::Relaxed);
        }
    }
}

/// The outcome of [`encode_blocks`].
pub(super) enum Encoded {
    /// The serial layout (`ntbytes` long) in the buffer, header still to write.
    Blocks(Vec<u8>, usize),
    /// The chunk must be memcpyed; the buffer, to be reused for it.
    Memcpy(Vec<u8>),
}

/// Encodes all blocks in parallel and lays them out with the serial budget rules, so the
/// result equals the single-threaded output: each worker compresses a block into a reused
/// buffer and, if every block before it is in place, appends it (and the waiting blocks that
/// follow) to the output under a lock, while the other workers keep compressing; otherwise it
/// leaves the block waiting.
pub(super) fn encode_blocks(p: &Plan, data: &[u8], nthreads: usize) -> Result<Encoded> {
    let layout = Mutex::new(Layout {
        out: p.output_start(),
        next: 0,
        pending: (0..p.nblocks).map(|_| None).collect(),
        spare: core::mem::take(&mut *SPARES.lock().unwrap_or_else(PoisonError::into_inner)),
        serial_from: None,
        error: None,
    });
    let counter = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    let work = || {
        with_encode_state(|st| {
            let mut blk = EncodedBlock {
                bytes: core::mem::take(&mut st.codec.stream),
                ..EncodedBlock::default()
            };
            while !stop.load(Ordering::Relaxed) {
                let j = counter.fetch_add(1, Ordering::Relaxed);
                if j >= p.nblocks {
                    break;
                }
                let res = encode_unbounded(p, data, j, &mut st.bufs, &mut st.codec, &mut blk);
                let mut l = layout.lock().unwrap_or_else(PoisonError::into_inner);
                if let Err(e) = res {
                    l.error.get_or_insert(e);
                    stop.store(true, Ordering::Relaxed);
                    break;
                }
                if j == l.next {
                    l.append(p, &blk, &stop);
                    loop {
                        let n = l.next;
                        let Some(b) = l.pending.get_mut(n).and_then(Option::take) else {
                            break;
                        };
                        l.append(p, &b, &stop);
                        l.spare.push(b);
                    }
                } else {
                    let spare = l.spare.pop().unwrap_or_default();
                    l.pending[j] = Some(core::mem::replace(&mut blk, spare));
                }
            }
            st.codec.stream = blk.bytes;
        });
    };
    on_threads(nthreads, &work)?;
    let Layout {
        mut out,
        pending,
        mut spare,
        serial_from,
        error,
        ..
    } = layout.into_inner().unwrap_or_else(PoisonError::into_inner);
    spare.extend(pending.into_iter().flatten());
    spare.retain(|b| b.bytes.capacity() <= MAX_SPARE_BYTES);
    spare.truncate(MAX_SPARES);
    *SPARES.lock().unwrap_or_else(PoisonError::into_inner) = spare;
    if let Some(e) = error {
        return Err(e);
    }
    if let Some(start) = serial_from {
        // Near the budget: redo the remaining blocks exactly as the serial encoder does.
        let done = with_encode_state(|st| -> Result<bool> {
            for j in start..p.nblocks {
                p.write_bstart(&mut out, j);
                let filtered = forward(p, data, j, &mut st.bufs)?;
                if let BlockResult::GiveUp = encode_block(p, filtered, &mut out, &mut st.codec)? {
                    return Ok(false);
                }
            }
            Ok(true)
        })?;
        if !done {
            return Ok(Encoded::Memcpy(out));
        }
    }
    let ntbytes = out.len();
    Ok(Encoded::Blocks(out, ntbytes))
}

#[cfg(test)]
#[allow(
    clippy::cast_possible_truncation,
    clippy::unwrap_used,
    reason = "test patterns wrap on purpose"
)]
mod tests {
    use crate::codec_id::Codec;
    use crate::encode::{CParams, compress};
    use crate::header::Filter;

    /// Compressible, incompressible, half-and-half (the budget is hit late) and run-heavy
    /// inputs.
    fn inputs() -> Vec<Vec<u8>> {
        let mut x = 0x9e37_79b9_7f4a_7c15_u64;
        let mut noise = |n: usize| -> Vec<u8> {
            (0..n)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    x as u8
                })
                .collect()
        };
        let ramp: Vec<u8> = (0..200_000u32).flat_map(u32::to_le_bytes).collect();
        let mut mixed = ramp[..400_000].to_vec();
        mixed.extend(noise(400_000));
        let mut runs = vec![0u8; 300_000];
        runs.extend(vec![7u8; 100_000]);
        runs.extend(noise(50_000));
        vec![ramp, noise(500_000), mixed, runs]
    }

    #[test]
    fn threads_write_the_serial_bytes() {
        for data in inputs() {
            for codec in [Codec::BloscLz, Codec::Lz4, Codec::Zstd] {
                for blosc1_header in [false, true] {
                    let mut filters = [Filter::NoFilter; 6];
                    filters[5] = Filter::Shuffle;
                    let mut cp = CParams {
                        codec,
                        typesize: 4,
                        blocksize: 16 << 10,
                        blosc1_header,
                        filters,
                        ..CParams::default()
                    };
                    let Ok(serial) = compress(&data, &cp) else {
                        continue; // codec disabled
                    };
                    for nthreads in [2, 3, 0] {
                        cp.nthreads = nthreads;
                        assert!(
                            compress(&data, &cp).unwrap() == serial,
                            "{codec:?} {blosc1_header} {nthreads} {}",
                            data.len()
                        );
                    }
                }
            }
        }
    }
}
