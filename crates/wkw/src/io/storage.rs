//! Positional read access to data files behind a small public trait, so that other storage
//! (an archive, a cache, a network file system client, …) can replace the local file system
//! for reads without changing the dataset API: [`crate::Dataset::open_storage`].
//!
//! The boundary: a [`Storage`] maps dataset-relative keys (`header.wkw`, `z{z}/y{y}/x{x}.wkw`)
//! to opened [`StorageFile`]s that answer positional reads (through [`ReadAt`], the one
//! positional-read trait of the scifmt crates) and a version [`Stamp`]. Parsing,
//! caching and policies live above it (`file`, `cache`, `dataset`); writing, locking and
//! listing are local file-system operations (`writer`, `lock`, `tree`) and not part of it, so a
//! dataset on another storage is read-only. Object stores have their own asynchronous path
//! ([`crate::RemoteDataset`], feature `object_store`), which plans and batches range requests
//! instead of reading block by block.

use std::fs::File;
use std::io;
use std::path::PathBuf;
use std::time::SystemTime;

use scifmt_io::{Prefetched, ReadAt};

/// Identity of one version of a file (length and modification time for local files): while it
/// is unchanged, the file's parsed header and jump table are reused from the dataset's cache.
pub type Stamp = (u64, Option<SystemTime>);

/// One file opened for reading: positional reads and its length through [`ReadAt`]
/// ([`ReadAt::size`] is the length at open time; reading past the end is an error, never a
/// short read), plus a version [`Stamp`] for the metadata cache.
///
/// [`ReadAt`] is implemented for byte slices, `Vec<u8>`, files and
/// [`Prefetched`] (byte ranges fetched ahead from a store), so a file held
/// in memory needs only [`StorageFile::stamp`]:
///
/// ```
/// use wkw::{ReadAt, Stamp, StorageFile};
/// struct Memory(Vec<u8>);
/// impl ReadAt for Memory {
///     fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
///         self.0.read_exact_at(buf, offset)
///     }
///     fn size(&self) -> std::io::Result<u64> {
///         Ok(self.0.len() as u64)
///     }
/// }
/// impl StorageFile for Memory {
///     fn stamp(&self) -> Option<Stamp> {
///         Some((self.0.len() as u64, None))
///     }
/// }
/// ```
pub trait StorageFile: ReadAt + Send + Sync {
    /// Version identity for the metadata cache (`None`: never cache this file's metadata).
    fn stamp(&self) -> Option<Stamp>;
}

/// Byte ranges fetched ahead (e.g. a data file's header and jump table from an object store):
/// never cached by stamp.
impl StorageFile for Prefetched {
    fn stamp(&self) -> Option<Stamp> {
        None
    }
}

/// A place a dataset's files live, addressed by their dataset-relative key: `header.wkw` and
/// `z{z}/y{y}/x{x}.wkw` (`/`-separated).
pub trait Storage: Send + Sync + std::fmt::Debug {
    /// Opens a file for reading.
    ///
    /// # Errors
    /// An I/O error other than "not found", which is `Ok(None)` (a missing data file reads as
    /// zeros).
    fn open(&self, key: &str) -> io::Result<Option<Box<dyn StorageFile>>>;
    /// Where a key lives, for error messages (and [`crate::Dataset::root`] for the key `""`).
    fn display_path(&self, key: &str) -> PathBuf;
}

/// The local file system below a dataset root.
#[derive(Debug, Clone)]
pub(crate) struct FsStorage {
    pub(crate) root: PathBuf,
}

/// A local file opened for positional reads (and, for writers, writes).
pub(crate) struct FsFile {
    pub(crate) file: File,
    len: u64,
    modified: Option<SystemTime>,
}

impl FsFile {
    /// Wraps an open file, recording its length and modification time.
    pub(crate) fn new(file: File) -> io::Result<Self> {
        let meta = file.metadata()?;
        Ok(Self {
            len: meta.len(),
            modified: meta.modified().ok(),
            file,
        })
    }
}

impl ReadAt for FsFile {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        self.file.read_exact_at(buf, offset)
    }
    fn size(&self) -> io::Result<u64> {
        Ok(self.len)
    }
}

impl StorageFile for FsFile {
    fn stamp(&self) -> Option<Stamp> {
        Some((self.len, self.modified))
    }
}

impl Storage for FsStorage {
    fn open(&self, key: &str) -> io::Result<Option<Box<dyn StorageFile>>> {
        match File::open(self.root.join(key)) {
            Ok(file) => Ok(Some(Box::new(FsFile::new(file)?))),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }
    fn display_path(&self, key: &str) -> PathBuf {
        self.root.join(key)
    }
}

/// No storage: a dataset that only decodes files fetched elsewhere (remote datasets).
#[cfg(feature = "object_store")]
#[derive(Debug)]
pub(crate) struct Detached;

#[cfg(feature = "object_store")]
impl Storage for Detached {
    fn open(&self, key: &str) -> io::Result<Option<Box<dyn StorageFile>>> {
        Err(io::Error::other(format!(
            "{key}: a remote dataset's decoder opens no files"
        )))
    }
    fn display_path(&self, key: &str) -> PathBuf {
        PathBuf::from(key)
    }
}
