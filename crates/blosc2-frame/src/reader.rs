//! Reading contiguous and sparse frames with positional reads: the fixed header, the
//! metalayers, the trailer (located from the frame's last 23 bytes) and the index chunk are read
//! and checked when a frame is opened; chunks are read on demand.

use std::borrow::Cow;
use std::fs::File;
use std::path::{Path, PathBuf};

use blosc_chunk::ChunkHeader;

use crate::bytes::{add, to_usize};
use crate::error::{Error, Result};
use crate::header::{FrameHeader, FrameType, HEADER_FIXED_LEN};
use crate::layers::{self, Section};
use crate::limits::Limits;
use crate::offsets::{ChunkLocation, decode_index};
use crate::trailer::{self, TAIL_LEN, TRAILER_MIN_LEN};
use scifmt_io::ReadAt;

/// Name of the frame file inside a sparse-frame directory.
pub const SPARSE_FRAME_FILE: &str = "chunks.b2frame";

/// Smallest chunk (a Blosc1-style 16-byte header).
pub(crate) const MIN_CHUNK_LEN: u64 = 16;
/// [`MIN_CHUNK_LEN`] as a buffer length.
const MIN_CHUNK_LEN_USIZE: usize = 16;

/// Where the frame's bytes come from.
enum Store<'a> {
    /// The whole frame in memory.
    Slice(&'a [u8]),
    /// A positional reader; the frame starts at `base`.
    Reader {
        src: Box<dyn ReadAt + Send + Sync + 'a>,
        base: u64,
    },
    /// A sparse frame directory; chunk files are read on demand.
    Sparse { dir: PathBuf },
}

impl std::fmt::Debug for Store<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Slice(s) => write!(f, "Slice({} bytes)", s.len()),
            Self::Reader { base, .. } => write!(f, "Reader {{ base: {base} }}"),
            Self::Sparse { dir } => write!(f, "Sparse({})", dir.display()),
        }
    }
}

/// One chunk's share of a byte-range read ([`Frame::slice_plan`]).
#[derive(Debug, Clone)]
pub(crate) struct SlicePiece {
    /// The chunk number.
    pub(crate) chunk: usize,
    /// Its uncompressed size.
    #[cfg_attr(not(feature = "object_store"), allow(dead_code))]
    pub(crate) nbytes: usize,
    /// First byte of the chunk's content to copy.
    pub(crate) from: usize,
    /// Where the bytes go in the output.
    pub(crate) out: std::ops::Range<usize>,
}

/// A named metalayer (header) or vlmetalayer (trailer).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layer {
    /// Its name (at most 31 bytes).
    pub name: String,
    /// Raw content: for metalayers the stored bytes (python-blosc2 stores msgpack); for
    /// vlmetalayers the *compressed* Blosc2 chunk (see [`Frame::vlmetalayer`]).
    pub content: Vec<u8>,
}

/// A Blosc2 frame opened for reading.
///
/// Opening reads the header (with metalayers), the trailer (with vlmetalayers) and the index
/// chunk, validating every length and offset; chunks are read on demand with positional reads,
/// so reading one chunk of a file costs O(chunk + index) bytes of I/O.
#[derive(Debug)]
pub struct Frame<'a> {
    store: Store<'a>,
    header: FrameHeader,
    metalayers: Vec<Layer>,
    vlmetalayers: Vec<Layer>,
    index: Vec<ChunkLocation>,
    trailer_len: u64,
    limits: Limits,
}

impl<'a> Frame<'a> {
    /// Parses an in-memory contiguous frame; `buf` must be exactly the frame (`frame_len ==
    /// buf.len()`, as C-Blosc2 requires for in-memory frames). Chunks are borrowed from `buf`.
    ///
    /// # Errors
    /// Any validation error (see [`Error`]).
    pub fn from_slice(buf: &'a [u8]) -> Result<Self> {
        Self::from_slice_with(buf, &Limits::default())
    }

    /// [`Frame::from_slice`] with explicit limits.
    ///
    /// # Errors
    /// Any validation error (see [`Error`]).
    pub fn from_slice_with(buf: &'a [u8], limits: &Limits) -> Result<Self> {
        let store = Store::Slice(buf);
        let header = read_header(&store, buf.len() as u64, true)?;
        Self::finish(store, header, FrameType::Contiguous, limits)
    }

    /// Reads a contiguous frame that starts at `offset` inside `src` (a file, a buffer, or any
    /// [`ReadAt`]); the frame may be followed by other data.
    ///
    /// # Errors
    /// Any validation or I/O error.
    pub fn from_reader<R: ReadAt + Send + Sync + 'a>(
        src: R,
        offset: u64,
        limits: &Limits,
    ) -> Result<Self> {
        Self::from_reader_typed(src, offset, FrameType::Contiguous, limits)
    }

    /// [`Frame::from_reader`] for a frame of type `expected` (the index file of a sparse frame
    /// is read this way by the remote reader; its chunks are then fetched by the caller).
    pub(crate) fn from_reader_typed<R: ReadAt + Send + Sync + 'a>(
        src: R,
        offset: u64,
        expected: FrameType,
        limits: &Limits,
    ) -> Result<Self> {
        let size = src.size()?;
        let avail = size.checked_sub(offset).ok_or_else(|| {
            Error::invalid(
                "frame offset",
                offset,
                format!("past the end of the {size}-byte source"),
            )
        })?;
        let store = Store::Reader {
            src: Box::new(src),
            base: offset,
        };
        let header = read_header(&store, avail, false)?;
        Self::finish(store, header, expected, limits)
    }

    fn finish(
        store: Store<'a>,
        header: FrameHeader,
        expected: FrameType,
        limits: &Limits,
    ) -> Result<Self> {
        if header.frame_type != expected {
            return Err(Error::FrameType {
                expected: expected.code(),
                found: header.frame_type.code(),
            });
        }
        let frame_len = header.frame_len;
        let header_len = u64::from(header.header_len);
        let hbytes = read_at(&store, 0, header.header_len as usize)?;
        let metalayers = layers::parse(&hbytes, HEADER_FIXED_LEN, 0, Section::Header)?
            .into_iter()
            .map(|(name, content)| Layer { name, content })
            .collect();
        let tail = read_at(&store, frame_len - TAIL_LEN as u64, TAIL_LEN)?;
        let trailer_len = trailer::trailer_len(&tail, frame_len, header_len)?;
        let trailer_off = frame_len - trailer_len;
        let tbytes = read_at(&store, trailer_off, to_usize("trailer_len", trailer_len)?)?;
        let vlmetalayers = trailer::parse(&tbytes, trailer_off)?
            .into_iter()
            .map(|(name, content)| Layer { name, content })
            .collect();
        let mut frame = Self {
            store,
            header,
            metalayers,
            vlmetalayers,
            index: Vec::new(),
            trailer_len,
            limits: *limits,
        };
        frame.index = frame.read_index()?;
        Ok(frame)
    }

    /// Opens a frame file, or a sparse frame if `path` is a directory (or its
    /// `chunks.b2frame`). Reads only header, trailer and index; chunks are read on demand.
    ///
    /// # Errors
    /// Any validation or I/O error.
    pub fn open(path: impl AsRef<Path>) -> Result<Frame<'static>> {
        Frame::open_with(path, &Limits::default())
    }

    /// [`Frame::open`] with explicit limits.
    ///
    /// # Errors
    /// Any validation or I/O error.
    pub fn open_with(path: impl AsRef<Path>, limits: &Limits) -> Result<Frame<'static>> {
        let path = path.as_ref();
        if path.is_dir() {
            return Frame::open_sparse_with(path, limits);
        }
        // `dir/chunks.b2frame` of a sparse frame: open the directory.
        if path.file_name().is_some_and(|n| n == SPARSE_FRAME_FILE)
            && let Some(dir) = path.parent()
            && Frame::from_reader(File::open(path)?, 0, limits)
                .is_err_and(|e| matches!(e, Error::FrameType { found: 1, .. }))
        {
            return Frame::open_sparse_with(dir, limits);
        }
        Frame::from_reader(File::open(path)?, 0, limits)
    }

    /// Opens a contiguous frame stored at byte `offset` of a file (C's `frame_from_file_offset`).
    ///
    /// # Errors
    /// Any validation or I/O error.
    pub fn open_at(path: impl AsRef<Path>, offset: u64, limits: &Limits) -> Result<Frame<'static>> {
        Frame::from_reader(File::open(path)?, offset, limits)
    }

    /// Opens a sparse frame directory (`chunks.b2frame` plus `%08X.chunk` files).
    ///
    /// # Errors
    /// Any validation or I/O error; [`Error::FrameType`] if `chunks.b2frame` is not sparse;
    /// [`Error::NotASparseFrame`] if `dir` is a directory without `chunks.b2frame`.
    pub fn open_sparse_with(dir: impl AsRef<Path>, limits: &Limits) -> Result<Frame<'static>> {
        let dir = dir.as_ref().to_path_buf();
        let file = match File::open(dir.join(SPARSE_FRAME_FILE)) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && dir.is_dir() => {
                return Err(Error::NotASparseFrame { path: dir });
            }
            Err(e) => return Err(e.into()),
        };
        let size = file.size()?;
        let tmp = Store::Reader {
            src: Box::new(file),
            base: 0,
        };
        let header = read_header(&tmp, size, false)?;
        let mut frame = Frame::finish(tmp, header, FrameType::Sparse, limits)?;
        frame.store = Store::Sparse { dir };
        Ok(frame)
    }

    /// The decoded fixed header.
    #[must_use]
    pub fn header(&self) -> &FrameHeader {
        &self.header
    }

    /// The limits this frame was opened with.
    #[must_use]
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// Length of the trailer in bytes.
    #[must_use]
    pub fn trailer_len(&self) -> u64 {
        self.trailer_len
    }

    /// Whether this is a sparse (directory) frame.
    #[must_use]
    pub fn is_sparse(&self) -> bool {
        matches!(self.store, Store::Sparse { .. })
    }

    /// The directory of a sparse frame.
    #[must_use]
    pub fn sparse_dir(&self) -> Option<&Path> {
        match &self.store {
            Store::Sparse { dir } => Some(dir),
            _ => None,
        }
    }

    /// Number of chunks.
    #[must_use]
    pub fn nchunks(&self) -> usize {
        self.index.len()
    }

    /// The index: where each chunk is stored, or which special value it holds.
    #[must_use]
    pub fn index(&self) -> &[ChunkLocation] {
        &self.index
    }

    /// Metalayers (from the header), in stored order.
    #[must_use]
    pub fn metalayers(&self) -> &[Layer] {
        &self.metalayers
    }

    /// Raw content of the metalayer `name`.
    #[must_use]
    pub fn metalayer(&self, name: &str) -> Option<&[u8]> {
        self.metalayers
            .iter()
            .find(|l| l.name == name)
            .map(|l| l.content.as_slice())
    }

    /// The metalayer `name` decoded as msgpack (what python-blosc2 stores).
    ///
    /// # Errors
    /// [`Error::NotFound`] or [`Error::Msgpack`].
    pub fn metalayer_value(&self, name: &str) -> Result<rmpv::Value> {
        let raw = self.metalayer(name).ok_or_else(|| Error::NotFound {
            kind: "metalayer",
            name: name.to_string(),
        })?;
        msgpack("metalayer", name, raw)
    }

    /// Vlmetalayers (from the trailer); `content` is the compressed chunk.
    #[must_use]
    pub fn vlmetalayers(&self) -> &[Layer] {
        &self.vlmetalayers
    }

    /// The decompressed content of vlmetalayer `name`.
    ///
    /// # Errors
    /// [`Error::NotFound`], or [`Error::Chunk`] if the stored chunk does not decode.
    pub fn vlmetalayer(&self, name: &str) -> Result<Vec<u8>> {
        let raw = self
            .vlmetalayers
            .iter()
            .find(|l| l.name == name)
            .ok_or_else(|| Error::NotFound {
                kind: "vlmetalayer",
                name: name.to_string(),
            })?;
        blosc_chunk::decompress_with(&raw.content, &self.chunk_limits()).map_err(|source| {
            Error::Chunk {
                site: format!("vlmetalayer {name:?}"),
                source,
            }
        })
    }

    /// The vlmetalayer `name`, decompressed and decoded as msgpack.
    ///
    /// # Errors
    /// [`Error::NotFound`], [`Error::Chunk`] or [`Error::Msgpack`].
    pub fn vlmetalayer_value(&self, name: &str) -> Result<rmpv::Value> {
        let raw = self.vlmetalayer(name)?;
        msgpack("vlmetalayer", name, &raw)
    }

    /// Decoding parameters for the data chunks: the chunk limits and the block shape of the
    /// `b2nd` metalayer, if there is one that parses (chunks using the NDCELL/NDMEAN filters or
    /// the ZFP codecs need it; C-Blosc2 reads it from the same metalayer). The metalayer is
    /// parsed per call (a few dozen bytes of msgpack) rather than kept in the `Frame`.
    fn chunk_dparams(&self, limits: blosc_chunk::Limits) -> blosc_chunk::DParams {
        let mut p = blosc_chunk::DParams::default();
        p.limits = limits;
        p.blockshape = self
            .metalayer(crate::b2nd::B2ND_METALAYER)
            .and_then(|raw| crate::b2nd::B2ndMeta::parse(raw).ok())
            .and_then(|m| blosc_chunk::BlockShape::new(&m.blockshape).ok());
        p
    }

    fn chunk_limits(&self) -> blosc_chunk::Limits {
        blosc_chunk::Limits::default().with_max_nbytes(self.limits.max_chunk_nbytes)
    }

    /// Position of the index chunk relative to the frame start.
    pub(crate) fn index_start(&self) -> Result<u64> {
        let h = u64::from(self.header.header_len);
        if self.header.frame_type == FrameType::Sparse {
            Ok(h)
        } else {
            add("index offset", h, self.header.cbytes)
        }
    }

    fn read_index(&self) -> Result<Vec<ChunkLocation>> {
        let h = &self.header;
        let start = self.index_start()?;
        let trailer_off = h.frame_len - self.trailer_len;
        if start > trailer_off {
            return Err(Error::invalid(
                "cbytes",
                39,
                format!("chunks end at {start}, after the trailer start {trailer_off}"),
            ));
        }
        let fixed = if h.chunksize > 0 {
            let n = h.nbytes.div_ceil(u64::from(h.chunksize));
            if n > self.limits.max_nchunks as u64 {
                return Err(Error::LimitExceeded {
                    what: "number of chunks",
                    requested: n,
                    limit: self.limits.max_nchunks as u64,
                });
            }
            if n == 0 {
                return Ok(Vec::new());
            }
            Some(n)
        } else {
            None
        };
        let len = trailer_off - start;
        if len == 0 && fixed.is_none() {
            return Ok(Vec::new());
        }
        let raw = read_at(&self.store, start, to_usize("index length", len)?)?;
        let ch = ChunkHeader::parse(&raw).map_err(|source| Error::Chunk {
            site: "index chunk".into(),
            source,
        })?;
        let inbytes = ch.nbytes() as u64;
        let expected_count = match fixed {
            Some(n) => {
                if inbytes != n * 8 {
                    return Err(Error::invalid(
                        "index chunk",
                        start,
                        format!("holds {inbytes} bytes, expected {} for {n} chunks", n * 8),
                    ));
                }
                n
            }
            None => {
                if !inbytes.is_multiple_of(8) {
                    return Err(Error::invalid(
                        "index chunk",
                        start,
                        format!("holds {inbytes} bytes, not a multiple of 8"),
                    ));
                }
                inbytes / 8
            }
        };
        if expected_count > self.limits.max_nchunks as u64 {
            return Err(Error::LimitExceeded {
                what: "number of chunks",
                requested: expected_count,
                limit: self.limits.max_nchunks as u64,
            });
        }
        let dec = blosc_chunk::decompress_with(&raw, &self.chunk_limits()).map_err(|source| {
            Error::Chunk {
                site: "index chunk".into(),
                source,
            }
        })?;
        if dec.len() as u64 != inbytes {
            return Err(Error::invalid(
                "index chunk",
                start,
                "decompressed size differs from its header",
            ));
        }
        let index = decode_index(&dec)?;
        for (i, loc) in index.iter().enumerate() {
            if let ChunkLocation::Stored(off) = *loc {
                let ok = if h.frame_type == FrameType::Sparse {
                    u32::try_from(off).is_ok()
                } else {
                    off.checked_add(MIN_CHUNK_LEN)
                        .is_some_and(|e| e <= h.cbytes)
                };
                if !ok {
                    return Err(Error::invalid(
                        "chunk offset",
                        start,
                        format!(
                            "chunk {i}: offset {off} outside the chunk section (cbytes {})",
                            h.cbytes
                        ),
                    ));
                }
            } else if h.chunksize == 0 {
                return Err(Error::invalid(
                    "chunk offset",
                    start,
                    format!("chunk {i}: special value in a frame without a fixed chunksize"),
                ));
            }
        }
        Ok(index)
    }

    fn check_index(&self, i: usize) -> Result<ChunkLocation> {
        self.index.get(i).copied().ok_or(Error::ChunkIndex {
            index: i,
            nchunks: self.index.len(),
        })
    }

    /// Uncompressed size of chunk `i`: `chunksize` (the last chunk may be shorter), or from the
    /// chunk's header when chunks vary in size.
    ///
    /// # Errors
    /// [`Error::ChunkIndex`], or an error reading a variable-size chunk's header.
    pub fn chunk_nbytes(&self, i: usize) -> Result<usize> {
        let loc = self.check_index(i)?;
        let cs = u64::from(self.header.chunksize);
        if cs > 0 {
            let before = (i as u64) * cs;
            let n = self.header.nbytes.saturating_sub(before).min(cs);
            return to_usize("chunk nbytes", n);
        }
        match loc {
            ChunkLocation::Stored(off) => {
                // Only the chunk's first 16 bytes are needed: nbytes is the LE i32 at 4.
                let head = match &self.store {
                    Store::Sparse { dir } => {
                        let f = File::open(dir.join(format!("{off:08X}.chunk")))?;
                        let mut h = [0u8; MIN_CHUNK_LEN_USIZE];
                        f.read_exact_at(&mut h, 0)?;
                        h.to_vec()
                    }
                    _ => read_at(
                        &self.store,
                        u64::from(self.header.header_len) + off,
                        MIN_CHUNK_LEN_USIZE,
                    )?
                    .into_owned(),
                };
                self.nbytes_from_head(i, &head)
            }
            _ => Err(Error::invalid(
                "chunk offset",
                0,
                format!("chunk {i}: special value without chunksize"),
            )),
        }
    }

    /// Uncompressed size of stored chunk `i` whose first bytes are `head`: `chunksize` (the
    /// last chunk may be shorter) or, when chunks vary in size, the chunk header's `nbytes`,
    /// which may not exceed the frame's `nbytes`.
    pub(crate) fn nbytes_from_head(&self, i: usize, head: &[u8]) -> Result<usize> {
        if self.header.chunksize > 0 {
            return self.chunk_nbytes(i);
        }
        let raw: [u8; 4] = head
            .get(4..8)
            .and_then(|b| b.try_into().ok())
            .unwrap_or([0xff; 4]);
        let n = i32::from_le_bytes(raw);
        let n = u64::try_from(n).map_err(|_| {
            Error::invalid("chunk nbytes", 0, format!("chunk {i}: negative nbytes {n}"))
        })?;
        // No chunk can hold more than the whole frame: without this bound, an index
        // pointing many entries at one chunk claiming a huge size multiplies the work.
        if n > self.header.nbytes {
            return Err(Error::invalid(
                "chunk nbytes",
                0,
                format!(
                    "chunk {i} holds {n} bytes, more than the frame's {}",
                    self.header.nbytes
                ),
            ));
        }
        to_usize("chunk nbytes", n)
    }

    /// The compressed bytes of chunk `i`: borrowed for in-memory frames, read on demand from
    /// files. Special-value runs are synthesised as the 32-byte special chunk C-Blosc2 builds.
    ///
    /// # Errors
    /// [`Error::ChunkIndex`], I/O errors, or [`Error::Invalid`] if the stored chunk does not fit
    /// the chunk section.
    pub fn chunk(&self, i: usize) -> Result<Cow<'_, [u8]>> {
        let loc = self.check_index(i)?;
        let off = match loc {
            ChunkLocation::Stored(off) => off,
            special => {
                let nbytes = self.chunk_nbytes(i)?;
                let ts = self.header.typesize as usize;
                let made = match special {
                    ChunkLocation::Zeros => blosc_chunk::zeros_chunk(nbytes, ts),
                    ChunkLocation::Nan => blosc_chunk::nans_chunk(nbytes, ts),
                    _ => blosc_chunk::uninit_chunk(nbytes, ts),
                };
                return made.map(Cow::Owned).map_err(|source| Error::Chunk {
                    site: format!("chunk {i} (special)"),
                    source,
                });
            }
        };
        if let Store::Sparse { dir } = &self.store {
            return self.sparse_chunk(dir, i, off).map(Cow::Owned);
        }
        let h = &self.header;
        let section_start = u64::from(h.header_len);
        let room = h.cbytes - off; // off + 16 <= cbytes checked at open
        let head = read_at(&self.store, section_start + off, MIN_CHUNK_LEN_USIZE)?;
        let cbytes = chunk_cbytes(&head)
            .filter(|&c| c >= MIN_CHUNK_LEN && c <= room)
            .ok_or_else(|| {
                Error::invalid(
                    "chunk cbytes",
                    section_start + off + 12,
                    format!(
                        "chunk {i}: length does not fit the {room} bytes left in the chunk section"
                    ),
                )
            })?;
        read_at(
            &self.store,
            section_start + off,
            to_usize("chunk cbytes", cbytes)?,
        )
    }

    fn sparse_chunk(&self, dir: &Path, i: usize, num: u64) -> Result<Vec<u8>> {
        let path = dir.join(format!("{num:08X}.chunk"));
        let data = std::fs::read(&path)?;
        let cbytes = chunk_cbytes(&data)
            .filter(|&c| c >= MIN_CHUNK_LEN && c <= data.len() as u64)
            .ok_or_else(|| {
                Error::invalid(
                    "chunk file",
                    0,
                    format!("chunk {i}: {} is not a chunk of its length", path.display()),
                )
            })?;
        let mut data = data;
        data.truncate(to_usize("chunk cbytes", cbytes)?);
        Ok(data)
    }

    /// Decompresses chunk `i`.
    ///
    /// # Errors
    /// As [`Frame::chunk`], plus [`Error::Chunk`] for undecodable chunks and
    /// [`Error::Invalid`] when a chunk's size disagrees with the frame's chunksize.
    pub fn decompress_chunk(&self, i: usize) -> Result<Vec<u8>> {
        let n = self.chunk_nbytes(i)?;
        if n > self.limits.max_chunk_nbytes {
            return Err(Error::LimitExceeded {
                what: "chunk nbytes",
                requested: n as u64,
                limit: self.limits.max_chunk_nbytes as u64,
            });
        }
        let mut out = vec![0u8; n];
        self.decompress_chunk_into(i, &mut out)?;
        Ok(out)
    }

    /// Decompresses chunk `i` into `out`, which must be exactly [`Frame::chunk_nbytes`] long.
    ///
    /// # Errors
    /// As [`Frame::decompress_chunk`]; [`Error::InvalidArgument`] for a wrong `out` length.
    pub fn decompress_chunk_into(&self, i: usize, out: &mut [u8]) -> Result<()> {
        let n = self.chunk_nbytes(i)?;
        if out.len() != n {
            return Err(Error::InvalidArgument(format!(
                "output buffer has {} bytes, chunk {i} holds {n}",
                out.len()
            )));
        }
        match self.check_index(i)? {
            ChunkLocation::Stored(_) => {
                let c = self.chunk(i)?;
                self.decompress_stored_into(i, &c, out)
            }
            special => fill_special(special, self.header.typesize as usize, out, i),
        }
    }

    /// Decompresses `c`, the stored bytes of chunk `i` (read by the caller), into `out`, whose
    /// length is the chunk's expected uncompressed size.
    pub(crate) fn decompress_stored_into(&self, i: usize, c: &[u8], out: &mut [u8]) -> Result<()> {
        self.checked_chunk_header(i, c, out.len())?;
        let p = self.chunk_dparams(blosc_chunk::Limits::unlimited());
        blosc_chunk::decompress_into_ctx(c, out, &p).map_err(|source| Error::Chunk {
            site: format!("chunk {i}"),
            source,
        })?;
        Ok(())
    }

    /// Decodes the content of special-value chunk `i` (`loc` is not `Stored`) into `out`.
    #[cfg_attr(not(feature = "object_store"), allow(dead_code))]
    pub(crate) fn fill_special_into(
        &self,
        i: usize,
        loc: ChunkLocation,
        out: &mut [u8],
    ) -> Result<()> {
        fill_special(loc, self.header.typesize as usize, out, i)
    }

    /// Decompresses every chunk in index order (python-blosc2's `schunk[:]`).
    ///
    /// # Errors
    /// [`Error::LimitExceeded`] if `nbytes` exceeds [`Limits::max_output_bytes`], or any chunk
    /// error.
    pub fn decompress_all(&self) -> Result<Vec<u8>> {
        let total = self.limits.check_output(self.header.nbytes)?;
        let mut out = vec![0u8; total];
        let mut pos = 0usize;
        for i in 0..self.nchunks() {
            let n = self.chunk_nbytes(i)?;
            let end = pos.checked_add(n).filter(|&e| e <= total).ok_or_else(|| {
                Error::invalid(
                    "nbytes",
                    30,
                    format!("chunks hold more than the header's {total} bytes"),
                )
            })?;
            self.decompress_chunk_into(i, out.get_mut(pos..end).unwrap_or_default())?;
            pos = end;
        }
        if pos != total {
            return Err(Error::invalid(
                "nbytes",
                30,
                format!("chunks hold {pos} bytes, the header says {total}"),
            ));
        }
        Ok(out)
    }

    /// Items `start..stop` (in units of the frame's typesize) across chunks, decoding only the
    /// chunks touched, and inside partially covered chunks only the blocks touched.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a range outside `0..nbytes/typesize`, plus chunk errors.
    pub fn get_slice(&self, start: u64, stop: u64) -> Result<Vec<u8>> {
        let ts = u64::from(self.header.typesize);
        let nitems = self.header.nbytes / ts;
        if start > stop || stop > nitems {
            return Err(Error::InvalidArgument(format!(
                "slice {start}..{stop} outside 0..{nitems}"
            )));
        }
        let (b0, b1) = (start * ts, stop * ts);
        let total = self.limits.check_output(b1 - b0)?;
        let mut out = vec![0u8; total];
        for p in self.slice_plan(b0, b1, |i| self.chunk_nbytes(i))? {
            let dst = out.get_mut(p.out.clone()).unwrap_or_default();
            self.read_chunk_range(p.chunk, p.from as u64, dst)?;
        }
        Ok(out)
    }

    /// The pieces of the decompressed byte range `b0..b1` (checked against `nbytes` by the
    /// caller): which chunk, from which byte of it, into which bytes of the output.
    /// `nbytes_of(i)` gives chunk `i`'s uncompressed size.
    pub(crate) fn slice_plan(
        &self,
        b0: u64,
        b1: u64,
        mut nbytes_of: impl FnMut(usize) -> Result<usize>,
    ) -> Result<Vec<SlicePiece>> {
        let mut plan = Vec::new();
        let mut chunk_start = 0u64;
        for i in 0..self.nchunks() {
            if chunk_start >= b1 {
                break;
            }
            let n = nbytes_of(i)? as u64;
            let chunk_end = add("chunk end", chunk_start, n)?;
            if chunk_end > b0 {
                let lo = b0.max(chunk_start);
                let hi = b1.min(chunk_end);
                plan.push(SlicePiece {
                    chunk: i,
                    nbytes: to_usize("chunk nbytes", n)?,
                    from: to_usize("slice", lo - chunk_start)?,
                    out: to_usize("slice", lo - b0)?..to_usize("slice", hi - b0)?,
                });
            }
            chunk_start = chunk_end;
        }
        Ok(plan)
    }

    /// Fills `dst` with bytes `from..from + dst.len()` of chunk `i`'s decompressed content,
    /// decoding only the blocks touched when possible.
    pub(crate) fn read_chunk_range(&self, i: usize, from: u64, dst: &mut [u8]) -> Result<()> {
        let n = self.chunk_nbytes(i)?;
        let from_us = to_usize("chunk range", from)?;
        if from_us == 0 && dst.len() == n {
            return self.decompress_chunk_into(i, dst);
        }
        match self.check_index(i)? {
            ChunkLocation::Stored(_) => {
                let c = self.chunk(i)?;
                self.range_of_chunk(i, &c, from_us, dst)
            }
            special => fill_special(special, self.header.typesize as usize, dst, i),
        }
    }

    /// The header of `c`, the stored chunk `i`, after checking that it holds the `n` bytes the
    /// frame expects (a chunk claiming more would make every partial read decode blocks the
    /// frame never accounted for).
    fn checked_chunk_header(&self, i: usize, c: &[u8], n: usize) -> Result<ChunkHeader> {
        let ch = ChunkHeader::parse(c).map_err(|source| Error::Chunk {
            site: format!("chunk {i}"),
            source,
        })?;
        if ch.nbytes() != n {
            return Err(Error::invalid(
                "chunk nbytes",
                0,
                format!(
                    "chunk {i} holds {} bytes, the frame expects {n}",
                    ch.nbytes()
                ),
            ));
        }
        Ok(ch)
    }

    /// Fills `dst` with bytes `from..from + dst.len()` decoded from `c`, the stored chunk `i`
    /// (already read), decoding only the blocks touched.
    pub(crate) fn range_of_chunk(
        &self,
        i: usize,
        c: &[u8],
        from: usize,
        dst: &mut [u8],
    ) -> Result<()> {
        self.range_of_chunk_n(i, c, self.chunk_nbytes(i)?, from, dst)
    }

    /// [`Frame::range_of_chunk`] for a chunk known to hold `n` bytes.
    pub(crate) fn range_of_chunk_n(
        &self,
        i: usize,
        c: &[u8],
        n: usize,
        from: usize,
        dst: &mut [u8],
    ) -> Result<()> {
        let site = || format!("chunk {i}");
        let ch = self.checked_chunk_header(i, c, n)?;
        let ts = ch.typesize().max(1);
        if from.is_multiple_of(ts) && dst.len().is_multiple_of(ts) {
            let p = self.chunk_dparams(self.chunk_limits());
            blosc_chunk::getitem_into_ctx(c, from / ts, dst.len() / ts, dst, &p).map_err(
                |source| Error::Chunk {
                    site: site(),
                    source,
                },
            )?;
        } else {
            let p = self.chunk_dparams(self.chunk_limits());
            let full = blosc_chunk::decompress_ctx(c, &p).map_err(|source| Error::Chunk {
                site: site(),
                source,
            })?;
            let src = from
                .checked_add(dst.len())
                .and_then(|end| full.get(from..end))
                .ok_or_else(|| Error::invalid("chunk nbytes", 0, format!("chunk {i} too short")))?;
            dst.copy_from_slice(src);
        }
        Ok(())
    }
}

/// Reads and parses the fixed header; checks `frame_len` against the `avail` bytes (`exact`
/// for in-memory frames).
fn read_header(store: &Store<'_>, avail: u64, exact: bool) -> Result<FrameHeader> {
    if avail < HEADER_FIXED_LEN as u64 {
        return Err(Error::Truncated {
            what: "frame header",
            offset: 0,
            needed: HEADER_FIXED_LEN as u64,
            available: avail,
        });
    }
    let head = read_at(store, 0, HEADER_FIXED_LEN)?;
    let header = FrameHeader::parse(&head)?;
    let fl = header.frame_len;
    if (exact && fl != avail) || fl > avail {
        return Err(Error::invalid(
            "frame_len",
            16,
            format!("{fl} but {avail} bytes are available"),
        ));
    }
    if fl < u64::from(header.header_len) + TRAILER_MIN_LEN {
        return Err(Error::invalid(
            "frame_len",
            16,
            format!(
                "{fl} leaves no room for a trailer after the {}-byte header",
                header.header_len
            ),
        ));
    }
    Ok(header)
}

/// `len` bytes at `offset` from the frame start.
fn read_at<'s>(store: &'s Store<'_>, offset: u64, len: usize) -> Result<Cow<'s, [u8]>> {
    match store {
        Store::Slice(buf) => {
            let start = to_usize("offset", offset)?;
            start
                .checked_add(len)
                .and_then(|end| buf.get(start..end))
                .map(Cow::Borrowed)
                .ok_or(Error::Truncated {
                    what: "frame",
                    offset,
                    needed: len as u64,
                    available: (buf.len() as u64).saturating_sub(offset),
                })
        }
        Store::Reader { src, base } => {
            let mut v = vec![0u8; len];
            src.read_exact_at(&mut v, add("offset", *base, offset)?)?;
            Ok(Cow::Owned(v))
        }
        Store::Sparse { dir } => {
            let f = File::open(dir.join(SPARSE_FRAME_FILE))?;
            let mut v = vec![0u8; len];
            f.read_exact_at(&mut v, offset)?;
            Ok(Cow::Owned(v))
        }
    }
}

/// `cbytes` field (LE i32 at 12) of a chunk header.
pub(crate) fn chunk_cbytes(head: &[u8]) -> Option<u64> {
    let b: [u8; 4] = head.get(12..16)?.try_into().ok()?;
    u64::try_from(i32::from_le_bytes(b)).ok()
}

/// Decoded content of a special-value run (no chunk codec involved).
fn fill_special(loc: ChunkLocation, typesize: usize, out: &mut [u8], i: usize) -> Result<()> {
    match loc {
        ChunkLocation::Nan => match typesize {
            4 => {
                for w in out.chunks_mut(4) {
                    let v = 0x7fc0_0000u32.to_le_bytes();
                    w.copy_from_slice(v.get(..w.len()).unwrap_or_default());
                }
                Ok(())
            }
            8 => {
                for w in out.chunks_mut(8) {
                    let v = 0x7ff8_0000_0000_0000u64.to_le_bytes();
                    w.copy_from_slice(v.get(..w.len()).unwrap_or_default());
                }
                Ok(())
            }
            ts => Err(Error::invalid(
                "typesize",
                48,
                format!("chunk {i}: NaN run needs typesize 4 or 8, frame has {ts}"),
            )),
        },
        // Zeros, and uninitialised runs whose content is unspecified: zeros.
        _ => {
            out.fill(0);
            Ok(())
        }
    }
}

fn msgpack(kind: &'static str, name: &str, raw: &[u8]) -> Result<rmpv::Value> {
    let mut rd = raw;
    let v = rmpv::decode::read_value_with_max_depth(&mut rd, 256).map_err(|e| Error::Msgpack {
        kind,
        name: name.to_string(),
        detail: e.to_string(),
    })?;
    if !rd.is_empty() {
        return Err(Error::Msgpack {
            kind,
            name: name.to_string(),
            detail: format!("{} trailing bytes", rd.len()),
        });
    }
    Ok(v)
}
