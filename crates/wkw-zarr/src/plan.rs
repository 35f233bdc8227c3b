//! A conversion split into units of work that separate threads, processes or machines can
//! run: [`plan`] prepares the target and lists the units (one per source WKW file or shard),
//! [`convert_units`] converts any subset of them, [`finish`] writes the metadata last and
//! removes the marker. [`convert`](crate::convert) is exactly these three steps.
//!
//! A [`Plan`] is plain data: [`Plan::to_json`] / [`Plan::from_json`] carry it to another
//! process, and a unit is named by its id, the source file's key below the source root
//! (`color/1/z0/y0/x0.wkw`, `c/0/0/0/0`). A plan holds no store configuration or
//! credentials: each process opens the source and target itself (e.g. with
//! [`Location::parse`](crate::Location::parse)). Every shard or file of a unit is written
//! under a temporary name and renamed (or uploaded) into place complete, and a unit whose
//! target is already complete is skipped, so running a unit twice, or in two processes at
//! once, leaves the same bytes.

use std::collections::{BTreeMap, HashSet};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::dataset::{self, Source, detect, settings};
use crate::error::{Error, Result};
use crate::mag::{self, Ctx, Item};
use crate::options::{ConvertOptions, Format, Progress, Summary};
use crate::target::{self, MARKER};
use scifmt_io::Location;

/// The version of the plan document [`Plan::to_json`] writes.
const PLAN_VERSION: u32 = 1;

/// A prepared conversion: the arrays (mags) it converts and its units of work. Made by
/// [`plan`]; serializable with [`Plan::to_json`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Plan {
    version: u32,
    /// `"zarr3"` or `"wkw"`.
    to: String,
    /// The settings recorded in the target's marker.
    settings: Value,
    /// Whether the source is a webKNOSSOS dataset (its documents are converted too).
    dataset: bool,
    arrays: Vec<PlannedArray>,
    units: Vec<Unit>,
    /// When the conversion replaces an existing target: the name of the sibling it is built
    /// in (`.{name}.scifmt-overwrite`), swapped into place by [`finish`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    staged: Option<String>,
}

/// One array (mag) of a plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct PlannedArray {
    /// Its directory below the source root (empty: the root itself).
    src: String,
    /// Its directory below the target root (empty: the root itself).
    dst: String,
    /// To Zarr: the end of the array's voxels (its shape before rounding up to shards).
    end: Option<[u64; 3]>,
}

/// One unit of work: a source WKW file or shard, converted into one target shard or file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Unit {
    /// The source file's key below the source root.
    id: String,
    /// Index into the plan's arrays.
    array: usize,
    /// The file's (x, y, z) index in its array.
    index: [u64; 3],
    /// The file's key below its array.
    key: String,
    /// Its length when listed.
    len: u64,
    /// Its ETag when listed (object stores): a source replaced after planning is an error.
    etag: Option<String>,
}

impl Unit {
    /// The unit's id: the key of its source file below the source root.
    #[must_use]
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The length of its source file in bytes (to balance groups of units).
    #[must_use]
    pub fn source_bytes(&self) -> u64 {
        self.len
    }
}

impl Plan {
    /// The format the plan converts into.
    #[must_use]
    pub fn format(&self) -> Format {
        if self.to == "wkw" {
            Format::Wkw
        } else {
            Format::Zarr3
        }
    }

    /// The units, grouped by array, in the arrays' order.
    #[must_use]
    pub fn units(&self) -> &[Unit] {
        &self.units
    }

    /// The number of arrays (mags) the plan converts.
    #[must_use]
    pub fn arrays(&self) -> usize {
        self.arrays.len()
    }

    /// Where the units are written for the target `dst`: `dst` itself, or the sibling an
    /// overwrite builds the new target in.
    fn root(&self, dst: &Location) -> Result<Location> {
        match &self.staged {
            None => Ok(dst.clone()),
            Some(name) => Ok(dst.sibling(name)?),
        }
    }

    /// The plan as a JSON document.
    #[must_use]
    pub fn to_json(&self) -> String {
        // A plan is strings, numbers and JSON values only: it always serializes.
        serde_json::to_string(self).unwrap_or_default()
    }

    /// A plan from the JSON document [`Plan::to_json`] wrote.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a document that is not such a plan: malformed, another
    /// version, an unknown format, a unit of no array, an id that is not its source's key, or a
    /// target directory that is not a relative path without `.` or `..` segments.
    pub fn from_json(text: &str) -> Result<Self> {
        let bad = |what: String| Error::InvalidArgument(format!("not a conversion plan: {what}"));
        let plan: Self = serde_json::from_str(text).map_err(|e| bad(e.to_string()))?;
        if plan.version != PLAN_VERSION {
            return Err(bad(format!(
                "version {} (this is version {PLAN_VERSION})",
                plan.version
            )));
        }
        if let Some(name) = &plan.staged
            && !(name.starts_with('.') && plain_segment(name) && !name.contains('/'))
        {
            return Err(bad(format!("staging directory {name:?}")));
        }
        if plan.to != "wkw" && plan.to != "zarr3" {
            return Err(bad(format!("to {:?}", plan.to)));
        }
        for a in &plan.arrays {
            if !a.dst.is_empty() && !a.dst.split('/').all(plain_segment) {
                return Err(bad(format!("target directory {:?}", a.dst)));
            }
            if a.src.starts_with('/') || a.src.contains('\\') {
                return Err(bad(format!("source directory {:?}", a.src)));
            }
            if let Some(e) = a.end.iter().flatten().find(|&&e| e > mag::MAX_EXTENT) {
                return Err(bad(format!("array extent {e}")));
            }
        }
        let mut ids = HashSet::new();
        for u in &plan.units {
            let array = plan
                .arrays
                .get(u.array)
                .ok_or_else(|| bad(format!("unit {} of array {}", u.id, u.array)))?;
            if u.id != join_key(&array.src, &u.key) || !u.key.split('/').all(plain_segment) {
                return Err(bad(format!("unit {} with key {:?}", u.id, u.key)));
            }
            if !ids.insert(u.id.as_str()) {
                return Err(bad(format!("unit {} listed twice", u.id)));
            }
        }
        Ok(plan)
    }
}

/// Whether `s` is a path segment naming an entry of its directory.
fn plain_segment(s: &str) -> bool {
    !s.is_empty() && s != "." && s != ".." && !s.contains('\\')
}

/// `dir/key`, or `key` for the root.
fn join_key(dir: &str, key: &str) -> String {
    if dir.is_empty() {
        key.to_owned()
    } else {
        format!("{}/{key}", dir.trim_end_matches('/'))
    }
}

/// `root/key`, or `root` for an empty key.
fn below(root: &Location, key: &str) -> Location {
    if key.is_empty() {
        root.clone()
    } else {
        root.join(key)
    }
}

/// Prepares the conversion of `src` (a webKNOSSOS dataset, a WKW mag or a Zarr v3 array) into
/// `to` at `dst`, as [`convert`](crate::convert) does before converting: the target is refused,
/// emptied or resumed as `options` say and marked ([`MARKER`]), and the source's files are
/// listed as units.
///
/// # Errors
/// As [`convert`](crate::convert).
pub fn plan(
    src: impl Into<Location>,
    dst: impl Into<Location>,
    to: Format,
    options: &ConvertOptions,
) -> Result<Plan> {
    let (src, dst) = (&src.into(), &dst.into());
    target::ensure_apart(src, dst)?;
    let kind = detect(src)?;
    match (kind, to) {
        (Source::WkwMag, Format::Zarr3)
        | (Source::Zarr3Array, Format::Wkw)
        | (Source::Dataset(Format::Wkw), Format::Zarr3)
        | (Source::Dataset(Format::Zarr3), Format::Wkw) => plan_for(src, dst, to, kind, options),
        (kind, to) => {
            let name = match to {
                Format::Wkw => "WKW",
                Format::Zarr3 => "Zarr v3",
            };
            Err(Error::InvalidArgument(format!(
                "{src} is {}: already {name}, nothing to convert to {name}",
                kind.describe()
            )))
        }
    }
}

/// [`plan`] for a source known to be `kind`.
pub(crate) fn plan_for(
    src: &Location,
    dst: &Location,
    to: Format,
    kind: Source,
    options: &ConvertOptions,
) -> Result<Plan> {
    let mut arrays = match kind {
        Source::Dataset(_) => dataset::dataset_arrays(src, to)?
            .into_iter()
            .map(|a| PlannedArray {
                src: a.src,
                dst: a.dst,
                end: a.extent,
            })
            .collect(),
        Source::WkwMag | Source::Zarr3Array => vec![PlannedArray {
            src: String::new(),
            dst: String::new(),
            end: None,
        }],
    };
    let recorded = settings(to, options);
    let staged = target::prepare(src, dst, options, &recorded)?;
    let root = match &staged {
        None => dst.clone(),
        Some(name) => dst.sibling(name)?,
    };
    let mut units = Vec::new();
    for (i, a) in arrays.iter_mut().enumerate() {
        let (from, into) = (below(src, &a.src), below(&root, &a.dst));
        into.create_dir()?;
        let items = match to {
            Format::Zarr3 => {
                let (end, items) = mag::plan_wkw_to_zarr(&from, a.end)?;
                a.end = Some(end);
                items
            }
            Format::Wkw => mag::plan_zarr_to_wkw(&from, &into, options)?,
        };
        units.extend(items.into_iter().map(|(index, key, (len, etag))| Unit {
            id: join_key(&a.src, &key),
            array: i,
            index,
            key,
            len,
            etag,
        }));
    }
    Ok(Plan {
        version: PLAN_VERSION,
        to: to.name().to_owned(),
        settings: recorded,
        dataset: matches!(kind, Source::Dataset(_)),
        arrays,
        units,
        staged,
    })
}

/// Checks that `dst` holds the unfinished conversion of `plan` and that `options` write the
/// same bytes.
fn check(dst: &Location, plan: &Plan, options: &ConvertOptions) -> Result<()> {
    let wanted = settings(plan.format(), options);
    if wanted != plan.settings {
        return Err(Error::InvalidArgument(format!(
            "the plan converts with {}, the options say {wanted}",
            plan.settings
        )));
    }
    let Some(recorded) = target::recorded_settings(dst)? else {
        return Err(Error::InvalidArgument(format!(
            "{dst} has no conversion in progress (no {MARKER}): plan it first"
        )));
    };
    if recorded != plan.settings {
        return Err(Error::InvalidArgument(format!(
            "{dst} is being converted with {recorded}, the plan says {}",
            plan.settings
        )));
    }
    Ok(())
}

/// Converts the units `ids` of `plan` (from `src` into `dst`, the locations the plan was made
/// for), each into its shard or file, with `options` (the plan's codec or block type; the
/// threads are this call's). Units already complete in the target are skipped, a unit listed
/// twice runs once. `progress` is called after every unit.
///
/// The array and dataset metadata are not written: [`finish`] does that once every unit is
/// converted.
///
/// # Errors
/// [`Error::InvalidArgument`] for an id not in the plan, options that write other bytes than
/// the plan's, or a target without the plan's marker; the errors of reading the source (naming
/// its file or URL) and writing the target.
pub fn convert_units<S: AsRef<str>>(
    src: impl Into<Location>,
    dst: impl Into<Location>,
    plan: &Plan,
    ids: &[S],
    options: &ConvertOptions,
    progress: &(dyn Fn(&Progress) + Sync),
) -> Result<Summary> {
    let (src, dst) = (&src.into(), &plan.root(&dst.into())?);
    check(dst, plan, options)?;
    let by_id: std::collections::HashMap<&str, &Unit> =
        plan.units.iter().map(|u| (u.id.as_str(), u)).collect();
    let mut seen = HashSet::new();
    let mut groups: BTreeMap<usize, Vec<Item>> = BTreeMap::new();
    for id in ids {
        let id = id.as_ref();
        let unit = by_id.get(id).ok_or_else(|| {
            Error::InvalidArgument(format!("unit {id:?} is not in the plan of {dst}"))
        })?;
        if seen.insert(id) {
            groups.entry(unit.array).or_default().push((
                unit.index,
                unit.key.clone(),
                (unit.len, unit.etag.clone()),
            ));
        }
    }
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(options.threads)
        .thread_name(|i| format!("wkw-zarr-{i}"))
        .build()
        .map_err(|e| Error::Internal(format!("thread pool: {e}")))?;
    let ctx = Ctx {
        options,
        pool: &pool,
        progress,
    };
    let mut summary = Summary::default();
    for (i, items) in groups {
        let a = &plan.arrays[i];
        let (from, into) = (below(src, &a.src), below(dst, &a.dst));
        summary.add(&match (plan.format(), a.end) {
            (Format::Zarr3, Some(end)) => mag::wkw_to_zarr(&from, &into, end, items, &ctx)?,
            (Format::Zarr3, None) => {
                return Err(Error::InvalidArgument(format!(
                    "the plan has no extent for array {}",
                    a.dst
                )));
            }
            (Format::Wkw, _) => mag::zarr_to_wkw(&from, &into, items, &ctx)?,
        });
    }
    Ok(summary)
}

/// Completes the conversion of `plan` once all its units are converted: writes every array's
/// metadata (`zarr.json` or `header.wkw`), then the dataset's documents; a conversion that
/// replaces an existing target then swaps its new target into place (see the crate docs on
/// overwriting); last it removes the marker.
///
/// # Errors
/// As [`convert_units`]; the errors of reading the source's metadata and writing the target's.
pub fn finish(
    src: impl Into<Location>,
    dst: impl Into<Location>,
    plan: &Plan,
    options: &ConvertOptions,
) -> Result<()> {
    let (src, dst) = (&src.into(), &dst.into());
    let root = plan.root(dst)?;
    check(&root, plan, options)?;
    let to = plan.format();
    for a in &plan.arrays {
        let (from, into) = (below(src, &a.src), below(&root, &a.dst));
        match to {
            Format::Zarr3 => {
                let end = a.end.ok_or_else(|| {
                    Error::InvalidArgument(format!("the plan has no extent for array {}", a.dst))
                })?;
                mag::finish_zarr(&from, &into, end, options)?;
            }
            Format::Wkw => mag::finish_wkw(&from, &into, options)?,
        }
    }
    if plan.dataset {
        dataset::finish_dataset(src, &root, dst.file_name(), to, options)?;
    }
    target::finish(&root, dst, plan.staged.is_some(), options)
}

/// Converts every unit of `plan` and finishes it (the body of [`convert`](crate::convert)).
pub(crate) fn run_all(
    src: &Location,
    dst: &Location,
    plan: &Plan,
    options: &ConvertOptions,
    progress: &(dyn Fn(&Progress) + Sync),
) -> Result<Summary> {
    let ids: Vec<&str> = plan.units.iter().map(Unit::id).collect();
    let mut summary = convert_units(src, dst, plan, &ids, options, progress)?;
    summary.arrays = plan.arrays.len() as u64;
    finish(src, dst, plan, options)?;
    Ok(summary)
}
