//! Raw LZ4 blocks through the C liblz4 (`lz4` crate), as the reference does.

use lz4::block::{CompressionMode, compress_bound, compress_to_buffer, decompress_to_buffer};

use crate::error::{Error, Result};
use crate::format::header::BlockType;

/// LZ4HC level used for blockType 3 (the reference's `LZ4_compress_HC(.., 9)`).
pub(crate) const HC_LEVEL: i32 = 9;

/// LZ4 compress bound of a raw block of `n` bytes, `None` if LZ4 cannot handle `n`.
pub(crate) fn bound(n: u64) -> Option<u64> {
    let n = usize::try_from(n).ok()?;
    compress_bound(n).ok().map(|b| b as u64)
}

/// Compresses one raw block; `Raw` returns the input unchanged.
pub(crate) fn compress(block: &[u8], block_type: BlockType) -> Result<Vec<u8>> {
    let mut out = vec![0u8; room(block.len(), block_type)?];
    let n = compress_into(block, block_type, &mut out)?;
    out.truncate(n);
    Ok(out)
}

/// Compresses one block into `out` (at least [`bound`] of its length for the LZ4 types, its
/// length for raw); returns the number of bytes written.
pub(crate) fn compress_into(block: &[u8], block_type: BlockType, out: &mut [u8]) -> Result<usize> {
    let mode = match block_type {
        BlockType::Lz4Hc => CompressionMode::HIGHCOMPRESSION(HC_LEVEL),
        BlockType::Lz4 => CompressionMode::DEFAULT,
        _ => {
            let dst = out
                .get_mut(..block.len())
                .ok_or(Error::Compress { size: block.len() })?;
            dst.copy_from_slice(block);
            return Ok(block.len());
        }
    };
    compress_to_buffer(block, Some(mode), false, out)
        .map_err(|_| Error::Compress { size: block.len() })
}

/// Room [`compress_into`] needs for a block of `n` bytes of `block_type`.
pub(crate) fn room(n: usize, block_type: BlockType) -> Result<usize> {
    match block_type {
        BlockType::Lz4 | BlockType::Lz4Hc => {
            compress_bound(n).map_err(|_| Error::Compress { size: n })
        }
        _ => Ok(n),
    }
}

/// Decodes one LZ4 block into `out`, which must be filled exactly. `false` on any failure
/// (corrupt data, wrong decoded length, sizes LZ4 cannot express).
pub(crate) fn decompress_exact(src: &[u8], out: &mut [u8]) -> bool {
    let Ok(size) = i32::try_from(out.len()) else {
        return false;
    };
    if i32::try_from(src.len()).is_err() {
        return false;
    }
    matches!(decompress_to_buffer(src, Some(size), out), Ok(n) if n == out.len())
}
