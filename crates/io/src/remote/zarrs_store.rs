//! [`ZarrsStore`]: zarrs' readable storage over an object store, with byte-range reads planned
//! by the range planner and fetched concurrently.

use std::ops::Range;
use std::sync::Arc;

use bytes::Bytes;
use futures::{StreamExt, TryStreamExt};
use object_store::path::Path;
use object_store::{GetOptions, GetRange, ObjectStore, ObjectStoreExt};
use zarrs_storage::byte_range::{ByteRange, ByteRangeIterator};
use zarrs_storage::{
    MaybeBytes, MaybeBytesIterator, ReadableStorageTraits, StorageError, StoreKey,
};

use crate::remote::credentials::store_error_message;
use crate::remote::options::RemoteOptions;
use crate::remote::plan::assemble;
use crate::remote::runtime::block_on;
use crate::remote::store::{child, store_url};

/// A [zarrs](https://docs.rs/zarrs) readable storage (sync API) over an [`ObjectStore`] and a
/// key prefix: the byte ranges of one `get_partial_many` call are planned by
/// [`RemoteOptions::plan`] (touching ranges share a request, gaps up to
/// [`coalesce_gap`](RemoteOptions::coalesce_gap) are bridged within the planner's budget) and
/// fetched concurrently, at most [`concurrency`](RemoteOptions::concurrency) at once, on the
/// process-wide runtime ([`runtime`](crate::runtime)); ranges with a known end need no size
/// request first. `object_store`'s own `get_ranges` (which `zarrs_object_store` uses) merges
/// ranges less than 1 MiB apart and asks for the object's size before every read.
///
/// A response body cut short is fetched again, up to
/// [`read_retries`](RemoteOptions::read_retries) times.
///
/// Call it from threads outside any tokio runtime (zarrs' sync API; it blocks).
#[derive(Debug, Clone)]
pub struct ZarrsStore {
    store: Arc<dyn ObjectStore>,
    prefix: Path,
    options: RemoteOptions,
}

impl ZarrsStore {
    /// The zarrs storage of the objects under `prefix` in `store`, read with `options`.
    #[must_use]
    pub fn new(store: Arc<dyn ObjectStore>, prefix: Path, options: RemoteOptions) -> Self {
        Self {
            store,
            prefix,
            options,
        }
    }

    /// The request options.
    #[must_use]
    pub fn options(&self) -> &RemoteOptions {
        &self.options
    }

    fn path(&self, key: &StoreKey) -> Path {
        child(&self.prefix, key.as_str())
    }

    fn error(&self, path: &Path, e: &object_store::Error) -> StorageError {
        StorageError::Other(format!(
            "{}: {}",
            store_url(self.store.as_ref(), path),
            store_error_message(e)
        ))
    }

    fn run<T>(&self, f: impl Future<Output = T>) -> Result<T, StorageError> {
        block_on(f).map_err(|e| StorageError::Other(e.to_string()))
    }

    /// `range` of the object at `path` (`None`: no such object), fetched again while the
    /// body comes short or fails while streaming.
    async fn fetch(&self, path: &Path, range: Range<u64>) -> Result<Option<Bytes>, StorageError> {
        let want = range.end - range.start;
        let mut attempt = 0;
        loop {
            let options = GetOptions {
                range: Some(GetRange::Bounded(range.clone())),
                ..GetOptions::default()
            };
            let result = match self.store.get_opts(path, options).await {
                Ok(r) => r,
                Err(object_store::Error::NotFound { .. }) => return Ok(None),
                Err(e) => return Err(self.error(path, &e)),
            };
            // A store serves a range reaching past the end up to the end: not what was asked
            // for, and asking again would not change it.
            if result.range.end < range.end && result.range.end == result.meta.size {
                return Err(StorageError::Other(format!(
                    "{}: byte range {range:?} past the end of the object ({} bytes)",
                    store_url(self.store.as_ref(), path),
                    result.meta.size
                )));
            }
            let problem = match result.bytes().await {
                Ok(body) if body.len() as u64 == want => return Ok(Some(body)),
                Ok(body) => format!("{} bytes for range {range:?}", body.len()),
                Err(e) => store_error_message(&e),
            };
            if attempt >= self.options.read_retries {
                return Err(StorageError::Other(format!(
                    "{}: {problem}",
                    store_url(self.store.as_ref(), path)
                )));
            }
            attempt += 1;
        }
    }

    async fn size(&self, path: &Path) -> Result<Option<u64>, StorageError> {
        match self.store.head(path).await {
            Ok(meta) => Ok(Some(meta.size)),
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(self.error(path, &e)),
        }
    }

    async fn get_ranges(
        &self,
        path: &Path,
        wanted: Vec<ByteRange>,
    ) -> Result<Option<Vec<Bytes>>, StorageError> {
        let bounded = wanted
            .iter()
            .all(|r| matches!(r, ByteRange::FromStart(_, Some(_))));
        let size = if bounded {
            0
        } else {
            match self.size(path).await? {
                Some(size) => size,
                None => return Ok(None),
            }
        };
        let mut ranges = Vec::with_capacity(wanted.len());
        for r in &wanted {
            let (start, end) = match *r {
                ByteRange::FromStart(start, Some(len)) => (start, start.checked_add(len)),
                _ => (r.start(size), Some(r.end(size))),
            };
            match end {
                Some(end) if start <= end && (bounded || end <= size) => ranges.push(start..end),
                _ => {
                    return Err(StorageError::Other(format!(
                        "{}: byte range {r} outside the object ({size} bytes)",
                        store_url(self.store.as_ref(), path)
                    )));
                }
            }
        }
        let requests = self.options.plan(core::slice::from_ref(&ranges)).remove(0);
        let bodies =
            futures::stream::iter(requests.iter().map(|q| self.fetch(path, q.range.clone())))
                .buffered(self.options.in_flight())
                .try_collect::<Vec<Option<Bytes>>>()
                .await?;
        let Some(bodies) = bodies.into_iter().collect::<Option<Vec<Bytes>>>() else {
            return Ok(None);
        };
        assemble(&ranges, &requests, &bodies)
            .map(Some)
            .map_err(|e| StorageError::Other(e.to_string()))
    }
}

impl ReadableStorageTraits for ZarrsStore {
    fn get(&self, key: &StoreKey) -> Result<MaybeBytes, StorageError> {
        let path = self.path(key);
        self.run(async {
            let mut attempt = 0;
            loop {
                let result = match self.store.get(&path).await {
                    Ok(r) => r,
                    Err(object_store::Error::NotFound { .. }) => return Ok(None),
                    Err(e) => return Err(self.error(&path, &e)),
                };
                match result.bytes().await {
                    Ok(body) => return Ok(Some(body)),
                    Err(e) if attempt < self.options.read_retries => {
                        drop(e);
                        attempt += 1;
                    }
                    Err(e) => return Err(self.error(&path, &e)),
                }
            }
        })?
    }

    fn get_partial_many<'a>(
        &'a self,
        key: &StoreKey,
        byte_ranges: ByteRangeIterator<'a>,
    ) -> Result<MaybeBytesIterator<'a>, StorageError> {
        let path = self.path(key);
        let wanted: Vec<ByteRange> = byte_ranges.collect();
        let got = self.run(self.get_ranges(&path, wanted))??;
        Ok(got.map(|v| Box::new(v.into_iter().map(Ok)) as Box<dyn Iterator<Item = _>>))
    }

    fn size_key(&self, key: &StoreKey) -> Result<Option<u64>, StorageError> {
        let path = self.path(key);
        self.run(self.size(&path))?
    }

    fn supports_get_partial(&self) -> bool {
        true
    }
}
