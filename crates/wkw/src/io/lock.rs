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

//!
//! Datasets are often shared: a writer needs write permission only on the directories of the
//! files it replaces. So a lock file is opened read-only when it exists (an advisory lock needs
//! no write access), new lock folders get the permissions of the dataset root (so that whoever
//! may write the dataset may create lock files in them), and a lock that truly cannot be taken
//! is an [`Error::Lock`] naming the lock file.

use std::fs::{File, OpenOptions};
use std::io;
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
/// [`Error::Lock`] if the lock file cannot be created, opened or locked.
pub(crate) fn lock(root: &Path, index: [u32; 3]) -> Result<File> {
    let path = lock_path(root, index);
    let f = match open_lock_file(root, &path) {
        Ok(f) => f,
        Err(source) => return Err(Error::Lock { path, source }),
    };
    match f.lock() {
        Ok(()) => Ok(f),
        Err(source) => Err(Error::Lock { path, source }),
    }
}

/// Opens the lock file at `path` read-only, creating it (and its folders, with the root's
/// permissions) if it does not exist yet.
fn open_lock_file(root: &Path, path: &Path) -> io::Result<File> {
    match File::open(path) {
        Ok(f) => return Ok(f),
        Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
        Err(_) => {}
    }
    if let Some(dir) = path.parent() {
        create_dirs_like(root, dir)?;
    }
    match OpenOptions::new().write(true).create_new(true).open(path) {
        Ok(f) => Ok(f),
        // Another writer created it in the meantime.
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => File::open(path),
        Err(e) => Err(e),
    }
}

/// Creates `dir` and its missing parents below `root`, each new one with `root`'s permissions
/// (unix; elsewhere the platform's defaults).
fn create_dirs_like(root: &Path, dir: &Path) -> io::Result<()> {
    if dir.is_dir() {
        return Ok(());
    }
    let mut missing = Vec::new();
    let mut d = dir;
    while !d.is_dir() {
        missing.push(d.to_path_buf());
        match d.parent() {
            Some(p) if p.starts_with(root) => d = p,
            _ => break,
        }
    }
    let mode = std::fs::metadata(root)?.permissions();
    for d in missing.iter().rev() {
        match std::fs::create_dir(d) {
            Ok(()) => {
                // The umask may have narrowed the root's permissions: set them as they are.
                let _ = std::fs::set_permissions(d, mode.clone());
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "a failed unwrap is a failed test")]

    use super::*;

    #[cfg(unix)]
    #[test]
    fn lock_folders_take_the_roots_permissions_and_files_lock_read_only() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::set_permissions(root, std::fs::Permissions::from_mode(0o2775)).unwrap();
        let f = lock(root, [1, 2, 3]).unwrap();
        drop(f);
        for d in [
            root.join(LOCK_DIR_NAME),
            root.join(LOCK_DIR_NAME).join("z3"),
            root.join(LOCK_DIR_NAME).join("z3").join("y2"),
        ] {
            let mode = std::fs::metadata(&d).unwrap().permissions().mode() & 0o7777;
            assert_eq!(mode, 0o2775, "{}", d.display());
        }
        // An existing lock file nobody may write is still locked (read-only descriptor).
        let path = lock_path(root, [1, 2, 3]);
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o444)).unwrap();
        let f = lock(root, [1, 2, 3]).unwrap();
        let other = File::open(&path).unwrap();
        assert!(other.try_lock().is_err(), "the lock is held");
        drop(f);
        other.try_lock().unwrap();
    }

    #[test]
    fn a_lock_that_cannot_be_taken_names_its_lock_file() {
        let dir = tempfile::tempdir().unwrap();
        // A file where a lock folder should be: the lock file cannot be created.
        let path = lock_path(dir.path(), [0, 0, 0]);
        std::fs::create_dir_all(dir.path().join(LOCK_DIR_NAME)).unwrap();
        std::fs::write(dir.path().join(LOCK_DIR_NAME).join("z0"), b"not a folder").unwrap();
        let e = lock(dir.path(), [0, 0, 0]).unwrap_err();
        assert!(
            matches!(&e, Error::Lock { path: p, .. } if *p == path),
            "{e:?}"
        );
        assert!(
            e.to_string().starts_with("cannot take the write lock "),
            "{e}"
        );
    }
}
