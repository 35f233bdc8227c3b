//! The `b2nd` codec as a `zarrs` 0.23 array→bytes codec plugin (feature `zarrs`).
//!
//! Linking this crate with the feature registers the name with zarrs through `inventory`;
//! [`register`] adds a run-time registration (as blosc-chunk's `blosc` and lz4-block-codec's
//! `lz4-block` codecs do), which takes precedence until [`Registration::unregister`] is called.
//!
//! The codec sees the chunk's shape (the b2nd `chunkshape`) and data type: the data type's
//! size is the item size, which must be the stored chunk's type size; its items are converted
//! from and to the configured `endian` byte order as zarrs' `bytes` codec converts them.
//! Data types without a fixed size are refused.

use std::any::Any;
use std::borrow::Cow;
use std::num::NonZeroU64;
use std::sync::Arc;

use zarrs::array::codec::api::{
    ArrayCodecTraits, ArrayToBytesCodecTraits, Codec, CodecError, CodecMetadataOptions,
    CodecOptions, CodecPluginV3, CodecRuntimePluginV3, CodecRuntimeRegistryHandleV3, CodecTraits,
    CodecTraitsV3, PartialDecoderCapability, PartialEncoderCapability, RecommendedConcurrency,
    register_codec_v3, unregister_codec_v3,
};
use zarrs::array::codec::{BytesDataTypeExt, Endianness};
use zarrs::array::{ArrayBytes, ArrayBytesRaw, BytesRepresentation, DataType, FillValue};
use zarrs::metadata::Configuration;
use zarrs::metadata::v3::MetadataV3;
use zarrs::plugin::{PluginConfigurationInvalidError, PluginCreateError, ZarrVersion};

use crate::b2nd_codec::{B2ndCodec, B2ndCodecConfig, Endian};
use crate::error::Error;

/// The zarrs codec registered under the name `b2nd`.
#[derive(Debug, Clone)]
pub struct ZarrsB2ndCodec(B2ndCodec);

zarrs::plugin::impl_extension_aliases!(ZarrsB2ndCodec, v3: "b2nd");

inventory::submit! {
    CodecPluginV3::new::<ZarrsB2ndCodec>()
}

impl ZarrsB2ndCodec {
    /// Wraps a codec (its limits and thread count included).
    #[must_use]
    pub fn new(codec: B2ndCodec) -> Self {
        Self(codec)
    }

    /// The wrapped codec.
    #[must_use]
    pub fn codec(&self) -> &B2ndCodec {
        &self.0
    }

    fn endianness(&self) -> Endianness {
        match self.0.config().endian {
            Endian::Big => Endianness::Big,
            _ => Endianness::Little,
        }
    }
}

fn create(metadata: &MetadataV3) -> Result<Codec, PluginCreateError> {
    let invalid = |e: &Error| {
        PluginCreateError::ConfigurationInvalid(PluginConfigurationInvalidError::new(e.to_string()))
    };
    let map: serde_json::Map<String, serde_json::Value> = match metadata.configuration() {
        Some(_) => metadata.to_typed_configuration()?,
        None => serde_json::Map::new(),
    };
    let config =
        B2ndCodecConfig::from_json(&serde_json::Value::Object(map)).map_err(|e| invalid(&e))?;
    let codec = B2ndCodec::new(config).map_err(|e| invalid(&e))?;
    Ok(Codec::ArrayToBytes(Arc::new(ZarrsB2ndCodec(codec))))
}

impl CodecTraitsV3 for ZarrsB2ndCodec {
    fn create(metadata: &MetadataV3) -> Result<Codec, PluginCreateError> {
        create(metadata)
    }
}

/// A run-time registration of `b2nd`; see [`register`].
#[must_use = "dropping the handle keeps the plugin registered; call `unregister` to remove it"]
pub struct Registration(CodecRuntimeRegistryHandleV3);

impl core::fmt::Debug for Registration {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("Registration(b2nd)")
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

/// Registers `b2nd` with zarrs at run time (for programs where `inventory` registration does
/// not reach, e.g. some static or WebAssembly builds). Codecs it creates have
/// [`Limits::default`](crate::Limits::default) and decode on one thread (zarrs decodes chunks
/// in parallel itself).
pub fn register() -> Registration {
    Registration(register_codec_v3(CodecRuntimePluginV3::new(
        |name| name == B2ndCodecConfig::NAME,
        create,
    )))
}

fn codec_error(e: &Error) -> CodecError {
    CodecError::Other(format!("{}: {e}", B2ndCodecConfig::NAME))
}

/// The chunk shape as `u64`s and the data type's item size.
fn chunk_of(shape: &[NonZeroU64], data_type: &DataType) -> Result<(Vec<u64>, usize), CodecError> {
    let unsupported =
        || CodecError::UnsupportedDataType(data_type.clone(), B2ndCodecConfig::NAME.to_string());
    if data_type.is_optional() {
        return Err(unsupported());
    }
    let size = data_type.fixed_size().ok_or_else(unsupported)?;
    Ok((shape.iter().map(|d| d.get()).collect(), size))
}

impl CodecTraits for ZarrsB2ndCodec {
    fn as_any(&self) -> &dyn Any {
        self
    }

    fn configuration(
        &self,
        _version: ZarrVersion,
        _options: &CodecMetadataOptions,
    ) -> Option<Configuration> {
        match self.0.config().to_json() {
            serde_json::Value::Object(map) => Some(Configuration::from(map)),
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

impl ArrayCodecTraits for ZarrsB2ndCodec {
    fn recommended_concurrency(
        &self,
        _shape: &[NonZeroU64],
        _data_type: &DataType,
    ) -> Result<RecommendedConcurrency, CodecError> {
        Ok(RecommendedConcurrency::new_maximum(1))
    }
}

impl ArrayToBytesCodecTraits for ZarrsB2ndCodec {
    fn into_dyn(self: Arc<Self>) -> Arc<dyn ArrayToBytesCodecTraits> {
        self
    }

    fn encoded_representation(
        &self,
        shape: &[NonZeroU64],
        data_type: &DataType,
        _fill_value: &FillValue,
    ) -> Result<BytesRepresentation, CodecError> {
        let (chunkshape, size) = chunk_of(shape, data_type)?;
        let n = self
            .0
            .max_encoded_len(&chunkshape, size)
            .map_err(|e| codec_error(&e))?;
        Ok(BytesRepresentation::BoundedSize(n as u64))
    }

    fn encode<'a>(
        &self,
        bytes: ArrayBytes<'a>,
        shape: &[NonZeroU64],
        data_type: &DataType,
        _fill_value: &FillValue,
        _options: &CodecOptions,
    ) -> Result<ArrayBytesRaw<'a>, CodecError> {
        let (chunkshape, size) = chunk_of(shape, data_type)?;
        bytes.validate(shape.iter().map(|d| d.get()).product(), data_type)?;
        let native = bytes.into_fixed()?;
        let stored = data_type
            .codec_bytes()?
            .encode(native, Some(self.endianness()))?;
        self.0
            .encode(&stored, &chunkshape, size)
            .map(Cow::Owned)
            .map_err(|e| codec_error(&e))
    }

    fn decode<'a>(
        &self,
        bytes: ArrayBytesRaw<'a>,
        shape: &[NonZeroU64],
        data_type: &DataType,
        _fill_value: &FillValue,
        _options: &CodecOptions,
    ) -> Result<ArrayBytes<'a>, CodecError> {
        let (chunkshape, size) = chunk_of(shape, data_type)?;
        let stored = self
            .0
            .decode(&bytes, &chunkshape, size)
            .map_err(|e| codec_error(&e))?;
        let native = data_type
            .codec_bytes()?
            .decode(Cow::Owned(stored), Some(self.endianness()))?;
        Ok(ArrayBytes::new_flen(native.into_owned()))
    }
}
