#![doc = include_str!("../README.md")]
#![cfg_attr(docsrs, feature(doc_cfg))]

mod batch;
#[cfg(target_arch = "x86_64")]
mod bmi2;
mod boxes;
mod dispatch;
mod error;
mod key;
pub mod portable;

#[cfg(target_arch = "x86_64")]
pub use crate::bmi2::Bmi2;
pub use crate::{
    batch::{
        decode_2d_u64_batch, decode_3d_u64_batch, decode_3d_u64_batch_parallel,
        encode_2d_u64_batch, encode_3d_u64_batch, encode_3d_u64_batch_parallel,
    },
    boxes::{MortonBox, MortonRanges},
    dispatch::{Implementation, implementation},
    error::{Error, Result},
    key::{
        BITS_2D_U32, BITS_2D_U64, BITS_3D_U32, BITS_3D_U64, decode_2d_u32, decode_2d_u64,
        decode_3d_u32, decode_3d_u32_wrapping, decode_3d_u64, decode_3d_u64_wrapping,
        encode_2d_u32, encode_2d_u64, encode_3d_u32, encode_3d_u32_wrapping, encode_3d_u64,
        encode_3d_u64_wrapping,
    },
};
