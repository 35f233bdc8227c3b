//! Writing boxes: every touched file is downloaded, rebuilt on local scratch space like a
//! local write, and uploaded whole with a conditional put (redone when another writer won).

use std::sync::Arc;

use bytes::Bytes;
use futures::{StreamExt, TryStreamExt};
use object_store::PutMode;
use scifmt_io::{WriteMode, conflict_backoff};

use super::scratch::{Scratch, relabel, tokio_free_read};
use super::{RemoteDataset, RemoteOptions};
use crate::dataset::array::ArrayView;
#[cfg(doc)]
use crate::dataset::root::Dataset;
use crate::error::{Error, Result};
use crate::format::geometry::{VBox, files_in};
use crate::kernels::par::Workers;
#[cfg(doc)]
use crate::options::MissingOrCorrupt;

impl RemoteDataset {
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
            match self.upload(idx, bytes, mode).await {
                Ok(()) => {
                    let _ = std::fs::remove_file(&local_path);
                    return Ok(());
                }
                Err(scifmt_io::Error::Conflict { .. })
                    if attempt < inner.options.conflict_retries =>
                {
                    attempt += 1;
                    tokio::time::sleep(conflict_backoff(attempt)).await;
                }
                Err(scifmt_io::Error::Conflict { .. }) => {
                    let _ = std::fs::remove_file(&local_path);
                    return Err(Error::Conflict { url });
                }
                Err(e) => return Err(e.into()),
            }
        }
    }

    /// Uploads `bytes` as data file `idx` with [`scifmt_io::put`] in `mode`: conditional puts
    /// (`Update`, `Create`) as one `PUT`, unconditional ones from the multipart threshold on as
    /// a multipart upload, aborted if it fails.
    pub(super) async fn upload(
        &self,
        idx: [u32; 3],
        bytes: Bytes,
        mode: PutMode,
    ) -> std::result::Result<(), scifmt_io::Error> {
        scifmt_io::put(
            Arc::clone(&self.inner.store),
            self.file_location(idx),
            self.file_url(idx),
            bytes,
            mode.clone(),
            &put_options(&self.inner.options, &mode),
        )
        .await
    }
}

/// The request options of a put in `mode`: a conditional put stays one request, whatever its
/// size. A multipart upload cannot be conditional (a create-only one is only checked by a
/// `HEAD` before it starts), and two writers creating one file could both pass that check:
/// the one-request put keeps the guarantee that no update is lost.
pub(super) fn put_options(options: &RemoteOptions, mode: &PutMode) -> scifmt_io::RemoteOptions {
    let shared = options.shared();
    match mode {
        PutMode::Overwrite => shared,
        _ => shared.with_multipart(u64::MAX, options.part_size),
    }
}
