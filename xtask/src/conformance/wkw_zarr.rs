//! wkw-zarr: the webknossos-libs 4.3.3 fixtures (`testdata/wkw-zarr`) converted WKW → Zarr3 →
//! WKW. Always: our `zarr.json` files and properties equal webknossos-libs' `copy-dataset`
//! output (JSON-equal), our shards and theirs decode to the WKW source's voxels, and the way
//! back verifies; the same for our conversions with `blosc` inner chunks (LZ4 for `multi`,
//! zstd for `types`, zarr-python's default shuffle). With `--live`: webknossos-libs 4.3.3
//! (tensorstore) opens our Zarr3 datasets (zstd and blosc) and our WKW round trips and reads
//! every layer and mag equal to the source, wkw 1.1.24 reads our WKW equal, and zarr-python
//! 3.1.6 reads our arrays (`testdata/generators/wkw-zarr/live.py`); and arrays zarr-python
//! writes (its defaults: C-ordered inner chunks; blosc, gzip; one channel per inner chunk)
//! convert to WKW holding exactly its values (`live_zarr_python_writes.py`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use blosc_chunk::Codec;
use wkw_zarr::{ConvertOptions, Existing, Format, ZarrCodec, convert, verify};

use super::{Ctx, Row};

const SECTION: &str = "wkw-zarr";
const DATASETS: [&str; 2] = ["multi", "types"];

/// The `blosc` compressor each dataset is also converted with.
fn blosc_of(name: &str) -> ZarrCodec {
    if name == "multi" {
        ZarrCodec::blosc(Codec::Lz4, 5)
    } else {
        ZarrCodec::blosc(Codec::Zstd, 5)
    }
}

pub(crate) fn rows(ctx: &Ctx) -> Vec<Row> {
    let mut meta = Row::new(
        SECTION,
        "zarr.json + properties JSON-equal to webknossos-libs 4.3.3",
    );
    let mut voxels = Row::new(
        SECTION,
        "our and their shards verify against the WKW source",
    );
    let mut back = Row::new(SECTION, "Zarr3 -> WKW (ours and theirs) verifies");
    let work = ctx.root.join("target").join("xtask-wkw-zarr");
    let _ = std::fs::remove_dir_all(&work);
    let options = ConvertOptions::default().with_existing(Existing::Overwrite);
    for name in DATASETS {
        let src = ctx.testdata(&format!("wkw-zarr/{name}/wkw"));
        let theirs = ctx.testdata(&format!("wkw-zarr/{name}/zarr3"));
        // The properties' id.name is the target's name: the same as theirs.
        let ours = work.join(name).join("zarr3");
        if let Err(e) = convert(&src, &ours, Format::Zarr3, &options, &|_| {}) {
            meta.case(name, Err(e.to_string()));
            continue;
        }
        match (json_files(&ours), json_files(&theirs)) {
            (Ok(a), Ok(b)) => {
                for (rel, doc) in &b {
                    meta.check(format!("{name}/{rel}"), a.get(rel) == Some(doc));
                }
                meta.check(format!("{name}: no other documents"), a.len() == b.len());
            }
            (Err(e), _) | (_, Err(e)) => meta.case(name, Err(e)),
        }
        for (who, zarr) in [("ours", &ours), ("theirs", &theirs)] {
            voxels.case(format!("{name} {who}"), verified(&src, zarr));
            let wkw = work.join(name).join(format!("back-{who}"));
            back.case(
                format!("{name} {who}"),
                convert(zarr, &wkw, Format::Wkw, &options, &|_| {})
                    .map_err(|e| e.to_string())
                    .and_then(|_| verified(&wkw, zarr)),
            );
        }
    }
    // The same with blosc inner chunks: WKW -> Zarr3 (blosc) -> WKW, each verified.
    for name in DATASETS {
        let src = ctx.testdata(&format!("wkw-zarr/{name}/wkw"));
        let zarr = work.join(name).join("zarr3-blosc");
        let wkw = work.join(name).join("back-blosc");
        let blosc = options.clone().with_codec(blosc_of(name));
        let case = format!("{name} blosc ({:?})", blosc_of(name));
        match convert(&src, &zarr, Format::Zarr3, &blosc, &|_| {}) {
            Ok(_) => {
                voxels.case(case.clone(), verified(&src, &zarr));
                back.case(
                    case,
                    convert(&zarr, &wkw, Format::Wkw, &options, &|_| {})
                        .map_err(|e| e.to_string())
                        .and_then(|_| verified(&wkw, &zarr)),
                );
            }
            Err(e) => voxels.case(case, Err(e.to_string())),
        }
    }
    let mut rows = vec![meta, voxels, back];
    if ctx.live {
        rows.push(live(ctx, &work));
    }
    rows
}

fn verified(a: &Path, b: &Path) -> Result<(), String> {
    let report = verify(a, b, &ConvertOptions::default(), &|_| {}).map_err(|e| e.to_string())?;
    if report.is_ok() && report.blocks > 0 {
        Ok(())
    } else {
        Err(format!(
            "{} differing blocks of {}",
            report.differing_blocks, report.blocks
        ))
    }
}

/// Every `*.json` below `root` by relative path.
fn json_files(root: &Path) -> Result<BTreeMap<String, serde_json::Value>, String> {
    let mut out = BTreeMap::new();
    let mut stack: Vec<PathBuf> = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).map_err(|e| format!("{}: {e}", dir.display()))? {
            let path = entry.map_err(|e| e.to_string())?.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "json") {
                let rel = path.strip_prefix(root).map_err(|e| e.to_string())?;
                let bytes = std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
                let doc = serde_json::from_slice(&bytes)
                    .map_err(|e| format!("{}: {e}", path.display()))?;
                out.insert(rel.to_string_lossy().into_owned(), doc);
            }
        }
    }
    Ok(out)
}

fn live(ctx: &Ctx, work: &Path) -> Row {
    let mut row = Row::new(
        SECTION,
        "--live webknossos-libs 4.3.3 / wkw 1.1.24 / zarr-python 3.1.6 read our conversions; zarr-python arrays to WKW",
    );
    let python = match crate::util::python_venv(&["webknossos==4.3.3", "zarr==3.1.6"]) {
        Ok(Some(p)) => p,
        Ok(None) => return row,
        Err(e) => {
            row.case("venv", Err(e));
            return row;
        }
    };
    zarr_python_writes(ctx, &python, work, &mut row);
    let script = ctx.root.join("testdata/generators/wkw-zarr/live.py");
    let variants = [
        ("", "zarr3", "back-ours"),
        (" blosc", "zarr3-blosc", "back-blosc"),
    ];
    for (name, (variant, zarr, wkw)) in DATASETS.into_iter().flat_map(|n| variants.map(|v| (n, v)))
    {
        let src = ctx.testdata(&format!("wkw-zarr/{name}/wkw"));
        let ours = work.join(name).join(zarr);
        let back = work.join(name).join(wkw);
        let out = work.join(format!("{name}-{zarr}-live.json"));
        let name = format!("{name}{variant}");
        let status = Command::new(&python)
            .arg(&script)
            .args([&src, &ours, &back, &out])
            .status();
        if !status.as_ref().is_ok_and(std::process::ExitStatus::success) {
            row.case(
                name.clone(),
                Err(format!("{} failed: {status:?}", script.display())),
            );
            continue;
        }
        let results: Vec<serde_json::Value> = std::fs::read(&out)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or_default();
        if results.is_empty() {
            row.case(name.clone(), Err("no results".into()));
        }
        for r in results {
            let check = r["check"].as_str().unwrap_or("?").to_owned();
            let verdict = if r["ok"] == true {
                Ok(())
            } else {
                Err(r["why"].as_str().unwrap_or("failed").to_owned())
            };
            row.case(format!("{name}: {check}"), verdict);
        }
    }
    row
}

/// Sharded arrays zarr-python writes with its defaults (C-ordered inner chunks, no
/// `transpose`), with `blosc` and `gzip`, and with inner chunks of one channel each
/// (`testdata/generators/wkw-zarr/live_zarr_python_writes.py`): each converts to WKW holding
/// exactly the values zarr-python was given, and verifies against the array.
fn zarr_python_writes(ctx: &Ctx, python: &Path, work: &Path, row: &mut Row) {
    let script = ctx
        .root
        .join("testdata/generators/wkw-zarr/live_zarr_python_writes.py");
    let dir = work.join("zarr-python");
    let status = Command::new(python).arg(&script).arg(&dir).status();
    if !status.as_ref().is_ok_and(std::process::ExitStatus::success) {
        row.case(
            "zarr-python writes",
            Err(format!("{} failed: {status:?}", script.display())),
        );
        return;
    }
    let cases: Vec<serde_json::Value> = std::fs::read(dir.join("cases.json"))
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default();
    if cases.is_empty() {
        row.case("zarr-python writes", Err("no cases".into()));
    }
    let options = ConvertOptions::default().with_existing(Existing::Overwrite);
    for case in cases {
        let name = case["name"].as_str().unwrap_or("?").to_owned();
        let result = (|| -> Result<(), String> {
            let shape: Vec<u32> = case["shape"]
                .as_array()
                .ok_or("no shape")?
                .iter()
                .filter_map(|v| v.as_u64().and_then(|v| u32::try_from(v).ok()))
                .collect();
            let xyz: [u32; 3] = shape[shape.len().saturating_sub(3)..]
                .try_into()
                .map_err(|_| format!("shape {shape:?}"))?;
            let zarr = dir.join(&name);
            let wkw_dir = work.join("zarr-python-wkw").join(&name);
            convert(&zarr, &wkw_dir, Format::Wkw, &options, &|_| {}).map_err(|e| e.to_string())?;
            let want = std::fs::read(dir.join(format!("{name}.raw"))).map_err(|e| e.to_string())?;
            let got = wkw::Dataset::open(&wkw_dir)
                .and_then(|ds| ds.read([0, 0, 0], xyz, wkw::Order::C))
                .map_err(|e| e.to_string())?;
            if got.as_bytes() != &want[..] {
                return Err("the WKW mag holds other values than zarr-python wrote".into());
            }
            verified(&wkw_dir, &zarr)
        })();
        row.case(format!("zarr-python-written {name} -> WKW equal"), result);
    }
}
