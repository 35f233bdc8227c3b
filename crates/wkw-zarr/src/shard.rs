//! Shards of `sharding_indexed`: the index (one `(offset, nbytes)` pair of little-endian u64
//! per inner chunk in C order, `(2⁶⁴−1, 2⁶⁴−1)` for an absent chunk, then the `crc32c` of those
//! bytes) and ranged reads of the chunks (coalesced on a store). Writing streams chunks into a staged file
//! or a multipart upload and appends the index, so a shard appears under its key only complete.

use std::path::Path;

use scifmt_io::{Durability, RemoteOptions};

use crate::codec::crc32c;
use crate::error::{Error, Result};
use crate::meta::Layout;
use scifmt_io::{Location, RangeReader, Sink};

/// Index entry of an absent chunk.
const ABSENT: u64 = u64::MAX;

/// An existing shard opened for reading chunks.
pub(crate) struct ShardReader {
    reader: RangeReader,
    /// `(offset, nbytes)` per chunk in C order; `None` for absent chunks.
    index: Vec<Option<(u64, u64)>>,
}

impl ShardReader {
    /// Reads and checks the index of the shard `reader` reads (one ranged read): length,
    /// checksum, and every chunk inside the data part of the shard and no longer than
    /// `max_chunk` bytes.
    ///
    /// # Errors
    /// [`Error::Io`] / [`Error::Remote`] if it cannot be read; [`Error::Corrupt`] for a bad
    /// index.
    pub(crate) fn open(reader: RangeReader, layout: &Layout, max_chunk: u64) -> Result<Self> {
        let path = reader.name().to_path_buf();
        let len = reader.len();
        let n = layout.chunks_per_shard();
        let index_len = layout.index_bytes();
        if len < index_len {
            return Err(Error::corrupt(
                &path,
                format!("{len} bytes, shorter than its {index_len}-byte index"),
            ));
        }
        if usize::try_from(index_len).is_err() {
            return Err(Error::LimitExceeded {
                what: "shard index",
                requested: index_len,
                limit: usize::MAX as u64,
            });
        }
        // `index_len <= len`, the shard's real length: the allocation is bounded by the input.
        let at = if layout.index_at_end {
            len - index_len
        } else {
            0
        };
        let raw = reader.read_range(at, at + index_len)?;
        let entries = usize::try_from(n * 16).unwrap_or(usize::MAX);
        if raw.len() < entries {
            return Err(Error::Internal(format!(
                "{}: index of {} bytes read as {}",
                path.display(),
                index_len,
                raw.len()
            )));
        }
        if layout.index_crc {
            let (body, crc) = raw.split_at(entries);
            let stored = u32::from_le_bytes(crc.try_into().unwrap_or([0; 4]));
            let actual = crc32c(body);
            if stored != actual {
                return Err(Error::corrupt(
                    &path,
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
                    &path,
                    format!(
                        "index entry {i}: chunk of {nbytes} bytes at {offset} outside the data \
                         [{lo}, {hi}) or longer than {max_chunk}"
                    ),
                ));
            }
            index.push(Some((offset, nbytes)));
        }
        Ok(Self { reader, index })
    }

    /// The shard's name (path or URL).
    pub(crate) fn path(&self) -> &Path {
        self.reader.name()
    }

    /// The shard's length in bytes.
    pub(crate) fn len(&self) -> u64 {
        self.reader.len()
    }

    /// The stored bytes of the chunks at index positions `positions` (`None` for absent
    /// chunks), fetched together (coalesced on a store).
    pub(crate) fn read_chunks(&self, positions: &[usize]) -> Result<Vec<Option<Vec<u8>>>> {
        let entries: Vec<Option<(u64, u64)>> = positions
            .iter()
            .map(|&p| self.index.get(p).copied().flatten())
            .collect();
        // Checked against the shard's length and `max_chunk` when opening.
        let ranges: Vec<std::ops::Range<u64>> = entries
            .iter()
            .flatten()
            .map(|&(offset, nbytes)| offset..offset + nbytes)
            .collect();
        let mut got = self
            .reader
            .read_ranges(&ranges)?
            .into_iter()
            .map(|b| b.to_vec());
        Ok(entries.iter().map(|e| e.and_then(|_| got.next())).collect())
    }
}

/// The stored inner chunks of one block: one, or one per channel (`None`: absent).
pub(crate) type BlockChunks = Vec<Option<Vec<u8>>>;

impl ShardReader {
    /// The stored inner chunks of the blocks at block coordinates `blocks` (one per block, or
    /// one per channel when they split the channels; see [`Layout::positions`]), fetched
    /// together; `None` for a block none of whose chunks is present.
    pub(crate) fn read_blocks(
        &self,
        layout: &Layout,
        blocks: &[[u32; 3]],
    ) -> Result<Vec<Option<BlockChunks>>> {
        let positions: Vec<usize> = blocks.iter().flat_map(|&b| layout.positions(b)).collect();
        let mut got = self.read_chunks(&positions)?.into_iter();
        Ok(blocks
            .iter()
            .map(|_| {
                let parts: BlockChunks = got.by_ref().take(layout.parts()).collect();
                parts.iter().any(Option::is_some).then_some(parts)
            })
            .collect())
    }
}

/// A shard being written: chunks streamed to a staged file or an upload, index kept in
/// memory and appended by [`ShardWriter::finish`].
pub(crate) struct ShardWriter {
    out: Sink,
    index: Vec<(u64, u64)>,
    pos: u64,
}

impl ShardWriter {
    /// Starts a shard for `layout` at `target`.
    pub(crate) fn create(
        target: &Location,
        layout: &Layout,
        remote: &RemoteOptions,
    ) -> Result<Self> {
        let n = usize::try_from(layout.chunks_per_shard()).map_err(|_| Error::LimitExceeded {
            what: "shard index entries",
            requested: layout.chunks_per_shard(),
            limit: usize::MAX as u64,
        })?;
        Ok(Self {
            out: target.create(remote)?,
            index: vec![(ABSENT, ABSENT); n],
            pos: 0,
        })
    }

    /// Appends the stored chunk for index position `pos`.
    pub(crate) fn push(&mut self, pos: usize, stored: &[u8]) -> Result<()> {
        let slot = self
            .index
            .get_mut(pos)
            .ok_or_else(|| Error::Internal(format!("chunk position {pos} outside the shard")))?;
        *slot = (self.pos, stored.len() as u64);
        self.out.write_all(stored)?;
        self.pos += stored.len() as u64;
        Ok(())
    }

    /// Appends the index and its checksum and completes the shard (renamed into place, or
    /// the upload completed); returns its length in bytes.
    pub(crate) fn finish(mut self, durability: Durability) -> Result<u64> {
        let mut raw = Vec::with_capacity(self.index.len() * 16 + 4);
        for (offset, nbytes) in &self.index {
            raw.extend_from_slice(&offset.to_le_bytes());
            raw.extend_from_slice(&nbytes.to_le_bytes());
        }
        let crc = crc32c(&raw);
        raw.extend_from_slice(&crc.to_le_bytes());
        self.out.write_all(&raw)?;
        self.out.finish(durability)?;
        Ok(self.pos + raw.len() as u64)
    }
}
