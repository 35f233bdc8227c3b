//! `zarr.json` configuration of the `offset` codec (proposal v0.1.0) and of its `pad` revision:
//! <https://github.com/zarr-developers/zarr-extensions/pull/36> (the crate's `FORMAT.md` lists
//! the exact documents).
//!
//! Parsing is strict and exact: unknown keys are rejected, sizes must be JSON integers ≥ 0,
//! `prefix`/`padding` must be base64 whose decoded length equals the size, and every problem
//! has its own [`Error`] variant. Serialising gives back exactly what was parsed: an absent
//! `prefix` stays absent and the base64 text is kept as written.
//!
//! Base64 leniency (decided here, see the crate README): the standard alphabet with canonical
//! `=` padding is required and whitespace is rejected, as Python's
//! `base64.b64decode(validate=True)` does; non-zero trailing bits (`"AB=="`) are accepted, as
//! Python accepts them, so every configuration zarr-python accepts is accepted here. Such text
//! round-trips unchanged; only the configurations this crate *builds* use canonical base64.

use base64::Engine as _;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use crate::error::{Error, Result, json_type};
use crate::limits::Limits;

/// Base64 engine used to *read* configurations: standard alphabet, canonical padding required,
/// non-zero trailing bits tolerated (Python's `b64decode(validate=True)` behaviour).
const LENIENT: GeneralPurpose = GeneralPurpose::new(
    &base64::alphabet::STANDARD,
    GeneralPurposeConfig::new()
        .with_decode_allow_trailing_bits(true)
        .with_decode_padding_mode(DecodePaddingMode::RequireCanonical),
);

/// Where the fixed bytes sit in an encoded chunk (`pad` revision; `offset` is always `Start`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Location {
    /// A header before the payload.
    Start,
    /// A trailer after the payload.
    End,
}

impl Location {
    /// The JSON spelling, `"start"` or `"end"`.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Start => "start",
            Self::End => "end",
        }
    }
}

/// Base64 text as written in `zarr.json` together with its decoded bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Base64Bytes {
    text: String,
    bytes: Vec<u8>,
}

/// Configuration of the `offset` codec: `{"offset": int ≥ 0, "prefix"?: base64}`.
///
/// ```
/// use offset_codec::OffsetConfiguration;
/// let json = serde_json::json!({"offset": 16, "prefix": "TVlfQ1VTVE9NX0hFQURFUg=="});
/// let cfg = OffsetConfiguration::from_json(&json)?;
/// assert_eq!(cfg.prefix_bytes(), Some(&b"MY_CUSTOM_HEADER"[..]));
/// assert_eq!(serde_json::to_value(&cfg)?, json);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetConfiguration {
    offset: u64,
    prefix: Option<Base64Bytes>,
}

/// Configuration of the `pad` codec:
/// `{"location": "start"|"end", "nbytes": int ≥ 0, "padding"?: base64}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PadConfiguration {
    location: Location,
    nbytes: u64,
    padding: Option<Base64Bytes>,
}

/// A whole codec entry, `{"name": "offset"|"pad", "configuration": {...}}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CodecConfiguration {
    /// `"name": "offset"`.
    Offset(OffsetConfiguration),
    /// `"name": "pad"`.
    Pad(PadConfiguration),
}

impl OffsetConfiguration {
    /// The codec name in `zarr.json`.
    pub const NAME: &'static str = "offset";

    /// `offset` bytes of zeros on encode; `prefix` absent from the JSON.
    #[must_use]
    pub const fn new(offset: u64) -> Self {
        Self {
            offset,
            prefix: None,
        }
    }

    /// A literal prefix (`offset` = its length), stored as canonical base64.
    #[must_use]
    pub fn from_prefix(prefix: &[u8]) -> Self {
        Self {
            offset: len_u64(prefix.len()),
            prefix: Some(Base64Bytes {
                text: base64::engine::general_purpose::STANDARD.encode(prefix),
                bytes: prefix.to_vec(),
            }),
        }
    }

    /// Parses the `configuration` object with default [`Limits`].
    ///
    /// # Errors
    /// A distinct [`Error`] variant for: not an object, unknown key, missing or non-integer or
    /// negative `offset`, `offset` above the limit, non-string or invalid base64 `prefix`, and
    /// decoded `prefix` length ≠ `offset`.
    pub fn from_json(configuration: &Value) -> Result<Self> {
        Self::from_json_with_limits(configuration, &Limits::default())
    }

    /// [`from_json`](Self::from_json) with explicit limits.
    ///
    /// # Errors
    /// As [`from_json`](Self::from_json).
    pub fn from_json_with_limits(configuration: &Value, limits: &Limits) -> Result<Self> {
        let map = as_object(configuration, Self::NAME)?;
        check_keys(map, Self::NAME, &["offset", "prefix"])?;
        let offset = size_field(map, Self::NAME, "offset", limits)?;
        let prefix = base64_field(map, "prefix", "offset", offset)?;
        Ok(Self { offset, prefix })
    }

    /// The configuration object as JSON (`prefix` only when it was present).
    #[must_use]
    pub fn to_json(&self) -> Map<String, Value> {
        let mut map = Map::new();
        map.insert("offset".into(), Value::from(self.offset));
        if let Some(p) = &self.prefix {
            map.insert("prefix".into(), Value::from(p.text.clone()));
        }
        map
    }

    /// Header size in bytes.
    #[must_use]
    pub const fn offset(&self) -> u64 {
        self.offset
    }

    /// The base64 text of `prefix` exactly as given, if present.
    #[must_use]
    pub fn prefix_base64(&self) -> Option<&str> {
        self.prefix.as_ref().map(|p| p.text.as_str())
    }

    /// The decoded `prefix`, if present (`None` means `offset` zero bytes).
    #[must_use]
    pub fn prefix_bytes(&self) -> Option<&[u8]> {
        self.prefix.as_ref().map(|p| p.bytes.as_slice())
    }
}

impl PadConfiguration {
    /// The codec name in `zarr.json`.
    pub const NAME: &'static str = "pad";

    /// `nbytes` zero bytes at `location`; `padding` absent from the JSON.
    #[must_use]
    pub const fn new(location: Location, nbytes: u64) -> Self {
        Self {
            location,
            nbytes,
            padding: None,
        }
    }

    /// Literal padding bytes at `location` (`nbytes` = their length), canonical base64.
    #[must_use]
    pub fn from_padding(location: Location, padding: &[u8]) -> Self {
        Self {
            location,
            nbytes: len_u64(padding.len()),
            padding: Some(Base64Bytes {
                text: base64::engine::general_purpose::STANDARD.encode(padding),
                bytes: padding.to_vec(),
            }),
        }
    }

    /// Parses the `configuration` object with default [`Limits`].
    ///
    /// # Errors
    /// As [`OffsetConfiguration::from_json`], plus [`Error::InvalidLocation`] and
    /// [`Error::MissingField`] for `location`.
    pub fn from_json(configuration: &Value) -> Result<Self> {
        Self::from_json_with_limits(configuration, &Limits::default())
    }

    /// [`from_json`](Self::from_json) with explicit limits.
    ///
    /// # Errors
    /// As [`from_json`](Self::from_json).
    pub fn from_json_with_limits(configuration: &Value, limits: &Limits) -> Result<Self> {
        let map = as_object(configuration, Self::NAME)?;
        check_keys(map, Self::NAME, &["location", "nbytes", "padding"])?;
        let location = match map.get("location") {
            None => {
                return Err(Error::MissingField {
                    codec: Self::NAME,
                    field: "location",
                });
            }
            Some(Value::String(s)) if s == "start" => Location::Start,
            Some(Value::String(s)) if s == "end" => Location::End,
            Some(other) => {
                return Err(Error::InvalidLocation {
                    value: other.to_string(),
                });
            }
        };
        let nbytes = size_field(map, Self::NAME, "nbytes", limits)?;
        let padding = base64_field(map, "padding", "nbytes", nbytes)?;
        Ok(Self {
            location,
            nbytes,
            padding,
        })
    }

    /// The configuration object as JSON (`padding` only when it was present).
    #[must_use]
    pub fn to_json(&self) -> Map<String, Value> {
        let mut map = Map::new();
        map.insert("location".into(), Value::from(self.location.as_str()));
        map.insert("nbytes".into(), Value::from(self.nbytes));
        if let Some(p) = &self.padding {
            map.insert("padding".into(), Value::from(p.text.clone()));
        }
        map
    }

    /// Where the bytes sit.
    #[must_use]
    pub const fn location(&self) -> Location {
        self.location
    }

    /// Number of padding bytes.
    #[must_use]
    pub const fn nbytes(&self) -> u64 {
        self.nbytes
    }

    /// The base64 text of `padding` exactly as given, if present.
    #[must_use]
    pub fn padding_base64(&self) -> Option<&str> {
        self.padding.as_ref().map(|p| p.text.as_str())
    }

    /// The decoded `padding`, if present (`None` means `nbytes` zero bytes).
    #[must_use]
    pub fn padding_bytes(&self) -> Option<&[u8]> {
        self.padding.as_ref().map(|p| p.bytes.as_slice())
    }
}

impl CodecConfiguration {
    /// Parses a codec entry `{"name": ..., "configuration": {...}}` with default [`Limits`].
    ///
    /// # Errors
    /// [`Error::NotAnObject`], [`Error::UnknownKey`] (keys other than `name`,
    /// `configuration`), [`Error::MissingField`], [`Error::UnexpectedName`], or the errors of
    /// the configuration parsers.
    pub fn from_json(entry: &Value) -> Result<Self> {
        Self::from_json_with_limits(entry, &Limits::default())
    }

    /// [`from_json`](Self::from_json) with explicit limits.
    ///
    /// # Errors
    /// As [`from_json`](Self::from_json).
    pub fn from_json_with_limits(entry: &Value, limits: &Limits) -> Result<Self> {
        const ENTRY: &str = "codec entry";
        let Value::Object(map) = entry else {
            return Err(Error::NotAnObject {
                codec: ENTRY,
                what: "entry",
                found: json_type(entry),
            });
        };
        check_keys(map, ENTRY, &["name", "configuration"])?;
        let name = map.get("name").ok_or(Error::MissingField {
            codec: ENTRY,
            field: "name",
        })?;
        let configuration = map.get("configuration").ok_or(Error::MissingField {
            codec: ENTRY,
            field: "configuration",
        })?;
        match name.as_str() {
            Some(OffsetConfiguration::NAME) => Ok(Self::Offset(
                OffsetConfiguration::from_json_with_limits(configuration, limits)?,
            )),
            Some(PadConfiguration::NAME) => Ok(Self::Pad(PadConfiguration::from_json_with_limits(
                configuration,
                limits,
            )?)),
            _ => Err(Error::UnexpectedName {
                expected: "\"offset\", \"pad\"",
                found: name.to_string(),
            }),
        }
    }

    /// The codec name, `offset` or `pad`.
    #[must_use]
    pub const fn name(&self) -> &'static str {
        match self {
            Self::Offset(_) => OffsetConfiguration::NAME,
            Self::Pad(_) => PadConfiguration::NAME,
        }
    }

    /// The configuration object as JSON.
    #[must_use]
    pub fn configuration_json(&self) -> Map<String, Value> {
        match self {
            Self::Offset(c) => c.to_json(),
            Self::Pad(c) => c.to_json(),
        }
    }

    /// The whole entry as JSON.
    #[must_use]
    pub fn to_json(&self) -> Value {
        let mut map = Map::new();
        map.insert("name".into(), Value::from(self.name()));
        map.insert(
            "configuration".into(),
            Value::Object(self.configuration_json()),
        );
        Value::Object(map)
    }

    /// Where the fixed bytes sit.
    #[must_use]
    pub const fn location(&self) -> Location {
        match self {
            Self::Offset(_) => Location::Start,
            Self::Pad(c) => c.location,
        }
    }

    /// Number of fixed bytes.
    #[must_use]
    pub const fn nbytes(&self) -> u64 {
        match self {
            Self::Offset(c) => c.offset,
            Self::Pad(c) => c.nbytes,
        }
    }

    /// The configured literal bytes, if any (`None` = zeros).
    #[must_use]
    pub fn literal(&self) -> Option<&[u8]> {
        match self {
            Self::Offset(c) => c.prefix_bytes(),
            Self::Pad(c) => c.padding_bytes(),
        }
    }
}

impl From<OffsetConfiguration> for CodecConfiguration {
    fn from(c: OffsetConfiguration) -> Self {
        Self::Offset(c)
    }
}

impl From<PadConfiguration> for CodecConfiguration {
    fn from(c: PadConfiguration) -> Self {
        Self::Pad(c)
    }
}

macro_rules! serde_via_json {
    ($ty:ty, $to:ident) => {
        impl Serialize for $ty {
            fn serialize<S: Serializer>(&self, s: S) -> core::result::Result<S::Ok, S::Error> {
                self.$to().serialize(s)
            }
        }

        impl<'de> Deserialize<'de> for $ty {
            fn deserialize<D: Deserializer<'de>>(d: D) -> core::result::Result<Self, D::Error> {
                let v = Value::deserialize(d)?;
                Self::from_json(&v).map_err(serde::de::Error::custom)
            }
        }
    };
}

serde_via_json!(OffsetConfiguration, to_json);
serde_via_json!(PadConfiguration, to_json);
serde_via_json!(CodecConfiguration, to_json);

#[allow(clippy::cast_possible_truncation)] // usize is at most 64 bits on every supported target
const fn len_u64(n: usize) -> u64 {
    n as u64
}

fn as_object<'a>(v: &'a Value, codec: &'static str) -> Result<&'a Map<String, Value>> {
    match v {
        Value::Object(m) => Ok(m),
        other => Err(Error::NotAnObject {
            codec,
            what: "configuration",
            found: json_type(other),
        }),
    }
}

fn check_keys(map: &Map<String, Value>, codec: &'static str, allowed: &[&str]) -> Result<()> {
    match map.keys().find(|k| !allowed.contains(&k.as_str())) {
        Some(key) => Err(Error::UnknownKey {
            codec,
            key: key.clone(),
        }),
        None => Ok(()),
    }
}

fn size_field(
    map: &Map<String, Value>,
    codec: &'static str,
    field: &'static str,
    limits: &Limits,
) -> Result<u64> {
    let v = map.get(field).ok_or(Error::MissingField { codec, field })?;
    let n = match v {
        Value::Number(n) => {
            if let Some(u) = n.as_u64() {
                u
            } else if let Some(i) = n.as_i64() {
                return Err(Error::NegativeSize { field, value: i });
            } else {
                // floats, including integral ones such as 12.0 (zarr-python's codec rejects
                // them too) and integers beyond u64, which serde_json reads as floats
                return Err(Error::NotAnInteger {
                    field,
                    value: v.to_string(),
                });
            }
        }
        other => {
            return Err(Error::NotAnInteger {
                field,
                value: other.to_string(),
            });
        }
    };
    let platform = u64::try_from(usize::MAX).unwrap_or(u64::MAX);
    let limit = limits.max_nbytes.min(platform);
    if n > limit {
        return Err(Error::SizeLimit {
            field,
            value: n,
            limit,
        });
    }
    Ok(n)
}

fn base64_field(
    map: &Map<String, Value>,
    field: &'static str,
    size_field: &'static str,
    expected: u64,
) -> Result<Option<Base64Bytes>> {
    let Some(v) = map.get(field) else {
        return Ok(None);
    };
    let Value::String(text) = v else {
        return Err(Error::NotAString {
            field,
            value: v.to_string(),
        });
    };
    // Decoding allocates at most ¾ of the text, which is already in memory: bounded.
    let bytes = LENIENT
        .decode(text)
        .map_err(|source| Error::InvalidBase64 { field, source })?;
    if len_u64(bytes.len()) != expected {
        return Err(Error::PrefixLengthMismatch {
            field,
            size_field,
            actual: len_u64(bytes.len()),
            expected,
        });
    }
    Ok(Some(Base64Bytes {
        text: text.clone(),
        bytes,
    }))
}
