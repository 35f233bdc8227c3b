//! Atomic replacement of files: new content goes to a temporary file beside the target (a
//! hidden name `.{target name}.{random}.tmp`, which no listing takes for a data file), which is
//! then renamed over the target. With [`Durability::Fsync`] the file is fsynced before the
//! rename and its directory after.
//!
//! A process killed before the rename leaves the target untouched (and possibly a stray
//! temporary file, which may be deleted whenever no writer is running); after it, the target
//! is entirely the new content.

use std::ffi::OsString;
use std::fs::File;
use std::io::{self, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use tempfile::NamedTempFile;

use crate::error::{Error, Result};

/// Whether writes wait for the data to reach the disk.
///
/// Files are replaced atomically either way (an interrupted write leaves the old file or the
/// new one under the real name); `Fsync` also makes the result survive a power loss.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
#[non_exhaustive]
pub enum Durability {
    /// No fsync; files are still replaced atomically.
    #[default]
    None,
    /// fsync every written file before it is renamed into place, and its directory after.
    Fsync,
}

/// New content for a target file, written under a temporary name beside it (in the same
/// directory, so the final rename is atomic) and removed on drop unless persisted.
///
/// The file gets the permissions of any new file (0666 minus the umask on unix), not the
/// private 0600 of a usual temporary file. `Staged` reads, writes and seeks like the open file.
///
/// ```
/// use std::io::Write;
/// use scifmt_io::{Durability, Staged};
///
/// let dir = tempfile::tempdir()?;
/// let target = dir.path().join("data.bin");
/// let mut staged = Staged::create(&target)?;
/// staged.write_all(b"new content")?;
/// assert!(!target.exists()); // nothing visible before the rename
/// staged.persist(Durability::Fsync)?;
/// assert_eq!(std::fs::read(&target)?, b"new content");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct Staged {
    tmp: NamedTempFile,
    target: PathBuf,
}

impl Staged {
    /// Creates the temporary file in `target`'s directory (which must exist; `.` for a bare
    /// file name).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if `target` has no file name; [`Error::Io`] (naming
    /// `target`, never the temporary file) if the file cannot be created.
    pub fn create(target: &Path) -> Result<Self> {
        let name = target.file_name().ok_or_else(|| {
            Error::InvalidArgument(format!("{} has no file name", target.display()))
        })?;
        let dir = parent_dir(target);
        let mut prefix = OsString::from(".");
        prefix.push(name);
        prefix.push(".");
        let mut builder = tempfile::Builder::new();
        builder.prefix(&prefix).suffix(".tmp");
        #[cfg(unix)]
        builder.permissions(std::os::unix::fs::PermissionsExt::from_mode(0o666));
        let tmp = builder
            .tempfile_in(dir)
            .map_err(|e| Error::io(target, without_temp_path(e)))?;
        Ok(Self {
            tmp,
            target: target.to_path_buf(),
        })
    }

    /// The open temporary file (read + write).
    #[must_use]
    pub fn file(&self) -> &File {
        self.tmp.as_file()
    }

    /// The temporary file's path (it changes name when persisted). Messages name
    /// [`target`](Self::target) instead: the user never gave this name.
    #[must_use]
    pub fn path(&self) -> &Path {
        self.tmp.path()
    }

    /// The file this content replaces when persisted.
    #[must_use]
    pub fn target(&self) -> &Path {
        &self.target
    }

    /// Replaces the target with the temporary file (fsyncing file and directory with
    /// [`Durability::Fsync`]).
    ///
    /// # Errors
    /// [`Error::Io`] if fsync or the rename fails (the target is then unchanged and the
    /// temporary file removed).
    pub fn persist(self, durability: Durability) -> Result<()> {
        self.sync(durability)?;
        let Self { tmp, target } = self;
        tmp.persist(&target)
            .map_err(|e| Error::io(&target, e.error))?;
        sync_parent(&target, durability)
    }

    /// Like [`Staged::persist`], but never replaces an existing target: `Ok(false)` (and the
    /// temporary file removed) if the target exists.
    ///
    /// # Errors
    /// [`Error::Io`] if fsync or the link/rename fails for another reason.
    pub fn persist_new(self, durability: Durability) -> Result<bool> {
        self.sync(durability)?;
        let Self { tmp, target } = self;
        match tmp.persist_noclobber(&target) {
            Ok(_) => sync_parent(&target, durability).map(|()| true),
            Err(e) if e.error.kind() == io::ErrorKind::AlreadyExists => Ok(false),
            Err(e) => Err(Error::io(&target, e.error)),
        }
    }

    fn sync(&self, durability: Durability) -> Result<()> {
        if durability == Durability::Fsync {
            self.file()
                .sync_all()
                .map_err(|e| Error::io(&self.target, e))?;
        }
        Ok(())
    }
}

impl Write for Staged {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.tmp.write(buf)
    }
    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        self.tmp.write_all(buf)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.tmp.flush()
    }
}

impl Read for Staged {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.tmp.read(buf)
    }
}

impl Seek for Staged {
    fn seek(&mut self, pos: SeekFrom) -> io::Result<u64> {
        self.tmp.seek(pos)
    }
}

/// Replaces `path` with what `body` writes (through a buffered [`Staged`] file beside it):
/// the target is replaced only if `body` succeeds; on any error it is unchanged and the
/// temporary file removed. `body`'s error type only needs a conversion from this crate's.
///
/// ```
/// use std::io::Write;
/// use scifmt_io::{write_atomically, Durability};
///
/// let dir = tempfile::tempdir()?;
/// let path = dir.path().join("out.txt");
/// write_atomically(&path, Durability::None, |w| -> Result<(), scifmt_io::Error> {
///     w.write_all(b"hello").map_err(|e| scifmt_io::Error::io("out.txt", e))
/// })?;
/// assert_eq!(std::fs::read(&path)?, b"hello");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
/// `body`'s error; [`Error::Io`] (converted) if the temporary file cannot be created, written,
/// fsynced or renamed.
pub fn write_atomically<T, E: From<Error>>(
    path: &Path,
    durability: Durability,
    body: impl FnOnce(&mut BufWriter<Staged>) -> Result<T, E>,
) -> Result<T, E> {
    let mut out = BufWriter::new(Staged::create(path)?);
    let value = body(&mut out)?;
    commit(out, durability)?;
    Ok(value)
}

/// Flushes a buffered [`Staged`] file and persists it over its target (what
/// [`write_atomically`] does after its body; for writers that keep the buffer across calls).
///
/// # Errors
/// [`Error::Io`] if the flush, fsync or rename fails (the temporary file is then removed).
pub fn commit(out: BufWriter<Staged>, durability: Durability) -> Result<()> {
    let staged = out.into_inner().map_err(|e| {
        let (error, staged) = e.into_parts();
        Error::io(staged.get_ref().target(), error)
    })?;
    staged.persist(durability)
}

/// `e` without the temporary file's path that `tempfile` appends to its message (`… at path
/// "dir/.name.Ab12Cd.tmp"`): errors name the target the user gave.
fn without_temp_path(e: io::Error) -> io::Error {
    match e.raw_os_error() {
        Some(code) => io::Error::from_raw_os_error(code),
        None => {
            let text = e.to_string();
            let text = text
                .split(" at path ")
                .next()
                .unwrap_or_default()
                .to_owned();
            io::Error::new(e.kind(), text)
        }
    }
}

/// The directory a file path lives in (`.` for a bare file name).
fn parent_dir(path: &Path) -> &Path {
    path.parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
}

/// fsyncs the directory of `path` with [`Durability::Fsync`], making a rename in it durable.
fn sync_parent(path: &Path, durability: Durability) -> Result<()> {
    if durability == Durability::Fsync {
        let dir = parent_dir(path);
        sync_dir(dir).map_err(|e| Error::io(dir, e))?;
    }
    Ok(())
}

/// fsyncs a directory, so that a rename or link in it is durable; a no-op where directories
/// cannot be opened (not unix).
///
/// # Errors
/// The error of opening or fsyncing `dir`.
pub fn sync_dir(dir: &Path) -> io::Result<()> {
    #[cfg(unix)]
    {
        File::open(dir).and_then(|d| d.sync_all())
    }
    #[cfg(not(unix))]
    {
        let _ = dir;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "a failed unwrap is a failed test")]

    use super::*;

    use testkit::dir_names as names;

    #[test]
    fn persist_replaces_the_target_and_leaves_no_temporary_file() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("x0.wkw");
        std::fs::write(&target, b"old").unwrap();
        for durability in [Durability::None, Durability::Fsync] {
            let mut s = Staged::create(&target).unwrap();
            let tmp_name = s.path().file_name().unwrap().to_string_lossy().into_owned();
            assert!(tmp_name.starts_with(".x0.wkw.") && tmp_name.ends_with(".tmp"));
            s.write_all(b"new content").unwrap();
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
        let mut s = Staged::create(&target).unwrap();
        s.write_all(b"first").unwrap();
        assert!(s.persist_new(Durability::Fsync).unwrap());
        let mut s = Staged::create(&target).unwrap();
        s.write_all(b"second").unwrap();
        assert!(!s.persist_new(Durability::None).unwrap());
        assert_eq!(std::fs::read(&target).unwrap(), b"first");
        assert_eq!(names(dir.path()), ["header.wkw"]);
    }

    #[test]
    fn dropped_staged_file_is_removed() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = Staged::create(&dir.path().join("x1.wkw")).unwrap();
        s.write_all(b"abandoned").unwrap();
        drop(s);
        assert!(names(dir.path()).is_empty());
    }

    #[test]
    fn a_failed_body_leaves_the_target_and_no_temporary_file() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("f.b2frame");
        std::fs::write(&target, b"old").unwrap();
        let r = write_atomically(&target, Durability::Fsync, |w| {
            w.write_all(b"partial").unwrap();
            Err::<(), Error>(Error::InvalidArgument("stop".into()))
        });
        assert!(matches!(r, Err(Error::InvalidArgument(_))));
        assert_eq!(std::fs::read(&target).unwrap(), b"old");
        assert_eq!(names(dir.path()), ["f.b2frame"]);
    }

    #[test]
    fn write_atomically_with_fsync_replaces_and_seeks() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("f.b2frame");
        let n = write_atomically(&target, Durability::Fsync, |w| {
            w.write_all(b"xxxx-tail").unwrap();
            w.seek(SeekFrom::Start(0)).unwrap();
            w.write_all(b"head").unwrap();
            Ok::<_, Error>(9)
        })
        .unwrap();
        assert_eq!(n, 9);
        assert_eq!(std::fs::read(&target).unwrap(), b"head-tail");
        assert_eq!(names(dir.path()), ["f.b2frame"]);
        sync_dir(dir.path()).unwrap();
    }

    #[test]
    fn paths_without_a_file_name_and_missing_directories_are_errors() {
        assert!(matches!(
            Staged::create(Path::new("/")),
            Err(Error::InvalidArgument(_))
        ));
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("no/such/dir/f");
        match Staged::create(&missing) {
            // The error names the target the caller gave, and not the temporary file.
            Err(e @ Error::Io { .. }) => {
                let Error::Io { path, .. } = &e else {
                    unreachable!()
                };
                assert_eq!(path, &missing);
                let msg = e.to_string();
                assert!(!msg.contains("/.f.") && !msg.contains("at path"), "{msg}");
            }
            other => panic!("{other:?}"),
        }
    }

    #[cfg(unix)]
    #[test]
    fn persisted_files_get_ordinary_permissions() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("x0.wkw");
        Staged::create(&target)
            .unwrap()
            .persist(Durability::None)
            .unwrap();
        testkit::assert_ordinary_mode(&target);
        let via_body = dir.path().join("x1.wkw");
        write_atomically(&via_body, Durability::Fsync, |_| Ok::<_, Error>(())).unwrap();
        testkit::assert_ordinary_mode(&via_body);
    }
}
