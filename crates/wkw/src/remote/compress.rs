//! Whole-dataset work file by file through local scratch space: `compress_to` (a converted
//! copy) and `verify`.

use std::path::{Path as FsPath, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use futures::{StreamExt, TryStreamExt};
use object_store::path::Path;
use object_store::{ObjectStore, PutMode};
use scifmt_io::store_url;

use super::RemoteDataset;
use super::scratch::{Scratch, relabel, tokio_free_read};
use crate::dataset::compress::{FileReport, Progress, VerifyReport, convert_file, verify_file};
use crate::error::{Error, Result};
use crate::format::header::BlockType;
#[cfg(doc)]
use crate::options::Options;

impl RemoteDataset {
    /// Converts every data file into a new dataset at `dst_prefix` of `dst_store` with
    /// `block_type`, like [`crate::compress`] (every block written, corrupt source files are
    /// errors). Files are converted concurrently on local scratch space and uploaded whole;
    /// `progress` is called after each (its path is the source file's URL). The source or the
    /// destination may be a local directory through `object_store::local::LocalFileSystem`
    /// (or a `file://` URL).
    ///
    /// The destination must be apart from this dataset: in another store, or at a prefix that
    /// is neither this dataset's nor inside it nor around it (stores are the same when they
    /// are one object or show the same place, e.g. `AmazonS3(bucket)`).
    ///
    /// # Errors
    /// [`Error::Overlap`] if the destination is this dataset, lies inside it or contains it;
    /// [`Error::AlreadyExists`] if the destination is a dataset already; any read error of a
    /// source file; [`Error::Remote`]; [`Error::Io`] for the scratch space.
    pub async fn compress_to(
        &self,
        dst_store: Arc<dyn ObjectStore>,
        dst_prefix: Path,
        block_type: BlockType,
        progress: &(dyn Fn(Progress<'_>) + Sync),
    ) -> Result<RemoteDataset> {
        // One object, or two clients of one place (`AmazonS3(bucket)`); two in-memory stores,
        // which show no place, are two stores.
        let name = self.inner.store.to_string();
        let same_store = Arc::ptr_eq(&self.inner.store, &dst_store)
            || (name != "InMemory" && name == dst_store.to_string());
        if same_store {
            let (src, dst) = (&self.inner.prefix, &dst_prefix);
            let how = if src == dst {
                Some(scifmt_io::Overlap::Same)
            } else if dst.prefix_matches(src) {
                Some(scifmt_io::Overlap::OutputInsideInput)
            } else if src.prefix_matches(dst) {
                Some(scifmt_io::Overlap::InputInsideOutput)
            } else {
                None
            };
            if let Some(how) = how {
                return Err(Error::Overlap {
                    input: self.inner.url.clone(),
                    output: store_url(dst_store.as_ref(), &dst_prefix),
                    how,
                });
            }
        }
        let header = self.header().with_block_type(block_type);
        let target =
            Self::create(dst_store, dst_prefix, header, self.inner.options.clone()).await?;
        self.compress_into(&target, progress).await?;
        Ok(target)
    }

    /// [`RemoteDataset::compress_to`] to a URL (see [`RemoteDataset::open_url`]). The URLs are
    /// compared by store and normalised key prefix (`file://` URLs as local paths, by
    /// identity: symlinks and `..` are seen through), see `scifmt_io::ensure_apart`.
    ///
    /// # Errors
    /// As [`RemoteDataset::compress_to`].
    pub async fn compress_to_url(
        &self,
        dst_url: &str,
        block_type: BlockType,
        progress: &(dyn Fn(Progress<'_>) + Sync),
    ) -> Result<RemoteDataset> {
        scifmt_io::ensure_apart(
            std::path::Path::new(&self.inner.url),
            std::path::Path::new(dst_url),
        )?;
        let header = self.header().with_block_type(block_type);
        let target = Self::create_url(dst_url, header, self.inner.options.clone()).await?;
        self.compress_into(&target, progress).await?;
        Ok(target)
    }

    async fn compress_into(
        &self,
        target: &RemoteDataset,
        progress: &(dyn Fn(Progress<'_>) + Sync),
    ) -> Result<()> {
        let files = self.list_files().await?;
        let total = files.len();
        let done = AtomicUsize::new(0);
        let src = Scratch::new(self.header(), &self.inner.options.format.dataset)?;
        let dst = Scratch::new(target.header(), &target.inner.options.format.dataset)?;
        let (src, dst, done) = (&src, &dst, &done);
        let cancel = &self.inner.options.format.dataset.cancel;
        futures::stream::iter(files)
            .map(|(idx, url)| async move {
                cancel.check()?;
                let local = src.ds.file_path(idx);
                let converted = dst.ds.file_path(idx);
                if self.download(idx, &local).await?.is_none() {
                    return Ok(());
                }
                let r = convert_file(&src.ds, &dst.ds, idx, &local).map_err(|e| {
                    relabel(relabel(e, &local, &url), &converted, &target.file_url(idx))
                });
                let _ = std::fs::remove_file(&local);
                r?;
                let bytes = tokio_free_read(&converted)
                    .map_err(|e| relabel(e, &converted, &target.file_url(idx)))?;
                let _ = std::fs::remove_file(&converted);
                target.upload(idx, bytes, PutMode::Overwrite).await?;
                let d = done.fetch_add(1, Ordering::Relaxed) + 1;
                progress(Progress {
                    done: d,
                    total,
                    path: FsPath::new(&url),
                });
                Ok::<(), Error>(())
            })
            .buffer_unordered(self.inner.options.format.file_concurrency.max(1))
            .try_collect::<Vec<()>>()
            .await?;
        Ok(())
    }

    /// Checks every data file like [`crate::verify`]: each is downloaded whole (to local
    /// scratch space, one at a time per concurrent request) and checked; `progress` is called
    /// after each. The report's paths are the files' URLs.
    ///
    /// # Errors
    /// Only for problems with the dataset itself (listing fails, no scratch space) and
    /// [`Error::Cancelled`] ([`Options::cancel`] is checked before each file and block); file
    /// problems, including failed downloads, are reported in the [`VerifyReport`].
    pub async fn verify(&self, progress: &(dyn Fn(Progress<'_>) + Sync)) -> Result<VerifyReport> {
        let files = self.list_files().await?;
        let total = files.len();
        let done = AtomicUsize::new(0);
        let scratch = Scratch::new(self.header(), &self.inner.options.format.dataset)?;
        let (scratch, done) = (&scratch, &done);
        let cancel = &self.inner.options.format.dataset.cancel;
        let files = futures::stream::iter(files)
            .map(|(index, url)| async move {
                cancel.check()?;
                let local = scratch.ds.file_path(index);
                let problem = match self.download(index, &local).await {
                    Ok(Some(_)) => match verify_file(&scratch.ds, &local) {
                        Err(Error::Cancelled) => {
                            let _ = std::fs::remove_file(&local);
                            return Err(Error::Cancelled);
                        }
                        r => r.map_err(|e| relabel(e, &local, &url)).err(),
                    },
                    Ok(None) => Some(Error::Remote {
                        url: url.clone(),
                        source: object_store::Error::NotFound {
                            path: self.file_location(index).to_string(),
                            source: "listed but gone".into(),
                        },
                    }),
                    Err(e) => Some(e),
                };
                let _ = std::fs::remove_file(&local);
                let path = PathBuf::from(&url);
                let d = done.fetch_add(1, Ordering::Relaxed) + 1;
                progress(Progress {
                    done: d,
                    total,
                    path: &path,
                });
                Ok(FileReport {
                    path,
                    index,
                    problem,
                })
            })
            .buffered(self.inner.options.format.file_concurrency.max(1))
            .try_collect()
            .await?;
        Ok(VerifyReport { files })
    }
}
