//! WKW datasets on object stores (feature `object_store`): [`RemoteDataset`] (async) and
//! [`BlockingRemoteDataset`]; the request plan and guarantees are documented on
//! [`RemoteDataset`].
//!
//! Every request goes through the storage layer of `scifmt-io`: block and header reads are
//! [`scifmt_io::Object`] reads pinned to the version a file's header came from, uploads are
//! [`scifmt_io::put`] (see [`scifmt_io::Upload`]), and fetched bytes are served to the local
//! decoder as a [`scifmt_io::Prefetched`]. What lives here is wkw's own plan:
//!
//! * `open`: opening and creating a dataset (`header.wkw`);
//! * `read`: listing the data files and reading boxes (header and jump table per file, cached
//!   by ETag, then the blocks' byte ranges, planned by `plan`);
//! * `write`: read-modify-write of the touched files with conditional puts, on local scratch
//!   space (`scratch`);
//! * `compress`: `compress_to` and `verify`, file by file through scratch space;
//! * `blocking`: [`BlockingRemoteDataset`].

mod blocking;
mod compress;
mod open;
mod plan;
mod read;
mod scratch;
mod write;

use std::sync::Arc;

use object_store::ObjectStore;
use object_store::path::Path;
use scifmt_io::{Object, WriteMode, child, join_url};

pub use blocking::BlockingRemoteDataset;

use crate::dataset::cache::MetaCache;
use crate::dataset::root::Dataset;
#[cfg(doc)]
use crate::error::Error;
use crate::format::header::Header;
use crate::format::tree::file_key;
use crate::options::Options;

/// Options of a [`RemoteDataset`]: the request knobs every scifmt format shares
/// ([`scifmt_io::RemoteOptions`], set with its `with_*` methods) plus wkw's own in
/// [`RemoteOptions::format`](scifmt_io::RemoteOptions::format) ([`RemoteDatasetOptions`]).
///
/// wkw's defaults: [`concurrency`](scifmt_io::RemoteOptions::concurrency) 64 requests per read
/// (a 256³ box over parts of 27 files of 128³ voxels needs about 110 block requests: 2 round
/// trips at 64); [`coalesce_gap`](scifmt_io::RemoteOptions::coalesce_gap) 8 KiB;
/// [`max_request_bytes`](scifmt_io::RemoteOptions::max_request_bytes) 8 MiB;
/// [`read_retries`](scifmt_io::RemoteOptions::read_retries) 3 (response bodies cut short);
/// [`conflict_retries`](scifmt_io::RemoteOptions::conflict_retries) 10 (lost read-modify-writes of
/// a data file); [`write_mode`](scifmt_io::RemoteOptions::write_mode)
/// [`WriteMode::Conditional`](scifmt_io::WriteMode::Conditional) (`Overwrite` makes concurrent
/// writers of one file **lose updates**: only for stores without conditional puts);
/// multipart uploads (unconditional ones only: `compress` output, and writes with `Overwrite`)
/// from 64 MiB on, in parts of 8 MiB.
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
/// A file's block requests are [`scifmt_io::Object`] reads pinned to the ETag its header and
/// jump table came from (`If-Match`, and the ETag of every response compared). A file replaced
/// or deleted while it is read fails them: its header is fetched again and its blocks once
/// more; a second change within the same read is [`Error::Changed`]. A read therefore returns,
/// per file, the old or the new content, never a mix. A cached header is checked the same way,
/// so a replaced file is never decoded with a stale jump table. Stores that report no ETag get
/// no such check and no caching. A response that is not the range asked for is an
/// [`Error::Remote`]; a body cut short is fetched again
/// ([`read_retries`](scifmt_io::RemoteOptions::read_retries) times) first.
///
/// # Writes
/// A write of a box rebuilds each touched file whole (exactly like a local write: the existing
/// object is downloaded, merged and, for compressed files, recompressed on local scratch
/// space) and uploads it with a conditional put: `PutMode::Update` on the ETag/version read, or
/// `PutMode::Create` when there was no object. A lost race (HTTP 412 / 409 / "already
/// exists") redoes the read-modify-write of that file up to
/// [`conflict_retries`](scifmt_io::RemoteOptions::conflict_retries) times (after a randomized
/// wait doubling from about 1 ms up to about 64 ms), then fails with [`Error::Conflict`]; so
/// two writers never silently lose an update. Uploads are [`scifmt_io::put`]s; conditional
/// ones are always one `PUT` (a multipart upload cannot be conditional), unconditional ones
/// from [`multipart_threshold`](scifmt_io::RemoteOptions::multipart_threshold) on are multipart
/// uploads, aborted if they fail.
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

impl RemoteDataset {
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

    /// Data file `(fx, fy, fz)` as an object to read, not pinned to a version yet.
    fn file_object(&self, index: [u32; 3]) -> Object {
        Object::new(
            Arc::clone(&self.inner.store),
            self.file_location(index),
            self.file_url(index),
        )
    }
}

#[cfg(test)]
mod tests;
