//! Chunk decoding: special and memcpyed chunks, regular block/stream layout, VL blocks,
//! the backward filter pipeline, and item access.

mod blocks;
mod output;
#[cfg(feature = "parallel")]
mod parallel;
mod partial;
mod vl;

#[cfg(feature = "zarrs")]
pub(crate) use self::partial::merge_ranges;
pub use self::partial::{ChunkMap, PartialChunk};

use self::blocks::{Blocks, Kind, classify, decode_block, fill_special};
use self::output::Output;
use crate::codec::{self, DecodeScratch};
use crate::error::{Error, Result};
use crate::header::{ChunkHeader, SpecialValue};
use crate::limits::Limits;
use core::mem::MaybeUninit;

/// Decoding options: allocation limits and the number of threads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct DParams {
    /// Allocation limits.
    pub limits: Limits,
    /// Threads for block-parallel decoding (1 = serial, the default; 0 = all cores). Needs
    /// the `parallel` feature, otherwise decoding is always serial.
    pub nthreads: usize,
    /// The b2nd block shape of the array the chunk belongs to: needed by chunks that use the
    /// NDCELL or NDMEAN filter (C-Blosc2 reads it from the super-chunk's `b2nd` metalayer;
    /// `blosc2-frame` passes it on). Without it such chunks fail with
    /// [`Error::MissingBlockShape`]; other chunks ignore it.
    pub blockshape: Option<crate::BlockShape>,
}

impl Default for DParams {
    fn default() -> Self {
        Self {
            limits: Limits::default(),
            nthreads: 1,
            blockshape: None,
        }
    }
}

impl DParams {
    /// These parameters with `nthreads` threads
    /// (`DParams::default().with_threads(2)`).
    #[must_use]
    pub fn with_threads(mut self, nthreads: usize) -> Self {
        self.nthreads = nthreads;
        self
    }

    /// These parameters with the b2nd block shape `blockshape` (for NDCELL/NDMEAN chunks).
    #[must_use]
    pub fn with_blockshape(mut self, blockshape: crate::BlockShape) -> Self {
        self.blockshape = Some(blockshape);
        self
    }
}

/// Decodes all blocks of `b` into `out` (`nbytes` bytes).
///
/// On success every piece of `out` has been written by [`decode_block`].
fn decode_blocks(b: &Blocks<'_>, out: &mut Output<'_>, nthreads: usize) -> Result<()> {
    #[cfg(feature = "parallel")]
    if crate::pool::use_threads(nthreads, b.nblocks) {
        return parallel::decode_blocks(b, out, nthreads);
    }
    let _ = nthreads;
    codec::with_decode_scratch(|scratch| {
        let mut blocks = out.pieces(b.blocksize);
        let Some(first) = blocks.next() else {
            return Ok(());
        };
        let first = decode_block(b, 0, first, None, scratch)?;
        let dref = if b.has_delta() { Some(&*first) } else { None };
        for (k, blk) in blocks.enumerate() {
            decode_block(b, k + 1, blk, dref, scratch)?;
        }
        Ok(())
    })
}

/// The stored bytes of a memcpyed chunk into `out` (as long as `raw`). With threads, in
/// pieces of whole blocks of at least [`COPY_PIECE`] bytes, one per thread at a time, as
/// C-Blosc copies such chunks block by block on its threads.
fn copy_memcpyed<'o>(
    raw: &[u8],
    out: Output<'o>,
    blocksize: usize,
    nthreads: usize,
) -> Result<&'o mut [u8]> {
    #[cfg(feature = "parallel")]
    {
        let piece = COPY_PIECE.next_multiple_of(blocksize.max(1));
        if crate::pool::use_threads(nthreads, raw.len().div_ceil(piece)) {
            let mut out = out;
            parallel::copy(raw, &mut out, piece, nthreads)?;
            // SAFETY: `parallel::copy` returned `Ok`, so it copied into every piece of `out`.
            #[allow(unsafe_code, reason = "see SAFETY")]
            return Ok(unsafe { out.assume_written() });
        }
    }
    let _ = (blocksize, nthreads);
    Ok(out.copy_from(raw))
}

/// The smallest piece of a memcpyed chunk copied on a thread of its own: smaller copies take
/// less time than handing them to another thread.
#[cfg(feature = "parallel")]
const COPY_PIECE: usize = 256 << 10;

/// Decodes `chunk` into the first `nbytes` of `out`; returns them.
fn decode_output<'o>(chunk: &[u8], out: Output<'o>, params: &DParams) -> Result<&'o mut [u8]> {
    let (h, kind) = classify(chunk, &params.limits, params.blockshape)?;
    let nbytes = h.nbytes();
    let available = out.len();
    let out = out.prefix(nbytes).ok_or(Error::OutputTooSmall {
        needed: nbytes,
        available,
    })?;
    Ok(match kind {
        Kind::Memcpy(raw) => copy_memcpyed(raw, out, h.blocksize(), params.nthreads)?,
        Kind::Blocks(b) => {
            let mut out = out;
            decode_blocks(&b, &mut out, params.nthreads)?;
            // SAFETY: `decode_blocks` returned `Ok`, so it initialized every piece of `out`.
            #[allow(unsafe_code, reason = "see SAFETY")]
            unsafe {
                out.assume_written()
            }
        }
        Kind::Special(sv, value) => {
            let out = out.init();
            fill_special(&h, sv, value, out);
            out
        }
        Kind::Empty => out.init(),
        Kind::VlBlocks(b) => {
            let out = out.init();
            vl::decode_vl_blocks(&b, out)?;
            out
        }
    })
}

/// Decodes `chunk` into `out[..nbytes]`; returns `nbytes`.
pub(crate) fn decode_into(chunk: &[u8], out: &mut [u8], params: &DParams) -> Result<usize> {
    decode_output(chunk, Output::Init(out), params).map(|o| o.len())
}

/// Decompresses a chunk with the default [`Limits`] on one thread.
///
/// # Errors
///
/// Any [`Error`] describing why the chunk is malformed, unsupported or too large;
/// [`Error::CodecDisabled`] if it needs a codec whose Cargo feature is off. Never panics on any
/// input.
pub fn decompress(chunk: &[u8]) -> Result<Vec<u8>> {
    decompress_with(chunk, &Limits::default())
}

/// Decompresses a chunk with the given limits.
///
/// # Errors
///
/// As [`decompress`]; [`Error::LimitExceeded`] if `nbytes` is above `limits.max_nbytes`.
pub fn decompress_with(chunk: &[u8], limits: &Limits) -> Result<Vec<u8>> {
    decompress_ctx(
        chunk,
        &DParams {
            limits: *limits,
            ..DParams::default()
        },
    )
}

/// Decompresses a chunk with the given limits and thread count.
///
/// # Errors
///
/// As [`decompress_with`].
pub fn decompress_ctx(chunk: &[u8], params: &DParams) -> Result<Vec<u8>> {
    let h = ChunkHeader::parse(chunk)?;
    if h.is_lazy() {
        return Err(Error::Unsupported {
            what: "lazy chunk (holds no data; read the blocks from the frame)",
            id: u32::from(h.blosc2_flags()),
        });
    }
    if h.nbytes() > params.limits.max_nbytes {
        return Err(Error::LimitExceeded {
            what: "nbytes",
            requested: h.nbytes() as u64,
            limit: params.limits.max_nbytes as u64,
        });
    }
    if h.cbytes() > chunk.len() {
        return Err(Error::truncated("chunk", 0, h.cbytes(), chunk.len()));
    }
    // Refuse chunks too short for their own layout before allocating `nbytes` (a 40-byte chunk
    // claiming 2 GiB must not allocate 2 GiB first): the payload of a memcpyed chunk, or the
    // bstarts table, must fit in `cbytes`.
    if h.special().is_none() && h.nbytes() > 0 {
        let hl = h.header_len();
        let needed = if h.is_memcpyed() {
            h.nbytes().checked_add(hl)
        } else {
            h.nblocks().checked_mul(4).and_then(|n| n.checked_add(hl))
        };
        match needed {
            Some(n) if n <= h.cbytes() => {}
            _ => {
                return Err(Error::truncated(
                    "chunk",
                    0,
                    needed.unwrap_or(usize::MAX),
                    h.cbytes(),
                ));
            }
        }
    }
    // Decoded straight into fresh capacity: no zero-fill of `nbytes` first.
    let nbytes = h.nbytes();
    let mut out = Vec::with_capacity(nbytes);
    let written = decode_output(chunk, Output::Uninit(out.spare_capacity_mut()), params)?.len();
    // SAFETY: `decode_output` returned `Ok` with the first `written` bytes (`nbytes`, within
    // the capacity) of `out`'s spare capacity initialized.
    #[allow(unsafe_code, reason = "see SAFETY")]
    unsafe {
        out.set_len(written);
    }
    Ok(out)
}

/// Decompresses a chunk straight into `out` (at least `nbytes` long); returns `nbytes`.
///
/// The caller's buffer bounds the output, so no [`Limits`] apply; [`decompress_into_ctx`]
/// takes them (and a thread count).
///
/// # Errors
///
/// [`Error::OutputTooSmall`] if `out` is shorter than `nbytes`, otherwise as [`decompress`].
pub fn decompress_into(chunk: &[u8], out: &mut [u8]) -> Result<usize> {
    decode_into(
        chunk,
        out,
        &DParams {
            limits: Limits::unlimited(),
            ..DParams::default()
        },
    )
}

/// [`decompress_into`] with explicit parameters (thread count, limits).
///
/// # Errors
///
/// As [`decompress_into`].
pub fn decompress_into_ctx(chunk: &[u8], out: &mut [u8], params: &DParams) -> Result<usize> {
    decode_into(chunk, out, params)
}

/// [`decompress_into_ctx`] into memory that need not be initialized (a fresh allocation, a
/// `Vec`'s spare capacity, a buffer handed over by another language): returns the first
/// `nbytes` of `out`, every one of them written.
///
/// This saves zero-filling the whole output before decoding into it. Blocks that are not
/// overwritten by a plain copy are zero-filled one at a time right before they are decoded,
/// while they are in cache.
///
/// ```
/// use std::mem::MaybeUninit;
/// use blosc_chunk::{CParams, DParams, compress, decompress_into_uninit_ctx};
///
/// let data: Vec<u8> = (0..10_000u32).flat_map(u32::to_le_bytes).collect();
/// let chunk = compress(&data, &CParams::default())?;
/// let mut buf: Vec<u8> = Vec::with_capacity(data.len());
/// let out = decompress_into_uninit_ctx(&chunk, buf.spare_capacity_mut(), &DParams::default())?;
/// assert_eq!(out, &data[..]);
/// # Ok::<(), blosc_chunk::Error>(())
/// ```
///
/// # Errors
///
/// As [`decompress_into_ctx`]; nothing is known about the contents of `out` after an error.
pub fn decompress_into_uninit_ctx<'o>(
    chunk: &[u8],
    out: &'o mut [MaybeUninit<u8>],
    params: &DParams,
) -> Result<&'o mut [u8]> {
    decode_output(chunk, Output::Uninit(out), params)
}

/// Decodes items `start_item .. start_item + n_items` (items of the header's `typesize`) with
/// the default [`DParams`], decoding only the blocks that hold them (plus block 0 when the
/// delta filter needs it).
///
/// # Errors
///
/// [`Error::ItemRange`] if the range is outside the chunk, otherwise as [`decompress`].
pub fn getitem(chunk: &[u8], start_item: usize, n_items: usize) -> Result<Vec<u8>> {
    getitem_ctx(chunk, start_item, n_items, &DParams::default())
}

/// [`getitem`] with explicit [`DParams`]: `params.limits` caps the chunk's `nbytes` before
/// anything is allocated (a variable-length-block chunk is decoded whole, so it allocates its
/// `nbytes`); items are decoded on the calling thread whatever `params.nthreads` says.
///
/// # Errors
///
/// As [`getitem`]; [`Error::LimitExceeded`] if `nbytes` is above `params.limits.max_nbytes`.
pub fn getitem_ctx(
    chunk: &[u8],
    start_item: usize,
    n_items: usize,
    params: &DParams,
) -> Result<Vec<u8>> {
    let (h, kind) = classify(chunk, &params.limits, params.blockshape)?;
    let (lo, hi) = item_range(&h, start_item, n_items)?;
    let mut out = vec![0u8; hi - lo];
    items_into(&h, kind, lo, hi, &mut out)?;
    Ok(out)
}

/// [`getitem`] into a caller buffer, with the default [`DParams`]; returns the number of bytes
/// written.
///
/// # Errors
///
/// As [`getitem`]; [`Error::OutputTooSmall`] if `out` cannot hold the items.
pub fn getitem_into(
    chunk: &[u8],
    start_item: usize,
    n_items: usize,
    out: &mut [u8],
) -> Result<usize> {
    getitem_into_ctx(chunk, start_item, n_items, out, &DParams::default())
}

/// [`getitem_into`] with explicit [`DParams`] (limits as in [`getitem_ctx`]).
///
/// # Errors
///
/// As [`getitem_into`]; [`Error::LimitExceeded`] if `nbytes` is above
/// `params.limits.max_nbytes`.
pub fn getitem_into_ctx(
    chunk: &[u8],
    start_item: usize,
    n_items: usize,
    out: &mut [u8],
    params: &DParams,
) -> Result<usize> {
    let (h, kind) = classify(chunk, &params.limits, params.blockshape)?;
    let (lo, hi) = item_range(&h, start_item, n_items)?;
    let n = hi - lo;
    let available = out.len();
    let out = out.get_mut(..n).ok_or(Error::OutputTooSmall {
        needed: n,
        available,
    })?;
    items_into(&h, kind, lo, hi, out)?;
    Ok(n)
}

fn item_range(h: &ChunkHeader, start_item: usize, n_items: usize) -> Result<(usize, usize)> {
    let ts = h.typesize();
    let nitems = h.nbytes() / ts;
    let end = start_item.checked_add(n_items);
    match end {
        Some(end) if end <= nitems => Ok((start_item * ts, end * ts)),
        _ => Err(Error::ItemRange {
            start: start_item,
            end: end.unwrap_or(usize::MAX),
            nitems,
        }),
    }
}

/// Writes bytes `lo..hi` of the classified chunk into `out` (`hi - lo` bytes).
fn items_into(h: &ChunkHeader, kind: Kind<'_>, lo: usize, hi: usize, out: &mut [u8]) -> Result<()> {
    match kind {
        Kind::Special(sv, value) => {
            if sv == SpecialValue::Value {
                for (k, o) in out.iter_mut().enumerate() {
                    *o = value[(lo + k) % value.len()];
                }
            } else {
                fill_special(h, sv, value, out);
            }
        }
        Kind::Memcpy(raw) => out.copy_from_slice(&raw[lo..hi]),
        Kind::Empty => {}
        Kind::VlBlocks(b) => {
            let mut all = vec![0u8; h.nbytes()];
            vl::decode_vl_blocks(&b, &mut all)?;
            out.copy_from_slice(&all[lo..hi]);
        }
        Kind::Blocks(b) => {
            if lo == hi {
                return Ok(());
            }
            let bs = b.blocksize;
            let mut scratch = DecodeScratch::default();
            let mut block0 = Vec::new();
            if b.has_delta() {
                block0 = vec![0u8; b.bsize(0)];
                decode_block(&b, 0, Output::Init(&mut block0), None, &mut scratch)?;
            }
            let mut buf = vec![0u8; bs];
            for j in lo / bs..=(hi - 1) / bs {
                let bstart = j * bs;
                let bsize = b.bsize(j);
                let blk: &[u8] = if j == 0 && b.has_delta() {
                    &block0
                } else {
                    let dref = if b.has_delta() {
                        Some(&block0[..])
                    } else {
                        None
                    };
                    decode_block(&b, j, Output::Init(&mut buf[..bsize]), dref, &mut scratch)?;
                    &buf[..bsize]
                };
                let from = lo.max(bstart);
                let to = hi.min(bstart + bsize);
                out[from - lo..to - lo].copy_from_slice(&blk[from - bstart..to - bstart]);
            }
        }
    }
    Ok(())
}
