//! Frames and b2nd arrays on object stores (feature `object_store`): S3 and S3-compatible
//! stores, GCS, Azure, HTTP, local files and memory through the [`object_store`] crate.
//!
//! # Requests
//! Opening costs at most two round trips: the first fetches a speculative head range
//! (`0..head_bytes`) and a speculative tail (the last `tail_bytes`, a suffix range that also
//! reveals the object's length and ETag) concurrently; the second, needed only when the header
//! with its metalayers or the index chunk plus trailer were not inside them, fetches exactly the
//! missing ranges. Opening a sparse-frame prefix with [`RemoteFrame::open`] costs one more
//! round trip (the requests on `prefix` itself fail first); [`RemoteFrame::open_sparse`] or the
//! key `prefix/chunks.b2frame` avoid it.
//!
//! Chunk reads fetch the byte ranges of the chunks they touch (a chunk's extent is bounded by
//! the next chunk's offset in the index, and checked against the `cbytes` in its header),
//! merging touching ranges and bridging gaps up to [`coalesce_gap`](scifmt_io::RemoteOptions::coalesce_gap) within a 10 %
//! byte budget (or as needed to fit [`concurrency`](scifmt_io::RemoteOptions::concurrency) requests), with at most
//! `concurrency` requests in flight: one round of concurrent requests per call.
//! Chunks are then decoded in parallel, on scoped threads started by the calling task (the
//! async methods do this CPU work inline; move it off latency-sensitive executors if needed).
//!
//! # Consistency
//! Requests go through [`scifmt_io::Object`], the one pinned ranged read of the scifmt crates:
//! the first response of the open pins the frame object (or `chunks.b2frame`) to its ETag,
//! every later request carries `If-Match` with it and the ETag of each response is compared
//! with it, so a contiguous frame replaced (or deleted) while it is read yields
//! [`Error::Changed`](crate::Error::Changed) and never a mix of two versions; open it again to
//! read the new one (stores that report no ETag, such as some HTTP servers, cannot be checked
//! this way). The two requests of the first round must come from the same version (same ETag
//! and length; the open is retried once otherwise). A sparse frame's chunk files are separate
//! objects whose ETags are not known in advance: the index file is read consistently, each
//! chunk file is read unpinned and validated (length, `nbytes`), and a chunk file deleted by a
//! concurrent rewrite is an [`Error::Remote`](crate::Error::Remote) with `NotFound`, but a
//! reader racing a writer that rewrites chunk files in place may see a chunk of the new
//! version; [`RemoteFrame::put_sparse`] never rewrites chunk files in place.
//!
//! # Limits
//! A hostile server can return anything: every response must be the range requested (a store
//! may only cut a range at the object's end), a body cut short is fetched again
//! ([`read_retries`](scifmt_io::RemoteOptions::read_retries) times) and a body longer than
//! asked for is refused before it is read; what still fails is an
//! [`Error::Remote`](crate::Error::Remote) naming the object. The metadata fetched at open is
//! checked against [`Limits::max_output_bytes`](crate::Limits::max_output_bytes) before it is
//! fetched ([`Error::LimitExceeded`](crate::Error::LimitExceeded)), no single request is longer
//! than that limit, and sizes read from the frame are checked against the object's length and
//! the [`Limits`](crate::Limits) as in local reads.
//!
//! # Writes
//! Every object is written by [`scifmt_io::put`] (see [`scifmt_io::Upload`]): one `PUT` below
//! [`multipart_threshold`](scifmt_io::RemoteOptions::multipart_threshold), a multipart upload
//! from it on, aborted if it fails; create-only puts under [`WriteMode::Conditional`] (with a
//! `HEAD` check before a multipart upload, and on stores without create-only puts).

mod b2nd;
mod blocking;
mod frame;
mod open;
mod parallel;
mod read;
mod write;

pub use b2nd::RemoteB2nd;
pub use blocking::{BlockingRemoteB2nd, BlockingRemoteFrame};
pub use frame::RemoteFrame;

use crate::limits::Limits;

/// Options for remote reads and writes: the request knobs every scifmt format shares
/// ([`scifmt_io::RemoteOptions`], set with its `with_*` methods) plus this crate's own in
/// [`RemoteOptions::format`](scifmt_io::RemoteOptions::format) ([`RemoteFrameOptions`]: the
/// speculative head and tail fetched at open, and the allocation limits).
///
/// This crate's defaults: [`concurrency`](scifmt_io::RemoteOptions::concurrency) 8;
/// [`coalesce_gap`](scifmt_io::RemoteOptions::coalesce_gap) 256 KiB;
/// [`max_request_bytes`](scifmt_io::RemoteOptions::max_request_bytes) unbounded (a request is
/// still at most [`Limits::max_output_bytes`](crate::Limits::max_output_bytes) long, unless one
/// chunk is longer); [`read_retries`](scifmt_io::RemoteOptions::read_retries) 3 (bodies cut
/// short or failing while streaming, on top of the store client's own retries);
/// [`conflict_retries`](scifmt_io::RemoteOptions::conflict_retries) 0 (puts read nothing first:
/// a lost conditional put is final); [`write_mode`](scifmt_io::RemoteOptions::write_mode)
/// [`WriteMode::Overwrite`]; multipart uploads from 64 MiB in parts of 16 MiB.
///
/// [`WriteMode::Conditional`] makes [`RemoteFrame::put`] and [`RemoteFrame::put_sparse`]
/// create-only (`PutMode::Create`, `If-None-Match: *`): an existing object is
/// [`Error::Conflict`](crate::Error::Conflict). Multipart uploads cannot be conditional: from
/// the multipart threshold on, the key is checked with a `HEAD` request first, which does not
/// exclude a concurrent writer between the check and the upload.
///
/// ```
/// # #[cfg(feature = "object_store")] {
/// use blosc2_frame::{Limits, RemoteOptions};
/// let o = RemoteOptions::default()
///     .with_concurrency(16)
///     .with_coalesce_gap(1 << 20)
///     .map_format(|f| f.with_head_bytes(4096).with_limits(Limits::default()));
/// assert_eq!(o.concurrency, 16);
/// assert_eq!(o.format.head_bytes, 4096);
/// # }
/// ```
pub type RemoteOptions = scifmt_io::RemoteOptions<RemoteFrameOptions>;

/// How remote writes put objects (shared by the scifmt crates; see [`RemoteOptions`]).
pub use scifmt_io::WriteMode;

/// This crate's own part of [`RemoteOptions`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct RemoteFrameOptions {
    /// Speculative head range fetched at open (default 64 KiB, at least the 87-byte fixed
    /// header is fetched).
    pub head_bytes: u64,
    /// Speculative tail fetched at open (default 64 KiB, at least the 23-byte fixed tail is
    /// fetched): the index chunk and trailer of most frames fit, so opening takes one round
    /// trip.
    pub tail_bytes: u64,
    /// Allocation limits, as for local reads.
    pub limits: Limits,
}

impl Default for RemoteFrameOptions {
    fn default() -> Self {
        Self {
            head_bytes: 64 << 10,
            tail_bytes: 64 << 10,
            limits: Limits::default(),
        }
    }
}

impl RemoteFrameOptions {
    /// Sets [`RemoteFrameOptions::head_bytes`].
    #[must_use]
    pub fn with_head_bytes(mut self, bytes: u64) -> Self {
        self.head_bytes = bytes;
        self
    }

    /// Sets [`RemoteFrameOptions::tail_bytes`].
    #[must_use]
    pub fn with_tail_bytes(mut self, bytes: u64) -> Self {
        self.tail_bytes = bytes;
        self
    }

    /// Sets [`RemoteFrameOptions::limits`].
    #[must_use]
    pub fn with_limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }
}

impl scifmt_io::FormatOptions for RemoteFrameOptions {
    fn tune_defaults(o: &mut RemoteOptions) {
        o.concurrency = 8;
        o.coalesce_gap = 256 << 10;
        o.max_request_bytes = u64::MAX;
        o.read_retries = 3;
        o.conflict_retries = 0;
        o.write_mode = WriteMode::Overwrite;
        o.multipart_threshold = 64 << 20;
        o.part_size = 16 << 20;
    }
}
