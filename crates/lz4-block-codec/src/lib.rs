#![doc = include_str!("../README.md")]
#![cfg_attr(docsrs, feature(doc_cfg))]

mod codec;
mod config;
mod error;
#[cfg(feature = "zarrs")]
mod zarrs_plugin;

#[cfg(feature = "zarrs")]
pub use crate::zarrs_plugin::{Registration, ZarrsLz4BlockCodec, register};
pub use crate::{
    codec::{Lz4BlockCodec, MAX_DECODED_PER_ENCODED},
    config::{ACCELERATION_MAX, HC_LEVEL_MAX, Lz4BlockConfiguration, NAME},
    error::{Error, Result},
};
