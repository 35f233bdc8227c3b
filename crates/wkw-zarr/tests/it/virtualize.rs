//! WKW data as virtual Zarr v3 references: the reference-made WKW fixtures (the `wkw` package,
//! webknossos-libs) virtualized into kerchunk JSON, read back by zarrs through
//! `scifmt_io::ReferenceStore` (each chunk a byte range of the WKW file, decoded by the
//! `lz4-block` codec) and compared voxel for voxel with `wkw`'s own read; on the S3 test
//! server only headers and jump tables are read, and the references carry the ETags.

use crate::common;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use common::{TestResult, at};
use s3_testserver::TestServer;
use scifmt_io::object_store::ObjectStoreExt;
use scifmt_io::{Durability, KerchunkWriter, ReferenceStore, RemoteOptions};
use serde_json::Value;
use wkw_zarr::{Location, VirtualizeOptions, VirtualizeSummary, virtualize, virtualize_all};
use zarrs::array::{Array, ArrayBytes, ArraySubset};
use zarrs::storage::ReadableStorageTraits;

pub(crate) fn testdata() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata")
}

/// `src` virtualized into the kerchunk file `out`.
fn to_kerchunk(
    src: &Location,
    out: &Path,
) -> Result<VirtualizeSummary, Box<dyn std::error::Error>> {
    let mut w = KerchunkWriter::create(&out.into(), &RemoteOptions::<()>::default())?;
    let summary = virtualize(src, &mut w, &VirtualizeOptions::default(), &|_| {})?;
    let written = w.finish(Durability::None)?;
    assert_eq!(written.references, summary.references);
    Ok(summary)
}

fn open_refs(
    path: &Path,
    config: &[(String, String)],
) -> Result<Arc<ReferenceStore>, scifmt_io::Error> {
    Ok(Arc::new(ReferenceStore::open(
        &path.into(),
        config,
        RemoteOptions::default(),
        scifmt_io::DEFAULT_MAX_REFERENCE_BYTES,
    )?))
}

/// The array at `node` read whole through the references (the storage `store`) equals `wkw`'s
/// read of `mag` (the same box, C order); returns the array's shape.
pub(crate) fn same_as_wkw<S: ReadableStorageTraits + ?Sized + 'static>(
    store: &Arc<S>,
    node: &str,
    mag: &Path,
) -> Result<Vec<u64>, Box<dyn std::error::Error>> {
    let array = Array::open(Arc::clone(store), node)?;
    let shape = array.shape().to_vec();
    let subset = ArraySubset::new_with_ranges(&shape.iter().map(|&n| 0..n).collect::<Vec<_>>());
    let bytes: ArrayBytes<'static> = array.retrieve_array_subset(&subset)?;
    let got = bytes.into_fixed()?.into_owned();
    let size = [1, 2, 3].map(|d| u32::try_from(shape[d]).unwrap_or(u32::MAX));
    let want = wkw::Dataset::open(mag)?.read([0, 0, 0], size, wkw::Order::C)?;
    assert!(
        got == want.as_bytes(),
        "{node} ({}) differs from the WKW read",
        mag.display()
    );
    Ok(shape)
}

/// A mag entry's factors and its node name as webKNOSSOS writes it (`1`, `2-2-1`).
pub(crate) fn mag_name(entry: &Value) -> Result<(Vec<u64>, String), Box<dyn std::error::Error>> {
    let v: Vec<u64> = entry["mag"]
        .as_array()
        .ok_or("mag")?
        .iter()
        .filter_map(Value::as_u64)
        .collect();
    let name = match v.as_slice() {
        [a, b, c] if a == b && b == c => a.to_string(),
        [a, b, c] => format!("{a}-{b}-{c}"),
        _ => return Err(format!("mag {v:?}").into()),
    };
    Ok((v, name))
}

/// Every WKW file below `mag` and the bytes its header and jump table take.
pub(crate) fn head_bytes(mag: &Path) -> Result<(u64, u64), Box<dyn std::error::Error>> {
    let header = wkw::Header::parse(&std::fs::read(mag.join("header.wkw"))?)?;
    let files = common::tree(mag)?
        .keys()
        .filter(|k| k.ends_with(".wkw") && k.as_str() != "header.wkw")
        .count() as u64;
    let per_file = if header.block_type().is_compressed() {
        16 + 8 * header.blocks_per_file()
    } else {
        16
    };
    Ok((files, files * per_file))
}

/// The WKW mags among the fixtures (`testdata/wkw/*` with a `header.wkw`), at least 12.
pub(crate) fn fixture_mags() -> Result<Vec<PathBuf>, Box<dyn std::error::Error>> {
    let mut mags = Vec::new();
    for entry in std::fs::read_dir(testdata().join("wkw"))? {
        let mag = entry?.path();
        if mag.join("header.wkw").exists() {
            mags.push(mag);
        }
    }
    assert!(mags.len() >= 12, "only {} fixtures", mags.len());
    Ok(mags)
}

#[test]
fn every_wkw_fixture_reads_back_voxel_for_voxel() -> TestResult {
    let _lz4 = lz4_block_codec::register();
    let dir = tempfile::tempdir()?;
    for (seen, mag) in fixture_mags()?.into_iter().enumerate() {
        let out = dir.path().join(format!("{seen}.json"));
        let summary = to_kerchunk(&Location::Local(mag.clone()), &out)?;
        let (files, bytes) = head_bytes(&mag)?;
        let header = wkw::Header::parse(&std::fs::read(mag.join("header.wkw"))?)?;
        assert_eq!(
            (summary.files, summary.arrays),
            (files, 1),
            "{}",
            mag.display()
        );
        assert_eq!(summary.references, files * header.blocks_per_file());
        // Headers and jump tables only.
        assert_eq!(summary.bytes_read, bytes, "{}", mag.display());
        let store = open_refs(&out, &[])?;
        let shape = same_as_wkw(&store, "/", &mag)?;
        assert_eq!(shape[0], u64::from(header.num_channels()));
        // The metadata says what the notes of the format say.
        let meta: Value = serde_json::from_slice(&store.read("zarr.json")?.ok_or("no zarr.json")?)?;
        let b = u64::from(header.block_len());
        assert_eq!(
            meta["chunk_grid"]["configuration"]["chunk_shape"],
            serde_json::json!([header.num_channels(), b, b, b])
        );
        assert_eq!(
            meta["dimension_names"],
            serde_json::json!(["c", "x", "y", "z"])
        );
        let names: Vec<&str> = meta["codecs"]
            .as_array()
            .ok_or("codecs")?
            .iter()
            .filter_map(|c| c["name"].as_str())
            .collect();
        if header.block_type().is_compressed() {
            assert_eq!(names, ["transpose", "bytes", "lz4-block"]);
        } else {
            assert_eq!(names, ["transpose", "bytes"]);
        }
    }
    Ok(())
}

#[test]
fn missing_files_are_missing_chunks() -> TestResult {
    let _lz4 = lz4_block_codec::register();
    let dir = tempfile::tempdir()?;
    // 18 possible files (3 × 2 × 3), 13 present.
    let mag = testdata().join("wkw/u64_raw_b4_f2_multi");
    let out = dir.path().join("refs.json");
    to_kerchunk(&Location::Local(mag.clone()), &out)?;
    let store = open_refs(&out, &[])?;
    // z0/y0/x1.wkw is absent: its blocks (x 2..4, y 0..2, z 0..2) have no key.
    assert!(mag.join("z0/y0/x0.wkw").exists() && !mag.join("z0/y0/x1.wkw").exists());
    assert!(store.read("c/0/0/0/0")?.is_some());
    assert!(store.read("c/0/2/0/0")?.is_none());
    same_as_wkw(&store, "/", &mag)?;
    Ok(())
}

#[test]
fn datasets_keep_their_layers_mags_and_groups() -> TestResult {
    let _lz4 = lz4_block_codec::register();
    let dir = tempfile::tempdir()?;
    for name in ["multi", "types"] {
        let ds = testdata().join("wkw-zarr").join(name).join("wkw");
        let out = dir.path().join(format!("{name}.json"));
        let summary = to_kerchunk(&Location::Local(ds.clone()), &out)?;
        let store = open_refs(&out, &[])?;
        let props: Value =
            serde_json::from_slice(&std::fs::read(ds.join("datasource-properties.json"))?)?;
        let mut arrays = 0;
        for layer in props["dataLayers"].as_array().ok_or("layers")? {
            let lname = layer["name"].as_str().ok_or("name")?;
            let group: Value = serde_json::from_slice(
                &store.read(&format!("{lname}/zarr.json"))?.ok_or("group")?,
            )?;
            assert_eq!(group["node_type"], "group");
            assert_eq!(group["attributes"]["ome"]["version"], "0.5");
            for m in layer["mags"].as_array().ok_or("mags")? {
                let (v, mname) = mag_name(m)?;
                let path = m["path"].as_str().ok_or("path")?.trim_start_matches("./");
                let shape = same_as_wkw(&store, &format!("/{lname}/{mname}"), &ds.join(path))?;
                // The layer's bounding box fits in the array (as the conversion sizes it).
                let bb = &layer["boundingBox"];
                let end_x =
                    bb["topLeft"][0].as_u64().ok_or("x")? + bb["width"].as_u64().ok_or("w")?;
                assert!(shape[1] >= end_x.div_ceil(v[0]));
                arrays += 1;
            }
        }
        assert_eq!(summary.arrays, arrays);
        let root: Value = serde_json::from_slice(&store.read("zarr.json")?.ok_or("root")?)?;
        assert_eq!(root["node_type"], "group");
    }
    Ok(())
}

/// `with_only` reads the files of the chosen layer or mag only, declares every group, and
/// the chosen arrays read as they do in a whole run.
#[test]
fn only_the_chosen_layer_or_mag_is_read() -> TestResult {
    let _lz4 = lz4_block_codec::register();
    let dir = tempfile::tempdir()?;
    let ds = testdata().join("wkw-zarr/multi/wkw");
    let props: Value =
        serde_json::from_slice(&std::fs::read(ds.join("datasource-properties.json"))?)?;
    let layers: Vec<&Value> = props["dataLayers"]
        .as_array()
        .ok_or("layers")?
        .iter()
        .collect();
    assert!(layers.len() >= 2, "the fixture has several layers");
    let whole = to_kerchunk(&Location::Local(ds.clone()), &dir.path().join("all.json"))?;
    let mut files = 0;
    for layer in &layers {
        let lname = layer["name"].as_str().ok_or("name")?;
        let out = dir.path().join(format!("{lname}.json"));
        let mut w = KerchunkWriter::create(&out.as_path().into(), &RemoteOptions::<()>::default())?;
        let options = VirtualizeOptions::default().with_only(&format!("/{lname}/"));
        let summary = virtualize(Location::Local(ds.clone()), &mut w, &options, &|_| {})?;
        w.finish(Durability::None)?;
        // Its files only: the counts of the layer's mags' files and header bytes.
        let mut want = (0, 0);
        for m in layer["mags"].as_array().ok_or("mags")? {
            let path = m["path"].as_str().ok_or("path")?.trim_start_matches("./");
            let (n, bytes) = head_bytes(&ds.join(path))?;
            want = (want.0 + n, want.1 + bytes);
        }
        assert_eq!((summary.files, summary.bytes_read), want, "{lname}");
        assert_eq!(summary.groups, whole.groups, "every group is declared");
        files += summary.files;
        let store = open_refs(&out, &[])?;
        for m in layer["mags"].as_array().ok_or("mags")? {
            let path = m["path"].as_str().ok_or("path")?.trim_start_matches("./");
            let (_, mname) = mag_name(m)?;
            same_as_wkw(&store, &format!("/{lname}/{mname}"), &ds.join(path))?;
        }
        let refs: Value = serde_json::from_slice(&std::fs::read(&out)?)?;
        let keys: Vec<&String> = refs["refs"].as_object().ok_or("refs")?.keys().collect();
        for other in layers.iter().filter(|l| l["name"] != layer["name"]) {
            let oname = other["name"].as_str().ok_or("name")?;
            // The other layers' groups are there, their arrays and chunks are not.
            let group = format!("{oname}/zarr.json");
            assert!(keys.contains(&&group), "{group}");
            let below = keys
                .iter()
                .filter(|k| k.starts_with(&format!("{oname}/")) && ***k != group)
                .count();
            assert_eq!(below, 0, "{oname} has no arrays when {lname} is chosen");
        }
    }
    assert_eq!(files, whole.files);
    // A path that names nothing: nothing read.
    let out = dir.path().join("none.json");
    let mut w = KerchunkWriter::create(&out.as_path().into(), &RemoteOptions::<()>::default())?;
    let options = VirtualizeOptions::default().with_only("no-such-layer");
    let summary = virtualize(Location::Local(ds), &mut w, &options, &|_| {})?;
    assert_eq!(
        (summary.arrays, summary.files, summary.bytes_read),
        (0, 0, 0)
    );
    Ok(())
}

#[test]
fn several_sources_are_named_nodes_of_one_root() -> TestResult {
    let _lz4 = lz4_block_codec::register();
    let dir = tempfile::tempdir()?;
    let a = testdata().join("wkw/u8_raw_b8_f4");
    let b = testdata().join("wkw/f32_lz4hc_b16_f2");
    let out = dir.path().join("refs.json");
    let mut w = KerchunkWriter::create(&out.as_path().into(), &RemoteOptions::<()>::default())?;
    let srcs = [Location::Local(a.clone()), Location::Local(b.clone())];
    virtualize_all(&srcs, &mut w, &VirtualizeOptions::default(), &|_| {})?;
    w.finish(Durability::None)?;
    let store = open_refs(&out, &[])?;
    same_as_wkw(&store, "/u8_raw_b8_f4", &a)?;
    same_as_wkw(&store, "/f32_lz4hc_b16_f2", &b)?;
    // Two sources of one name: refused before anything is declared.
    let mut w = KerchunkWriter::create(
        &dir.path().join("x.json").as_path().into(),
        &RemoteOptions::<()>::default(),
    )?;
    let twice = [Location::Local(a.clone()), Location::Local(a)];
    let e = virtualize_all(&twice, &mut w, &VirtualizeOptions::default(), &|_| {}).unwrap_err();
    assert!(matches!(e, wkw_zarr::Error::InvalidArgument(_)), "{e}");
    Ok(())
}

#[test]
fn zarr_sources_are_refused() -> TestResult {
    let dir = tempfile::tempdir()?;
    let zarr = testdata().join("wkw-zarr/multi/zarr3");
    let mut w = KerchunkWriter::create(
        &dir.path().join("r.json").as_path().into(),
        &RemoteOptions::<()>::default(),
    )?;
    let e = virtualize(&zarr, &mut w, &VirtualizeOptions::default(), &|_| {}).unwrap_err();
    assert!(matches!(e, wkw_zarr::Error::Unsupported { .. }), "{e}");
    Ok(())
}

/// The LZ4 fixture `u16_3ch_lz4_b8_f4` (3 channels, two files along x) copied to `dir/mag`.
pub(crate) fn copy_of_lz4_mag(dir: &Path) -> Result<PathBuf, Box<dyn std::error::Error>> {
    let mag = dir.join("mag");
    for (key, bytes) in common::tree(&testdata().join("wkw/u16_3ch_lz4_b8_f4"))? {
        let p = mag.join(&key);
        std::fs::create_dir_all(p.parent().ok_or("parent")?)?;
        std::fs::write(&p, bytes)?;
    }
    Ok(mag)
}

/// `mag`'s (a [`copy_of_lz4_mag`]) file `z0/y0/x1.wkw` written again, the same bytes with a
/// later modification time: reading a chunk of it through `store` (the array at the root)
/// fails with an error naming the file and containing `word`; a chunk of the other file still
/// reads.
pub(crate) fn a_rewritten_file_fails_the_read<S: ReadableStorageTraits + ?Sized + 'static>(
    store: &Arc<S>,
    mag: &Path,
    word: &str,
) -> TestResult {
    let file = mag.join("z0/y0/x1.wkw");
    let before = std::fs::metadata(&file)?.modified()?;
    std::fs::write(&file, std::fs::read(&file)?)?;
    std::fs::File::options()
        .write(true)
        .open(&file)?
        .set_modified(before + std::time::Duration::from_secs(5))?;
    let array = Array::open(Arc::clone(store), "/")?;
    let e = array
        .retrieve_array_subset(&ArraySubset::new_with_ranges(&[0..3, 32..40, 0..8, 0..8]))
        .map(|_: ArrayBytes<'static>| ())
        .err()
        .ok_or("the read of the rewritten file did not fail")?
        .to_string();
    assert!(e.contains(word) && e.contains("x1.wkw"), "{e}");
    let ok: ArrayBytes<'static> =
        array.retrieve_array_subset(&ArraySubset::new_with_ranges(&[0..3, 0..8, 0..8, 0..8]))?;
    assert!(!ok.into_fixed()?.is_empty());
    Ok(())
}

#[test]
fn a_source_rewritten_after_virtualizing_fails_the_read() -> TestResult {
    let _lz4 = lz4_block_codec::register();
    let dir = tempfile::tempdir()?;
    let mag = copy_of_lz4_mag(dir.path())?;
    let out = dir.path().join("refs.json");
    to_kerchunk(&Location::Local(mag.clone()), &out)?;
    let store = open_refs(&out, &[])?;
    same_as_wkw(&store, "/", &mag)?;
    a_rewritten_file_fails_the_read(&store, &mag, "changed")
}

#[test]
fn on_s3_only_headers_and_jump_tables_are_read_and_refs_carry_etags() -> TestResult {
    let _lz4 = lz4_block_codec::register();
    let dir = tempfile::tempdir()?;
    let ds = testdata().join("wkw-zarr/multi/wkw");
    let server = TestServer::start()?;
    server.upload_dir(&ds, "src/multi")?;
    server.reset_stats();
    let out = dir.path().join("refs.json");
    let summary = to_kerchunk(&at(&server, "src/multi"), &out)?;
    // Every WKW data file was read once, by one range from byte 0 holding its header and jump
    // table; nothing else of it.
    let log = server.log();
    let mut expected = 0;
    let mut files = 0;
    for (key, _) in common::tree(&ds)? {
        if !key.ends_with(".wkw") || key.ends_with("header.wkw") {
            continue;
        }
        let mag = ds.join(Path::new(&key).ancestors().nth(3).ok_or("mag")?);
        let header = wkw::Header::parse(&std::fs::read(mag.join("header.wkw"))?)?;
        let want = if header.block_type().is_compressed() {
            16 + 8 * header.blocks_per_file()
        } else {
            16
        };
        let gets: Vec<_> = log
            .iter()
            .filter(|r| r.is_object_get() && r.key == format!("src/multi/{key}"))
            .collect();
        assert_eq!(gets.len(), 1, "{key}: {gets:?}");
        assert_eq!(
            gets[0].range.as_deref(),
            Some(format!("bytes=0-{}", want - 1).as_str()),
            "{key}"
        );
        assert_eq!(gets[0].bytes_sent, want, "{key}");
        expected += want;
        files += 1;
    }
    assert_eq!((summary.files, summary.bytes_read), (files, expected));
    let data_bytes: u64 = log
        .iter()
        .filter(|r| r.is_object_get() && r.key.ends_with(".wkw") && !r.key.ends_with("header.wkw"))
        .map(|r| r.bytes_sent)
        .sum();
    assert_eq!(data_bytes, expected);
    // The references name the objects by URL and carry their ETags (as a HEAD reports them).
    let doc: Value = serde_json::from_slice(&std::fs::read(&out)?)?;
    let checksums = doc["scifmt"]["checksums"].as_object().ok_or("checksums")?;
    assert_eq!(checksums.len() as u64, files);
    let prefix = server.url("");
    for (url, c) in checksums {
        let key = url.strip_prefix(&prefix).ok_or("another bucket")?;
        let head = scifmt_io::block_on(
            server
                .store()
                .head(&scifmt_io::object_store::path::Path::from(key)),
        )??;
        assert_eq!(c["etag"].as_str(), head.e_tag.as_deref(), "{url}");
        assert!(c["etag"].as_str().is_some_and(|e| !e.is_empty()), "{url}");
    }
    let chunk = &doc["refs"]["color/1/c/0/0/0/0"];
    assert_eq!(chunk[0], server.url("src/multi/color/1/z0/y0/x0.wkw"));
    // Read back through the references, on the server.
    let config = server.env();
    let store = open_refs(&out, &config)?;
    same_as_wkw(&store, "/color/1", &ds.join("color/1"))?;
    same_as_wkw(
        &store,
        "/segmentation/2-2-1",
        &ds.join("segmentation/2-2-1"),
    )?;
    // Replaced after virtualizing (the same bytes, a new object): refused.
    let one = ds.join("color/1/z0/y0/x0.wkw");
    let copy = dir.path().join("again");
    std::fs::create_dir_all(copy.join("color/1/z0/y0"))?;
    std::fs::copy(&one, copy.join("color/1/z0/y0/x0.wkw"))?;
    std::fs::write(copy.join("color/1/z0/y0/x0.wkw"), {
        let mut b = std::fs::read(&one)?;
        b.push(0);
        b
    })?;
    server.upload_dir(&copy, "src/multi")?;
    // The store that read it keeps serving the referenced bytes it fetched (its read-ahead
    // windows); a store opened now fetches and is refused.
    same_as_wkw(&store, "/color/1", &ds.join("color/1"))?;
    let e = same_as_wkw(&open_refs(&out, &config)?, "/color/1", &ds.join("color/1"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("changed") && e.contains("x0.wkw"), "{e}");
    Ok(())
}
