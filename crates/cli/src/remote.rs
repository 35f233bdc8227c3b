//! URLs as data arguments: `s3://bucket/key`, `gs://…`, `az://…` (and `adl`, `azure`, `abfs`,
//! `abfss`), `http(s)://…` and `file://…`.
//!
//! - **Recognition**: an argument is a URL when it starts with `SCHEME://`; a scheme the tool
//!   does not know is a usage error (write `./name` for a local path that looks like one).
//! - **Stores** are built by `scifmt_io::store_for_url`, the function the libraries' `open_url`
//!   use, from the environment variables `AWS_*` (`AWS_ENDPOINT_URL`, `AWS_ACCESS_KEY_ID`,
//!   `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`, `AWS_REGION`, `AWS_ALLOW_HTTP`, …),
//!   `GOOGLE_*` and `AZURE_*`; `HttpBuilder` for other `http(s)://` hosts, `LocalFileSystem`
//!   for `file://`.
//!   `https://` URLs of the clouds' own hosts (`*.amazonaws.com`, `*.blob.core.windows.net`, …)
//!   go to that cloud's client, as `object_store::ObjectStoreScheme` maps them.
//! - **One tokio runtime** for the process, `scifmt_io::runtime`, built on first use
//!   ([`block_on`]) and shared with the libraries' blocking wrappers; local runs never start it.
//! - **Whole-object reads** ([`read_object`], [`ObjectReader`]) stream the body and stop one
//!   byte past a limit, whatever length the server announces.
//! - **Uploads** ([`upload_file`], [`upload_dir`]): outputs are spooled to local temporary
//!   files and uploaded only when complete (multipart above [`MULTIPART_THRESHOLD`]: the
//!   object appears only when the last part is committed), so a failed command never leaves a
//!   partial object under the real key. Without `--overwrite` an upload is create-only
//!   (`WriteMode::Conditional`): it never replaces an object.
//! - **Names in messages** are the `names` module's: a URL is shown without user info, query
//!   string or fragment, and credentials are masked in every message the tool prints.

use std::fs::File;
use std::future::Future;
use std::io::Read;
use std::path::Path;
use std::sync::Arc;

use futures::StreamExt;
use futures::stream::BoxStream;
use object_store::path::Path as ObjPath;
use object_store::{
    ObjectStore, ObjectStoreExt, ObjectStoreScheme, PutMode, PutPayload, WriteMultipart,
};
use scifmt_io::WriteMode;

use crate::fail::{CliResult, Fail, describe};
use crate::names::{remember_secrets, scheme_of, shown_url};

/// Uploads of at least this many bytes use a multipart upload (16 MiB parts).
pub(crate) const MULTIPART_THRESHOLD: u64 = 64 << 20;

/// Size of one part of a multipart upload (S3 needs at least 5 MiB for all parts but the last).
const PART_SIZE: usize = 16 << 20;

/// Parts uploaded concurrently.
const PART_CONCURRENCY: usize = 4;

/// The schemes the tool accepts.
const SCHEMES: &[&str] = &[
    "s3", "s3a", "gs", "az", "adl", "azure", "abfs", "abfss", "http", "https", "file",
];

/// A data argument that is a URL.
#[derive(Clone)]
pub(crate) struct RemoteUrl {
    /// The URL as given (may carry credentials: only for building the store).
    url: url::Url,
    /// The URL without user info, query and fragment, and without a trailing `/`.
    shown: String,
}

impl std::fmt::Debug for RemoteUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("RemoteUrl").field(&self.shown).finish()
    }
}

impl RemoteUrl {
    /// The URL `path` is written as, or `None` for a local path (or `-`).
    ///
    /// # Errors
    /// A usage error for an unknown scheme or a malformed URL (the message does not repeat the
    /// URL, which may hold credentials).
    pub(crate) fn parse(path: &Path) -> CliResult<Option<Self>> {
        let Some(s) = path.to_str() else {
            return Ok(None);
        };
        let Some(scheme) = scheme_of(s) else {
            return Ok(None);
        };
        let scheme = scheme.to_ascii_lowercase();
        if !SCHEMES.contains(&scheme.as_str()) {
            return Err(Fail::usage(format!(
                "`{scheme}://` URLs are not supported (s3, gs, az, abfs, http, https, file; write ./{scheme}:… for a local path)"
            )));
        }
        let url = url::Url::parse(s)
            .map_err(|e| Fail::usage(format!("{scheme}://…: not a valid URL: {e}")))?;
        remember_secrets(&url);
        let shown = shown_url(&url);
        Ok(Some(Self { url, shown }))
    }

    /// The URL for messages (no credentials).
    pub(crate) fn shown(&self) -> &str {
        &self.shown
    }

    /// The URL for messages, as a path for [`Fail::input`].
    pub(crate) fn name(&self) -> &Path {
        Path::new(&self.shown)
    }

    /// The URL as given, for the libraries' `open_url` (they redact it in their messages).
    pub(crate) fn as_str(&self) -> &str {
        self.url.as_str()
    }

    /// The URL of `rel` below this one (`rel` uses `/`).
    pub(crate) fn join(&self, rel: &str) -> Self {
        let mut url = self.url.clone();
        let path = format!("{}/{rel}", url.path().trim_end_matches('/'));
        url.set_path(&path);
        Self {
            shown: shown_url(&url),
            url,
        }
    }

    /// The store the URL points into and the key (or prefix) inside it.
    ///
    /// # Errors
    /// The store's configuration error (naming the URL).
    pub(crate) fn store(&self) -> CliResult<(Arc<dyn ObjectStore>, ObjPath)> {
        if ObjectStoreScheme::parse(&self.url).is_err() {
            return Err(Fail::usage(format!(
                "{}: not an object-store URL",
                self.shown
            )));
        }
        let s = scifmt_io::store_for_url(self.url.as_str(), &[])
            .map_err(|e| Fail::input(self.name(), describe(&e)))?;
        Ok((s.store, s.path))
    }
}

/// The process-wide runtime of `scifmt_io::runtime` (shared with the libraries' blocking
/// wrappers: one runtime drives every connection of a store), built on first use.
fn runtime() -> CliResult<&'static tokio::runtime::Runtime> {
    scifmt_io::runtime().map_err(|e| Fail::usage(format!("cannot start the I/O runtime: {e}")))
}

/// Runs `f` to completion on the process's runtime (from synchronous code only).
pub(crate) fn block_on<F: Future>(f: F) -> CliResult<F::Output> {
    Ok(runtime()?.block_on(f))
}

/// The runtime's handle, for adapters that block on futures themselves (from any thread
/// outside the runtime).
pub(crate) fn handle() -> CliResult<tokio::runtime::Handle> {
    Ok(runtime()?.handle().clone())
}

/// Whether an object exists (a `HEAD` request).
pub(crate) fn exists(url: &RemoteUrl) -> CliResult<bool> {
    Ok(head_size(url)?.is_some())
}

/// The object's size, or `None` when there is no such object (a `HEAD` request).
pub(crate) fn head_size(url: &RemoteUrl) -> CliResult<Option<u64>> {
    let (store, key) = url.store()?;
    match block_on(store.head(&key))? {
        Ok(m) => Ok(Some(m.size)),
        Err(object_store::Error::NotFound { .. }) => Ok(None),
        // A `file://` key below a file (`x.b2frame/header.wkw`): no such object either.
        Err(e) if below_a_file(&e) => Ok(None),
        Err(e) => Err(Fail::input(url.name(), describe(&e))),
    }
}

/// Whether an error comes from a local path whose parent is a file (`ENOTDIR`).
fn below_a_file(e: &(dyn std::error::Error + 'static)) -> bool {
    let mut cur = Some(e);
    while let Some(err) = cur {
        if err
            .downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::NotADirectory)
        {
            return true;
        }
        cur = err.source();
    }
    false
}

/// The first bytes of the object (at most `n`).
pub(crate) fn read_prefix(url: &RemoteUrl, n: u64, len: u64) -> CliResult<Vec<u8>> {
    let (store, key) = url.store()?;
    let end = n.min(len);
    if end == 0 {
        return Ok(Vec::new());
    }
    block_on(store.get_range(&key, 0..end))?
        .map(|b| b.to_vec())
        .map_err(|e| Fail::input(url.name(), describe(&e)))
}

/// A blocking reader of a whole object's body, streamed from one `GET`.
pub(crate) struct ObjectReader {
    name: String,
    stream: BoxStream<'static, object_store::Result<bytes::Bytes>>,
    buf: bytes::Bytes,
    /// The object's size as the server announced it.
    pub(crate) size: u64,
}

impl std::fmt::Debug for ObjectReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ObjectReader")
            .field("name", &self.name)
            .field("size", &self.size)
            .finish_non_exhaustive()
    }
}

impl ObjectReader {
    /// Starts reading the object at `url`.
    ///
    /// # Errors
    /// The request's error (a missing object, no permission, …), naming the URL.
    pub(crate) fn open(url: &RemoteUrl) -> CliResult<Self> {
        let (store, key) = url.store()?;
        let got = block_on(store.get(&key))?.map_err(|e| Fail::input(url.name(), describe(&e)))?;
        let size = got.meta.size;
        Ok(Self {
            name: url.shown().to_owned(),
            stream: got.into_stream(),
            buf: bytes::Bytes::new(),
            size,
        })
    }
}

impl Read for ObjectReader {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        while self.buf.is_empty() {
            let next = block_on(self.stream.next()).map_err(|f| std::io::Error::other(f.msg))?;
            match next {
                None => return Ok(0),
                Some(Ok(b)) => self.buf = b,
                Some(Err(e)) => return Err(std::io::Error::other(describe(&e))),
            }
        }
        let n = out.len().min(self.buf.len());
        let head = self.buf.split_to(n);
        if let Some(dst) = out.get_mut(..n) {
            dst.copy_from_slice(&head);
        }
        Ok(n)
    }
}

/// Reads a whole object of at most `limit` bytes (stops one byte past the limit whatever
/// length the server announced).
pub(crate) fn read_object(url: &RemoteUrl, limit: u64, what: &str) -> CliResult<Vec<u8>> {
    let reader = ObjectReader::open(url)?;
    if reader.size > limit {
        return Err(too_long(url, limit, what));
    }
    let mut data = Vec::new();
    reader
        .take(limit.saturating_add(1))
        .read_to_end(&mut data)
        .map_err(|e| Fail::input(url.name(), e))?;
    if data.len() as u64 > limit {
        return Err(too_long(url, limit, what));
    }
    Ok(data)
}

fn too_long(url: &RemoteUrl, limit: u64, what: &str) -> Fail {
    Fail::input(url.name(), format!("holds more than {limit} bytes, {what}"))
}

/// Copies an object into an anonymous temporary file, at most `limit + 1` bytes; returns the
/// file (positioned at its start) and the bytes copied.
pub(crate) fn spool(url: &RemoteUrl, limit: u64) -> CliResult<(File, u64)> {
    use std::io::{Seek, SeekFrom};
    let mut reader = ObjectReader::open(url)?.take(limit.saturating_add(1));
    let mut file = tempfile::tempfile().map_err(|e| Fail::input(url.name(), e))?;
    let n = std::io::copy(&mut reader, &mut file).map_err(|e| Fail::input(url.name(), e))?;
    file.seek(SeekFrom::Start(0))
        .map_err(|e| Fail::input(url.name(), e))?;
    Ok((file, n))
}

/// Runs `f` on a sparse local file of `len` bytes that holds the object's first `prefix`
/// bytes (the rest reads as zeros), for a library that reads only the start of a file but
/// checks its length; every mention of the temporary path in a failure is replaced by the URL.
pub(crate) fn with_prefix_copy<T>(
    url: &RemoteUrl,
    len: u64,
    prefix: u64,
    f: impl FnOnce(&Path) -> CliResult<T>,
) -> CliResult<T> {
    use std::io::Write;
    let bytes = read_prefix(url, prefix, len)?;
    let dir = tempfile::tempdir().map_err(|e| Fail::input(url.name(), e))?;
    let path = dir.path().join(file_name(url));
    let mut file = File::create(&path).map_err(|e| Fail::input(url.name(), e))?;
    file.write_all(&bytes)
        .and_then(|()| file.set_len(len))
        .map_err(|e| Fail::input(url.name(), e))?;
    drop(file);
    f(&path).map_err(|e| relabel(e, &path, url.shown()))
}

/// The last segment of the URL's path (`object` if empty).
fn file_name(url: &RemoteUrl) -> String {
    url.url
        .path_segments()
        .and_then(|mut s| s.next_back())
        .filter(|s| !s.is_empty())
        .unwrap_or("object")
        .to_owned()
}

/// `fail` with every mention of the local path `tmp` replaced by `shown`.
pub(crate) fn relabel(mut fail: Fail, tmp: &Path, shown: &str) -> Fail {
    let t = tmp.display().to_string();
    if !t.is_empty() {
        fail.msg = fail.msg.replace(&t, shown);
    }
    fail
}

/// Uploads the local file `path` as the object at `url`: one `PUT` below
/// [`MULTIPART_THRESHOLD`], else a multipart upload (aborted on failure), so the object
/// appears only complete. [`WriteMode::Conditional`] never replaces an object: the `PUT` is
/// create-only (`PutMode::Create`; a store without conditional puts, and a multipart upload,
/// which cannot be conditional, get a `HEAD` check just before instead); an existing object
/// is the [`Fail::appeared`] refusal.
pub(crate) fn upload_file(path: &Path, url: &RemoteUrl, mode: WriteMode) -> CliResult {
    let (store, key) = url.store()?;
    match block_on(put_file(store.as_ref(), &key, path, mode))? {
        Ok(()) => Ok(()),
        Err(Put::Exists) => Err(Fail::appeared(url.name())),
        Err(Put::Failed(e)) => Err(Fail::input(url.name(), e)),
    }
}

/// Why an upload failed.
enum Put {
    /// A create-only upload found an object.
    Exists,
    /// Anything else (the message).
    Failed(String),
}

impl From<String> for Put {
    fn from(s: String) -> Self {
        Self::Failed(s)
    }
}

/// `Err(Put::Exists)` if the object at `key` exists.
async fn refuse_existing(store: &dyn ObjectStore, key: &ObjPath) -> Result<(), Put> {
    match store.head(key).await {
        Ok(_) => Err(Put::Exists),
        Err(object_store::Error::NotFound { .. }) => Ok(()),
        Err(e) => Err(Put::Failed(describe(&e))),
    }
}

async fn put_file(
    store: &dyn ObjectStore,
    key: &ObjPath,
    path: &Path,
    mode: WriteMode,
) -> Result<(), Put> {
    let conditional = mode == WriteMode::Conditional;
    let mut file = File::open(path).map_err(|e| e.to_string())?;
    let len = file.metadata().map_err(|e| e.to_string())?.len();
    if len < MULTIPART_THRESHOLD {
        let mut bytes = Vec::with_capacity(usize::try_from(len).unwrap_or(0));
        file.read_to_end(&mut bytes).map_err(|e| e.to_string())?;
        let payload = PutPayload::from(bytes);
        if !conditional {
            store.put(key, payload).await.map_err(|e| describe(&e))?;
            return Ok(());
        }
        return match store
            .put_opts(key, payload.clone(), PutMode::Create.into())
            .await
        {
            Ok(_) => Ok(()),
            Err(e) if scifmt_io::is_condition_failure(&e) => Err(Put::Exists),
            Err(object_store::Error::NotImplemented { .. }) => {
                // No create-only put on this store: check, then put.
                refuse_existing(store, key).await?;
                store
                    .put(key, payload)
                    .await
                    .map(|_| ())
                    .map_err(|e| Put::Failed(describe(&e)))
            }
            Err(e) => Err(Put::Failed(describe(&e))),
        };
    }
    if conditional {
        refuse_existing(store, key).await?;
    }
    let upload = store.put_multipart(key).await.map_err(|e| describe(&e))?;
    let mut w = WriteMultipart::new_with_chunk_size(upload, PART_SIZE);
    let mut buf = Vec::with_capacity(PART_SIZE);
    loop {
        buf.clear();
        let n = match (&mut file).take(PART_SIZE as u64).read_to_end(&mut buf) {
            Ok(n) => n,
            Err(e) => {
                let _ = w.abort().await;
                return Err(Put::Failed(e.to_string()));
            }
        };
        if n == 0 {
            break;
        }
        if let Err(e) = w.wait_for_capacity(PART_CONCURRENCY).await {
            // Drop the parts already uploaded; nothing appears under the key.
            let _ = w.abort().await;
            return Err(Put::Failed(describe(&e)));
        }
        w.write(&buf);
    }
    // `finish` aborts the upload itself when a part or the completion fails.
    w.finish()
        .await
        .map(|_| ())
        .map_err(|e| Put::Failed(describe(&e)))
}

/// The objects below the prefix `url` names (segment-wise: `ds` holds `ds/x`, not `ds2`), as
/// (key relative to the prefix, size), sorted by key.
pub(crate) fn list_prefix(url: &RemoteUrl) -> CliResult<Vec<(String, u64)>> {
    let (store, prefix) = url.store()?;
    let listed: Vec<object_store::Result<object_store::ObjectMeta>> =
        block_on(store.list(Some(&prefix)).collect::<Vec<_>>())?;
    let mut out = Vec::new();
    for meta in listed {
        let meta = match meta {
            Ok(m) => m,
            // A `file://` prefix that is a file, or below one: nothing is under it.
            Err(e) if below_a_file(&e) => continue,
            Err(object_store::Error::NotFound { .. }) => continue,
            Err(e) => return Err(Fail::input(url.name(), describe(&e))),
        };
        let Some(rest) = meta.location.prefix_match(&prefix) else {
            continue;
        };
        let rel: Vec<String> = rest.map(|p| p.as_ref().to_owned()).collect();
        if !rel.is_empty() {
            out.push((rel.join("/"), meta.size));
        }
    }
    out.sort();
    Ok(out)
}

/// Deletes the objects `rels` below the prefix `url` (a missing one is no error).
pub(crate) fn delete_below(url: &RemoteUrl, rels: &[String]) -> CliResult {
    let (store, prefix) = url.store()?;
    for rel in rels {
        let key = scifmt_io::child(&prefix, rel);
        match block_on(store.delete(&key))? {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => {}
            Err(e) => return Err(Fail::input(url.join(rel).name(), describe(&e))),
        }
    }
    Ok(())
}

/// Uploads every file below the local directory `dir` under the prefix `url`, in sorted order
/// except that the files named `last` go last (a sparse frame's `chunks.b2frame`, so that a
/// reader never finds the index before the chunks it names).
pub(crate) fn upload_dir(dir: &Path, url: &RemoteUrl, last: &str, mode: WriteMode) -> CliResult {
    let mut files = Vec::new();
    collect_files(dir, dir, &mut files).map_err(|e| Fail::input(url.name(), e))?;
    files.sort_by(|a, b| {
        let la = a.rsplit('/').next() == Some(last);
        let lb = b.rsplit('/').next() == Some(last);
        la.cmp(&lb).then_with(|| a.cmp(b))
    });
    for rel in files {
        let local = dir.join(&rel);
        upload_file(&local, &url.join(&rel), mode)?;
    }
    Ok(())
}

fn collect_files(root: &Path, dir: &Path, out: &mut Vec<String>) -> std::io::Result<()> {
    for e in std::fs::read_dir(dir)? {
        let e = e?;
        let p = e.path();
        if e.file_type()?.is_dir() {
            collect_files(root, &p, out)?;
        } else if let Ok(rel) = p.strip_prefix(root) {
            let parts: Vec<String> = rel
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            out.push(parts.join("/"));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::names::{display_name, is_url, scrub};

    #[test]
    fn urls_are_recognised_and_redacted() {
        assert!(is_url(Path::new("s3://b/k")));
        assert!(!is_url(Path::new("./s3://b")));
        assert!(!is_url(Path::new("-")));
        assert!(!is_url(Path::new("data/file.b2frame")));
        assert_eq!(
            display_name(Path::new("https://user:pw@host/a/b?sig=xyz#f")),
            "https://host/a/b"
        );
        assert_eq!(display_name(Path::new("s3://bucket/ds/")), "s3://bucket/ds");
        assert_eq!(display_name(Path::new("dir/x")), "dir/x");
        assert!(RemoteUrl::parse(Path::new("ftp://x/y")).is_err());
        let u = RemoteUrl::parse(Path::new("s3://bucket/ds"))
            .unwrap()
            .unwrap();
        assert_eq!(
            u.join("z0/y0/x0.wkw").shown(),
            "s3://bucket/ds/z0/y0/x0.wkw"
        );
        let u = RemoteUrl::parse(Path::new("https://u:hunter22@h/x?token=abcdefgh"))
            .unwrap()
            .unwrap();
        assert_eq!(u.shown(), "https://h/x");
        let s = scrub("failed: hunter22 abcdefgh true");
        assert!(!s.contains("hunter22") && !s.contains("abcdefgh"), "{s}");
        assert!(s.ends_with("true"), "{s}");
    }
}
