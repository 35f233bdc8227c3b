//! [`RemoteFrame`]: opening a frame on an object store and reading its chunks.

use std::ops::Range;
use std::sync::{Arc, OnceLock};

use bytes::Bytes;
use futures::{StreamExt, TryStreamExt, stream};
use object_store::path::Path;
use object_store::{GetRange, ObjectMeta, ObjectStore};

use super::RemoteOptions;
use super::fetch::{Fetched, Location, Object, Prefetched, par_each, store_for_url};
use crate::error::{Error, Result};
use crate::header::{FrameHeader, FrameType, HEADER_FIXED_LEN};
use crate::limits::Limits;
use crate::offsets::ChunkLocation;
use crate::reader::{Frame, Layer, SPARSE_FRAME_FILE};
use crate::reader::{MIN_CHUNK_LEN, chunk_cbytes};
use crate::trailer::TAIL_LEN;

/// Bytes a stored chunk may exceed its uncompressed size by (C-Blosc2's
/// `BLOSC2_MAX_OVERHEAD` is 32; the rest is slack for unusual writers). Bounds how much is
/// fetched for a chunk whose end the index does not reveal.
const CHUNK_SLACK: u64 = 64 << 10;

/// What remote reads need besides the parsed frame.
#[derive(Debug)]
pub(crate) struct Remote {
    /// The frame object (contiguous) or `chunks.b2frame` (sparse).
    pub(crate) obj: Object,
    /// The directory of a sparse frame.
    pub(crate) dir: Option<Path>,
    /// The object's length at open.
    pub(crate) size: u64,
    pub(crate) options: RemoteOptions,
    /// Distinct stored offsets in ascending order (contiguous frames): a chunk ends at or
    /// before the next one.
    sorted_offsets: Vec<u64>,
    /// Uncompressed chunk sizes, for frames whose chunks vary in size (fetched once).
    sizes: OnceLock<Vec<usize>>,
}

/// Which kind of object `open` expects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Target {
    /// A key that may be a contiguous frame, or a sparse-frame prefix.
    Auto,
    /// A `chunks.b2frame` index object.
    SparseIndex,
}

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
        Self::open_at(Location::from_store(store), path, options).await
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
        let loc = Location::from_store(store);
        let index = dir.clone().join(SPARSE_FRAME_FILE);
        open_target(&loc, &index, Target::SparseIndex, &options)
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
        let (loc, path) = store_for_url(url)?;
        Self::open_at(loc, path, options).await
    }

    pub(crate) async fn open_at(loc: Location, path: Path, options: RemoteOptions) -> Result<Self> {
        let target = if path.filename() == Some(SPARSE_FRAME_FILE) {
            Target::SparseIndex
        } else {
            Target::Auto
        };
        let (obj, pre) = open_target(&loc, &path, target, &options).await?;
        let hdr = peek_header(&pre)?;
        let sparse =
            hdr.frame_type == FrameType::Sparse && obj.path.filename() == Some(SPARSE_FRAME_FILE);
        let (dir, expected) = if sparse {
            (Some(parent(&obj.path)), FrameType::Sparse)
        } else {
            (None, FrameType::Contiguous)
        };
        Self::assemble(obj, pre, dir, expected, options)
    }

    fn assemble(
        obj: Object,
        pre: Prefetched,
        dir: Option<Path>,
        expected: FrameType,
        options: RemoteOptions,
    ) -> Result<Self> {
        let size = pre.size;
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
            remote: Remote {
                obj,
                dir,
                size,
                options,
                sorted_offsets,
                sizes: OnceLock::new(),
            },
            frame,
        })
    }

    /// Opens the same frame again, e.g. after [`Error::Changed`], to read its current version.
    ///
    /// # Errors
    /// As [`RemoteFrame::open`].
    pub async fn reopen(&self) -> Result<Self> {
        let loc = self.remote.obj.loc.clone();
        let options = self.remote.options.clone();
        match &self.remote.dir {
            Some(dir) => {
                let index = dir.clone().join(SPARSE_FRAME_FILE);
                let (obj, p) = open_target(&loc, &index, Target::SparseIndex, &options).await?;
                Self::assemble(obj, p, Some(dir.clone()), FrameType::Sparse, options)
            }
            None => Self::open_at(loc, self.remote.obj.path.clone(), options).await,
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
        self.remote.obj.url()
    }

    /// The ETag seen at open, if the store reports one (sent as `If-Match` with every read).
    #[must_use]
    pub fn e_tag(&self) -> Option<&str> {
        self.remote.obj.etag.as_deref()
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

impl Remote {
    pub(crate) fn location(&self, frame: &Frame<'_>, i: usize) -> Result<ChunkLocation> {
        frame.index().get(i).copied().ok_or(Error::ChunkIndex {
            index: i,
            nchunks: frame.nchunks(),
        })
    }

    /// The path of sparse chunk file `num`.
    fn chunk_path(dir: &Path, num: u64) -> Path {
        dir.clone().join(format!("{num:08X}.chunk"))
    }

    /// Upper bound of a stored chunk's compressed length (for the fetch size).
    fn max_cbytes(&self, frame: &Frame<'_>, i: usize) -> Result<u64> {
        let n = if frame.header().chunksize > 0 {
            frame.chunk_nbytes(i)? as u64
        } else {
            frame.limits().max_chunk_nbytes as u64
        };
        Ok(n.saturating_add(CHUNK_SLACK))
    }

    /// Byte range of stored chunk `i` (at section offset `off`) in a contiguous frame object:
    /// from its start to the next stored chunk, the end of the chunk section, or the most a
    /// chunk of its size can take.
    fn chunk_range(&self, frame: &Frame<'_>, i: usize, off: u64) -> Result<Range<u64>> {
        let h = frame.header();
        let next = match self.sorted_offsets.binary_search(&off) {
            Ok(k) => self.sorted_offsets.get(k + 1).copied(),
            Err(_) => None,
        };
        let end = next.unwrap_or(h.cbytes).min(h.cbytes);
        // `off + 16 <= cbytes` was checked at open, and the size bound is above 16.
        let len = end.saturating_sub(off).min(self.max_cbytes(frame, i)?);
        let start = u64::from(h.header_len)
            .checked_add(off)
            .ok_or(Error::Overflow {
                what: "chunk offset",
            })?;
        let end = start
            .checked_add(len)
            .ok_or(Error::Overflow { what: "chunk end" })?;
        if end > self.size {
            return Err(Error::invalid(
                "chunk offset",
                start,
                format!("chunk {i}: past the end of the {}-byte object", self.size),
            ));
        }
        Ok(start..end)
    }

    /// The compressed bytes of stored chunks `chunks` (every one must be `Stored`), fetched in
    /// one round of concurrent requests and trimmed to the `cbytes` in their headers.
    pub(crate) async fn fetch_stored(
        &self,
        frame: &Frame<'_>,
        chunks: &[usize],
    ) -> Result<Vec<Bytes>> {
        let mut offs = Vec::with_capacity(chunks.len());
        for &i in chunks {
            match self.location(frame, i)? {
                ChunkLocation::Stored(off) => offs.push(off),
                _ => {
                    return Err(Error::InvalidArgument(format!(
                        "chunk {i} is a special-value run, not stored"
                    )));
                }
            }
        }
        let raw: Vec<Bytes> = match &self.dir {
            None => {
                let ranges = chunks
                    .iter()
                    .zip(&offs)
                    .map(|(&i, &off)| self.chunk_range(frame, i, off))
                    .collect::<Result<Vec<_>>>()?;
                self.obj.fetch_ranges(&ranges, &self.options).await?
            }
            Some(dir) => {
                let jobs: Vec<(usize, Path, u64)> = chunks
                    .iter()
                    .zip(&offs)
                    .map(|(&i, &num)| {
                        Ok((i, Self::chunk_path(dir, num), self.max_cbytes(frame, i)?))
                    })
                    .collect::<Result<_>>()?;
                stream::iter(jobs)
                    .map(|(_, path, cap)| async move {
                        let f: Fetched =
                            self.obj.get(&path, None, false, cap, &self.options).await?;
                        Ok::<_, Error>(f.bytes)
                    })
                    .buffered(self.options.in_flight())
                    .try_collect()
                    .await?
            }
        };
        raw.into_iter()
            .zip(chunks)
            .map(|(b, &i)| {
                let c = chunk_cbytes(&b)
                    .filter(|&c| c >= MIN_CHUNK_LEN && c <= b.len() as u64)
                    .ok_or_else(|| {
                        Error::invalid(
                            "chunk cbytes",
                            12,
                            format!(
                                "chunk {i}: length does not fit the {} bytes where the index puts it",
                                b.len()
                            ),
                        )
                    })?;
                Ok(b.slice(..usize::try_from(c).map_err(|_| Error::Overflow { what: "cbytes" })?))
            })
            .collect()
    }

    pub(crate) async fn chunk_sizes(&self, frame: &Frame<'_>) -> Result<Vec<usize>> {
        if frame.header().chunksize > 0 {
            return (0..frame.nchunks())
                .map(|i| frame.chunk_nbytes(i))
                .collect();
        }
        if let Some(s) = self.sizes.get() {
            return Ok(s.clone());
        }
        let stored: Vec<usize> = (0..frame.nchunks())
            .filter(|&i| matches!(frame.index().get(i), Some(ChunkLocation::Stored(_))))
            .collect();
        let heads: Vec<Bytes> = match &self.dir {
            None => {
                let ranges = stored
                    .iter()
                    .map(|&i| {
                        let r = match self.location(frame, i)? {
                            ChunkLocation::Stored(off) => self.chunk_range(frame, i, off)?,
                            _ => 0..0,
                        };
                        Ok(r.start..r.end.min(r.start + MIN_CHUNK_LEN))
                    })
                    .collect::<Result<Vec<_>>>()?;
                self.obj.fetch_ranges(&ranges, &self.options).await?
            }
            Some(dir) => {
                let paths: Vec<Path> = stored
                    .iter()
                    .map(|&i| match self.location(frame, i)? {
                        ChunkLocation::Stored(num) => Ok(Self::chunk_path(dir, num)),
                        _ => Err(Error::Overflow { what: "chunk" }),
                    })
                    .collect::<Result<_>>()?;
                stream::iter(paths)
                    .map(|path| async move {
                        let f = self
                            .obj
                            .get(
                                &path,
                                Some(GetRange::Bounded(0..MIN_CHUNK_LEN)),
                                false,
                                MIN_CHUNK_LEN,
                                &self.options,
                            )
                            .await?;
                        Ok::<_, Error>(f.bytes)
                    })
                    .buffered(self.options.in_flight())
                    .try_collect()
                    .await?
            }
        };
        let mut sizes = Vec::with_capacity(frame.nchunks());
        let mut it = stored.iter().zip(&heads).peekable();
        for i in 0..frame.nchunks() {
            match it.peek() {
                Some((j, head)) if **j == i => {
                    sizes.push(frame.nbytes_from_head(i, head)?);
                    it.next();
                }
                // Special runs need a chunksize (checked at open); there is none here.
                _ => sizes.push(frame.chunk_nbytes(i)?),
            }
        }
        let _ = self.sizes.set(sizes.clone());
        Ok(sizes)
    }

    pub(crate) async fn decompress_chunks(
        &self,
        frame: &Frame<'_>,
        chunks: &[usize],
    ) -> Result<Vec<Vec<u8>>> {
        let mut total = 0u64;
        let fixed = frame.header().chunksize > 0;
        for &i in chunks {
            self.location(frame, i)?;
            if fixed {
                total = total.saturating_add(frame.chunk_nbytes(i)? as u64);
            }
        }
        frame.limits().check_output(total)?;
        let stored: Vec<usize> = chunks
            .iter()
            .copied()
            .filter(|&i| matches!(frame.index().get(i), Some(ChunkLocation::Stored(_))))
            .collect();
        let fetched = self.fetch_stored(frame, &stored).await?;
        let mut bytes_of = fetched.into_iter();
        let mut jobs = Vec::with_capacity(chunks.len());
        for &i in chunks {
            let loc = self.location(frame, i)?;
            let c = match loc {
                ChunkLocation::Stored(_) => bytes_of.next(),
                _ => None,
            };
            let n = match &c {
                Some(c) => frame.nbytes_from_head(i, c)?,
                None => frame.chunk_nbytes(i)?,
            };
            if n > frame.limits().max_chunk_nbytes {
                return Err(Error::LimitExceeded {
                    what: "chunk nbytes",
                    requested: n as u64,
                    limit: frame.limits().max_chunk_nbytes as u64,
                });
            }
            if !fixed {
                total = total.saturating_add(n as u64);
                frame.limits().check_output(total)?;
            }
            jobs.push((i, loc, c, n));
        }
        let mut out: Vec<Vec<u8>> = jobs.iter().map(|j| vec![0u8; j.3]).collect();
        let work: Vec<_> = jobs.into_iter().zip(out.iter_mut()).collect();
        par_each(work, |((i, loc, c, _), dst)| match c {
            Some(c) => frame.decompress_stored_into(i, &c, dst),
            None => frame.fill_special_into(i, loc, dst),
        })?;
        Ok(out)
    }

    pub(crate) async fn get_slice(
        &self,
        frame: &Frame<'_>,
        start: u64,
        stop: u64,
    ) -> Result<Vec<u8>> {
        let h = frame.header();
        let ts = u64::from(h.typesize);
        let nitems = h.nbytes / ts;
        if start > stop || stop > nitems {
            return Err(Error::InvalidArgument(format!(
                "slice {start}..{stop} outside 0..{nitems}"
            )));
        }
        self.byte_range(frame, start * ts, stop * ts).await
    }

    /// Decompressed bytes `b0..b1` (within `nbytes`), fetching the chunks touched in one round.
    pub(crate) async fn byte_range(&self, frame: &Frame<'_>, b0: u64, b1: u64) -> Result<Vec<u8>> {
        let total = frame.limits().check_output(b1 - b0)?;
        let sizes = self.chunk_sizes(frame).await?;
        let plan = frame.slice_plan(b0, b1, |i| {
            sizes.get(i).copied().ok_or(Error::ChunkIndex {
                index: i,
                nchunks: sizes.len(),
            })
        })?;
        let stored: Vec<usize> = plan
            .iter()
            .map(|p| p.chunk)
            .filter(|&i| matches!(frame.index().get(i), Some(ChunkLocation::Stored(_))))
            .collect();
        let fetched = self.fetch_stored(frame, &stored).await?;
        let mut bytes_of = fetched.into_iter();
        let mut out = vec![0u8; total];
        let mut rest: &mut [u8] = &mut out;
        let mut pos = 0usize;
        let mut work = Vec::with_capacity(plan.len());
        for p in plan {
            let skip = p.out.start - pos;
            let (_, r) = rest.split_at_mut(skip);
            let (dst, r) = r.split_at_mut(p.out.len());
            rest = r;
            pos = p.out.end;
            let loc = self.location(frame, p.chunk)?;
            let c = match loc {
                ChunkLocation::Stored(_) => bytes_of.next(),
                _ => None,
            };
            work.push((p, loc, c, dst));
        }
        par_each(work, |(p, loc, c, dst)| {
            let whole = p.from == 0 && dst.len() == p.nbytes;
            match c {
                Some(c) if whole => frame.decompress_stored_into(p.chunk, &c, dst),
                Some(c) => frame.range_of_chunk_n(p.chunk, &c, p.nbytes, p.from, dst),
                None => frame.fill_special_into(p.chunk, loc, dst),
            }
        })?;
        Ok(out)
    }
}

/// The parent prefix of `path`.
fn parent(path: &Path) -> Path {
    let parts: Vec<_> = path.parts().collect();
    let n = parts.len().saturating_sub(1);
    parts.into_iter().take(n).collect()
}

/// The fixed header from the prefetched bytes.
fn peek_header(pre: &Prefetched) -> Result<FrameHeader> {
    use scifmt_io::ReadAt;
    if pre.size < HEADER_FIXED_LEN as u64 {
        return Err(Error::Truncated {
            what: "frame header",
            offset: 0,
            needed: HEADER_FIXED_LEN as u64,
            available: pre.size,
        });
    }
    let mut h = [0u8; HEADER_FIXED_LEN];
    pre.read_exact_at(&mut h, 0)?;
    FrameHeader::parse(&h)
}

fn is_not_found(e: &Error) -> bool {
    matches!(
        e,
        Error::Remote {
            source: object_store::Error::NotFound { .. },
            ..
        }
    )
}

/// The first round trip on `path`: head and tail ranges, concurrently, checked to come from
/// one version of the object.
async fn round1(
    loc: &Location,
    path: &Path,
    head_n: u64,
    tail_n: u64,
    opts: &RemoteOptions,
) -> Result<(Vec<(u64, Bytes)>, ObjectMeta)> {
    let probe = Object {
        loc: loc.clone(),
        path: path.clone(),
        etag: None,
    };
    let head = probe.get(
        path,
        Some(GetRange::Bounded(0..head_n)),
        false,
        head_n,
        opts,
    );
    let tail = probe.get(path, Some(GetRange::Suffix(tail_n)), false, tail_n, opts);
    let (h, t) = futures::future::join(head, tail).await;
    let (h, t): (Fetched, Fetched) = (h?, t?);
    if h.meta.e_tag != t.meta.e_tag || h.meta.size != t.meta.size {
        return Err(Error::Changed { url: loc.url(path) });
    }
    Ok((
        vec![(h.range.start, h.bytes), (t.range.start, t.bytes)],
        t.meta,
    ))
}

/// Round trip 1 (head and tail; for a sparse-frame prefix a second round on its index) and,
/// if needed,
/// round trip 2 (the missing parts of header, index and trailer). Retried once when the
/// object changed between the requests of round 1.
async fn open_target(
    loc: &Location,
    path: &Path,
    target: Target,
    opts: &RemoteOptions,
) -> Result<(Object, Prefetched)> {
    let mut attempt = 0;
    loop {
        match open_once(loc, path, target, opts).await {
            Err(Error::Changed { .. }) if attempt == 0 => attempt += 1,
            r => return r,
        }
    }
}

async fn open_once(
    loc: &Location,
    path: &Path,
    target: Target,
    opts: &RemoteOptions,
) -> Result<(Object, Prefetched)> {
    let cap = opts.format.limits.max_output_bytes as u64;
    let head_n = opts.format.head_bytes.max(HEADER_FIXED_LEN as u64).min(cap);
    let tail_n = opts.format.tail_bytes.max(TAIL_LEN as u64).min(cap);
    // A key that is no object may be a sparse-frame prefix: then continue with its index
    // file (one more round trip). Any failure on the key itself leads there, since stores
    // backed by file systems may answer a "directory" key with an error other than 404; the
    // key's own error is reported when the prefix holds no sparse frame either.
    let (obj_path, pieces, meta) = match round1(loc, path, head_n, tail_n, opts).await {
        Ok(r) => (path.clone(), r.0, r.1),
        Err(e @ Error::Changed { .. }) => return Err(e),
        Err(e) if target == Target::Auto => {
            let sparse_path = path.clone().join(SPARSE_FRAME_FILE);
            match round1(loc, &sparse_path, head_n, tail_n, opts).await {
                Ok(r) => (sparse_path, r.0, r.1),
                Err(Error::Remote {
                    source: object_store::Error::NotFound { .. },
                    ..
                }) => return Err(e),
                Err(e2) if is_not_found(&e) => return Err(e2),
                Err(_) => return Err(e),
            }
        }
        Err(e) => return Err(e),
    };
    let obj = Object {
        loc: loc.clone(),
        path: obj_path,
        etag: meta.e_tag.clone(),
    };
    let mut pre = Prefetched {
        size: meta.size,
        pieces,
    };
    let size = pre.size;
    // What the parser will read: the header with its metalayers, and everything from the
    // index chunk to the end of the frame (index, trailer). Without the fixed header (the
    // sparse probe), everything before the fetched tail.
    let needed: Vec<Range<u64>> = if pre.covers(&(0..(HEADER_FIXED_LEN as u64).min(size)))
        && size >= HEADER_FIXED_LEN as u64
    {
        let h = peek_header(&pre)?;
        let frame_len = h.frame_len.min(size);
        let header_len = u64::from(h.header_len).min(frame_len);
        let index_start = if h.frame_type == FrameType::Sparse {
            header_len
        } else {
            header_len.saturating_add(h.cbytes)
        };
        let index_start = if index_start > frame_len {
            frame_len.saturating_sub(TAIL_LEN as u64)
        } else {
            index_start
        };
        vec![0..header_len, index_start..frame_len]
    } else {
        std::iter::once(0..size).collect()
    };
    let missing: Vec<Range<u64>> = needed.iter().flat_map(|r| pre.missing(r)).collect();
    let total: u64 = missing.iter().map(|r| r.end - r.start).sum();
    if total > cap {
        return Err(Error::LimitExceeded {
            what: "frame metadata (header, index, trailer)",
            requested: total,
            limit: cap,
        });
    }
    if !missing.is_empty() {
        let got = obj
            .fetch_ranges(&missing, &opts.clone().with_coalesce_gap(0))
            .await?;
        pre.pieces.extend(missing.iter().map(|r| r.start).zip(got));
    }
    Ok((obj, pre))
}
