//! The crate's error type.

use std::path::PathBuf;

#[cfg(feature = "object_store")]
use crate::credentials::store_error_message;

/// Everything this crate reports. Every variant names the file (path) or object (URL, without
/// credentials) involved.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An I/O error on a file or directory.
    #[error("i/o error on {}: {source}", path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// An argument that cannot be honoured (a path without a file name, a malformed URL).
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// The operation was stopped through its [`Cancel`](crate::Cancel) flag; what it had
    /// completed stays complete.
    #[error("cancelled")]
    Cancelled,
    /// An output that is its own input, lies inside it or contains it (see
    /// [`ensure_apart`](crate::ensure_apart)): refused before anything was written or deleted.
    #[error("refused: {}", how.describe(input, output))]
    Overlap {
        /// The input as the caller named it (a URL without credentials).
        input: String,
        /// The output as the caller named it (a URL without credentials).
        output: String,
        /// How they overlap.
        how: Overlap,
    },
    /// An object-store request failed, for the object at `url` (scheme, bucket and key; never
    /// credentials or a query string). The message quotes the store's error through
    /// [`store_error_message`](crate::store_error_message) (redacted; missing credentials said
    /// in words, with how to provide them); `source` itself is the store's error as it came (it may quote
    /// a URL whole).
    #[cfg(feature = "object_store")]
    #[cfg_attr(docsrs, doc(cfg(feature = "object_store")))]
    #[error("object store error on {url}: {}", store_error_message(source))]
    Remote {
        /// The object (or prefix) involved.
        url: String,
        /// The store's error.
        #[source]
        source: object_store::Error,
    },
    /// A conditional write lost: the object exists (create-only put) or changed since the
    /// writer read it (`If-Match` put); nothing was written. See [`Access::Write`](crate::Access).
    #[cfg(feature = "object_store")]
    #[cfg_attr(docsrs, doc(cfg(feature = "object_store")))]
    #[error("write conflict on {url}: the object exists or was changed by another writer")]
    Conflict {
        /// The object.
        url: String,
    },
    /// A read pinned to one object version (`If-Match` on the ETag seen before) found another
    /// version: reading on could mix two. See [`Access::Read`](crate::Access).
    #[cfg(feature = "object_store")]
    #[cfg_attr(docsrs, doc(cfg(feature = "object_store")))]
    #[error(
        "{url}: the object changed since it was opened or referenced (its ETag or modification time no longer matches)"
    )]
    Changed {
        /// The object (a `file://` URL for a local file a reference points into).
        url: String,
    },
    /// A document this crate reads (a kerchunk reference file) is malformed.
    #[error("{name}: {what}")]
    Format {
        /// The document (path or URL without credentials).
        name: String,
        /// What is wrong, with the key or entry.
        what: String,
    },
    /// Valid input this crate does not handle (a chunk key encoding, a kerchunk feature such as
    /// templates).
    #[error("unsupported: {name}: {what}")]
    Unsupported {
        /// The document or node.
        name: String,
        /// What is not supported.
        what: String,
    },
    /// Icechunk failed on a repository (feature `icechunk`): its message, redacted.
    #[cfg(feature = "icechunk")]
    #[cfg_attr(docsrs, doc(cfg(feature = "icechunk")))]
    #[error("icechunk repository {repository}: {what}")]
    Icechunk {
        /// The repository (path or URL without credentials).
        repository: String,
        /// What went wrong.
        what: String,
    },
    /// A size read from input exceeds a limit; nothing of that size was allocated.
    #[error("limit exceeded: {what} needs {requested}, limit {limit}")]
    LimitExceeded {
        /// What would be allocated.
        what: &'static str,
        /// Requested amount.
        requested: u64,
        /// The limit.
        limit: u64,
    },
}

impl Error {
    /// [`Error::Io`] on `path`.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Self::Io {
            path: path.into(),
            source,
        }
    }

    /// This error as a [`std::io::Error`] of the same kind (the message keeps the path or URL),
    /// for callers whose error type has no place for a path.
    #[must_use]
    pub fn into_io(self) -> std::io::Error {
        let kind = match &self {
            Self::Io { source, .. } => source.kind(),
            Self::InvalidArgument(_) | Self::Overlap { .. } => std::io::ErrorKind::InvalidInput,
            Self::Cancelled => std::io::ErrorKind::Interrupted,
            Self::Format { .. } | Self::LimitExceeded { .. } => std::io::ErrorKind::InvalidData,
            Self::Unsupported { .. } => std::io::ErrorKind::Unsupported,
            #[cfg(feature = "object_store")]
            _ => std::io::ErrorKind::Other,
        };
        std::io::Error::new(kind, self)
    }
}

/// `Result` with this crate's [`enum@Error`].
pub type Result<T, E = Error> = core::result::Result<T, E>;

/// How an output relates to an input it must stay apart from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Overlap {
    /// The output is the input itself (the same file or directory, whatever the spelling).
    Same,
    /// The output lies inside the input (a directory or key prefix).
    OutputInsideInput,
    /// The input lies inside the output (a directory or key prefix).
    InputInsideOutput,
}

impl Overlap {
    /// The sentence that says why `output` is refused for `input` (both as the user named
    /// them).
    #[must_use]
    pub fn describe(self, input: &str, output: &str) -> String {
        match self {
            Self::Same => format!(
                "{output} is the input {input} itself (the same file or directory): writing it would destroy the input"
            ),
            Self::OutputInsideInput => {
                format!("{output} is inside the input {input}: writing it would change the input")
            }
            Self::InputInsideOutput => format!(
                "the input {input} is inside {output}: replacing {output} would delete the input"
            ),
        }
    }
}
