//! What a conversion does: target codec, WKW block type, threads, durability, and what to do
//! with an existing target; plus the progress and summary types.

use std::path::PathBuf;

use blosc_chunk::{Blocksize, BloscShuffle, Codec};
pub use scifmt_io::{Cancel, Durability, RemoteOptions};
pub use wkw::BlockType;

/// The compressor of the Zarr inner chunks a conversion to Zarr writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
#[non_exhaustive]
pub enum ZarrCodec {
    /// As webknossos-libs' `copy-dataset` does: `zstd` level 5 with checksum for compressed
    /// (LZ4/LZ4HC) WKW files, no compressor for raw ones.
    #[default]
    Auto,
    /// `zstd` at this level, with its content checksum.
    Zstd {
        /// Compression level (1..=22; negative levels are zstd's fast modes).
        level: i32,
    },
    /// No compressor: the chunks are the raw block bytes.
    None,
    /// The Zarr v3 `blosc` codec: chunks in the Blosc1 format, byte-identical to what
    /// C-Blosc 1.21 (zarr-python through numcodecs, zarrs, tensorstore) writes with these
    /// settings. [`ZarrCodec::blosc`] gives zarr-python's defaults for the rest.
    Blosc {
        /// The compressor inside the Blosc chunks (the `cname`): one of
        /// [`Codec::BLOSC1`](blosc_chunk::Codec::BLOSC1).
        cname: Codec,
        /// Compression level 0–9 (0 stores the data uncompressed).
        clevel: u8,
        /// The filter; [`BloscShuffle::AutoShuffle`] chooses as zarr-python does: bit shuffle
        /// for 1-byte voxels, byte shuffle for wider ones.
        shuffle: BloscShuffle,
        /// Item size the filter works on; `None` is the voxel type's size.
        typesize: Option<u8>,
        /// Block size; automatic lets Blosc choose (as C-Blosc 1.21 does).
        blocksize: Blocksize,
    },
}

impl ZarrCodec {
    /// The `blosc` codec with `cname` at `clevel`, the shuffle zarr-python chooses for the
    /// voxel type, the voxel size as type size, and automatic blocks.
    #[must_use]
    pub fn blosc(cname: Codec, clevel: u8) -> Self {
        Self::Blosc {
            cname,
            clevel,
            shuffle: BloscShuffle::AutoShuffle,
            typesize: None,
            blocksize: Blocksize::Auto,
        }
    }
}

/// What to do when the target already exists.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
#[non_exhaustive]
pub enum Existing {
    /// Refuse: [`Error::TargetExists`](crate::Error::TargetExists).
    #[default]
    Refuse,
    /// Replace the target: the new one is built complete beside it (a hidden sibling
    /// `.{name}.scifmt-overwrite`, or that prefix on a store) and put in its place only then, so
    /// an interruption leaves the old target (and the unfinished new one, which
    /// [`Existing::Resume`] continues) or the new one. See the crate docs.
    Overwrite,
    /// Continue an interrupted conversion: shards and files already complete are kept, the
    /// rest is written. Refused if the interrupted run used other options.
    Resume,
}

/// Options of a conversion, built as `ConvertOptions::default().with_…(…)`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ConvertOptions {
    /// Compressor of the Zarr inner chunks (conversions to Zarr).
    pub codec: ZarrCodec,
    /// Block type of the WKW files written (conversions to WKW); default LZ4.
    pub block_type: BlockType,
    /// Worker threads; 0 (the default) uses every core.
    pub threads: usize,
    /// Whether each written file is fsynced before it is renamed into place.
    pub durability: Durability,
    /// What to do with an existing target.
    pub existing: Existing,
    /// Allocation caps for the WKW files read.
    pub limits: wkw::Limits,
    /// Requests to object stores (sources and targets given as URLs): concurrency, range
    /// coalescing, read retries, multipart threshold and part size (default: objects from
    /// 8 MiB are multipart uploads in parts of 8 MiB).
    pub remote: RemoteOptions,
    /// Raised to stop the conversion between batches of blocks ([`Error::Cancelled`](crate::Error::Cancelled));
    /// what was completed stays, so the conversion can be resumed.
    pub cancel: Cancel,
}

impl Default for ConvertOptions {
    fn default() -> Self {
        Self {
            codec: ZarrCodec::Auto,
            block_type: BlockType::Lz4,
            threads: 0,
            durability: Durability::None,
            existing: Existing::Refuse,
            limits: wkw::Limits::default(),
            remote: RemoteOptions::default().with_multipart(8 << 20, 8 << 20),
            cancel: Cancel::new(),
        }
    }
}

impl ConvertOptions {
    /// Sets the Zarr codec.
    #[must_use]
    pub fn with_codec(mut self, codec: ZarrCodec) -> Self {
        self.codec = codec;
        self
    }

    /// Sets the WKW block type.
    #[must_use]
    pub fn with_block_type(mut self, block_type: BlockType) -> Self {
        self.block_type = block_type;
        self
    }

    /// Sets the number of worker threads (0: every core).
    #[must_use]
    pub fn with_threads(mut self, threads: usize) -> Self {
        self.threads = threads;
        self
    }

    /// Sets the durability of written files.
    #[must_use]
    pub fn with_durability(mut self, durability: Durability) -> Self {
        self.durability = durability;
        self
    }

    /// Sets what happens to an existing target.
    #[must_use]
    pub fn with_existing(mut self, existing: Existing) -> Self {
        self.existing = existing;
        self
    }

    /// Sets the options of object-store requests.
    #[must_use]
    pub fn with_remote(mut self, remote: RemoteOptions) -> Self {
        self.remote = remote;
        self
    }

    /// Sets the flag that stops the conversion (shared with the caller, who raises it).
    #[must_use]
    pub fn with_cancel(mut self, cancel: Cancel) -> Self {
        self.cancel = cancel;
        self
    }

    /// Sets the allocation caps for WKW input.
    #[must_use]
    pub fn with_limits(mut self, limits: wkw::Limits) -> Self {
        self.limits = limits;
        self
    }
}

/// Progress of a conversion or verification, reported after every shard (WKW file).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Progress {
    /// Shards (files) done so far in the current array.
    pub done: u64,
    /// Shards (files) of the current array.
    pub total: u64,
    /// The array (mag directory, or its URL) being converted.
    pub array: PathBuf,
}

/// What a conversion did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Summary {
    /// Arrays (mags) converted.
    pub arrays: u64,
    /// Shards (Zarr) or files (WKW) written.
    pub shards_written: u64,
    /// Shards or files kept because an interrupted run had completed them.
    pub shards_skipped: u64,
    /// Source shards or files whose blocks were all zero: nothing is written for them when
    /// the target is Zarr (absent shards read as the fill value 0).
    pub shards_empty: u64,
    /// Non-zero blocks (inner chunks) written.
    pub blocks: u64,
    /// Bytes read from source shards or files.
    pub bytes_in: u64,
    /// Bytes written to target shards or files.
    pub bytes_out: u64,
}

impl Summary {
    pub(crate) fn add(&mut self, other: &Self) {
        self.arrays += other.arrays;
        self.shards_written += other.shards_written;
        self.shards_skipped += other.shards_skipped;
        self.shards_empty += other.shards_empty;
        self.blocks += other.blocks;
        self.bytes_in += other.bytes_in;
        self.bytes_out += other.bytes_out;
    }
}

/// The format a conversion writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Format {
    /// Sharded Zarr v3 (webKNOSSOS `zarr3` datasets).
    Zarr3,
    /// WKW (webKNOSSOS `wkw` datasets).
    Wkw,
}

impl Format {
    /// `"zarr3"` or `"wkw"`, as webKNOSSOS names the data formats.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::Zarr3 => "zarr3",
            Self::Wkw => "wkw",
        }
    }
}
