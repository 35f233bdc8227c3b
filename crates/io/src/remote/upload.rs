//! [`Upload`] and [`put`]: the one way the scifmt crates write an object.

use std::sync::Arc;

use bytes::Bytes;
use object_store::path::Path;
use object_store::{MultipartUpload, ObjectStore, ObjectStoreExt, PutMode, PutOptions, PutPayload};
use tokio::task::JoinSet;

use crate::error::{Error, Result};
use crate::remote::options::RemoteOptions;
use crate::remote::store::Access;

/// Writes `bytes` as the object at `path` (named `url` in messages) the way [`Upload`] does.
///
/// ```
/// # use std::sync::Arc;
/// use scifmt_io::object_store::{memory::InMemory, path::Path, PutMode};
/// use scifmt_io::{RemoteOptions, block_on, put};
/// let store = Arc::new(InMemory::new());
/// let o = RemoteOptions::<()>::default();
/// block_on(put(store.clone(), Path::from("a"), "memory:///a", "x".into(), PutMode::Create, &o))??;
/// // Create-only: a second put finds the object.
/// let again = block_on(put(store, Path::from("a"), "memory:///a", "y".into(), PutMode::Create, &o))?;
/// assert!(matches!(again, Err(scifmt_io::Error::Conflict { .. })));
/// # Ok::<(), scifmt_io::Error>(())
/// ```
///
/// # Errors
/// As [`Upload::finish`].
pub async fn put<F>(
    store: Arc<dyn ObjectStore>,
    path: Path,
    url: impl Into<String>,
    bytes: Bytes,
    mode: PutMode,
    options: &RemoteOptions<F>,
) -> Result<()> {
    let mut u = Upload::new(store, path, url, mode, options);
    u.write(bytes).await?;
    u.finish().await
}

/// An object being written; it appears under its key only complete, or not at all.
///
/// * Objects smaller than [`RemoteOptions::multipart_threshold`] are buffered and written by
///   one `PUT` with the [`PutMode`] asked for: [`PutMode::Overwrite`], create-only
///   [`PutMode::Create`] (`If-None-Match: *`) or [`PutMode::Update`] (`If-Match` on the version
///   read). A lost condition is [`Error::Conflict`]. A store without create-only puts
///   (`NotImplemented`) gets a `HEAD` check just before an unconditional put instead.
/// * From the threshold on, an unconditional or create-only object becomes a multipart upload
///   of [`RemoteOptions::part_size`] parts (S3 needs at least 5 MiB for every part but the
///   last), at most [`RemoteOptions::concurrency`] parts in flight and as many in memory,
///   uploaded while the object is produced. The store shows it under its key only once
///   completed. Multipart uploads cannot be conditional: create-only ones get a `HEAD` check
///   before they start, which does not exclude a writer that comes in between. Objects
///   written with [`PutMode::Update`] are always one `PUT`.
/// * **A failed upload is aborted** (the parts sent are deleted) when writing a part or
///   completing fails, and when the `Upload` is dropped unfinished (an error or a panic of
///   the producer, a cancelled task): no uncompleted multipart upload is left behind where
///   the store can abort it, and never a partial object under the key.
pub struct Upload {
    store: Arc<dyn ObjectStore>,
    path: Path,
    url: String,
    mode: PutMode,
    threshold: usize,
    part: usize,
    in_flight: usize,
    /// Bytes not yet sent, in order.
    pending: Vec<Bytes>,
    pending_len: usize,
    multipart: Option<Multipart>,
}

/// A started multipart upload and its parts in flight.
struct Multipart {
    upload: Box<dyn MultipartUpload>,
    parts: JoinSet<object_store::Result<()>>,
}

impl std::fmt::Debug for Upload {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Upload")
            .field("url", &self.url)
            .field("multipart", &self.multipart.is_some())
            .finish_non_exhaustive()
    }
}

impl Upload {
    /// Starts writing the object at `path` of `store` (named `url` in messages) under `options`
    /// (threshold, part size and parts in flight).
    #[must_use]
    pub fn new<F>(
        store: Arc<dyn ObjectStore>,
        path: Path,
        url: impl Into<String>,
        mode: PutMode,
        options: &RemoteOptions<F>,
    ) -> Self {
        let threshold = match mode {
            PutMode::Update(_) => usize::MAX,
            _ => usize::try_from(options.multipart_threshold.max(1)).unwrap_or(usize::MAX),
        };
        Self {
            store,
            path,
            url: url.into(),
            mode,
            threshold,
            part: usize::try_from(options.part_size.max(1)).unwrap_or(usize::MAX),
            in_flight: options.in_flight(),
            pending: Vec::new(),
            pending_len: 0,
            multipart: None,
        }
    }

    fn error(&self, e: object_store::Error) -> Error {
        Error::from_store(self.url.clone(), e, Access::Write)
    }

    /// Appends `bytes` (not copied: parts are assembled from the pieces given).
    ///
    /// # Errors
    /// [`Error::Conflict`] if a create-only object turns out to exist when the multipart
    /// upload starts; [`Error::Remote`] for a failed part (the upload is then aborted).
    pub async fn write(&mut self, bytes: Bytes) -> Result<()> {
        if bytes.is_empty() {
            return Ok(());
        }
        self.pending_len = self.pending_len.saturating_add(bytes.len());
        self.pending.push(bytes);
        if self.multipart.is_none() {
            if self.pending_len < self.threshold {
                return Ok(());
            }
            if matches!(self.mode, PutMode::Create) {
                Self::refuse_existing(&self.store, &self.path, &self.url).await?;
            }
            let upload = self
                .store
                .put_multipart(&self.path)
                .await
                .map_err(|e| self.error(e))?;
            self.multipart = Some(Multipart {
                upload,
                parts: JoinSet::new(),
            });
        }
        while self.pending_len >= self.part {
            let part = self.take_part();
            self.send(part).await?;
        }
        Ok(())
    }

    /// The next `part` bytes of `pending` (all of it if shorter).
    fn take_part(&mut self) -> PutPayload {
        let mut want = self.part.min(self.pending_len);
        self.pending_len -= want;
        let mut out = Vec::new();
        while want > 0 && !self.pending.is_empty() {
            let first = &mut self.pending[0];
            if first.len() <= want {
                want -= first.len();
                out.push(self.pending.remove(0));
            } else {
                out.push(first.split_to(want));
                want = 0;
            }
        }
        out.into_iter().collect()
    }

    /// Sends one part once fewer than `in_flight` are in flight; aborts on failure.
    async fn send(&mut self, part: PutPayload) -> Result<()> {
        let in_flight = self.in_flight;
        let failed = match self.multipart.as_mut() {
            None => None,
            Some(mp) => {
                let mut failed = None;
                while mp.parts.len() >= in_flight && failed.is_none() {
                    failed = joined(mp.parts.join_next().await).err();
                }
                if failed.is_none() {
                    mp.parts.spawn(mp.upload.put_part(part));
                }
                failed
            }
        };
        match failed {
            Some(e) => {
                let e = self.error(e);
                self.abort().await;
                Err(e)
            }
            None => Ok(()),
        }
    }

    /// `Err(Conflict)` if the object exists. Borrows the fields it needs, not the `Upload`
    /// (which is `Send` but not `Sync`), so that the futures of `write` and `finish` stay `Send`.
    async fn refuse_existing(store: &Arc<dyn ObjectStore>, path: &Path, url: &str) -> Result<()> {
        match store.head(path).await {
            Ok(_) => Err(Error::Conflict {
                url: url.to_owned(),
            }),
            Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(e) => Err(Error::from_store(url, e, Access::Read)),
        }
    }

    /// Completes the object: the single `PUT`, or the last part, the wait for every part and
    /// the completion of the multipart upload.
    ///
    /// # Errors
    /// [`Error::Conflict`] for a lost condition; [`Error::Remote`] for a failed request (a
    /// multipart upload is then aborted).
    pub async fn finish(mut self) -> Result<()> {
        if self.multipart.is_some() {
            if self.pending_len > 0 {
                let part = self.take_part();
                self.send(part).await?;
            }
            let mut failed = None;
            if let Some(mp) = self.multipart.as_mut() {
                while let Some(r) = mp.parts.join_next().await {
                    if let Err(e) = joined(Some(r)) {
                        failed = Some(e);
                        break;
                    }
                }
                if failed.is_none()
                    && let Err(e) = mp.upload.complete().await
                {
                    failed = Some(e);
                }
            }
            return match failed {
                Some(e) => {
                    let e = self.error(e);
                    self.abort().await;
                    Err(e)
                }
                None => {
                    self.multipart = None;
                    Ok(())
                }
            };
        }
        let payload: PutPayload = std::mem::take(&mut self.pending).into_iter().collect();
        self.pending_len = 0;
        let opts = PutOptions {
            mode: self.mode.clone(),
            ..PutOptions::default()
        };
        match self.store.put_opts(&self.path, payload.clone(), opts).await {
            Ok(_) => Ok(()),
            Err(object_store::Error::NotImplemented { .. })
                if matches!(self.mode, PutMode::Create) =>
            {
                // No create-only put on this store: check, then put.
                Self::refuse_existing(&self.store, &self.path, &self.url).await?;
                self.store
                    .put(&self.path, payload)
                    .await
                    .map(drop)
                    .map_err(|e| self.error(e))
            }
            Err(e) => Err(self.error(e)),
        }
    }

    /// Abandons the object: the parts in flight are stopped and a multipart upload is aborted
    /// (its parts deleted); nothing appears under the key.
    pub async fn abort(&mut self) {
        self.pending.clear();
        self.pending_len = 0;
        if let Some(mut mp) = self.multipart.take() {
            mp.parts.shutdown().await;
            let _ = mp.upload.abort().await;
        }
    }
}

/// A part's result from [`JoinSet::join_next`] (a panicked or cancelled task is a failure).
fn joined(
    r: Option<Result<object_store::Result<()>, tokio::task::JoinError>>,
) -> object_store::Result<()> {
    match r {
        None | Some(Ok(Ok(()))) => Ok(()),
        Some(Ok(Err(e))) => Err(e),
        Some(Err(e)) => Err(object_store::Error::Generic {
            store: "upload",
            source: Box::new(e),
        }),
    }
}

impl Drop for Upload {
    fn drop(&mut self) {
        // Unfinished (an error or a panic elsewhere, a dropped task): abort the multipart
        // upload so that no parts linger. The key never showed the object either way.
        if let Some(mut mp) = self.multipart.take() {
            mp.parts.abort_all();
            let abort = async move {
                let _ = mp.upload.abort().await;
            };
            match tokio::runtime::Handle::try_current() {
                Ok(h) => drop(h.spawn(abort)),
                Err(_) => {
                    let _ = crate::remote::runtime::block_on(abort);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "a failed unwrap is a failed test")]

    use object_store::memory::InMemory;

    use super::*;
    use crate::remote::runtime::block_on;

    /// The futures can be spawned on multi-threaded runtimes (checked at compile time).
    #[test]
    fn futures_are_send() {
        fn assert_send<T: Send>(_: &T) {}
        fn check(store: Arc<dyn ObjectStore>, mut u: Upload, o: &RemoteOptions) {
            let p = Path::from("x");
            assert_send(&put(store, p, "x", Bytes::new(), PutMode::Create, o));
            assert_send(&u.write(Bytes::new()));
            assert_send(&u.finish());
        }
        let _ = check;
    }

    #[test]
    fn small_objects_are_one_put_large_ones_multipart_and_create_only_holds() {
        let mem: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
        let o = RemoteOptions::<()>::default().with_multipart(100, 40);
        let data: Vec<u8> = (0..250u8).collect();
        for (key, len) in [("small", 99usize), ("large", 250)] {
            let mut u = Upload::new(mem.clone(), Path::from(key), key, PutMode::Create, &o);
            for c in data[..len].chunks(7) {
                block_on(u.write(Bytes::copy_from_slice(c)))
                    .unwrap()
                    .unwrap();
            }
            block_on(u.finish()).unwrap().unwrap();
            let got = block_on(async { mem.get(&Path::from(key)).await?.bytes().await })
                .unwrap()
                .unwrap();
            assert_eq!(got, data[..len]);
            // Create-only again: refused, the object unchanged.
            let again = block_on(put(
                mem.clone(),
                Path::from(key),
                key,
                Bytes::from(vec![0u8; len]),
                PutMode::Create,
                &o,
            ))
            .unwrap();
            assert!(matches!(again, Err(Error::Conflict { .. })), "{again:?}");
        }
        // A dropped, unfinished multipart upload leaves nothing under the key.
        let mut u = Upload::new(
            mem.clone(),
            Path::from("gone"),
            "gone",
            PutMode::Overwrite,
            &o,
        );
        block_on(u.write(Bytes::from(vec![1u8; 150])))
            .unwrap()
            .unwrap();
        drop(u);
        assert!(matches!(
            block_on(mem.head(&Path::from("gone"))).unwrap(),
            Err(object_store::Error::NotFound { .. })
        ));
    }
}
