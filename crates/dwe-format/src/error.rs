//! The crate's error type.

/// Everything that can go wrong reading or writing a `.dwe` file.
///
/// Variants reachable from file contents name the field and, where it helps, the byte offset.
/// Caller mistakes (bad indices, bad writer parameters) have their own variants.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The first four bytes are not `00 64 77 65` (`\0dwe`).
    #[error("bad magic {found:02x?}, expected [00, 64, 77, 65]")]
    BadMagic {
        /// The bytes found at offset 0.
        found: [u8; 4],
    },
    /// `major_version` is not 1.
    #[error("unsupported major_version {major} at offset 4 (only 1 is supported)")]
    UnsupportedVersion {
        /// The major version found.
        major: u32,
    },
    /// The input ends before a structure does.
    #[error("truncated {what}: need {needed} bytes at offset {offset}, have {available}")]
    Truncated {
        /// What was being read.
        what: &'static str,
        /// Byte offset where it starts.
        offset: u64,
        /// Bytes needed from `offset`.
        needed: u64,
        /// Bytes available in the whole input.
        available: u64,
    },
    /// The input length is not what the header says, or not a multiple of 4.
    #[error("file length {actual} bytes does not match header file_size {declared} (u32 words)")]
    FileSize {
        /// `file_size` from the header (in u32 words).
        declared: u32,
        /// The input length in bytes.
        actual: u64,
    },
    /// A header field has an invalid value.
    #[error("invalid header field {field} = {value}: {reason}")]
    InvalidHeader {
        /// The field name.
        field: &'static str,
        /// Its value.
        value: u64,
        /// Why it is invalid.
        reason: &'static str,
    },
    /// An entropy model is invalid.
    #[error("invalid entropy model of time step {timestep} at byte offset {offset}: {reason}")]
    InvalidModel {
        /// Time step of the model.
        timestep: u32,
        /// Byte offset of the model's `num_symbols`.
        offset: u64,
        /// Why it is invalid.
        reason: &'static str,
    },
    /// An address or offset stored in the file points outside its valid range.
    #[error("{what} #{index} = {value} is out of range (must be {bound})")]
    OutOfRange {
        /// The table or field.
        what: &'static str,
        /// Position within the table.
        index: u64,
        /// The stored value.
        value: u64,
        /// The constraint, e.g. `"< 2656"`.
        bound: String,
    },
    /// The ANS decoder needed another u16 word past the end of the data.
    #[error(
        "compressed data of time step {timestep} ends early: word needed at byte offset {offset}"
    )]
    WordUnderrun {
        /// Time step being decoded.
        timestep: u32,
        /// Byte offset of the missing word.
        offset: u64,
    },
    /// An optional integrity check failed.
    #[error("integrity check failed: {what} is {found:#x}, expected {expected:#x}")]
    Integrity {
        /// What was checked.
        what: String,
        /// Expected value.
        expected: u64,
        /// Value found.
        found: u64,
    },
    /// The file is a valid instance of both layouts; choose one explicitly.
    #[error("file is consistent with both the block and the stream layout; choose one explicitly")]
    AmbiguousLayout,
    /// The file is consistent with neither layout.
    #[error("file matches neither layout: as stream: {stream}; as block: {block}")]
    UnknownLayout {
        /// Why it is not a stream-layout file.
        stream: Box<Error>,
        /// Why it is not a block-layout file.
        block: Box<Error>,
    },
    /// A [`Limits`](crate::Limits) bound was exceeded.
    #[error("limit exceeded: {what} needs {requested}, limit {limit}")]
    LimitExceeded {
        /// What would be allocated or processed.
        what: &'static str,
        /// Amount requested.
        requested: u64,
        /// The configured limit.
        limit: u64,
    },
    /// A caller-supplied index is out of range.
    #[error("{what} index {index} out of range (size {len})")]
    IndexOutOfRange {
        /// `"word"`, `"time step"`, …
        what: &'static str,
        /// The index given.
        index: u64,
        /// The size of that dimension.
        len: u64,
    },
    /// A caller-supplied parameter is invalid (writer or quantiser).
    #[error("invalid parameter {what}: {reason}")]
    InvalidParameter {
        /// The parameter.
        what: &'static str,
        /// Why.
        reason: String,
    },
    /// A residual does not fit in i16 (the writer refuses to wrap).
    #[error(
        "residual of time step {timestep}, word {word}, component {component} is {value}, outside i16"
    )]
    ResidualOverflow {
        /// Time step.
        timestep: u32,
        /// Word.
        word: u32,
        /// Component.
        component: u32,
        /// The exact residual.
        value: i32,
    },
    /// A time step has more distinct residuals than a 12-bit model can hold.
    #[error("time step {timestep} has {count} distinct residuals, more than 4096")]
    TooManySymbols {
        /// Time step.
        timestep: u32,
        /// Number of distinct residuals.
        count: usize,
    },
    /// A float cannot be quantised to i16.
    #[error("value #{index} = {value} cannot be quantised with scale_factor {scale_factor}")]
    Quantise {
        /// Position in the input.
        index: usize,
        /// The value.
        value: f32,
        /// The scale factor used.
        scale_factor: f32,
    },
    /// An I/O error.
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

impl From<scifmt_io::Error> for Error {
    fn from(e: scifmt_io::Error) -> Self {
        match e {
            scifmt_io::Error::InvalidArgument(reason) => Self::InvalidParameter {
                what: "path",
                reason,
            },
            // I/O errors keep their kind; the message names the path.
            e => Self::Io(e.into_io()),
        }
    }
}

/// `Result` with [`Error`].
pub type Result<T, E = Error> = core::result::Result<T, E>;
