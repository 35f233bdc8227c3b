//! Resource limits applied to untrusted configurations.

/// Caps on sizes that come from a (possibly hostile) `zarr.json`.
///
/// Decoding never allocates, but encoding allocates `offset`/`nbytes` header bytes per chunk,
/// so a configuration asking for a huge header must be refused before it is used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Limits {
    /// Largest accepted `offset` / `nbytes`, in bytes. Default: 16 MiB (real headers are
    /// tens to hundreds of bytes: TIFF 110, N5 12).
    pub max_nbytes: u64,
}

impl Limits {
    /// The default cap on header/trailer sizes (16 MiB).
    pub const DEFAULT_MAX_NBYTES: u64 = 16 << 20;

    /// No limit beyond the platform's address space.
    #[must_use]
    pub const fn unlimited() -> Self {
        Self {
            max_nbytes: u64::MAX,
        }
    }

    /// Sets [`max_nbytes`](Self::max_nbytes).
    #[must_use]
    pub const fn with_max_nbytes(mut self, max_nbytes: u64) -> Self {
        self.max_nbytes = max_nbytes;
        self
    }
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_nbytes: Self::DEFAULT_MAX_NBYTES,
        }
    }
}
