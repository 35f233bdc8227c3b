//! Boxes of cells and their Morton indices: range iteration and "next index inside the box".

use core::ops::Range;

use crate::error::{Error, Result};
use crate::key::{BITS_2D_U64, BITS_3D_U64};
use crate::portable;

/// An axis-aligned box of cells, `min ≤ p ≤ max` on every axis (stored inclusive), in 2-D
/// (`MortonBox<2>`, 32 bits per axis, `u64` keys as [`crate::encode_2d_u64`]) or 3-D
/// (`MortonBox<3>`, 21 bits per axis, keys as [`crate::encode_3d_u64`]).
///
/// ```
/// use morton_code::MortonBox;
/// // Block coordinates 1..3 × 0..1 × 0..1 inside a WKW file.
/// let b = MortonBox::<3>::new([1, 0, 0], [3, 1, 1])?;
/// assert_eq!(b.indices().collect::<Vec<_>>(), vec![1, 8]);
/// assert_eq!(b.next_in_box(2), Some(8));
/// # Ok::<(), morton_code::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MortonBox<const D: usize> {
    min: [u32; D],
    max: [u32; D],
    empty: bool,
}

impl MortonBox<2> {
    /// The half-open box `[min, max)` in 2-D.
    ///
    /// # Errors
    /// [`Error::InvalidBox`] if `min > max` on an axis. (`max` is exclusive, so the last
    /// column/row `u32::MAX` can only be reached through [`MortonBox::from_inclusive`].)
    pub fn new(min: [u32; 2], max: [u32; 2]) -> Result<Self> {
        Self::half_open(min, max, BITS_2D_U64)
    }

    /// The box `min ≤ p ≤ max` in 2-D.
    ///
    /// # Errors
    /// [`Error::InvalidBox`] if `min > max` on an axis.
    pub fn from_inclusive(min: [u32; 2], max: [u32; 2]) -> Result<Self> {
        Self::inclusive(min, max, BITS_2D_U64)
    }
}

impl MortonBox<3> {
    /// The half-open box `[min, max)` in 3-D; `max` may be at most 2²¹ on every axis.
    ///
    /// # Errors
    /// [`Error::InvalidBox`] if `min > max` or `max > 2²¹` on an axis.
    pub fn new(min: [u32; 3], max: [u32; 3]) -> Result<Self> {
        Self::half_open(min, max, BITS_3D_U64)
    }

    /// The box `min ≤ p ≤ max` in 3-D; coordinates below 2²¹.
    ///
    /// # Errors
    /// [`Error::InvalidBox`] if `min > max` or `max ≥ 2²¹` on an axis.
    pub fn from_inclusive(min: [u32; 3], max: [u32; 3]) -> Result<Self> {
        Self::inclusive(min, max, BITS_3D_U64)
    }
}

impl<const D: usize> MortonBox<D> {
    const BITS: u32 = if D == 2 { BITS_2D_U64 } else { BITS_3D_U64 };

    fn half_open(min: [u32; D], max: [u32; D], bits: u32) -> Result<Self> {
        let limit = 1u64 << bits;
        let mut incl = [0u32; D];
        let mut empty = false;
        for axis in 0..D {
            let (lo, hi) = (min[axis], max[axis]);
            if lo > hi || u64::from(hi) > limit {
                return Err(Error::InvalidBox {
                    axis,
                    min: lo,
                    max: u64::from(hi),
                    limit,
                });
            }
            empty |= lo == hi;
            incl[axis] = hi.saturating_sub(1);
        }
        Ok(Self {
            min,
            max: if empty { min } else { incl },
            empty,
        })
    }

    fn inclusive(min: [u32; D], max: [u32; D], bits: u32) -> Result<Self> {
        let limit = 1u64 << bits;
        for axis in 0..D {
            let (lo, hi) = (min[axis], max[axis]);
            if lo > hi || u64::from(hi) >= limit {
                return Err(Error::InvalidBox {
                    axis,
                    min: lo,
                    max: u64::from(hi) + 1,
                    limit,
                });
            }
        }
        Ok(Self {
            min,
            max,
            empty: false,
        })
    }

    /// Inclusive lower corner.
    #[must_use]
    pub fn min(&self) -> [u32; D] {
        self.min
    }

    /// Inclusive upper corner (meaningless when the box is empty).
    #[must_use]
    pub fn max_inclusive(&self) -> [u32; D] {
        self.max
    }

    /// Whether the box has no cells.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.empty
    }

    /// Number of cells in the box.
    #[must_use]
    pub fn cell_count(&self) -> u128 {
        if self.empty {
            return 0;
        }
        (0..D)
            .map(|a| u128::from(self.max[a] - self.min[a]) + 1)
            .product()
    }

    /// Whether the cell `p` lies in the box.
    #[must_use]
    pub fn contains(&self, p: [u32; D]) -> bool {
        !self.empty && (0..D).all(|a| self.min[a] <= p[a] && p[a] <= self.max[a])
    }

    /// The Morton indices of the cells in the box, in increasing order, as maximal contiguous
    /// ranges.
    ///
    /// Walks aligned sub-cubes: a cube that lies inside the box is one range, a disjoint cube is
    /// skipped (jumping straight to the next index inside the box), a partly covered cube is
    /// split into its 2^D children. The work is proportional to the number of ranges times the
    /// number of levels.
    #[must_use]
    pub fn ranges(&self) -> MortonRanges<D> {
        let (cur, end) = if self.empty {
            (0, 0)
        } else {
            (u128::from(enc(self.min)), u128::from(enc(self.max)) + 1)
        };
        let extent = self.max.iter().copied().max().unwrap_or(0);
        let top = u32::BITS - extent.leading_zeros();
        MortonRanges {
            bx: *self,
            cur,
            end,
            top,
            pending: None,
        }
    }

    /// Every Morton index of the box in increasing order.
    pub fn indices(&self) -> impl Iterator<Item = u64> + use<D> {
        self.ranges().flatten()
    }

    /// The smallest Morton index `≥ key` whose cell lies in the box (Tropf–Herzog BIGMIN), or
    /// `None` if there is none. Used to skip the parts of a Z-ordered key range outside a box.
    #[must_use]
    pub fn next_in_box(&self, key: u64) -> Option<u64> {
        if self.empty {
            return None;
        }
        let (mut lo, mut hi) = (enc(self.min), enc(self.max));
        if key > hi {
            return None;
        }
        if key <= lo {
            return Some(lo);
        }
        let dims = u32::try_from(D).unwrap_or(3);
        let mut best = None;
        for i in (0..dims * Self::BITS).rev() {
            let bit = 1u64 << i;
            let same_dim_below = dim_mask::<D>(i % dims) & (bit - 1);
            match (key & bit != 0, lo & bit != 0, hi & bit != 0) {
                // The key lies in the lower half of this dimension's split, the box spans both
                // halves: the best candidate so far is the box's first cell in the upper half.
                (false, false, true) => {
                    best = Some((lo | bit) & !same_dim_below);
                    hi = (hi & !bit) | same_dim_below;
                }
                // The key is below the (remaining) box: its first cell is the answer.
                (false, true, true) => return Some(lo),
                // The key is above the (remaining) box.
                (true, false, false) => return best,
                // The key is in the upper half, the box spans both: keep the upper part.
                (true, false, true) => lo = (lo | bit) & !same_dim_below,
                // min ≤ max coordinate-wise excludes lo = 1, hi = 0 at the first differing bit.
                (false, true, false) | (true, true, false) => return best,
                (false, false, false) | (true, true, true) => {}
            }
        }
        Some(key)
    }
}

/// Bits of the interleaved key that belong to axis `axis`.
fn dim_mask<const D: usize>(axis: u32) -> u64 {
    let base = if D == 2 {
        0x5555_5555_5555_5555
    } else {
        0x1249_2492_4924_9249
    };
    base << axis
}

fn enc<const D: usize>(p: [u32; D]) -> u64 {
    let c = |i: usize| p.get(i).copied().unwrap_or(0);
    if D == 2 {
        portable::encode_2d_u64([c(0), c(1)])
    } else {
        portable::encode_3d_u64([c(0), c(1), c(2)])
    }
}

fn dec<const D: usize>(key: u64) -> [u32; D] {
    let v: [u32; 3] = if D == 2 {
        let [x, y] = portable::decode_2d_u64(key);
        [x, y, 0]
    } else {
        portable::decode_3d_u64(key)
    };
    core::array::from_fn(|i| v.get(i).copied().unwrap_or(0))
}

/// Iterator over the Morton index ranges of a [`MortonBox`], from [`MortonBox::ranges`].
#[derive(Debug, Clone)]
pub struct MortonRanges<const D: usize> {
    bx: MortonBox<D>,
    /// Next Morton index not yet classified.
    cur: u128,
    /// One past the key of the box's max corner: nothing at or above it is inside.
    end: u128,
    /// log2 of the side of the smallest aligned cube at the origin containing the box.
    top: u32,
    pending: Option<Range<u64>>,
}

enum Overlap {
    Inside,
    Disjoint,
    Partial,
}

impl<const D: usize> MortonRanges<D> {
    fn classify(&self, corner: [u32; D], side: u64) -> Overlap {
        let (mut inside, mut disjoint) = (true, false);
        for ((&c, &bmin), &bmax) in corner.iter().zip(&self.bx.min).zip(&self.bx.max) {
            let lo = u64::from(c);
            let hi = lo + side - 1;
            let (bmin, bmax) = (u64::from(bmin), u64::from(bmax));
            inside &= lo >= bmin && hi <= bmax;
            disjoint |= hi < bmin || lo > bmax;
        }
        if disjoint {
            Overlap::Disjoint
        } else if inside {
            Overlap::Inside
        } else {
            Overlap::Partial
        }
    }

    /// Classifies the aligned cube starting at `cur` (largest first, halving while partial) and
    /// returns the range of indices it contributes, advancing `cur` past it.
    fn step(&mut self) -> Option<Range<u64>> {
        let dims = u32::try_from(D).unwrap_or(3);
        let align = if self.cur == 0 {
            self.top
        } else {
            self.cur.trailing_zeros() / dims
        };
        let mut level = align.min(self.top);
        loop {
            let cells = 1u128 << (dims * level);
            // cur < end ≤ 2^64 here, so the narrowing is exact.
            let key = u64::try_from(self.cur).unwrap_or(u64::MAX);
            match self.classify(dec::<D>(key), 1u64 << level) {
                Overlap::Inside => {
                    let start = self.cur;
                    self.cur += cells;
                    let end = self.cur.min(self.end);
                    return Some(narrow(start)..narrow(end));
                }
                Overlap::Disjoint => {
                    let next = self.cur + cells;
                    self.cur = if next >= self.end {
                        self.end
                    } else {
                        self.bx
                            .next_in_box(narrow(next))
                            .map_or(self.end, u128::from)
                    };
                    return None;
                }
                // A single cell is always inside or disjoint, so level > 0 here.
                Overlap::Partial => level = level.saturating_sub(1),
            }
        }
    }
}

fn narrow(v: u128) -> u64 {
    u64::try_from(v).unwrap_or(u64::MAX)
}

impl<const D: usize> Iterator for MortonRanges<D> {
    type Item = Range<u64>;

    fn next(&mut self) -> Option<Range<u64>> {
        while self.cur < self.end {
            let Some(r) = self.step() else { continue };
            match &mut self.pending {
                Some(p) if p.end == r.start => p.end = r.end,
                Some(_) => return self.pending.replace(r),
                None => self.pending = Some(r),
            }
        }
        self.pending.take()
    }
}

impl<const D: usize> core::iter::FusedIterator for MortonRanges<D> {}
