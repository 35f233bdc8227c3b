//! Automatic block size (C-Blosc2 `stune`, C-Blosc 1 `compute_blocksize`) and the split
//! decision of both.

use crate::codec_id::Codec;
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

/// C-Blosc 1's smallest forced block size and its split threshold (`MIN_BUFFERSIZE`).
pub(crate) const BLOSC1_MIN_BUFFERSIZE: usize = 128;
/// Widest type C-Blosc 1 splits into streams (`MAX_SPLITS`).
const BLOSC1_MAX_SPLITS: usize = 16;
/// C-Blosc 1's largest block (`BLOSC_MAX_BLOCKSIZE`: `(INT_MAX - 255 * 4) / 3`).
const BLOSC1_MAX_BLOCKSIZE: usize = 715_827_542;

/// Whether C-Blosc 1 (and its reader) can split a block of `blocksize` bytes into `typesize`
/// streams: its reader splits only types of at most 16 bytes with at least 128 items per block.
pub(crate) fn blosc1_splittable(typesize: usize, blocksize: usize) -> bool {
    typesize <= BLOSC1_MAX_SPLITS && blocksize / typesize >= BLOSC1_MIN_BUFFERSIZE
}

/// C-Blosc 1.21's `split_block`: `Auto` splits BloscLZ only, `ForwardCompat` (its default)
/// every codec but zstd, both only for splittable blocks; `Always` / `Never` as named.
pub(crate) fn split_block_blosc1(
    splitmode: SplitMode,
    codec: Codec,
    typesize: usize,
    blocksize: usize,
) -> bool {
    match splitmode {
        SplitMode::Always => true,
        SplitMode::Never => false,
        SplitMode::Auto => codec == Codec::BloscLz && blosc1_splittable(typesize, blocksize),
        SplitMode::ForwardCompat => codec != Codec::Zstd && blosc1_splittable(typesize, blocksize),
    }
}

/// The block size C-Blosc 1.21 uses (`compute_blocksize`). `user` is the forced block size
/// (0 = automatic); unlike C-Blosc2, a forced size is clamped to 128..=`BLOSC_MAX_BLOCKSIZE`
/// and still enlarged when blocks are split.
pub(crate) fn compute_blocksize_blosc1(
    clevel: u8,
    typesize: usize,
    nbytes: usize,
    user: usize,
    codec: Codec,
    splitmode: SplitMode,
) -> usize {
    if nbytes < typesize {
        return 1;
    }
    let mut bs = nbytes;
    if user != 0 {
        bs = user.clamp(BLOSC1_MIN_BUFFERSIZE, BLOSC1_MAX_BLOCKSIZE);
    } else if nbytes >= L1 {
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
    if clevel > 0 && split_block_blosc1(splitmode, codec, typesize, bs) {
        // Split streams of at most 256 KiB; blocks of 64 KiB to 1 MiB.
        bs = bs
            .min(1 << 18)
            .saturating_mul(typesize)
            .clamp(1 << 16, 1 << 20);
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
