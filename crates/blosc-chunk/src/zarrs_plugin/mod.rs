//! The Zarr `blosc` codec for `zarrs` 0.23, backed by this crate: Zarr v3 `blosc` codec
//! metadata and Zarr v2 (numcodecs) `blosc` compressor metadata; writes the Blosc1 format
//! byte-identical to C-Blosc 1.21; reads Blosc1 and Blosc2 chunks; decodes a byte range from
//! the blocks that hold it, fetching only those from the partial-decoder input (an object
//! store, a shard).
//!
//! * `config` ([`BloscConfig`], feature `zarrs_metadata`): the codec configuration, how Zarr
//!   metadata maps onto it, and the conversions of the blosc vocabulary to and from the types
//!   of zarrs' metadata model (`zarrs_metadata_ext`).
//! * `codec` (feature `zarrs`): the zarrs codec traits of `ZarrsBloscCodec`.
//! * `partial` (feature `zarrs`): the partial decoder.
//! * `registration` (feature `zarrs`): `ZarrsOptions` and the codec's registration with zarrs.
//!
//! Linking the crate with the feature registers the codec with zarrs through `inventory`
//! (Zarr v3 name `blosc`, Zarr v2 id `blosc`). When zarrs' own `blosc` feature is on as well,
//! two compile-time plugins claim the name; [`register`] adds a run-time plugin, which zarrs
//! prefers over every compile-time one.

#[cfg(feature = "zarrs")]
mod codec;
mod config;
#[cfg(feature = "zarrs")]
mod partial;
#[cfg(feature = "zarrs")]
mod registration;

#[cfg(feature = "zarrs")]
pub use self::codec::ZarrsBloscCodec;
pub use self::config::BloscConfig;
#[cfg(feature = "zarrs")]
pub use self::registration::{Registration, ZarrsOptions, register};
