//! Chunk encoding, byte-identical to C-Blosc2 3.3.5 (single-threaded) for BloscLZ, LZ4, LZ4HC
//! and zstd.

mod block;
#[cfg(feature = "parallel")]
mod parallel;
mod params;
mod plan;

pub use self::params::{CParams, Format};

use self::block::{BlockResult, EncodeState, encode_block, forward, with_encode_state};
use self::plan::{Plan, plan};
use crate::codec::dict;
use crate::error::Result;
use crate::flags::Blosc2Flags;
use crate::header::SpecialValue;

/// Total number of streams in the chunk.
fn total_streams(p: &Plan) -> usize {
    (0..p.nblocks).map(|j| p.nstreams(p.bsize(j))).sum()
}

/// Assembles the final chunk from `out` (the serial layout, `ntbytes` long).
fn finish(
    p: &Plan,
    mut out: Vec<u8>,
    ntbytes: usize,
    blosc2_flags: Blosc2Flags,
) -> Result<Vec<u8>> {
    if p.extended && ntbytes == p.header_len + 4 * p.nblocks + 4 * total_streams(p) {
        // Every stream is a zero run: a zero special chunk.
        out.truncate(p.header_len);
        p.header(
            p.flags,
            p.header_len,
            Blosc2Flags::special(SpecialValue::Zeros.code()),
        )
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
/// [`Error::InvalidParam`](crate::Error::InvalidParam) for a clevel above 9, typesize 0, a
/// block size that is not a multiple of the type size, or filters a Blosc1 header cannot
/// express; [`Error::Unsupported`](crate::Error::Unsupported) for plugin codecs/filters;
/// [`Error::CodecDisabled`](crate::Error::CodecDisabled) for a codec whose Cargo feature is off
/// (whatever the input); [`Error::InvalidParam`](crate::Error::InvalidParam) from
/// truncate-precision with a typesize other than 4 or 8.
pub fn compress(data: &[u8], cparams: &CParams) -> Result<Vec<u8>> {
    let p = plan(data.len(), cparams)?;
    if p.memcpyed {
        return p.memcpy_chunk(data);
    }
    #[cfg(feature = "parallel")]
    // NDLZ streams are encoded on one thread (the parallel path only knows the core codecs).
    if crate::pool::use_threads(cparams.nthreads, p.nblocks)
        && !p.use_dict
        && p.codec.format_code() != Some(crate::codec::FORMAT_USER)
    {
        return match parallel::encode_blocks(&p, data, cparams.nthreads)? {
            parallel::Encoded::Blocks(out, ntbytes) => {
                finish(&p, out, ntbytes, Blosc2Flags::empty())
            }
            parallel::Encoded::Memcpy(out) => p.memcpy_chunk_in(out, data),
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
        if let BlockResult::GiveUp = encode_block(p, filtered, &mut out, &mut st.codec)? {
            return p.memcpy_chunk_in(out, data);
        }
    }
    let ntbytes = out.len();
    finish(p, out, ntbytes, Blosc2Flags::empty())
}

/// A dictionary chunk: a first pass filters every block, the dictionary is built from the
/// result (see [`crate::codec::dict`]) and stored after the block starts, then every stream is
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
        if let BlockResult::GiveUp = encode_block(p, filtered, &mut out, &mut st.codec)? {
            fits = false;
            break;
        }
    }
    st.codec.dict = None;
    if !fits {
        // C-Blosc2 3.3.5 keeps the USEDICT flag on this memcpyed chunk and then cannot decode
        // it ("Cannot decompress"); without the flag it can. We write the readable chunk.
        return p.memcpy_chunk_in(out, data);
    }
    let ntbytes = out.len();
    finish(p, out, ntbytes, Blosc2Flags::USE_DICT)
}
