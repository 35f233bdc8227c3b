//! [`B2ndCodec`]: one b2nd chunk as a Zarr chunk — the Blosc2 chunk of a `.b2nd` frame decoded
//! to the chunk's C order, and C-order chunks encoded as such Blosc2 chunks.
//!
//! A b2nd chunk decompresses to its items in block order: the chunk, padded up to a whole
//! number of blocks (`extchunkshape`), is cut into blocks of `blockshape`; each block holds its
//! items in C order, and the blocks follow each other in C order of the block grid. Every
//! chunk of a b2nd array has this full size, edge chunks included (their items past the array
//! end are padding). Decoding reorders the blocks to the C order of the `chunkshape` items
//! and drops the padding; encoding does the opposite and compresses with `blosc-chunk`.

use std::borrow::Cow;
use std::fmt;
use std::str::FromStr;

use blosc_chunk::{
    BlockShape, BloscShuffle, CParams, ChunkHeader, Codec, DParams, Filter, SplitMode,
};

use crate::b2nd::{
    B2ndMeta, DEFAULT_DTYPE, blocks_are_c_order, chunk_and_block_bytes, pack_chunk, product,
    unpack_chunk,
};
use crate::error::{Error, Result};
use crate::limits::Limits;

/// The byte order of the items in a b2nd chunk (the NumPy dtype's: `<` or `>`; `|` one-byte
/// items have none).
///
/// python-blosc2 stores items in the byte order of the array's dtype, which is little-endian
/// unless the array was made from a big-endian NumPy array (`>f8`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum Endian {
    /// Least significant byte first (`<`, the default: NumPy's native order on every common
    /// machine).
    #[default]
    Little,
    /// Most significant byte first (`>`).
    Big,
}

impl Endian {
    /// Both byte orders.
    pub const ALL: [Self; 2] = [Self::Little, Self::Big];

    /// `little` or `big`, as the `endian` of Zarr's `bytes` codec.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::Little => "little",
            Self::Big => "big",
        }
    }

    /// This machine's byte order.
    #[must_use]
    pub fn native() -> Self {
        if cfg!(target_endian = "big") {
            Self::Big
        } else {
            Self::Little
        }
    }
}

impl fmt::Display for Endian {
    /// [`Endian::name`].
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Endian {
    type Err = Error;

    /// `little` or `big` ([`Error::InvalidArgument`] otherwise).
    fn from_str(s: &str) -> Result<Self> {
        Self::ALL
            .into_iter()
            .find(|e| e.name() == s)
            .ok_or_else(|| {
                Error::InvalidArgument(format!("`endian` must be \"little\" or \"big\", not {s:?}"))
            })
    }
}

/// The configuration of the `b2nd` codec: the block shape of the chunks, their byte order, and
/// how new chunks are compressed.
///
/// Only `blockshape` and `endian` matter for decoding (every Blosc2 chunk decodes, whatever
/// codec and filters it was written with); `cname`, `clevel` and `shuffle` choose how
/// [`B2ndCodec::encode`] compresses, with the Blosc vocabulary of `blosc-chunk` (the `cname`
/// and `shuffle` values of Zarr's `blosc` codec). The defaults are python-blosc2's: zstd,
/// level 5, byte shuffle.
///
/// As JSON (feature `zarrs`): `{"blockshape": [4, 8], "endian": "little", "cname": "zstd",
/// "clevel": 5, "shuffle": "shuffle"}`; only `blockshape` is required.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct B2ndCodecConfig {
    /// The b2nd block shape (one extent per dimension of the chunk, each 1 to the chunk's).
    pub blockshape: Vec<u64>,
    /// The byte order of the items as stored.
    pub endian: Endian,
    /// The compressor of encoded chunks: one of [`Codec::BLOSC1`] (`blosclz`, `lz4`, `lz4hc`,
    /// `zlib`, `zstd`).
    pub cname: Codec,
    /// The compression level of encoded chunks, 0 (no compression) to 9.
    pub clevel: u8,
    /// The shuffle of encoded chunks: `noshuffle`, `shuffle` or `bitshuffle` (not `auto`).
    pub shuffle: BloscShuffle,
}

impl B2ndCodecConfig {
    /// The codec's name in `zarr.json` (and its numcodecs id).
    pub const NAME: &'static str = "b2nd";

    /// A configuration for chunks of `blockshape` blocks, with the defaults (little-endian,
    /// zstd, level 5, byte shuffle). [`B2ndCodec::new`] checks it.
    #[must_use]
    pub fn new(blockshape: &[u64]) -> Self {
        Self {
            blockshape: blockshape.to_vec(),
            endian: Endian::Little,
            cname: Codec::Zstd,
            clevel: 5,
            shuffle: BloscShuffle::Shuffle,
        }
    }

    /// Sets [`endian`](Self::endian).
    #[must_use]
    pub fn with_endian(mut self, endian: Endian) -> Self {
        self.endian = endian;
        self
    }

    /// Sets [`cname`](Self::cname).
    #[must_use]
    pub fn with_cname(mut self, cname: Codec) -> Self {
        self.cname = cname;
        self
    }

    /// Sets [`clevel`](Self::clevel).
    #[must_use]
    pub fn with_clevel(mut self, clevel: u8) -> Self {
        self.clevel = clevel;
        self
    }

    /// Sets [`shuffle`](Self::shuffle).
    #[must_use]
    pub fn with_shuffle(mut self, shuffle: BloscShuffle) -> Self {
        self.shuffle = shuffle;
        self
    }

    /// Checks the configuration on its own (the chunk shape is checked per chunk).
    fn check(&self) -> Result<()> {
        let bad = |m: String| Err(Error::InvalidArgument(format!("b2nd codec: {m}")));
        let n = self.blockshape.len();
        if n == 0 || n > crate::b2nd::B2ND_MAX_DIM {
            return bad(format!(
                "`blockshape` must have 1 to {} extents, not {n}",
                crate::b2nd::B2ND_MAX_DIM
            ));
        }
        if let Some(b) = self
            .blockshape
            .iter()
            .find(|&&b| b == 0 || b > i32::MAX as u64)
        {
            return bad(format!(
                "`blockshape` extents must be 1 to {}, not {b}",
                i32::MAX
            ));
        }
        if !Codec::BLOSC1.contains(&self.cname) {
            return bad(format!(
                "`cname` must be one of blosclz, lz4, lz4hc, zlib, zstd, not {}",
                self.cname.name()
            ));
        }
        if self.clevel > 9 {
            return bad(format!("`clevel` must be 0 to 9, not {}", self.clevel));
        }
        if self.shuffle == BloscShuffle::AutoShuffle {
            return bad(
                "`shuffle` must be noshuffle, shuffle or bitshuffle (Zarr v3 names no auto)".into(),
            );
        }
        Ok(())
    }
}

#[cfg(feature = "zarrs")]
mod json {
    //! The configuration as JSON (feature `zarrs`).

    use serde::Deserialize;
    use serde_json::{Value, json};

    use super::{B2ndCodecConfig, Endian};
    use crate::error::{Error, Result};
    use blosc_chunk::{BloscShuffle, Codec};

    /// The `configuration` object, spelled with blosc-chunk's serde vocabulary.
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Raw {
        blockshape: Vec<u64>,
        #[serde(default)]
        endian: Option<String>,
        #[serde(default)]
        cname: Option<Codec>,
        #[serde(default)]
        clevel: Option<u8>,
        #[serde(default)]
        shuffle: Option<BloscShuffle>,
    }

    impl B2ndCodecConfig {
        /// Parses the `configuration` object of a codec entry (strictly: unknown keys and
        /// values out of range are errors; absent keys take the defaults of
        /// [`B2ndCodecConfig::new`]).
        ///
        /// ```
        /// use blosc2_frame::{B2ndCodecConfig, Endian};
        /// let c = B2ndCodecConfig::from_json(&serde_json::json!(
        ///     {"blockshape": [4, 8], "endian": "big", "cname": "lz4", "clevel": 9}))?;
        /// assert_eq!((c.blockshape.as_slice(), c.endian, c.clevel), (&[4, 8][..], Endian::Big, 9));
        /// assert!(B2ndCodecConfig::from_json(&serde_json::json!({"blockshape": [0]})).is_err());
        /// assert!(B2ndCodecConfig::from_json(&serde_json::json!({"blocks": [4]})).is_err());
        /// # Ok::<(), blosc2_frame::Error>(())
        /// ```
        ///
        /// # Errors
        /// [`Error::InvalidArgument`] naming the problem.
        pub fn from_json(config: &Value) -> Result<Self> {
            let raw = Raw::deserialize(config).map_err(|e| {
                Error::InvalidArgument(format!("b2nd codec configuration {config}: {e}"))
            })?;
            let mut c = Self::new(&raw.blockshape);
            if let Some(e) = raw.endian {
                c.endian = e.parse::<Endian>()?;
            }
            if let Some(cname) = raw.cname {
                c.cname = cname;
            }
            if let Some(clevel) = raw.clevel {
                c.clevel = clevel;
            }
            if let Some(shuffle) = raw.shuffle {
                c.shuffle = shuffle;
            }
            c.check()?;
            Ok(c)
        }

        /// Parses a whole codec entry `{"name": "b2nd", "configuration": {…}}`.
        ///
        /// # Errors
        /// [`Error::InvalidArgument`] for another name, a missing or bad configuration.
        pub fn from_entry(entry: &Value) -> Result<Self> {
            let name = entry.get("name").and_then(Value::as_str);
            if name != Some(Self::NAME) {
                return Err(Error::InvalidArgument(format!(
                    "codec entry names {name:?}, not \"{}\"",
                    Self::NAME
                )));
            }
            let config = entry.get("configuration").ok_or_else(|| {
                Error::InvalidArgument("the b2nd codec needs a configuration".into())
            })?;
            Self::from_json(config)
        }

        /// The `configuration` object (every key written).
        #[must_use]
        pub fn to_json(&self) -> Value {
            json!({
                "blockshape": self.blockshape,
                "endian": self.endian.name(),
                "cname": self.cname.name(),
                "clevel": self.clevel,
                "shuffle": self.shuffle.name(),
            })
        }

        /// The codec entry `{"name": "b2nd", "configuration": {…}}`.
        #[must_use]
        pub fn to_entry(&self) -> Value {
            json!({"name": Self::NAME, "configuration": self.to_json()})
        }
    }
}

/// The `b2nd` codec: one Zarr chunk is one Blosc2 chunk of a b2nd array (python-blosc2's
/// `.b2nd` files), its items in b2nd block order.
///
/// [`decode`](Self::decode) takes the chunk's shape (the b2nd `chunkshape`) and item size and
/// returns the items in C order; [`encode`](Self::encode) is the inverse and writes a Blosc2
/// chunk that python-blosc2 reads as a chunk of a b2nd array with this `chunkshape` and
/// `blockshape`. The bytes of each item are left as stored: in the configured
/// [`endian`](B2ndCodecConfig::endian) order.
///
/// ```
/// use blosc2_frame::{B2ndCodec, B2ndCodecConfig};
///
/// // A 4 x 6 chunk of u16 in 2 x 4 blocks: 2 x 2 blocks, the right ones half padding.
/// let codec = B2ndCodec::new(B2ndCodecConfig::new(&[2, 4]))?;
/// let chunk: Vec<u8> = (0..24u16).flat_map(u16::to_le_bytes).collect();
/// let stored = codec.encode(&chunk, &[4, 6], 2)?;
/// assert_eq!(codec.decode(&stored, &[4, 6], 2)?, chunk);
/// // The stored items are block by block: the first block is rows 0-1, columns 0-3.
/// let blocks = blosc2_frame::blosc_chunk::decompress(&stored)?;
/// let first: Vec<u16> = blocks[..16].chunks(2).map(|b| u16::from_le_bytes([b[0], b[1]])).collect();
/// assert_eq!(first, [0, 1, 2, 3, 6, 7, 8, 9]);
/// // A chunk of another shape or item size is an error.
/// assert!(codec.decode(&stored, &[6, 6], 2).is_err());
/// assert!(codec.decode(&stored, &[4, 6], 4).is_err());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct B2ndCodec {
    config: B2ndCodecConfig,
    limits: Limits,
    nthreads: usize,
}

/// The sizes of one chunk shape with the codec's block shape.
struct Layout {
    /// The chunk as a one-chunk b2nd array (`shape == chunkshape`).
    meta: B2ndMeta,
    /// Bytes of the chunk in C order.
    c_bytes: usize,
    /// Bytes of the stored chunk (`extchunkshape` items).
    stored_bytes: usize,
    /// Bytes of one block.
    block_bytes: usize,
}

impl B2ndCodec {
    /// The codec for `config` (with [`Limits::default`] and one thread).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a block shape of no or more than 16 dimensions or with
    /// an extent of 0 or above `i32::MAX`, a `cname` other than those of
    /// [`Codec::BLOSC1`], `clevel` above 9 or `shuffle` `auto`.
    pub fn new(config: B2ndCodecConfig) -> Result<Self> {
        config.check()?;
        Ok(Self {
            config,
            limits: Limits::default(),
            nthreads: 1,
        })
    }

    /// Sets the allocation limits of decoding and encoding: a chunk whose stored form
    /// (`extchunkshape` items) exceeds [`Limits::max_chunk_nbytes`] is refused before anything
    /// is allocated.
    #[must_use]
    pub fn with_limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Sets the threads of block-parallel decoding and encoding of one chunk (1, the default,
    /// is serial; 0 is all cores; the bytes written do not depend on it).
    #[must_use]
    pub fn with_nthreads(mut self, nthreads: usize) -> Self {
        self.nthreads = nthreads;
        self
    }

    /// The configuration.
    #[must_use]
    pub fn config(&self) -> &B2ndCodecConfig {
        &self.config
    }

    /// The limits.
    #[must_use]
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// Checks a chunk shape and item size against the block shape and the limits.
    fn layout(&self, chunkshape: &[u64], typesize: usize) -> Result<Layout> {
        if typesize == 0 {
            return Err(Error::InvalidArgument(
                "b2nd codec: the item size must be at least 1".into(),
            ));
        }
        if chunkshape.len() != self.config.blockshape.len() {
            return Err(Error::InvalidArgument(format!(
                "b2nd codec: the chunk has {} dimensions, the block shape {:?} has {}",
                chunkshape.len(),
                self.config.blockshape,
                self.config.blockshape.len()
            )));
        }
        // The chunk as a one-chunk array: the b2nd metalayer's checks (extents, block <=
        // chunk, products that fit) and its layout arithmetic.
        let meta = B2ndMeta::new(
            chunkshape,
            chunkshape,
            &self.config.blockshape,
            DEFAULT_DTYPE,
        )
        .map_err(|e| match e {
            Error::InvalidArgument(m) => Error::InvalidArgument(format!("b2nd codec: {m}")),
            e => e,
        })?;
        let stored_items = meta.chunk_items();
        let requested = stored_items.saturating_mul(typesize as u64);
        if requested > self.limits.max_chunk_nbytes as u64 {
            return Err(Error::LimitExceeded {
                what: "b2nd chunk nbytes",
                requested,
                limit: self.limits.max_chunk_nbytes as u64,
            });
        }
        let (stored_bytes, block_bytes) = chunk_and_block_bytes(&meta, typesize)?;
        // The C-order chunk is at most the stored one.
        let c_bytes = usize::try_from(product(chunkshape)?)
            .ok()
            .and_then(|n| n.checked_mul(typesize))
            .ok_or(Error::Overflow {
                what: "b2nd chunk size",
            })?;
        Ok(Layout {
            meta,
            c_bytes,
            stored_bytes,
            block_bytes,
        })
    }

    /// Decodes one stored chunk of shape `chunkshape` with items of `typesize` bytes into
    /// its items in C order (`chunkshape` items, in the stored byte order).
    ///
    /// # Errors
    /// As [`B2ndCodec::decode_into`].
    pub fn decode(&self, stored: &[u8], chunkshape: &[u64], typesize: usize) -> Result<Vec<u8>> {
        let layout = self.layout(chunkshape, typesize)?;
        self.check_header(stored, &layout, typesize)?;
        let mut out = vec![0u8; layout.c_bytes];
        self.decode_checked(stored, &layout, typesize, &mut out)?;
        Ok(out)
    }

    /// Like [`B2ndCodec::decode`], into `out`, which must hold exactly the chunk's C-order
    /// bytes (`product(chunkshape) * typesize`).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a chunk shape that does not fit the block shape (other
    /// dimensions, a block larger than the chunk, zero extents), `typesize` 0, or an `out` of
    /// the wrong length; [`Error::LimitExceeded`] for a chunk larger than
    /// [`Limits::max_chunk_nbytes`]; [`Error::Invalid`] for a stored chunk whose header does
    /// not describe a chunk of this shape, block shape and item size (its decoded size, block
    /// size or type size differ); [`Error::Chunk`] for a chunk that does not decode.
    pub fn decode_into(
        &self,
        stored: &[u8],
        chunkshape: &[u64],
        typesize: usize,
        out: &mut [u8],
    ) -> Result<()> {
        let layout = self.layout(chunkshape, typesize)?;
        if out.len() != layout.c_bytes {
            return Err(Error::InvalidArgument(format!(
                "b2nd codec: the output holds {} bytes, the chunk {}",
                out.len(),
                layout.c_bytes
            )));
        }
        self.check_header(stored, &layout, typesize)?;
        self.decode_checked(stored, &layout, typesize, out)
    }

    /// Checks the stored chunk's header against the layout before anything is allocated.
    fn check_header(&self, stored: &[u8], layout: &Layout, typesize: usize) -> Result<()> {
        let h = ChunkHeader::parse(stored).map_err(|source| Error::Chunk {
            site: "b2nd chunk".into(),
            source,
        })?;
        if h.nbytes() != layout.stored_bytes {
            return Err(Error::invalid(
                "b2nd chunk nbytes",
                4,
                format!(
                    "the chunk decodes to {} bytes, a chunk of shape {:?} in blocks {:?} of \
                     {typesize}-byte items has {}",
                    h.nbytes(),
                    layout.meta.chunkshape,
                    layout.meta.blockshape,
                    layout.stored_bytes
                ),
            ));
        }
        // C-Blosc2 stores item sizes above 255 as 1.
        let want_ts = if typesize > 255 { 1 } else { typesize };
        if h.typesize() != want_ts {
            return Err(Error::invalid(
                "b2nd chunk typesize",
                3,
                format!(
                    "the chunk holds {}-byte items, the data type has {typesize}",
                    h.typesize()
                ),
            ));
        }
        // A chunk of one repeated value has no block structure to check.
        if h.special().is_none() && h.blocksize() != layout.block_bytes {
            return Err(Error::invalid(
                "b2nd chunk blocksize",
                8,
                format!(
                    "the chunk's blocks hold {} bytes, blocks {:?} of {typesize}-byte items \
                     hold {}",
                    h.blocksize(),
                    layout.meta.blockshape,
                    layout.block_bytes
                ),
            ));
        }
        Ok(())
    }

    fn dparams(&self) -> Result<DParams> {
        let mut p = DParams::default().with_threads(self.nthreads);
        p.limits = blosc_chunk::Limits::default().with_max_nbytes(self.limits.max_chunk_nbytes);
        // Chunks using the NDCELL/NDMEAN filters or the NDLZ/ZFP codecs need it.
        p.blockshape = Some(self.blockshape()?);
        Ok(p)
    }

    fn blockshape(&self) -> Result<BlockShape> {
        BlockShape::new(&self.config.blockshape).map_err(|source| Error::Chunk {
            site: "b2nd block shape".into(),
            source,
        })
    }

    /// Decodes a stored chunk whose header [`Self::check_header`] accepted into `out`
    /// (`layout.c_bytes`).
    fn decode_checked(
        &self,
        stored: &[u8],
        layout: &Layout,
        typesize: usize,
        out: &mut [u8],
    ) -> Result<()> {
        let p = self.dparams()?;
        let chunk_err = |source| Error::Chunk {
            site: "b2nd chunk".into(),
            source,
        };
        if blocks_are_c_order(&layout.meta.chunkshape, &layout.meta.blockshape) {
            // No padding and blocks in C order: the stored items are the chunk's.
            blosc_chunk::decompress_into_ctx(stored, out, &p).map_err(chunk_err)?;
            return Ok(());
        }
        let mut blocks = vec![0u8; layout.stored_bytes];
        blosc_chunk::decompress_into_ctx(stored, &mut blocks, &p).map_err(chunk_err)?;
        unpack_chunk(&layout.meta, &blocks, typesize, 0, out)
    }

    /// Encodes one chunk of shape `chunkshape` (items of `typesize` bytes in C order, in the
    /// configured byte order) as a Blosc2 chunk of the b2nd layout: the items block by block,
    /// padding zero, compressed with the configured `cname`, `clevel` and `shuffle` (in the last
    /// filter slot), the item size as type size, a block's bytes as block size and automatic
    /// splitting: python-blosc2's parameters for a b2nd array, whose chunks this writes byte
    /// for byte (the Python tests compare every `cname` and `shuffle`).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a chunk shape that does not fit the block shape,
    /// `typesize` 0 or `decoded` of the wrong length; [`Error::LimitExceeded`] for a chunk
    /// larger than [`Limits::max_chunk_nbytes`]; [`Error::Chunk`] if compression fails.
    pub fn encode(&self, decoded: &[u8], chunkshape: &[u64], typesize: usize) -> Result<Vec<u8>> {
        let layout = self.layout(chunkshape, typesize)?;
        if decoded.len() != layout.c_bytes {
            return Err(Error::InvalidArgument(format!(
                "b2nd codec: the chunk has {} bytes, shape {chunkshape:?} of {typesize}-byte \
                 items needs {}",
                decoded.len(),
                layout.c_bytes
            )));
        }
        let blocks: Cow<'_, [u8]> =
            if blocks_are_c_order(&layout.meta.chunkshape, &layout.meta.blockshape) {
                Cow::Borrowed(decoded)
            } else {
                Cow::Owned(pack_chunk(&layout.meta, decoded, typesize, 0)?)
            };
        let c = &self.config;
        let mut p = CParams::default();
        p.codec = c.cname;
        p.clevel = c.clevel;
        p.typesize = typesize;
        // The shuffle in the last slot, as python-blosc2's default filters.
        p.filters = [Filter::NoFilter; blosc_chunk::MAX_FILTERS];
        p.filters[blosc_chunk::MAX_FILTERS - 1] = c.shuffle.filter(typesize);
        // python-blosc2's default split mode.
        p.splitmode = SplitMode::Auto;
        p.blocksize = layout.block_bytes;
        p.blockshape = Some(self.blockshape()?);
        p.nthreads = self.nthreads;
        blosc_chunk::compress(&blocks, &p).map_err(|source| Error::Chunk {
            site: "b2nd chunk".into(),
            source,
        })
    }

    /// The most bytes [`B2ndCodec::encode`] writes for a chunk of shape `chunkshape` with items
    /// of `typesize` bytes (the stored size plus Blosc2's overhead).
    ///
    /// # Errors
    /// As [`B2ndCodec::encode`] for the shape and item size.
    pub fn max_encoded_len(&self, chunkshape: &[u64], typesize: usize) -> Result<usize> {
        let layout = self.layout(chunkshape, typesize)?;
        layout
            .stored_bytes
            .checked_add(blosc_chunk::MAX_OVERHEAD)
            .ok_or(Error::Overflow {
                what: "b2nd encoded chunk size",
            })
    }
}
