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
use wkw::{ArrayView, ArrayViewMut, Header, Order};

use crate::args::parse_xyz;
use crate::fail::{At, CliResult, Fail};
use crate::guard::{OverwriteFlag, apart, file_output};
use crate::inout::{Output, in_name, is_std, open_input, out_name, read_at, spool_stdin};
use crate::progress::progress;
use crate::remote;

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
    #[arg(long, value_parser = parse_xyz, allow_hyphen_values = true)]
    offset: [u32; 3],
    /// Box size X,Y,Z.
    #[arg(long, value_parser = parse_xyz, allow_hyphen_values = true)]
    shape: [u32; 3],
    /// Layout of the raw file (case-insensitive).
    #[arg(long, value_enum, ignore_case = true, default_value = "f")]
    order: OrderArg,
}

/// `wkw read`.
#[derive(Debug, Args)]
pub(crate) struct ReadArgs {
    /// Dataset root (a directory or URL).
    dataset: PathBuf,
    /// Output file (`-`: stdout).
    output: PathBuf,
    #[command(flatten)]
    bx: BoxArgs,
    #[command(flatten)]
    overwrite: OverwriteFlag,
}

/// `wkw write`.
#[derive(Debug, Args)]
pub(crate) struct WriteArgs {
    /// Dataset root (a directory or URL).
    dataset: PathBuf,
    /// Input file (`-`: stdin); never a file inside the dataset.
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

/// How a box is cut into slabs, and where each slab's bytes sit in the raw file.
///
/// Fortran order: z-slabs, each one contiguous run of the file, in file order. C order of
/// (C, X, Y, Z): x-slabs, in which channel `c` of slab `x0..x1` is one contiguous run of the
/// file at `((c * X + x0) * Y * Z) * element size`.
#[derive(Debug)]
struct SlabPlan {
    corner: [u32; 3],
    shape: [u32; 3],
    order: Order,
    /// The slab axis: 2 (z) in Fortran order, 0 (x) in C order.
    axis: usize,
    /// Runs per slab: 1 in Fortran order, one per channel in C order.
    runs: usize,
    /// Bytes of one run per voxel of slab thickness.
    run_unit: u64,
    /// File bytes from one channel's runs to the next's (C order: `X * Y * Z * element size`).
    channel_stride: u64,
    /// Slabs as (start relative to the corner, thickness) along the slab axis.
    parts: Vec<(u32, u32)>,
}

impl SlabPlan {
    /// The slabs of `bx` (whose size [`box_bytes`] has checked) in `h`'s dataset; `aligned`: slabs of whole files where they fit the
    /// budget (writes, so that each compressed file is rewritten once).
    fn new(h: &Header, bx: &BoxArgs, aligned: bool) -> Self {
        let [sx, sy, sz] = bx.shape;
        let (order, axis, runs, run_unit) = match bx.order {
            OrderArg::F => {
                let plane = u64::from(h.voxel_size()) * u64::from(sx) * u64::from(sy);
                (Order::Fortran, 2, 1, plane)
            }
            OrderArg::C => {
                let es = u64::from(h.voxel_type().size());
                let run = es * u64::from(sy) * u64::from(sz);
                (Order::C, 0, usize::from(h.num_channels()), run)
            }
        };
        let plane = run_unit * runs as u64;
        let step = if aligned {
            aligned_step(plane, h.block_len(), h.file_len_vx())
        } else {
            slab_step(plane, h.block_len())
        };
        let (start, len) = match axis {
            0 => (bx.offset[0], sx),
            _ => (bx.offset[2], sz),
        };
        Self {
            corner: bx.offset,
            shape: bx.shape,
            order,
            axis,
            runs,
            run_unit,
            // At most the box's size in C order (checked by `box_bytes`); unused in Fortran
            // order, where it may not fit.
            channel_stride: u64::from(sx).saturating_mul(run_unit),
            parts: slabs(start, len, step),
        }
    }

    /// Dataset corner and shape of the slab `(start, thickness)`.
    fn slab(&self, (start, thickness): (u32, u32)) -> ([u32; 3], [u32; 3]) {
        let (mut corner, mut shape) = (self.corner, self.shape);
        if let (Some(c), Some(s)) = (corner.get_mut(self.axis), shape.get_mut(self.axis)) {
            *c += start;
            *s = thickness;
        }
        (corner, shape)
    }

    /// Bytes of one run of the slab `(start, thickness)`, and of the whole slab.
    fn sizes(&self, (_, thickness): (u32, u32), name: &Path) -> CliResult<(usize, usize)> {
        let run = self.run_unit * u64::from(thickness);
        Ok((
            usize_of(run, name)?,
            usize_of(run * self.runs as u64, name)?,
        ))
    }

    /// File position of run `r` (the channel in C order) of the slab starting at `start`.
    fn position(&self, r: usize, start: u32) -> u64 {
        r as u64 * self.channel_stride + u64::from(start) * self.run_unit
    }
}

/// `wkw read DATASET OUT --offset --shape [--order]`.
pub(crate) fn read(a: &ReadArgs) -> CliResult {
    let (dataset, output) = (a.dataset.as_path(), &*out_name(&a.output));
    let overwrite = a.overwrite.overwrite;
    file_output(&[dataset], &a.output, overwrite)?;
    let ds = super::open(dataset)?;
    let h = *ds.header();
    box_bytes(&h, a.bx.shape).ok_or_else(|| Fail::usage("--shape is too large"))?;
    let plan = SlabPlan::new(&h, &a.bx, false);
    let mut out = Output::create(&a.output, overwrite)?;
    // A file takes every run of a slab in one pass; stdout takes the runs in file order, so
    // multi-channel C order reads the box once per channel.
    let passes: Vec<Option<usize>> = if out.is_seekable() || plan.runs == 1 {
        vec![None]
    } else {
        (0..plan.runs).map(Some).collect()
    };
    let bar = progress((plan.parts.len() * passes.len()) as u64, "read");
    let mut buf = Vec::new();
    for pass in passes {
        for &part in &plan.parts {
            let (run, n) = plan.sizes(part, output)?;
            buf.resize(n, 0);
            let (corner, shape) = plan.slab(part);
            let mut view = ArrayViewMut::new(
                h.voxel_type(),
                h.num_channels(),
                shape,
                plan.order,
                &mut buf,
            )
            .at(dataset)?;
            ds.read_into(corner, &mut view)?.at(dataset)?;
            for (r, bytes) in buf.chunks(run.max(1)).enumerate() {
                if pass.is_none_or(|p| p == r) {
                    out.write_at(plan.position(r, part.0), bytes)?;
                }
            }
            bar.inc(1);
        }
    }
    bar.finish_and_clear();
    out.commit()
}

/// The raw input of `wkw write`, checked to hold exactly `total` bytes: a file, or stdin
/// copied into a temporary file.
fn box_input(input: &Path, total: u64, describe_box: impl Fn() -> String) -> CliResult<File> {
    let (file, len) = if is_std(input) {
        spool_stdin(total)?
    } else if let Some(url) = remote::parse_url(input)? {
        crate::remote::spool(&url, total)?
    } else {
        let file = open_input(input)?;
        let len = file.metadata().at(input)?.len();
        (file, len)
    };
    if len != total {
        let holds = if (is_std(input) || crate::names::is_url(input)) && len > total {
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
    let (dataset, input) = (a.dataset.as_path(), &*in_name(&a.input));
    // The dataset is this command's output: the raw input must not be one of its files.
    apart(&[&a.input], dataset)?;
    let ds = super::open(dataset)?;
    let h = *ds.header();
    let [sx, sy, sz] = a.bx.shape;
    let total = box_bytes(&h, a.bx.shape).ok_or_else(|| Fail::usage("--shape is too large"))?;
    let mut file = box_input(&a.input, total, || {
        format!(
            "the box {sx}x{sy}x{sz} of {} channel(s) of {:?}",
            h.num_channels(),
            h.voxel_type()
        )
    })?;
    let plan = SlabPlan::new(&h, &a.bx, true);
    let bar = progress(plan.parts.len() as u64, "write");
    let mut buf = Vec::new();
    for &part in &plan.parts {
        let (run, n) = plan.sizes(part, input)?;
        buf.resize(n, 0);
        for (r, bytes) in buf.chunks_mut(run.max(1)).enumerate() {
            read_at(&mut file, input, plan.position(r, part.0), bytes)?;
        }
        let (corner, shape) = plan.slab(part);
        let view =
            ArrayView::new(h.voxel_type(), h.num_channels(), shape, plan.order, &buf).at(input)?;
        ds.write(corner, &view)?.at(dataset)?;
        bar.inc(1);
    }
    bar.finish_and_clear();
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
