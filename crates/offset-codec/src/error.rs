//! The crate's error type.

/// Result alias with this crate's [`Error`].
pub type Result<T, E = Error> = core::result::Result<T, E>;

/// Boxed error returned by a user's dynamic prefix callback.
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// Everything that can go wrong: configuration parsing, encoding, decoding, range mapping and the
/// TIFF / N5 helpers. Every rejection has its own variant.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    // ----- configuration -------------------------------------------------------------------
    /// A configuration (or codec entry) is not a JSON object.
    #[error("`{codec}` {what} must be a json object, got {found}")]
    NotAnObject {
        /// `offset`, `pad` or `codec entry`.
        codec: &'static str,
        /// `configuration` or `entry`.
        what: &'static str,
        /// JSON type that was found.
        found: &'static str,
    },
    /// A codec entry names another codec.
    #[error("codec entry name is {found}, expected one of {expected}")]
    UnexpectedName {
        /// The accepted names.
        expected: &'static str,
        /// The name found (JSON text).
        found: String,
    },
    /// A key the codec does not define.
    #[error("`{codec}` configuration has unknown key `{key}`")]
    UnknownKey {
        /// `offset` or `pad` (or `codec entry`).
        codec: &'static str,
        /// The unexpected key.
        key: String,
    },
    /// A required key is absent.
    #[error("`{codec}` configuration is missing the required key `{field}`")]
    MissingField {
        /// `offset` or `pad` (or `codec entry`).
        codec: &'static str,
        /// The missing key.
        field: &'static str,
    },
    /// A size is not a JSON integer (a float such as `12.5` or `12.0`, a string, a bool, null…).
    #[error("`{field}` must be a non-negative integer, got {value}")]
    NotAnInteger {
        /// `offset` or `nbytes`.
        field: &'static str,
        /// The JSON text found.
        value: String,
    },
    /// A size is a negative integer.
    #[error("`{field}` must be non-negative, got {value}")]
    NegativeSize {
        /// `offset` or `nbytes`.
        field: &'static str,
        /// The value found.
        value: i64,
    },
    /// A size exceeds [`Limits`](crate::Limits) or the platform's address space.
    #[error("`{field}` is {value} bytes, more than the limit of {limit} bytes")]
    SizeLimit {
        /// `offset`, `nbytes`, or the quantity checked.
        field: &'static str,
        /// The requested size.
        value: u64,
        /// The limit in force.
        limit: u64,
    },
    /// `prefix` / `padding` is not a JSON string.
    #[error("`{field}` must be a base64 string, got {value}")]
    NotAString {
        /// `prefix` or `padding`.
        field: &'static str,
        /// The JSON text found.
        value: String,
    },
    /// `prefix` / `padding` is not valid base64 (standard alphabet, canonical `=` padding).
    #[error("`{field}` is not valid base64: {source}")]
    InvalidBase64 {
        /// `prefix` or `padding`.
        field: &'static str,
        /// The decoder's complaint (with the byte offset in the string).
        #[source]
        source: base64::DecodeError,
    },
    /// The decoded `prefix` / `padding` length differs from `offset` / `nbytes`.
    #[error("decoded `{field}` has {actual} bytes, but `{size_field}` is {expected}")]
    PrefixLengthMismatch {
        /// `prefix` or `padding`.
        field: &'static str,
        /// `offset` or `nbytes`.
        size_field: &'static str,
        /// Decoded length.
        actual: u64,
        /// Configured size.
        expected: u64,
    },
    /// `location` is neither `"start"` nor `"end"`.
    #[error("`location` must be \"start\" or \"end\", got {value}")]
    InvalidLocation {
        /// The JSON text found.
        value: String,
    },

    // ----- encoding / decoding -------------------------------------------------------------
    /// An encoded chunk is shorter than the header/trailer it must hold.
    #[error("encoded chunk has {len} bytes, fewer than the {nbytes} bytes to strip")]
    ChunkTooShort {
        /// Length of the encoded chunk.
        len: u64,
        /// Bytes the codec strips.
        nbytes: u64,
    },
    /// Strict mode: a skipped byte differs from the configured (or dynamically built) prefix.
    #[error(
        "strict mode: skipped byte at offset {offset} of the chunk is {found:#04x}, expected {expected:#04x}"
    )]
    PrefixMismatch {
        /// Byte offset in the encoded chunk.
        offset: u64,
        /// Byte found in the chunk.
        found: u8,
        /// Byte of the expected prefix.
        expected: u8,
    },
    /// A dynamic prefix callback returned the wrong number of bytes.
    #[error("dynamic prefix callback returned {actual} bytes, but the codec's size is {expected}")]
    DynamicPrefixLength {
        /// Bytes returned.
        actual: u64,
        /// Configured `offset` / `nbytes`.
        expected: u64,
    },
    /// A dynamic prefix callback failed.
    #[error("dynamic prefix callback failed: {source}")]
    DynamicPrefix {
        /// The callback's error.
        #[source]
        source: BoxError,
    },
    /// A size or offset computation overflowed.
    #[error("{what} overflows")]
    Overflow {
        /// The quantity computed.
        what: &'static str,
    },
    /// A decoded byte range lies outside the payload.
    #[error("byte range {range} is outside the {len}-byte payload")]
    RangeOutOfBounds {
        /// The requested range (in decoded coordinates).
        range: crate::types::ByteRange,
        /// Payload length.
        len: u64,
    },
    /// The host returned a different number of bytes than the planned request asked for.
    #[error("partial read returned {actual} bytes for a request of {requested} bytes")]
    UnexpectedReadLength {
        /// Bytes returned.
        actual: u64,
        /// Bytes requested.
        requested: u64,
    },

    // ----- TIFF ----------------------------------------------------------------------------
    /// A TIFF dimension is zero.
    #[error("tiff `{field}` must be at least 1")]
    TiffZeroDimension {
        /// `width` or `height`.
        field: &'static str,
    },
    /// Uncompressed strip byte count differs from width × height × bytes per sample.
    #[error(
        "tiff strip byte count is {actual}, but an uncompressed {width}x{height} strip needs {expected}"
    )]
    TiffStripByteCount {
        /// Given count.
        actual: u64,
        /// Required count.
        expected: u64,
        /// Image width.
        width: u32,
        /// Image height.
        height: u32,
    },
    /// The strip is larger than a classic TIFF can address (4 GiB).
    #[error("tiff strip of {len} bytes does not fit a classic tiff (at most {max} bytes)")]
    TiffStripTooLarge {
        /// Strip length.
        len: u64,
        /// Largest allowed.
        max: u64,
    },

    // ----- N5 ------------------------------------------------------------------------------
    /// An N5 block has too many or zero dimensions.
    #[error("n5 block must have 1 to 65535 dimensions, got {ndim}")]
    N5DimensionCount {
        /// Number of dimensions.
        ndim: usize,
    },
    /// An N5 block header is cut short.
    #[error("n5 block header needs {needed} bytes, the block has {available}")]
    N5HeaderTruncated {
        /// Header bytes needed.
        needed: u64,
        /// Bytes available.
        available: u64,
    },
    /// An N5 block header has a mode this crate does not read.
    #[error("n5 block mode {mode} at byte 0 is not supported (0 = default, 1 = varlength)")]
    N5UnsupportedMode {
        /// Mode found.
        mode: u16,
    },
    /// The block's header dims differ from the dataset's blockSize: a truncated edge block.
    #[error(
        "n5 block header dims {header:?} differ from blockSize {block_size:?}: a truncated edge block \
         (java n5 / z5py convention) cannot be read through the `offset` codec, use an `n5_default` codec"
    )]
    N5TruncatedBlock {
        /// Dims in the block header (N5 order).
        header: Vec<u32>,
        /// Dataset blockSize (N5 order).
        block_size: Vec<u32>,
    },
    /// An N5 block in varlength mode cannot be read through a fixed `offset`.
    #[error(
        "n5 block is in varlength mode (mode 1): its header is 4 bytes longer than a default block's"
    )]
    N5Varlength,
    /// A serialised N5 header has `num_elements` in default mode or lacks it in varlength mode.
    #[error(
        "n5 block header in {mode:?} mode: `num_elements` belongs to varlength headers and only to them"
    )]
    N5NumElements {
        /// The header's mode.
        mode: crate::types::N5Mode,
    },
    /// A data type N5 does not define.
    #[error("n5 has no data type `{name}`")]
    N5DataType {
        /// The name given.
        name: String,
    },
    /// Dimension counts of the N5 dataset description disagree.
    #[error("n5 `dimensions` has {dimensions} entries but `blockSize` has {block_size}")]
    N5RankMismatch {
        /// Entries in `dimensions`.
        dimensions: usize,
        /// Entries in `blockSize`.
        block_size: usize,
    },
    /// A zero block size.
    #[error("n5 `blockSize` entry {index} is 0")]
    N5ZeroBlockSize {
        /// Index of the zero entry.
        index: usize,
    },
}

/// Short JSON type name for error messages.
pub(crate) fn json_type(v: &serde_json::Value) -> &'static str {
    match v {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "an array",
        serde_json::Value::Object(_) => "an object",
    }
}
