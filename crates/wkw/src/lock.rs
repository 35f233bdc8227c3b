//! Advisory locks that serialise writers of the same data file, across threads and processes.
//!
//! The lock of data file `z{z}/y{y}/x{x}.wkw` is the file `.wkw-locks/z{z}/y{y}/x{x}.lock`
//! below the dataset root ([`LOCK_DIR_NAME`]), held with an exclusive advisory lock on the
//! whole file ([`std::fs::File::lock`]: `flock` on unix, `LockFileEx` on Windows) for the
//! whole read-modify-write of the data file. The lock cannot live on the data file itself:
//! compressed files are replaced by a rename, so a second writer would lock the new inode
//! while the first still holds the old one.
//!
//! Keeping every lock file in one hidden directory (instead of `x{x}.wkw.lock` beside each
//! data file) means no lock file sits among the data, every listing skips them (the name
//! `.wkw-locks` never parses as `z{n}`), and they can all be removed with one
//! `rm -r .wkw-locks` whenever no writer is running. The directory mirrors `z/y/x` so that no
//! directory holds more entries than the data directories do. Deleting a lock file while a
//! writer holds it is the one thing not allowed: a second writer would then create and lock a
//! new file and both would proceed.

use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// Name of the directory below the dataset root that holds the writers' lock files.
pub const LOCK_DIR_NAME: &str = ".wkw-locks";

/// The lock file of data file `(fx, fy, fz)` of the dataset at `root`.
pub(crate) fn lock_path(root: &Path, [fx, fy, fz]: [u32; 3]) -> PathBuf {
    root.join(LOCK_DIR_NAME)
        .join(format!("z{fz}"))
        .join(format!("y{fy}"))
        .join(format!("x{fx}.lock"))
}

/// Takes the advisory write lock of data file `index` of the dataset at `root`, waiting for
/// other writers (released when the returned handle drops).
///
/// # Errors
/// [`Error::Io`] if the lock file cannot be created or locked.
pub(crate) fn lock(root: &Path, index: [u32; 3]) -> Result<File> {
    let path = lock_path(root, index);
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    }
    let f = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(|e| Error::io(&path, e))?;
    f.lock().map_err(|e| Error::io(&path, e))?;
    Ok(f)
}
