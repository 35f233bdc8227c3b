//! WKW datasets on object stores (feature `object_store`): [`RemoteDataset`] (async) and
//! [`BlockingRemoteDataset`]; the request plan and guarantees are documented on
//! [`RemoteDataset`].

mod blocking;
mod plan;

use std::collections::HashMap;
use std::path::{Path as FsPath, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use bytes::Bytes;
use futures::{StreamExt, TryStreamExt};
use object_store::path::{Path, PathPart};
use object_store::{
    GetOptions, GetRange, ObjectStore, ObjectStoreExt, PutMode, PutOptions, PutPayload,
    UpdateVersion, WriteMultipart,
};

pub use blocking::BlockingRemoteDataset;

use crate::dataset::array::{Array, ArrayView, ArrayViewMut, Order};
use crate::dataset::cache::MetaCache;
use crate::dataset::compress::{FileReport, Progress, VerifyReport, convert_file, verify_file};
use crate::dataset::root::{
    Dataset, HEADER_FILE_NAME, Resolved, check_block_limit, parse_dataset_header,
};
use crate::error::{Error, Result};
use crate::format::file::{FileMeta, OpenFailure};
use crate::format::geometry::{VBox, blocks_in, files_in};
use crate::format::header::{BlockType, Header};
use crate::format::tree::{file_key, parse_index};
use crate::kernels::par::Workers;
use crate::options::{Durability, MissingOrCorrupt, Options};
use plan::{Fetched, beyond, schedule};
use scifmt_io::{WriteMode, child, conflict_backoff, is_condition_failure, join_url, store_url};

/// Options of a [`RemoteDataset`]: the request knobs every scifmt format shares
/// ([`scifmt_io::RemoteOptions`], set with its `with_*` methods) plus wkw's own in
/// [`RemoteOptions::format`](scifmt_io::RemoteOptions::format) ([`RemoteDatasetOptions`]).
///
/// wkw's defaults: [`concurrency`](scifmt_io::RemoteOptions::concurrency) 64 requests per read
/// (a 256³ box over parts of 27 files of 128³ voxels needs about 110 block requests: 2 round
/// trips at 64); [`coalesce_gap`](scifmt_io::RemoteOptions::coalesce_gap) 8 KiB;
/// [`max_request_bytes`](scifmt_io::RemoteOptions::max_request_bytes) 8 MiB;
/// [`read_retries`](scifmt_io::RemoteOptions::read_retries) 3 (short block responses);
/// [`conflict_retries`](scifmt_io::RemoteOptions::conflict_retries) 10 (lost read-modify-writes of
/// a data file); [`write_mode`](scifmt_io::RemoteOptions::write_mode)
/// [`WriteMode::Conditional`](scifmt_io::WriteMode::Conditional) (`Overwrite` makes concurrent
/// writers of one file **lose updates**: only for stores without conditional puts);
/// multipart uploads (unconditional ones only: `compress` output, and writes with `Overwrite`)
/// above 64 MiB in parts of 8 MiB.
///
/// ```
/// use wkw::{Options, RemoteOptions};
/// let o = RemoteOptions::default()
///     .with_concurrency(16)
///     .with_conflict_retries(3)
///     .map_format(|f| f.with_dataset(Options::default()).with_file_concurrency(4));
/// assert_eq!(o.format.file_concurrency, 4);
/// ```
pub type RemoteOptions = scifmt_io::RemoteOptions<RemoteDatasetOptions>;

/// wkw's own part of [`RemoteOptions`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct RemoteDatasetOptions {
    /// The dataset options ([`Options::durability`] does not apply to object stores).
    pub dataset: Options,
    /// Most data files a write, `compress` or `verify` works on at once (default 8): each holds
    /// a whole file in memory and on the local scratch space.
    pub file_concurrency: usize,
}

impl Default for RemoteDatasetOptions {
    fn default() -> Self {
        Self {
            dataset: Options::default(),
            file_concurrency: 8,
        }
    }
}

impl RemoteDatasetOptions {
    /// Sets [`RemoteDatasetOptions::dataset`].
    #[must_use]
    pub fn with_dataset(mut self, options: Options) -> Self {
        self.dataset = options;
        self
    }
    /// Sets [`RemoteDatasetOptions::file_concurrency`] (at least 1).
    #[must_use]
    pub fn with_file_concurrency(mut self, files: usize) -> Self {
        self.file_concurrency = files.max(1);
        self
    }
}

impl scifmt_io::FormatOptions for RemoteDatasetOptions {
    fn tune_defaults(o: &mut RemoteOptions) {
        o.concurrency = 64;
        o.coalesce_gap = 8 << 10;
        o.max_request_bytes = 8 << 20;
        o.read_retries = 3;
        o.conflict_retries = 10;
        o.write_mode = WriteMode::Conditional;
        o.multipart_threshold = 64 << 20;
        o.part_size = 8 << 20;
    }
}

/// A WKW dataset on an object store (async API; see [`BlockingRemoteDataset`] for callers
/// without a runtime). Cloning is cheap and shares the metadata cache.
///
///
/// # Reads
/// `header.wkw` is fetched once when the dataset is opened. A read of a box then needs, for
/// every data file the box touches:
///
/// 1. the file's header and jump table: one range request for the first
///    `16 + 8 · blocks_per_file` bytes (the jump table's size follows from `header.wkw`, so it
///    is fetched speculatively with the header); raw files need only the 16 header bytes. A
///    file the box covers whole (and whose largest possible size fits one request,
///    [`RemoteOptions::max_request_bytes`]) is fetched whole by this one request, so it needs no
///    step 2. The parsed result is cached per file index together with the object's ETag
///    ([`Options::cache_capacity`] entries);
/// 2. the byte ranges of the blocks the box touches, merged when they are at most
///    [`RemoteOptions::coalesce_gap`] apart, split at [`RemoteOptions::max_request_bytes`], all
///    fetched concurrently ([`RemoteOptions::concurrency`] requests in flight), each with
///    `If-Match` on the ETag the header came from.
///
/// The files' step 1 requests run concurrently, then all step 2 requests: a read costs two
/// round trips on its critical path after open (one when the file metadata is cached, or when
/// the box covers the files whole). Blocks
/// are decoded and assembled by the same code as local reads (in parallel on rayon, inside
/// `spawn_blocking` when called on a tokio runtime).
///
/// # Consistency
/// A file replaced while it is read fails the `If-Match` of its block requests (HTTP 412): its
/// header is fetched again and its blocks once more; a second change within the same read is
/// [`Error::Changed`]. A read therefore returns, per file, the old or the new content, never a
/// mix. A cached header is checked the same way, so a replaced file is never decoded with a
/// stale jump table. Stores that report no ETag get no such check and no caching.
///
/// # Writes
/// A write of a box rebuilds each touched file whole (exactly like a local write: the existing
/// object is downloaded, merged and, for compressed files, recompressed on local scratch
/// space) and uploads it with a conditional put: `PutMode::Update` on the ETag/version read, or
/// `PutMode::Create` when there was no object. A lost race (HTTP 412 / 409 / "already
/// exists") redoes the read-modify-write of that file up to [`conflict_retries`](scifmt_io::RemoteOptions::conflict_retries) times
/// (after a randomized wait doubling from about 1 ms up to about 64 ms),
/// then fails with [`Error::Conflict`]; so two writers never silently lose an update.
///
/// # Errors
/// Name the object's URL: for [`RemoteDataset::open_url`] the given URL without user info,
/// query or fragment; for [`RemoteDataset::open`] the store's display name and the key.
#[derive(Debug, Clone)]
pub struct RemoteDataset {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    store: Arc<dyn ObjectStore>,
    prefix: Path,
    /// The dataset's URL for messages (no credentials).
    url: String,
    options: RemoteOptions,
    /// Decoder: the header and options; opens no files itself.
    local: Dataset,
    /// Parsed file metadata by file index, stamped with the object's ETag.
    cache: MetaCache<String>,
}

/// The metadata of one data file as fetched (or cached).
enum Head {
    /// No object; or unreadable under [`MissingOrCorrupt::Zeros`].
    Zeros,
    Present {
        meta: Arc<FileMeta>,
        /// ETag the metadata belongs to (`None`: the store reports none).
        etag: Option<String>,
        /// Bytes fetched with the metadata (the start of the object).
        fetched: Fetched,
    },
}

/// Why fetching a file's blocks stopped.
enum BlockFailure {
    /// The object changed (or vanished) since its metadata was fetched.
    Changed,
    Err(Error),
}

impl RemoteDataset {
    /// Opens the dataset whose `header.wkw` is at `prefix/header.wkw` in `store`.
    ///
    /// # Errors
    /// [`Error::NotADataset`] without `header.wkw`; [`Error::Format`] if it is invalid;
    /// [`Error::LimitExceeded`] for blocks above the limits; [`Error::Remote`] if the request
    /// fails.
    pub async fn open(
        store: Arc<dyn ObjectStore>,
        prefix: Path,
        options: RemoteOptions,
    ) -> Result<Self> {
        let url = store_url(store.as_ref(), &prefix);
        Self::open_at(store, prefix, url, options).await
    }

    /// Opens the dataset at `url` (`s3://bucket/path`, `gs://…`, `az://…`, `http(s)://…`,
    /// `file:///…`, `memory:///…`), configured from the environment like
    /// `AmazonS3Builder::from_env` (`AWS_ENDPOINT_URL`, `AWS_ACCESS_KEY_ID`,
    /// `AWS_SECRET_ACCESS_KEY`, `AWS_REGION`, `AWS_ALLOW_HTTP`, …; `GOOGLE_*` and `AZURE_*`
    /// for the other clouds). The cloud schemes need this crate's `aws`, `gcp`, `azure` or
    /// `http` feature.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a malformed URL; [`Error::Remote`] for an unsupported
    /// scheme or bad configuration; otherwise as [`RemoteDataset::open`].
    pub async fn open_url(url: &str, options: RemoteOptions) -> Result<Self> {
        let (store, prefix, url) = store_for_url(url, &[])?;
        Self::open_at(store, prefix, url, options).await
    }

    /// [`RemoteDataset::open_url`] with store configuration `config` (keys as
    /// `object_store::parse_url_opts` takes them, e.g. `("aws_endpoint_url", "http://…")`;
    /// upper-case environment-variable names work too) applied after the environment's.
    ///
    /// # Errors
    /// As [`RemoteDataset::open_url`].
    pub async fn open_url_with_config(
        url: &str,
        config: &[(String, String)],
        options: RemoteOptions,
    ) -> Result<Self> {
        let (store, prefix, url) = store_for_url(url, config)?;
        Self::open_at(store, prefix, url, options).await
    }

    /// Creates a dataset: uploads `header.wkw` (dataOffset 0) below `prefix`, failing if one
    /// exists (a conditional create where the store supports it).
    ///
    /// # Errors
    /// [`Error::AlreadyExists`] if `header.wkw` exists; [`Error::LimitExceeded`] for blocks above
    /// the limits; [`Error::Remote`] if the request fails.
    pub async fn create(
        store: Arc<dyn ObjectStore>,
        prefix: Path,
        header: Header,
        options: RemoteOptions,
    ) -> Result<Self> {
        let url = store_url(store.as_ref(), &prefix);
        Self::create_at(store, prefix, url, header, options).await
    }

    /// [`RemoteDataset::create`] at a URL (see [`RemoteDataset::open_url`]).
    ///
    /// # Errors
    /// As [`RemoteDataset::create`] and [`RemoteDataset::open_url`].
    pub async fn create_url(url: &str, header: Header, options: RemoteOptions) -> Result<Self> {
        let (store, prefix, url) = store_for_url(url, &[])?;
        Self::create_at(store, prefix, url, header, options).await
    }

    /// [`RemoteDataset::create_url`] with store configuration `config` (as
    /// [`RemoteDataset::open_url_with_config`] takes it).
    ///
    /// # Errors
    /// As [`RemoteDataset::create_url`].
    pub async fn create_url_with_config(
        url: &str,
        config: &[(String, String)],
        header: Header,
        options: RemoteOptions,
    ) -> Result<Self> {
        let (store, prefix, url) = store_for_url(url, config)?;
        Self::create_at(store, prefix, url, header, options).await
    }

    async fn open_at(
        store: Arc<dyn ObjectStore>,
        prefix: Path,
        url: String,
        options: RemoteOptions,
    ) -> Result<Self> {
        let location = child(&prefix, HEADER_FILE_NAME);
        let header_url = join_url(&url, HEADER_FILE_NAME);
        let bytes = match store.get(&location).await {
            Ok(r) => r.bytes().await,
            Err(e) => Err(e),
        };
        let bytes = match bytes {
            Ok(b) => b,
            Err(object_store::Error::NotFound { .. }) => {
                return Err(Error::NotADataset {
                    path: PathBuf::from(url),
                });
            }
            Err(source) => {
                return Err(Error::Remote {
                    url: header_url,
                    source,
                });
            }
        };
        let header =
            parse_dataset_header(&bytes, FsPath::new(&header_url), &options.format.dataset)?;
        Ok(Self::from_parts(store, prefix, url, header, options))
    }

    async fn create_at(
        store: Arc<dyn ObjectStore>,
        prefix: Path,
        url: String,
        header: Header,
        options: RemoteOptions,
    ) -> Result<Self> {
        check_block_limit(&header, &options.format.dataset)?;
        let header = header.with_data_offset(0);
        let location = child(&prefix, HEADER_FILE_NAME);
        let header_url = join_url(&url, HEADER_FILE_NAME);
        let payload = PutPayload::from(Bytes::copy_from_slice(&header.to_bytes()));
        let put = store
            .put_opts(&location, payload.clone(), PutMode::Create.into())
            .await;
        match put {
            Ok(_) => {}
            Err(object_store::Error::AlreadyExists { .. }) => {
                return Err(Error::AlreadyExists {
                    path: PathBuf::from(header_url),
                });
            }
            Err(object_store::Error::NotImplemented { .. }) => {
                // No conditional create: check, then put (a race can still replace it).
                match store.head(&location).await {
                    Ok(_) => {
                        return Err(Error::AlreadyExists {
                            path: PathBuf::from(header_url),
                        });
                    }
                    Err(object_store::Error::NotFound { .. }) => {}
                    Err(source) => {
                        return Err(Error::Remote {
                            url: header_url,
                            source,
                        });
                    }
                }
                store
                    .put(&location, payload)
                    .await
                    .map_err(|source| Error::Remote {
                        url: header_url,
                        source,
                    })?;
            }
            Err(source) => {
                return Err(Error::Remote {
                    url: header_url,
                    source,
                });
            }
        }
        Ok(Self::from_parts(store, prefix, url, header, options))
    }

    fn from_parts(
        store: Arc<dyn ObjectStore>,
        prefix: Path,
        url: String,
        header: Header,
        options: RemoteOptions,
    ) -> Self {
        let local = Dataset::detached(PathBuf::from(&url), header, options.format.dataset.clone());
        Self {
            inner: Arc::new(Inner {
                cache: MetaCache::new(options.format.dataset.cache_capacity),
                store,
                prefix,
                url,
                options,
                local,
            }),
        }
    }

    /// The dataset header (`header.wkw`, dataOffset 0).
    #[must_use]
    pub fn header(&self) -> &Header {
        &self.inner.local.header
    }

    /// The options in effect.
    #[must_use]
    pub fn options(&self) -> &RemoteOptions {
        &self.inner.options
    }

    /// The dataset's URL as used in messages (no credentials).
    #[must_use]
    pub fn url(&self) -> &str {
        &self.inner.url
    }

    /// The store.
    #[must_use]
    pub fn store(&self) -> &Arc<dyn ObjectStore> {
        &self.inner.store
    }

    /// The dataset's prefix in the store.
    #[must_use]
    pub fn prefix(&self) -> &Path {
        &self.inner.prefix
    }

    /// The object key of data file `(fx, fy, fz)`: `prefix/z{fz}/y{fy}/x{fx}.wkw`.
    #[must_use]
    pub fn file_location(&self, index: [u32; 3]) -> Path {
        child(&self.inner.prefix, &file_key(index))
    }

    /// The URL of data file `(fx, fy, fz)` as used in messages.
    #[must_use]
    pub fn file_url(&self, index: [u32; 3]) -> String {
        join_url(&self.inner.url, &file_key(index))
    }

    /// Every data file `z*/y*/x*.wkw` below the prefix as (file index (x, y, z), URL), sorted
    /// by z, y, x; other objects are skipped.
    ///
    /// # Errors
    /// [`Error::Remote`] if listing fails.
    pub async fn list_files(&self) -> Result<Vec<([u32; 3], String)>> {
        let inner = &self.inner;
        let mut listing = inner.store.list(Some(&inner.prefix));
        let depth = inner.prefix.parts().count();
        let mut out = Vec::new();
        while let Some(meta) = listing.next().await {
            let meta = meta.map_err(|source| Error::Remote {
                url: inner.url.clone(),
                source,
            })?;
            let parts: Vec<PathPart<'_>> = meta.location.parts().skip(depth).collect();
            let [z, y, x] = parts.as_slice() else {
                continue;
            };
            let (Some(z), Some(y), Some(x)) = (
                parse_index(z.as_ref(), "z", ""),
                parse_index(y.as_ref(), "y", ""),
                parse_index(x.as_ref(), "x", ".wkw"),
            ) else {
                continue;
            };
            out.push(([x, y, z], self.file_url([x, y, z])));
        }
        out.sort_by_key(|([x, y, z], _)| [*z, *y, *x]);
        Ok(out)
    }

    /// Reads the box at `offset` (x, y, z) of `shape` voxels into a new array in `order`, the
    /// same result as [`Dataset::read`] on the same data: shape (C, X, Y, Z), missing objects
    /// read as 0 (corrupt ones per [`Options::missing_or_corrupt`]).
    ///
    /// # Errors
    /// [`Error::BoxOutOfRange`], [`Error::LimitExceeded`] above
    /// [`crate::Limits::max_read_bytes`], [`Error::Format`] for corrupt files,
    /// [`Error::Remote`] for failed requests (also a file replaced twice during the read).
    pub async fn read(&self, offset: [u32; 3], shape: [u32; 3], order: Order) -> Result<Array> {
        self.inner.local.new_array_layout(shape, order)?;
        let bx = VBox::new(offset, shape)?;
        let files = if bx.is_empty() {
            HashMap::new()
        } else {
            self.fetch_box(&bx).await?
        };
        let inner = Arc::clone(&self.inner);
        decode(move || {
            inner
                .local
                .read_resolved(offset, shape, order, |_| Ok(files))
        })
        .await
    }

    /// Reads the box at `offset` with the shape of `dst` into `dst` (either order), like
    /// [`Dataset::read_into`]. The decoding runs on the calling task.
    ///
    /// # Errors
    /// [`Error::ArrayMismatch`] for another voxel type or channel count; otherwise as
    /// [`RemoteDataset::read`].
    pub async fn read_into(&self, offset: [u32; 3], dst: &mut ArrayViewMut<'_>) -> Result<()> {
        self.inner.local.check_layout(&dst.layout)?;
        let bx = VBox::new(offset, dst.layout.shape)?;
        if bx.is_empty() {
            return Ok(());
        }
        let files = self.fetch_box(&bx).await?;
        self.inner
            .local
            .read_into_resolved(offset, dst, |_| Ok(files))
    }

    /// Fetches what a read of `bx` needs: every touched file's metadata, then its blocks.
    async fn fetch_box(&self, bx: &VBox) -> Result<HashMap<[u32; 3], Resolved>> {
        let fs = self.header().file_len_vx_log2();
        let (lo, hi) = bx.cube_range(fs);
        let conc = self.inner.options.in_flight();
        let heads: Vec<([u32; 3], Head)> = futures::stream::iter(files_in(lo, hi))
            .map(|idx| async move {
                let fbox = VBox::cube(idx, fs);
                let whole = bx.covers(&fbox);
                self.head(idx, true, whole).await.map(|h| (idx, h))
            })
            .buffer_unordered(conc)
            .try_collect()
            .await?;
        // Every file's block ranges, all requests in one concurrent batch.
        let mut present = HashMap::new();
        let mut planned = Vec::new();
        for (idx, head) in heads {
            if let Head::Present {
                meta,
                etag,
                fetched,
            } = head
            {
                planned.push((
                    idx,
                    etag.clone(),
                    self.plan(idx, bx, &meta, fetched.prefix_len())?,
                ));
                present.insert(idx, (meta, etag, fetched));
            }
        }
        let o = &self.inner.options;
        let (keys, ranges): (Vec<_>, Vec<_>) =
            planned.into_iter().map(|(i, e, r)| ((i, e), r)).unzip();
        let ranges = schedule(o, ranges);
        let mut requests = Vec::new();
        for ((idx, etag), rs) in keys.into_iter().zip(ranges) {
            for r in rs {
                requests.push((idx, r, etag.clone()));
            }
        }
        let results: Vec<_> = futures::stream::iter(requests)
            .map(|(idx, r, etag)| async move { (idx, self.fetch_range(idx, r, etag).await) })
            .buffer_unordered(conc)
            .collect()
            .await;
        let mut changed = Vec::new();
        for (idx, res) in results {
            match res {
                Ok((start, bytes)) => {
                    if let Some((_, _, f)) = present.get_mut(&idx) {
                        f.add(start, bytes);
                    }
                }
                Err(BlockFailure::Changed) => changed.push(idx),
                Err(BlockFailure::Err(e)) => return Err(e),
            }
        }
        changed.sort_unstable();
        changed.dedup();
        let mut files = HashMap::new();
        for (idx, (meta, _, fetched)) in present {
            if changed.contains(&idx) {
                continue;
            }
            files.insert(idx, self.resolved(idx, meta, fetched));
        }
        // Replaced during this read: metadata and blocks once more, from the new version.
        for idx in changed {
            self.inner.cache.invalidate(idx);
            let r = match self.head(idx, false, false).await? {
                Head::Zeros => Resolved::Zeros,
                Head::Present {
                    meta,
                    etag,
                    mut fetched,
                } => {
                    let o = &self.inner.options;
                    let plan = self.plan(idx, bx, &meta, fetched.prefix_len())?;
                    let plan = schedule(o, vec![plan]).into_iter().flatten();
                    let got: Vec<_> = futures::stream::iter(plan)
                        .map(|r| self.fetch_range(idx, r, etag.clone()))
                        .buffer_unordered(conc)
                        .collect()
                        .await;
                    for g in got {
                        match g {
                            Ok((start, bytes)) => fetched.add(start, bytes),
                            Err(BlockFailure::Changed) => {
                                self.inner.cache.invalidate(idx);
                                return Err(Error::Changed {
                                    url: self.file_url(idx),
                                });
                            }
                            Err(BlockFailure::Err(e)) => return Err(e),
                        }
                    }
                    self.resolved(idx, meta, fetched)
                }
            };
            files.insert(idx, r);
        }
        Ok(files)
    }

    fn resolved(&self, idx: [u32; 3], meta: Arc<FileMeta>, fetched: Fetched) -> Resolved {
        Resolved::Present {
            file: Box::new(fetched),
            meta,
            path: PathBuf::from(self.file_url(idx)),
        }
    }

    /// The byte ranges of the blocks of file `idx` that `bx` touches, minus the first `have`
    /// bytes (already fetched); [`schedule`] turns them into requests.
    fn plan(
        &self,
        idx: [u32; 3],
        bx: &VBox,
        meta: &FileMeta,
        have: u64,
    ) -> Result<Vec<(u64, u64)>> {
        let h = self.header();
        let fbox = VBox::cube(idx, h.file_len_vx_log2());
        let region = bx.intersect(&fbox);
        let mut ranges = Vec::new();
        for (k, _) in blocks_in(&region, fbox.min, u32::from(h.block_len_log2()))? {
            if let Some((s, e)) = meta.block_range(k) {
                // Past the end: the decoder reports the block as truncated.
                if let Some(r) = beyond(s, e.min(meta.len), have) {
                    ranges.push(r);
                }
            }
        }
        Ok(ranges)
    }

    /// The metadata of file `idx`: cached (if `cached` and present), else fetched; with `whole`
    /// (the read needs every block of the file) the request asks for the whole file, so that
    /// its blocks come with its header and jump table in one round trip.
    async fn head(&self, idx: [u32; 3], cached: bool, whole: bool) -> Result<Head> {
        let inner = &self.inner;
        if cached && let Some((etag, meta)) = inner.cache.latest(idx) {
            let fetched = Fetched::new(meta.len, Vec::new());
            return Ok(Head::Present {
                meta,
                etag: Some(etag),
                fetched,
            });
        }
        let location = self.file_location(idx);
        let url = self.file_url(idx);
        let remote = |source| Error::Remote {
            url: url.clone(),
            source,
        };
        let h = self.header();
        // A table beyond the limit is refused by the parser; fetch no more than that.
        let n = h
            .blocks_per_file()
            .min(inner.options.format.dataset.limits.max_blocks_per_file);
        let mut want = 16u64;
        if h.block_type().is_compressed() {
            want = want.saturating_add(n.saturating_mul(8));
        }
        if whole {
            // Every block at its largest: raw, or LZ4's bound for incompressible input (the
            // store answers with the object's real length when it is shorter). Blocks beyond
            // this bound in a malformed file are fetched by the second step as usual. Files
            // larger than one request are fetched in two steps, their blocks in concurrent
            // pieces.
            let b = h.block_bytes();
            let block_max = b.saturating_add(b / 255).saturating_add(16);
            let all = 16u64.saturating_add(n.saturating_mul(8 + block_max));
            if all <= inner.options.max_request_bytes {
                want = all;
            }
        }
        let opts = GetOptions {
            range: Some(GetRange::Bounded(0..want)),
            ..GetOptions::default()
        };
        let res = match inner.store.get_opts(&location, opts).await {
            Ok(r) => r,
            Err(object_store::Error::NotFound { .. }) => return Ok(Head::Zeros),
            Err(e) => {
                // An empty object cannot answer a range request (HTTP 416): it is a file
                // truncated before its header, subject to the missing/corrupt policy.
                if let Ok(m) = inner.store.head(&location).await
                    && m.size == 0
                {
                    return self.parse_head(idx, Fetched::new(0, Vec::new()), m.e_tag);
                }
                return Err(remote(e));
            }
        };
        let size = res.meta.size;
        let etag = res.meta.e_tag.clone();
        let start = res.range.start;
        let bytes = match res.bytes().await {
            Ok(b) => b,
            Err(object_store::Error::NotFound { .. }) => return Ok(Head::Zeros),
            Err(e) => return Err(remote(e)),
        };
        let mut fetched = Fetched::new(size, vec![(start, bytes)]);
        // A file whose own header (HeaderCheck::Lenient) has a longer jump table than the
        // dataset's: fetch the rest.
        let have = fetched.prefix_len();
        let mut first = [0u8; 16];
        if fetched.read_exact_at_prefix(&mut first)
            && let Ok(fh) = Header::parse(&first)
            && fh.block_type().is_compressed()
        {
            let need = fh
                .blocks_per_file()
                .min(inner.options.format.dataset.limits.max_blocks_per_file)
                .saturating_mul(8)
                .saturating_add(16)
                .min(size);
            if need > have {
                match self.fetch_range(idx, (have, need), etag.clone()).await {
                    Ok((s, b)) => fetched.add(s, b),
                    Err(BlockFailure::Changed) => {
                        return Box::pin(self.head(idx, false, false)).await;
                    }
                    Err(BlockFailure::Err(e)) => return Err(e),
                }
            }
        }
        self.parse_head(idx, fetched, etag)
    }

    /// Parses and checks the fetched start of file `idx` (caching the result under `etag`).
    fn parse_head(&self, idx: [u32; 3], fetched: Fetched, etag: Option<String>) -> Result<Head> {
        let inner = &self.inner;
        let path = PathBuf::from(self.file_url(idx));
        match FileMeta::parse(&fetched, &inner.options.format.dataset.limits, &path) {
            Ok(meta) => {
                let meta = Arc::new(meta);
                inner.local.check_file_header(&meta.header, &path)?;
                inner.cache.put(idx, etag.clone(), &meta);
                Ok(Head::Present {
                    meta,
                    etag,
                    fetched,
                })
            }
            Err(OpenFailure::Unreadable(_))
                if inner.options.format.dataset.missing_or_corrupt == MissingOrCorrupt::Zeros =>
            {
                Ok(Head::Zeros)
            }
            Err(OpenFailure::Unreadable(e)) => Err(Error::format(path, e)),
            Err(OpenFailure::Hard(e)) => Err(e),
        }
    }

    /// Fetches bytes `[r.0, r.1)` of file `idx`, on condition that its ETag is still `etag`.
    async fn fetch_range(
        &self,
        idx: [u32; 3],
        (start, end): (u64, u64),
        etag: Option<String>,
    ) -> Result<(u64, Bytes), BlockFailure> {
        let inner = &self.inner;
        let location = self.file_location(idx);
        let mut attempt = 0u32;
        loop {
            let opts = GetOptions {
                range: Some(GetRange::Bounded(start..end)),
                if_match: etag.clone(),
                ..GetOptions::default()
            };
            let res = match inner.store.get_opts(&location, opts).await {
                Ok(r) => r,
                Err(e)
                    if is_condition_failure(&e)
                        || matches!(e, object_store::Error::NotFound { .. }) =>
                {
                    return Err(BlockFailure::Changed);
                }
                Err(source) => {
                    return Err(BlockFailure::Err(Error::Remote {
                        url: self.file_url(idx),
                        source,
                    }));
                }
            };
            // Stores that ignore If-Match: compare the ETag of the response.
            if let (Some(want), Some(got)) = (&etag, &res.meta.e_tag)
                && want != got
            {
                return Err(BlockFailure::Changed);
            }
            let range = res.range.clone();
            let bytes = match res.bytes().await {
                Ok(b) => b,
                Err(e) if is_condition_failure(&e) => {
                    return Err(BlockFailure::Changed);
                }
                Err(source) => {
                    return Err(BlockFailure::Err(Error::Remote {
                        url: self.file_url(idx),
                        source,
                    }));
                }
            };
            if range.start == start && bytes.len() as u64 == end - start {
                return Ok((start, bytes));
            }
            attempt += 1;
            if attempt > inner.options.read_retries {
                return Err(BlockFailure::Err(Error::Remote {
                    url: self.file_url(idx),
                    source: object_store::Error::Generic {
                        store: "wkw",
                        source: format!(
                            "range {start}..{end}: got {} bytes at {}",
                            bytes.len(),
                            range.start
                        )
                        .into(),
                    },
                }));
            }
        }
    }

    /// Writes `data` (shape (C, X, Y, Z), either order) at `offset` (x, y, z), like
    /// [`Dataset::write`]: every touched file is read, merged and uploaded whole with a
    /// conditional put (see [`RemoteDataset`]); files are processed concurrently. A
    /// failure in one file leaves the other files written. The merge and recompression of a
    /// file run on the calling task (in parallel on rayon), between its download and upload.
    ///
    /// # Errors
    /// [`Error::ArrayMismatch`], [`Error::BoxOutOfRange`]; [`Error::Format`] for a corrupt
    /// existing file (unless [`MissingOrCorrupt::Zeros`]); [`Error::Conflict`] when another
    /// writer kept winning; [`Error::Remote`]; [`Error::Io`] for the local scratch space.
    pub async fn write(&self, offset: [u32; 3], data: &ArrayView<'_>) -> Result<()> {
        let inner = &self.inner;
        inner.local.check_layout(&data.layout)?;
        let bx = VBox::new(offset, data.layout.shape)?;
        if bx.is_empty() {
            return Ok(());
        }
        let scratch = Scratch::new(self.header(), &inner.options.format.dataset)?;
        let (lo, hi) = bx.cube_range(self.header().file_len_vx_log2());
        let scratch = &scratch;
        let bx = &bx;
        let cancel = &inner.options.format.dataset.cancel;
        futures::stream::iter(files_in(lo, hi))
            .map(|idx| async move {
                cancel.check()?;
                self.write_file(scratch, idx, bx, data).await
            })
            .buffer_unordered(inner.options.format.file_concurrency.max(1))
            .try_collect::<Vec<()>>()
            .await?;
        Ok(())
    }

    async fn write_file(
        &self,
        scratch: &Scratch,
        idx: [u32; 3],
        bx: &VBox,
        data: &ArrayView<'_>,
    ) -> Result<()> {
        let inner = &self.inner;
        let location = self.file_location(idx);
        let url = self.file_url(idx);
        let local_path = scratch.ds.file_path(idx);
        let mut attempt = 0u32;
        loop {
            let version = self.download(idx, &local_path).await?;
            let workers = Workers::locked(scratch.ds.options().threads);
            let result = scratch.ds.write_file(idx, bx, data, workers);
            // The local copy is temporary: the rebuilt file goes to the store or nowhere.
            let result = result.map_err(|e| relabel(e, &local_path, &url));
            result?;
            let bytes = tokio_free_read(&local_path).map_err(|e| relabel(e, &local_path, &url))?;
            self.inner.cache.invalidate(idx);
            let mode = match (&version, inner.options.write_mode) {
                (Some(v), WriteMode::Conditional) => PutMode::Update(v.clone()),
                (None, WriteMode::Conditional) => PutMode::Create,
                _ => PutMode::Overwrite,
            };
            match self.upload(&location, bytes, mode).await {
                Ok(()) => {
                    let _ = std::fs::remove_file(&local_path);
                    return Ok(());
                }
                Err(e) if is_condition_failure(&e) && attempt < inner.options.conflict_retries => {
                    attempt += 1;
                    tokio::time::sleep(conflict_backoff(attempt)).await;
                }
                Err(e) if is_condition_failure(&e) => {
                    let _ = std::fs::remove_file(&local_path);
                    return Err(Error::Conflict { url });
                }
                Err(source) => return Err(Error::Remote { url, source }),
            }
        }
    }

    /// Downloads data file `idx` to `to` (removing `to` if there is no object), returning the
    /// version it had.
    async fn download(&self, idx: [u32; 3], to: &FsPath) -> Result<Option<UpdateVersion>> {
        let url = self.file_url(idx);
        // The local copy is scratch space: its errors name the object, never the temporary path.
        self.download_to(idx, to)
            .await
            .map_err(|e| relabel(e, to, &url))
    }

    async fn download_to(&self, idx: [u32; 3], to: &FsPath) -> Result<Option<UpdateVersion>> {
        let location = self.file_location(idx);
        let url = self.file_url(idx);
        let res = match self.inner.store.get(&location).await {
            Ok(r) => r,
            Err(object_store::Error::NotFound { .. }) => {
                match std::fs::remove_file(to) {
                    Ok(()) => {}
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                    Err(e) => return Err(Error::io(to, e)),
                }
                return Ok(None);
            }
            Err(source) => return Err(Error::Remote { url, source }),
        };
        let version = UpdateVersion {
            e_tag: res.meta.e_tag.clone(),
            version: res.meta.version.clone(),
        };
        let size = res.meta.size;
        if let Some(dir) = to.parent() {
            std::fs::create_dir_all(dir).map_err(|e| Error::io(to, e))?;
        }
        let mut file = std::fs::File::create(to).map_err(|e| Error::io(to, e))?;
        let mut stream = res.into_stream();
        let mut written = 0u64;
        while let Some(chunk) = stream.next().await {
            let chunk = chunk.map_err(|source| Error::Remote {
                url: url.clone(),
                source,
            })?;
            std::io::Write::write_all(&mut file, &chunk).map_err(|e| Error::io(to, e))?;
            written += chunk.len() as u64;
        }
        if written != size {
            return Err(Error::Remote {
                url,
                source: object_store::Error::Generic {
                    store: "wkw",
                    source: format!("got {written} of {size} bytes").into(),
                },
            });
        }
        Ok(Some(version))
    }

    /// Uploads `bytes` to `location`: one put with `mode`, or a multipart upload for large
    /// unconditional ones.
    async fn upload(
        &self,
        location: &Path,
        bytes: Bytes,
        mode: PutMode,
    ) -> std::result::Result<(), object_store::Error> {
        let store = &self.inner.store;
        if matches!(mode, PutMode::Overwrite)
            && bytes.len() as u64 > self.inner.options.multipart_threshold
        {
            let upload = store.put_multipart(location).await?;
            let part = usize::try_from(self.inner.options.part_size.max(1)).unwrap_or(usize::MAX);
            let mut w = WriteMultipart::new_with_chunk_size(upload, part);
            w.put(bytes);
            w.finish().await?;
            return Ok(());
        }
        let opts = PutOptions {
            mode,
            ..PutOptions::default()
        };
        store
            .put_opts(location, bytes.into(), opts)
            .await
            .map(|_| ())
    }

    /// Converts every data file into a new dataset at `dst_prefix` of `dst_store` with
    /// `block_type`, like [`crate::compress`] (every block written, corrupt source files are
    /// errors). Files are converted concurrently on local scratch space and uploaded whole;
    /// `progress` is called after each (its path is the source file's URL). The source or the
    /// destination may be a local directory through `object_store::local::LocalFileSystem`
    /// (or a `file://` URL).
    ///
    /// The destination must be apart from this dataset: in another store, or at a prefix that
    /// is neither this dataset's nor inside it nor around it (stores are the same when they
    /// are one object or show the same place, e.g. `AmazonS3(bucket)`).
    ///
    /// # Errors
    /// [`Error::Overlap`] if the destination is this dataset, lies inside it or contains it;
    /// [`Error::AlreadyExists`] if the destination is a dataset already; any read error of a
    /// source file; [`Error::Remote`]; [`Error::Io`] for the scratch space.
    pub async fn compress_to(
        &self,
        dst_store: Arc<dyn ObjectStore>,
        dst_prefix: Path,
        block_type: BlockType,
        progress: &(dyn Fn(Progress<'_>) + Sync),
    ) -> Result<RemoteDataset> {
        // One object, or two clients of one place (`AmazonS3(bucket)`); two in-memory stores,
        // which show no place, are two stores.
        let name = self.inner.store.to_string();
        let same_store = Arc::ptr_eq(&self.inner.store, &dst_store)
            || (name != "InMemory" && name == dst_store.to_string());
        if same_store {
            let (src, dst) = (&self.inner.prefix, &dst_prefix);
            let how = if src == dst {
                Some(scifmt_io::Overlap::Same)
            } else if dst.prefix_matches(src) {
                Some(scifmt_io::Overlap::OutputInsideInput)
            } else if src.prefix_matches(dst) {
                Some(scifmt_io::Overlap::InputInsideOutput)
            } else {
                None
            };
            if let Some(how) = how {
                return Err(Error::Overlap {
                    input: self.inner.url.clone(),
                    output: store_url(dst_store.as_ref(), &dst_prefix),
                    how,
                });
            }
        }
        let header = self.header().with_block_type(block_type);
        let target =
            Self::create(dst_store, dst_prefix, header, self.inner.options.clone()).await?;
        self.compress_into(&target, progress).await?;
        Ok(target)
    }

    /// [`RemoteDataset::compress_to`] to a URL (see [`RemoteDataset::open_url`]). The URLs are
    /// compared by store and normalised key prefix (`file://` URLs as local paths, by
    /// identity: symlinks and `..` are seen through), see `scifmt_io::ensure_apart`.
    ///
    /// # Errors
    /// As [`RemoteDataset::compress_to`].
    pub async fn compress_to_url(
        &self,
        dst_url: &str,
        block_type: BlockType,
        progress: &(dyn Fn(Progress<'_>) + Sync),
    ) -> Result<RemoteDataset> {
        scifmt_io::ensure_apart(
            std::path::Path::new(&self.inner.url),
            std::path::Path::new(dst_url),
        )?;
        let header = self.header().with_block_type(block_type);
        let target = Self::create_url(dst_url, header, self.inner.options.clone()).await?;
        self.compress_into(&target, progress).await?;
        Ok(target)
    }

    async fn compress_into(
        &self,
        target: &RemoteDataset,
        progress: &(dyn Fn(Progress<'_>) + Sync),
    ) -> Result<()> {
        let files = self.list_files().await?;
        let total = files.len();
        let done = AtomicUsize::new(0);
        let src = Scratch::new(self.header(), &self.inner.options.format.dataset)?;
        let dst = Scratch::new(target.header(), &target.inner.options.format.dataset)?;
        let (src, dst, done) = (&src, &dst, &done);
        let cancel = &self.inner.options.format.dataset.cancel;
        futures::stream::iter(files)
            .map(|(idx, url)| async move {
                cancel.check()?;
                let local = src.ds.file_path(idx);
                let converted = dst.ds.file_path(idx);
                if self.download(idx, &local).await?.is_none() {
                    return Ok(());
                }
                let r = convert_file(&src.ds, &dst.ds, idx, &local).map_err(|e| {
                    relabel(relabel(e, &local, &url), &converted, &target.file_url(idx))
                });
                let _ = std::fs::remove_file(&local);
                r?;
                let bytes = tokio_free_read(&converted)
                    .map_err(|e| relabel(e, &converted, &target.file_url(idx)))?;
                let _ = std::fs::remove_file(&converted);
                target
                    .upload(&target.file_location(idx), bytes, PutMode::Overwrite)
                    .await
                    .map_err(|source| Error::Remote {
                        url: target.file_url(idx),
                        source,
                    })?;
                let d = done.fetch_add(1, Ordering::Relaxed) + 1;
                progress(Progress {
                    done: d,
                    total,
                    path: FsPath::new(&url),
                });
                Ok::<(), Error>(())
            })
            .buffer_unordered(self.inner.options.format.file_concurrency.max(1))
            .try_collect::<Vec<()>>()
            .await?;
        Ok(())
    }

    /// Checks every data file like [`crate::verify`]: each is downloaded whole (to local
    /// scratch space, one at a time per concurrent request) and checked; `progress` is called
    /// after each. The report's paths are the files' URLs.
    ///
    /// # Errors
    /// Only for problems with the dataset itself (listing fails, no scratch space) and
    /// [`Error::Cancelled`] ([`Options::cancel`] is checked before each file and block); file
    /// problems, including failed downloads, are reported in the [`VerifyReport`].
    pub async fn verify(&self, progress: &(dyn Fn(Progress<'_>) + Sync)) -> Result<VerifyReport> {
        let files = self.list_files().await?;
        let total = files.len();
        let done = AtomicUsize::new(0);
        let scratch = Scratch::new(self.header(), &self.inner.options.format.dataset)?;
        let (scratch, done) = (&scratch, &done);
        let cancel = &self.inner.options.format.dataset.cancel;
        let files = futures::stream::iter(files)
            .map(|(index, url)| async move {
                cancel.check()?;
                let local = scratch.ds.file_path(index);
                let problem = match self.download(index, &local).await {
                    Ok(Some(_)) => match verify_file(&scratch.ds, &local) {
                        Err(Error::Cancelled) => {
                            let _ = std::fs::remove_file(&local);
                            return Err(Error::Cancelled);
                        }
                        r => r.map_err(|e| relabel(e, &local, &url)).err(),
                    },
                    Ok(None) => Some(Error::Remote {
                        url: url.clone(),
                        source: object_store::Error::NotFound {
                            path: self.file_location(index).to_string(),
                            source: "listed but gone".into(),
                        },
                    }),
                    Err(e) => Some(e),
                };
                let _ = std::fs::remove_file(&local);
                let path = PathBuf::from(&url);
                let d = done.fetch_add(1, Ordering::Relaxed) + 1;
                progress(Progress {
                    done: d,
                    total,
                    path: &path,
                });
                Ok(FileReport {
                    path,
                    index,
                    problem,
                })
            })
            .buffered(self.inner.options.format.file_concurrency.max(1))
            .try_collect()
            .await?;
        Ok(VerifyReport { files })
    }
}

impl Fetched {
    /// Fills `buf` from offset 0 if those bytes were fetched.
    fn read_exact_at_prefix(&self, buf: &mut [u8]) -> bool {
        crate::io::storage::StorageFile::read_exact_at(self, buf, 0).is_ok()
    }
}

/// A local dataset in a temporary directory, where remote files are rebuilt.
struct Scratch {
    ds: Dataset,
    _dir: tempfile::TempDir,
}

impl Scratch {
    fn new(header: &Header, options: &Options) -> Result<Self> {
        let dir = tempfile::Builder::new()
            .prefix(".wkw-remote-")
            .tempdir()
            .map_err(|e| Error::io(std::env::temp_dir(), e))?;
        // Errors name the system's temporary directory, never the scratch folder inside it.
        let ds = Dataset::create_with(
            dir.path().join("ds"),
            *header,
            options.clone().with_durability(Durability::None),
        )
        .map_err(|e| match e {
            Error::Io { source, .. } => Error::io(std::env::temp_dir(), source),
            e => e,
        })?;
        Ok(Self { ds, _dir: dir })
    }
}

/// Reads a scratch file into memory for an upload.
fn tokio_free_read(path: &FsPath) -> Result<Bytes> {
    std::fs::read(path)
        .map(Bytes::from)
        .map_err(|e| Error::io(path, e))
}

/// Replaces the scratch path `from` by `url` in errors that name it.
fn relabel(e: Error, from: &FsPath, url: &str) -> Error {
    match e {
        Error::Io { path, source } if path == from => Error::Io {
            path: PathBuf::from(url),
            source,
        },
        Error::Format { path, source } if path == from => Error::Format {
            path: PathBuf::from(url),
            source,
        },
        e => e,
    }
}

/// Runs the CPU-bound decoding: on tokio's blocking pool when called on a tokio runtime (so
/// the runtime's workers keep serving I/O), else inline.
async fn decode<R: Send + 'static>(f: impl FnOnce() -> Result<R> + Send + 'static) -> Result<R> {
    match tokio::runtime::Handle::try_current() {
        Ok(handle) => handle
            .spawn_blocking(f)
            .await
            .map_err(|e| Error::internal(format!("decoding task failed: {e}")))?,
        Err(_) => f(),
    }
}

/// The store, the prefix inside it and the message URL for `url` (see
/// [`scifmt_io::store_for_url`]).
fn store_for_url(
    url: &str,
    config: &[(String, String)],
) -> Result<(Arc<dyn ObjectStore>, Path, String)> {
    let s = scifmt_io::store_for_url(url, config)?;
    Ok((s.store, s.path, s.url))
}

#[cfg(test)]
mod tests;
