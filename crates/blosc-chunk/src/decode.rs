//! Chunk decoding: special and memcpyed chunks, regular block/stream layout, VL blocks,
//! the backward filter pipeline, and item access.

use crate::bitshuffle;
use crate::codecs::{self, DecodeScratch, Dict};
use crate::delta;
use crate::error::{Error, Result};
use crate::header::{ChunkHeader, Filter, MAX_DICT_SIZE, SpecialValue};
use crate::limits::Limits;
use crate::shuffle;

/// Decoding options: allocation limits and the number of threads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct DParams {
    /// Allocation limits.
    pub limits: Limits,
    /// Threads for block-parallel decoding (1 = serial, the default; 0 = all cores). Needs
    /// the `parallel` feature, otherwise decoding is always serial.
    pub nthreads: usize,
}

impl Default for DParams {
    fn default() -> Self {
        Self {
            limits: Limits::default(),
            nthreads: 1,
        }
    }
}

impl DParams {
    /// Default limits with `nthreads` threads.
    #[must_use]
    pub fn with_threads(nthreads: usize) -> Self {
        Self {
            nthreads,
            ..Self::default()
        }
    }
}

/// Reads a little-endian `i32` at `off` of `b`.
pub(crate) fn read_i32(b: &[u8], off: usize) -> Option<i32> {
    let s = b.get(off..off.checked_add(4)?)?;
    Some(i32::from_le_bytes(s.try_into().ok()?))
}

/// What the chunk is, once validated against its bytes.
pub(crate) enum Kind<'a> {
    /// Fill with a special value (`value` only for [`SpecialValue::Value`]).
    Special(SpecialValue, &'a [u8]),
    /// Raw payload.
    Memcpy(&'a [u8]),
    /// No data.
    Empty,
    /// Regular blocks.
    Blocks(Blocks<'a>),
    /// Variable-length blocks.
    VlBlocks(Blocks<'a>),
}

/// A validated regular chunk.
pub(crate) struct Blocks<'a> {
    pub(crate) h: ChunkHeader,
    /// The chunk, cut to `cbytes`.
    pub(crate) src: &'a [u8],
    pub(crate) nblocks: usize,
    pub(crate) blocksize: usize,
    pub(crate) format: u8,
    /// Backward pipeline: (filter, meta) in the order they are undone.
    pub(crate) pipeline: Vec<(Filter, u8)>,
    pub(crate) dict: Option<Dict<'a>>,
}

impl Blocks<'_> {
    fn bstart(&self, j: usize) -> Result<usize> {
        let off = self.h.header_len() + 4 * j;
        let v = read_i32(self.src, off)
            .ok_or_else(|| Error::truncated("bstarts", off, 4, self.src.len()))?;
        match usize::try_from(v) {
            Ok(s) if s > 0 && s < self.src.len() => Ok(s),
            _ => Err(Error::corrupt("block start", j, off)),
        }
    }

    pub(crate) fn bsize(&self, j: usize) -> usize {
        let start = j * self.blocksize;
        self.blocksize.min(self.h.nbytes() - start)
    }

    fn has_delta(&self) -> bool {
        self.pipeline.iter().any(|(f, _)| *f == Filter::Delta)
    }
}

/// Validates `chunk` and classifies it.
pub(crate) fn classify<'a>(chunk: &'a [u8], limits: &Limits) -> Result<(ChunkHeader, Kind<'a>)> {
    let h = ChunkHeader::parse(chunk)?;
    if h.is_lazy() {
        return Err(Error::Unsupported {
            what: "lazy chunk (holds no data; read the blocks from the frame)",
            id: u32::from(h.blosc2_flags()),
        });
    }
    if h.is_instrumented() {
        return Err(Error::Unsupported {
            what: "instrumented chunk",
            id: u32::from(h.blosc2_flags()),
        });
    }
    let nbytes = h.nbytes();
    if nbytes > limits.max_nbytes {
        return Err(Error::LimitExceeded {
            what: "nbytes",
            requested: nbytes as u64,
            limit: limits.max_nbytes as u64,
        });
    }
    let hl = h.header_len();
    let cbytes = h.cbytes();
    let src = chunk
        .get(..cbytes)
        .ok_or_else(|| Error::truncated("chunk", 0, cbytes, chunk.len()))?;
    if let Some(sv) = h.special() {
        let value = if sv == SpecialValue::Value {
            let v = src.get(hl..).unwrap_or_default();
            if v.is_empty() || !nbytes.is_multiple_of(v.len()) {
                return Err(Error::InvalidHeader {
                    what: "special value size",
                    value: i64::try_from(v.len()).unwrap_or(i64::MAX),
                });
            }
            v
        } else {
            &[]
        };
        if sv == SpecialValue::Nan && !matches!(h.typesize(), 4 | 8) {
            return Err(Error::InvalidHeader {
                what: "typesize of a nan chunk",
                value: i64::try_from(h.typesize()).unwrap_or(i64::MAX),
            });
        }
        return Ok((h, Kind::Special(sv, value)));
    }
    if h.is_memcpyed() {
        if cbytes
            != nbytes
                .checked_add(hl)
                .ok_or(Error::Overflow { what: "nbytes" })?
        {
            return Err(Error::InvalidHeader {
                what: "cbytes of a memcpyed chunk",
                value: i64::try_from(cbytes).unwrap_or(i64::MAX),
            });
        }
        return Ok((h, Kind::Memcpy(&src[hl..])));
    }
    if nbytes == 0 {
        return Ok((h, Kind::Empty));
    }
    codecs::check_format(h.codec_format(), h.udcodec())?;
    let mut pipeline = Vec::new();
    let fids = h.filter_ids();
    let metas = h.filters_meta();
    for i in (0..fids.len()).rev() {
        match Filter::from_id(fids[i]) {
            Filter::NoFilter | Filter::TruncPrec => {}
            f @ (Filter::Shuffle | Filter::BitShuffle | Filter::Delta) => {
                pipeline.push((f, metas[i]))
            }
            Filter::Other(id) => {
                return Err(Error::Unsupported {
                    what: "filter",
                    id: u32::from(id),
                });
            }
        }
    }
    let nblocks = h.nblocks();
    let blocksize = h.blocksize();
    let bstarts_end = nblocks
        .checked_mul(4)
        .and_then(|n| n.checked_add(hl))
        .ok_or(Error::Overflow { what: "bstarts" })?;
    if bstarts_end > src.len() {
        return Err(Error::truncated("bstarts", hl, bstarts_end - hl, src.len()));
    }
    let dict = if h.uses_dict() {
        let dsize = read_i32(src, bstarts_end)
            .ok_or_else(|| Error::truncated("dictionary size", bstarts_end, 4, src.len()))?;
        let dlen = usize::try_from(dsize)
            .ok()
            .filter(|&d| d > 0 && d <= MAX_DICT_SIZE)
            .ok_or(Error::InvalidHeader {
                what: "dictionary size",
                value: i64::from(dsize),
            })?;
        let raw = src
            .get(bstarts_end + 4..bstarts_end + 4 + dlen)
            .ok_or_else(|| Error::truncated("dictionary", bstarts_end + 4, dlen, src.len()))?;
        let zstd = if h.codec_format() == codecs::FORMAT_ZSTD {
            Some(
                zstd_safe::DDict::try_create(raw).ok_or(Error::InvalidHeader {
                    what: "zstd dictionary",
                    value: i64::from(dsize),
                })?,
            )
        } else {
            None
        };
        Some(Dict { raw, zstd })
    } else {
        None
    };
    let blocks = Blocks {
        h,
        src,
        nblocks,
        blocksize,
        format: h.codec_format(),
        pipeline,
        dict,
    };
    if h.vl_blocks() {
        Ok((h, Kind::VlBlocks(blocks)))
    } else {
        Ok((h, Kind::Blocks(blocks)))
    }
}

/// Fills `out` with the special value.
pub(crate) fn fill_special(h: &ChunkHeader, sv: SpecialValue, value: &[u8], out: &mut [u8]) {
    match sv {
        SpecialValue::Zeros | SpecialValue::Uninit => out.fill(0),
        SpecialValue::Nan => {
            if h.typesize() == 4 {
                fill_pattern(out, &f32::NAN.to_bits().to_le_bytes());
            } else {
                fill_pattern(out, &0x7ff8_0000_0000_0000u64.to_le_bytes());
            }
        }
        SpecialValue::Value => fill_pattern(out, value),
    }
}

/// Fills `out` with `pat` repeated; `out.len()` is a multiple of `pat.len()` or the last
/// repetition is cut.
fn fill_pattern(out: &mut [u8], pat: &[u8]) {
    if pat.is_empty() {
        return;
    }
    if pat.iter().all(|&b| b == pat[0]) {
        out.fill(pat[0]);
        return;
    }
    for c in out.chunks_mut(pat.len()) {
        c.copy_from_slice(&pat[..c.len()]);
    }
}

/// Decodes the streams of block `j` into `dst` (`bsize` bytes, filtered form). A stream stored
/// raw whose slot exists in `raw` (stream `s` → `raw[s]`) is not copied: the slot gets its
/// bytes in the chunk instead, and that part of `dst` is left as it was.
fn decode_streams<'a>(
    b: &Blocks<'a>,
    j: usize,
    dst: &mut [u8],
    scratch: &mut DecodeScratch,
    raw: &mut [Option<&'a [u8]>],
) -> Result<()> {
    let bsize = dst.len();
    let nstreams = b.h.nstreams(bsize);
    if !bsize.is_multiple_of(nstreams) {
        return Err(Error::corrupt(
            "block size not a multiple of typesize",
            j,
            0,
        ));
    }
    let neblock = bsize / nstreams;
    let mut off = b.bstart(j)?;
    let src = b.src;
    for s in 0..nstreams {
        let csize =
            read_i32(src, off).ok_or_else(|| Error::truncated("stream size", off, 4, src.len()))?;
        off += 4;
        let d = &mut dst[s * neblock..(s + 1) * neblock];
        if csize == 0 {
            d.fill(0);
        } else if csize < 0 {
            let token = *src
                .get(off)
                .ok_or_else(|| Error::truncated("run token", off, 1, src.len()))?;
            if token & 1 == 0 || csize < -255 {
                return Err(Error::corrupt("run token", j, off));
            }
            off += 1;
            let v = u8::try_from(-csize).unwrap_or(0);
            d.fill(v);
        } else {
            let cs = usize::try_from(csize).unwrap_or(usize::MAX);
            let payload = off
                .checked_add(cs)
                .and_then(|end| src.get(off..end))
                .ok_or_else(|| Error::truncated("stream", off, cs, src.len()))?;
            if cs == neblock {
                match raw.get_mut(s) {
                    Some(slot) => *slot = Some(payload),
                    None => d.copy_from_slice(payload),
                }
            } else if !codecs::decompress_stream(b.format, payload, d, b.dict.as_ref(), scratch) {
                return Err(Error::corrupt("codec data", j, off));
            }
            off += cs;
        }
    }
    Ok(())
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Buf {
    Tmp1,
    Tmp2,
    Out,
}

/// Decodes block `j` into `out` (`bsize` bytes). `dref` is the decoded block 0 (for delta;
/// `None` when `j == 0`).
pub(crate) fn decode_block(
    b: &Blocks<'_>,
    j: usize,
    out: &mut [u8],
    dref: Option<&[u8]>,
    scratch: &mut DecodeScratch,
) -> Result<()> {
    let bsize = out.len();
    #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
    if unshuffle_split_block(b, j, out, scratch)? {
        return Ok(());
    }
    let moves = b
        .pipeline
        .iter()
        .filter(|(f, _)| *f != Filter::Delta)
        .count();
    let mut cur = if moves == 0 { Buf::Out } else { Buf::Tmp1 };
    let mut tmp1 = core::mem::take(&mut scratch.tmp1);
    let mut tmp2 = core::mem::take(&mut scratch.tmp2);
    let mut bits = core::mem::take(&mut scratch.bits);
    if moves > 0 && tmp1.len() < bsize {
        tmp1.resize(bsize, 0);
    }
    if moves > 1 && tmp2.len() < bsize {
        tmp2.resize(bsize, 0);
    }
    let result = (|| {
        match cur {
            Buf::Out => decode_streams(b, j, out, scratch, &mut [])?,
            _ => decode_streams(b, j, &mut tmp1[..bsize], scratch, &mut [])?,
        }
        let ts = b.h.typesize();
        let mut moved = 0;
        for &(f, meta) in &b.pipeline {
            if f == Filter::Delta {
                let buf: &mut [u8] = match cur {
                    Buf::Out => out,
                    Buf::Tmp1 => &mut tmp1[..bsize],
                    Buf::Tmp2 => &mut tmp2[..bsize],
                };
                match dref {
                    None => delta::decode_first(ts, buf),
                    Some(r) => delta::decode_other(ts, r, buf),
                }
                continue;
            }
            moved += 1;
            let dest = if moved == moves {
                Buf::Out
            } else if cur == Buf::Tmp1 {
                Buf::Tmp2
            } else {
                Buf::Tmp1
            };
            let (s, d): (&[u8], &mut [u8]) = match (cur, dest) {
                (Buf::Tmp1, Buf::Out) => (&tmp1[..bsize], &mut *out),
                (Buf::Tmp2, Buf::Out) => (&tmp2[..bsize], &mut *out),
                (Buf::Tmp1, Buf::Tmp2) => (&tmp1[..bsize], &mut tmp2[..bsize]),
                (Buf::Tmp2, Buf::Tmp1) => (&tmp2[..bsize], &mut tmp1[..bsize]),
                _ => return Err(Error::corrupt("filter pipeline", j, 0)),
            };
            match f {
                Filter::Shuffle => {
                    let group = if meta == 0 { ts } else { usize::from(meta) };
                    shuffle::unshuffle(group, s, d);
                }
                Filter::BitShuffle => {
                    if b.h.version() == 2 {
                        bitshuffle::bitunshuffle_v2(ts, s, d, &mut bits);
                    } else {
                        bitshuffle::bitunshuffle(ts, s, d, &mut bits);
                    }
                }
                _ => d.copy_from_slice(s),
            }
            cur = dest;
        }
        Ok(())
    })();
    scratch.tmp1 = tmp1;
    scratch.tmp2 = tmp2;
    scratch.bits = bits;
    result
}

/// The common case of a split, byte-shuffled block (pipeline exactly one shuffle of the type
/// size 2, 4, 8 or 16, one stream per byte plane): unshuffles straight from the planes, taking
/// the planes stored raw from the chunk instead of copying them into the scratch block first
/// (C-Blosc2 copies them). Returns `false`, having done nothing, if the block is not of that
/// kind.
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
fn unshuffle_split_block(
    b: &Blocks<'_>,
    j: usize,
    out: &mut [u8],
    scratch: &mut DecodeScratch,
) -> Result<bool> {
    let bsize = out.len();
    let ts = b.h.typesize();
    let [(Filter::Shuffle, meta)] = b.pipeline.as_slice() else {
        return Ok(false);
    };
    if !matches!(ts, 2 | 4 | 8 | 16)
        || !(*meta == 0 || usize::from(*meta) == ts)
        || b.h.nstreams(bsize) != ts
        || !bsize.is_multiple_of(ts)
    {
        return Ok(false);
    }
    let n = bsize / ts;
    let mut tmp1 = core::mem::take(&mut scratch.tmp1);
    if tmp1.len() < bsize {
        tmp1.resize(bsize, 0);
    }
    let mut raw: [Option<&[u8]>; 16] = [None; 16];
    let result = decode_streams(b, j, &mut tmp1[..bsize], scratch, &mut raw[..ts]).map(|()| {
        let planes: [&[u8]; 16] = core::array::from_fn(|s| match raw[s] {
            Some(p) => p,
            None => tmp1.get(s * n..(s + 1) * n).unwrap_or_default(),
        });
        shuffle::unshuffle_planes(&planes[..ts], out, n)
    });
    scratch.tmp1 = tmp1;
    match result? {
        true => Ok(true),
        false => Err(Error::corrupt("filter pipeline", j, 0)),
    }
}

/// Decodes all blocks of `b` into `out` (`nbytes` bytes).
fn decode_blocks(b: &Blocks<'_>, out: &mut [u8], nthreads: usize) -> Result<()> {
    #[cfg(feature = "parallel")]
    if crate::parallel::use_threads(nthreads, b.nblocks) {
        return crate::parallel::decode_blocks(b, out, nthreads);
    }
    let _ = nthreads;
    codecs::with_decode_scratch(|scratch| {
        let bs = b.blocksize;
        let (first, rest) = out.split_at_mut(bs.min(out.len()));
        decode_block(b, 0, first, None, scratch)?;
        let dref = if b.has_delta() { Some(&*first) } else { None };
        for (k, blk) in rest.chunks_mut(bs).enumerate() {
            decode_block(b, k + 1, blk, dref, scratch)?;
        }
        Ok(())
    })
}

/// Decodes a VL-block chunk into `out`.
fn decode_vl_blocks(b: &Blocks<'_>, out: &mut [u8]) -> Result<()> {
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
            if !codecs::decompress_stream(
                b.format,
                payload,
                &mut tmp,
                b.dict.as_ref(),
                &mut scratch,
            ) {
                return Err(Error::corrupt("codec data", j, start + 4));
            }
            apply_backward_simple(b, &tmp, dst, if j == 0 { None } else { Some(&dref) });
        } else {
            if !codecs::decompress_stream(b.format, payload, dst, b.dict.as_ref(), &mut scratch) {
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
                shuffle::unshuffle(
                    if meta == 0 { ts } else { usize::from(meta) },
                    &cur,
                    &mut next,
                );
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

/// Decodes `chunk` into `out[..nbytes]`; returns `nbytes`.
pub(crate) fn decode_into(chunk: &[u8], out: &mut [u8], params: &DParams) -> Result<usize> {
    let (h, kind) = classify(chunk, &params.limits)?;
    let nbytes = h.nbytes();
    let available = out.len();
    let out = out.get_mut(..nbytes).ok_or(Error::OutputTooSmall {
        needed: nbytes,
        available,
    })?;
    match kind {
        Kind::Special(sv, value) => fill_special(&h, sv, value, out),
        Kind::Memcpy(raw) => out.copy_from_slice(raw),
        Kind::Empty => {}
        Kind::Blocks(b) => decode_blocks(&b, out, params.nthreads)?,
        Kind::VlBlocks(b) => decode_vl_blocks(&b, out)?,
    }
    Ok(nbytes)
}

/// Decompresses a chunk with the default [`Limits`] on one thread.
///
/// # Errors
///
/// Any [`Error`] describing why the chunk is malformed, unsupported or too large; never
/// panics on any input.
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
            nthreads: 1,
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
    let mut out = vec![0u8; h.nbytes()];
    decode_into(chunk, &mut out, params)?;
    Ok(out)
}

/// Decompresses a chunk straight into `out` (at least `nbytes` long); returns `nbytes`.
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
            nthreads: 1,
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

/// Decodes items `start_item .. start_item + n_items` (items of the header's `typesize`),
/// decoding only the blocks that hold them (plus block 0 when the delta filter needs it).
///
/// # Errors
///
/// [`Error::ItemRange`] if the range is outside the chunk, otherwise as [`decompress`].
pub fn getitem(chunk: &[u8], start_item: usize, n_items: usize) -> Result<Vec<u8>> {
    let h = ChunkHeader::parse(chunk)?;
    let (lo, hi) = item_range(&h, start_item, n_items)?;
    let mut out = vec![0u8; hi - lo];
    getitem_into(chunk, start_item, n_items, &mut out)?;
    Ok(out)
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

/// [`getitem`] into a caller buffer; returns the number of bytes written.
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
    let (h, kind) = classify(chunk, &Limits::unlimited())?;
    let (lo, hi) = item_range(&h, start_item, n_items)?;
    let n = hi - lo;
    let available = out.len();
    let out = out.get_mut(..n).ok_or(Error::OutputTooSmall {
        needed: n,
        available,
    })?;
    match kind {
        Kind::Special(sv, value) => {
            if sv == SpecialValue::Value {
                for (k, o) in out.iter_mut().enumerate() {
                    *o = value[(lo + k) % value.len()];
                }
            } else {
                fill_special(&h, sv, value, out);
            }
        }
        Kind::Memcpy(raw) => out.copy_from_slice(&raw[lo..hi]),
        Kind::Empty => {}
        Kind::VlBlocks(b) => {
            let mut all = vec![0u8; h.nbytes()];
            decode_vl_blocks(&b, &mut all)?;
            out.copy_from_slice(&all[lo..hi]);
        }
        Kind::Blocks(b) => {
            if n == 0 {
                return Ok(0);
            }
            let bs = b.blocksize;
            let mut scratch = DecodeScratch::default();
            let mut block0 = Vec::new();
            if b.has_delta() {
                block0 = vec![0u8; b.bsize(0)];
                decode_block(&b, 0, &mut block0, None, &mut scratch)?;
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
                    decode_block(&b, j, &mut buf[..bsize], dref, &mut scratch)?;
                    &buf[..bsize]
                };
                let from = lo.max(bstart);
                let to = hi.min(bstart + bsize);
                out[from - lo..to - lo].copy_from_slice(&blk[from - bstart..to - bstart]);
            }
        }
    }
    Ok(n)
}
