//! An S3-compatible server for tests: the real S3 protocol over TCP on `127.0.0.1`, started
//! in-process, with fault injection and request counters.
//!
//! The server is [s3s](https://docs.rs/s3s) (S3 protocol: routing, SigV4 authentication, XML)
//! over [s3s-fs](https://docs.rs/s3s-fs) (objects as files in a temporary directory), served by
//! hyper on its own thread with its own tokio runtime, so synchronous and asynchronous tests use it
//! alike. Between hyper and s3s sits this crate's layer:
//!
//! - **Consistency fixes** over s3s-fs: atomic conditional PUT (`If-Match` / `If-None-Match: *`)
//!   per key, conditional GET/HEAD (`If-Match`, `If-None-Match`, `If-(Un)Modified-Since`), a GET's
//!   bytes and ETag always of the same version, and no object left under its key by an upload that
//!   fails its checksum. Details in the `guard` module source.
//! - **Fault injection** ([`Faults`]): per-request latency; the next N requests (optionally only a
//!   method and/or keys containing a substring, optionally after letting M through) answered
//!   500/503, reset without a response, (GET) sent with a truncated or slow body, or preceded by a
//!   replacement of the object they name.
//! - **Observation**: a log of every request ([`RequestRecord`]: method, key, query, range, start
//!   and end time, status, bytes), [`Stats`] derived from it, and [`critical_path`] (round trips on
//!   the critical path) for benchmarks.
//!
//! ```
//! use std::time::Duration;
//! use object_store::{ObjectStoreExt, PutPayload, path::Path};
//! use s3_testserver::{TestServer, critical_path};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let server = TestServer::start()?;          // dropped = stopped, files deleted
//! let store = server.store();                  // Arc<dyn ObjectStore> (object_store's AmazonS3)
//! store.put(&Path::from("a/b.bin"), PutPayload::from_static(b"hello")).await?;
//!
//! server.reset_stats();
//! server.faults().set_latency(Duration::from_millis(20)); // every request, like a remote store
//! server.faults().fail_next(2, 503);                       // retried by the client
//! let bytes = store.get(&Path::from("a/b.bin")).await?.bytes().await?;
//! assert_eq!(bytes.as_ref(), b"hello");
//! assert_eq!(server.stats().method("GET"), 3);
//! assert_eq!(critical_path(&server.log()), 3);             // three sequential round trips
//! # Ok(()) }
//! ```
//!
//! Stop the server by dropping the [`TestServer`].
//!
//! [`TestServer::start_gcs`] also speaks Cloud Storage's XML API (generations, generation
//! preconditions, bearer tokens, the metadata server's token) for the tests that write to
//! `gs://`.
//!
//! `WebDavServer` (feature `webdav`) serves a directory over plain HTTP with WebDAV listings,
//! for the tests of `http(s)://` URLs.

pub mod bench;
mod faults;
mod gcs;
mod guard;
mod http_layer;
mod record;
mod serve;
#[cfg(feature = "webdav")]
mod webdav;

use std::fmt;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use futures::TryStreamExt;
use hyper::service::service_fn;
use object_store::aws::{AmazonS3, AmazonS3Builder};
use object_store::path::Path as ObjectPath;
use object_store::{BackoffConfig, ClientOptions, ObjectStore, ObjectStoreExt, RetryConfig};
use s3s::auth::SimpleAuth;
use s3s::service::S3ServiceBuilder;

pub use faults::{FaultKind, FaultRule, Faults, Gate};
pub use record::{RequestRecord, Stats, critical_path};
#[cfg(feature = "webdav")]
pub use webdav::WebDavServer;

use http_layer::{INTERNAL_HEADER, Shared};

/// Bucket created at start.
const BUCKET: &str = "scifmt-test";
const ACCESS_KEY: &str = "scifmt-test-access-key";
const SECRET_KEY: &str = "scifmt-test-secret-key";
const REGION: &str = "us-east-1";

/// Files larger than this are uploaded by [`TestServer::upload_dir`] as multipart uploads.
const MULTIPART_THRESHOLD: u64 = 64 << 20;
/// Part size of those uploads.
const MULTIPART_PART: usize = 16 << 20;

/// How many times [`TestServer::store`] retries a failed request (object_store's default is 10).
pub const CLIENT_MAX_RETRIES: usize = 3;

/// A running S3-compatible server; dropping it stops the server and deletes its files.
pub struct TestServer {
    /// Held for its `Drop`, which stops the server; first, so that happens before the
    /// directory is deleted.
    _server: serve::ServerThread,
    addr: SocketAddr,
    shared: Arc<Shared>,
    dir: tempfile::TempDir,
}

impl fmt::Debug for TestServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TestServer")
            .field("endpoint", &self.endpoint())
            .field("bucket", &BUCKET)
            .field("dir", &self.dir.path())
            .finish_non_exhaustive()
    }
}

impl TestServer {
    /// Start a server on `127.0.0.1` (a free port) backed by a new temporary directory, with the
    /// bucket [`bucket`](Self::bucket) created.
    ///
    /// # Errors
    /// I/O errors creating the directory, binding the socket, or starting the runtime thread.
    pub fn start() -> io::Result<Self> {
        Self::start_with(false)
    }

    /// Start a server like [`start`](Self::start) that also speaks Cloud Storage's XML API
    /// (object_store's GCS client, Icechunk's GCS storage): anonymous or bearer-token requests,
    /// generation numbers (`x-goog-generation`) and generation preconditions
    /// (`x-goog-if-generation-match`). Point a client at it with [`gcs_env`](Self::gcs_env); the
    /// bucket is [`bucket`](Self::bucket), so `gs://scifmt-test/KEY` ([`gcs_url`](Self::gcs_url)).
    /// The mapping and where it departs from Cloud Storage are in the `gcs` module source.
    ///
    /// # Errors
    /// As [`start`](Self::start).
    pub fn start_gcs() -> io::Result<Self> {
        Self::start_with(true)
    }

    fn start_with(gcs: bool) -> io::Result<Self> {
        let dir = tempfile::Builder::new().prefix("s3-testserver").tempdir()?;
        std::fs::create_dir(dir.path().join(BUCKET))?;
        let fs = s3s_fs::FileSystem::new(dir.path())
            .map_err(|e| io::Error::other(format!("s3s-fs: {e:?}")))?;
        let objects = guard::Guarded::new(fs, dir.path().canonicalize()?);
        let mut builder = S3ServiceBuilder::new(objects.clone());
        builder.set_auth(SimpleAuth::from_single(ACCESS_KEY, SECRET_KEY));
        if gcs {
            // Cloud Storage requests carry no SigV4 signature (the layer drops bearer tokens).
            builder.set_access(AllowAnonymous);
        }
        let shared = Arc::new(Shared {
            s3: builder.build(),
            objects,
            faults: Faults::default(),
            recorder: record::Recorder::new(),
            bucket: BUCKET.to_owned(),
            gcs: gcs.then(gcs::Generations::new),
        });

        let listener = std::net::TcpListener::bind(("127.0.0.1", 0))?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let serve_shared = Arc::clone(&shared);
        let server = serve::ServerThread::start(
            listener,
            &format!("s3-testserver-{}", addr.port()),
            move |stream| {
                let shared = Arc::clone(&serve_shared);
                async move {
                    let service =
                        service_fn(move |req| http_layer::handle(Arc::clone(&shared), req));
                    serve::serve_http1(stream, service).await;
                }
            },
        )?;
        Ok(Self {
            _server: server,
            addr,
            shared,
            dir,
        })
    }

    /// The socket address the server listens on.
    #[must_use]
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://127.0.0.1:PORT` (no trailing slash).
    #[must_use]
    pub fn endpoint(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The bucket created at start (`scifmt-test`).
    #[must_use]
    pub fn bucket(&self) -> &str {
        BUCKET
    }

    /// The access key id the server accepts.
    #[must_use]
    pub fn access_key(&self) -> &str {
        ACCESS_KEY
    }

    /// The secret access key the server accepts.
    #[must_use]
    pub fn secret_key(&self) -> &str {
        SECRET_KEY
    }

    /// The region clients should sign for (`us-east-1`).
    #[must_use]
    pub fn region(&self) -> &str {
        REGION
    }

    /// `s3://BUCKET/KEY` (`key` without a leading slash; empty for the bucket root).
    #[must_use]
    pub fn url(&self, key: &str) -> String {
        format!("s3://{BUCKET}/{}", key.trim_start_matches('/'))
    }

    /// `gs://BUCKET/KEY` (`key` without a leading slash), for a server from
    /// [`start_gcs`](Self::start_gcs).
    #[must_use]
    pub fn gcs_url(&self, key: &str) -> String {
        format!("gs://{BUCKET}/{}", key.trim_start_matches('/'))
    }

    /// The environment variables that make object_store's GCS client (and Icechunk's) talk to a
    /// server from [`start_gcs`](Self::start_gcs) with the credentials a Compute Engine VM has:
    /// `GOOGLE_BASE_URL` (the endpoint) and `GCE_METADATA_HOST` (the same server, as the
    /// metadata server that hands out [`gcs_token`](Self::gcs_token)). Pass them to a
    /// subprocess; in-process clients take the token directly.
    #[must_use]
    pub fn gcs_env(&self) -> Vec<(String, String)> {
        vec![
            ("GOOGLE_BASE_URL".to_owned(), self.endpoint()),
            ("GCE_METADATA_HOST".to_owned(), self.addr.to_string()),
        ]
    }

    /// The bearer token a server from [`start_gcs`](Self::start_gcs) wants on writes (reads may
    /// be anonymous).
    #[must_use]
    pub fn gcs_token(&self) -> &str {
        gcs::TOKEN
    }

    /// The environment variables that make `AmazonS3Builder::from_env` (and
    /// `object_store::parse_url_opts` with these keys lower-cased) talk to this server:
    /// `AWS_ENDPOINT_URL`, `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_REGION`,
    /// `AWS_DEFAULT_REGION`, `AWS_ALLOW_HTTP=true`, `AWS_VIRTUAL_HOSTED_STYLE_REQUEST=false`,
    /// `AWS_CONDITIONAL_PUT=etag`. Pass them to a subprocess (`Command::envs`) rather than
    /// setting them in the test process (tests run in parallel); a subprocess also inherits any
    /// other `AWS_*` variable of the caller's environment (`AWS_SESSION_TOKEN`, `AWS_PROFILE`),
    /// which `Command::env_remove` can drop.
    #[must_use]
    pub fn env(&self) -> Vec<(String, String)> {
        [
            ("AWS_ENDPOINT_URL", self.endpoint()),
            ("AWS_ACCESS_KEY_ID", ACCESS_KEY.to_owned()),
            ("AWS_SECRET_ACCESS_KEY", SECRET_KEY.to_owned()),
            ("AWS_REGION", REGION.to_owned()),
            ("AWS_DEFAULT_REGION", REGION.to_owned()),
            ("AWS_ALLOW_HTTP", "true".to_owned()),
            ("AWS_VIRTUAL_HOSTED_STYLE_REQUEST", "false".to_owned()),
            ("AWS_CONDITIONAL_PUT", "etag".to_owned()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect()
    }

    /// An `AmazonS3Builder` configured for this server (endpoint, bucket, credentials, region,
    /// plain HTTP, path-style requests, conditional put by ETag, [`CLIENT_MAX_RETRIES`] retries
    /// with 10–100 ms backoff), to adjust before `build()`.
    #[must_use]
    pub fn s3_builder(&self) -> AmazonS3Builder {
        scifmt_io::install_tls_provider();
        let backoff = BackoffConfig {
            init_backoff: Duration::from_millis(10),
            max_backoff: Duration::from_millis(100),
            base: 2.0,
        };
        let retry = RetryConfig {
            backoff,
            max_retries: CLIENT_MAX_RETRIES,
            retry_timeout: Duration::from_secs(30),
        };
        AmazonS3Builder::new()
            .with_endpoint(self.endpoint())
            .with_bucket_name(BUCKET)
            .with_access_key_id(ACCESS_KEY)
            .with_secret_access_key(SECRET_KEY)
            .with_region(REGION)
            .with_allow_http(true)
            .with_virtual_hosted_style_request(false)
            .with_conditional_put(object_store::aws::S3ConditionalPut::ETagMatch)
            .with_retry(retry)
    }

    /// A client for this server built from [`s3_builder`](Self::s3_builder).
    ///
    /// # Errors
    /// object_store's builder errors (none expected for this configuration).
    pub fn s3(&self) -> object_store::Result<AmazonS3> {
        self.s3_builder().build()
    }

    /// An object store on this server's bucket (see [`s3_builder`](Self::s3_builder)).
    ///
    /// # Panics
    /// If object_store cannot build the client for this fixed configuration (a bug, not a test
    /// condition).
    #[must_use]
    #[allow(clippy::expect_used)]
    pub fn store(&self) -> Arc<dyn ObjectStore> {
        Arc::new(self.s3().expect("AmazonS3 client for the test server"))
    }

    /// Handle to program faults and latency.
    #[must_use]
    pub fn faults(&self) -> Faults {
        self.shared.faults.clone()
    }

    /// Every request since start or the last [`reset_stats`](Self::reset_stats), in arrival
    /// order (requests of [`upload_dir`](Self::upload_dir) / [`download_prefix`](Self::download_prefix)
    /// excluded).
    #[must_use]
    pub fn log(&self) -> Vec<RequestRecord> {
        self.shared.recorder.records()
    }

    /// Counters over [`log`](Self::log).
    #[must_use]
    pub fn stats(&self) -> Stats {
        self.shared.recorder.stats()
    }

    /// Clear the log (and so the stats). Faults and latency are unchanged.
    pub fn reset_stats(&self) {
        self.shared.recorder.reset();
    }

    /// The bucket's directory: the object `a/b` is the file `backing_dir()/a/b` (s3s-fs keeps
    /// metadata and ETags in hidden files in the parent directory, and in-progress uploads as
    /// `.tmp.*`/`.upload_id-*` files there too).
    #[must_use]
    pub fn backing_dir(&self) -> PathBuf {
        self.dir.path().join(BUCKET)
    }

    /// Upload every file under `local` (recursively) to `prefix/<relative path>` through the S3
    /// protocol, bypassing faults, latency and the log (files over 64 MiB as multipart uploads of
    /// 16 MiB parts), 16 files in flight at a time. Returns the number of files.
    ///
    /// Callable from synchronous and asynchronous code (it runs on a helper thread).
    ///
    /// # Errors
    /// Reading the local files, or the upload failing (as `io::Error::other`).
    pub fn upload_dir(&self, local: &Path, prefix: &str) -> io::Result<usize> {
        use futures::StreamExt as _;
        let mut files = Vec::new();
        walk(local, &mut files)?;
        let store = self.internal_store()?;
        let prefix = prefix.trim_matches('/').to_owned();
        let local = local.to_path_buf();
        let mut keyed = Vec::with_capacity(files.len());
        for file in files {
            let rel = file
                .strip_prefix(&local)
                .map_err(io::Error::other)?
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect::<Vec<_>>()
                .join("/");
            let key = if prefix.is_empty() {
                rel
            } else {
                format!("{prefix}/{rel}")
            };
            keyed.push((file, ObjectPath::from(key)));
        }
        run_blocking(async move {
            // Fixture trees are many small files: UPLOAD_CONCURRENCY puts in flight at a time.
            futures::stream::iter(keyed)
                .map(|(file, key)| upload_file(&store, file, key))
                .buffer_unordered(UPLOAD_CONCURRENCY)
                .try_fold(0, |n, ()| async move { Ok(n + 1) })
                .await
        })
    }

    /// Download every object under `prefix` to `local_dir/<key relative to prefix>` through the
    /// S3 protocol, bypassing faults, latency and the log. Returns the number of files.
    ///
    /// # Errors
    /// The listing or a download failing, or writing the files.
    pub fn download_prefix(&self, prefix: &str, local_dir: &Path) -> io::Result<usize> {
        let store = self.internal_store()?;
        let prefix = prefix.trim_matches('/').to_owned();
        let local_dir = local_dir.to_path_buf();
        run_blocking(async move {
            let list_prefix = (!prefix.is_empty()).then(|| ObjectPath::from(prefix.as_str()));
            let metas: Vec<_> = store
                .list(list_prefix.as_ref())
                .try_collect()
                .await
                .map_err(io::Error::other)?;
            let mut n = 0;
            for meta in metas {
                let key = meta.location.as_ref();
                let rel = if prefix.is_empty() {
                    key
                } else {
                    key.strip_prefix(prefix.as_str())
                        .map_or(key, |r| r.trim_start_matches('/'))
                };
                let dest = local_dir.join(rel);
                if let Some(parent) = dest.parent() {
                    tokio::fs::create_dir_all(parent).await?;
                }
                let bytes = store
                    .get(&meta.location)
                    .await
                    .map_err(io::Error::other)?
                    .bytes()
                    .await
                    .map_err(io::Error::other)?;
                tokio::fs::write(&dest, &bytes).await?;
                n += 1;
            }
            Ok(n)
        })
    }

    /// A client whose requests carry the internal header (not logged, not faulted).
    fn internal_store(&self) -> io::Result<AmazonS3> {
        let mut headers = http::HeaderMap::new();
        headers.insert(INTERNAL_HEADER, http::HeaderValue::from_static("1"));
        self.s3_builder()
            .with_client_options(
                ClientOptions::new()
                    .with_allow_http(true)
                    .with_default_headers(headers),
            )
            .build()
            .map_err(io::Error::other)
    }
}

/// The access check of a Cloud Storage server: anonymous requests too (s3s refuses them by
/// default); signed S3 requests are still verified by `SimpleAuth`.
struct AllowAnonymous;

#[async_trait::async_trait]
impl s3s::access::S3Access for AllowAnonymous {
    async fn check(&self, _cx: &mut s3s::access::S3AccessContext<'_>) -> s3s::S3Result<()> {
        Ok(())
    }
}

/// Run `fut` to completion on a fresh current-thread runtime on a helper thread (so it works
/// whether or not the caller is inside a tokio runtime).
fn run_blocking<T: Send + 'static>(
    fut: impl Future<Output = io::Result<T>> + Send + 'static,
) -> io::Result<T> {
    std::thread::spawn(move || {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?
            .block_on(fut)
    })
    .join()
    .map_err(|_| io::Error::other("s3-testserver helper thread panicked"))?
}

/// All regular files under `dir`, recursively, sorted.
/// Puts in flight at a time in [`TestServer::upload_dir`].
const UPLOAD_CONCURRENCY: usize = 16;

/// One file of [`TestServer::upload_dir`] to `key`: a single put, or a multipart upload of
/// [`MULTIPART_PART`]-byte parts read part by part for files over [`MULTIPART_THRESHOLD`].
async fn upload_file(store: &AmazonS3, file: PathBuf, key: ObjectPath) -> io::Result<()> {
    let len = tokio::fs::metadata(&file).await?.len();
    if len <= MULTIPART_THRESHOLD {
        let data = tokio::fs::read(&file).await?;
        store
            .put(&key, data.into())
            .await
            .map_err(io::Error::other)?;
    } else {
        // Large files (benchmark volumes) as multipart uploads, read part by part.
        use tokio::io::AsyncReadExt as _;
        let upload = store.put_multipart(&key).await.map_err(io::Error::other)?;
        let mut writer = object_store::WriteMultipart::new_with_chunk_size(upload, MULTIPART_PART);
        let mut f = tokio::fs::File::open(&file).await?;
        let mut buf = vec![0u8; MULTIPART_PART];
        loop {
            let read = f.read(&mut buf).await?;
            if read == 0 {
                break;
            }
            writer
                .wait_for_capacity(4)
                .await
                .map_err(io::Error::other)?;
            writer.write(&buf[..read]);
        }
        writer.finish().await.map_err(io::Error::other)?;
    }
    Ok(())
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> io::Result<()> {
    let mut entries: Vec<_> = std::fs::read_dir(dir)?.collect::<Result<_, _>>()?;
    entries.sort_by_key(std::fs::DirEntry::path);
    for e in entries {
        let ty = e.file_type()?;
        if ty.is_dir() {
            walk(&e.path(), out)?;
        } else if ty.is_file() {
            out.push(e.path());
        }
    }
    Ok(())
}
