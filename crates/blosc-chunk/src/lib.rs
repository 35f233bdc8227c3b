#![doc = include_str!("../README.md")]
#![cfg_attr(docsrs, feature(doc_cfg))]

mod bitshuffle;
mod blosclz;
mod codec;
mod codecs;
mod decode;
mod delta;
mod dict;
mod encode;
mod error;
mod flags;
mod header;
mod lazy;
mod limits;
#[cfg(feature = "lz4")]
mod lz4dict;
#[cfg(feature = "lz4")]
mod lz4ffi;
mod plugins;
#[cfg(feature = "parallel")]
mod pool;
mod shuffle;
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
mod simd;
mod special;
#[cfg(test)]
mod testutil;
mod truncprec;
mod tune;
#[cfg(feature = "zarrs")]
mod zarrs_plugin;
#[cfg(feature = "zlib")]
mod zlib;

pub use crate::{
    codec::Codec,
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
};

#[cfg(feature = "zarrs")]
pub use crate::zarrs_plugin::{
    BloscConfig, BloscShuffle, Registration, ZarrsBloscCodec, ZarrsOptions, register,
};
