//! Decoding part of a chunk from some of its bytes: the map of where a chunk's blocks are
//! stored ([`ChunkMap`], read from the header and the block starts), and a chunk assembled
//! from the byte ranges a reader fetched ([`PartialChunk`]).
//!
//! A reader that fetches byte ranges (an object store, a shard of a Zarr array) reads
//! [`ChunkMap::PROBE_LEN`] bytes, then [`ChunkMap::prefix_len`] bytes, parses the map, asks
//! [`ChunkMap::stored_ranges`] which stored bytes a decoded byte range needs, fetches those and
//! decodes the range with [`PartialChunk`].

use core::ops::Range;

use super::DParams;
use super::blocks::{Kind, classify};
use crate::error::{Error, Result};
use crate::flags::Flags;
use crate::header::{ChunkHeader, EXTENDED_HEADER_LENGTH, MIN_HEADER_LENGTH, read_i32};
use crate::limits::Limits;

/// How a chunk's data is laid out, as far as fetching is concerned.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Layout {
    /// Nothing beyond the header (special values, empty chunks).
    HeaderOnly,
    /// The raw bytes follow the header.
    Memcpy,
    /// Regular blocks: the stored byte range of each block; `delta` says block 0 is needed
    /// for every other block.
    Blocks {
        ranges: Vec<Range<usize>>,
        delta: bool,
    },
    /// Needs the whole chunk (dictionary, variable-length blocks, a repeated special value).
    Whole,
}

/// Where the parts of a chunk are stored: its header and the byte range of each block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChunkMap {
    header: ChunkHeader,
    prefix_len: usize,
    layout: Layout,
}

impl ChunkMap {
    /// The bytes to read first: the 16-byte header of every chunk (it holds `cbytes`, the
    /// block size and whether a 32-byte extended header follows).
    pub const PROBE_LEN: usize = MIN_HEADER_LENGTH;

    /// How many bytes from the start of the chunk [`ChunkMap::parse`] needs, from the first
    /// [`ChunkMap::PROBE_LEN`] bytes: the header and the block starts (never more than the
    /// chunk's `cbytes`).
    ///
    /// # Errors
    ///
    /// [`Error::Truncated`] if `probe` is shorter than 16 bytes, [`Error::InvalidHeader`] for
    /// sizes the format cannot hold, [`Error::LimitExceeded`] if `nbytes` is above
    /// `limits.max_nbytes`.
    pub fn prefix_len(probe: &[u8], limits: &Limits) -> Result<usize> {
        let b16 = probe
            .get(..MIN_HEADER_LENGTH)
            .ok_or_else(|| Error::truncated("header", 0, MIN_HEADER_LENGTH, probe.len()))?;
        let field = |off: usize, what: &'static str| -> Result<usize> {
            let v = read_i32(b16, off).unwrap_or(-1);
            usize::try_from(v).map_err(|_| Error::InvalidHeader {
                what,
                value: i64::from(v),
            })
        };
        let nbytes = field(4, "nbytes")?;
        let blocksize = field(8, "blocksize")?;
        let cbytes = field(12, "cbytes")?;
        if nbytes > limits.max_nbytes {
            return Err(Error::LimitExceeded {
                what: "nbytes",
                requested: nbytes as u64,
                limit: limits.max_nbytes as u64,
            });
        }
        let flags = Flags::from_bits_retain(b16[2]);
        let hl = if flags.contains(Flags::EXTENDED) {
            EXTENDED_HEADER_LENGTH
        } else {
            MIN_HEADER_LENGTH
        };
        // One 4-byte start per block (VL-block chunks count theirs in the blocksize field;
        // they are read whole, so a shorter prefix does no harm).
        let nblocks = if blocksize == 0 || nbytes == 0 || flags.contains(Flags::MEMCPYED) {
            0
        } else {
            nbytes.div_ceil(blocksize.min(nbytes))
        };
        let want = nblocks
            .checked_mul(4)
            .and_then(|n| n.checked_add(hl))
            .ok_or(Error::Overflow { what: "bstarts" })?;
        Ok(want.min(cbytes).max(hl.min(cbytes)))
    }

    /// Parses the map from the first [`ChunkMap::prefix_len`] bytes of the chunk (more are
    /// fine).
    ///
    /// # Errors
    ///
    /// Any header error of [`ChunkHeader::parse`]; [`Error::Truncated`] if the block starts
    /// are cut short; [`Error::Corrupt`] for a block start outside the chunk;
    /// [`Error::LimitExceeded`] if `nbytes` is above `limits.max_nbytes`; [`Error::Unsupported`]
    /// for lazy and instrumented chunks.
    pub fn parse(prefix: &[u8], limits: &Limits) -> Result<Self> {
        let header = ChunkHeader::parse(prefix)?;
        if header.nbytes() > limits.max_nbytes {
            return Err(Error::LimitExceeded {
                what: "nbytes",
                requested: header.nbytes() as u64,
                limit: limits.max_nbytes as u64,
            });
        }
        if header.is_lazy() || header.is_instrumented() {
            return Err(Error::Unsupported {
                what: "chunk kind for partial reads (lazy or instrumented)",
                id: u32::from(header.blosc2_flags()),
            });
        }
        let hl = header.header_len();
        let cbytes = header.cbytes();
        let special = header.special();
        let (layout, prefix_len) = if special == Some(crate::header::SpecialValue::Value) {
            (Layout::Whole, hl)
        } else if special.is_some() || header.nbytes() == 0 {
            (Layout::HeaderOnly, hl)
        } else if header.is_memcpyed() {
            (Layout::Memcpy, hl)
        } else if header.uses_dict() || header.vl_blocks() {
            (Layout::Whole, hl)
        } else {
            let nblocks = header.nblocks();
            let end = nblocks
                .checked_mul(4)
                .and_then(|n| n.checked_add(hl))
                .ok_or(Error::Overflow { what: "bstarts" })?;
            if end > cbytes {
                return Err(Error::InvalidHeader {
                    what: "cbytes (smaller than the block starts)",
                    value: i64::try_from(cbytes).unwrap_or(i64::MAX),
                });
            }
            if prefix.len() < end {
                return Err(Error::truncated("bstarts", hl, end - hl, prefix.len()));
            }
            let mut starts = Vec::with_capacity(nblocks);
            for j in 0..nblocks {
                let off = hl + 4 * j;
                let v = read_i32(prefix, off).unwrap_or(-1);
                match usize::try_from(v) {
                    Ok(s) if s >= end && s < cbytes => starts.push(s),
                    _ => return Err(Error::corrupt("block start", j, off)),
                }
            }
            // Blocks may be stored in any order (C-Blosc 1 writes them as threads finish):
            // a block ends where the next stored block begins.
            let mut sorted = starts.clone();
            sorted.sort_unstable();
            sorted.dedup();
            let ranges = starts
                .iter()
                .map(|&s| {
                    let k = sorted.partition_point(|&x| x <= s);
                    s..sorted.get(k).copied().unwrap_or(cbytes)
                })
                .collect();
            let delta = header.filters().contains(&crate::header::Filter::Delta);
            (Layout::Blocks { ranges, delta }, end)
        };
        Ok(Self {
            header,
            prefix_len,
            layout,
        })
    }

    /// The chunk header.
    #[must_use]
    pub fn header(&self) -> &ChunkHeader {
        &self.header
    }

    /// The stored size of the chunk (`cbytes`).
    #[must_use]
    pub fn cbytes(&self) -> usize {
        self.header.cbytes()
    }

    /// The decoded size of the chunk (`nbytes`).
    #[must_use]
    pub fn nbytes(&self) -> usize {
        self.header.nbytes()
    }

    /// The length of the header and block starts (the part [`PartialChunk::new`] copies).
    #[must_use]
    pub fn prefix_len_parsed(&self) -> usize {
        self.prefix_len
    }

    /// Whether the chunk has to be read whole to decode any part of it (dictionary or
    /// variable-length-block chunks).
    #[must_use]
    pub fn needs_whole_chunk(&self) -> bool {
        self.layout == Layout::Whole
    }

    /// The number of regular blocks (0 for memcpyed, special and whole-only chunks).
    #[must_use]
    pub fn nblocks(&self) -> usize {
        match &self.layout {
            Layout::Blocks { ranges, .. } => ranges.len(),
            _ => 0,
        }
    }

    /// The indices of the blocks that hold decoded bytes `decoded` (empty for an empty range
    /// and for chunks without regular blocks).
    #[must_use]
    pub fn blocks_covering(&self, decoded: Range<usize>) -> Range<usize> {
        let n = self.nblocks();
        if n == 0 || decoded.start >= decoded.end {
            return 0..0;
        }
        let bs = self.header.blocksize();
        let first = (decoded.start / bs).min(n);
        let last = (decoded.end - 1) / bs;
        first..(last + 1).min(n)
    }

    /// The stored byte range of block `j`, if there is such a block.
    #[must_use]
    pub fn block_range(&self, j: usize) -> Option<Range<usize>> {
        match &self.layout {
            Layout::Blocks { ranges, .. } => ranges.get(j).cloned(),
            _ => None,
        }
    }

    /// The stored byte ranges, beyond [`ChunkMap::prefix_len_parsed`], that decoding bytes
    /// `decoded` needs: the blocks covering them (and block 0 when the delta filter is used),
    /// the raw bytes of a memcpyed chunk, nothing for special values, the whole chunk for
    /// dictionary and variable-length-block chunks. Sorted and merged where they touch.
    ///
    /// # Errors
    ///
    /// [`Error::ItemRange`] if `decoded` is not inside `0..nbytes`.
    pub fn stored_ranges(&self, decoded: Range<usize>) -> Result<Vec<Range<usize>>> {
        let nbytes = self.nbytes();
        if decoded.start > decoded.end || decoded.end > nbytes {
            return Err(Error::ItemRange {
                start: decoded.start,
                end: decoded.end,
                nitems: nbytes,
            });
        }
        let hl = self.header.header_len();
        let mut out: Vec<Range<usize>> = match &self.layout {
            Layout::HeaderOnly => Vec::new(),
            Layout::Whole => core::iter::once(self.prefix_len..self.cbytes()).collect(),
            Layout::Memcpy if decoded.is_empty() => Vec::new(),
            Layout::Memcpy => core::iter::once(hl + decoded.start..hl + decoded.end).collect(),
            Layout::Blocks { ranges, delta } => {
                let blocks = self.blocks_covering(decoded);
                let mut v: Vec<Range<usize>> = ranges[blocks.clone()].to_vec();
                if *delta && !blocks.is_empty() && blocks.start > 0 {
                    v.push(ranges[0].clone());
                }
                v
            }
        };
        Ok(merge_ranges(&mut out, 0))
    }
}

/// Sorts `ranges` and merges those closer than `gap` bytes (touching ones always).
pub(crate) fn merge_ranges(ranges: &mut [Range<usize>], gap: usize) -> Vec<Range<usize>> {
    ranges.sort_unstable_by_key(|r| r.start);
    let mut out: Vec<Range<usize>> = Vec::with_capacity(ranges.len());
    for r in ranges.iter().filter(|r| !r.is_empty()) {
        match out.last_mut() {
            Some(last) if r.start <= last.end.saturating_add(gap) => {
                last.end = last.end.max(r.end);
            }
            _ => out.push(r.clone()),
        }
    }
    out
}

/// A chunk of which only some stored byte ranges are present (the rest reads as zeros);
/// decodes the decoded byte ranges whose blocks were filled in.
#[derive(Debug, Clone)]
pub struct PartialChunk {
    map: ChunkMap,
    bytes: Vec<u8>,
}

impl PartialChunk {
    /// A chunk of `map.cbytes()` bytes holding the header and block starts from `prefix`.
    ///
    /// # Errors
    ///
    /// [`Error::Truncated`] if `prefix` is shorter than [`ChunkMap::prefix_len_parsed`].
    pub fn new(map: ChunkMap, prefix: &[u8]) -> Result<Self> {
        let n = map.prefix_len;
        let head = prefix
            .get(..n)
            .ok_or_else(|| Error::truncated("chunk prefix", 0, n, prefix.len()))?;
        let mut bytes = vec![0u8; map.cbytes()];
        bytes[..n].copy_from_slice(head);
        Ok(Self { map, bytes })
    }

    /// The map this chunk was built from.
    #[must_use]
    pub fn map(&self) -> &ChunkMap {
        &self.map
    }

    /// Copies stored bytes `data` in at chunk offset `offset`.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParam`] if they do not fit inside the chunk.
    pub fn insert(&mut self, offset: usize, data: &[u8]) -> Result<()> {
        let dst = offset
            .checked_add(data.len())
            .and_then(|end| self.bytes.get_mut(offset..end))
            .ok_or(Error::InvalidParam {
                what: "offset",
                why: "stored bytes outside the chunk",
            })?;
        dst.copy_from_slice(data);
        Ok(())
    }

    /// Decodes bytes `decoded` of the chunk into a new vector. The stored ranges
    /// [`ChunkMap::stored_ranges`] names for them must have been inserted; otherwise the
    /// result is an error or wrong bytes, never a panic.
    ///
    /// # Errors
    ///
    /// [`Error::ItemRange`] if `decoded` is outside the chunk; any decoding error.
    pub fn decode_range(&self, decoded: Range<usize>, params: &DParams) -> Result<Vec<u8>> {
        let nbytes = self.map.nbytes();
        if decoded.start > decoded.end || decoded.end > nbytes {
            return Err(Error::ItemRange {
                start: decoded.start,
                end: decoded.end,
                nitems: nbytes,
            });
        }
        let (h, kind) = classify(&self.bytes, &params.limits, params.blockshape)?;
        let mut out = vec![0u8; decoded.len()];
        if matches!(kind, Kind::Special(..)) || !decoded.is_empty() {
            super::items_into(&h, kind, decoded.start, decoded.end, &mut out)?;
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::{CParams, Codec, Filter, compress};

    fn roundtrip(chunk: &[u8], data: &[u8]) {
        let limits = Limits::default();
        let plen = ChunkMap::prefix_len(&chunk[..16], &limits).unwrap();
        let map = ChunkMap::parse(&chunk[..plen], &limits).unwrap();
        let n = data.len();
        for (lo, hi) in [
            (0, n),
            (0, 1.min(n)),
            (n / 3, n / 2),
            (n.saturating_sub(7), n),
        ] {
            let mut part = PartialChunk::new(map.clone(), chunk).unwrap();
            for r in map.stored_ranges(lo..hi).unwrap() {
                part.insert(r.start, &chunk[r.clone()]).unwrap();
            }
            let got = part.decode_range(lo..hi, &DParams::default()).unwrap();
            assert_eq!(got, &data[lo..hi], "{lo}..{hi}");
        }
    }

    #[test]
    fn ranges_decode_from_their_blocks_only() {
        let data: Vec<u8> = (0..200_000u32)
            .flat_map(|i| (i / 7).to_le_bytes())
            .collect();
        for format_blosc1 in [true, false] {
            for filter in [Filter::NoFilter, Filter::Shuffle, Filter::BitShuffle] {
                let mut p = if format_blosc1 {
                    CParams::blosc1(Codec::BloscLz, 5, 4, filter)
                } else {
                    CParams::new(Codec::BloscLz, 5, 4, filter)
                };
                p.blocksize = 4096;
                let chunk = compress(&data, &p).unwrap();
                roundtrip(&chunk, &data);
                let map = ChunkMap::parse(&chunk, &Limits::default()).unwrap();
                let need: usize = map
                    .stored_ranges(5000..5004)
                    .unwrap()
                    .iter()
                    .map(|r| r.len())
                    .sum();
                assert!(need < chunk.len() / 10, "{need} of {}", chunk.len());
            }
        }
    }

    #[test]
    fn memcpyed_and_small_chunks() {
        let data: Vec<u8> = (0..1000u32).map(|i| (i * 7919 % 251) as u8).collect();
        let chunk = compress(
            &data,
            &CParams::blosc1(Codec::BloscLz, 0, 1, Filter::NoFilter),
        )
        .unwrap();
        roundtrip(&chunk, &data);
        let chunk = compress(
            &data[..3],
            &CParams::blosc1(Codec::BloscLz, 5, 1, Filter::Shuffle),
        )
        .unwrap();
        roundtrip(&chunk, &data[..3]);
    }

    #[test]
    fn hostile_maps_are_errors() {
        let data = vec![1u8; 10_000];
        let chunk = compress(
            &data,
            &CParams::blosc1(Codec::BloscLz, 5, 1, Filter::NoFilter),
        )
        .unwrap();
        let limits = Limits::default();
        for cut in 0..chunk.len().min(64) {
            let _ = ChunkMap::prefix_len(&chunk[..cut], &limits);
            let _ = ChunkMap::parse(&chunk[..cut], &limits);
        }
        let mut bad = chunk.clone();
        bad[16..20].copy_from_slice(&(-5i32).to_le_bytes());
        assert!(ChunkMap::parse(&bad, &limits).is_err());
        assert!(matches!(
            ChunkMap::prefix_len(&chunk, &Limits::default().with_max_nbytes(10)),
            Err(Error::LimitExceeded { .. })
        ));
        let map = ChunkMap::parse(&chunk, &limits).unwrap();
        assert!(map.stored_ranges(0..10_001).is_err());
    }
}
