//! `scifmt wkw …`.
//!
//! `read` and `write` stream the box in slabs (z-slabs in Fortran order, x-slabs in C order),
//! so memory holds one slab of at most [`SLAB_BUDGET`] bytes (or one plane of blocks if that is
//! larger), not the whole box.

use std::path::Path;

use serde_json::{Map, Value, json};
use wkw::{ArrayView, ArrayViewMut, BlockType, Dataset, Header, Order, VoxelType};

use crate::util::{
    At, CliResult, Fail, Output, open_input, print_fields, print_json, print_object, progress,
    read_at,
};
use crate::{BlockArg, OrderArg, VoxelArg};

/// Target size of one slab of a streamed read or write.
const SLAB_BUDGET: u64 = 32 << 20;

fn block_type(b: BlockArg) -> BlockType {
    match b {
        BlockArg::Raw => BlockType::Raw,
        BlockArg::Lz4 => BlockType::Lz4,
        BlockArg::Lz4hc => BlockType::Lz4Hc,
    }
}

fn voxel_type(v: VoxelArg) -> VoxelType {
    match v {
        VoxelArg::U8 => VoxelType::U8,
        VoxelArg::U16 => VoxelType::U16,
        VoxelArg::U32 => VoxelType::U32,
        VoxelArg::U64 => VoxelType::U64,
        VoxelArg::F32 => VoxelType::F32,
        VoxelArg::F64 => VoxelType::F64,
        VoxelArg::I8 => VoxelType::I8,
        VoxelArg::I16 => VoxelType::I16,
        VoxelArg::I32 => VoxelType::I32,
        VoxelArg::I64 => VoxelType::I64,
    }
}

fn header_fields(m: &mut Map<String, Value>, h: &Header) {
    m.insert("version".into(), json!(wkw::VERSION));
    m.insert(
        "voxel_type".into(),
        json!(format!("{:?}", h.voxel_type()).to_lowercase()),
    );
    m.insert("num_channels".into(), json!(h.num_channels()));
    m.insert("voxel_size".into(), json!(h.voxel_size()));
    m.insert(
        "block_type".into(),
        json!(format!("{:?}", h.block_type()).to_lowercase()),
    );
    m.insert("block_len".into(), json!(h.block_len()));
    m.insert("file_len".into(), json!(h.file_len()));
    m.insert("file_len_vx".into(), json!(h.file_len_vx()));
    m.insert("blocks_per_file".into(), json!(h.blocks_per_file()));
    m.insert("block_bytes".into(), json!(h.block_bytes()));
    m.insert("data_offset".into(), json!(h.data_offset()));
}

fn open(dataset: &Path) -> CliResult<Dataset> {
    Dataset::open(dataset).at(dataset)
}

/// Header and data files of a dataset.
pub(crate) fn dataset_info(dataset: &Path) -> CliResult<Map<String, Value>> {
    let ds = open(dataset)?;
    let mut m = Map::new();
    m.insert("format".into(), json!("wkw-dataset"));
    header_fields(&mut m, ds.header());
    let files = ds.list_files().at(dataset)?;
    m.insert("num_files".into(), json!(files.len()));
    let names: Vec<String> = files
        .iter()
        .map(|(_, p)| {
            p.strip_prefix(dataset)
                .unwrap_or(p)
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    m.insert("files".into(), json!(names));
    Ok(m)
}

/// Header of a single `.wkw` file.
/// Header and stored structure of a single `.wkw` data file: for compressed files the jump
/// table summary (stored bytes, smallest / largest block, ratio); nothing is decompressed.
pub(crate) fn file_info(path: &Path) -> CliResult<Map<String, Value>> {
    let info = wkw::inspect_file(path, &wkw::Limits::default()).at(path)?;
    let h = &info.header;
    let mut m = Map::new();
    m.insert("format".into(), json!("wkw-file"));
    m.insert("file_len_bytes".into(), json!(info.file_len));
    header_fields(&mut m, h);
    let stored = info.stored_block_bytes();
    m.insert("stored_block_bytes".into(), json!(stored));
    if let Some(lengths) = &info.block_lengths {
        let raw = h.blocks_per_file().saturating_mul(h.block_bytes());
        m.insert(
            "min_block_bytes".into(),
            json!(lengths.iter().min().copied().unwrap_or(0)),
        );
        m.insert(
            "max_block_bytes".into(),
            json!(lengths.iter().max().copied().unwrap_or(0)),
        );
        #[allow(clippy::cast_precision_loss, reason = "a ratio for display")]
        let ratio = if stored == 0 {
            0.0
        } else {
            raw as f64 / stored as f64
        };
        m.insert(
            "compression_ratio".into(),
            json!((ratio * 1000.0).round() / 1000.0),
        );
    }
    Ok(m)
}

/// `wkw info DATASET [--json]`.
pub(crate) fn info(dataset: &Path, json: bool) -> CliResult {
    let m = dataset_info(dataset)?;
    print_object(m, json);
    Ok(())
}

/// `wkw create DATASET …`.
pub(crate) fn create(
    dataset: &Path,
    voxel: VoxelArg,
    channels: u8,
    block_len: u32,
    file_len: u32,
    block: BlockArg,
) -> CliResult {
    let header = Header::new(
        voxel_type(voxel),
        channels,
        block_len,
        file_len,
        block_type(block),
    )
    .map_err(|e| Fail::usage(crate::util::describe(&e)))?;
    Dataset::create(dataset, header).at(dataset)?;
    Ok(())
}

/// Slab thickness along the slab axis: as many planes as fit [`SLAB_BUDGET`], rounded down to
/// whole blocks (at least one block of planes, at least one plane).
fn slab_step(plane_bytes: u64, block_len: u32) -> u32 {
    let planes = (SLAB_BUDGET / plane_bytes.max(1)).max(1);
    let planes = u32::try_from(planes).unwrap_or(u32::MAX);
    if planes >= block_len {
        planes / block_len * block_len
    } else {
        block_len.max(1)
    }
}

/// The slabs `[a, b)` covering `start..start + len` on an axis, split at absolute multiples of
/// `step` (so compressed files are rewritten at most once per slab row).
fn slabs(start: u32, len: u32, step: u32) -> Vec<(u32, u32)> {
    let mut out = Vec::new();
    let end = u64::from(start) + u64::from(len);
    let mut a = u64::from(start);
    let step = u64::from(step.max(1));
    while a < end {
        let b = ((a / step + 1) * step).min(end);
        // a < b <= end <= 2^33: both fit in u32 after subtracting start.
        out.push((
            u32::try_from(a - u64::from(start)).unwrap_or(u32::MAX),
            u32::try_from(b - a).unwrap_or(u32::MAX),
        ));
        a = b;
    }
    out
}

fn box_bytes(h: &Header, shape: [u32; 3]) -> Option<u64> {
    shape.iter().try_fold(u64::from(h.voxel_size()), |acc, &s| {
        acc.checked_mul(u64::from(s))
    })
}

/// A slab size as `usize`, refusing slabs above the library's read limit (a box whose
/// x-y plane alone of one block depth is that large).
fn usize_of(n: u64, path: &Path) -> CliResult<usize> {
    let limit = wkw::Limits::default().max_read_bytes;
    if n > limit {
        return Err(Fail::input(
            path,
            format!(
                "a slab of {n} bytes exceeds the read limit of {limit} bytes: use a smaller --shape"
            ),
        ));
    }
    usize::try_from(n).map_err(|_| Fail::input(path, format!("{n} bytes do not fit in memory")))
}

/// `wkw read DATASET OUT --offset --shape [--order]`.
pub(crate) fn read(
    dataset: &Path,
    output: &Path,
    offset: [u32; 3],
    shape: [u32; 3],
    ord: OrderArg,
) -> CliResult {
    let ds = open(dataset)?;
    let h = *ds.header();
    let [sx, sy, sz] = shape;
    box_bytes(&h, shape).ok_or_else(|| Fail::usage("--shape is too large"))?;
    let (vt, nc) = (h.voxel_type(), h.num_channels());
    let mut out = Output::create(output)?;
    match ord {
        OrderArg::F => {
            // z-slabs of a Fortran array are contiguous, in output order.
            let plane = u64::from(h.voxel_size()) * u64::from(sx) * u64::from(sy);
            let parts = slabs(offset[2], sz, slab_step(plane, h.block_len()));
            let bar = progress(parts.len() as u64, "read");
            let mut buf = Vec::new();
            for (z0, dz) in parts {
                let n = usize_of(plane * u64::from(dz), output)?;
                buf.resize(n, 0);
                let mut view = ArrayViewMut::new(vt, nc, [sx, sy, dz], Order::Fortran, &mut buf)
                    .at(dataset)?;
                ds.read_into([offset[0], offset[1], offset[2] + z0], &mut view)
                    .at(dataset)?;
                out.write(&buf)?;
                bar.inc(1);
            }
            bar.finish_and_clear();
        }
        OrderArg::C => {
            // x-slabs: in C order of (C, X, Y, Z), channel c of slab x0..x1 is one contiguous
            // run of the output at ((c * X + x0) * Y * Z) * element size.
            let es = u64::from(vt.size());
            let yz = u64::from(sy) * u64::from(sz);
            let plane = es * u64::from(nc) * yz;
            let parts = slabs(offset[0], sx, slab_step(plane, h.block_len()));
            let bar = progress(parts.len() as u64, "read");
            let mut buf = Vec::new();
            for (x0, dx) in parts {
                let n = usize_of(plane * u64::from(dx), output)?;
                buf.resize(n, 0);
                let mut view =
                    ArrayViewMut::new(vt, nc, [dx, sy, sz], Order::C, &mut buf).at(dataset)?;
                ds.read_into([offset[0] + x0, offset[1], offset[2]], &mut view)
                    .at(dataset)?;
                let run = usize_of(es * u64::from(dx) * yz, output)?;
                for (c, part) in buf.chunks(run.max(1)).enumerate() {
                    let pos = (c as u64 * u64::from(sx) + u64::from(x0)) * yz * es;
                    out.write_at(pos, part)?;
                }
                bar.inc(1);
            }
            bar.finish_and_clear();
        }
    }
    out.commit()
}

/// `wkw write DATASET IN --offset --shape [--order]`.
pub(crate) fn write(
    dataset: &Path,
    input: &Path,
    offset: [u32; 3],
    shape: [u32; 3],
    ord: OrderArg,
) -> CliResult {
    let ds = open(dataset)?;
    let h = *ds.header();
    let [sx, sy, sz] = shape;
    let total = box_bytes(&h, shape).ok_or_else(|| Fail::usage("--shape is too large"))?;
    let mut file = open_input(input)?;
    let len = file.metadata().at(input)?.len();
    if len != total {
        return Err(Fail::input(
            input,
            format!(
                "holds {len} bytes, the box {sx}x{sy}x{sz} of {} channel(s) of {:?} needs {total}",
                h.num_channels(),
                h.voxel_type()
            ),
        ));
    }
    let (vt, nc) = (h.voxel_type(), h.num_channels());
    // Slabs aligned to whole files, so each compressed file is rewritten once.
    let file_vx = h.file_len_vx();
    match ord {
        OrderArg::F => {
            let plane = u64::from(h.voxel_size()) * u64::from(sx) * u64::from(sy);
            let step = aligned_step(plane, h.block_len(), file_vx);
            let parts = slabs(offset[2], sz, step);
            let bar = progress(parts.len() as u64, "write");
            let mut buf = Vec::new();
            for (z0, dz) in parts {
                buf.resize(usize_of(plane * u64::from(dz), input)?, 0);
                read_at(&mut file, input, plane * u64::from(z0), &mut buf)?;
                let view = ArrayView::new(vt, nc, [sx, sy, dz], Order::Fortran, &buf).at(input)?;
                ds.write([offset[0], offset[1], offset[2] + z0], &view)
                    .at(dataset)?;
                bar.inc(1);
            }
            bar.finish_and_clear();
        }
        OrderArg::C => {
            let es = u64::from(vt.size());
            let yz = u64::from(sy) * u64::from(sz);
            let plane = es * u64::from(nc) * yz;
            let step = aligned_step(plane, h.block_len(), file_vx);
            let parts = slabs(offset[0], sx, step);
            let bar = progress(parts.len() as u64, "write");
            let mut buf = Vec::new();
            for (x0, dx) in parts {
                buf.resize(usize_of(plane * u64::from(dx), input)?, 0);
                let run = usize_of(es * u64::from(dx) * yz, input)?;
                for (c, part) in buf.chunks_mut(run.max(1)).enumerate() {
                    let pos = (c as u64 * u64::from(sx) + u64::from(x0)) * yz * es;
                    read_at(&mut file, input, pos, part)?;
                }
                let view = ArrayView::new(vt, nc, [dx, sy, sz], Order::C, &buf).at(input)?;
                ds.write([offset[0] + x0, offset[1], offset[2]], &view)
                    .at(dataset)?;
                bar.inc(1);
            }
            bar.finish_and_clear();
        }
    }
    Ok(())
}

/// A slab step that is a whole number of files when a file's depth fits the budget.
fn aligned_step(plane: u64, block_len: u32, file_vx: u32) -> u32 {
    let step = slab_step(plane, block_len);
    if step >= file_vx && file_vx > 0 {
        step / file_vx * file_vx
    } else {
        step
    }
}

/// Runs `f` on a thread pool of `threads` workers (or the default pool).
fn with_threads<T>(threads: Option<usize>, f: impl FnOnce() -> T + Send) -> CliResult<T>
where
    T: Send,
{
    match threads {
        None => Ok(f()),
        Some(0) => Err(Fail::usage("--threads must be at least 1")),
        Some(n) => {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(n)
                .build()
                .map_err(|e| Fail::usage(format!("cannot start {n} threads: {e}")))?;
            Ok(pool.install(f))
        }
    }
}

/// `wkw compress SRC DST [--block-type] [--threads]`.
pub(crate) fn compress(
    src: &Path,
    dst: &Path,
    block: BlockArg,
    threads: Option<usize>,
) -> CliResult {
    if block == BlockArg::Raw {
        return Err(Fail::usage("--block-type must be lz4 or lz4hc"));
    }
    let total = open(src)?.list_files().at(src)?.len();
    let bar = progress(total as u64, "compress");
    let result = with_threads(threads, || {
        wkw::compress(
            src,
            dst,
            block_type(block),
            wkw::Options::default(),
            &|p: wkw::Progress<'_>| {
                bar.set_position(p.done as u64);
            },
        )
    })?;
    bar.finish_and_clear();
    result.at(src)?;
    Ok(())
}

/// `wkw verify DATASET [--json]`: exit 1 if a file has a problem.
pub(crate) fn verify(dataset: &Path, as_json: bool) -> CliResult {
    let total = open(dataset)?.list_files().at(dataset)?.len();
    let bar = progress(total as u64, "verify");
    let report = wkw::verify(dataset, wkw::Options::default(), &|p: wkw::Progress<'_>| {
        bar.set_position(p.done as u64);
    })
    .at(dataset)?;
    bar.finish_and_clear();
    let problems: Vec<Value> = report
        .problems()
        .map(|f| {
            json!({
                "path": f.path.to_string_lossy(),
                "index": f.index,
                "problem": f.problem.as_ref().map(|e| crate::util::describe(e)),
            })
        })
        .collect();
    let n_problems = problems.len();
    let mut m = Map::new();
    m.insert("ok".into(), json!(report.is_ok()));
    m.insert("files".into(), json!(report.files.len()));
    m.insert("problems".into(), Value::Array(problems));
    if as_json {
        print_json(&Value::Object(m));
    } else {
        for p in m
            .get("problems")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let path = p.get("path").and_then(Value::as_str).unwrap_or("?");
            let why = p.get("problem").and_then(Value::as_str).unwrap_or("?");
            println!("{path}: {why}");
        }
        let mut summary = Map::new();
        summary.insert("files".into(), json!(report.files.len()));
        summary.insert("problems".into(), json!(n_problems));
        print_fields(&summary);
    }
    if report.is_ok() {
        Ok(())
    } else {
        Err(Fail::problems(format!(
            "{}: {n_problems} of {} data files have problems",
            dataset.display(),
            report.files.len()
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slabs_split_at_absolute_multiples() {
        assert_eq!(slabs(5, 20, 8), vec![(0, 3), (3, 8), (11, 8), (19, 1)]);
        assert_eq!(slabs(0, 16, 8), vec![(0, 8), (8, 8)]);
        assert_eq!(slabs(0, 0, 8), Vec::<(u32, u32)>::new());
        assert_eq!(slab_step(u64::MAX, 32), 32);
        assert_eq!(u64::from(slab_step(1, 32)), SLAB_BUDGET / 32 * 32);
    }
}
