//! The crate's error type.

/// Everything that can go wrong: a configuration that is not the codec's, a block that does not
/// decode to the size the chunk has, sizes LZ4 cannot express.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A configuration (or codec entry) that is not a valid `lz4-block` one.
    #[error("`lz4-block` configuration: {0}")]
    Configuration(String),
    /// A stored block that does not decode to exactly `expected` bytes (corrupt, truncated,
    /// or a block of another chunk size).
    #[error("corrupt lz4-block chunk ({stored} stored bytes): {detail}")]
    Corrupt {
        /// Length of the stored block.
        stored: usize,
        /// What was wrong.
        detail: String,
    },
    /// A size LZ4 cannot express (blocks are limited to `LZ4_MAX_INPUT_SIZE`, about 2 GiB).
    #[error("{what} of {size} bytes is larger than an LZ4 block can be")]
    TooLarge {
        /// Which size.
        what: &'static str,
        /// The size.
        size: usize,
    },
}

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = core::result::Result<T, E>;
