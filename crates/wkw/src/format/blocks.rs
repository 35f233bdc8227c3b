//! Block-level access to one data file, for converters that move whole blocks between WKW and
//! other chunked formats without going through boxes: [`BlockReader`] hands out a file's blocks
//! (stored bytes or decoded) by Morton index, [`BlockWriter`] writes a new file block by block
//! in Morton order, staged beside its target and renamed into place only when complete.

use std::io::{BufWriter, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use scifmt_io::{Durability, Staged};

use crate::error::{Error, FormatError, Result};
use crate::format::file::{FileMeta, OpenFailure};
use crate::format::header::{BlockType, Header};
use crate::format::lz4;
use crate::io::storage::{FsFile, StorageFile};
use crate::limits::Limits;

/// One local data file opened for reading whole blocks (Morton index `0..blocks_per_file`).
///
/// Opening reads and validates the header and jump table exactly as a
/// [`Dataset`](crate::Dataset) read does; each block read is one positional read.
pub struct BlockReader {
    file: Box<dyn StorageFile>,
    meta: FileMeta,
    path: PathBuf,
}

impl std::fmt::Debug for BlockReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BlockReader")
            .field("path", &self.path)
            .field("header", &self.meta.header)
            .finish_non_exhaustive()
    }
}

impl BlockReader {
    /// Opens the data file at `path`.
    ///
    /// # Errors
    /// [`Error::Io`] if it cannot be read, [`Error::Format`] for a bad header or jump table,
    /// [`Error::LimitExceeded`] beyond `limits`.
    pub fn open(path: impl AsRef<Path>, limits: &Limits) -> Result<Self> {
        let path = path.as_ref();
        let file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
        let file = FsFile::new(file).map_err(|e| Error::io(path, e))?;
        Self::open_storage(Box::new(file), path, limits)
    }

    /// Opens a data file held by other storage (`path` names it in errors): for a file on an
    /// object store, a [`StorageFile`] holding only its first bytes (header and jump table,
    /// e.g. a [`Prefetched`](scifmt_io::Prefetched)) is enough to learn every block's
    /// [`BlockReader::stored_range`], so that a converter can fetch the blocks itself,
    /// coalesced; reading a block the storage does not hold is an [`Error::Io`].
    ///
    /// # Errors
    /// [`Error::Io`] if the header or jump table cannot be read, [`Error::Format`] if they are
    /// bad, [`Error::LimitExceeded`] beyond `limits`.
    pub fn open_storage(
        file: Box<dyn StorageFile>,
        path: impl AsRef<Path>,
        limits: &Limits,
    ) -> Result<Self> {
        let path = path.as_ref();
        let meta = FileMeta::parse(file.as_ref(), limits, path).map_err(|f| match f {
            OpenFailure::Unreadable(e) => Error::format(path, e),
            OpenFailure::Hard(e) => e,
        })?;
        Ok(Self {
            file,
            meta,
            path: path.to_path_buf(),
        })
    }

    /// The file's own header.
    #[must_use]
    pub fn header(&self) -> &Header {
        &self.meta.header
    }

    /// The file's path.
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The file's length in bytes.
    #[must_use]
    pub fn file_len(&self) -> u64 {
        self.meta.len
    }

    /// Number of blocks (`file_len³`).
    #[must_use]
    pub fn block_count(&self) -> u64 {
        self.meta.header.blocks_per_file()
    }

    /// Byte range `[start, end)` of block `k` as stored (compressed or raw).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if `k` is not a block of the file; [`Error::Format`] if the
    /// block lies past the end of the file.
    pub fn stored_range(&self, k: u64) -> Result<(u64, u64)> {
        if k >= self.block_count() {
            return Err(Error::InvalidArgument(format!(
                "block {k} of {} with {} blocks",
                self.path.display(),
                self.block_count()
            )));
        }
        let (start, end) = self.meta.block_range(k).unwrap_or((u64::MAX, u64::MAX));
        if end > self.meta.len {
            return Err(Error::format(
                &self.path,
                FormatError::BlockPastEnd {
                    index: k,
                    end,
                    file_len: self.meta.len,
                },
            ));
        }
        Ok((start, end))
    }

    /// Reads block `k` as stored (an LZ4 block for compressed files, the raw block otherwise)
    /// into `out`, replacing its contents.
    ///
    /// # Errors
    /// As [`BlockReader::stored_range`]; [`Error::Io`] if the read fails.
    pub fn read_stored(&self, k: u64, out: &mut Vec<u8>) -> Result<()> {
        let (start, end) = self.stored_range(k)?;
        // `end - start` is at most the LZ4 bound of a block (checked when opening).
        let n = usize::try_from(end - start).map_err(|_| Error::LimitExceeded {
            what: "stored block",
            requested: end - start,
            limit: usize::MAX as u64,
        })?;
        out.clear();
        out.resize(n, 0);
        self.file
            .read_exact_at(out, start)
            .map_err(|e| Error::io(&self.path, e))
    }

    /// Reads and decodes block `k` into `out` (exactly [`Header::block_bytes`] long: channels
    /// fastest, then x, y, z), using `scratch` for the compressed bytes.
    ///
    /// # Errors
    /// As [`BlockReader::read_stored`]; [`Error::Format`] if the block does not decode to
    /// exactly one block; [`Error::InvalidArgument`] if `out` has the wrong length.
    pub fn read_block(&self, k: u64, scratch: &mut Vec<u8>, out: &mut [u8]) -> Result<()> {
        if out.len() as u64 != self.meta.header.block_bytes() {
            return Err(Error::InvalidArgument(format!(
                "buffer of {} bytes for blocks of {}",
                out.len(),
                self.meta.header.block_bytes()
            )));
        }
        if k >= self.block_count() {
            return Err(Error::InvalidArgument(format!(
                "block {k} of {} with {} blocks",
                self.path.display(),
                self.block_count()
            )));
        }
        self.meta
            .read_block(self.file.as_ref(), k, scratch, out, &self.path)
    }
}

/// Decodes one stored block of `block_type` into `out`, which it must fill exactly (a raw
/// block is copied).
///
/// # Errors
/// [`FormatError::Decompress`] (with `index` 0 and `offset` 0: the caller names the block) if
/// the bytes are not one block.
pub fn decode_block(
    stored: &[u8],
    block_type: BlockType,
    out: &mut [u8],
) -> Result<(), FormatError> {
    let ok = if block_type.is_compressed() {
        lz4::decompress_exact(stored, out)
    } else if stored.len() == out.len() {
        out.copy_from_slice(stored);
        true
    } else {
        false
    };
    if ok {
        Ok(())
    } else {
        Err(FormatError::Decompress {
            index: 0,
            offset: 0,
            expected: out.len() as u64,
        })
    }
}

/// Encodes one raw block as stored in a file of `block_type` (LZ4, LZ4HC level 9, or a copy)
/// into `out`, replacing its contents.
///
/// # Errors
/// [`Error::Compress`] if LZ4 cannot compress a block of that size.
pub fn encode_block(raw: &[u8], block_type: BlockType, out: &mut Vec<u8>) -> Result<()> {
    out.clear();
    out.resize(lz4::room(raw.len(), block_type)?, 0);
    let n = lz4::compress_into(raw, block_type, out)?;
    out.truncate(n);
    Ok(())
}

/// A new data file written block by block in Morton order (block 0 first), staged under a
/// temporary name beside `path` and renamed over it by [`BlockWriter::finish`] — so the file
/// appears only complete. Dropped without `finish`, nothing is left behind.
///
/// Compressed files get the reference layout (header, jump table of block ends, blocks back to
/// back); raw files hold every block at its fixed place.
#[derive(Debug)]
pub struct BlockWriter {
    out: BufWriter<Staged>,
    header: Header,
    ends: Vec<u64>,
    pos: u64,
    path: PathBuf,
}

impl BlockWriter {
    /// Starts the file at `path` (its directory must exist) for blocks of `header`'s geometry
    /// and block type (its data offset is set as data files need).
    ///
    /// # Errors
    /// [`Error::Io`] if the temporary file cannot be created or written;
    /// [`Error::LimitExceeded`] if the jump table would not fit memory.
    pub fn create(path: impl AsRef<Path>, header: Header) -> Result<Self> {
        let path = path.as_ref();
        let header = header.for_data_file();
        let staged = Staged::create(path).map_err(|e| io_error(path, e))?;
        let mut out = BufWriter::with_capacity(1 << 20, staged);
        out.write_all(&header.to_bytes())
            .map_err(|e| Error::io(path, e))?;
        let n = header.blocks_per_file();
        let mut ends = Vec::new();
        if header.block_type().is_compressed() {
            let count = usize::try_from(n).map_err(|_| Error::LimitExceeded {
                what: "jump table entries",
                requested: n,
                limit: usize::MAX as u64,
            })?;
            ends.reserve_exact(count);
            // Placeholder for the jump table, filled in by `finish`.
            let zeros = [0u8; 4096];
            let mut left = n.saturating_mul(8);
            while left > 0 {
                let step = usize::try_from(left.min(4096)).unwrap_or(4096);
                out.write_all(&zeros[..step])
                    .map_err(|e| Error::io(path, e))?;
                left -= step as u64;
            }
        }
        Ok(Self {
            out,
            pos: header.data_offset(),
            header,
            ends,
            path: path.to_path_buf(),
        })
    }

    /// The data file's header.
    #[must_use]
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// Number of blocks written so far (the Morton index of the next one).
    #[must_use]
    pub fn blocks_written(&self) -> u64 {
        if self.header.block_type().is_compressed() {
            self.ends.len() as u64
        } else {
            (self.pos - self.header.data_offset()) / self.header.block_bytes()
        }
    }

    /// Appends the next block, already encoded for the file's block type ([`encode_block`]):
    /// an LZ4 block for compressed files, the raw block otherwise.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if all blocks were written already or a raw block has the
    /// wrong length; [`Error::Io`] if the write fails.
    pub fn push_stored(&mut self, stored: &[u8]) -> Result<()> {
        if self.blocks_written() >= self.header.blocks_per_file() {
            return Err(Error::InvalidArgument(format!(
                "{}: all {} blocks are written",
                self.path.display(),
                self.header.blocks_per_file()
            )));
        }
        if !self.header.block_type().is_compressed()
            && stored.len() as u64 != self.header.block_bytes()
        {
            return Err(Error::InvalidArgument(format!(
                "{}: raw block of {} bytes, expected {}",
                self.path.display(),
                stored.len(),
                self.header.block_bytes()
            )));
        }
        self.out
            .write_all(stored)
            .map_err(|e| Error::io(&self.path, e))?;
        self.pos += stored.len() as u64;
        if self.header.block_type().is_compressed() {
            self.ends.push(self.pos);
        }
        Ok(())
    }

    /// Completes the file (blocks not written are all-zero blocks), writes the jump table and
    /// renames the file into place, replacing any file at the path.
    ///
    /// # Errors
    /// [`Error::Io`] if writing, fsync or the rename fails (the target is then unchanged).
    pub fn finish(mut self, durability: Durability) -> Result<()> {
        let n = self.header.blocks_per_file();
        if self.blocks_written() < n {
            let block =
                usize::try_from(self.header.block_bytes()).map_err(|_| Error::LimitExceeded {
                    what: "raw block",
                    requested: self.header.block_bytes(),
                    limit: usize::MAX as u64,
                })?;
            let zeros = vec![0u8; block];
            let mut stored = Vec::new();
            encode_block(&zeros, self.header.block_type(), &mut stored)?;
            while self.blocks_written() < n {
                self.push_stored(&stored)?;
            }
        }
        let path = self.path.clone();
        if self.header.block_type().is_compressed() {
            self.out
                .seek(SeekFrom::Start(16))
                .map_err(|e| Error::io(&path, e))?;
            for e in &self.ends {
                self.out
                    .write_all(&e.to_le_bytes())
                    .map_err(|e| Error::io(&path, e))?;
            }
        }
        scifmt_io::commit(self.out, durability).map_err(|e| io_error(&path, e))
    }
}

/// A shared I/O layer error as this crate's error, naming `path` where it names none.
fn io_error(path: &Path, e: scifmt_io::Error) -> Error {
    match e {
        scifmt_io::Error::Io { path, source } => Error::io(path, source),
        other => Error::io(path, std::io::Error::other(other.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Array, Dataset, Order, VoxelType};

    #[test]
    fn blocks_written_one_by_one_read_back_through_a_dataset() -> Result<()> {
        let dir = tempfile::tempdir().map_err(|e| Error::io("tempdir", e))?;
        for bt in [BlockType::Raw, BlockType::Lz4, BlockType::Lz4Hc] {
            let root = dir.path().join(format!("{bt:?}"));
            let header = Header::new(VoxelType::U16, 2, 4, 2, bt)?;
            let ds = Dataset::create(&root, header)?;
            let file = ds.file_path([1, 0, 0]);
            std::fs::create_dir_all(file.parent().unwrap_or(&root))
                .map_err(|e| Error::io(&root, e))?;
            let mut w = BlockWriter::create(&file, header)?;
            let bb = usize::try_from(header.block_bytes()).unwrap_or(0);
            let mut stored = Vec::new();
            // Blocks 0..5 hold their index; the rest are left to `finish` (zeros).
            for k in 0..5u8 {
                encode_block(&vec![k + 1; bb], bt, &mut stored)?;
                w.push_stored(&stored)?;
            }
            assert!(!file.exists());
            w.finish(Durability::None)?;
            // Morton index 3 is block (1, 1, 0): voxels x 12..16, y 4..8, z 0..4 of the dataset.
            let a = ds.read([12, 4, 0], [4, 4, 4], Order::Fortran)?;
            assert!(
                a.as_bytes().iter().all(|&b| b == 4),
                "{bt:?} {:?}",
                &a.as_bytes()[..8]
            );
            let a = ds.read([8, 4, 4], [8, 4, 4], Order::Fortran)?;
            assert!(a.as_bytes().iter().all(|&b| b == 0));
            // And back block by block.
            let r = BlockReader::open(&file, &Limits::default())?;
            assert_eq!(r.block_count(), 8);
            let mut out = vec![0u8; bb];
            let mut scratch = Vec::new();
            r.read_block(2, &mut scratch, &mut out)?;
            assert!(out.iter().all(|&b| b == 3));
            r.read_stored(2, &mut stored)?;
            let mut dec = vec![0u8; bb];
            decode_block(&stored, bt, &mut dec)?;
            assert_eq!(dec, out);
            assert!(r.read_block(8, &mut scratch, &mut out).is_err());
            let empty = Array::zeros(VoxelType::U16, 2, [4, 4, 4], Order::Fortran)?;
            assert_eq!(ds.read([8, 4, 4], [4, 4, 4], Order::Fortran)?, empty);
        }
        Ok(())
    }

    /// The first bytes of a file of `len` bytes, as a converter fetches them from a store.
    fn fetched_start(bytes: &[u8], len: u64) -> scifmt_io::Prefetched {
        let mut p = scifmt_io::Prefetched::new(len);
        p.insert(0, scifmt_io::bytes::Bytes::copy_from_slice(bytes));
        p
    }

    #[test]
    fn header_and_jump_table_alone_give_every_stored_range() -> Result<()> {
        let dir = tempfile::tempdir().map_err(|e| Error::io("tempdir", e))?;
        let file = dir.path().join("x0.wkw");
        let header = Header::new(VoxelType::U8, 1, 4, 2, BlockType::Lz4)?;
        let mut w = BlockWriter::create(&file, header)?;
        let mut stored = Vec::new();
        for k in 0..8u8 {
            let raw: Vec<u8> = (0..64u8).map(|v| v.wrapping_mul(k)).collect();
            encode_block(&raw, BlockType::Lz4, &mut stored)?;
            w.push_stored(&stored)?;
        }
        w.finish(Durability::None)?;
        let bytes = std::fs::read(&file).map_err(|e| Error::io(&file, e))?;
        let whole = BlockReader::open(&file, &Limits::default())?;
        let head = 16 + 8 * 8;
        let prefix = fetched_start(&bytes[..head], bytes.len() as u64);
        let r = BlockReader::open_storage(Box::new(prefix), "remote/x0.wkw", &Limits::default())?;
        for k in 0..8 {
            assert_eq!(r.stored_range(k)?, whole.stored_range(k)?);
        }
        // Blocks are not in the prefix: reading one is an I/O error naming the file.
        match r.read_stored(0, &mut stored) {
            Err(e @ Error::Io { .. }) => assert!(e.to_string().contains("remote/x0.wkw"), "{e}"),
            other => panic!("{other:?}"),
        }
        // A truncated jump table is a format error, not a panic.
        let short = fetched_start(&bytes[..40], 40);
        assert!(matches!(
            BlockReader::open_storage(Box::new(short), "short.wkw", &Limits::default()),
            Err(Error::Format { .. })
        ));
        Ok(())
    }
}
