//! The target of a conversion: refused, emptied or resumed as the options say, and marked as
//! "in progress" while the conversion runs.
//!
//! A conversion writes the marker file [`MARKER`] into the target first (with the settings
//! that decide its bytes) and removes it last, after the metadata. A target with the marker is
//! an interrupted conversion: resuming it with the same settings keeps every shard and file
//! present (each only ever appears complete, renamed into place from a staged temporary file)
//! and deletes stray temporary files of the killed run.

use std::fs;
use std::path::Path;

use serde_json::Value;

use crate::error::{Error, Result};
use crate::options::{ConvertOptions, Existing};

/// Name of the file marking an unfinished conversion in the target's root.
pub const MARKER: &str = ".wkw-zarr-conversion.json";

/// Prepares `dst` for a conversion with `settings` (recorded in the marker).
pub(crate) fn prepare(dst: &Path, options: &ConvertOptions, settings: &Value) -> Result<()> {
    let exists = match fs::symlink_metadata(dst) {
        Ok(m) => {
            !m.is_dir()
                || fs::read_dir(dst)
                    .map_err(|e| Error::io(dst, e))?
                    .next()
                    .is_some()
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => false,
        Err(e) => return Err(Error::io(dst, e)),
    };
    if exists {
        match options.existing {
            Existing::Refuse => {
                return Err(Error::TargetExists {
                    path: dst.to_path_buf(),
                });
            }
            Existing::Overwrite => {
                let meta = fs::symlink_metadata(dst).map_err(|e| Error::io(dst, e))?;
                if meta.is_dir() {
                    fs::remove_dir_all(dst).map_err(|e| Error::io(dst, e))?;
                } else {
                    fs::remove_file(dst).map_err(|e| Error::io(dst, e))?;
                }
            }
            Existing::Resume => {
                let marker = dst.join(MARKER);
                match fs::read(&marker) {
                    Ok(bytes) => {
                        let recorded: Value = serde_json::from_slice(&bytes)
                            .map_err(|e| Error::metadata(&marker, e.to_string()))?;
                        if &recorded != settings {
                            return Err(Error::InvalidArgument(format!(
                                "{} was started with {recorded}, not {settings}: resume it with the same options",
                                dst.display()
                            )));
                        }
                    }
                    // A finished conversion (or a target made otherwise): every complete
                    // shard is kept, the rest written.
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                    Err(e) => return Err(Error::io(&marker, e)),
                }
                remove_temporaries(dst)?;
            }
        }
    }
    fs::create_dir_all(dst).map_err(|e| Error::io(dst, e))?;
    let text = serde_json::to_vec_pretty(settings).map_err(|e| Error::Internal(e.to_string()))?;
    scifmt_io::write_atomically(&dst.join(MARKER), options.durability, |w| {
        std::io::Write::write_all(w, &text).map_err(|e| Error::io(dst.join(MARKER), e))
    })
}

/// Removes the marker: the conversion is complete.
pub(crate) fn finish(dst: &Path) -> Result<()> {
    let marker = dst.join(MARKER);
    fs::remove_file(&marker).map_err(|e| Error::io(&marker, e))
}

/// Deletes the temporary files (`.{name}.{random}.tmp`) a killed run left below `dir`.
fn remove_temporaries(dir: &Path) -> Result<()> {
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
