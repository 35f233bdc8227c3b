//! Replacing a whole directory (a dataset) so that an interruption at any moment leaves the old
//! one or the new one, never neither.
//!
//! The new content is built complete in a sibling directory (same parent, so on the same
//! filesystem), then [`replace_dir`] puts it in place. On Linux the two directories trade
//! places in one atomic step (`renameat2(RENAME_EXCHANGE)`): before it the target is the old
//! directory, after it the new one; the old content, now under the sibling's name, is deleted
//! last. Where the exchange is not available (other systems, filesystems without it), the old
//! directory is first renamed to a hidden `.{name}.{random}.old` sibling and the new one renamed
//! into place: a kill between the two renames leaves the target missing, with the old content
//! complete under the `.old` name and the new content complete under the staging name, both
//! beside it.

use std::path::{Path, PathBuf};

use crate::durable::{Durability, sync_dir};
use crate::error::{Error, Result};

/// `.{name}.{tag}` beside `target`: a hidden sibling, for building a replacement of `target`
/// with a name a later run can find again (to resume or clean up).
///
/// # Errors
/// [`Error::InvalidArgument`] if `target` has no file name (`/`, `..`) or `tag` is empty or
/// holds a path separator.
pub fn sibling(target: &Path, tag: &str) -> Result<PathBuf> {
    let name = target
        .file_name()
        .filter(|n| !n.is_empty())
        .ok_or_else(|| {
            Error::InvalidArgument(format!(
                "{} has no name: nothing can be built beside it",
                target.display()
            ))
        })?;
    if tag.is_empty() || tag.contains(['/', '\\']) {
        return Err(Error::InvalidArgument(format!("sibling tag {tag:?}")));
    }
    let mut sib = std::ffi::OsString::from(".");
    sib.push(name);
    sib.push(".");
    sib.push(tag);
    Ok(target.with_file_name(sib))
}

/// Puts the complete directory `new` in place of `target` (a sibling of it; see the crate
/// docs), deleting the old content of `target` if there was one. With
/// [`Durability::Fsync`] the parent directory is fsynced after the rename (the files inside
/// `new` must have been made durable by whoever wrote them).
///
/// # Errors
/// [`Error::InvalidArgument`] if `new` and `target` are not in the same directory;
/// [`Error::Io`] if a rename, the fsync or deleting the old content fails (naming the path
/// involved: after a failed deletion the new content is in place already).
pub fn replace_dir(new: &Path, target: &Path, durability: Durability) -> Result<()> {
    if new.parent() != target.parent() {
        return Err(Error::InvalidArgument(format!(
            "{} is not beside {}: a directory is replaced only by a sibling",
            new.display(),
            target.display()
        )));
    }
    let parent = target
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let old = match std::fs::symlink_metadata(target) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(Error::io(target, e)),
        Ok(_) => Some(swap(new, target)?),
    };
    if old.is_none() {
        std::fs::rename(new, target).map_err(|e| Error::io(target, e))?;
    }
    if durability == Durability::Fsync {
        sync_dir(parent).map_err(|e| Error::io(parent, e))?;
    }
    if let Some(old) = old {
        remove_any(&old)?;
    }
    Ok(())
}

/// Builds the directory `target` so that it appears only complete: `build` fills the hidden
/// sibling [`sibling`]`(target, tag)` (removed first if an earlier run left it), which then
/// replaces `target` ([`replace_dir`]: an existing directory there, or nothing). The sibling is
/// removed when `build` or the replacing fails. A caller that must not replace an existing
/// `target` checks before.
///
/// # Errors
/// `build`'s error; [`Error::InvalidArgument`] for a `target` without a name; [`Error::Io`]
/// clearing the sibling or replacing `target`.
pub fn build_dir<E: From<Error>>(
    target: &Path,
    tag: &str,
    durability: Durability,
    build: impl FnOnce(&Path) -> std::result::Result<(), E>,
) -> std::result::Result<(), E> {
    let staged = sibling(target, tag)?;
    if std::fs::symlink_metadata(&staged).is_ok() {
        remove_any(&staged)?;
    }
    let placed = build(&staged).and_then(|()| Ok(replace_dir(&staged, target, durability)?));
    if placed.is_err() {
        let _ = remove_any(&staged);
    }
    placed
}

/// Makes `new` the content of the existing `target`; returns where the old content now is.
fn swap(new: &Path, target: &Path) -> Result<PathBuf> {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    {
        use rustix::fs::{CWD, RenameFlags, renameat_with};
        match renameat_with(CWD, new, CWD, target, RenameFlags::EXCHANGE) {
            Ok(()) => return Ok(new.to_path_buf()),
            // No exchange on this kernel or filesystem: rename twice.
            Err(e) if e == rustix::io::Errno::INVAL || e == rustix::io::Errno::NOSYS => {}
            Err(e) => return Err(Error::io(target, e.into())),
        }
    }
    let aside = sibling(
        target,
        &format!("{:016x}.old", rand_tag(target).unwrap_or_default()),
    )?;
    std::fs::rename(target, &aside).map_err(|e| Error::io(target, e))?;
    std::fs::rename(new, target).map_err(|e| Error::io(target, e))?;
    Ok(aside)
}

/// A tag for a name that no other run uses at the same time (from a fresh temporary file's
/// randomness, so no extra dependency).
fn rand_tag(target: &Path) -> Option<u64> {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write(target.as_os_str().as_encoded_bytes());
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .ok()?
            .as_nanos(),
    );
    h.write_u32(std::process::id());
    Some(h.finish())
}

/// Deletes a directory tree or a file.
fn remove_any(path: &Path) -> Result<()> {
    let meta = std::fs::symlink_metadata(path).map_err(|e| Error::io(path, e))?;
    let r = if meta.is_dir() {
        std::fs::remove_dir_all(path)
    } else {
        std::fs::remove_file(path)
    };
    r.map_err(|e| Error::io(path, e))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "a failed unwrap is a failed test")]

    use super::*;

    use testkit::dir_names as names;

    #[test]
    fn a_directory_is_replaced_by_its_staged_sibling() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("ds");
        std::fs::create_dir_all(target.join("color/1")).unwrap();
        std::fs::write(target.join("color/1/old.wkw"), b"old").unwrap();
        let new = sibling(&target, "scifmt-overwrite").unwrap();
        assert_eq!(new, dir.path().join(".ds.scifmt-overwrite"));
        std::fs::create_dir_all(new.join("color/1")).unwrap();
        std::fs::write(new.join("color/1/new.zarr"), b"new").unwrap();
        for durability in [Durability::Fsync, Durability::None] {
            replace_dir(&new, &target, durability).unwrap();
            assert_eq!(names(dir.path()), ["ds"]);
            assert_eq!(names(&target.join("color/1")), ["new.zarr"]);
            // Again, over the now-replaced directory.
            std::fs::create_dir_all(new.join("color/1")).unwrap();
            std::fs::write(new.join("color/1/new.zarr"), b"new").unwrap();
        }
    }

    #[test]
    fn a_missing_target_is_created_and_files_are_replaced_too() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("out");
        let new = sibling(&target, "stage").unwrap();
        std::fs::create_dir(&new).unwrap();
        replace_dir(&new, &target, Durability::None).unwrap();
        assert_eq!(names(dir.path()), ["out"]);
        let file = dir.path().join("f");
        std::fs::write(&file, b"old").unwrap();
        let staged = sibling(&file, "stage").unwrap();
        std::fs::write(&staged, b"new").unwrap();
        replace_dir(&staged, &file, Durability::None).unwrap();
        assert_eq!(std::fs::read(&file).unwrap(), b"new");
        assert_eq!(names(dir.path()), ["f", "out"]);
    }

    #[test]
    fn only_siblings_replace_and_nameless_targets_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("a")).unwrap();
        std::fs::create_dir_all(dir.path().join("sub/b")).unwrap();
        assert!(matches!(
            replace_dir(
                &dir.path().join("sub/b"),
                &dir.path().join("a"),
                Durability::None
            ),
            Err(Error::InvalidArgument(_))
        ));
        assert!(matches!(
            sibling(Path::new("/"), "x"),
            Err(Error::InvalidArgument(_))
        ));
        assert!(matches!(
            sibling(Path::new("a"), "x/y"),
            Err(Error::InvalidArgument(_))
        ));
    }
}
