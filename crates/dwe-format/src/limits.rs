//! Allocation and work limits for untrusted input.

/// Bounds on what a file may make the reader allocate or decode.
///
/// Every allocation whose size comes from a file is checked against one of these. The defaults
/// comfortably fit the real data (T=209, V=30 000, K=100) and stop hostile headers from asking
/// for gigabytes; [`Limits::unlimited`] removes all bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[non_exhaustive]
pub struct Limits {
    /// Largest input accepted, in bytes (default 4 GiB).
    pub max_file_bytes: u64,
    /// Largest total size of the decoder lookup tables (24 KiB per time step; default 256 MiB).
    pub max_table_bytes: u64,
    /// Largest number of i16 values in one time step, V·K (default 2^27).
    pub max_timestep_values: u64,
    /// Largest number of i16 values decoded at once by whole-file calls, T·V·K (default 2^31).
    pub max_total_values: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_file_bytes: 4 << 30,
            max_table_bytes: 256 << 20,
            max_timestep_values: 1 << 27,
            max_total_values: 1 << 31,
        }
    }
}

impl Limits {
    /// No limits at all (trusted input only).
    #[must_use]
    pub const fn unlimited() -> Self {
        Self {
            max_file_bytes: u64::MAX,
            max_table_bytes: u64::MAX,
            max_timestep_values: u64::MAX,
            max_total_values: u64::MAX,
        }
    }

    /// These limits with [`Limits::max_file_bytes`] set to `max_file_bytes`.
    #[must_use]
    pub const fn with_max_file_bytes(mut self, max_file_bytes: u64) -> Self {
        self.max_file_bytes = max_file_bytes;
        self
    }

    /// These limits with [`Limits::max_table_bytes`] set to `max_table_bytes`.
    #[must_use]
    pub const fn with_max_table_bytes(mut self, max_table_bytes: u64) -> Self {
        self.max_table_bytes = max_table_bytes;
        self
    }

    /// These limits with [`Limits::max_timestep_values`] set to `max_timestep_values`.
    #[must_use]
    pub const fn with_max_timestep_values(mut self, max_timestep_values: u64) -> Self {
        self.max_timestep_values = max_timestep_values;
        self
    }

    /// These limits with [`Limits::max_total_values`] set to `max_total_values`.
    #[must_use]
    pub const fn with_max_total_values(mut self, max_total_values: u64) -> Self {
        self.max_total_values = max_total_values;
        self
    }

    /// Checks `requested` against `limit`.
    pub(crate) fn check(what: &'static str, requested: u64, limit: u64) -> crate::Result<()> {
        if requested > limit {
            Err(crate::Error::LimitExceeded {
                what,
                requested,
                limit,
            })
        } else {
            Ok(())
        }
    }
}
