//! The encoding plan: [`CParams`] resolved for one input (block size, split, header flags,
//! memcpy decision), and the header and block-start layout it implies.

use super::params::{CParams, Format};
use crate::codec;
use crate::codec::blosclz;
use crate::codec::dict;
use crate::codec_id::Codec;
use crate::error::{Error, Result};
use crate::flags::{Blosc2Flags, Flags};
use crate::header::{
    EXTENDED_HEADER_LENGTH, Filter, HeaderFields, MAX_BUFFERSIZE, MAX_FILTERS, MAX_OVERHEAD,
    MIN_BUFFERSIZE, MIN_HEADER_LENGTH, VERSION_FORMAT_BLOSC1, VERSION_FORMAT_STABLE,
};
use crate::tune;

/// Largest type size C-Blosc2 accepts (`BLOSC2_MAXTYPESIZE`).
const MAX_TYPESIZE: usize = 536_866_816;

/// Everything the block encoder needs, resolved from [`CParams`] and the input size.
#[derive(Debug, Clone)]
pub(super) struct Plan {
    pub(super) codec: Codec,
    pub(super) clevel: u8,
    pub(super) typesize: usize,
    pub(super) filters: [Filter; MAX_FILTERS],
    pub(super) filters_meta: [u8; MAX_FILTERS],
    pub(super) extended: bool,
    pub(super) blocksize: usize,
    pub(super) nblocks: usize,
    pub(super) split: bool,
    pub(super) nbytes: usize,
    pub(super) destsize: usize,
    pub(super) header_len: usize,
    pub(super) flags: Flags,
    pub(super) memcpyed: bool,
    pub(super) use_dict: bool,
    /// Whose writer rules (header version, bitshuffle of partial groups) apply.
    pub(super) format: Format,
    /// The BloscLZ encoder to reproduce.
    pub(super) blosclz: blosclz::Flavor,
    pub(super) codec_meta: u8,
    pub(super) blockshape: Option<crate::BlockShape>,
}

fn filter_flags(filters: &[Filter; MAX_FILTERS]) -> Flags {
    let mut f = Flags::empty();
    for x in filters {
        match x {
            Filter::Shuffle => f |= Flags::SHUFFLE,
            Filter::BitShuffle => f |= Flags::BITSHUFFLE,
            Filter::Delta => f |= Flags::DELTA,
            _ => {}
        }
    }
    f
}

/// Checks what both formats require (clevel, typesize, input length up to `max_nbytes`, a
/// built-in and enabled codec); returns the codec's stream format code.
fn check_common(
    nbytes: usize,
    cp: &CParams,
    max_nbytes: usize,
    max_why: &'static str,
) -> Result<u8> {
    if cp.clevel > 9 {
        return Err(Error::InvalidParam {
            what: "clevel",
            why: "must be 0..=9",
        });
    }
    if cp.typesize == 0 || cp.typesize > MAX_TYPESIZE {
        return Err(Error::InvalidParam {
            what: "typesize",
            why: "must be 1..=536866816",
        });
    }
    if nbytes > max_nbytes {
        return Err(Error::InvalidParam {
            what: "input length",
            why: max_why,
        });
    }
    let Some(format) = cp.codec.format_code() else {
        return Err(Error::Unsupported {
            what: "codec",
            id: u32::from(cp.codec.id()),
        });
    };
    codec::require_enabled(cp.codec)?;
    Ok(format)
}

/// Resolves parameters for an input of `nbytes` bytes.
pub(super) fn plan(nbytes: usize, cp: &CParams) -> Result<Plan> {
    if cp.format == Format::Blosc1 {
        return plan_blosc1(nbytes, cp);
    }
    let format = check_common(nbytes, cp, MAX_BUFFERSIZE, "above BLOSC2_MAX_BUFFERSIZE")?;
    if cp.use_dict && (!dict::supports(cp.codec) || cp.blosc1_header) {
        return Err(Error::InvalidParam {
            what: "use_dict",
            why: "dictionaries need zstd, lz4 or lz4hc and the extended header",
        });
    }
    let typesize = if cp.typesize > 255 { 1 } else { cp.typesize };
    let mut filters = cp.filters;
    for f in &filters {
        if let Filter::Other(id) = f {
            return Err(Error::Unsupported {
                what: "filter",
                id: u32::from(*id),
            });
        }
    }
    if cp.blosc1_header {
        let mut mapped = [Filter::NoFilter; MAX_FILTERS];
        let mut byte_shuffle = false;
        let mut bit_shuffle = false;
        let mut delta = false;
        for f in &filters {
            match f {
                Filter::Shuffle => byte_shuffle = true,
                Filter::BitShuffle => bit_shuffle = true,
                Filter::Delta => delta = true,
                Filter::NoFilter => {}
                _ => {
                    return Err(Error::InvalidParam {
                        what: "filters",
                        why: "a Blosc1 header can only express shuffle, bitshuffle and delta",
                    });
                }
            }
        }
        if byte_shuffle && bit_shuffle {
            return Err(Error::InvalidParam {
                what: "filters",
                why: "a Blosc1 header cannot hold both shuffle and bitshuffle",
            });
        }
        // The header applies delta first, then one (bit)shuffle: any other pipeline (repeated
        // or reordered filters) would silently decode to different data, so it is refused.
        let seq: Vec<Filter> = filters
            .iter()
            .copied()
            .filter(|f| *f != Filter::NoFilter)
            .collect();
        if !matches!(
            seq.as_slice(),
            [] | [Filter::Delta]
                | [Filter::Shuffle | Filter::BitShuffle]
                | [Filter::Delta, Filter::Shuffle | Filter::BitShuffle]
        ) {
            return Err(Error::InvalidParam {
                what: "filters",
                why: "a Blosc1 header holds at most delta followed by one shuffle or bitshuffle",
            });
        }
        if byte_shuffle && typesize > 1 {
            mapped[5] = Filter::Shuffle;
        } else if bit_shuffle {
            mapped[5] = Filter::BitShuffle;
        }
        if delta {
            mapped[4] = Filter::Delta;
        }
        filters = mapped;
    }
    let fflags = filter_flags(&filters);
    let has_shuffle = fflags.contains(Flags::SHUFFLE);
    let blocksize = tune::compute_blocksize(
        cp.clevel,
        typesize,
        nbytes,
        cp.blocksize,
        cp.codec,
        has_shuffle,
        cp.splitmode,
    );
    // A requested block size below `nbytes` that is not a multiple of the type size makes
    // C-Blosc2 3.3.5 write an undecodable chunk: refuse it. (One at or above `nbytes` is
    // clamped; C would then write the unrounded `nbytes` into the header, also undecodable when
    // `nbytes` is not a multiple of the type size; we write the rounded, decodable value.)
    if cp.blocksize != 0 && cp.blocksize < nbytes && nbytes >= typesize && cp.blocksize != blocksize
    {
        return Err(Error::InvalidParam {
            what: "blocksize",
            why: "must be a multiple of typesize (C-Blosc2 would write an undecodable chunk)",
        });
    }
    let nblocks = if nbytes == 0 {
        0
    } else {
        nbytes.div_ceil(blocksize)
    };
    // Blocks are split into `typesize` streams only when they divide evenly (a user block size
    // below the type size can reach here); otherwise the header must say "don't split", or
    // decoders expect `typesize` streams and refuse the chunk.
    let split = tune::split_block(
        cp.splitmode,
        cp.codec,
        cp.clevel,
        has_shuffle,
        typesize,
        blocksize,
    ) && blocksize.is_multiple_of(typesize);
    let extended = !cp.blosc1_header;
    let header_len = if extended {
        EXTENDED_HEADER_LENGTH
    } else {
        MIN_HEADER_LENGTH
    };
    let destsize = nbytes + MAX_OVERHEAD;
    let mut memcpyed = cp.clevel == 0 || nbytes < MIN_BUFFERSIZE;
    let mut flags = if extended {
        Flags::EXTENDED
    } else {
        Flags::empty()
    };
    if header_len + 4 * nblocks > destsize {
        memcpyed = true;
    }
    if memcpyed {
        flags |= Flags::MEMCPYED;
    } else {
        flags = (flags | fflags).with_codec_format(format);
        if !split {
            flags |= Flags::DONT_SPLIT;
        }
    }
    Ok(Plan {
        codec: cp.codec,
        clevel: cp.clevel,
        typesize,
        filters,
        // A Blosc1 header has no room for filter metadata: the decoder uses the defaults.
        filters_meta: if cp.blosc1_header {
            [0; MAX_FILTERS]
        } else {
            cp.filters_meta
        },
        extended,
        blocksize,
        nblocks,
        split,
        nbytes,
        destsize,
        header_len,
        flags,
        memcpyed,
        use_dict: cp.use_dict,
        format: Format::Blosc2,
        blosclz: blosclz::Flavor::V2_5_3,
        codec_meta: cp.codec_meta,
        blockshape: cp.blockshape,
    })
}

/// Largest input C-Blosc 1 compresses (`BLOSC_MAX_BUFFERSIZE`, `INT_MAX - 16`).
const BLOSC1_MAX_BUFFERSIZE: usize = 2_147_483_631;

/// The shuffle filter of a C-Blosc 1 chunk: none, or one shuffle or bitshuffle in any slot.
fn blosc1_filter(filters: &[Filter; MAX_FILTERS]) -> Result<Filter> {
    let mut found = Filter::NoFilter;
    for f in filters {
        match f {
            Filter::NoFilter => {}
            Filter::Shuffle | Filter::BitShuffle if found == Filter::NoFilter => found = *f,
            Filter::Shuffle | Filter::BitShuffle => {
                return Err(Error::InvalidParam {
                    what: "filters",
                    why: "a C-Blosc 1 chunk holds at most one shuffle or bitshuffle",
                });
            }
            Filter::Other(id) => {
                return Err(Error::Unsupported {
                    what: "filter",
                    id: u32::from(*id),
                });
            }
            _ => {
                return Err(Error::InvalidParam {
                    what: "filters",
                    why: "C-Blosc 1 has only shuffle and bitshuffle (no delta or truncation)",
                });
            }
        }
    }
    Ok(found)
}

/// C-Blosc 1.21's writer (`initialize_context_compression`, `write_compression_header`):
/// 16-byte version-2 header, budget `nbytes + 16`, flags that always carry the requested
/// shuffle, the split bit and the codec format (also on memcpyed chunks).
fn plan_blosc1(nbytes: usize, cp: &CParams) -> Result<Plan> {
    let format = check_common(
        nbytes,
        cp,
        BLOSC1_MAX_BUFFERSIZE,
        "above C-Blosc 1's BLOSC_MAX_BUFFERSIZE (2 147 483 631 bytes)",
    )?;
    if format == codec::FORMAT_USER {
        return Err(Error::InvalidParam {
            what: "codec",
            why: "C-Blosc 1 has no plugin codecs (NDLZ, ZFP)",
        });
    }
    if cp.use_dict {
        return Err(Error::InvalidParam {
            what: "use_dict",
            why: "C-Blosc 1 chunks have no dictionaries",
        });
    }
    let filter = blosc1_filter(&cp.filters)?;
    let typesize = if cp.typesize > 255 { 1 } else { cp.typesize };
    let blocksize = tune::compute_blocksize_blosc1(
        cp.clevel,
        typesize,
        nbytes,
        cp.blocksize,
        cp.codec,
        cp.splitmode,
    );
    let split = tune::split_block_blosc1(cp.splitmode, cp.codec, typesize, blocksize);
    let nblocks = if nbytes == 0 {
        0
    } else {
        nbytes.div_ceil(blocksize)
    };
    let header_len = MIN_HEADER_LENGTH;
    let destsize = nbytes + MIN_HEADER_LENGTH;
    let memcpyed = cp.clevel == 0
        || nbytes < tune::BLOSC1_MIN_BUFFERSIZE
        || nblocks.saturating_mul(4).saturating_add(header_len) > destsize;
    if split && !memcpyed && !tune::blosc1_splittable(typesize, blocksize) {
        // C-Blosc 1 would split (`SplitMode::Always`), but its reader would then expect one
        // stream per block: the chunk could not be read back.
        return Err(Error::InvalidParam {
            what: "splitmode",
            why: "C-Blosc 1 cannot read split blocks of types over 16 bytes or under 128 items",
        });
    }
    let mut flags = Flags::empty();
    // Byte shuffle is applied only to types wider than one byte, but its flag is kept.
    let mut filters = [Filter::NoFilter; MAX_FILTERS];
    match filter {
        Filter::Shuffle => {
            flags |= Flags::SHUFFLE;
            if typesize > 1 {
                filters[MAX_FILTERS - 1] = Filter::Shuffle;
            }
        }
        Filter::BitShuffle => {
            flags |= Flags::BITSHUFFLE;
            filters[MAX_FILTERS - 1] = Filter::BitShuffle;
        }
        _ => {}
    }
    if !split {
        flags |= Flags::DONT_SPLIT;
    }
    flags = flags.with_codec_format(format);
    if memcpyed {
        flags |= Flags::MEMCPYED;
    }
    Ok(Plan {
        codec: cp.codec,
        clevel: cp.clevel,
        typesize,
        filters,
        filters_meta: [0; MAX_FILTERS],
        extended: false,
        blocksize,
        nblocks,
        split,
        nbytes,
        destsize,
        header_len,
        flags,
        memcpyed,
        use_dict: false,
        format: Format::Blosc1,
        blosclz: blosclz::Flavor::V2_5_1 { split },
        codec_meta: 0,
        blockshape: None,
    })
}

impl Plan {
    pub(super) fn header(
        &self,
        flags: Flags,
        cbytes: usize,
        blosc2_flags: Blosc2Flags,
    ) -> HeaderFields {
        HeaderFields {
            version: match self.format {
                Format::Blosc1 => VERSION_FORMAT_BLOSC1,
                Format::Blosc2 => VERSION_FORMAT_STABLE,
            },
            flags,
            typesize: u8::try_from(self.typesize).unwrap_or(1),
            nbytes: self.nbytes,
            blocksize: self.blocksize,
            cbytes,
            filters: self.filters.map(Filter::id),
            udcodec: self.codec.id(),
            compcode_meta: self.codec_meta,
            filters_meta: self.filters_meta,
            blosc2_flags,
        }
    }

    pub(super) fn bsize(&self, j: usize) -> usize {
        self.blocksize.min(self.nbytes - j * self.blocksize)
    }

    pub(super) fn nstreams(&self, bsize: usize) -> usize {
        if self.split && bsize == self.blocksize && bsize.is_multiple_of(self.typesize) {
            self.typesize
        } else {
            1
        }
    }

    /// The output buffer before the first block: header and block-start table (zeros), with
    /// room for the whole budget.
    pub(super) fn output_start(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.destsize + 8);
        out.resize(self.header_len + 4 * self.nblocks, 0);
        out
    }

    /// Records that block `j` starts at the current end of `out`.
    pub(super) fn write_bstart(&self, out: &mut [u8], j: usize) {
        let start = out.len();
        self.write_bstart_at(out, j, start);
    }

    /// Records that block `j` starts at offset `start` of the chunk.
    pub(super) fn write_bstart_at(&self, out: &mut [u8], j: usize, start: usize) {
        let start = i32::try_from(start).unwrap_or(i32::MAX).to_le_bytes();
        let pos = self.header_len + 4 * j;
        out[pos..pos + 4].copy_from_slice(&start);
    }

    /// The memcpyed chunk: header + raw input.
    pub(super) fn memcpy_chunk(&self, data: &[u8]) -> Result<Vec<u8>> {
        self.memcpy_chunk_in(Vec::new(), data)
    }

    /// [`Plan::memcpy_chunk`] written into `out` (cleared first), which keeps its allocation:
    /// after an encode that gave up, the buffer it filled is already allocated and its pages
    /// mapped, so the raw copy does not pay for a second 4 MiB allocation.
    pub(super) fn memcpy_chunk_in(&self, mut out: Vec<u8>, data: &[u8]) -> Result<Vec<u8>> {
        let cbytes = self.header_len + data.len();
        // Only the header is zero-filled: zeroing the whole chunk before copying the input
        // over it cost a tenth of an incompressible 4 MiB chunk's encode.
        out.clear();
        out.reserve(cbytes);
        out.resize(self.header_len, 0);
        self.header(self.flags | Flags::MEMCPYED, cbytes, Blosc2Flags::empty())
            .write(&mut out, self.extended)?;
        out.extend_from_slice(data);
        Ok(out)
    }
}
