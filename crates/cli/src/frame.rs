//! `scifmt frame …` and `scifmt b2nd read`.

use std::io::Read;
use std::path::Path;

use blosc_chunk::ChunkHeader;
use blosc2_frame::{B2ndArray, ChunkLocation, Frame, FrameFileWriter, FrameParams, Sync};
use serde_json::{Map, Value, json};

use crate::CParamArgs;
use crate::blosc::{codec_name, cparams, filter_names};
use crate::msgpack::bytes_to_json;
use crate::util::{
    At, CliResult, Fail, Output, RegionDim, open_input, print_json, progress, progress_bytes,
    resolve_region, write_output,
};

/// Opens a frame file or sparse-frame directory.
pub(crate) fn open(path: &Path) -> CliResult<Frame<'static>> {
    Frame::open(path).at(path)
}

/// `frame extract IN OUT`: chunk by chunk, so memory holds one decompressed chunk.
pub(crate) fn extract(input: &Path, output: &Path) -> CliResult {
    let frame = open(input)?;
    let n = frame.nchunks();
    let bar = progress(u64::try_from(n).unwrap_or(u64::MAX), "extract");
    let mut out = Output::create(output)?;
    for i in 0..n {
        let data = frame
            .decompress_chunk(i)
            .map_err(|e| Fail::input(input, format!("chunk {i}: {}", crate::util::describe(&e))))?;
        out.write(&data)?;
        bar.inc(1);
    }
    bar.finish_and_clear();
    out.commit()
}

/// Describes chunk `i`: location, sizes, codec and filters.
fn chunk_entry(
    frame: &Frame<'_>,
    i: usize,
    loc: ChunkLocation,
) -> Result<Map<String, Value>, String> {
    let mut m = Map::new();
    m.insert("index".into(), json!(i));
    let nbytes = frame
        .chunk_nbytes(i)
        .map_err(|e| crate::util::describe(&e))?;
    match loc {
        ChunkLocation::Stored(off) => {
            let key = if frame.is_sparse() { "file" } else { "offset" };
            m.insert(key.into(), json!(off));
            let chunk = frame.chunk(i).map_err(|e| crate::util::describe(&e))?;
            let h = ChunkHeader::parse(&chunk).map_err(|e| crate::util::describe(&e))?;
            m.insert("nbytes".into(), json!(h.nbytes()));
            m.insert("cbytes".into(), json!(h.cbytes()));
            let special = h.special().map(|s| format!("{s:?}").to_lowercase());
            m.insert("special".into(), json!(special));
            m.insert("codec".into(), json!(codec_name(h.codec())));
            m.insert("filters".into(), json!(filter_names(&h.filter_ids())));
            m.insert("filters_meta".into(), json!(h.filters_meta()));
        }
        special => {
            let kind = match special {
                ChunkLocation::Zeros => "zeros",
                ChunkLocation::Nan => "nan",
                ChunkLocation::Uninit => "uninit",
                _ => "other",
            };
            m.insert("special".into(), json!(kind));
            m.insert("nbytes".into(), json!(nbytes));
            m.insert("cbytes".into(), json!(0));
        }
    }
    Ok(m)
}

/// `frame chunks IN [--json]`.
pub(crate) fn chunks(input: &Path, as_json: bool) -> CliResult {
    let frame = open(input)?;
    let mut rows = Vec::with_capacity(frame.nchunks());
    for (i, &loc) in frame.index().iter().enumerate() {
        let m = chunk_entry(&frame, i, loc)
            .map_err(|e| Fail::input(input, format!("chunk {i}: {e}")))?;
        rows.push(m);
    }
    if as_json {
        print_json(&Value::Array(rows.into_iter().map(Value::Object).collect()));
        return Ok(());
    }
    println!("index  where            nbytes   cbytes  codec     filters");
    for m in rows {
        let at = if let Some(o) = m.get("offset") {
            format!("offset {o}")
        } else if let Some(f) = m.get("file") {
            format!("file {f}")
        } else {
            String::from("-")
        };
        let at = match m.get("special").and_then(Value::as_str) {
            Some(s) if at == "-" => format!("special {s}"),
            Some(s) => format!("{at} ({s})"),
            None => at,
        };
        let filters = m
            .get("filters")
            .and_then(Value::as_array)
            .map(|f| {
                f.iter()
                    .filter_map(Value::as_str)
                    .filter(|s| *s != "none")
                    .collect::<Vec<_>>()
                    .join(",")
            })
            .unwrap_or_default();
        let num = |k: &str| m.get(k).map(Value::to_string).unwrap_or_default();
        let codec = m.get("codec").and_then(Value::as_str).unwrap_or("-");
        println!(
            "{:<6} {:<16} {:>8} {:>8}  {:<9} {}",
            num("index"),
            at,
            num("nbytes"),
            num("cbytes"),
            codec,
            if filters.is_empty() { "-" } else { &filters }
        );
    }
    Ok(())
}

/// Metalayers and vlmetalayers of a frame as JSON.
pub(crate) fn layers_json(
    frame: &Frame<'_>,
    path: &Path,
) -> CliResult<(Map<String, Value>, Map<String, Value>)> {
    let mut meta = Map::new();
    for l in frame.metalayers() {
        meta.insert(l.name.clone(), bytes_to_json(&l.content));
    }
    let mut vl = Map::new();
    for l in frame.vlmetalayers() {
        let bytes = frame.vlmetalayer(&l.name).map_err(|e| {
            Fail::input(
                path,
                format!("vlmetalayer {}: {}", l.name, crate::util::describe(&e)),
            )
        })?;
        vl.insert(l.name.clone(), bytes_to_json(&bytes));
    }
    Ok((meta, vl))
}

/// `frame meta IN [--json]`.
pub(crate) fn meta(input: &Path, as_json: bool) -> CliResult {
    let frame = open(input)?;
    let (meta, vl) = layers_json(&frame, input)?;
    if as_json {
        print_json(&json!({"metalayers": meta, "vlmetalayers": vl}));
    } else {
        for (k, v) in &meta {
            println!("meta {k}: {v}");
        }
        for (k, v) in &vl {
            println!("vlmeta {k}: {v}");
        }
    }
    Ok(())
}

/// Arguments of `frame create`.
#[derive(Debug)]
pub(crate) struct CreateArgs<'a> {
    pub(crate) input: &'a Path,
    pub(crate) output: &'a Path,
    pub(crate) chunksize: usize,
    pub(crate) cparams: &'a CParamArgs,
    pub(crate) meta: &'a [(String, Vec<u8>)],
    pub(crate) vlmeta: &'a [(String, Vec<u8>)],
    pub(crate) sparse: bool,
}

/// `frame create IN OUT …`: reads the input one chunk at a time and streams the frame to disk
/// with `FrameFileWriter` (one chunk in memory): a contiguous frame through a temporary file
/// renamed at the end, a sparse frame as chunk files plus `chunks.b2frame` written at the end.
pub(crate) fn create(a: &CreateArgs<'_>) -> CliResult {
    if a.chunksize == 0 || a.chunksize > blosc_chunk::MAX_BUFFERSIZE {
        return Err(Fail::usage(format!(
            "--chunksize must be in 1..={}",
            blosc_chunk::MAX_BUFFERSIZE
        )));
    }
    let params = FrameParams::new(cparams(a.cparams)?, a.chunksize);
    let meta: Vec<(&str, &[u8])> = a
        .meta
        .iter()
        .map(|(n, b)| (n.as_str(), b.as_slice()))
        .collect();
    let mut w = if a.sparse {
        FrameFileWriter::create_sparse(a.output, params, &meta, Sync::None)
    } else {
        FrameFileWriter::create(a.output, params, &meta, Sync::None)
    }
    .at(a.output)?;
    feed_chunks(a, |piece| w.append_data(piece))?;
    for (name, bytes) in a.vlmeta {
        w.set_vlmetalayer(name, bytes).at(a.output)?;
    }
    w.finish().at(a.output)
}

/// Reads the input in `chunksize` pieces (the last may be shorter) and hands each to `append`,
/// with a progress bar in bytes.
fn feed_chunks(
    a: &CreateArgs<'_>,
    mut append: impl FnMut(&[u8]) -> blosc2_frame::Result<()>,
) -> CliResult {
    let mut file = open_input(a.input)?;
    let meta = file.metadata().at(a.input)?;
    let total = meta.len();
    let bar = progress_bytes(total, "compress");
    // No bigger than the input needs: a short input is one (short) chunk.
    let cap = if meta.is_file() {
        usize::try_from(total)
            .unwrap_or(usize::MAX)
            .clamp(1, a.chunksize)
    } else {
        a.chunksize
    };
    let mut buf = vec![0u8; cap];
    loop {
        let n = read_full(&mut file, &mut buf).at(a.input)?;
        if n == 0 {
            break;
        }
        append(buf.get(..n).unwrap_or_default()).at(a.input)?;
        bar.inc(n as u64);
        if n < buf.len() {
            break;
        }
    }
    bar.finish_and_clear();
    Ok(())
}

/// Reads until `buf` is full or the input ends; returns the bytes read.
fn read_full(r: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        let Some(rest) = buf.get_mut(n..) else { break };
        match r.read(rest) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// `b2nd read IN OUT [--region …]`.
pub(crate) fn b2nd_read(input: &Path, output: &Path, region: Option<&[RegionDim]>) -> CliResult {
    let array = B2ndArray::open(input).at(input)?;
    let (start, stop) = resolve_region(region, array.shape()).map_err(|e| Fail::input(input, e))?;
    let data = array.read_region(&start, &stop).at(input)?;
    write_output(output, &data)
}
