//! The `offset` and `pad` codecs as `zarrs` 0.23 bytes→bytes codec plugins (feature `zarrs`).
//!
//! Linking this crate registers both names with zarrs through `inventory` (default options:
//! non-strict, default [`Limits`], static prefixes). [`register`] adds a runtime plugin with
//! other [`ZarrsOptions`] (strict mode, limits, a dynamic prefix); runtime plugins take
//! precedence over compile-time ones until [`Registration::unregister`] is called.
//!
//! Inside zarrs a bytes→bytes codec sees only bytes: a dynamic prefix gets the payload but no
//! chunk coordinates or shape ([`PrefixContext::chunk_indices`] is `None`).

use std::any::Any;
use std::borrow::Cow;
use std::sync::Arc;

use zarrs::array::codec::api::{
    ArrayBytesRaw, BytesPartialDecoderTraits, BytesRepresentation, BytesToBytesCodecTraits, Codec,
    CodecError, CodecMetadataOptions, CodecOptions, CodecPluginV3, CodecRuntimePluginV3,
    CodecRuntimeRegistryHandleV3, CodecTraits, CodecTraitsV3, PartialDecoderCapability,
    PartialEncoderCapability, RecommendedConcurrency, register_codec_v3, unregister_codec_v3,
};
use zarrs::metadata::Configuration;
use zarrs::metadata::v3::MetadataV3;
use zarrs::plugin::{PluginConfigurationInvalidError, PluginCreateError, ZarrVersion};
use zarrs::storage::StorageError;
use zarrs::storage::byte_range::{ByteRange as ZByteRange, ByteRangeIterator};

use crate::codec::{DynamicPrefix, OffsetCodec};
use crate::config::{CodecConfiguration, OffsetConfiguration, PadConfiguration};
use crate::error::Error;
use crate::limits::Limits;
use crate::types::ByteRange;

/// Options for codecs created by a runtime registration ([`register`]).
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct ZarrsOptions {
    /// Check skipped bytes on decode (see [`OffsetCodec::with_strict`]).
    pub strict: bool,
    /// Limits applied when parsing `zarr.json` configurations.
    pub limits: Limits,
    /// Build headers/trailers per chunk on encode (and check them in strict mode).
    pub dynamic_prefix: Option<DynamicPrefix>,
}

impl ZarrsOptions {
    /// Sets [`strict`](Self::strict).
    #[must_use]
    pub const fn with_strict(mut self, strict: bool) -> Self {
        self.strict = strict;
        self
    }

    /// Sets [`limits`](Self::limits).
    #[must_use]
    pub const fn with_limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Sets [`dynamic_prefix`](Self::dynamic_prefix).
    #[must_use]
    pub fn with_dynamic_prefix(mut self, prefix: DynamicPrefix) -> Self {
        self.dynamic_prefix = Some(prefix);
        self
    }

    fn build(&self, config: CodecConfiguration) -> Result<OffsetCodec, Error> {
        let mut codec = OffsetCodec::new(config)?.with_strict(self.strict);
        if let Some(d) = &self.dynamic_prefix {
            codec = codec.with_dynamic_prefix(d.clone());
        }
        Ok(codec)
    }
}

/// The zarrs codec registered under the name `offset`.
#[derive(Debug, Clone)]
pub struct ZarrsOffsetCodec(Arc<OffsetCodec>);

/// The zarrs codec registered under the name `pad`.
#[derive(Debug, Clone)]
pub struct ZarrsPadCodec(Arc<OffsetCodec>);

zarrs::plugin::impl_extension_aliases!(ZarrsOffsetCodec, v3: "offset");
zarrs::plugin::impl_extension_aliases!(ZarrsPadCodec, v3: "pad");

inventory::submit! {
    CodecPluginV3::new::<ZarrsOffsetCodec>()
}

inventory::submit! {
    CodecPluginV3::new::<ZarrsPadCodec>()
}

fn config_map(metadata: &MetadataV3) -> Result<serde_json::Value, PluginCreateError> {
    let map: serde_json::Map<String, serde_json::Value> = metadata.to_typed_configuration()?;
    Ok(serde_json::Value::Object(map))
}

fn invalid(e: &Error) -> PluginCreateError {
    PluginCreateError::ConfigurationInvalid(PluginConfigurationInvalidError::new(e.to_string()))
}

fn create(metadata: &MetadataV3, options: &ZarrsOptions) -> Result<Codec, PluginCreateError> {
    let json = config_map(metadata)?;
    let config = match metadata.name() {
        PadConfiguration::NAME => CodecConfiguration::Pad(
            PadConfiguration::from_json_with_limits(&json, &options.limits)
                .map_err(|e| invalid(&e))?,
        ),
        _ => CodecConfiguration::Offset(
            OffsetConfiguration::from_json_with_limits(&json, &options.limits)
                .map_err(|e| invalid(&e))?,
        ),
    };
    let codec = Arc::new(options.build(config).map_err(|e| invalid(&e))?);
    Ok(match codec.configuration() {
        CodecConfiguration::Pad(_) => Codec::BytesToBytes(Arc::new(ZarrsPadCodec(codec))),
        CodecConfiguration::Offset(_) => Codec::BytesToBytes(Arc::new(ZarrsOffsetCodec(codec))),
    })
}

impl ZarrsOffsetCodec {
    /// Wraps a codec (its configuration must be an `offset` one to serialise as `offset`).
    #[must_use]
    pub fn new(codec: OffsetCodec) -> Self {
        Self(Arc::new(codec))
    }

    /// The wrapped codec.
    #[must_use]
    pub fn codec(&self) -> &OffsetCodec {
        &self.0
    }
}

impl ZarrsPadCodec {
    /// Wraps a codec (its configuration must be a `pad` one to serialise as `pad`).
    #[must_use]
    pub fn new(codec: OffsetCodec) -> Self {
        Self(Arc::new(codec))
    }

    /// The wrapped codec.
    #[must_use]
    pub fn codec(&self) -> &OffsetCodec {
        &self.0
    }
}

impl CodecTraitsV3 for ZarrsOffsetCodec {
    fn create(metadata: &MetadataV3) -> Result<Codec, PluginCreateError> {
        create(metadata, &ZarrsOptions::default())
    }
}

impl CodecTraitsV3 for ZarrsPadCodec {
    fn create(metadata: &MetadataV3) -> Result<Codec, PluginCreateError> {
        create(metadata, &ZarrsOptions::default())
    }
}

/// A runtime registration of both codec names; see [`register`].
#[must_use = "dropping the handle keeps the plugin registered; call `unregister` to remove it"]
pub struct Registration(CodecRuntimeRegistryHandleV3);

impl core::fmt::Debug for Registration {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("Registration(offset, pad)")
    }
}

impl Registration {
    /// Removes the runtime plugin; zarrs falls back to the `inventory` registration.
    /// Returns whether it was still registered.
    #[allow(clippy::must_use_candidate)]
    pub fn unregister(self) -> bool {
        unregister_codec_v3(&self.0)
    }
}

/// Registers `offset` and `pad` with zarrs at run time with `options`. Runtime plugins take
/// precedence over the compile-time (`inventory`) registration.
pub fn register(options: ZarrsOptions) -> Registration {
    let handle = register_codec_v3(CodecRuntimePluginV3::new(
        |name| name == OffsetConfiguration::NAME || name == PadConfiguration::NAME,
        move |metadata: &MetadataV3| create(metadata, &options),
    ));
    Registration(handle)
}

fn codec_error(e: &Error) -> CodecError {
    CodecError::Other(e.to_string())
}

fn to_ours(r: ZByteRange) -> ByteRange {
    match r {
        ZByteRange::FromStart(offset, length) => ByteRange::FromStart { offset, length },
        ZByteRange::Suffix(n) => ByteRange::Suffix(n),
    }
}

fn to_zarrs(r: ByteRange) -> ZByteRange {
    match r {
        ByteRange::FromStart { offset, length } => ZByteRange::FromStart(offset, length),
        ByteRange::Suffix(n) => ZByteRange::Suffix(n),
    }
}

/// Narrows `bytes` to `range` without copying when borrowed, in place when owned.
fn narrow(bytes: ArrayBytesRaw<'_>, range: core::ops::Range<usize>) -> ArrayBytesRaw<'_> {
    match bytes {
        Cow::Borrowed(b) => Cow::Borrowed(b.get(range).unwrap_or_default()),
        Cow::Owned(mut v) => {
            v.truncate(range.end);
            v.drain(..range.start.min(v.len()));
            Cow::Owned(v)
        }
    }
}

/// Partial decoder: maps payload ranges to stored ranges (see [`OffsetCodec::plan_range`]).
struct OffsetPartialDecoder {
    input: Arc<dyn BytesPartialDecoderTraits>,
    codec: Arc<OffsetCodec>,
}

impl BytesPartialDecoderTraits for OffsetPartialDecoder {
    fn exists(&self) -> Result<bool, StorageError> {
        self.input.exists()
    }

    fn size_held(&self) -> usize {
        self.input.size_held()
    }

    fn partial_decode_many(
        &self,
        decoded_regions: ByteRangeIterator<'_>,
        options: &CodecOptions,
    ) -> Result<Option<Vec<ArrayBytesRaw<'_>>>, CodecError> {
        let plans = decoded_regions
            .map(|r| self.codec.plan_range(to_ours(r)))
            .collect::<Result<Vec<_>, Error>>()
            .map_err(|e| codec_error(&e))?;
        let requests: Vec<ZByteRange> = plans.iter().map(|p| to_zarrs(p.request())).collect();
        let Some(fetched) = self
            .input
            .partial_decode_many(Box::new(requests.into_iter()), options)?
        else {
            return Ok(None);
        };
        if fetched.len() != plans.len() {
            return Err(CodecError::Other(format!(
                "partial read returned {} ranges for {} requests",
                fetched.len(),
                plans.len()
            )));
        }
        let mut out = Vec::with_capacity(plans.len());
        for (plan, bytes) in plans.iter().zip(fetched) {
            let range = plan.bounds(bytes.len()).map_err(|e| codec_error(&e))?;
            out.push(narrow(bytes, range));
        }
        Ok(Some(out))
    }

    fn supports_partial_decode(&self) -> bool {
        self.input.supports_partial_decode()
    }
}

/// Implements the zarrs traits for a wrapper around `Arc<OffsetCodec>`.
macro_rules! impl_zarrs_codec {
    ($ty:ident) => {
        impl CodecTraits for $ty {
            fn as_any(&self) -> &dyn Any {
                self
            }

            fn configuration(
                &self,
                _version: ZarrVersion,
                _options: &CodecMetadataOptions,
            ) -> Option<Configuration> {
                Some(Configuration::from(
                    self.0.configuration().configuration_json(),
                ))
            }

            fn partial_decoder_capability(&self) -> PartialDecoderCapability {
                PartialDecoderCapability {
                    partial_read: true,
                    partial_decode: true,
                }
            }

            fn partial_encoder_capability(&self) -> PartialEncoderCapability {
                PartialEncoderCapability {
                    partial_encode: false,
                }
            }
        }

        impl BytesToBytesCodecTraits for $ty {
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
                let n = self.0.nbytes_u64();
                match *decoded_representation {
                    BytesRepresentation::FixedSize(s) => s.checked_add(n).map_or(
                        BytesRepresentation::UnboundedSize,
                        BytesRepresentation::FixedSize,
                    ),
                    BytesRepresentation::BoundedSize(s) => s.checked_add(n).map_or(
                        BytesRepresentation::UnboundedSize,
                        BytesRepresentation::BoundedSize,
                    ),
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
                _decoded_representation: &BytesRepresentation,
                _options: &CodecOptions,
            ) -> Result<ArrayBytesRaw<'a>, CodecError> {
                // Validates (and in strict mode checks the skipped bytes) without copying.
                let payload = self.0.decode(&encoded_value).map_err(|e| codec_error(&e))?;
                let start = match self.0.location() {
                    crate::config::Location::Start => self.0.nbytes(),
                    crate::config::Location::End => 0,
                };
                let range = start..start.saturating_add(payload.len());
                Ok(narrow(encoded_value, range))
            }

            fn partial_decoder(
                self: Arc<Self>,
                input_handle: Arc<dyn BytesPartialDecoderTraits>,
                _decoded_representation: &BytesRepresentation,
                _options: &CodecOptions,
            ) -> Result<Arc<dyn BytesPartialDecoderTraits>, CodecError> {
                Ok(Arc::new(OffsetPartialDecoder {
                    input: input_handle,
                    codec: Arc::clone(&self.0),
                }))
            }
        }
    };
}

impl_zarrs_codec!(ZarrsOffsetCodec);
impl_zarrs_codec!(ZarrsPadCodec);
