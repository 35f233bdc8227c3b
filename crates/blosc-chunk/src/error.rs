//! Error type of the crate.

/// Everything that can go wrong while parsing, decoding or encoding a Blosc chunk.
///
/// Variants reachable from untrusted input name the field and, where it helps, the byte offset
/// inside the chunk. Caller mistakes (bad parameters, short output buffers) have their own
/// variants.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The chunk ends before a field or section that must be present.
    #[error("truncated {what}: need {needed} bytes at offset {offset}, have {available}")]
    Truncated {
        /// The field or section being read.
        what: &'static str,
        /// Byte offset of the field inside the chunk.
        offset: usize,
        /// Bytes needed from `offset`.
        needed: usize,
        /// Bytes available from `offset`.
        available: usize,
    },
    /// The header is not plausible as a Blosc header as a whole (the bytes are not a Blosc
    /// chunk): a field holds a value no Blosc writer produces (format version above 15, `typesize` 0,
    /// a negative size, `cbytes` shorter than the header, a block size out of range, a
    /// reserved special-value code, contradicting flags). `what` is the first such field.
    #[error("not a Blosc chunk: invalid {what} {value}")]
    NotAChunk {
        /// The header field.
        what: &'static str,
        /// The value found.
        value: i64,
    },
    /// A field read while decoding a plausible chunk (its block offsets, a lazy chunk's
    /// trailer, a dictionary) holds a value the format does not allow.
    #[error("invalid {what}: {value}")]
    InvalidHeader {
        /// The header field.
        what: &'static str,
        /// The value found.
        value: i64,
    },
    /// A size or offset computation overflowed.
    #[error("{what} overflows")]
    Overflow {
        /// The quantity being computed.
        what: &'static str,
    },
    /// The chunk is well formed but uses something this crate does not implement.
    #[error("unsupported {what} {id}")]
    Unsupported {
        /// What is unsupported (`codec`, `filter`, `instrumented chunk`, …).
        what: &'static str,
        /// Its numeric id.
        id: u32,
    },
    /// The chunk needs (or the parameters ask for) a codec whose Cargo feature was disabled
    /// when this crate was built.
    #[error(
        "{codec} needs the Cargo feature `{feature}` of blosc-chunk, which is disabled in this build"
    )]
    CodecDisabled {
        /// The codec.
        codec: crate::codec_id::Codec,
        /// The Cargo feature that provides it (`lz4`, `zstd` or `zlib`).
        feature: &'static str,
    },
    /// A block or stream is corrupt.
    #[error("corrupt {what} in block {block} at offset {offset}")]
    Corrupt {
        /// What is wrong (`stream size`, `run token`, `codec data`, …).
        what: &'static str,
        /// Block index.
        block: usize,
        /// Byte offset inside the chunk where the problem was found.
        offset: usize,
    },
    /// A configured limit would be exceeded.
    #[error("limit exceeded: {what} needs {requested} bytes, limit {limit}")]
    LimitExceeded {
        /// The quantity that is too large.
        what: &'static str,
        /// Bytes requested by the input.
        requested: u64,
        /// The configured limit.
        limit: u64,
    },
    /// The caller's output buffer is too small.
    #[error("output buffer too small: need {needed} bytes, have {available}")]
    OutputTooSmall {
        /// Bytes needed.
        needed: usize,
        /// Bytes available.
        available: usize,
    },
    /// The requested item range lies outside the chunk.
    #[error("items {start}..{end} out of range: the chunk holds {nitems} items")]
    ItemRange {
        /// First requested item.
        start: usize,
        /// One past the last requested item.
        end: usize,
        /// Number of items in the chunk.
        nitems: usize,
    },
    /// A compression parameter is invalid (caller error).
    #[error("invalid parameter {what}: {why}")]
    InvalidParam {
        /// The parameter.
        what: &'static str,
        /// Why it is rejected.
        why: &'static str,
    },
    /// A value named or numbered by the caller (a codec, a shuffle, a block size) is not one
    /// of those accepted (caller error).
    #[error("invalid {what} {value:?}: expected {expected}")]
    InvalidValue {
        /// What the value is (`codec`, `cname`, `shuffle`, `blocksize`).
        what: &'static str,
        /// The value as given.
        value: String,
        /// What is accepted (`one of blosclz, lz4, …`).
        expected: String,
    },
    /// A plugin filter or codec (NDCELL, NDMEAN, NDLZ, BYTEDELTA, INT_TRUNC) cannot work with
    /// the chunk, its meta byte or the block shape it was given (C-Blosc2 fails the same way).
    #[error("{plugin}: {why}")]
    Plugin {
        /// The plugin (`ndcell`, `ndmean`, `ndlz`, `bytedelta`, `int_trunc`).
        plugin: &'static str,
        /// What does not fit.
        why: &'static str,
    },
    /// The chunk uses a plugin that needs the b2nd block shape, and none was given (C-Blosc2
    /// reads it from the super-chunk's `b2nd` metalayer: pass it as `DParams::blockshape` /
    /// `CParams::blockshape`).
    #[error(
        "the {plugin} plugin needs the b2nd block shape (DParams::blockshape or CParams::blockshape)"
    )]
    MissingBlockShape {
        /// The plugin (`ndcell`, `ndmean`, `ndlz`).
        plugin: &'static str,
    },
    /// A codec library reported an error while compressing.
    #[error("{codec} compression failed: {why}")]
    Codec {
        /// Codec name.
        codec: &'static str,
        /// Library message.
        why: String,
    },
}

/// Result alias with [`Error`] as the default error type.
pub type Result<T, E = Error> = core::result::Result<T, E>;

impl Error {
    pub(crate) fn truncated(what: &'static str, offset: usize, needed: usize, len: usize) -> Self {
        Self::Truncated {
            what,
            offset,
            needed,
            available: len.saturating_sub(offset),
        }
    }

    pub(crate) fn corrupt(what: &'static str, block: usize, offset: usize) -> Self {
        Self::Corrupt {
            what,
            block,
            offset,
        }
    }
}
