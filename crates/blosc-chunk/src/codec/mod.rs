//! The compressors (codecs) of a chunk's streams and their dispatch: one stream in, one stream
//! out.
//!
//! * `blosclz`: BloscLZ, ours, always built in (C-Blosc2's 2.5.3 and C-Blosc 1's 2.5.1
//!   flavours).
//! * `lz4ffi`: LZ4/LZ4HC through liblz4 1.10.0 (compiled by the `lz4` crate's `lz4-sys`,
//!   feature `lz4`), including the streaming API dictionary chunks need; `lz4dict`: a small
//!   safe decoder for LZ4 streams that reference a dictionary.
//! * `zstd`: Zstandard through `zstd-safe` (libzstd 1.5.7, feature `zstd`).
//! * `zlib`: zlib through `zlib-rs` (Rust, feature `zlib`).
//! * `dict`: the dictionary of a `use_dict` chunk and the per-stream encoders using it.
//!
//! A codec whose feature is off never reaches this module: chunks and parameters naming it are
//! refused with [`Error::CodecDisabled`] first, so its arms here report failure. The plugin
//! codecs (NDLZ, ZFP) are in `plugins`.
//!
//! Encoders write into memory that need not be initialized: [`append_stream`] compresses a
//! stream straight into the spare capacity of the chunk being built.

pub(crate) mod blosclz;
pub(crate) mod dict;
#[cfg(feature = "lz4")]
pub(crate) mod lz4dict;
#[cfg(feature = "lz4")]
pub(crate) mod lz4ffi;
#[cfg(feature = "zlib")]
pub(crate) mod zlib;
#[cfg(feature = "zstd")]
pub(crate) mod zstd;

use core::mem::MaybeUninit;

use crate::codec_id::Codec;
use crate::error::{Error, Result};

/// Stream format codes (flags bits 5–7).
pub(crate) const FORMAT_BLOSCLZ: u8 = 0;
pub(crate) const FORMAT_LZ4: u8 = 1;
pub(crate) const FORMAT_ZLIB: u8 = 3;
pub(crate) const FORMAT_ZSTD: u8 = 4;
/// User-defined and plugin codecs: the codec id is in the `udcodec` header byte.
pub(crate) const FORMAT_USER: u8 = 6;

/// A dictionary for one chunk.
pub(crate) struct Dict<'a> {
    pub(crate) raw: &'a [u8],
    #[cfg(feature = "zstd")]
    pub(crate) zstd: Option<zstd_safe::DDict<'static>>,
}

impl core::fmt::Debug for Dict<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Dict")
            .field("len", &self.raw.len())
            .finish()
    }
}

/// Per-thread decoder state, reused across streams and blocks.
#[derive(Default)]
pub(crate) struct DecodeScratch {
    #[cfg(feature = "zstd")]
    zstd: Option<zstd_safe::DCtx<'static>>,
    pub(crate) tmp1: Vec<u8>,
    pub(crate) tmp2: Vec<u8>,
    /// Scratch of the bit unshuffle.
    pub(crate) bits: Vec<u8>,
}

impl core::fmt::Debug for DecodeScratch {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("DecodeScratch").finish_non_exhaustive()
    }
}

/// Scratch buffers larger than this are not kept between calls.
const MAX_RETAINED_SCRATCH: usize = 8 << 20;

/// Per-thread state reused across calls; [`Scratch::trim`] drops what is too big to keep.
pub(crate) trait Scratch: Default + 'static {
    /// Releases buffers above [`MAX_RETAINED_SCRATCH`].
    fn trim(&mut self);
}

/// Empties `v` if its capacity is above [`MAX_RETAINED_SCRATCH`].
pub(crate) fn trim_buf(v: &mut Vec<u8>) {
    if v.capacity() > MAX_RETAINED_SCRATCH {
        *v = Vec::new();
    }
}

impl Scratch for DecodeScratch {
    fn trim(&mut self) {
        trim_buf(&mut self.tmp1);
        trim_buf(&mut self.tmp2);
        trim_buf(&mut self.bits);
    }
}

/// Runs `f` with this thread's state in `key` (a fresh one if it is already in use).
pub(crate) fn with_scratch<T: Scratch, R>(
    key: &'static std::thread::LocalKey<core::cell::RefCell<T>>,
    f: impl FnOnce(&mut T) -> R,
) -> R {
    key.with(|cell| match cell.try_borrow_mut() {
        Ok(mut s) => {
            let r = f(&mut s);
            s.trim();
            r
        }
        Err(_) => f(&mut T::default()),
    })
}

thread_local! {
    static DECODE_SCRATCH: core::cell::RefCell<DecodeScratch> =
        core::cell::RefCell::new(DecodeScratch::default());
}

/// Runs `f` with this thread's reusable decoder state (a fresh one if it is already in use).
pub(crate) fn with_decode_scratch<R>(f: impl FnOnce(&mut DecodeScratch) -> R) -> R {
    with_scratch(&DECODE_SCRATCH, f)
}

/// [`Error::CodecDisabled`] if `codec` is built in but its Cargo feature is off.
pub(crate) fn require_enabled(codec: Codec) -> Result<()> {
    match codec.feature() {
        Some(feature) if !codec.is_enabled() => Err(Error::CodecDisabled { codec, feature }),
        _ => Ok(()),
    }
}

/// Checks that `format` is a stream format we can decode.
pub(crate) fn check_format(format: u8, udcodec: u8) -> Result<()> {
    match format {
        FORMAT_BLOSCLZ | FORMAT_LZ4 | FORMAT_ZLIB | FORMAT_ZSTD => Ok(()),
        FORMAT_USER if udcodec == Codec::NdLz.id() => Ok(()),
        FORMAT_USER
            if matches!(
                Codec::from_id(udcodec),
                Codec::ZfpAcc | Codec::ZfpPrec | Codec::ZfpRate
            ) =>
        {
            require_enabled(Codec::from_id(udcodec))
        }
        FORMAT_USER => Err(Error::Unsupported {
            what: "codec",
            id: u32::from(udcodec),
        }),
        2 => Err(Error::Unsupported {
            what: "codec",
            id: 3,
        }),
        other => Err(Error::Unsupported {
            what: "codec format",
            id: u32::from(other),
        }),
    }
}

/// Decodes one stream; succeeds only if exactly `dst.len()` bytes come out.
pub(crate) fn decompress_stream(
    format: u8,
    src: &[u8],
    dst: &mut [u8],
    dict: Option<&Dict<'_>>,
    scratch: &mut DecodeScratch,
) -> bool {
    let want = dst.len();
    #[cfg(not(any(feature = "lz4", feature = "zstd")))]
    let _ = dict;
    #[cfg(not(feature = "zstd"))]
    let _ = scratch;
    let got = match format {
        FORMAT_BLOSCLZ => blosclz::decompress(src, dst),
        #[cfg(feature = "lz4")]
        FORMAT_LZ4 => match dict {
            Some(d) => lz4dict::decompress(src, d.raw, dst),
            None => i32::try_from(want)
                .ok()
                .and_then(|w| lz4::block::decompress_to_buffer(src, Some(w), dst).ok()),
        },
        #[cfg(feature = "zstd")]
        FORMAT_ZSTD => {
            let dctx = scratch.zstd.get_or_insert_with(zstd_safe::DCtx::create);
            let r = match dict.and_then(|d| d.zstd.as_ref()) {
                Some(dd) => dctx.decompress_using_ddict(dst, src, dd),
                None => dctx.decompress(dst, src),
            };
            r.ok()
        }
        #[cfg(feature = "zlib")]
        FORMAT_ZLIB => zlib::uncompress(src, dst),
        _ => None,
    };
    got == Some(want)
}

/// Per-thread encoder state.
#[derive(Default)]
pub(crate) struct EncodeScratch {
    #[cfg(feature = "zstd")]
    zstd: Option<zstd_safe::CCtx<'static>>,
    #[cfg(feature = "lz4")]
    lz4hc: Option<lz4ffi::HcState>,
    pub(crate) htab: Vec<u32>,
    /// Output buffer of one stream of a plugin codec (they write into initialized memory);
    /// between calls, also where a thread of the parallel encoder keeps its block buffer.
    pub(crate) stream: Vec<u8>,
    /// The dictionary of the chunk being encoded, if it has one.
    pub(crate) dict: Option<dict::DictEncoder>,
}

impl core::fmt::Debug for EncodeScratch {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("EncodeScratch").finish_non_exhaustive()
    }
}

/// Compresses one stream into `dst` (its length is the capacity; it need not be initialized),
/// BloscLZ following `lz_flavor`. Returns the compressed size `n`, with `dst[..n]` initialized,
/// or 0 when the codec could not make it fit (the caller then stores the stream raw).
#[cfg_attr(
    not(any(feature = "lz4", feature = "zstd")),
    allow(
        unreachable_code,
        reason = "no dictionary codec: `DictEncoder` is empty"
    )
)]
pub(crate) fn compress_stream(
    codec: Codec,
    lz_flavor: blosclz::Flavor,
    clevel: u8,
    src: &[u8],
    dst: &mut [MaybeUninit<u8>],
    scratch: &mut EncodeScratch,
) -> usize {
    if dst.is_empty() {
        return 0;
    }
    if let Some(d) = scratch.dict.as_mut() {
        return match *d {
            #[cfg(feature = "zstd")]
            dict::DictEncoder::Zstd(ref cdict) => {
                let cctx = scratch.zstd.get_or_insert_with(zstd_safe::CCtx::create);
                cctx.compress_using_cdict(&mut zstd::UninitOut::new(dst), src, cdict)
                    .unwrap_or(0)
            }
            #[cfg(feature = "lz4")]
            dict::DictEncoder::Lz4(ref mut stream) => {
                stream.compress(src, dst, 10 - i32::from(clevel), i32::from(clevel))
            }
        };
    }
    match codec {
        Codec::BloscLz => blosclz::compress(lz_flavor, clevel, src, dst, &mut scratch.htab),
        #[cfg(feature = "lz4")]
        Codec::Lz4 => lz4ffi::compress_fast(src, dst, 10 - i32::from(clevel)),
        #[cfg(feature = "lz4")]
        Codec::Lz4Hc => {
            if scratch.lz4hc.is_none() {
                scratch.lz4hc = lz4ffi::HcState::new();
            }
            scratch
                .lz4hc
                .as_mut()
                .map_or(0, |hc| hc.compress(src, dst, i32::from(clevel)))
        }
        // Blosc1 chunks (BloscLZ 2.5.1 is theirs): a fresh zstd context per stream, as
        // C-Blosc 1.21 compresses (`ZSTD_compress`). A context reused from block to block
        // skips clearing its tables; on the float32 level-9 writes of zarrs-blosc-bench that
        // ran 2–5 % slower than C-Blosc 1.21 in every run (fewer instructions, more time),
        // a fresh one ties with it.
        #[cfg(feature = "zstd")]
        Codec::Zstd if matches!(lz_flavor, blosclz::Flavor::V2_5_1 { .. }) => {
            zstd_safe::compress(&mut zstd::UninitOut::new(dst), src, zstd::level(clevel))
                .unwrap_or(0)
        }
        #[cfg(feature = "zstd")]
        Codec::Zstd => {
            let cctx = scratch.zstd.get_or_insert_with(zstd_safe::CCtx::create);
            cctx.compress(&mut zstd::UninitOut::new(dst), src, zstd::level(clevel))
                .unwrap_or(0)
        }
        #[cfg(feature = "zlib")]
        Codec::Zlib => zlib::compress(src, dst, clevel).unwrap_or(0),
        _ => 0,
    }
}

/// [`compress_stream`] appended to `out`, straight into its spare capacity (no zero-filling,
/// no copy from a scratch buffer), into at most `maxout` bytes. Returns the stream's size, 0
/// (and `out` unchanged) when the codec could not make it fit.
#[allow(
    unsafe_code,
    reason = "marks the bytes the codec wrote as `out`'s; see the SAFETY comment"
)]
pub(crate) fn append_stream(
    codec: Codec,
    lz_flavor: blosclz::Flavor,
    clevel: u8,
    src: &[u8],
    out: &mut Vec<u8>,
    maxout: usize,
    scratch: &mut EncodeScratch,
) -> usize {
    out.reserve(maxout);
    let dst = &mut out.spare_capacity_mut()[..maxout];
    let n = compress_stream(codec, lz_flavor, clevel, src, dst, scratch);
    if n > maxout {
        return 0;
    }
    // SAFETY: `compress_stream` initialized `dst[..n]` (its contract), the first `n` bytes of
    // `out`'s spare capacity, and `n <= maxout <= out.capacity() - out.len()`.
    unsafe { out.set_len(out.len() + n) };
    n
}
