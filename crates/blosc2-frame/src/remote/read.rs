//! Reading an opened frame's chunks: their byte ranges in one round of concurrent requests
//! (or, for a sparse frame, its chunk files), trimmed to their `cbytes` and decoded in parallel.

use std::ops::Range;
use std::sync::{Arc, OnceLock};

use bytes::Bytes;
use futures::{StreamExt, TryStreamExt, stream};
use object_store::GetRange;
use object_store::path::Path;
use scifmt_io::{Object, child, join_url};

use super::RemoteOptions;
use super::parallel::par_each;
use crate::error::{Error, Result};
use crate::offsets::ChunkLocation;
use crate::reader::{Frame, MIN_CHUNK_LEN, SPARSE_FRAME_FILE, chunk_cbytes};

/// Bytes a stored chunk may exceed its uncompressed size by (C-Blosc2's
/// `BLOSC2_MAX_OVERHEAD` is 32; the rest is slack for unusual writers). Bounds how much is
/// fetched for a chunk whose end the index does not reveal.
const CHUNK_SLACK: u64 = 64 << 10;

/// What remote reads need besides the parsed frame.
#[derive(Debug)]
pub(crate) struct Remote {
    /// The frame object (contiguous) or `chunks.b2frame` (sparse), pinned to the version read
    /// at open.
    pub(crate) obj: Object,
    /// The directory of a sparse frame.
    pub(crate) dir: Option<SparseDir>,
    /// The object's length at open.
    pub(crate) size: u64,
    pub(crate) options: RemoteOptions,
    /// The shared request knobs of `options`, requests at most
    /// [`Limits::max_output_bytes`](crate::Limits::max_output_bytes) long.
    requests: scifmt_io::RemoteOptions,
    /// Distinct stored offsets in ascending order (contiguous frames): a chunk ends at or
    /// before the next one.
    sorted_offsets: Vec<u64>,
    /// Uncompressed chunk sizes, for frames whose chunks vary in size (fetched once).
    sizes: OnceLock<Vec<usize>>,
    /// Bytes fetched to open the frame (header, metalayers, index, trailer and the
    /// speculative head and tail around them). Read by `virtualize` (its `bytes_read`).
    #[cfg_attr(
        not(feature = "references"),
        expect(dead_code, reason = "only virtualize reports it")
    )]
    pub(crate) opened_bytes: u64,
}

/// The directory (prefix) of a sparse frame, where its chunk files are.
#[derive(Debug, Clone)]
pub(crate) struct SparseDir {
    pub(crate) path: Path,
    /// Its URL in messages.
    pub(crate) url: String,
}

impl SparseDir {
    /// The directory of the sparse frame whose `chunks.b2frame` is `index`.
    pub(crate) fn of_index(index: &Object) -> Self {
        let parts: Vec<_> = index.path().parts().collect();
        let n = parts.len().saturating_sub(1);
        let url = index.url();
        let url = url
            .strip_suffix(SPARSE_FRAME_FILE)
            .map_or(url, |u| u.trim_end_matches('/'));
        Self {
            path: parts.into_iter().take(n).collect(),
            url: url.to_owned(),
        }
    }

    /// The directory `path` of `store`, named `url`.
    pub(crate) fn new(path: Path, url: String) -> Self {
        Self { path, url }
    }

    /// The object `name` in the directory (not pinned to a version).
    pub(crate) fn object(&self, store: &Arc<dyn object_store::ObjectStore>, name: &str) -> Object {
        Object::new(
            Arc::clone(store),
            child(&self.path, name),
            join_url(&self.url, name),
        )
    }
}

/// The bytes of every range of `obj` in `ranges`, fetched by [`Object::get_ranges`] (one round
/// of concurrent requests, pinned to the version `obj` holds) under `requests`.
pub(crate) async fn fetch_ranges(
    obj: &Object,
    ranges: &[Range<u64>],
    requests: &scifmt_io::RemoteOptions,
) -> Result<Vec<Bytes>> {
    // No object (and none was ever seen, a store without ETags): gone since it was opened.
    obj.get_ranges(ranges, requests)
        .await?
        .ok_or_else(|| Error::Changed {
            url: obj.url().to_owned(),
        })
}

/// The shared request knobs of `options`, with requests at most
/// [`Limits::max_output_bytes`](crate::Limits::max_output_bytes) long.
pub(crate) fn request_options(options: &RemoteOptions) -> scifmt_io::RemoteOptions {
    let cap = (options.format.limits.max_output_bytes as u64).min(options.max_request_bytes);
    options.shared().with_max_request_bytes(cap)
}

/// `Error::Remote` with `NotFound` for an object that is not there.
pub(crate) fn not_found(obj: &Object) -> Error {
    Error::Remote {
        url: obj.url().to_owned(),
        source: object_store::Error::NotFound {
            path: obj.path().to_string(),
            source: "no such object".into(),
        },
    }
}

impl Remote {
    pub(crate) fn new(
        obj: Object,
        dir: Option<SparseDir>,
        size: u64,
        options: RemoteOptions,
        sorted_offsets: Vec<u64>,
        opened_bytes: u64,
    ) -> Self {
        Self {
            opened_bytes,
            requests: request_options(&options),
            obj,
            dir,
            size,
            options,
            sorted_offsets,
            sizes: OnceLock::new(),
        }
    }

    pub(crate) fn location(&self, frame: &Frame<'_>, i: usize) -> Result<ChunkLocation> {
        frame.index().get(i).copied().ok_or(Error::ChunkIndex {
            index: i,
            nchunks: frame.nchunks(),
        })
    }

    /// Parts of the sparse chunk files `files` (`(number, range, at most so many bytes)`; the
    /// whole file for no range), fetched concurrently. Chunk files are separate objects whose
    /// versions are not known in advance: they are read unpinned, each by its own
    /// [`Object`]; a missing one is an [`Error::Remote`] with `NotFound`.
    async fn chunk_files(
        &self,
        dir: &SparseDir,
        files: Vec<(u64, Option<GetRange>, u64)>,
    ) -> Result<Vec<Bytes>> {
        let store = self.obj.store();
        let jobs: Vec<(Object, Option<GetRange>, u64)> = files
            .into_iter()
            .map(|(num, range, cap)| (dir.object(store, &format!("{num:08X}.chunk")), range, cap))
            .collect();
        stream::iter(jobs)
            .map(|(file, range, cap)| async move {
                match file.get(range, cap, &self.requests).await? {
                    Some(r) => Ok(r.bytes),
                    None => Err(not_found(&file)),
                }
            })
            .buffered(self.options.in_flight())
            .try_collect()
            .await
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
                fetch_ranges(&self.obj, &ranges, &self.requests).await?
            }
            Some(dir) => {
                let files = chunks
                    .iter()
                    .zip(&offs)
                    .map(|(&i, &num)| Ok((num, None, self.max_cbytes(frame, i)?)))
                    .collect::<Result<_>>()?;
                self.chunk_files(dir, files).await?
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
                fetch_ranges(&self.obj, &ranges, &self.requests).await?
            }
            Some(dir) => {
                let files = stored
                    .iter()
                    .map(|&i| match self.location(frame, i)? {
                        ChunkLocation::Stored(num) => Ok((
                            num,
                            Some(GetRange::Bounded(0..MIN_CHUNK_LEN)),
                            MIN_CHUNK_LEN,
                        )),
                        _ => Err(Error::Overflow { what: "chunk" }),
                    })
                    .collect::<Result<_>>()?;
                self.chunk_files(dir, files).await?
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
