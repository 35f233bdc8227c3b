#![doc = include_str!("../README.md")]

mod batches;
mod codec;
mod conversion;
mod dataset;
mod decode;
mod error;
mod mag;
mod meta;
mod options;
mod plan;
mod shard;
mod target;
mod verify;
mod virtualize;

pub use crate::{
    conversion::{convert, convert_mag_to_wkw, convert_mag_to_zarr3},
    dataset::{DatasetMag, PROPERTIES_JSON, Source, dataset_mags, detect},
    error::{Error, Result},
    meta::ZARR_JSON,
    options::{
        BlockType, Cancel, ConvertOptions, Durability, Existing, Format, Progress, RemoteOptions,
        Summary, ZarrCodec,
    },
    plan::{Plan, Unit, convert_units, finish, plan},
    target::{MARKER, STAGE_TAG},
    verify::{Difference, VerifyReport, verify},
    virtualize::{VirtualizeOptions, VirtualizeSummary, virtualize, virtualize_all, virtualize_at},
};

/// Where a conversion reads and writes: a local path or a key prefix on an object store.
pub use scifmt_io::{Location, StoreLocation};

/// The virtual references [`virtualize`] streams, where it streams them, and the kerchunk
/// writer (`scifmt-io`'s; its `IcechunkWriter` needs scifmt-io's feature `icechunk`).
pub use scifmt_io::{Checksum, ChunkReference, KerchunkWriter, ReferenceSink};

/// The `blosc-chunk` crate, whose Blosc vocabulary [`ZarrCodec::Blosc`] takes: the `cname`
/// ([`blosc_chunk::Codec`]), the shuffle ([`blosc_chunk::BloscShuffle`]) and the block size
/// ([`blosc_chunk::Blocksize`]), with their names and parsers.
pub use blosc_chunk;

/// The `object_store` crate [`Location::store`] takes a store of (the version `scifmt-io`
/// builds on).
pub use scifmt_io::object_store;
