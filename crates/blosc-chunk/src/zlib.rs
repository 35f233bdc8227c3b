//! zlib (RFC 1950) streams through `libz-sys`.
//!
//! This is the only module with `unsafe`: two FFI calls whose pointer/length pairs come from
//! Rust slices.
#![allow(unsafe_code, reason = "FFI calls into libz; see the SAFETY comments")]

use libz_sys::{Bytef, uLong, uLongf};

/// Decompresses `src` into `dst`; returns the number of bytes written.
pub(crate) fn uncompress(src: &[u8], dst: &mut [u8]) -> Option<usize> {
    let mut dlen: uLongf = uLongf::try_from(dst.len()).ok()?;
    let slen: uLong = uLong::try_from(src.len()).ok()?;
    // SAFETY: `dst` is valid for writes of `dlen` bytes and `src` for reads of `slen` bytes;
    // zlib writes at most `dlen` bytes and stores the written count in `dlen`.
    let rc = unsafe {
        libz_sys::uncompress(
            dst.as_mut_ptr().cast::<Bytef>(),
            &raw mut dlen,
            src.as_ptr().cast::<Bytef>(),
            slen,
        )
    };
    if rc == libz_sys::Z_OK {
        usize::try_from(dlen).ok()
    } else {
        None
    }
}

/// Compresses `src` into `dst` at `level`; returns the compressed size.
pub(crate) fn compress(src: &[u8], dst: &mut [u8], level: u8) -> Option<usize> {
    let mut dlen: uLongf = uLongf::try_from(dst.len()).ok()?;
    let slen: uLong = uLong::try_from(src.len()).ok()?;
    // SAFETY: as in `uncompress`: both pointers come from live slices with matching lengths,
    // and zlib never writes more than `dlen` bytes.
    let rc = unsafe {
        libz_sys::compress2(
            dst.as_mut_ptr().cast::<Bytef>(),
            &raw mut dlen,
            src.as_ptr().cast::<Bytef>(),
            slen,
            i32::from(level),
        )
    };
    if rc == libz_sys::Z_OK {
        usize::try_from(dlen).ok()
    } else {
        None
    }
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
}
