//! Index ("offsets") entries: regular positions (from the end of the header, or sparse chunk
//! file numbers) and special-value runs (bit 63 set, top byte `0x80 | kind`).

use crate::error::{Error, Result};

/// Bit 63 marks a special offset; byte 7 is `0x80 | special`.
const SPECIAL_BIT: u64 = 1 << 63;

/// What a chunk's index entry says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
#[non_exhaustive]
pub enum ChunkLocation {
    /// Stored bytes: offset from the end of the header (contiguous frames) or chunk file number
    /// (sparse frames).
    Stored(u64),
    /// A run of zeros; nothing stored.
    Zeros,
    /// A run of NaNs (f32 or f64 by typesize); nothing stored.
    Nan,
    /// Uninitialised content (read as zeros here); nothing stored.
    Uninit,
}

impl ChunkLocation {
    /// Decodes raw index entry `raw` of chunk `index`.
    pub(crate) fn decode(index: usize, raw: u64) -> Result<Self> {
        if raw & SPECIAL_BIT == 0 {
            return Ok(Self::Stored(raw));
        }
        match raw {
            0x8100_0000_0000_0000 => Ok(Self::Zeros),
            0x8200_0000_0000_0000 => Ok(Self::Nan),
            0x8400_0000_0000_0000 => Ok(Self::Uninit),
            _ => Err(Error::SpecialOffset { index, offset: raw }),
        }
    }

    /// The raw index entry C-Blosc2 writes (`(1 << 63) + (special << 56)` for runs).
    #[must_use]
    pub fn raw(self) -> u64 {
        match self {
            Self::Stored(o) => o,
            Self::Zeros => SPECIAL_BIT | (1 << 56),
            Self::Nan => SPECIAL_BIT | (2 << 56),
            Self::Uninit => SPECIAL_BIT | (4 << 56),
        }
    }
}

/// Decodes the little-endian i64 entries of a decompressed index.
pub(crate) fn decode_index(raw: &[u8]) -> Result<Vec<ChunkLocation>> {
    raw.chunks_exact(8)
        .enumerate()
        .map(|(i, w)| {
            let mut a = [0u8; 8];
            a.copy_from_slice(w);
            ChunkLocation::decode(i, u64::from_le_bytes(a))
        })
        .collect()
}

/// Encodes index entries as C stores them (little-endian i64).
pub(crate) fn encode_index(locs: &[ChunkLocation]) -> Vec<u8> {
    locs.iter().flat_map(|l| l.raw().to_le_bytes()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn special_offsets_round_trip() {
        for l in [
            ChunkLocation::Zeros,
            ChunkLocation::Nan,
            ChunkLocation::Uninit,
            ChunkLocation::Stored(77),
        ] {
            assert_eq!(ChunkLocation::decode(0, l.raw()).unwrap(), l);
        }
        assert_eq!(ChunkLocation::Zeros.raw().to_le_bytes()[7], 0x81);
        assert!(ChunkLocation::decode(3, 0x8300_0000_0000_0000).is_err());
        assert!(ChunkLocation::decode(3, 0x8100_0000_0000_0001).is_err());
    }
}
