//! zlib (RFC 1950) streams through `zlib-rs`, a Rust port of zlib-ng (safe slice API).
//!
//! `compress` is zlib's `compress2` (deflate, 32 KiB window, memory level 8, default
//! strategy; into memory that need not be initialized), `uncompress` is `uncompress`: the calls C-Blosc2 makes (`zng_compress2` /
//! `zng_uncompress` in the zlib-ng it bundles).

use core::mem::MaybeUninit;

use zlib_rs::{Deflate, DeflateConfig, DeflateFlush, InflateConfig, ReturnCode, Status};

/// Decompresses `src` into `dst`; returns the number of bytes written, or `None` when the
/// stream is corrupt, truncated, or does not fit in `dst`.
pub(crate) fn uncompress(src: &[u8], dst: &mut [u8]) -> Option<usize> {
    let (out, rc) = zlib_rs::decompress_slice(dst, src, InflateConfig::default());
    (rc == ReturnCode::Ok).then_some(out.len())
}

/// Compresses `src` into `dst` at `level` (`dst` need not be initialized): one `deflate` call
/// with `Z_FINISH` on a fresh stream, as `compress2` makes for inputs below 4 GiB. Returns the
/// compressed size `n` (`dst[..n]` is then initialized), or `None` when the stream does not
/// fit in `dst`.
pub(crate) fn compress(src: &[u8], dst: &mut [MaybeUninit<u8>], level: u8) -> Option<usize> {
    let mut deflate = Deflate::new_with_config(DeflateConfig::new(i32::from(level)));
    match deflate.compress_uninit(src, dst, DeflateFlush::Finish) {
        Ok(Status::StreamEnd) => usize::try_from(deflate.total_out()).ok(),
        _ => None,
    }
}

#[cfg(test)]
#[allow(
    clippy::cast_possible_truncation,
    reason = "test patterns wrap on purpose"
)]
mod tests {
    use core::mem::MaybeUninit;

    /// Compresses into uninitialized memory; the bytes written.
    fn compress(src: &[u8], capacity: usize, level: u8) -> Option<Vec<u8>> {
        let mut c = vec![MaybeUninit::uninit(); capacity];
        let n = super::compress(src, &mut c, level)?;
        Some(crate::testutil::written(&c, n))
    }

    #[test]
    fn roundtrip() {
        let src: Vec<u8> = (0..5000u32).map(|i| (i / 9) as u8).collect();
        let c = compress(&src, 6000, 5).unwrap();
        let mut d = vec![0; 5000];
        assert_eq!(super::uncompress(&c, &mut d), Some(5000));
        assert_eq!(d, src);
    }

    /// One `deflate` with `Z_FINISH` on a fresh stream writes what zlib-rs's `compress2`
    /// (`compress_slice`) writes, at every level.
    #[test]
    fn writes_what_compress2_writes() {
        let src: Vec<u8> = (0..70_000u32)
            .map(|i| ((i % 251) ^ (i / 700) ^ (i.wrapping_mul(2_654_435_761) >> 29)) as u8)
            .collect();
        for level in 0..=9 {
            let ours = compress(&src, 80_000, level).unwrap();
            let mut theirs = vec![0u8; 80_000];
            let (t, rc) = zlib_rs::compress_slice(
                &mut theirs,
                &src,
                zlib_rs::DeflateConfig::new(i32::from(level)),
            );
            assert_eq!(rc, zlib_rs::ReturnCode::Ok);
            assert!(ours == *t, "level {level}");
        }
    }

    #[test]
    fn too_small_or_corrupt_is_none() {
        let src: Vec<u8> = (0..5000u32).map(|i| (i * 7 / 13) as u8).collect();
        let c = compress(&src, 6000, 5).unwrap();
        let n = c.len();
        // Output buffer one byte short.
        let mut d = vec![0; 4999];
        assert_eq!(super::uncompress(&c, &mut d), None);
        // Truncated stream.
        let mut d = vec![0; 5000];
        assert_eq!(super::uncompress(&c[..n - 3], &mut d), None);
        // Compressed output that does not fit.
        assert_eq!(compress(&src, 8, 5), None);
        assert_eq!(compress(&src, n - 1, 5), None);
    }
}
