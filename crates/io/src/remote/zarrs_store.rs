//! [`ZarrsStore`]: zarrs' readable storage over an object store, with byte-range reads planned
//! by the range planner and fetched concurrently.

use std::sync::Arc;

use bytes::Bytes;
use object_store::ObjectStore;
use object_store::path::Path;
use zarrs_storage::byte_range::{ByteRange, ByteRangeIterator};
use zarrs_storage::{
    MaybeBytes, MaybeBytesIterator, ReadableStorageTraits, StorageError, StoreKey,
};

use crate::remote::object::Object;
use crate::remote::options::RemoteOptions;
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
/// Every read is an [`Object`] read: checked, version-pinned within one call, a response body
/// cut short fetched again up to [`read_retries`](RemoteOptions::read_retries) times.
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

    fn run<T>(&self, f: impl Future<Output = T>) -> Result<T, StorageError> {
        block_on(f).map_err(|e| StorageError::Other(e.to_string()))
    }

    fn object(&self, path: Path) -> Object {
        let url = store_url(self.store.as_ref(), &path);
        Object::new(Arc::clone(&self.store), path, url)
    }

    async fn get_ranges(
        &self,
        path: &Path,
        wanted: Vec<ByteRange>,
    ) -> Result<Option<Vec<Bytes>>, StorageError> {
        let object = self.object(path.clone());
        let bounded = wanted
            .iter()
            .all(|r| matches!(r, ByteRange::FromStart(_, Some(_))));
        let size = if bounded {
            0
        } else {
            // Pins the object: the ranges below are read from the version measured here.
            match object.head().await.map_err(other)? {
                Some(meta) => meta.size,
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
                        object.url()
                    )));
                }
            }
        }
        object
            .get_ranges(&ranges, &self.options)
            .await
            .map_err(other)
    }
}

/// A storage error with this crate's message (which names the object, without credentials).
fn other(e: crate::error::Error) -> StorageError {
    StorageError::Other(e.to_string())
}

impl ReadableStorageTraits for ZarrsStore {
    fn get(&self, key: &StoreKey) -> Result<MaybeBytes, StorageError> {
        let object = self.object(self.path(key));
        self.run(object.get_all(u64::MAX, &self.options))?
            .map_err(other)
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
        let object = self.object(self.path(key));
        Ok(self.run(object.head())?.map_err(other)?.map(|m| m.size))
    }

    fn supports_get_partial(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use object_store::ObjectStoreExt;
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
