//! Writing frames to object stores.

use std::sync::Arc;

use bytes::Bytes;
use futures::{StreamExt, TryStreamExt, stream};
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt, PutMode, PutOptions, PutPayload};

use super::fetch::{Location, store_for_url};
use super::{RemoteFrame, RemoteOptions};
use crate::error::{Error, Result};
use crate::reader::SPARSE_FRAME_FILE;
use crate::writer::FrameWriter;
use scifmt_io::{Access, WriteMode};

impl RemoteFrame {
    /// Writes `writer`'s contiguous frame to `path`: one `PUT` below
    /// [`RemoteOptions::multipart_threshold`], a multipart upload of
    /// [`RemoteOptions::part_size`] parts (up to [`RemoteOptions::concurrency`] in flight)
    /// above it. Either way the object appears whole or not at all (a failed multipart upload
    /// is aborted). [`RemoteOptions::write_mode`] chooses overwrite or create-only.
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
        let loc = Location::from_store(store);
        put_bytes(&loc, path, Bytes::from(writer.to_bytes()?), options).await
    }

    /// [`RemoteFrame::put`] to an object-store URL (configured as in
    /// [`RemoteFrame::open_url`]).
    ///
    /// # Errors
    /// As [`RemoteFrame::put`] and [`RemoteFrame::open_url`].
    pub async fn put_url(url: &str, writer: &FrameWriter, options: &RemoteOptions) -> Result<()> {
        let (loc, path) = store_for_url(url)?;
        put_bytes(&loc, &path, Bytes::from(writer.to_bytes()?), options).await
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
        let loc = Location::from_store(store);
        let index_path = dir.clone().join(SPARSE_FRAME_FILE);
        let mut old: Vec<u64> = Vec::new();
        let mut has_index = false;
        let mut listing = loc.store.list(Some(dir));
        while let Some(meta) = listing.next().await {
            let meta = meta.map_err(|e| loc.err(dir, e))?;
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
                url: loc.url(&index_path),
            });
        }
        let first = old.iter().max().map_or(0, |m| m + 1);
        let (files, index) = writer.sparse_parts(first)?;
        let plain = options.clone().with_write_mode(WriteMode::Overwrite);
        let loc_ref = &loc;
        let plain_ref = &plain;
        let files_ref = &files;
        // Indices, not borrowed items, keep the future `Send`; each chunk is copied into its
        // request body only when its upload starts.
        stream::iter(0..files.len())
            .map(|k| {
                let (n, chunk) = files_ref[k];
                let body = Bytes::copy_from_slice(chunk);
                async move {
                    let path = dir.clone().join(format!("{n:08X}.chunk"));
                    put_bytes(loc_ref, &path, body, plain_ref).await
                }
            })
            .buffer_unordered(options.in_flight())
            .try_collect::<Vec<()>>()
            .await?;
        put_bytes(&loc, &index_path, Bytes::from(index), options).await?;
        stream::iter(old)
            .map(|n| {
                let path = dir.clone().join(format!("{n:08X}.chunk"));
                let loc = loc_ref;
                async move {
                    match loc.store.delete(&path).await {
                        Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
                        Err(e) => Err(loc.err(&path, e)),
                    }
                }
            })
            .buffer_unordered(options.in_flight())
            .try_collect::<Vec<()>>()
            .await?;
        Ok(())
    }
}

/// Uploads `bytes` to `path` (single or multipart put, as [`RemoteFrame::put`] documents).
pub(crate) async fn put_bytes(
    loc: &Location,
    path: &Path,
    bytes: Bytes,
    options: &RemoteOptions,
) -> Result<()> {
    let conflict = |e: object_store::Error| {
        Error::from(scifmt_io::Error::from_store(
            loc.url(path),
            e,
            Access::Write,
        ))
    };
    if (bytes.len() as u64) < options.multipart_threshold.max(1) {
        let mode = match options.write_mode {
            WriteMode::Conditional => PutMode::Create,
            _ => PutMode::Overwrite,
        };
        let opts = PutOptions {
            mode,
            ..PutOptions::default()
        };
        loc.store
            .put_opts(path, PutPayload::from(bytes), opts)
            .await
            .map_err(conflict)?;
        return Ok(());
    }
    if options.write_mode == WriteMode::Conditional {
        match loc.store.head(path).await {
            Ok(_) => return Err(Error::Conflict { url: loc.url(path) }),
            Err(object_store::Error::NotFound { .. }) => {}
            Err(e) => return Err(loc.err(path, e)),
        }
    }
    let part = usize::try_from(options.part_size.max(1)).unwrap_or(usize::MAX);
    let mut upload = loc
        .store
        .put_multipart(path)
        .await
        .map_err(|e| loc.err(path, e))?;
    let parts: Vec<Bytes> = (0..bytes.len())
        .step_by(part)
        .map(|s| bytes.slice(s..bytes.len().min(s + part)))
        .collect();
    let sent = stream::iter(parts)
        .map(|p| upload.put_part(PutPayload::from(p)))
        .buffer_unordered(options.in_flight())
        .try_collect::<Vec<()>>()
        .await;
    let done = match sent {
        Ok(_) => upload.complete().await.map(|_| ()),
        Err(e) => Err(e),
    };
    if let Err(e) = done {
        // Leave no parts behind; the upload's error is the one to report.
        let _ = upload.abort().await;
        return Err(conflict(e));
    }
    Ok(())
}
