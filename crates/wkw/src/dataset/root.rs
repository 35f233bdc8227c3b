//! [`Dataset`]: a WKW dataset root (`header.wkw` + `z*/y*/x*.wkw`).

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::dataset::array::Layout;
use crate::dataset::cache::MetaCache;
use crate::error::{Error, FormatError, Result};
use crate::format::file::{FileMeta, OpenFailure};
use crate::format::header::Header;
use crate::format::tree::{self, file_key};
use crate::io::fsio::write_all_at;
use crate::io::storage::{FsStorage, Storage, StorageFile};
use crate::options::{HeaderCheck, MissingOrCorrupt, Options};
use scifmt_io::Staged;

/// Name of the dataset header file.
pub const HEADER_FILE_NAME: &str = "header.wkw";

/// A WKW dataset: its root directory, the dataset header from `header.wkw` and the options.
///
/// All methods take `&self`; a `Dataset` is `Send + Sync` and can be shared across threads
/// (reads use positional I/O, writers of the same file are serialised by an advisory lock).
#[derive(Debug)]
pub struct Dataset {
    pub(crate) root: PathBuf,
    pub(crate) header: Header,
    pub(crate) options: Options,
    pub(crate) storage: Box<dyn Storage>,
    pub(crate) cache: MetaCache,
    /// Whether `root` is a local directory this crate may write and list (not for datasets
    /// opened on another [`Storage`]).
    pub(crate) local: bool,
}

/// A data file resolved for reading.
pub(crate) enum Resolved {
    /// Absent, or unreadable under [`MissingOrCorrupt::Zeros`]: reads as zeros.
    Zeros,
    /// Present and valid.
    Present {
        file: Box<dyn StorageFile>,
        meta: Arc<FileMeta>,
        path: PathBuf,
    },
}

impl Dataset {
    /// Creates a dataset: the root directory (with parents) and `header.wkw` (dataOffset 0).
    ///
    /// # Errors
    /// [`Error::AlreadyExists`] if `header.wkw` exists, [`Error::Io`] on I/O failure,
    /// [`Error::LimitExceeded`] if a block is larger than [`crate::Limits::max_block_bytes`].
    pub fn create(root: impl AsRef<Path>, header: Header) -> Result<Self> {
        Self::create_with(root, header, Options::default())
    }

    /// [`Dataset::create`] with options.
    ///
    /// # Errors
    /// As [`Dataset::create`].
    pub fn create_with(root: impl AsRef<Path>, header: Header, options: Options) -> Result<Self> {
        let root = root.as_ref();
        check_block_limit(&header, &options)?;
        fs::create_dir_all(root).map_err(|e| Error::io(root, e))?;
        let path = root.join(HEADER_FILE_NAME);
        let header = header.with_data_offset(0);
        // Written under a temporary name and moved into place without replacing an existing
        // file: a process killed here leaves no empty or partial header.wkw.
        let tmp = Staged::create(&path)?;
        write_all_at(tmp.file(), &header.to_bytes(), 0).map_err(|e| Error::io(tmp.target(), e))?;
        if !tmp.persist_new(options.durability)? {
            return Err(Error::AlreadyExists { path });
        }
        Ok(Self::from_parts(root.to_path_buf(), header, options))
    }

    /// Opens an existing dataset with default [`Options`].
    ///
    /// # Errors
    /// [`Error::NotADataset`] without `header.wkw`; [`Error::Format`] if it is invalid;
    /// [`Error::LimitExceeded`] if its blocks are larger than
    /// [`crate::Limits::max_block_bytes`].
    pub fn open(root: impl AsRef<Path>) -> Result<Self> {
        Self::open_with(root, Options::default())
    }

    /// Opens an existing dataset.
    ///
    /// # Errors
    /// As [`Dataset::open`].
    pub fn open_with(root: impl AsRef<Path>, options: Options) -> Result<Self> {
        let root = root.as_ref();
        let path = root.join(HEADER_FILE_NAME);
        let bytes = match fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(Error::NotADataset {
                    path: root.to_path_buf(),
                });
            }
            Err(e) => return Err(Error::io(&path, e)),
        };
        let header = parse_dataset_header(&bytes, &path, &options)?;
        Ok(Self::from_parts(root.to_path_buf(), header, options))
    }

    /// Opens a dataset for reading on another [`Storage`] than the local file system: its
    /// `header.wkw` and data files are read through `storage` (with the same checks, policies
    /// and metadata cache as local datasets; the cache trusts [`crate::StorageFile::stamp`]).
    /// [`Dataset::root`] is `storage.display_path("")`. Such a dataset is read-only:
    /// [`Dataset::write`] and [`Dataset::list_files`] return [`Error::Unsupported`].
    ///
    /// # Errors
    /// [`Error::NotADataset`] without `header.wkw`; [`Error::Format`] if it is invalid;
    /// [`Error::LimitExceeded`]; [`Error::Io`] from the storage.
    pub fn open_storage(storage: Box<dyn Storage>, options: Options) -> Result<Self> {
        let root = storage.display_path("");
        let path = storage.display_path(HEADER_FILE_NAME);
        let Some(file) = storage
            .open(HEADER_FILE_NAME)
            .map_err(|e| Error::io(&path, e))?
        else {
            return Err(Error::NotADataset { path: root });
        };
        // Only the 16 header bytes matter; a shorter file is a truncated header.
        let len = file.size().map_err(|e| Error::io(&path, e))?;
        let n = usize::try_from(len.min(16)).unwrap_or(16);
        let mut bytes = vec![0u8; n];
        file.read_exact_at(&mut bytes, 0)
            .map_err(|e| Error::io(&path, e))?;
        let header = parse_dataset_header(&bytes, &path, &options)?;
        Ok(Self {
            cache: MetaCache::new(options.cache_capacity),
            storage,
            root,
            header,
            options,
            local: false,
        })
    }

    /// A dataset that only decodes: reads go through [`Dataset::read_resolved`] with files
    /// opened elsewhere (an object store); its storage opens nothing.
    #[cfg(feature = "object_store")]
    pub(crate) fn detached(root: PathBuf, header: Header, options: Options) -> Self {
        Self {
            storage: Box::new(crate::io::storage::Detached),
            cache: MetaCache::new(0),
            local: false,
            root,
            header,
            options,
        }
    }

    fn from_parts(root: PathBuf, header: Header, options: Options) -> Self {
        Self {
            storage: Box::new(FsStorage { root: root.clone() }),
            cache: MetaCache::new(options.cache_capacity),
            local: true,
            root,
            header,
            options,
        }
    }

    /// The dataset header (`header.wkw`, dataOffset 0).
    #[must_use]
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// The dataset root.
    #[must_use]
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The options in effect.
    #[must_use]
    pub fn options(&self) -> &Options {
        &self.options
    }

    /// Path of data file `(fx, fy, fz)`: `root/z{fz}/y{fy}/x{fx}.wkw`.
    #[must_use]
    pub fn file_path(&self, index: [u32; 3]) -> PathBuf {
        self.root.join(file_key(index))
    }

    /// The lock file writers of data file `(fx, fy, fz)` hold (exclusive advisory lock on the
    /// whole file) while they update it: `root/.wkw-locks/z{fz}/y{fy}/x{fx}.lock`. Another
    /// program that modifies data files of the dataset can serialise itself with this crate's
    /// writers by holding the same lock. Lock files may be deleted whenever no writer runs.
    #[must_use]
    pub fn lock_path(&self, index: [u32; 3]) -> PathBuf {
        crate::io::lock::lock_path(&self.root, index)
    }

    /// Every data file `z*/y*/x*.wkw` of the dataset as (file index (x, y, z), path), sorted by
    /// z, y, x. Nothing else counts: the lock directory `.wkw-locks`, temporary files of
    /// interrupted writes and foreign files are skipped.
    ///
    /// # Errors
    /// [`Error::Io`] if a directory cannot be listed; [`Error::Unsupported`] for a dataset
    /// opened with [`Dataset::open_storage`].
    pub fn list_files(&self) -> Result<Vec<([u32; 3], PathBuf)>> {
        self.check_local()?;
        tree::list_files(&self.root).map_err(|e| Error::io(&self.root, e))
    }

    /// [`Error::Unsupported`] unless the dataset is a local directory.
    pub(crate) fn check_local(&self) -> Result<()> {
        if self.local {
            Ok(())
        } else {
            Err(Error::Unsupported(
                "writing and listing need a local dataset (this one was opened on a Storage)",
            ))
        }
    }

    /// Opens data file `index` for reading, applying the cache and the policies.
    pub(crate) fn resolve(&self, index: [u32; 3]) -> Result<Resolved> {
        let key = file_key(index);
        let path = self.storage.display_path(&key);
        let Some(file) = self.storage.open(&key).map_err(|e| Error::io(&path, e))? else {
            return Ok(Resolved::Zeros);
        };
        let stamp = file.stamp();
        let meta = if let Some(meta) = self.cache.get(index, stamp) {
            meta
        } else {
            match FileMeta::parse(file.as_ref(), &self.options.limits, &path) {
                Ok(meta) => {
                    let meta = Arc::new(meta);
                    self.check_file_header(&meta.header, &path)?;
                    self.cache.put(index, stamp, &meta);
                    meta
                }
                Err(OpenFailure::Unreadable(_))
                    if self.options.missing_or_corrupt == MissingOrCorrupt::Zeros =>
                {
                    return Ok(Resolved::Zeros);
                }
                Err(OpenFailure::Unreadable(e)) => return Err(Error::format(&path, e)),
                Err(OpenFailure::Hard(e)) => return Err(e),
            }
        };
        Ok(Resolved::Present { file, meta, path })
    }

    /// Checks that an array holds this dataset's voxel type and channel count.
    pub(crate) fn check_layout(&self, layout: &Layout) -> Result<()> {
        if layout.voxel_type != self.header.voxel_type()
            || layout.num_channels != self.header.num_channels()
        {
            return Err(Error::ArrayMismatch(format!(
                "array holds {} channel(s) of {:?}, dataset has {} of {:?}",
                layout.num_channels,
                layout.voxel_type,
                self.header.num_channels(),
                self.header.voxel_type()
            )));
        }
        Ok(())
    }

    pub(crate) fn check_file_header(&self, file: &Header, path: &Path) -> Result<()> {
        file.check_matches(
            &self.header,
            self.options.header_check == HeaderCheck::Lenient,
        )
        .map_err(|e| Error::format(path, e))
    }
}

/// Parses and checks the bytes of a `header.wkw` (found at `path`) under `options`: a valid
/// header, blocks within the limits, dataOffset 0 unless [`HeaderCheck::Lenient`]. Returns it
/// with dataOffset 0.
pub(crate) fn parse_dataset_header(bytes: &[u8], path: &Path, options: &Options) -> Result<Header> {
    let header = Header::parse(bytes).map_err(|e| Error::format(path, e))?;
    check_block_limit(&header, options)?;
    if header.data_offset() != 0 && options.header_check == HeaderCheck::Strict {
        return Err(Error::format(
            path,
            FormatError::DataOffset {
                found: header.data_offset(),
                why: "header.wkw must have dataOffset 0 (HeaderCheck::Lenient ignores it)".into(),
            },
        ));
    }
    Ok(header.with_data_offset(0))
}

/// Every read and write handles whole raw blocks of the dataset's geometry (also for missing
/// files, read as zeros), so a block larger than [`crate::Limits::max_block_bytes`] is refused
/// when the dataset is opened or created, before anything is allocated for it.
pub(crate) fn check_block_limit(header: &Header, options: &Options) -> Result<()> {
    let requested = header.block_bytes();
    if requested > options.limits.max_block_bytes {
        return Err(Error::LimitExceeded {
            what: "raw block",
            requested,
            limit: options.limits.max_block_bytes,
        });
    }
    Ok(())
}
