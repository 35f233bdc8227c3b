//! Crash-safe file replacement: the bytes go to a named temporary file in the target's
//! directory (`tempfile`), which is then `persist`ed (renamed) over the target. With
//! [`Durability::Fsync`] the file is fsynced before the rename and its directory after.

use std::ffi::OsString;
use std::io::Write;
use std::path::Path;

use crate::{Error, Result};

/// Whether writes wait for the data to reach the disk.
///
/// Files are replaced atomically either way (an interrupted write leaves the old file or the
/// new one under the real name); `Fsync` also makes the result survive a power loss.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Durability {
    /// No fsync; files are still replaced atomically.
    #[default]
    None,
    /// fsync the written file before it is renamed into place, and its directory after.
    Fsync,
}

/// Replaces `path` with `bytes` through a temporary file beside it (removed on error).
pub(crate) fn write_atomically(path: &Path, bytes: &[u8], durability: Durability) -> Result<()> {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = path.file_name().ok_or_else(|| Error::InvalidParameter {
        what: "path",
        reason: "has no file name".into(),
    })?;
    let mut prefix = OsString::from(".");
    prefix.push(name);
    prefix.push(".");
    let mut builder = tempfile::Builder::new();
    builder.prefix(&prefix).suffix(".tmp");
    // The permissions of any new file (0666 minus the umask), not tempfile's private 0600.
    #[cfg(unix)]
    builder.permissions(std::os::unix::fs::PermissionsExt::from_mode(0o666));
    let mut tmp = builder.tempfile_in(dir)?;
    tmp.write_all(bytes)?;
    if durability == Durability::Fsync {
        tmp.as_file().sync_all()?;
    }
    tmp.persist(path).map_err(|e| Error::Io(e.error))?;
    #[cfg(unix)]
    if durability == Durability::Fsync {
        std::fs::File::open(dir)?.sync_all()?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "a failed unwrap is a failed test")]

    #[cfg(unix)]
    #[test]
    fn written_files_get_ordinary_permissions() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("e.dwe");
        super::write_atomically(&target, b"x", super::Durability::Fsync).unwrap();
        testkit::assert_ordinary_mode(&target);
        assert_eq!(std::fs::read(&target).unwrap(), b"x");
    }
}
