//! Allocation limits for decoding.

use crate::header::MAX_BUFFERSIZE;

/// Caps on what a chunk may make the decoder allocate.
///
/// The decoder never allocates more than the chunk's `nbytes` (plus one block of scratch space
/// per thread), and `nbytes` itself is checked against [`Limits::max_nbytes`] before anything is
/// allocated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Limits {
    /// Largest uncompressed size accepted. Default: C-Blosc2's `BLOSC2_MAX_BUFFERSIZE`
    /// (`i32::MAX - 32`).
    pub max_nbytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_nbytes: MAX_BUFFERSIZE,
        }
    }
}

impl Limits {
    /// No limit beyond what the format itself can express.
    #[must_use]
    pub fn unlimited() -> Self {
        Self {
            max_nbytes: usize::MAX,
        }
    }

    /// These limits with the maximum uncompressed size set to `max_nbytes`
    /// (`Limits::default().with_max_nbytes(64 << 20)`).
    #[must_use]
    pub const fn with_max_nbytes(mut self, max_nbytes: usize) -> Self {
        self.max_nbytes = max_nbytes;
        self
    }
}
