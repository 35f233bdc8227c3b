//! Reading boxes: [`Dataset::read`] and [`Dataset::read_into`].
//!
//! The destination is split into slabs along its slowest axis (z for Fortran order, x for C
//! order), one slab per block layer; slabs are filled in parallel, each decoding the blocks of
//! its layer in Morton (= file offset) order and copying the intersecting sub-boxes.

use std::collections::HashMap;

use crate::array::{Array, ArrayViewMut, Layout, Order};
use crate::copy::{copy_4d, zero_4d};
use crate::dataset::{Dataset, Resolved};
use crate::error::{Error, Result};
use crate::geometry::{VBox, blocks_in, files_in, try_offset_of};

/// One slab of the destination: the part of the box with `lo ≤ p[axis] < hi`, and the
/// destination bytes of that part (one slice; or one per channel in C order).
struct Slab<'a> {
    region: VBox,
    parts: Vec<&'a mut [u8]>,
}

impl Dataset {
    /// Reads the box at `offset` (x, y, z) of `shape` voxels into a new array in `order`.
    ///
    /// The result has shape (C, X, Y, Z) like the reference's `read`; missing files read as 0.
    ///
    /// # Errors
    /// [`Error::BoxOutOfRange`] if the box ends beyond 2³², [`Error::LimitExceeded`] above
    /// [`crate::Limits::max_read_bytes`], and every error of [`Dataset::read_into`].
    pub fn read(&self, offset: [u32; 3], shape: [u32; 3], order: Order) -> Result<Array> {
        let layout = Layout::new(
            self.header.voxel_type(),
            self.header.num_channels(),
            shape,
            order,
        )?;
        let limit = self.options.limits.max_read_bytes;
        let len = layout
            .byte_len()
            .filter(|&n| n as u64 <= limit)
            .ok_or_else(|| Error::LimitExceeded {
                what: "read array bytes",
                requested: shape
                    .iter()
                    .fold(u64::from(self.header.voxel_size()), |a, &s| {
                        a.saturating_mul(u64::from(s))
                    }),
                limit,
            })?;
        let mut data = vec![0u8; len];
        self.read_impl(offset, layout, &mut data, true)?;
        Ok(Array::from_parts(layout, data))
    }

    /// Reads the box at `offset` with the shape of `dst` into `dst` (either order). Every voxel
    /// of `dst` is written (missing files as 0).
    ///
    /// # Errors
    /// [`Error::ArrayMismatch`] if `dst` has another voxel type or channel count;
    /// [`Error::Format`] for a corrupt data file (unless [`crate::MissingOrCorrupt::Zeros`]
    /// applies); [`Error::Io`] on I/O failure.
    pub fn read_into(&self, offset: [u32; 3], dst: &mut ArrayViewMut<'_>) -> Result<()> {
        self.check_layout(&dst.layout)?;
        let layout = dst.layout;
        self.read_impl(offset, layout, dst.data, false)
    }

    pub(crate) fn check_layout(&self, layout: &Layout) -> Result<()> {
        if layout.voxel_type != self.header.voxel_type()
            || layout.num_channels != self.header.num_channels()
        {
            return Err(Error::ArrayMismatch(format!(
                "array holds {} channel(s) of {:?}, dataset has {} of {:?}",
                layout.num_channels,
                layout.voxel_type,
                self.header.num_channels(),
                self.header.voxel_type()
            )));
        }
        Ok(())
    }

    fn read_impl(
        &self,
        offset: [u32; 3],
        layout: Layout,
        data: &mut [u8],
        zeroed: bool,
    ) -> Result<()> {
        let bx = VBox::new(offset, layout.shape)?;
        if bx.is_empty() {
            return Ok(());
        }
        let fs = self.header.file_len_vx_log2();
        let (flo, fhi) = bx.cube_range(fs);
        let mut files = HashMap::new();
        for idx in files_in(flo, fhi) {
            files.insert(idx, self.resolve(idx)?);
        }
        let slabs = split_slabs(&bx, layout, data, u32::from(self.header.block_len_log2()))?;
        let files = &files;
        crate::par::try_for_each(slabs, |slab| self.fill_slab(slab, files, layout, zeroed))
    }

    fn fill_slab(
        &self,
        mut slab: Slab<'_>,
        files: &HashMap<[u32; 3], Resolved>,
        layout: Layout,
        zeroed: bool,
    ) -> Result<()> {
        let h = &self.header;
        let (fs, bs) = (h.file_len_vx_log2(), u32::from(h.block_len_log2()));
        let ts = usize::from(h.voxel_type().size());
        let vs = usize::from(h.voxel_size());
        let nc = usize::from(h.num_channels());
        let blen = 1usize << bs;
        let bstr = [vs, vs * blen, vs * blen * blen];
        let dst_str = layout.strides();
        let dspat = [dst_str[1], dst_str[2], dst_str[3]];
        // Fortran: one part holding all channels; C: one part per channel.
        let (part_channels, src_cstride) = if layout.order == Order::Fortran {
            (nc, ts)
        } else {
            (1, 0)
        };
        let block_len = usize::try_from(h.block_bytes()).map_err(|_| Error::LimitExceeded {
            what: "raw block",
            requested: h.block_bytes(),
            limit: usize::MAX as u64,
        })?;
        let mut block = Vec::new();
        let mut scratch = Vec::new();
        let region = slab.region;
        let (flo, fhi) = region.cube_range(fs);
        for fidx in files_in(flo, fhi) {
            let fbox = VBox::cube(fidx, fs);
            let r = region.intersect(&fbox);
            if r.is_empty() {
                continue;
            }
            let Some(Resolved::Present { file, meta, path }) = files.get(&fidx) else {
                if !zeroed {
                    let [ex, ey, ez] = r.extent();
                    let d = try_offset_of(r.min, region.min, dspat)?;
                    for part in &mut slab.parts {
                        zero_4d(part, d, dst_str, [part_channels, ex, ey, ez], ts);
                    }
                }
                continue;
            };
            if block.len() != block_len {
                block = vec![0u8; block_len];
            }
            for (k, bc) in blocks_in(&r, fbox.min, bs)? {
                let bmin = [0, 1, 2].map(|a| fbox.min[a] + (u64::from(bc[a]) << bs));
                let bbox = VBox {
                    min: bmin,
                    max: bmin.map(|m| m + (1 << bs)),
                };
                let rr = r.intersect(&bbox);
                meta.read_block(file.as_ref(), k, &mut scratch, &mut block, path)?;
                let s = try_offset_of(rr.min, bbox.min, bstr)?;
                let d = try_offset_of(rr.min, region.min, dspat)?;
                let [ex, ey, ez] = rr.extent();
                for (c, part) in slab.parts.iter_mut().enumerate() {
                    copy_4d(
                        part,
                        d,
                        dst_str,
                        &block,
                        s + c * ts,
                        [src_cstride, bstr[0], bstr[1], bstr[2]],
                        [part_channels, ex, ey, ez],
                        ts,
                    );
                }
            }
        }
        Ok(())
    }
}

/// Splits the destination of box `bx` into block-layer slabs along its slowest axis.
fn split_slabs<'a>(
    bx: &VBox,
    layout: Layout,
    data: &'a mut [u8],
    bs: u32,
) -> Result<Vec<Slab<'a>>> {
    let axis = if layout.order == Order::Fortran { 2 } else { 0 };
    let strides = layout.strides();
    let axis_stride = strides[axis + 1];
    let mut bounds = Vec::new();
    let mut lo = bx.min[axis];
    while lo < bx.max[axis] {
        let hi = (((lo >> bs) + 1) << bs).min(bx.max[axis]);
        bounds.push((lo, hi));
        lo = hi;
    }
    let mut slabs: Vec<Slab<'a>> = bounds
        .iter()
        .map(|&(lo, hi)| {
            let mut region = *bx;
            region.min[axis] = lo;
            region.max[axis] = hi;
            Slab {
                region,
                parts: Vec::new(),
            }
        })
        .collect();
    let channel_chunks: Vec<&'a mut [u8]> = if layout.order == Order::Fortran {
        vec![data]
    } else {
        let per_channel = strides[0];
        if per_channel == 0 {
            return Ok(Vec::new());
        }
        data.chunks_mut(per_channel).collect()
    };
    for chunk in channel_chunks {
        let mut rest = chunk;
        for (slab, &(lo, hi)) in slabs.iter_mut().zip(&bounds) {
            let n = usize::try_from(hi - lo)
                .ok()
                .and_then(|n| n.checked_mul(axis_stride))
                .ok_or_else(|| Error::ArrayMismatch("slab size overflows usize".into()))?;
            let (head, tail) = rest
                .split_at_mut_checked(n)
                .ok_or_else(|| Error::ArrayMismatch("buffer shorter than the box".into()))?;
            slab.parts.push(head);
            rest = tail;
        }
    }
    Ok(slabs)
}
