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
//!
//! The conversions between the crate's blosc vocabulary ([`Codec`], [`BloscShuffle`]) and the
//! types of zarrs' metadata model (`zarrs_metadata_ext`'s `BloscCompressor`,
//! `BloscShuffleMode`, `BloscShuffleModeNumcodecs`) are here, and only here.

use zarrs_metadata::Configuration;
use zarrs_metadata_ext::codec::blosc::{
    BloscCodecConfiguration, BloscCodecConfigurationNumcodecs, BloscCodecConfigurationV1,
    BloscCompressionLevel, BloscCompressor, BloscShuffleMode, BloscShuffleModeNumcodecs,
};

use crate::codec_id::Codec;
use crate::encode::{CParams, Format};
use crate::error::{Error, Result};
use crate::vocabulary::{Blocksize, BloscShuffle};

/// A `blosc` codec configuration (validated by [`BloscConfig::new`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BloscConfig {
    codec: Codec,
    clevel: BloscCompressionLevel,
    shuffle: BloscShuffle,
    typesize: Option<usize>,
    blocksize: Blocksize,
}

impl BloscConfig {
    /// The codec name in Zarr v3 metadata and its id in Zarr v2 metadata.
    pub const NAME: &'static str = "blosc";

    /// A configuration. [`BloscShuffle::AutoShuffle`] is resolved with `typesize` (1 when
    /// unknown): Zarr v3 metadata has no automatic shuffle.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParam`] for a codec Zarr's `blosc` cannot name (not one of
    /// [`Codec::BLOSC1`]), `clevel` above 9 or `typesize` 0.
    pub fn new(
        codec: Codec,
        clevel: u8,
        shuffle: BloscShuffle,
        typesize: Option<usize>,
        blocksize: impl Into<Blocksize>,
    ) -> Result<Self> {
        if !Codec::BLOSC1.contains(&codec) {
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
            shuffle: shuffle.resolve(typesize.unwrap_or(1)),
            typesize,
            blocksize: blocksize.into(),
        })
    }

    /// The parameters [`compress`](crate::compress) writes this codec's chunks with: the
    /// Blosc1 format of C-Blosc 1.21, as zarrs (with `blosc-src`) and numcodecs write them.
    #[must_use]
    pub fn cparams(&self, nthreads: usize) -> CParams {
        let typesize = self.typesize.unwrap_or(1).max(1);
        let mut p = CParams::blosc1(
            self.codec,
            u8::from(self.clevel),
            typesize,
            self.shuffle.filter(typesize),
        );
        p.blocksize = self.blocksize.bytes();
        p.nthreads = nthreads;
        debug_assert_eq!(p.format, Format::Blosc1);
        p
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
        Self::new(
            codec_of(parsed.cname)?,
            u8::from(parsed.clevel),
            parsed.shuffle.into(),
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
        // `AutoShuffle` resolves with the item size (1 when unknown) in `new`.
        Self::new(
            codec_of(parsed.cname)?,
            u8::from(parsed.clevel),
            parsed.shuffle.into(),
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

    /// The shuffle (never [`BloscShuffle::AutoShuffle`]: [`BloscConfig::new`] resolves it).
    #[must_use]
    pub fn shuffle(&self) -> BloscShuffle {
        self.shuffle
    }

    /// The type size, when the metadata names it (encoded as 1 otherwise).
    #[must_use]
    pub fn typesize(&self) -> Option<usize> {
        self.typesize
    }

    /// The block size (automatic: C-Blosc 1.21's rules).
    #[must_use]
    pub fn blocksize(&self) -> Blocksize {
        self.blocksize
    }

    /// The Zarr v3 configuration (zarrs' serialisation, `typesize` when known).
    #[must_use]
    pub fn to_v3(&self) -> Configuration {
        BloscCodecConfiguration::V1(BloscCodecConfigurationV1 {
            cname: compressor_of(self.codec),
            clevel: self.clevel,
            shuffle: shuffle_mode_of(self.shuffle),
            typesize: self.typesize,
            blocksize: self.blocksize.bytes(),
        })
        .into()
    }

    /// The Zarr v2 (numcodecs) configuration.
    #[must_use]
    pub fn to_v2(&self) -> Configuration {
        BloscCodecConfiguration::Numcodecs(BloscCodecConfigurationNumcodecs {
            cname: compressor_of(self.codec),
            clevel: self.clevel,
            shuffle: self.shuffle.into(),
            blocksize: self.blocksize.bytes(),
        })
        .into()
    }
}

/// The codec a Zarr `cname` names; snappy (codec id 3) is [`Error::Unsupported`].
fn codec_of(c: BloscCompressor) -> Result<Codec> {
    match Codec::from(c) {
        Codec::Other(id) => Err(Error::Unsupported {
            what: "blosc cname snappy (codec id)",
            id: u32::from(id),
        }),
        codec => Ok(codec),
    }
}

/// The `cname` of a codec [`BloscConfig::new`] admitted.
fn compressor_of(c: Codec) -> BloscCompressor {
    // `BloscConfig::new` admits only the Blosc1 codecs.
    BloscCompressor::try_from(c).unwrap_or(BloscCompressor::BloscLZ)
}

/// The Zarr v3 shuffle of a resolved shuffle (as [`BloscConfig::new`] keeps it).
fn shuffle_mode_of(s: BloscShuffle) -> BloscShuffleMode {
    // `BloscConfig::new` resolves `AutoShuffle`.
    BloscShuffleMode::try_from(s).unwrap_or(BloscShuffleMode::NoShuffle)
}

impl From<BloscCompressor> for Codec {
    /// The codec a Zarr `cname` names: [`Codec::Other`]`(3)` for snappy, which this crate
    /// does not implement.
    fn from(c: BloscCompressor) -> Self {
        match c {
            BloscCompressor::BloscLZ => Self::BloscLz,
            BloscCompressor::LZ4 => Self::Lz4,
            BloscCompressor::LZ4HC => Self::Lz4Hc,
            BloscCompressor::Zlib => Self::Zlib,
            BloscCompressor::Zstd => Self::Zstd,
            BloscCompressor::Snappy => Self::Other(3),
        }
    }
}

impl TryFrom<Codec> for BloscCompressor {
    type Error = Error;

    /// The Zarr `cname` of a codec: one of [`Codec::BLOSC1`]; [`Error::InvalidValue`] for
    /// the others.
    fn try_from(c: Codec) -> Result<Self> {
        Ok(match c {
            Codec::BloscLz => Self::BloscLZ,
            Codec::Lz4 => Self::LZ4,
            Codec::Lz4Hc => Self::LZ4HC,
            Codec::Zlib => Self::Zlib,
            Codec::Zstd => Self::Zstd,
            other => {
                let names: Vec<&str> = Codec::BLOSC1.iter().map(|c| c.name()).collect();
                return Err(Error::InvalidValue {
                    what: "cname",
                    value: other.to_string(),
                    expected: format!("one of {}", names.join(", ")),
                });
            }
        })
    }
}

impl From<BloscShuffleMode> for BloscShuffle {
    /// The shuffle of Zarr v3 metadata.
    fn from(s: BloscShuffleMode) -> Self {
        match s {
            BloscShuffleMode::NoShuffle => Self::NoShuffle,
            BloscShuffleMode::Shuffle => Self::Shuffle,
            BloscShuffleMode::BitShuffle => Self::BitShuffle,
        }
    }
}

impl TryFrom<BloscShuffle> for BloscShuffleMode {
    type Error = Error;

    /// The Zarr v3 shuffle; [`Error::InvalidValue`] for [`BloscShuffle::AutoShuffle`], which
    /// Zarr v3 metadata cannot hold ([`BloscShuffle::resolve`] it first).
    fn try_from(s: BloscShuffle) -> Result<Self> {
        match s {
            BloscShuffle::NoShuffle => Ok(Self::NoShuffle),
            BloscShuffle::Shuffle => Ok(Self::Shuffle),
            BloscShuffle::BitShuffle => Ok(Self::BitShuffle),
            BloscShuffle::AutoShuffle => Err(Error::InvalidValue {
                what: "Zarr v3 shuffle",
                value: s.to_string(),
                expected: "one of noshuffle, shuffle, bitshuffle (auto resolved first)".into(),
            }),
        }
    }
}

impl From<BloscShuffleModeNumcodecs> for BloscShuffle {
    /// The shuffle numcodecs numbers (-1 is [`BloscShuffle::AutoShuffle`]).
    fn from(s: BloscShuffleModeNumcodecs) -> Self {
        match s {
            BloscShuffleModeNumcodecs::NoShuffle => Self::NoShuffle,
            BloscShuffleModeNumcodecs::Shuffle => Self::Shuffle,
            BloscShuffleModeNumcodecs::BitShuffle => Self::BitShuffle,
            BloscShuffleModeNumcodecs::AutoShuffle => Self::AutoShuffle,
        }
    }
}

impl From<BloscShuffle> for BloscShuffleModeNumcodecs {
    /// numcodecs' number of a shuffle.
    fn from(s: BloscShuffle) -> Self {
        match s {
            BloscShuffle::NoShuffle => Self::NoShuffle,
            BloscShuffle::Shuffle => Self::Shuffle,
            BloscShuffle::BitShuffle => Self::BitShuffle,
            BloscShuffle::AutoShuffle => Self::AutoShuffle,
        }
    }
}
