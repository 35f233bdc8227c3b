//! Whole webKNOSSOS datasets (a root with `datasource-properties.json` and one directory per
//! layer and mag) and what a path holds.

use std::path::Path;

use serde_json::{Map, Value, json};
use zarrs_metadata::v3::GroupMetadataV3;

use crate::error::{Error, Result};
use crate::mag;
use crate::meta::ZARR_JSON;
use crate::options::{ConvertOptions, Format, ZarrCodec};
use scifmt_io::Location;

/// Name of a webKNOSSOS dataset's layer list.
pub const PROPERTIES_JSON: &str = "datasource-properties.json";

/// What a path holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Source {
    /// A webKNOSSOS dataset (`datasource-properties.json`) whose layers are all in this format.
    Dataset(Format),
    /// A WKW mag directory (`header.wkw`).
    WkwMag,
    /// A Zarr v3 array (`zarr.json` of an array).
    Zarr3Array,
}

impl Source {
    /// What the source is, in words (`a WKW mag (header.wkw)`).
    #[must_use]
    pub fn describe(self) -> &'static str {
        match self {
            Self::Dataset(Format::Wkw) => "a webKNOSSOS dataset of WKW layers",
            Self::Dataset(Format::Zarr3) => "a webKNOSSOS dataset of Zarr v3 layers",
            Self::WkwMag => "a WKW mag (header.wkw)",
            Self::Zarr3Array => "a Zarr v3 array (zarr.json)",
        }
    }
}

/// Says what `path` (a local path or a [`Location`] on an object store) holds.
///
/// # Errors
/// [`Error::Io`] / [`Error::Remote`] / [`Error::Metadata`] if its metadata cannot be read;
/// [`Error::Unsupported`] if it is none of the kinds of [`Source`] (or a dataset mixing data
/// formats).
pub fn detect(path: impl Into<Location>) -> Result<Source> {
    let path: Location = path.into();
    let props = path.join(PROPERTIES_JSON);
    if let Some(doc) = read_json_opt(&props)? {
        let name = props.name();
        let mut formats = layers(&doc, &name)?
            .iter()
            .map(|l| l.get("dataFormat").and_then(Value::as_str).unwrap_or(""))
            .collect::<Vec<_>>();
        formats.dedup();
        return match formats[..] {
            ["wkw"] => Ok(Source::Dataset(Format::Wkw)),
            ["zarr3"] => Ok(Source::Dataset(Format::Zarr3)),
            _ => Err(Error::unsupported(
                &name,
                format!("layers in data formats {formats:?} (need all wkw or all zarr3)"),
            )),
        };
    }
    if path.join(wkw::HEADER_FILE_NAME).size()?.is_some() {
        return Ok(Source::WkwMag);
    }
    let zarr = path.join(ZARR_JSON);
    if let Some(doc) = read_json_opt(&zarr)? {
        if doc.get("node_type").and_then(Value::as_str) == Some("array") {
            return Ok(Source::Zarr3Array);
        }
        return Err(Error::unsupported(
            zarr.name(),
            "a Zarr group without datasource-properties.json",
        ));
    }
    Err(Error::unsupported(
        path.name(),
        format!(
            "neither a webKNOSSOS dataset ({PROPERTIES_JSON}), a WKW mag (header.wkw) nor a Zarr array (zarr.json)"
        ),
    ))
}

/// The settings that decide a conversion's output bytes (recorded for resuming).
pub(crate) fn settings(to: Format, options: &ConvertOptions) -> Value {
    let codec = match options.codec {
        ZarrCodec::Auto => "auto".to_owned(),
        ZarrCodec::Zstd { level } => format!("zstd:{level}"),
        ZarrCodec::None => "none".to_owned(),
        ZarrCodec::Blosc {
            cname,
            clevel,
            shuffle,
            typesize,
            blocksize,
        } => format!(
            "blosc:{cname}:{clevel}:{shuffle}:{}:{blocksize}",
            typesize.map_or_else(|| "auto".to_owned(), |t| t.to_string()),
        ),
    };
    match to {
        Format::Zarr3 => json!({"to": "zarr3", "codec": codec}),
        Format::Wkw => {
            json!({"to": "wkw", "block_type": format!("{:?}", options.block_type).to_lowercase()})
        }
    }
}

/// The JSON document at `at`.
pub(crate) fn read_json(at: &Location) -> Result<Value> {
    read_json_opt(at)?.ok_or_else(|| Error::metadata(at.name(), "not found"))
}

/// The JSON document at `at`, if there is one.
fn read_json_opt(at: &Location) -> Result<Option<Value>> {
    let Some(bytes) = at.read_all()? else {
        return Ok(None);
    };
    serde_json::from_slice(&bytes)
        .map(Some)
        .map_err(|e| Error::metadata(at.name(), e.to_string()))
}

fn layers<'a>(doc: &'a Value, path: &Path) -> Result<&'a Vec<Value>> {
    doc.get("dataLayers")
        .and_then(Value::as_array)
        .ok_or_else(|| Error::metadata(path, "dataLayers is not a list"))
}

/// One mag of a webKNOSSOS dataset, as its `datasource-properties.json` lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct DatasetMag {
    /// The layer's name.
    pub layer: String,
    /// The layer's `dataFormat` (`wkw`, `zarr3`, …).
    pub data_format: String,
    /// The mag (`[x, y, z]` downsampling factors).
    pub mag: [u64; 3],
    /// The mag's directory relative to the dataset root (`/` separators, e.g. `color/2-2-1`).
    pub path: String,
}

/// The layers and mags of the webKNOSSOS dataset at `root` (from its
/// `datasource-properties.json`), in the order the document lists them: what a WKW or Zarr
/// tool is given one at a time.
///
/// # Errors
/// [`Error::Io`] / [`Error::Remote`] if the document cannot be read, [`Error::Metadata`] if it
/// is not JSON or lacks the layers, their names or their mags.
pub fn dataset_mags(root: impl Into<Location>) -> Result<Vec<DatasetMag>> {
    let root: Location = root.into();
    let props_at = root.join(PROPERTIES_JSON);
    let props_path = props_at.name();
    let doc = read_json(&props_at)?;
    let mut out = Vec::new();
    for layer in layers(&doc, &props_path)? {
        let name = layer_name(layer, &props_path)?;
        let data_format = layer
            .get("dataFormat")
            .and_then(Value::as_str)
            .unwrap_or_default();
        for entry in mags(&root, layer, &props_path)? {
            out.push(DatasetMag {
                layer: name.to_owned(),
                data_format: data_format.to_owned(),
                mag: entry.mag,
                path: entry.key,
            });
        }
    }
    Ok(out)
}

/// One mag of a layer as the properties describe it.
#[derive(Debug, Clone)]
pub(crate) struct MagEntry {
    pub(crate) mag: [u64; 3],
    /// The mag's directory relative to the dataset root (`/` separators).
    pub(crate) key: String,
    /// The mag's directory.
    pub(crate) dir: Location,
}

/// A mag's directory name, as webknossos-libs writes it: `2` for isotropic mags, `2-2-1`
/// otherwise.
pub(crate) fn mag_name(mag: [u64; 3]) -> String {
    if mag[0] == mag[1] && mag[1] == mag[2] {
        mag[0].to_string()
    } else {
        format!("{}-{}-{}", mag[0], mag[1], mag[2])
    }
}

fn mag_vector(v: Option<&Value>, path: &Path) -> Result<[u64; 3]> {
    match v {
        Some(Value::Number(n)) => n.as_u64().filter(|&m| m > 0).map(|m| [m; 3]),
        Some(Value::Array(a)) if a.len() == 3 => {
            let m: Option<Vec<u64>> = a.iter().map(|x| x.as_u64().filter(|&m| m > 0)).collect();
            m.map(|m| [m[0], m[1], m[2]])
        }
        _ => None,
    }
    .ok_or_else(|| {
        Error::metadata(
            path,
            format!(
                "mag {} is not [x, y, z] of positive integers",
                v.unwrap_or(&Value::Null)
            ),
        )
    })
}

/// The mags of `layer` with their directories below `root`.
pub(crate) fn mags(root: &Location, layer: &Value, path: &Path) -> Result<Vec<MagEntry>> {
    let name = layer_name(layer, path)?;
    let mut out = Vec::new();
    if let Some(list) = layer.get("mags").and_then(Value::as_array) {
        for m in list {
            let mag = mag_vector(m.get("mag"), path)?;
            let key = match m.get("path").and_then(Value::as_str) {
                Some(p) if p.contains("://") => {
                    return Err(Error::unsupported(path, format!("mag path {p} (a URL)")));
                }
                Some(p) => p.strip_prefix("./").unwrap_or(p).to_owned(),
                None => format!("{name}/{}", mag_name(mag)),
            };
            let dir = root.join(&key);
            out.push(MagEntry { mag, key, dir });
        }
    } else if let Some(list) = layer.get("wkwResolutions").and_then(Value::as_array) {
        // The older WKW properties: `{"resolution": [x, y, z] | n, "cubeLength": n}`.
        for m in list {
            let mag = mag_vector(m.get("resolution"), path)?;
            let named = format!("{name}/{}", mag_name(mag));
            let exists = root
                .join(&named)
                .join(wkw::HEADER_FILE_NAME)
                .size()?
                .is_some();
            let key = if exists || mag[0] != mag[1] || mag[1] != mag[2] {
                named
            } else {
                format!("{name}/{}-{}-{}", mag[0], mag[1], mag[2])
            };
            let dir = root.join(&key);
            out.push(MagEntry { mag, key, dir });
        }
    } else {
        return Err(Error::metadata(path, format!("layer {name} has no mags")));
    }
    Ok(out)
}

pub(crate) fn layer_name<'a>(layer: &'a Value, path: &Path) -> Result<&'a str> {
    let name = layer
        .get("name")
        .and_then(Value::as_str)
        .ok_or_else(|| Error::metadata(path, "a layer has no name"))?;
    if name.is_empty() || name.contains(['/', '\\']) || name == "." || name == ".." {
        return Err(Error::metadata(
            path,
            format!("layer name {name:?} is not a directory name"),
        ));
    }
    Ok(name)
}

/// The end of the layer's bounding box (`topLeft + [width, height, depth]`) in mag-1 voxels.
fn bbox_end(layer: &Value, path: &Path) -> Result<[u64; 3]> {
    let bb = layer
        .get("boundingBox")
        .ok_or_else(|| Error::metadata(path, "a layer has no boundingBox"))?;
    let top = bb
        .get("topLeft")
        .and_then(Value::as_array)
        .filter(|a| a.len() == 3)
        .ok_or_else(|| Error::metadata(path, "boundingBox.topLeft is not [x, y, z]"))?;
    let mut end = [0u64; 3];
    for (d, key) in ["width", "height", "depth"].into_iter().enumerate() {
        let t = top[d].as_u64();
        let s = bb.get(key).and_then(Value::as_u64);
        end[d] = t
            .zip(s)
            .and_then(|(t, s)| t.checked_add(s))
            .ok_or_else(|| {
                Error::metadata(
                    path,
                    format!("boundingBox {key} / topLeft not non-negative integers"),
                )
            })?;
    }
    Ok(end)
}

/// Voxel size and unit from `scale` (`{"factor": [...], "unit": ...}` or a bare list).
fn voxel_size(doc: &Value) -> ([f64; 3], String) {
    let (factor, unit) = match doc.get("scale") {
        Some(Value::Array(a)) => (Some(a), None),
        Some(s) => (
            s.get("factor").and_then(Value::as_array),
            s.get("unit").and_then(Value::as_str),
        ),
        None => (None, None),
    };
    let mut v = [1.0; 3];
    if let Some(f) = factor.filter(|f| f.len() == 3) {
        for d in 0..3 {
            v[d] = f[d].as_f64().unwrap_or(1.0);
        }
    }
    (v, unit.unwrap_or("nanometer").to_owned())
}

/// The group `zarr.json` of a layer with its OME-NGFF 0.5 multiscales, as webknossos-libs
/// writes it.
fn layer_group(mags: &[[u64; 3]], voxel: [f64; 3], unit: &str) -> Result<Value> {
    let mut axes = vec![json!({"name": "c", "type": "channel"})];
    for a in ["x", "y", "z"] {
        axes.push(json!({"name": a, "type": "space", "unit": unit}));
    }
    let datasets: Vec<Value> = mags
        .iter()
        .map(|m| {
            json!({
                "path": mag_name(*m),
                "coordinateTransformations": [{
                    "type": "scale",
                    "scale": [1.0, voxel[0] * m[0] as f64, voxel[1] * m[1] as f64, voxel[2] * m[2] as f64]
                }]
            })
        })
        .collect();
    let mut attributes = Map::new();
    attributes.insert(
        "ome".into(),
        json!({"version": "0.5", "multiscales": [{"axes": axes, "datasets": datasets}]}),
    );
    group_json(GroupMetadataV3::new().with_attributes(attributes))
}

/// The `zarr.json` of a group.
fn group_json(group: GroupMetadataV3) -> Result<Value> {
    serde_json::to_value(group).map_err(|e| Error::Internal(e.to_string()))
}

/// One mag of a dataset conversion: its directory below the source root, below the target
/// root, and (to Zarr) the layer's bounding-box end in this mag.
pub(crate) struct DatasetArray {
    pub(crate) src: String,
    pub(crate) dst: String,
    pub(crate) extent: Option<[u64; 3]>,
}

/// The mags of the dataset at `src`, each converted into `<layer>/<mag>` of the target.
pub(crate) fn dataset_arrays(src: &Location, to: Format) -> Result<Vec<DatasetArray>> {
    let props_at = src.join(PROPERTIES_JSON);
    let props_path = props_at.name();
    let doc = read_json(&props_at)?;
    let mut out = Vec::new();
    for layer in layers(&doc, &props_path)? {
        let name = layer_name(layer, &props_path)?;
        let end = bbox_end(layer, &props_path)?;
        for entry in mags(src, layer, &props_path)? {
            let extent =
                (to == Format::Zarr3).then(|| [0, 1, 2].map(|d| end[d].div_ceil(entry.mag[d])));
            out.push(DatasetArray {
                src: entry.key,
                dst: format!("{name}/{}", mag_name(entry.mag)),
                extent,
            });
        }
    }
    Ok(out)
}

/// Writes the dataset documents of the converted dataset at `dst` (after every mag's
/// metadata): layer groups and root group (Zarr), then `datasource-properties.json`, whose
/// `id.name` becomes `name` (the target's directory name: `dst` may be the sibling an
/// overwrite builds it in).
pub(crate) fn finish_dataset(
    src: &Location,
    dst: &Location,
    name: Option<String>,
    to: Format,
    options: &ConvertOptions,
) -> Result<()> {
    let props_at = src.join(PROPERTIES_JSON);
    let props_path = props_at.name();
    let mut doc = read_json(&props_at)?;
    let (voxel, unit) = voxel_size(&doc);
    let mut new_layers = Vec::new();
    for layer in layers(&doc, &props_path)? {
        let name = layer_name(layer, &props_path)?.to_owned();
        let entries = mags(src, layer, &props_path)?;
        let mut new_mags = Vec::new();
        for entry in &entries {
            let rel = format!("./{name}/{}", mag_name(entry.mag));
            let mut m = Map::new();
            m.insert("mag".into(), json!(entry.mag));
            m.insert("path".into(), json!(rel));
            if to == Format::Wkw {
                let layout = mag::read_layout(&entry.dir)?;
                m.insert("cubeLength".into(), json!(layout.shard_len()));
            }
            m.insert("axisOrder".into(), json!({"c": 0, "x": 1, "y": 2, "z": 3}));
            new_mags.push(Value::Object(m));
        }
        if to == Format::Zarr3 {
            let list: Vec<[u64; 3]> = entries.iter().map(|e| e.mag).collect();
            mag::write_json(
                &dst.join(&name).join(ZARR_JSON),
                &layer_group(&list, voxel, &unit)?,
                options.durability,
            )?;
        }
        let mut layer = layer.clone();
        if let Some(obj) = layer.as_object_mut() {
            obj.remove("wkwResolutions");
            obj.insert("dataFormat".into(), json!(to.name()));
            obj.insert("mags".into(), Value::Array(new_mags));
        }
        new_layers.push(layer);
    }
    if to == Format::Zarr3 {
        mag::write_json(
            &dst.join(ZARR_JSON),
            &group_json(GroupMetadataV3::new())?,
            options.durability,
        )?;
    }
    if let Some(obj) = doc.as_object_mut() {
        obj.insert("dataLayers".into(), Value::Array(new_layers));
        if let (Some(id), Some(name)) = (obj.get_mut("id").and_then(Value::as_object_mut), name) {
            id.insert("name".into(), json!(name));
        }
    }
    let text = serde_json::to_vec_pretty(&doc).map_err(|e| Error::Internal(e.to_string()))?;
    Ok(dst
        .join(PROPERTIES_JSON)
        .write_small(&text, options.durability)?)
}

/// The group documents of a virtualized (or converted) dataset's layers: each layer's name
/// and its group with the OME-NGFF 0.5 `multiscales` of its mags, as [`finish_dataset`]
/// writes them.
pub(crate) fn layer_groups(src: &Location) -> Result<Vec<(String, GroupMetadataV3)>> {
    let props_at = src.join(PROPERTIES_JSON);
    let props_path = props_at.name();
    let doc = read_json(&props_at)?;
    let (voxel, unit) = voxel_size(&doc);
    let mut out = Vec::new();
    for layer in layers(&doc, &props_path)? {
        let name = layer_name(layer, &props_path)?.to_owned();
        let list: Vec<[u64; 3]> = mags(src, layer, &props_path)?
            .iter()
            .map(|e| e.mag)
            .collect();
        let group: GroupMetadataV3 = serde_json::from_value(layer_group(&list, voxel, &unit)?)
            .map_err(|e| Error::Internal(format!("layer group of {name}: {e}")))?;
        out.push((name, group));
    }
    Ok(out)
}
