//! Conversions of datasets webknossos-libs 4.3.3 made (testdata/wkw-zarr, see its README):
//! our Zarr3 output has the same metadata (JSON-equal) as `webknossos copy-dataset
//! --data-format zarr3`, its shards and theirs decode to the voxels of the WKW source, and
//! WKW → Zarr3 → WKW reads back equal.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;
use wkw_zarr::{BlockType, ConvertOptions, Format, convert, verify};

type TestResult = Result<(), Box<dyn std::error::Error>>;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/wkw-zarr")
}

/// Every `*.json` below `root`, by relative path, parsed.
fn json_files(root: &Path) -> Result<BTreeMap<String, Value>, Box<dyn std::error::Error>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir)? {
            let path = entry?.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "json") {
                let rel = path.strip_prefix(root)?.to_string_lossy().into_owned();
                out.insert(rel, serde_json::from_slice(&std::fs::read(&path)?)?);
            }
        }
    }
    Ok(out)
}

/// Reads every layer and mag of two WKW datasets over the layer's bounding box and compares.
fn assert_wkw_datasets_equal(a: &Path, b: &Path) -> TestResult {
    let props: Value =
        serde_json::from_slice(&std::fs::read(a.join("datasource-properties.json"))?)?;
    for layer in props["dataLayers"].as_array().ok_or("no layers")? {
        let name = layer["name"].as_str().ok_or("no name")?;
        let bb = &layer["boundingBox"];
        for mag in layer["mags"].as_array().ok_or("no mags")? {
            let m: Vec<u64> = mag["mag"]
                .as_array()
                .ok_or("mag")?
                .iter()
                .filter_map(Value::as_u64)
                .collect();
            let rel = mag["path"].as_str().ok_or("path")?.trim_start_matches("./");
            let top: Vec<u64> = bb["topLeft"]
                .as_array()
                .ok_or("top")?
                .iter()
                .filter_map(Value::as_u64)
                .collect();
            let size = [
                bb["width"].as_u64(),
                bb["height"].as_u64(),
                bb["depth"].as_u64(),
            ];
            let mut off = [0u32; 3];
            let mut shape = [0u32; 3];
            for d in 0..3 {
                let lo = top[d] / m[d];
                let hi = (top[d] + size[d].ok_or("size")?).div_ceil(m[d]);
                off[d] = u32::try_from(lo)?;
                shape[d] = u32::try_from(hi - lo)?;
            }
            let x = wkw::Dataset::open(a.join(rel))?.read(off, shape, wkw::Order::Fortran)?;
            let y = wkw::Dataset::open(b.join(format!(
                "{name}/{}",
                rel.rsplit('/').next().ok_or("mag dir")?
            )))?
            .read(off, shape, wkw::Order::Fortran)?;
            assert!(x == y, "{name} {rel} differs");
            assert!(
                x.as_bytes().iter().any(|&v| v != 0),
                "{name} {rel} is all zero"
            );
        }
    }
    Ok(())
}

#[test]
fn our_zarr3_metadata_equals_webknossos_libs() -> TestResult {
    for name in ["multi", "types"] {
        let tmp = tempfile::tempdir()?;
        // Same directory name as theirs: the properties' id.name is the target's name.
        let ours = tmp.path().join("zarr3");
        let src = fixtures().join(name).join("wkw");
        let summary = convert(
            &src,
            &ours,
            Format::Zarr3,
            &ConvertOptions::default(),
            &|_| {},
        )?;
        assert!(summary.shards_written > 0);
        let theirs = json_files(&fixtures().join(name).join("zarr3"))?;
        let mine = json_files(&ours)?;
        assert_eq!(
            mine.keys().collect::<Vec<_>>(),
            theirs.keys().collect::<Vec<_>>(),
            "{name}: the same JSON documents"
        );
        for (rel, doc) in &theirs {
            assert_eq!(&mine[rel], doc, "{name}/{rel}");
        }
        // Every shard webknossos-libs wrote has a counterpart of ours and vice versa (the
        // same non-empty shards), and both decode to the source's voxels.
        assert!(verify(&src, &ours, &ConvertOptions::default(), &|_| {})?.is_ok());
        let theirs_dir = fixtures().join(name).join("zarr3");
        let report = verify(&src, &theirs_dir, &ConvertOptions::default(), &|_| {})?;
        assert!(report.is_ok(), "{name}: {:?}", report.differences);
        assert!(report.blocks > 0);
    }
    Ok(())
}

#[test]
fn their_zarr3_and_ours_convert_back_to_the_same_wkw() -> TestResult {
    for name in ["multi", "types"] {
        let tmp = tempfile::tempdir()?;
        let src = fixtures().join(name).join("wkw");
        let ours = tmp.path().join("zarr3");
        convert(
            &src,
            &ours,
            Format::Zarr3,
            &ConvertOptions::default(),
            &|_| {},
        )?;
        for (zarr, bt) in [
            (ours.clone(), BlockType::Lz4),
            (fixtures().join(name).join("zarr3"), BlockType::Raw),
            (fixtures().join(name).join("zarr3"), BlockType::Lz4Hc),
        ] {
            let back = tmp.path().join(format!("back-{bt:?}"));
            let options = ConvertOptions::default().with_block_type(bt);
            convert(&zarr, &back, Format::Wkw, &options, &|_| {})?;
            assert_wkw_datasets_equal(&src, &back)?;
            assert!(verify(&back, &zarr, &options, &|_| {})?.is_ok());
            let props: Value =
                serde_json::from_slice(&std::fs::read(back.join("datasource-properties.json"))?)?;
            for layer in props["dataLayers"].as_array().ok_or("layers")? {
                assert_eq!(layer["dataFormat"], "wkw");
                for mag in layer["mags"].as_array().ok_or("mags")? {
                    let dir = back.join(mag["path"].as_str().ok_or("path")?);
                    let header = wkw::Dataset::open(&dir)?.header().to_owned();
                    assert_eq!(header.block_type(), bt);
                    assert_eq!(
                        mag["cubeLength"].as_u64(),
                        Some(u64::from(header.file_len_vx()))
                    );
                }
            }
        }
    }
    Ok(())
}
