#![doc = include_str!("../README.md")]
#![cfg_attr(docsrs, feature(doc_cfg))]

mod ans;
mod bytes;
mod error;
mod freq;
mod header;
mod layout;
mod limits;
mod model;
mod prefix;
mod quantise;
mod query;
mod reader;
mod tree;
mod writer;

#[doc = include_str!("../FORMAT.md")]
pub mod file_format {}

pub use crate::{
    error::{Error, Result},
    freq::optimal_model,
    header::{Header, MAGIC, MAJOR_VERSION},
    layout::Layout,
    limits::Limits,
    model::{EntropyModel, MAX_SYMBOLS, PRECISION, pack_u12, unpack_u12},
    prefix::{Prefix, PrefixStatus},
    quantise::{encode_f32, quantise},
    reader::{DweFile, OpenOptions},
    tree::tree_order,
    writer::{
        Dims, WriteLayout, encode, encode_with_progress, residuals, write_file,
        write_file_with_progress,
    },
};
/// Whether writes wait for the data to reach the disk (shared by the scifmt crates).
pub use scifmt_io::Durability;
