//! [`Location`]: a local path or a key (prefix) on an object store, named in messages without
//! credentials, with the reads and writes every scifmt crate and tool makes on either.

use std::fmt;
use std::fs::{self, File};
use std::io::{BufWriter, Write};
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::Bytes;
use object_store::path::Path as ObjectPath;
use object_store::{ObjectStore, ObjectStoreExt, PutMode};

use crate::durable::{Durability, Staged, commit, write_atomically};
use crate::error::{Error, Result};
use crate::overlap::scheme_of;
use crate::read_at::ReadAt;
use crate::redact::redact;
use crate::remote::object::Object;
use crate::remote::options::RemoteOptions;
use crate::remote::runtime::block_on;
use crate::remote::store::{Access, child, join_url, store_for_url};
use crate::remote::upload::Upload;

/// The URL schemes [`Location::parse`] accepts.
pub const SCHEMES: &[&str] = &[
    "s3", "s3a", "gs", "az", "adl", "azure", "abfs", "abfss", "http", "https", "file", "memory",
];

/// A local directory or file, or a prefix or object on an object store.
///
/// * **Naming**: [`Display`](fmt::Display) shows the path, or the URL without user info, query
///   string or fragment (see [`redact`]); messages use nothing else.
/// * **Reads**: [`Location::open`] gives a [`RangeReader`]: positional reads of a local file,
///   or on a store ranged requests planned by [`RemoteOptions::plan`], fetched concurrently
///   and pinned to one version of the object (see [`Object`]).
/// * **Writes appear only complete**: locally a staged temporary file renamed into place
///   ([`Staged`]); on a store an [`Upload`] (one `PUT`, or a multipart upload that is aborted
///   if the writer fails or is dropped).
#[derive(Clone)]
pub enum Location {
    /// A local path.
    Local(PathBuf),
    /// A key (or key prefix) on an object store.
    Store(StoreLocation),
}

/// A key (or key prefix) on an object store, with its URL for messages.
#[derive(Clone)]
pub struct StoreLocation {
    store: Arc<dyn ObjectStore>,
    path: ObjectPath,
    url: String,
}

impl StoreLocation {
    /// The store.
    #[must_use]
    pub fn store(&self) -> &Arc<dyn ObjectStore> {
        &self.store
    }

    /// The key (prefix) inside the store.
    #[must_use]
    pub fn path(&self) -> &ObjectPath {
        &self.path
    }

    /// The URL without credentials, for messages.
    #[must_use]
    pub fn url(&self) -> &str {
        &self.url
    }

    /// `self/key` (`key` with `/` separators).
    #[must_use]
    pub fn join(&self, key: &str) -> Self {
        Self {
            store: Arc::clone(&self.store),
            path: child(&self.path, key),
            url: join_url(&self.url, key),
        }
    }

    /// The object at this key, read version-pinned.
    #[must_use]
    pub fn object(&self) -> Object {
        Object::new(Arc::clone(&self.store), self.path.clone(), self.url.clone())
    }
}

impl fmt::Debug for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Local(p) => f.debug_tuple("Local").field(p).finish(),
            Self::Store(s) => f.debug_tuple("Store").field(&s.url).finish(),
        }
    }
}

impl fmt::Debug for StoreLocation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StoreLocation")
            .field("url", &self.url)
            .finish_non_exhaustive()
    }
}

/// The node names of several sources put side by side in one hierarchy, each
/// [`Location::node_name`].
///
/// ```
/// use scifmt_io::{Location, node_names};
///
/// let dir = tempfile::tempdir()?;
/// let frame = dir.path().join("a.b2nd");
/// std::fs::write(&frame, b"")?;
/// let mag = Location::parse("memory:///ds/color/1/", &[])?;
/// let names = node_names(&[Location::from(frame.as_path()), mag.clone()])?;
/// assert_eq!(names, ["a.b2nd", "1"]);
/// assert!(node_names(&[mag.clone(), mag]).is_err()); // two nodes of one name
/// assert!(node_names(&[Location::from(dir.path().join("missing").as_path())]).is_err());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
/// As [`Location::node_name`]; [`Error::InvalidArgument`] for two sources of one name (each
/// becomes the node of its name).
pub fn node_names(srcs: &[Location]) -> Result<Vec<String>> {
    let mut seen = std::collections::HashSet::new();
    let mut names = Vec::with_capacity(srcs.len());
    for s in srcs {
        let name = s.node_name()?;
        if !seen.insert(name.clone()) {
            return Err(Error::InvalidArgument(format!(
                "two sources are named {name:?}: each becomes the node of its name"
            )));
        }
        names.push(name);
    }
    Ok(names)
}

impl fmt::Display for Location {
    /// The path, or the URL without credentials.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Local(p) => write!(f, "{}", p.display()),
            Self::Store(s) => f.write_str(&s.url),
        }
    }
}

impl From<&Path> for Location {
    fn from(p: &Path) -> Self {
        Self::Local(p.to_path_buf())
    }
}

impl From<&PathBuf> for Location {
    fn from(p: &PathBuf) -> Self {
        Self::Local(p.clone())
    }
}

impl From<&Location> for Location {
    fn from(l: &Location) -> Self {
        l.clone()
    }
}

impl From<PathBuf> for Location {
    fn from(p: PathBuf) -> Self {
        Self::Local(p)
    }
}

impl Location {
    /// A local path, or an object-store URL: text that starts with `SCHEME://` (a letter,
    /// then letters, digits, `+`, `-`, `.`) is a URL, and its scheme must be one of
    /// [`SCHEMES`] (`s3://bucket/prefix`, `gs://…`, `az://…`, `http(s)://…`, `file:///…`,
    /// `memory:///…`); write `./name` for a local path that looks like one. The store is
    /// built by [`store_for_url`]: configured from the `AWS_*`, `GOOGLE_*`, `AZURE_*`
    /// environment variables, then `config` (same keys, e.g. `("aws_endpoint_url", "…")`).
    ///
    /// ```
    /// use scifmt_io::Location;
    /// let l = Location::parse("memory:///data/ds?token=secret", &[])?;
    /// assert_eq!(l.to_string(), "memory:///data/ds");
    /// assert!(Location::parse("./s3:x", &[])?.as_local().is_some());
    /// assert!(Location::parse("ftp://host/x", &[]).is_err());
    /// # Ok::<(), scifmt_io::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for an unknown scheme or a malformed URL, [`Error::Remote`]
    /// for a store that cannot be configured (the messages never hold credentials).
    pub fn parse(text: &str, config: &[(String, String)]) -> Result<Self> {
        let Some(scheme) = scheme_of(text) else {
            return Ok(Self::Local(PathBuf::from(text)));
        };
        let lower = scheme.to_ascii_lowercase();
        if !SCHEMES.contains(&lower.as_str()) {
            return Err(Error::InvalidArgument(format!(
                "`{lower}://` URLs are not supported ({}; write ./{scheme}:… for a local path)",
                SCHEMES.join(", ")
            )));
        }
        let s = store_for_url(text, config)?;
        Ok(Self::Store(StoreLocation {
            store: s.store,
            path: s.path,
            url: s.url,
        }))
    }

    /// The prefix `prefix` of `store`; `url` names it in messages (give it without
    /// credentials).
    #[must_use]
    pub fn store(store: Arc<dyn ObjectStore>, prefix: ObjectPath, url: &str) -> Self {
        Self::Store(StoreLocation {
            store,
            path: prefix,
            url: redact(url).trim_end_matches('/').to_owned(),
        })
    }

    /// The local path, if this is one.
    #[must_use]
    pub fn as_local(&self) -> Option<&Path> {
        match self {
            Self::Local(p) => Some(p),
            Self::Store(_) => None,
        }
    }

    /// The object-store key, if this is one.
    #[must_use]
    pub fn as_store(&self) -> Option<&StoreLocation> {
        match self {
            Self::Local(_) => None,
            Self::Store(s) => Some(s),
        }
    }

    /// `self/key` (`key` with `/` separators).
    #[must_use]
    pub fn join(&self, key: &str) -> Self {
        match self {
            Self::Local(p) => Self::Local(p.join(key)),
            Self::Store(s) => Self::Store(s.join(key)),
        }
    }

    /// The entry `name` beside this one (in the same directory, or under the same parent
    /// prefix).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a location without a parent.
    pub fn sibling(&self, name: &str) -> Result<Self> {
        let none = || Error::InvalidArgument(format!("{self} has no parent to put {name} in"));
        match self {
            Self::Local(p) => {
                if p.file_name().is_none() {
                    return Err(none());
                }
                Ok(Self::Local(p.with_file_name(name)))
            }
            Self::Store(s) => {
                let mut parts: Vec<_> = s.path.parts().collect();
                if parts.pop().is_none() {
                    return Err(none());
                }
                parts.push(name.into());
                let url = match s.url.rsplit_once('/') {
                    Some((head, _)) => format!("{head}/{name}"),
                    None => return Err(none()),
                };
                Ok(Self::Store(StoreLocation {
                    store: Arc::clone(&s.store),
                    path: parts.into_iter().collect(),
                    url,
                }))
            }
        }
    }

    /// Copies this object to `to` on the same store (a server-side copy, replacing what is
    /// there); locally, copies the file.
    ///
    /// # Errors
    /// [`Error::Io`]; [`Error::Remote`]; [`Error::InvalidArgument`] for a copy between a path and
    /// a store or between two stores.
    pub fn copy_to(&self, to: &Self) -> Result<()> {
        match (self, to) {
            (Self::Store(a), Self::Store(b)) => block_on(a.store.copy(&a.path, &b.path))?
                .map_err(|e| Self::remote_error(b, e, Access::Write)),
            (Self::Local(a), Self::Local(b)) => {
                if let Some(dir) = b.parent() {
                    fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
                }
                fs::copy(a, b).map(drop).map_err(|e| Error::io(b, e))
            }
            _ => Err(Error::InvalidArgument(format!(
                "copy from {self} to {to}: not one store"
            ))),
        }
    }

    /// The name in messages and progress reports: the path, or the URL without credentials.
    pub fn name(&self) -> PathBuf {
        match self {
            Self::Local(p) => p.clone(),
            Self::Store(s) => PathBuf::from(&s.url),
        }
    }

    /// The last path segment (the directory or object name).
    pub fn file_name(&self) -> Option<String> {
        match self {
            Self::Local(p) => p.file_name().and_then(|n| n.to_str()).map(str::to_owned),
            Self::Store(s) => s.path.filename().map(str::to_owned),
        }
    }

    /// The name this source gives its node when several sources are put side by side in one
    /// hierarchy (`scifmt virtualize A B DST`): the last segment of its canonical path (so `.`
    /// is the current directory's name) or of its URL.
    ///
    /// # Errors
    /// [`Error::Io`] for a local path that cannot be canonicalized (it does not exist);
    /// [`Error::InvalidArgument`] when that segment is no node name (empty, `.`, `..`, not
    /// UTF-8, or starting with `__`, which Zarr v3 reserves).
    pub fn node_name(&self) -> Result<String> {
        let name = match self {
            Self::Local(p) => fs::canonicalize(p)
                .map_err(|e| Error::io(p, e))?
                .file_name()
                .and_then(|n| n.to_str())
                .map(str::to_owned),
            Self::Store(_) => self.file_name(),
        };
        name.filter(|n| !n.is_empty() && n != "." && n != ".." && !n.starts_with("__"))
            .ok_or_else(|| Error::InvalidArgument(format!("{self} has no name to give its node")))
    }

    fn remote_error(s: &StoreLocation, e: object_store::Error, access: Access) -> Error {
        Error::from_store(&s.url, e, access)
    }

    /// The whole file or object; `None` if there is none.
    ///
    /// # Errors
    /// [`Error::Io`]; [`Error::Remote`].
    pub fn read_all(&self) -> Result<Option<Vec<u8>>> {
        match self {
            Self::Local(p) => match fs::read(p) {
                Ok(b) => Ok(Some(b)),
                // `file/x` where `file` is not a directory: no such file either.
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
                    ) =>
                {
                    Ok(None)
                }
                Err(e) => Err(Error::io(p, e)),
            },
            Self::Store(s) => {
                let options = RemoteOptions::<()>::default();
                Ok(block_on(s.object().get_all(u64::MAX, &options))??.map(|b| b.to_vec()))
            }
        }
    }

    /// The length of the file or object; `None` if there is none (or, locally, it is a
    /// directory).
    ///
    /// # Errors
    /// [`Error::Io`]; [`Error::Remote`].
    pub fn size(&self) -> Result<Option<u64>> {
        match self {
            Self::Local(p) => match fs::metadata(p) {
                Ok(m) if m.is_file() => Ok(Some(m.len())),
                Ok(_) => Ok(None),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
                Err(e) => Err(Error::io(p, e)),
            },
            Self::Store(s) => match block_on(s.store.head(&s.path))? {
                Ok(m) => Ok(Some(m.size)),
                Err(object_store::Error::NotFound { .. }) => Ok(None),
                Err(e) => Err(Self::remote_error(s, e, Access::Read)),
            },
        }
    }

    /// Every file (object) below this directory (prefix), recursively: `/`-separated key
    /// relative to it, length and (on a store) ETag (quoted: [`normalize_etag`](crate::normalize_etag)), sorted by key.
    ///
    /// # Errors
    /// [`Error::Io`]; [`Error::Remote`].
    pub fn list(&self) -> Result<Vec<Listed>> {
        let mut out = Vec::new();
        match self {
            Self::Local(root) => {
                let mut stack = vec![root.clone()];
                while let Some(dir) = stack.pop() {
                    let rd = match fs::read_dir(&dir) {
                        Ok(rd) => rd,
                        Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                        Err(e) => return Err(Error::io(&dir, e)),
                    };
                    for entry in rd {
                        let entry = entry.map_err(|e| Error::io(&dir, e))?;
                        let path = entry.path();
                        let meta = entry.metadata().map_err(|e| Error::io(&path, e))?;
                        if meta.is_dir() {
                            stack.push(path);
                        } else if let Ok(rel) = path.strip_prefix(root) {
                            let key: Vec<String> = rel
                                .components()
                                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                                .collect();
                            out.push((key.join("/"), meta.len(), None));
                        }
                    }
                }
            }
            Self::Store(s) => {
                use futures::TryStreamExt;
                let prefix = (!s.path.as_ref().is_empty()).then_some(&s.path);
                let metas: Vec<object_store::ObjectMeta> =
                    if s.url.starts_with("http://") || s.url.starts_with("https://") {
                        block_on(list_by_levels(s.store.as_ref(), prefix))?
                    } else {
                        block_on(s.store.list(prefix).try_collect())?
                    }
                    .map_err(|e| Self::remote_error(s, e, Access::Read))?;
                for m in metas {
                    if let Some(rel) = m.location.prefix_match(&s.path) {
                        let key: Vec<String> = rel.map(|p| p.as_ref().to_owned()).collect();
                        let etag = m.e_tag.as_deref().map(crate::normalize_etag);
                        out.push((key.join("/"), m.size, etag));
                    }
                }
            }
        }
        out.sort();
        Ok(out)
    }

    /// Whether anything is there (a file, a non-empty directory, an object under the prefix).
    ///
    /// # Errors
    /// [`Error::Io`]; [`Error::Remote`].
    pub fn has_contents(&self) -> Result<bool> {
        match self {
            Self::Local(p) => match fs::symlink_metadata(p) {
                Ok(m) => Ok(!m.is_dir()
                    || fs::read_dir(p)
                        .map_err(|e| Error::io(p, e))?
                        .next()
                        .is_some()),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
                Err(e) => Err(Error::io(p, e)),
            },
            Self::Store(_) => Ok(self.size()?.is_some() || !self.list()?.is_empty()),
        }
    }

    /// Deletes the file or directory tree (the object and every object under the prefix).
    ///
    /// # Errors
    /// [`Error::Io`]; [`Error::Remote`].
    pub fn remove_all(&self) -> Result<()> {
        match self {
            Self::Local(p) => {
                let meta = fs::symlink_metadata(p).map_err(|e| Error::io(p, e))?;
                if meta.is_dir() {
                    fs::remove_dir_all(p).map_err(|e| Error::io(p, e))
                } else {
                    fs::remove_file(p).map_err(|e| Error::io(p, e))
                }
            }
            Self::Store(_) => {
                for (key, _, _) in self.list()? {
                    self.join(&key).remove_file()?;
                }
                if self.size()?.is_some() {
                    self.remove_file()?;
                }
                Ok(())
            }
        }
    }

    /// Deletes the file or object (none there is fine).
    ///
    /// # Errors
    /// [`Error::Io`]; [`Error::Remote`].
    pub fn remove_file(&self) -> Result<()> {
        match self {
            Self::Local(p) => match fs::remove_file(p) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(Error::io(p, e)),
                _ => Ok(()),
            },
            Self::Store(s) => match block_on(s.store.delete(&s.path))? {
                Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
                Err(e) => Err(Self::remote_error(s, e, Access::Write)),
            },
        }
    }

    /// Creates the local directory (and its parents); nothing on a store.
    ///
    /// # Errors
    /// [`Error::Io`].
    pub fn create_dir(&self) -> Result<()> {
        match self {
            Self::Local(p) => fs::create_dir_all(p).map_err(|e| Error::io(p, e)),
            Self::Store(_) => Ok(()),
        }
    }

    /// Replaces the file or object with `bytes`, atomically (a staged file renamed into
    /// place; one `PUT`).
    ///
    /// # Errors
    /// [`Error::Io`]; [`Error::Remote`].
    pub fn write_small(&self, bytes: &[u8], durability: Durability) -> Result<()> {
        match self {
            Self::Local(p) => {
                if let Some(dir) = p.parent() {
                    fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
                }
                write_atomically(p, durability, |w| {
                    w.write_all(bytes).map_err(|e| Error::io(p, e))
                })
            }
            Self::Store(s) => {
                let options = RemoteOptions::<()>::default();
                block_on(crate::remote::upload::put(
                    Arc::clone(&s.store),
                    s.path.clone(),
                    s.url.clone(),
                    Bytes::copy_from_slice(bytes),
                    PutMode::Overwrite,
                    &options,
                ))?
            }
        }
    }

    /// Opens the file or object for ranged reads; `None` if there is none. `known`, the
    /// length and ETag from a listing, saves a request. Reads of an object are pinned to the
    /// version its ETag names (see [`Object`]): a replaced object is [`Error::Changed`], never
    /// a mix of two versions.
    ///
    /// # Errors
    /// [`Error::Io`], [`Error::Remote`] for a failed `HEAD`.
    pub fn open<F>(
        &self,
        known: Option<(u64, Option<String>)>,
        remote: &RemoteOptions<F>,
    ) -> Result<Option<RangeReader>> {
        let source = match self {
            Self::Local(p) => match File::open(p) {
                Ok(f) => {
                    let len = match known {
                        Some((n, _)) => n,
                        None => f.metadata().map_err(|e| Error::io(p, e))?.len(),
                    };
                    Source::Local(f, len)
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
                Err(e) => return Err(Error::io(p, e)),
            },
            Self::Store(s) => {
                let (len, object) = match known {
                    Some((n, etag)) => (n, s.object().with_etag(etag)),
                    None => {
                        let object = s.object();
                        match block_on(object.head())?? {
                            Some(m) => (m.size, object),
                            None => return Ok(None),
                        }
                    }
                };
                let options = remote.shared();
                Source::Store(object, len, options)
            }
        };
        Ok(Some(RangeReader {
            source,
            name: self.name(),
        }))
    }

    /// Starts writing the file or object; it appears under its name only when
    /// [`Sink::finish`] completes (an [`Upload`] with [`PutMode::Overwrite`] on a store).
    ///
    /// # Errors
    /// [`Error::Io`] if the local directory or temporary file cannot be created.
    pub fn create<F>(&self, remote: &RemoteOptions<F>) -> Result<Sink> {
        match self {
            Self::Local(p) => {
                if let Some(dir) = p.parent() {
                    fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
                }
                let staged = Staged::create(p)?;
                Ok(Sink::Local(BufWriter::with_capacity(1 << 20, staged)))
            }
            Self::Store(s) => Ok(Sink::Store(Upload::new(
                Arc::clone(&s.store),
                s.path.clone(),
                s.url.clone(),
                PutMode::Overwrite,
                remote,
            ))),
        }
    }
}

/// A listed file or object: key relative to the listed prefix, length, ETag (stores only).
pub type Listed = (String, u64, Option<String>);

/// A file or object opened for ranged reads ([`Location::open`]); also a [`ReadAt`] (on a
/// store each read is one blocking request).
#[derive(Debug)]
pub struct RangeReader {
    source: Source,
    name: PathBuf,
}

#[derive(Debug)]
enum Source {
    Local(File, u64),
    Store(Object, u64, RemoteOptions),
}

impl RangeReader {
    /// Its length in bytes.
    #[must_use]
    pub fn len(&self) -> u64 {
        match &self.source {
            Source::Local(_, n) | Source::Store(_, n, _) => *n,
        }
    }

    /// Whether it is empty.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Its name in messages.
    #[must_use]
    pub fn name(&self) -> &Path {
        &self.name
    }

    /// The bytes `start..end` (within the length).
    ///
    /// # Errors
    /// As [`RangeReader::read_ranges`].
    pub fn read_range(&self, start: u64, end: u64) -> Result<Bytes> {
        Ok(self
            .read_ranges(std::slice::from_ref(&(start..end)))?
            .pop()
            .unwrap_or_default())
    }

    /// The bytes of each of `ranges` (within the length): local positional reads, or on a
    /// store the planned requests, fetched concurrently (see [`Object::get_ranges`]).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a range outside the length; [`Error::Io`];
    /// [`Error::Changed`] and [`Error::Remote`] on a store.
    pub fn read_ranges(&self, ranges: &[Range<u64>]) -> Result<Vec<Bytes>> {
        if let Some(r) = ranges
            .iter()
            .find(|r| r.end > self.len() || r.start > r.end)
        {
            return Err(Error::InvalidArgument(format!(
                "{}: bytes {r:?} are outside its {} bytes",
                self.name.display(),
                self.len()
            )));
        }
        match &self.source {
            Source::Local(file, _) => ranges
                .iter()
                .map(|r| {
                    let n = usize::try_from(r.end - r.start).map_err(|_| {
                        Error::InvalidArgument(format!("{r:?} exceeds the address space"))
                    })?;
                    let mut buf = vec![0u8; n];
                    file.read_exact_at(&mut buf, r.start)
                        .map_err(|e| Error::io(&self.name, e))?;
                    Ok(Bytes::from(buf))
                })
                .collect(),
            Source::Store(object, _, options) => {
                match block_on(object.get_ranges(ranges, options))?? {
                    Some(got) => Ok(got),
                    // Never pinned and gone: as if it changed under us.
                    None => Err(Error::Changed {
                        url: object.url().to_owned(),
                    }),
                }
            }
        }
    }
}

impl ReadAt for RangeReader {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
        let end = offset
            .checked_add(buf.len() as u64)
            .filter(|&e| e <= self.len())
            .ok_or_else(|| {
                std::io::Error::new(
                    std::io::ErrorKind::UnexpectedEof,
                    format!("{}: read past the end", self.name.display()),
                )
            })?;
        match &self.source {
            Source::Local(file, _) => file.read_exact_at(buf, offset),
            Source::Store(..) => {
                let got = self.read_range(offset, end).map_err(Error::into_io)?;
                buf.copy_from_slice(&got);
                Ok(())
            }
        }
    }

    fn size(&self) -> std::io::Result<u64> {
        Ok(self.len())
    }
}

/// A file or object being written ([`Location::create`]); it appears under its name only when
/// finished.
#[derive(Debug)]
pub enum Sink {
    /// A staged local file.
    Local(BufWriter<Staged>),
    /// An object being uploaded.
    Store(Upload),
}

impl Sink {
    /// Appends `bytes`.
    ///
    /// # Errors
    /// [`Error::Io`]; as [`Upload::write`].
    pub fn write_all(&mut self, bytes: &[u8]) -> Result<()> {
        match self {
            Self::Local(w) => w.write_all(bytes).map_err(|e| {
                let name = w.get_ref().target().to_path_buf();
                Error::io(name, e)
            }),
            Self::Store(u) => block_on(u.write(Bytes::copy_from_slice(bytes)))?,
        }
    }

    /// Completes the file (renamed into place, fsynced if asked) or the object (as
    /// [`Upload::finish`]).
    ///
    /// # Errors
    /// [`Error::Io`]; as [`Upload::finish`].
    pub fn finish(self, durability: Durability) -> Result<()> {
        match self {
            Self::Local(w) => commit(w, durability),
            Self::Store(u) => block_on(u.finish())?,
        }
    }
}

/// How many directories [`list_by_levels`] lists at a time.
const LIST_CONCURRENCY: usize = 8;

/// How deep [`list_by_levels`] goes below its prefix before it stops with an error (a server
/// answering with ever deeper directories must not keep it listing).
const LIST_MAX_LEVELS: usize = 64;

/// Every object below `prefix`, listed one directory level at a time (`list_with_delimiter`,
/// for an HTTP store a `PROPFIND` of depth 1), the directories of a level listed
/// [`LIST_CONCURRENCY`] at a time. For HTTP stores: object_store's recursive listing asks for
/// an infinite depth, which WebDAV servers commonly refuse (Apache's `mod_dav` by default:
/// `DavDepthInfinity Off`; RFC 4918 lets a server refuse it). A directory the server names
/// that is not below the one listed is ignored, so a listing cannot loop.
async fn list_by_levels(
    store: &dyn ObjectStore,
    prefix: Option<&ObjectPath>,
) -> std::result::Result<Vec<object_store::ObjectMeta>, object_store::Error> {
    use futures::{StreamExt, TryStreamExt};
    let mut objects = Vec::new();
    let mut level = vec![prefix.cloned().unwrap_or_default()];
    for _ in 0..LIST_MAX_LEVELS {
        if level.is_empty() {
            return Ok(objects);
        }
        let listed: Vec<(ObjectPath, object_store::ListResult)> = futures::stream::iter(level)
            .map(|dir| async move {
                let listed = store
                    .list_with_delimiter((!dir.as_ref().is_empty()).then_some(&dir))
                    .await?;
                Ok::<_, object_store::Error>((dir, listed))
            })
            .buffer_unordered(LIST_CONCURRENCY)
            .try_collect()
            .await?;
        level = Vec::new();
        for (dir, l) in listed {
            objects.extend(l.objects);
            level.extend(l.common_prefixes.into_iter().filter(|child| {
                child
                    .prefix_match(&dir)
                    .is_some_and(|mut rest| rest.next().is_some())
            }));
        }
    }
    Err(object_store::Error::Generic {
        store: "HTTP",
        source: format!("directories nested deeper than {LIST_MAX_LEVELS} levels").into(),
    })
}
