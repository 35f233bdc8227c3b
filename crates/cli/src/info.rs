//! `scifmt info PATH`: detect the format and print header and structure.
//!
//! Detection asks the libraries, most specific first: a directory is a WKW dataset (it holds
//! `header.wkw`) or a sparse frame (`chunks.b2frame`); a file starting with the `.dwe` or WKW
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
use crate::remote::{self, RemoteUrl};

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
    if let Some(url) = RemoteUrl::parse(path)? {
        return detect_remote(path, &url);
    }
    let meta = std::fs::metadata(path).at(path)?;
    if meta.is_dir() {
        return if path.join(wkw::HEADER_FILE_NAME).is_file() {
            crate::wkw_cmd::dataset_info(path)
        } else if path.join(SPARSE_FRAME_FILE).is_file() {
            crate::frame::info_map(path)
        } else {
            Err(Fail::input(
                path,
                format!(
                    "directory is neither a WKW dataset ({}) nor a sparse frame ({SPARSE_FRAME_FILE})",
                    wkw::HEADER_FILE_NAME
                ),
            ))
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

/// The fields of whatever the URL holds: a prefix holding `header.wkw` (a WKW dataset) or
/// `chunks.b2frame` (a sparse frame), else one object, detected as a local file is. Datasets
/// and frames are read through the libraries' remote APIs; a `.dwe` file, a single `.wkw` data
/// file or a Blosc chunk is read whole (bounded by its library's limit).
fn detect_remote(path: &Path, url: &RemoteUrl) -> CliResult<Map<String, Value>> {
    if remote::exists(&url.join(wkw::HEADER_FILE_NAME))? {
        return crate::wkw_cmd::dataset_info(path);
    }
    if remote::exists(&url.join(SPARSE_FRAME_FILE))? {
        return crate::frame::info_map(path);
    }
    let len = remote::size(url)?;
    let head = remote::read_prefix(url, 32, len)?;
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
            url.name(),
            format!(
                "not a recognised format (no .dwe or WKW magic, not a Blosc2 frame: {}, not a Blosc chunk of this length)",
                frame_err
                    .strip_prefix(&format!("{}: ", url.shown()))
                    .unwrap_or(&frame_err)
            ),
        ))
    }
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
