//! Encoding one block: the forward filter pipeline and the streams of a block, following
//! C-Blosc2's serial budget rules; the per-thread encoder state.

use super::params::Format;
use super::plan::Plan;
use crate::codec::{self, EncodeScratch};
use crate::codec_id::Codec;
use crate::error::{Error, Result};
use crate::filter::bitshuffle;
use crate::filter::delta;
use crate::filter::shuffle;
use crate::filter::truncprec;
use crate::header::{Filter, MAX_FILTERS};
use crate::plugins::{bytedelta, cells, inttrunc, ndlz};

/// Scratch buffers for the forward filter pipeline.
#[derive(Debug, Default)]
pub(super) struct FilterBufs {
    a: Vec<u8>,
    b: Vec<u8>,
    /// Scratch of the bit shuffle.
    bits: Vec<u8>,
}

/// Per-thread encoder state, kept between calls.
#[derive(Debug, Default)]
pub(super) struct EncodeState {
    pub(super) bufs: FilterBufs,
    pub(super) codec: EncodeScratch,
}

impl codec::Scratch for EncodeState {
    fn trim(&mut self) {
        codec::trim_buf(&mut self.bufs.a);
        codec::trim_buf(&mut self.bufs.b);
        codec::trim_buf(&mut self.bufs.bits);
        codec::trim_buf(&mut self.codec.stream);
    }
}

thread_local! {
    static ENCODE_STATE: core::cell::RefCell<EncodeState> =
        core::cell::RefCell::new(EncodeState::default());
}

/// Runs `f` with this thread's reusable encoder state.
pub(super) fn with_encode_state<R>(f: impl FnOnce(&mut EncodeState) -> R) -> R {
    codec::with_scratch(&ENCODE_STATE, f)
}

/// Runs the forward pipeline on block `j`; returns the filtered bytes.
pub(super) fn forward<'a>(
    p: &Plan,
    data: &'a [u8],
    j: usize,
    bufs: &'a mut FilterBufs,
) -> Result<&'a [u8]> {
    let offset = j * p.blocksize;
    let bsize = p.bsize(j);
    let src = &data[offset..offset + bsize];
    let ts = p.typesize;
    let active: Vec<usize> = (0..MAX_FILTERS)
        .filter(|&i| match p.filters[i] {
            Filter::NoFilter => false,
            // A shuffle that moves no byte (type size 1) is skipped, not copied.
            Filter::Shuffle => shuffle::moves_bytes(shuffle::group(ts, p.filters_meta[i]), bsize),
            _ => true,
        })
        .collect();
    if active.is_empty() {
        return Ok(src);
    }
    bufs.a.resize(bsize, 0);
    bufs.b.resize(bsize, 0);
    let dref = &data[..p.blocksize.min(data.len())];
    let mut in_a = false; // where the current data lives: false = src / b, true = a
    let mut first = true;
    for &i in &active {
        let meta = p.filters_meta[i];
        let (s, d): (&[u8], &mut [u8]) = if first {
            (src, &mut bufs.a[..bsize])
        } else if in_a {
            (&bufs.a[..bsize], &mut bufs.b[..bsize])
        } else {
            (&bufs.b[..bsize], &mut bufs.a[..bsize])
        };
        match p.filters[i] {
            Filter::Shuffle => shuffle::shuffle(shuffle::group(ts, meta), s, d),
            Filter::BitShuffle if p.format == Format::Blosc1 => {
                bitshuffle::bitshuffle_v2(ts, s, d, &mut bufs.bits);
            }
            Filter::BitShuffle => bitshuffle::bitshuffle(ts, s, d, &mut bufs.bits),
            Filter::Delta => delta::encode(ts, offset, dref, s, d),
            Filter::TruncPrec => truncprec::encode(ts, meta, s, d)?,
            Filter::ByteDelta => bytedelta::encode(meta, ts, s, d)?,
            Filter::IntTrunc => inttrunc::encode(meta, ts, s, d)?,
            Filter::NdCell => {
                let shape = p
                    .blockshape
                    .as_ref()
                    .ok_or(Error::MissingBlockShape { plugin: "ndcell" })?;
                cells::encode_ndcell(shape, meta, ts, s, d)?;
            }
            Filter::NdMean => {
                let shape = p
                    .blockshape
                    .as_ref()
                    .ok_or(Error::MissingBlockShape { plugin: "ndmean" })?;
                cells::encode_ndmean(shape, meta, ts, s, d)?;
            }
            _ => d.copy_from_slice(s),
        }
        in_a = if first { true } else { !in_a };
        first = false;
    }
    Ok(if in_a {
        &bufs.a[..bsize]
    } else {
        &bufs.b[..bsize]
    })
}

/// Compresses one stream with a plugin codec (`Ok(0)`: store it raw).
fn user_codec(p: &Plan, stream: &[u8], dst: &mut [u8]) -> Result<usize> {
    match p.codec {
        Codec::NdLz => ndlz::compress(p.codec_meta, p.blockshape.as_ref(), stream, dst),
        #[cfg(feature = "zfp")]
        c @ (Codec::ZfpAcc | Codec::ZfpPrec | Codec::ZfpRate) => crate::plugins::zfp::compress(
            c,
            p.codec_meta,
            p.blockshape.as_ref(),
            p.typesize,
            stream,
            dst,
        ),
        c => Err(Error::Unsupported {
            what: "codec",
            id: u32::from(c.id()),
        }),
    }
}

/// Whether `s` is one byte value repeated (and not empty).
pub(super) fn is_run(s: &[u8]) -> bool {
    let Some(&v) = s.first() else {
        return false;
    };
    // Whole 32-byte words compare as vectors.
    let (words, tail) = s.as_chunks::<32>();
    words.iter().all(|w| *w == [v; 32]) && tail.iter().all(|&b| b == v)
}

/// Outcome of encoding one block at a position of the serial output.
pub(super) enum BlockResult {
    /// Appended.
    Done,
    /// Budget exhausted: the whole chunk becomes memcpyed.
    GiveUp,
}

/// Appends the (already filtered) block to `out` (the serial output so far), following C's
/// serial budget rules exactly (`destsize = nbytes + 32`).
pub(super) fn encode_block(
    p: &Plan,
    filtered: &[u8],
    out: &mut Vec<u8>,
    scratch: &mut EncodeScratch,
) -> Result<BlockResult> {
    let bsize = filtered.len();
    let nstreams = p.nstreams(bsize);
    let neblock = bsize / nstreams;
    for s in 0..nstreams {
        let stream = &filtered[s * neblock..(s + 1) * neblock];
        let csize_pos = out.len();
        out.extend_from_slice(&[0; 4]);
        let ntbytes = out.len();
        if p.extended && is_run(stream) {
            if ntbytes > p.destsize {
                return Ok(BlockResult::GiveUp);
            }
            let v = stream[0];
            if v != 0 {
                // The token byte of a non-zero run must fit in the budget too.
                if ntbytes + 1 > p.destsize {
                    return Ok(BlockResult::GiveUp);
                }
                out[csize_pos..ntbytes].copy_from_slice(&(-i32::from(v)).to_le_bytes());
                out.push(1);
            }
            continue;
        }
        let mut maxout = neblock;
        if ntbytes + maxout > p.destsize {
            if ntbytes >= p.destsize {
                return Ok(BlockResult::GiveUp);
            }
            maxout = p.destsize - ntbytes;
        }
        let kept = if p.codec.format_code() == Some(crate::codec::FORMAT_USER) {
            // Plugin codecs write into an initialized buffer: the reused stream buffer.
            let mut buf = core::mem::take(&mut scratch.stream);
            if buf.len() < maxout {
                buf.resize(maxout, 0);
            }
            let c = match user_codec(p, stream, &mut buf[..maxout]) {
                Ok(c) => c,
                Err(e) => {
                    scratch.stream = buf;
                    return Err(e);
                }
            };
            let kept = (c != 0 && c < neblock).then(|| {
                out.extend_from_slice(&buf[..c]);
                c
            });
            scratch.stream = buf;
            kept
        } else {
            // Straight into `out`'s spare capacity: no zero-filling, no copy.
            let c =
                codec::append_stream(p.codec, p.blosclz, p.clevel, stream, out, maxout, scratch);
            if c >= neblock {
                out.truncate(ntbytes);
            }
            (c != 0 && c < neblock).then_some(c)
        };
        let cbytes = match kept {
            Some(c) => c,
            None => {
                if ntbytes + neblock > p.destsize {
                    return Ok(BlockResult::GiveUp);
                }
                out.extend_from_slice(stream);
                neblock
            }
        };
        let cs = i32::try_from(cbytes).unwrap_or(i32::MAX);
        out[csize_pos..ntbytes].copy_from_slice(&cs.to_le_bytes());
    }
    Ok(BlockResult::Done)
}
