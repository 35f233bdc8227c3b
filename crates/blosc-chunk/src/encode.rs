//! Chunk encoding, byte-identical to C-Blosc2 3.3.5 (single-threaded) for BloscLZ, LZ4, LZ4HC
//! and zstd.

use crate::bitshuffle;
use crate::codecs::{self, EncodeScratch};
use crate::delta;
use crate::dict;
use crate::error::{Error, Result};
use crate::header::{
    B2FLAG_USEDICT, Codec, EXTENDED_HEADER_LENGTH, FLAG_BITSHUFFLE, FLAG_DELTA, FLAG_DONT_SPLIT,
    FLAG_MEMCPYED, FLAG_SHUFFLE, Filter, HeaderFields, MAX_BUFFERSIZE, MAX_FILTERS, MAX_OVERHEAD,
    MIN_BUFFERSIZE, MIN_HEADER_LENGTH, SplitMode, VERSION_FORMAT_STABLE,
};
use crate::shuffle;
use crate::truncprec;
use crate::tune;

/// Largest type size C-Blosc2 accepts (`BLOSC2_MAXTYPESIZE`).
const MAX_TYPESIZE: usize = 536_866_816;

/// Compression parameters, like C-Blosc2's `blosc2_cparams`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct CParams {
    /// Codec.
    pub codec: Codec,
    /// Compression level 0–9 (0 = store raw).
    pub clevel: u8,
    /// Item size in bytes; above 255 it is treated as 1, as C-Blosc2 does.
    pub typesize: usize,
    /// Filter pipeline, applied from slot 0 to slot 5.
    pub filters: [Filter; MAX_FILTERS],
    /// Per-slot filter metadata.
    pub filters_meta: [u8; MAX_FILTERS],
    /// Block size in bytes, 0 = automatic (C-Blosc2's `stune` rules). Must be a multiple of
    /// `typesize`.
    pub blocksize: usize,
    /// When to split blocks into one stream per byte of the type.
    pub splitmode: SplitMode,
    /// Threads for block-parallel compression (1 = serial; output is identical either way;
    /// 0 = all cores). Needs the `parallel` feature.
    pub nthreads: usize,
    /// Write a 16-byte Blosc1 header instead of the 32-byte extended one. Only SHUFFLE or
    /// BITSHUFFLE in slot 5 and DELTA in slot 4 can be expressed (other pipelines are refused);
    /// `filters_meta` cannot be stored and is ignored.
    pub blosc1_header: bool,
    /// Build a dictionary from the chunk and compress every stream with it (C-Blosc2's
    /// `use_dict`; zstd, LZ4 and LZ4HC only, extended header only). Inputs too small for a
    /// useful dictionary (under 5 120 bytes) are compressed without one. Dictionary chunks are
    /// encoded on one thread.
    pub use_dict: bool,
}

impl Default for CParams {
    /// C-Blosc2's `BLOSC2_CPARAMS_DEFAULTS`: BloscLZ, clevel 5, typesize 8, SHUFFLE in slot 5,
    /// automatic block size, forward-compatible split mode, one thread.
    fn default() -> Self {
        Self {
            codec: Codec::BloscLz,
            clevel: 5,
            typesize: 8,
            filters: [
                Filter::NoFilter,
                Filter::NoFilter,
                Filter::NoFilter,
                Filter::NoFilter,
                Filter::NoFilter,
                Filter::Shuffle,
            ],
            filters_meta: [0; MAX_FILTERS],
            blocksize: 0,
            splitmode: SplitMode::ForwardCompat,
            nthreads: 1,
            blosc1_header: false,
            use_dict: false,
        }
    }
}

impl CParams {
    /// Parameters with one filter in slot 0 (what python-blosc2's `filters=[f]` does).
    #[must_use]
    pub fn with_filter(codec: Codec, clevel: u8, typesize: usize, filter: Filter) -> Self {
        let mut filters = [Filter::NoFilter; MAX_FILTERS];
        filters[0] = filter;
        Self {
            codec,
            clevel,
            typesize,
            filters,
            splitmode: SplitMode::Auto,
            ..Self::default()
        }
    }
}

/// Everything the block encoder needs, resolved from [`CParams`] and the input size.
#[derive(Debug, Clone)]
pub(crate) struct Plan {
    pub(crate) codec: Codec,
    pub(crate) clevel: u8,
    pub(crate) typesize: usize,
    pub(crate) filters: [Filter; MAX_FILTERS],
    pub(crate) filters_meta: [u8; MAX_FILTERS],
    pub(crate) extended: bool,
    pub(crate) blocksize: usize,
    pub(crate) nblocks: usize,
    pub(crate) split: bool,
    pub(crate) nbytes: usize,
    pub(crate) destsize: usize,
    pub(crate) header_len: usize,
    pub(crate) flags: u8,
    pub(crate) memcpyed: bool,
    pub(crate) use_dict: bool,
}

fn filter_flags(filters: &[Filter; MAX_FILTERS]) -> u8 {
    let mut f = 0;
    for x in filters {
        match x {
            Filter::Shuffle => f |= FLAG_SHUFFLE,
            Filter::BitShuffle => f |= FLAG_BITSHUFFLE,
            Filter::Delta => f |= FLAG_DELTA,
            _ => {}
        }
    }
    f
}

/// Resolves parameters for an input of `nbytes` bytes.
pub(crate) fn plan(nbytes: usize, cp: &CParams) -> Result<Plan> {
    if cp.clevel > 9 {
        return Err(Error::InvalidParam {
            what: "clevel",
            why: "must be 0..=9",
        });
    }
    if cp.typesize == 0 || cp.typesize > MAX_TYPESIZE {
        return Err(Error::InvalidParam {
            what: "typesize",
            why: "must be 1..=536866816",
        });
    }
    if nbytes > MAX_BUFFERSIZE {
        return Err(Error::InvalidParam {
            what: "input length",
            why: "above BLOSC2_MAX_BUFFERSIZE",
        });
    }
    let Some(format) = cp.codec.format_code() else {
        return Err(Error::Unsupported {
            what: "codec",
            id: u32::from(cp.codec.id()),
        });
    };
    if cp.use_dict && (!dict::supports(cp.codec) || cp.blosc1_header) {
        return Err(Error::InvalidParam {
            what: "use_dict",
            why: "dictionaries need zstd, lz4 or lz4hc and the extended header",
        });
    }
    let typesize = if cp.typesize > 255 { 1 } else { cp.typesize };
    let mut filters = cp.filters;
    for f in &filters {
        if let Filter::Other(id) = f {
            return Err(Error::Unsupported {
                what: "filter",
                id: u32::from(*id),
            });
        }
    }
    if cp.blosc1_header {
        let mut mapped = [Filter::NoFilter; MAX_FILTERS];
        let mut byte_shuffle = false;
        let mut bit_shuffle = false;
        let mut delta = false;
        for f in &filters {
            match f {
                Filter::Shuffle => byte_shuffle = true,
                Filter::BitShuffle => bit_shuffle = true,
                Filter::Delta => delta = true,
                Filter::NoFilter => {}
                _ => {
                    return Err(Error::InvalidParam {
                        what: "filters",
                        why: "a Blosc1 header can only express shuffle, bitshuffle and delta",
                    });
                }
            }
        }
        if byte_shuffle && bit_shuffle {
            return Err(Error::InvalidParam {
                what: "filters",
                why: "a Blosc1 header cannot hold both shuffle and bitshuffle",
            });
        }
        // The header applies delta first, then one (bit)shuffle: any other pipeline (repeated
        // or reordered filters) would silently decode to different data, so it is refused.
        let seq: Vec<Filter> = filters
            .iter()
            .copied()
            .filter(|f| *f != Filter::NoFilter)
            .collect();
        if !matches!(
            seq.as_slice(),
            [] | [Filter::Delta]
                | [Filter::Shuffle | Filter::BitShuffle]
                | [Filter::Delta, Filter::Shuffle | Filter::BitShuffle]
        ) {
            return Err(Error::InvalidParam {
                what: "filters",
                why: "a Blosc1 header holds at most delta followed by one shuffle or bitshuffle",
            });
        }
        if byte_shuffle && typesize > 1 {
            mapped[5] = Filter::Shuffle;
        } else if bit_shuffle {
            mapped[5] = Filter::BitShuffle;
        }
        if delta {
            mapped[4] = Filter::Delta;
        }
        filters = mapped;
    }
    let fflags = filter_flags(&filters);
    let has_shuffle = fflags & FLAG_SHUFFLE != 0;
    let blocksize = tune::compute_blocksize(
        cp.clevel,
        typesize,
        nbytes,
        cp.blocksize,
        cp.codec,
        has_shuffle,
        cp.splitmode,
    );
    // A requested block size below `nbytes` that is not a multiple of the type size makes
    // C-Blosc2 3.3.5 write an undecodable chunk: refuse it. (One at or above `nbytes` is
    // clamped; C would then write the unrounded `nbytes` into the header, also undecodable when
    // `nbytes` is not a multiple of the type size; we write the rounded, decodable value.)
    if cp.blocksize != 0 && cp.blocksize < nbytes && nbytes >= typesize && cp.blocksize != blocksize
    {
        return Err(Error::InvalidParam {
            what: "blocksize",
            why: "must be a multiple of typesize (C-Blosc2 would write an undecodable chunk)",
        });
    }
    let nblocks = if nbytes == 0 {
        0
    } else {
        nbytes.div_ceil(blocksize)
    };
    // Blocks are split into `typesize` streams only when they divide evenly (a user block size
    // below the type size can reach here); otherwise the header must say "don't split", or
    // decoders expect `typesize` streams and refuse the chunk.
    let split = tune::split_block(
        cp.splitmode,
        cp.codec,
        cp.clevel,
        has_shuffle,
        typesize,
        blocksize,
    ) && blocksize.is_multiple_of(typesize);
    let extended = !cp.blosc1_header;
    let header_len = if extended {
        EXTENDED_HEADER_LENGTH
    } else {
        MIN_HEADER_LENGTH
    };
    let destsize = nbytes + MAX_OVERHEAD;
    let mut memcpyed = cp.clevel == 0 || nbytes < MIN_BUFFERSIZE;
    let mut flags = if extended {
        FLAG_SHUFFLE | FLAG_BITSHUFFLE
    } else {
        0
    };
    if header_len + 4 * nblocks > destsize {
        memcpyed = true;
    }
    if memcpyed {
        flags |= FLAG_MEMCPYED;
    } else {
        flags |= fflags | (format << 5);
        if !split {
            flags |= FLAG_DONT_SPLIT;
        }
    }
    Ok(Plan {
        codec: cp.codec,
        clevel: cp.clevel,
        typesize,
        filters,
        // A Blosc1 header has no room for filter metadata: the decoder uses the defaults.
        filters_meta: if cp.blosc1_header {
            [0; MAX_FILTERS]
        } else {
            cp.filters_meta
        },
        extended,
        blocksize,
        nblocks,
        split,
        nbytes,
        destsize,
        header_len,
        flags,
        memcpyed,
        use_dict: cp.use_dict,
    })
}

impl Plan {
    fn header(&self, flags: u8, cbytes: usize, blosc2_flags: u8) -> HeaderFields {
        HeaderFields {
            version: VERSION_FORMAT_STABLE,
            flags,
            typesize: u8::try_from(self.typesize).unwrap_or(1),
            nbytes: self.nbytes,
            blocksize: self.blocksize,
            cbytes,
            filters: self.filters.map(Filter::id),
            udcodec: self.codec.id(),
            filters_meta: self.filters_meta,
            blosc2_flags,
        }
    }

    pub(crate) fn bsize(&self, j: usize) -> usize {
        self.blocksize.min(self.nbytes - j * self.blocksize)
    }

    pub(crate) fn nstreams(&self, bsize: usize) -> usize {
        if self.split && bsize == self.blocksize && bsize.is_multiple_of(self.typesize) {
            self.typesize
        } else {
            1
        }
    }

    /// The output buffer before the first block: header and block-start table (zeros), with
    /// room for the whole budget.
    pub(crate) fn output_start(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.destsize + 8);
        out.resize(self.header_len + 4 * self.nblocks, 0);
        out
    }

    /// Records that block `j` starts at the current end of `out`.
    pub(crate) fn write_bstart(&self, out: &mut [u8], j: usize) {
        let start = i32::try_from(out.len()).unwrap_or(i32::MAX).to_le_bytes();
        let pos = self.header_len + 4 * j;
        out[pos..pos + 4].copy_from_slice(&start);
    }

    /// The memcpyed chunk: header + raw input.
    fn memcpy_chunk(&self, data: &[u8]) -> Result<Vec<u8>> {
        let cbytes = self.header_len + data.len();
        let mut out = vec![0u8; cbytes];
        self.header(self.flags | FLAG_MEMCPYED, cbytes, 0)
            .write(&mut out, self.extended)?;
        out[self.header_len..].copy_from_slice(data);
        Ok(out)
    }
}

/// Scratch buffers for the forward filter pipeline.
#[derive(Debug, Default)]
pub(crate) struct FilterBufs {
    a: Vec<u8>,
    b: Vec<u8>,
    /// Scratch of the bit shuffle.
    bits: Vec<u8>,
}

/// Per-thread encoder state, kept between calls.
#[derive(Debug, Default)]
pub(crate) struct EncodeState {
    pub(crate) bufs: FilterBufs,
    pub(crate) codec: EncodeScratch,
}

impl codecs::Scratch for EncodeState {
    fn trim(&mut self) {
        codecs::trim_buf(&mut self.bufs.a);
        codecs::trim_buf(&mut self.bufs.b);
        codecs::trim_buf(&mut self.bufs.bits);
        codecs::trim_buf(&mut self.codec.stream);
    }
}

thread_local! {
    static ENCODE_STATE: core::cell::RefCell<EncodeState> =
        core::cell::RefCell::new(EncodeState::default());
}

/// Runs `f` with this thread's reusable encoder state.
pub(crate) fn with_encode_state<R>(f: impl FnOnce(&mut EncodeState) -> R) -> R {
    codecs::with_scratch(&ENCODE_STATE, f)
}

/// Runs the forward pipeline on block `j`; returns the filtered bytes.
pub(crate) fn forward<'a>(
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
        .filter(|&i| p.filters[i] != Filter::NoFilter)
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
            Filter::Shuffle => {
                let group = if meta == 0 { ts } else { usize::from(meta) };
                shuffle::shuffle(group, s, d);
            }
            Filter::BitShuffle => bitshuffle::bitshuffle(ts, s, d, &mut bufs.bits),
            Filter::Delta => delta::encode(ts, offset, dref, s, d),
            Filter::TruncPrec => truncprec::encode(ts, meta, s, d)?,
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

/// Whether `s` is one byte value repeated (and not empty).
pub(crate) fn is_run(s: &[u8]) -> bool {
    let Some(&v) = s.first() else {
        return false;
    };
    // Whole 32-byte words compare as vectors.
    let (words, tail) = s.as_chunks::<32>();
    words.iter().all(|w| *w == [v; 32]) && tail.iter().all(|&b| b == v)
}

/// Outcome of encoding one block at a position of the serial output.
pub(crate) enum BlockResult {
    /// Appended.
    Done,
    /// Budget exhausted: the whole chunk becomes memcpyed.
    GiveUp,
}

/// Appends the (already filtered) block to `out` (the serial output so far), following C's
/// serial budget rules exactly (`destsize = nbytes + 32`).
pub(crate) fn encode_block(
    p: &Plan,
    filtered: &[u8],
    out: &mut Vec<u8>,
    scratch: &mut EncodeScratch,
) -> BlockResult {
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
                return BlockResult::GiveUp;
            }
            let v = stream[0];
            if v != 0 {
                out[csize_pos..ntbytes].copy_from_slice(&(-i32::from(v)).to_le_bytes());
                out.push(1);
            }
            continue;
        }
        let mut maxout = neblock;
        if ntbytes + maxout > p.destsize {
            if ntbytes >= p.destsize {
                return BlockResult::GiveUp;
            }
            maxout = p.destsize - ntbytes;
        }
        // Compress into the reused stream buffer, so that `out` never needs zero-filling.
        let mut buf = core::mem::take(&mut scratch.stream);
        if buf.len() < maxout {
            buf.resize(maxout, 0);
        }
        let c = codecs::compress_stream(p.codec, p.clevel, stream, &mut buf[..maxout], scratch);
        let cbytes = if c == 0 || c >= neblock {
            if ntbytes + neblock > p.destsize {
                scratch.stream = buf;
                return BlockResult::GiveUp;
            }
            out.extend_from_slice(stream);
            neblock
        } else {
            out.extend_from_slice(&buf[..c]);
            c
        };
        scratch.stream = buf;
        let cs = i32::try_from(cbytes).unwrap_or(i32::MAX);
        out[csize_pos..ntbytes].copy_from_slice(&cs.to_le_bytes());
    }
    BlockResult::Done
}

/// Total number of streams in the chunk.
fn total_streams(p: &Plan) -> usize {
    (0..p.nblocks).map(|j| p.nstreams(p.bsize(j))).sum()
}

/// Assembles the final chunk from `out` (the serial layout, `ntbytes` long).
fn finish(p: &Plan, mut out: Vec<u8>, ntbytes: usize, blosc2_flags: u8) -> Result<Vec<u8>> {
    if p.extended && ntbytes == p.header_len + 4 * p.nblocks + 4 * total_streams(p) {
        // Every stream is a zero run: a zero special chunk.
        out.truncate(p.header_len);
        p.header(p.flags, p.header_len, 0x10)
            .write(&mut out, true)?;
        return Ok(out);
    }
    out.truncate(ntbytes);
    p.header(p.flags, ntbytes, blosc2_flags)
        .write(&mut out, p.extended)?;
    Ok(out)
}

/// Compresses `data` into one chunk.
///
/// With `nthreads == 1` (or without the `parallel` feature) this follows C-Blosc2's serial
/// algorithm, so the bytes equal C-Blosc2 3.3.5's output for BloscLZ, LZ4, LZ4HC and zstd
/// (zlib round-trips but C-Blosc2 links zlib-ng, whose streams differ). With more threads the
/// output is identical to the single-threaded one.
///
/// # Errors
///
/// [`Error::InvalidParam`] for a clevel above 9, typesize 0, a block size that is not a
/// multiple of the type size, or filters a Blosc1 header cannot express;
/// [`Error::Unsupported`] for plugin codecs/filters; [`Error::InvalidParam`] from
/// truncate-precision with a typesize other than 4 or 8.
pub fn compress(data: &[u8], cparams: &CParams) -> Result<Vec<u8>> {
    let p = plan(data.len(), cparams)?;
    if p.memcpyed {
        return p.memcpy_chunk(data);
    }
    #[cfg(feature = "parallel")]
    if crate::parallel::use_threads(cparams.nthreads, p.nblocks) && !p.use_dict {
        return match crate::parallel::encode_blocks(&p, data, cparams.nthreads)? {
            Some((out, ntbytes)) => finish(&p, out, ntbytes, 0),
            None => p.memcpy_chunk(data),
        };
    }
    with_encode_state(|st| {
        if p.use_dict {
            compress_with_dict(&p, data, st)
        } else {
            compress_serial(&p, data, st)
        }
    })
}

/// C-Blosc2's serial encoder.
fn compress_serial(p: &Plan, data: &[u8], st: &mut EncodeState) -> Result<Vec<u8>> {
    let mut out = p.output_start();
    for j in 0..p.nblocks {
        p.write_bstart(&mut out, j);
        let filtered = forward(p, data, j, &mut st.bufs)?;
        if let BlockResult::GiveUp = encode_block(p, filtered, &mut out, &mut st.codec) {
            return p.memcpy_chunk(data);
        }
    }
    let ntbytes = out.len();
    finish(p, out, ntbytes, 0)
}

/// A dictionary chunk: a first pass filters every block, the dictionary is built from the
/// result (see [`crate::dict`]) and stored after the block starts, then every stream is
/// compressed with it.
fn compress_with_dict(p: &Plan, data: &[u8], st: &mut EncodeState) -> Result<Vec<u8>> {
    let mut copied = Vec::with_capacity(p.nbytes);
    for j in 0..p.nblocks {
        copied.extend_from_slice(forward(p, data, j, &mut st.bufs)?);
    }
    let streams_per_block = if p.split { p.typesize } else { 1 };
    let Some(dict) = dict::build(p.codec, p.nblocks, streams_per_block, &copied)? else {
        return compress_serial(p, data, st);
    };
    let mut out = p.output_start();
    out.extend_from_slice(&i32::try_from(dict.len()).unwrap_or(i32::MAX).to_le_bytes());
    out.extend_from_slice(&dict);
    st.codec.dict = Some(dict::encoder(p.codec, &dict)?);
    let mut fits = true;
    for (j, filtered) in copied.chunks(p.blocksize).enumerate() {
        p.write_bstart(&mut out, j);
        if let BlockResult::GiveUp = encode_block(p, filtered, &mut out, &mut st.codec) {
            fits = false;
            break;
        }
    }
    st.codec.dict = None;
    if !fits {
        // C-Blosc2 3.3.5 keeps the USEDICT flag on this memcpyed chunk and then cannot decode
        // it ("Cannot decompress"); without the flag it can. We write the readable chunk.
        return p.memcpy_chunk(data);
    }
    let ntbytes = out.len();
    finish(p, out, ntbytes, B2FLAG_USEDICT)
}
