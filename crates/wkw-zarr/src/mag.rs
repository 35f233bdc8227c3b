//! One mag: a WKW dataset directory (`header.wkw`, `z*/y*/x*.wkw`) ↔ one sharded Zarr v3
//! array. One WKW file is one shard and one block is one inner chunk, so a conversion moves
//! blocks: per block *decode LZ4 (or take raw) → encode zstd (or take raw)*, never re-laying
//! voxels. Blocks are read in batches, decoded and encoded in parallel, and written in order
//! into a staged file that is renamed into place when complete: memory holds one batch
//! (a few blocks per thread) and one shard index, whatever the shard size.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use rayon::prelude::*;
use serde_json::Value;
use wkw::{BlockReader, BlockType, BlockWriter, Dataset, Header};

use crate::codec::ChunkCodec;
use crate::error::{Error, Result};
use crate::meta::{Layout, ZARR_JSON};
use crate::options::{ConvertOptions, Progress, Summary, ZarrCodec};
use crate::shard::{ShardReader, ShardWriter, index_position};

/// What a mag conversion runs with.
pub(crate) struct Ctx<'a> {
    pub(crate) options: &'a ConvertOptions,
    pub(crate) pool: &'a rayon::ThreadPool,
    pub(crate) progress: &'a (dyn Fn(&Progress) + Sync),
}

impl Ctx<'_> {
    /// Blocks per batch: enough to keep every thread busy while the batch is written.
    fn batch(&self) -> u64 {
        (self.pool.current_num_threads() as u64 * 4).max(1)
    }
}

/// The inner-chunk codec `codec` means for a WKW source of `block_type`.
pub(crate) fn chunk_codec(codec: ZarrCodec, block_type: BlockType) -> ChunkCodec {
    match codec {
        ZarrCodec::Auto if block_type.is_compressed() => ChunkCodec::Zstd {
            level: 5,
            checksum: true,
        },
        ZarrCodec::Zstd { level } => ChunkCodec::Zstd {
            level,
            checksum: true,
        },
        _ => ChunkCodec::None,
    }
}

/// Runs `f` over `items`, in parallel on the pool if `parallel`.
fn run<T: Send, R: Send>(
    ctx: &Ctx<'_>,
    parallel: bool,
    items: Vec<T>,
    f: impl Fn(T) -> R + Sync + Send,
) -> Vec<R> {
    if parallel {
        ctx.pool.install(|| items.into_par_iter().map(f).collect())
    } else {
        items.into_iter().map(f).collect()
    }
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

/// Converts the WKW mag at `src` into the Zarr array `dst`; `extent` (the layer's bounding-box
/// end in this mag) makes the array at least that large, and it always covers every file.
pub(crate) fn wkw_to_zarr(
    src: &Path,
    dst: &Path,
    extent: Option<[u64; 3]>,
    ctx: &Ctx<'_>,
) -> Result<Summary> {
    let ds = Dataset::open(src)?;
    let header = *ds.header();
    let mut files = ds.list_files()?;
    files.sort();
    let side = u64::from(header.file_len_vx());
    let mut end = extent.unwrap_or([0; 3]);
    for (idx, _) in &files {
        for d in 0..3 {
            end[d] = end[d].max((u64::from(idx[d]) + 1) * side);
        }
    }
    let codec = chunk_codec(ctx.options.codec, header.block_type());
    let layout = Layout::for_wkw(&header, end, codec);
    fs::create_dir_all(dst).map_err(|e| Error::io(dst, e))?;
    let total = files.len() as u64;
    let done = AtomicU64::new(0);
    // Small files (few blocks): files in parallel, each on one thread; else blocks in parallel.
    let across_files = header.blocks_per_file() < ctx.batch();
    let one = |(idx, path): ([u32; 3], PathBuf)| -> Result<Summary> {
        let key = layout.shard_key(idx.map(u64::from));
        let target = dst.join(&key);
        let s = file_to_shard(&path, &target, &header, &layout, ctx, !across_files)?;
        let n = done.fetch_add(1, Ordering::Relaxed) + 1;
        (ctx.progress)(&Progress {
            done: n,
            total,
            array: dst.to_path_buf(),
        });
        Ok(s)
    };
    let mut summary = Summary {
        arrays: 1,
        ..Summary::default()
    };
    for s in run(ctx, across_files, files, one) {
        summary.add(&s?);
    }
    write_json(&dst.join(ZARR_JSON), &layout.to_json(), ctx)?;
    Ok(summary)
}

/// Writes a JSON document atomically (compact, as tensorstore writes `zarr.json`).
pub(crate) fn write_json(path: &Path, doc: &Value, ctx: &Ctx<'_>) -> Result<()> {
    let text = serde_json::to_vec(doc).map_err(|e| Error::Internal(e.to_string()))?;
    scifmt_io::write_atomically(path, ctx.options.durability, |w| {
        std::io::Write::write_all(w, &text).map_err(|e| Error::io(path, e))
    })
}

/// Converts one WKW file into the shard `target` (skipped if a complete shard is there).
fn file_to_shard(
    path: &Path,
    target: &Path,
    header: &Header,
    layout: &Layout,
    ctx: &Ctx<'_>,
    parallel: bool,
) -> Result<Summary> {
    let max_chunk = layout
        .codec
        .max_stored(usize::try_from(layout.block_bytes()).unwrap_or(usize::MAX))
        as u64;
    if target.exists() && ShardReader::open(target, layout, max_chunk).is_ok() {
        return Ok(Summary {
            shards_skipped: 1,
            ..Summary::default()
        });
    }
    let reader = BlockReader::open(path, &ctx.options.limits)?;
    let fh = reader.header();
    if fh.voxel_type() != header.voxel_type()
        || fh.voxel_size() != header.voxel_size()
        || fh.block_len() != header.block_len()
        || fh.file_len() != header.file_len()
    {
        return Err(Error::corrupt(
            path,
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
    let n = reader.block_count();
    let batch = ctx.batch();
    let mut first = 0;
    while first < n {
        let last = n.min(first + batch);
        let mut items = Vec::with_capacity(usize::try_from(last - first).unwrap_or(0));
        for k in first..last {
            let mut stored = Vec::new();
            reader.read_stored(k, &mut stored)?;
            summary.bytes_in += stored.len() as u64;
            items.push((k, stored));
        }
        let encoded = run(
            ctx,
            parallel,
            items,
            |(k, stored)| -> Result<Option<(u64, Vec<u8>)>> {
                let bad =
                    |e: &dyn std::fmt::Display| Error::corrupt(path, format!("block {k}: {e}"));
                if !block_type.is_compressed() && layout.codec == ChunkCodec::None {
                    return Ok((!all_zero(&stored)).then_some((k, stored)));
                }
                with_raw(block_bytes, |raw| {
                    wkw::decode_block(&stored, block_type, raw).map_err(|e| bad(&e))?;
                    if all_zero(raw) {
                        return Ok(None);
                    }
                    let mut out = Vec::new();
                    layout
                        .codec
                        .encode(raw, &mut out)
                        .ok_or_else(|| bad(&"zstd compression failed"))?;
                    Ok(Some((k, out)))
                })
            },
        );
        for e in encoded {
            let Some((k, bytes)) = e? else { continue };
            let b = morton_code::decode_3d_u64(k)
                .map_err(|e| Error::Internal(format!("block {k}: {e}")))?;
            let w = match &mut writer {
                Some(w) => w,
                None => {
                    if let Some(dir) = target.parent() {
                        fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
                    }
                    writer.insert(ShardWriter::create(target, layout)?)
                }
            };
            w.push(index_position(layout.file_len, b), &bytes)?;
            summary.blocks += 1;
        }
        first = last;
    }
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
pub(crate) fn read_layout(src: &Path) -> Result<Layout> {
    let path = src.join(ZARR_JSON);
    let bytes = fs::read(&path).map_err(|e| Error::io(&path, e))?;
    let doc: Value =
        serde_json::from_slice(&bytes).map_err(|e| Error::metadata(&path, e.to_string()))?;
    Layout::parse(&doc, &path)
}

/// The shards present below the array `src`: `(x, y, z)` shard index and path, sorted.
pub(crate) fn list_shards(src: &Path, layout: &Layout) -> Result<Vec<([u64; 3], PathBuf)>> {
    let grid = layout.shard_grid();
    let mut out = Vec::new();
    let numbers = |dir: &Path| -> Result<Vec<(u64, PathBuf)>> {
        let mut v = Vec::new();
        let rd = match fs::read_dir(dir) {
            Ok(rd) => rd,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(v),
            Err(e) => return Err(Error::io(dir, e)),
        };
        for entry in rd {
            let entry = entry.map_err(|e| Error::io(dir, e))?;
            if let Some(n) = entry
                .file_name()
                .to_str()
                .and_then(|s| s.parse::<u64>().ok())
            {
                v.push((n, entry.path()));
            }
        }
        Ok(v)
    };
    if layout.separator == '/' {
        let base = if layout.has_c {
            src.join("c").join("0")
        } else {
            src.join("c")
        };
        for (x, px) in numbers(&base)? {
            for (y, py) in numbers(&px)? {
                for (z, pz) in numbers(&py)? {
                    if x < grid[0] && y < grid[1] && z < grid[2] && pz.is_file() {
                        out.push(([x, y, z], pz));
                    }
                }
            }
        }
    } else {
        for entry in fs::read_dir(src).map_err(|e| Error::io(src, e))? {
            let entry = entry.map_err(|e| Error::io(src, e))?;
            let name = entry.file_name();
            let Some(rest) = name.to_str().and_then(|n| n.strip_prefix("c.")) else {
                continue;
            };
            let parts: Option<Vec<u64>> = rest.split('.').map(|p| p.parse().ok()).collect();
            let idx = match (parts.as_deref(), layout.has_c) {
                (Some([0, x, y, z]), true) | (Some([x, y, z]), false) => [*x, *y, *z],
                _ => continue,
            };
            if idx.iter().zip(grid).all(|(&i, g)| i < g) {
                out.push((idx, entry.path()));
            }
        }
    }
    out.sort();
    Ok(out)
}

/// Converts the Zarr array at `src` into the WKW mag `dst` (`header.wkw` and one file per
/// shard present).
pub(crate) fn zarr_to_wkw(src: &Path, dst: &Path, ctx: &Ctx<'_>) -> Result<Summary> {
    let layout = read_layout(src)?;
    layout.check_limits(&ctx.options.limits)?;
    let header = layout.wkw_header(ctx.options.block_type, &src.join(ZARR_JSON))?;
    let ds = if dst.join(wkw::HEADER_FILE_NAME).exists() {
        let ds = Dataset::open(dst)?;
        if *ds.header() != header {
            return Err(Error::InvalidArgument(format!(
                "{} holds {:?}, the conversion writes {header:?}",
                dst.join(wkw::HEADER_FILE_NAME).display(),
                ds.header()
            )));
        }
        ds
    } else {
        Dataset::create(dst, header)?
    };
    let shards = list_shards(src, &layout)?;
    let total = shards.len() as u64;
    let done = AtomicU64::new(0);
    let across_files = header.blocks_per_file() < ctx.batch();
    let one = |(idx, path): ([u64; 3], PathBuf)| -> Result<Summary> {
        let file_idx = idx.map(|v| u32::try_from(v).unwrap_or(u32::MAX));
        let target = ds.file_path(file_idx);
        let s = shard_to_file(&path, &target, &header, &layout, ctx, !across_files)?;
        let n = done.fetch_add(1, Ordering::Relaxed) + 1;
        (ctx.progress)(&Progress {
            done: n,
            total,
            array: dst.to_path_buf(),
        });
        Ok(s)
    };
    let mut summary = Summary {
        arrays: 1,
        ..Summary::default()
    };
    for s in run(ctx, across_files, shards, one) {
        summary.add(&s?);
    }
    Ok(summary)
}

/// Converts one shard into the WKW file `target` (skipped if a complete file is there).
fn shard_to_file(
    path: &Path,
    target: &Path,
    header: &Header,
    layout: &Layout,
    ctx: &Ctx<'_>,
    parallel: bool,
) -> Result<Summary> {
    if target.exists() && BlockReader::open(target, &ctx.options.limits).is_ok() {
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
    let shard = ShardReader::open(path, layout, max_chunk)?;
    let mut summary = Summary {
        bytes_in: shard.len(),
        ..Summary::default()
    };
    let block_type = header.block_type();
    let mut zero = Vec::new();
    wkw::encode_block(&vec![0u8; block_bytes], block_type, &mut zero)?;
    if let Some(dir) = target.parent() {
        fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    }
    let mut writer = BlockWriter::create(target, *header)?;
    let n = header.blocks_per_file();
    let batch = ctx.batch();
    let mut first = 0;
    let mut any = false;
    while first < n {
        let last = n.min(first + batch);
        let mut items = Vec::with_capacity(usize::try_from(last - first).unwrap_or(0));
        for k in first..last {
            let b = morton_code::decode_3d_u64(k)
                .map_err(|e| Error::Internal(format!("block {k}: {e}")))?;
            let mut stored = Vec::new();
            let present = shard.read_chunk(index_position(layout.file_len, b), &mut stored)?;
            items.push((k, present.then_some(stored)));
        }
        let encoded = run(
            ctx,
            parallel,
            items,
            |(k, stored)| -> Result<Option<Vec<u8>>> {
                let Some(stored) = stored else {
                    return Ok(None);
                };
                if layout.codec == ChunkCodec::None && !block_type.is_compressed() {
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
                    if !layout.codec.decode(&stored, raw) {
                        return Err(Error::corrupt(
                            shard.path(),
                            format!("chunk of block {k} does not decode to {block_bytes} bytes"),
                        ));
                    }
                    let mut out = Vec::new();
                    wkw::encode_block(raw, block_type, &mut out)?;
                    Ok(Some(out))
                })
            },
        );
        for e in encoded {
            match e? {
                Some(bytes) => {
                    writer.push_stored(&bytes)?;
                    summary.blocks += 1;
                    any = true;
                }
                None => writer.push_stored(&zero)?,
            }
        }
        first = last;
    }
    if !any {
        // No chunk: the file would read as zeros, like an absent one.
        summary.shards_empty += 1;
        return Ok(summary);
    }
    writer.finish(ctx.options.durability)?;
    summary.bytes_out += fs::metadata(target)
        .map_err(|e| Error::io(target, e))?
        .len();
    summary.shards_written += 1;
    Ok(summary)
}
