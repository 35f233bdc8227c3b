//! Advisory locks that serialise writers of the same data file, across threads and processes.

use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// Takes the advisory write lock of data file `path` (released when the handle drops).
pub(crate) fn lock(path: &Path) -> Result<File> {
    let mut name = path.as_os_str().to_owned();
    name.push(".lock");
    let lock_path = PathBuf::from(name);
    let f = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock_path)
        .map_err(|e| Error::io(&lock_path, e))?;
    f.lock().map_err(|e| Error::io(&lock_path, e))?;
    Ok(f)
}
