//! `scifmt zarr read`: a Zarr v2 or v3 array through zarrs, with our `blosc` (blosc-chunk) and
//! `offset` / `pad` codecs; sharded arrays too (`sharding_indexed`, `crc32c`).

use std::path::PathBuf;
use std::sync::Arc;

use clap::{Args, Subcommand};
use zarrs::array::{Array, ArrayBytes, ArraySubset};
use zarrs::filesystem::FilesystemStore;
use zarrs::storage::ReadableStorageTraits;
use zarrs::storage::storage_adapter::async_to_sync::{
    AsyncToSyncBlockOn, AsyncToSyncStorageAdapter,
};
use zarrs_object_store::AsyncObjectStore;

use crate::args::{Region, parse_region, resolve_region};
use crate::fail::{At, CliResult, Fail, describe};
use crate::guard::{OverwriteFlag, file_output};
use crate::inout::write_output;
use crate::remote;
use scifmt_io::StoreLocation;

/// `scifmt zarr`.
#[derive(Debug, Subcommand)]
pub(crate) enum Cmd {
    /// Write C-order little-endian bytes of a Zarr v2 or v3 array (or a region of it).
    #[command(
        after_help = "Examples:\n  scifmt zarr read store.zarr out.raw --region 0:64,10:20\n  scifmt zarr read store.zarr - --region 0:1,: | od -An -tu2\n  scifmt zarr read s3://bucket/store.zarr out.raw --region 0:64,10:20"
    )]
    Read(ReadArgs),
}

impl Cmd {
    /// Runs the subcommand.
    pub(crate) fn run(self) -> CliResult {
        match self {
            Self::Read(a) => read(&a),
        }
    }
}

/// `zarr read`.
#[derive(Debug, Args)]
pub(crate) struct ReadArgs {
    /// Array directory (holding zarr.json or .zarray), or its URL.
    store: PathBuf,
    /// Output file (`-`: stdout).
    output: PathBuf,
    /// START:STOP per dimension (STOP exclusive; empty bounds = array edges).
    #[arg(long, value_parser = parse_region)]
    region: Option<Region>,
    #[command(flatten)]
    overwrite: OverwriteFlag,
}

/// Blocks on zarrs' async storage futures with the process's tokio runtime (zarrs calls the
/// sync storage API from its own threads, never from inside the runtime).
struct TokioBlockOn(tokio::runtime::Handle);

impl AsyncToSyncBlockOn for TokioBlockOn {
    fn block_on<F: core::future::Future>(&self, future: F) -> F::Output {
        self.0.block_on(future)
    }
}

/// The array store at a URL: zarrs' `object_store` storage (async) rooted at the URL's prefix,
/// wrapped for zarrs' sync API.
fn object_storage(url: &StoreLocation) -> CliResult<Arc<dyn ReadableStorageTraits>> {
    let (store, prefix) = (Arc::clone(url.store()), url.path().clone());
    let rooted = object_store::prefix::PrefixStore::new(store, prefix);
    let storage = Arc::new(AsyncObjectStore::new(rooted));
    Ok(Arc::new(AsyncToSyncStorageAdapter::new(
        storage,
        TokioBlockOn(remote::handle()?),
    )))
}

/// `zarr read STORE OUT [--region …]`: C-order bytes as zarrs decodes them (native byte order,
/// i.e. little-endian on every platform this tool is built for).
fn read(a: &ReadArgs) -> CliResult {
    let store = a.store.as_path();
    if cfg!(target_endian = "big") {
        return Err(Fail::usage("zarr read needs a little-endian host"));
    }
    file_output(&[store], &a.output, a.overwrite.overwrite)?;
    // Runtime registration takes precedence over (and does not depend on) link-time
    // `inventory` registration; kept for the whole command.
    let _registration = offset_codec::register(offset_codec::ZarrsOptions::default());
    // Our `blosc` codec (Blosc1 and Blosc2 chunks, partial decoding of regions); zarrs is built
    // without its C-Blosc one.
    let _blosc = blosc_chunk::register(blosc_chunk::ZarrsOptions::default());
    let storage: Arc<dyn ReadableStorageTraits> = match remote::parse_url(store)? {
        Some(url) => object_storage(&url)?,
        None => Arc::new(FilesystemStore::new(store).at(store)?),
    };
    let array = Array::open(storage, "/").at(store)?;
    let (start, stop) =
        resolve_region(a.region.as_ref(), array.shape()).map_err(|e| Fail::input(store, e))?;
    let ranges: Vec<std::ops::Range<u64>> = start.iter().zip(&stop).map(|(&a, &b)| a..b).collect();
    let subset = ArraySubset::new_with_ranges(&ranges);
    let bytes: ArrayBytes<'static> = array.retrieve_array_subset(&subset).at(store)?;
    let raw = bytes.into_fixed().map_err(|e| {
        Fail::input(
            store,
            format!("variable-length data type: {}", describe(&e)),
        )
    })?;
    write_output(&a.output, &raw, a.overwrite.overwrite)
}
