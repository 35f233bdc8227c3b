//! N5 block headers and the `zarr.json` that reads a *padded* N5 dataset through Zarr v3.
//!
//! A default-mode N5 block starts with mode (u16 BE, 0), ndim (u16 BE) and one u32 BE per
//! dimension (N5 order, dimension 0 fastest): 4 + 4·ndim bytes (8 + 4·ndim in varlength mode),
//! as the N5 file-system specification says
//! (<https://github.com/saalfeldlab/n5#file-system-specification>).
//! Payloads are big-endian and column-major, so the Zarr codec chain needs a reversing
//! `transpose` before `bytes` (the proposal's Example 3 forgets it).
//!
//! **Only padded N5 works.** tensorstore and zarr-python 2 write full-size edge blocks, which
//! an `offset` codec reads exactly. Java N5 and z5py write *truncated* edge blocks (header
//! dims smaller than blockSize, payload cropped); no bytes→bytes codec can read those, because
//! the payload holds fewer elements than the Zarr chunk and the codec sees neither the chunk's
//! grid position nor the array. Such datasets need an array→bytes `n5_default` codec (for
//! example the `zarrs_n5` crate). [`check_padded_block`] tells the two apart.

use base64::Engine as _;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::config::OffsetConfiguration;
use crate::error::{Error, Result};
use crate::types::N5Mode;

/// A parsed N5 block header.
///
/// With serde it is `{"mode": "default", "dims": [64, 64]}`, plus `"num_elements": n` in
/// varlength mode. Deserialising checks what [`parse`](Self::parse) checks: 1 to 65535 dims,
/// and `num_elements` present exactly in varlength mode.
///
/// ```
/// use offset_codec::{N5BlockHeader, N5Mode};
/// let header = N5BlockHeader::parse(&[0, 0, 0, 2, 0, 0, 0, 64, 0, 0, 0, 6])?;
/// assert_eq!((header.mode, header.dims.as_slice()), (N5Mode::Default, &[64, 6][..]));
/// let json = serde_json::to_value(&header)?;
/// assert_eq!(json, serde_json::json!({"mode": "default", "dims": [64, 6]}));
/// assert_eq!(serde_json::from_value::<N5BlockHeader>(json)?, header);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "N5BlockHeaderFields", deny_unknown_fields)]
pub struct N5BlockHeader {
    /// Block mode.
    pub mode: N5Mode,
    /// Block dims in N5 order (dimension 0 fastest).
    pub dims: Vec<u32>,
    /// Number of elements (varlength mode only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub num_elements: Option<u32>,
}

/// The serde shape of [`N5BlockHeader`], checked on the way in.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct N5BlockHeaderFields {
    mode: N5Mode,
    dims: Vec<u32>,
    #[serde(default)]
    num_elements: Option<u32>,
}

impl TryFrom<N5BlockHeaderFields> for N5BlockHeader {
    type Error = Error;

    fn try_from(f: N5BlockHeaderFields) -> Result<Self> {
        n5_header_len(f.dims.len(), f.mode == N5Mode::Varlength)?;
        if (f.mode == N5Mode::Varlength) != f.num_elements.is_some() {
            return Err(Error::N5NumElements { mode: f.mode });
        }
        Ok(Self {
            mode: f.mode,
            dims: f.dims,
            num_elements: f.num_elements,
        })
    }
}

impl N5BlockHeader {
    /// Parses the header at the start of `block`. Allocates at most what `block` justifies.
    ///
    /// # Errors
    /// [`Error::N5HeaderTruncated`] if `block` is shorter than the header,
    /// [`Error::N5UnsupportedMode`] for modes other than 0 and 1,
    /// [`Error::N5DimensionCount`] for ndim 0.
    pub fn parse(block: &[u8]) -> Result<Self> {
        let avail = u64::try_from(block.len()).unwrap_or(u64::MAX);
        let be16 = |at: usize| {
            block
                .get(at..at + 2)
                .and_then(|b| b.try_into().ok())
                .map(u16::from_be_bytes)
        };
        let be32 = |at: usize| {
            block
                .get(at..at.checked_add(4)?)
                .and_then(|b| b.try_into().ok())
                .map(u32::from_be_bytes)
        };
        let (Some(mode), Some(ndim)) = (be16(0), be16(2)) else {
            return Err(Error::N5HeaderTruncated {
                needed: 4,
                available: avail,
            });
        };
        let mode = match mode {
            0 => N5Mode::Default,
            1 => N5Mode::Varlength,
            other => return Err(Error::N5UnsupportedMode { mode: other }),
        };
        if ndim == 0 {
            return Err(Error::N5DimensionCount { ndim: 0 });
        }
        let ndim = usize::from(ndim);
        let len = n5_header_len(ndim, mode == N5Mode::Varlength)?;
        if block.len() < len {
            return Err(Error::N5HeaderTruncated {
                needed: u64::try_from(len).unwrap_or(u64::MAX),
                available: avail,
            });
        }
        let dims = (0..ndim)
            .map(|i| be32(4 + 4 * i))
            .collect::<Option<Vec<u32>>>()
            .ok_or(Error::N5HeaderTruncated {
                needed: u64::try_from(len).unwrap_or(u64::MAX),
                available: avail,
            })?;
        let num_elements = match mode {
            N5Mode::Default => None,
            N5Mode::Varlength => be32(4 + 4 * ndim),
        };
        Ok(Self {
            mode,
            dims,
            num_elements,
        })
    }

    /// Header length in bytes.
    #[must_use]
    pub fn len(&self) -> usize {
        4 + 4 * self.dims.len() + if self.mode == N5Mode::Varlength { 4 } else { 0 }
    }

    /// Always false: a header has at least mode and ndim.
    #[must_use]
    pub const fn is_empty(&self) -> bool {
        false
    }
}

/// Header length of an N5 block with `ndim` dimensions: 4 + 4·ndim, plus 4 in varlength mode.
///
/// # Errors
/// [`Error::N5DimensionCount`] unless 1 ≤ ndim ≤ 65535.
pub fn n5_header_len(ndim: usize, varlength: bool) -> Result<usize> {
    if ndim == 0 || ndim > usize::from(u16::MAX) {
        return Err(Error::N5DimensionCount { ndim });
    }
    // ndim ≤ 65535, so this cannot overflow even on 16-bit targets' u32 math; use checked ops.
    4usize
        .checked_add(ndim.checked_mul(4).ok_or(Error::Overflow {
            what: "n5 header length",
        })?)
        .and_then(|l| l.checked_add(if varlength { 4 } else { 0 }))
        .ok_or(Error::Overflow {
            what: "n5 header length",
        })
}

/// The default-mode header of a block with `dims` (N5 order): mode 0, ndim, dims, big-endian.
///
/// `n5_default_header(&[64, 64])` is `00 00 00 02 00 00 00 40 00 00 00 40`, the proposal's
/// `AAAAAgAAAEAAAABA`.
///
/// # Errors
/// [`Error::N5DimensionCount`] unless 1 ≤ `dims.len()` ≤ 65535.
pub fn n5_default_header(dims: &[u32]) -> Result<Vec<u8>> {
    let len = n5_header_len(dims.len(), false)?;
    let ndim =
        u16::try_from(dims.len()).map_err(|_| Error::N5DimensionCount { ndim: dims.len() })?;
    let mut out = Vec::with_capacity(len);
    out.extend_from_slice(&0u16.to_be_bytes());
    out.extend_from_slice(&ndim.to_be_bytes());
    for d in dims {
        out.extend_from_slice(&d.to_be_bytes());
    }
    Ok(out)
}

/// Checks that an N5 block can be read through an `offset` codec with the static header of
/// `block_size`: default mode and header dims equal to `block_size` (a padded block).
///
/// # Errors
/// [`Error::N5TruncatedBlock`] for a truncated edge block (Java N5, z5py),
/// [`Error::N5Varlength`] for varlength blocks, and the errors of [`N5BlockHeader::parse`].
pub fn check_padded_block(block: &[u8], block_size: &[u32]) -> Result<N5BlockHeader> {
    let header = N5BlockHeader::parse(block)?;
    if header.mode == N5Mode::Varlength {
        return Err(Error::N5Varlength);
    }
    if header.dims != block_size {
        return Err(Error::N5TruncatedBlock {
            header: header.dims,
            block_size: block_size.to_vec(),
        });
    }
    Ok(header)
}

/// The N5 data types (the same names as Zarr v3's).
const N5_TYPES: &[&str] = &[
    "uint8", "uint16", "uint32", "uint64", "int8", "int16", "int32", "int64", "float32", "float64",
];

/// Description of a padded N5 dataset to be read (or written) as a Zarr v3 array.
#[derive(Debug, Clone, PartialEq)]
pub struct N5ZarrJson {
    /// N5 `dimensions` (N5 order); becomes the Zarr `shape` unchanged.
    pub dimensions: Vec<u64>,
    /// N5 `blockSize`; becomes the Zarr `chunk_shape` unchanged.
    pub block_size: Vec<u32>,
    /// N5 `dataType` (`uint16`, `float32`, …).
    pub data_type: String,
    /// The Zarr v3 codec entry matching the N5 compression, e.g.
    /// `{"name": "gzip", "configuration": {"level": 5}}`; `None` for raw.
    pub compressor: Option<Value>,
}

impl N5ZarrJson {
    /// The `offset` configuration for this dataset's blocks: 4 + 4·ndim bytes with the
    /// default-mode header of a full block.
    ///
    /// # Errors
    /// As [`n5_default_header`].
    pub fn offset_configuration(&self) -> Result<OffsetConfiguration> {
        Ok(OffsetConfiguration::from_prefix(&n5_default_header(
            &self.block_size,
        )?))
    }

    /// The `zarr.json` document: shape = `dimensions`, chunk shape = `blockSize`, `v2` chunk
    /// keys with `/`, codecs `transpose` (reversed order) → `bytes` (big) → compressor →
    /// `offset`, fill value 0.
    ///
    /// # Errors
    /// [`Error::N5RankMismatch`], [`Error::N5ZeroBlockSize`], [`Error::N5DataType`], and the
    /// errors of [`n5_default_header`].
    pub fn to_json(&self) -> Result<Value> {
        if self.dimensions.len() != self.block_size.len() {
            return Err(Error::N5RankMismatch {
                dimensions: self.dimensions.len(),
                block_size: self.block_size.len(),
            });
        }
        if let Some(index) = self.block_size.iter().position(|&b| b == 0) {
            return Err(Error::N5ZeroBlockSize { index });
        }
        if !N5_TYPES.contains(&self.data_type.as_str()) {
            return Err(Error::N5DataType {
                name: self.data_type.clone(),
            });
        }
        let header = n5_default_header(&self.block_size)?;
        let order: Vec<usize> = (0..self.block_size.len()).rev().collect();
        let mut codecs = vec![
            json!({"name": "transpose", "configuration": {"order": order}}),
            json!({"name": "bytes", "configuration": {"endian": "big"}}),
        ];
        if let Some(c) = &self.compressor {
            codecs.push(c.clone());
        }
        codecs.push(json!({
            "name": "offset",
            "configuration": {
                "offset": header.len(),
                "prefix": base64::engine::general_purpose::STANDARD.encode(&header),
            }
        }));
        Ok(json!({
            "zarr_format": 3,
            "node_type": "array",
            "shape": self.dimensions,
            "data_type": self.data_type,
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": self.block_size}},
            "chunk_key_encoding": {"name": "v2", "configuration": {"separator": "/"}},
            "fill_value": 0,
            "codecs": codecs,
            "attributes": {},
        }))
    }
}
