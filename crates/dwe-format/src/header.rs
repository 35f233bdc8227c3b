//! The 40-byte header shared by both layouts.

use crate::bytes::u32_at;
use crate::error::{Error, Result};

/// The magic bytes `\0dwe` at offset 0.
pub const MAGIC: [u8; 4] = [0x00, 0x64, 0x77, 0x65];
/// The only supported `major_version`.
pub const MAJOR_VERSION: u32 = 1;

/// The ten u32 header fields at byte offsets 0, 4, …, 36.
///
/// Words 4 and 8 mean different things in the two layouts: `meta_size` / `chunk_size` in the
/// block layout, `jump_table_address` / `jump_interval` in the stream layout.
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Header {
    /// `minor_version` (written as 0, never checked).
    pub minor_version: u32,
    /// `file_size`: the file length in u32 words.
    pub file_size: u32,
    /// Word 4: `meta_size` (block layout) or `jump_table_address` (stream layout), in u32 words.
    pub section_address: u32,
    /// `num_timesteps` T.
    pub num_timesteps: u32,
    /// `vocab_size` V.
    pub vocab_size: u32,
    /// `embedding_dim` K.
    pub embedding_dim: u32,
    /// Word 8: `chunk_size` (block layout) or `jump_interval` (stream layout), in words.
    pub interval: u32,
    /// `scale_factor`: real value = `scale_factor × (f32)i16`.
    pub scale_factor: f32,
}

impl Header {
    /// Length of the encoded header in bytes.
    pub const ENCODED_LEN: usize = 40;
    /// Length of the encoded header in u32 words.
    pub const WORDS: u32 = 10;

    /// Parses the header from the start of `data`, checking magic and `major_version` only.
    ///
    /// # Errors
    /// [`Error::Truncated`] if `data` is shorter than 40 bytes, [`Error::BadMagic`],
    /// [`Error::UnsupportedVersion`].
    pub fn parse(data: &[u8]) -> Result<Self> {
        let w = |i: usize| u32_at(data, 4 * i, "header");
        if data.len() < Self::ENCODED_LEN {
            return Err(crate::bytes::truncated(data, 0, 40, "header"));
        }
        let magic = w(0)?.to_le_bytes();
        if magic != MAGIC {
            return Err(Error::BadMagic { found: magic });
        }
        let major = w(1)?;
        if major != MAJOR_VERSION {
            return Err(Error::UnsupportedVersion { major });
        }
        Ok(Self {
            minor_version: w(2)?,
            file_size: w(3)?,
            section_address: w(4)?,
            num_timesteps: w(5)?,
            vocab_size: w(6)?,
            embedding_dim: w(7)?,
            interval: w(8)?,
            scale_factor: f32::from_bits(w(9)?),
        })
    }

    /// The 40 encoded bytes.
    #[must_use]
    pub fn to_bytes(&self) -> [u8; Self::ENCODED_LEN] {
        let words = [
            u32::from_le_bytes(MAGIC),
            MAJOR_VERSION,
            self.minor_version,
            self.file_size,
            self.section_address,
            self.num_timesteps,
            self.vocab_size,
            self.embedding_dim,
            self.interval,
            self.scale_factor.to_bits(),
        ];
        let mut out = [0u8; Self::ENCODED_LEN];
        for (dst, w) in out.chunks_exact_mut(4).zip(words) {
            dst.copy_from_slice(&w.to_le_bytes());
        }
        out
    }

    /// The file length in bytes that `file_size` declares.
    #[must_use]
    pub fn file_len(&self) -> u64 {
        u64::from(self.file_size) * 4
    }

    /// Checks the fields both layouts constrain: T ≥ 2, V ≠ 0, K ≠ 0, word 8 ≠ 0.
    pub(crate) fn check_common(&self) -> Result<()> {
        let bad = |field, value: u32, reason| {
            Err(Error::InvalidHeader {
                field,
                value: u64::from(value),
                reason,
            })
        };
        if self.num_timesteps < 2 {
            return bad("num_timesteps", self.num_timesteps, "must be at least 2");
        }
        if self.vocab_size == 0 {
            return bad("vocab_size", 0, "must not be 0");
        }
        if self.embedding_dim == 0 {
            return bad("embedding_dim", 0, "must not be 0");
        }
        if self.interval == 0 {
            return bad("chunk_size/jump_interval", 0, "must not be 0");
        }
        Ok(())
    }
}
