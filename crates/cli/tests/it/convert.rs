//! `scifmt convert` on the webknossos-libs fixtures (`testdata/wkw-zarr`): WKW → Zarr3 →
//! WKW with `--verify`, the `--json` summary, existing targets, resuming and bad input.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

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
        "--blosc-cname needs --codec blosc",
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

/// Every file below `root` with its bytes' SHA-256 (relative path → hash).
fn hashed_tree(root: &std::path::Path) -> std::collections::BTreeMap<String, String> {
    let mut out = std::collections::BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let rel = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
                out.insert(rel, common::sha_file(&p));
            }
        }
    }
    out
}

/// `scifmt args…` run in `cwd`: (exit code, stderr).
fn run_in(cwd: &std::path::Path, args: &[&str]) -> (Option<i32>, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_scifmt"))
        .args(args)
        .current_dir(cwd)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A target that is the source, inside it or around it is refused before anything is written
/// or deleted, whatever the spelling (relative, absolute, `..`, a symlink) and the mode (none,
/// --overwrite, --resume); the message names both and says which contains which.
#[test]
fn convert_never_writes_into_or_over_its_source() {
    let dir = tmp();
    let d = dir.path();
    copy_dir(&testdata("wkw-zarr/multi/wkw"), &d.join("c"));
    std::fs::create_dir(d.join("other")).unwrap();
    #[cfg(unix)]
    std::os::unix::fs::symlink(d.join("c"), d.join("link")).unwrap();
    let before = hashed_tree(&d.join("c"));
    let abs = d.join("c").to_str().unwrap().to_owned();
    let mut cases: Vec<(&str, &str, &str)> = vec![
        ("c", "c", "is the input"),
        ("c", "./c/", "is the input"),
        (&abs, "c", "is the input"),
        ("c", "other/../c", "is the input"),
        ("c", "c/sub", "is inside the input"),
        ("c", "c/color", "is inside the input"),
        ("c/color/1", "c", "the input c/color/1 is inside c"),
    ];
    #[cfg(unix)]
    cases.extend([
        ("link", "c", "is the input"),
        ("c", "link/x", "is inside the input"),
    ]);
    for (src, dst, says) in cases {
        for mode in [None, Some("--overwrite"), Some("--resume")] {
            let mut args = vec!["convert", src, dst, "--to", "zarr3"];
            args.extend(mode);
            let (code, err) = run_in(d, &args);
            assert_eq!(code, Some(2), "{args:?}: {err}");
            assert!(
                err.contains("refused") && err.contains(says),
                "{args:?}: {err}"
            );
            assert_eq!(err.lines().count(), 1, "{err}");
            assert_eq!(hashed_tree(&d.join("c")), before, "{args:?}");
            let mut names: Vec<String> = std::fs::read_dir(d)
                .unwrap()
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect();
            names.sort();
            let mut want = vec!["c", "other"];
            if cfg!(unix) {
                want.push("link");
                want.sort_unstable();
            }
            assert_eq!(names, want, "{args:?}: nothing created");
        }
    }
}

/// An existing target is refused with what --overwrite would delete; --overwrite replaces it
/// only when the new one is complete (nothing left beside it), and never touches the source.
#[test]
fn convert_overwrites_only_when_asked_and_names_what_it_replaces() {
    let dir = tmp();
    let d = dir.path();
    copy_dir(&testdata("wkw-zarr/multi/wkw"), &d.join("ds"));
    let src = hashed_tree(&d.join("ds"));
    let (code, err) = run_in(
        d,
        &["convert", "ds", "out", "--to", "zarr3", "--codec", "none"],
    );
    assert_eq!(code, Some(0), "{err}");
    let old = hashed_tree(&d.join("out"));
    let (code, err) = run_in(d, &["convert", "ds", "out", "--to", "zarr3"]);
    assert_eq!(code, Some(2), "{err}");
    let files = format!("({} files, ", old.len());
    assert!(
        err.starts_with("scifmt: target exists: out ")
            && err.contains(&files)
            && err.contains("--overwrite")
            && err.contains("--resume"),
        "{err}"
    );
    assert_eq!(hashed_tree(&d.join("out")), old);
    let (code, err) = run_in(d, &["convert", "ds", "out", "--to", "zarr3", "--overwrite"]);
    assert_eq!(code, Some(0), "{err}");
    let new = hashed_tree(&d.join("out"));
    assert_ne!(new, old);
    assert!(
        new.keys()
            .all(|k| !k.contains(".scifmt-overwrite") && !k.ends_with(".tmp"))
    );
    let (code, err) = run_in(d, &["convert", "ds", "fresh", "--to", "zarr3"]);
    assert_eq!(code, Some(0), "{err}");
    // The same bytes as a conversion into a new target (but for the dataset's name).
    let fresh = hashed_tree(&d.join("fresh"));
    let without_props = |t: &std::collections::BTreeMap<String, String>| {
        t.iter()
            .filter(|(k, _)| *k != "datasource-properties.json")
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect::<Vec<_>>()
    };
    assert_eq!(without_props(&new), without_props(&fresh));
    let mut names: Vec<String> = std::fs::read_dir(d)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["ds", "fresh", "out"]);
    assert_eq!(hashed_tree(&d.join("ds")), src);
}
