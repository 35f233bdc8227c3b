//! Writing a large contiguous frame to a file chunk by chunk, without holding it in memory.

use std::fs::{self, File};
use std::io::{BufWriter, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use crate::header::FrameType;
use crate::offsets::ChunkLocation;
use crate::writer::{Entry, FrameParams, FrameWriter, Sync, create_unique, sync_dir};
use crate::{Error, Result};

/// Streams a new contiguous frame to a file: chunks go straight to disk, the index and trailer
/// are written by [`FrameFileWriter::finish`].
///
/// The frame is written to a uniquely named temporary file next to the target and renamed over
/// it only by `finish`; dropping the writer (or an error, or a crash) leaves the target
/// untouched and the temporary file is removed (on drop). The bytes are the same as
/// [`FrameWriter::write_file`] would produce for the same operations.
#[derive(Debug)]
pub struct FrameFileWriter {
    meta: FrameWriter,
    out: Option<BufWriter<File>>,
    tmp: PathBuf,
    target: PathBuf,
    sync: Sync,
    locs: Vec<ChunkLocation>,
    cbytes: u64,
    last_nbytes: Option<usize>,
    header_len: u64,
}

impl FrameFileWriter {
    /// Starts a frame at `path` with `metalayers` (fixed from now on, as in C-Blosc2).
    ///
    /// # Errors
    /// As [`FrameWriter::new`] and [`FrameWriter::add_metalayer`], or I/O errors.
    pub fn create(
        path: impl AsRef<Path>,
        params: FrameParams,
        metalayers: &[(&str, &[u8])],
        sync: Sync,
    ) -> Result<Self> {
        let target = path.as_ref().to_path_buf();
        let mut meta = FrameWriter::new(params)?;
        for (name, content) in metalayers {
            meta.add_metalayer(name, content)?;
        }
        let dir = target
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        let name = target.file_name().ok_or_else(|| {
            Error::InvalidArgument(format!("{} has no file name", target.display()))
        })?;
        let (tmp, file) = create_unique(dir, name)?;
        let mut out = BufWriter::new(file);
        // Placeholder header of the final length (metalayers are fixed); patched by `finish`.
        let header = meta.header_bytes(FrameType::Contiguous, 0, 0)?;
        let header_len = header.len() as u64;
        if let Err(e) = out.write_all(&header) {
            let _ = fs::remove_file(&tmp);
            return Err(e.into());
        }
        Ok(Self {
            meta,
            out: Some(out),
            tmp,
            target,
            sync,
            locs: Vec::new(),
            cbytes: 0,
            last_nbytes: None,
            header_len,
        })
    }

    /// Number of chunks written so far.
    #[must_use]
    pub fn nchunks(&self) -> usize {
        self.locs.len()
    }

    fn out(&mut self) -> Result<&mut BufWriter<File>> {
        self.out
            .as_mut()
            .ok_or_else(|| Error::InvalidArgument("the frame is already finished".into()))
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
                self.out()?.write_all(&chunk)?;
                self.locs.push(ChunkLocation::Stored(self.cbytes));
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

    /// Writes index and trailer, patches the header, optionally fsyncs, and renames the file
    /// over the target.
    ///
    /// # Errors
    /// I/O errors (the temporary file is removed and the target left as it was).
    pub fn finish(mut self) -> Result<()> {
        let mut out = self
            .out
            .take()
            .ok_or_else(|| Error::InvalidArgument("already finished".into()))?;
        let r = (|| -> Result<()> {
            let index = self.meta.index_chunk(&self.locs)?;
            let trailer = self.meta.trailer_bytes()?;
            let frame_len = [self.cbytes, index.len() as u64, trailer.len() as u64]
                .iter()
                .try_fold(self.header_len, |a, &b| a.checked_add(b))
                .ok_or(Error::Overflow { what: "frame_len" })?;
            out.write_all(&index)?;
            out.write_all(&trailer)?;
            let header = self
                .meta
                .header_bytes(FrameType::Contiguous, frame_len, self.cbytes)?;
            out.seek(SeekFrom::Start(0))?;
            out.write_all(&header)?;
            let file = out.into_inner().map_err(|e| Error::Io(e.into_error()))?;
            if self.sync == Sync::Full {
                file.sync_all()?;
            }
            drop(file);
            fs::rename(&self.tmp, &self.target)?;
            if self.sync == Sync::Full {
                let dir = self
                    .target
                    .parent()
                    .filter(|p| !p.as_os_str().is_empty())
                    .unwrap_or(Path::new("."));
                sync_dir(dir)?;
            }
            Ok(())
        })();
        if r.is_err() {
            let _ = fs::remove_file(&self.tmp);
        }
        r
    }
}

impl Drop for FrameFileWriter {
    fn drop(&mut self) {
        // Not finished: discard the partial temporary file.
        if self.out.take().is_some() {
            let _ = fs::remove_file(&self.tmp);
        }
    }
}
