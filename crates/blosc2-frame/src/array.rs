//! b2nd arrays: N-d region reads touching only the chunks and blocks that intersect, and
//! building a b2nd frame from a C-order buffer.

use std::borrow::Cow;
use std::path::Path;

use blosc_chunk::CParams;

use crate::b2nd::B2ND_METALAYER;
use crate::b2nd::{B2ndMeta, copy_box, for_each_cell, linear, pack_chunk, product};
use crate::bytes::to_usize;
use crate::element::{Element, check_dtype, to_le_bytes, to_native};
use crate::error::{Error, Result};
use crate::limits::Limits;
use crate::offsets::ChunkLocation;
use crate::reader::Frame;
use crate::writer::{FrameParams, FrameWriter};

/// A frame holding a b2nd (N-dimensional) array.
#[derive(Debug)]
pub struct B2ndArray<'a> {
    frame: Frame<'a>,
    meta: B2ndMeta,
    itemsize: usize,
}

impl<'a> B2ndArray<'a> {
    /// Interprets an opened frame as a b2nd array.
    ///
    /// The item size is `chunksize / prod(extchunkshape)` (this also covers structured dtypes
    /// wider than 255 bytes, for which the frame's typesize is 1).
    ///
    /// # Errors
    /// [`Error::NotB2nd`], errors parsing the metalayer, or [`Error::Invalid`] when the frame's
    /// chunk count or chunk size disagree with the metalayer.
    pub fn new(frame: Frame<'a>) -> Result<Self> {
        let raw = frame.metalayer(B2ND_METALAYER).ok_or(Error::NotB2nd)?;
        let meta = B2ndMeta::parse(raw)?;
        if meta.nchunks() != frame.nchunks() as u64 {
            return Err(Error::invalid(
                "b2nd chunk count",
                0,
                format!(
                    "shape {:?} / chunks {:?} needs {} chunks, the frame has {}",
                    meta.shape,
                    meta.chunkshape,
                    meta.nchunks(),
                    frame.nchunks()
                ),
            ));
        }
        let h = frame.header();
        let items = meta.chunk_items();
        let itemsize = if h.chunksize > 0 {
            let cs = u64::from(h.chunksize);
            if items == 0 || cs % items != 0 {
                return Err(Error::invalid(
                    "chunksize",
                    58,
                    format!("{cs} is not a whole number of {items}-item b2nd chunks"),
                ));
            }
            to_usize("itemsize", cs / items)?
        } else if frame.nchunks() == 0 {
            h.typesize as usize
        } else {
            // C-Blosc2 always gives b2nd frames a fixed chunksize; without one the metalayer's
            // shapes could claim any chunk size.
            return Err(Error::invalid(
                "chunksize",
                58,
                "0 (variable) in a b2nd frame with chunks",
            ));
        };
        Ok(Self {
            frame,
            meta,
            itemsize,
        })
    }

    /// Opens a `.b2nd` file (or sparse directory).
    ///
    /// # Errors
    /// As [`Frame::open`] and [`B2ndArray::new`].
    pub fn open(path: impl AsRef<Path>) -> Result<B2ndArray<'static>> {
        B2ndArray::new(Frame::open(path)?)
    }

    /// Opens with explicit limits.
    ///
    /// # Errors
    /// As [`Frame::open_with`] and [`B2ndArray::new`].
    pub fn open_with(path: impl AsRef<Path>, limits: &Limits) -> Result<B2ndArray<'static>> {
        B2ndArray::new(Frame::open_with(path, limits)?)
    }

    /// Parses an in-memory `.b2nd` frame.
    ///
    /// # Errors
    /// As [`Frame::from_slice`] and [`B2ndArray::new`].
    pub fn from_slice(buf: &'a [u8]) -> Result<Self> {
        Self::new(Frame::from_slice(buf)?)
    }

    /// The metalayer: shape, chunk and block shapes, dtype.
    #[must_use]
    pub fn meta(&self) -> &B2ndMeta {
        &self.meta
    }

    /// Array shape.
    #[must_use]
    pub fn shape(&self) -> &[u64] {
        &self.meta.shape
    }

    /// dtype string (NumPy `dtype.str`, e.g. `<f4`).
    #[must_use]
    pub fn dtype(&self) -> &str {
        &self.meta.dtype
    }

    /// Bytes per item.
    #[must_use]
    pub fn itemsize(&self) -> usize {
        self.itemsize
    }

    /// The underlying frame.
    #[must_use]
    pub fn frame(&self) -> &Frame<'a> {
        &self.frame
    }

    /// Gives the frame back.
    #[must_use]
    pub fn into_frame(self) -> Frame<'a> {
        self.frame
    }

    /// The whole array in C order.
    ///
    /// # Errors
    /// As [`B2ndArray::read_region`].
    pub fn read_all(&self) -> Result<Vec<u8>> {
        let zero = vec![0; self.meta.ndim()];
        self.read_region(&zero, &self.meta.shape.clone())
    }

    /// The hyper-slab `start..stop` (per dimension, `stop` exclusive) as C-order bytes.
    ///
    /// Only chunks intersecting the region are read; inside a chunk that is only partly
    /// covered, only the Blosc blocks (= b2nd blocks) intersecting it are decoded.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a region outside the array or with the wrong number of
    /// dimensions, [`Error::LimitExceeded`] beyond [`Limits::max_output_bytes`], chunk errors.
    pub fn read_region(&self, start: &[u64], stop: &[u64]) -> Result<Vec<u8>> {
        let (_, total) = self.region(start, stop)?;
        let mut out = vec![0u8; total];
        self.fill_region(start, stop, &mut out)?;
        Ok(out)
    }

    /// The whole array as items of type `T` in C order (see [`B2ndArray::read_region_as`]).
    ///
    /// # Errors
    /// As [`B2ndArray::read_region_as`].
    pub fn read_all_as<T: Element>(&self) -> Result<Vec<T>> {
        let zero = vec![0; self.meta.ndim()];
        self.read_region_as(&zero, &self.meta.shape)
    }

    /// The hyper-slab `start..stop` as items of type `T` in C order, in this machine's byte
    /// order (big-endian dtypes such as `>f8` are converted).
    ///
    /// `T` must match the array's dtype: kind (`u`, `i`, `f`) and size, e.g. `u16` for `<u2`
    /// or `>u2`, `f64` for `<f8`, `u8` for `|u1`.
    ///
    /// # Errors
    /// [`Error::DtypeMismatch`] if the dtype is not `T`'s, otherwise as
    /// [`B2ndArray::read_region`].
    pub fn read_region_as<T: Element>(&self, start: &[u64], stop: &[u64]) -> Result<Vec<T>> {
        let (items, _) = self.region(start, stop)?;
        let swap = check_dtype::<T>(&self.meta.dtype, self.itemsize)?;
        let mut out = vec![T::default(); items];
        self.fill_region(start, stop, bytemuck::cast_slice_mut(&mut out))?;
        to_native(&mut out, swap);
        Ok(out)
    }

    /// Like [`B2ndArray::read_region_as`], into `out`, which must hold exactly the region's
    /// number of items (no allocation for the output).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if `out` has the wrong length, otherwise as
    /// [`B2ndArray::read_region_as`].
    pub fn read_region_into<T: Element>(
        &self,
        start: &[u64],
        stop: &[u64],
        out: &mut [T],
    ) -> Result<()> {
        let (items, _) = self.region(start, stop)?;
        let swap = check_dtype::<T>(&self.meta.dtype, self.itemsize)?;
        if out.len() != items {
            return Err(Error::InvalidArgument(format!(
                "output holds {} items, the region has {items}",
                out.len()
            )));
        }
        self.fill_region(start, stop, bytemuck::cast_slice_mut(out))?;
        to_native(out, swap);
        Ok(())
    }

    /// Checks a region; returns its number of items and bytes (bounded by the limits).
    pub(crate) fn region(&self, start: &[u64], stop: &[u64]) -> Result<(usize, usize)> {
        let m = &self.meta;
        let n = m.ndim();
        if start.len() != n || stop.len() != n {
            return Err(Error::InvalidArgument(format!(
                "region has {} / {} coordinates, the array has {n} dimensions",
                start.len(),
                stop.len()
            )));
        }
        if (0..n).any(|i| start[i] > stop[i] || stop[i] > m.shape[i]) {
            return Err(Error::InvalidArgument(format!(
                "region {start:?}..{stop:?} outside shape {:?}",
                m.shape
            )));
        }
        let rshape: Vec<u64> = start.iter().zip(stop).map(|(a, b)| b - a).collect();
        let items = product(&rshape)?;
        let total = items
            .checked_mul(self.itemsize as u64)
            .ok_or(Error::Overflow {
                what: "region size",
            })?;
        let total = self.frame.limits().check_output(total)?;
        Ok((to_usize("region items", items)?, total))
    }

    /// Decodes a region checked by [`B2ndArray::region`] into `out` (exactly its bytes),
    /// reading stored chunks from the frame.
    fn fill_region(&self, start: &[u64], stop: &[u64], out: &mut [u8]) -> Result<()> {
        self.fill_region_with(start, stop, out, |ci| {
            self.frame.chunk(ci).map(RegionChunk::Stored)
        })
    }

    /// The chunks a region checked by [`B2ndArray::region`] touches, in C order, each with
    /// whether all of its blocks are touched (then it is decoded whole).
    #[cfg_attr(not(feature = "object_store"), allow(dead_code))]
    pub(crate) fn region_chunks(&self, start: &[u64], stop: &[u64]) -> Result<Vec<(usize, bool)>> {
        let m = &self.meta;
        let mut v = Vec::new();
        if start.iter().zip(stop).any(|(a, b)| a >= b) {
            return Ok(v);
        }
        let blocks_in_chunk = product(&m.blocks_per_chunk_dim())?;
        for_each_cell(start, stop, &m.chunkshape, |ccoord, clo, chi| {
            let t = self.touch(ccoord, clo, chi)?;
            v.push((t.ci, t.blocks == blocks_in_chunk));
            Ok(())
        })?;
        Ok(v)
    }

    /// Where chunk `ccoord` sits and which of its blocks the box `[clo, chi)` covers.
    fn touch(&self, ccoord: &[u64], clo: &[u64], chi: &[u64]) -> Result<Touch> {
        let m = &self.meta;
        let zero = vec![0u64; m.ndim()];
        let ci = to_usize("chunk index", linear(ccoord, &zero, &m.chunks_per_dim()))?;
        let corigin: Vec<u64> = ccoord
            .iter()
            .zip(&m.chunkshape)
            .map(|(&c, &s)| c * s)
            .collect();
        let rlo: Vec<u64> = clo.iter().zip(&corigin).map(|(&l, &o)| l - o).collect();
        let rhi: Vec<u64> = chi.iter().zip(&corigin).map(|(&h, &o)| h - o).collect();
        let blocks: u64 = rlo
            .iter()
            .zip(&rhi)
            .zip(&m.blockshape)
            .map(|((&l, &h), &b)| (h - 1) / b - l / b + 1)
            .product();
        Ok(Touch {
            ci,
            corigin,
            rlo,
            rhi,
            blocks,
        })
    }

    /// Decodes a region checked by [`B2ndArray::region`] into `out` (exactly its bytes);
    /// `chunk(ci)` supplies stored chunk `ci`, compressed or already decoded. Shared by the
    /// local reader and the remote one (which fetches the chunks first).
    pub(crate) fn fill_region_with<'s>(
        &self,
        start: &[u64],
        stop: &[u64],
        out: &mut [u8],
        mut chunk: impl FnMut(usize) -> Result<RegionChunk<'s>>,
    ) -> Result<()> {
        let m = &self.meta;
        let n = m.ndim();
        let rshape: Vec<u64> = start.iter().zip(stop).map(|(a, b)| b - a).collect();
        if out.is_empty() {
            return Ok(());
        }
        let bpc = m.blocks_per_chunk_dim();
        let blocks_in_chunk = product(&bpc)?;
        let block_bytes = to_usize("block size", m.block_items())?
            .checked_mul(self.itemsize)
            .ok_or(Error::Overflow { what: "block size" })?;
        let chunk_bytes = to_usize("chunk size", m.chunk_items())?
            .checked_mul(self.itemsize)
            .ok_or(Error::Overflow { what: "chunk size" })?;
        let zero = vec![0u64; n];
        let mut block_buf = vec![0u8; block_bytes];
        let mut chunk_buf = Vec::new();
        for_each_cell(start, stop, &m.chunkshape, |ccoord, clo, chi| {
            let t = self.touch(ccoord, clo, chi)?;
            let ci = t.ci;
            let have = self.frame.chunk_nbytes(ci)?;
            if have != chunk_bytes {
                return Err(Error::invalid(
                    "chunk nbytes",
                    0,
                    format!("b2nd chunk {ci} holds {have} bytes, expected {chunk_bytes}"),
                ));
            }
            let loc = self.frame.index().get(ci).copied();
            // A partly covered stored chunk is read once; only its touched blocks are decoded.
            let src = match loc {
                Some(ChunkLocation::Stored(_)) => match chunk(ci)? {
                    RegionChunk::Decoded(d) if d.len() == chunk_bytes => Src::Decoded(d),
                    RegionChunk::Decoded(d) => {
                        return Err(Error::invalid(
                            "chunk nbytes",
                            0,
                            format!(
                                "b2nd chunk {ci} decoded to {} bytes, expected {chunk_bytes}",
                                d.len()
                            ),
                        ));
                    }
                    RegionChunk::Stored(c) if t.blocks == blocks_in_chunk => {
                        chunk_buf.resize(chunk_bytes, 0);
                        self.frame.decompress_stored_into(ci, &c, &mut chunk_buf)?;
                        Src::Buf
                    }
                    RegionChunk::Stored(c) => Src::Partial(c),
                },
                _ => {
                    chunk_buf.resize(chunk_bytes, 0);
                    self.frame.decompress_chunk_into(ci, &mut chunk_buf)?;
                    Src::Buf
                }
            };
            let corigin = &t.corigin;
            for_each_cell(&t.rlo, &t.rhi, &m.blockshape, |bcoord, blo, bhi| {
                let bi = to_usize("block index", linear(bcoord, &zero, &bpc))?;
                let boff = bi.checked_mul(block_bytes).ok_or(Error::Overflow {
                    what: "block offset",
                })?;
                let whole: &[u8] = match &src {
                    Src::Buf => &chunk_buf,
                    Src::Decoded(d) => d,
                    Src::Partial(_) => &[],
                };
                let src: &[u8] = match &src {
                    Src::Partial(c) => {
                        self.frame.range_of_chunk(ci, c, boff, &mut block_buf)?;
                        &block_buf
                    }
                    _ => whole.get(boff..boff + block_bytes).ok_or(Error::Overflow {
                        what: "block range",
                    })?,
                };
                let borigin: Vec<u64> = bcoord
                    .iter()
                    .zip(&m.blockshape)
                    .zip(corigin)
                    .map(|((&b, &s), &o)| o + b * s)
                    .collect();
                let alo: Vec<u64> = blo.iter().zip(corigin).map(|(&l, &o)| l + o).collect();
                let ahi: Vec<u64> = bhi.iter().zip(corigin).map(|(&h, &o)| h + o).collect();
                copy_box(
                    &alo,
                    &ahi,
                    src,
                    &borigin,
                    &m.blockshape,
                    out,
                    start,
                    &rshape,
                    self.itemsize,
                )
            })
        })
    }
}

/// Stored chunk `ci` for [`B2ndArray::fill_region_with`].
#[derive(Debug)]
pub(crate) enum RegionChunk<'s> {
    /// The compressed bytes (decoded whole, or only the touched blocks).
    Stored(Cow<'s, [u8]>),
    /// The whole chunk, already decompressed.
    #[cfg_attr(not(feature = "object_store"), allow(dead_code))]
    Decoded(&'s [u8]),
}

/// Where a chunk's blocks come from during region assembly.
enum Src<'s> {
    /// Decoded into the shared chunk buffer.
    Buf,
    /// Decoded by the caller.
    Decoded(&'s [u8]),
    /// Compressed; touched blocks are decoded one by one.
    Partial(Cow<'s, [u8]>),
}

/// A chunk's position and the part of it a region covers.
struct Touch {
    ci: usize,
    corigin: Vec<u64>,
    rlo: Vec<u64>,
    rhi: Vec<u64>,
    /// Blocks of the chunk the region touches.
    blocks: u64,
}

/// Builds a b2nd frame from `data`, a C-order buffer of `meta.shape` items of `itemsize` bytes.
///
/// Chunks are laid out block-major with zero padding (like C-Blosc2) and compressed with
/// `cparams`, whose `typesize` and `blocksize` are set to the item size and the block's byte
/// size (so Blosc blocks are b2nd blocks). Add vlmetalayers or write it with the returned
/// [`FrameWriter`].
///
/// # Errors
/// [`Error::InvalidArgument`] if `data` has the wrong length or `itemsize` is 0; chunk errors.
pub fn b2nd_frame(
    data: &[u8],
    meta: &B2ndMeta,
    itemsize: usize,
    cparams: &CParams,
) -> Result<FrameWriter> {
    if itemsize == 0 {
        return Err(Error::InvalidArgument("itemsize must be at least 1".into()));
    }
    let expected = product(&meta.shape)?
        .checked_mul(itemsize as u64)
        .ok_or(Error::Overflow { what: "array size" })?;
    if data.len() as u64 != expected {
        return Err(Error::InvalidArgument(format!(
            "data has {} bytes, shape {:?} x {itemsize} needs {expected}",
            data.len(),
            meta.shape
        )));
    }
    let chunk_bytes = to_usize("chunk size", meta.chunk_items())?
        .checked_mul(itemsize)
        .ok_or(Error::Overflow { what: "chunk size" })?;
    let block_bytes = to_usize("block size", meta.block_items())?
        .checked_mul(itemsize)
        .ok_or(Error::Overflow { what: "block size" })?;
    let mut cp = cparams.clone();
    cp.typesize = itemsize;
    cp.blocksize = block_bytes;
    // The plugin filters NDCELL/NDMEAN and the NDLZ codec work on the b2nd block.
    cp.blockshape = Some(
        blosc_chunk::BlockShape::new(&meta.blockshape).map_err(|source| Error::Chunk {
            site: "b2nd block shape".into(),
            source,
        })?,
    );
    let mut w = FrameWriter::new(FrameParams::new(cp, chunk_bytes))?;
    w.add_metalayer(B2ND_METALAYER, &meta.to_bytes()?)?;
    for c in 0..meta.nchunks() {
        let chunk = pack_chunk(meta, data, itemsize, c)?;
        w.append_buffer(&chunk)?;
    }
    Ok(w)
}

/// Builds a b2nd frame from typed items in C order: the dtype is [`Element::DTYPE`]
/// (little-endian, e.g. `<f8`), the bytes are written little-endian on every machine.
///
/// ```
/// use blosc2_frame::{B2ndArray, b2nd_frame_from_slice, blosc_chunk::CParams};
///
/// let data: Vec<f64> = (0..12).map(f64::from).collect();
/// let w = b2nd_frame_from_slice(&data, &[3, 4], &[2, 2], &[1, 2], &CParams::default())?;
/// let bytes = w.to_bytes()?;
/// let a = B2ndArray::from_slice(&bytes)?;
/// assert_eq!(a.dtype(), "<f8");
/// assert_eq!(a.read_region_as::<f64>(&[1, 1], &[3, 3])?, [5.0, 6.0, 9.0, 10.0]);
/// # Ok::<(), blosc2_frame::Error>(())
/// ```
///
/// # Errors
/// [`Error::InvalidArgument`] for inconsistent shapes (see [`B2ndMeta::new`]) or a `data`
/// length other than the product of `shape`; chunk errors.
pub fn b2nd_frame_from_slice<T: Element>(
    data: &[T],
    shape: &[u64],
    chunkshape: &[u64],
    blockshape: &[u64],
    cparams: &CParams,
) -> Result<FrameWriter> {
    let meta = B2ndMeta::new(shape, chunkshape, blockshape, T::DTYPE)?;
    b2nd_frame(
        &to_le_bytes(data.iter().copied()),
        &meta,
        size_of::<T>(),
        cparams,
    )
}

/// An all-zero b2nd array (python-blosc2's `blosc2.zeros`): every chunk is a zero run stored as
/// a special offset, nothing is compressed.
///
/// # Errors
/// [`Error::InvalidArgument`] if `itemsize` is 0.
pub fn b2nd_zeros(meta: &B2ndMeta, itemsize: usize, cparams: &CParams) -> Result<FrameWriter> {
    if itemsize == 0 {
        return Err(Error::InvalidArgument("itemsize must be at least 1".into()));
    }
    let chunk_bytes = to_usize("chunk size", meta.chunk_items())?
        .checked_mul(itemsize)
        .ok_or(Error::Overflow { what: "chunk size" })?;
    let block_bytes = to_usize("block size", meta.block_items())?
        .checked_mul(itemsize)
        .ok_or(Error::Overflow { what: "block size" })?;
    let mut cp = cparams.clone();
    cp.typesize = itemsize;
    cp.blocksize = block_bytes;
    // The plugin filters NDCELL/NDMEAN and the NDLZ codec work on the b2nd block.
    cp.blockshape = Some(
        blosc_chunk::BlockShape::new(&meta.blockshape).map_err(|source| Error::Chunk {
            site: "b2nd block shape".into(),
            source,
        })?,
    );
    let mut w = FrameWriter::new(FrameParams::new(cp, chunk_bytes))?;
    w.add_metalayer(B2ND_METALAYER, &meta.to_bytes()?)?;
    let items = meta
        .nchunks()
        .checked_mul(meta.chunk_items())
        .ok_or(Error::Overflow { what: "array size" })?;
    w.fill_special(items, &crate::writer::Fill::Zeros)?;
    Ok(w)
}
