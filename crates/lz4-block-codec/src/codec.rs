//! [`Lz4BlockCodec`]: encode and decode one chunk.

use lz4::block::{CompressionMode, compress_bound, compress_to_buffer, decompress_to_buffer};

use crate::config::{ACCELERATION_MAX, HC_LEVEL_MAX, Lz4BlockConfiguration};
use crate::error::{Error, Result};

/// The most bytes one stored byte can decode to in an LZ4 block (a match of length 255·k + 19
/// costs k + 1 bytes of length plus its token and offset): a chunk claiming more than
/// `MAX_DECODED_PER_ENCODED` × its stored length (+ 16) is refused before anything is allocated.
pub const MAX_DECODED_PER_ENCODED: usize = 255;

/// The `lz4-block` codec: each chunk is one raw LZ4 block (the LZ4 *block* format, no frame,
/// no size prefix); its decoded length is known from the chunk (its shape and data type), so
/// none is stored.
///
/// ```
/// use lz4_block_codec::{Lz4BlockCodec, Lz4BlockConfiguration};
/// let codec = Lz4BlockCodec::new(Lz4BlockConfiguration::Hc { level: 9 })?;
/// let chunk: Vec<u8> = (0..32_768u32).map(|i| (i / 64) as u8).collect();
/// let stored = codec.encode(&chunk)?;
/// assert!(stored.len() < chunk.len() / 10);
/// assert_eq!(codec.decode(&stored, chunk.len())?, chunk);
/// // The wrong size, or a damaged block, is an error.
/// assert!(codec.decode(&stored, chunk.len() - 1).is_err());
/// assert!(codec.decode(&stored[..stored.len() - 1], chunk.len()).is_err());
/// # Ok::<(), lz4_block_codec::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Lz4BlockCodec {
    config: Lz4BlockConfiguration,
}

impl Lz4BlockCodec {
    /// The codec for `config`.
    ///
    /// # Errors
    /// [`Error::Configuration`] for an acceleration or level out of range.
    pub fn new(config: Lz4BlockConfiguration) -> Result<Self> {
        match config {
            Lz4BlockConfiguration::Fast { acceleration }
                if !(1..=ACCELERATION_MAX).contains(&acceleration) =>
            {
                Err(Error::Configuration(format!(
                    "`acceleration` must be in 1..={ACCELERATION_MAX}, not {acceleration}"
                )))
            }
            Lz4BlockConfiguration::Hc { level } if !(1..=HC_LEVEL_MAX).contains(&level) => {
                Err(Error::Configuration(format!(
                    "`level` must be in 1..={HC_LEVEL_MAX}, not {level}"
                )))
            }
            _ => Ok(Self { config }),
        }
    }

    /// The configuration.
    #[must_use]
    pub fn configuration(&self) -> Lz4BlockConfiguration {
        self.config
    }

    /// The largest block a chunk of `decoded` bytes can encode to (`LZ4_compressBound`).
    ///
    /// # Errors
    /// [`Error::TooLarge`] beyond what LZ4 can encode.
    pub fn bound(decoded: usize) -> Result<usize> {
        compress_bound(decoded).map_err(|_| Error::TooLarge {
            what: "a chunk",
            size: decoded,
        })
    }

    /// Encodes one chunk as one LZ4 block, exactly as liblz4 does (`LZ4_compress_fast` /
    /// `LZ4_compress_HC`; the `lz4` crate links liblz4 1.10).
    ///
    /// # Errors
    /// [`Error::TooLarge`] for a chunk LZ4 cannot encode.
    pub fn encode(&self, decoded: &[u8]) -> Result<Vec<u8>> {
        let mut out = vec![0u8; Self::bound(decoded.len())?];
        let mode = match self.config {
            Lz4BlockConfiguration::Fast { acceleration: 1 } => CompressionMode::DEFAULT,
            Lz4BlockConfiguration::Fast { acceleration } => {
                CompressionMode::FAST(i32::try_from(acceleration).unwrap_or(i32::MAX))
            }
            Lz4BlockConfiguration::Hc { level } => {
                CompressionMode::HIGHCOMPRESSION(i32::try_from(level).unwrap_or(9))
            }
        };
        let n = compress_to_buffer(decoded, Some(mode), false, &mut out).map_err(|_| {
            Error::TooLarge {
                what: "a chunk",
                size: decoded.len(),
            }
        })?;
        out.truncate(n);
        Ok(out)
    }

    /// Decodes one stored block to exactly `decoded_len` bytes.
    ///
    /// # Errors
    /// [`Error::Corrupt`] if the block does not decode to exactly that many bytes (or claims a
    /// size no block of its length can have); [`Error::TooLarge`] for sizes LZ4 cannot
    /// express.
    pub fn decode(&self, stored: &[u8], decoded_len: usize) -> Result<Vec<u8>> {
        check_sizes(stored, decoded_len)?;
        let mut out = vec![0u8; decoded_len];
        self.decode_into(stored, &mut out)?;
        Ok(out)
    }

    /// Decodes one stored block into `out`, which it must fill exactly.
    ///
    /// # Errors
    /// As [`Lz4BlockCodec::decode`].
    pub fn decode_into(&self, stored: &[u8], out: &mut [u8]) -> Result<()> {
        check_sizes(stored, out.len())?;
        if out.is_empty() {
            // LZ4 encodes nothing as the single token 0x00.
            return match stored {
                [0] => Ok(()),
                _ => Err(corrupt(stored, "an empty chunk is the one byte 0x00")),
            };
        }
        let want = i32::try_from(out.len()).map_err(|_| Error::TooLarge {
            what: "a decoded chunk",
            size: out.len(),
        })?;
        match decompress_to_buffer(stored, Some(want), out) {
            Ok(n) if n == out.len() => Ok(()),
            Ok(n) => Err(corrupt(
                stored,
                format!("decodes to {n} bytes, not the chunk's {}", out.len()),
            )),
            Err(e) => Err(corrupt(
                stored,
                format!("does not decode to the chunk's {} bytes: {e}", out.len()),
            )),
        }
    }
}

fn corrupt(stored: &[u8], detail: impl Into<String>) -> Error {
    Error::Corrupt {
        stored: stored.len(),
        detail: detail.into(),
    }
}

/// Refuses sizes no LZ4 block can have before anything is allocated.
fn check_sizes(stored: &[u8], decoded_len: usize) -> Result<()> {
    if i32::try_from(stored.len()).is_err() {
        return Err(Error::TooLarge {
            what: "a stored block",
            size: stored.len(),
        });
    }
    let most = stored
        .len()
        .saturating_mul(MAX_DECODED_PER_ENCODED)
        .saturating_add(16);
    if decoded_len > most {
        return Err(corrupt(
            stored,
            format!("cannot decode to the chunk's {decoded_len} bytes (at most {most})"),
        ));
    }
    Ok(())
}
