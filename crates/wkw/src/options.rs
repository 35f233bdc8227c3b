//! How a dataset treats missing or corrupt files, mismatching headers and durability, and
//! which threads do its work.

use crate::limits::Limits;
pub use scifmt_io::{Cancel, Durability};

/// What a read does with data files that are missing or cannot be parsed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum MissingOrCorrupt {
    /// Missing files read as the fill value 0; a file that exists but whose header or jump
    /// table cannot be read or validated is an **error**. Writes refuse to overwrite such a file.
    #[default]
    Error,
    /// Reference-compatible: a file whose header or jump table cannot be read reads as zeros and
    /// is rewritten from scratch by a write, exactly like `wkwrap`. Errors inside block data
    /// (truncated blocks, undecodable LZ4) stay errors, as in the reference.
    Zeros,
}

/// How strictly data-file headers must agree with `header.wkw`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum HeaderCheck {
    /// Every field except dataOffset must be equal (and `header.wkw` must have dataOffset 0).
    #[default]
    Strict,
    /// Each file is decoded with its own block type (what the Rust reference does, e.g. for
    /// datasets whose files were compressed without updating `header.wkw`) and a non-zero
    /// dataOffset in `header.wkw` is ignored. Geometry, voxel type and voxel size must still
    /// match, since voxels cannot be addressed otherwise.
    Lenient,
}

/// Which threads process the blocks and files of one read, write, `compress` or `verify`.
#[derive(Debug, Clone, Copy, Default)]
#[non_exhaustive]
pub enum Threads {
    /// Rayon's current pool: the global one, or the pool of a surrounding
    /// `rayon::ThreadPool::install`. Called from a thread outside that pool, the calling thread
    /// works too and the pool's threads join in. Without the `parallel` feature this is the
    /// same as [`Threads::Caller`].
    #[default]
    Rayon,
    /// Only the calling thread: no hand-off to a pool (the fastest choice for small boxes, or
    /// when the application already runs one read per core). With it (or without the
    /// `parallel` feature) a write also closes the compressed file it replaced before
    /// returning; the other choices close that file on a background thread, because the kernel
    /// frees the old file's pages inside that `close` (about a third of a whole-file LZ4 write
    /// of 16 MiB).
    Caller,
    /// This pool (it must live for the rest of the process, e.g. one made once and kept in a
    /// `static`, or `Box::leak`ed). Called from a thread outside the pool, the calling thread
    /// works too and the pool's threads join in; called from one of its threads, the work is
    /// split there.
    #[cfg(feature = "parallel")]
    #[cfg_attr(docsrs, doc(cfg(feature = "parallel")))]
    Pool(&'static rayon::ThreadPool),
}

/// Pools compare by identity.
impl PartialEq for Threads {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Self::Rayon, Self::Rayon) | (Self::Caller, Self::Caller) => true,
            #[cfg(feature = "parallel")]
            (Self::Pool(a), Self::Pool(b)) => std::ptr::eq(*a, *b),
            _ => false,
        }
    }
}

impl Eq for Threads {}

/// Options of a [`crate::Dataset`] (and of [`crate::compress`] / [`crate::verify`]).
///
/// Not `Copy` since 0.2.0 (it holds the shared [`Cancel`] flag): clone it to reuse it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Options {
    /// Allocation bounds.
    pub limits: Limits,
    /// Missing/corrupt file policy.
    pub missing_or_corrupt: MissingOrCorrupt,
    /// Header comparison policy.
    pub header_check: HeaderCheck,
    /// fsync policy for writes.
    pub durability: Durability,
    /// Number of parsed file headers/jump tables kept for repeated reads (0 disables the cache).
    pub cache_capacity: usize,
    /// Which threads do the work.
    pub threads: Threads,
    /// Raised to stop a long operation between units of work: [`crate::compress`] and
    /// [`crate::verify`] between files and batches of blocks, reads and writes between block
    /// rows and files (also of remote datasets, between files). The operation then fails with
    /// [`Error::Cancelled`](crate::Error::Cancelled); what it completed stays complete (every
    /// compressed or converted file is still replaced whole, never half-written). A dataset
    /// opened with a flag keeps it: once raised, every later long call fails, so open a
    /// dataset per cancellable call (or per flag).
    pub cancel: Cancel,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            limits: Limits::default(),
            missing_or_corrupt: MissingOrCorrupt::default(),
            header_check: HeaderCheck::default(),
            durability: Durability::default(),
            cache_capacity: 64,
            threads: Threads::default(),
            cancel: Cancel::new(),
        }
    }
}

impl Options {
    /// Sets [`Options::limits`].
    #[must_use]
    pub fn with_limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }
    /// Sets [`Options::missing_or_corrupt`].
    #[must_use]
    pub fn with_missing_or_corrupt(mut self, policy: MissingOrCorrupt) -> Self {
        self.missing_or_corrupt = policy;
        self
    }
    /// Sets [`Options::header_check`].
    #[must_use]
    pub fn with_header_check(mut self, check: HeaderCheck) -> Self {
        self.header_check = check;
        self
    }
    /// Sets [`Options::durability`].
    #[must_use]
    pub fn with_durability(mut self, durability: Durability) -> Self {
        self.durability = durability;
        self
    }
    /// Sets [`Options::cache_capacity`].
    #[must_use]
    pub fn with_cache_capacity(mut self, entries: usize) -> Self {
        self.cache_capacity = entries;
        self
    }
    /// Sets [`Options::threads`].
    #[must_use]
    pub fn with_threads(mut self, threads: Threads) -> Self {
        self.threads = threads;
        self
    }
    /// Sets [`Options::cancel`], the flag (shared with the caller, who raises it) that stops
    /// long operations.
    #[must_use]
    pub fn with_cancel(mut self, cancel: Cancel) -> Self {
        self.cancel = cancel;
        self
    }
}
