//! `scifmt virtualize` on the webknossos-libs and `wkw` fixtures: the kerchunk file's every
//! chunk, read by offset and length from its WKW file and decoded, is the block `wkw` reads
//! there; the `--json` summary; refusals (existing output, output inside the input, `--to
//! zarr`, Zarr sources, `--to icechunk` without the feature); an `s3://` source on the S3 test
//! server, read only by its headers and jump tables, its references carrying ETags.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::path::Path;
use std::process::{Command, Stdio};

use common::{fails, json, testdata, tmp};
use s3_testserver::TestServer;
use serde_json::Value;

fn s(p: &Path) -> String {
    p.to_str().unwrap().to_owned()
}

/// Checks every chunk reference of the array `node` of the kerchunk document `doc` against the
/// WKW mag `mag`: the bytes it names, decoded, are the block `wkw` reads at its place. Returns
/// the number of chunks checked.
fn chunks_are_blocks(doc: &Value, node: &str, mag: &Path, local: Option<&Path>) -> usize {
    let meta: Value =
        serde_json::from_str(doc["refs"][format!("{node}zarr.json")].as_str().unwrap()).unwrap();
    let header = wkw::Header::parse(&std::fs::read(mag.join("header.wkw")).unwrap()).unwrap();
    let b = header.block_len();
    assert_eq!(
        meta["chunk_grid"]["configuration"]["chunk_shape"],
        serde_json::json!([header.num_channels(), b, b, b])
    );
    let ds = wkw::Dataset::open(mag).unwrap();
    let mut n = 0;
    let prefix = format!("{node}c/0/");
    for (key, v) in doc["refs"].as_object().unwrap() {
        let Some(rest) = key.strip_prefix(&prefix) else {
            continue;
        };
        let idx: Vec<u32> = rest.split('/').map(|p| p.parse().unwrap()).collect();
        let url = v[0].as_str().unwrap();
        let (offset, length) = (v[1].as_u64().unwrap(), v[2].as_u64().unwrap());
        // A local URL is the file itself; a store URL is read from the same file here.
        let file = match url.strip_prefix("file://") {
            Some(p) => std::path::PathBuf::from(p),
            None => {
                let rel = url.rsplit_once(".wkw").unwrap().0;
                let tail: Vec<&str> = rel.rsplitn(4, '/').collect();
                local
                    .unwrap()
                    .join(format!("{}/{}/{}.wkw", tail[2], tail[1], tail[0]))
            }
        };
        let bytes = std::fs::read(&file).unwrap();
        let at = |v: u64| usize::try_from(v).unwrap();
        let stored = &bytes[at(offset)..at(offset + length)];
        let mut raw = vec![0u8; at(header.block_bytes())];
        wkw::decode_block(stored, header.block_type(), &mut raw).unwrap();
        let at = [idx[0] * b, idx[1] * b, idx[2] * b];
        let want = ds.read(at, [b, b, b], wkw::Order::Fortran).unwrap();
        assert!(raw == want.as_bytes(), "{node}{rest}");
        n += 1;
    }
    n
}

#[test]
fn a_dataset_becomes_kerchunk_references_to_its_blocks() {
    let dir = tmp();
    let src = testdata("wkw-zarr/multi/wkw");
    let out = dir.path().join("refs.json");
    let summary = json(&[
        "virtualize",
        &s(&src),
        &s(&out),
        "--to",
        "kerchunk",
        "--json",
    ]);
    assert_eq!(summary["to"], "kerchunk");
    assert_eq!(summary["arrays"], 5);
    assert_eq!(summary["groups"], 4);
    let refs = summary["references"].as_u64().unwrap();
    assert!(refs > 0 && summary["files"].as_u64().unwrap() > 0);
    assert_eq!(
        summary["bytes_written"].as_u64().unwrap(),
        std::fs::metadata(&out).unwrap().len()
    );
    let doc: Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    assert_eq!(doc["version"], 1);
    let mut checked = 0;
    for (node, mag) in [
        ("color/1/", "color/1"),
        ("color/2-2-1/", "color/2-2-1"),
        ("segmentation/1/", "segmentation/1"),
        ("segmentation/2-2-1/", "segmentation/2-2-1"),
        ("float/1/", "float/1"),
    ] {
        checked += chunks_are_blocks(&doc, node, &src.join(mag), None);
    }
    assert_eq!(checked as u64, refs);

    // An existing output is refused, --overwrite replaces it.
    fails(
        &["virtualize", &s(&src), &s(&out), "--to", "kerchunk"],
        2,
        "add --overwrite",
    );
    json(&[
        "virtualize",
        &s(&src),
        &s(&out),
        "--to",
        "kerchunk",
        "--overwrite",
        "--json",
    ]);
}

#[test]
fn several_mags_become_named_arrays() {
    let dir = tmp();
    let a = testdata("wkw/u8_raw_b8_f4");
    let b = testdata("wkw/i32_lz4hc_b8_f2");
    let out = dir.path().join("both.json");
    let summary = json(&[
        "virtualize",
        &s(&a),
        &s(&b),
        &s(&out),
        "--to",
        "kerchunk",
        "--json",
    ]);
    assert_eq!(
        (summary["sources"].as_u64(), summary["arrays"].as_u64()),
        (Some(2), Some(2))
    );
    let doc: Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    assert!(chunks_are_blocks(&doc, "u8_raw_b8_f4/", &a, None) > 0);
    assert!(chunks_are_blocks(&doc, "i32_lz4hc_b8_f2/", &b, None) > 0);
}

#[test]
fn what_cannot_be_virtualized_is_refused_saying_why() {
    let dir = tmp();
    let src = testdata("wkw-zarr/multi/wkw");
    let out = s(&dir.path().join("x"));
    let line = fails(
        &["virtualize", &s(&src), &out, "--to", "zarr"],
        2,
        "--to zarr",
    );
    assert!(line.contains("--to kerchunk"), "{line}");
    fails(
        &[
            "virtualize",
            &s(&src),
            &s(&src.join("refs.json")),
            "--to",
            "kerchunk",
        ],
        2,
        "inside the input",
    );
    fails(
        &[
            "virtualize",
            &s(&testdata("wkw-zarr/multi/zarr3")),
            &out,
            "--to",
            "kerchunk",
        ],
        2,
        "Zarr is already Zarr",
    );
    if !cfg!(feature = "icechunk") {
        fails(
            &["virtualize", &s(&src), &out],
            2,
            "without Icechunk support",
        );
    }
    fails(&["virtualize", &s(&src)], 2, "");
    assert!(!dir.path().join("x").exists());
}

#[test]
fn an_s3_source_is_read_by_headers_and_jump_tables_only() {
    let dir = tmp();
    let src = testdata("wkw-zarr/multi/wkw");
    let server = TestServer::start().unwrap();
    server.upload_dir(&src, "ds/multi").unwrap();
    server.reset_stats();
    let out = dir.path().join("refs.json");
    let run = Command::new(env!("CARGO_BIN_EXE_scifmt"))
        .args([
            "virtualize",
            &server.url("ds/multi"),
            &s(&out),
            "--to",
            "kerchunk",
            "--json",
        ])
        .envs(server.env())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let summary: Value = serde_json::from_slice(&run.stdout).unwrap();
    // Every byte of a WKW data file sent was a header or a jump table.
    let data_bytes: u64 = server
        .log()
        .iter()
        .filter(|r| r.is_object_get() && r.key.ends_with(".wkw") && !r.key.ends_with("header.wkw"))
        .map(|r| r.bytes_sent)
        .sum();
    assert_eq!(summary["bytes_read"].as_u64(), Some(data_bytes));
    let doc: Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    let checksums = doc["scifmt"]["checksums"].as_object().unwrap();
    assert_eq!(checksums.len() as u64, summary["files"].as_u64().unwrap());
    for (url, c) in checksums {
        assert!(url.starts_with("s3://"), "{url}");
        assert!(
            c["etag"].as_str().is_some_and(|e| !e.is_empty()),
            "{url}: {c}"
        );
    }
    let n = chunks_are_blocks(
        &doc,
        "color/1/",
        &src.join("color/1"),
        Some(&src.join("color/1")),
    );
    assert!(n > 0);
}
