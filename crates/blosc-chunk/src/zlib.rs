//! zlib (RFC 1950) streams through `zlib-rs`, a Rust port of zlib-ng (safe slice API).
//!
//! `compress` is zlib's `compress2` (deflate, 32 KiB window, memory level 8, default
//! strategy), `uncompress` is `uncompress`: the calls C-Blosc2 makes (`zng_compress2` /
//! `zng_uncompress` in the zlib-ng it bundles).

use zlib_rs::{DeflateConfig, InflateConfig, ReturnCode};

/// Decompresses `src` into `dst`; returns the number of bytes written, or `None` when the
/// stream is corrupt, truncated, or does not fit in `dst`.
pub(crate) fn uncompress(src: &[u8], dst: &mut [u8]) -> Option<usize> {
    let (out, rc) = zlib_rs::decompress_slice(dst, src, InflateConfig::default());
    (rc == ReturnCode::Ok).then_some(out.len())
}

/// Compresses `src` into `dst` at `level`; returns the compressed size, or `None` when the
/// stream does not fit in `dst`.
pub(crate) fn compress(src: &[u8], dst: &mut [u8], level: u8) -> Option<usize> {
    let (out, rc) = zlib_rs::compress_slice(dst, src, DeflateConfig::new(i32::from(level)));
    (rc == ReturnCode::Ok).then_some(out.len())
}

#[cfg(test)]
#[allow(
    clippy::cast_possible_truncation,
    reason = "test patterns wrap on purpose"
)]
mod tests {
    #[test]
    fn roundtrip() {
        let src: Vec<u8> = (0..5000u32).map(|i| (i / 9) as u8).collect();
        let mut c = vec![0; 6000];
        let n = super::compress(&src, &mut c, 5).unwrap();
        let mut d = vec![0; 5000];
        assert_eq!(super::uncompress(&c[..n], &mut d), Some(5000));
        assert_eq!(d, src);
    }

    #[test]
    fn too_small_or_corrupt_is_none() {
        let src: Vec<u8> = (0..5000u32).map(|i| (i * 7 / 13) as u8).collect();
        let mut c = vec![0; 6000];
        let n = super::compress(&src, &mut c, 5).unwrap();
        // Output buffer one byte short.
        let mut d = vec![0; 4999];
        assert_eq!(super::uncompress(&c[..n], &mut d), None);
        // Truncated stream.
        let mut d = vec![0; 5000];
        assert_eq!(super::uncompress(&c[..n - 3], &mut d), None);
        // Compressed output that does not fit.
        assert_eq!(super::compress(&src, &mut c[..8], 5), None);
    }
}
