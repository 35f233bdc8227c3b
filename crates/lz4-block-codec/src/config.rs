//! [`Lz4BlockConfiguration`]: the codec's JSON configuration.

use serde_json::{Map, Value, json};

use crate::error::{Error, Result};

/// The codec's name in `zarr.json` (and its numcodecs id).
pub const NAME: &str = "lz4-block";

/// Largest `acceleration` liblz4 takes (`LZ4_ACCELERATION_MAX`).
pub const ACCELERATION_MAX: u32 = 65_537;

/// Largest LZ4HC `level` (`LZ4HC_CLEVEL_MAX`).
pub const HC_LEVEL_MAX: u32 = 12;

/// How blocks are encoded (decoding is the same for both): liblz4's fast compressor with an
/// `acceleration` (`LZ4_compress_fast`; 1 is `LZ4_compress_default`, what WKW's LZ4 block
/// type writes), or its high-compression one at a `level` (`LZ4_compress_HC`; WKW's LZ4HC
/// block type writes level 9).
///
/// As JSON: `{"mode": "fast", "acceleration": 1}` (also `{}`), `{"mode": "hc", "level": 9}`.
///
/// ```
/// use lz4_block_codec::Lz4BlockConfiguration;
/// let c = Lz4BlockConfiguration::from_json(&serde_json::json!({"mode": "hc", "level": 9}))?;
/// assert_eq!(c, Lz4BlockConfiguration::Hc { level: 9 });
/// assert_eq!(Lz4BlockConfiguration::from_json(&serde_json::json!({}))?, Lz4BlockConfiguration::default());
/// assert!(Lz4BlockConfiguration::from_json(&serde_json::json!({"level": 9})).is_err());
/// # Ok::<(), lz4_block_codec::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Lz4BlockConfiguration {
    /// `LZ4_compress_fast` with this acceleration (1..=65537; 1 = `LZ4_compress_default`).
    Fast {
        /// Higher is faster and compresses less.
        acceleration: u32,
    },
    /// `LZ4_compress_HC` at this level (1..=12).
    Hc {
        /// Higher compresses more, slower.
        level: u32,
    },
}

impl Default for Lz4BlockConfiguration {
    /// `{"mode": "fast", "acceleration": 1}`: what WKW's LZ4 block type writes.
    fn default() -> Self {
        Self::Fast { acceleration: 1 }
    }
}

fn bad(msg: impl Into<String>) -> Error {
    Error::Configuration(msg.into())
}

fn whole(map: &Map<String, Value>, key: &str, lo: u32, hi: u32) -> Result<Option<u32>> {
    let Some(v) = map.get(key) else {
        return Ok(None);
    };
    let n = v
        .as_u64()
        .and_then(|n| u32::try_from(n).ok())
        .filter(|n| (lo..=hi).contains(n))
        .ok_or_else(|| {
            bad(format!(
                "`{key}` must be an integer in {lo}..={hi}, not {v}"
            ))
        })?;
    Ok(Some(n))
}

impl Lz4BlockConfiguration {
    /// Parses the `configuration` object of a codec entry (strictly: unknown keys, a key of the
    /// other mode and values out of range are errors).
    ///
    /// # Errors
    /// [`Error::Configuration`] naming the problem.
    pub fn from_json(config: &Value) -> Result<Self> {
        let map = config
            .as_object()
            .ok_or_else(|| bad(format!("must be a JSON object, not {config}")))?;
        for key in map.keys() {
            if !matches!(key.as_str(), "mode" | "acceleration" | "level") {
                return Err(bad(format!("unknown key `{key}`")));
            }
        }
        let mode = match map.get("mode") {
            None => "fast",
            Some(Value::String(s)) => s.as_str(),
            Some(v) => return Err(bad(format!("`mode` must be \"fast\" or \"hc\", not {v}"))),
        };
        match mode {
            "fast" => {
                if map.contains_key("level") {
                    return Err(bad("`level` belongs to mode \"hc\""));
                }
                let acceleration = whole(map, "acceleration", 1, ACCELERATION_MAX)?.unwrap_or(1);
                Ok(Self::Fast { acceleration })
            }
            "hc" => {
                if map.contains_key("acceleration") {
                    return Err(bad("`acceleration` belongs to mode \"fast\""));
                }
                let level = whole(map, "level", 1, HC_LEVEL_MAX)?
                    .ok_or_else(|| bad("mode \"hc\" needs a `level` (1..=12)"))?;
                Ok(Self::Hc { level })
            }
            other => Err(bad(format!(
                "`mode` must be \"fast\" or \"hc\", not \"{other}\""
            ))),
        }
    }

    /// Parses a whole codec entry `{"name": "lz4-block", "configuration": {…}}` (the
    /// configuration may be absent: the defaults).
    ///
    /// # Errors
    /// [`Error::Configuration`] for another name or a bad configuration.
    pub fn from_entry(entry: &Value) -> Result<Self> {
        let name = entry.get("name").and_then(Value::as_str);
        if name != Some(NAME) {
            return Err(bad(format!("codec entry names {name:?}, not \"{NAME}\"")));
        }
        match entry.get("configuration") {
            None => Ok(Self::default()),
            Some(c) => Self::from_json(c),
        }
    }

    /// The `configuration` object (every key written).
    #[must_use]
    pub fn to_json(&self) -> Value {
        match *self {
            Self::Fast { acceleration } => json!({"mode": "fast", "acceleration": acceleration}),
            Self::Hc { level } => json!({"mode": "hc", "level": level}),
        }
    }

    /// The codec entry `{"name": "lz4-block", "configuration": {…}}`.
    #[must_use]
    pub fn to_entry(&self) -> Value {
        json!({"name": NAME, "configuration": self.to_json()})
    }
}
