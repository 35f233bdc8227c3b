//! Blocking wrappers for callers without an async runtime.

use std::sync::Arc;

use object_store::ObjectStore;
use object_store::path::Path;

use tokio::runtime::Runtime;

use super::{RemoteB2nd, RemoteFrame, RemoteOptions};
use crate::b2nd::B2ndMeta;
use crate::element::Element;
#[cfg(doc)]
use crate::error::Error;
use crate::error::Result;
use crate::header::FrameHeader;
use crate::offsets::ChunkLocation;
use crate::reader::Layer;
use crate::writer::FrameWriter;

/// The process-wide runtime of [`scifmt_io::runtime`] (two I/O threads, started on first use,
/// shared by every blocking frame, array and wkw dataset): one runtime, not one per object,
/// because an object store client pools its connections and each connection is driven by the
/// runtime that opened it. Refuses to run inside a runtime, where blocking would stall it.
fn runtime() -> Result<&'static Runtime> {
    Ok(scifmt_io::runtime()?)
}

fn block_on<F: Future>(f: F) -> Result<F::Output> {
    Ok(runtime()?.block_on(f))
}

/// [`RemoteFrame`] with blocking methods, run on the process-wide tokio runtime of
/// [`scifmt_io::runtime`] (two I/O threads, started on first use).
///
/// Must not be used from inside a tokio runtime: every method then returns
/// [`Error::InvalidArgument`] instead of blocking the runtime's thread.
#[derive(Debug)]
pub struct BlockingRemoteFrame {
    inner: RemoteFrame,
}

impl BlockingRemoteFrame {
    /// [`RemoteFrame::open`], blocking.
    ///
    /// # Errors
    /// As [`RemoteFrame::open`]; [`Error::InvalidArgument`] inside a tokio runtime.
    pub fn open(store: Arc<dyn ObjectStore>, path: Path, options: RemoteOptions) -> Result<Self> {
        let rt = runtime()?;
        let inner = rt.block_on(RemoteFrame::open(store, path, options))?;
        Ok(Self { inner })
    }

    /// [`RemoteFrame::open_sparse`], blocking.
    ///
    /// # Errors
    /// As [`RemoteFrame::open_sparse`].
    pub fn open_sparse(
        store: Arc<dyn ObjectStore>,
        dir: Path,
        options: RemoteOptions,
    ) -> Result<Self> {
        let rt = runtime()?;
        let inner = rt.block_on(RemoteFrame::open_sparse(store, dir, options))?;
        Ok(Self { inner })
    }

    /// [`RemoteFrame::open_url`], blocking.
    ///
    /// # Errors
    /// As [`RemoteFrame::open_url`].
    pub fn open_url(url: &str, options: RemoteOptions) -> Result<Self> {
        let rt = runtime()?;
        let inner = rt.block_on(RemoteFrame::open_url(url, options))?;
        Ok(Self { inner })
    }

    /// [`RemoteFrame::put`], blocking.
    ///
    /// # Errors
    /// As [`RemoteFrame::put`].
    pub fn put(
        store: Arc<dyn ObjectStore>,
        path: &Path,
        writer: &FrameWriter,
        options: &RemoteOptions,
    ) -> Result<()> {
        runtime()?.block_on(RemoteFrame::put(store, path, writer, options))
    }

    /// [`RemoteFrame::put_url`], blocking.
    ///
    /// # Errors
    /// As [`RemoteFrame::put_url`].
    pub fn put_url(url: &str, writer: &FrameWriter, options: &RemoteOptions) -> Result<()> {
        runtime()?.block_on(RemoteFrame::put_url(url, writer, options))
    }

    /// [`RemoteFrame::put_sparse`], blocking.
    ///
    /// # Errors
    /// As [`RemoteFrame::put_sparse`].
    pub fn put_sparse(
        store: Arc<dyn ObjectStore>,
        dir: &Path,
        writer: &FrameWriter,
        options: &RemoteOptions,
    ) -> Result<()> {
        runtime()?.block_on(RemoteFrame::put_sparse(store, dir, writer, options))
    }

    /// [`RemoteFrame::reopen`], blocking.
    ///
    /// # Errors
    /// As [`RemoteFrame::reopen`].
    pub fn reopen(&self) -> Result<Self> {
        let rt = runtime()?;
        let inner = rt.block_on(self.inner.reopen())?;
        Ok(Self { inner })
    }

    /// The async frame (metadata accessors: header, metalayers, index, …).
    #[must_use]
    pub fn inner(&self) -> &RemoteFrame {
        &self.inner
    }

    /// Gives the async frame back.
    #[must_use]
    pub fn into_inner(self) -> RemoteFrame {
        self.inner
    }

    /// The decoded fixed header.
    #[must_use]
    pub fn header(&self) -> &FrameHeader {
        self.inner.header()
    }

    /// Number of chunks.
    #[must_use]
    pub fn nchunks(&self) -> usize {
        self.inner.nchunks()
    }

    /// The index.
    #[must_use]
    pub fn index(&self) -> &[ChunkLocation] {
        self.inner.index()
    }

    /// Metalayers (from the header).
    #[must_use]
    pub fn metalayers(&self) -> &[Layer] {
        self.inner.metalayers()
    }

    /// Vlmetalayers (from the trailer).
    #[must_use]
    pub fn vlmetalayers(&self) -> &[Layer] {
        self.inner.vlmetalayers()
    }

    /// [`RemoteFrame::chunk_sizes`], blocking.
    ///
    /// # Errors
    /// As [`RemoteFrame::chunk_sizes`].
    pub fn chunk_sizes(&self) -> Result<Vec<usize>> {
        block_on(self.inner.chunk_sizes())?
    }

    /// [`RemoteFrame::chunk`], blocking.
    ///
    /// # Errors
    /// As [`RemoteFrame::chunk`].
    pub fn chunk(&self, i: usize) -> Result<Vec<u8>> {
        block_on(self.inner.chunk(i))?
    }

    /// [`RemoteFrame::decompress_chunk`], blocking.
    ///
    /// # Errors
    /// As [`RemoteFrame::decompress_chunk`].
    pub fn decompress_chunk(&self, i: usize) -> Result<Vec<u8>> {
        block_on(self.inner.decompress_chunk(i))?
    }

    /// [`RemoteFrame::decompress_chunks`], blocking.
    ///
    /// # Errors
    /// As [`RemoteFrame::decompress_chunks`].
    pub fn decompress_chunks(&self, chunks: &[usize]) -> Result<Vec<Vec<u8>>> {
        block_on(self.inner.decompress_chunks(chunks))?
    }

    /// [`RemoteFrame::decompress_all`], blocking.
    ///
    /// # Errors
    /// As [`RemoteFrame::decompress_all`].
    pub fn decompress_all(&self) -> Result<Vec<u8>> {
        block_on(self.inner.decompress_all())?
    }

    /// [`RemoteFrame::get_slice`], blocking.
    ///
    /// # Errors
    /// As [`RemoteFrame::get_slice`].
    pub fn get_slice(&self, start: u64, stop: u64) -> Result<Vec<u8>> {
        block_on(self.inner.get_slice(start, stop))?
    }

    /// Interprets the frame as a b2nd array (keeps the runtime).
    ///
    /// # Errors
    /// As [`RemoteB2nd::from_frame`].
    pub fn into_b2nd(self) -> Result<BlockingRemoteB2nd> {
        Ok(BlockingRemoteB2nd {
            inner: RemoteB2nd::from_frame(self.inner)?,
        })
    }
}

/// [`RemoteB2nd`] with blocking methods, on the same runtime. Same rules as
/// [`BlockingRemoteFrame`].
#[derive(Debug)]
pub struct BlockingRemoteB2nd {
    inner: RemoteB2nd,
}

impl BlockingRemoteB2nd {
    /// [`RemoteB2nd::open`], blocking.
    ///
    /// # Errors
    /// As [`RemoteB2nd::open`]; [`Error::InvalidArgument`] inside a tokio runtime.
    pub fn open(store: Arc<dyn ObjectStore>, path: Path, options: RemoteOptions) -> Result<Self> {
        let rt = runtime()?;
        let inner = rt.block_on(RemoteB2nd::open(store, path, options))?;
        Ok(Self { inner })
    }

    /// [`RemoteB2nd::open_url`], blocking.
    ///
    /// # Errors
    /// As [`RemoteB2nd::open_url`].
    pub fn open_url(url: &str, options: RemoteOptions) -> Result<Self> {
        let rt = runtime()?;
        let inner = rt.block_on(RemoteB2nd::open_url(url, options))?;
        Ok(Self { inner })
    }

    /// The async array.
    #[must_use]
    pub fn inner(&self) -> &RemoteB2nd {
        &self.inner
    }

    /// The metalayer.
    #[must_use]
    pub fn meta(&self) -> &B2ndMeta {
        self.inner.meta()
    }

    /// Array shape.
    #[must_use]
    pub fn shape(&self) -> &[u64] {
        self.inner.shape()
    }

    /// dtype string.
    #[must_use]
    pub fn dtype(&self) -> &str {
        self.inner.dtype()
    }

    /// Bytes per item.
    #[must_use]
    pub fn itemsize(&self) -> usize {
        self.inner.itemsize()
    }

    /// [`RemoteB2nd::read_all`], blocking.
    ///
    /// # Errors
    /// As [`RemoteB2nd::read_all`].
    pub fn read_all(&self) -> Result<Vec<u8>> {
        block_on(self.inner.read_all())?
    }

    /// [`RemoteB2nd::read_region`], blocking.
    ///
    /// # Errors
    /// As [`RemoteB2nd::read_region`].
    pub fn read_region(&self, start: &[u64], stop: &[u64]) -> Result<Vec<u8>> {
        block_on(self.inner.read_region(start, stop))?
    }

    /// [`RemoteB2nd::read_all_as`], blocking.
    ///
    /// # Errors
    /// As [`RemoteB2nd::read_all_as`].
    pub fn read_all_as<T: Element>(&self) -> Result<Vec<T>> {
        block_on(self.inner.read_all_as())?
    }

    /// [`RemoteB2nd::read_region_as`], blocking.
    ///
    /// # Errors
    /// As [`RemoteB2nd::read_region_as`].
    pub fn read_region_as<T: Element>(&self, start: &[u64], stop: &[u64]) -> Result<Vec<T>> {
        block_on(self.inner.read_region_as(start, stop))?
    }
}
