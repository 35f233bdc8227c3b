//! b2nd frames as virtual Zarr v3 references (feature `references`): the array of a `.b2nd`
//! (or `.b2frame` with a `b2nd` metalayer) contiguous frame declared as a Zarr v3 array whose
//! chunks are the Blosc2 chunks of the frame, read in place through the `b2nd` codec
//! ([`B2ndCodec`](crate::B2ndCodec), spec `spec/b2nd-codec/`).
//!
//! Only the frame's metadata is read: the fixed header with its metalayers, the trailer and
//! the index chunk (the offsets of the chunks); never a chunk. A local file is read with
//! positional reads and its modification time and length are compared before and after; an
//! object is opened like [`RemoteFrame`] opens it (a speculative head and tail, then the
//! missing metadata ranges in one coalesced round), every read pinned to the ETag of the
//! first.
//!
//! The array: `shape` the b2nd shape, a `regular` chunk grid of the b2nd `chunkshape`, the
//! `default` chunk key encoding (`c/i/j/…`), the data type of the NumPy dtype (`|b1`, `i1`–`i8`,
//! `u1`–`u8`, `f2`–`f8`, `c8`, `c16` in either byte order; others are refused), fill value 0
//! and the codec `b2nd` with the b2nd `blockshape`, the dtype's byte order and (for writers)
//! the frame's compressor, level and shuffle. Chunk `i` of the index is the chunk at the C
//! order position `i` of the chunk grid; its reference is the byte range from its offset to
//! the next stored chunk's offset (or the end of the chunk section): a Blosc2 chunk knows its
//! length (`cbytes`), and decoders ignore what follows it, so a frame whose chunks were
//! rewritten (leaving unused bytes between chunks) still reads right.
//!
//! Special chunks of the index (stored as a flag, no bytes): runs of zeros and uninitialised
//! runs get no reference, so they read as the fill value 0 (what python-blosc2 returns for
//! zeros; uninitialised content is unspecified, and this crate's own reads also give zeros);
//! a run of NaNs (float32/float64 arrays) is given inline ([`ReferenceSink::inline`]) as the
//! 32-byte Blosc2 special chunk of NaNs of the chunk's size, which the `b2nd` codec decodes.
//! A sink without inline chunks refuses it ([`Error::Sink`] naming the chunk).
//!
//! Refused with [`Error::NotVirtualizable`]: sparse frames (a directory of chunk files), frames
//! without a `b2nd` metalayer (plain super-chunks: their chunks are not the chunks of an
//! N-dimensional array), dtypes without a Zarr v3 data type (structured, strings, datetimes).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use scifmt_io::zarrs_metadata::v3::ArrayMetadataV3;
use scifmt_io::{Checksum, ChunkReference, Location, ReferenceSink, reference_url};
use serde_json::{Value, json};

use crate::b2nd::{B2ND_METALAYER, B2ndMeta, unravel};
use crate::b2nd_codec::{B2ndCodecConfig, Endian};
use crate::error::{Error, Result};
use crate::header::FrameHeader;
use crate::limits::Limits;
use crate::offsets::ChunkLocation;
use crate::reader::{Frame, MIN_CHUNK_LEN};
use crate::remote::{RemoteFrame, RemoteOptions};

/// Chunks between two looks at the cancel flag.
const CANCEL_EVERY: usize = 4096;

/// Options of [`virtualize`], built as `VirtualizeOptions::default().with_…(…)`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct VirtualizeOptions {
    /// Allocation caps for the metadata read (the number of chunks of the index above all);
    /// they replace the limits of [`VirtualizeOptions::remote`].
    pub limits: Limits,
    /// Requests to object stores. The default fetches a speculative head of 4 KiB and tail of
    /// 16 KiB at open (rather than [`RemoteFrame`]'s 64 KiB each: no chunk is read after).
    pub remote: RemoteOptions,
    /// Raised to stop ([`Error::Cancelled`]); the sink decides what becomes of what it
    /// received.
    pub cancel: scifmt_io::Cancel,
}

impl Default for VirtualizeOptions {
    fn default() -> Self {
        Self {
            limits: Limits::default(),
            remote: RemoteOptions::default()
                .map_format(|f| f.with_head_bytes(4 << 10).with_tail_bytes(16 << 10)),
            cancel: scifmt_io::Cancel::new(),
        }
    }
}

impl VirtualizeOptions {
    /// Sets the allocation caps.
    #[must_use]
    pub fn with_limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Sets the options of object-store requests.
    #[must_use]
    pub fn with_remote(mut self, remote: RemoteOptions) -> Self {
        self.remote = remote;
        self
    }

    /// Sets the flag that stops the run (shared with the caller, who raises it).
    #[must_use]
    pub fn with_cancel(mut self, cancel: scifmt_io::Cancel) -> Self {
        self.cancel = cancel;
        self
    }
}

/// What [`virtualize`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct VirtualizeSummary {
    /// Arrays declared (1 per frame).
    pub arrays: u64,
    /// Frame files or objects read (their metadata only).
    pub files: u64,
    /// Byte-range references (one per stored chunk).
    pub references: u64,
    /// Chunks given inline (runs of NaNs).
    pub inline: u64,
    /// Chunks without a reference, read as the fill value 0 (runs of zeros, uninitialised
    /// runs, chunks past the end of the index).
    pub fill_chunks: u64,
    /// Bytes read from the frames (header, metalayers, index, trailer; for objects also the
    /// speculative head and tail fetched with them).
    pub bytes_read: u64,
}

/// Streams the b2nd frame at `src` (a local `.b2nd` file or an object URL) into `sink` as the
/// array at the root of the hierarchy: its metadata, then one reference per stored chunk (see
/// the module docs).
///
/// ```
/// use blosc2_frame::{VirtualizeOptions, b2nd_frame_from_slice, blosc_chunk::CParams};
/// use scifmt_io::{Durability, KerchunkWriter, RemoteOptions};
///
/// let dir = tempfile::tempdir()?;
/// let src = dir.path().join("a.b2nd");
/// let values: Vec<u16> = (0..60).collect();
/// let frame = b2nd_frame_from_slice(&values, &[6, 10], &[4, 4], &[2, 2], &CParams::default())?;
/// std::fs::write(&src, frame.to_bytes()?)?;
/// let out = dir.path().join("refs.json");
/// let mut w = KerchunkWriter::create(&out.as_path().into(), &RemoteOptions::<()>::default())?;
/// let summary = blosc2_frame::virtualize(src.as_path(), &mut w, &VirtualizeOptions::default())?;
/// w.finish(Durability::None)?;
/// assert_eq!((summary.arrays, summary.references), (1, 6));
/// let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(&out)?)?;
/// let meta: serde_json::Value = serde_json::from_str(doc["refs"]["zarr.json"].as_str().unwrap())?;
/// assert_eq!(meta["data_type"], "uint16");
/// assert_eq!(meta["codecs"][0]["configuration"]["blockshape"], serde_json::json!([2, 2]));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
/// [`Error::NotVirtualizable`] (naming the source) for a sparse frame, a frame without a
/// `b2nd` metalayer, a dtype without a Zarr v3 data type, a header whose type size or chunk
/// size disagrees with the metalayer; the validation errors of [`Frame::open`] for a bad
/// header, metalayer, index or trailer ([`Error::Invalid`] naming field and offset, …);
/// [`Error::LimitExceeded`]; [`Error::Io`] / [`Error::Remote`] for failed reads;
/// [`Error::Changed`] for a source that changed while it was read; [`Error::Cancelled`];
/// [`Error::Sink`] for what the sink refuses (a NaN run, which needs an inline chunk, into a
/// sink without them).
pub fn virtualize(
    src: impl Into<Location>,
    sink: &mut dyn ReferenceSink,
    options: &VirtualizeOptions,
) -> Result<VirtualizeSummary> {
    virtualize_at(&src.into(), "", sink, options)
}

/// Whether `src` is a Blosc2 frame for [`virtualize`] rather than another kind of source
/// (e.g. WKW data, for callers that take both): a local file starting with the frame magic
/// (`b2frame\0` at byte 2), a file or URL named `*.b2nd` or `*.b2frame` (any case), or a local
/// directory holding [`SPARSE_FRAME_FILE`](crate::SPARSE_FRAME_FILE) (a sparse frame, which
/// [`virtualize`] refuses saying so). Reads at most the first 10 bytes of a local file and
/// sends no request: an object is told by its name alone.
///
/// ```
/// use blosc2_frame::is_frame_source;
/// use scifmt_io::Location;
///
/// let dir = tempfile::tempdir()?;
/// let frame = dir.path().join("data.bin");
/// std::fs::write(&frame, b"\x90\xa8b2frame\0rest of a header")?;
/// assert!(is_frame_source(&Location::from(frame.as_path())));
/// assert!(is_frame_source(&Location::from(dir.path().join("missing.B2ND").as_path())));
/// assert!(!is_frame_source(&Location::from(dir.path())));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[must_use]
pub fn is_frame_source(src: &Location) -> bool {
    let named = |name: &str| {
        let lower = name.to_ascii_lowercase();
        lower.ends_with(".b2nd") || lower.ends_with(".b2frame")
    };
    match src {
        Location::Local(p) if p.is_dir() => p.join(crate::SPARSE_FRAME_FILE).is_file(),
        Location::Local(p) => {
            let mut head = [0u8; 10];
            let magic = std::fs::File::open(p)
                .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut head))
                .is_ok()
                && head.get(2..) == Some(&crate::header::MAGIC[..]);
            magic || p.to_str().is_some_and(named)
        }
        Location::Store(s) => named(s.url().trim_end_matches('/')),
    }
}

/// [`virtualize`] into the array at node path `at` (`""` for the root; `/`-separated names
/// otherwise: the caller declares the groups above it).
///
/// # Errors
/// As [`virtualize`]; [`Error::Sink`] for a path that is not a node path.
pub fn virtualize_at(
    src: &Location,
    at: &str,
    sink: &mut dyn ReferenceSink,
    options: &VirtualizeOptions,
) -> Result<VirtualizeSummary> {
    options.cancel.check()?;
    let url = reference_url(src)?;
    let opened = match src {
        Location::Local(path) => open_local(path, &url, &options.limits),
        Location::Store(s) => open_remote(s, &url, options),
    }
    .map_err(|e| match e {
        // I/O errors of the frame's reads name the source.
        Error::Io(e) => Error::Io(std::io::Error::new(e.kind(), format!("{url}: {e}"))),
        e => e,
    })?;
    let frame = opened.frame.frame();
    let meta = b2nd_meta(frame, &url)?;
    let dtype = ZarrType::of(&meta.dtype).ok_or_else(|| Error::NotVirtualizable {
        url: url.clone(),
        what: format!(
            "the dtype {:?} has no Zarr v3 data type here (bool, integers, floats and complex \
             numbers of either byte order are)",
            meta.dtype
        ),
    })?;
    check_sizes(frame.header(), &meta, &dtype, &url)?;
    let array = array_metadata(frame.header(), &meta, &dtype, &url)?;
    sink.array(at, &array).map_err(Error::Sink)?;
    let mut summary = VirtualizeSummary {
        arrays: 1,
        files: 1,
        bytes_read: opened.bytes_read,
        ..VirtualizeSummary::default()
    };
    let grid = meta.chunks_per_dim();
    let nchunks = meta.nchunks();
    let index = frame.index();
    if index.len() as u64 > nchunks {
        return Err(Error::invalid(
            "index chunk",
            frame.index_start()?,
            format!(
                "lists {} chunks, the b2nd chunk grid {grid:?} has {nchunks}",
                index.len()
            ),
        ));
    }
    summary.fill_chunks = nchunks - index.len() as u64;
    let ends = ChunkEnds::new(frame);
    let header_len = u64::from(frame.header().header_len);
    let mut nan_chunk: Option<Vec<u8>> = None;
    for (i, loc) in index.iter().enumerate() {
        if i % CANCEL_EVERY == 0 {
            options.cancel.check()?;
        }
        let indices = unravel(i as u64, &grid);
        match *loc {
            ChunkLocation::Stored(off) => {
                let len = ends.len_of(i, off)?;
                let start = header_len.checked_add(off).ok_or(Error::Overflow {
                    what: "chunk offset",
                })?;
                let r = ChunkReference::new(at, &indices, &url, start, len)
                    .with_checksum(Some(&opened.checksum));
                sink.reference(&r).map_err(Error::Sink)?;
                summary.references += 1;
            }
            ChunkLocation::Nan => {
                let bytes = match &nan_chunk {
                    Some(b) => b,
                    None => nan_chunk.insert(nans_chunk(&meta, &dtype, i, &url)?),
                };
                sink.inline(at, &indices, bytes).map_err(Error::Sink)?;
                summary.inline += 1;
            }
            // Zeros and uninitialised runs: the fill value.
            _ => summary.fill_chunks += 1,
        }
    }
    Ok(summary)
}

/// A frame opened by its metadata.
enum OpenedFrame {
    Local(Frame<'static>),
    Remote(Box<RemoteFrame>),
}

impl OpenedFrame {
    fn frame(&self) -> &Frame<'static> {
        match self {
            Self::Local(f) => f,
            Self::Remote(r) => &r.frame,
        }
    }
}

/// The frame, the source's checksum, the bytes read.
struct Opened {
    frame: OpenedFrame,
    checksum: Checksum,
    bytes_read: u64,
}

/// A [`scifmt_io::ReadAt`] that counts the bytes read through it.
struct Counting<R> {
    inner: R,
    read: Arc<AtomicU64>,
}

impl<R: scifmt_io::ReadAt> scifmt_io::ReadAt for Counting<R> {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
        self.inner.read_exact_at(buf, offset)?;
        self.read.fetch_add(buf.len() as u64, Ordering::Relaxed);
        Ok(())
    }

    fn size(&self) -> std::io::Result<u64> {
        self.inner.size()
    }
}

/// `Error::NotVirtualizable` for a sparse frame.
fn sparse(url: &str) -> Error {
    Error::NotVirtualizable {
        url: url.to_owned(),
        what: "a sparse frame (a directory of chunk files); only contiguous frames (.b2nd, \
               .b2frame files) are virtualized so far"
            .into(),
    }
}

/// Opens the local frame file `path` (named `url`) by its metadata; a file that changes while
/// it is read is [`Error::Changed`].
fn open_local(path: &std::path::Path, url: &str, limits: &Limits) -> Result<Opened> {
    if path.is_dir() {
        if !path.join(crate::SPARSE_FRAME_FILE).is_file() {
            return Err(Error::NotVirtualizable {
                url: url.to_owned(),
                what: format!(
                    "a directory without {}: neither a frame file nor a sparse frame",
                    crate::SPARSE_FRAME_FILE
                ),
            });
        }
        return Err(sparse(url));
    }
    let file = std::fs::File::open(path)?;
    let stamp = |f: &std::fs::File| -> Result<(Checksum, u64)> {
        let m = f.metadata()?;
        Ok((Checksum::of_file(&m, path)?, m.len()))
    };
    let before = stamp(&file)?;
    let read = Arc::new(AtomicU64::new(0));
    let counting = Counting {
        inner: file.try_clone()?,
        read: Arc::clone(&read),
    };
    let frame = match Frame::from_reader(counting, 0, limits) {
        Err(Error::FrameType { found: 1, .. }) => return Err(sparse(url)),
        r => r?,
    };
    if stamp(&file)? != before {
        return Err(Error::Changed {
            url: url.to_owned(),
        });
    }
    Ok(Opened {
        frame: OpenedFrame::Local(frame),
        checksum: before.0,
        bytes_read: read.load(Ordering::Relaxed),
    })
}

/// Opens the frame object at `s` (named `url`) by its metadata, pinned to one version.
fn open_remote(
    s: &scifmt_io::StoreLocation,
    url: &str,
    options: &VirtualizeOptions,
) -> Result<Opened> {
    let limits = options.limits;
    let remote = options.remote.clone().map_format(|f| f.with_limits(limits));
    let rf = scifmt_io::block_on(RemoteFrame::open_at(s.object(), remote))??;
    if rf.is_sparse() {
        return Err(sparse(url));
    }
    let checksum = match rf.e_tag() {
        Some(e) => Checksum::ETag(e.to_owned()),
        None => {
            let meta =
                scifmt_io::block_on(rf.remote.obj.head())??.ok_or_else(|| Error::Changed {
                    url: url.to_owned(),
                })?;
            Checksum::of_object(&meta)
        }
    };
    let bytes_read = rf.remote.opened_bytes;
    Ok(Opened {
        frame: OpenedFrame::Remote(Box::new(rf)),
        checksum,
        bytes_read,
    })
}

/// The frame's `b2nd` metalayer.
fn b2nd_meta(frame: &Frame<'_>, url: &str) -> Result<B2ndMeta> {
    let raw = frame
        .metalayer(B2ND_METALAYER)
        .ok_or_else(|| Error::NotVirtualizable {
            url: url.to_owned(),
            what: "no \"b2nd\" metalayer: a plain super-chunk, whose chunks are not the chunks \
                   of an N-dimensional array (only b2nd arrays are virtualized)"
                .into(),
        })?;
    let meta = B2ndMeta::parse(raw)?;
    if meta.shape.is_empty() {
        return Err(Error::NotVirtualizable {
            url: url.to_owned(),
            what: "a 0-dimensional b2nd array (the b2nd codec needs 1 to 16 dimensions)".into(),
        });
    }
    Ok(meta)
}

/// The Zarr v3 data type of a NumPy dtype string.
struct ZarrType {
    name: &'static str,
    endian: Endian,
    size: usize,
    fill: Value,
    float: bool,
}

impl ZarrType {
    /// `<f8` → float64 little-endian, …; `None` for dtypes without a Zarr v3 data type.
    fn of(dtype: &str) -> Option<Self> {
        let mut chars = dtype.chars();
        let order = chars.next()?;
        let kind = chars.next()?;
        let digits = chars.as_str();
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let size: usize = digits.parse().ok()?;
        let (name, fill, float) = match (kind, size) {
            ('b', 1) => ("bool", json!(false), false),
            ('i', 1) => ("int8", json!(0), false),
            ('i', 2) => ("int16", json!(0), false),
            ('i', 4) => ("int32", json!(0), false),
            ('i', 8) => ("int64", json!(0), false),
            ('u', 1) => ("uint8", json!(0), false),
            ('u', 2) => ("uint16", json!(0), false),
            ('u', 4) => ("uint32", json!(0), false),
            ('u', 8) => ("uint64", json!(0), false),
            ('f', 2) => ("float16", json!(0.0), true),
            ('f', 4) => ("float32", json!(0.0), true),
            ('f', 8) => ("float64", json!(0.0), true),
            ('c', 8) => ("complex64", json!([0.0, 0.0]), false),
            ('c', 16) => ("complex128", json!([0.0, 0.0]), false),
            _ => return None,
        };
        let endian = match order {
            '<' => Endian::Little,
            '>' => Endian::Big,
            '=' => Endian::native(),
            '|' if size == 1 => Endian::Little,
            _ => return None,
        };
        Some(Self {
            name,
            endian,
            size,
            fill,
            float,
        })
    }
}

/// The header's type size and chunk size must be those of the metalayer's chunks.
fn check_sizes(h: &FrameHeader, meta: &B2ndMeta, dtype: &ZarrType, url: &str) -> Result<()> {
    let want_ts = if dtype.size > 255 {
        1
    } else {
        dtype.size as u64
    };
    if u64::from(h.typesize) != want_ts {
        return Err(Error::NotVirtualizable {
            url: url.to_owned(),
            what: format!(
                "the header's typesize {} is not the {}-byte item size of the dtype {:?}",
                h.typesize, dtype.size, meta.dtype
            ),
        });
    }
    let chunk_bytes = meta
        .chunk_items()
        .checked_mul(dtype.size as u64)
        .ok_or(Error::Overflow {
            what: "b2nd chunk size",
        })?;
    if h.chunksize != 0 && u64::from(h.chunksize) != chunk_bytes {
        return Err(Error::NotVirtualizable {
            url: url.to_owned(),
            what: format!(
                "the header's chunksize {} is not the {chunk_bytes} bytes of a b2nd chunk \
                 (extchunkshape {:?} of {}-byte items)",
                h.chunksize,
                meta.extchunkshape(),
                dtype.size
            ),
        });
    }
    Ok(())
}

/// The `b2nd` codec configuration of the frame: its block shape and byte order, and for
/// writers its compressor, level and shuffle where the `b2nd` codec has them.
fn codec_config(h: &FrameHeader, meta: &B2ndMeta, dtype: &ZarrType) -> B2ndCodecConfig {
    let mut c = B2ndCodecConfig::new(&meta.blockshape).with_endian(dtype.endian);
    let codec = h.codec();
    if blosc_chunk::Codec::BLOSC1.contains(&codec) {
        c = c.with_cname(codec);
    }
    if h.clevel <= 9 {
        c = c.with_clevel(h.clevel);
    }
    let filters = h.filter_pipeline();
    let shuffle = if filters.contains(&blosc_chunk::Filter::BitShuffle) {
        blosc_chunk::BloscShuffle::BitShuffle
    } else if filters.contains(&blosc_chunk::Filter::Shuffle) {
        blosc_chunk::BloscShuffle::Shuffle
    } else {
        blosc_chunk::BloscShuffle::NoShuffle
    };
    c.with_shuffle(shuffle)
}

/// The Zarr v3 metadata of the array.
fn array_metadata(
    h: &FrameHeader,
    meta: &B2ndMeta,
    dtype: &ZarrType,
    url: &str,
) -> Result<ArrayMetadataV3> {
    let config = codec_config(h, meta, dtype);
    let codec = json!({"name": B2ndCodecConfig::NAME, "configuration": config_json(&config)});
    let doc = json!({
        "zarr_format": 3,
        "node_type": "array",
        "shape": meta.shape,
        "data_type": dtype.name,
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": meta.chunkshape}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": dtype.fill,
        "codecs": [codec],
    });
    serde_json::from_value(doc).map_err(|e| Error::Internal {
        what: format!("{url}: array metadata: {e}"),
    })
}

/// The codec's `configuration` object (as `B2ndCodecConfig::to_json` of feature `zarrs`
/// writes it).
fn config_json(c: &B2ndCodecConfig) -> Value {
    json!({
        "blockshape": c.blockshape,
        "endian": c.endian.name(),
        "cname": c.cname.name(),
        "clevel": c.clevel,
        "shuffle": c.shuffle.name(),
    })
}

/// The inline chunk of a NaN run (chunk `i`): C-Blosc2's 32-byte special chunk of NaNs of a
/// whole b2nd chunk's size. It decodes to the NaN bytes C-Blosc2 fills such runs with (this
/// machine's order, as python-blosc2 returns them, whatever the dtype's byte order).
fn nans_chunk(meta: &B2ndMeta, dtype: &ZarrType, i: usize, url: &str) -> Result<Vec<u8>> {
    if !dtype.float || !matches!(dtype.size, 4 | 8) {
        return Err(Error::NotVirtualizable {
            url: url.to_owned(),
            what: format!(
                "chunk {i} is a run of NaNs in an array of dtype {:?} (float32 or float64 only)",
                meta.dtype
            ),
        });
    }
    let n = meta
        .chunk_items()
        .checked_mul(dtype.size as u64)
        .and_then(|n| usize::try_from(n).ok())
        .ok_or(Error::Overflow {
            what: "b2nd chunk size",
        })?;
    blosc_chunk::nans_chunk(n, dtype.size).map_err(|source| Error::Chunk {
        site: format!("chunk {i} (NaN run)"),
        source,
    })
}

/// Where each stored chunk of a contiguous frame ends: at the next stored chunk's offset, or
/// at the end of the chunk section.
struct ChunkEnds {
    sorted: Vec<u64>,
    section_end: u64,
    index_start: u64,
}

impl ChunkEnds {
    fn new(frame: &Frame<'_>) -> Self {
        let mut sorted: Vec<u64> = frame
            .index()
            .iter()
            .filter_map(|l| match l {
                ChunkLocation::Stored(o) => Some(*o),
                _ => None,
            })
            .collect();
        sorted.sort_unstable();
        sorted.dedup();
        Self {
            sorted,
            section_end: frame.header().cbytes,
            index_start: frame.index_start().unwrap_or(0),
        }
    }

    /// The length of stored chunk `i` at section offset `off` (at least a chunk header).
    fn len_of(&self, i: usize, off: u64) -> Result<u64> {
        let next = match self.sorted.binary_search(&off) {
            Ok(k) => self.sorted.get(k + 1).copied(),
            Err(_) => None,
        };
        let end = next.unwrap_or(self.section_end).min(self.section_end);
        let len = end.saturating_sub(off);
        if len < MIN_CHUNK_LEN {
            return Err(Error::invalid(
                "chunk offset",
                self.index_start,
                format!(
                    "chunk {i} at offset {off} leaves {len} bytes before the next chunk or the \
                     end of the chunk section ({end}): less than a chunk header"
                ),
            ));
        }
        Ok(len)
    }
}
