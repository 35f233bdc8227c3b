//! Writes Zarr v3 arrays that use the `offset` / `pad` codecs with zarrs, for other
//! implementations to read back (`cargo xtask conformance --live` reads them with zarr-python).
//!
//! Usage: `cargo run -p offset-codec --example write_zarr -- <output dir>`
//!
//! Every element is `v[i0, i1] = (i0 << 8) | i1` (uint16), as in `testdata/offset/MANIFEST.md`.

use std::path::Path;
use std::sync::Arc;

use offset_codec::{N5ZarrJson, TiffSampleType, tiff_offset_configuration};
use serde_json::{Value, json};
use zarrs::array::{Array, ArrayMetadata};
use zarrs::filesystem::FilesystemStore;

type BoxError = Box<dyn std::error::Error>;

fn metadata(shape: [u64; 2], chunk: [u64; 2], codecs: Value) -> Value {
    json!({
        "zarr_format": 3, "node_type": "array", "shape": shape, "data_type": "uint16",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": chunk}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": 0, "codecs": codecs, "attributes": {}
    })
}

fn write(dir: &Path, metadata: Value) -> Result<(), BoxError> {
    std::fs::create_dir_all(dir)?;
    let store = Arc::new(FilesystemStore::new(dir)?);
    let meta: ArrayMetadata = serde_json::from_value(metadata)?;
    let array = Array::new_with_metadata(store, "/", meta)?;
    array.store_metadata()?;
    let shape = array.shape().to_vec();
    let (rows, cols) = match shape.as_slice() {
        [r, c] => (*r, *c),
        _ => return Err("expected a 2-D array".into()),
    };
    let mut data = Vec::new();
    for i0 in 0..rows {
        for i1 in 0..cols {
            data.push(u16::try_from((i0 << 8) | i1)?);
        }
    }
    array.store_array_subset(&array.subset_all(), data)?;
    Ok(())
}

fn main() -> Result<(), BoxError> {
    let out = std::env::args_os()
        .nth(1)
        .ok_or("usage: write_zarr <output dir>")?;
    let out = Path::new(&out);
    let tiff = tiff_offset_configuration(256, 256, TiffSampleType::U16)?;
    write(
        &out.join("tiff_u16_le.zarr"),
        metadata(
            [256, 256],
            [256, 256],
            json!([
                {"name": "bytes", "configuration": {"endian": "little"}},
                {"name": "offset", "configuration": Value::Object(tiff.to_json())},
            ]),
        ),
    )?;
    write(
        &out.join("gzip_custom_header.zarr"),
        metadata(
            [130, 70],
            [64, 64],
            json!([
                {"name": "bytes", "configuration": {"endian": "little"}},
                {"name": "gzip", "configuration": {"level": 5}},
                {"name": "offset", "configuration": {"offset": 16, "prefix": "TVlfQ1VTVE9NX0hFQURFUg=="}},
            ]),
        ),
    )?;
    write(
        &out.join("zstd_zero_prefix.zarr"),
        metadata(
            [130, 70],
            [64, 64],
            json!([
                {"name": "bytes", "configuration": {"endian": "big"}},
                {"name": "zstd", "configuration": {"level": 3, "checksum": false}},
                {"name": "offset", "configuration": {"offset": 8}},
            ]),
        ),
    )?;
    write(
        &out.join("pad_end_zero.zarr"),
        metadata(
            [130, 70],
            [64, 64],
            json!([
                {"name": "bytes", "configuration": {"endian": "little"}},
                {"name": "gzip", "configuration": {"level": 5}},
                {"name": "pad", "configuration": {"location": "end", "nbytes": 4}},
            ]),
        ),
    )?;
    let n5 = N5ZarrJson {
        dimensions: vec![130, 70],
        block_size: vec![64, 64],
        data_type: "uint16".into(),
        compressor: Some(json!({"name": "zstd", "configuration": {"level": 3, "checksum": false}})),
    };
    write(&out.join("n5_via_offset_zstd.n5"), n5.to_json()?)?;
    println!("wrote 5 arrays to {}", out.display());
    Ok(())
}
