//! Error types: [`FormatError`] for bytes that break the format, [`enum@Error`] for everything a
//! dataset operation can report (with the file path where one is involved).

use std::path::PathBuf;

/// A violation of the WKW format found in header or jump-table bytes, or in a block.
///
/// Carries the field and, where it helps, the byte offset inside the file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FormatError {
    /// Fewer bytes than a structure needs.
    #[error("truncated {what}: need {needed} bytes at offset {offset}, have {available}")]
    Truncated {
        /// What was being read.
        what: &'static str,
        /// Byte offset where the structure starts.
        offset: u64,
        /// Bytes needed.
        needed: u64,
        /// Bytes available.
        available: u64,
    },
    /// The first three bytes are not `WKW`.
    #[error("bad magic {found:02x?} at offset 0, expected \"WKW\"")]
    BadMagic {
        /// The bytes found.
        found: [u8; 3],
    },
    /// Version byte (offset 3) is not 1.
    #[error("unsupported version {0} at offset 3 (only 1 exists)")]
    UnsupportedVersion(u8),
    /// blockType byte (offset 5) is not 1, 2 or 3.
    #[error("invalid blockType {0} at offset 5 (expected 1 raw, 2 lz4, 3 lz4hc)")]
    InvalidBlockType(u8),
    /// voxelType byte (offset 6) is not 1..=10.
    #[error("invalid voxelType {0} at offset 6 (expected 1..=10)")]
    InvalidVoxelType(u8),
    /// voxelSize (offset 7) is zero or not a multiple of the voxel type's size.
    #[error("invalid voxelSize {voxel_size} at offset 7: not a positive multiple of {type_size}")]
    InvalidVoxelSize {
        /// The voxelSize byte.
        voxel_size: u8,
        /// Size of one value of the voxel type.
        type_size: u8,
    },
    /// perDimLog2 (offset 4) describes a geometry that overflows the index types.
    #[error("unsupported geometry in perDimLog2 {per_dim_log2:#04x} at offset 4: {why}")]
    Geometry {
        /// The perDimLog2 byte.
        per_dim_log2: u8,
        /// Which bound was exceeded.
        why: &'static str,
    },
    /// dataOffset (offset 8) is inconsistent with the block type and geometry.
    #[error("invalid dataOffset {found} at offset 8: {why}")]
    DataOffset {
        /// The stored value.
        found: u64,
        /// What was expected.
        why: String,
    },
    /// A jump-table entry is smaller than the previous one (or than dataOffset).
    #[error(
        "corrupt jump table: entry {index} at offset {offset} is {value}, below the previous end {previous}"
    )]
    JumpTableNotMonotone {
        /// Entry number (block index).
        index: u64,
        /// Byte offset of the entry in the file.
        offset: u64,
        /// The entry.
        value: u64,
        /// The previous end (or dataOffset for entry 0).
        previous: u64,
    },
    /// A compressed block is longer than LZ4 can produce for the block size: its jump-table
    /// entry (at byte `16 + 8 * index`) is corrupt.
    #[error(
        "corrupt jump table: entry {index} at offset {} makes block {index} {length} bytes long, above the lz4 bound {bound}",
        16u64.saturating_add(.index.saturating_mul(8))
    )]
    BlockTooLong {
        /// Block index.
        index: u64,
        /// Stored length.
        length: u64,
        /// LZ4 compress bound of the block size.
        bound: u64,
    },
    /// A block ends beyond the end of the file.
    #[error("block {index} ends at {end}, beyond the file length {file_len}")]
    BlockPastEnd {
        /// Block index.
        index: u64,
        /// End offset of the block.
        end: u64,
        /// File length.
        file_len: u64,
    },
    /// A compressed block does not decode to exactly one raw block.
    #[error("block {index} at offset {offset}: lz4 data does not decode to {expected} bytes")]
    Decompress {
        /// Block index.
        index: u64,
        /// Byte offset of the compressed block.
        offset: u64,
        /// Size of a raw block.
        expected: u64,
    },
    /// A data file's header disagrees with the dataset's `header.wkw`.
    #[error("header mismatch in {field}: file has {file}, header.wkw has {dataset}")]
    HeaderMismatch {
        /// Which field differs.
        field: &'static str,
        /// Value in the data file.
        file: u64,
        /// Value in `header.wkw`.
        dataset: u64,
    },
}

/// Everything a dataset operation can fail with.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An I/O error on a file.
    #[error("i/o error on {}: {source}", path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// A file breaks the format.
    #[error("{}: {source}", path.display())]
    Format {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        #[source]
        source: FormatError,
    },
    /// A header violates the format (no file involved, e.g. [`crate::Header::new`]).
    #[error(transparent)]
    Header(#[from] FormatError),
    /// The write lock of a data file could not be taken: its lock file (below
    /// [`LOCK_DIR_NAME`](crate::LOCK_DIR_NAME)) or its folder cannot be created or opened, or
    /// the advisory lock failed.
    #[error("cannot take the write lock {}: {source}", path.display())]
    Lock {
        /// The lock file.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// An output that is its own input, lies inside it or contains it ([`crate::compress`] from
    /// a dataset into itself, into a folder inside it or into one around it; the same for the
    /// remote `compress_to`): refused before anything was written. `input` and `output` are
    /// named as the caller gave them (URLs without credentials).
    #[error("refused: {}", how.describe(input, output))]
    Overlap {
        /// The input (source dataset).
        input: String,
        /// The output (destination dataset).
        output: String,
        /// How they overlap.
        how: scifmt_io::Overlap,
    },
    /// `Dataset::create` found an existing `header.wkw`.
    #[error("dataset already exists: {}", path.display())]
    AlreadyExists {
        /// The existing `header.wkw`.
        path: PathBuf,
    },
    /// The dataset root is not a directory or has no `header.wkw`.
    #[error("not a wkw dataset (no header.wkw): {}", path.display())]
    NotADataset {
        /// The root.
        path: PathBuf,
    },
    /// A box does not fit the coordinate range (ends above 2³²).
    #[error("box offset {offset:?} + shape {shape:?} exceeds the u32 coordinate range")]
    BoxOutOfRange {
        /// Box offset (x, y, z).
        offset: [u32; 3],
        /// Box shape (x, y, z).
        shape: [u32; 3],
    },
    /// An array's voxel type, channel count, shape or buffer length does not fit the call.
    #[error("array mismatch: {0}")]
    ArrayMismatch(String),
    /// An allocation or size would exceed a [`crate::Limits`] bound.
    #[error("limit exceeded: {what} needs {requested}, limit {limit}")]
    LimitExceeded {
        /// What would be allocated.
        what: &'static str,
        /// Requested amount.
        requested: u64,
        /// The limit.
        limit: u64,
    },
    /// LZ4 compression failed (input too large for LZ4).
    #[error("lz4 compression of a {size}-byte block failed")]
    Compress {
        /// Block size in bytes.
        size: usize,
    },
    /// An argument of a constructor is out of its domain, e.g. a block length that is not a
    /// power of two in [`crate::Header::new`].
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// The operation is not available on this target, e.g. typed voxel access on a big-endian
    /// machine (the values are little-endian; see [`crate::Voxel`]).
    #[error("unsupported: {0}")]
    Unsupported(&'static str),
    /// An object-store request failed (after the store's own retries and this crate's), for
    /// the object at `url` (scheme, bucket and key; never credentials or a query string).
    /// The message quotes the store's error through `scifmt_io::redact` (no user info, query
    /// strings or fragments of URLs); `source` itself is the store's error as it came (it may quote such a URL whole).
    #[cfg(feature = "object_store")]
    #[cfg_attr(docsrs, doc(cfg(feature = "object_store")))]
    #[error(
        "object store error on {url}: {}",
        scifmt_io::store_error_message(source)
    )]
    Remote {
        /// The object (or dataset prefix) involved.
        url: String,
        /// The store's error.
        #[source]
        source: object_store::Error,
    },
    /// A conditional write of the object at `url` lost against another writer: the object
    /// changed (or was created) since this writer read it, and the retries allowed by the
    /// remote options were used up (or none were allowed). Nothing was written to that object.
    #[error("write conflict on {url}: the object was changed by another writer since it was read")]
    Conflict {
        /// The object.
        url: String,
    },
    /// A data file was replaced twice during one read (its blocks were fetched again after the
    /// first change, and the object changed again): the read stopped rather than mix versions.
    #[cfg(feature = "object_store")]
    #[cfg_attr(docsrs, doc(cfg(feature = "object_store")))]
    #[error("{url}: the object changed twice during one read")]
    Changed {
        /// The object.
        url: String,
    },
    /// The operation was stopped through its [`Options::cancel`](crate::Options::cancel) flag
    /// (between files or batches of blocks): what it completed stays complete, every file it
    /// replaced is old or new, never a mix.
    #[error("cancelled")]
    Cancelled,
    /// A broken internal invariant: a bug in this crate, whatever the input. Please report it
    /// (with the message and, if possible, the dataset's `header.wkw` and the call that failed)
    /// at the crate's repository. The operation stopped there, with the same guarantees as
    /// after an [`Error::Io`] (compressed files old or new, never a mix).
    #[error("internal error (a bug in the wkw crate, please report it): {what}")]
    Internal {
        /// Which invariant broke.
        what: String,
    },
}

impl Error {
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Self::Io {
            path: path.into(),
            source,
        }
    }

    pub(crate) fn internal(what: impl Into<String>) -> Self {
        Self::Internal { what: what.into() }
    }

    pub(crate) fn format(path: impl Into<PathBuf>, source: FormatError) -> Self {
        Self::Format {
            path: path.into(),
            source,
        }
    }
}

impl From<scifmt_io::Error> for Error {
    fn from(e: scifmt_io::Error) -> Self {
        match e {
            scifmt_io::Error::Io { path, source } => Self::Io { path, source },
            scifmt_io::Error::InvalidArgument(m) => Self::InvalidArgument(m),
            scifmt_io::Error::Overlap { input, output, how } => {
                Self::Overlap { input, output, how }
            }
            scifmt_io::Error::Cancelled => Self::Cancelled,
            #[cfg(feature = "object_store")]
            scifmt_io::Error::Remote { url, source } => Self::Remote { url, source },
            #[cfg(feature = "object_store")]
            scifmt_io::Error::Conflict { url } => Self::Conflict { url },
            #[cfg(feature = "object_store")]
            scifmt_io::Error::Changed { url } => Self::Changed { url },
            e => Self::internal(format!("unexpected I/O layer error: {e}")),
        }
    }
}

/// `Result` with this crate's [`enum@Error`].
pub type Result<T, E = Error> = core::result::Result<T, E>;
