//! One data file: header + (for compressed files) the jump table, and block access.

use std::fs::File;
use std::path::Path;

use crate::error::{Error, FormatError, Result};
use crate::format::header::Header;
use crate::format::lz4;
use crate::io::fsio;
use crate::io::storage::StorageFile;
use crate::limits::Limits;

/// The parsed, validated metadata of a data file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FileMeta {
    pub(crate) header: Header,
    /// Compressed files: the extended jump table, `N + 1` entries, `[0] = dataOffset`,
    /// `[k + 1]` = end of block k. Validated monotone and inside the file.
    pub(crate) jump: Option<Vec<u64>>,
    pub(crate) len: u64,
}

/// The structure of one data file as stored: header, length and, for compressed files, the
/// stored length of every block (from the jump table). Made by [`inspect_file`] without
/// decompressing anything. With the `serde` feature: `{"header": {…}, "file_len": n,
/// "block_lengths": [n, …] | null}`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct FileInfo {
    /// The file's own header.
    pub header: Header,
    /// File length in bytes.
    pub file_len: u64,
    /// Compressed files: the stored (compressed) length of each block in Morton order; `None`
    /// for raw files, whose blocks all take `header.block_bytes()`.
    pub block_lengths: Option<Vec<u64>>,
}

impl FileInfo {
    /// Bytes of block data: the sum of the stored block lengths (compressed files), or the raw
    /// blocks' total.
    #[must_use]
    pub fn stored_block_bytes(&self) -> u64 {
        match &self.block_lengths {
            Some(l) => l.iter().sum(),
            None => self
                .header
                .blocks_per_file()
                .saturating_mul(self.header.block_bytes()),
        }
    }
}

/// Reads and validates the header and (for compressed files) the jump table of the data file
/// at `path`, checking the same invariants as a [`crate::Dataset`] read: data offset, monotone
/// jump table inside the file, no block longer than the LZ4 bound, sizes within `limits`.
///
/// # Errors
/// [`Error::Io`] if the file cannot be read, [`Error::Format`] for a bad header or jump table,
/// [`Error::LimitExceeded`] beyond `limits`.
pub fn inspect_file(path: impl AsRef<std::path::Path>, limits: &Limits) -> Result<FileInfo> {
    let path = path.as_ref();
    let file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    let file = crate::io::storage::FsFile::new(file).map_err(|e| Error::io(path, e))?;
    let meta = FileMeta::parse(&file, limits, path).map_err(|f| match f {
        OpenFailure::Unreadable(e) => Error::format(path, e),
        OpenFailure::Hard(e) => e,
    })?;
    let block_lengths = meta
        .jump
        .map(|j| j.windows(2).map(|w| w[1] - w[0]).collect());
    Ok(FileInfo {
        header: meta.header,
        file_len: meta.len,
        block_lengths,
    })
}

/// Why a file could not be opened.
#[derive(Debug)]
pub(crate) enum OpenFailure {
    /// The header or jump table cannot be read or parsed: the reference reads such a file as
    /// zeros ([`crate::MissingOrCorrupt::Zeros`] does too).
    Unreadable(FormatError),
    /// Anything else: always an error.
    Hard(Error),
}

impl FileMeta {
    /// Reads and validates header and jump table.
    pub(crate) fn parse(
        file: &dyn StorageFile,
        limits: &Limits,
        path: &std::path::Path,
    ) -> Result<Self, OpenFailure> {
        let io = |e| OpenFailure::Hard(Error::io(path, e));
        let len = file.size().map_err(io)?;
        if len < 16 {
            return Err(OpenFailure::Unreadable(FormatError::Truncated {
                what: "header",
                offset: 0,
                needed: 16,
                available: len,
            }));
        }
        let mut bytes = [0u8; 16];
        file.read_exact_at(&mut bytes, 0).map_err(io)?;
        let header = Header::parse(&bytes).map_err(OpenFailure::Unreadable)?;
        header
            .check_data_offset()
            .map_err(OpenFailure::Unreadable)?;
        let block_bytes = header.block_bytes();
        if block_bytes > limits.max_block_bytes {
            return Err(OpenFailure::Hard(Error::LimitExceeded {
                what: "raw block",
                requested: block_bytes,
                limit: limits.max_block_bytes,
            }));
        }
        if !header.block_type().is_compressed() {
            return Ok(Self {
                header,
                jump: None,
                len,
            });
        }
        let n = header.blocks_per_file();
        if n > limits.max_blocks_per_file {
            return Err(OpenFailure::Hard(Error::LimitExceeded {
                what: "jump table entries",
                requested: n,
                limit: limits.max_blocks_per_file,
            }));
        }
        let needed = n.saturating_mul(8);
        if len - 16 < needed {
            return Err(OpenFailure::Unreadable(FormatError::Truncated {
                what: "jump table",
                offset: 16,
                needed,
                available: len - 16,
            }));
        }
        let table_len = usize::try_from(needed).map_err(|_| {
            OpenFailure::Hard(Error::LimitExceeded {
                what: "jump table bytes",
                requested: needed,
                limit: usize::MAX as u64,
            })
        })?;
        let mut raw = vec![0u8; table_len];
        file.read_exact_at(&mut raw, 16).map_err(io)?;
        let bound = lz4::bound(block_bytes).ok_or(OpenFailure::Hard(Error::LimitExceeded {
            what: "lz4 block size",
            requested: block_bytes,
            limit: i32::MAX as u64,
        }))?;
        let mut jump = Vec::with_capacity(table_len / 8 + 1);
        let mut prev = header.data_offset();
        jump.push(prev);
        for (k, chunk) in (0u64..).zip(raw.chunks_exact(8)) {
            let mut b = [0u8; 8];
            b.copy_from_slice(chunk);
            let end = u64::from_le_bytes(b);
            let fail = |e| Err(OpenFailure::Hard(Error::format(path, e)));
            if end < prev {
                return fail(FormatError::JumpTableNotMonotone {
                    index: k,
                    offset: 16 + 8 * k,
                    value: end,
                    previous: prev,
                });
            }
            if end - prev > bound {
                return fail(FormatError::BlockTooLong {
                    index: k,
                    length: end - prev,
                    bound,
                });
            }
            if end > len {
                return fail(FormatError::BlockPastEnd {
                    index: k,
                    end,
                    file_len: len,
                });
            }
            jump.push(end);
            prev = end;
        }
        Ok(Self {
            header,
            jump: Some(jump),
            len,
        })
    }

    /// Byte range `[start, end)` of block `k` in the file.
    pub(crate) fn block_range(&self, k: u64) -> Option<(u64, u64)> {
        match &self.jump {
            Some(j) => {
                let i = usize::try_from(k).ok()?;
                Some((*j.get(i)?, *j.get(i.checked_add(1)?)?))
            }
            None => {
                let start = k
                    .checked_mul(self.header.block_bytes())?
                    .checked_add(self.header.data_offset())?;
                Some((start, start.checked_add(self.header.block_bytes())?))
            }
        }
    }

    /// Byte range of block `k`, checked to lie inside the file.
    fn checked_range(&self, k: u64, path: &std::path::Path) -> Result<(u64, u64)> {
        let bad = |end| {
            Error::format(
                path,
                FormatError::BlockPastEnd {
                    index: k,
                    end,
                    file_len: self.len,
                },
            )
        };
        let (start, end) = self.block_range(k).ok_or_else(|| bad(u64::MAX))?;
        if end > self.len {
            return Err(bad(end));
        }
        Ok((start, end))
    }

    /// Reads the consecutive blocks `k..k + n` into `out` (`n` raw blocks back to back) with
    /// one read of the file, using `scratch` for compressed bytes.
    pub(crate) fn read_blocks(
        &self,
        file: &dyn StorageFile,
        k: u64,
        scratch: &mut Vec<u8>,
        out: &mut [u8],
        path: &std::path::Path,
    ) -> Result<()> {
        let block_len = usize::try_from(self.header.block_bytes()).unwrap_or(usize::MAX);
        if block_len == 0 || !out.len().is_multiple_of(block_len) {
            return Err(Error::internal(format!(
                "buffer of {} bytes for blocks of {block_len}",
                out.len()
            )));
        }
        let n = (out.len() / block_len) as u64;
        if n == 0 {
            return Ok(());
        }
        let last = k
            .checked_add(n - 1)
            .ok_or_else(|| Error::internal("block index overflows"))?;
        // Every block checked in order, so an error names the first bad one.
        let (start, _) = self.checked_range(k, path)?;
        let mut end = 0;
        for idx in k..=last {
            end = self.checked_range(idx, path)?.1;
        }
        if self.jump.is_none() {
            return file
                .read_exact_at(out, start)
                .map_err(|e| Error::io(path, e));
        }
        // Bounded by n times the lz4 bound checked in `parse`.
        let total = usize::try_from(end - start).map_err(|_| {
            Error::format(
                path,
                FormatError::BlockTooLong {
                    index: k,
                    length: end - start,
                    bound: 0,
                },
            )
        })?;
        scratch.resize(total, 0);
        file.read_exact_at(scratch, start)
            .map_err(|e| Error::io(path, e))?;
        for (i, dst) in (0..n).zip(out.chunks_exact_mut(block_len)) {
            let idx = k + i;
            let (s, e) = self.checked_range(idx, path)?;
            let src = usize::try_from(s - start)
                .ok()
                .zip(usize::try_from(e - start).ok())
                .and_then(|(a, b)| scratch.get(a..b));
            if !src.is_some_and(|src| lz4::decompress_exact(src, dst)) {
                return Err(Error::format(
                    path,
                    FormatError::Decompress {
                        index: idx,
                        offset: s,
                        expected: dst.len() as u64,
                    },
                ));
            }
        }
        Ok(())
    }

    /// Raw files: reads bytes `lo..lo + out.len()` of block `k` into `out`.
    pub(crate) fn read_raw_part(
        &self,
        file: &dyn StorageFile,
        k: u64,
        lo: u64,
        out: &mut [u8],
        path: &std::path::Path,
    ) -> Result<()> {
        let (start, end) = self.checked_range(k, path)?;
        let from = start
            .checked_add(lo)
            .filter(|f| f.checked_add(out.len() as u64).is_some_and(|t| t <= end));
        let (Some(from), None) = (from, &self.jump) else {
            return Err(Error::internal(format!(
                "part {lo}+{} of block {k}",
                out.len()
            )));
        };
        file.read_exact_at(out, from)
            .map_err(|e| Error::io(path, e))
    }

    /// Reads block `k` into `out` (exactly one raw block), using `scratch` for compressed bytes.
    pub(crate) fn read_block(
        &self,
        file: &dyn StorageFile,
        k: u64,
        scratch: &mut Vec<u8>,
        out: &mut [u8],
        path: &std::path::Path,
    ) -> Result<()> {
        self.read_blocks(file, k, scratch, out, path)
    }
}

/// Writes the jump table and header of a compressed file at offset 0.
pub(crate) fn write_compressed_head(
    file: &File,
    path: &Path,
    header: &Header,
    ends: &[u64],
) -> Result<()> {
    let mut head = Vec::with_capacity(16 + 8 * ends.len());
    head.extend_from_slice(&header.to_bytes());
    for e in ends {
        head.extend_from_slice(&e.to_le_bytes());
    }
    fsio::write_all_at(file, &head, 0).map_err(|e| Error::io(path, e))
}
