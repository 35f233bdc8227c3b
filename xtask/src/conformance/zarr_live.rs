//! blosc-chunk `--live`, the zarrs `blosc` codec against zarr-python 3.1.6 + numcodecs 0.16.6:
//! arrays zarr-python writes (Zarr v2 and v3 metadata, sharded and not, every cname and
//! shuffle) are read by zarrs with our codec and by `scifmt zarr read`; the same arrays written
//! by zarrs with our codec (zarr-python's metadata, our chunks) are read back by zarr-python,
//! and their chunk files equal zarr-python's where the settings are the same: Zarr v3 (which
//! names the type size), and Zarr v2 with 1-byte items (zarrs does not tell a v2 compressor the
//! item size). zlib chunks are compared by value only (C-Blosc 1.21 links stock zlib, we
//! zlib-rs). Driver script: `testdata/generators/zarr/live_zarr_blosc.py`.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use serde_json::{Value, json};
use zarrs::array::{Array, ArrayBytes, ArrayMetadata};
use zarrs::filesystem::FilesystemStore;

use super::{Ctx, Row};

const SECTION: &str = "blosc-chunk";
const CNAMES: [&str; 5] = ["blosclz", "lz4", "lz4hc", "zlib", "zstd"];
const SHUFFLES: [&str; 3] = ["noshuffle", "shuffle", "bitshuffle"];

struct Case {
    name: String,
    json: Value,
    dtype_size: usize,
    zarr_format: u8,
    cname: &'static str,
}

fn cases() -> Vec<Case> {
    let mut out = Vec::new();
    let mut add = |format: u8, sharded: bool, cname: &'static str, shuffle: &str, dtype: &str| {
        let name = format!(
            "v{format}{}_{cname}_{shuffle}_{dtype}",
            if sharded { "_sharded" } else { "" }
        );
        let chunks = if sharded { [10, 25, 15] } else { [20, 25, 30] };
        out.push(Case {
            json: json!({"name": name, "zarr_format": format, "sharded": sharded,
                "cname": cname, "clevel": 5, "shuffle": shuffle, "dtype": dtype,
                "shape": [40, 50, 30], "chunks": chunks, "shards": [20, 50, 30]}),
            name,
            dtype_size: if dtype == "uint8" { 1 } else { 2 },
            zarr_format: format,
            cname,
        });
    };
    for cname in CNAMES {
        for shuffle in SHUFFLES {
            add(3, false, cname, shuffle, "uint16");
        }
        add(2, false, cname, "auto", "uint8");
        add(2, false, cname, "shuffle", "uint16");
    }
    add(3, true, "lz4", "shuffle", "uint16");
    add(3, true, "zstd", "bitshuffle", "uint8");
    add(3, true, "blosclz", "noshuffle", "uint16");
    add(2, false, "lz4", "bitshuffle", "uint8");
    add(2, false, "zstd", "noshuffle", "uint8");
    out
}

/// Compressible data with some noise, `n` items of `size` bytes, little-endian.
fn raw(k: usize, n: usize, size: usize) -> Vec<u8> {
    let mut seed = 0x2545_F491_4F6C_DD1Du64 ^ (k as u64);
    (0..n)
        .flat_map(|i| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let v = u16::try_from((i as u64 / 3 + seed % 5) % 65_536).unwrap_or(0);
            v.to_le_bytes().into_iter().take(size)
        })
        .collect()
}

pub(crate) fn live(ctx: &Ctx) -> Row {
    let mut row = Row::new(
        SECTION,
        "--live zarrs blosc codec vs zarr-python 3.1.6 + numcodecs 0.16.6 (read both ways, chunk bytes)",
    );
    if let Err(why) = run(ctx, &mut row) {
        row.case("zarr-python", Err(why));
    }
    row
}

fn run(ctx: &Ctx, row: &mut Row) -> Result<(), String> {
    let Some(python) = crate::util::python_venv(&["zarr==3.1.6", "numcodecs==0.16.6"])? else {
        eprintln!("blosc-chunk --live (zarr): python3 unavailable, skipped");
        return Ok(());
    };
    let scifmt = build_cli()?;
    let _registration = blosc_chunk::register(blosc_chunk::ZarrsOptions::default());
    let dir = ctx.root.join("target").join("xtask-zarr-live");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let cases = cases();
    for (k, c) in cases.iter().enumerate() {
        write(
            &dir.join(format!("{}.raw", c.name)),
            &raw(k, 40 * 50 * 30, c.dtype_size),
        )?;
    }
    let list: Vec<&Value> = cases.iter().map(|c| &c.json).collect();
    let text = serde_json::to_string(&list).map_err(|e| e.to_string())?;
    write(&dir.join("cases.json"), text.as_bytes())?;
    let script = ctx.root.join("testdata/generators/zarr/live_zarr_blosc.py");
    python_step(&python, &script, "write", &dir)?;
    for c in &cases {
        let want = std::fs::read(dir.join(format!("{}.raw", c.name))).map_err(|e| e.to_string())?;
        let py = dir.join("py").join(&c.name);
        row.case(
            format!("{} zarr-python -> zarrs", c.name),
            read_zarrs(&py).and_then(|got| same(&got, &want)),
        );
        let out = dir.join(format!("{}.cli", c.name));
        row.case(
            format!("{} zarr-python -> scifmt zarr read", c.name),
            cli_read(&scifmt, &py, &out)
                .and_then(|()| same(&std::fs::read(&out).map_err(|e| e.to_string())?, &want)),
        );
        let ours = dir.join("ours").join(&c.name);
        match write_zarrs(&py, &ours, &want) {
            Err(e) => row.case(format!("{} zarrs write", c.name), Err(e)),
            Ok(()) => {
                let exact = c.cname != "zlib" && (c.zarr_format == 3 || c.dtype_size == 1);
                if exact {
                    let sharded = c.json["sharded"] == json!(true);
                    row.case(
                        format!("{} chunks byte-identical", c.name),
                        compare_chunks(&py, &ours, sharded),
                    );
                }
            }
        }
    }
    python_step(&python, &script, "read", &dir)?;
    let results: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join("results.json")).map_err(|e| e.to_string())?,
    )
    .map_err(|e| e.to_string())?;
    for c in &cases {
        let verdict = match results[&c.name].as_str() {
            Some("ok") => Ok(()),
            Some(e) => Err(e.to_string()),
            None => Err("no result".to_string()),
        };
        row.case(format!("{} zarrs -> zarr-python", c.name), verdict);
    }
    Ok(())
}

fn python_step(python: &Path, script: &Path, step: &str, dir: &Path) -> Result<(), String> {
    let status = Command::new(python)
        .arg(script)
        .arg(step)
        .arg(dir)
        .status()
        .map_err(|e| e.to_string())?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("{} {step} failed", script.display()))
    }
}

/// Builds the `scifmt` binary (with the workspace's binaries, as `cargo test --workspace` builds
/// them: see [`crate::util::build_workspace_bins`]) and returns its path.
fn build_cli() -> Result<PathBuf, String> {
    Ok(crate::util::build_workspace_bins()?.join("scifmt"))
}

fn cli_read(scifmt: &Path, array: &Path, out: &Path) -> Result<(), String> {
    let o = Command::new(scifmt)
        .arg("zarr")
        .arg("read")
        .arg(array)
        .arg(out)
        .output()
        .map_err(|e| e.to_string())?;
    if o.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&o.stderr).trim().to_string())
    }
}

fn read_zarrs(path: &Path) -> Result<Vec<u8>, String> {
    let store = Arc::new(FilesystemStore::new(path).map_err(|e| e.to_string())?);
    let array = Array::open(store, "/").map_err(|e| e.to_string())?;
    let bytes: ArrayBytes<'static> = array
        .retrieve_array_subset(&array.subset_all())
        .map_err(|e| e.to_string())?;
    bytes
        .into_fixed()
        .map(|b| b.into_owned())
        .map_err(|e| e.to_string())
}

/// Writes `data` with zarrs into `ours`, with the metadata zarr-python wrote at `py`.
fn write_zarrs(py: &Path, ours: &Path, data: &[u8]) -> Result<(), String> {
    let meta_file = ["zarr.json", ".zarray"]
        .iter()
        .map(|f| py.join(f))
        .find(|p| p.is_file())
        .ok_or("no array metadata")?;
    let text = std::fs::read_to_string(&meta_file).map_err(|e| e.to_string())?;
    let meta: ArrayMetadata = serde_json::from_str(&text).map_err(|e| e.to_string())?;
    let store = Arc::new(FilesystemStore::new(ours).map_err(|e| e.to_string())?);
    let array = Array::new_with_metadata(store, "/", meta).map_err(|e| e.to_string())?;
    array.store_metadata().map_err(|e| e.to_string())?;
    array
        .store_array_subset(&array.subset_all(), ArrayBytes::new_flen(data.to_vec()))
        .map_err(|e| e.to_string())
}

/// Every chunk file under `py` equals the one under `ours`; for shards, every inner chunk
/// (shards may order their inner chunks differently: zarrs and zarr-python do).
fn compare_chunks(py: &Path, ours: &Path, sharded: bool) -> Result<(), String> {
    let mut files = Vec::new();
    walk(py, py, &mut files)?;
    let mut n = 0;
    for rel in files {
        let name = rel.to_string_lossy();
        if name.ends_with("zarr.json") || name.starts_with('.') || name.contains("/.") {
            continue;
        }
        n += 1;
        let a = std::fs::read(py.join(&rel)).map_err(|e| e.to_string())?;
        let b = std::fs::read(ours.join(&rel)).map_err(|e| format!("{name}: {e}"))?;
        let (a, b) = if sharded {
            (inner_chunks(&a)?, inner_chunks(&b)?)
        } else {
            (vec![a], vec![b])
        };
        if a != b {
            return Err(format!("{name}: zarr-python and ours differ"));
        }
    }
    if n == 0 {
        return Err("no chunk files".into());
    }
    Ok(())
}

/// The inner chunks of a shard with its index at the end (16 bytes per chunk, then a crc32c),
/// in chunk-grid order; 2 x 2 x 2 inner chunks here.
fn inner_chunks(shard: &[u8]) -> Result<Vec<Vec<u8>>, String> {
    const N: usize = 8;
    let start = shard
        .len()
        .checked_sub(N * 16 + 4)
        .ok_or("shard shorter than its index")?;
    let u64_at = |o: usize| -> Result<u64, String> {
        let b: [u8; 8] = shard[o..o + 8].try_into().map_err(|_| "index")?;
        Ok(u64::from_le_bytes(b))
    };
    let mut out = Vec::with_capacity(N);
    for i in 0..N {
        let off = u64_at(start + 16 * i)?;
        let len = u64_at(start + 16 * i + 8)?;
        if off == u64::MAX {
            out.push(Vec::new());
            continue;
        }
        let off = usize::try_from(off).map_err(|_| "inner chunk offset")?;
        let len = usize::try_from(len).map_err(|_| "inner chunk length")?;
        out.push(
            shard
                .get(off..off.saturating_add(len))
                .ok_or("inner chunk outside the shard")?
                .to_vec(),
        );
    }
    Ok(out)
}

fn walk(root: &Path, dir: &Path, out: &mut Vec<PathBuf>) -> Result<(), String> {
    for e in std::fs::read_dir(dir).map_err(|e| e.to_string())? {
        let p = e.map_err(|e| e.to_string())?.path();
        if p.is_dir() {
            walk(root, &p, out)?;
        } else if let Ok(rel) = p.strip_prefix(root) {
            out.push(rel.to_path_buf());
        }
    }
    Ok(())
}

fn same(got: &[u8], want: &[u8]) -> Result<(), String> {
    if got == want {
        Ok(())
    } else {
        Err(format!("different bytes ({} vs {})", got.len(), want.len()))
    }
}

fn write(path: &Path, bytes: &[u8]) -> Result<(), String> {
    std::fs::write(path, bytes).map_err(|e| format!("{}: {e}", path.display()))
}
