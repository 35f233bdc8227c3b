#![doc = include_str!("../README.md")]
// The README links the items of the `zarrs` feature; a build without it links their
// documentation on docs.rs (built with every feature) instead.
#![cfg_attr(
    not(feature = "zarrs"),
    doc = "\n\n[`ZarrsB2ndCodec`]: https://docs.rs/blosc2-frame/latest/blosc2_frame/struct.ZarrsB2ndCodec.html
[`register`]: https://docs.rs/blosc2-frame/latest/blosc2_frame/fn.register.html
[`B2ndCodecConfig::from_json`]: https://docs.rs/blosc2-frame/latest/blosc2_frame/struct.B2ndCodecConfig.html#method.from_json
[`B2ndCodecConfig::to_json`]: https://docs.rs/blosc2-frame/latest/blosc2_frame/struct.B2ndCodecConfig.html#method.to_json\n"
)]
// Likewise for the items of the `references` feature.
#![cfg_attr(
    not(feature = "references"),
    doc = "\n\n[`virtualize`]: https://docs.rs/blosc2-frame/latest/blosc2_frame/fn.virtualize.html
[`virtualize_at`]: https://docs.rs/blosc2-frame/latest/blosc2_frame/fn.virtualize_at.html
[`VirtualizeOptions`]: https://docs.rs/blosc2-frame/latest/blosc2_frame/struct.VirtualizeOptions.html
[`VirtualizeSummary`]: https://docs.rs/blosc2-frame/latest/blosc2_frame/struct.VirtualizeSummary.html
[`Error::NotVirtualizable`]: https://docs.rs/blosc2-frame/latest/blosc2_frame/enum.Error.html#variant.NotVirtualizable\n"
)]
#![cfg_attr(docsrs, feature(doc_cfg))]

mod array;
mod b2nd;
mod b2nd_codec;
mod bytes;
mod element;
mod error;
mod header;
mod layers;
mod limits;
#[cfg(feature = "serde")]
mod meta_serde;
#[cfg(feature = "ndarray")]
mod ndarray_io;
mod offsets;
mod reader;
/// Whether writes wait for the data to reach the disk (shared by the scifmt crates).
pub use scifmt_io::Durability;

#[cfg(feature = "object_store")]
mod remote;
mod stream;
mod trailer;
#[cfg(feature = "references")]
mod virtualize;
#[cfg(feature = "references")]
mod virtualize_sparse;
mod writer;
#[cfg(feature = "zarrs")]
mod zarrs_plugin;

/// The chunk codec this crate uses (for [`FrameParams::cparams`] and chunk-level access).
pub use blosc_chunk;
/// The msgpack value type of [`Frame::metalayer_value`] and [`Frame::vlmetalayer_value`].
pub use rmpv;

#[doc = include_str!("../FORMAT.md")]
pub mod file_format {}

/// The `ndarray` version this crate's `ndarray` feature uses.
#[cfg(feature = "ndarray")]
pub use ndarray;

#[cfg(feature = "ndarray")]
pub use crate::ndarray_io::b2nd_frame_from_ndarray;
#[cfg(feature = "object_store")]
pub use crate::remote::{
    BlockingRemoteB2nd, BlockingRemoteFrame, RemoteB2nd, RemoteFrame, RemoteFrameOptions,
    RemoteOptions, WriteMode,
};
#[cfg(feature = "references")]
pub use crate::virtualize::{
    VirtualizeOptions, VirtualizeSummary, is_frame_source, virtualize, virtualize_at,
};
#[cfg(feature = "zarrs")]
pub use crate::zarrs_plugin::{Registration, ZarrsB2ndCodec, register};
pub use crate::{
    array::{B2ndArray, b2nd_frame, b2nd_frame_from_slice, b2nd_zeros},
    b2nd::{B2ND_MAX_DIM, B2ND_METALAYER, B2ndMeta, DEFAULT_DTYPE},
    b2nd_codec::{B2ndCodec, B2ndCodecConfig, Endian},
    element::Element,
    error::{Error, Result},
    header::{FrameHeader, FrameType, HEADER_FIXED_LEN, MAX_FRAME_FORMAT_VERSION},
    layers::{MAX_METALAYERS, MAX_NAME_LEN, MAX_VLMETALAYERS},
    limits::Limits,
    offsets::ChunkLocation,
    reader::{Frame, Layer, SPARSE_FRAME_FILE},
    stream::FrameFileWriter,
    writer::{Fill, FrameParams, FrameWriter},
};
/// The `object_store` version this crate's `object_store` feature uses.
#[cfg(feature = "object_store")]
pub use object_store;
/// The positional reads frames are read through (implemented for byte slices, `Vec<u8>` and
/// files), shared by the scifmt crates.
pub use scifmt_io::ReadAt;
