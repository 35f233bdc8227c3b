#![doc = include_str!("../README.md")]
#![cfg_attr(docsrs, feature(doc_cfg))]

mod arena;
mod array;
mod blocks;
mod cache;
mod closer;
mod column;
mod compress;
mod copy;
mod dataset;
mod error;
mod file;
mod fsio;
mod geometry;
mod header;
mod limits;
mod lock;
mod lz4;
#[cfg(feature = "ndarray")]
mod nd;
mod options;
mod par;
mod reader;
#[cfg(feature = "object_store")]
mod remote;
mod storage;
mod tree;
mod uninit;
mod voxel;
mod writer;

pub use crate::{
    array::{Array, ArrayView, ArrayViewMut, Order},
    blocks::{BlockReader, BlockWriter, decode_block, encode_block},
    compress::{FileReport, Progress, VerifyReport, compress, verify},
    dataset::{Dataset, HEADER_FILE_NAME},
    error::{Error, FormatError, Result},
    file::{FileInfo, inspect_file},
    header::{BlockType, Header, MAGIC, VERSION, VoxelType},
    limits::Limits,
    lock::LOCK_DIR_NAME,
    options::{Durability, HeaderCheck, MissingOrCorrupt, Options, Threads},
    storage::{Stamp, Storage, StorageFile},
    voxel::Voxel,
};

#[cfg(feature = "object_store")]
#[cfg_attr(docsrs, doc(cfg(feature = "object_store")))]
pub use crate::remote::{
    BlockingRemoteDataset, RemoteDataset, RemoteDatasetOptions, RemoteOptions,
};

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
