//! `scifmt virtualize` on the webknossos-libs and `wkw` fixtures: the kerchunk file's every
//! chunk, read by offset and length from its WKW file and decoded, is the block `wkw` reads
//! there; the `--json` summary; refusals (existing output, output inside the input, `--to
//! zarr`, Zarr sources, `--to icechunk` without the feature); an `s3://` source on the S3 test
//! server, read only by its headers and jump tables, its references carrying ETags; kerchunk
//! Parquet references of it, written to the server, holding the kerchunk JSON's references.

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
    let summary = json_summary(&run);
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

/// Checks every chunk reference of the b2nd array `node` of the kerchunk document `doc`
/// against the frame `frame`: the bytes it names (read from `local`, or from the URL's file),
/// decoded by the `b2nd` codec, are the chunk's items as blosc2-frame reads them. Returns the
/// number of chunks checked.
fn chunks_are_b2nd_chunks(doc: &Value, node: &str, frame: &Path, local: Option<&Path>) -> usize {
    let meta: Value =
        serde_json::from_str(doc["refs"][format!("{node}zarr.json")].as_str().unwrap()).unwrap();
    let array = blosc2_frame::B2ndArray::open(frame).unwrap();
    let b2nd = array.meta().clone();
    assert_eq!(meta["shape"], serde_json::json!(b2nd.shape));
    assert_eq!(
        meta["chunk_grid"]["configuration"]["chunk_shape"],
        serde_json::json!(b2nd.chunkshape)
    );
    let codec = blosc2_frame::B2ndCodec::new(blosc2_frame::B2ndCodecConfig::new(
        &serde_json::from_value::<Vec<u64>>(
            meta["codecs"][0]["configuration"]["blockshape"].clone(),
        )
        .unwrap(),
    ))
    .unwrap();
    let size = array.itemsize();
    let mut n = 0;
    let prefix = format!("{node}c/");
    for (key, v) in doc["refs"].as_object().unwrap() {
        let Some(rest) = key.strip_prefix(&prefix) else {
            continue;
        };
        let idx: Vec<u64> = rest.split('/').map(|p| p.parse().unwrap()).collect();
        let url = v[0].as_str().unwrap();
        let file = match url.strip_prefix("file://") {
            Some(p) => std::path::PathBuf::from(p),
            None => local.unwrap().to_path_buf(),
        };
        let bytes = std::fs::read(&file).unwrap();
        let at = |v: u64| usize::try_from(v).unwrap();
        let (offset, length) = (v[1].as_u64().unwrap(), v[2].as_u64().unwrap());
        let chunk = codec
            .decode(
                &bytes[at(offset)..at(offset + length)],
                &b2nd.chunkshape,
                size,
            )
            .unwrap();
        // The part of the chunk inside the array, from blosc2-frame's region read.
        let start: Vec<u64> = idx
            .iter()
            .zip(&b2nd.chunkshape)
            .map(|(i, c)| i * c)
            .collect();
        let stop: Vec<u64> = start
            .iter()
            .zip(&b2nd.chunkshape)
            .zip(&b2nd.shape)
            .map(|((s, c), e)| (s + c).min(*e))
            .collect();
        let want = array.read_region(&start, &stop).unwrap();
        let extent: Vec<u64> = start.iter().zip(&stop).map(|(a, b)| b - a).collect();
        let items: u64 = extent.iter().product();
        for k in 0..items {
            // Item k of the region (C order) is at the same coordinates in the chunk.
            let (mut rest, mut linear, mut stride) = (k, 0u64, 1u64);
            for d in (0..extent.len()).rev() {
                linear += (rest % extent[d]) * stride;
                rest /= extent[d];
                stride *= b2nd.chunkshape[d];
            }
            let (w, c) = (at(k) * size, at(linear) * size);
            assert_eq!(
                &chunk[c..c + size],
                &want[w..w + size],
                "{node}{rest} item {k}"
            );
        }
        n += 1;
    }
    n
}

#[test]
fn b2nd_frames_become_kerchunk_references_to_their_chunks() {
    let dir = tmp();
    let a = testdata("blosc/frames/b2nd_u2_7x9x11.b2nd");
    let out = dir.path().join("one.json");
    let summary = json(&["virtualize", &s(&a), &s(&out), "--to", "kerchunk", "--json"]);
    // The same keys as for WKW sources.
    let keys: Vec<&str> = summary
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
        [
            "to",
            "sources",
            "groups",
            "arrays",
            "files",
            "unchanged_files",
            "references",
            "inline",
            "bytes_read",
            "bytes_written",
            "seconds"
        ]
    );
    assert_eq!(
        (summary["arrays"].as_u64(), summary["files"].as_u64()),
        (Some(1), Some(1))
    );
    assert!(summary["bytes_read"].as_u64().unwrap() < std::fs::metadata(&a).unwrap().len());
    let doc: Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    let n = chunks_are_b2nd_chunks(&doc, "", &a, None);
    assert_eq!(n as u64, summary["references"].as_u64().unwrap());
    assert!(n > 0);
    // Several sources, b2nd frames beside a WKW mag: each the node of its name.
    let b = testdata("blosc/frames/b2nd_be_f8_11x10.b2nd");
    let z = testdata("blosc/frames/b2nd_zeros_f8_50x40.b2nd");
    let mag = testdata("wkw/u8_raw_b8_f4");
    let out = dir.path().join("all.json");
    let summary = json(&[
        "virtualize",
        &s(&a),
        &s(&b),
        &s(&z),
        &s(&mag),
        &s(&out),
        "--to",
        "kerchunk",
        "--json",
    ]);
    assert_eq!(
        (summary["groups"].as_u64(), summary["arrays"].as_u64()),
        (Some(1), Some(4))
    );
    let doc: Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    let root: Value = serde_json::from_str(doc["refs"]["zarr.json"].as_str().unwrap()).unwrap();
    assert_eq!(root["node_type"], "group");
    let mut refs = chunks_are_b2nd_chunks(&doc, "b2nd_u2_7x9x11.b2nd/", &a, None);
    refs += chunks_are_b2nd_chunks(&doc, "b2nd_be_f8_11x10.b2nd/", &b, None);
    // The zero runs of this one have no reference: they read as the fill value.
    refs += chunks_are_b2nd_chunks(&doc, "b2nd_zeros_f8_50x40.b2nd/", &z, None);
    refs += chunks_are_blocks(&doc, "u8_raw_b8_f4/", &mag, None);
    assert_eq!(refs as u64, summary["references"].as_u64().unwrap());
    // What is not a b2nd array is refused, saying why.
    let x = s(&dir.path().join("x.json"));
    fails(
        &[
            "virtualize",
            &s(&testdata("blosc/frames/lz4_shuffle_meta_vlmeta.b2frame")),
            &x,
            "--to",
            "kerchunk",
        ],
        2,
        "no \"b2nd\" metalayer",
    );
    fails(
        &[
            "virtualize",
            // A sparse frame of a plain super-chunk (sparse b2nd arrays are virtualized).
            &s(&testdata("blosc/frames/sparse_lz4.b2frame")),
            &x,
            "--to",
            "kerchunk",
        ],
        2,
        "no \"b2nd\" metalayer",
    );
    // Two sources of one name.
    fails(
        &["virtualize", &s(&a), &s(&a), &x, "--to", "kerchunk"],
        2,
        "two sources are named",
    );
    assert!(!dir.path().join("x.json").exists());
}

#[test]
fn a_sparse_b2nd_frame_becomes_references_to_its_chunk_files() {
    let dir = tmp();
    // python-blosc2's sparse b2nd array: chunks.b2frame and one %08X.chunk file per chunk.
    let a = testdata("blosc/frames/b2nd_sparse_i4_37x45.b2nd");
    let out = dir.path().join("sparse.json");
    let summary = json(&["virtualize", &s(&a), &s(&out), "--to", "kerchunk", "--json"]);
    let doc: Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    let n = chunks_are_b2nd_chunks(&doc, "", &a, None);
    assert!(n > 0);
    assert_eq!(n as u64, summary["references"].as_u64().unwrap());
    // Each reference is a whole chunk file; chunks.b2frame and each chunk file were read.
    for (key, v) in doc["refs"].as_object().unwrap() {
        if !key.starts_with("c/") {
            continue;
        }
        let file =
            std::path::PathBuf::from(v[0].as_str().unwrap().strip_prefix("file://").unwrap());
        assert!(
            file.starts_with(std::fs::canonicalize(&a).unwrap()),
            "{key}"
        );
        assert_eq!(v[1].as_u64(), Some(0), "{key}");
        assert_eq!(
            v[2].as_u64(),
            Some(std::fs::metadata(&file).unwrap().len()),
            "{key}"
        );
    }
    assert_eq!(summary["files"].as_u64(), Some(1 + n as u64));
}

#[test]
fn an_s3_b2nd_source_is_read_by_its_metadata_only() {
    let dir = tmp();
    let frames = dir.path().join("frames");
    std::fs::create_dir(&frames).unwrap();
    let a = testdata("blosc/frames/b2nd_i8_25x7.b2nd");
    std::fs::copy(&a, frames.join("a.b2nd")).unwrap();
    let server = TestServer::start().unwrap();
    server.upload_dir(&frames, "fx").unwrap();
    server.reset_stats();
    let out = dir.path().join("refs.json");
    let run = Command::new(env!("CARGO_BIN_EXE_scifmt"))
        .args([
            "virtualize",
            &server.url("fx/a.b2nd"),
            &s(&out),
            "--to",
            "kerchunk",
            "--json",
        ])
        .envs(server.env())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let summary = json_summary(&run);
    let sent: u64 = server
        .log()
        .iter()
        .filter(|r| r.is_object_get() && r.key == "fx/a.b2nd")
        .map(|r| r.bytes_sent)
        .sum();
    assert_eq!(summary["bytes_read"].as_u64(), Some(sent));
    let doc: Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    let checksums = doc["scifmt"]["checksums"].as_object().unwrap();
    assert_eq!(checksums.len(), 1);
    for (url, c) in checksums {
        assert_eq!(url, &server.url("fx/a.b2nd"));
        assert!(c["etag"].as_str().is_some_and(|e| !e.is_empty()), "{c}");
    }
    let n = chunks_are_b2nd_chunks(&doc, "", &a, Some(&a));
    assert_eq!(n as u64, summary["references"].as_u64().unwrap());
}

/// Every file below `dir` uploaded to `url` (a prefix) with `config`.
#[cfg(feature = "icechunk")]
fn upload(dir: &Path, url: &str, config: &[(String, String)]) {
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
                continue;
            }
            let rel = p.strip_prefix(dir).unwrap().to_str().unwrap().to_owned();
            scifmt_io::Location::parse(&format!("{url}/{rel}"), config)
                .unwrap()
                .write_small(&std::fs::read(&p).unwrap(), scifmt_io::Durability::None)
                .unwrap();
        }
    }
}

/// `scifmt virtualize FROM TO EXTRA…` with the environment `env` added.
fn virtualize_with(
    env: &[(String, String)],
    from: &str,
    to: &str,
    extra: &[&str],
) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_scifmt"))
        .args(["virtualize", from, to])
        .args(extra)
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

/// The `--json` summary of a run, asserted successful.
fn json_summary(out: &std::process::Output) -> Value {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Asserts that a `--json` summary counts what `--to kerchunk` of the local dataset `src`
/// counts (groups, arrays, files, references, bytes read).
fn assert_counts_as_local(summary: &Value, src: &Path) {
    let dir = tmp();
    let local = virtualize_with(
        &[],
        &s(src),
        &s(&dir.path().join("refs.json")),
        &["--to", "kerchunk", "--json"],
    );
    assert!(local.status.success());
    let local: Value = serde_json::from_slice(&local.stdout).unwrap();
    for k in ["groups", "arrays", "files", "references", "bytes_read"] {
        assert_eq!(summary[k], local[k], "{k}");
    }
}

/// `--to icechunk` into an `az://` prefix, of an `az://` dataset, on Azurite (the Azure
/// Storage emulator, when it is installed: see testkit's `azurite`; feature `icechunk`): the
/// same references as of the local dataset; a second run refused without `--overwrite`, with it
/// an update that sets nothing and reads no WKW file again. (scifmt-io's tests read Azure
/// repositories back through Icechunk.)
#[cfg(feature = "icechunk")]
#[test]
fn an_icechunk_repository_on_azure_of_an_azure_source() {
    let Some(azurite) = testkit::azurite::Azurite::start().unwrap() else {
        eprintln!(
            "an_icechunk_repository_on_azure_of_an_azure_source did not run: Azurite is not \
             installed (cargo xtask azurite)"
        );
        return;
    };
    azurite.create_container("scifmt").unwrap();
    let env = azurite.env();
    let src = testdata("wkw-zarr/multi/wkw");
    upload(&src, "az://scifmt/ds/multi", &env);
    let run = |from: &str, to: &str, extra: &[&str]| virtualize_with(&env, from, to, extra);
    let first = run(
        "az://scifmt/ds/multi",
        "az://scifmt/repos/multi",
        &["--json"],
    );
    let summary = json_summary(&first);
    assert_eq!(summary["to"], "icechunk");
    assert!(summary["snapshot"].as_str().is_some_and(|s| !s.is_empty()));
    assert_counts_as_local(&summary, &src);
    assert_rerun_refused_and_update_unchanged(
        |extra| run("az://scifmt/ds/multi", "az://scifmt/repos/multi", extra),
        &summary,
    );
}

/// A second `virtualize` into the repository a first one (`first`, its `--json` summary) made:
/// refused without `--overwrite`; with it an update that sets and deletes nothing and reads no
/// WKW file again. `run(extra)` runs it with the arguments `extra` added.
#[cfg(feature = "icechunk")]
fn assert_rerun_refused_and_update_unchanged(
    run: impl Fn(&[&str]) -> std::process::Output,
    first: &Value,
) {
    let again = run(&[]);
    assert_eq!(again.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&again.stderr).contains("is an Icechunk repository"));
    let update = json_summary(&run(&["--overwrite", "--json"]));
    assert_eq!(update["update"]["set"], 0);
    assert_eq!(update["update"]["deleted"], 0);
    assert_eq!(update["unchanged_files"], first["files"]);
    assert_eq!(update["bytes_read"], 0);
}

/// `--to icechunk` of a `gs://` dataset into a local repository, on fake-gcs-server (a Cloud
/// Storage emulator, when it is installed: see testkit's `fake_gcs`; feature `icechunk`): the
/// same references as of the local dataset, the sources read by headers and jump tables only;
/// with `--overwrite` an update that sets nothing and reads no WKW file again; `wkw read` of
/// the `gs://` mag equal to the local read. (scifmt-io's tests and the Python tests read such
/// repositories back through Icechunk; `an_icechunk_repository_on_gcs` writes one on
/// `gs://`, which this emulator cannot take: it lacks Cloud Storage's XML `PUT`.)
#[cfg(feature = "icechunk")]
#[test]
fn an_icechunk_repository_of_a_gcs_source() {
    let Some(gcs) = testkit::fake_gcs::FakeGcs::start().unwrap() else {
        eprintln!(
            "an_icechunk_repository_of_a_gcs_source did not run: fake-gcs-server is not \
             installed (cargo xtask fake-gcs)"
        );
        return;
    };
    gcs.create_bucket("scifmt").unwrap();
    let src = testdata("wkw-zarr/multi/wkw");
    assert!(gcs.put_dir("scifmt", "ds/multi", &src).unwrap() > 0);
    let env = gcs.env();
    let run = |from: &str, to: &str, extra: &[&str]| virtualize_with(&env, from, to, extra);
    let dir = tmp();
    let repo = s(&dir.path().join("multi.icechunk"));
    let first = run("gs://scifmt/ds/multi", &repo, &["--json"]);
    let summary = json_summary(&first);
    assert_eq!(summary["to"], "icechunk");
    assert_counts_as_local(&summary, &src);
    let update = run("gs://scifmt/ds/multi", &repo, &["--overwrite", "--json"]);
    let update = json_summary(&update);
    assert_eq!(update["update"]["set"], 0);
    assert_eq!(update["unchanged_files"], summary["files"]);
    assert_eq!(update["bytes_read"], 0);
    // The voxels over Cloud Storage's XML API (ranged reads of LZ4HC blocks) as read locally.
    let read = |mag: &str| read_box(&env, mag);
    let remote = read("gs://scifmt/ds/multi/color/1");
    assert_eq!(remote.len(), 3 * 90 * 40 * 33);
    assert!(
        remote == read(&s(&src.join("color/1"))),
        "gs:// read differs"
    );
}

/// `--to icechunk` into a `gs://` prefix, of a `gs://` dataset, on s3-testserver's Cloud
/// Storage dialect (feature `icechunk`), with the credentials a Compute Engine VM has (the
/// metadata server's token, `GCE_METADATA_HOST`): the same references as of the local dataset;
/// a second run refused without `--overwrite`, with it an update that sets nothing and reads
/// no WKW file again; the repository's objects written with the token (the server refuses
/// writes without it). (scifmt-io's tests read Cloud Storage repositories back through
/// Icechunk, and show a rewritten source refused.)
#[cfg(feature = "icechunk")]
#[test]
fn an_icechunk_repository_on_gcs() {
    let server = s3_testserver::TestServer::start_gcs().unwrap();
    let src = testdata("wkw-zarr/multi/wkw");
    assert!(server.upload_dir(&src, "ds/multi").unwrap() > 0);
    let env = server.gcs_env();
    let run = |extra: &[&str]| {
        virtualize_with(
            &env,
            &server.gcs_url("ds/multi"),
            &server.gcs_url("repos/multi"),
            extra,
        )
    };
    let first = run(&["--json"]);
    let summary = json_summary(&first);
    assert_eq!(summary["to"], "icechunk");
    assert!(summary["snapshot"].as_str().is_some_and(|s| !s.is_empty()));
    assert_counts_as_local(&summary, &src);
    let log = server.log();
    assert!(
        log.iter()
            .any(|r| r.method == "PUT" && r.key.starts_with("repos/multi/") && r.status == 200),
        "the repository is on the server"
    );
    assert!(
        log.iter().all(|r| r.status != 401),
        "every write carried the metadata server's token"
    );
    assert_rerun_refused_and_update_unchanged(run, &summary);
}

/// `--to icechunk` of an `http://` dataset (a WebDAV server, which lists one directory level
/// at a time) into a local repository (feature `icechunk`): the same counts as of the local
/// dataset; `--overwrite` an update that sets nothing and reads no WKW file again; `wkw read`
/// of the `http://` mag equal to the local read. (scifmt-io's tests read such repositories
/// back through Icechunk.)
#[cfg(feature = "icechunk")]
#[test]
fn an_icechunk_repository_of_an_http_source() {
    let server = s3_testserver::WebDavServer::start().unwrap();
    let src = testdata("wkw-zarr/multi/wkw");
    copy_dir(&src, &server.root().join("ds/multi"));
    let url = server.url("ds/multi");
    let run = |from: &str, to: &str, extra: &[&str]| virtualize_with(&[], from, to, extra);
    let dir = tmp();
    let repo = s(&dir.path().join("multi.icechunk"));
    let summary = json_summary(&run(&url, &repo, &["--json"]));
    assert_eq!(summary["to"], "icechunk");
    assert_counts_as_local(&summary, &src);
    let update = json_summary(&run(&url, &repo, &["--overwrite", "--json"]));
    assert_eq!(update["update"]["set"], 0);
    assert_eq!(update["unchanged_files"], summary["files"]);
    assert_eq!(update["bytes_read"], 0);
    let read = |mag: &str| read_box(&[], mag);
    let remote = read(&format!("{url}/color/1"));
    assert_eq!(remote.len(), 3 * 90 * 40 * 33);
    assert!(
        remote == read(&s(&src.join("color/1"))),
        "http:// read differs"
    );
}

/// `scifmt wkw read MAG -` of the box at (20, 30, 0) of shape (90, 40, 33), with the
/// environment `env` added.
fn read_box(env: &[(String, String)], mag: &str) -> Vec<u8> {
    let out = Command::new(env!("CARGO_BIN_EXE_scifmt"))
        .args([
            "wkw", "read", mag, "-", "--offset", "20,30,0", "--shape", "90,40,33",
        ])
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// Copies the directory tree `from` to `to`.
fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let p = e.unwrap().path();
        let dst = to.join(p.file_name().unwrap());
        if p.is_dir() {
            copy_dir(&p, &dst);
        } else {
            std::fs::copy(&p, &dst).unwrap();
        }
    }
}

/// `--to icechunk` into an `s3://` prefix, of an `s3://` source (feature `icechunk`): a new
/// repository whose only branch is `main` (the parts' branch is gone), the sources read by
/// headers and jump tables only; a second run is refused without `--overwrite` and leaves it
/// as it was; with `--overwrite` it updates the repository: nothing set for unchanged sources,
/// then only a rewritten file's chunks set and a deleted file's chunks deleted. (scifmt-io's
/// tests read such repositories back through Icechunk.)
#[cfg(feature = "icechunk")]
#[test]
fn an_icechunk_repository_on_s3_of_an_s3_source() {
    let src = testdata("wkw-zarr/multi/wkw");
    let server = TestServer::start().unwrap();
    server.upload_dir(&src, "ds/multi").unwrap();
    server.reset_stats();
    let run = |extra: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_scifmt"))
            .args([
                "virtualize",
                &server.url("ds/multi"),
                &server.url("repos/multi"),
            ])
            .args(extra)
            .envs(server.env())
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    let first = run(&["--json"]);
    let summary = json_summary(&first);
    assert_eq!(summary["to"], "icechunk");
    assert!(summary["references"].as_u64().unwrap() > 0);
    assert!(summary["snapshot"].as_str().is_some_and(|s| !s.is_empty()));
    let data_bytes: u64 = server
        .log()
        .iter()
        .filter(|r| r.is_object_get() && r.key.ends_with(".wkw") && !r.key.ends_with("header.wkw"))
        .map(|r| r.bytes_sent)
        .sum();
    assert_eq!(summary["bytes_read"].as_u64(), Some(data_bytes));
    let keys = |dir: &Path| {
        let n = server.download_prefix("repos/multi", dir).unwrap();
        assert!(n > 0);
        let mut all = Vec::new();
        let mut stack = vec![dir.to_path_buf()];
        while let Some(d) = stack.pop() {
            for e in std::fs::read_dir(d).unwrap() {
                let p = e.unwrap().path();
                if p.is_dir() {
                    stack.push(p);
                } else {
                    all.push(p.strip_prefix(dir).unwrap().to_string_lossy().into_owned());
                }
            }
        }
        all.sort();
        all
    };
    let a = tmp();
    let before = keys(a.path());
    let branches: Vec<&String> = before.iter().filter(|k| k.starts_with("refs/")).collect();
    assert!(!branches.is_empty());
    assert!(
        branches.iter().all(|k| k.starts_with("refs/branch.main/")),
        "{branches:?}"
    );
    let again = run(&[]);
    assert_eq!(again.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&again.stderr).contains("is an Icechunk repository"));
    let b = tmp();
    assert_eq!(keys(b.path()), before, "the refused run wrote nothing");

    // --overwrite: an update; the sources unchanged, every reference is there already.
    let data_gets = || {
        let mut keys: Vec<String> = server
            .log()
            .iter()
            .filter(|r| {
                r.is_object_get() && r.key.ends_with(".wkw") && !r.key.ends_with("header.wkw")
            })
            .map(|r| r.key.clone())
            .collect();
        keys.dedup();
        keys
    };
    let update = |what: &str| {
        server.reset_stats();
        let run = run(&["--overwrite", "--json"]);
        assert!(
            run.status.success(),
            "{what}: {}",
            String::from_utf8_lossy(&run.stderr)
        );
        let summary: Value = serde_json::from_slice(&run.stdout).unwrap();
        summary
    };
    let references = summary["references"].as_u64().unwrap();
    let same = update("unchanged sources");
    // Listed with the ETags their references carry: not one data file read.
    assert_eq!(data_gets(), Vec::<String>::new(), "{same}");
    assert_eq!(same["bytes_read"].as_u64(), Some(0));
    assert_eq!(same["unchanged_files"], same["files"]);
    assert_eq!(same["references"].as_u64(), Some(references));
    assert_eq!(same["update"]["unchanged"].as_u64(), Some(references));
    for n in ["set", "deleted", "nodes_deleted"] {
        assert_eq!(same["update"][n].as_u64(), Some(0), "{n}: {same}");
    }
    assert_ne!(same["snapshot"], summary["snapshot"]);

    // One data file rewritten (new bytes after its jump table: a new ETag), one deleted.
    let object = |key: &str| scifmt_io::object_store::path::Path::from(format!("ds/multi/{key}"));
    let store = server.store();
    let changed = "color/1/z0/y0/x0.wkw";
    let mut bytes = std::fs::read(src.join(changed)).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 1;
    scifmt_io::block_on(scifmt_io::object_store::ObjectStoreExt::put(
        store.as_ref(),
        &object(changed),
        bytes.into(),
    ))
    .unwrap()
    .unwrap();
    scifmt_io::block_on(scifmt_io::object_store::ObjectStoreExt::delete(
        store.as_ref(),
        &object("color/1/z0/y1/x1.wkw"),
    ))
    .unwrap()
    .unwrap();
    let after = update("a file changed, one deleted");
    // Only the rewritten file is read.
    assert_eq!(data_gets(), [format!("ds/multi/{changed}")], "{after}");
    assert_eq!(
        after["unchanged_files"].as_u64().unwrap() + 1,
        after["files"].as_u64().unwrap()
    );
    let now = after["references"].as_u64().unwrap();
    assert!(now < references, "{after}");
    let u = &after["update"];
    let (unchanged, set, deleted) = (
        u["unchanged"].as_u64().unwrap(),
        u["set"].as_u64().unwrap(),
        u["deleted"].as_u64().unwrap(),
    );
    assert!(set > 0 && unchanged > 0, "{after}");
    assert_eq!(unchanged + set, now, "{after}");
    assert_eq!(
        deleted,
        references - now,
        "only the deleted file's chunks: {after}"
    );
    assert_eq!(u["nodes_deleted"].as_u64(), Some(0));
}

/// The rows of the kerchunk Parquet record file `file`: (path, offset, size).
fn parquet_rows(file: &Path) -> Vec<(Option<String>, i64, i64)> {
    use parquet::file::reader::{FileReader, SerializedFileReader};
    use parquet::record::Field;
    let reader = SerializedFileReader::new(std::fs::File::open(file).unwrap()).unwrap();
    reader
        .get_row_iter(None)
        .unwrap()
        .map(|row| {
            let row = row.unwrap();
            let f: Vec<&Field> = row.get_column_iter().map(|(_, f)| f).collect();
            let int = |f: &Field| match f {
                Field::Long(v) => *v,
                f => panic!("{f:?}"),
            };
            let path = match f[0] {
                Field::Str(s) => Some(s.clone()),
                Field::Null => None,
                f => panic!("{f:?}"),
            };
            (path, int(f[1]), int(f[2]))
        })
        .collect()
}

#[test]
fn kerchunk_parquet_on_s3_holds_the_references_of_kerchunk_json() {
    let dir = tmp();
    let src = testdata("wkw-zarr/multi/wkw");
    let server = TestServer::start().unwrap();
    server.upload_dir(&src, "ds/multi").unwrap();
    let scifmt = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_scifmt"))
            .args(args)
            .envs(server.env())
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    let source = server.url("ds/multi");
    let json_refs = dir.path().join("refs.json");
    let run = scifmt(&["virtualize", &source, &s(&json_refs), "--to", "kerchunk"]);
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let out = server.url("out/refs");
    let args = [
        "virtualize",
        &source,
        &out,
        "--to",
        "kerchunk-parquet",
        "--record-size",
        "7",
        "--json",
    ];
    let run = scifmt(&args);
    let summary = json_summary(&run);
    assert_eq!(summary["to"], "kerchunk-parquet");

    let doc: Value = serde_json::from_slice(&std::fs::read(&json_refs).unwrap()).unwrap();
    let root = server.backing_dir().join("out/refs");
    let meta: Value =
        serde_json::from_slice(&std::fs::read(root.join(".zmetadata")).unwrap()).unwrap();
    assert_eq!(meta["record_size"], 7);
    // The same checksums (ETags) as the JSON's.
    assert_eq!(meta["scifmt"]["checksums"], doc["scifmt"]["checksums"]);
    let mut arrays = 0;
    let mut references = 0;
    for (key, zarray) in meta["metadata"].as_object().unwrap() {
        let Some(array) = key.strip_suffix("/.zarray") else {
            continue;
        };
        arrays += 1;
        let grid: Vec<u64> = zarray["shape"]
            .as_array()
            .unwrap()
            .iter()
            .zip(zarray["chunks"].as_array().unwrap())
            .map(|(s, c)| s.as_u64().unwrap().div_ceil(c.as_u64().unwrap()))
            .collect();
        let total: u64 = grid.iter().product();
        let mut records = std::collections::BTreeMap::new();
        let prefix = format!("{array}/c/");
        let mut in_json = 0;
        for (k, v) in doc["refs"].as_object().unwrap() {
            let Some(indices) = k.strip_prefix(&prefix) else {
                continue;
            };
            in_json += 1;
            let n = indices
                .split('/')
                .zip(&grid)
                .fold(0u64, |n, (i, g)| n * g + i.parse::<u64>().unwrap());
            let rows = records.entry(n / 7).or_insert_with(|| {
                parquet_rows(&root.join(format!("{array}/refs.{}.parq", n / 7)))
            });
            assert_eq!(
                rows.len() as u64,
                7.min(total - n / 7 * 7),
                "{array} record {}",
                n / 7
            );
            let (path, offset, size) = &rows[(n % 7) as usize];
            assert_eq!(path.as_deref(), v[0].as_str(), "{k}");
            assert_eq!(
                (*offset, *size),
                (v[1].as_i64().unwrap(), v[2].as_i64().unwrap()),
                "{k}"
            );
        }
        // Every stored path is one of the JSON's references; files only for records with some.
        let stored: usize = records.values().flatten().filter(|r| r.0.is_some()).count();
        assert_eq!(stored, in_json, "{array}");
        let files = std::fs::read_dir(root.join(array)).unwrap().count();
        assert_eq!(files, records.len(), "{array}");
        references += in_json;
    }
    assert_eq!(arrays, summary["arrays"].as_u64().unwrap());
    assert_eq!(references as u64, summary["references"].as_u64().unwrap());

    // The prefix now holds objects: refused, also with --overwrite.
    for extra in [&[][..], &["--overwrite"][..]] {
        let run = scifmt(&[&args[..5], extra].concat());
        assert_eq!(run.status.code(), Some(2));
        assert!(String::from_utf8_lossy(&run.stderr).contains("holds objects"));
    }
}

#[test]
fn kerchunk_parquet_replaces_a_local_directory_only_with_overwrite() {
    let dir = tmp();
    let src = testdata("wkw-zarr/multi/wkw");
    let out = dir.path().join("refs");
    let args = ["virtualize", &s(&src), &s(&out), "--to", "kerchunk-parquet"];
    json(&[&args[..], &["--json"]].concat());
    std::fs::write(out.join("stray"), b"x").unwrap();
    fails(&args, 2, "--overwrite");
    assert!(out.join("stray").exists());
    json(&[&args[..], &["--overwrite", "--json"]].concat());
    assert!(!out.join("stray").exists());
    assert!(out.join(".zmetadata").is_file());
    // Nothing else beside it (the staging sibling is gone).
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["refs"]);
    // A single mag is an array at the root, which Parquet references cannot hold.
    let single = dir.path().join("single");
    let line = fails(
        &[
            "virtualize",
            &s(&src.join("color/1")),
            &s(&single),
            "--to",
            "kerchunk-parquet",
        ],
        2,
        "root",
    );
    assert!(line.contains("kerchunk JSON"), "{line}");
    assert!(!single.exists());
}

#[test]
fn an_icechunk_update_of_a_local_dataset_reads_only_the_files_that_changed() {
    let dir = tmp();
    let src = dir.path().join("ds");
    common::copy_dir(&testdata("wkw-zarr/multi/wkw"), &src);
    let repo = dir.path().join("repo");
    let first = json(&["virtualize", &s(&src), &s(&repo), "--json"]);
    assert_eq!(first["unchanged_files"], 0);
    assert!(first["bytes_read"].as_u64().unwrap() > 0);
    let args = ["virtualize", &s(&src), &s(&repo), "--overwrite", "--json"];
    let same = json(&args);
    assert_eq!(same["bytes_read"], 0, "{same}");
    assert_eq!(same["unchanged_files"], first["files"]);
    assert_eq!(same["update"]["unchanged"], first["references"]);

    // A file touched (a new modification time, the same bytes): read again, its references
    // set again with the new checksum; the others kept unread.
    let touched = src.join("color/1/z0/y0/x0.wkw");
    std::fs::File::options()
        .write(true)
        .open(&touched)
        .unwrap()
        .set_modified(std::time::SystemTime::now() + std::time::Duration::from_secs(120))
        .unwrap();
    let after = json(&args);
    let files = after["files"].as_u64().unwrap();
    assert_eq!(
        after["unchanged_files"].as_u64(),
        Some(files - 1),
        "{after}"
    );
    assert!(after["bytes_read"].as_u64().unwrap() > 0);
    let u = &after["update"];
    assert!(u["set"].as_u64().unwrap() > 0, "{after}");
    assert_eq!(
        u["set"].as_u64().unwrap() + u["unchanged"].as_u64().unwrap(),
        first["references"].as_u64().unwrap()
    );
    assert_eq!(u["deleted"], 0);
}
