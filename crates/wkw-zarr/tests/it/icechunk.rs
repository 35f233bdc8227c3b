//! WKW data virtualized into an Icechunk repository (scifmt-io's `IcechunkWriter`) and read back
//! by zarrs through `zarrs_icechunk` (`testkit::icechunk::open_main`), i.e. Icechunk's own
//! reader of virtual chunks, which checks each source's checksum: every reference-made WKW
//! fixture (the `wkw` package) and the webknossos-libs datasets (every layer and mag) equal
//! `wkw`'s read voxel for voxel, and a source rewritten after virtualizing fails the read.

use crate::common;
use crate::virtualize::{
    a_rewritten_file_fails_the_read, copy_of_lz4_mag, fixture_mags, head_bytes, mag_name,
    same_as_wkw, testdata,
};

use std::path::Path;

use common::TestResult;
use scifmt_io::IcechunkWriter;
use serde_json::Value;
use testkit::icechunk::open_main;
use wkw_zarr::{Location, VirtualizeOptions, VirtualizeSummary, virtualize};

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
    for (seen, mag) in fixture_mags()?.into_iter().enumerate() {
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
    }
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
    let mag = copy_of_lz4_mag(dir.path())?;
    let repo = dir.path().join("repo");
    to_icechunk(&mag, &repo)?;
    let store = open_main(&repo)?;
    same_as_wkw(&store, "/", &mag)?;
    a_rewritten_file_fails_the_read(&store, &mag, "checksum")
}
