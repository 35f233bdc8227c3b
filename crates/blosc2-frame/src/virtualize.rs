//! b2nd frames as virtual Zarr v3 references (feature `references`): the array of a `.b2nd`
//! (or `.b2frame` with a `b2nd` metalayer) frame, contiguous or sparse, declared as a Zarr v3
//! array whose chunks are the Blosc2 chunks of the frame, read in place through the `b2nd` codec
//! ([`B2ndCodec`](crate::B2ndCodec), spec `spec/b2nd-codec/`).
//!
//! Only the frame's metadata is read: the fixed header with its metalayers, the trailer and
//! the index chunk (where the chunks are); never a chunk. A local file is read with
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
//! order position `i` of the chunk grid.
//!
//! # Contiguous frames
//! One file (or object): header, chunks, index chunk, trailer. A stored chunk's reference is
//! the byte range of the frame from its offset to the next stored chunk's offset (or the end of
//! the chunk section): a Blosc2 chunk knows its length (`cbytes`), and decoders ignore what
//! follows it, so a frame whose chunks were rewritten (leaving unused bytes between chunks)
//! still reads right. Every reference carries the frame's checksum (ETag, or modification
//! time).
//!
//! # Sparse frames
//! A directory (an object prefix) holding `chunks.b2frame` — a frame of type 1 made of the
//! header (with the metalayers), the index chunk and the trailer, no chunks — and one file per
//! stored chunk, named by the number the index holds for it as 8 upper-case hexadecimal digits
//! and `.chunk` (`00000000.chunk`, `0000001A.chunk`, …), each file one whole Blosc2 chunk
//! (C-Blosc2's
//! [README_SFRAME_FORMAT.rst](https://github.com/Blosc/c-blosc2/blob/main/README_SFRAME_FORMAT.rst)
//! and
//! [README_CFRAME_FORMAT.rst](https://github.com/Blosc/c-blosc2/blob/main/README_CFRAME_FORMAT.rst);
//! this crate's [format notes](crate::file_format)). The source is the
//! directory or its `chunks.b2frame`. A stored chunk's reference is its whole file: the file's
//! URL, offset 0, the file's length, and the file's own checksum (ETag, or modification time). Besides `chunks.b2frame`,
//! only the chunk files' metadata is read: locally one `stat` per chunk file the index names;
//! on an object store one `LIST` of the directory (its pages), which gives every object's
//! length, ETag and modification time (objects the index does not name are skipped, so memory
//! stays bounded by the index). Checked without reading a chunk's bytes: every chunk file the
//! index names exists ([`Error::Io`] with `NotFound` locally, [`Error::Remote`] with
//! `NotFound` on a store, naming the file and the chunk) and is a file of at least a chunk
//! header's 16 bytes ([`Error::Invalid`] naming the file). Not checked, as it needs the
//! chunk's first bytes: that the file's length agrees with the `cbytes` of the chunk's header
//! (C-Blosc2 writes exactly `cbytes` bytes; a longer file still decodes, a shorter one or a
//! damaged header fails when the chunk is read through the reference, by the `b2nd` codec).
//!
//! # Special chunks
//! Special chunks of the index (stored as a flag, no bytes, in either kind of frame): runs of
//! zeros and uninitialised runs get no reference, so they read as the fill value 0 (what
//! python-blosc2 returns for zeros; uninitialised content is unspecified, and this crate's own
//! reads also give zeros); a run of NaNs (float32/float64 arrays) is given inline
//! ([`ReferenceSink::inline`]) as the 32-byte Blosc2 special chunk of NaNs of the chunk's size,
//! which the `b2nd` codec decodes. A sink without inline chunks refuses it ([`Error::Sink`]
//! naming the chunk).
//!
//! Refused with [`Error::NotVirtualizable`]: frames without a `b2nd` metalayer (plain
//! super-chunks: their chunks are not the chunks of an N-dimensional array), dtypes without a
//! Zarr v3 data type (structured, strings, datetimes).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use scifmt_io::zarrs_metadata::v3::ArrayMetadataV3;
use scifmt_io::{Checksum, ChunkReference, Location, ReferenceSink, reference_url};
use serde_json::{Value, json};

use crate::b2nd::{B2ND_METALAYER, B2ndMeta, unravel};
use crate::b2nd_codec::{B2ndCodecConfig, Endian};
use crate::error::{Error, Result};
use crate::header::{FrameHeader, FrameType};
use crate::limits::Limits;
use crate::offsets::ChunkLocation;
use crate::reader::{Frame, MIN_CHUNK_LEN, SPARSE_FRAME_FILE};
use crate::remote::{RemoteFrame, RemoteOptions};
use crate::virtualize_sparse::{ChunkDir, ChunkFiles};

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
    /// `concurrency` bounds the `HEAD` requests of a sparse frame's chunk files on stores whose
    /// listings carry no ETags.
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
    /// Frame files or objects read (their metadata only): 1 for a contiguous frame; for a
    /// sparse frame its `chunks.b2frame` and the distinct chunk files referenced (whose
    /// metadata only was read).
    pub files: u64,
    /// Byte-range references (one per stored chunk; a sparse frame's: whole chunk files).
    pub references: u64,
    /// Chunks given inline (runs of NaNs).
    pub inline: u64,
    /// Chunks without a reference, read as the fill value 0 (runs of zeros, uninitialised
    /// runs, chunks past the end of the index).
    pub fill_chunks: u64,
    /// Bytes read from the frames (header, metalayers, index, trailer; for objects also the
    /// speculative head and tail fetched with them); never a chunk's. The listing of a sparse
    /// frame's directory on a store is not counted.
    pub bytes_read: u64,
}

/// Streams the b2nd frame at `src` into `sink` as the array at the root of the hierarchy: its
/// metadata, then one reference per stored chunk (see the module docs). `src` is a local path
/// or an object URL: a contiguous frame (a `.b2nd` or `.b2frame` file or object), or a sparse
/// frame (its directory or prefix, or its `chunks.b2frame`), whose chunks are referenced as
/// the whole chunk files.
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
/// [`Error::NotVirtualizable`] (naming the source) for a frame without a `b2nd` metalayer, a
/// dtype without a Zarr v3 data type, a header whose type size or chunk size disagrees with
/// the metalayer, a directory without `chunks.b2frame`; the validation errors of
/// [`Frame::open`] for a bad header, metalayer, index or trailer ([`Error::Invalid`] naming
/// field and offset, …); for a sparse frame, [`Error::Io`] (local) or [`Error::Remote`]
/// (store) with `NotFound` for a chunk file the index names that is not there, naming the
/// file and the chunk, and [`Error::Invalid`] for a chunk file shorter than a chunk header;
/// [`Error::LimitExceeded`]; [`Error::Io`] / [`Error::Remote`] for failed reads, `stat`s
/// and listings (a store that cannot list, such as a plain HTTP server, cannot serve a sparse
/// frame);
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
/// directory holding [`SPARSE_FRAME_FILE`] (a sparse frame). Reads
/// at most the first 10 bytes of a local file and sends no request: an object (or a sparse
/// frame's prefix) is told by its name alone.
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
    let index_start = frame.index_start()?;
    // Where the stored chunks are; for a sparse frame the chunk files' metadata, before the
    // sink receives anything.
    let stored = match &opened.layout {
        Layout::Contiguous { checksum } => Stored::Contiguous {
            ends: ChunkEnds::new(frame),
            header_len: u64::from(frame.header().header_len),
            checksum,
        },
        Layout::Sparse { dir, dir_url } => Stored::Sparse(ChunkFiles::read(
            dir,
            dir_url,
            index,
            index_start,
            &options.cancel,
        )?),
    };
    sink.array(at, &array).map_err(Error::Sink)?;
    let chunk_files = match &stored {
        Stored::Contiguous { .. } => 0,
        Stored::Sparse(files) => files.len() as u64,
    };
    let mut summary = VirtualizeSummary {
        arrays: 1,
        files: 1 + chunk_files,
        bytes_read: opened.bytes_read,
        fill_chunks: nchunks - index.len() as u64,
        ..VirtualizeSummary::default()
    };
    let mut nan_chunk: Option<Vec<u8>> = None;
    for (i, loc) in index.iter().enumerate() {
        if i % CANCEL_EVERY == 0 {
            options.cancel.check()?;
        }
        let indices = unravel(i as u64, &grid);
        match *loc {
            ChunkLocation::Stored(off) => {
                match &stored {
                    Stored::Contiguous {
                        ends,
                        header_len,
                        checksum,
                    } => {
                        let len = ends.len_of(i, off)?;
                        let start = header_len.checked_add(off).ok_or(Error::Overflow {
                            what: "chunk offset",
                        })?;
                        let r = ChunkReference::new(at, &indices, &url, start, len)
                            .with_checksum(Some(checksum));
                        sink.reference(&r).map_err(Error::Sink)?;
                    }
                    Stored::Sparse(files) => {
                        let (num, file) = files.get(i, off, index_start)?;
                        let file_url = files.url(num);
                        let r = ChunkReference::new(at, &indices, &file_url, 0, file.len)
                            .with_checksum(Some(&file.checksum));
                        sink.reference(&r).map_err(Error::Sink)?;
                    }
                }
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

/// The frame, where its chunks are, the bytes read.
struct Opened {
    frame: OpenedFrame,
    layout: Layout,
    bytes_read: u64,
}

/// Where the chunks of an opened frame are stored.
enum Layout {
    /// In the frame file (object) itself, whose checksum the references carry.
    Contiguous { checksum: Checksum },
    /// In the chunk files of a sparse frame's directory (named `dir_url`).
    Sparse { dir: ChunkDir, dir_url: String },
}

/// The stored chunks' references: byte ranges of the frame, or whole chunk files.
enum Stored<'a> {
    /// Byte ranges of a contiguous frame (`header_len` bytes of header before the chunks).
    Contiguous {
        ends: ChunkEnds,
        header_len: u64,
        checksum: &'a Checksum,
    },
    /// The chunk files of a sparse frame.
    Sparse(ChunkFiles),
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

/// Opens the local frame `path` (named `url`) by its metadata: a contiguous frame file, or a
/// sparse frame (its directory, or its `chunks.b2frame`). A frame file that changes while it is
/// read is [`Error::Changed`].
fn open_local(path: &std::path::Path, url: &str, limits: &Limits) -> Result<Opened> {
    let (file_path, mut sparse_dir) = if path.is_dir() {
        let index = path.join(SPARSE_FRAME_FILE);
        if !index.is_file() {
            return Err(Error::NotVirtualizable {
                url: url.to_owned(),
                what: format!(
                    "a directory without {SPARSE_FRAME_FILE}: neither a frame file nor a sparse \
                     frame"
                ),
            });
        }
        (index, Some(path.to_path_buf()))
    } else {
        (path.to_path_buf(), None)
    };
    let file = std::fs::File::open(&file_path)?;
    let stamp = |f: &std::fs::File| -> Result<(Checksum, u64)> {
        let m = f.metadata()?;
        Ok((Checksum::of_file(&m, &file_path)?, m.len()))
    };
    let before = stamp(&file)?;
    let read = Arc::new(AtomicU64::new(0));
    let counting = || -> Result<Counting<std::fs::File>> {
        Ok(Counting {
            inner: file.try_clone()?,
            read: Arc::clone(&read),
        })
    };
    let frame = if sparse_dir.is_some() {
        Frame::from_reader_typed(counting()?, 0, FrameType::Sparse, limits)?
    } else {
        match Frame::from_reader(counting()?, 0, limits) {
            // The `chunks.b2frame` of a sparse frame: its directory holds the chunk files.
            Err(Error::FrameType { found: 1, .. })
                if file_path.file_name() == Some(std::ffi::OsStr::new(SPARSE_FRAME_FILE)) =>
            {
                let dir = file_path
                    .parent()
                    .filter(|p| !p.as_os_str().is_empty())
                    .unwrap_or_else(|| std::path::Path::new("."));
                sparse_dir = Some(dir.to_path_buf());
                Frame::from_reader_typed(counting()?, 0, FrameType::Sparse, limits)?
            }
            Err(Error::FrameType { found: 1, .. }) => {
                return Err(Error::NotVirtualizable {
                    url: url.to_owned(),
                    what: format!(
                        "the index file of a sparse frame, but not named {SPARSE_FRAME_FILE} \
                         in its directory: give the directory"
                    ),
                });
            }
            r => r?,
        }
    };
    if stamp(&file)? != before {
        return Err(Error::Changed {
            url: url.to_owned(),
        });
    }
    let layout = match sparse_dir {
        Some(dir) => Layout::Sparse {
            dir_url: reference_url(&Location::Local(dir.clone()))?,
            dir: ChunkDir::Local(dir),
        },
        None => Layout::Contiguous { checksum: before.0 },
    };
    Ok(Opened {
        frame: OpenedFrame::Local(frame),
        layout,
        bytes_read: read.load(Ordering::Relaxed),
    })
}

/// Opens the frame object at `s` (named `url`) by its metadata, pinned to one version: a
/// contiguous frame object, or a sparse frame (its prefix, or its `chunks.b2frame`).
fn open_remote(
    s: &scifmt_io::StoreLocation,
    url: &str,
    options: &VirtualizeOptions,
) -> Result<Opened> {
    let limits = options.limits;
    let remote = options.remote.clone().map_format(|f| f.with_limits(limits));
    let rf = scifmt_io::block_on(RemoteFrame::open_at(s.object(), remote))??;
    let bytes_read = rf.remote.opened_bytes;
    if let Some(dir) = &rf.remote.dir {
        // A sparse frame: its chunk files are listed later, each with its own checksum.
        let layout = Layout::Sparse {
            dir: ChunkDir::Store {
                store: Arc::clone(rf.remote.obj.store()),
                path: dir.path.clone(),
                concurrency: options.remote.concurrency,
            },
            dir_url: dir.url.clone(),
        };
        return Ok(Opened {
            frame: OpenedFrame::Remote(Box::new(rf)),
            layout,
            bytes_read,
        });
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
    Ok(Opened {
        frame: OpenedFrame::Remote(Box::new(rf)),
        layout: Layout::Contiguous { checksum },
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
