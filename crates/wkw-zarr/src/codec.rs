//! The inner-chunk compressor (`zstd` or none) and the `crc32c` checksum of shard indexes.

use std::cell::RefCell;

use zstd_safe::{CCtx, CParameter, DCtx};

/// The compressor of inner chunks, after `transpose` and `bytes` (which leave a WKW block's
/// bytes as they are).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ChunkCodec {
    /// No compressor.
    None,
    /// `zstd` with `level` and, if `checksum`, the frame's content checksum.
    Zstd { level: i32, checksum: bool },
}

std::thread_local! {
    static CCTX: RefCell<Option<(CCtx<'static>, i32, bool)>> = const { RefCell::new(None) };
    static DCTX: RefCell<Option<DCtx<'static>>> = const { RefCell::new(None) };
}

impl ChunkCodec {
    /// Encodes one raw block into `out` (replacing its contents); `None` if zstd fails.
    pub(crate) fn encode(self, raw: &[u8], out: &mut Vec<u8>) -> Option<()> {
        out.clear();
        match self {
            Self::None => {
                out.extend_from_slice(raw);
                Some(())
            }
            Self::Zstd { level, checksum } => CCTX.with(|cell| {
                let mut cell = cell.borrow_mut();
                if !matches!(&*cell, Some((_, l, c)) if *l == level && *c == checksum) {
                    let mut cctx = CCtx::create();
                    cctx.set_parameter(CParameter::CompressionLevel(level))
                        .ok()?;
                    cctx.set_parameter(CParameter::ChecksumFlag(checksum))
                        .ok()?;
                    *cell = Some((cctx, level, checksum));
                }
                let (cctx, _, _) = cell.as_mut()?;
                out.reserve(zstd_safe::compress_bound(raw.len()));
                cctx.compress2(out, raw).ok().map(|_| ())
            }),
        }
    }

    /// Decodes one stored chunk into `out`, which it must fill exactly; `false` otherwise
    /// (corrupt data, bad checksum, wrong length).
    pub(crate) fn decode(self, stored: &[u8], out: &mut [u8]) -> bool {
        match self {
            Self::None => {
                if stored.len() != out.len() {
                    return false;
                }
                out.copy_from_slice(stored);
                true
            }
            Self::Zstd { .. } => DCTX.with(|cell| {
                let mut cell = cell.borrow_mut();
                let dctx = cell.get_or_insert_with(DCtx::create);
                matches!(dctx.decompress(out, stored), Ok(n) if n == out.len())
            }),
        }
    }

    /// The most bytes a stored chunk of a `raw`-byte block may take.
    pub(crate) fn max_stored(self, raw: usize) -> usize {
        match self {
            Self::None => raw,
            Self::Zstd { .. } => zstd_safe::compress_bound(raw),
        }
    }
}

/// The `crc32c` codec's checksum (CRC-32C, Castagnoli), stored little-endian after the data.
pub(crate) fn crc32c(bytes: &[u8]) -> u32 {
    crc32c::crc32c(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zstd_round_trip_and_rejects_wrong_sizes() {
        let raw: Vec<u8> = (0..4096u32).map(|i| (i % 7) as u8).collect();
        let codec = ChunkCodec::Zstd {
            level: 5,
            checksum: true,
        };
        let mut stored = Vec::new();
        assert!(codec.encode(&raw, &mut stored).is_some());
        assert!(stored.len() < raw.len());
        let mut back = vec![0u8; raw.len()];
        assert!(codec.decode(&stored, &mut back));
        assert_eq!(back, raw);
        let mut short = vec![0u8; raw.len() - 1];
        assert!(!codec.decode(&stored, &mut short));
        // A flipped byte in the payload fails (checksum or structure).
        let last = stored.len() - 5;
        stored[last] ^= 0xff;
        assert!(!codec.decode(&stored, &mut back));
    }

    #[test]
    fn crc32c_check_value() {
        // The CRC-32C check value of "123456789" (RFC 3720 B.4 family of test vectors).
        assert_eq!(crc32c(b"123456789"), 0xe306_9283);
    }
}
