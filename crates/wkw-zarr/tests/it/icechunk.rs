//! WKW data virtualized into an Icechunk repository (scifmt-io's `IcechunkWriter`) and read back
//! by zarrs through `zarrs_icechunk` (`testkit::icechunk::open_main`), i.e. Icechunk's own
//! reader of virtual chunks, which checks each source's checksum: every reference-made WKW
//! fixture (the `wkw` package) and the webknossos-libs datasets (every layer and mag) equal
//! `wkw`'s read voxel for voxel, and a source rewritten after virtualizing fails the read.

use crate::common;
use crate::virtualize::{head_bytes, mag_name, same_as_wkw, testdata};

use std::path::Path;
use std::sync::Arc;

use common::TestResult;
use scifmt_io::IcechunkWriter;
use serde_json::Value;
use testkit::icechunk::open_main;
use wkw_zarr::{Location, VirtualizeOptions, VirtualizeSummary, virtualize};
use zarrs::array::{Array, ArrayBytes, ArraySubset};

/// `src` virtualized into a new Icechunk repository at `repo` (its virtual chunk container:
/// the source's reference URL).
fn to_icechunk(src: &Path, repo: &Path) -> Result<VirtualizeSummary, Box<dyn std::error::Error>> {
    let src = Location::Local(src.to_path_buf());
    let prefix = scifmt_io::reference_url(&src)?;
    let mut w = IcechunkWriter::create(&repo.into(), std::slice::from_ref(&prefix), &[])?;
    let summary = virtualize(&src, &mut w, &VirtualizeOptions::default(), &|_| {})?;
    w.finish()?;
    Ok(summary)
}

#[test]
fn every_wkw_fixture_reads_back_through_icechunk() -> TestResult {
    let _lz4 = lz4_block_codec::register();
    let dir = tempfile::tempdir()?;
    let mut seen = 0;
    for entry in std::fs::read_dir(testdata().join("wkw"))? {
        let mag = entry?.path();
        if !mag.join("header.wkw").exists() {
            continue;
        }
        let repo = dir.path().join(format!("{seen}.icechunk"));
        let summary = to_icechunk(&mag, &repo)?;
        let header = wkw::Header::parse(&std::fs::read(mag.join("header.wkw"))?)?;
        let (files, _) = head_bytes(&mag)?;
        assert_eq!(
            summary.references,
            files * header.blocks_per_file(),
            "{}",
            mag.display()
        );
        same_as_wkw(&open_main(&repo)?, "/", &mag)?;
        seen += 1;
    }
    assert!(seen >= 12, "only {seen} fixtures");
    Ok(())
}

#[test]
fn datasets_read_back_through_icechunk_layer_by_layer_and_mag_by_mag() -> TestResult {
    let _lz4 = lz4_block_codec::register();
    let dir = tempfile::tempdir()?;
    for name in ["multi", "types"] {
        let ds = testdata().join("wkw-zarr").join(name).join("wkw");
        let repo = dir.path().join(format!("{name}.icechunk"));
        let summary = to_icechunk(&ds, &repo)?;
        let store = open_main(&repo)?;
        let props: Value =
            serde_json::from_slice(&std::fs::read(ds.join("datasource-properties.json"))?)?;
        let mut arrays = 0;
        for layer in props["dataLayers"].as_array().ok_or("layers")? {
            let lname = layer["name"].as_str().ok_or("name")?;
            for m in layer["mags"].as_array().ok_or("mags")? {
                let (_, mname) = mag_name(m)?;
                let path = m["path"].as_str().ok_or("path")?.trim_start_matches("./");
                same_as_wkw(&store, &format!("/{lname}/{mname}"), &ds.join(path))?;
                arrays += 1;
            }
        }
        assert_eq!(summary.arrays, arrays, "{name}");
    }
    Ok(())
}

#[test]
fn a_source_rewritten_after_virtualizing_fails_the_icechunk_read() -> TestResult {
    let _lz4 = lz4_block_codec::register();
    let dir = tempfile::tempdir()?;
    let mag = dir.path().join("mag");
    for (key, bytes) in common::tree(&testdata().join("wkw/u16_3ch_lz4_b8_f4"))? {
        let p = mag.join(&key);
        std::fs::create_dir_all(p.parent().ok_or("parent")?)?;
        std::fs::write(&p, bytes)?;
    }
    let repo = dir.path().join("repo");
    to_icechunk(&mag, &repo)?;
    let store = open_main(&repo)?;
    same_as_wkw(&store, "/", &mag)?;
    // The same bytes written again, with a later modification time: refused all the same.
    let file = mag.join("z0/y0/x1.wkw");
    let before = std::fs::metadata(&file)?.modified()?;
    std::fs::write(&file, std::fs::read(&file)?)?;
    std::fs::File::options()
        .write(true)
        .open(&file)?
        .set_modified(before + std::time::Duration::from_secs(5))?;
    let array = Array::open(Arc::clone(&store), "/")?;
    let e = array
        .retrieve_array_subset(&ArraySubset::new_with_ranges(&[0..3, 32..40, 0..8, 0..8]))
        .map(|_: ArrayBytes<'static>| ())
        .unwrap_err()
        .to_string();
    assert!(e.contains("checksum") && e.contains("x1.wkw"), "{e}");
    // Chunks of the other file still read.
    let ok: ArrayBytes<'static> =
        array.retrieve_array_subset(&ArraySubset::new_with_ranges(&[0..3, 0..8, 0..8, 0..8]))?;
    assert!(!ok.into_fixed()?.is_empty());
    Ok(())
}
