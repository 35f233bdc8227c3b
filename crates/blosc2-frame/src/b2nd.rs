//! The `b2nd` metalayer and the N-d layout of b2nd arrays.
//!
//! Metalayer content (`b2nd_serialize_meta`), parsed by position like C does — for 16
//! dimensions the "fixarray" markers are `0xa0`, which msgpack reads as an empty string:
//!
//! ```text
//! 97 | version | ndim | 90+ndim, ndim × (d3 i64 shape) | 90+ndim, ndim × (d2 i32 chunkshape)
//!    | 90+ndim, ndim × (d2 i32 blockshape) | dtype_format | db u32 len, dtype string
//! ```
//!
//! Inside a chunk the items are stored block by block (blocks in C order over the chunk's
//! block grid, items in C order inside a block); chunks are padded up to a whole number of
//! blocks (`extchunkshape`), and edge chunks are padded to the full chunk.

use crate::bytes::Bytes;
use crate::error::{Error, Result};

/// Name of the metalayer that makes a frame a b2nd array.
pub const B2ND_METALAYER: &str = "b2nd";

/// Most dimensions a b2nd array may have (`B2ND_MAX_DIM`).
pub const B2ND_MAX_DIM: usize = 16;

/// The dtype C-Blosc2 assumes when the metalayer has none (old Caterva files).
pub const DEFAULT_DTYPE: &str = "|u1";

/// Decoded `b2nd` metalayer.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(try_from = "RawB2ndMeta"))]
#[non_exhaustive]
pub struct B2ndMeta {
    /// Metalayer format version (0).
    pub version: u8,
    /// Array shape (items per dimension).
    pub shape: Vec<u64>,
    /// Chunk shape.
    pub chunkshape: Vec<u64>,
    /// Block shape (Blosc blocks inside each chunk).
    pub blockshape: Vec<u64>,
    /// dtype format (0 = NumPy `dtype.str`).
    pub dtype_format: u8,
    /// dtype string, e.g. `<f4`, `|u1`, or a NumPy structured-dtype repr.
    pub dtype: String,
}

/// The serialized form of a [`B2ndMeta`], checked like [`B2ndMeta::parse`] on the way in.
#[cfg(feature = "serde")]
#[derive(serde::Deserialize)]
struct RawB2ndMeta {
    version: u8,
    shape: Vec<u64>,
    chunkshape: Vec<u64>,
    blockshape: Vec<u64>,
    dtype_format: u8,
    dtype: String,
}

#[cfg(feature = "serde")]
impl TryFrom<RawB2ndMeta> for B2ndMeta {
    type Error = Error;

    fn try_from(r: RawB2ndMeta) -> Result<Self> {
        let meta = Self {
            version: r.version,
            shape: r.shape,
            chunkshape: r.chunkshape,
            blockshape: r.blockshape,
            dtype_format: r.dtype_format,
            dtype: r.dtype,
        };
        meta.check()?;
        Ok(meta)
    }
}

impl B2ndMeta {
    /// A version-0 NumPy-dtype description; checks what [`B2ndMeta::parse`] checks.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when the dimensions disagree, exceed 16, a chunk or block
    /// extent is 0, a block is larger than its chunk, or an extent exceeds `i32::MAX` (chunks,
    /// blocks) / `i64::MAX` (shape).
    pub fn new(shape: &[u64], chunkshape: &[u64], blockshape: &[u64], dtype: &str) -> Result<Self> {
        let meta = Self {
            version: 0,
            shape: shape.to_vec(),
            chunkshape: chunkshape.to_vec(),
            blockshape: blockshape.to_vec(),
            dtype_format: 0,
            dtype: dtype.to_string(),
        };
        meta.check()
            .map_err(|e| Error::InvalidArgument(e.to_string()))?;
        Ok(meta)
    }

    /// Parses the content of a `b2nd` metalayer.
    ///
    /// # Errors
    /// [`Error::Truncated`], [`Error::Marker`] or [`Error::Invalid`] (offsets are within the
    /// content) for malformed content, more than 16 dimensions, negative extents, zero chunk or
    /// block extents or blocks larger than chunks.
    pub fn parse(content: &[u8]) -> Result<Self> {
        let b = Bytes::new(content, 0);
        let head = b.u8("b2nd array", 0)?;
        if head & 0xf0 != 0x90 {
            return Err(Error::Marker {
                what: "b2nd array",
                offset: 0,
                expected: 0x97,
                found: head,
            });
        }
        let version = fixint(&b, "b2nd version", 1)?;
        let ndim = usize::from(fixint(&b, "b2nd ndim", 2)?);
        if ndim > B2ND_MAX_DIM {
            return Err(Error::invalid(
                "b2nd ndim",
                2,
                format!("{ndim} > {B2ND_MAX_DIM}"),
            ));
        }
        // 0x90 + ndim: for ndim = 16 this is 0xa0 (not a msgpack fixarray; C skips it).
        // ndim <= 16 was checked above.
        let list_marker = 0x90 + u8::try_from(ndim).unwrap_or(16);
        let mut pos = 3;
        b.marker("b2nd shape list", pos, list_marker)?;
        pos += 1;
        let mut shape = Vec::with_capacity(ndim);
        for _ in 0..ndim {
            b.marker("b2nd shape", pos, 0xd3)?;
            let v = b.be_i64("b2nd shape", pos + 1)?;
            shape.push(
                u64::try_from(v).map_err(|_| {
                    Error::invalid("b2nd shape", pos as u64, format!("negative: {v}"))
                })?,
            );
            pos += 9;
        }
        let dims32 = |what: &'static str, pos: &mut usize| -> Result<Vec<u64>> {
            b.marker(what, *pos, list_marker)?;
            *pos += 1;
            let mut v = Vec::with_capacity(ndim);
            for _ in 0..ndim {
                b.marker(what, *pos, 0xd2)?;
                let x = b.be_i32(what, *pos + 1)?;
                v.push(
                    u64::try_from(x)
                        .map_err(|_| Error::invalid(what, *pos as u64, format!("negative: {x}")))?,
                );
                *pos += 5;
            }
            Ok(v)
        };
        let chunkshape = dims32("b2nd chunkshape", &mut pos)?;
        let blockshape = dims32("b2nd blockshape", &mut pos)?;
        let (dtype_format, dtype) = if pos >= content.len() {
            (0, DEFAULT_DTYPE.to_string())
        } else {
            let format = fixint(&b, "b2nd dtype format", pos)?;
            pos += 1;
            b.marker("b2nd dtype", pos, 0xdb)?;
            let len = b.be_u32("b2nd dtype length", pos + 1)?;
            let len = usize::try_from(len).map_err(|_| Error::Overflow {
                what: "dtype length",
            })?;
            let raw = b.get("b2nd dtype", pos + 5, len)?;
            let dtype = String::from_utf8(raw.to_vec())
                .map_err(|_| Error::invalid("b2nd dtype", (pos + 5) as u64, "not valid UTF-8"))?;
            (format, dtype)
        };
        let meta = Self {
            version,
            shape,
            chunkshape,
            blockshape,
            dtype_format,
            dtype,
        };
        meta.check()?;
        Ok(meta)
    }

    fn check(&self) -> Result<()> {
        let n = self.shape.len();
        if n > B2ND_MAX_DIM || self.chunkshape.len() != n || self.blockshape.len() != n {
            return Err(Error::invalid(
                "b2nd dimensions",
                2,
                format!(
                    "shape, chunkshape and blockshape have {}, {}, {} dimensions (at most {B2ND_MAX_DIM})",
                    n,
                    self.chunkshape.len(),
                    self.blockshape.len()
                ),
            ));
        }
        for i in 0..n {
            let (s, c, b) = (self.shape[i], self.chunkshape[i], self.blockshape[i]);
            if s > i64::MAX as u64 || c > i32::MAX as u64 || b > i32::MAX as u64 {
                return Err(Error::invalid(
                    "b2nd extent",
                    3,
                    format!("dimension {i} too large"),
                ));
            }
            if c == 0 || b == 0 || b > c {
                return Err(Error::invalid(
                    "b2nd chunk/block shape",
                    3,
                    format!("dimension {i}: chunk {c}, block {b} (need 1 <= block <= chunk)"),
                ));
            }
        }
        // Products used for layout must not overflow.
        product(&self.extchunkshape())?;
        product(&self.chunks_per_dim())?;
        product(&self.shape)?;
        Ok(())
    }

    /// Serialises exactly as C-Blosc2's `b2nd_serialize_meta`.
    ///
    /// # Errors
    /// [`Error::Overflow`] if the dtype string is longer than `u32::MAX`.
    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        let ndim = self.shape.len();
        // `check` keeps ndim <= 16 for values built by `new`/`parse`; fields are public, so
        // clamp rather than trust.
        let nd = u8::try_from(ndim.min(B2ND_MAX_DIM)).unwrap_or(16);
        let mut out = Vec::with_capacity(16 + ndim * 19 + self.dtype.len());
        out.push(0x97);
        out.push(self.version & 0x7f);
        out.push(nd);
        out.push(0x90 + nd);
        for &s in &self.shape {
            out.push(0xd3);
            out.extend_from_slice(&i64::try_from(s).unwrap_or(i64::MAX).to_be_bytes());
        }
        for dims in [&self.chunkshape, &self.blockshape] {
            out.push(0x90 + nd);
            for &c in dims {
                out.push(0xd2);
                out.extend_from_slice(&i32::try_from(c).unwrap_or(i32::MAX).to_be_bytes());
            }
        }
        out.push(self.dtype_format & 0x7f);
        out.push(0xdb);
        let len = u32::try_from(self.dtype.len()).map_err(|_| Error::Overflow {
            what: "dtype length",
        })?;
        out.extend_from_slice(&len.to_be_bytes());
        out.extend_from_slice(self.dtype.as_bytes());
        Ok(out)
    }

    /// Number of dimensions.
    #[must_use]
    pub fn ndim(&self) -> usize {
        self.shape.len()
    }

    /// Chunk shape rounded up to whole blocks: the shape of the data stored per chunk.
    #[must_use]
    pub fn extchunkshape(&self) -> Vec<u64> {
        self.chunkshape
            .iter()
            .zip(&self.blockshape)
            .map(|(&c, &b)| c.div_ceil(b) * b)
            .collect()
    }

    /// Chunks along each dimension, `ceil(shape / chunkshape)`.
    #[must_use]
    pub fn chunks_per_dim(&self) -> Vec<u64> {
        self.shape
            .iter()
            .zip(&self.chunkshape)
            .map(|(&s, &c)| s.div_ceil(c))
            .collect()
    }

    /// Blocks along each dimension of a chunk.
    #[must_use]
    pub fn blocks_per_chunk_dim(&self) -> Vec<u64> {
        self.extchunkshape()
            .iter()
            .zip(&self.blockshape)
            .map(|(&e, &b)| e / b)
            .collect()
    }

    /// Items in one chunk (including padding).
    #[must_use]
    pub fn chunk_items(&self) -> u64 {
        product(&self.extchunkshape()).unwrap_or(u64::MAX)
    }

    /// Items in one block.
    #[must_use]
    pub fn block_items(&self) -> u64 {
        product(&self.blockshape).unwrap_or(u64::MAX)
    }

    /// Items in the array.
    #[must_use]
    pub fn items(&self) -> u64 {
        product(&self.shape).unwrap_or(u64::MAX)
    }

    /// Number of chunks the frame must hold.
    #[must_use]
    pub fn nchunks(&self) -> u64 {
        product(&self.chunks_per_dim()).unwrap_or(u64::MAX)
    }
}

fn fixint(b: &Bytes<'_>, what: &'static str, at: usize) -> Result<u8> {
    let v = b.u8(what, at)?;
    if v > 0x7f {
        return Err(Error::invalid(
            what,
            at as u64,
            format!("{v:#04x} is not a positive fixint"),
        ));
    }
    Ok(v)
}

/// Product of extents with overflow check (empty product = 1).
pub(crate) fn product(v: &[u64]) -> Result<u64> {
    v.iter().try_fold(1u64, |acc, &x| {
        acc.checked_mul(x).ok_or(Error::Overflow {
            what: "b2nd extent product",
        })
    })
}

/// C-order linear index of `p - origin` in a box of `shape`.
pub(crate) fn linear(p: &[u64], origin: &[u64], shape: &[u64]) -> u64 {
    let mut idx = 0u64;
    for ((&x, &o), &s) in p.iter().zip(origin).zip(shape) {
        idx = idx * s + (x - o);
    }
    idx
}

/// Copies the items of the box `[lo, hi)` (array coordinates) from `src`, a C-order buffer of
/// shape `src_shape` whose first item sits at `src_origin`, into `dst` (`dst_shape`,
/// `dst_origin`). Callers guarantee the box lies inside both buffers; ranges are still
/// checked with `get` so a logic error cannot index out of bounds.
#[allow(clippy::too_many_arguments)] // a box copy has two shapes, two origins and the box
pub(crate) fn copy_box(
    lo: &[u64],
    hi: &[u64],
    src: &[u8],
    src_origin: &[u64],
    src_shape: &[u64],
    dst: &mut [u8],
    dst_origin: &[u64],
    dst_shape: &[u64],
    itemsize: usize,
) -> Result<()> {
    let n = lo.len();
    if lo.iter().zip(hi).any(|(l, h)| l >= h) {
        return Ok(());
    }
    let run = if n == 0 { 1 } else { hi[n - 1] - lo[n - 1] };
    let run_bytes = usize::try_from(run)
        .ok()
        .and_then(|r| r.checked_mul(itemsize))
        .ok_or(Error::Overflow {
            what: "b2nd row length",
        })?;
    let mut p = lo.to_vec();
    loop {
        let s =
            usize::try_from(linear(&p, src_origin, src_shape)).map_err(|_| Error::Overflow {
                what: "b2nd source index",
            })? * itemsize;
        let d =
            usize::try_from(linear(&p, dst_origin, dst_shape)).map_err(|_| Error::Overflow {
                what: "b2nd destination index",
            })? * itemsize;
        let from = src.get(s..s + run_bytes).ok_or(Error::Overflow {
            what: "b2nd source range",
        })?;
        dst.get_mut(d..d + run_bytes)
            .ok_or(Error::Overflow {
                what: "b2nd destination range",
            })?
            .copy_from_slice(from);
        // Odometer over all but the last dimension.
        let mut k = n.saturating_sub(1);
        loop {
            if k == 0 {
                return Ok(());
            }
            k -= 1;
            p[k] += 1;
            if p[k] < hi[k] {
                break;
            }
            p[k] = lo[k];
        }
    }
}

/// Unravels `idx` into C-order coordinates over `shape`.
pub(crate) fn unravel(mut idx: u64, shape: &[u64]) -> Vec<u64> {
    let mut out = vec![0; shape.len()];
    for (o, &s) in out.iter_mut().zip(shape).rev() {
        if s > 0 {
            *o = idx % s;
            idx /= s;
        }
    }
    out
}

/// Calls `f(lo, hi)` for every cell of the grid `cell` (cell extents) that intersects the box
/// `[start, stop)`, in C order, with the cell's coordinates; the intersection is `[lo, hi)`.
pub(crate) fn for_each_cell(
    start: &[u64],
    stop: &[u64],
    cell: &[u64],
    mut f: impl FnMut(&[u64], &[u64], &[u64]) -> Result<()>,
) -> Result<()> {
    let n = start.len();
    if start.iter().zip(stop).any(|(a, b)| a >= b) {
        return Ok(());
    }
    let first: Vec<u64> = start.iter().zip(cell).map(|(&s, &c)| s / c).collect();
    let last: Vec<u64> = stop.iter().zip(cell).map(|(&s, &c)| (s - 1) / c).collect();
    let mut g = first.clone();
    let mut lo = vec![0; n];
    let mut hi = vec![0; n];
    loop {
        for i in 0..n {
            lo[i] = start[i].max(g[i] * cell[i]);
            hi[i] = stop[i].min((g[i] + 1) * cell[i]);
        }
        f(&g, &lo, &hi)?;
        let mut k = n;
        loop {
            if k == 0 {
                return Ok(());
            }
            k -= 1;
            g[k] += 1;
            if g[k] <= last[k] {
                break;
            }
            g[k] = first[k];
        }
    }
}

/// Bytes of one stored chunk (`extchunkshape` items) and of one block, for items of
/// `itemsize` bytes.
pub(crate) fn chunk_and_block_bytes(meta: &B2ndMeta, itemsize: usize) -> Result<(usize, usize)> {
    let bytes = |items: u64, what: &'static str| {
        usize::try_from(items)
            .ok()
            .and_then(|n| n.checked_mul(itemsize))
            .ok_or(Error::Overflow { what })
    };
    Ok((
        bytes(meta.chunk_items(), "b2nd chunk size")?,
        bytes(meta.block_items(), "b2nd block size")?,
    ))
}

/// Calls `f(block, lo, hi, block_origin)` for every block of chunk number `nchunk` that holds
/// items of the array: `block` is the block's byte range in the stored (block-major) chunk,
/// `[lo, hi)` the array items it holds and `block_origin` the array coordinates of its first
/// item (its padding lies outside `[lo, hi)`). Blocks wholly in the padding are skipped.
///
/// This is the one walk over the b2nd chunk layout that [`pack_chunk`] (C order → blocks) and
/// [`unpack_chunk`] (blocks → C order) share.
fn for_each_chunk_block(
    meta: &B2ndMeta,
    itemsize: usize,
    nchunk: u64,
    mut f: impl FnMut(core::ops::Range<usize>, &[u64], &[u64], &[u64]) -> Result<()>,
) -> Result<()> {
    let (_, block_bytes) = chunk_and_block_bytes(meta, itemsize)?;
    let ccoord = unravel(nchunk, &meta.chunks_per_dim());
    let corigin: Vec<u64> = ccoord
        .iter()
        .zip(&meta.chunkshape)
        .map(|(&c, &s)| c * s)
        .collect();
    let cstop: Vec<u64> = corigin
        .iter()
        .zip(&meta.chunkshape)
        .zip(&meta.shape)
        .map(|((&o, &c), &s)| (o + c).min(s))
        .collect();
    let bpc = meta.blocks_per_chunk_dim();
    let zero = vec![0u64; meta.ndim()];
    // Blocks are addressed relative to the chunk origin.
    let rel_stop: Vec<u64> = cstop.iter().zip(&corigin).map(|(&s, &o)| s - o).collect();
    for_each_cell(&zero, &rel_stop, &meta.blockshape, |bcoord, lo, hi| {
        let bidx = usize::try_from(linear(bcoord, &zero, &bpc)).map_err(|_| Error::Overflow {
            what: "b2nd block index",
        })?;
        let abs_lo: Vec<u64> = lo.iter().zip(&corigin).map(|(&l, &o)| l + o).collect();
        let abs_hi: Vec<u64> = hi.iter().zip(&corigin).map(|(&h, &o)| h + o).collect();
        let abs_borigin: Vec<u64> = bcoord
            .iter()
            .zip(&meta.blockshape)
            .zip(&corigin)
            .map(|((&b, &s), &o)| b * s + o)
            .collect();
        let start = bidx.checked_mul(block_bytes).ok_or(Error::Overflow {
            what: "b2nd block offset",
        })?;
        f(
            start..start.saturating_add(block_bytes),
            &abs_lo,
            &abs_hi,
            &abs_borigin,
        )
    })
}

/// Builds chunk number `nchunk` of an array (C-order `data`, `itemsize` bytes per item):
/// `chunk_items` items in block-major order, padding left zero.
pub(crate) fn pack_chunk(
    meta: &B2ndMeta,
    data: &[u8],
    itemsize: usize,
    nchunk: u64,
) -> Result<Vec<u8>> {
    let (chunk_bytes, _) = chunk_and_block_bytes(meta, itemsize)?;
    let mut out = vec![0u8; chunk_bytes];
    let zero = vec![0u64; meta.ndim()];
    for_each_chunk_block(meta, itemsize, nchunk, |range, lo, hi, borigin| {
        let block = out.get_mut(range).ok_or(Error::Overflow {
            what: "b2nd block range",
        })?;
        copy_box(
            lo,
            hi,
            data,
            &zero,
            &meta.shape,
            block,
            borigin,
            &meta.blockshape,
            itemsize,
        )
    })?;
    Ok(out)
}

/// The inverse of [`pack_chunk`]: copies the items of chunk number `nchunk`, stored
/// block-major in `chunk` (`chunk_items` items), to their places in `data`, the C-order array
/// (`itemsize` bytes per item); the padding is dropped and the rest of `data` left as it is.
pub(crate) fn unpack_chunk(
    meta: &B2ndMeta,
    chunk: &[u8],
    itemsize: usize,
    nchunk: u64,
    data: &mut [u8],
) -> Result<()> {
    let zero = vec![0u64; meta.ndim()];
    for_each_chunk_block(meta, itemsize, nchunk, |range, lo, hi, borigin| {
        let block = chunk.get(range).ok_or(Error::Overflow {
            what: "b2nd block range",
        })?;
        copy_box(
            lo,
            hi,
            block,
            borigin,
            &meta.blockshape,
            data,
            &zero,
            &meta.shape,
            itemsize,
        )
    })
}

/// Whether a chunk's block-major order is its C order: the blocks tile the chunk (no padding)
/// as consecutive C-order slabs — every block extent is 1 up to some dimension `k`, divides the
/// chunk there, and is the whole chunk after it (e.g. `blockshape == chunkshape`).
pub(crate) fn blocks_are_c_order(chunkshape: &[u64], blockshape: &[u64]) -> bool {
    if chunkshape.len() != blockshape.len() {
        return false;
    }
    // The first dimension whose block extent is not 1 (the last one if all are).
    let k = blockshape
        .iter()
        .position(|&b| b != 1)
        .unwrap_or(blockshape.len().saturating_sub(1));
    match (chunkshape.get(k), blockshape.get(k)) {
        (Some(&c), Some(&b)) => {
            b != 0 && c % b == 0 && chunkshape.get(k + 1..) == blockshape.get(k + 1..)
        }
        // No dimensions: one item.
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const F4: &str = "97000292d30000000000000014d3000000000000001e92d200000008d20000001092d200000004d20000000800db000000033c6634";

    #[test]
    fn parses_fixture_meta_and_reserialises_byte_exact() {
        let raw = hex::decode(F4).unwrap();
        let m = B2ndMeta::parse(&raw).unwrap();
        assert_eq!(m.shape, [20, 30]);
        assert_eq!(m.chunkshape, [8, 16]);
        assert_eq!(m.blockshape, [4, 8]);
        assert_eq!(m.dtype, "<f4");
        assert_eq!(m.extchunkshape(), [8, 16]);
        assert_eq!(m.chunks_per_dim(), [3, 2]);
        assert_eq!(m.to_bytes().unwrap(), raw);
    }

    #[test]
    fn sixteen_dims_use_0xa0_markers() {
        let m = B2ndMeta::new(&[2; 16], &[1; 16], &[1; 16], "|u1").unwrap();
        let raw = m.to_bytes().unwrap();
        assert_eq!(raw[3], 0xa0);
        assert_eq!(B2ndMeta::parse(&raw).unwrap(), m);
        assert!(B2ndMeta::new(&[2; 17], &[1; 17], &[1; 17], "|u1").is_err());
    }

    #[test]
    fn missing_dtype_defaults_to_u1() {
        let raw = hex::decode(F4).unwrap();
        let cut = raw.len() - 9; // drop format byte + db + len + "<f4"
        let m = B2ndMeta::parse(&raw[..cut]).unwrap();
        assert_eq!(m.dtype, DEFAULT_DTYPE);
    }

    #[test]
    fn pack_chunk_block_major_with_padding() {
        // 3x5 array, chunks 2x4, blocks 1x3 -> extchunk 2x6, 2x2 blocks per chunk.
        let m = B2ndMeta::new(&[3, 5], &[2, 4], &[1, 3], "|u1").unwrap();
        let data: Vec<u8> = (0..15).collect();
        let c0 = pack_chunk(&m, &data, 1, 0).unwrap();
        // block (0,0): row0 cols0-2; block (0,1): row0 cols 3-5 (col 4 in chunk 0? no: chunk 0 cols 0..4)
        assert_eq!(c0, [0, 1, 2, 3, 0, 0, 5, 6, 7, 8, 0, 0]);
        let c1 = pack_chunk(&m, &data, 1, 1).unwrap();
        assert_eq!(c1, [4, 0, 0, 0, 0, 0, 9, 0, 0, 0, 0, 0]);
        let c3 = pack_chunk(&m, &data, 1, 3).unwrap();
        assert_eq!(c3, [14, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
    }

    #[test]
    fn unpack_chunk_inverts_pack_chunk() {
        // Blocks that do not divide the chunk (padding inside every chunk) and edge chunks.
        let m = B2ndMeta::new(&[7, 9, 11], &[4, 5, 6], &[2, 3, 4], "<u2").unwrap();
        let data: Vec<u8> = (0..7 * 9 * 11 * 2u32).map(|i| (i % 251) as u8).collect();
        let mut back = vec![0u8; data.len()];
        for c in 0..m.nchunks() {
            let packed = pack_chunk(&m, &data, 2, c).unwrap();
            assert_eq!(packed.len(), 4 * 6 * 8 * 2);
            unpack_chunk(&m, &packed, 2, c, &mut back).unwrap();
        }
        assert_eq!(back, data);
        // A short chunk is an error, not a panic.
        assert!(unpack_chunk(&m, &[0; 10], 2, 0, &mut back).is_err());
    }

    #[test]
    fn c_order_blocks() {
        for (c, b, want) in [
            (&[4u64, 10][..], &[4u64, 10][..], true),
            (&[4, 10], &[2, 10], true),
            (&[4, 10], &[1, 5], true),
            (&[4, 10], &[1, 3], false),
            (&[4, 10], &[2, 5], false),
            (&[3, 4, 10], &[1, 2, 10], true),
            (&[3, 4, 10], &[1, 1, 1], true),
            (&[3, 4, 10], &[3, 3, 10], false),
            (&[3], &[2], false),
            (&[], &[], true),
            (&[3], &[3, 1], false),
        ] {
            assert_eq!(blocks_are_c_order(c, b), want, "{c:?} {b:?}");
            if want && !c.is_empty() {
                // Then packing a one-chunk array is the identity.
                let m = B2ndMeta::new(c, c, b, "|u1").unwrap();
                let data: Vec<u8> = (0..m.items()).map(|i| i.to_le_bytes()[0]).collect();
                assert_eq!(pack_chunk(&m, &data, 1, 0).unwrap(), data);
            }
        }
    }
}
