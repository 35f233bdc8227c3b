//! Plain value types that both the error type and the codecs name (no logic, no imports from
//! the rest of the crate, so that `error` depends on no module that depends on it).

use core::fmt;

use serde::{Deserialize, Serialize};

/// A byte range, as a Zarr store understands it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ByteRange {
    /// `length` bytes (or everything) from `offset`.
    FromStart {
        /// First byte.
        offset: u64,
        /// Number of bytes, `None` = to the end.
        length: Option<u64>,
    },
    /// The last `n` bytes (fewer if the value is shorter).
    Suffix(u64),
}

impl fmt::Display for ByteRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::FromStart {
                offset,
                length: Some(l),
            } => write!(f, "{offset}..{offset}+{l}"),
            Self::FromStart {
                offset,
                length: None,
            } => write!(f, "{offset}.."),
            Self::Suffix(n) => write!(f, "last {n}"),
        }
    }
}

/// N5 block mode. Serialised as `"default"` / `"varlength"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum N5Mode {
    /// 0: header holds mode, ndim, dims.
    Default,
    /// 1: a u32 number of elements follows the dims.
    Varlength,
}
