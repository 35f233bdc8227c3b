#![doc = include_str!("../README.md")]
#![cfg_attr(docsrs, feature(doc_cfg))]

mod array;
mod b2nd;
mod bytes;
mod durable;
mod error;
mod header;
mod layers;
mod limits;
#[cfg(feature = "serde")]
mod meta_serde;
mod offsets;
mod reader;
mod source;
mod stream;
mod trailer;
mod writer;

/// The chunk codec this crate uses (for [`FrameParams::cparams`] and chunk-level access).
pub use blosc_chunk;

pub use crate::{
    array::{B2ND_METALAYER, B2ndArray, b2nd_frame, b2nd_zeros},
    b2nd::{B2ND_MAX_DIM, B2ndMeta, DEFAULT_DTYPE},
    durable::Durability,
    error::{Error, Result},
    header::{FrameHeader, FrameType, HEADER_FIXED_LEN, MAX_FRAME_FORMAT_VERSION},
    layers::{MAX_METALAYERS, MAX_NAME_LEN, MAX_VLMETALAYERS},
    limits::Limits,
    offsets::ChunkLocation,
    reader::{Frame, Layer, SPARSE_FRAME_FILE},
    source::ReadAt,
    stream::FrameFileWriter,
    writer::{Fill, FrameParams, FrameWriter},
};
