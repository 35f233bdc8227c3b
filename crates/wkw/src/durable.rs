//! Atomic replacement of files, the one mechanism every write of this crate uses: the new
//! content goes to a [`tempfile::NamedTempFile`] created in the target's directory (a hidden
//! name `.{target name}.{random}.tmp`, which no listing takes for a data file), which is then
//! persisted (renamed) over the target. With [`Durability::Fsync`] the file is fsynced before
//! the rename and the directory after it.
//!
//! A process killed before the rename leaves the target untouched (and possibly a stray
//! temporary file, which may be deleted whenever no writer is running); after it, the target
//! is entirely the new content.

use std::fs::File;
use std::path::{Path, PathBuf};

use tempfile::NamedTempFile;

use crate::error::{Error, Result};
use crate::fsio;
use crate::options::Durability;

/// New content for `target`, being written under a temporary name next to it (removed on drop
/// unless persisted).
#[derive(Debug)]
pub(crate) struct Staging {
    tmp: NamedTempFile,
    target: PathBuf,
}

impl Staging {
    /// Creates the temporary file in `target`'s directory (which must exist).
    ///
    /// # Errors
    /// [`Error::Io`] if it cannot be created.
    pub(crate) fn create(target: &Path) -> Result<Self> {
        let dir = match target.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        let mut prefix = std::ffi::OsString::from(".");
        prefix.push(target.file_name().unwrap_or_default());
        prefix.push(".");
        let mut builder = tempfile::Builder::new();
        builder.prefix(&prefix).suffix(".tmp");
        // Data files get the permissions of any new file (0666 minus the umask), not
        // tempfile's private 0600.
        #[cfg(unix)]
        builder.permissions(std::os::unix::fs::PermissionsExt::from_mode(0o666));
        let tmp = builder.tempfile_in(dir).map_err(|e| Error::io(dir, e))?;
        Ok(Self {
            tmp,
            target: target.to_path_buf(),
        })
    }

    /// The open temporary file (read + write).
    pub(crate) fn file(&self) -> &File {
        self.tmp.as_file()
    }

    /// The temporary file's path, for error messages.
    pub(crate) fn path(&self) -> &Path {
        self.tmp.path()
    }

    /// Replaces the target with the temporary file (fsyncing file and directory with
    /// [`Durability::Fsync`]).
    ///
    /// # Errors
    /// [`Error::Io`] if fsync or the rename fails (the target is then unchanged).
    pub(crate) fn persist(self, durability: Durability) -> Result<()> {
        self.sync(durability)?;
        let Self { tmp, target } = self;
        tmp.persist(&target)
            .map_err(|e| Error::io(&target, e.error))?;
        sync_parent(&target, durability)
    }

    /// Like [`Staging::persist`], but never replaces an existing target: `Ok(false)` (and the
    /// temporary file removed) if the target exists.
    ///
    /// # Errors
    /// [`Error::Io`] if fsync or the link/rename fails for another reason.
    pub(crate) fn persist_new(self, durability: Durability) -> Result<bool> {
        self.sync(durability)?;
        let Self { tmp, target } = self;
        match tmp.persist_noclobber(&target) {
            Ok(_) => sync_parent(&target, durability).map(|()| true),
            Err(e) if e.error.kind() == std::io::ErrorKind::AlreadyExists => Ok(false),
            Err(e) => Err(Error::io(&target, e.error)),
        }
    }

    fn sync(&self, durability: Durability) -> Result<()> {
        if durability == Durability::Fsync {
            self.file()
                .sync_all()
                .map_err(|e| Error::io(self.path(), e))?;
        }
        Ok(())
    }
}

/// fsyncs the directory of `path` with [`Durability::Fsync`], making a rename in it durable.
fn sync_parent(path: &Path, durability: Durability) -> Result<()> {
    if durability == Durability::Fsync
        && let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty())
    {
        fsio::sync_dir(dir).map_err(|e| Error::io(dir, e))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "a failed unwrap is a failed test")]

    use super::*;
    use crate::fsio::write_all_at;

    fn names(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn persist_replaces_the_target_and_leaves_no_temporary_file() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("x0.wkw");
        std::fs::write(&target, b"old").unwrap();
        for durability in [Durability::None, Durability::Fsync] {
            let s = Staging::create(&target).unwrap();
            let tmp_name = s.path().file_name().unwrap().to_string_lossy().into_owned();
            assert!(tmp_name.starts_with(".x0.wkw.") && tmp_name.ends_with(".tmp"));
            write_all_at(s.file(), b"new content", 0).unwrap();
            // Until persisted, the target is untouched.
            assert_eq!(std::fs::read(&target).unwrap(), b"old");
            s.persist(durability).unwrap();
            assert_eq!(std::fs::read(&target).unwrap(), b"new content");
            assert_eq!(names(dir.path()), ["x0.wkw"]);
            std::fs::write(&target, b"old").unwrap();
        }
    }

    #[test]
    fn persist_new_never_replaces_an_existing_target() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("header.wkw");
        let s = Staging::create(&target).unwrap();
        write_all_at(s.file(), b"first", 0).unwrap();
        assert!(s.persist_new(Durability::Fsync).unwrap());
        let s = Staging::create(&target).unwrap();
        write_all_at(s.file(), b"second", 0).unwrap();
        assert!(!s.persist_new(Durability::None).unwrap());
        assert_eq!(std::fs::read(&target).unwrap(), b"first");
        assert_eq!(names(dir.path()), ["header.wkw"]);
    }

    #[test]
    fn dropped_staging_removes_its_temporary_file() {
        let dir = tempfile::tempdir().unwrap();
        let s = Staging::create(&dir.path().join("x1.wkw")).unwrap();
        write_all_at(s.file(), b"abandoned", 0).unwrap();
        drop(s);
        assert!(names(dir.path()).is_empty());
    }

    #[cfg(unix)]
    #[test]
    fn persisted_files_get_ordinary_permissions() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("x0.wkw");
        Staging::create(&target)
            .unwrap()
            .persist(Durability::None)
            .unwrap();
        testkit::assert_ordinary_mode(&target);
    }
}
