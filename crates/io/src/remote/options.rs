//! [`RemoteOptions`]: how requests to an object store are made, shared by every format crate.

use std::fmt::Debug;

/// How objects are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
#[non_exhaustive]
pub enum WriteMode {
    /// Replace whatever is stored under the key (an unconditional put; the last writer wins,
    /// and concurrent read-modify-write writers of one object **lose updates**).
    #[default]
    Overwrite,
    /// Every put is conditional on what the writer saw: on the version it read
    /// (`PutMode::Update`, `If-Match`) when it read the object first, create-only
    /// (`PutMode::Create`, `If-None-Match: *`) otherwise. A lost condition is
    /// [`Error::Conflict`](crate::Error::Conflict) after
    /// [`RemoteOptions::conflict_retries`] attempts. Needs a store that supports conditional
    /// puts (S3 needs the conditional-put setting of its builder).
    Conditional,
}

/// A format crate's own options, carried in [`RemoteOptions::format`] (`()` for none). A
/// format crate implements it to give the shared knobs its own defaults.
pub trait FormatOptions: Clone + Debug + Default {
    /// Adjusts the shared defaults for this format (called by [`RemoteOptions::default`]).
    fn tune_defaults(options: &mut RemoteOptions<Self>) {
        let _ = options;
    }
}

impl FormatOptions for () {}

/// Options for remote reads and writes: the knobs every format shares (each with one meaning
/// in every crate), plus the format's own in [`RemoteOptions::format`].
///
/// Every knob has a `with_*` setter. Format crates name their instance
/// (`wkw::RemoteOptions`, `blosc2_frame::RemoteOptions`) and choose its defaults through
/// [`FormatOptions::tune_defaults`].
///
/// ```
/// use scifmt_io::{RemoteOptions, WriteMode};
/// let o: RemoteOptions = RemoteOptions::default()
///     .with_concurrency(16)
///     .with_coalesce_gap(1 << 20)
///     .with_write_mode(WriteMode::Conditional);
/// assert_eq!(o.concurrency, 16);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct RemoteOptions<F = ()> {
    /// Most requests in flight at once (default 8; 0 counts as 1): a read that needs more
    /// requests costs another round trip, so the planner bridges gaps to fit it.
    pub concurrency: usize,
    /// Largest gap between two byte ranges that one request may bridge (default 64 KiB): gaps
    /// are bridged, smallest first, while the bridged bytes stay within 10 % of the bytes
    /// needed, or while a read would need more than [`RemoteOptions::concurrency`] requests.
    /// Touching ranges always share a request; 0 fetches exactly the bytes needed.
    pub coalesce_gap: u64,
    /// Longest range request (default 8 MiB): requests are not merged beyond it and longer
    /// ranges are split into pieces fetched concurrently.
    pub max_request_bytes: u64,
    /// Extra attempts for a request whose body was cut short or failed while streaming
    /// (default 3), on top of the store client's own retries of failed requests.
    pub read_retries: u32,
    /// How often a writer redoes a read-modify-write after losing a conditional put to another
    /// writer (default 10; after a randomized wait, see [`conflict_backoff`](crate::conflict_backoff));
    /// 0 fails at the first conflict. Writes that read nothing first are not retried.
    pub conflict_retries: u32,
    /// Unconditional or conditional puts (default [`WriteMode::Overwrite`]).
    pub write_mode: WriteMode,
    /// Uploads at least this large are multipart uploads (default 64 MiB; see
    /// [`Upload`](crate::Upload)). Multipart uploads cannot be conditional: `If-Match` puts are
    /// always single requests, and a create-only upload this large is checked with a `HEAD`
    /// request first, which does not exclude a writer that comes in between (a format crate
    /// that needs an atomic create, such as `wkw`'s writers, keeps such puts single).
    pub multipart_threshold: u64,
    /// Size of each part of a multipart upload (default 16 MiB; S3 needs at least 5 MiB for
    /// every part but the last).
    pub part_size: u64,
    /// The format crate's own options.
    pub format: F,
}

impl<F: FormatOptions> Default for RemoteOptions<F> {
    fn default() -> Self {
        let mut o = Self {
            concurrency: 8,
            coalesce_gap: 64 << 10,
            max_request_bytes: 8 << 20,
            read_retries: 3,
            conflict_retries: 10,
            write_mode: WriteMode::Overwrite,
            multipart_threshold: 64 << 20,
            part_size: 16 << 20,
            format: F::default(),
        };
        F::tune_defaults(&mut o);
        o
    }
}

impl<F> RemoteOptions<F> {
    /// Sets [`RemoteOptions::concurrency`].
    #[must_use]
    pub fn with_concurrency(mut self, requests: usize) -> Self {
        self.concurrency = requests;
        self
    }

    /// Sets [`RemoteOptions::coalesce_gap`].
    #[must_use]
    pub fn with_coalesce_gap(mut self, bytes: u64) -> Self {
        self.coalesce_gap = bytes;
        self
    }

    /// Sets [`RemoteOptions::max_request_bytes`] (0 counts as 1).
    #[must_use]
    pub fn with_max_request_bytes(mut self, bytes: u64) -> Self {
        self.max_request_bytes = bytes;
        self
    }

    /// Sets [`RemoteOptions::read_retries`].
    #[must_use]
    pub fn with_read_retries(mut self, retries: u32) -> Self {
        self.read_retries = retries;
        self
    }

    /// Sets [`RemoteOptions::conflict_retries`].
    #[must_use]
    pub fn with_conflict_retries(mut self, retries: u32) -> Self {
        self.conflict_retries = retries;
        self
    }

    /// Sets [`RemoteOptions::write_mode`].
    #[must_use]
    pub fn with_write_mode(mut self, mode: WriteMode) -> Self {
        self.write_mode = mode;
        self
    }

    /// Sets [`RemoteOptions::multipart_threshold`] and [`RemoteOptions::part_size`].
    #[must_use]
    pub fn with_multipart(mut self, threshold: u64, part_size: u64) -> Self {
        self.multipart_threshold = threshold;
        self.part_size = part_size;
        self
    }

    /// Sets [`RemoteOptions::format`].
    #[must_use]
    pub fn with_format(mut self, format: F) -> Self {
        self.format = format;
        self
    }

    /// Changes [`RemoteOptions::format`] in place, e.g.
    /// `.map_format(|f| f.with_head_bytes(4096))`.
    #[must_use]
    pub fn map_format(mut self, change: impl FnOnce(F) -> F) -> Self {
        self.format = change(self.format);
        self
    }

    /// The shared knobs without the format's own options.
    #[must_use]
    pub fn shared(&self) -> RemoteOptions {
        RemoteOptions {
            concurrency: self.concurrency,
            coalesce_gap: self.coalesce_gap,
            max_request_bytes: self.max_request_bytes,
            read_retries: self.read_retries,
            conflict_retries: self.conflict_retries,
            write_mode: self.write_mode,
            multipart_threshold: self.multipart_threshold,
            part_size: self.part_size,
            format: (),
        }
    }

    /// [`RemoteOptions::concurrency`], at least 1.
    #[must_use]
    pub fn in_flight(&self) -> usize {
        self.concurrency.max(1)
    }

    /// The requests for byte ranges of several objects under these options (see
    /// [`coalesce`](crate::coalesce)).
    #[must_use]
    pub fn plan(&self, objects: &[Vec<std::ops::Range<u64>>]) -> Vec<Vec<crate::Request>> {
        crate::coalesce(
            objects,
            self.coalesce_gap,
            self.max_request_bytes,
            self.in_flight(),
        )
    }
}
