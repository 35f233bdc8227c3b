//! Positional read access to data files behind a small trait, so that an object-store backend
//! (range requests) can replace the local file system without changing the public API.

use std::collections::HashMap;
use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use crate::file::FileMeta;

/// Identity of one version of a file: if it changes, cached metadata is stale.
pub(crate) type Stamp = (u64, Option<SystemTime>);

/// One opened file.
pub(crate) trait StorageFile: Send + Sync {
    /// Length in bytes at open time.
    fn len(&self) -> u64;
    /// Version identity for the metadata cache (`None`: never cache).
    fn stamp(&self) -> Option<Stamp>;
    /// Fills `buf` from `offset`; a short file is an error.
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()>;
}

/// A place data files live, addressed by their dataset-relative key `z{z}/y{y}/x{x}.wkw`.
pub(crate) trait Storage: Send + Sync + std::fmt::Debug {
    /// Opens a file for reading; `Ok(None)` if it does not exist.
    fn open(&self, key: &str) -> io::Result<Option<Box<dyn StorageFile>>>;
    /// Where a key lives, for error messages.
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

impl StorageFile for FsFile {
    fn len(&self) -> u64 {
        self.len
    }
    fn stamp(&self) -> Option<Stamp> {
        Some((self.len, self.modified))
    }
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        read_exact_at(&self.file, buf, offset)
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

/// Positional read (no shared cursor, so one handle serves many threads).
pub(crate) fn read_exact_at(file: &File, buf: &mut [u8], offset: u64) -> io::Result<()> {
    #[cfg(unix)]
    {
        std::os::unix::fs::FileExt::read_exact_at(file, buf, offset)
    }
    #[cfg(windows)]
    {
        let mut done = 0usize;
        while done < buf.len() {
            let rest = buf.get_mut(done..).unwrap_or_default();
            let n = std::os::windows::fs::FileExt::seek_read(file, rest, offset + done as u64)?;
            if n == 0 {
                return Err(io::ErrorKind::UnexpectedEof.into());
            }
            done += n;
        }
        Ok(())
    }
}

/// Positional write.
pub(crate) fn write_all_at(file: &File, buf: &[u8], offset: u64) -> io::Result<()> {
    #[cfg(unix)]
    {
        std::os::unix::fs::FileExt::write_all_at(file, buf, offset)
    }
    #[cfg(windows)]
    {
        let mut done = 0usize;
        while done < buf.len() {
            let rest = buf.get(done..).unwrap_or_default();
            let n = std::os::windows::fs::FileExt::seek_write(file, rest, offset + done as u64)?;
            if n == 0 {
                return Err(io::ErrorKind::WriteZero.into());
            }
            done += n;
        }
        Ok(())
    }
}

/// The dataset-relative key of file `(fx, fy, fz)`.
pub(crate) fn file_key([fx, fy, fz]: [u32; 3]) -> String {
    format!("z{fz}/y{fy}/x{fx}.wkw")
}

/// Parses `x{n}.wkw` style names: the number after `prefix`, before `suffix`.
pub(crate) fn parse_index(name: &str, prefix: &str, suffix: &str) -> Option<u32> {
    let digits = name.strip_prefix(prefix)?.strip_suffix(suffix)?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    if digits.len() > 1 && digits.starts_with('0') {
        return None;
    }
    digits.parse().ok()
}

/// Every data file `z*/y*/x*.wkw` below `root`, as (file index, path), sorted by (z, y, x).
pub(crate) fn list_files(root: &Path) -> io::Result<Vec<([u32; 3], PathBuf)>> {
    let mut out = Vec::new();
    for z in std::fs::read_dir(root)? {
        let z = z?;
        let Some(fz) = z.file_name().to_str().and_then(|n| parse_index(n, "z", "")) else {
            continue;
        };
        if !z.file_type()?.is_dir() {
            continue;
        }
        for y in std::fs::read_dir(z.path())? {
            let y = y?;
            let Some(fy) = y.file_name().to_str().and_then(|n| parse_index(n, "y", "")) else {
                continue;
            };
            if !y.file_type()?.is_dir() {
                continue;
            }
            for x in std::fs::read_dir(y.path())? {
                let x = x?;
                let Some(fx) = x
                    .file_name()
                    .to_str()
                    .and_then(|n| parse_index(n, "x", ".wkw"))
                else {
                    continue;
                };
                if x.file_type()?.is_file() {
                    out.push(([fx, fy, fz], x.path()));
                }
            }
        }
    }
    out.sort_by_key(|(i, _)| [i[2], i[1], i[0]]);
    Ok(out)
}

/// Parsed headers/jump tables of recently read files, validated against the file's stamp.
#[derive(Debug)]
pub(crate) struct MetaCache {
    capacity: usize,
    inner: Mutex<CacheInner>,
}

#[derive(Debug, Default)]
struct CacheInner {
    tick: u64,
    map: HashMap<[u32; 3], (Stamp, Arc<FileMeta>, u64)>,
}

impl MetaCache {
    pub(crate) fn new(capacity: usize) -> Self {
        Self {
            capacity,
            inner: Mutex::new(CacheInner::default()),
        }
    }

    pub(crate) fn get(&self, index: [u32; 3], stamp: Option<Stamp>) -> Option<Arc<FileMeta>> {
        let stamp = stamp?;
        let mut g = self.inner.lock().ok()?;
        g.tick += 1;
        let tick = g.tick;
        match g.map.get_mut(&index) {
            Some((s, meta, used)) if *s == stamp => {
                *used = tick;
                Some(Arc::clone(meta))
            }
            _ => None,
        }
    }

    pub(crate) fn put(&self, index: [u32; 3], stamp: Option<Stamp>, meta: &Arc<FileMeta>) {
        let (Some(stamp), true) = (stamp, self.capacity > 0) else {
            return;
        };
        let Ok(mut g) = self.inner.lock() else {
            return;
        };
        g.tick += 1;
        let tick = g.tick;
        if g.map.len() >= self.capacity && !g.map.contains_key(&index) {
            let oldest = g
                .map
                .iter()
                .min_by_key(|(_, (_, _, u))| *u)
                .map(|(k, _)| *k);
            if let Some(k) = oldest {
                g.map.remove(&k);
            }
        }
        g.map.insert(index, (stamp, Arc::clone(meta), tick));
    }

    pub(crate) fn invalidate(&self, index: [u32; 3]) {
        if let Ok(mut g) = self.inner.lock() {
            g.map.remove(&index);
        }
    }
}
