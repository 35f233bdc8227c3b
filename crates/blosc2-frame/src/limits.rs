//! Allocation limits for reading untrusted frames.

/// Caps on what a frame may make the reader allocate.
///
/// Header, metalayers and trailer are bounded by the frame's real length (they are read from
/// it), so only sizes that a few bytes of input can claim are limited here: the number of
/// chunks (the index), decompressed output, and per-chunk sizes.
///
/// `Limits::default()` is safe for hostile input on a desktop machine; [`Limits::unlimited`]
/// lifts every cap (then only the format's own maxima apply).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[non_exhaustive]
pub struct Limits {
    /// Largest decompressed chunk (bytes). Default: C-Blosc2's `BLOSC2_MAX_BUFFERSIZE`
    /// (`i32::MAX - 32`), the largest chunk C can write.
    pub max_chunk_nbytes: usize,
    /// Most chunks a frame's index may list. Default 2<sup>26</sup> (a 512 MiB index).
    pub max_nchunks: usize,
    /// Largest buffer returned by whole-frame or multi-chunk reads (`decompress_all`,
    /// `get_slice`, `read_region`). Default 4 GiB (1 GiB on 32-bit targets). Remote reads
    /// (feature `object_store`) also bound the metadata fetched at open and every single
    /// request by it.
    pub max_output_bytes: usize,
}

/// `BLOSC2_MAX_BUFFERSIZE` from `include/blosc2.h`.
pub(crate) const BLOSC2_MAX_BUFFERSIZE: usize = (i32::MAX as usize) - 32;

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_chunk_nbytes: BLOSC2_MAX_BUFFERSIZE,
            max_nchunks: 1 << 26,
            max_output_bytes: if usize::BITS >= 64 {
                usize::MAX >> (usize::BITS - 32)
            } else {
                1 << 30
            },
        }
    }
}

impl Limits {
    /// No caps beyond the format's own maxima.
    #[must_use]
    pub fn unlimited() -> Self {
        Self {
            max_chunk_nbytes: BLOSC2_MAX_BUFFERSIZE,
            max_nchunks: usize::MAX,
            max_output_bytes: usize::MAX,
        }
    }

    /// These limits with [`Limits::max_chunk_nbytes`] set to `max_chunk_nbytes`.
    #[must_use]
    pub const fn with_max_chunk_nbytes(mut self, max_chunk_nbytes: usize) -> Self {
        self.max_chunk_nbytes = max_chunk_nbytes;
        self
    }

    /// These limits with [`Limits::max_nchunks`] set to `max_nchunks`.
    #[must_use]
    pub const fn with_max_nchunks(mut self, max_nchunks: usize) -> Self {
        self.max_nchunks = max_nchunks;
        self
    }

    /// These limits with [`Limits::max_output_bytes`] set to `max_output_bytes`.
    #[must_use]
    pub const fn with_max_output_bytes(mut self, max_output_bytes: usize) -> Self {
        self.max_output_bytes = max_output_bytes;
        self
    }

    /// Checks `requested` bytes of output against [`Limits::max_output_bytes`].
    pub(crate) fn check_output(&self, requested: u64) -> crate::Result<usize> {
        let limit = self.max_output_bytes;
        match usize::try_from(requested) {
            Ok(n) if n <= limit => Ok(n),
            _ => Err(crate::Error::LimitExceeded {
                what: "output buffer",
                requested,
                limit: limit as u64,
            }),
        }
    }
}
