//! [`BlockingRemoteDataset`]: the remote API for callers without an async runtime.

use std::sync::Arc;

use object_store::ObjectStore;
use object_store::path::Path;

use super::{RemoteDataset, RemoteOptions};
use crate::dataset::array::{Array, ArrayView, ArrayViewMut, Order};
use crate::dataset::compress::{Progress, VerifyReport};
#[cfg(doc)]
use crate::error::Error;
use crate::error::Result;
use crate::format::header::{BlockType, Header};

/// A [`RemoteDataset`] with blocking methods: every call runs on the process-wide runtime of
/// [`scifmt_io::runtime`] (two I/O threads, started on first use, shared by every blocking
/// dataset, frame and array of the scifmt crates, so objects sharing one store never stall);
/// block decoding still runs in parallel on rayon.
///
/// Its methods must not be called from inside a tokio runtime (an async context would block
/// its worker): they return [`Error::InvalidArgument`] there; use [`RemoteDataset`] instead.
#[derive(Debug)]
pub struct BlockingRemoteDataset {
    inner: RemoteDataset,
}

impl BlockingRemoteDataset {
    fn run<F: std::future::Future>(&self, f: F) -> Result<F::Output> {
        Ok(scifmt_io::block_on(f)?)
    }

    fn build(make: impl AsyncFnOnce() -> Result<RemoteDataset>) -> Result<Self> {
        let inner = scifmt_io::block_on(make())??;
        Ok(Self { inner })
    }

    /// [`RemoteDataset::open`], blocking.
    ///
    /// # Errors
    /// As [`RemoteDataset::open`]; [`Error::InvalidArgument`] inside a tokio runtime.
    pub fn open(store: Arc<dyn ObjectStore>, prefix: Path, options: RemoteOptions) -> Result<Self> {
        Self::build(async || RemoteDataset::open(store, prefix, options).await)
    }

    /// [`RemoteDataset::open_url`], blocking.
    ///
    /// # Errors
    /// As [`RemoteDataset::open_url`]; [`Error::InvalidArgument`] inside a tokio runtime.
    pub fn open_url(url: &str, options: RemoteOptions) -> Result<Self> {
        Self::build(async || RemoteDataset::open_url(url, options).await)
    }

    /// [`RemoteDataset::open_url_with_config`], blocking.
    ///
    /// # Errors
    /// As [`RemoteDataset::open_url`]; [`Error::InvalidArgument`] inside a tokio runtime.
    pub fn open_url_with_config(
        url: &str,
        config: &[(String, String)],
        options: RemoteOptions,
    ) -> Result<Self> {
        Self::build(async || RemoteDataset::open_url_with_config(url, config, options).await)
    }

    /// [`RemoteDataset::create`], blocking.
    ///
    /// # Errors
    /// As [`RemoteDataset::create`]; [`Error::InvalidArgument`] inside a tokio runtime.
    pub fn create(
        store: Arc<dyn ObjectStore>,
        prefix: Path,
        header: Header,
        options: RemoteOptions,
    ) -> Result<Self> {
        Self::build(async || RemoteDataset::create(store, prefix, header, options).await)
    }

    /// [`RemoteDataset::create_url`], blocking.
    ///
    /// # Errors
    /// As [`RemoteDataset::create_url`]; [`Error::InvalidArgument`] inside a tokio runtime.
    pub fn create_url(url: &str, header: Header, options: RemoteOptions) -> Result<Self> {
        Self::build(async || RemoteDataset::create_url(url, header, options).await)
    }

    /// [`RemoteDataset::create_url_with_config`], blocking.
    ///
    /// # Errors
    /// As [`RemoteDataset::create_url`]; [`Error::InvalidArgument`] inside a tokio runtime.
    pub fn create_url_with_config(
        url: &str,
        config: &[(String, String)],
        header: Header,
        options: RemoteOptions,
    ) -> Result<Self> {
        Self::build(async || {
            RemoteDataset::create_url_with_config(url, config, header, options).await
        })
    }

    /// The async dataset (sharing the metadata cache), for use on another runtime.
    #[must_use]
    pub fn as_async(&self) -> &RemoteDataset {
        &self.inner
    }

    /// The dataset header.
    #[must_use]
    pub fn header(&self) -> &Header {
        self.inner.header()
    }

    /// The dataset's URL as used in messages.
    #[must_use]
    pub fn url(&self) -> &str {
        self.inner.url()
    }

    /// [`RemoteDataset::list_files`], blocking.
    ///
    /// # Errors
    /// As [`RemoteDataset::list_files`].
    pub fn list_files(&self) -> Result<Vec<([u32; 3], String)>> {
        self.run(self.inner.list_files())?
    }

    /// [`RemoteDataset::read`], blocking.
    ///
    /// # Errors
    /// As [`RemoteDataset::read`].
    pub fn read(&self, offset: [u32; 3], shape: [u32; 3], order: Order) -> Result<Array> {
        self.run(self.inner.read(offset, shape, order))?
    }

    /// [`RemoteDataset::read_into`], blocking.
    ///
    /// # Errors
    /// As [`RemoteDataset::read_into`].
    pub fn read_into(&self, offset: [u32; 3], dst: &mut ArrayViewMut<'_>) -> Result<()> {
        self.run(self.inner.read_into(offset, dst))?
    }

    /// [`RemoteDataset::write`], blocking.
    ///
    /// # Errors
    /// As [`RemoteDataset::write`].
    pub fn write(&self, offset: [u32; 3], data: &ArrayView<'_>) -> Result<()> {
        self.run(self.inner.write(offset, data))?
    }

    /// [`RemoteDataset::compress_to_url`], blocking.
    ///
    /// # Errors
    /// As [`RemoteDataset::compress_to_url`].
    pub fn compress_to_url(
        &self,
        dst_url: &str,
        block_type: BlockType,
        progress: &(dyn Fn(Progress<'_>) + Sync),
    ) -> Result<RemoteDataset> {
        self.run(self.inner.compress_to_url(dst_url, block_type, progress))?
    }

    /// [`RemoteDataset::compress_to`], blocking.
    ///
    /// # Errors
    /// As [`RemoteDataset::compress_to`].
    pub fn compress_to(
        &self,
        dst_store: Arc<dyn ObjectStore>,
        dst_prefix: Path,
        block_type: BlockType,
        progress: &(dyn Fn(Progress<'_>) + Sync),
    ) -> Result<RemoteDataset> {
        self.run(
            self.inner
                .compress_to(dst_store, dst_prefix, block_type, progress),
        )?
    }

    /// [`RemoteDataset::verify`], blocking.
    ///
    /// # Errors
    /// As [`RemoteDataset::verify`].
    pub fn verify(&self, progress: &(dyn Fn(Progress<'_>) + Sync)) -> Result<VerifyReport> {
        self.run(self.inner.verify(progress))?
    }
}
