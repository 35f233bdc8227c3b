//! `scifmt info`, `blosc`, `frame` and `b2nd` on the python-blosc2 fixtures
//! (`testdata/blosc/manifest.json`, `SHA256SUMS`).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::cast_possible_truncation
)] // test helpers outside #[test] fns; small fixture sizes

use crate::common;

use common::{blosc_manifest, fails, json, ok, sha, sha_file, sum_of, testdata, tmp};
use serde_json::json;

#[test]
fn blosc_decompress_matches_every_manifest_sha() {
    let dir = tmp();
    let mut checked = 0;
    for e in blosc_manifest() {
        if e["kind"] != "chunk" || e["sha256_decompressed"].is_null() {
            continue;
        }
        let rel = format!("blosc/{}", e["path"].as_str().unwrap());
        let out = dir.path().join("out.raw");
        ok(&[
            "blosc".as_ref(),
            "decompress".as_ref(),
            testdata(&rel).as_os_str(),
            out.as_os_str(),
            "--overwrite".as_ref(),
        ]);
        let mut bytes = std::fs::read(&out).unwrap();
        assert_eq!(
            bytes.len() as u64,
            e["decompressed_len"].as_u64().unwrap(),
            "{rel}"
        );
        // Some legacy entries hash only a prefix (manifest `sha256_covers_first_bytes`).
        if let Some(n) = e["sha256_covers_first_bytes"].as_u64() {
            bytes.truncate(n as usize);
        }
        assert_eq!(
            sha(&bytes),
            e["sha256_decompressed"].as_str().unwrap(),
            "{rel}"
        );
        checked += 1;
    }
    assert!(checked >= 150, "{checked}");
}

/// The chunk-matrix call of a fixture name like `lz4_shuffle_ts4`, as CLI flags.
fn matrix_flags(stem: &str) -> Vec<String> {
    let mut parts = stem.split('_');
    let codec = parts.next().unwrap();
    let filter = parts.next().unwrap();
    let ts = parts.next().unwrap().trim_start_matches("ts");
    let mut flags = vec![
        "--typesize".into(),
        ts.into(),
        "--codec".into(),
        codec.into(),
        "--clevel".into(),
        "5".into(),
        "--blocksize".into(),
        "4096".into(),
        "--splitmode".into(),
        "auto".into(),
    ];
    let filters: Vec<String> = match filter {
        "noshuffle" => vec!["none".into()],
        "truncprec" if ts == "4" => vec!["truncprec:10".into(), "shuffle".into()],
        "truncprec" => vec!["truncprec:-20".into(), "shuffle".into()],
        f => vec![f.into()],
    };
    for f in filters {
        flags.push("--filter".into());
        flags.push(f);
    }
    flags
}

#[test]
fn blosc_compress_is_byte_identical_to_c_blosc2_on_the_chunk_matrix() {
    // Every matrix chunk except zlib (zlib-ng output is not reproducible, see blosc-chunk).
    let dir = tmp();
    let raw = dir.path().join("in.raw");
    let out = dir.path().join("out.cdata");
    let mut checked = 0;
    for e in blosc_manifest() {
        let path = e["path"].as_str().unwrap();
        let Some(stem) = path
            .strip_prefix("chunks/")
            .and_then(|p| p.strip_suffix(".cdata"))
        else {
            continue;
        };
        if stem.starts_with("zlib") {
            continue;
        }
        let fixture = testdata(&format!("blosc/{path}"));
        ok(&[
            "blosc".as_ref(),
            "decompress".as_ref(),
            fixture.as_os_str(),
            raw.as_os_str(),
            "--overwrite".as_ref(),
        ]);
        let mut args: Vec<std::ffi::OsString> = vec![
            "blosc".into(),
            "compress".into(),
            raw.clone().into(),
            out.clone().into(),
            "--overwrite".into(),
        ];
        args.extend(matrix_flags(stem).into_iter().map(Into::into));
        ok(&args);
        assert_eq!(
            std::fs::read(&out).unwrap(),
            std::fs::read(&fixture).unwrap(),
            "{stem}"
        );
        checked += 1;
    }
    assert_eq!(checked, 88);
}

#[test]
fn blosc_compress_use_dict_is_byte_identical_to_c_blosc2() {
    let dir = tmp();
    let raw = dir.path().join("in.raw");
    let out = dir.path().join("out.cdata");
    for codec in ["lz4", "lz4hc", "zstd"] {
        let fixture = testdata(&format!("blosc/misc/{codec}_dict_text.cdata"));
        ok(&[
            "blosc".as_ref(),
            "decompress".as_ref(),
            fixture.as_os_str(),
            raw.as_os_str(),
            "--overwrite".as_ref(),
        ]);
        ok(&[
            "blosc".as_ref(),
            "compress".as_ref(),
            raw.as_os_str(),
            out.as_os_str(),
            "--overwrite".as_ref(),
            "--typesize=1".as_ref(),
            format!("--codec={codec}").as_ref(),
            "--filter=none".as_ref(),
            "--use-dict".as_ref(),
        ]);
        assert_eq!(
            std::fs::read(&out).unwrap(),
            std::fs::read(&fixture).unwrap(),
            "{codec}"
        );
    }
}

#[test]
fn blosc_compress_defaults_and_threads_round_trip() {
    let dir = tmp();
    let raw = dir.path().join("in.raw");
    let data: Vec<u8> = (0..100_000u32)
        .flat_map(|i| (i / 7).to_le_bytes())
        .collect();
    std::fs::write(&raw, &data).unwrap();
    let one = dir.path().join("one.cdata");
    let four = dir.path().join("four.cdata");
    let back = dir.path().join("back.raw");
    for (out, threads) in [(&one, "1"), (&four, "4")] {
        ok(&[
            "blosc".as_ref(),
            "compress".as_ref(),
            raw.as_os_str(),
            out.as_os_str(),
            "--typesize".as_ref(),
            "4".as_ref(),
            "--threads".as_ref(),
            threads.as_ref(),
        ]);
    }
    assert_eq!(std::fs::read(&one).unwrap(), std::fs::read(&four).unwrap());
    // python-blosc2's defaults (blosc2.CParams()): zstd, clevel 5, shuffle in slot 5.
    let info = json(&["info".as_ref(), one.as_os_str(), "--json".as_ref()]);
    assert_eq!(info["format"], "blosc-chunk");
    assert_eq!(info["codec"], "zstd");
    assert_eq!(info["filters"][5], "shuffle");
    assert_eq!(info["nbytes"], 400_000);
    ok(&[
        "blosc".as_ref(),
        "decompress".as_ref(),
        one.as_os_str(),
        back.as_os_str(),
    ]);
    assert_eq!(std::fs::read(&back).unwrap(), data);
}

#[test]
fn info_describes_chunks_frames_and_b2nd() {
    let chunk = json(&[
        "info".as_ref(),
        testdata("blosc/chunks/lz4_shuffle_ts4.cdata").as_os_str(),
        "--json".as_ref(),
    ]);
    // manifest: v5; flags 0x25; ts 4; nbytes 11980; bs 4096; cbytes 3591; filters 1,0,..
    assert_eq!(chunk["format"], "blosc-chunk");
    assert_eq!(chunk["version"], 5);
    assert_eq!(chunk["flags"], 0x25);
    assert_eq!(chunk["typesize"], 4);
    assert_eq!(chunk["nbytes"], 11980);
    assert_eq!(chunk["cbytes"], 3591);
    assert_eq!(chunk["blocksize"], 4096);
    assert_eq!(chunk["codec"], "lz4");
    assert_eq!(chunk["filters"][0], "shuffle");

    let special = json(&[
        "info".as_ref(),
        testdata("blosc/misc/special_zero_chunk.cdata").as_os_str(),
        "--json".as_ref(),
    ]);
    assert_eq!(special["special"], "zeros");

    for e in blosc_manifest() {
        let kind = e["kind"].as_str().unwrap();
        if kind != "frame" && kind != "b2nd" {
            continue;
        }
        let rel = format!("blosc/{}", e["path"].as_str().unwrap());
        let info = json(&[
            "info".as_ref(),
            testdata(&rel).as_os_str(),
            "--json".as_ref(),
        ]);
        let want = match (kind, rel.contains("sparse")) {
            ("b2nd", _) => "b2nd",
            (_, true) => "blosc2-sparse-frame",
            _ => "blosc2-frame",
        };
        assert_eq!(info["format"], want, "{rel}");
        assert_eq!(info["nchunks"], e["nchunks"], "{rel}");
        assert_eq!(info["nbytes"], e["decompressed_len"], "{rel}");
        if !e["chunksize"].is_null() {
            assert_eq!(info["chunksize"], e["chunksize"], "{rel}");
        }
        assert_eq!(info["typesize"], e["typesize"], "{rel}");
        assert_eq!(info["header_len"], e["header_len"], "{rel}");
        assert_eq!(info["trailer_len"], e["trailer_len"], "{rel}");
        if !rel.contains("sparse") {
            assert_eq!(info["frame_len"], e["file_len"], "{rel}");
        }
        let names = |v: &serde_json::Value| {
            let mut k: Vec<String> = v.as_object().unwrap().keys().cloned().collect();
            k.sort();
            k
        };
        assert_eq!(
            names(&info["metalayers"]),
            names(&e["metalayers_raw_hex"]),
            "{rel}"
        );
        assert_eq!(
            names(&info["vlmetalayers"]),
            names(&e["vlmetalayers_decompressed_hex"]),
            "{rel}"
        );
        if kind == "b2nd" {
            assert_eq!(info["shape"], e["shape"], "{rel}");
            assert_eq!(info["chunkshape"], e["chunks"], "{rel}");
            assert_eq!(info["blockshape"], e["blocks"], "{rel}");
            assert_eq!(info["dtype"], e["dtype"], "{rel}");
        }
    }

    // Human output: key: value lines with the format first.
    let text = ok(&[
        "info".as_ref(),
        testdata("blosc/frames/zstd_delta_shuffle_many_chunks.b2frame").as_os_str(),
    ]);
    assert!(text.starts_with("format: blosc2-frame\n"), "{text}");
    assert!(text.contains("\nnchunks: 41\n"), "{text}");
}

#[test]
fn info_reports_every_manifest_chunk_header() {
    const FILTERS: [&str; 5] = ["none", "shuffle", "bitshuffle", "delta", "truncprec"];
    let mut checked = 0;
    for e in blosc_manifest() {
        if e["kind"] != "chunk" {
            continue;
        }
        let rel = format!("blosc/{}", e["path"].as_str().unwrap());
        let info = json(&["info", testdata(&rel).to_str().unwrap(), "--json"]);
        assert_eq!(info["format"], "blosc-chunk", "{rel}");
        assert_eq!(info["file_len"], e["file_len"], "{rel}");
        let h = e["header"].as_object().unwrap();
        for (k, v) in h {
            if k == "filters" {
                let names: Vec<_> = v
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|id| FILTERS[id.as_u64().unwrap() as usize])
                    .collect();
                assert_eq!(info["filters"], json!(names), "{rel}");
            } else {
                assert_eq!(&info[k], v, "{rel} {k}");
            }
        }
        checked += 1;
    }
    assert_eq!(checked, 153);
}

#[test]
fn frame_extract_matches_every_manifest_sha() {
    let dir = tmp();
    let out = dir.path().join("out.raw");
    let mut checked = 0;
    for e in blosc_manifest() {
        let kind = e["kind"].as_str().unwrap();
        if (kind != "frame" && kind != "b2nd") || e["sha256_decompressed"].is_null() {
            continue;
        }
        let rel = format!("blosc/{}", e["path"].as_str().unwrap());
        ok(&[
            "frame".as_ref(),
            "extract".as_ref(),
            testdata(&rel).as_os_str(),
            out.as_os_str(),
            "--overwrite".as_ref(),
        ]);
        let bytes = std::fs::read(&out).unwrap();
        assert_eq!(
            bytes.len() as u64,
            e["decompressed_len"].as_u64().unwrap(),
            "{rel}"
        );
        assert_eq!(
            sha(&bytes),
            e["sha256_decompressed"].as_str().unwrap(),
            "{rel}"
        );
        checked += 1;
    }
    // 20 contiguous frames and 2 sparse ones (a super-chunk, a b2nd array).
    assert_eq!(checked, 22);
}

#[test]
fn frame_chunks_lists_sizes_and_specials() {
    let rows = json(&[
        "frame".as_ref(),
        "chunks".as_ref(),
        testdata("blosc/frames/lz4_shuffle_meta_vlmeta.b2frame").as_os_str(),
        "--json".as_ref(),
    ]);
    let rows = rows.as_array().unwrap();
    assert_eq!(rows.len(), 3);
    // manifest: chunk 1 is all zeros -> stored only as special offset; last chunk 40000 B.
    assert_eq!(rows[1]["special"], "zeros");
    assert_eq!(rows[1]["cbytes"], 0);
    assert_eq!(rows[0]["codec"], "lz4");
    assert_eq!(rows[0]["filters"][0], "shuffle");
    assert!(rows[0]["offset"].is_u64());
    let nbytes: Vec<u64> = rows.iter().map(|r| r["nbytes"].as_u64().unwrap()).collect();
    assert_eq!(nbytes, [100_000, 100_000, 40_000]);

    let many = json(&[
        "frame".as_ref(),
        "chunks".as_ref(),
        testdata("blosc/frames/zstd_delta_shuffle_many_chunks.b2frame").as_os_str(),
        "--json".as_ref(),
    ]);
    let entry = blosc_manifest()
        .into_iter()
        .find(|e| e["path"] == "frames/zstd_delta_shuffle_many_chunks.b2frame")
        .unwrap();
    let got: Vec<_> = many
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["nbytes"].clone())
        .collect();
    assert_eq!(serde_json::Value::Array(got), entry["chunk_nbytes"]);
    for r in many.as_array().unwrap() {
        assert_eq!(r["codec"], "zstd");
        assert_eq!(r["filters"][0], "delta");
        assert_eq!(r["filters"][1], "shuffle");
    }

    // Sparse frame: chunk files instead of offsets; index = [0, 3, 1, 2, zero-special].
    let sparse = json(&[
        "frame".as_ref(),
        "chunks".as_ref(),
        testdata("blosc/frames/sparse_lz4.b2frame").as_os_str(),
        "--json".as_ref(),
    ]);
    let files: Vec<_> = sparse
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["file"].clone())
        .collect();
    assert_eq!(files, [json!(0), json!(3), json!(1), json!(2), json!(null)]);
    assert_eq!(sparse[4]["special"], "zeros");

    let text = ok(&[
        "frame".as_ref(),
        "chunks".as_ref(),
        testdata("blosc/frames/lz4_shuffle_meta_vlmeta.b2frame").as_os_str(),
    ]);
    assert_eq!(text.lines().count(), 4);
    assert!(
        text.lines().nth(2).unwrap().contains("special zeros"),
        "{text}"
    );
}

#[test]
fn frame_meta_decodes_msgpack_to_json() {
    let m = json(&[
        "frame".as_ref(),
        "meta".as_ref(),
        testdata("blosc/frames/lz4_shuffle_meta_vlmeta.b2frame").as_os_str(),
        "--json".as_ref(),
    ]);
    assert_eq!(
        m,
        json!({
            "metalayers": {"m1": [1, 2, 3], "mymeta": {"a": 1}},
            "vlmetalayers": {"info": {"hello": "world"}, "bin": {"$bin": "000102"}}
        })
    );
    let sparse = json(&[
        "frame".as_ref(),
        "meta".as_ref(),
        testdata("blosc/frames/sparse_lz4.b2frame").as_os_str(),
        "--json".as_ref(),
    ]);
    assert_eq!(
        sparse,
        json!({"metalayers": {"m": 1}, "vlmetalayers": {"k": "v"}})
    );
    let text = ok(&[
        "frame".as_ref(),
        "meta".as_ref(),
        testdata("blosc/frames/sparse_lz4.b2frame").as_os_str(),
    ]);
    assert_eq!(text, "meta m: 1\nvlmeta k: \"v\"\n");
}

#[test]
fn frame_create_rebuilds_python_blosc2_frames_byte_for_byte() {
    let dir = tmp();
    for recipe in [common::many_chunks_recipe(), common::meta_recipe()] {
        let raw = dir.path().join("in.raw");
        std::fs::write(&raw, &recipe.data).unwrap();
        let out = dir.path().join("out.b2frame");
        ok(&[
            &[
                "frame",
                "create",
                raw.to_str().unwrap(),
                out.to_str().unwrap(),
                "--overwrite",
            ][..],
            recipe.flags,
        ]
        .concat());
        assert_eq!(
            sha_file(&out),
            sum_of("blosc", recipe.fixture),
            "{}",
            recipe.fixture
        );
    }
}

#[test]
fn frame_create_sparse_round_trips() {
    let dir = tmp();
    let data: Vec<u8> = (0..5000i32).flat_map(|i| (i % 100).to_le_bytes()).collect();
    let raw = dir.path().join("in.raw");
    std::fs::write(&raw, &data).unwrap();
    let out = dir.path().join("sparse.b2frame");
    ok(&[
        "frame",
        "create",
        raw.to_str().unwrap(),
        out.to_str().unwrap(),
        "--typesize",
        "4",
        "--chunksize",
        "4000",
        "--sparse",
        "--meta",
        "m=1",
    ]);
    assert!(out.join("chunks.b2frame").is_file());
    let info = json(&["info", out.to_str().unwrap(), "--json"]);
    assert_eq!(info["format"], "blosc2-sparse-frame");
    assert_eq!(info["nchunks"], 5);
    assert_eq!(info["metalayers"], json!({"m": 1}));
    let back = dir.path().join("back.raw");
    ok(&[
        "frame",
        "extract",
        out.to_str().unwrap(),
        back.to_str().unwrap(),
    ]);
    assert_eq!(std::fs::read(&back).unwrap(), data);

    // Empty input: a frame with no chunks.
    let empty = dir.path().join("empty.raw");
    std::fs::write(&empty, b"").unwrap();
    let out = dir.path().join("empty.b2frame");
    ok(&[
        "frame",
        "create",
        empty.to_str().unwrap(),
        out.to_str().unwrap(),
        "--typesize",
        "1",
        "--chunksize",
        "10",
    ]);
    assert_eq!(
        json(&["info", out.to_str().unwrap(), "--json"])["nchunks"],
        0
    );
}

#[test]
fn b2nd_read_whole_arrays_and_regions() {
    let dir = tmp();
    let out = dir.path().join("out.raw");
    for e in blosc_manifest() {
        if e["kind"] != "b2nd" {
            continue;
        }
        let rel = format!("blosc/{}", e["path"].as_str().unwrap());
        ok(&[
            "b2nd",
            "read",
            testdata(&rel).to_str().unwrap(),
            out.to_str().unwrap(),
            "--overwrite",
        ]);
        assert_eq!(
            sha_file(&out),
            e["sha256_array_c_order"].as_str().unwrap(),
            "{rel}"
        );
    }
    // b2nd_u2_7x9x11: (arange(693) % 1000) as u16, shape (7, 9, 11); region [2:5, 1:9, 3:4].
    let f = testdata("blosc/frames/b2nd_u2_7x9x11.b2nd");
    ok(&[
        "b2nd",
        "read",
        f.to_str().unwrap(),
        out.to_str().unwrap(),
        "--overwrite",
        "--region",
        "2:5,1:9,3:4",
    ]);
    let mut want = Vec::new();
    for i in 2..5u16 {
        for j in 1..9u16 {
            for k in 3..4u16 {
                want.extend(((i * 99 + j * 11 + k) % 1000).to_le_bytes());
            }
        }
    }
    assert_eq!(std::fs::read(&out).unwrap(), want);
    // Open bounds.
    ok(&[
        "b2nd",
        "read",
        f.to_str().unwrap(),
        out.to_str().unwrap(),
        "--overwrite",
        "--region",
        "6:,:,:1",
    ]);
    assert_eq!(std::fs::read(&out).unwrap().len(), 9 * 2);
    fails(
        &[
            "b2nd",
            "read",
            f.to_str().unwrap(),
            out.to_str().unwrap(),
            "--overwrite",
            "--region",
            "0:8,:,:",
        ],
        2,
        "b2nd_u2_7x9x11.b2nd",
    );
    fails(
        &[
            "b2nd",
            "read",
            f.to_str().unwrap(),
            out.to_str().unwrap(),
            "--overwrite",
            "--region",
            "0:2,:",
        ],
        2,
        "dimensions",
    );
    fails(
        &[
            "b2nd",
            "read",
            f.to_str().unwrap(),
            out.to_str().unwrap(),
            "--overwrite",
            "--region",
            "5:2,:,:",
        ],
        2,
        "5:2 in dimension 0 is reversed",
    );
}

#[test]
fn bad_inputs_exit_2_with_one_line() {
    let dir = tmp();
    let out = dir.path().join("out");
    let frame = std::fs::read(testdata("blosc/frames/lz4_shuffle_meta_vlmeta.b2frame")).unwrap();
    let chunk = std::fs::read(testdata("blosc/chunks/zstd_shuffle_ts4.cdata")).unwrap();
    // Truncated at many lengths: frame commands and chunk decompression fail cleanly.
    let cut = dir.path().join("cut.b2frame");
    for len in [0, 1, 16, 100, frame.len() / 2, frame.len() - 1] {
        std::fs::write(&cut, &frame[..len]).unwrap();
        for cmd in ["extract", "chunks", "meta"] {
            let mut args = vec!["frame", cmd, cut.to_str().unwrap()];
            if cmd == "extract" {
                args.push(out.to_str().unwrap());
            }
            fails(&args, 2, "cut.b2frame");
        }
        fails(&["info", cut.to_str().unwrap()], 2, "cut.b2frame");
    }
    // An existing directory that is no sparse frame is said to be one, not reported missing.
    let plain = dir.path().join("plain_dir");
    std::fs::create_dir(&plain).unwrap();
    let p = plain.to_str().unwrap();
    for args in [
        vec!["frame", "extract", p, out.to_str().unwrap()],
        vec!["frame", "chunks", p],
        vec!["b2nd", "read", p, out.to_str().unwrap()],
    ] {
        let err = fails(&args, 2, "not a sparse frame (it has no chunks.b2frame)");
        assert!(!err.contains("No such file"), "{err}");
        assert_eq!(err.matches("plain_dir").count(), 1, "named once: {err}");
    }
    let cutc = dir.path().join("cut.cdata");
    for len in [0, 10, 31, chunk.len() / 2, chunk.len() - 1] {
        std::fs::write(&cutc, &chunk[..len]).unwrap();
        fails(
            &[
                "blosc",
                "decompress",
                cutc.to_str().unwrap(),
                out.to_str().unwrap(),
            ],
            2,
            "cut.cdata",
        );
    }
    assert!(!out.exists(), "no output written on failure");
    // Wrong format.
    let text = dir.path().join("notes.txt");
    std::fs::write(&text, "just some text, not a frame\n").unwrap();
    fails(
        &["info", text.to_str().unwrap()],
        2,
        "not a recognised format",
    );
    fails(
        &[
            "frame",
            "extract",
            text.to_str().unwrap(),
            out.to_str().unwrap(),
        ],
        2,
        "notes.txt",
    );
    fails(
        &[
            "b2nd",
            "read",
            testdata("blosc/frames/fill_special_zero.b2frame")
                .to_str()
                .unwrap(),
            out.to_str().unwrap(),
        ],
        2,
        "fill_special_zero.b2frame",
    );
    // Missing input.
    fails(
        &[
            "blosc",
            "decompress",
            "/nonexistent/x.cdata",
            out.to_str().unwrap(),
        ],
        2,
        "/nonexistent/x.cdata",
    );
    // Bad flags.
    let raw = testdata("blosc/chunks/zstd_shuffle_ts4.cdata");
    let r = raw.to_str().unwrap();
    fails(
        &[
            "blosc",
            "compress",
            r,
            out.to_str().unwrap(),
            "--typesize",
            "x",
        ],
        2,
        "--typesize",
    );
    fails(
        &[
            "blosc",
            "compress",
            r,
            out.to_str().unwrap(),
            "--typesize",
            "4",
            "--clevel",
            "10",
        ],
        2,
        "10",
    );
    fails(
        &[
            "blosc",
            "compress",
            r,
            out.to_str().unwrap(),
            "--typesize",
            "4",
            "--codec",
            "snappy",
        ],
        2,
        "snappy",
    );
    fails(
        &[
            "blosc",
            "compress",
            r,
            out.to_str().unwrap(),
            "--typesize",
            "4",
            "--filter",
            "delta:3",
        ],
        2,
        "META",
    );
    fails(
        &[
            "frame",
            "create",
            r,
            out.to_str().unwrap(),
            "--typesize",
            "4",
            "--chunksize",
            "4000",
            "--meta",
            "novalue",
        ],
        2,
        "NAME=JSON",
    );
    fails(
        &[
            "frame",
            "create",
            r,
            out.to_str().unwrap(),
            "--typesize",
            "4",
            "--chunksize",
            "0",
        ],
        2,
        "--chunksize",
    );
    fails(
        &[
            "frame",
            "create",
            r,
            out.to_str().unwrap(),
            "--typesize",
            "4",
            "--chunksize",
            "100000000000000",
        ],
        2,
        "--chunksize",
    );
    fails(
        &[
            "frame",
            "create",
            r,
            out.to_str().unwrap(),
            "--typesize",
            "4",
            "--chunksize",
            "4001",
        ],
        2,
        "",
    );
    fails(&["frobnicate"], 2, "frobnicate");
    fails(&["blosc", "decompress", r], 2, "OUTPUT");
    assert!(!out.exists());
}
