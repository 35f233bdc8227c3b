//! Helpers shared by the unit tests.

use core::mem::MaybeUninit;

/// The first `n` bytes of `out`, which the encoder under test reported as written.
pub(crate) fn written(out: &[MaybeUninit<u8>], n: usize) -> Vec<u8> {
    // SAFETY: the encoders tested return how many bytes they stored from the start of `out`.
    #[allow(unsafe_code, reason = "reading what was written")]
    out[..n]
        .iter()
        .map(|b| unsafe { b.assume_init() })
        .collect()
}
