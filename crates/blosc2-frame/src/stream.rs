//! Writing a large new frame chunk by chunk, without holding it in memory: a contiguous file
//! or a sparse-frame directory.

use std::fs;
use std::io::{BufWriter, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::header::FrameType;
use crate::offsets::ChunkLocation;
use crate::reader::SPARSE_FRAME_FILE;
use crate::writer::write_atomically;
use crate::writer::{Entry, FrameParams, FrameWriter, chunk_file_name, existing_chunk_numbers};
use scifmt_io::{Durability, Staged};

/// Where the chunks go.
#[derive(Debug)]
enum Sink {
    /// One temporary file persisted over the target by `finish` (and removed when dropped
    /// unfinished); `None` once finished.
    Contiguous {
        out: Option<BufWriter<Staged>>,
        header_len: u64,
    },
    /// One file per stored chunk in the target directory; `chunks.b2frame` by `finish`.
    Sparse {
        /// Chunk file numbers present when the writer started (an older frame's chunks).
        old: Vec<u64>,
        /// Chunk files written so far, in order.
        written: Vec<u64>,
        /// Number of the next chunk file.
        next: u64,
        /// The writer created the directory (removed again if the writer is abandoned).
        created_dir: bool,
        finished: bool,
    },
}

/// Streams a new frame to disk: chunks go straight to a file (contiguous frame,
/// [`FrameFileWriter::create`]) or to chunk files of a directory (sparse frame,
/// [`FrameFileWriter::create_sparse`]); the index and trailer are written by
/// [`FrameFileWriter::finish`]. Memory holds the chunk being written and 8 bytes of index per
/// chunk.
///
/// A contiguous frame is written to a temporary file next to the target and renamed over it
/// only by `finish`; dropping the writer (or an error, or a crash) leaves the target untouched
/// and the temporary file is removed (on drop or error; a crash can leave it behind). The bytes are the same as
/// [`FrameWriter::write_file`] would produce for the same operations.
///
/// A sparse frame writes each stored chunk to its own file (`%08X.chunk`, numbered in order of
/// addition from 0 in a new or empty directory, above every existing number otherwise, so an
/// older frame's chunk files are never overwritten); `finish` replaces `chunks.b2frame`
/// atomically, then deletes the older frame's chunk files. Dropping the writer unfinished
/// removes the chunk files it wrote (and the directory, if it created it and it is empty); a
/// crash leaves the older frame readable, plus unreferenced chunk files. In a new or empty
/// directory, every file is byte-identical to [`FrameWriter::write_sparse`]'s.
#[derive(Debug)]
pub struct FrameFileWriter {
    meta: FrameWriter,
    sink: Sink,
    target: PathBuf,
    durability: Durability,
    locs: Vec<ChunkLocation>,
    cbytes: u64,
    last_nbytes: Option<usize>,
}

impl FrameFileWriter {
    /// Starts a contiguous frame at `path` with `metalayers` (fixed from now on, as in
    /// C-Blosc2).
    ///
    /// # Errors
    /// As [`FrameWriter::new`] and [`FrameWriter::add_metalayer`], or I/O errors.
    pub fn create(
        path: impl AsRef<Path>,
        params: FrameParams,
        metalayers: &[(&str, &[u8])],
        durability: Durability,
    ) -> Result<Self> {
        let target = path.as_ref().to_path_buf();
        let meta = writer_with(params, metalayers)?;
        let mut out = BufWriter::new(Staged::create(&target)?);
        // Placeholder header of the final length (metalayers are fixed); patched by `finish`.
        let header = meta.header_bytes(FrameType::Contiguous, 0, 0)?;
        let header_len = header.len() as u64;
        out.write_all(&header)?;
        Ok(Self {
            meta,
            sink: Sink::Contiguous {
                out: Some(out),
                header_len,
            },
            target,
            durability,
            locs: Vec::new(),
            cbytes: 0,
            last_nbytes: None,
        })
    }

    /// Starts a sparse frame in directory `dir` (created if missing) with `metalayers` (fixed
    /// from now on). An existing sparse frame in `dir` stays readable until `finish` replaces
    /// it.
    ///
    /// # Errors
    /// As [`FrameWriter::new`] and [`FrameWriter::add_metalayer`], or I/O errors (creating or
    /// listing the directory).
    pub fn create_sparse(
        dir: impl AsRef<Path>,
        params: FrameParams,
        metalayers: &[(&str, &[u8])],
        durability: Durability,
    ) -> Result<Self> {
        let target = dir.as_ref().to_path_buf();
        let meta = writer_with(params, metalayers)?;
        let created_dir = !target.is_dir();
        fs::create_dir_all(&target)?;
        let old = existing_chunk_numbers(&target)?;
        let next = match old.iter().max() {
            None => 0,
            Some(&m) => m.checked_add(1).ok_or(Error::Overflow {
                what: "chunk file number",
            })?,
        };
        Ok(Self {
            meta,
            sink: Sink::Sparse {
                old,
                written: Vec::new(),
                next,
                created_dir,
                finished: false,
            },
            target,
            durability,
            locs: Vec::new(),
            cbytes: 0,
            last_nbytes: None,
        })
    }

    /// Number of chunks written so far.
    #[must_use]
    pub fn nchunks(&self) -> usize {
        self.locs.len()
    }

    /// Stores one compressed chunk; returns its index entry.
    fn store(&mut self, chunk: &[u8]) -> Result<ChunkLocation> {
        match &mut self.sink {
            Sink::Contiguous { out, .. } => {
                let out = out.as_mut().ok_or_else(|| {
                    Error::InvalidArgument("the frame is already finished".into())
                })?;
                out.write_all(chunk)?;
                Ok(ChunkLocation::Stored(self.cbytes))
            }
            Sink::Sparse {
                written,
                next,
                finished,
                ..
            } => {
                if *finished {
                    return Err(Error::InvalidArgument(
                        "the frame is already finished".into(),
                    ));
                }
                let n = *next;
                if u32::try_from(n).is_err() {
                    return Err(Error::Overflow {
                        what: "chunk file number",
                    });
                }
                write_atomically(
                    &self.target.join(chunk_file_name(n)),
                    self.durability,
                    |f| Ok(f.write_all(chunk)?),
                )?;
                written.push(n);
                *next = n + 1;
                Ok(ChunkLocation::Stored(n))
            }
        }
    }

    /// Appends an already compressed chunk (special zero/NaN/uninit chunks become special
    /// offsets in fixed-chunksize frames).
    ///
    /// # Errors
    /// As [`FrameWriter::append_chunk`], or I/O errors.
    pub fn append_chunk(&mut self, chunk: Vec<u8>) -> Result<()> {
        let e = self.meta.entry_for(chunk)?;
        let cs = self.meta.params().chunksize;
        let n = match &e {
            Entry::Special(_, n) | Entry::Data { nbytes: n, .. } => *n,
        };
        if cs > 0 {
            if self.last_nbytes.is_some_and(|l| l != cs) {
                return Err(Error::InvalidArgument(
                    "the last chunk is partial: nothing can follow it".into(),
                ));
            }
            if n == 0 || n > cs {
                return Err(Error::InvalidArgument(format!(
                    "chunk of {n} bytes in a frame of {cs}-byte chunks"
                )));
            }
        }
        match e {
            Entry::Special(loc, _) => self.locs.push(loc),
            Entry::Data { chunk, .. } => {
                let loc = self.store(&chunk)?;
                self.locs.push(loc);
                self.cbytes = self
                    .cbytes
                    .checked_add(chunk.len() as u64)
                    .ok_or(Error::Overflow { what: "cbytes" })?;
            }
        }
        self.meta.streamed_nbytes += n as u64;
        self.last_nbytes = Some(n);
        Ok(())
    }

    /// Compresses `data` with the frame's cparams, split into `chunksize` pieces, and appends it.
    ///
    /// # Errors
    /// As [`FrameFileWriter::append_chunk`], plus compression errors.
    pub fn append_data(&mut self, data: &[u8]) -> Result<()> {
        let cs = self.meta.params().chunksize;
        let pieces: Vec<&[u8]> = if cs == 0 {
            vec![data]
        } else {
            data.chunks(cs).collect()
        };
        for piece in pieces {
            let c = self.meta.compress(piece)?;
            self.append_chunk(c)?;
        }
        Ok(())
    }

    /// Sets a vlmetalayer (stored in the trailer written by `finish`).
    ///
    /// # Errors
    /// As [`FrameWriter::set_vlmetalayer`].
    pub fn set_vlmetalayer(&mut self, name: &str, content: &[u8]) -> Result<()> {
        self.meta.set_vlmetalayer(name, content)
    }

    /// Writes index and trailer (and, for a contiguous frame, patches the header),
    /// optionally fsyncs, and puts the frame in place: renames the file over the target, or
    /// replaces the directory's `chunks.b2frame` and deletes the older frame's chunk files.
    ///
    /// # Errors
    /// I/O errors (the temporary file, or the chunk files written, are removed and the target
    /// left as it was).
    pub fn finish(self) -> Result<()> {
        self.finish_with(true).map(drop)
    }

    /// Like [`FrameFileWriter::finish`], but never replaces an existing frame: if the target
    /// file (contiguous) or the directory's `chunks.b2frame` (sparse) exists when the frame
    /// would be put in place, nothing is replaced or deleted, the temporary file (or the chunk
    /// files this writer wrote) is removed and the result is `Ok(false)`. The check and the
    /// move into place are one step (a hard link or `renameat2(RENAME_NOREPLACE)`), so a file
    /// another process creates meanwhile is never replaced either.
    ///
    /// # Errors
    /// As [`FrameFileWriter::finish`].
    pub fn finish_new(self) -> Result<bool> {
        self.finish_with(false)
    }

    fn finish_with(mut self, replace: bool) -> Result<bool> {
        let index = self.meta.index_chunk(&self.locs)?;
        let trailer = self.meta.trailer_bytes()?;
        match &mut self.sink {
            Sink::Contiguous { out, header_len } => {
                // Dropping `out` on an error removes the temporary file.
                let mut out = out
                    .take()
                    .ok_or_else(|| Error::InvalidArgument("already finished".into()))?;
                let frame_len = [self.cbytes, index.len() as u64, trailer.len() as u64]
                    .iter()
                    .try_fold(*header_len, |a, &b| a.checked_add(b))
                    .ok_or(Error::Overflow { what: "frame_len" })?;
                out.write_all(&index)?;
                out.write_all(&trailer)?;
                let header =
                    self.meta
                        .header_bytes(FrameType::Contiguous, frame_len, self.cbytes)?;
                out.seek(SeekFrom::Start(0))?;
                out.write_all(&header)?;
                if replace {
                    scifmt_io::commit(out, self.durability)?;
                    return Ok(true);
                }
                let staged = out.into_inner().map_err(|e| {
                    let (error, staged) = e.into_parts();
                    scifmt_io::Error::io(staged.get_ref().target(), error)
                })?;
                Ok(staged.persist_new(self.durability)?)
            }
            Sink::Sparse {
                old,
                written,
                finished,
                ..
            } => {
                if *finished {
                    return Err(Error::InvalidArgument("already finished".into()));
                }
                let hlen = self
                    .meta
                    .header_bytes(FrameType::Sparse, 0, self.cbytes)?
                    .len() as u64;
                let frame_len = [index.len() as u64, trailer.len() as u64]
                    .iter()
                    .try_fold(hlen, |a, &b| a.checked_add(b))
                    .ok_or(Error::Overflow { what: "frame_len" })?;
                let header = self
                    .meta
                    .header_bytes(FrameType::Sparse, frame_len, self.cbytes)?;
                let index_path = self.target.join(SPARSE_FRAME_FILE);
                if replace {
                    write_atomically(&index_path, self.durability, |f| {
                        f.write_all(&header)?;
                        f.write_all(&index)?;
                        f.write_all(&trailer)?;
                        Ok(())
                    })?;
                } else {
                    let mut f = BufWriter::new(Staged::create(&index_path)?);
                    f.write_all(&header)?;
                    f.write_all(&index)?;
                    f.write_all(&trailer)?;
                    let staged = f.into_inner().map_err(|e| {
                        let (error, staged) = e.into_parts();
                        scifmt_io::Error::io(staged.get_ref().target(), error)
                    })?;
                    if !staged.persist_new(self.durability)? {
                        // Not finished: dropping the writer removes the chunk files it wrote.
                        return Ok(false);
                    }
                }
                // The new frame is in place: from here on the writer's files are its chunks.
                *finished = true;
                for &n in old.iter() {
                    fs::remove_file(self.target.join(chunk_file_name(n)))?;
                }
                written.clear();
                Ok(true)
            }
        }
    }
}

/// A metadata-only writer holding `params` and `metalayers`.
fn writer_with(params: FrameParams, metalayers: &[(&str, &[u8])]) -> Result<FrameWriter> {
    let mut meta = FrameWriter::new(params)?;
    for (name, content) in metalayers {
        meta.add_metalayer(name, content)?;
    }
    Ok(meta)
}

impl Drop for FrameFileWriter {
    fn drop(&mut self) {
        match &mut self.sink {
            // Not finished: dropping the temporary file removes it.
            Sink::Contiguous { out, .. } => drop(out.take()),
            // Not finished (or `finish` failed): discard the chunk files nothing references.
            Sink::Sparse {
                written,
                created_dir,
                finished,
                ..
            } => {
                if *finished {
                    return;
                }
                for &n in written.iter() {
                    let _ = fs::remove_file(self.target.join(chunk_file_name(n)));
                }
                if *created_dir {
                    // Fails (and keeps the directory) unless it is empty.
                    let _ = fs::remove_dir(&self.target);
                }
            }
        }
    }
}
