//! The crate's error type.

/// Everything that can go wrong reading or writing a frame.
///
/// Variants caused by the input name the field and, where one exists, the byte offset from the
/// start of the frame (or of the part named in `what`). Caller mistakes (bad arguments) are
/// [`Error::InvalidArgument`], never mixed with bad-input errors.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The input ends before a field it must contain.
    #[error("truncated {what}: need {needed} bytes at offset {offset}, have {available}")]
    Truncated {
        /// The field or part that is cut off.
        what: &'static str,
        /// Where the field starts.
        offset: u64,
        /// Bytes needed from `offset`.
        needed: u64,
        /// Bytes available from `offset`.
        available: u64,
    },
    /// A msgpack marker byte at a fixed position is not the one C-Blosc2 writes.
    #[error("bad {what} marker at offset {offset}: expected {expected:#04x}, found {found:#04x}")]
    Marker {
        /// The field the marker introduces.
        what: &'static str,
        /// Position of the marker.
        offset: u64,
        /// The expected marker byte.
        expected: u8,
        /// The byte found.
        found: u8,
    },
    /// The header does not start with the `b2frame` magic.
    #[error("not a blosc2 frame: magic \"b2frame\\0\" missing at offset 1")]
    BadMagic,
    /// A field holds a value outside its valid range or inconsistent with other fields.
    #[error("invalid {what} at offset {offset}: {detail}")]
    Invalid {
        /// The field.
        what: &'static str,
        /// Where the field (or the structure it belongs to) starts.
        offset: u64,
        /// What is wrong, with the values involved.
        detail: String,
    },
    /// A frame format version this crate (like C-Blosc2) does not read.
    #[error("unsupported frame format version {0} (at most 3 is supported)")]
    UnsupportedVersion(u8),
    /// A sparse frame was opened as contiguous or the other way round.
    #[error("frame type mismatch: header says {found}, opened as {expected}")]
    FrameType {
        /// Frame type expected from how the frame was opened (0 contiguous, 1 sparse).
        expected: u8,
        /// Frame type in the header.
        found: u8,
    },
    /// An index offset has the special bit set with a value C-Blosc2 never writes.
    #[error("chunk {index}: unknown special offset {offset:#018x}")]
    SpecialOffset {
        /// The chunk number.
        index: usize,
        /// The raw offset.
        offset: u64,
    },
    /// A chunk number at or past the number of chunks.
    #[error("chunk {index} out of range: the frame has {nchunks} chunks")]
    ChunkIndex {
        /// The requested chunk.
        index: usize,
        /// Number of chunks in the frame.
        nchunks: usize,
    },
    /// A configured limit would be exceeded (see [`Limits`](crate::Limits)).
    #[error("limit exceeded: {what} needs {requested}, limit {limit}")]
    LimitExceeded {
        /// What would be allocated or counted.
        what: &'static str,
        /// The amount required.
        requested: u64,
        /// The configured limit.
        limit: u64,
    },
    /// Arithmetic on sizes or offsets from the input overflows.
    #[error("{what} overflows")]
    Overflow {
        /// The computed quantity.
        what: &'static str,
    },
    /// The named metalayer or vlmetalayer does not exist.
    #[error("no {kind} named {name:?}")]
    NotFound {
        /// `"metalayer"` or `"vlmetalayer"`.
        kind: &'static str,
        /// The requested name.
        name: String,
    },
    /// The frame has no `b2nd` metalayer.
    #[error("the frame is not a b2nd array (no \"b2nd\" metalayer)")]
    NotB2nd,
    /// A metalayer's content is not valid msgpack.
    #[error("{kind} {name:?} is not valid msgpack: {detail}")]
    Msgpack {
        /// `"metalayer"` or `"vlmetalayer"`.
        kind: &'static str,
        /// Its name.
        name: String,
        /// The decoder's message.
        detail: String,
    },
    /// A typed read asked for items of a type that does not match the array's dtype.
    #[error("the array's dtype {dtype:?} does not hold items of type {requested}")]
    DtypeMismatch {
        /// The array's dtype string.
        dtype: String,
        /// The requested Rust type.
        requested: &'static str,
    },
    /// A value could not be encoded as msgpack, or a layer's msgpack does not decode into the
    /// requested type (feature `serde`).
    #[error("{kind} {name:?}: {detail}")]
    Serde {
        /// `"metalayer"` or `"vlmetalayer"`.
        kind: &'static str,
        /// Its name.
        name: String,
        /// The encoder's or decoder's message.
        detail: String,
    },
    /// The caller passed an argument that cannot be honoured (not an input problem).
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// A broken invariant of this crate: a bug of ours, never the input's fault; please report
    /// it at the crate's repository.
    #[error("internal error (a bug in the blosc2-frame crate, please report it): {what}")]
    Internal {
        /// Which invariant broke.
        what: String,
    },
    /// A chunk (data, index or vlmetalayer) failed to parse or decode.
    #[error("{site}: {source}")]
    Chunk {
        /// Which chunk: `chunk 3`, `index chunk`, `vlmetalayer "info"`, ….
        site: String,
        /// The chunk codec's error.
        #[source]
        source: blosc_chunk::Error,
    },
    /// A directory opened as a frame is not a sparse frame: it has no `chunks.b2frame`.
    /// (The message leaves the path to the caller, as for [`Error::Io`].)
    #[error("a directory, but not a sparse frame (it has no chunks.b2frame)")]
    NotASparseFrame {
        /// The directory.
        path: std::path::PathBuf,
    },
    /// An I/O error from the underlying file or reader.
    #[error("i/o error: {0}")]
    Io(#[from] std::io::Error),
    /// An object-store request failed (feature `object_store`). `url` names the object without
    /// credentials (no user info, no query string); the message quotes the store's error through
    /// `scifmt_io::redact` (no user info, query strings or fragments of URLs). `source` is the store's error as it came (match
    /// on `object_store::Error::NotFound` for a missing object; it may quote such a URL whole).
    #[cfg(feature = "object_store")]
    #[error("{url}: {}", scifmt_io::store_error_message(source))]
    Remote {
        /// The object (or prefix) the request was for.
        url: String,
        /// The store's error.
        #[source]
        source: object_store::Error,
    },
    /// The object changed after it was opened: its ETag differs from the one seen at open, so
    /// reading on could mix two versions (feature `object_store`). Open it again to read the
    /// new version.
    #[cfg(feature = "object_store")]
    #[error("{url}: the object changed since it was opened (ETag no longer matches)")]
    Changed {
        /// The object.
        url: String,
    },
    /// A conditional write lost: the object already exists (create-only writes) or was
    /// replaced concurrently (feature `object_store`).
    #[cfg(feature = "object_store")]
    #[error("{url}: conditional write failed (the object exists or was modified concurrently)")]
    Conflict {
        /// The object.
        url: String,
    },
    /// A frame that cannot be made into virtual Zarr references (feature `references`): a
    /// sparse frame, a frame without a `b2nd` metalayer, a dtype without a Zarr v3 data type,
    /// chunks that are not the b2nd layout's. `url` names the source (a `file://` URL for a
    /// local file), `what` says what is not supported.
    #[cfg(feature = "references")]
    #[error("{url}: cannot be virtualized: {what}")]
    NotVirtualizable {
        /// The source.
        url: String,
        /// Why, with the values involved.
        what: String,
    },
    /// The reference sink refused a node or a chunk, or failed writing it (feature
    /// `references`).
    #[cfg(feature = "references")]
    #[error("reference sink: {0}")]
    Sink(#[source] scifmt_io::Error),
    /// The run was stopped through its `scifmt_io::Cancel` flag (feature `references`).
    #[cfg(feature = "references")]
    #[error("cancelled")]
    Cancelled,
}

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = core::result::Result<T, E>;

impl From<scifmt_io::Error> for Error {
    fn from(e: scifmt_io::Error) -> Self {
        match e {
            scifmt_io::Error::InvalidArgument(m) => Self::InvalidArgument(m),
            #[cfg(feature = "object_store")]
            scifmt_io::Error::Remote { url, source } => Self::Remote { url, source },
            #[cfg(feature = "object_store")]
            scifmt_io::Error::Conflict { url } => Self::Conflict { url },
            #[cfg(feature = "object_store")]
            scifmt_io::Error::Changed { url } => Self::Changed { url },
            #[cfg(feature = "references")]
            scifmt_io::Error::Cancelled => Self::Cancelled,
            // I/O errors keep their kind; the message names the path.
            e => Self::Io(e.into_io()),
        }
    }
}

impl Error {
    /// Shorthand for [`Error::Invalid`].
    pub(crate) fn invalid(what: &'static str, offset: u64, detail: impl Into<String>) -> Self {
        Self::Invalid {
            what,
            offset,
            detail: detail.into(),
        }
    }
}
