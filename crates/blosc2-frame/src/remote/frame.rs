//! [`RemoteFrame`]: a frame on an object store, its metadata and its chunk reads.

use std::sync::Arc;

use object_store::ObjectStore;
use object_store::path::Path;
use scifmt_io::{Object, Prefetched, child, join_url, store_url};

use super::RemoteOptions;
use super::open::{Target, open_target, peek_header, unpinned};
use super::read::{Remote, SparseDir};
use crate::error::{Error, Result};
use crate::header::{FrameHeader, FrameType};
use crate::limits::Limits;
use crate::offsets::ChunkLocation;
use crate::reader::{Frame, Layer, SPARSE_FRAME_FILE};

/// A Blosc2 frame (contiguous object or sparse-frame prefix) on an object store, opened for
/// asynchronous reading. See the [module docs](crate::RemoteFrame#requests) for the requests
/// made and the consistency guarantees; [`BlockingRemoteFrame`](crate::BlockingRemoteFrame)
/// wraps it for callers without an async runtime.
///
/// The metadata (header, metalayers, vlmetalayers, index) is read and validated at open, like
/// [`Frame`]'s; chunk reads fetch only the chunks they touch.
///
/// ```
/// # #[cfg(feature = "object_store")]
/// # fn main() -> Result<(), blosc2_frame::Error> {
/// use std::sync::Arc;
/// use blosc2_frame::{BlockingRemoteFrame, FrameParams, FrameWriter, RemoteOptions, blosc_chunk::CParams};
/// use object_store::{memory::InMemory, path::Path};
///
/// let mut w = FrameWriter::new(FrameParams::new(CParams::default(), 1024))?;
/// w.append_buffer(&[7u8; 1024])?;
/// let store = Arc::new(InMemory::new());
/// let path = Path::from("data/a.b2frame");
/// BlockingRemoteFrame::put(store.clone(), &path, &w, &RemoteOptions::default())?;
/// let f = BlockingRemoteFrame::open(store, path, RemoteOptions::default())?;
/// assert_eq!(f.decompress_chunk(0)?, vec![7u8; 1024]);
/// # Ok(())
/// # }
/// # #[cfg(not(feature = "object_store"))]
/// # fn main() {}
/// ```
#[derive(Debug)]
pub struct RemoteFrame {
    pub(crate) remote: Remote,
    pub(crate) frame: Frame<'static>,
}

impl RemoteFrame {
    /// Opens the frame at `path` in `store`: a contiguous frame object, a sparse frame's
    /// `chunks.b2frame`, or a sparse-frame prefix (directory) holding `chunks.b2frame` and the
    /// `%08X.chunk` files. The prefix case costs one more round trip than the others (the key
    /// is tried first); [`RemoteFrame::open_sparse`] avoids it.
    ///
    /// # Errors
    /// [`Error::Remote`] for failed requests (`object_store::Error::NotFound` inside when
    /// neither `path` nor `path/chunks.b2frame` exists), [`Error::Changed`] if the object was
    /// replaced during the open (after one retry), and every validation error of
    /// [`Frame::open`].
    pub async fn open(
        store: Arc<dyn ObjectStore>,
        path: Path,
        options: RemoteOptions,
    ) -> Result<Self> {
        Self::open_at(Object::from_store(store, path), options).await
    }

    /// Opens the sparse frame in directory `dir` (`dir/chunks.b2frame`), without probing for
    /// a contiguous object named `dir`.
    ///
    /// # Errors
    /// As [`RemoteFrame::open`]; [`Error::FrameType`] if `chunks.b2frame` is not sparse.
    pub async fn open_sparse(
        store: Arc<dyn ObjectStore>,
        dir: Path,
        options: RemoteOptions,
    ) -> Result<Self> {
        let url = store_url(store.as_ref(), &dir);
        let index = Object::new(
            store,
            child(&dir, SPARSE_FRAME_FILE),
            join_url(&url, SPARSE_FRAME_FILE),
        );
        let dir = SparseDir::new(dir, url);
        open_target(&index, Target::SparseIndex, &options)
            .await
            .and_then(|(obj, p)| Self::assemble(obj, p, Some(dir), FrameType::Sparse, options))
    }

    /// Opens the frame at an object-store URL: `s3://bucket/key`, `gs://…`, `az://…`,
    /// `http(s)://…`, `file:///…`, `memory:///…`. Store configuration comes from the standard
    /// environment variables (`AWS_ENDPOINT_URL`, `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`,
    /// `AWS_REGION`, `AWS_ALLOW_HTTP`, …; `GOOGLE_*`, `AZURE_*`) as `object_store`'s builders'
    /// `from_env` read them; cloud schemes need the crate features `aws`, `gcp`, `azure`,
    /// `http`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a malformed URL, [`Error::Remote`] for an unsupported
    /// scheme or bad configuration, otherwise as [`RemoteFrame::open`].
    pub async fn open_url(url: &str, options: RemoteOptions) -> Result<Self> {
        let s = scifmt_io::store_for_url(url, &[])?;
        Self::open_at(Object::new(s.store, s.path, s.url), options).await
    }

    /// Opens the frame at `at` (a contiguous frame, `chunks.b2frame` or a sparse-frame
    /// prefix).
    pub(crate) async fn open_at(at: Object, options: RemoteOptions) -> Result<Self> {
        let target = if at.path().filename() == Some(SPARSE_FRAME_FILE) {
            Target::SparseIndex
        } else {
            Target::Auto
        };
        let (obj, pre) = open_target(&at, target, &options).await?;
        let hdr = peek_header(&pre)?;
        let sparse =
            hdr.frame_type == FrameType::Sparse && obj.path().filename() == Some(SPARSE_FRAME_FILE);
        let (dir, expected) = if sparse {
            (Some(SparseDir::of_index(&obj)), FrameType::Sparse)
        } else {
            (None, FrameType::Contiguous)
        };
        Self::assemble(obj, pre, dir, expected, options)
    }

    fn assemble(
        obj: Object,
        pre: Prefetched,
        dir: Option<SparseDir>,
        expected: FrameType,
        options: RemoteOptions,
    ) -> Result<Self> {
        let size = pre.len();
        let opened_bytes = pre.pieces().iter().map(|(_, b)| b.len() as u64).sum();
        let frame = Frame::from_reader_typed(pre, 0, expected, &options.format.limits)?;
        let sorted_offsets = if dir.is_none() {
            let mut v: Vec<u64> = frame
                .index()
                .iter()
                .filter_map(|l| match l {
                    ChunkLocation::Stored(o) => Some(*o),
                    _ => None,
                })
                .collect();
            v.sort_unstable();
            v.dedup();
            v
        } else {
            Vec::new()
        };
        Ok(Self {
            remote: Remote::new(obj, dir, size, options, sorted_offsets, opened_bytes),
            frame,
        })
    }

    /// Opens the same frame again, e.g. after [`Error::Changed`], to read its current version.
    ///
    /// # Errors
    /// As [`RemoteFrame::open`].
    pub async fn reopen(&self) -> Result<Self> {
        let at = unpinned(&self.remote.obj);
        let options = self.remote.options.clone();
        match &self.remote.dir {
            Some(dir) => {
                let (obj, p) = open_target(&at, Target::SparseIndex, &options).await?;
                Self::assemble(obj, p, Some(dir.clone()), FrameType::Sparse, options)
            }
            None => Self::open_at(at, options).await,
        }
    }

    /// The decoded fixed header.
    #[must_use]
    pub fn header(&self) -> &FrameHeader {
        self.frame.header()
    }

    /// The URL of the frame object (or of a sparse frame's `chunks.b2frame`), without
    /// credentials.
    #[must_use]
    pub fn url(&self) -> String {
        self.remote.obj.url().to_owned()
    }

    /// The ETag seen at open, if the store reports one (sent as `If-Match` with every read).
    #[must_use]
    pub fn e_tag(&self) -> Option<&str> {
        self.remote.obj.etag()
    }

    /// Length of the frame object (a sparse frame's `chunks.b2frame`) at open.
    #[must_use]
    pub fn object_size(&self) -> u64 {
        self.remote.size
    }

    /// The options this frame was opened with.
    #[must_use]
    pub fn options(&self) -> &RemoteOptions {
        &self.remote.options
    }

    /// The limits this frame was opened with.
    #[must_use]
    pub fn limits(&self) -> &Limits {
        self.frame.limits()
    }

    /// Whether this is a sparse frame (chunks in separate objects).
    #[must_use]
    pub fn is_sparse(&self) -> bool {
        self.remote.dir.is_some()
    }

    /// Length of the trailer in bytes.
    #[must_use]
    pub fn trailer_len(&self) -> u64 {
        self.frame.trailer_len()
    }

    /// Number of chunks.
    #[must_use]
    pub fn nchunks(&self) -> usize {
        self.frame.nchunks()
    }

    /// The index: where each chunk is stored, or which special value it holds.
    #[must_use]
    pub fn index(&self) -> &[ChunkLocation] {
        self.frame.index()
    }

    /// Metalayers (from the header), in stored order.
    #[must_use]
    pub fn metalayers(&self) -> &[Layer] {
        self.frame.metalayers()
    }

    /// Raw content of the metalayer `name`.
    #[must_use]
    pub fn metalayer(&self, name: &str) -> Option<&[u8]> {
        self.frame.metalayer(name)
    }

    /// The metalayer `name` decoded as msgpack.
    ///
    /// # Errors
    /// As [`Frame::metalayer_value`].
    pub fn metalayer_value(&self, name: &str) -> Result<rmpv::Value> {
        self.frame.metalayer_value(name)
    }

    /// Vlmetalayers (from the trailer); `content` is the compressed chunk.
    #[must_use]
    pub fn vlmetalayers(&self) -> &[Layer] {
        self.frame.vlmetalayers()
    }

    /// The decompressed content of vlmetalayer `name` (already fetched at open).
    ///
    /// # Errors
    /// As [`Frame::vlmetalayer`].
    pub fn vlmetalayer(&self, name: &str) -> Result<Vec<u8>> {
        self.frame.vlmetalayer(name)
    }

    /// The vlmetalayer `name`, decompressed and decoded as msgpack.
    ///
    /// # Errors
    /// As [`Frame::vlmetalayer_value`].
    pub fn vlmetalayer_value(&self, name: &str) -> Result<rmpv::Value> {
        self.frame.vlmetalayer_value(name)
    }

    /// Uncompressed size of every chunk. For frames with a fixed chunksize this needs no
    /// request; when chunks vary in size, the first 16 bytes of every stored chunk are fetched
    /// once (one round of requests) and cached.
    ///
    /// # Errors
    /// Request errors, or chunk headers that do not fit the frame.
    pub async fn chunk_sizes(&self) -> Result<Vec<usize>> {
        self.remote.chunk_sizes(&self.frame).await
    }

    /// The compressed bytes of chunk `i` (special-value runs are synthesised, without a
    /// request).
    ///
    /// # Errors
    /// [`Error::ChunkIndex`], request errors, [`Error::Invalid`] for a chunk whose length does
    /// not fit where the index puts it.
    pub async fn chunk(&self, i: usize) -> Result<Vec<u8>> {
        match self.remote.location(&self.frame, i)? {
            ChunkLocation::Stored(_) => {
                let mut v = self.remote.fetch_stored(&self.frame, &[i]).await?;
                Ok(v.pop().map(|b| b.to_vec()).unwrap_or_default())
            }
            _ => self.frame.chunk(i).map(std::borrow::Cow::into_owned),
        }
    }

    /// Decompresses chunk `i` (one request unless it is a special-value run).
    ///
    /// # Errors
    /// As [`RemoteFrame::chunk`] and [`Frame::decompress_chunk`].
    pub async fn decompress_chunk(&self, i: usize) -> Result<Vec<u8>> {
        let mut v = self.decompress_chunks(&[i]).await?;
        Ok(v.pop().unwrap_or_default())
    }

    /// Decompresses the chunks `chunks` (any order, repeats allowed): their byte ranges are
    /// fetched in one round of concurrent (coalesced) requests and decoded in parallel.
    ///
    /// # Errors
    /// As [`RemoteFrame::decompress_chunk`]; [`Error::LimitExceeded`] if the chunks together
    /// exceed [`Limits::max_output_bytes`].
    pub async fn decompress_chunks(&self, chunks: &[usize]) -> Result<Vec<Vec<u8>>> {
        self.remote.decompress_chunks(&self.frame, chunks).await
    }

    /// Decompresses every chunk in index order (all chunks in one round of requests).
    ///
    /// # Errors
    /// As [`Frame::decompress_all`], plus request errors.
    pub async fn decompress_all(&self) -> Result<Vec<u8>> {
        let nbytes = self.header().nbytes;
        self.limits().check_output(nbytes)?;
        let sizes = self.chunk_sizes().await?;
        let held = sizes
            .iter()
            .try_fold(0u64, |acc, &n| acc.checked_add(n as u64))
            .ok_or(Error::Overflow { what: "nbytes" })?;
        if held != nbytes {
            return Err(Error::invalid(
                "nbytes",
                30,
                format!("chunks hold {held} bytes, the header says {nbytes}"),
            ));
        }
        self.remote.byte_range(&self.frame, 0, nbytes).await
    }

    /// Items `start..stop` (in units of the frame's typesize) across chunks, fetching only the
    /// chunks touched (one round of requests) and decoding, inside partially covered chunks,
    /// only the blocks touched.
    ///
    /// # Errors
    /// As [`Frame::get_slice`], plus request errors.
    pub async fn get_slice(&self, start: u64, stop: u64) -> Result<Vec<u8>> {
        self.remote.get_slice(&self.frame, start, stop).await
    }
}
