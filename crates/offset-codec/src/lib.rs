#![doc = include_str!("../README.md")]
#![cfg_attr(docsrs, feature(doc_cfg))]

mod codec;
mod config;
mod error;
mod limits;
mod n5;
mod range;
mod tiff;
mod types;
#[cfg(feature = "zarrs")]
mod zarrs_plugin;

#[cfg(feature = "zarrs")]
pub use crate::zarrs_plugin::{
    Registration, ZarrsOffsetCodec, ZarrsOptions, ZarrsPadCodec, register,
};
pub use crate::{
    codec::{DynamicPrefix, OffsetCodec, PrefixContext},
    config::{CodecConfiguration, Location, OffsetConfiguration, PadConfiguration},
    error::{BoxError, Error, Result},
    limits::Limits,
    n5::{N5BlockHeader, N5ZarrJson, check_padded_block, n5_default_header, n5_header_len},
    range::RangePlan,
    tiff::{
        TiffCompression, TiffSampleType, tiff_dynamic_prefix, tiff_offset_configuration,
        tiff_prefix, tiff_prefix_len,
    },
    types::{ByteRange, N5Mode},
};
