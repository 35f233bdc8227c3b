//! The crate's error type: every variant names the file (or object URL) involved.

use std::path::PathBuf;

/// What can go wrong converting or verifying.
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
    /// An error of the WKW side (it names its file).
    #[error(transparent)]
    Wkw(#[from] wkw::Error),
    /// A JSON document (`zarr.json`, `datasource-properties.json`) is not valid JSON or lacks
    /// what the conversion needs.
    #[error("{}: {what}", path.display())]
    Metadata {
        /// The document.
        path: PathBuf,
        /// What is wrong.
        what: String,
    },
    /// A Zarr shard or inner chunk breaks the format (bad index, checksum, chunk that does not
    /// decode to one chunk).
    #[error("{}: {what}", path.display())]
    Corrupt {
        /// The shard file.
        path: PathBuf,
        /// What is wrong, with the chunk or offset.
        what: String,
    },
    /// Valid input this crate does not convert (e.g. a Zarr array whose inner chunks are not
    /// power-of-two cubes, or a codec other than transpose/bytes/zstd).
    #[error("unsupported: {}: {what}", path.display())]
    Unsupported {
        /// The document or file.
        path: PathBuf,
        /// What is not supported.
        what: String,
    },
    /// The target exists and neither overwriting nor resuming was asked for.
    #[error(
        "target exists: {} ({files} files, {bytes} bytes): overwriting replaces all of it once the new target is complete; resuming continues an interrupted conversion into it",
        path.display()
    )]
    #[non_exhaustive]
    TargetExists {
        /// The target.
        path: PathBuf,
        /// Files (objects) in it: what overwriting would delete.
        files: u64,
        /// Their bytes.
        bytes: u64,
    },
    /// An argument is out of its domain (e.g. resuming with options other than the
    /// interrupted run's).
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// An allocation or size would exceed a limit (sizes read from input are checked).
    #[error("limit exceeded: {what} needs {requested}, limit {limit}")]
    LimitExceeded {
        /// What would be allocated.
        what: &'static str,
        /// Requested amount.
        requested: u64,
        /// The limit.
        limit: u64,
    },
    /// An object-store request failed (or lost a condition): the error names the object's URL,
    /// never credentials.
    #[error(transparent)]
    Remote(Box<scifmt_io::Error>),
    /// The output would be the source itself, inside it, or around it: refused before anything
    /// was written or deleted (the message names both and says which contains which).
    #[error("{0}")]
    Overlap(Box<scifmt_io::Error>),
    /// The conversion was stopped through [`ConvertOptions::cancel`](crate::ConvertOptions);
    /// every shard or file completed so far stays, so it can be resumed.
    #[error("cancelled (resume it to finish)")]
    Cancelled,
    /// A broken invariant of this crate (a bug, never the input's fault).
    #[error("internal error: {0}")]
    Internal(String),
}

impl Error {
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Self::Io {
            path: path.into(),
            source,
        }
    }

    pub(crate) fn metadata(path: impl Into<PathBuf>, what: impl Into<String>) -> Self {
        Self::Metadata {
            path: path.into(),
            what: what.into(),
        }
    }

    pub(crate) fn corrupt(path: impl Into<PathBuf>, what: impl Into<String>) -> Self {
        Self::Corrupt {
            path: path.into(),
            what: what.into(),
        }
    }

    pub(crate) fn unsupported(path: impl Into<PathBuf>, what: impl Into<String>) -> Self {
        Self::Unsupported {
            path: path.into(),
            what: what.into(),
        }
    }
}

impl From<scifmt_io::Error> for Error {
    fn from(e: scifmt_io::Error) -> Self {
        match e {
            scifmt_io::Error::Io { path, source } => Self::Io { path, source },
            scifmt_io::Error::InvalidArgument(s) => Self::InvalidArgument(s),
            scifmt_io::Error::Cancelled => Self::Cancelled,
            e @ scifmt_io::Error::Overlap { .. } => Self::Overlap(Box::new(e)),
            other => Self::Remote(Box::new(other)),
        }
    }
}

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = core::result::Result<T, E>;
