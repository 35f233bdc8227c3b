//! The partial decoder: a byte-range request reads the header with the block starts, then the
//! blocks that hold the range (merged into as few ranges as touch, or lie closer than the
//! coalescing gap) from its input, in two rounds, and decodes only those blocks.
//!
//! The header and the block starts are adjacent, but how many block starts there are is in
//! the header. The first request therefore reads as many bytes as a Blosc1 chunk of the
//! decoded size has before its first stream under the codec's configuration (16-byte header
//! and 4 bytes per block, with the block size this codec and C-Blosc 1.21 pick): the whole
//! prefix of the chunks this codec and C-Blosc 1 write. A chunk with more blocks, or with
//! a 32-byte Blosc2 header, costs one more request for the rest of the prefix; a request
//! that fails (e.g. a special Blosc2 chunk shorter than that guess) is redone as a 16-byte
//! header read followed by an exact prefix read.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::collections::btree_map::Entry;
use std::ops::Range;
use std::sync::Arc;

use zarrs::array::codec::api::{
    ArrayBytesRaw, BytesPartialDecoderTraits, CodecError, CodecOptions,
};
use zarrs::storage::StorageError;
use zarrs::storage::byte_range::{ByteRange, ByteRangeIterator};

use crate::decode::{ChunkMap, DParams, PartialChunk, merge_ranges};
use crate::error::Error;

/// Partial decoder of the `blosc` codec over any zarrs byte source.
pub(super) struct BloscPartialDecoder {
    input: Arc<dyn BytesPartialDecoderTraits>,
    params: DParams,
    gap: usize,
    /// Bytes the first request reads (at least the 16-byte header).
    first_read: usize,
}

impl BloscPartialDecoder {
    /// `first_read`: the expected length of the header and block starts (see the module
    /// documentation); less than 16 reads the header alone first.
    pub(super) fn new(
        input: Arc<dyn BytesPartialDecoderTraits>,
        params: DParams,
        gap: usize,
        first_read: usize,
    ) -> Self {
        Self {
            input,
            params,
            gap,
            first_read: first_read.max(ChunkMap::PROBE_LEN),
        }
    }

    /// The header and block starts (`None`: no chunk): [`Self::first_read`] bytes, then the
    /// rest if the prefix is longer; if that first request fails, the header alone and then
    /// the rest.
    fn prefix(&self, options: &CodecOptions) -> Result<Option<Vec<u8>>, CodecError> {
        let limits = &self.params.limits;
        let first = if self.first_read > ChunkMap::PROBE_LEN {
            self.fetch(core::slice::from_ref(&(0..self.first_read)), options)
                .ok()
        } else {
            None
        };
        let mut prefix = match first {
            Some(Some(got)) => got.concat(),
            Some(None) => return Ok(None),
            // The guessed read failed (or was not made): the exact path reports the errors.
            None => match self.fetch(core::slice::from_ref(&(0..ChunkMap::PROBE_LEN)), options)? {
                Some(got) => got.concat(),
                None => return Ok(None),
            },
        };
        let plen = ChunkMap::prefix_len(&prefix, limits).map_err(|e| codec_error(&e))?;
        if plen > prefix.len() {
            let Some(rest) = self.fetch(core::slice::from_ref(&(prefix.len()..plen)), options)?
            else {
                return Ok(None);
            };
            prefix.extend_from_slice(&rest.concat());
        }
        prefix.truncate(plen);
        Ok(Some(prefix))
    }

    /// Reads `ranges` from the input; `None` if the chunk does not exist.
    fn fetch(
        &self,
        ranges: &[core::ops::Range<usize>],
        options: &CodecOptions,
    ) -> Result<Option<Vec<ArrayBytesRaw<'_>>>, CodecError> {
        let requests: Vec<ByteRange> = ranges
            .iter()
            .map(|r| ByteRange::FromStart(r.start as u64, Some(r.len() as u64)))
            .collect();
        let Some(got) = self
            .input
            .partial_decode_many(Box::new(requests.into_iter()), options)?
        else {
            return Ok(None);
        };
        if got.len() != ranges.len() || got.iter().zip(ranges).any(|(b, r)| b.len() != r.len()) {
            return Err(CodecError::Other(
                "blosc: the input returned byte ranges of the wrong number or length".into(),
            ));
        }
        Ok(Some(got))
    }
}

/// The decoded bytes of each of `regions` (inside the chunk). zarrs asks for one region per
/// contiguous run of an array region's bytes (thousands of short runs for a 3-D region), so
/// each block is decoded once and the regions are cut from the decoded blocks; a chunk that
/// decodes only whole is decoded once; memcpyed and special chunks need no decoding.
fn decode_regions(
    chunk: &PartialChunk,
    regions: Vec<Range<usize>>,
    params: &DParams,
) -> Result<Vec<ArrayBytesRaw<'static>>, Error> {
    let map = chunk.map();
    let nbytes = map.nbytes();
    if map.needs_whole_chunk() && regions.len() > 1 {
        let all = chunk.decode_range(0..nbytes, params)?;
        return Ok(regions
            .into_iter()
            .map(|r| Cow::Owned(all.get(r).unwrap_or_default().to_vec()))
            .collect());
    }
    if map.nblocks() == 0 {
        return regions
            .into_iter()
            .map(|r| chunk.decode_range(r, params).map(Cow::Owned))
            .collect();
    }
    let bs = map.header().blocksize().max(1);
    let mut blocks: BTreeMap<usize, Vec<u8>> = BTreeMap::new();
    let mut out = Vec::with_capacity(regions.len());
    for r in regions {
        let mut bytes = Vec::with_capacity(r.len());
        for j in map.blocks_covering(r.clone()) {
            let start = j.saturating_mul(bs);
            let end = start.saturating_add(bs).min(nbytes);
            let block = match blocks.entry(j) {
                Entry::Occupied(e) => e.into_mut(),
                Entry::Vacant(e) => e.insert(chunk.decode_range(start..end, params)?),
            };
            let lo = r.start.max(start) - start;
            let hi = r.end.min(end) - start;
            bytes.extend_from_slice(block.get(lo..hi).unwrap_or_default());
        }
        if bytes.len() != r.len() {
            return Err(Error::ItemRange {
                start: r.start,
                end: r.end,
                nitems: nbytes,
            });
        }
        out.push(Cow::Owned(bytes));
    }
    Ok(out)
}

fn codec_error(e: &Error) -> CodecError {
    CodecError::Other(format!("blosc: {e}"))
}

impl BytesPartialDecoderTraits for BloscPartialDecoder {
    fn exists(&self) -> Result<bool, StorageError> {
        self.input.exists()
    }

    fn size_held(&self) -> usize {
        self.input.size_held()
    }

    fn partial_decode_many(
        &self,
        decoded_regions: ByteRangeIterator<'_>,
        options: &CodecOptions,
    ) -> Result<Option<Vec<ArrayBytesRaw<'_>>>, CodecError> {
        // Round 1: the header and the block starts.
        let Some(prefix) = self.prefix(options)? else {
            return Ok(None);
        };
        let map = ChunkMap::parse(&prefix, &self.params.limits).map_err(|e| codec_error(&e))?;
        let nbytes = map.nbytes();
        let n = nbytes as u64;
        let mut decoded = Vec::new();
        for r in decoded_regions {
            // Checked here: `ByteRange::start` underflows for a suffix longer than the chunk.
            let (start, end) = match r {
                ByteRange::FromStart(start, Some(len)) => (Some(start), start.checked_add(len)),
                ByteRange::FromStart(start, None) => (Some(start), Some(n)),
                ByteRange::Suffix(len) => (n.checked_sub(len), Some(n)),
            };
            let (Some(start), Some(end)) = (start, end) else {
                return Err(CodecError::Other(format!(
                    "blosc: byte range {r} outside the decoded chunk of {nbytes} bytes"
                )));
            };
            if start > end || end > n {
                return Err(CodecError::Other(format!(
                    "blosc: byte range {start}..{end} outside the decoded chunk of {nbytes} bytes"
                )));
            }
            // Both are at most `nbytes`, a usize.
            decoded.push(usize::try_from(start).unwrap_or(0)..usize::try_from(end).unwrap_or(0));
        }
        // Round 2: the blocks (or raw bytes) the regions need.
        let mut wanted = Vec::new();
        for r in &decoded {
            wanted.extend(map.stored_ranges(r.clone()).map_err(|e| codec_error(&e))?);
        }
        let wanted = merge_ranges(&mut wanted, self.gap);
        let mut chunk = PartialChunk::new(map, &prefix).map_err(|e| codec_error(&e))?;
        if !wanted.is_empty() {
            let Some(parts) = self.fetch(&wanted, options)? else {
                return Ok(None);
            };
            for (r, bytes) in wanted.iter().zip(parts) {
                chunk.insert(r.start, &bytes).map_err(|e| codec_error(&e))?;
            }
        }
        decode_regions(&chunk, decoded, &self.params)
            .map(Some)
            .map_err(|e| codec_error(&e))
    }

    fn supports_partial_decode(&self) -> bool {
        true
    }
}
