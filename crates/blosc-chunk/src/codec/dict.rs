//! Dictionary chunks (`use_dict`): the dictionary C-Blosc2 3.3.5 builds for zstd, LZ4 and
//! LZ4HC, and the per-stream encoders that use it (see `FORMAT.md`, "Dictionary chunks"; the
//! behaviour is C-Blosc2's `blosc/blosc2.c`, <https://github.com/Blosc/c-blosc2>).
//!
//! C first copies the filtered blocks (unsplit, without stream sizes) right after the chunk
//! header, then takes `nsamples = nblocks` (× typesize when blocks are split, at least 8)
//! samples of `nbytes / nsamples / 16` bytes from the start of that copy. The dictionary may hold
//! at most `min(32768, nbytes / 20)` bytes; below 256 bytes (or with empty samples) no dictionary
//! is made.
//!
//! * zstd: `ZDICT_trainFromBuffer` on the samples; streams are compressed with a dictionary
//!   prepared at level 1, whatever the chunk's clevel.
//! * LZ4 / LZ4HC: the dictionary is the first `min(nsamples * sample_size, max)` bytes of the
//!   copy — as it stands after C has written the dictionary size into the output buffer, which
//!   overlaps the copy: bytes `4 * nblocks .. 4 * nblocks + 4` of the dictionary hold the
//!   dictionary size (little-endian i32) instead of data. Visible in the reference fixtures;
//!   reproduced here for byte-identical chunks.

#[cfg(feature = "lz4")]
use super::lz4ffi::DictStream;
use crate::codec_id::Codec;
use crate::error::{Error, Result};
use crate::header::MAX_DICT_SIZE;

/// Smallest dictionary C-Blosc2 bothers to make (`BLOSC2_MINUSEFULDICT`).
const MIN_USEFUL_DICT: usize = 256;

/// Compresses streams against a chunk's dictionary.
pub(crate) enum DictEncoder {
    /// zstd with a prepared dictionary (level 1).
    #[cfg(feature = "zstd")]
    Zstd(zstd_safe::CDict<'static>),
    /// LZ4 or LZ4HC streaming state.
    #[cfg(feature = "lz4")]
    Lz4(DictStream),
}

impl core::fmt::Debug for DictEncoder {
    #[cfg_attr(
        not(any(feature = "lz4", feature = "zstd")),
        allow(unreachable_code, reason = "no dictionary codec: the enum is empty")
    )]
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(match *self {
            #[cfg(feature = "zstd")]
            Self::Zstd(_) => "DictEncoder::Zstd",
            #[cfg(feature = "lz4")]
            Self::Lz4(_) => "DictEncoder::Lz4",
        })
    }
}

/// Whether `codec` can write dictionary chunks.
pub(crate) fn supports(codec: Codec) -> bool {
    matches!(codec, Codec::Zstd | Codec::Lz4 | Codec::Lz4Hc)
}

/// The dictionary for a chunk of `nblocks` blocks whose filtered blocks, concatenated, are
/// `copied`; `streams_per_block` is the type size for split blocks, else 1. `None` when C would
/// not use a dictionary for this input.
///
/// # Errors
///
/// [`Error::Codec`] if zstd cannot train a dictionary from the samples. (Callers check first
/// that the codec is enabled: without the `zstd` feature every codec gets the LZ4 dictionary.)
pub(crate) fn build(
    codec: Codec,
    nblocks: usize,
    streams_per_block: usize,
    copied: &[u8],
) -> Result<Option<Vec<u8>>> {
    let nbytes = copied.len();
    let nsamples = nblocks.saturating_mul(streams_per_block).max(8);
    let sample_size = nbytes / nsamples / 16;
    let max = MAX_DICT_SIZE.min(nbytes / 20);
    if max < MIN_USEFUL_DICT || sample_size == 0 {
        return Ok(None);
    }
    let samples = &copied[..nsamples * sample_size];
    let dict = match codec {
        #[cfg(feature = "zstd")]
        Codec::Zstd => {
            let mut dict = Vec::with_capacity(max);
            zstd_safe::train_from_buffer(&mut dict, samples, &vec![sample_size; nsamples])
                .map_err(|code| Error::Codec {
                    codec: "zstd dictionary training",
                    why: zstd_safe::get_error_name(code).to_owned(),
                })?;
            dict
        }
        _ => {
            let mut dict = samples[..samples.len().min(max)].to_vec();
            let size = i32::try_from(dict.len()).unwrap_or(i32::MAX).to_le_bytes();
            let at = 4 * nblocks;
            for (k, b) in size.iter().enumerate() {
                if let Some(d) = dict.get_mut(at + k) {
                    *d = *b;
                }
            }
            dict
        }
    };
    Ok(Some(dict))
}

/// The stream encoder for `dict`.
///
/// # Errors
///
/// [`Error::Codec`] if the codec library cannot prepare the dictionary.
pub(crate) fn encoder(codec: Codec, dict: &[u8]) -> Result<DictEncoder> {
    #[cfg(not(any(feature = "lz4", feature = "zstd")))]
    let _ = dict;
    match codec {
        #[cfg(feature = "zstd")]
        Codec::Zstd => zstd_safe::CDict::try_create(dict, 1)
            .map(DictEncoder::Zstd)
            .ok_or_else(|| prepare_failed("zstd")),
        #[cfg(feature = "lz4")]
        Codec::Lz4 | Codec::Lz4Hc => DictStream::new(dict, codec == Codec::Lz4Hc)
            .map(DictEncoder::Lz4)
            .ok_or_else(|| prepare_failed("lz4")),
        _ => Err(Error::InvalidParam {
            what: "use_dict",
            why: "dictionaries exist only for zstd, lz4 and lz4hc",
        }),
    }
}

/// The codec library could not prepare a dictionary.
#[cfg(any(feature = "lz4", feature = "zstd"))]
fn prepare_failed(codec: &'static str) -> Error {
    Error::Codec {
        codec,
        why: "cannot prepare the dictionary".to_owned(),
    }
}
