//! Writing boxes: [`Dataset::write`].
//!
//! Raw files are updated in place block by block (read-modify-write for partly covered
//! blocks), like the reference; a missing raw file is first created full length (sparse) under
//! a temporary name and renamed into place. Compressed files are always rebuilt: untouched
//! blocks are copied as compressed bytes, partly covered blocks are decoded, merged and
//! recompressed, the result goes to a uniquely named temporary file in the same directory and is
//! renamed over the old file. Writers of the same file are serialised by an advisory lock on
//! its lock file in `.wkw-locks/` (module `lock`).

use std::fs::{self, File, OpenOptions};
use std::io;
use std::ops::Range;
use std::path::Path;
use std::sync::Arc;

use crate::dataset::array::{ArrayView, Order};
use crate::dataset::root::Dataset;
use crate::error::{Error, FormatError, Result};
use crate::format::file::{FileMeta, OpenFailure, write_compressed_head};
use crate::format::geometry::{VBox, blocks_in, files_in, try_offset_of};
use crate::format::header::Header;
use crate::format::lz4;
use crate::io::fsio::write_all_at;
use crate::io::lock::lock;
use crate::io::storage::FsFile;
use crate::kernels::arena::Arena;
use crate::kernels::column::{Block, Staged, block_box, columns};
use crate::kernels::copy::{copy_4d, copy_4d_direct};
use crate::kernels::par::Workers;
use crate::options::{Durability, MissingOrCorrupt};
use scifmt_io::ReadAt;
use scifmt_io::Staged as Staging;

/// Raw blocks held in memory at once while rebuilding a compressed file (upper bound in bytes).
const CHUNK_BYTES: u64 = 64 << 20;

impl Dataset {
    /// Writes `data` (shape (C, X, Y, Z), either order) at `offset` (x, y, z).
    ///
    /// Any box is accepted, also in compressed datasets (touched files are decoded, merged and
    /// recompressed; the reference only accepts whole-file writes there). Files are processed in
    /// parallel; a failure in one file leaves the other files written (no multi-file rollback).
    ///
    /// # Errors
    /// [`Error::ArrayMismatch`] for another voxel type or channel count; [`Error::BoxOutOfRange`];
    /// [`Error::Format`] if an existing file is corrupt (unless [`MissingOrCorrupt::Zeros`], which
    /// rewrites it like the reference) or its header does not match; [`Error::Io`];
    /// [`Error::Unsupported`] for a dataset opened with [`Dataset::open_storage`];
    /// [`Error::Cancelled`] once [`crate::Options::cancel`] is raised (checked before each
    /// file; the files written so far stay written).
    pub fn write(&self, offset: [u32; 3], data: &ArrayView<'_>) -> Result<()> {
        self.check_local()?;
        self.check_layout(&data.layout)?;
        let bx = VBox::new(offset, data.layout.shape)?;
        if bx.is_empty() {
            return Ok(());
        }
        let (flo, fhi) = bx.cube_range(self.header.file_len_vx_log2());
        let files: Vec<[u32; 3]> = files_in(flo, fhi).collect();
        // While it holds a file's lock, a writer never waits for rayon work (see `Workers`):
        // one file's blocks are spread over threads of this call, several files over the pool,
        // each file's blocks on the thread that locked it.
        if let [idx] = files[..] {
            self.options.cancel.check()?;
            let r = self.write_file(idx, &bx, data, Workers::locked(self.options.threads));
            self.cache.invalidate(idx);
            return r;
        }
        crate::kernels::par::try_for_each(self.options.threads, files, |idx| {
            self.options.cancel.check()?;
            let r = self.write_file(idx, &bx, data, Workers::Caller);
            self.cache.invalidate(idx);
            r
        })
    }

    /// Writes the part of `src` (the box `bx`) inside data file `idx`, holding the file's lock;
    /// the blocks are processed by `workers`, which must not be [`Workers::Rayon`] where other
    /// writers of the dataset may run in the same pool.
    pub(crate) fn write_file(
        &self,
        idx: [u32; 3],
        bx: &VBox,
        src: &ArrayView<'_>,
        workers: Workers,
    ) -> Result<()> {
        let path = self.file_path(idx);
        let dir = path
            .parent()
            .map_or_else(|| self.root.clone(), Path::to_path_buf);
        fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
        let _lock = lock(&self.root, idx)?;
        let fbox = VBox::cube(idx, self.header.file_len_vx_log2());
        let region = bx.intersect(&fbox);
        let existing = self.open_existing(&path)?;
        let file_header = existing
            .as_ref()
            .map_or_else(|| self.header.for_data_file(), |(_, m)| m.header);
        let job = FileJob {
            ds: self,
            workers,
            path: &path,
            fbox,
            region,
            bx,
            src,
        };
        if file_header.block_type().is_compressed() {
            job.write_compressed(existing, file_header)
        } else {
            job.write_raw(existing)
        }
    }

    /// The existing file opened read+write with its validated metadata; `None` if absent (or
    /// unreadable under [`MissingOrCorrupt::Zeros`], which then rewrites it).
    fn open_existing(&self, path: &Path) -> Result<Option<(FsFile, Arc<FileMeta>)>> {
        let file = match OpenOptions::new().read(true).write(true).open(path) {
            Ok(f) => FsFile::new(f).map_err(|e| Error::io(path, e))?,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(Error::io(path, e)),
        };
        match FileMeta::parse(&file, &self.options.limits, path) {
            Ok(meta) => {
                self.check_file_header(&meta.header, path)?;
                Ok(Some((file, Arc::new(meta))))
            }
            Err(OpenFailure::Unreadable(_))
                if self.options.missing_or_corrupt == MissingOrCorrupt::Zeros =>
            {
                Ok(None)
            }
            Err(OpenFailure::Unreadable(e)) => Err(Error::format(path, e)),
            Err(OpenFailure::Hard(e)) => Err(e),
        }
    }
}

std::thread_local! {
    /// Per-thread column stage and block buffer of C-order writes.
    static COLUMN: std::cell::RefCell<(Vec<u8>, Vec<u8>)> = const {
        std::cell::RefCell::new((Vec::new(), Vec::new()))
    };
}

struct FileJob<'a> {
    ds: &'a Dataset,
    /// Where the file's blocks are processed (under its lock).
    workers: Workers,
    path: &'a Path,
    fbox: VBox,
    /// The part of the write box inside this file.
    region: VBox,
    /// The whole write box (origin of `src`).
    bx: &'a VBox,
    src: &'a ArrayView<'a>,
}

impl FileJob<'_> {
    fn header(&self) -> &Header {
        &self.ds.header
    }

    fn block_box(&self, bc: [u32; 3]) -> VBox {
        block_box(self.fbox.min, bc, u32::from(self.header().block_len_log2()))
    }

    /// Copies the source voxels inside `bbox` into the raw block `block`.
    fn fill_block(&self, block: &mut [u8], bbox: &VBox) -> Result<()> {
        self.fill_block_from(block, bbox, None, &[])
    }

    /// Copies the source part of the column of blocks `col` (inside the write region) into
    /// `stage` ([`Staged`]); `None` if the column does not touch the region.
    fn stage_column(&self, col: &[Block], stage: &mut Vec<u8>) -> Result<Option<Staged>> {
        let h = self.header();
        let ts = usize::from(h.voxel_type().size());
        let nc = usize::from(h.num_channels());
        let bs = u32::from(h.block_len_log2());
        let Some((staged, part)) =
            Staged::prepare(col, self.fbox.min, bs, &self.region, nc, ts, stage)?
        else {
            return Ok(None);
        };
        let [ex, ey, ez] = part.extent();
        let sstr = self.src.layout.strides();
        let s = try_offset_of(part.min, self.bx.min, [sstr[1], sstr[2], sstr[3]])?;
        copy_4d(
            stage,
            0,
            staged.strides,
            self.src.data,
            s,
            sstr,
            [nc, ex, ey, ez],
            ts,
        );
        Ok(Some(staged))
    }

    /// [`FileJob::fill_block`] from a staged column (or from the source if `staged` is
    /// `None`).
    fn fill_block_from(
        &self,
        block: &mut [u8],
        bbox: &VBox,
        staged: Option<&Staged>,
        stage: &[u8],
    ) -> Result<()> {
        // The source: the caller's array, or a staged column already in block-friendly order.
        let (src, src_min, sstr) = match staged {
            Some(st) => (stage, st.min, st.strides),
            None => (self.src.data, self.bx.min, self.src.layout.strides()),
        };
        let h = self.header();
        let ts = usize::from(h.voxel_type().size());
        let vs = usize::from(h.voxel_size());
        let blen = 1usize << h.block_len_log2();
        let bstr = [vs, vs * blen, vs * blen * blen];
        let rr = self.region.intersect(bbox);
        if rr.is_empty() {
            return Ok(());
        }
        let d = try_offset_of(rr.min, bbox.min, bstr)?;
        let s = try_offset_of(rr.min, src_min, [sstr[1], sstr[2], sstr[3]])?;
        let [ex, ey, ez] = rr.extent();
        let dst_str = [ts, bstr[0], bstr[1], bstr[2]];
        let extent = [usize::from(h.num_channels()), ex, ey, ez];
        if staged.is_some() {
            copy_4d_direct(block, d, dst_str, src, s, sstr, extent, ts);
        } else {
            copy_4d(block, d, dst_str, src, s, sstr, extent, ts);
        }
        Ok(())
    }

    fn block_len(&self) -> Result<usize> {
        let n = self.header().block_bytes();
        if n > self.ds.options.limits.max_block_bytes {
            return Err(Error::LimitExceeded {
                what: "raw block",
                requested: n,
                limit: self.ds.options.limits.max_block_bytes,
            });
        }
        usize::try_from(n).map_err(|_| Error::LimitExceeded {
            what: "raw block",
            requested: n,
            limit: usize::MAX as u64,
        })
    }

    /// Rewrites raw block `k` (voxels `bbox`) of `file` in place: read first unless the write
    /// region covers the block whole, then `fill` copies the source part into `block`.
    fn update_raw_block(
        &self,
        file: &File,
        meta: &Header,
        k: u64,
        bbox: &VBox,
        block: &mut [u8],
        fill: impl FnOnce(&mut [u8]) -> Result<()>,
    ) -> Result<()> {
        let start = k
            .checked_mul(meta.block_bytes())
            .and_then(|v| v.checked_add(meta.data_offset()))
            .ok_or_else(|| Error::internal("block offset overflows"))?;
        if !self.region.covers(bbox) {
            ReadAt::read_exact_at(file, block, start).map_err(|e| Error::io(self.path, e))?;
        }
        fill(block)?;
        write_all_at(file, block, start).map_err(|e| Error::io(self.path, e))
    }

    fn write_raw(&self, existing: Option<(FsFile, Arc<FileMeta>)>) -> Result<()> {
        let durability = self.ds.options.durability;
        let (file, meta) = match existing {
            Some((f, m)) => (f.file, m.header),
            None => {
                let header = self.header().for_data_file();
                let full = header.raw_file_len().ok_or_else(|| {
                    Error::format(
                        self.path,
                        FormatError::DataOffset {
                            found: 16,
                            why: "raw file length overflows".into(),
                        },
                    )
                })?;
                let tmp = Staging::create(self.path)?;
                write_all_at(tmp.file(), &header.to_bytes(), 0)
                    .and_then(|()| tmp.file().set_len(full))
                    .map_err(|e| Error::io(tmp.target(), e))?;
                tmp.persist(durability)?;
                let f = OpenOptions::new()
                    .read(true)
                    .write(true)
                    .open(self.path)
                    .map_err(|e| Error::io(self.path, e))?;
                (f, header)
            }
        };
        let full = meta.raw_file_len().unwrap_or(u64::MAX);
        let len = file.metadata().map_err(|e| Error::io(self.path, e))?.len();
        if len < full {
            if self.ds.options.missing_or_corrupt == MissingOrCorrupt::Zeros {
                file.set_len(full).map_err(|e| Error::io(self.path, e))?;
            } else {
                return Err(Error::format(
                    self.path,
                    FormatError::BlockPastEnd {
                        index: meta.blocks_per_file() - 1,
                        end: full,
                        file_len: len,
                    },
                ));
            }
        }
        let block_len = self.block_len()?;
        let bs = u32::from(meta.block_len_log2());
        let blocks = blocks_in(&self.region, self.fbox.min, bs)?;
        let file = &file;
        if self.src.layout.order == Order::C {
            // Transposing: one task per column of blocks, its source staged once.
            let cols = columns(blocks);
            return crate::kernels::par::try_for_each(self.workers, cols, |col| {
                COLUMN.with_borrow_mut(|(stage, block)| {
                    if block.len() != block_len {
                        *block = vec![0u8; block_len];
                    }
                    let staged = self.stage_column(&col, stage)?;
                    for &(k, bc) in &col {
                        let bbox = self.block_box(bc);
                        self.update_raw_block(file, &meta, k, &bbox, block, |b| {
                            self.fill_block_from(b, &bbox, staged.as_ref(), stage)
                        })?;
                    }
                    Ok(())
                })
            })
            .and_then(|()| {
                if durability == Durability::Fsync {
                    file.sync_data().map_err(|e| Error::io(self.path, e))?;
                }
                Ok(())
            });
        }
        crate::kernels::par::try_for_each_with_buf(
            self.workers,
            blocks,
            block_len,
            |(k, bc), block| {
                let bbox = self.block_box(bc);
                self.update_raw_block(file, &meta, k, &bbox, block, |b| self.fill_block(b, &bbox))
            },
        )?;
        if durability == Durability::Fsync {
            file.sync_data().map_err(|e| Error::io(self.path, e))?;
        }
        Ok(())
    }

    fn write_compressed(
        &self,
        existing: Option<(FsFile, Arc<FileMeta>)>,
        header: Header,
    ) -> Result<()> {
        let header = header.for_data_file();
        let block_type = header.block_type();
        let block_len = self.block_len()?;
        let n = header.blocks_per_file();
        let limits = &self.ds.options.limits;
        if n > limits.max_blocks_per_file {
            return Err(Error::LimitExceeded {
                what: "jump table entries",
                requested: n,
                limit: limits.max_blocks_per_file,
            });
        }
        let tmp = Staging::create(self.path)?;
        let zero_block = lz4::compress(&vec![0u8; block_len], block_type)?;
        let enc = Encode {
            existing: existing.as_ref(),
            zero_block: &zero_block,
            block_type,
            room: lz4::room(block_len, block_type)?,
        };
        let per_chunk = (CHUNK_BYTES / header.block_bytes().max(1)).clamp(1, 4096);
        let mut out = Appender {
            file: tmp.file(),
            path: tmp.path(),
            pos: header.data_offset(),
            ends: Vec::new(),
        };
        let mut k0 = 0u64;
        while k0 < n {
            let k1 = (k0 + per_chunk).min(n);
            out.append(self.encode_chunk(k0, k1, &enc)?)?;
            k0 = k1;
        }
        let (pos, ends) = (out.pos, out.ends);
        write_compressed_head(tmp.file(), tmp.target(), &header, &ends)?;
        tmp.file()
            .set_len(pos)
            .map_err(|e| Error::io(tmp.target(), e))?;
        tmp.persist(self.ds.options.durability)?;
        remove_reference_leftover(self.path);
        if let Some((old, _)) = existing {
            crate::kernels::closer::close(old.file, self.ds.options.threads);
        }
        Ok(())
    }

    /// Encodes blocks `k0..k1` of the rebuilt file in parallel: tasks of blocks, each with the
    /// arena holding its encoded blocks and their places in it.
    fn encode_chunk(&self, k0: u64, k1: u64, enc: &Encode<'_>) -> Result<Vec<EncodedTask>> {
        let ks: Vec<u64> = (k0..k1).collect();
        if self.src.layout.order == Order::C {
            // Transposing: one task per column of blocks, its source staged once.
            let cols = columns(
                ks.into_iter()
                    .map(|k| {
                        morton_code::decode_3d_u64(k)
                            .map(|c| (k, c))
                            .map_err(|e| Error::internal(format!("block index: {e}")))
                    })
                    .collect::<Result<Vec<_>>>()?,
            );
            crate::kernels::par::try_map(self.workers, cols, |col| {
                COLUMN.with_borrow_mut(|(stage, block)| {
                    let staged = self.stage_column(&col, stage)?;
                    let mut arena = Arena::take();
                    let mut at = Vec::with_capacity(col.len());
                    for &(k, _) in &col {
                        let st = staged.as_ref().map(|c| (c, stage.as_slice()));
                        at.push((k, self.encode_block(k, enc, st, block, &mut arena)?));
                    }
                    Ok((arena, at))
                })
            })
        } else {
            // Runs of consecutive blocks (neighbours in the file and in the source).
            let runs: Vec<Vec<u64>> = ks.chunks(8).map(<[u64]>::to_vec).collect();
            crate::kernels::par::try_map(self.workers, runs, |run| {
                COLUMN.with_borrow_mut(|(_, block)| {
                    let mut arena = Arena::take();
                    let mut at = Vec::with_capacity(run.len());
                    for &k in &run {
                        at.push((k, self.encode_block(k, enc, None, block, &mut arena)?));
                    }
                    Ok((arena, at))
                })
            })
        }
    }

    /// Appends the compressed bytes of block `k` of the rebuilt file to `arena`; `block` is
    /// scratch space. Returns where they are.
    fn encode_block(
        &self,
        k: u64,
        enc: &Encode<'_>,
        staged: Option<(&Staged, &[u8])>,
        block: &mut Vec<u8>,
        arena: &mut Arena,
    ) -> Result<Range<usize>> {
        let bc = morton_code::decode_3d_u64(k)
            .map_err(|e| Error::internal(format!("block index {k}: {e}")))?;
        let bbox = self.block_box(bc);
        let touched = self.region.intersect(&bbox);
        if touched.is_empty() {
            return match enc.existing {
                Some((f, m)) => {
                    let (start, end) = m.block_range(k).unwrap_or((0, 0));
                    let len = usize::try_from(end - start).unwrap_or(0);
                    arena.append(len, |dst| {
                        ReadAt::read_exact_at(&f.file, dst, start)
                            .map(|()| len)
                            .map_err(|e| Error::io(self.path, e))
                    })
                }
                None => arena.append(enc.zero_block.len(), |dst| {
                    dst.copy_from_slice(enc.zero_block);
                    Ok(dst.len())
                }),
            };
        }
        let block_len = self.block_len()?;
        block.resize(block_len, 0);
        if !self.region.covers(&bbox) {
            // The voxels outside the region: the existing block's, or zeros.
            match enc.existing {
                Some((f, m)) => {
                    let mut scratch = Vec::new();
                    m.read_block(f, k, &mut scratch, block, self.path)?;
                }
                None => block.fill(0),
            }
        }
        match staged {
            Some((st, stage)) => self.fill_block_from(block, &bbox, Some(st), stage)?,
            None => self.fill_block(block, &bbox)?,
        }
        arena.append(enc.room, |dst| {
            lz4::compress_into(block, enc.block_type, dst)
        })
    }
}

/// The temporary file being filled with encoded blocks in block order.
struct Appender<'a> {
    file: &'a File,
    path: &'a Path,
    /// Where the next block goes.
    pos: u64,
    /// The end offset of every block written so far.
    ends: Vec<u64>,
}

impl Appender<'_> {
    /// Writes the blocks of `encoded` in block order and gives their arenas back.
    fn append(&mut self, encoded: Vec<EncodedTask>) -> Result<()> {
        let mut order: Vec<(u64, usize, Range<usize>)> = encoded
            .iter()
            .enumerate()
            .flat_map(|(a, (_, at))| at.iter().map(move |(k, r)| (*k, a, r.clone())))
            .collect();
        order.sort_unstable_by_key(|e| e.0);
        for (_, a, range) in order {
            let bytes = encoded[a].0.get(range);
            write_all_at(self.file, bytes, self.pos).map_err(|e| Error::io(self.path, e))?;
            self.pos += bytes.len() as u64;
            self.ends.push(self.pos);
        }
        for (arena, _) in encoded {
            arena.give_back();
        }
        Ok(())
    }
}

/// The encoded blocks of one task: their arena, and each block's index and bytes in it.
type EncodedTask = (Arena, Vec<(u64, Range<usize>)>);

/// What [`FileJob::encode_block`] needs besides the block: the file being replaced, the
/// compressed all-zero block, the block type and the room one compressed block may need.
struct Encode<'a> {
    existing: Option<&'a (FsFile, Arc<FileMeta>)>,
    zero_block: &'a [u8],
    block_type: crate::BlockType,
    room: usize,
}

/// The reference implementation (wkw 1.1.24) writes a compressed file as `<name>.wkw_tmp` beside
/// it and renames that into place, so a write of it that was interrupted leaves the temporary
/// file behind, and its next write of the same file replaces the leftover. A compressed write of
/// ours removes it too once the new file is in place, so that datasets written by both keep no
/// stale leftovers. (Raw files are written in place by both: no leftover to clean.) Failing to
/// remove it is not an error of the write.
fn remove_reference_leftover(path: &Path) {
    let _ = fs::remove_file(path.with_extension("wkw_tmp"));
}
