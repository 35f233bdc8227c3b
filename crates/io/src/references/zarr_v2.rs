//! Zarr v2 metadata (`.zarray`, `.zattrs`, `.zgroup`) for the Zarr v3 nodes a reference set
//! declares, for reference formats that describe Zarr v2 hierarchies (kerchunk Parquet).
//!
//! Only what the virtualizers of this workspace declare translates; anything else is
//! [`Error::Unsupported`], naming what:
//! - codecs: an optional `transpose` reversing every axis (v2 `"order": "F"`), then `bytes`
//!   (its `endian` gives the v2 dtype's byte order) and at most one `lz4-block` (the v2
//!   `compressor`, with the chunk's decoded `size`, which the numcodecs codec needs), or the
//!   array→bytes `b2nd` codec alone (the v2 `compressor`, with the chunk shape and dtype);
//! - data types: `bool`, `int8`…`int64`, `uint8`…`uint64`, `float16`…`float64`, `complex64`,
//!   `complex128`;
//! - a regular chunk grid, and fill values as Zarr v2 writes them (numbers, `"NaN"`,
//!   `"Infinity"`, `"-Infinity"`, booleans; complex numbers as `[real, imaginary]`).
//!
//! Zarr v2 metadata: <https://zarr-specs.readthedocs.io/en/latest/v2/v2.0.html>.

use serde_json::{Map, Value, json};
use zarrs_metadata::v3::{ArrayMetadataV3, GroupMetadataV3};

use crate::error::{Error, Result};

/// One array's Zarr v2 metadata and its chunk grid.
#[derive(Debug)]
pub(crate) struct V2Array {
    /// The `.zarray` document.
    pub zarray: Value,
    /// The `.zattrs` document: the v3 attributes, and the dimension names as
    /// `_ARRAY_DIMENSIONS` (the convention xarray reads).
    pub zattrs: Map<String, Value>,
    /// Chunks along each dimension.
    pub grid: Vec<u64>,
}

/// The `.zgroup` and `.zattrs` documents of a group.
pub(crate) fn v2_group(group: &GroupMetadataV3) -> (Value, Map<String, Value>) {
    (json!({"zarr_format": 2}), group.attributes.clone())
}

/// The Zarr v2 form of `array` (`name` is named in errors).
///
/// # Errors
/// [`Error::Unsupported`] for what has no Zarr v2 form here (see the module docs).
pub(crate) fn v2_array(name: &str, array: &ArrayMetadataV3) -> Result<V2Array> {
    let unsupported = |what: String| Error::Unsupported {
        name: name.to_owned(),
        what: format!("{what}, in Zarr v2 metadata (kerchunk Parquet references)"),
    };
    let doc = serde_json::to_value(array)
        .map_err(|e| Error::InvalidArgument(format!("{name}: array metadata: {e}")))?;
    let shape = array.shape.clone();
    if shape.is_empty() {
        return Err(unsupported("a 0-dimensional array".into()));
    }
    let grid_doc = &doc["chunk_grid"];
    let chunks: Vec<u64> = (grid_doc["name"] == "regular")
        .then(|| {
            grid_doc["configuration"]["chunk_shape"]
                .as_array()
                .and_then(|a| a.iter().map(Value::as_u64).collect::<Option<Vec<u64>>>())
        })
        .flatten()
        .filter(|c| c.len() == shape.len() && c.iter().all(|&n| n > 0))
        .ok_or_else(|| unsupported(format!("the chunk grid {grid_doc}")))?;
    let grid: Vec<u64> = shape
        .iter()
        .zip(&chunks)
        .map(|(&s, &c)| s.div_ceil(c))
        .collect();
    let data_type = doc["data_type"].as_str().unwrap_or_default();
    let (kind, item_size) = type_code(data_type)
        .ok_or_else(|| unsupported(format!("the data type {}", doc["data_type"])))?;
    let chunk_bytes = chunks
        .iter()
        .try_fold(item_size, |acc, &c| acc.checked_mul(c))
        .ok_or_else(|| unsupported(format!("chunks of shape {chunks:?}")))?;

    let codecs = doc["codecs"].as_array().cloned().unwrap_or_default();
    let mut codecs = codecs.iter().peekable();
    // A codec without configuration may be just its name.
    let name_of = |c: &Value| {
        c.as_str()
            .or_else(|| c["name"].as_str())
            .unwrap_or_default()
            .to_owned()
    };
    let config_of = |c: &Value| c["configuration"].as_object().cloned().unwrap_or_default();
    let mut order = "C";
    if let Some(c) = codecs.next_if(|c| name_of(c) == "transpose") {
        let reversed: Vec<Value> = (0..shape.len()).rev().map(|i| json!(i)).collect();
        if c["configuration"]["order"].as_array() != Some(&reversed) {
            return Err(unsupported(format!(
                "the codec {c} (only the reversal of every axis)"
            )));
        }
        order = "F";
    }
    let endian = |config: &Map<String, Value>| -> Result<char> {
        match (config.get("endian").and_then(Value::as_str), item_size) {
            (_, 1) => Ok('|'),
            (Some("little"), _) => Ok('<'),
            (Some("big"), _) => Ok('>'),
            _ => Err(unsupported(format!(
                "{data_type} without a byte order (`endian`)"
            ))),
        }
    };
    let array_to_bytes = codecs
        .next()
        .ok_or_else(|| unsupported("an array without an array→bytes codec".into()))?;
    let dtype;
    let compressor = match name_of(array_to_bytes).as_str() {
        "bytes" => {
            dtype = format!("{}{kind}{item_size}", endian(&config_of(array_to_bytes))?);
            match codecs.next() {
                None => Value::Null,
                Some(c) if name_of(c) == "lz4-block" => {
                    let mut config = config_of(c);
                    config.insert("id".into(), json!("lz4-block"));
                    config.insert("size".into(), json!(chunk_bytes));
                    Value::Object(config)
                }
                Some(c) => return Err(unsupported(format!("the codec {c} after `bytes`"))),
            }
        }
        "b2nd" if order == "C" => {
            let config = config_of(array_to_bytes);
            dtype = format!("{}{kind}{item_size}", endian(&config)?);
            let mut out = Map::new();
            out.insert("id".into(), json!("b2nd"));
            out.insert("chunkshape".into(), json!(chunks));
            out.insert("dtype".into(), json!(dtype));
            for key in ["blockshape", "cname", "clevel", "shuffle"] {
                if let Some(v) = config.get(key) {
                    out.insert(key.into(), v.clone());
                }
            }
            Value::Object(out)
        }
        _ => {
            return Err(unsupported(format!(
                "the codec {array_to_bytes}{}",
                if order == "F" {
                    " after `transpose`"
                } else {
                    ""
                }
            )));
        }
    };
    if let Some(c) = codecs.next() {
        return Err(unsupported(format!("a second compressor ({c})")));
    }
    let fill_value = v2_fill_value(&doc["fill_value"])
        .ok_or_else(|| unsupported(format!("the fill value {}", doc["fill_value"])))?;
    let zarray = json!({
        "zarr_format": 2,
        "shape": shape,
        "chunks": chunks,
        "dtype": dtype,
        "compressor": compressor,
        "fill_value": fill_value,
        "order": order,
        "filters": null,
        "dimension_separator": ".",
    });
    let mut zattrs = array.attributes.clone();
    if let Some(names) = doc["dimension_names"].as_array()
        && names.iter().all(Value::is_string)
    {
        zattrs.insert("_ARRAY_DIMENSIONS".into(), Value::Array(names.clone()));
    }
    Ok(V2Array {
        zarray,
        zattrs,
        grid,
    })
}

/// The v2 dtype kind and item size of a v3 data type name.
fn type_code(name: &str) -> Option<(char, u64)> {
    Some(match name {
        "bool" => ('b', 1),
        "int8" => ('i', 1),
        "int16" => ('i', 2),
        "int32" => ('i', 4),
        "int64" => ('i', 8),
        "uint8" => ('u', 1),
        "uint16" => ('u', 2),
        "uint32" => ('u', 4),
        "uint64" => ('u', 8),
        "float16" => ('f', 2),
        "float32" => ('f', 4),
        "float64" => ('f', 8),
        "complex64" => ('c', 8),
        "complex128" => ('c', 16),
        _ => return None,
    })
}

/// A v3 fill value as Zarr v2 writes it; `None` for forms v2 has not (hexadecimal floats).
fn v2_fill_value(v: &Value) -> Option<Value> {
    let scalar = |v: &Value| match v {
        Value::Number(_) | Value::Bool(_) => true,
        Value::String(s) => matches!(s.as_str(), "NaN" | "Infinity" | "-Infinity"),
        _ => false,
    };
    match v {
        Value::Array(parts) if parts.len() == 2 && parts.iter().all(scalar) => Some(v.clone()),
        _ if scalar(v) => Some(v.clone()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn array(doc: Value) -> ArrayMetadataV3 {
        serde_json::from_value(doc).expect("array metadata")
    }

    fn wkw_lz4() -> Value {
        json!({"zarr_format": 3, "node_type": "array", "shape": [3, 64, 32, 32],
            "data_type": "uint16",
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [3, 8, 8, 8]}},
            "chunk_key_encoding": {"name": "default"}, "fill_value": 0,
            "codecs": [{"name": "transpose", "configuration": {"order": [3, 2, 1, 0]}},
                {"name": "bytes", "configuration": {"endian": "little"}},
                {"name": "lz4-block", "configuration": {"mode": "fast", "acceleration": 1}}],
            "dimension_names": ["c", "x", "y", "z"]})
    }

    #[test]
    fn a_wkw_array_is_fortran_order_with_the_lz4_block_compressor() {
        let v2 = v2_array("a", &array(wkw_lz4())).expect("v2");
        assert_eq!(
            v2.zarray,
            json!({"zarr_format": 2, "shape": [3, 64, 32, 32], "chunks": [3, 8, 8, 8],
                "dtype": "<u2", "fill_value": 0, "order": "F", "filters": null,
                "dimension_separator": ".",
                "compressor": {"id": "lz4-block", "mode": "fast", "acceleration": 1,
                    "size": 3 * 8 * 8 * 8 * 2}})
        );
        assert_eq!(v2.zattrs["_ARRAY_DIMENSIONS"], json!(["c", "x", "y", "z"]));
        assert_eq!(v2.grid, [1, 8, 4, 4]);
    }

    #[test]
    fn a_b2nd_array_names_its_chunk_shape_and_dtype() {
        let doc = json!({"zarr_format": 3, "node_type": "array", "shape": [11, 10],
            "data_type": "float64",
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [6, 4]}},
            "chunk_key_encoding": {"name": "default"}, "fill_value": "NaN",
            "codecs": [{"name": "b2nd", "configuration": {"blockshape": [3, 2],
                "endian": "big", "cname": "blosclz", "clevel": 5, "shuffle": "shuffle"}}]});
        let v2 = v2_array("b", &array(doc)).expect("v2");
        assert_eq!(v2.zarray["dtype"], ">f8");
        assert_eq!(v2.zarray["order"], "C");
        assert_eq!(v2.zarray["fill_value"], "NaN");
        assert_eq!(
            v2.zarray["compressor"],
            json!({"id": "b2nd", "chunkshape": [6, 4], "dtype": ">f8", "blockshape": [3, 2],
                "cname": "blosclz", "clevel": 5, "shuffle": "shuffle"})
        );
        assert_eq!(v2.grid, [2, 3]);
        assert!(!v2.zattrs.contains_key("_ARRAY_DIMENSIONS"));
    }

    #[test]
    fn what_v2_cannot_say_is_refused_by_name() {
        let mut doc = wkw_lz4();
        doc["codecs"][0]["configuration"]["order"] = json!([0, 1, 3, 2]);
        let e = v2_array("t", &array(doc)).expect_err("partial transpose");
        assert!(e.to_string().contains("transpose"), "{e}");

        let mut doc = wkw_lz4();
        doc["codecs"]
            .as_array_mut()
            .expect("codecs")
            .push(json!({"name": "crc32c"}));
        let e = v2_array("t", &array(doc)).expect_err("two compressors");
        assert!(e.to_string().contains("crc32c"), "{e}");

        let mut doc = wkw_lz4();
        doc["data_type"] = json!("string");
        let e = v2_array("t", &array(doc)).expect_err("string");
        assert!(e.to_string().contains("data type"), "{e}");

        let mut doc = wkw_lz4();
        doc["fill_value"] = json!("0x7fc00000");
        doc["data_type"] = json!("float32");
        let e = v2_array("t", &array(doc)).expect_err("hex fill");
        assert!(e.to_string().contains("fill value"), "{e}");

        let mut doc = wkw_lz4();
        doc["codecs"][1]["configuration"] = json!({});
        let e = v2_array("t", &array(doc)).expect_err("no endian");
        assert!(e.to_string().contains("endian"), "{e}");
    }
}
