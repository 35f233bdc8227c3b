//! Atomic replacement of files: written under a temporary name in the target's directory and
//! renamed over the target, with optional fsync ([`Durability`]).

use std::fs::{self, File, OpenOptions};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::error::{Error, Result};
use crate::fsio;
use crate::options::Durability;

/// fsyncs a directory (so a rename in it is durable).
pub(crate) fn sync_dir(dir: &Path) -> Result<()> {
    fsio::sync_dir(dir).map_err(|e| Error::io(dir, e))
}

/// A temporary file next to its final path, removed on drop unless renamed into place.
pub(crate) struct TempFile {
    pub(crate) path: PathBuf,
    pub(crate) file: File,
    done: bool,
}

impl TempFile {
    /// Creates `<final>.<pid>-<seq>.tmp` exclusively (unique per process and call).
    pub(crate) fn create(final_path: &Path) -> Result<Self> {
        static SEQ: AtomicU64 = AtomicU64::new(0);
        loop {
            let seq = SEQ.fetch_add(1, Ordering::Relaxed);
            let mut name = final_path.as_os_str().to_owned();
            name.push(format!(".{}-{seq}.tmp", std::process::id()));
            let path = PathBuf::from(name);
            match OpenOptions::new()
                .read(true)
                .write(true)
                .create_new(true)
                .open(&path)
            {
                Ok(file) => {
                    return Ok(Self {
                        path,
                        file,
                        done: false,
                    });
                }
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(Error::io(&path, e)),
            }
        }
    }

    /// Optionally fsyncs, then renames over `final_path` (and fsyncs the directory).
    pub(crate) fn commit(mut self, final_path: &Path, durability: Durability) -> Result<()> {
        if durability == Durability::Fsync {
            self.file.sync_all().map_err(|e| Error::io(&self.path, e))?;
        }
        fs::rename(&self.path, final_path).map_err(|e| Error::io(final_path, e))?;
        self.done = true;
        if durability == Durability::Fsync
            && let Some(dir) = final_path.parent()
        {
            sync_dir(dir)?;
        }
        Ok(())
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        if !self.done {
            let _ = fs::remove_file(&self.path);
        }
    }
}
