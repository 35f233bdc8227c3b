//! Where a conversion reads and writes: a local directory or a prefix on an object store
//! (S3, GCS, Azure, HTTP, `file://`, `memory://`, reached through `scifmt-io`'s
//! `store_for_url`, configured from the environment like every `scifmt` command).
//!
//! Reads are ranged: a file's wanted byte ranges are planned by `scifmt-io`'s coalescer
//! ([`RemoteOptions::plan`]) and fetched concurrently, each request retried
//! [`RemoteOptions::read_retries`] times if it fails or its body is cut short. Writes appear
//! only complete: locally a staged temporary file renamed into place; on a store one `PUT` for
//! objects below [`RemoteOptions::multipart_threshold`], a multipart upload (parts of
//! [`RemoteOptions::part_size`], at least the 5 MiB S3 requires, uploaded while the object is
//! produced, at most two in flight per object) above it, which the store shows under its key only once completed, and
//! which is aborted if the writer fails or is dropped.

use std::fmt;
use std::fs::{self, File};
use std::io::{BufWriter, Write};
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use scifmt_io::object_store::path::Path as ObjectPath;
use scifmt_io::object_store::{self, ObjectStore, ObjectStoreExt, WriteMultipart};
use scifmt_io::{Access, Durability, RemoteOptions, Staged};

use crate::error::{Error, Result};

/// Parts of one object's multipart upload in flight at once.
const PARTS_IN_FLIGHT: usize = 2;

/// The smallest part S3 accepts (all but the last part of an upload).
const MIN_PART: u64 = 5 << 20;

/// A local directory or file, or a prefix or object on an object store.
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
    /// A local path, or for text with `://` an object-store URL (`s3://bucket/prefix`,
    /// `gs://…`, `az://…`, `http(s)://…`, `file:///…`, `memory:///…`) opened with
    /// `scifmt_io::store_for_url`: configured from the `AWS_*`, `GOOGLE_*`, `AZURE_*`
    /// environment variables, then `config` (same keys, e.g. `("aws_endpoint_url", "…")`).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a malformed URL, [`Error::Remote`] for an unsupported
    /// scheme or bad configuration (the message never holds credentials).
    pub fn parse(text: &str, config: &[(String, String)]) -> Result<Self> {
        if !text.contains("://") {
            return Ok(Self::Local(PathBuf::from(text)));
        }
        let s = scifmt_io::store_for_url(text, config)?;
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
            url: scifmt_io::redact(url).trim_end_matches('/').to_owned(),
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

    /// `self/key` (`key` with `/` separators).
    pub(crate) fn join(&self, key: &str) -> Self {
        match self {
            Self::Local(p) => Self::Local(p.join(key)),
            Self::Store(s) => Self::Store(StoreLocation {
                store: Arc::clone(&s.store),
                path: scifmt_io::child(&s.path, key),
                url: scifmt_io::join_url(&s.url, key),
            }),
        }
    }

    /// The entry `name` beside this one (in the same directory, or under the same parent
    /// prefix).
    pub(crate) fn sibling(&self, name: &str) -> Result<Self> {
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
    pub(crate) fn copy_to(&self, to: &Self) -> Result<()> {
        match (self, to) {
            (Self::Store(a), Self::Store(b)) => {
                scifmt_io::block_on(a.store.copy(&a.path, &b.path))?
                    .map_err(|e| Self::remote_error(b, e, Access::Write))
            }
            (Self::Local(a), Self::Local(b)) => {
                if let Some(dir) = b.parent() {
                    fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
                }
                fs::copy(a, b).map(drop).map_err(|e| Error::io(b, e))
            }
            _ => Err(Error::Internal(format!(
                "copy from {self} to {to}: not one store"
            ))),
        }
    }

    /// The name in messages and progress reports: the path, or the URL without credentials.
    pub(crate) fn name(&self) -> PathBuf {
        match self {
            Self::Local(p) => p.clone(),
            Self::Store(s) => PathBuf::from(&s.url),
        }
    }

    /// The last path segment (the directory or object name).
    pub(crate) fn file_name(&self) -> Option<String> {
        match self {
            Self::Local(p) => p.file_name().and_then(|n| n.to_str()).map(str::to_owned),
            Self::Store(s) => s.path.filename().map(str::to_owned),
        }
    }

    fn remote_error(s: &StoreLocation, e: object_store::Error, access: Access) -> Error {
        Error::from(scifmt_io::Error::from_store(&s.url, e, access))
    }

    /// The whole file or object; `None` if there is none.
    pub(crate) fn read_all(&self) -> Result<Option<Vec<u8>>> {
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
                let got = scifmt_io::block_on(async {
                    match s.store.get(&s.path).await {
                        Ok(r) => r.bytes().await.map(Some),
                        Err(object_store::Error::NotFound { .. }) => Ok(None),
                        Err(e) => Err(e),
                    }
                })?;
                got.map(|b| b.map(|b| b.to_vec()))
                    .map_err(|e| Self::remote_error(s, e, Access::Read))
            }
        }
    }

    /// The length of the file or object; `None` if there is none (or, locally, it is a
    /// directory).
    pub(crate) fn size(&self) -> Result<Option<u64>> {
        match self {
            Self::Local(p) => match fs::metadata(p) {
                Ok(m) if m.is_file() => Ok(Some(m.len())),
                Ok(_) => Ok(None),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
                Err(e) => Err(Error::io(p, e)),
            },
            Self::Store(s) => match scifmt_io::block_on(s.store.head(&s.path))? {
                Ok(m) => Ok(Some(m.size)),
                Err(object_store::Error::NotFound { .. }) => Ok(None),
                Err(e) => Err(Self::remote_error(s, e, Access::Read)),
            },
        }
    }

    /// Every file (object) below this directory (prefix), recursively: `/`-separated key
    /// relative to it, length and (on a store) ETag, sorted by key.
    pub(crate) fn list(&self) -> Result<Vec<Listed>> {
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
                    scifmt_io::block_on(s.store.list(prefix).try_collect())?
                        .map_err(|e| Self::remote_error(s, e, Access::Read))?;
                for m in metas {
                    if let Some(rel) = m.location.prefix_match(&s.path) {
                        let key: Vec<String> = rel.map(|p| p.as_ref().to_owned()).collect();
                        out.push((key.join("/"), m.size, m.e_tag));
                    }
                }
            }
        }
        out.sort();
        Ok(out)
    }

    /// Whether anything is there (a file, a non-empty directory, an object under the prefix).
    pub(crate) fn has_contents(&self) -> Result<bool> {
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
    pub(crate) fn remove_all(&self) -> Result<()> {
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
    pub(crate) fn remove_file(&self) -> Result<()> {
        match self {
            Self::Local(p) => match fs::remove_file(p) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(Error::io(p, e)),
                _ => Ok(()),
            },
            Self::Store(s) => match scifmt_io::block_on(s.store.delete(&s.path))? {
                Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
                Err(e) => Err(Self::remote_error(s, e, Access::Write)),
            },
        }
    }

    /// Creates the local directory (and its parents); nothing on a store.
    pub(crate) fn create_dir(&self) -> Result<()> {
        match self {
            Self::Local(p) => fs::create_dir_all(p).map_err(|e| Error::io(p, e)),
            Self::Store(_) => Ok(()),
        }
    }

    /// Replaces the file or object with `bytes`, atomically (a staged file renamed into
    /// place; one `PUT`).
    pub(crate) fn write_small(&self, bytes: &[u8], durability: Durability) -> Result<()> {
        match self {
            Self::Local(p) => {
                if let Some(dir) = p.parent() {
                    fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
                }
                scifmt_io::write_atomically(p, durability, |w| {
                    w.write_all(bytes).map_err(|e| Error::io(p, e))
                })
            }
            Self::Store(s) => {
                let payload = object_store::PutPayload::from(bytes.to_vec());
                scifmt_io::block_on(s.store.put(&s.path, payload))?
                    .map(|_| ())
                    .map_err(|e| Self::remote_error(s, e, Access::Write))
            }
        }
    }

    /// Opens the file or object for ranged reads; `None` if there is none. `known`, the
    /// length and ETag from a listing, saves a request. Reads of an object are pinned to the
    /// version its ETag names (`If-Match`): a replaced object is [`scifmt_io::Error::Changed`],
    /// never a mix of two versions.
    pub(crate) fn open(
        &self,
        known: Option<(u64, Option<String>)>,
        remote: &RemoteOptions,
    ) -> Result<Option<Reader>> {
        let (len, etag) = match (known, self) {
            (Some(k), _) => k,
            (None, Self::Local(_)) => match self.size()? {
                Some(n) => (n, None),
                None => return Ok(None),
            },
            (None, Self::Store(s)) => match scifmt_io::block_on(s.store.head(&s.path))? {
                Ok(m) => (m.size, m.e_tag),
                Err(object_store::Error::NotFound { .. }) => return Ok(None),
                Err(e) => return Err(Self::remote_error(s, e, Access::Read)),
            },
        };
        let source = match self {
            Self::Local(p) => match File::open(p) {
                Ok(f) => Source::Local(f),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
                Err(e) => return Err(Error::io(p, e)),
            },
            Self::Store(s) => Source::Store(s.clone(), remote.clone(), Arc::new(pinned(etag))),
        };
        Ok(Some(Reader {
            source,
            len,
            name: self.name(),
        }))
    }

    /// Starts writing the file or object; it appears under its name only when
    /// [`Sink::finish`] completes.
    pub(crate) fn create(&self, remote: &RemoteOptions) -> Result<Sink> {
        match self {
            Self::Local(p) => {
                if let Some(dir) = p.parent() {
                    fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
                }
                let staged = Staged::create(p)?;
                Ok(Sink::Local(BufWriter::with_capacity(1 << 20, staged)))
            }
            Self::Store(s) => Ok(Sink::Store(Upload {
                at: s.clone(),
                threshold: usize::try_from(remote.multipart_threshold.max(1)).unwrap_or(1 << 26),
                part: usize::try_from(remote.part_size.max(MIN_PART)).unwrap_or(1 << 24),
                buf: Vec::new(),
                multipart: None,
            })),
        }
    }
}

/// A file or object opened for ranged reads.
pub(crate) struct Reader {
    source: Source,
    len: u64,
    name: PathBuf,
}

enum Source {
    Local(File),
    /// The object, the request options and the ETag reads are pinned to (from the listing
    /// or `HEAD`, else from the first response).
    Store(StoreLocation, RemoteOptions, Arc<OnceLock<String>>),
}

fn pinned(etag: Option<String>) -> OnceLock<String> {
    let lock = OnceLock::new();
    if let Some(e) = etag {
        let _ = lock.set(e);
    }
    lock
}

/// A listed file or object: key relative to the listed prefix, length, ETag (stores only).
pub(crate) type Listed = (String, u64, Option<String>);

impl Reader {
    /// Its length in bytes.
    pub(crate) fn len(&self) -> u64 {
        self.len
    }

    /// Its name in messages.
    pub(crate) fn name(&self) -> &Path {
        &self.name
    }

    /// The bytes `start..end` (within the length).
    pub(crate) fn read_range(&self, start: u64, end: u64) -> Result<Vec<u8>> {
        Ok(self
            .read_ranges(std::slice::from_ref(&(start..end)))?
            .pop()
            .unwrap_or_default())
    }

    /// The bytes of each of `ranges` (within the length): local positional reads, or on a
    /// store the coalesced requests, fetched concurrently.
    pub(crate) fn read_ranges(&self, ranges: &[Range<u64>]) -> Result<Vec<Vec<u8>>> {
        if let Some(r) = ranges.iter().find(|r| r.end > self.len || r.start > r.end) {
            return Err(Error::corrupt(
                &self.name,
                format!("bytes {r:?} are outside its {} bytes", self.len),
            ));
        }
        match &self.source {
            Source::Local(file) => ranges
                .iter()
                .map(|r| {
                    let mut buf = vec![0u8; usize::try_from(r.end - r.start).unwrap_or(0)];
                    read_exact_at(file, &mut buf, r.start).map_err(|e| Error::io(&self.name, e))?;
                    Ok(buf)
                })
                .collect(),
            Source::Store(s, remote, etag) => {
                let plan = remote.plan(&[ranges.to_vec()]).remove(0);
                let handle = scifmt_io::handle()?;
                let retries = remote.read_retries;
                let tasks: Vec<_> = plan
                    .iter()
                    .map(|q| {
                        let store = Arc::clone(&s.store);
                        let path = s.path.clone();
                        let range = q.range.clone();
                        let etag = Arc::clone(etag);
                        handle.spawn(async move {
                            let mut attempt = 0;
                            loop {
                                let options = object_store::GetOptions {
                                    range: Some(object_store::GetRange::Bounded(range.clone())),
                                    if_match: etag.get().cloned(),
                                    ..Default::default()
                                };
                                let got = match store.get_opts(&path, options).await {
                                    Ok(r) => {
                                        if let Some(e) = &r.meta.e_tag {
                                            let _ = etag.set(e.clone());
                                        }
                                        r.bytes().await
                                    }
                                    Err(e) => Err(e),
                                };
                                match got {
                                    Ok(b) if b.len() as u64 == range.end - range.start => {
                                        return Ok(b);
                                    }
                                    Ok(_) if attempt < retries => {}
                                    Ok(b) => {
                                        return Err(object_store::Error::Generic {
                                            store: "wkw-zarr",
                                            source: format!(
                                                "{} bytes for the {} of range {range:?}",
                                                b.len(),
                                                range.end - range.start
                                            )
                                            .into(),
                                        });
                                    }
                                    Err(e) if attempt < retries && transient(&e) => {}
                                    Err(e) => return Err(e),
                                }
                                attempt += 1;
                            }
                        })
                    })
                    .collect();
                let bodies = scifmt_io::block_on(async {
                    let mut out = Vec::with_capacity(tasks.len());
                    for t in tasks {
                        out.push(t.await);
                    }
                    out
                })?;
                let mut got = Vec::with_capacity(bodies.len());
                for b in bodies {
                    let b = b.map_err(|e| Error::Internal(format!("range request task: {e}")))?;
                    got.push(b.map_err(|e| Location::remote_error(s, e, Access::Read))?);
                }
                Ok(scifmt_io::assemble(ranges, &plan, &got)?
                    .into_iter()
                    .map(|b| b.to_vec())
                    .collect())
            }
        }
    }
}

/// Whether a failed read may succeed when repeated (not a missing object, a failed
/// condition or refused credentials).
fn transient(e: &object_store::Error) -> bool {
    !matches!(
        e,
        object_store::Error::NotFound { .. }
            | object_store::Error::Precondition { .. }
            | object_store::Error::NotModified { .. }
            | object_store::Error::PermissionDenied { .. }
            | object_store::Error::Unauthenticated { .. }
    )
}

/// A file or object being written; it appears under its name only when finished.
pub(crate) enum Sink {
    /// A staged local file.
    Local(BufWriter<Staged>),
    /// An object: buffered up to the multipart threshold, then a multipart upload.
    Store(Upload),
}

/// An object being uploaded.
pub(crate) struct Upload {
    at: StoreLocation,
    threshold: usize,
    part: usize,
    buf: Vec<u8>,
    multipart: Option<WriteMultipart>,
}

impl Sink {
    /// Appends `bytes`.
    pub(crate) fn write_all(&mut self, bytes: &[u8]) -> Result<()> {
        match self {
            Self::Local(w) => w.write_all(bytes).map_err(|e| {
                let name = w.get_ref().target().to_path_buf();
                Error::io(name, e)
            }),
            Self::Store(u) => u.write(bytes),
        }
    }

    /// Completes the file (renamed into place, fsynced if asked) or the object (one `PUT`,
    /// or the multipart upload completed).
    pub(crate) fn finish(self, durability: Durability) -> Result<()> {
        match self {
            Self::Local(w) => Ok(scifmt_io::commit(w, durability)?),
            Self::Store(u) => u.finish(),
        }
    }
}

impl Upload {
    fn error(&self, e: object_store::Error) -> Error {
        Location::remote_error(&self.at, e, Access::Write)
    }

    fn write(&mut self, bytes: &[u8]) -> Result<()> {
        self.buf.extend_from_slice(bytes);
        if self.multipart.is_none() && self.buf.len() < self.threshold {
            return Ok(());
        }
        if self.multipart.is_none() {
            let upload = scifmt_io::block_on(self.at.store.put_multipart(&self.at.path))?
                .map_err(|e| self.error(e))?;
            self.multipart = Some(WriteMultipart::new_with_chunk_size(upload, self.part));
        }
        if self.buf.len() < self.part {
            return Ok(());
        }
        let data = std::mem::take(&mut self.buf);
        let Some(mp) = self.multipart.as_mut() else {
            return Ok(());
        };
        // Back pressure first: at most `PARTS_IN_FLIGHT` parts of this object in memory.
        let waited = scifmt_io::block_on(async {
            let r = mp.wait_for_capacity(PARTS_IN_FLIGHT).await;
            if r.is_ok() {
                mp.write(&data);
            }
            r
        })?;
        waited.map_err(|e| self.error(e))
    }

    fn finish(mut self) -> Result<()> {
        let at = self.at.clone();
        let result = match self.multipart.take() {
            None => {
                let payload = object_store::PutPayload::from(std::mem::take(&mut self.buf));
                scifmt_io::block_on(at.store.put(&at.path, payload))?.map(|_| ())
            }
            Some(mut mp) => {
                let rest = std::mem::take(&mut self.buf);
                scifmt_io::block_on(async move {
                    mp.write(&rest);
                    // On failure `finish` aborts the upload: nothing appears under the key.
                    mp.finish().await.map(|_| ())
                })?
            }
        };
        result.map_err(|e| Location::remote_error(&at, e, Access::Write))
    }
}

impl Drop for Upload {
    fn drop(&mut self) {
        // Not finished (an error elsewhere): abort the upload so no parts linger. The key
        // never showed the object either way.
        if let Some(mp) = self.multipart.take() {
            let _ = scifmt_io::block_on(mp.abort());
        }
    }
}

/// Fills `buf` from `offset` of `file` (positional, no shared cursor).
fn read_exact_at(file: &File, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        std::os::unix::fs::FileExt::read_exact_at(file, buf, offset)
    }
    #[cfg(windows)]
    {
        let mut done = 0;
        while done < buf.len() {
            let n = std::os::windows::fs::FileExt::seek_read(
                file,
                &mut buf[done..],
                offset + done as u64,
            )?;
            if n == 0 {
                return Err(std::io::ErrorKind::UnexpectedEof.into());
            }
            done += n;
        }
        Ok(())
    }
}
