//! `scifmt frame …`: Blosc2 frames (contiguous files, sparse directories, or `-` for a
//! contiguous frame on stdin).

use std::io::{BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use blosc_chunk::{ChunkHeader, Codec};
use blosc2_frame::{
    B2ND_METALAYER, B2ndArray, B2ndMeta, ChunkLocation, Frame, FrameFileWriter, FrameHeader,
    FrameParams, FrameWriter, Layer, RemoteB2nd, RemoteFrame, RemoteOptions,
};
use clap::{Args, Subcommand};
use serde_json::{Map, Value, json};

use crate::blosc::{CParamArgs, codec_name, filter_names, special_name};
use crate::fail::{At, CliResult, Fail, describe};
use crate::guard::{DirKind, DirPlan, OverwriteFlag, Staging, dir_output, file_output};
use crate::inout::{
    MAX_WHOLE_INPUT, Output, in_name, is_std, open_input, out_name, read_full, read_whole,
    stdout_error, write_mode,
};
use crate::msgpack::{bytes_to_json, parse_layer};
use crate::print::{JsonFlag, emit, emit_json, to_object};
use crate::progress::{progress, progress_bytes};
use crate::remote;

/// `scifmt frame`.
#[derive(Debug, Subcommand)]
pub(crate) enum Cmd {
    /// Write all chunks decompressed in index order (python-blosc2's `schunk[:]`).
    #[command(
        after_help = "Examples:\n  scifmt frame extract data.b2frame data.raw\n  scifmt frame extract data.b2frame - | sha256sum\n  scifmt frame extract s3://bucket/data.b2frame data.raw"
    )]
    Extract(ExtractArgs),
    /// List chunks: index, offset or special kind, nbytes, cbytes, codec, filters.
    #[command(
        after_help = "Examples:\n  scifmt frame chunks data.b2frame --json\n  scifmt frame chunks s3://bucket/sparse_frame --json"
    )]
    Chunks(ListArgs),
    /// Print metalayers and vlmetalayers, msgpack decoded to JSON.
    #[command(
        after_help = "Examples:\n  scifmt frame meta data.b2frame --json\n  scifmt frame meta az://container/data.b2frame\n\nBinary msgpack values print as {\"$bin\": \"<hex>\"}; undecodable layers as {\"$raw\": \"<hex>\"}."
    )]
    Meta(ListArgs),
    /// Build a frame from raw bytes, CHUNKSIZE bytes per chunk (the last may be shorter).
    #[command(
        mut_arg("overwrite", |a| a.help("Replace an existing output: a frame file or object, or with --sparse a sparse frame (a directory: the new one is built beside it and swapped in when complete; at a URL: the new chunk files are uploaded, then the index, then the old chunk files are deleted). Without it an existing output is refused. An output that is, contains or lies inside IN is refused either way")),
        after_help = "Examples:\n  cat data.raw | scifmt frame create - - --typesize 4 --chunksize 40000 > data.b2frame\n  scifmt frame create data.raw data.b2frame --typesize 8 --chunksize 8000 --codec zstd --filter delta --filter shuffle --meta 'm=[1,2,3]' --vlmeta 'info={\"a\":1}'\n  scifmt frame create data.raw s3://bucket/data.b2frame --typesize 4 --chunksize 40000 --codec zstd"
    )]
    Create(CreateArgs),
}

impl Cmd {
    /// Runs the subcommand.
    pub(crate) fn run(self) -> CliResult {
        match self {
            Self::Extract(a) => extract(&a),
            Self::Chunks(a) => chunks(&a),
            Self::Meta(a) => meta(&a),
            Self::Create(a) => create(&a),
        }
    }
}

/// `frame extract`.
#[derive(Debug, Args)]
pub(crate) struct ExtractArgs {
    /// Frame file or sparse-frame directory, or its URL (`-`: a contiguous frame on stdin).
    input: PathBuf,
    /// Output file (`-`: stdout).
    output: PathBuf,
    #[command(flatten)]
    overwrite: OverwriteFlag,
}

/// `frame chunks` and `frame meta`.
#[derive(Debug, Args)]
pub(crate) struct ListArgs {
    /// Frame file or sparse-frame directory, or its URL (`-`: a contiguous frame on stdin).
    input: PathBuf,
    #[command(flatten)]
    json: JsonFlag,
}

/// `frame create`.
#[derive(Debug, Args)]
pub(crate) struct CreateArgs {
    /// Raw bytes (`-`: stdin).
    input: PathBuf,
    /// Frame file, directory with --sparse, or URL (`-`: stdout, a contiguous frame built in memory).
    output: PathBuf,
    /// Bytes per chunk (a multiple of the typesize).
    #[arg(long, value_name = "BYTES")]
    chunksize: usize,
    #[command(flatten)]
    cparams: CParamArgs,
    /// Metalayer NAME=JSON (stored as msgpack), repeatable.
    #[arg(long = "meta", value_name = "NAME=JSON", value_parser = parse_layer)]
    meta: Vec<(String, Vec<u8>)>,
    /// Variable-length metalayer NAME=JSON (stored as msgpack), repeatable.
    #[arg(long = "vlmeta", value_name = "NAME=JSON", value_parser = parse_layer)]
    vlmeta: Vec<(String, Vec<u8>)>,
    /// Write a sparse frame (a directory) instead of a contiguous file.
    #[arg(long)]
    sparse: bool,
    #[command(flatten)]
    overwrite: OverwriteFlag,
}

/// A frame read from a local file or directory (or stdin), or from an object store through
/// blosc2-frame's remote API (only the byte ranges a command needs are fetched).
#[derive(Debug)]
pub(crate) enum AnyFrame {
    /// A local frame (or one read from stdin).
    Local(Frame<'static>),
    /// A frame at a URL.
    Remote(Box<RemoteFrame>),
}

/// Stored chunks fetched concurrently by `frame chunks` from a URL.
const CHUNKS_IN_FLIGHT: usize = 8;

/// Chunks decompressed per round of requests by `frame extract` from a URL: as many as fit
/// 64 MiB of output (at least one).
const EXTRACT_BATCH_BYTES: u64 = 64 << 20;

impl AnyFrame {
    pub(crate) fn nchunks(&self) -> usize {
        match self {
            Self::Local(f) => f.nchunks(),
            Self::Remote(f) => f.nchunks(),
        }
    }
    fn is_sparse(&self) -> bool {
        match self {
            Self::Local(f) => f.is_sparse(),
            Self::Remote(f) => f.is_sparse(),
        }
    }
    fn index(&self) -> &[ChunkLocation] {
        match self {
            Self::Local(f) => f.index(),
            Self::Remote(f) => f.index(),
        }
    }
    fn header(&self) -> &FrameHeader {
        match self {
            Self::Local(f) => f.header(),
            Self::Remote(f) => f.header(),
        }
    }
    fn trailer_len(&self) -> u64 {
        match self {
            Self::Local(f) => f.trailer_len(),
            Self::Remote(f) => f.trailer_len(),
        }
    }
    fn metalayers(&self) -> &[Layer] {
        match self {
            Self::Local(f) => f.metalayers(),
            Self::Remote(f) => f.metalayers(),
        }
    }
    fn metalayer(&self, name: &str) -> Option<&[u8]> {
        match self {
            Self::Local(f) => f.metalayer(name),
            Self::Remote(f) => f.metalayer(name),
        }
    }
    fn vlmetalayers(&self) -> &[Layer] {
        match self {
            Self::Local(f) => f.vlmetalayers(),
            Self::Remote(f) => f.vlmetalayers(),
        }
    }
    fn vlmetalayer(&self, name: &str) -> blosc2_frame::Result<Vec<u8>> {
        match self {
            Self::Local(f) => f.vlmetalayer(name),
            Self::Remote(f) => f.vlmetalayer(name),
        }
    }
    /// The compressed bytes of chunk `i` (outer error: the runtime).
    fn chunk(&self, i: usize) -> CliResult<blosc2_frame::Result<Vec<u8>>> {
        match self {
            Self::Local(f) => Ok(f.chunk(i).map(std::borrow::Cow::into_owned)),
            Self::Remote(f) => remote::block_on(f.chunk(i)),
        }
    }
    /// The compressed bytes of the stored chunks among `locs` (chunks `first..`), fetched
    /// concurrently from a URL; `None` where nothing was fetched (local frames, special runs).
    fn prefetch(
        &self,
        first: usize,
        locs: &[ChunkLocation],
    ) -> CliResult<Vec<Option<blosc2_frame::Result<Vec<u8>>>>> {
        let Self::Remote(f) = self else {
            return Ok(Vec::new());
        };
        let fetches = locs.iter().enumerate().map(|(k, loc)| {
            let f = &**f;
            async move {
                match loc {
                    ChunkLocation::Stored(_) => Some(f.chunk(first + k).await),
                    _ => None,
                }
            }
        });
        remote::block_on(futures::future::join_all(fetches))
    }
    fn chunk_nbytes(&self, i: usize) -> CliResult<blosc2_frame::Result<usize>> {
        match self {
            Self::Local(f) => Ok(f.chunk_nbytes(i)),
            Self::Remote(f) => Ok(remote::block_on(f.chunk_sizes())?.and_then(|v| {
                v.get(i).copied().ok_or(blosc2_frame::Error::ChunkIndex {
                    index: i,
                    nchunks: v.len(),
                })
            })),
        }
    }
    /// Decompresses chunks `range` in order (from a URL: one round of concurrent requests);
    /// a failure names `input` and the chunk.
    fn decompress_range(
        &self,
        range: std::ops::Range<usize>,
        input: &Path,
    ) -> CliResult<Vec<Vec<u8>>> {
        let fail = |i: usize, e: &blosc2_frame::Error| {
            Fail::input(in_name(input), format!("chunk {i}: {}", describe(e)))
        };
        match self {
            Self::Local(f) => range
                .map(|i| f.decompress_chunk(i).map_err(|e| fail(i, &e)))
                .collect(),
            Self::Remote(f) => {
                let idx: Vec<usize> = range.clone().collect();
                remote::block_on(f.decompress_chunks(&idx))?.map_err(|e| fail(range.start, &e))
            }
        }
    }
}

/// A b2nd array over an [`AnyFrame`].
#[derive(Debug)]
pub(crate) enum AnyB2nd {
    /// A local array.
    Local(Box<B2ndArray<'static>>),
    /// An array at a URL.
    Remote(Box<RemoteB2nd>),
}

impl AnyB2nd {
    /// The array in `frame` (which must carry the b2nd metalayer).
    pub(crate) fn new(frame: AnyFrame) -> blosc2_frame::Result<Self> {
        Ok(match frame {
            AnyFrame::Local(f) => Self::Local(Box::new(B2ndArray::new(f)?)),
            AnyFrame::Remote(f) => Self::Remote(Box::new(RemoteB2nd::from_frame(*f)?)),
        })
    }
    pub(crate) fn shape(&self) -> &[u64] {
        match self {
            Self::Local(a) => a.shape(),
            Self::Remote(a) => a.shape(),
        }
    }
    fn meta(&self) -> &B2ndMeta {
        match self {
            Self::Local(a) => a.meta(),
            Self::Remote(a) => a.meta(),
        }
    }
    fn itemsize(&self) -> usize {
        match self {
            Self::Local(a) => a.itemsize(),
            Self::Remote(a) => a.itemsize(),
        }
    }
    /// C-order bytes of the region `start..stop` (outer error: the runtime).
    pub(crate) fn read_region(
        &self,
        start: &[u64],
        stop: &[u64],
    ) -> CliResult<blosc2_frame::Result<Vec<u8>>> {
        match self {
            Self::Local(a) => Ok(a.read_region(start, stop)),
            Self::Remote(a) => remote::block_on(a.read_region(start, stop)),
        }
    }
    /// The frame back.
    fn into_frame(self) -> AnyFrame {
        match self {
            Self::Local(a) => AnyFrame::Local(a.into_frame()),
            Self::Remote(a) => AnyFrame::Remote(Box::new(a.into_frame())),
        }
    }
}

/// Opens a frame file or sparse-frame directory, or reads a contiguous frame from stdin for
/// `-` (held in memory, at most [`MAX_WHOLE_INPUT`] bytes; files are read at positions, chunk by
/// chunk), or opens a frame object or sparse-frame prefix at a URL.
pub(crate) fn open(path: &Path) -> CliResult<AnyFrame> {
    if is_std(path) {
        let bytes = read_whole(path, MAX_WHOLE_INPUT, "the most a frame on stdin may have")?;
        return Frame::from_reader(bytes, 0, &blosc2_frame::Limits::default())
            .map(AnyFrame::Local)
            .at(in_name(path));
    }
    if let Some(url) = remote::parse_url(path)? {
        let frame = remote::block_on(RemoteFrame::open_url(
            &path.to_string_lossy(),
            RemoteOptions::default(),
        ))?
        .at(remote::name(&url))?;
        return Ok(AnyFrame::Remote(Box::new(frame)));
    }
    Frame::open(path).map(AnyFrame::Local).at(path)
}

/// `frame extract IN OUT`: chunk by chunk, so memory holds one decompressed chunk.
fn extract(a: &ExtractArgs) -> CliResult {
    let overwrite = a.overwrite.overwrite;
    file_output(&[&a.input], &a.output, overwrite)?;
    let frame = open(&a.input)?;
    let n = frame.nchunks();
    let bar = progress(u64::try_from(n).unwrap_or(u64::MAX), "extract");
    let mut out = Output::create(&a.output, overwrite)?;
    // Locally one chunk at a time; from a URL a batch per round of requests.
    let batch = match &frame {
        AnyFrame::Local(_) => 1,
        AnyFrame::Remote(_) => {
            let chunk = u64::from(frame.header().chunksize).max(1);
            usize::try_from(EXTRACT_BATCH_BYTES / chunk)
                .unwrap_or(1)
                .max(1)
        }
    };
    let mut i = 0;
    while i < n {
        let end = i.saturating_add(batch).min(n);
        let chunks = frame.decompress_range(i..end, &a.input)?;
        for data in chunks {
            out.write(&data)?;
            bar.inc(1);
        }
        i = end;
    }
    bar.finish_and_clear();
    out.commit()
}

/// The columns of `frame chunks`, the same in every row (null where they do not apply): the
/// place is `offset` in a contiguous frame, `file` (chunk file number) in a sparse one.
///
/// `bytes`: the compressed bytes of a stored chunk if already fetched.
fn chunk_row(
    frame: &AnyFrame,
    i: usize,
    loc: ChunkLocation,
    bytes: Option<blosc2_frame::Result<Vec<u8>>>,
) -> Result<Map<String, Value>, String> {
    let place = if frame.is_sparse() { "file" } else { "offset" };
    let mut m = Map::new();
    m.insert("index".into(), json!(i));
    match loc {
        ChunkLocation::Stored(off) => {
            let chunk = match bytes {
                Some(b) => b,
                None => frame.chunk(i).map_err(|f| f.msg)?,
            }
            .map_err(|e| describe(&e))?;
            let h = ChunkHeader::parse(&chunk).map_err(|e| describe(&e))?;
            m.insert(place.into(), json!(off));
            m.insert("special".into(), json!(special_name(&h)));
            m.insert("nbytes".into(), json!(h.nbytes()));
            m.insert("cbytes".into(), json!(h.cbytes()));
            m.insert("codec".into(), json!(codec_name(h.codec())));
            m.insert("filters".into(), json!(filter_names(&h.filter_ids())));
            m.insert("filters_meta".into(), json!(h.filters_meta()));
        }
        special => {
            // ChunkLocation's serde name of a special run: "zeros", "nan", "uninit".
            let kind = serde_json::to_value(special).map_err(|e| e.to_string())?;
            let nbytes = frame
                .chunk_nbytes(i)
                .map_err(|f| f.msg)?
                .map_err(|e| describe(&e))?;
            m.insert(place.into(), Value::Null);
            m.insert("special".into(), kind);
            m.insert("nbytes".into(), json!(nbytes));
            m.insert("cbytes".into(), json!(0));
            m.insert("codec".into(), Value::Null);
            m.insert("filters".into(), Value::Null);
            m.insert("filters_meta".into(), Value::Null);
        }
    }
    Ok(m)
}

/// One line of the `frame chunks` table.
fn chunk_line(m: &Map<String, Value>) -> String {
    let present = |k: &str| m.get(k).filter(|v| !v.is_null());
    let at = if let Some(o) = present("offset") {
        format!("offset {o}")
    } else if let Some(f) = present("file") {
        format!("file {f}")
    } else {
        String::from("-")
    };
    let at = match present("special").and_then(Value::as_str) {
        Some(s) if at == "-" => format!("special {s}"),
        Some(s) => format!("{at} ({s})"),
        None => at,
    };
    let filters = present("filters")
        .and_then(Value::as_array)
        .map(|f| {
            f.iter()
                .filter_map(Value::as_str)
                .filter(|s| *s != "none")
                .collect::<Vec<_>>()
                .join(",")
        })
        .unwrap_or_default();
    let num = |k: &str| present(k).map(Value::to_string).unwrap_or_default();
    let codec = present("codec").and_then(Value::as_str).unwrap_or("-");
    format!(
        "{:<6} {:<16} {:>8} {:>8}  {:<9} {}\n",
        num("index"),
        at,
        num("nbytes"),
        num("cbytes"),
        codec,
        if filters.is_empty() { "-" } else { &filters }
    )
}

/// `frame chunks IN [--json]`: a table, or a JSON array with one object per chunk.
fn chunks(a: &ListArgs) -> CliResult {
    let frame = open(&a.input)?;
    let mut rows = Vec::with_capacity(frame.nchunks());
    // From a URL the stored chunks are fetched CHUNKS_IN_FLIGHT at a time (concurrently);
    // locally they are read one by one.
    let index = frame.index().to_vec();
    for (start, batch) in index.chunks(CHUNKS_IN_FLIGHT).enumerate() {
        let first = start * CHUNKS_IN_FLIGHT;
        let mut fetched = frame.prefetch(first, batch)?.into_iter();
        for (k, &loc) in batch.iter().enumerate() {
            let i = first + k;
            let m = chunk_row(&frame, i, loc, fetched.next().flatten())
                .map_err(|e| Fail::input(in_name(&a.input), format!("chunk {i}: {e}")))?;
            rows.push(m);
        }
    }
    if a.json.json {
        return emit_json(&Value::Array(rows.into_iter().map(Value::Object).collect()));
    }
    let mut text = String::from("index  where            nbytes   cbytes  codec     filters\n");
    for m in &rows {
        text.push_str(&chunk_line(m));
    }
    emit(&text)
}

/// Metalayers and vlmetalayers of a frame as JSON.
fn layers_json(
    frame: &AnyFrame,
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
                in_name(path),
                format!("vlmetalayer {}: {}", l.name, describe(&e)),
            )
        })?;
        vl.insert(l.name.clone(), bytes_to_json(&bytes));
    }
    Ok((meta, vl))
}

/// `frame meta IN [--json]`.
fn meta(a: &ListArgs) -> CliResult {
    let frame = open(&a.input)?;
    let (meta, vl) = layers_json(&frame, &a.input)?;
    if a.json.json {
        return emit_json(&json!({"metalayers": meta, "vlmetalayers": vl}));
    }
    let mut text = String::new();
    for (k, v) in &meta {
        text.push_str(&format!("meta {k}: {v}\n"));
    }
    for (k, v) in &vl {
        text.push_str(&format!("vlmeta {k}: {v}\n"));
    }
    emit(&text)
}

/// The fixed-header fields `info` prints for a frame: `FrameHeader`'s serde fields, with the
/// codec and filters by name and without the frame type (`format` and `sparse` say it).
fn header_fields(m: &mut Map<String, Value>, h: &FrameHeader) -> CliResult {
    for (k, v) in to_object(h)? {
        match k.as_str() {
            "frame_type" => {}
            "codec_code" => {
                m.insert(
                    "codec".into(),
                    json!(codec_name(Codec::from_id(h.codec_id()))),
                );
            }
            "filters" => {
                m.insert(k, json!(filter_names(&h.filters)));
            }
            _ => {
                m.insert(k, v);
            }
        }
    }
    Ok(())
}

/// `info` on a frame (contiguous or sparse) or a b2nd array.
pub(crate) fn info_map(path: &Path) -> CliResult<Map<String, Value>> {
    let frame = open(path)?;
    let mut m = Map::new();
    if frame.metalayer(B2ND_METALAYER).is_some() {
        let array = AnyB2nd::new(frame).at(in_name(path))?;
        let meta = array.meta();
        m.insert("format".into(), json!("b2nd"));
        m.extend(to_object(meta)?);
        m.insert("itemsize".into(), json!(array.itemsize()));
        frame_fields(&mut m, &array.into_frame(), path)?;
    } else {
        let format = if frame.is_sparse() {
            "blosc2-sparse-frame"
        } else {
            "blosc2-frame"
        };
        m.insert("format".into(), json!(format));
        frame_fields(&mut m, &frame, path)?;
    }
    Ok(m)
}

/// The frame part of `info`: structure, fixed header, trailer and layers.
fn frame_fields(m: &mut Map<String, Value>, frame: &AnyFrame, path: &Path) -> CliResult {
    m.insert("sparse".into(), json!(frame.is_sparse()));
    m.insert("nchunks".into(), json!(frame.nchunks()));
    header_fields(m, frame.header())?;
    m.insert("trailer_len".into(), json!(frame.trailer_len()));
    let (meta, vl) = layers_json(frame, path)?;
    m.insert("metalayers".into(), Value::Object(meta));
    m.insert("vlmetalayers".into(), Value::Object(vl));
    Ok(())
}

/// `frame create IN OUT …`: reads the input one chunk at a time. To a file, the frame streams
/// to disk with `FrameFileWriter` (one chunk in memory): a contiguous frame through a temporary
/// file renamed at the end (only onto a free name without --overwrite), a sparse frame built in
/// a directory beside OUT and put in its place when complete. To stdout (`-`), the compressed
/// chunks are held until the input ends (a contiguous frame starts with its lengths), then
/// written with `FrameWriter::write_to`.
fn create(a: &CreateArgs) -> CliResult {
    if a.chunksize == 0 || a.chunksize > blosc_chunk::MAX_BUFFERSIZE {
        return Err(Fail::usage(format!(
            "--chunksize must be in 1..={}",
            blosc_chunk::MAX_BUFFERSIZE
        )));
    }
    let overwrite = a.overwrite.overwrite;
    if is_std(&a.output) {
        if a.sparse {
            return Err(Fail::usage(
                "a sparse frame is a directory: --sparse needs a path, not `-`",
            ));
        }
    } else if a.sparse {
        let plan = dir_output(
            &[&a.input],
            &a.output,
            DirKind::SparseFrame,
            overwrite,
            false,
        )?;
        return create_sparse(a, plan);
    } else {
        file_output(&[&a.input], &a.output, overwrite)?;
    }
    let params = FrameParams::new(a.cparams.cparams()?, a.chunksize);
    let meta = layers(a);
    if is_std(&a.output) {
        return create_to_stdout(a, params, &meta);
    }
    if let Some(url) = remote::parse_url(&a.output)? {
        // Built on local scratch space exactly as a local frame, then uploaded.
        let dir = tempfile::tempdir().at(remote::name(&url))?;
        let local = dir.path().join("frame.b2frame");
        let w = FrameFileWriter::create(&local, params, &meta, blosc2_frame::Durability::None)
            .at(remote::name(&url))?;
        feed_frame(a, w, &local, true).map_err(|f| remote::relabel(f, &local, url.url()))?;
        return remote::upload_file(&local, &url, write_mode(overwrite));
    }
    let w = FrameFileWriter::create(&a.output, params, &meta, blosc2_frame::Durability::None)
        .at(&a.output)?;
    feed_frame(a, w, &a.output, overwrite)
}

/// The `--meta` layers as `FrameWriter` takes them.
fn layers(a: &CreateArgs) -> Vec<(&str, &[u8])> {
    a.meta
        .iter()
        .map(|(n, b)| (n.as_str(), b.as_slice()))
        .collect()
}

/// `frame create --sparse`: the frame is built in a directory beside OUT (or, for a URL, on
/// local scratch space), then put in OUT's place: renamed (never onto an existing frame), or
/// swapped with the old frame for --overwrite. At a URL the new chunk files are numbered above
/// every chunk file there, the index is uploaded after them, and only then are the old chunk
/// files deleted: a reader sees the old frame or the new one.
fn create_sparse(a: &CreateArgs, plan: DirPlan) -> CliResult {
    let params = FrameParams::new(a.cparams.cparams()?, a.chunksize);
    let meta = layers(a);
    let durability = blosc2_frame::Durability::None;
    let Some(url) = remote::parse_url(&a.output)? else {
        let staging = Staging::new(&a.output)?;
        let w = FrameFileWriter::create_sparse(staging.path(), params, &meta, durability)
            .map_err(|e| staging.relabel(Fail::input(staging.path(), describe(&e))))?;
        feed_frame(a, w, staging.path(), true).map_err(|f| staging.relabel(f))?;
        return staging.publish(plan);
    };
    let old: Vec<String> = if plan == DirPlan::Replace {
        remote::list_prefix(&url)?
            .into_iter()
            .map(|(rel, _)| rel)
            .filter(|rel| chunk_number(rel).is_some())
            .collect()
    } else {
        Vec::new()
    };
    let dir = tempfile::tempdir().at(remote::name(&url))?;
    let local = dir.path().join("frame");
    std::fs::create_dir(&local).at(remote::name(&url))?;
    if let Some(max) = old.iter().filter_map(|rel| chunk_number(rel)).max() {
        // The new chunk files are numbered above every old one: the writer numbers above the
        // files it finds, and deletes this placeholder when it finishes.
        std::fs::write(local.join(format!("{max:08X}.chunk")), b"").at(remote::name(&url))?;
    }
    let w = FrameFileWriter::create_sparse(&local, params, &meta, durability)
        .map_err(|e| remote::relabel(Fail::input(&local, describe(&e)), &local, url.url()))?;
    feed_frame(a, w, &local, true).map_err(|f| remote::relabel(f, &local, url.url()))?;
    let mode = write_mode(plan == DirPlan::Replace);
    remote::upload_dir(&local, &url, blosc2_frame::SPARSE_FRAME_FILE, mode)?;
    remote::delete_below(&url, &old)
}

/// The number of a sparse frame's chunk file `%08X.chunk` (a direct child).
fn chunk_number(rel: &str) -> Option<u64> {
    let hex = rel.strip_suffix(".chunk")?;
    (hex.len() == 8 && !rel.contains('/'))
        .then(|| u64::from_str_radix(hex, 16).ok())
        .flatten()
}

/// Feeds the input to a frame writer for `output`, sets the vlmetalayers and finishes: over
/// an existing frame only if `overwrite`, otherwise [`Fail::appeared`] if one is there by now.
fn feed_frame(a: &CreateArgs, mut w: FrameFileWriter, output: &Path, overwrite: bool) -> CliResult {
    feed_chunks(a, |piece| w.append_data(piece).at(output))?;
    for (name, bytes) in &a.vlmeta {
        w.set_vlmetalayer(name, bytes).at(output)?;
    }
    if overwrite {
        w.finish().at(output)
    } else if w.finish_new().at(output)? {
        Ok(())
    } else {
        Err(Fail::appeared(output))
    }
}

/// `frame create IN - …`: the frame built in memory (at most [`MAX_WHOLE_INPUT`] bytes of
/// input), then streamed to stdout.
fn create_to_stdout(a: &CreateArgs, params: FrameParams, meta: &[(&str, &[u8])]) -> CliResult {
    let stdout = &out_name(&a.output);
    let mut w = FrameWriter::new(params).at(stdout)?;
    for (name, bytes) in meta {
        w.add_metalayer(name, bytes).at(stdout)?;
    }
    feed_chunks(a, |piece| {
        if w.nbytes().saturating_add(piece.len() as u64) > MAX_WHOLE_INPUT {
            return Err(Fail::input(
                in_name(&a.input),
                format!(
                    "holds more than {MAX_WHOLE_INPUT} bytes, the most a frame built in memory for stdout may have"
                ),
            ));
        }
        w.append_data(piece).at(in_name(&a.input))
    })?;
    for (name, bytes) in &a.vlmeta {
        w.set_vlmetalayer(name, bytes).at(stdout)?;
    }
    let mut out = BufWriter::with_capacity(1 << 20, std::io::stdout().lock());
    match w.write_to(&mut out) {
        Ok(()) => out.flush().map_err(|e| stdout_error(&e)),
        Err(blosc2_frame::Error::Io(e)) => Err(stdout_error(&e)),
        Err(e) => Err(Fail::input(stdout, describe(&e))),
    }
}

/// Reads the input in `chunksize` pieces (the last may be shorter) and hands each to `append`,
/// with a progress bar in bytes.
fn feed_chunks(a: &CreateArgs, mut append: impl FnMut(&[u8]) -> CliResult) -> CliResult {
    let name = &in_name(&a.input);
    let (mut source, bar, cap): (Box<dyn Read>, _, _) = if is_std(&a.input) {
        let bar = indicatif::ProgressBar::hidden();
        (Box::new(std::io::stdin().lock()), bar, a.chunksize)
    } else if let Some(url) = remote::parse_url(&a.input)? {
        let reader = remote::ObjectReader::open(&url)?;
        let total = reader.size;
        let cap = usize::try_from(total)
            .unwrap_or(usize::MAX)
            .clamp(1, a.chunksize);
        (Box::new(reader), progress_bytes(total, "compress"), cap)
    } else {
        let file = open_input(&a.input)?;
        let meta = file.metadata().at(name)?;
        let total = meta.len();
        // No bigger than the input needs: a short input is one (short) chunk.
        let cap = if meta.is_file() {
            usize::try_from(total)
                .unwrap_or(usize::MAX)
                .clamp(1, a.chunksize)
        } else {
            a.chunksize
        };
        (Box::new(file), progress_bytes(total, "compress"), cap)
    };
    let mut buf = vec![0u8; cap];
    loop {
        let n = read_full(&mut source, &mut buf).at(name)?;
        if n == 0 {
            break;
        }
        append(buf.get(..n).unwrap_or_default())?;
        bar.inc(n as u64);
        if n < buf.len() {
            break;
        }
    }
    bar.finish_and_clear();
    Ok(())
}
