#![doc = include_str!("../README.md")]
#![cfg_attr(docsrs, feature(doc_cfg))]

mod dataset;
mod error;
mod format;
mod io;
mod kernels;
mod limits;
mod options;
#[cfg(feature = "object_store")]
mod remote;

pub use crate::{
    dataset::array::{Array, ArrayView, ArrayViewMut, Order},
    dataset::compress::{FileReport, Progress, VerifyReport, compress, verify},
    dataset::root::{Dataset, HEADER_FILE_NAME},
    error::{Error, FormatError, Result},
    format::blocks::{BlockReader, BlockWriter, decode_block, encode_block},
    format::file::{FileInfo, inspect_file},
    format::header::{BlockType, Header, MAGIC, VERSION, VoxelType},
    format::voxel::Voxel,
    io::lock::LOCK_DIR_NAME,
    io::storage::{Stamp, Storage, StorageFile},
    limits::Limits,
    options::{Cancel, Durability, HeaderCheck, MissingOrCorrupt, Options, Threads},
};

#[cfg(feature = "object_store")]
#[cfg_attr(docsrs, doc(cfg(feature = "object_store")))]
pub use crate::remote::{
    BlockingRemoteDataset, RemoteDataset, RemoteDatasetOptions, RemoteOptions,
};

/// How an output overlaps its input ([`Error::Overlap`]; shared by the scifmt crates).
pub use scifmt_io::Overlap;

/// The positional reads a [`StorageFile`] answers (implemented for byte slices, `Vec<u8>`,
/// files and `scifmt_io::Prefetched`), shared by the scifmt crates.
pub use scifmt_io::ReadAt;

/// How remote writes put objects (shared by the scifmt crates; see [`RemoteOptions`]).
#[cfg(feature = "object_store")]
#[cfg_attr(docsrs, doc(cfg(feature = "object_store")))]
pub use scifmt_io::WriteMode;

/// The `object_store` crate this crate's `object_store` feature builds on (the version whose
/// `ObjectStore` and `path::Path` [`RemoteDataset::open`] takes).
#[cfg(feature = "object_store")]
#[cfg_attr(docsrs, doc(cfg(feature = "object_store")))]
pub use object_store;

/// The `ndarray` crate this crate's `ndarray` feature builds on (same version as
/// [`Dataset::read_ndarray`] returns).
#[cfg(feature = "ndarray")]
#[cfg_attr(docsrs, doc(cfg(feature = "ndarray")))]
pub use ndarray;
