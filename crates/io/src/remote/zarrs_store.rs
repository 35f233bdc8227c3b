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

use crate::credentials::store_error_message;
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
            // Checked here: `ByteRange::start` underflows for a suffix longer than the object.
            let (start, end) = match *r {
                ByteRange::FromStart(start, Some(len)) => (Some(start), start.checked_add(len)),
                ByteRange::FromStart(start, None) => (Some(start), Some(size)),
                ByteRange::Suffix(len) => (size.checked_sub(len), Some(size)),
            };
            match (start, end) {
                (Some(start), Some(end)) if start <= end && (bounded || end <= size) => {
                    ranges.push(start..end);
                }
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use object_store::memory::InMemory;

    use super::*;

    fn store() -> (ZarrsStore, Vec<u8>) {
        let data: Vec<u8> = (0..10_000u32).map(|i| (i * 7 % 251) as u8).collect();
        let mem = Arc::new(InMemory::new());
        block_on(mem.put(&Path::from("p/arr/c/0"), data.clone().into()))
            .unwrap()
            .unwrap();
        let options = RemoteOptions::default().with_coalesce_gap(0);
        (ZarrsStore::new(mem, Path::from("p"), options), data)
    }

    #[test]
    fn reads_ranges_whole_objects_and_sizes() {
        let (s, data) = store();
        let key = StoreKey::new("arr/c/0").unwrap();
        let ranges = vec![
            ByteRange::FromStart(10, Some(5)),
            ByteRange::FromStart(9_000, Some(1_000)),
            ByteRange::FromStart(12, Some(100)),
            ByteRange::Suffix(3),
            ByteRange::FromStart(9_990, None),
        ];
        let got: Vec<Bytes> = s
            .get_partial_many(&key, Box::new(ranges.into_iter()))
            .unwrap()
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(got[0], data[10..15]);
        assert_eq!(got[1], data[9_000..]);
        assert_eq!(got[2], data[12..112]);
        assert_eq!(got[3], data[9_997..]);
        assert_eq!(got[4], data[9_990..]);
        assert_eq!(s.get(&key).unwrap().unwrap(), data);
        assert_eq!(s.size_key(&key).unwrap(), Some(10_000));
        assert!(s.supports_get_partial());
    }

    #[test]
    fn missing_objects_are_none_and_bad_ranges_errors() {
        let (s, _) = store();
        let missing = StoreKey::new("arr/c/1").unwrap();
        assert!(s.get(&missing).unwrap().is_none());
        assert!(s.size_key(&missing).unwrap().is_none());
        let one = || Box::new([ByteRange::FromStart(0, Some(4))].into_iter());
        assert!(s.get_partial_many(&missing, one()).unwrap().is_none());
        let key = StoreKey::new("arr/c/0").unwrap();
        // Past the end: an error naming the object, at once.
        let past = Box::new([ByteRange::FromStart(9_990, Some(20))].into_iter());
        let e = s.get_partial_many(&key, past).err().unwrap().to_string();
        assert!(e.contains("arr/c/0") && e.contains("past the end"), "{e}");
        let suffix = Box::new([ByteRange::Suffix(20_000)].into_iter());
        assert!(s.get_partial_many(&key, suffix).is_err());
    }
}
