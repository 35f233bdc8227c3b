//! Automatic block size (C-Blosc2 `stune`) and the split decision.

use crate::codec::Codec;
use crate::header::SplitMode;

const L1: usize = 32 * 1024;
const MAX_AUTO_BLOCKSIZE: usize = 4 * 1024 * 1024;

/// Whether blocks are split into `typesize` streams (C `split_block`).
pub(crate) fn split_block(
    splitmode: SplitMode,
    codec: Codec,
    clevel: u8,
    has_shuffle: bool,
    typesize: usize,
    blocksize: usize,
) -> bool {
    match splitmode {
        SplitMode::Always => true,
        SplitMode::Never => false,
        SplitMode::Auto | SplitMode::ForwardCompat => {
            let codec_ok = match codec {
                Codec::BloscLz | Codec::Lz4 => true,
                Codec::Zstd => clevel <= 5,
                _ => false,
            };
            codec_ok && has_shuffle && typesize <= 16 && blocksize / typesize >= 32
        }
    }
}

/// The block size C-Blosc2 3.3.5 uses (`blosc_stune_next_blocksize`). `user` is the requested
/// block size (0 = automatic).
pub(crate) fn compute_blocksize(
    clevel: u8,
    typesize: usize,
    nbytes: usize,
    user: usize,
    codec: Codec,
    has_shuffle: bool,
    splitmode: SplitMode,
) -> usize {
    if nbytes < typesize {
        return 1;
    }
    let mut bs;
    if user != 0 {
        bs = user;
    } else {
        let splitmode_ok = split_block(splitmode, codec, clevel, has_shuffle, typesize, nbytes);
        bs = nbytes;
        if nbytes >= L1 {
            bs = L1;
            if codec.is_hcr() {
                bs *= 2;
            }
            match clevel {
                0 => bs /= 4,
                1 => bs /= 2,
                2 => {}
                3 => bs *= 2,
                4 | 5 => bs *= 4,
                6..=8 => bs *= 8,
                _ => {
                    bs *= 8;
                    if codec.is_hcr() {
                        bs *= 2;
                    }
                }
            }
        }
        if clevel > 0 && splitmode_ok {
            bs = match clevel {
                1..=3 => 32 * 1024,
                4..=6 => 64 * 1024,
                7 => 128 * 1024,
                8 => 256 * 1024,
                _ => 512 * 1024,
            };
            bs = bs.saturating_mul(typesize).clamp(L1, MAX_AUTO_BLOCKSIZE);
        }
    }
    bs = bs.min(nbytes);
    if bs > typesize {
        bs = bs / typesize * typesize;
    }
    bs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixture_blocksizes() {
        // misc/*_autoblock_256k: 256 KiB of int32.
        let n = 262_144;
        assert_eq!(
            compute_blocksize(5, 4, n, 0, Codec::Lz4, false, SplitMode::Auto),
            131_072
        );
        assert_eq!(
            compute_blocksize(5, 4, n, 0, Codec::Zstd, true, SplitMode::Auto),
            262_144
        );
        assert_eq!(
            compute_blocksize(5, 4, n, 0, Codec::BloscLz, true, SplitMode::Auto),
            262_144
        );
        assert_eq!(
            compute_blocksize(0, 4, 11_980, 0, Codec::Lz4, true, SplitMode::Auto),
            11_980
        );
    }
}
