//! The WKW format itself, independent of how a dataset is used: the 16-byte header, a data
//! file's header and jump table, LZ4 blocks, Morton-order box arithmetic, the `z*/y*/x*.wkw`
//! file tree, the Rust types of the voxel types, and block-level access to one data file
//! (`BlockReader`/`BlockWriter`, for conversions).

pub(crate) mod blocks;
pub(crate) mod file;
pub(crate) mod geometry;
pub(crate) mod header;
pub(crate) mod lz4;
pub(crate) mod tree;
pub(crate) mod voxel;
