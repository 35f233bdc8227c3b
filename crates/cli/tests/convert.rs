//! `scifmt convert` on the webknossos-libs fixtures (`testdata/wkw-zarr`): WKW → Zarr3 →
//! WKW with `--verify`, the `--json` summary, existing targets, resuming and bad input.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::{copy_dir, fails, json, ok, testdata, tmp};

#[test]
fn convert_a_dataset_to_zarr3_and_back_verified() {
    let dir = tmp();
    let src = testdata("wkw-zarr/multi/wkw");
    let zarr = dir.path().join("zarr3");
    let s = |p: &std::path::Path| p.to_str().unwrap().to_owned();
    let out = json(&[
        "convert",
        &s(&src),
        &s(&zarr),
        "--to",
        "zarr3",
        "--verify",
        "--jobs",
        "2",
        "--json",
    ]);
    assert_eq!(out["to"], "zarr3");
    assert_eq!(out["arrays"], 5);
    assert!(out["shards_written"].as_u64().unwrap() > 0);
    assert!(out["bytes_in"].as_u64().unwrap() > 0 && out["bytes_out"].as_u64().unwrap() > 0);
    assert!(out["seconds"].as_f64().is_some());
    assert_eq!(out["differing_blocks"], 0);
    assert_eq!(out["differences"], serde_json::json!([]));
    // Its metadata equals what webknossos-libs wrote for the same dataset.
    for rel in [
        "zarr.json",
        "color/zarr.json",
        "color/2-2-1/zarr.json",
        "segmentation/1/zarr.json",
    ] {
        let ours: serde_json::Value =
            serde_json::from_slice(&std::fs::read(zarr.join(rel)).unwrap()).unwrap();
        let theirs: serde_json::Value = serde_json::from_slice(
            &std::fs::read(testdata("wkw-zarr/multi/zarr3").join(rel)).unwrap(),
        )
        .unwrap();
        assert_eq!(ours, theirs, "{rel}");
    }

    // An existing target is refused, named; --resume keeps every shard.
    fails(
        &["convert", &s(&src), &s(&zarr), "--to", "zarr3"],
        2,
        "target exists",
    );
    let again = json(&[
        "convert",
        &s(&src),
        &s(&zarr),
        "--to",
        "ZARR3", // enumerated values are case-insensitive, as everywhere in the CLI
        "--resume",
        "--json",
    ]);
    assert_eq!(again["shards_written"], 0);
    assert_eq!(again["shards_skipped"], out["shards_written"]);

    // Back to WKW, LZ4HC, verified; text output.
    let back = dir.path().join("back");
    let text = ok(&[
        "convert",
        &s(&zarr),
        &s(&back),
        "--to",
        "wkw",
        "--block-type",
        "lz4hc",
        "--verify",
    ]);
    assert!(text.contains("differing_blocks: 0"), "{text}");
    let back_again = dir.path().join("back");
    fails(
        &["convert", &s(&zarr), &s(&back_again), "--to", "zarr3"],
        2,
        "already",
    );
    ok(&[
        "convert",
        &s(&zarr),
        &s(&back),
        "--to",
        "wkw",
        "--overwrite",
        "--block-type",
        "raw",
    ]);
}

#[test]
fn bad_input_is_an_error_naming_the_file() {
    let dir = tmp();
    let src = dir.path().join("wkw");
    copy_dir(&testdata("wkw-zarr/multi/wkw"), &src);
    let file = src.join("color/1/z0/y0/x0.wkw");
    let mut bytes = std::fs::read(&file).unwrap();
    bytes[0] = b'X'; // bad magic
    std::fs::write(&file, &bytes).unwrap();
    let s = |p: &std::path::Path| p.to_str().unwrap().to_owned();
    fails(
        &[
            "convert",
            &s(&src),
            &s(&dir.path().join("out")),
            "--to",
            "zarr3",
        ],
        2,
        "color/1/z0/y0/x0.wkw",
    );
    fails(
        &[
            "convert",
            &s(&dir.path().join("nothing")),
            &s(&dir.path().join("out2")),
            "--to",
            "wkw",
        ],
        2,
        "nothing",
    );
    fails(
        &[
            "convert",
            &s(&testdata("wkw-zarr/multi/wkw")),
            &s(&dir.path().join("out3")),
            "--to",
            "zarr3",
            "--blosc-cname",
            "lz4",
        ],
        2,
        "need --codec blosc",
    );
    fails(
        &[
            "convert",
            &s(&testdata("wkw-zarr/multi/wkw")),
            &s(&dir.path().join("out4")),
            "--to",
            "zarr3",
            "--zstd-level",
            "3",
        ],
        2,
        "--codec zstd",
    );
}

#[test]
fn convert_to_blosc_zarr3_and_back_verified() {
    let dir = tmp();
    let src = testdata("wkw-zarr/multi/wkw");
    let zarr = dir.path().join("zarr3");
    let s = |p: &std::path::Path| p.to_str().unwrap().to_owned();
    let out = json(&[
        "convert",
        &s(&src),
        &s(&zarr),
        "--to",
        "zarr3",
        "--codec",
        "blosc",
        "--blosc-cname",
        "zstd",
        "--clevel",
        "3",
        "--shuffle",
        "bitshuffle",
        "--blocksize",
        "0",
        "--verify",
        "--json",
    ]);
    assert_eq!(out["differing_blocks"], 0);
    let meta: serde_json::Value =
        serde_json::from_slice(&std::fs::read(zarr.join("color/1/zarr.json")).unwrap()).unwrap();
    let codec = &meta["codecs"][0]["configuration"]["codecs"][2];
    assert_eq!(codec["name"], "blosc", "{meta}");
    assert_eq!(
        codec["configuration"],
        serde_json::json!({"cname": "zstd", "clevel": 3, "shuffle": "bitshuffle",
            "typesize": 1, "blocksize": 0}),
        "{meta}"
    );
    let back = dir.path().join("back");
    let out = json(&[
        "convert",
        &s(&zarr),
        &s(&back),
        "--to",
        "wkw",
        "--block-type",
        "raw",
        "--verify",
        "--json",
    ]);
    assert_eq!(out["differing_blocks"], 0);
    fails(
        &[
            "convert",
            &s(&src),
            &s(&dir.path().join("z3")),
            "--to",
            "zarr3",
            "--codec",
            "blosc",
            "--clevel",
            "10",
        ],
        2,
        "--clevel",
    );
}
