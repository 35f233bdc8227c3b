//! The `blosc` codec configuration and its Zarr metadata.
//!
//! Zarr v3 (`blosc` codec, zarr-specs v3 codecs/blosc): `{"cname", "clevel", "shuffle":
//! "noshuffle" | "shuffle" | "bitshuffle", "typesize", "blocksize"}`; `typesize` is required
//! unless `shuffle` is `noshuffle`.
//!
//! Zarr v2 (numcodecs `Blosc`): `{"id": "blosc", "cname", "clevel", "shuffle": 0 | 1 | 2 | -1,
//! "blocksize"}` where -1 (`AUTOSHUFFLE`) means bitshuffle for 1-byte items, byte shuffle
//! otherwise, with the array's item size as the type size.
//!
//! `cname` is one of `blosclz`, `lz4`, `lz4hc`, `zlib`, `zstd` (`snappy`, which C-Blosc 1 can be
//! built with, is not supported); `clevel` is 0–9; `blocksize` 0 means automatic.

use zarrs::metadata::Configuration;
use zarrs::metadata_ext::codec::blosc::{
    BloscCodecConfiguration, BloscCodecConfigurationNumcodecs, BloscCodecConfigurationV1,
    BloscCompressionLevel, BloscCompressor, BloscShuffleMode, BloscShuffleModeNumcodecs,
};

use crate::codec::Codec;
use crate::encode::{CParams, Format};
use crate::error::{Error, Result};
use crate::header::{Filter, MIN_HEADER_LENGTH};
use crate::tune::compute_blocksize_blosc1;

/// The shuffle of a `blosc` codec.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum BloscShuffle {
    /// `noshuffle` (numcodecs 0).
    NoShuffle,
    /// `shuffle` (numcodecs 1): bytes of each item grouped by significance.
    Shuffle,
    /// `bitshuffle` (numcodecs 2).
    BitShuffle,
}

impl BloscShuffle {
    fn filter(self) -> Filter {
        match self {
            Self::NoShuffle => Filter::NoFilter,
            Self::Shuffle => Filter::Shuffle,
            Self::BitShuffle => Filter::BitShuffle,
        }
    }
}

/// A `blosc` codec configuration (validated by [`BloscConfig::new`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BloscConfig {
    codec: Codec,
    clevel: BloscCompressionLevel,
    shuffle: BloscShuffle,
    typesize: Option<usize>,
    blocksize: usize,
}

impl BloscConfig {
    /// The codec name in Zarr v3 metadata and its id in Zarr v2 metadata.
    pub const NAME: &'static str = "blosc";

    /// A configuration.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParam`] for a codec Zarr's `blosc` cannot name, `clevel` above 9 or
    /// `typesize` 0.
    pub fn new(
        codec: Codec,
        clevel: u8,
        shuffle: BloscShuffle,
        typesize: Option<usize>,
        blocksize: usize,
    ) -> Result<Self> {
        if !matches!(
            codec,
            Codec::BloscLz | Codec::Lz4 | Codec::Lz4Hc | Codec::Zlib | Codec::Zstd
        ) {
            return Err(Error::InvalidParam {
                what: "cname",
                why: "Zarr's blosc codec names blosclz, lz4, lz4hc, zlib and zstd only",
            });
        }
        if typesize == Some(0) {
            return Err(Error::InvalidParam {
                what: "typesize",
                why: "must be positive",
            });
        }
        let clevel = BloscCompressionLevel::try_from(clevel).map_err(|_| Error::InvalidParam {
            what: "clevel",
            why: "must be 0 to 9",
        })?;
        Ok(Self {
            codec,
            clevel,
            shuffle,
            typesize,
            blocksize,
        })
    }

    /// The parameters [`compress`](crate::compress) writes this codec's chunks with: the
    /// Blosc1 format of C-Blosc 1.21, as zarrs (with `blosc-src`) and numcodecs write them.
    #[must_use]
    pub fn cparams(&self, nthreads: usize) -> CParams {
        let mut p = CParams::blosc1(
            self.codec,
            u8::from(self.clevel),
            self.typesize.unwrap_or(1).max(1),
            self.shuffle.filter(),
        );
        p.blocksize = self.blocksize;
        p.nthreads = nthreads;
        debug_assert_eq!(p.format, Format::Blosc1);
        p
    }

    /// The length of the header and block starts of a Blosc1 chunk of `nbytes` decoded bytes
    /// written with this configuration (as this codec and C-Blosc 1.21 write them): 16 bytes
    /// and 4 per block; saturating.
    pub(crate) fn blosc1_prefix_len(&self, nbytes: usize) -> usize {
        let p = self.cparams(1);
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

    /// Reads Zarr v3 `blosc` configuration JSON.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParam`] for a configuration that does not parse or that
    /// [`BloscConfig::new`] refuses.
    pub fn from_v3(configuration: &Configuration) -> Result<Self> {
        let value = serde_json::Value::Object(configuration.clone().into());
        let parsed: BloscCodecConfigurationV1 =
            serde_json::from_value(value).map_err(|_| Error::InvalidParam {
                what: "blosc configuration",
                why: "not a Zarr v3 blosc configuration (cname, clevel, shuffle, typesize, blocksize)",
            })?;
        let shuffle = match parsed.shuffle {
            BloscShuffleMode::NoShuffle => BloscShuffle::NoShuffle,
            BloscShuffleMode::Shuffle => BloscShuffle::Shuffle,
            BloscShuffleMode::BitShuffle => BloscShuffle::BitShuffle,
        };
        Self::new(
            codec_of(parsed.cname)?,
            u8::from(parsed.clevel),
            shuffle,
            parsed.typesize,
            parsed.blocksize,
        )
    }

    /// Reads Zarr v2 (numcodecs) `blosc` compressor configuration JSON (without the `id`).
    /// `itemsize` is the array's item size when known: it resolves `shuffle: -1` and becomes
    /// the type size.
    ///
    /// # Errors
    ///
    /// As [`BloscConfig::from_v3`].
    pub fn from_v2(configuration: &Configuration, itemsize: Option<usize>) -> Result<Self> {
        let value = serde_json::Value::Object(configuration.clone().into());
        let parsed: BloscCodecConfigurationNumcodecs =
            serde_json::from_value(value).map_err(|_| Error::InvalidParam {
                what: "blosc configuration",
                why: "not a numcodecs blosc configuration (cname, clevel, shuffle, blocksize)",
            })?;
        let shuffle = match parsed.shuffle {
            BloscShuffleModeNumcodecs::NoShuffle => BloscShuffle::NoShuffle,
            BloscShuffleModeNumcodecs::Shuffle => BloscShuffle::Shuffle,
            BloscShuffleModeNumcodecs::BitShuffle => BloscShuffle::BitShuffle,
            BloscShuffleModeNumcodecs::AutoShuffle if itemsize.unwrap_or(1) == 1 => {
                BloscShuffle::BitShuffle
            }
            BloscShuffleModeNumcodecs::AutoShuffle => BloscShuffle::Shuffle,
        };
        Self::new(
            codec_of(parsed.cname)?,
            u8::from(parsed.clevel),
            shuffle,
            itemsize,
            parsed.blocksize,
        )
    }

    /// The compressor.
    #[must_use]
    pub fn codec(&self) -> Codec {
        self.codec
    }

    /// The compression level (0–9).
    #[must_use]
    pub fn clevel(&self) -> u8 {
        u8::from(self.clevel)
    }

    /// The shuffle.
    #[must_use]
    pub fn shuffle(&self) -> BloscShuffle {
        self.shuffle
    }

    /// The type size, when the metadata names it (encoded as 1 otherwise).
    #[must_use]
    pub fn typesize(&self) -> Option<usize> {
        self.typesize
    }

    /// The block size (0 = automatic, C-Blosc 1.21's rules).
    #[must_use]
    pub fn blocksize(&self) -> usize {
        self.blocksize
    }

    /// The Zarr v3 configuration (zarrs' serialisation, `typesize` when known).
    #[must_use]
    pub fn to_v3(&self) -> Configuration {
        let shuffle = match self.shuffle {
            BloscShuffle::NoShuffle => BloscShuffleMode::NoShuffle,
            BloscShuffle::Shuffle => BloscShuffleMode::Shuffle,
            BloscShuffle::BitShuffle => BloscShuffleMode::BitShuffle,
        };
        BloscCodecConfiguration::V1(BloscCodecConfigurationV1 {
            cname: compressor_of(self.codec),
            clevel: self.clevel,
            shuffle,
            typesize: self.typesize,
            blocksize: self.blocksize,
        })
        .into()
    }

    /// The Zarr v2 (numcodecs) configuration.
    #[must_use]
    pub fn to_v2(&self) -> Configuration {
        let shuffle = match self.shuffle {
            BloscShuffle::NoShuffle => BloscShuffleModeNumcodecs::NoShuffle,
            BloscShuffle::Shuffle => BloscShuffleModeNumcodecs::Shuffle,
            BloscShuffle::BitShuffle => BloscShuffleModeNumcodecs::BitShuffle,
        };
        BloscCodecConfiguration::Numcodecs(BloscCodecConfigurationNumcodecs {
            cname: compressor_of(self.codec),
            clevel: self.clevel,
            shuffle,
            blocksize: self.blocksize,
        })
        .into()
    }
}

fn codec_of(c: BloscCompressor) -> Result<Codec> {
    Ok(match c {
        BloscCompressor::BloscLZ => Codec::BloscLz,
        BloscCompressor::LZ4 => Codec::Lz4,
        BloscCompressor::LZ4HC => Codec::Lz4Hc,
        BloscCompressor::Zlib => Codec::Zlib,
        BloscCompressor::Zstd => Codec::Zstd,
        BloscCompressor::Snappy => {
            return Err(Error::Unsupported {
                what: "blosc cname snappy (codec id)",
                id: 3,
            });
        }
    })
}

fn compressor_of(c: Codec) -> BloscCompressor {
    match c {
        Codec::Lz4 => BloscCompressor::LZ4,
        Codec::Lz4Hc => BloscCompressor::LZ4HC,
        Codec::Zlib => BloscCompressor::Zlib,
        Codec::Zstd => BloscCompressor::Zstd,
        // `BloscConfig::new` admits no other codec.
        _ => BloscCompressor::BloscLZ,
    }
}
