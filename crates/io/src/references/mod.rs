//! Virtual Zarr v3 references (feature `references`): chunks of a Zarr v3 hierarchy that are
//! byte ranges of other files or objects, read in place.
//!
//! * `chunk`: the vocabulary — [`ChunkReference`](crate::ChunkReference) (which chunk, where
//!   its bytes are, the source's [`Checksum`](crate::Checksum)), the
//!   [`ReferenceSink`](crate::ReferenceSink) a producer streams nodes and references into, and
//!   chunk keys from a `chunk_key_encoding`.
//! * `kerchunk`: [`KerchunkWriter`](crate::KerchunkWriter), the kerchunk JSON writer (streamed).
//! * `parquet` (feature `parquet`): [`KerchunkParquetWriter`](crate::KerchunkParquetWriter),
//!   kerchunk's Parquet reference directory, with `zarr_v2`: the Zarr v2 form of the nodes.
//! * `reader` (with `zarrs`): [`ReferenceStore`](crate::ReferenceStore), zarrs' readable storage
//!   over a kerchunk JSON file, checking each source's checksum.
//! * `icechunk` (feature `icechunk`): [`IcechunkWriter`](crate::IcechunkWriter), an Icechunk
//!   repository of virtual references.

pub(crate) mod chunk;
#[cfg(feature = "icechunk")]
pub(crate) mod icechunk;
pub(crate) mod kerchunk;
#[cfg(feature = "parquet")]
pub(crate) mod parquet;
#[cfg(feature = "zarrs")]
pub(crate) mod reader;
#[cfg(feature = "parquet")]
pub(crate) mod zarr_v2;
