//! Crash-safe file replacement: every file this crate writes goes to a named temporary file in
//! the target's directory (`tempfile`), which is then `persist`ed (renamed) over the target.
//! With [`Durability::Fsync`] the file is fsynced before the rename and its directory after.

use std::ffi::OsString;
use std::io::{BufWriter, Write};
use std::path::Path;

use tempfile::NamedTempFile;

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
    /// fsync every written file before it is renamed into place, and its directory after.
    Fsync,
}

/// The directory a file path lives in (`.` for a bare file name).
pub(crate) fn parent_dir(path: &Path) -> &Path {
    path.parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
}

/// A new temporary file beside `path`, named `.<name>.<random>.tmp` (removed when dropped).
pub(crate) fn temp_beside(path: &Path) -> Result<NamedTempFile> {
    let name = path
        .file_name()
        .ok_or_else(|| Error::InvalidArgument(format!("{} has no file name", path.display())))?;
    let mut prefix = OsString::from(".");
    prefix.push(name);
    prefix.push(".");
    let mut builder = tempfile::Builder::new();
    builder.prefix(&prefix).suffix(".tmp");
    // The permissions of any new file (0666 minus the umask), not tempfile's private 0600.
    #[cfg(unix)]
    builder.permissions(std::os::unix::fs::PermissionsExt::from_mode(0o666));
    Ok(builder.tempfile_in(parent_dir(path))?)
}

/// Flushes `out`, fsyncs it if asked, renames it over `path`, then fsyncs the directory if
/// asked. On error the temporary file is removed.
pub(crate) fn commit(
    out: BufWriter<NamedTempFile>,
    path: &Path,
    durability: Durability,
) -> Result<()> {
    let tmp = out.into_inner().map_err(|e| Error::Io(e.into_error()))?;
    if durability == Durability::Fsync {
        tmp.as_file().sync_all()?;
    }
    tmp.persist(path).map_err(|e| Error::Io(e.error))?;
    if durability == Durability::Fsync {
        sync_dir(parent_dir(path))?;
    }
    Ok(())
}

/// Replaces `path` with what `body` writes, through a temporary file beside it.
pub(crate) fn write_atomically(
    path: &Path,
    durability: Durability,
    body: impl FnOnce(&mut BufWriter<NamedTempFile>) -> Result<()>,
) -> Result<()> {
    let mut out = BufWriter::new(temp_beside(path)?);
    body(&mut out)?;
    out.flush()?;
    commit(out, path, durability)
}

#[cfg(unix)]
fn sync_dir(dir: &Path) -> Result<()> {
    std::fs::File::open(dir)?.sync_all()?;
    Ok(())
}

#[cfg(not(unix))]
fn sync_dir(_dir: &Path) -> Result<()> {
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "a failed unwrap is a failed test")]

    #[cfg(unix)]
    #[test]
    fn written_files_get_ordinary_permissions() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("f.b2frame");
        super::write_atomically(&target, super::Durability::Fsync, |w| {
            std::io::Write::write_all(w, b"x")?;
            Ok(())
        })
        .unwrap();
        testkit::assert_ordinary_mode(&target);
        assert_eq!(std::fs::read(&target).unwrap(), b"x");
    }
}
