//! NDCELL (filter 32) and NDMEAN (filter 33): the items of a b2nd block regrouped cell by cell.
//!
//! The block (shape `b`, C order) is cut into cells of shape `c` (cells at the upper edges are
//! cut short). Cells are visited in C order of their grid, and the items of a cell are written
//! row by row (C order inside the cell). NDCELL stores the items in that order; NDMEAN stores,
//! for each cell, its mean repeated once per item (lossy; float32/float64 only). Decoding both
//! scatters the stored items back to their block positions.
//!
//! NDCELL: `c[i] = meta` in every dimension. NDMEAN: `c[i] = min(meta, b[i])`. Both compute the
//! block offset of a cell's first item as `Σ ii[i] · c[0] · stride[i]` (`ii` = the cell's grid
//! index, `stride[i]` = product of `b[i+1..]`): with `c[0]` rather than `c[i]`, which only
//! matters for NDMEAN when `b[0] < meta <= b[i]` for some other dimension; C-Blosc2 then cannot
//! decode its own chunk, and neither can we (the same end check fails).

use super::{BlockShape, MAX_CELL_DIM as MAX_DIM, geometry};
use crate::error::{Error, Result};

/// Which of the two filters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    NdCell,
    NdMean,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Self::NdCell => "ndcell",
            Self::NdMean => "ndmean",
        }
    }
}

/// The resolved cell geometry of one block.
struct Cells {
    ndim: usize,
    b: [usize; MAX_DIM],
    c: [usize; MAX_DIM],
    /// Cells per dimension.
    grid: [usize; MAX_DIM],
    /// Items per step of dimension `i` inside the block.
    stride: [usize; MAX_DIM],
    nitems: usize,
}

fn cells(kind: Kind, shape: &BlockShape, meta: u8, typesize: usize, len: usize) -> Result<Cells> {
    let name = kind.name();
    // C reads the meta as an `int8_t`: 0 divides by zero there and negative sizes make no sense.
    let m = usize::from(meta);
    if !(1..=127).contains(&m) {
        return Err(geometry(name, "cell size (filter meta) must be 1..=127"));
    }
    let ndim = shape.ndim();
    if ndim > MAX_DIM {
        // C's fixed arrays hold 8 dimensions.
        return Err(geometry(name, "at most 8 dimensions"));
    }
    let mut b = [1usize; MAX_DIM];
    let mut c = [1usize; MAX_DIM];
    let mut grid = [1usize; MAX_DIM];
    let mut stride = [1usize; MAX_DIM];
    for (i, &d) in shape.dims().iter().enumerate() {
        b[i] = d as usize;
        c[i] = match kind {
            Kind::NdCell => m,
            Kind::NdMean => m.min(b[i]),
        };
        grid[i] = b[i].div_ceil(c[i]);
    }
    for i in (0..ndim.saturating_sub(1)).rev() {
        stride[i] = stride[i + 1].checked_mul(b[i + 1]).ok_or(Error::Overflow {
            what: "block shape",
        })?;
    }
    let nitems = shape.items().ok_or(Error::Overflow {
        what: "block shape",
    })?;
    let blocksize = nitems.checked_mul(typesize).ok_or(Error::Overflow {
        what: "block shape",
    })?;
    if len != blocksize {
        return Err(geometry(
            name,
            "block length differs from the block shape x typesize",
        ));
    }
    let cell_items = match kind {
        Kind::NdCell => u32::try_from(ndim).ok().and_then(|n| m.checked_pow(n)),
        Kind::NdMean => Some(c[..ndim].iter().product()),
    };
    match cell_items.and_then(|n| n.checked_mul(typesize)) {
        Some(n) if n <= len => {}
        _ => return Err(geometry(name, "the block is smaller than one cell")),
    }
    Ok(Cells {
        ndim,
        b,
        c,
        grid,
        stride,
        nitems,
    })
}

/// Increments the C-order multi-index `ix` within `dims[..n]`; false once it wraps around.
fn next_index(ix: &mut [usize], dims: &[usize]) -> bool {
    for i in (0..ix.len()).rev() {
        ix[i] += 1;
        if ix[i] < dims[i] {
            return true;
        }
        ix[i] = 0;
    }
    false
}

impl Cells {
    /// Calls `row(first_item, items)` for every row of every cell, in storage order, then
    /// `cell_end()` after each cell; returns C's end value (the last row's first item plus the
    /// last cell's row length).
    fn walk(
        &self,
        mut row: impl FnMut(usize, usize) -> Result<()>,
        mut cell_end: impl FnMut() -> Result<()>,
    ) -> Result<usize> {
        let n = self.ndim;
        let mut ii = [0usize; MAX_DIM];
        let mut pad = [0usize; MAX_DIM];
        let mut last;
        loop {
            let mut orig = 0usize;
            for i in 0..n {
                orig = ii[i]
                    .checked_mul(self.c[0])
                    .and_then(|v| v.checked_mul(self.stride[i]))
                    .and_then(|v| v.checked_add(orig))
                    .ok_or(Error::Overflow {
                        what: "cell offset",
                    })?;
                pad[i] = if !self.b[i].is_multiple_of(self.c[i]) && ii[i] == self.grid[i] - 1 {
                    self.b[i] % self.c[i]
                } else {
                    self.c[i]
                };
            }
            let rowlen = pad[n - 1];
            let mut kk = [0usize; MAX_DIM];
            loop {
                let mut ind = orig;
                for (k, s) in kk[..n - 1].iter().zip(&self.stride) {
                    ind = k.checked_mul(*s).and_then(|v| v.checked_add(ind)).ok_or(
                        Error::Overflow {
                            what: "cell offset",
                        },
                    )?;
                }
                row(ind, rowlen)?;
                last = ind;
                if !next_index(&mut kk[..n - 1], &pad[..n - 1]) {
                    break;
                }
            }
            cell_end()?;
            if !next_index(&mut ii[..n], &self.grid[..n]) {
                break;
            }
        }
        Ok(last + pad[n - 1])
    }
}

/// The bytes of row `ind..ind + items` (items of `ts` bytes) inside a block of `len` bytes.
fn row_range(ind: usize, items: usize, ts: usize, len: usize) -> Option<core::ops::Range<usize>> {
    let a = ind.checked_mul(ts)?;
    let e = a.checked_add(items.checked_mul(ts)?)?;
    (e <= len).then_some(a..e)
}

/// Backward filter (both kinds): scatters `src` (cell order) into `dst` (block order).
pub(crate) fn decode(
    kind: Kind,
    shape: &BlockShape,
    meta: u8,
    typesize: usize,
    src: &[u8],
    dst: &mut [u8],
) -> Result<()> {
    let len = src.len();
    let g = cells(kind, shape, meta, typesize, len)?;
    let mut pos = 0usize;
    let end = g.walk(
        |ind, items| {
            let r = row_range(ind, items, typesize, len)
                .ok_or(geometry(kind.name(), "a cell row falls outside the block"))?;
            let n = r.len();
            let s = src.get(pos..pos + n).ok_or(geometry(
                kind.name(),
                "the cells hold more items than the block",
            ))?;
            dst[r].copy_from_slice(s);
            pos += n;
            Ok(())
        },
        || Ok(()),
    )?;
    if end != g.nitems {
        return Err(geometry(
            kind.name(),
            "the cells do not end at the end of the block (C-Blosc2 fails the same way)",
        ));
    }
    Ok(())
}

/// NDCELL forward filter: gathers `src` (block order) into `dst` (cell order).
pub(crate) fn encode_ndcell(
    shape: &BlockShape,
    meta: u8,
    typesize: usize,
    src: &[u8],
    dst: &mut [u8],
) -> Result<()> {
    let len = src.len();
    let g = cells(Kind::NdCell, shape, meta, typesize, len)?;
    let mut pos = 0usize;
    g.walk(
        |ind, items| {
            let r = row_range(ind, items, typesize, len)
                .ok_or(geometry("ndcell", "a cell row falls outside the block"))?;
            let n = r.len();
            let d = dst.get_mut(pos..pos + n).ok_or(geometry(
                "ndcell",
                "the cells hold more items than the block",
            ))?;
            d.copy_from_slice(&src[r]);
            pos += n;
            Ok(())
        },
        || Ok(()),
    )?;
    if pos != len {
        return Err(geometry("ndcell", "the cells do not cover the block"));
    }
    Ok(())
}

/// A float type NDMEAN averages in (C's `float` / `double` arithmetic, summed in row order).
trait Float: Copy {
    const SIZE: usize;
    fn zero() -> Self;
    fn load(b: &[u8]) -> Self;
    fn add(self, o: Self) -> Self;
    fn div_count(self, n: usize) -> Self;
    fn store(self, b: &mut [u8]);
}

impl Float for f32 {
    const SIZE: usize = 4;
    fn zero() -> Self {
        0.0
    }
    fn load(b: &[u8]) -> Self {
        f32::from_le_bytes([b[0], b[1], b[2], b[3]])
    }
    fn add(self, o: Self) -> Self {
        self + o
    }
    #[allow(
        clippy::cast_precision_loss,
        reason = "C divides by (float) cell_length"
    )]
    fn div_count(self, n: usize) -> Self {
        self / n as f32
    }
    fn store(self, b: &mut [u8]) {
        b.copy_from_slice(&self.to_le_bytes());
    }
}

impl Float for f64 {
    const SIZE: usize = 8;
    fn zero() -> Self {
        0.0
    }
    fn load(b: &[u8]) -> Self {
        let mut a = [0u8; 8];
        a.copy_from_slice(&b[..8]);
        f64::from_le_bytes(a)
    }
    fn add(self, o: Self) -> Self {
        self + o
    }
    #[allow(
        clippy::cast_precision_loss,
        reason = "C divides by (double) cell_length"
    )]
    fn div_count(self, n: usize) -> Self {
        self / n as f64
    }
    fn store(self, b: &mut [u8]) {
        b.copy_from_slice(&self.to_le_bytes());
    }
}

fn ndmean_fill<T: Float>(g: &Cells, src: &[u8], dst: &mut [u8]) -> Result<()> {
    let len = src.len();
    let mut pos = 0usize;
    // (running sum, items) of the current cell, shared by the two callbacks.
    let sum_ref = core::cell::Cell::new((T::zero(), 0usize));
    g.walk(
        |ind, items| {
            let r = row_range(ind, items, T::SIZE, len)
                .ok_or(geometry("ndmean", "a cell row falls outside the block"))?;
            let (mut s, mut n) = sum_ref.get();
            for v in src[r].chunks_exact(T::SIZE) {
                s = s.add(T::load(v));
            }
            n += items;
            sum_ref.set((s, n));
            Ok(())
        },
        || {
            let (s, n) = sum_ref.replace((T::zero(), 0));
            let mean = s.div_count(n);
            let bytes = n
                .checked_mul(T::SIZE)
                .ok_or(Error::Overflow { what: "cell size" })?;
            let d = dst.get_mut(pos..pos + bytes).ok_or(geometry(
                "ndmean",
                "the cells hold more items than the block",
            ))?;
            for o in d.chunks_exact_mut(T::SIZE) {
                mean.store(o);
            }
            pos += bytes;
            Ok(())
        },
    )?;
    if pos != len {
        return Err(geometry("ndmean", "the cells do not cover the block"));
    }
    Ok(())
}

/// NDMEAN forward filter: every cell replaced by its mean, in cell order.
pub(crate) fn encode_ndmean(
    shape: &BlockShape,
    meta: u8,
    typesize: usize,
    src: &[u8],
    dst: &mut [u8],
) -> Result<()> {
    if !matches!(typesize, 4 | 8) {
        return Err(geometry(
            "ndmean",
            "typesize must be 4 (float32) or 8 (float64)",
        ));
    }
    let g = cells(Kind::NdMean, shape, meta, typesize, src.len())?;
    if typesize == 4 {
        ndmean_fill::<f32>(&g, src, dst)
    } else {
        ndmean_fill::<f64>(&g, src, dst)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ndcell_round_trip_with_edge_cells() {
        let shape = BlockShape::new(&[5, 7, 3]).unwrap();
        let src: Vec<u8> = (0..105u32 * 2).map(|i| (i % 251) as u8).collect();
        let mut f = vec![0; src.len()];
        let mut back = vec![0; src.len()];
        encode_ndcell(&shape, 2, 2, &src, &mut f).unwrap();
        assert_ne!(f, src);
        decode(Kind::NdCell, &shape, 2, 2, &f, &mut back).unwrap();
        assert_eq!(back, src);
    }

    #[test]
    fn ndcell_1d_is_the_identity() {
        let shape = BlockShape::new(&[10]).unwrap();
        let src: Vec<u8> = (0..10).collect();
        let mut f = vec![0; 10];
        encode_ndcell(&shape, 3, 1, &src, &mut f).unwrap();
        assert_eq!(f, src);
    }
}
