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
//! merging touching ranges and bridging gaps up to [`RemoteOptions::coalesce_gap`] within a 10 %
//! byte budget (or as needed to fit [`RemoteOptions::concurrency`] requests), with at most
//! `concurrency` requests in flight: one round of concurrent requests per call.
//! Chunks are then decoded in parallel, on scoped threads started by the calling task (the
//! async methods do this CPU work inline; move it off latency-sensitive executors if needed).
//!
//! # Consistency
//! Every range request after open carries `If-Match` with the ETag seen at open and the ETag of
//! each response is compared with it, so a contiguous frame replaced while it is read yields
//! [`Error::Changed`](crate::Error::Changed) and never a mix of two versions; open it again to
//! read the new one (stores that report no ETag, such as some HTTP servers, cannot be checked
//! this way). The two requests of the first round are checked to return the same ETag
//! and length (the open is retried once otherwise). A sparse frame's chunk files are separate
//! objects whose ETags are not known in advance: the index file is read consistently, each
//! chunk file is validated (length, `nbytes`) and a chunk file deleted by a concurrent rewrite
//! is an error, but a reader racing a writer that rewrites chunk files in place may see a
//! chunk of the new version; [`RemoteFrame::put_sparse`] never rewrites chunk files in place.
//!
//! # Limits
//! A hostile server can return anything: every response's length is checked against the range
//! requested (a short body is retried, then [`Error::Truncated`](crate::Error::Truncated)), the
//! metadata fetched at open and every single request are bounded by
//! [`Limits::max_output_bytes`](crate::Limits::max_output_bytes), and sizes read from the frame
//! are checked against the object's length and the [`Limits`](crate::Limits) as in local reads.

mod b2nd;
mod blocking;
mod fetch;
mod frame;
#[cfg(test)]
mod tests;
mod write;

pub use b2nd::RemoteB2nd;
pub use blocking::{BlockingRemoteB2nd, BlockingRemoteFrame};
pub use frame::RemoteFrame;

use crate::Limits;

/// How objects are written by [`RemoteFrame::put`] and [`RemoteFrame::put_sparse`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum WriteMode {
    /// Replace whatever is stored under the key (an unconditional put; the last writer wins).
    #[default]
    Overwrite,
    /// Write only if no object exists under the key (`PutMode::Create`, `If-None-Match: *`);
    /// otherwise [`Error::Conflict`](crate::Error::Conflict). Multipart uploads cannot be
    /// conditional: above the multipart threshold the key is checked with a `HEAD` request
    /// first, which does not exclude a concurrent writer between the check and the upload.
    Create,
}

/// Options for remote reads and writes.
///
/// ```
/// # #[cfg(feature = "object_store")] {
/// use blosc2_frame::{Limits, RemoteOptions};
/// let o = RemoteOptions::default()
///     .with_concurrency(16)
///     .with_coalesce_gap(1 << 20)
///     .with_limits(Limits::default());
/// assert_eq!(o.concurrency, 16);
/// # }
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct RemoteOptions {
    /// Most requests in flight at once (default 8; 0 counts as 1).
    pub concurrency: usize,
    /// Largest gap between two byte ranges that one request may bridge (default 256 KiB).
    /// Gaps are bridged, smallest first, while the extra bytes stay within 10 % of the bytes
    /// needed, or while a read would otherwise need more than [`RemoteOptions::concurrency`]
    /// requests (so that it takes one round of concurrent requests); touching ranges always
    /// share a request. 0 fetches exactly the bytes needed.
    pub coalesce_gap: u64,
    /// Speculative head range fetched at open (default 64 KiB, at least the 87-byte fixed
    /// header is fetched).
    pub head_bytes: u64,
    /// Speculative tail fetched at open (default 64 KiB, at least the 23-byte fixed tail is
    /// fetched): the index chunk and trailer of most frames fit, so opening takes one round
    /// trip.
    pub tail_bytes: u64,
    /// Extra attempts for a request whose body was cut short or failed while streaming
    /// (default 3), on top of the store client's own retries of failed requests (for HTTP
    /// stores: 5xx responses and connection errors, see `object_store::RetryConfig`).
    pub retries: u32,
    /// Objects at least this large are uploaded in parts (default 64 MiB).
    pub multipart_threshold: usize,
    /// Size of each part of a multipart upload (default 16 MiB; S3 needs at least 5 MiB for
    /// every part but the last).
    pub part_size: usize,
    /// Overwrite or create-only writes (default [`WriteMode::Overwrite`]).
    pub write_mode: WriteMode,
    /// Allocation limits, as for local reads.
    pub limits: Limits,
}

impl Default for RemoteOptions {
    fn default() -> Self {
        Self {
            concurrency: 8,
            coalesce_gap: 256 << 10,
            head_bytes: 64 << 10,
            tail_bytes: 64 << 10,
            retries: 3,
            multipart_threshold: 64 << 20,
            part_size: 16 << 20,
            write_mode: WriteMode::Overwrite,
            limits: Limits::default(),
        }
    }
}

impl RemoteOptions {
    /// Sets [`RemoteOptions::concurrency`].
    #[must_use]
    pub fn with_concurrency(mut self, n: usize) -> Self {
        self.concurrency = n;
        self
    }

    /// Sets [`RemoteOptions::coalesce_gap`].
    #[must_use]
    pub fn with_coalesce_gap(mut self, bytes: u64) -> Self {
        self.coalesce_gap = bytes;
        self
    }

    /// Sets [`RemoteOptions::head_bytes`].
    #[must_use]
    pub fn with_head_bytes(mut self, bytes: u64) -> Self {
        self.head_bytes = bytes;
        self
    }

    /// Sets [`RemoteOptions::tail_bytes`].
    #[must_use]
    pub fn with_tail_bytes(mut self, bytes: u64) -> Self {
        self.tail_bytes = bytes;
        self
    }

    /// Sets [`RemoteOptions::retries`].
    #[must_use]
    pub fn with_retries(mut self, n: u32) -> Self {
        self.retries = n;
        self
    }

    /// Sets [`RemoteOptions::multipart_threshold`] and [`RemoteOptions::part_size`].
    #[must_use]
    pub fn with_multipart(mut self, threshold: usize, part_size: usize) -> Self {
        self.multipart_threshold = threshold;
        self.part_size = part_size;
        self
    }

    /// Sets [`RemoteOptions::write_mode`].
    #[must_use]
    pub fn with_write_mode(mut self, mode: WriteMode) -> Self {
        self.write_mode = mode;
        self
    }

    /// Sets [`RemoteOptions::limits`].
    #[must_use]
    pub fn with_limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    pub(crate) fn in_flight(&self) -> usize {
        self.concurrency.max(1)
    }
}
