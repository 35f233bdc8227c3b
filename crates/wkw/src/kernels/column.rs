//! Columns of blocks along z, the unit in which C-order arrays are transposed to and from
//! blocks: a column's part of the array is staged once in a compact C-order buffer, so the
//! array side is copied in long z runs and the transposes run between the stage and a block.

use crate::error::{Error, Result};
use crate::format::geometry::VBox;

/// A block: its Morton index in the file and its block coordinates in the file.
pub(crate) type Block = (u64, [u32; 3]);

/// Groups blocks into columns of equal (x, y), each sorted by z; columns ordered by (y, x).
pub(crate) fn columns(mut blocks: Vec<Block>) -> Vec<Vec<Block>> {
    blocks.sort_unstable_by_key(|&(_, c)| (c[1], c[0], c[2]));
    let mut out: Vec<Vec<Block>> = Vec::new();
    for b in blocks {
        match out.last_mut() {
            Some(col)
                if col
                    .last()
                    .is_some_and(|l| l.1[0] == b.1[0] && l.1[1] == b.1[1]) =>
            {
                col.push(b);
            }
            _ => out.push(vec![b]),
        }
    }
    out
}

/// The box of block `bc` (block side `2^bs`) of the file whose first voxel is `file_min`.
pub(crate) fn block_box(file_min: [u64; 3], bc: [u32; 3], bs: u32) -> VBox {
    let min = [0, 1, 2].map(|a| file_min[a] + (u64::from(bc[a]) << bs));
    VBox {
        min,
        max: min.map(|m| m + (1 << bs)),
    }
}

/// A staged column: the voxels of the box starting at `min` in C order (z fastest, then y, x,
/// channel), compact except for 64 bytes of padding after each x plane and each channel, so
/// that the rows a tile transpose touches do not all fall into one cache set.
pub(crate) struct Staged {
    pub(crate) min: [u64; 3],
    /// Byte strides (c, x, y, z).
    pub(crate) strides: [usize; 4],
}

impl Staged {
    /// The part of `region` in the column `col` (blocks of the file at `file_min`), with
    /// `stage` grown to hold it; `None` if the column does not touch `region`.
    ///
    /// # Errors
    /// [`Error::Internal`] if the stage size overflows `usize`.
    pub(crate) fn prepare(
        col: &[Block],
        file_min: [u64; 3],
        bs: u32,
        region: &VBox,
        channels: usize,
        ts: usize,
        stage: &mut Vec<u8>,
    ) -> Result<Option<(Self, VBox)>> {
        let (Some(&(_, first)), Some(&(_, last))) = (col.first(), col.last()) else {
            return Ok(None);
        };
        let span = VBox {
            min: block_box(file_min, first, bs).min,
            max: block_box(file_min, last, bs).max,
        };
        let part = region.intersect(&span);
        if part.is_empty() {
            return Ok(None);
        }
        Ok(Some((Self::for_box(&part, channels, ts, stage)?, part)))
    }

    /// The stage of box `part` (`channels` channels of `ts` bytes), with `stage` grown to hold
    /// it.
    ///
    /// # Errors
    /// [`Error::Internal`] if the stage size overflows `usize`.
    pub(crate) fn for_box(
        part: &VBox,
        channels: usize,
        ts: usize,
        stage: &mut Vec<u8>,
    ) -> Result<Self> {
        let [ex, ey, ez] = part.extent();
        let bad = || Error::internal("column stage size overflows");
        let sz = ts;
        let sy = ez.checked_mul(ts).ok_or_else(bad)?;
        let sx = sy
            .checked_mul(ey)
            .and_then(|v| v.checked_add(64))
            .ok_or_else(bad)?;
        let sc = sx
            .checked_mul(ex)
            .and_then(|v| v.checked_add(64))
            .ok_or_else(bad)?;
        let len = sc.checked_mul(channels).ok_or_else(bad)?;
        if stage.len() < len {
            stage.resize(len, 0);
        }
        Ok(Self {
            min: part.min,
            strides: [sc, sx, sy, sz],
        })
    }
}
