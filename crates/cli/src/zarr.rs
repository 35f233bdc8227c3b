//! `scifmt zarr read`: a Zarr v3 array through zarrs, with our `offset` / `pad` codecs.

use std::path::Path;
use std::sync::Arc;

use zarrs::array::{Array, ArrayBytes, ArraySubset};
use zarrs::filesystem::FilesystemStore;

use crate::util::{At, CliResult, Fail, RegionDim, describe, resolve_region, write_output};

/// `zarr read STORE OUT [--region …]`: C-order bytes as zarrs decodes them (native byte order,
/// i.e. little-endian on every platform this tool is built for).
pub(crate) fn read(store: &Path, output: &Path, region: Option<&[RegionDim]>) -> CliResult {
    if cfg!(target_endian = "big") {
        return Err(Fail::usage("zarr read needs a little-endian host"));
    }
    // Runtime registration takes precedence over (and does not depend on) link-time
    // `inventory` registration; kept for the whole command.
    let _registration = offset_codec::register(offset_codec::ZarrsOptions::default());
    let fs = FilesystemStore::new(store).at(store)?;
    let array = Array::open(Arc::new(fs), "/").at(store)?;
    let (start, stop) = resolve_region(region, array.shape()).map_err(|e| Fail::input(store, e))?;
    let ranges: Vec<std::ops::Range<u64>> = start.iter().zip(&stop).map(|(&a, &b)| a..b).collect();
    let subset = ArraySubset::new_with_ranges(&ranges);
    let bytes: ArrayBytes<'static> = array.retrieve_array_subset(&subset).at(store)?;
    let raw = bytes.into_fixed().map_err(|e| {
        Fail::input(
            store,
            format!("variable-length data type: {}", describe(&e)),
        )
    })?;
    write_output(output, &raw)
}
