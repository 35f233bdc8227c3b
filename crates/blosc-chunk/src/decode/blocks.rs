//! Validated chunks and the decoding of one regular block: chunk classification (special,
//! memcpyed, empty, regular or VL blocks), the stream layout of a block and the backward filter
//! pipeline.

use crate::codec::{self, DecodeScratch, Dict};
use crate::error::{Error, Result};
use crate::filter::bitshuffle;
use crate::filter::delta;
use crate::filter::shuffle;
use crate::header::{ChunkHeader, Filter, MAX_DICT_SIZE, SpecialValue, read_i32};
use crate::limits::Limits;
use crate::plugins::{self, BlockShape, bytedelta, cells};

use super::output::Output;

/// What the chunk is, once validated against its bytes.
pub(super) enum Kind<'a> {
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
pub(super) struct Blocks<'a> {
    pub(super) h: ChunkHeader,
    /// The chunk, cut to `cbytes`.
    pub(super) src: &'a [u8],
    pub(super) nblocks: usize,
    pub(super) blocksize: usize,
    pub(super) format: u8,
    /// Backward pipeline: (filter, meta) in the order they are undone.
    pub(super) pipeline: Vec<(Filter, u8)>,
    pub(super) dict: Option<Dict<'a>>,
    /// The b2nd block shape, for the NDCELL and NDMEAN filters.
    pub(super) shape: Option<BlockShape>,
}

impl Blocks<'_> {
    pub(super) fn bstart(&self, j: usize) -> Result<usize> {
        let off = self.h.header_len() + 4 * j;
        let v = read_i32(self.src, off)
            .ok_or_else(|| Error::truncated("bstarts", off, 4, self.src.len()))?;
        match usize::try_from(v) {
            Ok(s) if s > 0 && s < self.src.len() => Ok(s),
            _ => Err(Error::corrupt("block start", j, off)),
        }
    }

    pub(super) fn bsize(&self, j: usize) -> usize {
        let start = j * self.blocksize;
        self.blocksize.min(self.h.nbytes() - start)
    }

    pub(super) fn has_delta(&self) -> bool {
        self.pipeline.iter().any(|(f, _)| *f == Filter::Delta)
    }
}

/// Validates `chunk` and classifies it.
pub(super) fn classify<'a>(
    chunk: &'a [u8],
    limits: &Limits,
    shape: Option<BlockShape>,
) -> Result<(ChunkHeader, Kind<'a>)> {
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
    codec::check_format(h.codec_format(), h.udcodec())?;
    codec::require_enabled(h.codec())?;
    let mut pipeline = Vec::new();
    let fids = h.filter_ids();
    let metas = h.filters_meta();
    for i in (0..fids.len()).rev() {
        match Filter::from_id(fids[i]) {
            // Lossy truncations: nothing to undo (C-Blosc2 skips TRUNC_PREC and copies for
            // INT_TRUNC).
            Filter::NoFilter | Filter::TruncPrec | Filter::IntTrunc => {}
            f @ (Filter::NdCell | Filter::NdMean) => {
                plugins::need_shape(
                    if f == Filter::NdCell {
                        "ndcell"
                    } else {
                        "ndmean"
                    },
                    shape.as_ref(),
                )?;
                pipeline.push((f, metas[i]));
            }
            f @ (Filter::Shuffle | Filter::BitShuffle | Filter::Delta | Filter::ByteDelta) => {
                pipeline.push((f, metas[i]));
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
        #[cfg(feature = "zstd")]
        let zstd = if h.codec_format() == codec::FORMAT_ZSTD {
            Some(
                zstd_safe::DDict::try_create(raw).ok_or(Error::InvalidHeader {
                    what: "zstd dictionary",
                    value: i64::from(dsize),
                })?,
            )
        } else {
            None
        };
        Some(Dict {
            raw,
            #[cfg(feature = "zstd")]
            zstd,
        })
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
        shape,
    };
    if h.vl_blocks() {
        Ok((h, Kind::VlBlocks(blocks)))
    } else {
        Ok((h, Kind::Blocks(blocks)))
    }
}

/// Fills `out` with the special value.
pub(super) fn fill_special(h: &ChunkHeader, sv: SpecialValue, value: &[u8], out: &mut [u8]) {
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
///
/// On `Ok`, every piece of `dst` outside the raw slots has been written (so an uninitialized
/// `dst` without raw slots is then initialized). LZ4 streams without a dictionary are decoded
/// straight into uninitialized memory; the other codecs take initialized memory, so their part
/// of an uninitialized `dst` is zero-filled first.
fn decode_streams<'a>(
    b: &Blocks<'a>,
    j: usize,
    dst: &mut Output<'_>,
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
    for (s, d) in dst.pieces(neblock.max(1)).take(nstreams).enumerate() {
        let csize =
            read_i32(src, off).ok_or_else(|| Error::truncated("stream size", off, 4, src.len()))?;
        off += 4;
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
                    None => {
                        d.copy_from(payload);
                    }
                }
            } else if b.format == codec::FORMAT_USER {
                user_codec(b, payload, d.init())?;
            } else if !decode_stream(b, payload, d, scratch) {
                return Err(Error::corrupt("codec data", j, off));
            }
            off += cs;
        }
    }
    Ok(())
}

/// Decodes one stream of a core codec into `d`; `true` only if it filled `d` exactly.
fn decode_stream(
    b: &Blocks<'_>,
    payload: &[u8],
    d: Output<'_>,
    scratch: &mut DecodeScratch,
) -> bool {
    #[cfg(feature = "lz4")]
    if b.format == codec::FORMAT_LZ4 && b.dict.is_none() {
        // SAFETY: `decompress_uninit` returns `true` only after writing every byte of its
        // output, and stores only initialized bytes.
        #[allow(unsafe_code, reason = "see SAFETY")]
        return unsafe { d.written_by(|d| codec::lz4ffi::decompress_uninit(payload, d)) }.is_some();
    }
    #[cfg(feature = "zstd")]
    if b.format == codec::FORMAT_ZSTD {
        // SAFETY: `zstd::decompress_uninit` returns `true` only after libzstd wrote every byte
        // of its output, and libzstd stores only initialized bytes.
        #[allow(unsafe_code, reason = "see SAFETY")]
        return unsafe {
            d.written_by(|d| codec::zstd::decompress_uninit(payload, d, b.dict.as_ref(), scratch))
        }
        .is_some();
    }
    codec::decompress_stream(b.format, payload, d.init(), b.dict.as_ref(), scratch)
}

/// Decodes one stream of a plugin codec (format code 6; the id is in the `udcodec` byte).
fn user_codec(b: &Blocks<'_>, payload: &[u8], d: &mut [u8]) -> Result<()> {
    let meta = b.h.compcode_meta();
    match crate::Codec::from_id(b.h.udcodec()) {
        crate::Codec::NdLz => plugins::ndlz::decompress(meta, payload, d),
        #[cfg(feature = "zfp")]
        c @ (crate::Codec::ZfpAcc | crate::Codec::ZfpPrec | crate::Codec::ZfpRate) => {
            plugins::zfp::decompress(c, meta, b.shape.as_ref(), b.h.typesize(), payload, d)
        }
        c => Err(Error::Unsupported {
            what: "codec",
            id: u32::from(c.id()),
        }),
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Buf {
    Tmp1,
    Tmp2,
    Out,
}

/// Decodes block `j` into `out` (`bsize` bytes) and returns it, all written. `dref` is the
/// decoded block 0 (for delta; `None` when `j == 0`).
pub(super) fn decode_block<'o>(
    b: &Blocks<'_>,
    j: usize,
    out: Output<'o>,
    dref: Option<&[u8]>,
    scratch: &mut DecodeScratch,
) -> Result<&'o mut [u8]> {
    #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
    let out = match unshuffle_split_block(b, j, out, scratch)? {
        Ok(done) => return Ok(done),
        Err(out) => out,
    };
    let ts = b.h.typesize();
    let bsize = out.len();
    if b.pipeline.iter().all(|&(f, meta)| {
        f == Filter::Shuffle && !shuffle::moves_bytes(shuffle::group(ts, meta), bsize)
    }) {
        // No filter (or only a shuffle that moves no byte: type size 1): the streams are the
        // block, decoded straight into `out` (a fresh output is not zero-filled first, except
        // for codecs that need initialized memory).
        let mut out = out;
        decode_streams(b, j, &mut out, scratch, &mut [])?;
        // SAFETY: `decode_streams` returned `Ok` without raw slots, so it wrote every piece of
        // `out`.
        #[allow(unsafe_code, reason = "see SAFETY")]
        return Ok(unsafe { out.assume_written() });
    }
    let out = out.init();
    decode_block_init(b, j, out, dref, scratch)?;
    Ok(out)
}

/// [`decode_block`] into initialized bytes, through the general filter pipeline.
fn decode_block_init(
    b: &Blocks<'_>,
    j: usize,
    out: &mut [u8],
    dref: Option<&[u8]>,
    scratch: &mut DecodeScratch,
) -> Result<()> {
    let bsize = out.len();
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
        let first: &mut [u8] = match cur {
            Buf::Out => &mut *out,
            _ => &mut tmp1[..bsize],
        };
        decode_streams(b, j, &mut Output::Init(first), scratch, &mut [])?;
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
                    shuffle::unshuffle(shuffle::group(ts, meta), s, d);
                }
                Filter::BitShuffle => {
                    if b.h.version() == 2 {
                        bitshuffle::bitunshuffle_v2(ts, s, d, &mut bits);
                    } else {
                        bitshuffle::bitunshuffle(ts, s, d, &mut bits);
                    }
                }
                Filter::ByteDelta => bytedelta::decode(meta, ts, s, d)?,
                Filter::NdCell | Filter::NdMean => {
                    let kind = if f == Filter::NdCell {
                        cells::Kind::NdCell
                    } else {
                        cells::Kind::NdMean
                    };
                    let shape = b.shape.as_ref().ok_or(Error::MissingBlockShape {
                        plugin: if kind == cells::Kind::NdCell {
                            "ndcell"
                        } else {
                            "ndmean"
                        },
                    })?;
                    cells::decode(kind, shape, meta, ts, s, d)?;
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

/// The common cases of a byte-shuffled block, unshuffled straight from its byte planes into
/// `out`: the pipeline is one shuffle of the type size 2, 4, 8 or 16, or BYTEDELTA with one
/// stream per byte and then that shuffle (python-blosc2's pipeline for floats; the running
/// sums are taken on the way, in the same pass); the block is stored as one stream per byte
/// plane or as a single stream. Planes stored raw are read from the chunk instead of being
/// copied into the scratch block first (C-Blosc2 copies them). The unshuffle writes every byte
/// of `out`, which therefore needs no zero-filling first. Returns `Err(out)`, having done
/// nothing, if the block is not of that kind.
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
fn unshuffle_split_block<'o>(
    b: &Blocks<'_>,
    j: usize,
    out: Output<'o>,
    scratch: &mut DecodeScratch,
) -> Result<core::result::Result<&'o mut [u8], Output<'o>>> {
    let bsize = out.len();
    let ts = b.h.typesize();
    let group = |meta: u8| shuffle::group(ts, meta);
    let summed = match b.pipeline.as_slice() {
        [(Filter::Shuffle, m)] if group(*m) == ts => false,
        [(Filter::ByteDelta, d), (Filter::Shuffle, m)]
            if group(*m) == ts && bytedelta::streams(*d, ts).is_ok_and(|s| s == ts) =>
        {
            true
        }
        _ => return Ok(Err(out)),
    };
    let nstreams = b.h.nstreams(bsize);
    if !matches!(ts, 2 | 4 | 8 | 16)
        || !(nstreams == ts || nstreams == 1)
        || !bsize.is_multiple_of(ts)
    {
        return Ok(Err(out));
    }
    let n = bsize / ts;
    let mut tmp1 = core::mem::take(&mut scratch.tmp1);
    if tmp1.len() < bsize {
        tmp1.resize(bsize, 0);
    }
    let mut raw: [Option<&[u8]>; 16] = [None; 16];
    let mut streams = Output::Init(&mut tmp1[..bsize]);
    let result = decode_streams(b, j, &mut streams, scratch, &mut raw[..nstreams]).map(|()| {
        let planes: [&[u8]; 16] = core::array::from_fn(|s| {
            let (stream, at) = if nstreams == ts { (s, 0) } else { (0, s * n) };
            let base = raw.get(stream).copied().flatten();
            let base = base.unwrap_or_else(|| tmp1.get(stream * n..bsize).unwrap_or_default());
            base.get(at..at + n).unwrap_or_default()
        });
        let planes = &planes[..ts];
        // SAFETY: `unshuffle_planes` returns `true` only after writing every byte of its
        // output, and stores only initialized bytes.
        #[allow(unsafe_code, reason = "see SAFETY")]
        unsafe {
            out.written_by(|d| shuffle::unshuffle_planes(planes, d, n, summed))
        }
    });
    scratch.tmp1 = tmp1;
    match result? {
        Some(done) => Ok(Ok(done)),
        None => Err(Error::corrupt("filter pipeline", j, 0)),
    }
}
