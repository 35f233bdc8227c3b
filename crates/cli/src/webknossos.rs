//! webKNOSSOS dataset roots (`datasource-properties.json` with layers and mags): what `info`
//! prints about one, and what commands that need one WKW mag say when given one.

use std::path::Path;

use serde_json::{Map, Value, json};
use wkw_zarr::{DatasetMag, Location, PROPERTIES_JSON};

use crate::fail::{CliResult, Fail, describe};
use crate::remote;

/// Mags named at most in a message.
const MAX_LISTED: usize = 12;

/// Whether `path` (a directory or URL prefix) is a webKNOSSOS dataset root: it holds
/// `datasource-properties.json`.
pub(crate) fn is_dataset(path: &Path) -> CliResult<bool> {
    Ok(match remote::parse_url(path)? {
        Some(url) => remote::exists(&url.join(PROPERTIES_JSON))?,
        None => path.join(PROPERTIES_JSON).is_file(),
    })
}

/// The dataset's mags, as its properties list them.
fn mags(path: &Path) -> CliResult<Vec<DatasetMag>> {
    let at = match remote::parse_url(path)? {
        Some(url) => Location::Store(url),
        None => Location::Local(path.to_path_buf()),
    };
    wkw_zarr::dataset_mags(at).map_err(|e| Fail::input(path, describe(&e)))
}

/// `info` on a dataset root: its layers (name, data format) and their mags (directories
/// relative to the root), and how to inspect one mag.
pub(crate) fn info_map(path: &Path) -> CliResult<Map<String, Value>> {
    let mags = mags(path)?;
    let mut layers: Vec<Map<String, Value>> = Vec::new();
    for m in &mags {
        if layers
            .last()
            .and_then(|l| l.get("name"))
            .and_then(Value::as_str)
            != Some(&m.layer)
        {
            let mut l = Map::new();
            l.insert("name".into(), json!(m.layer));
            l.insert("data_format".into(), json!(m.data_format));
            l.insert("mags".into(), json!([]));
            layers.push(l);
        }
        if let Some(Value::Array(list)) = layers.last_mut().and_then(|l| l.get_mut("mags")) {
            list.push(json!(m.path));
        }
    }
    let mut out = Map::new();
    out.insert("format".into(), json!("webknossos-dataset"));
    out.insert("num_layers".into(), json!(layers.len()));
    out.insert("num_mags".into(), json!(mags.len()));
    out.insert("layers".into(), json!(layers));
    out.insert(
        "inspect_with".into(),
        json!(
            "scifmt info DATASET/MAG (each mag; wkw layers also scifmt wkw info|verify DATASET/MAG)"
        ),
    );
    Ok(out)
}

/// The message for a dataset root given where one WKW mag is needed: the mag paths to give.
pub(crate) fn not_a_mag(path: &Path) -> Fail {
    let mags = match mags(path) {
        Ok(m) => m,
        Err(f) => return f,
    };
    let name = crate::names::display_name(path);
    let wkw: Vec<String> = mags
        .iter()
        .filter(|m| m.data_format == "wkw")
        .map(|m| format!("{}/{}", name.trim_end_matches('/'), m.path))
        .collect();
    let list = match wkw.len() {
        0 => "it has no wkw layers (`scifmt info` lists its layers and mags)".to_owned(),
        n => {
            let more = if n > MAX_LISTED {
                format!(
                    " and {} more (`scifmt info` lists them all)",
                    n - MAX_LISTED
                )
            } else {
                String::new()
            };
            let shown: Vec<&str> = wkw.iter().take(MAX_LISTED).map(String::as_str).collect();
            format!("give one of its {n} WKW mags: {}{more}", shown.join(" "))
        }
    };
    Fail::input(
        path,
        format!("a webKNOSSOS dataset ({PROPERTIES_JSON}), not a WKW mag (header.wkw): {list}"),
    )
}
