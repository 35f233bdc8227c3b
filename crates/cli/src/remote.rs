//! URLs as data arguments: `s3://bucket/key`, `gs://…`, `az://…` (and `adl`, `azure`, `abfs`,
//! `abfss`), `http(s)://…` and `file://…`.
//!
//! - **Recognition**: an argument is a URL when it starts with `SCHEME://`; a scheme the tool
//!   does not know is a usage error (write `./name` for a local path that looks like one).
//! - **Locations**: a URL argument is a `scifmt_io::StoreLocation` (`scifmt_io::Location::parse`,
//!   whose scheme rules these are); its store is built by `scifmt_io::store_for_url`, the
//!   function the libraries' `open_url` use, from the environment variables `AWS_*` (`AWS_ENDPOINT_URL`, `AWS_ACCESS_KEY_ID`,
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
//!   files and uploaded only when complete by `scifmt_io::Upload` with the default
//!   `RemoteOptions` (multipart from 64 MiB in 16 MiB parts: the object appears only when the
//!   last part is committed, and a failed upload is aborted), so a failed command never leaves
//!   a partial object under the real key. Without `--overwrite` an upload is create-only
//!   (`PutMode::Create`): it never replaces an object.
//! - **Names in messages** are the `names` module's: a URL is shown without user info, query
//!   string or fragment, and credentials are masked in every message the tool prints.

use std::fs::File;
use std::future::Future;
use std::io::Read;
use std::path::Path;
use std::sync::Arc;

use futures::StreamExt;
use futures::stream::BoxStream;
use object_store::{ObjectStoreExt, PutMode};
use scifmt_io::bytes::Bytes;
use scifmt_io::{Location, RemoteOptions, StoreLocation, Upload, WriteMode};

use crate::fail::{CliResult, Fail, describe};
use crate::names::remember_secrets;

/// The store location `path` is written as, or `None` for a local path (or `-`).
///
/// # Errors
/// A usage error for an unknown scheme or a malformed URL (the message does not repeat the
/// URL, which may hold credentials); an input error for a store that cannot be configured.
pub(crate) fn parse_url(path: &Path) -> CliResult<Option<StoreLocation>> {
    let Some(text) = path.to_str().filter(|_| scifmt_io::is_url(path)) else {
        return Ok(None);
    };
    if let Ok(url) = url::Url::parse(text) {
        remember_secrets(&url);
    }
    match Location::parse(text, &[]) {
        Ok(Location::Store(s)) => Ok(Some(s)),
        Ok(Location::Local(_)) => Ok(None),
        Err(scifmt_io::Error::InvalidArgument(m)) => Err(Fail::usage(m)),
        Err(e) => Err(Fail::input(crate::names::display_name(path), describe(&e))),
    }
}

/// The URL of a location for messages, as a path for [`Fail::input`].
pub(crate) fn name(url: &StoreLocation) -> &Path {
    Path::new(url.url())
}

/// A store error on `url` as a failure naming it: the store's own words for a failed request
/// (said once), [`Fail::appeared`] for a create-only put that found an object.
pub(crate) fn store_fail(url: &StoreLocation, e: &scifmt_io::Error) -> Fail {
    match e {
        scifmt_io::Error::Remote { source, .. } => Fail::input(name(url), describe(source)),
        scifmt_io::Error::Conflict { .. } => Fail::appeared(name(url)),
        e => Fail::input(name(url), describe(e)),
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
pub(crate) fn exists(url: &StoreLocation) -> CliResult<bool> {
    Ok(head_size(url)?.is_some())
}

/// The object's size, or `None` when there is no such object (a `HEAD` request).
pub(crate) fn head_size(url: &StoreLocation) -> CliResult<Option<u64>> {
    match block_on(url.store().head(url.path()))? {
        Ok(m) => Ok(Some(m.size)),
        Err(object_store::Error::NotFound { .. }) => Ok(None),
        // A `file://` key below a file (`x.b2frame/header.wkw`): no such object either.
        Err(e) if below_a_file(&e) => Ok(None),
        Err(e) => Err(Fail::input(name(url), describe(&e))),
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
pub(crate) fn read_prefix(url: &StoreLocation, n: u64, len: u64) -> CliResult<Vec<u8>> {
    let end = n.min(len);
    if end == 0 {
        return Ok(Vec::new());
    }
    match block_on(
        url.object()
            .get_range(0..end, &RemoteOptions::<()>::default()),
    )? {
        Ok(Some(b)) => Ok(b.to_vec()),
        Ok(None) => Err(Fail::input(name(url), "does not exist")),
        Err(e) => Err(store_fail(url, &e)),
    }
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
    pub(crate) fn open(url: &StoreLocation) -> CliResult<Self> {
        let got = block_on(url.store().get(url.path()))?
            .map_err(|e| Fail::input(name(url), describe(&e)))?;
        let size = got.meta.size;
        Ok(Self {
            name: url.url().to_owned(),
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
pub(crate) fn read_object(url: &StoreLocation, limit: u64, what: &str) -> CliResult<Vec<u8>> {
    let reader = ObjectReader::open(url)?;
    if reader.size > limit {
        return Err(too_long(url, limit, what));
    }
    let mut data = Vec::new();
    reader
        .take(limit.saturating_add(1))
        .read_to_end(&mut data)
        .map_err(|e| Fail::input(name(url), e))?;
    if data.len() as u64 > limit {
        return Err(too_long(url, limit, what));
    }
    Ok(data)
}

fn too_long(url: &StoreLocation, limit: u64, what: &str) -> Fail {
    Fail::input(name(url), format!("holds more than {limit} bytes, {what}"))
}

/// Copies an object into an anonymous temporary file, at most `limit + 1` bytes; returns the
/// file (positioned at its start) and the bytes copied.
pub(crate) fn spool(url: &StoreLocation, limit: u64) -> CliResult<(File, u64)> {
    use std::io::{Seek, SeekFrom};
    let mut reader = ObjectReader::open(url)?.take(limit.saturating_add(1));
    let mut file = tempfile::tempfile().map_err(|e| Fail::input(name(url), e))?;
    let n = std::io::copy(&mut reader, &mut file).map_err(|e| Fail::input(name(url), e))?;
    file.seek(SeekFrom::Start(0))
        .map_err(|e| Fail::input(name(url), e))?;
    Ok((file, n))
}

/// Runs `f` on a sparse local file of `len` bytes that holds the object's first `prefix`
/// bytes (the rest reads as zeros), for a library that reads only the start of a file but
/// checks its length; every mention of the temporary path in a failure is replaced by the URL.
pub(crate) fn with_prefix_copy<T>(
    url: &StoreLocation,
    len: u64,
    prefix: u64,
    f: impl FnOnce(&Path) -> CliResult<T>,
) -> CliResult<T> {
    use std::io::Write;
    let bytes = read_prefix(url, prefix, len)?;
    let dir = tempfile::tempdir().map_err(|e| Fail::input(name(url), e))?;
    let path = dir.path().join(url.path().filename().unwrap_or("object"));
    let mut file = File::create(&path).map_err(|e| Fail::input(name(url), e))?;
    file.write_all(&bytes)
        .and_then(|()| file.set_len(len))
        .map_err(|e| Fail::input(name(url), e))?;
    drop(file);
    f(&path).map_err(|e| relabel(e, &path, url.url()))
}

/// `fail` with every mention of the local path `tmp` replaced by `shown`.
pub(crate) fn relabel(mut fail: Fail, tmp: &Path, shown: &str) -> Fail {
    let t = tmp.display().to_string();
    if !t.is_empty() {
        fail.msg = fail.msg.replace(&t, shown);
    }
    fail
}

/// Uploads the local file `path` as the object at `url` through `scifmt_io::Upload` (one
/// `PUT` below the default multipart threshold, else a multipart upload that is aborted on
/// failure), so the object appears only complete. [`WriteMode::Conditional`] never replaces an
/// object: the upload is create-only (`PutMode::Create`; a store without create-only puts, and
/// a multipart upload, which cannot be conditional, get a `HEAD` check just before instead);
/// an existing object is the [`Fail::appeared`] refusal.
pub(crate) fn upload_file(path: &Path, url: &StoreLocation, mode: WriteMode) -> CliResult {
    let options = RemoteOptions::<()>::default();
    let put_mode = match mode {
        WriteMode::Conditional => PutMode::Create,
        _ => PutMode::Overwrite,
    };
    let mut file = File::open(path).map_err(|e| Fail::input(name(url), e))?;
    let part = usize::try_from(options.part_size).unwrap_or(16 << 20);
    let mut upload = Upload::new(
        Arc::clone(url.store()),
        url.path().clone(),
        url.url(),
        put_mode,
        &options,
    );
    let sent = block_on(async {
        loop {
            let mut buf = Vec::with_capacity(part);
            match (&mut file).take(part as u64).read_to_end(&mut buf) {
                Ok(0) => break,
                Ok(_) => upload.write(Bytes::from(buf)).await?,
                Err(e) => {
                    upload.abort().await;
                    return Err(scifmt_io::Error::io(path, e));
                }
            }
        }
        upload.finish().await
    })?;
    sent.map_err(|e| store_fail(url, &e))
}

/// The objects below the prefix `url` names (segment-wise: `ds` holds `ds/x`, not `ds2`), as
/// (key relative to the prefix, size), sorted by key.
pub(crate) fn list_prefix(url: &StoreLocation) -> CliResult<Vec<(String, u64)>> {
    let prefix = url.path();
    let listed: Vec<object_store::Result<object_store::ObjectMeta>> =
        block_on(url.store().list(Some(prefix)).collect::<Vec<_>>())?;
    let mut out = Vec::new();
    for meta in listed {
        let meta = match meta {
            Ok(m) => m,
            // A `file://` prefix that is a file, or below one: nothing is under it.
            Err(e) if below_a_file(&e) => continue,
            Err(object_store::Error::NotFound { .. }) => continue,
            Err(e) => return Err(Fail::input(name(url), describe(&e))),
        };
        let Some(rest) = meta.location.prefix_match(prefix) else {
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
pub(crate) fn delete_below(url: &StoreLocation, rels: &[String]) -> CliResult {
    for rel in rels {
        let at = url.join(rel);
        match block_on(at.store().delete(at.path()))? {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => {}
            Err(e) => return Err(Fail::input(name(&at), describe(&e))),
        }
    }
    Ok(())
}

/// Uploads every file below the local directory `dir` under the prefix `url`, in sorted order
/// except that the files named `last` go last (a sparse frame's `chunks.b2frame`, so that a
/// reader never finds the index before the chunks it names).
pub(crate) fn upload_dir(
    dir: &Path,
    url: &StoreLocation,
    last: &str,
    mode: WriteMode,
) -> CliResult {
    let mut files = Vec::new();
    collect_files(dir, dir, &mut files).map_err(|e| Fail::input(name(url), e))?;
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
        assert!(parse_url(Path::new("ftp://x/y")).is_err());
        let u = parse_url(Path::new("s3://bucket/ds")).unwrap().unwrap();
        assert_eq!(u.join("z0/y0/x0.wkw").url(), "s3://bucket/ds/z0/y0/x0.wkw");
        let u = parse_url(Path::new("https://u:hunter22@h/x?token=abcdefgh"))
            .unwrap()
            .unwrap();
        assert_eq!(u.url(), "https://h/x");
        let s = scrub("failed: hunter22 abcdefgh true");
        assert!(!s.contains("hunter22") && !s.contains("abcdefgh"), "{s}");
        assert!(s.ends_with("true"), "{s}");
    }
}
