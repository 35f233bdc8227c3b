#![doc = include_str!("../README.md")]
#![cfg_attr(docsrs, feature(doc_cfg))]

mod cancel;
#[cfg(feature = "object_store")]
mod credentials;
mod durable;
mod error;
#[cfg(feature = "object_store")]
mod location;
mod overlap;
mod prefetched;
mod read_at;
mod redact;
#[cfg(feature = "references")]
mod references;
#[cfg(feature = "object_store")]
mod remote;
mod replace_dir;

pub use crate::cancel::Cancel;
#[cfg(feature = "object_store")]
pub use crate::credentials::{credentials_help, store_error_message};
pub use crate::durable::{Durability, Staged, commit, sync_dir, write_atomically};
pub use crate::error::Overlap;
pub use crate::error::{Error, Result};
#[cfg(feature = "object_store")]
pub use crate::location::{
    Listed, Location, RangeReader, SCHEMES, Sink, StoreLocation, node_names,
};
pub use crate::overlap::{ensure_apart, is_url, overlap};
pub use crate::prefetched::Prefetched;
pub use crate::read_at::ReadAt;
pub use crate::redact::redact;
#[cfg(feature = "icechunk")]
pub use crate::references::icechunk::{IcechunkCommit, IcechunkWriter, UpdateCounts};
#[cfg(feature = "parquet")]
pub use crate::references::parquet::{DEFAULT_RECORD_SIZE, KerchunkParquetWriter, SORT_BATCH};
#[cfg(feature = "zarrs")]
#[cfg(feature = "references")]
pub use crate::references::reader::{
    DEFAULT_MAX_REFERENCE_BYTES, DEFAULT_READ_AHEAD, ReferenceStore,
};
#[cfg(feature = "references")]
pub use crate::references::{
    chunk::{
        Checksum, ChunkReference, ReferenceSink, container_url, reference_path, reference_url,
    },
    kerchunk::{KerchunkSummary, KerchunkWriter},
};
#[cfg(feature = "https")]
pub use crate::remote::store::install_tls_provider;
#[cfg(feature = "zarrs")]
pub use crate::remote::zarrs_store::ZarrsStore;
#[cfg(feature = "object_store")]
pub use crate::remote::{
    object::{Object, Response},
    options::{FormatOptions, RemoteOptions, WriteMode},
    plan::{Request, assemble, coalesce},
    retry::conflict_backoff,
    runtime::{block_on, handle, outside_runtime, runtime},
    store::{
        Access, StoreUrl, child, is_condition_failure, join_url, normalize_etag, store_for_url,
        store_url,
    },
    upload::{Upload, put},
};
pub use crate::replace_dir::{build_dir, replace_dir, sibling};
pub use bytes;
#[cfg(feature = "object_store")]
pub use object_store;
/// zarrs' Zarr v3 metadata model, whose group and array documents a [`ReferenceSink`] takes.
#[cfg(feature = "references")]
pub use zarrs_metadata;
