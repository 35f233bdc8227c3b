//! Codec ids (C-Blosc2's `compcode`), their names and which of them this build has.
//!
//! A leaf module: it imports nothing from the crate. Parsing and serializing the names is in
//! `vocabulary`.

/// A compression codec (the C-Blosc2 `compcode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Codec {
    /// BloscLZ (id 0), implemented in this crate.
    BloscLz,
    /// LZ4 (id 1); Cargo feature `lz4`.
    Lz4,
    /// LZ4HC (id 2), same stream format as LZ4; Cargo feature `lz4`.
    Lz4Hc,
    /// zlib (id 4); Cargo feature `zlib`.
    Zlib,
    /// Zstandard (id 5); Cargo feature `zstd`.
    Zstd,
    /// NDLZ plugin (id 32): 2-D blocks of 1-byte items, cells of `codec_meta` (4 or 8) items
    /// a side; encoding needs the block shape ([`BlockShape`](crate::BlockShape)).
    NdLz,
    /// ZFP plugin in fixed-accuracy mode (id 33): tolerance `10^(codec_meta as i8)`; float32 /
    /// float64 blocks of 1–4 dimensions; needs the block shape. Cargo feature `zfp`.
    ZfpAcc,
    /// ZFP plugin in fixed-precision mode (id 34): `codec_meta + 3 + 2·ndim` bits. Cargo
    /// feature `zfp`.
    ZfpPrec,
    /// ZFP plugin in fixed-rate mode (id 35): `codec_meta` percent of the input size. Cargo
    /// feature `zfp`.
    ZfpRate,
    /// Any other id (Snappy = 3, the external plugins ≥ 36, user codecs ≥ 160): not
    /// supported.
    Other(u8),
}

impl Codec {
    /// Every codec with a name ([`Codec::name`]), by id: `blosclz`, `lz4`, `lz4hc`, `zlib`,
    /// `zstd`, `ndlz`, `zfp_acc`, `zfp_prec`, `zfp_rate`.
    pub const NAMED: [Self; 9] = [
        Self::BloscLz,
        Self::Lz4,
        Self::Lz4Hc,
        Self::Zlib,
        Self::Zstd,
        Self::NdLz,
        Self::ZfpAcc,
        Self::ZfpPrec,
        Self::ZfpRate,
    ];

    /// The codecs of the Blosc1 format (C-Blosc 1.x) that this crate implements: `blosclz`,
    /// `lz4`, `lz4hc`, `zlib`, `zstd`. They are the values the `cname` of Zarr's and
    /// numcodecs' `blosc` codec takes (numcodecs' `snappy` aside, which the numcodecs wheels
    /// leave out too), and the codecs [`Format::Blosc1`](crate::Format::Blosc1) writes.
    pub const BLOSC1: [Self; 5] = [
        Self::BloscLz,
        Self::Lz4,
        Self::Lz4Hc,
        Self::Zlib,
        Self::Zstd,
    ];

    /// The numeric codec id (`compcode`).
    #[must_use]
    pub fn id(self) -> u8 {
        match self {
            Self::BloscLz => 0,
            Self::Lz4 => 1,
            Self::Lz4Hc => 2,
            Self::Zlib => 4,
            Self::Zstd => 5,
            Self::NdLz => 32,
            Self::ZfpAcc => 33,
            Self::ZfpPrec => 34,
            Self::ZfpRate => 35,
            Self::Other(id) => id,
        }
    }

    /// The codec with numeric id `id`.
    #[must_use]
    pub fn from_id(id: u8) -> Self {
        match id {
            0 => Self::BloscLz,
            1 => Self::Lz4,
            2 => Self::Lz4Hc,
            4 => Self::Zlib,
            5 => Self::Zstd,
            32 => Self::NdLz,
            33 => Self::ZfpAcc,
            34 => Self::ZfpPrec,
            35 => Self::ZfpRate,
            other => Self::Other(other),
        }
    }

    /// The stream format code stored in flags bits 5–7, if the codec is built in.
    pub(crate) fn format_code(self) -> Option<u8> {
        match self {
            Self::BloscLz => Some(0),
            Self::Lz4 | Self::Lz4Hc => Some(1),
            Self::Zlib => Some(3),
            Self::Zstd => Some(4),
            // Plugin codecs: the "user-defined" format, id in the `udcodec` byte.
            Self::NdLz | Self::ZfpAcc | Self::ZfpPrec | Self::ZfpRate => Some(6),
            Self::Other(_) => None,
        }
    }

    /// The codec's name as C-Blosc2, Zarr's and numcodecs' `blosc` codec (`cname`) spell it
    /// (`blosclz`, `lz4`, `lz4hc`, `zlib`, `zstd`, `ndlz`, `zfp_acc`, `zfp_prec`, `zfp_rate`;
    /// `other` for any other id). [`FromStr`](core::str::FromStr) parses it back.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::BloscLz => "blosclz",
            Self::Lz4 => "lz4",
            Self::Lz4Hc => "lz4hc",
            Self::Zlib => "zlib",
            Self::Zstd => "zstd",
            Self::NdLz => "ndlz",
            Self::ZfpAcc => "zfp_acc",
            Self::ZfpPrec => "zfp_prec",
            Self::ZfpRate => "zfp_rate",
            Self::Other(_) => "other",
        }
    }

    /// The Cargo feature of this crate that provides the codec (`None` for BloscLZ, which is
    /// always built in, and for codecs this crate does not implement).
    #[must_use]
    pub fn feature(self) -> Option<&'static str> {
        match self {
            Self::BloscLz | Self::NdLz | Self::Other(_) => None,
            Self::Lz4 | Self::Lz4Hc => Some("lz4"),
            Self::Zlib => Some("zlib"),
            Self::Zstd => Some("zstd"),
            Self::ZfpAcc | Self::ZfpPrec | Self::ZfpRate => Some("zfp"),
        }
    }

    /// Whether this build can decode and encode the codec: BloscLZ and NDLZ always, LZ4/LZ4HC, zlib and
    /// zstd when their Cargo feature is enabled, other ids never.
    #[must_use]
    pub fn is_enabled(self) -> bool {
        match self {
            Self::BloscLz | Self::NdLz => true,
            Self::Lz4 | Self::Lz4Hc => cfg!(feature = "lz4"),
            Self::Zlib => cfg!(feature = "zlib"),
            Self::Zstd => cfg!(feature = "zstd"),
            Self::ZfpAcc | Self::ZfpPrec | Self::ZfpRate => cfg!(feature = "zfp"),
            Self::Other(_) => false,
        }
    }

    /// "High compression ratio" codecs get larger automatic blocks.
    pub(crate) fn is_hcr(self) -> bool {
        matches!(self, Self::Lz4Hc | Self::Zlib | Self::Zstd)
    }
}

impl core::fmt::Display for Codec {
    /// The name of [`Codec::name`]; `codec <id>` for other ids.
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Self::Other(id) => write!(f, "codec {id}"),
            c => f.write_str(c.name()),
        }
    }
}
