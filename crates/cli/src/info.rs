//! `scifmt info PATH`: detect the format and print header and structure.
//!
//! Detection asks the libraries, most specific first: a directory is a WKW dataset (it holds
//! `header.wkw`), a sparse frame (`chunks.b2frame`) or a Zarr node (`zarr.json`, `.zarray`,
//! `.zgroup`: a short summary of its metadata; `scifmt zarr read` reads the data of v2 and v3
//! arrays), or a webKNOSSOS dataset root (`datasource-properties.json`: its layers and mags);
//! a file starting with the `.dwe` or WKW
//! magic is one of those; otherwise a file that opens as a Blosc2 frame is a frame (a b2nd
//! array if it carries the `b2nd` metalayer), and a file whose Blosc chunk header declares
//! exactly the file's length is a chunk. Each format's module builds its fields.

use std::io::Read;
use std::path::{Path, PathBuf};

use blosc_chunk::ChunkHeader;
use blosc2_frame::{Frame, SPARSE_FRAME_FILE};
use clap::Args;
use serde_json::{Map, Value};

use crate::fail::{At, CliResult, Fail, describe};
use crate::print::{JsonFlag, emit_object};
use crate::remote;
use scifmt_io::StoreLocation;

/// `scifmt info`.
#[derive(Debug, Args)]
pub(crate) struct InfoArgs {
    /// File or directory to inspect, or its URL (s3://, gs://, az://, http(s)://, file://).
    path: PathBuf,
    #[command(flatten)]
    json: JsonFlag,
}

/// `info PATH [--json]`.
pub(crate) fn run(a: &InfoArgs) -> CliResult {
    emit_object(detect(&a.path)?, a.json)
}

/// The fields of whatever `path` holds.
fn detect(path: &Path) -> CliResult<Map<String, Value>> {
    let shown = crate::names::display_name(path);
    let url = remote::parse_url(path).map_err(|f| {
        // A store that cannot be configured: the object cannot be read.
        if f.msg.starts_with(&format!("{shown}: ")) {
            cannot_read(&shown, f)
        } else {
            f
        }
    })?;
    if let Some(url) = url {
        return detect_remote(path, &url);
    }
    let meta = match std::fs::metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(Fail::input(path, "does not exist"));
        }
        m => m.at(path)?,
    };
    if meta.is_dir() {
        return if path.join(wkw::HEADER_FILE_NAME).is_file() {
            crate::wkw_cmd::dataset_info(path)
        } else if crate::webknossos::is_dataset(path)? {
            crate::webknossos::info_map(path)
        } else if path.join(SPARSE_FRAME_FILE).is_file() {
            crate::frame::info_map(path)
        } else if let Some(file) = ZARR_FILES.iter().find(|f| path.join(f).is_file()) {
            let text = std::fs::read(path.join(file)).at(path)?;
            zarr_info(path, file, &text)
        } else {
            Err(Fail::input(path, NOT_A_DATASET))
        };
    }
    let mut head = [0u8; 32];
    let n = std::fs::File::open(path)
        .and_then(|mut f| read_prefix(&mut f, &mut head))
        .at(path)?;
    let head = head.get(..n).unwrap_or_default();
    if head.starts_with(&dwe_format::MAGIC) {
        crate::dwe::info_map(path)
    } else if head.starts_with(&wkw::MAGIC) {
        crate::wkw_cmd::file_info(path)
    } else {
        detect_blosc(path, head, meta.len())
    }
}

fn read_prefix(f: &mut std::fs::File, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        let Some(rest) = buf.get_mut(n..) else { break };
        match f.read(rest)? {
            0 => break,
            k => n += k,
        }
    }
    Ok(n)
}

/// The fields of whatever the URL holds: one object (a `HEAD` finds it), detected as a local
/// file is; else a prefix holding `header.wkw` (a WKW dataset), `chunks.b2frame` (a sparse
/// frame) or a Zarr metadata file. Datasets and frames are read through the libraries' remote
/// APIs; a `.dwe` file, a single `.wkw` data file or a Blosc chunk is read whole (bounded by
/// its library's limit). Every failure names the URL the user gave.
fn detect_remote(path: &Path, url: &StoreLocation) -> CliResult<Map<String, Value>> {
    let Some(len) = remote::head_size(url).map_err(|f| cannot_read(url.url(), f))? else {
        return detect_remote_prefix(path, url);
    };
    let head = remote::read_prefix(url, 32, len).map_err(|f| cannot_read(url.url(), f))?;
    if head.starts_with(&dwe_format::MAGIC) {
        crate::dwe::info_map(path)
    } else if head.starts_with(&wkw::MAGIC) {
        // The library inspects a file by path and reads only its header and jump table (and
        // its length): a sparse local file of the object's length holding just those bytes.
        let blocks = wkw::Header::parse(&head).map_or(0, |h| {
            h.blocks_per_file()
                .min(wkw::Limits::default().max_blocks_per_file.saturating_add(1))
        });
        let prefix = blocks.saturating_mul(8).saturating_add(16);
        remote::with_prefix_copy(url, len, prefix, crate::wkw_cmd::file_info)
    } else {
        let frame_err = match crate::frame::open(path) {
            Ok(_) => return crate::frame::info_map(path),
            Err(f) => f.msg,
        };
        if let Ok(h) = ChunkHeader::parse(&head)
            && h.cbytes() as u64 == len
        {
            return Ok(crate::blosc::chunk_info(&h, len));
        }
        Err(Fail::input(
            remote::name(url),
            format!(
                "not a recognised format (no .dwe or WKW magic, not a Blosc2 frame: {}, not a Blosc chunk of this length)",
                frame_err
                    .strip_prefix(&format!("{}: ", url.url()))
                    .unwrap_or(&frame_err)
            ),
        ))
    }
}

/// A URL that names no object: a prefix holding a WKW dataset, a sparse frame or a Zarr node.
fn detect_remote_prefix(path: &Path, url: &StoreLocation) -> CliResult<Map<String, Value>> {
    let has = |name: &str| remote::exists(&url.join(name)).map_err(|f| cannot_read(url.url(), f));
    if has(wkw::HEADER_FILE_NAME)? {
        return crate::wkw_cmd::dataset_info(path);
    }
    if has(SPARSE_FRAME_FILE)? {
        return crate::frame::info_map(path);
    }
    if has(wkw_zarr::PROPERTIES_JSON)? {
        return crate::webknossos::info_map(path);
    }
    for file in ZARR_FILES {
        if has(file)? {
            let text = remote::read_object(
                &url.join(file),
                MAX_ZARR_METADATA,
                "too much for Zarr metadata",
            )
            .map_err(|f| cannot_read(url.url(), f))?;
            return zarr_info(remote::name(url), file, &text);
        }
    }
    Err(Fail::input(
        remote::name(url),
        format!(
            "no such object, and {}",
            NOT_A_DATASET.replacen("not ", "no ", 1)
        ),
    ))
}

/// A failed request while probing `url`: the message names `url` (the object the user gave),
/// not the file the probe asked for, and says the object could not be read.
fn cannot_read(shown: &str, fail: Fail) -> Fail {
    let msg = fail
        .msg
        .split_once(": ")
        .filter(|(name, _)| name.starts_with(shown))
        .map_or(fail.msg.as_str(), |(_, rest)| rest);
    Fail {
        code: fail.code,
        msg: format!("{shown}: cannot be read: {msg}"),
    }
}

/// What a directory that is none of the formats is told, with what was tried.
const NOT_A_DATASET: &str = "not a WKW dataset (no header.wkw), a webKNOSSOS dataset (no datasource-properties.json), a sparse Blosc2 frame (no chunks.b2frame) or a Zarr v2/v3 store (no zarr.json, .zarray or .zgroup)";

/// Zarr metadata files, v3 first.
const ZARR_FILES: [&str; 3] = ["zarr.json", ".zarray", ".zgroup"];

/// Zarr metadata documents are small; a larger one is not read.
const MAX_ZARR_METADATA: u64 = 16 << 20;

/// A short summary of a Zarr node from its metadata document `file` (`zarr.json` of v3,
/// `.zarray` / `.zgroup` of v2): format, node type and, for arrays, shape, data type, chunk
/// shape and codecs (or compressor and filters). `scifmt zarr read` reads the data (v2 and v3).
fn zarr_info(path: &Path, file: &str, text: &[u8]) -> CliResult<Map<String, Value>> {
    let doc: Value = serde_json::from_slice(text)
        .map_err(|e| Fail::input(path, format!("{file}: not JSON: {e}")))?;
    let Value::Object(doc) = doc else {
        return Err(Fail::input(path, format!("{file}: not a JSON object")));
    };
    let get = |k: &str| doc.get(k).cloned().unwrap_or(Value::Null);
    let mut m = Map::new();
    m.insert("format".into(), Value::from("zarr"));
    if file == "zarr.json" {
        m.insert("zarr_format".into(), get("zarr_format"));
        m.insert("node_type".into(), get("node_type"));
        if doc.get("node_type").and_then(Value::as_str) == Some("array") {
            m.insert("shape".into(), get("shape"));
            m.insert("data_type".into(), get("data_type"));
            let chunk_shape = doc
                .get("chunk_grid")
                .and_then(|g| g.pointer("/configuration/chunk_shape"))
                .cloned()
                .unwrap_or(Value::Null);
            m.insert("chunk_shape".into(), chunk_shape);
            let codecs: Vec<Value> = doc
                .get("codecs")
                .and_then(Value::as_array)
                .map(|c| c.iter().filter_map(|c| c.get("name").cloned()).collect())
                .unwrap_or_default();
            m.insert("codecs".into(), Value::Array(codecs));
        }
    } else {
        m.insert("zarr_format".into(), get("zarr_format"));
        if file == ".zarray" {
            m.insert("node_type".into(), Value::from("array"));
            m.insert("shape".into(), get("shape"));
            m.insert("data_type".into(), get("dtype"));
            m.insert("chunk_shape".into(), get("chunks"));
            m.insert("order".into(), get("order"));
            m.insert("compressor".into(), get("compressor"));
            m.insert("filters".into(), get("filters"));
        } else {
            m.insert("node_type".into(), Value::from("group"));
        }
    }
    let is_array = m.get("node_type").and_then(Value::as_str) == Some("array");
    m.insert(
        "read_with".into(),
        Value::from(if is_array {
            "scifmt zarr read"
        } else {
            "scifmt zarr read on one of the group's arrays (`scifmt zarr read GROUP` lists them)"
        }),
    );
    Ok(m)
}

/// A frame, a b2nd array or a chunk (`head`: the first bytes of the file).
fn detect_blosc(path: &Path, head: &[u8], len: u64) -> CliResult<Map<String, Value>> {
    let frame_err = match Frame::open(path) {
        Ok(_) => return crate::frame::info_map(path),
        Err(e) => e,
    };
    // Not a frame: a chunk whose header declares exactly the file's length.
    if let Ok(h) = ChunkHeader::parse(head)
        && h.cbytes() as u64 == len
    {
        return Ok(crate::blosc::chunk_info(&h, len));
    }
    Err(Fail::input(
        path,
        format!(
            "not a recognised format (no .dwe or WKW magic, not a Blosc2 frame: {}, not a Blosc chunk of this length)",
            describe(&frame_err)
        ),
    ))
}
