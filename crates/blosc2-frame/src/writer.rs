//! Building and editing frames in memory, and writing them crash-safely.
//!
//! A [`FrameWriter`] holds the frame as a list of compressed chunks plus metadata and lays it
//! out the way C-Blosc2's `frame_append_chunk` path does: header (fixed part + metalayers),
//! chunks in index order, index chunk (BloscLZ, clevel 5, typesize 8, SHUFFLE in slot 5,
//! NEVER_SPLIT, blocksize 16 KiB), trailer. For frames built by appending only, the output is
//! byte-for-byte what C-Blosc2 writes, provided the chunks are (see the crate docs).
//!
//! Files are never modified in place: [`FrameWriter::write_file`] writes a temporary file in
//! the same directory, optionally fsyncs it, then renames it over the target, so an
//! interrupted write leaves either the old frame or the new one under the real name.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use blosc_chunk::{CParams, ChunkHeader, Codec, Filter, SpecialValue, SplitMode};

use crate::error::{Error, Result};
use crate::header::{
    FRAME_FORMAT_VERSION_FIXED, FRAME_FORMAT_VERSION_VARIABLE, FrameHeader, FrameType,
    HEADER_FIXED_LEN,
};
use crate::layers::{self, MAX_METALAYERS, MAX_VLMETALAYERS, Section};
use crate::offsets::{ChunkLocation, encode_index};
use crate::reader::{Frame, Layer, SPARSE_FRAME_FILE};
use crate::trailer;
use scifmt_io::Durability;

/// Settings of a new frame.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct FrameParams {
    /// How data chunks are compressed; also recorded as the frame's defaults in the header.
    pub cparams: CParams,
    /// Bytes per chunk; every chunk but the last must have exactly this size. 0 = chunks of any
    /// size (frame format version 3).
    pub chunksize: usize,
    /// Compression threads recorded in the header (informational; python-blosc2 records its
    /// `nthreads`).
    pub nthreads_compress: i16,
    /// Decompression threads recorded in the header (informational).
    pub nthreads_decompress: i16,
    /// How vlmetalayer contents are compressed (python-blosc2: zstd, clevel 5, typesize 1,
    /// SHUFFLE in slot 5).
    pub vlmeta_cparams: CParams,
    /// The header's `blocksize` field, when it should differ from `cparams.blocksize`
    /// (C-Blosc2 records the block size of the last compression in copies made by
    /// `to_cframe`); informational only.
    pub header_blocksize: Option<u32>,
}

impl FrameParams {
    /// A frame of `chunksize`-byte chunks compressed with `cparams`, recording one thread.
    #[must_use]
    pub fn new(cparams: CParams, chunksize: usize) -> Self {
        Self {
            cparams,
            chunksize,
            nthreads_compress: 1,
            nthreads_decompress: 1,
            vlmeta_cparams: vlmeta_cparams(),
            header_blocksize: None,
        }
    }
}

/// python-blosc2's cparams for vlmetalayer contents.
fn vlmeta_cparams() -> CParams {
    let mut c = CParams::default();
    c.codec = Codec::Zstd;
    c.clevel = 5;
    c.typesize = 1;
    c.filters = [
        Filter::NoFilter,
        Filter::NoFilter,
        Filter::NoFilter,
        Filter::NoFilter,
        Filter::NoFilter,
        Filter::Shuffle,
    ];
    c.filters_meta = [0; 6];
    c.nthreads = 1;
    c
}

/// The cparams C-Blosc2's `frame_append_chunk` uses for the index chunk.
fn index_cparams() -> CParams {
    let mut c = CParams::default();
    c.codec = Codec::BloscLz;
    c.clevel = 5;
    c.typesize = 8;
    c.filters = [
        Filter::NoFilter,
        Filter::NoFilter,
        Filter::NoFilter,
        Filter::NoFilter,
        Filter::NoFilter,
        Filter::Shuffle,
    ];
    c.filters_meta = [0; 6];
    c.splitmode = SplitMode::Never;
    c.blocksize = 16 * 1024;
    c.nthreads = 1;
    c
}

/// What [`FrameWriter::fill_special`] fills with.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Fill {
    /// Zeros (stored as special offsets).
    Zeros,
    /// NaNs of the typesize (4 or 8; stored as special offsets).
    Nan,
    /// Unspecified content (stored as special offsets).
    Uninit,
    /// One item value (`typesize` bytes) repeated, stored as real 40-byte special chunks.
    Value(Vec<u8>),
}

/// One chunk of a frame being written.
#[derive(Debug, Clone)]
pub(crate) enum Entry {
    /// Special run of `nbytes` bytes: no stored data.
    Special(ChunkLocation, usize),
    /// Stored chunk; `file` is its sparse-frame file number when it came from one, `seq` its
    /// number in order of addition (C-Blosc2 numbers new sparse chunk files that way).
    Data {
        chunk: Vec<u8>,
        nbytes: usize,
        file: Option<u64>,
        seq: Option<u64>,
    },
}

impl Entry {
    fn nbytes(&self) -> usize {
        match self {
            Self::Special(_, n) | Self::Data { nbytes: n, .. } => *n,
        }
    }
}

/// A frame under construction or being edited, held in memory as compressed chunks.
#[derive(Debug, Clone)]
pub struct FrameWriter {
    params: FrameParams,
    metalayers: Vec<Layer>,
    vlmetalayers: Vec<Layer>,
    entries: Vec<Entry>,
    /// The index is a single repeated special offset written by `fill_special` (C stores it as a
    /// repeated-value chunk).
    index_is_fill: bool,
    /// Header blocksize recorded by a special fill of an empty frame: C-Blosc2 then records
    /// the chunksize (observed in the python-blosc2 `fill_special` fixtures).
    fill_blocksize: Option<u32>,
    /// The sparse directory the chunks were loaded from: their files may be reused only there.
    source_dir: Option<PathBuf>,
    /// Bytes in chunks kept outside `entries` (streamed by [`crate::FrameFileWriter`]).
    pub(crate) streamed_nbytes: u64,
    /// Next addition number for stored chunks.
    next_seq: u64,
}

impl FrameWriter {
    /// An empty frame.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if `typesize` is 0 or `chunksize` is not a multiple of it,
    /// or `chunksize > i32::MAX`.
    pub fn new(params: FrameParams) -> Result<Self> {
        let ts = params.cparams.typesize;
        if ts == 0 {
            return Err(Error::InvalidArgument("typesize must be at least 1".into()));
        }
        if i32::try_from(params.chunksize).is_err() {
            return Err(Error::InvalidArgument(format!(
                "chunksize {} > i32::MAX",
                params.chunksize
            )));
        }
        if ts <= 255 && !params.chunksize.is_multiple_of(ts) {
            return Err(Error::InvalidArgument(format!(
                "chunksize {} is not a multiple of typesize {ts}",
                params.chunksize
            )));
        }
        Ok(Self {
            params,
            metalayers: Vec::new(),
            vlmetalayers: Vec::new(),
            entries: Vec::new(),
            index_is_fill: false,
            fill_blocksize: None,
            source_dir: None,
            streamed_nbytes: 0,
            next_seq: 0,
        })
    }

    /// Loads an existing frame for editing (all stored chunks are read into memory; special
    /// runs stay special). Data cparams are taken from the header's defaults.
    ///
    /// # Errors
    /// Any error reading the frame's chunks.
    pub fn from_frame(frame: &Frame<'_>) -> Result<Self> {
        let h = frame.header();
        let mut cparams = CParams::default();
        cparams.codec = h.codec();
        cparams.clevel = h.clevel;
        cparams.typesize = h.typesize as usize;
        cparams.filters = h.filter_pipeline();
        cparams.filters_meta = h.filters_meta;
        cparams.blocksize = h.blocksize as usize;
        cparams.splitmode = h.split_mode().unwrap_or(SplitMode::ForwardCompat);
        cparams.nthreads = 1;
        let mut params = FrameParams::new(cparams, h.chunksize as usize);
        params.nthreads_compress = h.nthreads_compress;
        params.nthreads_decompress = h.nthreads_decompress;
        let mut w = Self {
            params,
            metalayers: frame.metalayers().to_vec(),
            vlmetalayers: frame.vlmetalayers().to_vec(),
            entries: Vec::with_capacity(frame.nchunks()),
            index_is_fill: false,
            fill_blocksize: None,
            source_dir: frame.sparse_dir().and_then(|d| fs::canonicalize(d).ok()),
            streamed_nbytes: 0,
            next_seq: 0,
        };
        for (i, loc) in frame.index().iter().enumerate() {
            let nbytes = frame.chunk_nbytes(i)?;
            let e = match *loc {
                ChunkLocation::Stored(off) => Entry::Data {
                    chunk: frame.chunk(i)?.into_owned(),
                    nbytes,
                    file: frame.is_sparse().then_some(off),
                    seq: Some(if frame.is_sparse() { off } else { i as u64 }),
                },
                special => Entry::Special(special, nbytes),
            };
            w.entries.push(e);
        }
        w.next_seq = w
            .entries
            .iter()
            .filter_map(|e| match e {
                Entry::Data { seq, .. } => *seq,
                Entry::Special(..) => None,
            })
            .max()
            .map_or(0, |m| m + 1);
        Ok(w)
    }

    /// The frame's parameters.
    #[must_use]
    pub fn params(&self) -> &FrameParams {
        &self.params
    }

    /// Number of chunks.
    #[must_use]
    pub fn nchunks(&self) -> usize {
        self.entries.len()
    }

    /// Uncompressed bytes in all chunks.
    #[must_use]
    pub fn nbytes(&self) -> u64 {
        self.entries.iter().map(|e| e.nbytes() as u64).sum::<u64>() + self.streamed_nbytes
    }

    // ----- metalayers -------------------------------------------------------------------

    /// Adds a metalayer. Like C-Blosc2, only before the first chunk (the header length must
    /// not change once chunks exist).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if chunks exist, the name is taken, empty or longer than 31
    /// bytes, or 16 metalayers exist.
    pub fn add_metalayer(&mut self, name: &str, content: &[u8]) -> Result<()> {
        layers::check_name(name)?;
        if !self.entries.is_empty() {
            return Err(Error::InvalidArgument(
                "metalayers must be added before the first chunk".into(),
            ));
        }
        if self.metalayers.iter().any(|l| l.name == name) {
            return Err(Error::InvalidArgument(format!("metalayer {name:?} exists")));
        }
        if self.metalayers.len() >= MAX_METALAYERS {
            return Err(Error::InvalidArgument(format!(
                "at most {MAX_METALAYERS} metalayers"
            )));
        }
        self.metalayers.push(Layer {
            name: name.to_string(),
            content: content.to_vec(),
        });
        Ok(())
    }

    /// Replaces a metalayer's content; once chunks exist the size must stay the same (C-Blosc2
    /// `blosc2_meta_update`).
    ///
    /// # Errors
    /// [`Error::NotFound`], or [`Error::InvalidArgument`] for a size change after chunks exist.
    pub fn update_metalayer(&mut self, name: &str, content: &[u8]) -> Result<()> {
        let has_chunks = !self.entries.is_empty();
        let l = self
            .metalayers
            .iter_mut()
            .find(|l| l.name == name)
            .ok_or_else(|| Error::NotFound {
                kind: "metalayer",
                name: name.to_string(),
            })?;
        if has_chunks && l.content.len() != content.len() {
            return Err(Error::InvalidArgument(format!(
                "metalayer {name:?} has {} bytes; updates after the first chunk must keep the size",
                l.content.len()
            )));
        }
        l.content = content.to_vec();
        Ok(())
    }

    /// Sets vlmetalayer `name` to `content` (compressed with
    /// [`FrameParams::vlmeta_cparams`]), adding it if new.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a bad name or too many vlmetalayers; [`Error::Chunk`]
    /// if compression fails.
    pub fn set_vlmetalayer(&mut self, name: &str, content: &[u8]) -> Result<()> {
        layers::check_name(name)?;
        let chunk =
            blosc_chunk::compress(content, &self.params.vlmeta_cparams).map_err(|source| {
                Error::Chunk {
                    site: format!("vlmetalayer {name:?}"),
                    source,
                }
            })?;
        if let Some(l) = self.vlmetalayers.iter_mut().find(|l| l.name == name) {
            l.content = chunk;
            return Ok(());
        }
        if self.vlmetalayers.len() >= MAX_VLMETALAYERS {
            return Err(Error::InvalidArgument(format!(
                "at most {MAX_VLMETALAYERS} vlmetalayers"
            )));
        }
        self.vlmetalayers.push(Layer {
            name: name.to_string(),
            content: chunk,
        });
        Ok(())
    }

    /// Removes vlmetalayer `name`.
    ///
    /// # Errors
    /// [`Error::NotFound`].
    pub fn delete_vlmetalayer(&mut self, name: &str) -> Result<()> {
        let before = self.vlmetalayers.len();
        self.vlmetalayers.retain(|l| l.name != name);
        if self.vlmetalayers.len() == before {
            return Err(Error::NotFound {
                kind: "vlmetalayer",
                name: name.to_string(),
            });
        }
        Ok(())
    }

    // ----- chunks -----------------------------------------------------------------------

    pub(crate) fn entry_for(&self, chunk: Vec<u8>) -> Result<Entry> {
        let ch = ChunkHeader::parse(&chunk).map_err(|source| Error::Chunk {
            site: "new chunk".into(),
            source,
        })?;
        if ch.cbytes() != chunk.len() {
            return Err(Error::InvalidArgument(format!(
                "chunk buffer has {} bytes, its header says {}",
                chunk.len(),
                ch.cbytes()
            )));
        }
        let nbytes = ch.nbytes();
        // Special offsets need a fixed chunksize to be read back (their size is implied).
        if self.params.chunksize == 0 {
            return Ok(Entry::Data {
                chunk,
                nbytes,
                file: None,
                seq: None,
            });
        }
        Ok(match ch.special() {
            Some(SpecialValue::Zeros) => Entry::Special(ChunkLocation::Zeros, nbytes),
            Some(SpecialValue::Nan) => Entry::Special(ChunkLocation::Nan, nbytes),
            Some(SpecialValue::Uninit) => Entry::Special(ChunkLocation::Uninit, nbytes),
            _ => Entry::Data {
                chunk,
                nbytes,
                file: None,
                seq: None,
            },
        })
    }

    /// Gives a new stored chunk its addition number.
    fn stamp(&mut self, e: Entry) -> Entry {
        match e {
            Entry::Data {
                chunk,
                nbytes,
                file,
                ..
            } => {
                let seq = self.next_seq;
                self.next_seq += 1;
                Entry::Data {
                    chunk,
                    nbytes,
                    file,
                    seq: Some(seq),
                }
            }
            special => special,
        }
    }

    /// Checks that a chunk of `nbytes` may sit at position `at` of a list of `len` entries
    /// (after the operation) under the fixed-chunksize rule.
    fn check_size(&self, nbytes: usize, at: usize, len_after: usize) -> Result<()> {
        let cs = self.params.chunksize;
        if cs == 0 {
            return Ok(());
        }
        let last = at + 1 == len_after;
        if nbytes > cs || (nbytes < cs && !last) || nbytes == 0 {
            return Err(Error::InvalidArgument(format!(
                "chunk of {nbytes} bytes at position {at}: chunks must hold {cs} bytes (the last may hold fewer)"
            )));
        }
        Ok(())
    }

    fn check_last_full(&self) -> Result<()> {
        if let Some(last) = self.entries.last() {
            let cs = self.params.chunksize;
            if cs > 0 && last.nbytes() != cs {
                return Err(Error::InvalidArgument(
                    "the last chunk is partial: nothing can follow it".into(),
                ));
            }
        }
        Ok(())
    }

    /// Appends an already compressed chunk. Zero/NaN/uninit special chunks are stored as
    /// special offsets, like C-Blosc2 does.
    ///
    /// # Errors
    /// [`Error::Chunk`] for an invalid chunk, [`Error::InvalidArgument`] for a size that breaks
    /// the chunksize rule.
    pub fn append_chunk(&mut self, chunk: Vec<u8>) -> Result<()> {
        let e = self.entry_for(chunk)?;
        self.check_last_full()?;
        self.check_size(e.nbytes(), self.entries.len(), self.entries.len() + 1)?;
        let e = self.stamp(e);
        self.entries.push(e);
        self.index_is_fill = false;
        Ok(())
    }

    /// Compresses `data` with the frame's cparams and appends it as one chunk.
    ///
    /// # Errors
    /// As [`FrameWriter::append_chunk`], plus [`Error::Chunk`] if compression fails.
    pub fn append_buffer(&mut self, data: &[u8]) -> Result<()> {
        let chunk = self.compress(data)?;
        self.append_chunk(chunk)
    }

    /// Splits `data` into `chunksize` pieces (the last may be shorter), compresses and
    /// appends them (python-blosc2's `append_data` for data of any length). With variable
    /// chunks (`chunksize == 0`) appends `data` as one chunk.
    ///
    /// # Errors
    /// As [`FrameWriter::append_buffer`].
    pub fn append_data(&mut self, data: &[u8]) -> Result<()> {
        let cs = self.params.chunksize;
        if cs == 0 {
            return self.append_buffer(data);
        }
        for piece in data.chunks(cs) {
            self.append_buffer(piece)?;
        }
        Ok(())
    }

    pub(crate) fn compress(&self, data: &[u8]) -> Result<Vec<u8>> {
        blosc_chunk::compress(data, &self.params.cparams).map_err(|source| Error::Chunk {
            site: format!("chunk {}", self.entries.len()),
            source,
        })
    }

    /// Appends `nitems` items of a special value, split into chunks (C-Blosc2's
    /// `frame_fill_special`). Zeros/NaN/uninit cost no chunk data; [`Fill::Value`] stores a
    /// 40-byte repeated-value chunk per chunk.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for variable-size frames, a partial last chunk, a value of the
    /// wrong length, NaN with typesize other than 4/8; [`Error::Chunk`] from chunk construction.
    pub fn fill_special(&mut self, nitems: u64, fill: &Fill) -> Result<()> {
        let cs = self.params.chunksize;
        let ts = self.params.cparams.typesize;
        if cs == 0 {
            return Err(Error::InvalidArgument(
                "fill_special needs a fixed chunksize".into(),
            ));
        }
        self.check_last_full()?;
        match fill {
            Fill::Nan if ts != 4 && ts != 8 => {
                return Err(Error::InvalidArgument(format!(
                    "NaN fill needs typesize 4 or 8, not {ts}"
                )));
            }
            Fill::Value(v) if v.len() != ts => {
                return Err(Error::InvalidArgument(format!(
                    "fill value has {} bytes, typesize is {ts}",
                    v.len()
                )));
            }
            _ => {}
        }
        let was_empty = self.entries.is_empty();
        let mut left = nitems
            .checked_mul(ts as u64)
            .and_then(|n| usize::try_from(n).ok())
            .ok_or(Error::Overflow { what: "fill size" })?;
        while left > 0 {
            let n = left.min(cs);
            let e = match fill {
                Fill::Zeros => Entry::Special(ChunkLocation::Zeros, n),
                Fill::Nan => Entry::Special(ChunkLocation::Nan, n),
                Fill::Uninit => Entry::Special(ChunkLocation::Uninit, n),
                Fill::Value(v) => Entry::Data {
                    chunk: blosc_chunk::special_chunk_with(
                        SpecialValue::Value,
                        n,
                        v,
                        &self.params.cparams,
                    )
                    .map_err(|source| Error::Chunk {
                        site: "fill chunk".into(),
                        source,
                    })?,
                    nbytes: n,
                    file: None,
                    seq: None,
                },
            };
            let e = self.stamp(e);
            self.entries.push(e);
            left -= n;
        }
        self.index_is_fill = was_empty && !matches!(fill, Fill::Value(_));
        if self.index_is_fill && self.params.cparams.blocksize == 0 {
            self.fill_blocksize = u32::try_from(cs).ok();
        }
        Ok(())
    }

    fn check_pos(&self, i: usize, len: usize) -> Result<()> {
        if i >= len {
            return Err(Error::ChunkIndex {
                index: i,
                nchunks: self.entries.len(),
            });
        }
        Ok(())
    }

    /// Replaces chunk `i` with an already compressed chunk.
    ///
    /// # Errors
    /// [`Error::ChunkIndex`], or as [`FrameWriter::append_chunk`].
    pub fn update_chunk(&mut self, i: usize, chunk: Vec<u8>) -> Result<()> {
        self.check_pos(i, self.entries.len())?;
        let e = self.entry_for(chunk)?;
        self.check_size(e.nbytes(), i, self.entries.len())?;
        self.entries[i] = self.stamp(e);
        self.index_is_fill = false;
        Ok(())
    }

    /// Inserts an already compressed chunk before position `i` (`i == nchunks` appends).
    ///
    /// # Errors
    /// [`Error::ChunkIndex`], or as [`FrameWriter::append_chunk`].
    pub fn insert_chunk(&mut self, i: usize, chunk: Vec<u8>) -> Result<()> {
        self.check_pos(i, self.entries.len() + 1)?;
        let e = self.entry_for(chunk)?;
        if i == self.entries.len() {
            self.check_last_full()?;
        }
        self.check_size(e.nbytes(), i, self.entries.len() + 1)?;
        let e = self.stamp(e);
        self.entries.insert(i, e);
        self.index_is_fill = false;
        Ok(())
    }

    /// Deletes chunk `i`.
    ///
    /// # Errors
    /// [`Error::ChunkIndex`].
    pub fn delete_chunk(&mut self, i: usize) -> Result<()> {
        self.check_pos(i, self.entries.len())?;
        // A partial chunk can only be last, and deleting never moves it from there.
        self.entries.remove(i);
        self.index_is_fill = false;
        Ok(())
    }

    /// Reorders chunks: new chunk `k` is old chunk `order[k]` (`order` is a permutation).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if `order` is not a permutation of `0..nchunks`, or a partial
    /// chunk would no longer be last.
    pub fn reorder(&mut self, order: &[usize]) -> Result<()> {
        let n = self.entries.len();
        let mut seen = vec![false; n];
        if order.len() != n
            || !order
                .iter()
                .all(|&k| k < n && !std::mem::replace(&mut seen[k], true))
        {
            return Err(Error::InvalidArgument(format!(
                "{order:?} is not a permutation of 0..{n}"
            )));
        }
        let new: Vec<Entry> = order.iter().map(|&k| self.entries[k].clone()).collect();
        for (k, e) in new.iter().enumerate() {
            self.check_size(e.nbytes(), k, n)?;
        }
        self.entries = new;
        self.index_is_fill = false;
        Ok(())
    }

    // ----- serialisation ----------------------------------------------------------------

    fn header_for(
        &self,
        frame_type: FrameType,
        header_len: u32,
        frame_len: u64,
        cbytes: u64,
    ) -> FrameHeader {
        let p = &self.params;
        let c = &p.cparams;
        let variable = p.chunksize == 0;
        let codec_id = c.codec.id();
        FrameHeader {
            header_len,
            frame_len,
            format_version: if variable {
                FRAME_FORMAT_VERSION_VARIABLE
            } else {
                FRAME_FORMAT_VERSION_FIXED
            },
            offsets_width: 1,
            variable_chunks: variable,
            vl_blocks: false,
            frame_type,
            codec_code: if codec_id >= 32 { 6 } else { codec_id },
            clevel: c.clevel.min(15),
            splitmode: match c.splitmode {
                SplitMode::Always => 1,
                SplitMode::Never => 2,
                SplitMode::Auto => 3,
                _ => 4,
            },
            nbytes: self.nbytes(),
            cbytes,
            typesize: u32::try_from(c.typesize)
                .ok()
                .filter(|&t| t <= 255)
                .unwrap_or(1),
            blocksize: p
                .header_blocksize
                .or(self.fill_blocksize)
                .unwrap_or_else(|| u32::try_from(c.blocksize).unwrap_or(0)),
            chunksize: u32::try_from(p.chunksize).unwrap_or(0),
            nthreads_compress: p.nthreads_compress,
            nthreads_decompress: p.nthreads_decompress,
            has_vlmetalayers: !self.vlmetalayers.is_empty(),
            filters: c.filters.map(Filter::id),
            udcodec: codec_id,
            compcode_meta: 0,
            filters_meta: c.filters_meta,
            use_dict: false,
        }
    }

    pub(crate) fn header_bytes(
        &self,
        frame_type: FrameType,
        frame_len: u64,
        cbytes: u64,
    ) -> Result<Vec<u8>> {
        let pairs: Vec<(String, Vec<u8>)> = self
            .metalayers
            .iter()
            .map(|l| (l.name.clone(), l.content.clone()))
            .collect();
        let metas = layers::encode(&pairs, HEADER_FIXED_LEN, Section::Header)?;
        let header_len = u32::try_from(HEADER_FIXED_LEN + metas.len())
            .ok()
            .filter(|&h| i32::try_from(h).is_ok())
            .ok_or(Error::Overflow { what: "header_len" })?;
        let h = self.header_for(frame_type, header_len, frame_len, cbytes);
        let mut out = h.to_bytes().to_vec();
        out.extend(metas);
        Ok(out)
    }

    pub(crate) fn index_chunk(&self, locs: &[ChunkLocation]) -> Result<Vec<u8>> {
        if locs.is_empty() {
            return Ok(Vec::new());
        }
        let raw = encode_index(locs);
        let res = if self.index_is_fill {
            blosc_chunk::repeatval_chunk(raw.len(), &locs[0].raw().to_le_bytes())
        } else {
            blosc_chunk::compress(&raw, &index_cparams())
        };
        res.map_err(|source| Error::Chunk {
            site: "index chunk".into(),
            source,
        })
    }

    pub(crate) fn trailer_bytes(&self) -> Result<Vec<u8>> {
        let pairs: Vec<(String, Vec<u8>)> = self
            .vlmetalayers
            .iter()
            .map(|l| (l.name.clone(), l.content.clone()))
            .collect();
        trailer::encode(&pairs)
    }

    /// The contiguous frame bytes.
    ///
    /// # Errors
    /// [`Error::Overflow`] for frames beyond the format's size fields, [`Error::Chunk`] if the
    /// index chunk cannot be built.
    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        self.write_to(&mut out)?;
        Ok(out)
    }

    /// Writes the contiguous frame to `out`: the header, then every stored chunk straight from
    /// memory, then the index chunk and the trailer (the bytes of [`FrameWriter::to_bytes`]
    /// without building them in one buffer). Wrap unbuffered writers in a `BufWriter`.
    ///
    /// # Errors
    /// As [`FrameWriter::to_bytes`], plus the writer's I/O errors (`out` may then hold a
    /// partial frame).
    pub fn write_to(&self, mut out: impl Write) -> Result<()> {
        let mut locs = Vec::with_capacity(self.entries.len());
        let mut cbytes = 0u64;
        for e in &self.entries {
            match e {
                Entry::Special(loc, _) => locs.push(*loc),
                Entry::Data { chunk, .. } => {
                    locs.push(ChunkLocation::Stored(cbytes));
                    cbytes = cbytes
                        .checked_add(chunk.len() as u64)
                        .ok_or(Error::Overflow { what: "cbytes" })?;
                }
            }
        }
        let index = self.index_chunk(&locs)?;
        let trailer = self.trailer_bytes()?;
        let hlen = self.header_bytes(FrameType::Contiguous, 0, cbytes)?.len() as u64;
        let frame_len = [cbytes, index.len() as u64, trailer.len() as u64]
            .iter()
            .try_fold(hlen, |a, &b| a.checked_add(b))
            .ok_or(Error::Overflow { what: "frame_len" })?;
        out.write_all(&self.header_bytes(FrameType::Contiguous, frame_len, cbytes)?)?;
        for e in &self.entries {
            if let Entry::Data { chunk, .. } = e {
                out.write_all(chunk)?;
            }
        }
        out.write_all(&index)?;
        out.write_all(&trailer)?;
        Ok(())
    }

    /// Writes the contiguous frame to `path` atomically: a temporary file in the same
    /// directory, fsync if [`Durability::Fsync`], then rename over `path` (and fsync of the
    /// directory). An interrupted call leaves the old file (or none) under `path`, never a
    /// partial frame.
    ///
    /// # Errors
    /// I/O errors (the temporary file is removed), or as [`FrameWriter::to_bytes`].
    pub fn write_file(&self, path: impl AsRef<Path>, durability: Durability) -> Result<()> {
        write_atomically(path.as_ref(), durability, |f| self.write_to(f))
    }

    /// Writes a sparse frame directory: chunk files `%08X.chunk`, then `chunks.b2frame`
    /// atomically, then removes chunk files the new index no longer uses. Chunks loaded from a
    /// sparse frame keep their file numbers; new chunks get numbers above every number in use
    /// (as C-Blosc2 does), so files the old index references are never overwritten and an
    /// interrupted call leaves the old frame readable.
    ///
    /// # Errors
    /// I/O errors, or as [`FrameWriter::to_bytes`].
    pub fn write_sparse(&self, dir: impl AsRef<Path>, durability: Durability) -> Result<()> {
        let dir = dir.as_ref();
        fs::create_dir_all(dir)?;
        let in_use_before = existing_chunk_numbers(dir)?;
        // Files of the loaded frame are reused only in the directory they came from.
        let same_dir = self.source_dir.is_some() && fs::canonicalize(dir).ok() == self.source_dir;
        // Numbers already taken: files in the directory and the addition numbers of chunks.
        let mut next = self
            .entries
            .iter()
            .filter_map(|e| match e {
                Entry::Data { file, seq, .. } => Some(file.unwrap_or(0).max(seq.unwrap_or(0))),
                Entry::Special(..) => None,
            })
            .chain(in_use_before.iter().copied())
            .max()
            .map_or(0, |m| m + 1);
        let mut locs = Vec::with_capacity(self.entries.len());
        let mut used: Vec<u64> = Vec::new();
        let mut cbytes = 0u64;
        for e in &self.entries {
            match e {
                Entry::Special(loc, _) => locs.push(*loc),
                Entry::Data {
                    chunk, file, seq, ..
                } => {
                    let num = match file {
                        Some(n) if same_dir && in_use_before.contains(n) && !used.contains(n) => *n,
                        _ => {
                            // C-Blosc2 numbers files in order of addition; fall back to fresh
                            // numbers when that one is taken (never overwrite a file in use).
                            let n = match seq {
                                Some(s) if !in_use_before.contains(s) && !used.contains(s) => *s,
                                _ => {
                                    let n = next;
                                    next += 1;
                                    n
                                }
                            };
                            if u32::try_from(n).is_err() {
                                return Err(Error::Overflow {
                                    what: "chunk file number",
                                });
                            }
                            write_atomically(&dir.join(chunk_file_name(n)), durability, |f| {
                                Ok(f.write_all(chunk)?)
                            })?;
                            n
                        }
                    };
                    used.push(num);
                    locs.push(ChunkLocation::Stored(num));
                    cbytes = cbytes
                        .checked_add(chunk.len() as u64)
                        .ok_or(Error::Overflow { what: "cbytes" })?;
                }
            }
        }
        let index = self.index_chunk(&locs)?;
        let trailer = self.trailer_bytes()?;
        let hlen = self.header_bytes(FrameType::Sparse, 0, cbytes)?.len() as u64;
        let frame_len = hlen + index.len() as u64 + trailer.len() as u64;
        let header = self.header_bytes(FrameType::Sparse, frame_len, cbytes)?;
        write_atomically(&dir.join(SPARSE_FRAME_FILE), durability, |f| {
            f.write_all(&header)?;
            f.write_all(&index)?;
            f.write_all(&trailer)?;
            Ok(())
        })?;
        for n in in_use_before {
            if !used.contains(&n) {
                fs::remove_file(dir.join(chunk_file_name(n)))?;
            }
        }
        Ok(())
    }
}

/// Chunk files (number, compressed bytes) and the `chunks.b2frame` bytes of a sparse frame.
#[cfg(feature = "object_store")]
pub(crate) type SparseParts<'a> = (Vec<(u64, &'a [u8])>, Vec<u8>);

impl FrameWriter {
    /// The parts of a sparse frame whose stored chunks get file numbers `first..` in index
    /// order: the chunk files (number, compressed bytes) and the `chunks.b2frame` bytes.
    #[cfg(feature = "object_store")]
    pub(crate) fn sparse_parts(&self, first: u64) -> Result<SparseParts<'_>> {
        let mut locs = Vec::with_capacity(self.entries.len());
        let mut files = Vec::new();
        let mut cbytes = 0u64;
        let mut next = first;
        for e in &self.entries {
            match e {
                Entry::Special(loc, _) => locs.push(*loc),
                Entry::Data { chunk, .. } => {
                    if u32::try_from(next).is_err() {
                        return Err(Error::Overflow {
                            what: "chunk file number",
                        });
                    }
                    files.push((next, chunk.as_slice()));
                    locs.push(ChunkLocation::Stored(next));
                    next += 1;
                    cbytes = cbytes
                        .checked_add(chunk.len() as u64)
                        .ok_or(Error::Overflow { what: "cbytes" })?;
                }
            }
        }
        let index = self.index_chunk(&locs)?;
        let trailer = self.trailer_bytes()?;
        let hlen = self.header_bytes(FrameType::Sparse, 0, cbytes)?.len() as u64;
        let frame_len = hlen + index.len() as u64 + trailer.len() as u64;
        let mut frame = self.header_bytes(FrameType::Sparse, frame_len, cbytes)?;
        frame.extend_from_slice(&index);
        frame.extend_from_slice(&trailer);
        Ok((files, frame))
    }
}

pub(crate) fn chunk_file_name(n: u64) -> String {
    format!("{n:08X}.chunk")
}

/// Chunk file numbers present in `dir` (`%08X.chunk` names).
pub(crate) fn existing_chunk_numbers(dir: &Path) -> Result<Vec<u64>> {
    let mut v = Vec::new();
    for e in fs::read_dir(dir)? {
        let name = e?.file_name();
        let Some(name) = name.to_str() else { continue };
        if let Some(hex) = name.strip_suffix(".chunk")
            && hex.len() == 8
            && let Ok(n) = u64::from_str_radix(hex, 16)
        {
            v.push(n);
        }
    }
    Ok(v)
}

/// [`scifmt_io::write_atomically`] with this crate's error type.
pub(crate) fn write_atomically(
    path: &Path,
    durability: Durability,
    body: impl FnOnce(&mut std::io::BufWriter<scifmt_io::Staged>) -> Result<()>,
) -> Result<()> {
    scifmt_io::write_atomically(path, durability, body)
}
