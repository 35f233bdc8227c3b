//! The public conversion entry points: each is [`plan`](crate::plan),
//! [`convert_units`](crate::convert_units) of every unit, then [`finish`](crate::finish).

use crate::dataset::Source;
use crate::error::Result;
use crate::options::{ConvertOptions, Format, Progress, Summary};
use crate::plan::{plan, plan_for, run_all};
use scifmt_io::Location;

/// Converts `src` (a webKNOSSOS dataset, a WKW mag or a Zarr v3 array) into `to` at `dst`:
/// a dataset into a dataset, a mag or array into an array or mag. `progress` is called after
/// every shard.
///
/// Each side is a local path or a [`Location`] on an object store (a prefix, e.g.
/// `Location::parse("s3://bucket/ds", &[])`); local and remote sides mix. This is
/// [`plan`](crate::plan), [`convert_units`](crate::convert_units) of every unit, then
/// [`finish`](crate::finish).
///
/// # Errors
/// [`Error::TargetExists`](crate::Error::TargetExists) if `dst` exists and `options` neither overwrites nor resumes it;
/// [`Error::InvalidArgument`](crate::Error::InvalidArgument) if `src` is already in format `to`; the errors of reading the
/// source (naming its file or URL) and writing the target.
pub fn convert(
    src: impl Into<Location>,
    dst: impl Into<Location>,
    to: Format,
    options: &ConvertOptions,
    progress: &(dyn Fn(&Progress) + Sync),
) -> Result<Summary> {
    let (src, dst) = (&src.into(), &dst.into());
    let plan = plan(src, dst, to, options)?;
    run_all(src, dst, &plan, options, progress)
}

/// Converts one WKW mag directory into a Zarr v3 array (one shard per WKW file); the array
/// covers every file, rounded up to whole shards.
///
/// # Errors
/// As [`convert`].
pub fn convert_mag_to_zarr3(
    src: impl Into<Location>,
    dst: impl Into<Location>,
    options: &ConvertOptions,
    progress: &(dyn Fn(&Progress) + Sync),
) -> Result<Summary> {
    let (src, dst) = (&src.into(), &dst.into());
    let plan = plan_for(src, dst, Format::Zarr3, Source::WkwMag, options)?;
    run_all(src, dst, &plan, options, progress)
}

/// Converts one sharded Zarr v3 array whose inner chunks are WKW blocks into a WKW mag
/// directory (one file per shard present).
///
/// # Errors
/// As [`convert`]; [`Error::Unsupported`](crate::Error::Unsupported) for arrays whose inner chunks are not WKW blocks.
pub fn convert_mag_to_wkw(
    src: impl Into<Location>,
    dst: impl Into<Location>,
    options: &ConvertOptions,
    progress: &(dyn Fn(&Progress) + Sync),
) -> Result<Summary> {
    let (src, dst) = (&src.into(), &dst.into());
    let plan = plan_for(src, dst, Format::Wkw, Source::Zarr3Array, options)?;
    run_all(src, dst, &plan, options, progress)
}
