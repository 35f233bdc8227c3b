//! The local [`Dataset`] API: opening and creating a dataset root, reading and writing boxes,
//! in-memory arrays (and `ndarray` interop), whole-dataset compress/verify, and the cache of
//! parsed data-file headers.
//!
//! [`Dataset`]: crate::Dataset

pub(crate) mod array;
pub(crate) mod cache;
pub(crate) mod compress;
#[cfg(feature = "ndarray")]
pub(crate) mod nd;
pub(crate) mod reader;
pub(crate) mod root;
pub(crate) mod writer;
