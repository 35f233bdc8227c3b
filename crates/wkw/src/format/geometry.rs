//! Box arithmetic: boxes in absolute voxel coordinates, files and blocks they touch.

use crate::error::{Error, Result};

/// A half-open box `[min, max)` in absolute voxel coordinates (u64 so `max` may be 2³²).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct VBox {
    pub(crate) min: [u64; 3],
    pub(crate) max: [u64; 3],
}

impl VBox {
    /// The box at `offset` of `shape`; its end must not exceed 2³² on any axis.
    pub(crate) fn new(offset: [u32; 3], shape: [u32; 3]) -> Result<Self> {
        let min = offset.map(u64::from);
        let mut max = [0u64; 3];
        for a in 0..3 {
            max[a] = min[a] + u64::from(shape[a]);
            if max[a] > 1 << 32 {
                return Err(Error::BoxOutOfRange { offset, shape });
            }
        }
        Ok(Self { min, max })
    }

    pub(crate) fn is_empty(&self) -> bool {
        (0..3).any(|a| self.min[a] >= self.max[a])
    }

    pub(crate) fn intersect(&self, o: &Self) -> Self {
        let mut r = *self;
        for a in 0..3 {
            r.min[a] = r.min[a].max(o.min[a]);
            r.max[a] = r.max[a].min(o.max[a]).max(r.min[a]);
        }
        r
    }

    /// The aligned cube of side `2^log2` with index `idx` (in units of the cube side).
    pub(crate) fn cube(idx: [u32; 3], log2: u32) -> Self {
        let min = idx.map(|i| u64::from(i) << log2);
        Self {
            min,
            max: min.map(|m| m + (1 << log2)),
        }
    }

    pub(crate) fn extent(&self) -> [usize; 3] {
        // Extents of boxes inside a u32 request or a block: ≤ 2³², so usize on 64-bit targets;
        // saturate elsewhere (the copy kernels then copy nothing out of range).
        [0, 1, 2].map(|a| usize::try_from(self.max[a] - self.min[a]).unwrap_or(usize::MAX))
    }

    pub(crate) fn covers(&self, inner: &Self) -> bool {
        (0..3).all(|a| self.min[a] <= inner.min[a] && inner.max[a] <= self.max[a])
    }

    /// Indices (along each axis) of the aligned cubes of side `2^log2` touched by the box:
    /// `[first, last]` inclusive. The box must not be empty.
    pub(crate) fn cube_range(&self, log2: u32) -> ([u32; 3], [u32; 3]) {
        let lo = self
            .min
            .map(|m| u32::try_from(m >> log2).unwrap_or(u32::MAX));
        let hi = self
            .max
            .map(|m| u32::try_from((m.saturating_sub(1)) >> log2).unwrap_or(u32::MAX));
        (lo, hi)
    }
}

/// Byte offset of `p` relative to `origin` with byte strides of (x, y, z) (`None` if `p` lies
/// below `origin` or the offset overflows).
pub(crate) fn offset_of(p: [u64; 3], origin: [u64; 3], strides: [usize; 3]) -> Option<usize> {
    let mut off = 0usize;
    for a in 0..3 {
        let d = usize::try_from(p[a].checked_sub(origin[a])?).ok()?;
        off = off.checked_add(d.checked_mul(strides[a])?)?;
    }
    Some(off)
}

/// [`offset_of`] as a `Result` (an internal inconsistency, never expected).
pub(crate) fn try_offset_of(p: [u64; 3], origin: [u64; 3], strides: [usize; 3]) -> Result<usize> {
    offset_of(p, origin, strides)
        .ok_or_else(|| Error::internal(format!("offset of {p:?} from {origin:?} overflows")))
}

/// Iterates files `(fx, fy, fz)` in the inclusive index range, z outermost.
pub(crate) fn files_in(lo: [u32; 3], hi: [u32; 3]) -> impl Iterator<Item = [u32; 3]> {
    (lo[2]..=hi[2]).flat_map(move |z| {
        (lo[1]..=hi[1]).flat_map(move |y| (lo[0]..=hi[0]).map(move |x| [x, y, z]))
    })
}

/// The Morton indices of the blocks of a file (block side `2^bs`, file origin in voxels
/// `file_min`) that intersect `region`, in increasing order, with their local block coords.
pub(crate) fn blocks_in(
    region: &VBox,
    file_min: [u64; 3],
    bs: u32,
) -> Result<Vec<(u64, [u32; 3])>> {
    if region.is_empty() {
        return Ok(Vec::new());
    }
    let mut lo = [0u32; 3];
    let mut hi = [0u32; 3];
    for a in 0..3 {
        let l = (region.min[a] - file_min[a]) >> bs;
        let h = ((region.max[a] - 1 - file_min[a]) >> bs) + 1;
        lo[a] = u32::try_from(l).map_err(|_| Error::internal("block index"))?;
        hi[a] = u32::try_from(h).map_err(|_| Error::internal("block index"))?;
    }
    let b = morton_code::MortonBox::<3>::new(lo, hi)
        .map_err(|e| Error::internal(format!("block box: {e}")))?;
    b.indices()
        .map(|k| {
            morton_code::decode_3d_u64(k)
                .map(|c| (k, c))
                .map_err(|e| Error::internal(format!("block index: {e}")))
        })
        .collect()
}
