//! Allocation bounds for untrusted headers and for requests.

/// Upper bounds on what one operation may allocate because of a header value or a request.
///
/// The defaults accept every geometry the reference writes (default files: 32³-voxel blocks,
/// 32³ blocks per file, up to 255 bytes per voxel) while refusing headers that would make a
/// reader allocate gigabytes for one block or one jump table.
///
/// ```
/// let l = wkw::Limits::default();
/// assert!(l.max_block_bytes >= 32 * 32 * 32 * 255);
/// let _all = wkw::Limits::unlimited();
/// ```
///
/// With the `serde` feature: `{"max_block_bytes": n, "max_blocks_per_file": n,
/// "max_read_bytes": n}`; fields left out take their defaults.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(default, deny_unknown_fields))]
#[non_exhaustive]
pub struct Limits {
    /// Largest raw block (`block_len³ · voxelSize`) that is decoded into memory. Default 256 MiB.
    pub max_block_bytes: u64,
    /// Largest number of blocks per file whose jump table is read into memory (8 bytes each).
    /// Default 2²¹ (a 16 MiB jump table, 128³ blocks per file).
    pub max_blocks_per_file: u64,
    /// Largest array [`crate::Dataset::read`] allocates. Default 16 GiB.
    pub max_read_bytes: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_block_bytes: 256 << 20,
            max_blocks_per_file: 1 << 21,
            max_read_bytes: 16 << 30,
        }
    }
}

impl Limits {
    /// No bounds beyond what the format and the address space allow.
    #[must_use]
    pub fn unlimited() -> Self {
        Self {
            max_block_bytes: u64::MAX,
            max_blocks_per_file: u64::MAX,
            max_read_bytes: u64::MAX,
        }
    }

    /// These limits with [`Limits::max_block_bytes`] set to `max_block_bytes`.
    #[must_use]
    pub const fn with_max_block_bytes(mut self, max_block_bytes: u64) -> Self {
        self.max_block_bytes = max_block_bytes;
        self
    }

    /// These limits with [`Limits::max_blocks_per_file`] set to `max_blocks_per_file`.
    #[must_use]
    pub const fn with_max_blocks_per_file(mut self, max_blocks_per_file: u64) -> Self {
        self.max_blocks_per_file = max_blocks_per_file;
        self
    }

    /// These limits with [`Limits::max_read_bytes`] set to `max_read_bytes`.
    #[must_use]
    pub const fn with_max_read_bytes(mut self, max_read_bytes: u64) -> Self {
        self.max_read_bytes = max_read_bytes;
        self
    }
}
