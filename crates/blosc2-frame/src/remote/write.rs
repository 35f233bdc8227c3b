//! Writing frames to object stores, each object through [`scifmt_io::put`].

use std::sync::Arc;

use bytes::Bytes;
use futures::{StreamExt, TryStreamExt, stream};
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt, PutMode};

use super::{RemoteFrame, RemoteOptions};
use crate::error::{Error, Result};
use crate::reader::SPARSE_FRAME_FILE;
use crate::writer::FrameWriter;
use scifmt_io::{WriteMode, child, join_url, store_url};

impl RemoteFrame {
    /// Writes `writer`'s contiguous frame to `path` as [`scifmt_io::Upload`] does: one `PUT`
    /// below [`RemoteOptions::multipart_threshold`], from it on a multipart upload of
    /// [`RemoteOptions::part_size`] parts (up to [`RemoteOptions::concurrency`] in flight).
    /// Either way the object appears whole or not at all (a failed multipart upload is
    /// aborted). [`RemoteOptions::write_mode`] chooses overwrite or create-only.
    ///
    /// The frame is built in memory first (as [`FrameWriter::to_bytes`]).
    ///
    /// # Errors
    /// [`Error::Conflict`] when [`WriteMode::Conditional`] finds an object, [`Error::Remote`] for
    /// failed requests, or as [`FrameWriter::to_bytes`].
    pub async fn put(
        store: Arc<dyn ObjectStore>,
        path: &Path,
        writer: &FrameWriter,
        options: &RemoteOptions,
    ) -> Result<()> {
        let url = store_url(store.as_ref(), path);
        let bytes = Bytes::from(writer.to_bytes()?);
        put_bytes(store, path.clone(), url, bytes, options).await
    }

    /// [`RemoteFrame::put`] to an object-store URL (configured as in
    /// [`RemoteFrame::open_url`]).
    ///
    /// # Errors
    /// As [`RemoteFrame::put`] and [`RemoteFrame::open_url`].
    pub async fn put_url(url: &str, writer: &FrameWriter, options: &RemoteOptions) -> Result<()> {
        let s = scifmt_io::store_for_url(url, &[])?;
        put_bytes(
            s.store,
            s.path,
            s.url,
            Bytes::from(writer.to_bytes()?),
            options,
        )
        .await
    }

    /// Writes `writer` as a sparse frame under the prefix `dir`: the chunk files
    /// (`%08X.chunk`, numbered above every chunk file already under `dir`, so no file an
    /// existing index references is overwritten), then `dir/chunks.b2frame`, then deletes the
    /// chunk files the old index used. A reader opening the frame meanwhile sees the old or
    /// the new frame; one that opened the old frame before and reads a deleted chunk file
    /// afterwards gets a not-found error, never a chunk of the new frame.
    ///
    /// # Errors
    /// [`Error::Conflict`] when [`WriteMode::Conditional`] finds `dir/chunks.b2frame` (checked before
    /// anything is written, and again by the conditional put of the index), [`Error::Remote`]
    /// for failed requests, or as [`FrameWriter::to_bytes`].
    pub async fn put_sparse(
        store: Arc<dyn ObjectStore>,
        dir: &Path,
        writer: &FrameWriter,
        options: &RemoteOptions,
    ) -> Result<()> {
        let dir_url = store_url(store.as_ref(), dir);
        let listing_error = |source| Error::Remote {
            url: dir_url.clone(),
            source,
        };
        let mut old: Vec<u64> = Vec::new();
        let mut has_index = false;
        let mut listing = store.list(Some(dir));
        while let Some(meta) = listing.next().await {
            let meta = meta.map_err(listing_error)?;
            // Only direct children of `dir`.
            if meta.location.prefix_match(dir).map(Iterator::count) != Some(1) {
                continue;
            }
            match meta.location.filename() {
                Some(SPARSE_FRAME_FILE) => has_index = true,
                Some(name) => {
                    if let Some(hex) = name.strip_suffix(".chunk")
                        && hex.len() == 8
                        && let Ok(n) = u64::from_str_radix(hex, 16)
                    {
                        old.push(n);
                    }
                }
                None => {}
            }
        }
        drop(listing);
        if has_index && options.write_mode == WriteMode::Conditional {
            return Err(Error::Conflict {
                url: join_url(&dir_url, SPARSE_FRAME_FILE),
            });
        }
        let first = old.iter().max().map_or(0, |m| m + 1);
        let (files, index) = writer.sparse_parts(first)?;
        let plain = options.clone().with_write_mode(WriteMode::Overwrite);
        let (store_ref, dir_url_ref, plain_ref, files_ref) = (&store, &dir_url, &plain, &files);
        // Indices, not borrowed items, keep the future `Send`; each chunk is copied into its
        // request body only when its upload starts.
        stream::iter(0..files.len())
            .map(|k| {
                let (n, chunk) = files_ref[k];
                let body = Bytes::copy_from_slice(chunk);
                let name = format!("{n:08X}.chunk");
                let (path, url) = (child(dir, &name), join_url(dir_url_ref, &name));
                put_bytes(Arc::clone(store_ref), path, url, body, plain_ref)
            })
            .buffer_unordered(options.in_flight())
            .try_collect::<Vec<()>>()
            .await?;
        put_bytes(
            Arc::clone(&store),
            child(dir, SPARSE_FRAME_FILE),
            join_url(&dir_url, SPARSE_FRAME_FILE),
            Bytes::from(index),
            options,
        )
        .await?;
        stream::iter(old)
            .map(|n| {
                let name = format!("{n:08X}.chunk");
                let (path, url) = (child(dir, &name), join_url(dir_url_ref, &name));
                async move {
                    match store_ref.delete(&path).await {
                        Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
                        Err(source) => Err(Error::Remote { url, source }),
                    }
                }
            })
            .buffer_unordered(options.in_flight())
            .try_collect::<Vec<()>>()
            .await?;
        Ok(())
    }
}

/// Uploads `bytes` to `path` of `store` (named `url` in messages) with [`scifmt_io::put`]:
/// create-only under [`WriteMode::Conditional`], else overwriting.
async fn put_bytes(
    store: Arc<dyn ObjectStore>,
    path: Path,
    url: String,
    bytes: Bytes,
    options: &RemoteOptions,
) -> Result<()> {
    let mode = match options.write_mode {
        WriteMode::Conditional => PutMode::Create,
        _ => PutMode::Overwrite,
    };
    Ok(scifmt_io::put(store, path, url, bytes, mode, options).await?)
}
