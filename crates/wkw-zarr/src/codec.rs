//! The inner-chunk compressor (`zstd`, `blosc`, `gzip` or none) and the `crc32c` checksum of
//! shard indexes.

use std::cell::RefCell;

use blosc_chunk::{BloscConfig, CParams, DParams, Limits};
use zstd_safe::{CCtx, CParameter, DCtx};

/// The compressor of inner chunks, after `transpose` and `bytes` (which leave a WKW block's
/// bytes as they are).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ChunkCodec {
    /// No compressor.
    None,
    /// `zstd` with `level` and, if `checksum`, the frame's content checksum.
    Zstd { level: i32, checksum: bool },
    /// `blosc` with this configuration: Blosc1 chunks as C-Blosc 1.21 writes them (any Blosc1
    /// or Blosc2 chunk reads).
    Blosc(BloscConfig),
    /// `gzip` (RFC 1952) at `level` 0–9: read from Zarr arrays (zarr-python's `GzipCodec`);
    /// conversions to Zarr do not write it.
    Gzip { level: u32 },
}

std::thread_local! {
    static CCTX: RefCell<Option<(CCtx<'static>, i32, bool)>> = const { RefCell::new(None) };
    static DCTX: RefCell<Option<DCtx<'static>>> = const { RefCell::new(None) };
}

impl ChunkCodec {
    /// The Blosc parameters of a `Blosc` codec (Blosc1 format, one thread: blocks are
    /// encoded in parallel instead); `None` for the others.
    pub(crate) fn blosc_params(self) -> Option<CParams> {
        match self {
            Self::Blosc(config) => Some(config.cparams(1)),
            _ => None,
        }
    }

    /// Encodes one raw block into `out` (replacing its contents).
    ///
    /// # Errors
    /// What the compressor says went wrong.
    pub(crate) fn encode(self, raw: &[u8], out: &mut Vec<u8>) -> Result<(), String> {
        out.clear();
        match self {
            Self::None => {
                out.extend_from_slice(raw);
                Ok(())
            }
            Self::Zstd { level, checksum } => CCTX.with(|cell| {
                let mut cell = cell.borrow_mut();
                if !matches!(&*cell, Some((_, l, c)) if *l == level && *c == checksum) {
                    let mut cctx = CCtx::create();
                    let name = |code| zstd_safe::get_error_name(code).to_owned();
                    cctx.set_parameter(CParameter::CompressionLevel(level))
                        .map_err(name)?;
                    cctx.set_parameter(CParameter::ChecksumFlag(checksum))
                        .map_err(name)?;
                    *cell = Some((cctx, level, checksum));
                }
                let (cctx, _, _) = cell.as_mut().ok_or_else(|| "no zstd context".to_owned())?;
                out.reserve(zstd_safe::compress_bound(raw.len()));
                cctx.compress2(out, raw)
                    .map(|_| ())
                    .map_err(|code| format!("zstd: {}", zstd_safe::get_error_name(code)))
            }),
            Self::Gzip { level } => {
                use std::io::Write;
                let mut enc = flate2::write::GzEncoder::new(out, flate2::Compression::new(level));
                enc.write_all(raw)
                    .and_then(|()| enc.finish().map(|_| ()))
                    .map_err(|e| format!("gzip: {e}"))
            }
            Self::Blosc(_) => {
                let params = self.blosc_params().ok_or("no Blosc parameters")?;
                *out = blosc_chunk::compress(raw, &params).map_err(|e| format!("blosc: {e}"))?;
                Ok(())
            }
        }
    }

    /// Decodes one stored chunk into `out`, which it must fill exactly.
    ///
    /// # Errors
    /// What is wrong: corrupt data, bad checksum, wrong length.
    pub(crate) fn decode(self, stored: &[u8], out: &mut [u8]) -> Result<(), String> {
        let want = out.len();
        match self {
            Self::None => {
                if stored.len() != want {
                    return Err(format!("{} bytes, expected {want}", stored.len()));
                }
                out.copy_from_slice(stored);
                Ok(())
            }
            Self::Zstd { .. } => DCTX.with(|cell| {
                let mut cell = cell.borrow_mut();
                let dctx = cell.get_or_insert_with(DCtx::create);
                match dctx.decompress(out, stored) {
                    Ok(n) if n == want => Ok(()),
                    Ok(n) => Err(format!("zstd frame of {n} bytes, expected {want}")),
                    Err(code) => Err(format!("zstd: {}", zstd_safe::get_error_name(code))),
                }
            }),
            Self::Gzip { .. } => {
                use std::io::Read;
                // One gzip member filling `out` exactly: reading one byte more must give
                // nothing (which also checks the member's CRC-32 and length).
                let mut dec = flate2::read::GzDecoder::new(stored);
                dec.read_exact(out).map_err(|e| {
                    format!("gzip: {e} (a stream shorter than the {want}-byte block?)")
                })?;
                let mut extra = [0u8; 1];
                match dec.read(&mut extra) {
                    Ok(0) => Ok(()),
                    Ok(_) => Err(format!("gzip stream longer than the {want}-byte block")),
                    Err(e) => Err(format!("gzip: {e}")),
                }
            }
            Self::Blosc(_) => {
                // A chunk claiming more than the block is refused before anything is
                // allocated for it.
                let mut params = DParams::default().with_threads(1);
                params.limits = Limits::default().with_max_nbytes(want);
                match blosc_chunk::decompress_into_ctx(stored, out, &params) {
                    Ok(n) if n == want => Ok(()),
                    Ok(n) => Err(format!("blosc chunk of {n} bytes, expected {want}")),
                    Err(e) => Err(format!("blosc: {e}")),
                }
            }
        }
    }

    /// The most bytes a stored chunk of a `raw`-byte block may take.
    pub(crate) fn max_stored(self, raw: usize) -> usize {
        match self {
            Self::None => raw,
            Self::Zstd { .. } => zstd_safe::compress_bound(raw),
            Self::Blosc(_) => raw.saturating_add(blosc_chunk::MAX_OVERHEAD),
            // Stored deflate blocks add 5 bytes per 64 KiB; gzip's header may carry a name
            // and a comment.
            Self::Gzip { .. } => raw.saturating_add(raw / 1024).saturating_add(64 << 10),
        }
    }
}

/// The `crc32c` codec's checksum (CRC-32C, Castagnoli), stored little-endian after the data.
pub(crate) fn crc32c(bytes: &[u8]) -> u32 {
    crc32c::crc32c(bytes)
}

#[cfg(test)]
mod tests {
    use blosc_chunk::{Blocksize, BloscShuffle, Codec, Filter};

    use super::*;

    #[test]
    fn zstd_round_trip_and_rejects_wrong_sizes() {
        let raw: Vec<u8> = (0..4096u32).map(|i| (i % 7) as u8).collect();
        let codec = ChunkCodec::Zstd {
            level: 5,
            checksum: true,
        };
        let mut stored = Vec::new();
        codec.encode(&raw, &mut stored).unwrap();
        assert!(stored.len() < raw.len());
        let mut back = vec![0u8; raw.len()];
        codec.decode(&stored, &mut back).unwrap();
        assert_eq!(back, raw);
        let mut short = vec![0u8; raw.len() - 1];
        assert!(codec.decode(&stored, &mut short).is_err());
        // A flipped byte in the payload fails (checksum or structure).
        let last = stored.len() - 5;
        stored[last] ^= 0xff;
        assert!(codec.decode(&stored, &mut back).is_err());
    }

    #[test]
    fn blosc_chunks_are_blosc_chunk_blosc1_output_and_bad_ones_fail() {
        let raw: Vec<u8> = (0..8192u16).flat_map(|i| (i / 5).to_le_bytes()).collect();
        for cname in Codec::BLOSC1 {
            for shuffle in [
                BloscShuffle::NoShuffle,
                BloscShuffle::Shuffle,
                BloscShuffle::BitShuffle,
            ] {
                let codec = ChunkCodec::Blosc(
                    BloscConfig::new(cname, 5, shuffle, Some(2), Blocksize::Auto).unwrap(),
                );
                let mut stored = Vec::new();
                codec.encode(&raw, &mut stored).unwrap();
                let direct =
                    blosc_chunk::compress(&raw, &CParams::blosc1(cname, 5, 2, shuffle.filter(2)))
                        .unwrap();
                assert_eq!(stored, direct, "{cname:?} {shuffle:?}");
                assert_eq!(
                    blosc_chunk::ChunkHeader::parse(&stored).unwrap().version(),
                    2
                );
                let mut back = vec![0u8; raw.len()];
                codec.decode(&stored, &mut back).unwrap();
                assert_eq!(back, raw);
                // Wrong length, truncated, claiming more than the block.
                let mut short = vec![0u8; raw.len() - 2];
                assert!(codec.decode(&stored, &mut short).is_err());
                assert!(
                    codec
                        .decode(&stored[..stored.len() / 2], &mut back)
                        .is_err()
                );
                let mut big = stored.clone();
                big[4..8].copy_from_slice(&(1u32 << 30).to_le_bytes());
                assert!(codec.decode(&big, &mut back).is_err());
            }
        }
    }

    #[test]
    fn blosc_reads_blosc2_chunks_too() {
        let raw: Vec<u8> = (0..6000u32).flat_map(|i| (i / 9).to_le_bytes()).collect();
        let codec = ChunkCodec::Blosc(
            BloscConfig::new(
                Codec::Lz4,
                5,
                BloscShuffle::Shuffle,
                Some(4),
                Blocksize::Auto,
            )
            .unwrap(),
        );
        for format in [blosc_chunk::Format::Blosc2, blosc_chunk::Format::Blosc1] {
            let mut p = CParams::new(Codec::Zstd, 3, 4, Filter::BitShuffle);
            p.format = format;
            let chunk = blosc_chunk::compress(&raw, &p).unwrap();
            let mut back = vec![0u8; raw.len()];
            codec.decode(&chunk, &mut back).unwrap();
            assert_eq!(back, raw, "{format:?}");
        }
    }

    #[test]
    fn gzip_round_trip_and_rejects_wrong_sizes_and_corruption() {
        let raw: Vec<u8> = (0..4096u32)
            .map(|i| u8::try_from(i % 11).unwrap_or(0))
            .collect();
        let codec = ChunkCodec::Gzip { level: 5 };
        let mut stored = Vec::new();
        codec.encode(&raw, &mut stored).unwrap();
        assert_eq!(&stored[..2], &[0x1f, 0x8b]);
        let mut back = vec![0u8; raw.len()];
        codec.decode(&stored, &mut back).unwrap();
        assert_eq!(back, raw);
        let mut short = vec![0u8; raw.len() - 1];
        assert!(codec.decode(&stored, &mut short).is_err());
        let mut long = vec![0u8; raw.len() + 1];
        assert!(codec.decode(&stored, &mut long).is_err());
        assert!(
            codec
                .decode(&stored[..stored.len() - 3], &mut back)
                .is_err()
        );
        // A wrong CRC-32 in the trailer.
        let n = stored.len();
        stored[n - 8] ^= 1;
        assert!(codec.decode(&stored, &mut back).is_err());
    }

    #[test]
    fn crc32c_check_value() {
        // The CRC-32C check value of "123456789" (RFC 3720 B.4 family of test vectors).
        assert_eq!(crc32c(b"123456789"), 0xe306_9283);
    }
}
