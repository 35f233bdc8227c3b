//! [`RemoteB2nd`]: b2nd arrays on object stores, read region by region.

use std::collections::HashMap;
use std::sync::Arc;

use object_store::ObjectStore;
use object_store::path::Path;

use super::RemoteOptions;
use super::frame::RemoteFrame;
use super::parallel::par_each;
use super::read::Remote;
use crate::array::B2ndArray;
use crate::array::RegionChunk;
use crate::b2nd::B2ndMeta;
use crate::element::{Element, check_dtype, to_native};
use crate::error::{Error, Result};
use crate::offsets::ChunkLocation;
use crate::reader::Frame;

/// A b2nd (N-dimensional) array on an object store, opened for asynchronous reading.
///
/// A region read fetches the chunks the region touches in one round of concurrent requests
/// (after the open's at most two), decodes the fully covered ones in parallel and, in
/// partially covered chunks, only the blocks touched; the region is assembled by the same
/// code as [`B2ndArray::read_region`]. [`BlockingRemoteB2nd`](crate::BlockingRemoteB2nd)
/// wraps it for callers without an async runtime.
#[derive(Debug)]
pub struct RemoteB2nd {
    remote: Remote,
    array: B2ndArray<'static>,
}

impl RemoteB2nd {
    /// Opens the b2nd array at `path` (a `.b2nd` object, or a sparse-frame prefix).
    ///
    /// # Errors
    /// As [`RemoteFrame::open`] and [`B2ndArray::new`].
    pub async fn open(
        store: Arc<dyn ObjectStore>,
        path: Path,
        options: RemoteOptions,
    ) -> Result<Self> {
        Self::from_frame(RemoteFrame::open(store, path, options).await?)
    }

    /// Opens the b2nd array at an object-store URL (see [`RemoteFrame::open_url`]).
    ///
    /// # Errors
    /// As [`RemoteFrame::open_url`] and [`B2ndArray::new`].
    pub async fn open_url(url: &str, options: RemoteOptions) -> Result<Self> {
        Self::from_frame(RemoteFrame::open_url(url, options).await?)
    }

    /// Interprets an opened remote frame as a b2nd array.
    ///
    /// # Errors
    /// As [`B2ndArray::new`].
    pub fn from_frame(frame: RemoteFrame) -> Result<Self> {
        Ok(Self {
            remote: frame.remote,
            array: B2ndArray::new(frame.frame)?,
        })
    }

    /// Gives the frame back.
    #[must_use]
    pub fn into_frame(self) -> RemoteFrame {
        RemoteFrame {
            remote: self.remote,
            frame: self.array.into_frame(),
        }
    }

    /// The metalayer: shape, chunk and block shapes, dtype.
    #[must_use]
    pub fn meta(&self) -> &B2ndMeta {
        self.array.meta()
    }

    /// Array shape.
    #[must_use]
    pub fn shape(&self) -> &[u64] {
        self.array.shape()
    }

    /// dtype string (NumPy `dtype.str`, e.g. `<f4`).
    #[must_use]
    pub fn dtype(&self) -> &str {
        self.array.dtype()
    }

    /// Bytes per item.
    #[must_use]
    pub fn itemsize(&self) -> usize {
        self.array.itemsize()
    }

    /// The URL of the array's object (without credentials).
    #[must_use]
    pub fn url(&self) -> String {
        self.remote.obj.url().to_owned()
    }

    /// The frame's fixed header.
    #[must_use]
    pub fn header(&self) -> &crate::FrameHeader {
        self.array.frame().header()
    }

    /// The frame's vlmetalayer `name`, decompressed (fetched at open).
    ///
    /// # Errors
    /// As [`Frame::vlmetalayer`].
    pub fn vlmetalayer(&self, name: &str) -> Result<Vec<u8>> {
        self.array.frame().vlmetalayer(name)
    }

    /// [`RemoteB2nd::vlmetalayer`] decoded from msgpack.
    ///
    /// # Errors
    /// As [`Frame::vlmetalayer_value`].
    pub fn vlmetalayer_value(&self, name: &str) -> Result<rmpv::Value> {
        self.array.frame().vlmetalayer_value(name)
    }

    /// The fixed-size metalayers (read with the header at open), in file order.
    #[must_use]
    pub fn metalayers(&self) -> &[crate::Layer] {
        self.array.frame().metalayers()
    }

    /// The variable-length metalayers (read with the trailer at open; contents compressed),
    /// in file order.
    #[must_use]
    pub fn vlmetalayers(&self) -> &[crate::Layer] {
        self.array.frame().vlmetalayers()
    }

    /// The raw bytes of metalayer `name`, if present.
    #[must_use]
    pub fn metalayer(&self, name: &str) -> Option<&[u8]> {
        self.array.frame().metalayer(name)
    }

    /// Metalayer `name` decoded from msgpack.
    ///
    /// # Errors
    /// As [`Frame::metalayer_value`].
    pub fn metalayer_value(&self, name: &str) -> Result<rmpv::Value> {
        self.array.frame().metalayer_value(name)
    }

    /// Number of chunks.
    #[must_use]
    pub fn nchunks(&self) -> usize {
        self.array.frame().nchunks()
    }

    /// The whole array in C order.
    ///
    /// # Errors
    /// As [`RemoteB2nd::read_region`].
    pub async fn read_all(&self) -> Result<Vec<u8>> {
        let zero = vec![0; self.meta().ndim()];
        let shape = self.meta().shape.clone();
        self.read_region(&zero, &shape).await
    }

    /// The hyper-slab `start..stop` (per dimension, `stop` exclusive) as C-order bytes,
    /// identical to [`B2ndArray::read_region`] on the same data.
    ///
    /// # Errors
    /// As [`B2ndArray::read_region`], plus request errors.
    pub async fn read_region(&self, start: &[u64], stop: &[u64]) -> Result<Vec<u8>> {
        let (_, total) = self.array.region(start, stop)?;
        let mut out = vec![0u8; total];
        self.fill(start, stop, &mut out).await?;
        Ok(out)
    }

    /// The whole array as items of type `T` (see [`B2ndArray::read_region_as`]).
    ///
    /// # Errors
    /// As [`RemoteB2nd::read_region_as`].
    pub async fn read_all_as<T: Element>(&self) -> Result<Vec<T>> {
        let zero = vec![0; self.meta().ndim()];
        let shape = self.meta().shape.clone();
        self.read_region_as(&zero, &shape).await
    }

    /// The hyper-slab `start..stop` as items of type `T` in this machine's byte order, like
    /// [`B2ndArray::read_region_as`].
    ///
    /// # Errors
    /// [`Error::DtypeMismatch`] if the dtype is not `T`'s, otherwise as
    /// [`RemoteB2nd::read_region`].
    pub async fn read_region_as<T: Element>(&self, start: &[u64], stop: &[u64]) -> Result<Vec<T>> {
        let (items, _) = self.array.region(start, stop)?;
        let swap = check_dtype::<T>(self.dtype(), self.itemsize())?;
        let mut out = vec![T::default(); items];
        self.fill(start, stop, bytemuck::cast_slice_mut(&mut out))
            .await?;
        to_native(&mut out, swap);
        Ok(out)
    }

    /// Fetches the stored chunks the region touches (one round), decodes the fully covered
    /// ones in parallel, then assembles the region with the local reader's code.
    async fn fill(&self, start: &[u64], stop: &[u64], out: &mut [u8]) -> Result<()> {
        if out.is_empty() {
            return Ok(());
        }
        let frame: &Frame<'_> = self.array.frame();
        let touched = self.array.region_chunks(start, stop)?;
        let stored: Vec<(usize, bool)> = touched
            .into_iter()
            .filter(|(ci, _)| matches!(frame.index().get(*ci), Some(ChunkLocation::Stored(_))))
            .collect();
        let ids: Vec<usize> = stored.iter().map(|s| s.0).collect();
        let fetched = self.remote.fetch_stored(frame, &ids).await?;
        let mut compressed: HashMap<usize, bytes::Bytes> = HashMap::with_capacity(ids.len());
        let mut whole: Vec<(usize, bytes::Bytes)> = Vec::new();
        for ((ci, all), b) in stored.into_iter().zip(fetched) {
            if all {
                whole.push((ci, b));
            } else {
                compressed.insert(ci, b);
            }
        }
        let mut decoded: Vec<Vec<u8>> = Vec::with_capacity(whole.len());
        for (ci, _) in &whole {
            let n = frame.chunk_nbytes(*ci)?;
            decoded.push(vec![0u8; n]);
        }
        let work: Vec<_> = whole.iter().zip(decoded.iter_mut()).collect();
        par_each(work, |((ci, c), dst)| {
            frame.decompress_stored_into(*ci, c, dst)
        })?;
        let decoded: HashMap<usize, &[u8]> = whole
            .iter()
            .map(|(ci, _)| *ci)
            .zip(decoded.iter().map(Vec::as_slice))
            .collect();
        self.array.fill_region_with(start, stop, out, |ci| {
            if let Some(d) = decoded.get(&ci) {
                return Ok(RegionChunk::Decoded(d));
            }
            compressed
                .get(&ci)
                .map(|b| RegionChunk::Stored(std::borrow::Cow::Borrowed(&b[..])))
                .ok_or_else(|| Error::InvalidArgument(format!("chunk {ci} was not fetched")))
        })
    }
}
