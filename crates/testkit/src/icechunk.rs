//! [`open_main`]: zarrs' synchronous storage over the tip of `main` of an Icechunk repository,
//! through `zarrs_icechunk` (Icechunk's own reader of virtual chunks, which checks each
//! source's checksum).

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use icechunk::Repository;
use icechunk::repository::VersionInfo;
use zarrs_icechunk::AsyncIcechunkStore;
use zarrs_storage::byte_range::{ByteRange, ByteRangeIterator};
use zarrs_storage::{
    AsyncReadableStorageTraits, MaybeBytes, MaybeBytesIterator, ReadableStorageTraits,
    StorageError, StoreKey,
};

/// zarrs' synchronous storage over `zarrs_icechunk`'s asynchronous one, its futures run on a
/// tokio runtime of its own, every key read whole through the async `get`.
///
/// zarrs_icechunk 0.6.0 answers a missing chunk's `get` with `None` (the fill value), as zarrs
/// expects, but its partial reads and `size_key` with an error ("chunk cannot be find for key
/// …"); zarrs reads chunks without a compressor (raw WKW files) partially, and zarrs_storage's
/// async-to-sync adapter turns every `get` into a partial read. Through those, any array with
/// a missing chunk fails to read.
pub struct IcechunkStorage {
    store: AsyncIcechunkStore,
    runtime: tokio::runtime::Runtime,
}

impl std::fmt::Debug for IcechunkStorage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IcechunkStorage").finish_non_exhaustive()
    }
}

impl ReadableStorageTraits for IcechunkStorage {
    fn get(&self, key: &StoreKey) -> Result<MaybeBytes, StorageError> {
        self.runtime
            .block_on(AsyncReadableStorageTraits::get(&self.store, key))
    }

    fn get_partial_many<'a>(
        &'a self,
        key: &StoreKey,
        byte_ranges: ByteRangeIterator<'a>,
    ) -> Result<MaybeBytesIterator<'a>, StorageError> {
        let Some(whole) = self.get(key)? else {
            return Ok(None);
        };
        let size = whole.len() as u64;
        let parts = byte_ranges
            .map(|r| {
                let (start, end) = match r {
                    ByteRange::FromStart(s, n) => {
                        (Some(s), n.map_or(Some(size), |n| s.checked_add(n)))
                    }
                    ByteRange::Suffix(n) => (size.checked_sub(n), Some(size)),
                };
                start
                    .zip(end)
                    .filter(|&(s, e)| s <= e && e <= size)
                    .and_then(|(s, e)| {
                        Some(whole.slice(usize::try_from(s).ok()?..usize::try_from(e).ok()?))
                    })
                    .ok_or_else(|| {
                        StorageError::Other(format!("{key}: byte range {r} outside {size} bytes"))
                    })
            })
            .collect::<Vec<_>>();
        Ok(Some(Box::new(parts.into_iter())))
    }

    fn size_key(&self, key: &StoreKey) -> Result<Option<u64>, StorageError> {
        Ok(self.get(key)?.map(|b| b.len() as u64))
    }

    fn supports_get_partial(&self) -> bool {
        false
    }
}

/// The tip of `main` of the local Icechunk repository at `repo`, every virtual chunk container
/// of its configuration authorized (credentials from the environment).
///
/// # Errors
/// Icechunk's, opening the repository or its session; the runtime's.
pub fn open_main(repo: &Path) -> Result<Arc<IcechunkStorage>, Box<dyn std::error::Error>> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let session = runtime.block_on(async {
        let storage = icechunk::new_local_filesystem_storage(repo).await?;
        let r = Repository::open(storage).execute().await?;
        let authorized: HashMap<String, _> = r
            .config()
            .virtual_chunk_containers()
            .map(|c| (c.url_prefix().to_owned(), None))
            .collect();
        let r = r.reopen(None, Some(authorized)).await?;
        let session = r
            .readonly_session(&VersionInfo::BranchTipRef("main".into()))
            .await?;
        Ok::<_, Box<dyn std::error::Error>>(session)
    })?;
    Ok(Arc::new(IcechunkStorage {
        store: AsyncIcechunkStore::new(session),
        runtime,
    }))
}
