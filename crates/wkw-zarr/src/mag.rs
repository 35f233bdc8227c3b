//! One mag: a WKW dataset directory (`header.wkw`, `z*/y*/x*.wkw`) ↔ one sharded Zarr v3
//! array. One WKW file is one shard and one block is one inner chunk, so a conversion moves
//! blocks: per block *decode LZ4 (or take raw) → encode zstd (or take raw)*, never re-laying
//! voxels. Blocks are read in batches (one ranged read per block locally; on a store the
//! file's header and jump table in one ranged `GET`, then each batch's blocks in coalesced
//! requests, the next batches while the current one is coded), decoded and encoded in
//! parallel, and written in order into a staged file or a multipart upload that appears under
//! its key when complete: memory holds a few batches (about 4 MiB of blocks each, see
//! [`crate::batches`]), one shard index and the upload's parts in flight, whatever the shard
//! size.
//!
//! A WKW file's jump table comes before its blocks, so a WKW file for a store is written to a
//! local temporary file first and uploaded (in parts) when complete.

use std::sync::atomic::{AtomicU64, Ordering};

use blosc_chunk::BloscConfig;
use serde_json::Value;
use wkw::{BlockReader, BlockWriter, Header};

use crate::batches::{blocks_per_batch, run, stream};
use crate::codec::ChunkCodec;
use crate::error::{Error, Result};
use crate::meta::{Layout, ZARR_JSON, index_position};
use crate::options::{ConvertOptions, Durability, Progress, Summary, ZarrCodec};
use crate::shard::{BlockChunks, ShardReader, ShardWriter};
use scifmt_io::{Location, Prefetched, RangeReader};

/// What a mag conversion runs with.
pub(crate) struct Ctx<'a> {
    pub(crate) options: &'a ConvertOptions,
    pub(crate) pool: &'a rayon::ThreadPool,
    pub(crate) progress: &'a (dyn Fn(&Progress) + Sync),
}

impl Ctx<'_> {
    /// Files (or shards) with fewer blocks than this are converted whole, several at once,
    /// rather than their blocks in parallel: four per thread.
    pub(crate) fn batch(&self) -> u64 {
        (self.pool.current_num_threads() as u64 * 4).max(1)
    }
}

/// The inner-chunk codec `codec` means for a WKW source with `header`.
///
/// # Errors
/// [`Error::InvalidArgument`] for settings out of their domain (a `blosc` `cname` Zarr's
/// `blosc` codec cannot name, `clevel` above 9, `typesize` 0).
pub(crate) fn chunk_codec(codec: ZarrCodec, header: &Header) -> Result<ChunkCodec> {
    Ok(match codec {
        ZarrCodec::Auto if header.block_type().is_compressed() => ChunkCodec::Zstd {
            level: 5,
            checksum: true,
        },
        ZarrCodec::Zstd { level } => ChunkCodec::Zstd {
            level,
            checksum: true,
        },
        ZarrCodec::Blosc {
            cname,
            clevel,
            shuffle,
            typesize,
            blocksize,
        } => {
            let size = header.voxel_type().size();
            if clevel > 9 {
                return Err(Error::InvalidArgument(format!(
                    "blosc clevel {clevel} (need 0–9)"
                )));
            }
            if typesize == Some(0) {
                return Err(Error::InvalidArgument(
                    "blosc typesize 0 (need 1–255)".into(),
                ));
            }
            // zarr-python's choice of shuffle when none is given: by the voxel size.
            let shuffle = shuffle.resolve(usize::from(size));
            let typesize = usize::from(typesize.unwrap_or(size));
            ChunkCodec::Blosc(
                BloscConfig::new(cname, clevel, shuffle, Some(typesize), blocksize)
                    .map_err(|e| Error::InvalidArgument(format!("blosc: {e}")))?,
            )
        }
        _ => ChunkCodec::None,
    })
}

/// Converts every item (a WKW file or a shard) of the array at `dst` with `f`, files in
/// parallel when `across_files`, reporting progress after each, and sums what they did.
fn convert_each<T: Send>(
    ctx: &Ctx<'_>,
    dst: &Location,
    across_files: bool,
    items: Vec<T>,
    f: impl Fn(T) -> Result<Summary> + Sync + Send,
) -> Result<Summary> {
    let total = items.len() as u64;
    let done = AtomicU64::new(0);
    let one = |item: T| -> Result<Summary> {
        ctx.options.cancel.check()?;
        let s = f(item)?;
        let n = done.fetch_add(1, Ordering::Relaxed) + 1;
        (ctx.progress)(&Progress {
            done: n,
            total,
            array: dst.name(),
        });
        Ok(s)
    };
    let mut summary = Summary {
        arrays: 1,
        ..Summary::default()
    };
    for s in run(ctx.pool, across_files, items, one) {
        summary.add(&s?);
    }
    Ok(summary)
}

std::thread_local! {
    /// Per-thread decoded block.
    static RAW: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Runs `f` with this thread's block buffer, sized to `len` bytes.
fn with_raw<R>(len: usize, f: impl FnOnce(&mut [u8]) -> R) -> R {
    RAW.with(|cell| {
        let mut buf = cell.borrow_mut();
        buf.resize(len, 0);
        f(&mut buf[..len])
    })
}

/// The dataset header of the WKW mag at `src` (its `header.wkw`).
pub(crate) fn read_wkw_header(src: &Location) -> Result<Header> {
    let at = src.join(wkw::HEADER_FILE_NAME);
    let bytes = at
        .read_all()?
        .ok_or_else(|| Error::unsupported(at.name(), "no header.wkw: not a WKW mag"))?;
    Header::parse(&bytes).map_err(|e| Error::corrupt(at.name(), e.to_string()))
}

/// The data files of the WKW mag at `src` (`z{z}/y{y}/x{x}.wkw`), sorted.
pub(crate) fn list_wkw_files(src: &Location) -> Result<Vec<Item>> {
    let mut out = Vec::new();
    for (key, len, etag) in src.list()? {
        let parts: Vec<&str> = key.split('/').collect();
        let [z, y, x] = parts[..] else { continue };
        let num = |s: &str, p: &str, suffix: &str| -> Option<u32> {
            let digits = s.strip_prefix(p)?.strip_suffix(suffix)?;
            (!digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()))
                .then(|| digits.parse().ok())
                .flatten()
        };
        if let (Some(x), Some(y), Some(z)) = (num(x, "x", ".wkw"), num(y, "y", ""), num(z, "z", ""))
        {
            out.push(([x, y, z].map(u64::from), key, (len, etag)));
        }
    }
    out.sort_by_key(|(idx, _, _)| [idx[2], idx[1], idx[0]]);
    Ok(out)
}

/// A source file or shard of an array: its `(x, y, z)` index, its key below the array and
/// its listed length and ETag.
pub(crate) type Item = ([u64; 3], String, Known);

/// A listed file's length and ETag.
pub(crate) type Known = (u64, Option<String>);

/// The key of WKW file `(x, y, z)` in its mag.
fn wkw_file_key(idx: [u32; 3]) -> String {
    format!("z{}/y{}/x{}.wkw", idx[2], idx[1], idx[0])
}

/// Block `k` of `blocks` that does not decode: named with its file, index and byte offset, as
/// `wkw::verify` names it.
pub(crate) fn undecodable(blocks: &BlockReader, k: u64, e: &wkw::FormatError) -> Error {
    let what = match (e, blocks.stored_range(k)) {
        (wkw::FormatError::Decompress { expected, .. }, Ok((offset, _))) => {
            wkw::FormatError::Decompress {
                index: k,
                offset,
                expected: *expected,
            }
            .to_string()
        }
        (e, _) => format!("block {k}: {e}"),
    };
    Error::corrupt(blocks.path(), what)
}

/// A WKW data file being read: its header and jump table (one read), then blocks on demand.
pub(crate) struct WkwSource {
    pub(crate) blocks: BlockReader,
    data: RangeReader,
}

impl WkwSource {
    /// Opens the data file `at` (`len` bytes long) of a mag whose header is `header`.
    pub(crate) fn open(
        at: &Location,
        known: Option<Known>,
        header: &Header,
        ctx: &Ctx<'_>,
    ) -> Result<Option<Self>> {
        let Some(data) = at.open(known, &ctx.options.remote)? else {
            return Ok(None);
        };
        let len = data.len();
        // Header and jump table in one read; the jump table's length is checked against the
        // limits when parsed.
        let n = header.blocks_per_file();
        let table =
            if header.block_type().is_compressed() && n <= ctx.options.limits.max_blocks_per_file {
                n.saturating_mul(8)
            } else {
                0
            };
        let head = len.min(16u64.saturating_add(table));
        let mut prefix = Prefetched::new(len);
        prefix.insert(0, data.read_range(0, head)?);
        let blocks = BlockReader::open_storage(Box::new(prefix), at.name(), &ctx.options.limits)?;
        Ok(Some(Self { blocks, data }))
    }

    /// The stored bytes of blocks `ks` (coalesced on a store).
    pub(crate) fn read(&self, ks: &[u64]) -> Result<Vec<Vec<u8>>> {
        let ranges = ks
            .iter()
            .map(|&k| self.blocks.stored_range(k).map(|(s, e)| s..e))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(self
            .data
            .read_ranges(&ranges)?
            .into_iter()
            .map(|b| b.to_vec())
            .collect())
    }
}

/// The largest array extent per axis (voxels): far beyond any WKW mag (2³² voxels per axis),
/// and small enough that shapes rounded up to whole shards never overflow.
pub(crate) const MAX_EXTENT: u64 = 1 << 48;

/// The extent of the Zarr array for the WKW mag at `src` (at least `extent`, the layer's
/// bounding-box end in this mag, and covering every file) and the mag's files.
pub(crate) fn plan_wkw_to_zarr(
    src: &Location,
    extent: Option<[u64; 3]>,
) -> Result<([u64; 3], Vec<Item>)> {
    let header = read_wkw_header(src)?;
    let files = list_wkw_files(src)?;
    let side = u64::from(header.file_len_vx());
    let mut end = extent.unwrap_or([0; 3]);
    for (idx, _, _) in &files {
        for d in 0..3 {
            end[d] = end[d].max(idx[d].saturating_add(1).saturating_mul(side));
        }
    }
    if let Some(&e) = end.iter().find(|&&e| e > MAX_EXTENT) {
        return Err(Error::LimitExceeded {
            what: "array extent (voxels per axis)",
            requested: e,
            limit: MAX_EXTENT,
        });
    }
    Ok((end, files))
}

/// The layout of the Zarr array with voxels `[0, end)` for a WKW mag with `header`.
fn zarr_layout(header: &Header, end: [u64; 3], options: &ConvertOptions) -> Result<Layout> {
    Ok(Layout::for_wkw(
        header,
        end,
        chunk_codec(options.codec, header)?,
    ))
}

/// Converts the files `items` of the WKW mag at `src` into shards of the Zarr array `dst`
/// holding voxels `[0, end)` (its metadata is written by [`finish_zarr`]).
pub(crate) fn wkw_to_zarr(
    src: &Location,
    dst: &Location,
    end: [u64; 3],
    items: Vec<Item>,
    ctx: &Ctx<'_>,
) -> Result<Summary> {
    let header = read_wkw_header(src)?;
    let layout = zarr_layout(&header, end, ctx.options)?;
    dst.create_dir()?;
    // Small files (few blocks): files in parallel, each on one thread; else blocks in parallel.
    let across_files = header.blocks_per_file() < ctx.batch();
    convert_each(ctx, dst, across_files, items, |(idx, key, known): Item| {
        let target = dst.join(&layout.shard_key(idx));
        file_to_shard(
            &src.join(&key),
            known,
            &target,
            &header,
            &layout,
            ctx,
            !across_files,
        )
    })
}

/// Writes the `zarr.json` of the array `dst` converted from the WKW mag at `src`.
pub(crate) fn finish_zarr(
    src: &Location,
    dst: &Location,
    end: [u64; 3],
    options: &ConvertOptions,
) -> Result<()> {
    let header = read_wkw_header(src)?;
    write_json(
        &dst.join(ZARR_JSON),
        &zarr_layout(&header, end, options)?.to_json()?,
        options.durability,
    )
}

/// Writes a JSON document atomically (compact, as tensorstore writes `zarr.json`).
pub(crate) fn write_json(at: &Location, doc: &Value, durability: Durability) -> Result<()> {
    let text = serde_json::to_vec(doc).map_err(|e| Error::Internal(e.to_string()))?;
    Ok(at.write_small(&text, durability)?)
}

/// Converts one WKW file into the shard `target` (skipped if a complete shard is there).
fn file_to_shard(
    file: &Location,
    known: Known,
    target: &Location,
    header: &Header,
    layout: &Layout,
    ctx: &Ctx<'_>,
    parallel: bool,
) -> Result<Summary> {
    let max_chunk = layout
        .codec
        .max_stored(usize::try_from(layout.block_bytes()).unwrap_or(usize::MAX))
        as u64;
    if let Some(r) = target.open(None, &ctx.options.remote)?
        && ShardReader::open(r, layout, max_chunk).is_ok()
    {
        return Ok(Summary {
            shards_skipped: 1,
            ..Summary::default()
        });
    }
    let source = WkwSource::open(file, Some(known), header, ctx)?
        .ok_or_else(|| Error::corrupt(file.name(), "listed, but gone"))?;
    let path = file.name();
    let fh = source.blocks.header();
    if fh.voxel_type() != header.voxel_type()
        || fh.voxel_size() != header.voxel_size()
        || fh.block_len() != header.block_len()
        || fh.file_len() != header.file_len()
    {
        return Err(Error::corrupt(
            &path,
            format!("file header {fh:?} differs from the dataset's header.wkw {header:?}"),
        ));
    }
    let block_type = fh.block_type();
    let block_bytes = usize::try_from(layout.block_bytes()).map_err(|_| Error::LimitExceeded {
        what: "block",
        requested: layout.block_bytes(),
        limit: usize::MAX as u64,
    })?;
    let mut summary = Summary::default();
    let mut writer: Option<ShardWriter> = None;
    let per_batch = blocks_per_batch(ctx.pool.current_num_threads(), layout.block_bytes());
    stream(
        ctx.pool,
        parallel,
        source.blocks.block_count(),
        per_batch,
        |ks| -> Result<Vec<(u64, Vec<u8>)>> {
            ctx.options.cancel.check()?;
            let ks: Vec<u64> = ks.collect();
            let stored = source.read(&ks)?;
            Ok(ks.into_iter().zip(stored).collect())
        },
        |(k, stored)| -> Result<(u64, u64, Option<Vec<u8>>)> {
            let bad = |e: &dyn std::fmt::Display| Error::corrupt(&path, format!("block {k}: {e}"));
            let len = stored.len() as u64;
            if !block_type.is_compressed() && layout.codec == ChunkCodec::None {
                return Ok((k, len, (!all_zero(&stored)).then_some(stored)));
            }
            with_raw(block_bytes, |raw| {
                wkw::decode_block(&stored, block_type, raw)
                    .map_err(|e| undecodable(&source.blocks, k, &e))?;
                if all_zero(raw) {
                    return Ok((k, len, None));
                }
                let mut out = Vec::new();
                layout.codec.encode(raw, &mut out).map_err(|e| bad(&e))?;
                Ok((k, len, Some(out)))
            })
        },
        |(k, len, bytes)| {
            summary.bytes_in += len;
            let Some(bytes) = bytes else { return Ok(()) };
            let b = morton_code::decode_3d_u64(k)
                .map_err(|e| Error::Internal(format!("block {k}: {e}")))?;
            let w = match &mut writer {
                Some(w) => w,
                None => writer.insert(ShardWriter::create(target, layout, &ctx.options.remote)?),
            };
            w.push(index_position(layout.file_len, b), &bytes)?;
            summary.blocks += 1;
            Ok(())
        },
    )?;
    match writer {
        Some(w) => {
            summary.bytes_out += w.finish(ctx.options.durability)?;
            summary.shards_written += 1;
        }
        None => summary.shards_empty += 1,
    }
    Ok(summary)
}

/// Whether every byte is zero (the fill value): checked 64 bytes at a time, which vectorises.
pub(crate) fn all_zero(bytes: &[u8]) -> bool {
    let mut chunks = bytes.chunks_exact(64);
    chunks
        .by_ref()
        .all(|c| c.iter().fold(0u8, |a, &b| a | b) == 0)
        && chunks.remainder().iter().all(|&b| b == 0)
}

/// The Zarr array at `src` (its `zarr.json`).
pub(crate) fn read_layout(src: &Location) -> Result<Layout> {
    let at = src.join(ZARR_JSON);
    let path = at.name();
    let bytes = at
        .read_all()?
        .ok_or_else(|| Error::metadata(&path, "not found"))?;
    let doc: Value =
        serde_json::from_slice(&bytes).map_err(|e| Error::metadata(&path, e.to_string()))?;
    Layout::parse(&doc, &path)
}

/// The shards present below the array `src`: `(x, y, z)` shard index, the shard and its
/// length, sorted.
pub(crate) fn list_shards(
    src: &Location,
    layout: &Layout,
) -> Result<Vec<([u64; 3], Location, Known)>> {
    Ok(shard_items(src, layout)?
        .into_iter()
        .map(|(idx, key, known)| (idx, src.join(&key), known))
        .collect())
}

/// The shards present below the array `src` (keys below it), sorted.
fn shard_items(src: &Location, layout: &Layout) -> Result<Vec<Item>> {
    let grid = layout.shard_grid();
    let mut out = Vec::new();
    for (key, len, etag) in src.list()? {
        let parts: Option<Vec<u64>> = if layout.separator == '/' {
            key.strip_prefix("c/")
                .map(|rest| rest.split('/').map(|p| p.parse().ok()).collect())
                .unwrap_or(None)
        } else {
            key.strip_prefix("c.")
                .filter(|rest| !rest.contains('/'))
                .map(|rest| rest.split('.').map(|p| p.parse().ok()).collect())
                .unwrap_or(None)
        };
        let idx = match (parts.as_deref(), layout.has_c) {
            (Some([0, x, y, z]), true) | (Some([x, y, z]), false) => [*x, *y, *z],
            _ => continue,
        };
        if idx.iter().zip(grid).all(|(&i, g)| i < g) {
            out.push((idx, key, (len, etag)));
        }
    }
    out.sort_by_key(|(idx, _, _)| *idx);
    Ok(out)
}

/// The array at `src` and the WKW header of the mag it converts to.
fn wkw_target(src: &Location, options: &ConvertOptions) -> Result<(Layout, Header)> {
    let layout = read_layout(src)?;
    layout.check_limits(&options.limits)?;
    let header = layout.wkw_header(options.block_type, &src.join(ZARR_JSON).name())?;
    Ok((layout, header))
}

/// Checks that the WKW mag `dst` can take the Zarr array at `src` (a `header.wkw` there is the
/// one the conversion writes) and lists the array's shards.
pub(crate) fn plan_zarr_to_wkw(
    src: &Location,
    dst: &Location,
    options: &ConvertOptions,
) -> Result<Vec<Item>> {
    let (layout, header) = wkw_target(src, options)?;
    let header_at = dst.join(wkw::HEADER_FILE_NAME);
    if let Some(existing) = header_at.read_all()?
        && existing != header.with_data_offset(0).to_bytes()
    {
        return Err(Error::InvalidArgument(format!(
            "{} holds {:?}, the conversion writes {header:?}",
            header_at.name().display(),
            Header::parse(&existing)
                .map_err(|e| Error::corrupt(header_at.name(), e.to_string()))?
        )));
    }
    shard_items(src, &layout)
}

/// Converts the shards `items` of the Zarr array at `src` into files of the WKW mag `dst`
/// (its `header.wkw` is written by [`finish_wkw`]).
pub(crate) fn zarr_to_wkw(
    src: &Location,
    dst: &Location,
    items: Vec<Item>,
    ctx: &Ctx<'_>,
) -> Result<Summary> {
    let (layout, header) = wkw_target(src, ctx.options)?;
    dst.create_dir()?;
    let scratch = match dst {
        Location::Local(_) => None,
        Location::Store(_) => {
            Some(tempfile::tempdir().map_err(|e| Error::io(std::env::temp_dir(), e))?)
        }
    };
    let across_files = header.blocks_per_file() < ctx.batch();
    convert_each(ctx, dst, across_files, items, |(idx, key, known): Item| {
        let file_idx = idx.map(|v| u32::try_from(v).unwrap_or(u32::MAX));
        let target = dst.join(&wkw_file_key(file_idx));
        let scratch = scratch.as_ref().map(tempfile::TempDir::path);
        shard_to_file(
            &src.join(&key),
            known,
            &target,
            scratch,
            &header,
            &layout,
            ctx,
            !across_files,
        )
    })
}

/// Writes the `header.wkw` of the WKW mag `dst` converted from the Zarr array at `src`.
pub(crate) fn finish_wkw(src: &Location, dst: &Location, options: &ConvertOptions) -> Result<()> {
    let (_, header) = wkw_target(src, options)?;
    Ok(dst
        .join(wkw::HEADER_FILE_NAME)
        .write_small(&header.with_data_offset(0).to_bytes(), options.durability)?)
}

/// Converts one shard into the WKW file `target` (skipped if a complete file is there). A
/// file for a store is written into `scratch` first, then uploaded.
#[allow(
    clippy::too_many_arguments,
    reason = "one call site; a struct would only rename them"
)]
fn shard_to_file(
    shard: &Location,
    known: Known,
    target: &Location,
    scratch: Option<&std::path::Path>,
    header: &Header,
    layout: &Layout,
    ctx: &Ctx<'_>,
    parallel: bool,
) -> Result<Summary> {
    if let Ok(Some(_)) = WkwSource::open(target, None, header, ctx) {
        return Ok(Summary {
            shards_skipped: 1,
            ..Summary::default()
        });
    }
    let block_bytes = usize::try_from(layout.block_bytes()).map_err(|_| Error::LimitExceeded {
        what: "block",
        requested: layout.block_bytes(),
        limit: usize::MAX as u64,
    })?;
    let max_chunk = layout.codec.max_stored(block_bytes) as u64;
    let reader = shard
        .open(Some(known), &ctx.options.remote)?
        .ok_or_else(|| Error::corrupt(shard.name(), "listed, but gone"))?;
    let shard = ShardReader::open(reader, layout, max_chunk)?;
    let mut summary = Summary {
        bytes_in: shard.len(),
        ..Summary::default()
    };
    let block_type = header.block_type();
    let mut zero = Vec::new();
    wkw::encode_block(&vec![0u8; block_bytes], block_type, &mut zero)?;
    let local = match (target, scratch) {
        (Location::Local(p), _) => p.clone(),
        (Location::Store(_), Some(dir)) => dir.join(format!("{}.wkw", unique())),
        (Location::Store(_), None) => {
            return Err(Error::Internal(
                "no scratch directory for a remote WKW file".into(),
            ));
        }
    };
    if let Some(dir) = local.parent() {
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    }
    let mut writer = BlockWriter::create(&local, *header)?;
    let mut any = false;
    let per_batch = blocks_per_batch(ctx.pool.current_num_threads(), layout.block_bytes());
    stream(
        ctx.pool,
        parallel,
        header.blocks_per_file(),
        per_batch,
        |ks| -> Result<Vec<(u64, Option<BlockChunks>)>> {
            ctx.options.cancel.check()?;
            let ks: Vec<u64> = ks.collect();
            let coords = ks
                .iter()
                .map(|&k| {
                    morton_code::decode_3d_u64(k)
                        .map_err(|e| Error::Internal(format!("block {k}: {e}")))
                })
                .collect::<Result<Vec<_>>>()?;
            Ok(ks
                .into_iter()
                .zip(shard.read_blocks(layout, &coords)?)
                .collect())
        },
        |(k, parts)| -> Result<Option<Vec<u8>>> {
            let Some(mut parts) = parts else {
                return Ok(None);
            };
            if let [Some(stored)] = &mut parts[..]
                && layout.codec == ChunkCodec::None
                && layout.order.is_none()
                && !block_type.is_compressed()
            {
                let stored = std::mem::take(stored);
                if stored.len() != block_bytes {
                    return Err(Error::corrupt(
                        shard.path(),
                        format!(
                            "chunk of block {k}: {} bytes, expected {block_bytes}",
                            stored.len()
                        ),
                    ));
                }
                return Ok(Some(stored));
            }
            with_raw(block_bytes, |raw| {
                layout.decode_parts(&parts, raw).map_err(|e| {
                    Error::corrupt(shard.path(), format!("chunk of block {k}: {e}"))
                })?;
                let mut out = Vec::new();
                wkw::encode_block(raw, block_type, &mut out)?;
                Ok(Some(out))
            })
        },
        |coded| {
            match coded {
                Some(bytes) => {
                    writer.push_stored(&bytes)?;
                    summary.blocks += 1;
                    any = true;
                }
                None => writer.push_stored(&zero)?,
            }
            Ok(())
        },
    )?;
    if !any {
        // No chunk: the file would read as zeros, like an absent one.
        summary.shards_empty += 1;
        return Ok(summary);
    }
    let durability = match target {
        Location::Local(_) => ctx.options.durability,
        Location::Store(_) => wkw::Durability::None,
    };
    writer.finish(durability)?;
    summary.bytes_out += std::fs::metadata(&local)
        .map_err(|e| Error::io(&local, e))?
        .len();
    if let Location::Store(_) = target {
        let uploaded = upload_file(&local, target, ctx);
        std::fs::remove_file(&local).map_err(|e| Error::io(&local, e))?;
        uploaded?;
    }
    summary.shards_written += 1;
    Ok(summary)
}

/// A number no other call in this process returns (scratch file names).
fn unique() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// Uploads the local file `local` to `target`, streaming it in parts.
fn upload_file(local: &std::path::Path, target: &Location, ctx: &Ctx<'_>) -> Result<()> {
    use std::io::Read;
    let mut file = std::fs::File::open(local).map_err(|e| Error::io(local, e))?;
    let mut sink = target.create(&ctx.options.remote)?;
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = file.read(&mut buf).map_err(|e| Error::io(local, e))?;
        if n == 0 {
            break;
        }
        sink.write_all(&buf[..n])?;
    }
    Ok(sink.finish(ctx.options.durability)?)
}
