//! Zstandard streams through `zstd-safe` (libzstd 1.5.7, feature `zstd`): the zstd level of a
//! Blosc clevel, and an output buffer over memory that need not be initialized, so streams
//! are compressed straight into the chunk being built and decoded straight into output that
//! was never written.

use core::mem::MaybeUninit;

use super::{DecodeScratch, Dict};

/// The zstd level for a Blosc clevel (1–9).
pub(crate) fn level(clevel: u8) -> i32 {
    match clevel {
        9 => zstd_safe::max_c_level(),
        8 => zstd_safe::max_c_level() - 2,
        c => 2 * i32::from(c) - 1,
    }
}

/// Decodes the zstd stream `src` into `dst`, which may be uninitialized; `true` only if it
/// decoded to exactly `dst.len()` bytes, in which case libzstd has written every byte of `dst`
/// (it only stores into its output).
pub(crate) fn decompress_uninit(
    src: &[u8],
    dst: &mut [MaybeUninit<u8>],
    dict: Option<&Dict<'_>>,
    scratch: &mut DecodeScratch,
) -> bool {
    let want = dst.len();
    let dctx = scratch.zstd.get_or_insert_with(zstd_safe::DCtx::create);
    let mut out = UninitOut::new(dst);
    let r = match dict.and_then(|d| d.zstd.as_ref()) {
        Some(dd) => dctx.decompress_using_ddict(&mut out, src, dd),
        None => dctx.decompress(&mut out, src),
    };
    r == Ok(want)
}

/// A `zstd_safe` output buffer over memory that need not be initialized: libzstd only stores
/// into it, and `zstd_safe` reports how many bytes it stored.
pub(crate) struct UninitOut<'a> {
    buf: &'a mut [MaybeUninit<u8>],
    filled: usize,
}

impl<'a> UninitOut<'a> {
    pub(crate) fn new(buf: &'a mut [MaybeUninit<u8>]) -> Self {
        Self { buf, filled: 0 }
    }
}

// SAFETY: `as_slice` covers only the first `filled` bytes, and `filled` is set only by
// `filled_until`, whose caller guarantees that many bytes were written; `capacity` and
// `as_mut_ptr` describe `buf`, which is valid for writes of `buf.len()` bytes.
#[allow(unsafe_code, reason = "a zstd_safe output over uninitialized memory")]
unsafe impl zstd_safe::WriteBuf for UninitOut<'_> {
    fn as_slice(&self) -> &[u8] {
        // SAFETY: the first `filled` bytes are initialized (see the impl's SAFETY comment) and
        // `filled <= buf.len()` (zstd_safe checks the count against the capacity).
        unsafe { core::slice::from_raw_parts(self.buf.as_ptr().cast::<u8>(), self.filled) }
    }

    fn capacity(&self) -> usize {
        self.buf.len()
    }

    fn as_mut_ptr(&mut self) -> *mut u8 {
        self.buf.as_mut_ptr().cast()
    }

    unsafe fn filled_until(&mut self, n: usize) {
        self.filled = n;
    }
}
