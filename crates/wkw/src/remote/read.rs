//! Reading: the data files below the prefix, and boxes (every touched file's header and jump
//! table, cached by ETag, then the byte ranges of its blocks, pinned to the header's version).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use bytes::Bytes;
use futures::{StreamExt, TryStreamExt};
use object_store::GetRange;
use object_store::path::PathPart;
use scifmt_io::{Object, Prefetched, ReadAt};

use super::plan::{beyond, schedule};
use super::{RemoteDataset, RemoteOptions};
use crate::dataset::array::{Array, ArrayViewMut, Order};
#[cfg(doc)]
use crate::dataset::root::Dataset;
use crate::dataset::root::Resolved;
use crate::error::{Error, Result};
use crate::format::file::{FileMeta, OpenFailure};
use crate::format::geometry::{VBox, blocks_in, files_in};
use crate::format::header::Header;
use crate::format::tree::parse_index;
use crate::options::MissingOrCorrupt;
#[cfg(doc)]
use crate::options::Options;

/// The metadata of one data file as fetched (or cached).
enum Head {
    /// No object; or unreadable under [`MissingOrCorrupt::Zeros`].
    Zeros,
    Present {
        meta: Arc<FileMeta>,
        /// The file, pinned to the version the metadata belongs to (unless the store reports
        /// no ETags).
        object: Object,
        /// Bytes fetched with the metadata (the start of the object).
        fetched: Prefetched,
    },
}

/// Why fetching a file's blocks stopped.
enum BlockFailure {
    /// The object changed (or vanished) since its metadata was fetched.
    Changed,
    Err(Error),
}

/// The first `want` bytes of `object` (all of it if shorter) and its length, pinning `object`
/// to the version read; `None` if there is no object.
///
/// # Errors
/// As [`Object::get`].
pub(super) async fn read_start(
    object: &Object,
    want: u64,
    options: &RemoteOptions,
) -> Result<Option<Prefetched>> {
    match object
        .get(Some(GetRange::Bounded(0..want)), want, options)
        .await
    {
        Ok(Some(r)) => {
            let mut p = Prefetched::new(r.meta.size);
            p.insert(r.range.start, r.bytes);
            Ok(Some(p))
        }
        Ok(None) => Ok(None),
        Err(e) => {
            // An empty object cannot answer a range request (HTTP 416): it is a file
            // truncated before its header, subject to the missing/corrupt policy.
            if let Ok(Some(m)) = object.head().await
                && m.size == 0
            {
                return Ok(Some(Prefetched::new(0)));
            }
            Err(e.into())
        }
    }
}

impl RemoteDataset {
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
                object,
                fetched,
            } = head
            {
                planned.push((
                    idx,
                    object.clone(),
                    self.plan(idx, bx, &meta, fetched.contiguous_len())?,
                ));
                present.insert(idx, (meta, fetched));
            }
        }
        let o = &self.inner.options;
        let (keys, ranges): (Vec<_>, Vec<_>) =
            planned.into_iter().map(|(i, e, r)| ((i, e), r)).unzip();
        let ranges = schedule(o, ranges);
        let mut requests = Vec::new();
        for ((idx, object), rs) in keys.into_iter().zip(ranges) {
            for r in rs {
                requests.push((idx, r, object.clone()));
            }
        }
        let results: Vec<_> = futures::stream::iter(requests)
            .map(|(idx, r, object)| async move { (idx, self.fetch_range(&object, r).await) })
            .buffer_unordered(conc)
            .collect()
            .await;
        let mut changed = Vec::new();
        for (idx, res) in results {
            match res {
                Ok((start, bytes)) => {
                    if let Some((_, f)) = present.get_mut(&idx) {
                        f.insert(start, bytes);
                    }
                }
                Err(BlockFailure::Changed) => changed.push(idx),
                Err(BlockFailure::Err(e)) => return Err(e),
            }
        }
        changed.sort_unstable();
        changed.dedup();
        let mut files = HashMap::new();
        for (idx, (meta, fetched)) in present {
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
                    object,
                    mut fetched,
                } => {
                    let o = &self.inner.options;
                    let plan = self.plan(idx, bx, &meta, fetched.contiguous_len())?;
                    let plan = schedule(o, vec![plan]).into_iter().flatten();
                    let object = &object;
                    let got: Vec<_> = futures::stream::iter(plan)
                        .map(|r| self.fetch_range(object, r))
                        .buffer_unordered(conc)
                        .collect()
                        .await;
                    for g in got {
                        match g {
                            Ok((start, bytes)) => fetched.insert(start, bytes),
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

    fn resolved(&self, idx: [u32; 3], meta: Arc<FileMeta>, fetched: Prefetched) -> Resolved {
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
            return Ok(Head::Present {
                fetched: Prefetched::new(meta.len),
                object: self.file_object(idx).with_etag(Some(etag)),
                meta,
            });
        }
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
        // Pinned by the response: the blocks are read from the version the header came from.
        let object = self.file_object(idx);
        let Some(mut fetched) = read_start(&object, want, &inner.options).await? else {
            return Ok(Head::Zeros);
        };
        // A file whose own header (HeaderCheck::Lenient) has a longer jump table than the
        // dataset's: fetch the rest.
        let have = fetched.contiguous_len();
        let mut first = [0u8; 16];
        if fetched.read_exact_at(&mut first, 0).is_ok()
            && let Ok(fh) = Header::parse(&first)
            && fh.block_type().is_compressed()
        {
            let need = fh
                .blocks_per_file()
                .min(inner.options.format.dataset.limits.max_blocks_per_file)
                .saturating_mul(8)
                .saturating_add(16)
                .min(fetched.len());
            if need > have {
                match self.fetch_range(&object, (have, need)).await {
                    Ok((s, b)) => fetched.insert(s, b),
                    Err(BlockFailure::Changed) => {
                        return Box::pin(self.head(idx, false, false)).await;
                    }
                    Err(BlockFailure::Err(e)) => return Err(e),
                }
            }
        }
        self.parse_head(idx, object, fetched)
    }

    /// Parses and checks the fetched start of file `idx` (caching the result under the ETag
    /// `object` is pinned to).
    fn parse_head(&self, idx: [u32; 3], object: Object, fetched: Prefetched) -> Result<Head> {
        let inner = &self.inner;
        let path = PathBuf::from(self.file_url(idx));
        match FileMeta::parse(&fetched, &inner.options.format.dataset.limits, &path) {
            Ok(meta) => {
                let meta = Arc::new(meta);
                inner.local.check_file_header(&meta.header, &path)?;
                inner
                    .cache
                    .put(idx, object.etag().map(str::to_owned), &meta);
                Ok(Head::Present {
                    meta,
                    object,
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

    /// Fetches bytes `[start, end)` of a data file, of the version `object` is pinned to.
    async fn fetch_range(
        &self,
        object: &Object,
        (start, end): (u64, u64),
    ) -> Result<(u64, Bytes), BlockFailure> {
        match object.get_range(start..end, &self.inner.options).await {
            Ok(Some(bytes)) => Ok((start, bytes)),
            // Replaced, or gone (`None`: there is no object, and no ETag was ever seen).
            Ok(None) | Err(scifmt_io::Error::Changed { .. }) => Err(BlockFailure::Changed),
            Err(e) => Err(BlockFailure::Err(e.into())),
        }
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
