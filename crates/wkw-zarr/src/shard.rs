//! Shards of `sharding_indexed`: the index (one `(offset, nbytes)` pair of little-endian u64
//! per inner chunk in C order, `(2⁶⁴−1, 2⁶⁴−1)` for an absent chunk, then the `crc32c` of those
//! bytes) and positional reads of the chunks. Writing streams chunks into a staged file and
//! appends the index, so a shard appears under its key only complete.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use scifmt_io::{Durability, Staged};

use crate::codec::crc32c;
use crate::error::{Error, Result};
use crate::meta::Layout;

/// Index entry of an absent chunk.
const ABSENT: u64 = u64::MAX;

/// The C-order position in the shard index of the block at block coordinates `(x, y, z)`
/// inside its shard (the channel dimension has one chunk).
pub(crate) fn index_position(file_len: u32, b: [u32; 3]) -> usize {
    let f = file_len as usize;
    (b[0] as usize * f + b[1] as usize) * f + b[2] as usize
}

/// An existing shard opened for reading chunks.
#[derive(Debug)]
pub(crate) struct ShardReader {
    file: File,
    /// `(offset, nbytes)` per chunk in C order; `None` for absent chunks.
    index: Vec<Option<(u64, u64)>>,
    path: PathBuf,
    len: u64,
}

impl ShardReader {
    /// Opens the shard at `path` and reads and checks its index: length, checksum, and every
    /// chunk inside the data part of the file and no longer than `max_chunk` bytes.
    ///
    /// # Errors
    /// [`Error::Io`] if it cannot be read; [`Error::Corrupt`] for a bad index.
    pub(crate) fn open(path: &Path, layout: &Layout, max_chunk: u64) -> Result<Self> {
        let file = File::open(path).map_err(|e| Error::io(path, e))?;
        let len = file.metadata().map_err(|e| Error::io(path, e))?.len();
        let n = layout.chunks_per_shard();
        let index_len = layout.index_bytes();
        if len < index_len {
            return Err(Error::corrupt(
                path,
                format!("{len} bytes, shorter than its {index_len}-byte index"),
            ));
        }
        // `index_len <= len`, a real file's length: the allocation is bounded by the input.
        let at = if layout.index_at_end {
            len - index_len
        } else {
            0
        };
        let mut raw = vec![
            0u8;
            usize::try_from(index_len).map_err(|_| Error::LimitExceeded {
                what: "shard index",
                requested: index_len,
                limit: usize::MAX as u64,
            })?
        ];
        read_exact_at(&file, &mut raw, at).map_err(|e| Error::io(path, e))?;
        let entries = usize::try_from(n * 16).unwrap_or(usize::MAX);
        if layout.index_crc {
            let (body, crc) = raw.split_at(entries);
            let stored = u32::from_le_bytes(crc.try_into().unwrap_or([0; 4]));
            let actual = crc32c(body);
            if stored != actual {
                return Err(Error::corrupt(
                    path,
                    format!("index checksum {stored:#010x}, computed {actual:#010x}"),
                ));
            }
        }
        let (lo, hi) = if layout.index_at_end {
            (0, len - index_len)
        } else {
            (index_len, len)
        };
        let mut index = Vec::with_capacity(entries / 16);
        for (i, e) in raw[..entries].chunks_exact(16).enumerate() {
            let offset = u64::from_le_bytes(e[..8].try_into().unwrap_or([0; 8]));
            let nbytes = u64::from_le_bytes(e[8..].try_into().unwrap_or([0; 8]));
            if offset == ABSENT && nbytes == ABSENT {
                index.push(None);
                continue;
            }
            let end = offset.checked_add(nbytes);
            if offset < lo || end.is_none_or(|end| end > hi) || nbytes > max_chunk {
                return Err(Error::corrupt(
                    path,
                    format!(
                        "index entry {i}: chunk of {nbytes} bytes at {offset} outside the data \
                         [{lo}, {hi}) or longer than {max_chunk}"
                    ),
                ));
            }
            index.push(Some((offset, nbytes)));
        }
        Ok(Self {
            file,
            index,
            path: path.to_path_buf(),
            len,
        })
    }

    /// The shard's path.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// The shard's length in bytes.
    pub(crate) fn len(&self) -> u64 {
        self.len
    }

    /// Reads the stored bytes of the chunk at index position `pos` into `out`; `false` (and
    /// `out` empty) if the chunk is absent.
    pub(crate) fn read_chunk(&self, pos: usize, out: &mut Vec<u8>) -> Result<bool> {
        out.clear();
        let Some(Some((offset, nbytes))) = self.index.get(pos).copied() else {
            return Ok(false);
        };
        // Bounded by `max_chunk` when opening.
        out.resize(usize::try_from(nbytes).unwrap_or(0), 0);
        read_exact_at(&self.file, out, offset).map_err(|e| Error::io(&self.path, e))?;
        Ok(true)
    }
}

/// A shard being written: chunks streamed to a staged file beside the target, index kept in
/// memory and appended by [`ShardWriter::finish`].
#[derive(Debug)]
pub(crate) struct ShardWriter {
    out: BufWriter<Staged>,
    index: Vec<(u64, u64)>,
    pos: u64,
    target: PathBuf,
}

impl ShardWriter {
    /// Starts a shard for `layout` at `target` (its directory must exist).
    pub(crate) fn create(target: &Path, layout: &Layout) -> Result<Self> {
        let n = usize::try_from(layout.chunks_per_shard()).map_err(|_| Error::LimitExceeded {
            what: "shard index entries",
            requested: layout.chunks_per_shard(),
            limit: usize::MAX as u64,
        })?;
        let staged = Staged::create(target)?;
        Ok(Self {
            out: BufWriter::with_capacity(1 << 20, staged),
            index: vec![(ABSENT, ABSENT); n],
            pos: 0,
            target: target.to_path_buf(),
        })
    }

    /// Appends the stored chunk for index position `pos`.
    pub(crate) fn push(&mut self, pos: usize, stored: &[u8]) -> Result<()> {
        let slot = self
            .index
            .get_mut(pos)
            .ok_or_else(|| Error::Internal(format!("chunk position {pos} outside the shard")))?;
        *slot = (self.pos, stored.len() as u64);
        self.out
            .write_all(stored)
            .map_err(|e| Error::io(&self.target, e))?;
        self.pos += stored.len() as u64;
        Ok(())
    }

    /// Appends the index and its checksum and renames the shard into place; returns its
    /// length in bytes.
    pub(crate) fn finish(mut self, durability: Durability) -> Result<u64> {
        let mut raw = Vec::with_capacity(self.index.len() * 16 + 4);
        for (offset, nbytes) in &self.index {
            raw.extend_from_slice(&offset.to_le_bytes());
            raw.extend_from_slice(&nbytes.to_le_bytes());
        }
        let crc = crc32c(&raw);
        raw.extend_from_slice(&crc.to_le_bytes());
        self.out
            .write_all(&raw)
            .map_err(|e| Error::io(&self.target, e))?;
        scifmt_io::commit(self.out, durability)?;
        Ok(self.pos + raw.len() as u64)
    }
}

/// Fills `buf` from `offset` of `file` (positional, no shared cursor).
pub(crate) fn read_exact_at(file: &File, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        std::os::unix::fs::FileExt::read_exact_at(file, buf, offset)
    }
    #[cfg(windows)]
    {
        let mut done = 0;
        while done < buf.len() {
            let n = std::os::windows::fs::FileExt::seek_read(
                file,
                &mut buf[done..],
                offset + done as u64,
            )?;
            if n == 0 {
                return Err(std::io::ErrorKind::UnexpectedEof.into());
            }
            done += n;
        }
        Ok(())
    }
}
