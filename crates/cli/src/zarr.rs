//! `scifmt zarr read`: a Zarr v2 or v3 array through zarrs, with our `blosc` (blosc-chunk) and
//! `offset` / `pad` codecs; sharded arrays too (`sharding_indexed`, `crc32c`).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use clap::{Args, Subcommand};
use zarrs::array::{Array, ArrayBytes, ArraySubset};
use zarrs::filesystem::FilesystemStore;
use zarrs::storage::storage_adapter::async_to_sync::{
    AsyncToSyncBlockOn, AsyncToSyncStorageAdapter,
};
use zarrs::storage::{ReadableStorageTraits, StoreKey};
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

/// Whether the node at the root of `storage` is a Zarr group (v3 `zarr.json` of a group, or a
/// v2 `.zgroup` without `.zarray`).
fn is_group(storage: &dyn ReadableStorageTraits) -> bool {
    let get = |key: &str| {
        StoreKey::new(key)
            .ok()
            .and_then(|k| storage.get(&k).ok().flatten())
    };
    if let Some(doc) = get("zarr.json") {
        return serde_json::from_slice::<serde_json::Value>(&doc)
            .ok()
            .and_then(|v| {
                v.get("node_type")
                    .and_then(|t| t.as_str().map(str::to_owned))
            })
            .is_some_and(|t| t == "group");
    }
    get(".zgroup").is_some() && get(".zarray").is_none()
}

/// Arrays listed at most in a message.
const MAX_LISTED: usize = 10;

/// The arrays below a local group directory `root` (relative paths, sorted), to a few levels.
fn arrays_below(root: &Path) -> Vec<String> {
    let mut found = Vec::new();
    let mut stack = vec![(root.to_path_buf(), 0)];
    while let Some((dir, depth)) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let p = entry.path();
            if !p.is_dir() {
                continue;
            }
            let is_array = p.join(".zarray").is_file()
                || std::fs::read(p.join("zarr.json"))
                    .ok()
                    .and_then(|d| serde_json::from_slice::<serde_json::Value>(&d).ok())
                    .is_some_and(|v| v.get("node_type").and_then(|t| t.as_str()) == Some("array"));
            if is_array {
                let rel = p.strip_prefix(root).unwrap_or(&p);
                found.push(rel.to_string_lossy().into_owned());
            } else if depth < 4 {
                stack.push((p, depth + 1));
            }
        }
    }
    found.sort();
    found
}

/// The message for a group given where an array is read: what the group holds, and what to
/// give instead.
fn group_given(store: &Path) -> Fail {
    if crate::names::is_url(store) {
        return Fail::input(
            store,
            "a Zarr group, not an array: give one of its arrays (its URL with the array's path appended)",
        );
    }
    let arrays = arrays_below(store);
    let name = crate::names::display_name(store);
    let list = match arrays.len() {
        0 => "it holds no arrays".to_owned(),
        n => {
            let shown: Vec<String> = arrays
                .iter()
                .take(MAX_LISTED)
                .map(|a| format!("{name}/{a}"))
                .collect();
            let more = if n > MAX_LISTED {
                format!(" and {} more", n - MAX_LISTED)
            } else {
                String::new()
            };
            format!("give one of its {n} arrays: {}{more}", shown.join(", "))
        }
    };
    Fail::input(store, format!("a Zarr group, not an array: {list}"))
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
    let array = match Array::open(Arc::clone(&storage), "/") {
        Ok(array) => array,
        Err(_) if is_group(storage.as_ref()) => return Err(group_given(store)),
        Err(e) => return Err(Fail::input(store, describe(&e))),
    };
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
