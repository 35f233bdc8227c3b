//! Reading boxes: [`Dataset::read`] and [`Dataset::read_into`].
//!
//! The destination is split into work units filled in parallel, each writing whole
//! contiguous segments of the destination (so [`Dataset::read`] need not zero its result):
//!
//! * Fortran order: a [`Unit`] is one block row (one block layer in z, one block row in y, all
//!   of the box's x); its blocks are read with one positional read per run of consecutive
//!   blocks and each z plane of the row is assembled in a small stage, then copied once.
//! * C order: a [`Column`] is one block layer in x × one block row in y × the box's z (in
//!   chunks of at most [`COLUMN_STAGE_BYTES`]); its blocks are transposed into a C-order stage
//!   from which every segment is one copy.

use std::collections::HashMap;

use crate::dataset::array::{Array, ArrayViewMut, Layout, Order};
use crate::dataset::root::{Dataset, Resolved};
use crate::error::{Error, Result};
use crate::format::geometry::{VBox, blocks_in, files_in, try_offset_of};
use crate::kernels::column::{Staged, block_box};
use crate::kernels::copy::{copy_4d_direct, zero_4d};

/// A C-order work unit: the voxels of the box inside `region` (one block layer along x, one
/// block row along y, a chunk of the box's z). Its destination is `segs`, in memory order
/// (channel, x, y): `rows` z runs each, all `ny` of them when the chunk is the box's whole z
/// (then the rows of one x plane are contiguous), else one.
struct Column<S> {
    region: VBox,
    rows: usize,
    segs: Vec<S>,
}

/// Most bytes of one [`Column`]'s stage (per worker thread): taller columns are split in z.
const COLUMN_STAGE_BYTES: usize = 8 << 20;

impl Dataset {
    /// Reads the box at `offset` (x, y, z) of `shape` voxels into a new array in `order`.
    ///
    /// The result has shape (C, X, Y, Z) like the reference's `read`; missing files read as 0.
    ///
    /// # Errors
    /// [`Error::BoxOutOfRange`] if the box ends beyond 2³², [`Error::LimitExceeded`] above
    /// [`crate::Limits::max_read_bytes`], and every error of [`Dataset::read_into`].
    pub fn read(&self, offset: [u32; 3], shape: [u32; 3], order: Order) -> Result<Array> {
        self.read_resolved(offset, shape, order, |bx| self.resolve_files(bx))
    }

    /// [`Dataset::read`] with the data files the box touches opened by `resolve` (the local
    /// files, or byte ranges already fetched from an object store).
    pub(crate) fn read_resolved(
        &self,
        offset: [u32; 3],
        shape: [u32; 3],
        order: Order,
        resolve: impl FnOnce(&VBox) -> Result<HashMap<[u32; 3], Resolved>>,
    ) -> Result<Array> {
        let (layout, len) = self.new_array_layout(shape, order)?;
        let bx = VBox::new(offset, shape)?;
        if bx.is_empty() {
            return Ok(Array::from_parts(layout, vec![0u8; len]));
        }
        let files = resolve(&bx)?;
        if order == Order::C || self.one_group(&bx) {
            // Every byte is written by exactly one unit: no zero-initialisation.
            let data = crate::kernels::uninit::build(len, |whole| {
                self.fill_units(&bx, layout, &files, whole)
            })?;
            return Ok(Array::from_parts(layout, data));
        }
        let mut data = vec![0u8; len];
        self.fill_units(&bx, layout, &files, &mut data[..])?;
        Ok(Array::from_parts(layout, data))
    }

    /// The layout of a new array of `shape` in `order` holding this dataset's voxels, and its
    /// length in bytes, checked against [`crate::Limits::max_read_bytes`].
    pub(crate) fn new_array_layout(
        &self,
        shape: [u32; 3],
        order: Order,
    ) -> Result<(Layout, usize)> {
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
        Ok((layout, len))
    }

    /// Reads the box at `offset` with the shape of `dst` into `dst` (either order). Every voxel
    /// of `dst` is written (missing files as 0).
    ///
    /// # Errors
    /// [`Error::ArrayMismatch`] if `dst` has another voxel type or channel count;
    /// [`Error::Format`] for a corrupt data file (unless [`crate::MissingOrCorrupt::Zeros`]
    /// applies); [`Error::Io`] on I/O failure; [`Error::Cancelled`] once
    /// [`crate::Options::cancel`] is raised (checked before each block row or column).
    pub fn read_into(&self, offset: [u32; 3], dst: &mut ArrayViewMut<'_>) -> Result<()> {
        self.read_into_resolved(offset, dst, |bx| self.resolve_files(bx))
    }

    /// [`Dataset::read_into`] with the data files opened by `resolve` (see
    /// [`Dataset::read_resolved`]).
    pub(crate) fn read_into_resolved(
        &self,
        offset: [u32; 3],
        dst: &mut ArrayViewMut<'_>,
        resolve: impl FnOnce(&VBox) -> Result<HashMap<[u32; 3], Resolved>>,
    ) -> Result<()> {
        self.check_layout(&dst.layout)?;
        let layout = dst.layout;
        let bx = VBox::new(offset, layout.shape)?;
        if bx.is_empty() {
            return Ok(());
        }
        let files = resolve(&bx)?;
        self.fill_units(&bx, layout, &files, &mut *dst.data)
            .map(|_| ())
    }

    /// Splits the destination `data` of box `bx` into work units and fills them (in parallel),
    /// returning the proofs of the segments written whole.
    fn fill_units<S: SegOut>(
        &self,
        bx: &VBox,
        layout: Layout,
        files: &HashMap<[u32; 3], Resolved>,
        data: S,
    ) -> Result<Vec<S::Done>> {
        let bs = u32::from(self.header.block_len_log2());
        let threads = self.options.threads;
        let done = if layout.order == Order::Fortran {
            let units = split_units(bx, layout, data, bs)?;
            crate::kernels::par::try_map(threads, units, |unit| {
                self.options.cancel.check()?;
                BUFFERS.with_borrow_mut(|(buf, scratch, stage)| {
                    self.fill_unit(unit, bx, files, buf, scratch, stage)
                })
            })?
        } else {
            let units = split_columns(bx, layout, data, bs)?;
            crate::kernels::par::try_map(threads, units, |unit| {
                self.options.cancel.check()?;
                BUFFERS.with_borrow_mut(|(buf, scratch, stage)| {
                    self.fill_column(unit, files, buf, scratch, stage)
                })
            })?
        };
        Ok(done.into_iter().flatten().collect())
    }

    /// Opens every data file the box touches.
    fn resolve_files(&self, bx: &VBox) -> Result<HashMap<[u32; 3], Resolved>> {
        let (flo, fhi) = bx.cube_range(self.header.file_len_vx_log2());
        let mut files = HashMap::new();
        for idx in files_in(flo, fhi) {
            files.insert(idx, self.resolve(idx)?);
        }
        Ok(files)
    }

    /// Whether the blocks of one block row of the box fit in one group ([`GROUP_BYTES`]), so
    /// that [`Dataset::fill_unit`] writes each destination segment with one copy.
    fn one_group(&self, bx: &VBox) -> bool {
        let bs = u32::from(self.header.block_len_log2());
        let n = ((bx.max[0] - 1) >> bs) - (bx.min[0] >> bs) + 1;
        n.checked_mul(self.header.block_bytes())
            .is_some_and(|b| b <= GROUP_BYTES as u64)
    }

    /// Fills one Fortran-order [`Unit`]: reads the blocks of its block row (up to
    /// [`GROUP_BYTES`] at a time, consecutive blocks of a file with one read), then writes the
    /// destination rows in memory order, each row assembled from the blocks' row pieces.
    /// Returns the proofs of the segments written whole (all of them when the row's blocks
    /// make one group).
    fn fill_unit<S: SegOut>(
        &self,
        unit: Unit<S>,
        bx: &VBox,
        files: &HashMap<[u32; 3], Resolved>,
        buf: &mut Vec<u8>,
        scratch: &mut Vec<u8>,
        stage: &mut Vec<u8>,
    ) -> Result<Vec<S::Done>> {
        let h = &self.header;
        let (fs, bs) = (h.file_len_vx_log2(), u32::from(h.block_len_log2()));
        let shift = fs - bs;
        let vs = usize::from(h.voxel_size());
        let blen = 1usize << bs;
        let block_len = usize::try_from(h.block_bytes()).map_err(|_| Error::LimitExceeded {
            what: "raw block",
            requested: h.block_bytes(),
            limit: usize::MAX as u64,
        })?;
        let internal = |what: &str| Error::internal(format!("read unit: {what}"));
        let [ex, _, _] = bx.extent();
        let row_bytes = ex.checked_mul(vs).ok_or_else(|| internal("row size"))?;
        let (nz, ny) = (unit.segs.len(), unit.ny);
        if nz == 0 || ny == 0 || row_bytes == 0 {
            return Ok(Vec::new());
        }
        let (bz, by) = (unit.z0 >> bs, unit.y0 >> bs);
        let zl = usize::try_from(unit.z0 - (bz << bs)).map_err(|_| internal("z"))?;
        let yl = usize::try_from(unit.y0 - (by << bs)).map_err(|_| internal("y"))?;
        if zl + nz > blen || yl + ny > blen {
            return Err(internal("unit crosses a block"));
        }
        let whole = zl == 0 && yl == 0 && nz == blen && ny == blen;
        // The bytes of a block the unit needs: from its first row to the end of its last.
        let span_lo = (zl * blen + yl) * blen * vs;
        let span_hi = ((zl + nz - 1) * blen + yl + ny) * blen * vs;
        let (bx_lo, bx_hi) = (bx.min[0] >> bs, (bx.max[0] - 1) >> bs);
        let per_group = (GROUP_BYTES / block_len.max(1)).max(1) as u64;
        let to_u32 = |v: u64| u32::try_from(v).map_err(|_| internal("block index"));
        let mut runs: Vec<(usize, usize, usize)> = Vec::new();
        let single = bx_hi - bx_lo < per_group;
        let mut segs = unit.segs;
        let mut done = Vec::with_capacity(if single { segs.len() } else { 0 });
        let mut g0 = bx_lo;
        while g0 <= bx_hi {
            let g1 = (g0 + per_group - 1).min(bx_hi);
            let n = usize::try_from(g1 - g0 + 1).map_err(|_| internal("group"))?;
            let need = n
                .checked_mul(block_len)
                .ok_or_else(|| internal("group size"))?;
            if buf.len() < need {
                buf.resize(need, 0);
            }
            // Read the group's blocks into consecutive slots of `buf`.
            let mut j = 0usize;
            while j < n {
                let b = g0 + j as u64;
                let fidx = [
                    to_u32(b >> shift)?,
                    to_u32(by >> shift)?,
                    to_u32(bz >> shift)?,
                ];
                let mask = (1u64 << shift) - 1;
                let local = [to_u32(b & mask)?, to_u32(by & mask)?, to_u32(bz & mask)?];
                let k = morton_code::encode_3d_u64(local)
                    .map_err(|e| Error::internal(format!("block index: {e}")))?;
                let slot_at = |j: usize| j * block_len;
                let Some(Resolved::Present { file, meta, path }) = files.get(&fidx) else {
                    if let Some(slot) = buf.get_mut(slot_at(j) + span_lo..slot_at(j) + span_hi) {
                        slot.fill(0);
                    }
                    j += 1;
                    continue;
                };
                if whole || meta.jump.is_some() {
                    // Consecutive blocks of this file (same file index, next Morton index).
                    let mut m = 1usize;
                    while j + m < n && whole {
                        let nb = b + m as u64;
                        if nb >> shift != b >> shift || (nb & mask) == 0 {
                            break;
                        }
                        let nk =
                            morton_code::encode_3d_u64([to_u32(nb & mask)?, local[1], local[2]])
                                .map_err(|e| Error::internal(format!("block index: {e}")))?;
                        if nk != k + m as u64 {
                            break;
                        }
                        m += 1;
                    }
                    let out = buf
                        .get_mut(slot_at(j)..slot_at(j + m))
                        .ok_or_else(|| internal("slot"))?;
                    meta.read_blocks(file.as_ref(), k, scratch, out, path)?;
                    j += m;
                } else {
                    let out = buf
                        .get_mut(slot_at(j) + span_lo..slot_at(j) + span_hi)
                        .ok_or_else(|| internal("slot"))?;
                    meta.read_raw_part(file.as_ref(), k, span_lo as u64, out, path)?;
                    j += 1;
                }
            }
            // Row pieces: (offset in the destination row, offset in `buf`, length).
            runs.clear();
            for j in 0..n {
                let b = g0 + j as u64;
                let (lo, hi) = ((b << bs).max(bx.min[0]), ((b + 1) << bs).min(bx.max[0]));
                let d = usize::try_from(lo - bx.min[0]).map_err(|_| internal("x"))? * vs;
                let s = j * block_len
                    + usize::try_from(lo - (b << bs)).map_err(|_| internal("x"))? * vs;
                let len = usize::try_from(hi - lo).map_err(|_| internal("x"))? * vs;
                runs.push((d, s, len));
            }
            let src = buf.get(..need).ok_or_else(|| internal("group"))?;
            let src_row = blen * vs;
            // The group's part of each destination row: bytes `gx..gx + gw`.
            let gx = runs.first().map_or(0, |r| r.0);
            let gw = runs.last().map_or(0, |r| r.0 + r.2) - gx;
            let stage_len = gw * ny;
            if stage.len() < stage_len {
                stage.resize(stage_len, 0);
            }
            let stage = stage
                .get_mut(..stage_len)
                .ok_or_else(|| internal("stage"))?;
            let assemble = |iz: usize, stage: &mut [u8]| {
                let base = ((zl + iz) * blen + yl) * src_row;
                for &(d, s, len) in &runs {
                    let piece = Piece {
                        d: d - gx,
                        s: base + s,
                        row_bytes: gw,
                        src_row,
                    };
                    piece.copy(stage, src, len);
                }
            };
            if single {
                // Whole segments: one sequential copy each into the destination.
                for (iz, seg) in std::mem::take(&mut segs).into_iter().enumerate() {
                    assemble(iz, stage);
                    done.push(seg.put(stage).ok_or_else(|| internal("segment length"))?);
                }
            } else {
                for (iz, seg) in segs.iter_mut().enumerate() {
                    assemble(iz, stage);
                    let seg = seg.rows().ok_or_else(|| internal("partial rows"))?;
                    for (row, st) in seg.chunks_exact_mut(row_bytes).zip(stage.chunks_exact(gw)) {
                        if let Some(r) = row.get_mut(gx..gx + gw) {
                            r.copy_from_slice(st);
                        }
                    }
                }
            }
            g0 = g1 + 1;
        }
        Ok(done)
    }

    /// Fills one C-order [`Column`]: every block it touches (in every file along z) is
    /// transposed into a C-order stage of the column's voxels ([`Staged`]; zeros for files
    /// that read as zeros), then each destination segment is one copy out of the stage.
    fn fill_column<S: SegOut>(
        &self,
        unit: Column<S>,
        files: &HashMap<[u32; 3], Resolved>,
        block: &mut Vec<u8>,
        scratch: &mut Vec<u8>,
        stage: &mut Vec<u8>,
    ) -> Result<Vec<S::Done>> {
        let h = &self.header;
        let (fs, bs) = (h.file_len_vx_log2(), u32::from(h.block_len_log2()));
        let ts = usize::from(h.voxel_type().size());
        let vs = usize::from(h.voxel_size());
        let nc = usize::from(h.num_channels());
        let blen = 1usize << bs;
        let bspat = [vs, vs * blen, vs * blen * blen];
        let block_str = [ts, bspat[0], bspat[1], bspat[2]];
        let block_len = usize::try_from(h.block_bytes()).map_err(|_| Error::LimitExceeded {
            what: "raw block",
            requested: h.block_bytes(),
            limit: usize::MAX as u64,
        })?;
        if block.len() != block_len {
            block.resize(block_len, 0);
        }
        let internal = |what: &str| Error::internal(format!("read column: {what}"));
        let ub = unit.region;
        let staged = Staged::for_box(&ub, nc, ts, stage)?;
        let sstr = staged.strides;
        let sspat = [sstr[1], sstr[2], sstr[3]];
        let (flo, fhi) = ub.cube_range(fs);
        for fidx in files_in(flo, fhi) {
            let fbox = VBox::cube(fidx, fs);
            let r = ub.intersect(&fbox);
            if r.is_empty() {
                continue;
            }
            let Some(Resolved::Present { file, meta, path }) = files.get(&fidx) else {
                let [ex, ey, ez] = r.extent();
                let d = try_offset_of(r.min, ub.min, sspat)?;
                zero_4d(stage, d, sstr, [nc, ex, ey, ez], ts);
                continue;
            };
            for (k, bc) in blocks_in(&r, fbox.min, bs)? {
                let bbox = block_box(fbox.min, bc, bs);
                let rr = r.intersect(&bbox);
                meta.read_block(file.as_ref(), k, scratch, block, path)?;
                let s = try_offset_of(rr.min, bbox.min, bspat)?;
                let d = try_offset_of(rr.min, ub.min, sspat)?;
                let [ex, ey, ez] = rr.extent();
                copy_4d_direct(stage, d, sstr, block, s, block_str, [nc, ex, ey, ez], ts);
            }
        }
        // Segment i: channel, x plane and first row of its `rows` z runs, in memory order.
        let [nx, ny, ez] = ub.extent();
        let per_plane = ny / unit.rows.max(1);
        let seg_len = unit
            .rows
            .checked_mul(ez)
            .and_then(|v| v.checked_mul(ts))
            .ok_or_else(|| internal("segment size"))?;
        let mut done = Vec::with_capacity(unit.segs.len());
        for (i, seg) in unit.segs.into_iter().enumerate() {
            let (plane, row) = (i / per_plane.max(1), i % per_plane.max(1));
            let off = (plane / nx) * sstr[0] + (plane % nx) * sstr[1] + row * unit.rows * sstr[2];
            let src = stage
                .get(off..off + seg_len)
                .ok_or_else(|| internal("stage"))?;
            done.push(seg.put(src).ok_or_else(|| internal("segment length"))?);
        }
        Ok(done)
    }
}

/// Bytes of blocks read at once by one worker of a Fortran-order read.
const GROUP_BYTES: usize = 2 << 20;

std::thread_local! {
    /// Per-thread block and compressed-bytes buffers of Fortran-order reads, reused across
    /// units and calls.
    static BUFFERS: std::cell::RefCell<(Vec<u8>, Vec<u8>, Vec<u8>)> = const {
        std::cell::RefCell::new((Vec::new(), Vec::new(), Vec::new()))
    };
}

/// One block's piece of every row of a destination segment: `len` bytes at `d` in each
/// destination row (rows `row_bytes` apart) from `s` in the block buffer (rows `src_row`
/// apart).
struct Piece {
    d: usize,
    s: usize,
    row_bytes: usize,
    src_row: usize,
}

impl Piece {
    #[inline]
    fn copy(&self, seg: &mut [u8], src: &[u8], len: usize) {
        match len {
            32 => self.fixed::<32>(seg, src),
            64 => self.fixed::<64>(seg, src),
            16 => self.fixed::<16>(seg, src),
            128 => self.fixed::<128>(seg, src),
            8 => self.fixed::<8>(seg, src),
            _ => self.any(seg, src, len),
        }
    }

    fn fixed<const K: usize>(&self, seg: &mut [u8], src: &[u8]) {
        let mut s = self.s;
        for row in seg.chunks_exact_mut(self.row_bytes) {
            let dr = row
                .get_mut(self.d..self.d + K)
                .and_then(|r| <&mut [u8; K]>::try_from(r).ok());
            let sr = src.get(s..s + K).and_then(|r| <&[u8; K]>::try_from(r).ok());
            if let (Some(dr), Some(sr)) = (dr, sr) {
                *dr = *sr;
            }
            s += self.src_row;
        }
    }

    /// Other lengths: two overlapping fixed-size moves up to 64 bytes (no `memcpy` call per
    /// row), `copy_from_slice` above.
    fn any(&self, seg: &mut [u8], src: &[u8], len: usize) {
        match len {
            0 => {}
            1..8 => self.each(seg, src, len, |d, s| d.copy_from_slice(s)),
            8..16 => self.each(seg, src, len, overlapping::<8>),
            16..32 => self.each(seg, src, len, overlapping::<16>),
            32..=64 => self.each(seg, src, len, overlapping::<32>),
            _ => self.each(seg, src, len, |d, s| d.copy_from_slice(s)),
        }
    }

    #[inline(always)]
    fn each(&self, seg: &mut [u8], src: &[u8], len: usize, f: impl Fn(&mut [u8], &[u8])) {
        let mut s = self.s;
        for row in seg.chunks_exact_mut(self.row_bytes) {
            if let (Some(dr), Some(sr)) = (row.get_mut(self.d..self.d + len), src.get(s..s + len)) {
                f(dr, sr);
            }
            s += self.src_row;
        }
    }
}

/// Copies `s` to `d` (equal lengths in `K..=2K`) as two possibly overlapping `K`-byte moves.
#[inline(always)]
fn overlapping<const K: usize>(d: &mut [u8], s: &[u8]) {
    let n = d.len();
    if n < K || s.len() != n {
        return;
    }
    let (Ok(d0), Ok(s0)) = (
        <&mut [u8; K]>::try_from(&mut d[..K]),
        <&[u8; K]>::try_from(&s[..K]),
    ) else {
        return;
    };
    *d0 = *s0;
    let (Ok(d1), Ok(s1)) = (
        <&mut [u8; K]>::try_from(&mut d[n - K..]),
        <&[u8; K]>::try_from(&s[n - K..]),
    ) else {
        return;
    };
    *d1 = *s1;
}

/// A Fortran-order work unit: the voxels of the box with `z0 ≤ z < z0 + segs.len()` and
/// `y0 ≤ y < y0 + ny` (inside one block layer and one block row), all of the box's x. Its
/// destination is one contiguous segment of `ny` rows per z plane.
struct Unit<S> {
    z0: u64,
    y0: u64,
    ny: usize,
    segs: Vec<S>,
}

/// A destination segment of a Fortran-order read: part of a caller's buffer, or of a new
/// array's not yet initialised buffer ([`crate::kernels::uninit::Seg`]).
trait SegOut: Sized + Send {
    /// Proof of a whole-segment write.
    type Done: Send;
    fn seg_len(&self) -> usize;
    fn split(self, n: usize) -> Option<(Self, Self)>;
    /// Writes the whole segment from `src` (`None` if the lengths differ).
    fn put(self, src: &[u8]) -> Option<Self::Done>;
    /// The bytes, for piecewise writes (only initialised buffers).
    fn rows(&mut self) -> Option<&mut [u8]>;
}

impl SegOut for &mut [u8] {
    type Done = ();
    fn seg_len(&self) -> usize {
        self.len()
    }
    fn split(self, n: usize) -> Option<(Self, Self)> {
        self.split_at_mut_checked(n)
    }
    fn put(self, src: &[u8]) -> Option<()> {
        (self.len() == src.len()).then(|| self.copy_from_slice(src))
    }
    fn rows(&mut self) -> Option<&mut [u8]> {
        Some(self)
    }
}

impl<'b> SegOut for crate::kernels::uninit::Seg<'b> {
    type Done = crate::kernels::uninit::Filled<'b>;
    fn seg_len(&self) -> usize {
        self.len()
    }
    fn split(self, n: usize) -> Option<(Self, Self)> {
        self.split_at(n)
    }
    fn put(self, src: &[u8]) -> Option<Self::Done> {
        self.fill(src)
    }
    fn rows(&mut self) -> Option<&mut [u8]> {
        None
    }
}

/// Block-aligned pieces `[lo, hi)` of `[min, max)`.
fn block_bounds(min: u64, max: u64, bs: u32) -> Vec<(u64, u64)> {
    let mut out = Vec::new();
    let mut lo = min;
    while lo < max {
        let hi = (((lo >> bs) + 1) << bs).min(max);
        out.push((lo, hi));
        lo = hi;
    }
    out
}

/// Splits the Fortran-order destination of box `bx` into [`Unit`]s (block layer × block row).
fn split_units<S: SegOut>(bx: &VBox, layout: Layout, data: S, bs: u32) -> Result<Vec<Unit<S>>> {
    let bad = |what: &str| Error::ArrayMismatch(format!("read destination: {what}"));
    let [ex, ey, ez] = bx.extent();
    let row = ex
        .checked_mul(layout.voxel_size())
        .ok_or_else(|| bad("row size overflows usize"))?;
    let plane = row
        .checked_mul(ey)
        .ok_or_else(|| bad("plane size overflows usize"))?;
    if plane == 0 || plane.checked_mul(ez) != Some(data.seg_len()) {
        return Err(bad("buffer does not match the box"));
    }
    let ys = block_bounds(bx.min[1], bx.max[1], bs);
    let zs = block_bounds(bx.min[2], bx.max[2], bs);
    let mut units: Vec<Unit<S>> = Vec::with_capacity(ys.len() * zs.len());
    let mut rest = Some(data);
    for &(zlo, zhi) in &zs {
        let first = units.len();
        let nz = usize::try_from(zhi - zlo).map_err(|_| bad("slab"))?;
        for &(ylo, yhi) in &ys {
            units.push(Unit {
                z0: zlo,
                y0: ylo,
                ny: usize::try_from(yhi - ylo).map_err(|_| bad("row"))?,
                segs: Vec::with_capacity(nz),
            });
        }
        for _ in 0..nz {
            for u in units.get_mut(first..).unwrap_or_default() {
                let n = u.ny.checked_mul(row).ok_or_else(|| bad("segment"))?;
                let (head, tail) = rest
                    .take()
                    .and_then(|r| r.split(n))
                    .ok_or_else(|| bad("segment"))?;
                u.segs.push(head);
                rest = Some(tail);
            }
        }
    }
    if rest.is_some_and(|r| r.seg_len() != 0) {
        return Err(bad("buffer longer than the box"));
    }
    Ok(units)
}

/// Splits the C-order destination of box `bx` into [`Column`]s: block layer along x × block
/// row along y × chunk of z, the chunks whole blocks long and as long as
/// [`COLUMN_STAGE_BYTES`] allows (the whole box's z if it fits).
fn split_columns<S: SegOut>(bx: &VBox, layout: Layout, data: S, bs: u32) -> Result<Vec<Column<S>>> {
    let bad = |what: &str| Error::ArrayMismatch(format!("read destination: {what}"));
    let ts = usize::from(layout.voxel_type.size());
    let [_, _, ez] = bx.extent();
    // Stage bytes per voxel of z of a full column: (x, y) block face times the channels.
    let per_z = layout
        .voxel_size()
        .saturating_mul(1usize << (2 * bs))
        .max(1);
    let blocks_per_chunk = ((COLUMN_STAGE_BYTES / per_z) >> bs).max(1) as u64;
    let zs = if ez.saturating_mul(per_z) <= COLUMN_STAGE_BYTES {
        vec![(bx.min[2], bx.max[2])]
    } else {
        let mut zs = Vec::new();
        let mut lo = bx.min[2];
        while lo < bx.max[2] {
            let hi = (((lo >> bs) + blocks_per_chunk) << bs).min(bx.max[2]);
            zs.push((lo, hi));
            lo = hi;
        }
        zs
    };
    let whole_z = zs.len() == 1;
    let xs = block_bounds(bx.min[0], bx.max[0], bs);
    let ys = block_bounds(bx.min[1], bx.max[1], bs);
    let mut units: Vec<Column<S>> = Vec::with_capacity(xs.len() * ys.len() * zs.len());
    for &(xlo, xhi) in &xs {
        for &(ylo, yhi) in &ys {
            for &(zlo, zhi) in &zs {
                units.push(Column {
                    region: VBox {
                        min: [xlo, ylo, zlo],
                        max: [xhi, yhi, zhi],
                    },
                    rows: if whole_z {
                        usize::try_from(yhi - ylo).map_err(|_| bad("rows"))?
                    } else {
                        1
                    },
                    segs: Vec::new(),
                });
            }
        }
    }
    let mut rest = Some(data);
    let mut take = |unit: usize, n: usize| -> Result<()> {
        let (head, tail) = rest
            .take()
            .and_then(|r| r.split(n))
            .ok_or_else(|| bad("buffer shorter than the box"))?;
        units
            .get_mut(unit)
            .ok_or_else(|| bad("unit"))?
            .segs
            .push(head);
        rest = Some(tail);
        Ok(())
    };
    for _ in 0..layout.num_channels {
        for (ix, &(xlo, xhi)) in xs.iter().enumerate() {
            for _ in xlo..xhi {
                for (iy, &(ylo, yhi)) in ys.iter().enumerate() {
                    let first = (ix * ys.len() + iy) * zs.len();
                    if whole_z {
                        let n = usize::try_from(yhi - ylo)
                            .ok()
                            .and_then(|ny| ny.checked_mul(ez)?.checked_mul(ts))
                            .ok_or_else(|| bad("segment"))?;
                        take(first, n)?;
                        continue;
                    }
                    for _ in ylo..yhi {
                        for (iz, &(zlo, zhi)) in zs.iter().enumerate() {
                            let n = usize::try_from(zhi - zlo)
                                .ok()
                                .and_then(|nz| nz.checked_mul(ts))
                                .ok_or_else(|| bad("segment"))?;
                            take(first + iz, n)?;
                        }
                    }
                }
            }
        }
    }
    if rest.is_some_and(|r| r.seg_len() != 0) {
        return Err(bad("buffer longer than the box"));
    }
    Ok(units)
}
