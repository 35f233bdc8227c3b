//! [`ZarrsOptions`] and the registration of the `blosc` codec with zarrs: at compile time
//! through `inventory`, at run time through [`register`].

use zarrs::array::codec::api::{
    CodecPluginV2, CodecPluginV3, CodecRuntimePluginV2, CodecRuntimePluginV3,
    CodecRuntimeRegistryHandleV2, CodecRuntimeRegistryHandleV3, register_codec_v2,
    register_codec_v3, unregister_codec_v2, unregister_codec_v3,
};
use zarrs::metadata::v2::MetadataV2;
use zarrs::metadata::v3::MetadataV3;

use super::codec::{self, ZarrsBloscCodec};
use super::config::BloscConfig;
use crate::limits::Limits;

/// Options of the codecs a run-time registration ([`register`]) creates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct ZarrsOptions {
    /// Allocation limits of decoding (checked before anything is allocated).
    pub limits: Limits,
    /// Threads for block-parallel encoding and decoding of one chunk (1 = serial, the
    /// default; 0 = all cores; the bytes written do not depend on it). zarrs runs chunks in
    /// parallel itself.
    pub nthreads: usize,
    /// Partial decoding merges the byte ranges of blocks less than this many bytes apart
    /// into one request (default 0: only touching blocks).
    pub coalesce_gap: usize,
}

impl Default for ZarrsOptions {
    fn default() -> Self {
        Self {
            limits: Limits::default(),
            nthreads: 1,
            coalesce_gap: 0,
        }
    }
}

impl ZarrsOptions {
    /// Sets [`limits`](Self::limits).
    #[must_use]
    pub const fn with_limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Sets [`nthreads`](Self::nthreads).
    #[must_use]
    pub const fn with_nthreads(mut self, nthreads: usize) -> Self {
        self.nthreads = nthreads;
        self
    }

    /// Sets [`coalesce_gap`](Self::coalesce_gap).
    #[must_use]
    pub const fn with_coalesce_gap(mut self, coalesce_gap: usize) -> Self {
        self.coalesce_gap = coalesce_gap;
        self
    }
}

zarrs::plugin::impl_extension_aliases!(ZarrsBloscCodec, v3: "blosc", v2: "blosc");

inventory::submit! {
    CodecPluginV3::new::<ZarrsBloscCodec>()
}

inventory::submit! {
    CodecPluginV2::new::<ZarrsBloscCodec>()
}

/// A run-time registration of the `blosc` codec; see [`register`].
#[must_use = "dropping the handle keeps the plugin registered; call `unregister` to remove it"]
pub struct Registration {
    v3: CodecRuntimeRegistryHandleV3,
    v2: CodecRuntimeRegistryHandleV2,
}

impl core::fmt::Debug for Registration {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("Registration(blosc)")
    }
}

impl Registration {
    /// Removes the run-time plugin; zarrs falls back to the compile-time plugins. Returns
    /// whether it was still registered.
    #[allow(clippy::must_use_candidate)]
    pub fn unregister(self) -> bool {
        let v3 = unregister_codec_v3(&self.v3);
        let v2 = unregister_codec_v2(&self.v2);
        v3 && v2
    }
}

/// Registers the `blosc` codec with zarrs at run time with `options`. Run-time plugins take
/// precedence over compile-time ones, zarrs' own C-Blosc codec (its `blosc` feature)
/// included.
///
/// zarrs turns Zarr v2 `blosc` compressor metadata into Zarr v3 metadata before it creates
/// codecs; with its `blosc` feature it does so itself (giving the data type size as
/// `typesize`), without it through this crate's compile-time plugin, which does not learn
/// the data type: `shuffle` 1, 2 and -1 then keep `typesize` unknown (1 when encoding).
/// Decoding never needs it (the chunk header holds it).
pub fn register(options: ZarrsOptions) -> Registration {
    let v3 = register_codec_v3(CodecRuntimePluginV3::new(
        |name| name == BloscConfig::NAME,
        move |metadata: &MetadataV3| codec::create_v3(metadata, options),
    ));
    let v2 = register_codec_v2(CodecRuntimePluginV2::new(
        |name| name == BloscConfig::NAME,
        move |metadata: &MetadataV2| codec::create_v2(metadata, options),
    ));
    Registration { v3, v2 }
}
