//! `wkw read` and `wkw write`: a box moved between a dataset and a raw file in slabs.
//!
//! Slabs are z-slabs in Fortran order and x-slabs in C order, so memory holds one slab of at
//! most [`SLAB_BUDGET`] bytes (or one plane of blocks if that is larger), not the whole box.
//!
//! With `-`, `read` writes stdout in order: Fortran order and single-channel C order are one
//! pass; multi-channel C order (channel slowest) reads the box once per channel. `write` from
//! stdin first copies exactly the box's bytes into an anonymous temporary file, so an input of
//! the wrong size is refused before the dataset is touched, as for a file.

use std::fs::File;
use std::path::{Path, PathBuf};

use clap::{Args, ValueEnum};
use wkw::{ArrayView, ArrayViewMut, Dataset, Header, Order};

use crate::args::parse_xyz;
use crate::fail::{At, CliResult, Fail};
use crate::inout::{Output, in_name, is_std, open_input, out_name, read_at, spool_stdin};
use crate::progress::progress;

/// Target size of one slab of a streamed read or write.
const SLAB_BUDGET: u64 = 32 << 20;

/// Array layout of a WKW read/write file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum OrderArg {
    /// Fortran order: channel fastest, then x, y, z (the reference layout).
    F,
    /// C order of the (C, X, Y, Z) array: z fastest, channel slowest.
    C,
}

/// The box and layout shared by `wkw read` and `wkw write`.
#[derive(Debug, Args)]
pub(crate) struct BoxArgs {
    /// Box corner X,Y,Z.
    #[arg(long, value_parser = parse_xyz)]
    offset: [u32; 3],
    /// Box size X,Y,Z.
    #[arg(long, value_parser = parse_xyz)]
    shape: [u32; 3],
    /// Layout of the raw file.
    #[arg(long, value_enum, default_value = "f")]
    order: OrderArg,
}

/// `wkw read`.
#[derive(Debug, Args)]
pub(crate) struct ReadArgs {
    /// Dataset root.
    dataset: PathBuf,
    /// Output file (`-`: stdout).
    output: PathBuf,
    #[command(flatten)]
    bx: BoxArgs,
}

/// `wkw write`.
#[derive(Debug, Args)]
pub(crate) struct WriteArgs {
    /// Dataset root.
    dataset: PathBuf,
    /// Input file (`-`: stdin).
    input: PathBuf,
    #[command(flatten)]
    bx: BoxArgs,
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

/// A slab step that is a whole number of files when a file's depth fits the budget.
fn aligned_step(plane: u64, block_len: u32, file_vx: u32) -> u32 {
    let step = slab_step(plane, block_len);
    if step >= file_vx && file_vx > 0 {
        step / file_vx * file_vx
    } else {
        step
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
pub(crate) fn read(a: &ReadArgs) -> CliResult {
    let (dataset, output) = (a.dataset.as_path(), out_name(&a.output));
    let BoxArgs {
        offset,
        shape,
        order,
    } = a.bx;
    let ds = Dataset::open(dataset).at(dataset)?;
    let h = *ds.header();
    let [sx, sy, sz] = shape;
    box_bytes(&h, shape).ok_or_else(|| Fail::usage("--shape is too large"))?;
    let (vt, nc) = (h.voxel_type(), h.num_channels());
    let mut out = Output::create(&a.output)?;
    match order {
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
            // A file takes every channel's run in one pass; stdout takes them in order, one
            // channel per pass.
            let passes: Vec<Option<usize>> = if out.is_seekable() || nc == 1 {
                vec![None]
            } else {
                (0..usize::from(nc)).map(Some).collect()
            };
            let bar = progress((parts.len() * passes.len()) as u64, "read");
            let mut buf = Vec::new();
            for pass in passes {
                for &(x0, dx) in &parts {
                    let n = usize_of(plane * u64::from(dx), output)?;
                    buf.resize(n, 0);
                    let mut view =
                        ArrayViewMut::new(vt, nc, [dx, sy, sz], Order::C, &mut buf).at(dataset)?;
                    ds.read_into([offset[0] + x0, offset[1], offset[2]], &mut view)
                        .at(dataset)?;
                    let run = usize_of(es * u64::from(dx) * yz, output)?;
                    for (c, part) in buf.chunks(run.max(1)).enumerate() {
                        if pass.is_none_or(|p| p == c) {
                            let pos = (c as u64 * u64::from(sx) + u64::from(x0)) * yz * es;
                            out.write_at(pos, part)?;
                        }
                    }
                    bar.inc(1);
                }
            }
            bar.finish_and_clear();
        }
    }
    out.commit()
}

/// The raw input of `wkw write`, checked to hold exactly `total` bytes: a file, or stdin
/// copied into a temporary file.
fn box_input(input: &Path, total: u64, describe_box: impl Fn() -> String) -> CliResult<File> {
    let (file, len) = if is_std(input) {
        spool_stdin(total)?
    } else {
        let file = open_input(input)?;
        let len = file.metadata().at(input)?.len();
        (file, len)
    };
    if len != total {
        let holds = if is_std(input) && len > total {
            format!("holds more than {total} bytes")
        } else {
            format!("holds {len} bytes")
        };
        return Err(Fail::input(
            in_name(input),
            format!("{holds}, {} needs {total}", describe_box()),
        ));
    }
    Ok(file)
}

/// `wkw write DATASET IN --offset --shape [--order]`.
pub(crate) fn write(a: &WriteArgs) -> CliResult {
    let (dataset, input) = (a.dataset.as_path(), in_name(&a.input));
    let BoxArgs {
        offset,
        shape,
        order,
    } = a.bx;
    let ds = Dataset::open(dataset).at(dataset)?;
    let h = *ds.header();
    let [sx, sy, sz] = shape;
    let total = box_bytes(&h, shape).ok_or_else(|| Fail::usage("--shape is too large"))?;
    let mut file = box_input(&a.input, total, || {
        format!(
            "the box {sx}x{sy}x{sz} of {} channel(s) of {:?}",
            h.num_channels(),
            h.voxel_type()
        )
    })?;
    let (vt, nc) = (h.voxel_type(), h.num_channels());
    // Slabs aligned to whole files, so each compressed file is rewritten once.
    let file_vx = h.file_len_vx();
    match order {
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
