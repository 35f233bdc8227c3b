//! `scifmt info PATH`: detect the format and print header and structure.
//!
//! Detection asks the libraries, most specific first: a directory is a WKW dataset (it holds
//! `header.wkw`) or a sparse frame (`chunks.b2frame`); a file starting with the `.dwe` or WKW
//! magic is one of those; otherwise a file that opens as a Blosc2 frame is a frame (a b2nd
//! array if it carries the `b2nd` metalayer), and a file whose Blosc chunk header declares
//! exactly the file's length is a chunk.

use std::io::Read;
use std::path::Path;

use blosc_chunk::{ChunkHeader, Codec};
use blosc2_frame::{B2ND_METALAYER, B2ndArray, Frame, FrameHeader, SPARSE_FRAME_FILE};
use serde_json::{Map, Value, json};

use crate::blosc::{codec_name, filter_names};
use crate::util::{At, CliResult, Fail, describe, print_object};

/// `info PATH [--json]`.
pub(crate) fn run(path: &Path, json: bool) -> CliResult {
    let meta = std::fs::metadata(path).at(path)?;
    let map = if meta.is_dir() {
        if path.join(wkw::HEADER_FILE_NAME).is_file() {
            crate::wkw_cmd::dataset_info(path)?
        } else if path.join(SPARSE_FRAME_FILE).is_file() {
            frame_info(path)?
        } else {
            return Err(Fail::input(
                path,
                format!(
                    "directory is neither a WKW dataset ({}) nor a sparse frame ({SPARSE_FRAME_FILE})",
                    wkw::HEADER_FILE_NAME
                ),
            ));
        }
    } else {
        let mut head = [0u8; 32];
        let n = std::fs::File::open(path)
            .and_then(|mut f| read_prefix(&mut f, &mut head))
            .at(path)?;
        let head = head.get(..n).unwrap_or_default();
        if head.starts_with(&dwe_format::MAGIC) {
            crate::dwe::info_map(path)?
        } else if head.starts_with(&wkw::MAGIC) {
            crate::wkw_cmd::file_info(path)?
        } else {
            detect_blosc(path, head, meta.len())?
        }
    };
    print_object(map, json);
    Ok(())
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

/// A frame, a b2nd array or a chunk (`head`: the first bytes of the file).
fn detect_blosc(path: &Path, head: &[u8], len: u64) -> CliResult<Map<String, Value>> {
    let frame_err = match Frame::open(path) {
        Ok(_) => return frame_info(path),
        Err(e) => e,
    };
    // Not a frame: a chunk whose header declares exactly the file's length.
    if let Ok(h) = ChunkHeader::parse(head)
        && h.cbytes() as u64 == len
    {
        return Ok(chunk_info(&h, len));
    }
    Err(Fail::input(
        path,
        format!(
            "not a recognised format (no .dwe or WKW magic, not a Blosc2 frame: {}, not a Blosc chunk of this length)",
            describe(&frame_err)
        ),
    ))
}

fn chunk_info(h: &ChunkHeader, len: u64) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("format".into(), json!("blosc-chunk"));
    m.insert("file_len".into(), json!(len));
    m.insert("version".into(), json!(h.version()));
    m.insert("versionlz".into(), json!(h.versionlz()));
    m.insert("flags".into(), json!(h.flags()));
    m.insert("typesize".into(), json!(h.typesize()));
    m.insert("nbytes".into(), json!(h.nbytes()));
    m.insert("cbytes".into(), json!(h.cbytes()));
    m.insert("blocksize".into(), json!(h.blocksize_field()));
    m.insert("nblocks".into(), json!(h.nblocks()));
    m.insert("header_len".into(), json!(h.header_len()));
    m.insert("extended_header".into(), json!(h.is_extended()));
    m.insert("codec".into(), json!(codec_name(h.codec())));
    m.insert("filters".into(), json!(filter_names(&h.filter_ids())));
    m.insert("filters_meta".into(), json!(h.filters_meta()));
    m.insert("udcodec".into(), json!(h.udcodec()));
    m.insert("compcode_meta".into(), json!(h.compcode_meta()));
    m.insert("blosc2_flags".into(), json!(h.blosc2_flags()));
    m.insert("blosc2_flags2".into(), json!(h.blosc2_flags2()));
    m.insert("memcpyed".into(), json!(h.is_memcpyed()));
    m.insert("split".into(), json!(!h.dont_split()));
    m.insert("dict".into(), json!(h.uses_dict()));
    m.insert("vl_blocks".into(), json!(h.vl_blocks()));
    let special = h.special().map(|s| format!("{s:?}").to_lowercase());
    m.insert("special".into(), json!(special));
    m
}

fn header_fields(m: &mut Map<String, Value>, h: &FrameHeader) {
    m.insert("header_len".into(), json!(h.header_len));
    m.insert("frame_len".into(), json!(h.frame_len));
    m.insert("format_version".into(), json!(h.format_version));
    m.insert("offsets_width".into(), json!(h.offsets_width));
    m.insert("variable_chunks".into(), json!(h.variable_chunks));
    m.insert("vl_blocks".into(), json!(h.vl_blocks));
    m.insert(
        "codec".into(),
        json!(codec_name(Codec::from_id(h.codec_id()))),
    );
    m.insert("clevel".into(), json!(h.clevel));
    m.insert("splitmode".into(), json!(h.splitmode));
    m.insert("nbytes".into(), json!(h.nbytes));
    m.insert("cbytes".into(), json!(h.cbytes));
    m.insert("typesize".into(), json!(h.typesize));
    m.insert("blocksize".into(), json!(h.blocksize));
    m.insert("chunksize".into(), json!(h.chunksize));
    m.insert("nthreads_compress".into(), json!(h.nthreads_compress));
    m.insert("nthreads_decompress".into(), json!(h.nthreads_decompress));
    m.insert("has_vlmetalayers".into(), json!(h.has_vlmetalayers));
    m.insert("filters".into(), json!(filter_names(&h.filters)));
    m.insert("filters_meta".into(), json!(h.filters_meta));
    m.insert("udcodec".into(), json!(h.udcodec));
    m.insert("compcode_meta".into(), json!(h.compcode_meta));
    m.insert("use_dict".into(), json!(h.use_dict));
}

/// Frame (contiguous or sparse) or b2nd array.
fn frame_info(path: &Path) -> CliResult<Map<String, Value>> {
    let frame = crate::frame::open(path)?;
    let b2nd = frame.metalayer(B2ND_METALAYER).is_some();
    let mut m = Map::new();
    let format = match (b2nd, frame.is_sparse()) {
        (true, _) => "b2nd",
        (false, true) => "blosc2-sparse-frame",
        (false, false) => "blosc2-frame",
    };
    m.insert("format".into(), json!(format));
    if b2nd {
        let array = B2ndArray::new(crate::frame::open(path)?).at(path)?;
        let meta = array.meta();
        m.insert("shape".into(), json!(meta.shape));
        m.insert("chunkshape".into(), json!(meta.chunkshape));
        m.insert("blockshape".into(), json!(meta.blockshape));
        m.insert("dtype".into(), json!(meta.dtype));
        m.insert("itemsize".into(), json!(array.itemsize()));
    }
    m.insert("sparse".into(), json!(frame.is_sparse()));
    m.insert("nchunks".into(), json!(frame.nchunks()));
    header_fields(&mut m, frame.header());
    m.insert("trailer_len".into(), json!(frame.trailer_len()));
    let (meta, vl) = crate::frame::layers_json(&frame, path)?;
    m.insert("metalayers".into(), Value::Object(meta));
    m.insert("vlmetalayers".into(), Value::Object(vl));
    Ok(m)
}
