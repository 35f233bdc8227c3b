//! The target of a conversion: refused, emptied or resumed as the options say, and marked as
//! "in progress" while the conversion runs.
//!
//! A conversion writes the marker file [`MARKER`] into the target first (with the settings
//! that decide its bytes) and removes it last, after the metadata. A target with the marker is
//! an interrupted conversion: resuming it with the same settings keeps every shard and file
//! present (each only ever appears complete: renamed into place from a staged temporary file,
//! or a completed upload) and deletes stray temporary files of the killed run.

use serde_json::Value;

use crate::error::{Error, Result};
use crate::location::Location;
use crate::options::{ConvertOptions, Existing};

/// Name of the file marking an unfinished conversion in the target's root.
pub const MARKER: &str = ".wkw-zarr-conversion.json";

/// Prepares `dst` for a conversion with `settings` (recorded in the marker).
pub(crate) fn prepare(dst: &Location, options: &ConvertOptions, settings: &Value) -> Result<()> {
    if dst.has_contents()? {
        match options.existing {
            Existing::Refuse => {
                return Err(Error::TargetExists { path: dst.name() });
            }
            Existing::Overwrite => dst.remove_all()?,
            Existing::Resume => {
                let marker = dst.join(MARKER);
                if let Some(bytes) = marker.read_all()? {
                    let recorded: Value = serde_json::from_slice(&bytes)
                        .map_err(|e| Error::metadata(marker.name(), e.to_string()))?;
                    if &recorded != settings {
                        return Err(Error::InvalidArgument(format!(
                            "{dst} was started with {recorded}, not {settings}: resume it with the same options"
                        )));
                    }
                }
                // No marker: a finished conversion (or a target made otherwise): every
                // complete shard is kept, the rest written.
                if let Location::Local(dir) = dst {
                    remove_temporaries(dir)?;
                }
            }
        }
    }
    dst.create_dir()?;
    let text = serde_json::to_vec_pretty(settings).map_err(|e| Error::Internal(e.to_string()))?;
    dst.join(MARKER).write_small(&text, options.durability)
}

/// Removes the marker: the conversion is complete.
pub(crate) fn finish(dst: &Location) -> Result<()> {
    dst.join(MARKER).remove_file()
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
