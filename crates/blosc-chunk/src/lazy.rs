//! Lazy chunks: the in-memory construct C-Blosc2 builds when reading a chunk of a file-backed
//! frame (`frame_get_lazychunk`). They hold the header, the block starts and a trailer that says
//! where the blocks live in the file, but no compressed data.
//!
//! Layout: header (with `blosc2_flags` bit 3 set; `cbytes` is the real chunk size) | `4 *
//! nblocks` bytes (the block starts, or the first data bytes of a memcpyed chunk) | `i32 nchunk`
//! | `i64 offset` (of the chunk from the frame start) | `i32` compressed size of each block.

use crate::error::{Error, Result};
use crate::header::{ChunkHeader, read_i32};

/// A parsed lazy chunk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LazyChunk {
    header: ChunkHeader,
    bstarts: Vec<i32>,
    nchunk: i32,
    offset: i64,
    block_csizes: Vec<i32>,
}

impl LazyChunk {
    /// Parses a lazy chunk.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidHeader`] if the lazy flag is not set or the trailer holds negative
    /// values, [`Error::Truncated`] if the bytes end early, and any header error.
    pub fn parse(bytes: &[u8]) -> Result<Self> {
        let header = ChunkHeader::parse(bytes)?;
        if !header.is_lazy() {
            return Err(Error::InvalidHeader {
                what: "lazy chunk flag",
                value: i64::from(header.blosc2_flags()),
            });
        }
        let nblocks = header.nblocks();
        let hl = header.header_len();
        let need = nblocks
            .checked_mul(8)
            .and_then(|n| n.checked_add(hl + 12))
            .ok_or(Error::Overflow {
                what: "lazy chunk size",
            })?;
        if bytes.len() < need {
            return Err(Error::truncated("lazy chunk", 0, need, bytes.len()));
        }
        let ints = |base: usize| -> Vec<i32> {
            (0..nblocks)
                .map(|j| read_i32(bytes, base + 4 * j).unwrap_or(0))
                .collect()
        };
        let bstarts = ints(hl);
        let t = hl + 4 * nblocks;
        let nchunk = read_i32(bytes, t).unwrap_or(0);
        let offset = bytes
            .get(t + 4..t + 12)
            .and_then(|s| s.try_into().ok())
            .map_or(0, i64::from_le_bytes);
        let block_csizes = ints(t + 12);
        if offset < 0 || block_csizes.iter().any(|&c| c < 0) {
            return Err(Error::InvalidHeader {
                what: "lazy chunk trailer",
                value: offset,
            });
        }
        Ok(Self {
            header,
            bstarts,
            nchunk,
            offset,
            block_csizes,
        })
    }

    /// The chunk header (as stored, lazy flag included).
    #[must_use]
    pub fn header(&self) -> &ChunkHeader {
        &self.header
    }

    /// Chunk number in the frame (for sparse frames: the chunk file number).
    #[must_use]
    pub fn nchunk(&self) -> i32 {
        self.nchunk
    }

    /// Position of the chunk from the start of the frame (sparse frames: the file number).
    #[must_use]
    pub fn offset(&self) -> u64 {
        self.offset.unsigned_abs()
    }

    /// The block starts (offsets inside the chunk).
    #[must_use]
    pub fn bstarts(&self) -> &[i32] {
        &self.bstarts
    }

    /// Compressed size of each block.
    #[must_use]
    pub fn block_csizes(&self) -> &[i32] {
        &self.block_csizes
    }

    /// Where the whole chunk lives in the frame: `(offset, cbytes)`. Read those bytes and pass
    /// them to [`crate::decompress`].
    #[must_use]
    pub fn chunk_range(&self) -> (u64, usize) {
        (self.offset(), self.header.cbytes())
    }

    /// Where block `j` lives in the frame: `(offset, compressed length)`.
    #[must_use]
    pub fn block_range(&self, j: usize) -> Option<(u64, usize)> {
        let start = u64::try_from(*self.bstarts.get(j)?).ok()?;
        let len = usize::try_from(*self.block_csizes.get(j)?).ok()?;
        Some((self.offset().checked_add(start)?, len))
    }
}
