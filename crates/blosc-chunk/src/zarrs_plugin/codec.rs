//! [`ZarrsBloscCodec`]: zarrs' bytes→bytes codec traits over [`compress`] and
//! [`decompress_ctx`].

use std::any::Any;
use std::borrow::Cow;
use std::sync::Arc;

use zarrs::array::codec::api::{
    ArrayBytesRaw, BytesPartialDecoderTraits, BytesRepresentation, BytesToBytesCodecTraits, Codec,
    CodecError, CodecMetadataOptions, CodecOptions, CodecTraits, CodecTraitsV2, CodecTraitsV3,
    PartialDecoderCapability, PartialEncoderCapability, RecommendedConcurrency,
};
use zarrs::metadata::Configuration;
use zarrs::metadata::v2::MetadataV2;
use zarrs::metadata::v3::MetadataV3;
use zarrs::plugin::{PluginConfigurationInvalidError, PluginCreateError, ZarrVersion};

use super::config::BloscConfig;
use super::partial::BloscPartialDecoder;
use super::registration::ZarrsOptions;
use crate::decode::{DParams, decompress_ctx};
use crate::encode::compress;
use crate::error::Error;
use crate::header::{MAX_OVERHEAD, MIN_HEADER_LENGTH};
use crate::tune::compute_blocksize_blosc1;

/// The zarrs `blosc` codec: a [`BloscConfig`] and the [`ZarrsOptions`] it decodes with.
#[derive(Debug, Clone)]
pub struct ZarrsBloscCodec {
    config: BloscConfig,
    options: ZarrsOptions,
}

impl ZarrsBloscCodec {
    /// A codec with `config` and `options`.
    #[must_use]
    pub fn new(config: BloscConfig, options: ZarrsOptions) -> Self {
        Self { config, options }
    }

    /// The configuration.
    #[must_use]
    pub fn config(&self) -> &BloscConfig {
        &self.config
    }

    /// The options.
    #[must_use]
    pub fn options(&self) -> &ZarrsOptions {
        &self.options
    }

    fn dparams(&self) -> DParams {
        let mut p = DParams::default().with_threads(self.options.nthreads);
        p.limits = self.options.limits;
        p
    }
}

fn invalid(e: &Error) -> PluginCreateError {
    PluginCreateError::ConfigurationInvalid(PluginConfigurationInvalidError::new(e.to_string()))
}

fn empty_if_absent(configuration: Option<&Configuration>) -> Configuration {
    configuration.cloned().unwrap_or_default()
}

/// Creates the codec from Zarr v3 metadata.
pub(super) fn create_v3(
    metadata: &MetadataV3,
    options: ZarrsOptions,
) -> Result<Codec, PluginCreateError> {
    let config = BloscConfig::from_v3(&empty_if_absent(metadata.configuration()))
        .map_err(|e| invalid(&e))?;
    Ok(Codec::BytesToBytes(Arc::new(ZarrsBloscCodec::new(
        config, options,
    ))))
}

/// Creates the codec from Zarr v2 metadata (the item size is not known here).
pub(super) fn create_v2(
    metadata: &MetadataV2,
    options: ZarrsOptions,
) -> Result<Codec, PluginCreateError> {
    let config = BloscConfig::from_v2(metadata.configuration(), None).map_err(|e| invalid(&e))?;
    Ok(Codec::BytesToBytes(Arc::new(ZarrsBloscCodec::new(
        config, options,
    ))))
}

impl CodecTraitsV3 for ZarrsBloscCodec {
    fn create(metadata: &MetadataV3) -> Result<Codec, PluginCreateError> {
        create_v3(metadata, ZarrsOptions::default())
    }
}

impl CodecTraitsV2 for ZarrsBloscCodec {
    fn create(metadata: &MetadataV2) -> Result<Codec, PluginCreateError> {
        create_v2(metadata, ZarrsOptions::default())
    }
}

fn codec_error(e: &Error) -> CodecError {
    CodecError::Other(format!("blosc: {e}"))
}

impl CodecTraits for ZarrsBloscCodec {
    fn as_any(&self) -> &dyn Any {
        self
    }

    fn configuration(
        &self,
        version: ZarrVersion,
        _options: &CodecMetadataOptions,
    ) -> Option<Configuration> {
        Some(match version {
            ZarrVersion::V2 => self.config.to_v2(),
            ZarrVersion::V3 => self.config.to_v3(),
        })
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

impl BytesToBytesCodecTraits for ZarrsBloscCodec {
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
        decoded_representation
            .size()
            .and_then(|s| s.checked_add(MAX_OVERHEAD as u64))
            .map_or(
                BytesRepresentation::UnboundedSize,
                BytesRepresentation::BoundedSize,
            )
    }

    fn encode<'a>(
        &self,
        decoded_value: ArrayBytesRaw<'a>,
        _options: &CodecOptions,
    ) -> Result<ArrayBytesRaw<'a>, CodecError> {
        compress(&decoded_value, &self.config.cparams(self.options.nthreads))
            .map(Cow::Owned)
            .map_err(|e| codec_error(&e))
    }

    fn decode<'a>(
        &self,
        encoded_value: ArrayBytesRaw<'a>,
        _decoded_representation: &BytesRepresentation,
        _options: &CodecOptions,
    ) -> Result<ArrayBytesRaw<'a>, CodecError> {
        decompress_ctx(&encoded_value, &self.dparams())
            .map(Cow::Owned)
            .map_err(|e| codec_error(&e))
    }

    fn partial_decoder(
        self: Arc<Self>,
        input_handle: Arc<dyn BytesPartialDecoderTraits>,
        decoded_representation: &BytesRepresentation,
        _options: &CodecOptions,
    ) -> Result<Arc<dyn BytesPartialDecoderTraits>, CodecError> {
        let first_read = decoded_representation
            .size()
            .and_then(|n| usize::try_from(n).ok())
            .map_or(0, |n| blosc1_prefix_len(&self.config, n));
        Ok(Arc::new(BloscPartialDecoder::new(
            input_handle,
            self.dparams(),
            self.options.coalesce_gap,
            first_read,
        )))
    }
}

/// The length of the header and block starts of a Blosc1 chunk of `nbytes` decoded bytes
/// written with `config` (as this codec and C-Blosc 1.21 write them): 16 bytes
/// and 4 per block; saturating.
fn blosc1_prefix_len(config: &BloscConfig, nbytes: usize) -> usize {
    let p = config.cparams(1);
    let blocksize = compute_blocksize_blosc1(
        p.clevel,
        p.typesize,
        nbytes,
        p.blocksize,
        p.codec,
        p.splitmode,
    )
    .max(1);
    nbytes
        .div_ceil(blocksize)
        .saturating_mul(4)
        .saturating_add(MIN_HEADER_LENGTH)
}
