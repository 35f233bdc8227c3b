//! The `lz4-block` codec as a `zarrs` 0.23 bytes→bytes codec plugin (feature `zarrs`).
//!
//! Linking this crate registers the name with zarrs through `inventory`; [`register`] adds a
//! run-time registration (as blosc-chunk's `blosc` codec does), which takes precedence until
//! [`Registration::unregister`] is called. Decoding needs the chunk's decoded size, which zarrs
//! knows when the codec follows `bytes` (a fixed-size representation); a chain that gives it a
//! variable-size input is refused with an error.

use std::any::Any;
use std::borrow::Cow;
use std::sync::Arc;

use zarrs::array::codec::api::{
    ArrayBytesRaw, BytesRepresentation, BytesToBytesCodecTraits, Codec, CodecError,
    CodecMetadataOptions, CodecOptions, CodecPluginV3, CodecRuntimePluginV3,
    CodecRuntimeRegistryHandleV3, CodecTraits, CodecTraitsV3, PartialDecoderCapability,
    PartialEncoderCapability, RecommendedConcurrency, register_codec_v3, unregister_codec_v3,
};
use zarrs::metadata::Configuration;
use zarrs::metadata::v3::MetadataV3;
use zarrs::plugin::{PluginConfigurationInvalidError, PluginCreateError, ZarrVersion};

use crate::codec::Lz4BlockCodec;
use crate::config::{Lz4BlockConfiguration, NAME};

/// The zarrs codec registered under the name `lz4-block`.
///
/// It keeps the configuration's optional `size` (the decoded size of every chunk, which
/// implementations that are not told a chunk's size need, such as numcodecs for Zarr v2 and
/// kerchunk references): when present, a chunk whose decoded size differs is an error, and
/// the key is written back with the configuration.
#[derive(Debug, Clone)]
pub struct ZarrsLz4BlockCodec(Lz4BlockCodec, Option<u64>);

zarrs::plugin::impl_extension_aliases!(ZarrsLz4BlockCodec, v3: "lz4-block");

inventory::submit! {
    CodecPluginV3::new::<ZarrsLz4BlockCodec>()
}

impl ZarrsLz4BlockCodec {
    /// Wraps a codec.
    #[must_use]
    pub fn new(codec: Lz4BlockCodec) -> Self {
        Self(codec, None)
    }

    /// The same codec with the configuration key `size`: every chunk's decoded size in bytes.
    #[must_use]
    pub fn with_size(self, size: Option<u64>) -> Self {
        Self(self.0, size)
    }

    /// The configuration's `size`, if it has one.
    #[must_use]
    pub fn size(&self) -> Option<u64> {
        self.1
    }

    /// The wrapped codec.
    #[must_use]
    pub fn codec(&self) -> &Lz4BlockCodec {
        &self.0
    }
}

fn create(metadata: &MetadataV3) -> Result<Codec, PluginCreateError> {
    let invalid = |e: &crate::Error| {
        PluginCreateError::ConfigurationInvalid(PluginConfigurationInvalidError::new(e.to_string()))
    };
    let mut map: serde_json::Map<String, serde_json::Value> = match metadata.configuration() {
        Some(_) => metadata.to_typed_configuration()?,
        None => serde_json::Map::new(),
    };
    // `size` is no encoder parameter: checked here, kept beside the configuration.
    let size = match map.remove("size") {
        None => None,
        Some(v) => Some(v.as_u64().ok_or_else(|| {
            invalid(&crate::Error::Configuration(format!(
                "`size` must be a non-negative integer, not {v}"
            )))
        })?),
    };
    let config = Lz4BlockConfiguration::from_json(&serde_json::Value::Object(map))
        .map_err(|e| invalid(&e))?;
    let codec = Lz4BlockCodec::new(config).map_err(|e| invalid(&e))?;
    Ok(Codec::BytesToBytes(Arc::new(
        ZarrsLz4BlockCodec::new(codec).with_size(size),
    )))
}

impl CodecTraitsV3 for ZarrsLz4BlockCodec {
    fn create(metadata: &MetadataV3) -> Result<Codec, PluginCreateError> {
        create(metadata)
    }
}

/// A run-time registration of `lz4-block`; see [`register`].
#[must_use = "dropping the handle keeps the plugin registered; call `unregister` to remove it"]
pub struct Registration(CodecRuntimeRegistryHandleV3);

impl core::fmt::Debug for Registration {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("Registration(lz4-block)")
    }
}

impl Registration {
    /// Removes the run-time plugin; zarrs falls back to the `inventory` registration.
    /// Returns whether it was still registered.
    #[allow(clippy::must_use_candidate)]
    pub fn unregister(self) -> bool {
        unregister_codec_v3(&self.0)
    }
}

/// Registers `lz4-block` with zarrs at run time (for programs where `inventory` registration
/// does not reach, e.g. some static or WebAssembly builds).
pub fn register() -> Registration {
    Registration(register_codec_v3(CodecRuntimePluginV3::new(
        |name| name == NAME,
        create,
    )))
}

fn codec_error(e: &crate::Error) -> CodecError {
    CodecError::Other(e.to_string())
}

impl CodecTraits for ZarrsLz4BlockCodec {
    fn as_any(&self) -> &dyn Any {
        self
    }

    fn configuration(
        &self,
        _version: ZarrVersion,
        _options: &CodecMetadataOptions,
    ) -> Option<Configuration> {
        match self.0.configuration().to_json() {
            serde_json::Value::Object(mut map) => {
                if let Some(size) = self.1 {
                    map.insert("size".into(), size.into());
                }
                Some(Configuration::from(map))
            }
            _ => None,
        }
    }

    fn partial_decoder_capability(&self) -> PartialDecoderCapability {
        PartialDecoderCapability {
            partial_read: false,
            partial_decode: false,
        }
    }

    fn partial_encoder_capability(&self) -> PartialEncoderCapability {
        PartialEncoderCapability {
            partial_encode: false,
        }
    }
}

impl BytesToBytesCodecTraits for ZarrsLz4BlockCodec {
    fn into_dyn(self: Arc<Self>) -> Arc<dyn BytesToBytesCodecTraits> {
        self
    }

    fn recommended_concurrency(
        &self,
        _decoded_representation: &BytesRepresentation,
    ) -> Result<RecommendedConcurrency, CodecError> {
        Ok(RecommendedConcurrency::new_maximum(1))
    }

    fn encoded_representation(
        &self,
        decoded_representation: &BytesRepresentation,
    ) -> BytesRepresentation {
        match *decoded_representation {
            BytesRepresentation::FixedSize(n) | BytesRepresentation::BoundedSize(n) => {
                usize::try_from(n)
                    .ok()
                    .and_then(|n| Lz4BlockCodec::bound(n).ok())
                    .map_or(BytesRepresentation::UnboundedSize, |b| {
                        BytesRepresentation::BoundedSize(b as u64)
                    })
            }
            BytesRepresentation::UnboundedSize => BytesRepresentation::UnboundedSize,
        }
    }

    fn encode<'a>(
        &self,
        decoded_value: ArrayBytesRaw<'a>,
        _options: &CodecOptions,
    ) -> Result<ArrayBytesRaw<'a>, CodecError> {
        self.0
            .encode(&decoded_value)
            .map(Cow::Owned)
            .map_err(|e| codec_error(&e))
    }

    fn decode<'a>(
        &self,
        encoded_value: ArrayBytesRaw<'a>,
        decoded_representation: &BytesRepresentation,
        _options: &CodecOptions,
    ) -> Result<ArrayBytesRaw<'a>, CodecError> {
        let BytesRepresentation::FixedSize(n) = *decoded_representation else {
            return Err(CodecError::Other(format!(
                "{NAME}: the decoded size must be known (put the codec after `bytes`), got {decoded_representation:?}"
            )));
        };
        if let Some(size) = self.1.filter(|&size| size != n) {
            return Err(CodecError::Other(format!(
                "{NAME}: the configuration's `size` is {size} bytes, but this chunk decodes to {n}"
            )));
        }
        let n = usize::try_from(n)
            .map_err(|_| CodecError::Other(format!("{NAME}: {n} bytes exceed usize")))?;
        self.0
            .decode(&encoded_value, n)
            .map(Cow::Owned)
            .map_err(|e| codec_error(&e))
    }
}
