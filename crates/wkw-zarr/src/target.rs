//! The target of a conversion: kept apart from the source, refused, replaced or resumed as the
//! options say, and marked as "in progress" while the conversion runs.
//!
//! A conversion writes the marker file [`MARKER`] into the root it writes first (with the
//! settings that decide its bytes) and removes it last, after the metadata. A root with the
//! marker is an interrupted conversion: resuming it with the same settings keeps every shard
//! and file present (each only ever appears complete: renamed into place from a staged
//! temporary file, or a completed upload) and deletes stray temporary files of the killed run.
//!
//! # Overwriting
//!
//! An existing target is never deleted before its replacement is complete. The new target is
//! built in a hidden sibling, `.{name}.scifmt-overwrite` (see [`STAGE_TAG`]), whose marker
//! also records `"replaces": "{name}"`. When every unit and all metadata are written:
//!
//! * **local**: the sibling and the target trade places in one atomic step
//!   (`scifmt_io::replace_dir`; on systems without an atomic exchange, two renames), the old
//!   content (now under the sibling's name) is deleted, and last the marker in the target is
//!   removed;
//! * **object store** (no renames there): the marker, with `"copying": true`, is written into the
//!   target first; then every object of the sibling prefix is copied to its key in the target
//!   (a server-side copy), objects of the old target that the new one does not have are
//!   deleted, the sibling prefix is deleted, and last the marker is removed.
//!
//! A process killed at any moment leaves a state that resuming ([`Existing::Resume`]) or
//! overwriting again finishes, and that reads as one complete dataset meanwhile:
//!
//! | killed | target | sibling | resuming |
//! |---|---|---|---|
//! | while converting | the old target, untouched | the new one, unfinished | converts the rest into the sibling, then swaps |
//! | after the local swap | the new target, marked | the old one, or part of it | deletes the sibling, removes the marker |
//! | while copying (store) | mixed, marked `copying` | the new one, complete | copies again, deletes the sibling |
//!
//! On a store the target is therefore not one complete dataset while the copy runs; the new
//! one stays complete under the sibling prefix until the copy is done.

use serde_json::{Value, json};

use crate::error::{Error, Result};
use crate::options::{ConvertOptions, Existing};
use scifmt_io::Location;

/// Name of the file marking an unfinished conversion in the target's root.
pub const MARKER: &str = ".wkw-zarr-conversion.json";

/// The tag of the sibling an overwrite builds the new target in: `.{name}.scifmt-overwrite`.
pub const STAGE_TAG: &str = "scifmt-overwrite";

/// The marker key naming the target a staged conversion replaces.
const REPLACES: &str = "replaces";

/// The marker key saying the staged objects are being copied into the target (stores).
const COPYING: &str = "copying";

/// Keeps `dst` apart from `src`: the same directory or prefix, or one inside the other, is
/// refused before anything is written or deleted.
pub(crate) fn ensure_apart(src: &Location, dst: &Location) -> Result<()> {
    Ok(scifmt_io::ensure_apart(&src.name(), &dst.name())?)
}

/// The sibling an overwrite of `dst` is built in.
pub(crate) fn stage_of(dst: &Location) -> Result<Location> {
    let name = dst.file_name().ok_or_else(|| {
        Error::InvalidArgument(format!(
            "{dst} has no name to build its replacement beside: give a directory or prefix below it"
        ))
    })?;
    Ok(dst.sibling(&format!(".{name}.{STAGE_TAG}"))?)
}

/// The marker of the conversion at `root`, if there is one.
fn read_marker(root: &Location) -> Result<Option<Value>> {
    let marker = root.join(MARKER);
    match marker.read_all()? {
        None => Ok(None),
        Some(bytes) => serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|e| Error::metadata(marker.name(), e.to_string())),
    }
}

/// The settings the marker at `root` records (without the keys of a staged run); `None`
/// without a marker.
pub(crate) fn recorded_settings(root: &Location) -> Result<Option<Value>> {
    Ok(read_marker(root)?.as_ref().map(settings_of))
}

/// The settings a marker records (without the keys of a staged run).
fn settings_of(marker: &Value) -> Value {
    let mut v = marker.clone();
    if let Some(o) = v.as_object_mut() {
        o.remove(REPLACES);
        o.remove(COPYING);
    }
    v
}

fn is_staged(marker: &Value) -> bool {
    marker.get(REPLACES).is_some()
}

fn check_same(root: &Location, recorded: &Value, settings: &Value) -> Result<()> {
    let recorded = settings_of(recorded);
    if &recorded != settings {
        return Err(Error::InvalidArgument(format!(
            "{root} was started with {recorded}, not {settings}: resume it with the same options"
        )));
    }
    Ok(())
}

/// Prepares `dst` for a conversion from `src` with `settings` (recorded in the marker): returns
/// the name of the sibling the conversion writes into when it replaces an existing target
/// (`None`: it writes into `dst` itself).
pub(crate) fn prepare(
    src: &Location,
    dst: &Location,
    options: &ConvertOptions,
    settings: &Value,
) -> Result<Option<String>> {
    ensure_apart(src, dst)?;
    let stage = stage_of(dst).ok();
    if let Some(stage) = &stage {
        ensure_apart(src, stage)?;
    }
    let dst_marker = read_marker(dst)?;
    // A staged run whose swap was done, but not its clean-up: finish that first.
    if dst_marker.as_ref().is_some_and(is_staged) {
        complete_swap(dst, stage.as_ref(), dst_marker.as_ref())?;
        if options.existing == Existing::Resume {
            // Every unit is complete: the conversion goes on in the target itself (which
            // rewrites the metadata and removes the new marker).
            if let Some(m) = &dst_marker {
                check_same(dst, m, settings)?;
            }
            return resume_in(dst, None, options, settings, false);
        }
    }
    let stage_marker = match &stage {
        Some(s) => read_marker(s)?,
        None => None,
    };
    match options.existing {
        Existing::Refuse => {
            if dst.has_contents()? {
                return Err(exists(dst)?);
            }
            if let (Some(s), Some(_)) = (&stage, &stage_marker) {
                return Err(Error::InvalidArgument(format!(
                    "an interrupted overwrite of {dst} is at {s}: resume it, or overwrite to start again"
                )));
            }
            start(dst, None, options, settings)
        }
        Existing::Overwrite => {
            if let Some(s) = &stage
                && s.has_contents()?
            {
                // An abandoned replacement (or the old content of a finished swap).
                s.remove_all()?;
            }
            if !dst.has_contents()? {
                return start(dst, None, options, settings);
            }
            let stage = stage.ok_or_else(|| {
                Error::InvalidArgument(format!(
                    "{dst} has no name to build its replacement beside: give a directory or prefix below it"
                ))
            })?;
            start(&stage, dst.file_name(), options, settings)?;
            Ok(stage.file_name())
        }
        Existing::Resume => match (&stage, &stage_marker) {
            (Some(s), Some(m)) if is_staged(m) => {
                resume_in(s, stage_marker.as_ref(), options, settings, true).map(|_| s.file_name())
            }
            _ => resume_in(dst, dst_marker.as_ref(), options, settings, false),
        },
    }
}

/// `TargetExists` for `dst`, with what is there (what overwriting would delete).
fn exists(dst: &Location) -> Result<Error> {
    let (files, bytes) = match dst.size()? {
        Some(len) => (1, len),
        None => {
            let listed = dst.list()?;
            (
                listed.len() as u64,
                listed.iter().map(|(_, len, _)| len).sum(),
            )
        }
    };
    Ok(Error::TargetExists {
        path: dst.name(),
        files,
        bytes,
    })
}

/// Creates `root` and writes its marker (with `"replaces"` for a staged run). A local
/// sibling appears only with its marker: it is made under a temporary name and renamed, so a
/// kill never leaves an unmarked sibling that a later run could not place.
fn start(
    root: &Location,
    replaces: Option<String>,
    options: &ConvertOptions,
    settings: &Value,
) -> Result<Option<String>> {
    let mut marker = settings.clone();
    let staged = replaces.is_some();
    if let (Some(name), Some(o)) = (replaces, marker.as_object_mut()) {
        o.insert(REPLACES.into(), json!(name));
    }
    match root {
        Location::Local(dir) if staged => {
            let making = Location::Local(making_dir(dir));
            if making.has_contents()? {
                making.remove_all()?;
            }
            making.create_dir()?;
            write_marker(&making, &marker, options)?;
            let from = making_dir(dir);
            std::fs::rename(&from, dir).map_err(|e| Error::io(dir, e))?;
        }
        _ => {
            root.create_dir()?;
            write_marker(root, &marker, options)?;
        }
    }
    Ok(None)
}

/// Where a local sibling is made before it is renamed into place: `{sibling}.new`.
fn making_dir(sibling: &std::path::Path) -> std::path::PathBuf {
    let mut name = sibling.as_os_str().to_os_string();
    name.push(".new");
    std::path::PathBuf::from(name)
}

fn write_marker(root: &Location, marker: &Value, options: &ConvertOptions) -> Result<()> {
    let text = serde_json::to_vec_pretty(marker).map_err(|e| Error::Internal(e.to_string()))?;
    Ok(root.join(MARKER).write_small(&text, options.durability)?)
}

/// Resumes the conversion at `root` (the target, or the sibling of a staged run).
fn resume_in(
    root: &Location,
    marker: Option<&Value>,
    options: &ConvertOptions,
    settings: &Value,
    staged: bool,
) -> Result<Option<String>> {
    match marker {
        Some(m) => check_same(root, m, settings)?,
        // No marker: a finished conversion (or a target made otherwise): every complete
        // shard is kept, the rest written, under a new marker.
        None => {
            root.create_dir()?;
            write_marker(root, settings, options)?;
        }
    }
    if let Location::Local(dir) = root
        && dir.is_dir()
    {
        remove_temporaries(dir)?;
    }
    root.create_dir()?;
    Ok(staged.then(|| root.file_name()).flatten())
}

/// Completes the conversion whose metadata is all written at `root`: a staged run is swapped
/// into `dst`, then the marker removed.
pub(crate) fn finish(
    root: &Location,
    dst: &Location,
    staged: bool,
    options: &ConvertOptions,
) -> Result<()> {
    if staged {
        let marker = read_marker(root)?;
        match (root, dst) {
            (Location::Local(new), Location::Local(target)) => {
                scifmt_io::replace_dir(new, target, options.durability)?;
            }
            _ => {
                let mut copying = marker.unwrap_or_else(|| json!({}));
                if let Some(o) = copying.as_object_mut() {
                    o.insert(COPYING.into(), json!(true));
                }
                write_marker(dst, &copying, options)?;
                copy_over(root, dst)?;
            }
        }
    }
    Ok(dst.join(MARKER).remove_file()?)
}

/// Finishes a swap that was done (or, on a store, begun) but not cleaned up: `dst` holds the
/// staged run's marker.
fn complete_swap(dst: &Location, stage: Option<&Location>, marker: Option<&Value>) -> Result<()> {
    let copying = marker.and_then(|m| m.get(COPYING)).is_some();
    if let Some(s) = stage {
        if copying {
            copy_over(s, dst)?;
        } else if s.has_contents()? {
            s.remove_all()?;
        }
    }
    Ok(dst.join(MARKER).remove_file()?)
}

/// Makes the objects under `dst` those under `stage` (server-side copies; old objects the new
/// set lacks deleted), then deletes `stage`. The marker is left alone.
fn copy_over(stage: &Location, dst: &Location) -> Result<()> {
    let new: Vec<String> = stage
        .list()?
        .into_iter()
        .map(|(k, _, _)| k)
        .filter(|k| k != MARKER)
        .collect();
    for key in &new {
        stage.join(key).copy_to(&dst.join(key))?;
    }
    let keep: std::collections::HashSet<&str> = new.iter().map(String::as_str).collect();
    for (key, _, _) in dst.list()? {
        if key != MARKER && !keep.contains(key.as_str()) {
            dst.join(&key).remove_file()?;
        }
    }
    Ok(stage.remove_all()?)
}

/// Deletes the temporary files (`.{name}.{random}.tmp`) a killed run left below `dir` (a
/// store keeps no temporary objects: an unfinished upload never shows under a key).
fn remove_temporaries(dir: &std::path::Path) -> Result<()> {
    use std::fs;
    for entry in fs::read_dir(dir).map_err(|e| Error::io(dir, e))? {
        let entry = entry.map_err(|e| Error::io(dir, e))?;
        let path = entry.path();
        let kind = entry.file_type().map_err(|e| Error::io(&path, e))?;
        if kind.is_dir() {
            remove_temporaries(&path)?;
        } else if is_temporary(&entry.file_name().to_string_lossy()) {
            fs::remove_file(&path).map_err(|e| Error::io(&path, e))?;
        }
    }
    Ok(())
}

/// Whether a file name is a staged temporary file of the shared I/O layer.
fn is_temporary(name: &str) -> bool {
    name.starts_with('.') && name.ends_with(".tmp") && name != MARKER
}
