//! zarrs side of `cargo xtask read-bench`: cubic regions read from one WKW mag three ways, in
//! one process, interleaved, each checked against the direct read.
//!
//! ```text
//! cargo run --release -p wkw-zarr --example read_bench -- CONFIG.json
//! ```
//!
//! The config (written by the xtask) names `mag` (the WKW mag directory), `array` (the array's
//! node, e.g. `color/1`), `kerchunk` (the reference JSON `scifmt virtualize --to kerchunk`
//! wrote for the dataset), `zarr3` (the dataset converted by `scifmt convert --to zarr3`),
//! `regions` (`[[x, y, z], …]`), `side` (voxels per axis), `reps` and `contenders`, any of:
//!
//! * `wkw`: the `wkw` crate, `Dataset::read(origin, [side; 3], Order::C)`;
//! * `zarrs-kerchunk`: zarrs over `scifmt_io::ReferenceStore` (each chunk a byte range of the
//!   WKW file, decoded by the `lz4-block` codec's zarrs plug-in);
//! * `zarrs-icechunk`: zarrs over the Icechunk repository `icechunk` (through `zarrs_icechunk`,
//!   Icechunk's reader of virtual chunks; testkit's `icechunk::open_main`);
//! * `zarrs-zarr3`: zarrs over a `FilesystemStore` of the converted Zarr3 (zstd inner chunks in
//!   shards).
//!
//! A `mag` that is a URL (`s3://…`) is read with `wkw::BlockingRemoteDataset` (the store from
//! the environment, as the references' `s3://` chunks are); `check_mag` then names a local copy
//! for the checks, and `label` the `side` printed.
//!
//! The zarrs arrays are read with `retrieve_array_subset` and zarrs' default options (its
//! default concurrency). An untimed first pass checks every contender's region against the
//! `wkw` read (exit status 1 on a difference) and opens and warms everything; then `reps`
//! timed passes, the contenders in rotated order for each region. Prints one JSON line per
//! timed read: `side` ("rust"), `contender`, `rep`, `region`, `seconds`, `crc32` (CRC-32 of
//! the region's bytes, C order, as Python's `zlib.crc32` computes it, so the xtask compares
//! them across processes).

use std::sync::Arc;
use std::time::Instant;

use scifmt_io::{DEFAULT_MAX_REFERENCE_BYTES, ReferenceStore, RemoteOptions};
use serde_json::Value;
use zarrs::array::{Array, ArrayBytes, ArraySubset};
use zarrs::filesystem::FilesystemStore;

type Result<T> = std::result::Result<T, Box<dyn std::error::Error>>;
type Reader = Box<dyn Fn([u64; 3]) -> Result<Vec<u8>>>;

fn main() {
    match run() {
        Ok(()) => {}
        Err(e) => {
            eprintln!("read_bench: {e}");
            std::process::exit(1);
        }
    }
}

fn zarrs_reader<S>(store: Arc<S>, node: &str, side: u64) -> Result<Reader>
where
    S: zarrs::storage::ReadableStorageTraits + 'static,
{
    let array = Array::open(store, node)?;
    Ok(Box::new(move |o: [u64; 3]| {
        let subset = ArraySubset::new_with_ranges(&[
            0..1,
            o[0]..o[0] + side,
            o[1]..o[1] + side,
            o[2]..o[2] + side,
        ]);
        let bytes: ArrayBytes<'static> = array.retrieve_array_subset(&subset)?;
        Ok(bytes.into_fixed()?.into_owned())
    }))
}

fn run() -> Result<()> {
    let path = std::env::args()
        .nth(1)
        .ok_or("usage: read_bench CONFIG.json")?;
    let cfg: Value = serde_json::from_slice(&std::fs::read(&path)?)?;
    let text = |key: &str| -> Result<String> {
        Ok(cfg[key]
            .as_str()
            .ok_or_else(|| format!("{path}: no `{key}`"))?
            .to_owned())
    };
    let side = cfg["side"].as_u64().ok_or("no `side`")?;
    let side32 = u32::try_from(side)?;
    let reps = cfg["reps"].as_u64().ok_or("no `reps`")?;
    let regions: Vec<[u64; 3]> = cfg["regions"]
        .as_array()
        .ok_or("no `regions`")?
        .iter()
        .map(|r| {
            let v: Vec<u64> = r
                .as_array()
                .map(|a| a.iter().filter_map(Value::as_u64).collect())
                .unwrap_or_default();
            <[u64; 3]>::try_from(v).map_err(|_| "a region is not [x, y, z]".into())
        })
        .collect::<Result<_>>()?;
    let node = format!("/{}", text("array")?.trim_start_matches('/'));
    // The direct read every region is checked against: `check_mag` (a local copy of a remote
    // `mag`), else `mag`.
    let check = text("check_mag").or_else(|_| text("mag"))?;
    let mag = wkw::Dataset::open(&check)?;
    let label = text("label").unwrap_or_else(|_| "rust".to_owned());
    let _lz4 = lz4_block_codec::register();

    let mut contenders: Vec<(String, Reader)> = Vec::new();
    for name in cfg["contenders"].as_array().ok_or("no `contenders`")? {
        let name = name.as_str().ok_or("a contender is not a string")?;
        let reader: Reader = match name {
            "wkw" if text("mag")?.contains("://") => {
                let url = text("mag")?;
                let mag =
                    wkw::BlockingRemoteDataset::open_url(&url, wkw::RemoteOptions::default())?;
                Box::new(move |o: [u64; 3]| {
                    let o = o.map(|v| u32::try_from(v).unwrap_or(u32::MAX));
                    Ok(mag.read(o, [side32; 3], wkw::Order::C)?.into_bytes())
                })
            }
            "wkw" => {
                let mag = wkw::Dataset::open(text("mag")?)?;
                Box::new(move |o: [u64; 3]| {
                    let o = o.map(|v| u32::try_from(v).unwrap_or(u32::MAX));
                    Ok(mag.read(o, [side32; 3], wkw::Order::C)?.into_bytes())
                })
            }
            "zarrs-kerchunk" => {
                let refs = std::path::PathBuf::from(text("kerchunk")?);
                let store = ReferenceStore::open(
                    &refs.as_path().into(),
                    &[],
                    RemoteOptions::default(),
                    DEFAULT_MAX_REFERENCE_BYTES,
                )?;
                zarrs_reader(Arc::new(store), &node, side)?
            }
            "zarrs-icechunk" => {
                let repo = std::path::PathBuf::from(text("icechunk")?);
                zarrs_reader(testkit::icechunk::open_main(&repo)?, &node, side)?
            }
            "zarrs-zarr3" => {
                zarrs_reader(Arc::new(FilesystemStore::new(text("zarr3")?)?), &node, side)?
            }
            other => return Err(format!("unknown contender `{other}`").into()),
        };
        contenders.push((name.to_owned(), reader));
    }

    let crc = |b: &[u8]| {
        let mut c = flate2::Crc::new();
        c.update(b);
        c.sum()
    };
    // The untimed pass: every region equals the direct read.
    let mut want = Vec::new();
    for (i, &o) in regions.iter().enumerate() {
        let o32 = o.map(|v| u32::try_from(v).unwrap_or(u32::MAX));
        let direct = mag.read(o32, [side32; 3], wkw::Order::C)?;
        for (name, read) in &contenders {
            if read(o)? != direct.as_bytes() {
                return Err(format!(
                    "{name}: region {i} at {o:?} differs from the direct WKW read"
                )
                .into());
            }
        }
        want.push(crc(direct.as_bytes()));
    }
    let n = contenders.len();
    for rep in 0..reps {
        for (i, &o) in regions.iter().enumerate() {
            let k = (usize::try_from(rep)? + i) % n;
            for (name, read) in contenders[k..].iter().chain(&contenders[..k]) {
                let t0 = Instant::now();
                let got = read(o)?;
                let seconds = t0.elapsed().as_secs_f64();
                let sum = crc(&got);
                if sum != want[i] {
                    return Err(format!("{name}: region {i}, repetition {rep}: CRC differs").into());
                }
                println!(
                    "{}",
                    serde_json::json!({"side": label, "contender": name, "rep": rep,
                        "region": i, "seconds": seconds, "crc32": sum})
                );
            }
        }
    }
    Ok(())
}
