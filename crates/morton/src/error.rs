//! The crate's error type.

/// Errors of the checked API.
///
/// Every variant names what was out of range; nothing is ever masked silently by the checked
/// functions (the `_wrapping` functions document their masking instead).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A coordinate does not fit the key's bits per axis.
    #[error("coordinate {axis} = {value} does not fit in {bits} bits{}", at(*index))]
    CoordinateOutOfRange {
        /// Axis number (0 = x, 1 = y, 2 = z).
        axis: usize,
        /// The coordinate value.
        value: u32,
        /// Bits available per axis for this key type.
        bits: u32,
        /// Position in the input slice for batch functions.
        index: Option<usize>,
    },
    /// A key has bits set above the highest interleaved bit (e.g. bit 63 of a 3-D u64 key).
    #[error("key {key:#x} has bits above bit {}{}", bits - 1, at(*index))]
    KeyOutOfRange {
        /// The key.
        key: u64,
        /// Number of meaningful key bits.
        bits: u32,
        /// Position in the input slice for batch functions.
        index: Option<usize>,
    },
    /// Input and output slices of a batch function differ in length.
    #[error("batch length mismatch: {input} inputs, {output} output slots")]
    LengthMismatch {
        /// Number of inputs.
        input: usize,
        /// Number of output slots.
        output: usize,
    },
    /// A box has `min > max` on some axis, or an exclusive bound above the cube side.
    #[error("invalid box on axis {axis}: min {min}, max {max} (exclusive, at most {limit})")]
    InvalidBox {
        /// Axis number.
        axis: usize,
        /// Inclusive lower bound.
        min: u32,
        /// Exclusive upper bound.
        max: u64,
        /// Largest allowed exclusive bound (cube side).
        limit: u64,
    },
}

fn at(index: Option<usize>) -> String {
    index.map(|i| format!(" at index {i}")).unwrap_or_default()
}

/// `Result` with this crate's [`enum@Error`].
pub type Result<T, E = Error> = core::result::Result<T, E>;
