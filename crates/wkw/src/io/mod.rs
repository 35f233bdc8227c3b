//! Local file access under the format: positional reads and writes, the [`Storage`] trait
//! behind which data files are read (local files here, object stores in `remote`), and the
//! advisory locks that serialise writers of one data file.
//!
//! [`Storage`]: crate::Storage

pub(crate) mod fsio;
pub(crate) mod lock;
pub(crate) mod storage;
