//! The Blosc vocabulary: how a codec, a shuffle and a block size are named, once for every
//! user of the crate (Zarr and numcodecs metadata, command lines, Python).
//!
//! * [`Codec`] (defined in `codec_id`): its [`Codec::name`], parsed back by `FromStr`;
//!   [`Codec::from_cname`] for the `cname` of Zarr's `blosc` codec.
//! * [`BloscShuffle`]: `noshuffle`, `shuffle`, `bitshuffle` (Zarr v3) and `auto` (numcodecs'
//!   `AUTOSHUFFLE`).
//! * [`Blocksize`]: automatic (0) or a number of bytes.
//!
//! With the `serde` feature all three are serde values spelled as in the Zarr `blosc` codec's
//! JSON: names for codecs and shuffles (a shuffle also reads numcodecs' numbers), a number for
//! the block size.

use core::fmt;
use core::num::NonZeroUsize;
use core::str::FromStr;

use crate::codec_id::Codec;
use crate::error::{Error, Result};
use crate::header::Filter;

/// Whether `given` spells `name`: ASCII case is ignored and `-` may stand for `_` (command
/// lines write `zfp-acc`).
fn spells(given: &str, name: &str) -> bool {
    given.len() == name.len()
        && given
            .bytes()
            .zip(name.bytes())
            .all(|(g, n)| g.eq_ignore_ascii_case(&n) || (g == b'-' && n == b'_'))
}

/// `one of a, b, c`.
fn one_of(names: impl IntoIterator<Item = &'static str>) -> String {
    let names: Vec<&str> = names.into_iter().collect();
    format!("one of {}", names.join(", "))
}

/// [`Error::InvalidValue`] for `value`, a `what` not among `expected`.
fn invalid(what: &'static str, value: &str, expected: String) -> Error {
    Error::InvalidValue {
        what,
        value: value.to_owned(),
        expected,
    }
}

impl FromStr for Codec {
    type Err = Error;

    /// The codec named `s` (one of [`Codec::NAMED`], as [`Codec::name`] spells it), ASCII
    /// case ignored, `-` accepted for `_`. [`Error::InvalidValue`] names `s` and lists the
    /// names.
    fn from_str(s: &str) -> Result<Self> {
        Self::NAMED
            .into_iter()
            .find(|c| spells(s, c.name()))
            .ok_or_else(|| invalid("codec", s, one_of(Self::NAMED.map(Self::name))))
    }
}

impl Codec {
    /// The codec `cname` names as the `cname` of Zarr's and numcodecs' `blosc` codec: one of
    /// [`Codec::BLOSC1`], spelled as [`FromStr`] takes it.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidValue`] naming `cname` and listing the accepted names, for any other
    /// name (`snappy`, `ndlz`, …).
    pub fn from_cname(cname: &str) -> Result<Self> {
        Self::BLOSC1
            .into_iter()
            .find(|c| spells(cname, c.name()))
            .ok_or_else(|| invalid("cname", cname, one_of(Self::BLOSC1.map(Self::name))))
    }
}

/// The shuffle of Zarr's and numcodecs' `blosc` codec: the filter of a Blosc1 chunk.
///
/// Zarr v3 metadata names `noshuffle`, `shuffle` and `bitshuffle`; numcodecs numbers them 0, 1
/// and 2 and adds `AUTOSHUFFLE` (-1), spelled `auto` here: bit shuffle for 1-byte items, byte
/// shuffle for wider ones ([`BloscShuffle::resolve`]). `auto` is no Zarr v3 value: the Zarr
/// metadata of a codec holds the shuffle it resolved to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum BloscShuffle {
    /// `noshuffle` (numcodecs 0): no filter.
    NoShuffle,
    /// `shuffle` (numcodecs 1): bytes of each item grouped by significance.
    Shuffle,
    /// `bitshuffle` (numcodecs 2): bits of each item grouped by significance.
    BitShuffle,
    /// `auto` (numcodecs' `AUTOSHUFFLE`, -1): [`BitShuffle`](Self::BitShuffle) for 1-byte
    /// items, [`Shuffle`](Self::Shuffle) otherwise.
    AutoShuffle,
}

impl BloscShuffle {
    /// Every shuffle, in the order of numcodecs' numbers 0, 1, 2, then -1.
    pub const ALL: [Self; 4] = [
        Self::NoShuffle,
        Self::Shuffle,
        Self::BitShuffle,
        Self::AutoShuffle,
    ];

    /// The name: `noshuffle`, `shuffle`, `bitshuffle` (as in Zarr v3 metadata) or `auto`.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::NoShuffle => "noshuffle",
            Self::Shuffle => "shuffle",
            Self::BitShuffle => "bitshuffle",
            Self::AutoShuffle => "auto",
        }
    }

    /// numcodecs' number: 0, 1, 2, or -1 for `auto`.
    #[must_use]
    pub fn numcodecs(self) -> i8 {
        match self {
            Self::NoShuffle => 0,
            Self::Shuffle => 1,
            Self::BitShuffle => 2,
            Self::AutoShuffle => -1,
        }
    }

    /// The shuffle numcodecs numbers `value` (its `shuffle` argument and Zarr v2 metadata).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidValue`] for a number other than -1, 0, 1, 2.
    pub fn from_numcodecs(value: i64) -> Result<Self> {
        Self::ALL
            .into_iter()
            .find(|s| i64::from(s.numcodecs()) == value)
            .ok_or_else(|| invalid("shuffle", &value.to_string(), "one of -1, 0, 1, 2".into()))
    }

    /// The shuffle for items of `itemsize` bytes: [`AutoShuffle`](Self::AutoShuffle) resolved
    /// (bit shuffle when `itemsize` is 1, byte shuffle otherwise), the others as they are.
    #[must_use]
    pub fn resolve(self, itemsize: usize) -> Self {
        match self {
            Self::AutoShuffle if itemsize == 1 => Self::BitShuffle,
            Self::AutoShuffle => Self::Shuffle,
            other => other,
        }
    }

    /// The filter of a Blosc1 chunk of items of `itemsize` bytes with this shuffle
    /// ([`Filter::NoFilter`], [`Filter::Shuffle`] or [`Filter::BitShuffle`]).
    #[must_use]
    pub fn filter(self, itemsize: usize) -> Filter {
        match self.resolve(itemsize) {
            Self::NoShuffle => Filter::NoFilter,
            Self::Shuffle | Self::AutoShuffle => Filter::Shuffle,
            Self::BitShuffle => Filter::BitShuffle,
        }
    }
}

impl fmt::Display for BloscShuffle {
    /// [`BloscShuffle::name`].
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for BloscShuffle {
    type Err = Error;

    /// The shuffle named `s` ([`BloscShuffle::name`]), ASCII case ignored.
    /// [`Error::InvalidValue`] names `s` and lists the names.
    fn from_str(s: &str) -> Result<Self> {
        Self::ALL
            .into_iter()
            .find(|v| spells(s, v.name()))
            .ok_or_else(|| invalid("shuffle", s, one_of(Self::ALL.map(Self::name))))
    }
}

/// The block size of a chunk: automatic, or a number of bytes.
///
/// Zarr and numcodecs metadata write it as a number of bytes, 0 for automatic (numcodecs'
/// `AUTOBLOCKS`); [`Display`](fmt::Display) and [`FromStr`] use the same numbers. Automatic
/// blocks follow C-Blosc2's rules for Blosc2 chunks and C-Blosc 1's for Blosc1 chunks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Blocksize {
    /// Chosen by the encoder (0).
    #[default]
    Auto,
    /// This many bytes per block.
    Bytes(NonZeroUsize),
}

impl Blocksize {
    /// The block size `bytes` stands for: [`Blocksize::Auto`] for 0.
    #[must_use]
    pub const fn from_bytes(bytes: usize) -> Self {
        match NonZeroUsize::new(bytes) {
            Some(n) => Self::Bytes(n),
            None => Self::Auto,
        }
    }

    /// The number of bytes, 0 for [`Blocksize::Auto`] (what
    /// [`CParams::blocksize`](crate::CParams::blocksize) takes).
    #[must_use]
    pub const fn bytes(self) -> usize {
        match self {
            Self::Auto => 0,
            Self::Bytes(n) => n.get(),
        }
    }
}

impl From<usize> for Blocksize {
    /// [`Blocksize::from_bytes`].
    fn from(bytes: usize) -> Self {
        Self::from_bytes(bytes)
    }
}

impl From<Blocksize> for usize {
    /// [`Blocksize::bytes`].
    fn from(b: Blocksize) -> Self {
        b.bytes()
    }
}

impl fmt::Display for Blocksize {
    /// The number of bytes, `0` for automatic.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.bytes())
    }
}

impl FromStr for Blocksize {
    type Err = Error;

    /// A number of bytes, `0` for automatic. [`Error::InvalidValue`] names `s` otherwise.
    fn from_str(s: &str) -> Result<Self> {
        s.parse::<usize>()
            .map(Self::from_bytes)
            .map_err(|_| invalid("blocksize", s, "0 (automatic) or a number of bytes".into()))
    }
}

#[cfg(feature = "serde")]
mod serde_impls {
    //! The vocabulary as serde values (feature `serde`).

    use core::fmt;

    use serde::de::{self, Visitor};
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    use super::{Blocksize, BloscShuffle, Codec};

    impl Serialize for Codec {
        /// The name ([`Codec::name`]); an error for [`Codec::Other`], which has none.
        fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            match self {
                Self::Other(id) => {
                    Err(serde::ser::Error::custom(format!("codec {id} has no name")))
                }
                c => s.serialize_str(c.name()),
            }
        }
    }

    impl<'de> Deserialize<'de> for Codec {
        /// A name, as `FromStr` takes it.
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            struct Name;
            impl Visitor<'_> for Name {
                type Value = Codec;
                fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                    f.write_str("a Blosc codec name")
                }
                fn visit_str<E: de::Error>(self, v: &str) -> Result<Codec, E> {
                    v.parse().map_err(E::custom)
                }
            }
            d.deserialize_str(Name)
        }
    }

    impl Serialize for BloscShuffle {
        /// The name ([`BloscShuffle::name`]).
        fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            s.serialize_str(self.name())
        }
    }

    impl<'de> Deserialize<'de> for BloscShuffle {
        /// A name (as `FromStr` takes it) or numcodecs' number (-1, 0, 1, 2).
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            struct NameOrNumber;
            impl Visitor<'_> for NameOrNumber {
                type Value = BloscShuffle;
                fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                    f.write_str("a Blosc shuffle name or numcodecs number")
                }
                fn visit_str<E: de::Error>(self, v: &str) -> Result<BloscShuffle, E> {
                    v.parse().map_err(E::custom)
                }
                fn visit_i64<E: de::Error>(self, v: i64) -> Result<BloscShuffle, E> {
                    BloscShuffle::from_numcodecs(v).map_err(E::custom)
                }
                fn visit_u64<E: de::Error>(self, v: u64) -> Result<BloscShuffle, E> {
                    let v = i64::try_from(v).unwrap_or(i64::MAX);
                    BloscShuffle::from_numcodecs(v).map_err(E::custom)
                }
            }
            d.deserialize_any(NameOrNumber)
        }
    }

    impl Serialize for Blocksize {
        /// The number of bytes, 0 for automatic.
        fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            s.serialize_u64(self.bytes() as u64)
        }
    }

    impl<'de> Deserialize<'de> for Blocksize {
        /// A number of bytes (0 for automatic), or a string of one.
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            struct Bytes;
            impl Visitor<'_> for Bytes {
                type Value = Blocksize;
                fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                    f.write_str("a block size in bytes (0: automatic)")
                }
                fn visit_u64<E: de::Error>(self, v: u64) -> Result<Blocksize, E> {
                    usize::try_from(v)
                        .map(Blocksize::from_bytes)
                        .map_err(|_| E::custom(format!("blocksize {v} is too large")))
                }
                fn visit_i64<E: de::Error>(self, v: i64) -> Result<Blocksize, E> {
                    usize::try_from(v)
                        .map(Blocksize::from_bytes)
                        .map_err(|_| E::custom(format!("invalid blocksize {v}")))
                }
                fn visit_str<E: de::Error>(self, v: &str) -> Result<Blocksize, E> {
                    v.parse().map_err(E::custom)
                }
            }
            d.deserialize_any(Bytes)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codec_names_parse_back_any_case_and_dashes() {
        for c in Codec::NAMED {
            assert_eq!(c.name().parse::<Codec>(), Ok(c));
            assert_eq!(c.to_string().parse::<Codec>(), Ok(c));
            assert_eq!(c.name().to_ascii_uppercase().parse::<Codec>(), Ok(c));
        }
        assert_eq!("zfp-acc".parse::<Codec>(), Ok(Codec::ZfpAcc));
        assert_eq!("LZ4HC".parse::<Codec>(), Ok(Codec::Lz4Hc));
        let e = "snappy".parse::<Codec>().unwrap_err().to_string();
        assert!(
            e.contains("\"snappy\"") && e.contains("blosclz, lz4, lz4hc"),
            "{e}"
        );
        assert!("lz".parse::<Codec>().is_err());
        assert!("".parse::<Codec>().is_err());
    }

    #[test]
    fn cnames_are_the_blosc1_codecs() {
        for c in Codec::BLOSC1 {
            assert_eq!(Codec::from_cname(c.name()), Ok(c));
        }
        for bad in ["ndlz", "zfp_acc", "snappy", "nope"] {
            let e = Codec::from_cname(bad).unwrap_err().to_string();
            assert!(e.contains(bad) && e.contains("zlib, zstd"), "{e}");
            assert!(!e.contains("ndlz,"), "{e}");
        }
    }

    #[test]
    fn shuffles_by_name_and_number_and_auto_resolved() {
        for s in BloscShuffle::ALL {
            assert_eq!(s.name().parse::<BloscShuffle>(), Ok(s));
            assert_eq!(s.to_string().to_ascii_uppercase().parse(), Ok(s));
            assert_eq!(BloscShuffle::from_numcodecs(s.numcodecs().into()), Ok(s));
        }
        assert!(BloscShuffle::from_numcodecs(3).is_err());
        assert!(BloscShuffle::from_numcodecs(-2).is_err());
        let e = "twist".parse::<BloscShuffle>().unwrap_err().to_string();
        assert!(e.contains("twist") && e.contains("noshuffle, shuffle, bitshuffle, auto"));
        let auto = BloscShuffle::AutoShuffle;
        assert_eq!(auto.resolve(1), BloscShuffle::BitShuffle);
        assert_eq!(auto.resolve(4), BloscShuffle::Shuffle);
        assert_eq!(auto.filter(1), Filter::BitShuffle);
        assert_eq!(auto.filter(2), Filter::Shuffle);
        assert_eq!(BloscShuffle::NoShuffle.filter(1), Filter::NoFilter);
        assert_eq!(BloscShuffle::Shuffle.resolve(1), BloscShuffle::Shuffle);
    }

    #[test]
    fn blocksizes_are_numbers_zero_automatic() {
        assert_eq!("0".parse::<Blocksize>(), Ok(Blocksize::Auto));
        assert_eq!("4096".parse::<Blocksize>().map(Blocksize::bytes), Ok(4096));
        assert_eq!(Blocksize::from(0), Blocksize::Auto);
        assert_eq!(usize::from(Blocksize::from(1000)), 1000);
        assert_eq!(Blocksize::Auto.to_string(), "0");
        for bad in ["-1", "auto", "1e3", ""] {
            let e = bad.parse::<Blocksize>().unwrap_err().to_string();
            assert!(
                e.contains("blocksize") && e.contains(&format!("{bad:?}")),
                "{e}"
            );
        }
    }

    #[cfg(feature = "serde")]
    #[test]
    fn serde_spells_as_zarr_json() {
        use serde_json::json;
        assert_eq!(
            serde_json::to_value(Codec::Lz4Hc).ok(),
            Some(json!("lz4hc"))
        );
        assert!(serde_json::to_value(Codec::Other(3)).is_err());
        assert_eq!(
            serde_json::from_value::<Codec>(json!("zstd")).ok(),
            Some(Codec::Zstd)
        );
        assert!(serde_json::from_value::<Codec>(json!("snappy")).is_err());
        assert_eq!(
            serde_json::to_value(BloscShuffle::BitShuffle).ok(),
            Some(json!("bitshuffle"))
        );
        for (v, s) in [
            (json!("shuffle"), BloscShuffle::Shuffle),
            (json!(-1), BloscShuffle::AutoShuffle),
            (json!(0), BloscShuffle::NoShuffle),
            (json!(2), BloscShuffle::BitShuffle),
        ] {
            assert_eq!(serde_json::from_value::<BloscShuffle>(v).ok(), Some(s));
        }
        assert!(serde_json::from_value::<BloscShuffle>(json!(7)).is_err());
        assert_eq!(serde_json::to_value(Blocksize::Auto).ok(), Some(json!(0)));
        assert_eq!(
            serde_json::from_value::<Blocksize>(json!(4096)).ok(),
            Some(Blocksize::from(4096))
        );
        assert!(serde_json::from_value::<Blocksize>(json!(-1)).is_err());
    }
}
