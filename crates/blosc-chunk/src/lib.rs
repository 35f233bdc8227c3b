#![doc = include_str!("../README.md")]
// The README links the items of the `zarrs_metadata` and `zarrs` features; a build without
// them links their documentation on docs.rs (built with every feature) instead.
#![cfg_attr(
    not(feature = "zarrs_metadata"),
    doc = "\n\n[`BloscConfig`]: https://docs.rs/blosc-chunk/latest/blosc_chunk/struct.BloscConfig.html\n"
)]
#![cfg_attr(
    not(feature = "zarrs"),
    doc = "\n\n[`ZarrsBloscCodec`]: https://docs.rs/blosc-chunk/latest/blosc_chunk/struct.ZarrsBloscCodec.html
[`ZarrsOptions`]: https://docs.rs/blosc-chunk/latest/blosc_chunk/struct.ZarrsOptions.html
[`ZarrsOptions::coalesce_gap`]: https://docs.rs/blosc-chunk/latest/blosc_chunk/struct.ZarrsOptions.html#structfield.coalesce_gap
[`register`]: https://docs.rs/blosc-chunk/latest/blosc_chunk/fn.register.html\n"
)]
#![cfg_attr(docsrs, feature(doc_cfg))]

mod codec;
mod codec_id;
mod decode;
mod encode;
mod error;
mod filter;
mod flags;
mod header;
mod lazy;
mod limits;
mod plugins;
#[cfg(feature = "parallel")]
mod pool;
mod special;
#[cfg(test)]
mod testutil;
mod tune;
mod vocabulary;
#[cfg(feature = "zarrs_metadata")]
mod zarrs_plugin;

pub use crate::{
    codec_id::Codec,
    decode::{
        ChunkMap, DParams, PartialChunk, decompress, decompress_ctx, decompress_into,
        decompress_into_ctx, decompress_into_uninit_ctx, decompress_with, getitem, getitem_ctx,
        getitem_into, getitem_into_ctx,
    },
    encode::{CParams, Format, compress},
    error::{Error, Result},
    header::{
        ChunkHeader, EXTENDED_HEADER_LENGTH, Filter, MAX_BLOCKSIZE, MAX_BUFFERSIZE, MAX_DICT_SIZE,
        MAX_FILTERS, MAX_OVERHEAD, MIN_BUFFERSIZE, MIN_HEADER_LENGTH, SpecialValue, SplitMode,
        VERSION_FORMAT_BLOSC1, VERSION_FORMAT_STABLE, VERSION_FORMAT_VL_BLOCKS,
    },
    lazy::LazyChunk,
    limits::Limits,
    plugins::BlockShape,
    special::{nans_chunk, repeatval_chunk, special_chunk_with, uninit_chunk, zeros_chunk},
    vocabulary::{Blocksize, BloscShuffle},
};

#[cfg(feature = "zarrs_metadata")]
pub use crate::zarrs_plugin::BloscConfig;
#[cfg(feature = "zarrs")]
pub use crate::zarrs_plugin::{Registration, ZarrsBloscCodec, ZarrsOptions, register};
