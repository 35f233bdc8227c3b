//! `scifmt dwe …` on the upstream-made `.dwe` fixtures (`testdata/dwe/EXPECTED.md`), and
//! `offset` / `zarr` on the zarr-python / tensorstore stores (`testdata/offset/MANIFEST.md`).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::cast_possible_truncation
)] // test helpers outside #[test] fns; small fixture sizes

use crate::common;

use common::{fails, json, ok, sha_file, sum_of, testdata, tmp};

/// (name, T, V, K, stream jump_interval, block chunk_size, scale_factor) from EXPECTED.md.
const DWE: &[(&str, u32, u32, u32, u32, u32, &str)] = &[
    ("random_6_100_16", 6, 100, 16, 20, 20, "0.015074313"),
    ("walk_9_37_5", 9, 37, 5, 7, 1, "0.001"),
    ("zeros_3_4_2", 3, 4, 2, 4, 2, "0.5"),
    ("tiny_2_3_2", 2, 3, 2, 2, 3, "0.25"),
    ("small_2_4_4", 2, 4, 4, 2, 4, "0.5"),
    ("wide_5_64_32", 5, 64, 32, 10, 16, "0.01"),
    ("extreme_3_2_4", 3, 2, 4, 1, 2, "1.0"),
];

fn files(name: &str, j: u32, c: u32) -> [(String, &'static str); 2] {
    [
        (format!("stream/{name}_j{j}.dwe"), "stream"),
        (format!("block/{name}_c{c}.dwe"), "block"),
    ]
}

#[test]
fn dwe_info_and_decode_every_fixture() {
    let dir = tmp();
    let out = dir.path().join("values.i16");
    let mut checked = 0;
    for &(name, t, v, k, j, c, _) in DWE {
        for (rel, layout) in files(name, j, c) {
            let path = testdata(&format!("dwe/{rel}"));
            if !path.exists() {
                continue; // the set has no stream file for every dataset
            }
            for info in [
                json(&["dwe", "info", path.to_str().unwrap(), "--json"]),
                json(&["info", path.to_str().unwrap(), "--json"]),
            ] {
                assert_eq!(info["format"], "dwe");
                assert_eq!(info["layout"], layout, "{rel}");
                assert_eq!(info["num_timesteps"], t, "{rel}");
                assert_eq!(info["vocab_size"], v, "{rel}");
                assert_eq!(info["embedding_dim"], k, "{rel}");
                let interval = if layout == "stream" { j } else { c };
                let key = if layout == "stream" {
                    "jump_interval"
                } else {
                    "chunk_size"
                };
                assert_eq!(info[key], interval, "{rel}");
                assert_eq!(
                    info["model_num_symbols"].as_array().unwrap().len(),
                    t as usize
                );
            }
            ok(&[
                "dwe",
                "decode",
                path.to_str().unwrap(),
                out.to_str().unwrap(),
                "--overwrite",
            ]);
            assert_eq!(
                sha_file(&out),
                sum_of("dwe", &format!("inputs/{name}.i16")),
                "{rel}"
            );
            checked += 1;
        }
    }
    assert!(checked >= 13, "{checked}");
    // EXPECTED.md, random_6_100_16: models of [180, 90, 117, 101, 84, 174] symbols; header words.
    let info = json(&[
        "dwe",
        "info",
        testdata("dwe/stream/random_6_100_16_j20.dwe")
            .to_str()
            .unwrap(),
        "--json",
    ]);
    assert_eq!(
        info["model_num_symbols"],
        serde_json::json!([180, 90, 117, 101, 84, 174])
    );
    assert_eq!(info["scale_factor_bits"], "3c76fa40");
    assert_eq!(info["jump_table_address"], 665);
    assert_eq!(info["file_size_words"], 2645);
    let block = json(&[
        "dwe",
        "info",
        testdata("dwe/block/random_6_100_16_c20.dwe")
            .to_str()
            .unwrap(),
        "--json",
    ]);
    assert_eq!(block["meta_size"], 702);
}

#[test]
fn dwe_create_is_byte_identical_to_the_upstream_builders() {
    let dir = tmp();
    let mut checked = 0;
    for &(name, t, v, k, j, c, scale) in DWE {
        let input = testdata(&format!("dwe/inputs/{name}.i16"));
        let shape = format!("{t},{v},{k}");
        for (rel, layout) in files(name, j, c) {
            let fixture = testdata(&format!("dwe/{rel}"));
            if !fixture.exists() {
                continue;
            }
            let out = dir.path().join(format!("{name}.{layout}.dwe"));
            let (flag, n) = if layout == "stream" {
                ("--jump-interval", j.to_string())
            } else {
                ("--chunk-size", c.to_string())
            };
            ok(&[
                "dwe",
                "create",
                input.to_str().unwrap(),
                out.to_str().unwrap(),
                "--shape",
                &shape,
                "--scale",
                scale,
                flag,
                &n,
            ]);
            assert_eq!(sha_file(&out), sum_of("dwe", &rel), "{rel}");
            checked += 1;
        }
    }
    assert!(checked >= 13, "{checked}");
}

#[test]
fn dwe_queries_match_the_reference_outputs() {
    let f = testdata("dwe/stream/random_6_100_16_j20.dwe");
    let b = testdata("dwe/block/random_6_100_16_c20.dwe");
    for file in [&f, &b] {
        let p = file.to_str().unwrap();
        // word 0, t=0, first 8 components: i16 [10, 3, -14, -2, 19, 30, 29, -43]
        let v = ok(&["dwe", "vector", p, "--word", "0", "--t", "0"]);
        let vals: Vec<i16> = v.lines().map(|l| l.parse().unwrap()).collect();
        assert_eq!(vals.len(), 16);
        assert_eq!(&vals[..8], [10, 3, -14, -2, 19, 30, 29, -43]);
        // f32 bits [3e1a5c68, 3d393bb0, be581af8, bcf6fa40, ...]
        let v = ok(&["dwe", "vector", p, "--word", "0", "--t", "0", "--f32"]);
        let bits: Vec<u32> = v
            .lines()
            .map(|l| l.parse::<f32>().unwrap().to_bits())
            .collect();
        assert_eq!(
            &bits[..4],
            [0x3e1a_5c68, 0x3d39_3bb0, 0xbe58_1af8, 0xbcf6_fa40]
        );
        // most_related_to_at_t([0, 2], t=0, 5): [24, 99, 12, 77, 20, 42, 24, 74, 57, 3]
        let r = ok(&[
            "dwe", "related", p, "--words", "0,2", "--t", "0", "--amt", "5",
        ]);
        assert_eq!(r, "0: 24 99 12 77 20\n2: 42 24 74 57 3\n");
        let r = ok(&[
            "dwe", "related", p, "--words", "0,2", "--t", "5", "--amt", "5",
        ]);
        assert_eq!(r, "0: 74 9 99 15 4\n2: 42 34 7 18 95\n");
        // pairwise_trajectories([0, 3, 1], [99, 2, 1]) as f32 bit patterns.
        let want: [u32; 18] = [
            0x3fbe_1b46,
            0x3fa7_f166,
            0x3f30_8d6c,
            0x3f46_402a,
            0x3f11_6e2b,
            0x4002_c917,
            0x3fe4_9661,
            0x3fc7_3d54,
            0x3f85_9f14,
            0x3eb3_0dc8,
            0x3de4_f72d,
            0x3ebc_20f2,
            0x40ab_5300,
            0x4025_6d51,
            0x4026_4540,
            0x4012_1d26,
            0x4006_2c8d,
            0x40aa_9520,
        ];
        let tr = ok(&[
            "dwe",
            "trajectories",
            p,
            "--words1",
            "0,3,1",
            "--words2",
            "99,2,1",
        ]);
        assert_eq!(tr.lines().count(), 3);
        let got: Vec<u32> = tr
            .split_whitespace()
            .map(|x| x.parse::<f32>().unwrap().to_bits())
            .collect();
        assert_eq!(got, want);
    }
    // A vocabulary of 4 words cannot fill 5 ranks.
    let z = testdata("dwe/stream/zeros_3_4_2_j4.dwe");
    let r = ok(&[
        "dwe",
        "related",
        z.to_str().unwrap(),
        "--words",
        "0",
        "--t",
        "0",
        "--amt",
        "5",
    ]);
    assert_eq!(r.split_whitespace().filter(|w| *w == "-").count(), 2, "{r}");
}

#[test]
fn dwe_bad_inputs_exit_2() {
    let dir = tmp();
    let out = dir.path().join("o");
    let o = out.to_str().unwrap();
    let f = testdata("dwe/stream/random_6_100_16_j20.dwe");
    let p = f.to_str().unwrap();
    fails(
        &["dwe", "vector", p, "--word", "100", "--t", "0"],
        2,
        "random_6_100_16_j20.dwe",
    );
    fails(
        &["dwe", "vector", p, "--word", "0", "--t", "6"],
        2,
        "random_6_100_16_j20.dwe",
    );
    fails(
        &[
            "dwe", "related", p, "--words", "0,x", "--t", "0", "--amt", "5",
        ],
        2,
        "x",
    );
    fails(
        &["dwe", "trajectories", p, "--words1", "0,1", "--words2", "2"],
        2,
        "--words1",
    );
    let bytes = std::fs::read(&f).unwrap();
    let cut = dir.path().join("cut.dwe");
    for len in [0, 3, 20, 40, bytes.len() / 2, bytes.len() - 4] {
        std::fs::write(&cut, &bytes[..len]).unwrap();
        fails(&["dwe", "decode", cut.to_str().unwrap(), o], 2, "cut.dwe");
        fails(&["dwe", "info", cut.to_str().unwrap()], 2, "cut.dwe");
    }
    let input = testdata("dwe/inputs/tiny_2_3_2.i16");
    let i = input.to_str().unwrap();
    fails(
        &["dwe", "create", i, o, "--shape", "2,3,2", "--scale", "0.25"],
        2,
        "chunk-size",
    );
    fails(
        &[
            "dwe",
            "create",
            i,
            o,
            "--shape",
            "2,3,2",
            "--scale",
            "0.25",
            "--chunk-size",
            "3",
            "--jump-interval",
            "2",
        ],
        2,
        "jump-interval",
    );
    fails(
        &[
            "dwe",
            "create",
            i,
            o,
            "--shape",
            "2,3,3",
            "--scale",
            "0.25",
            "--chunk-size",
            "3",
        ],
        2,
        "tiny_2_3_2.i16",
    );
    fails(
        &[
            "dwe",
            "create",
            i,
            o,
            "--shape",
            "2,3",
            "--scale",
            "0.25",
            "--chunk-size",
            "3",
        ],
        2,
        "T,V,K",
    );
    fails(
        &[
            "dwe",
            "create",
            i,
            o,
            "--shape",
            "4294967295,4294967295,4294967295",
            "--scale",
            "0.25",
            "--chunk-size",
            "3",
        ],
        2,
        "2^64",
    );
    fails(
        &[
            "dwe",
            "create",
            i,
            o,
            "--shape",
            "2,3,2",
            "--scale",
            "0.25",
            "--chunk-size",
            "2",
        ],
        2,
        "chunk_size",
    );
    assert!(!out.exists());
}

fn expected_u16(i0: u64, i1: u64) -> [u8; 2] {
    u16::try_from((i0 << 8) | i1).unwrap().to_le_bytes()
}

#[test]
fn zarr_read_every_good_store_and_regions() {
    let dir = tmp();
    let out = dir.path().join("out.raw");
    for (rel, shape) in [
        ("zarr/tiff_u16_le.zarr", [256u64, 256]),
        ("zarr/gzip_custom_header.zarr", [130, 70]),
        ("zarr/zstd_zero_prefix.zarr", [130, 70]),
        ("zarr/offset0_empty_prefix.zarr", [10, 7]),
        ("zarr/n5_via_offset_zstd.n5", [130, 70]),
        ("zarr/pad_start_gzip.zarr", [130, 70]),
        ("zarr/pad_end_zero.zarr", [130, 70]),
        ("n5/tensorstore_zstd.n5/data", [130, 70]),
        ("n5/zarr2_gzip.n5/data", [130, 70]),
    ] {
        let store = testdata(&format!("offset/{rel}"));
        ok(&[
            "zarr",
            "read",
            store.to_str().unwrap(),
            out.to_str().unwrap(),
            "--overwrite",
        ]);
        let mut want = Vec::new();
        for i0 in 0..shape[0] {
            for i1 in 0..shape[1] {
                want.extend(expected_u16(i0, i1));
            }
        }
        assert!(std::fs::read(&out).unwrap() == want, "{rel}");
    }
    let store = testdata("offset/zarr/gzip_custom_header.zarr");
    ok(&[
        "zarr",
        "read",
        store.to_str().unwrap(),
        out.to_str().unwrap(),
        "--overwrite",
        "--region",
        "60:70,65:",
    ]);
    let mut want = Vec::new();
    for i0 in 60..70 {
        for i1 in 65..70 {
            want.extend(expected_u16(i0, i1));
        }
    }
    assert_eq!(std::fs::read(&out).unwrap(), want);
    std::fs::remove_file(&out).unwrap();
    // Truncated N5 edge blocks cannot be read through the codec (MANIFEST): exit 2.
    let z5 = testdata("offset/n5/z5py_gzip.n5/data");
    fails(
        &["zarr", "read", z5.to_str().unwrap(), out.to_str().unwrap()],
        2,
        "z5py_gzip.n5",
    );
    fails(
        &[
            "zarr",
            "read",
            store.to_str().unwrap(),
            out.to_str().unwrap(),
            "--overwrite",
            "--region",
            "0:200,:",
        ],
        2,
        "dimension 0",
    );
    fails(
        &[
            "zarr",
            "read",
            dir.path().to_str().unwrap(),
            out.to_str().unwrap(),
            "--overwrite",
        ],
        2,
        dir.path().to_str().unwrap(),
    );
    assert!(!out.exists());
}

#[test]
fn offset_decode_and_encode_chunks() {
    let dir = tmp();
    let payload = dir.path().join("payload");
    let stored = dir.path().join("stored");
    // gzip_custom_header: offset 16, prefix MY_CUSTOM_HEADER.
    let chunk = testdata("offset/zarr/gzip_custom_header.zarr/c/0/0");
    let codec =
        r#"{"name":"offset","configuration":{"offset":16,"prefix":"TVlfQ1VTVE9NX0hFQURFUg=="}}"#;
    ok(&[
        "offset",
        "decode",
        chunk.to_str().unwrap(),
        payload.to_str().unwrap(),
        "--overwrite",
        "--codec",
        codec,
    ]);
    let raw = std::fs::read(&chunk).unwrap();
    assert_eq!(&raw[..16], b"MY_CUSTOM_HEADER");
    assert_eq!(std::fs::read(&payload).unwrap(), &raw[16..]);
    ok(&[
        "offset",
        "encode",
        payload.to_str().unwrap(),
        "--overwrite",
        stored.to_str().unwrap(),
        "--codec",
        codec,
    ]);
    assert_eq!(std::fs::read(&stored).unwrap(), raw);
    // pad start with the same bytes, and pad end of 4 zero bytes.
    let pad = r#"{"name":"pad","configuration":{"location":"start","nbytes":16,"padding":"TVlfQ1VTVE9NX0hFQURFUg=="}}"#;
    let chunk = testdata("offset/zarr/pad_start_gzip.zarr/c/1/1");
    ok(&[
        "offset",
        "decode",
        chunk.to_str().unwrap(),
        payload.to_str().unwrap(),
        "--overwrite",
        "--codec",
        pad,
    ]);
    ok(&[
        "offset",
        "encode",
        payload.to_str().unwrap(),
        "--overwrite",
        stored.to_str().unwrap(),
        "--codec",
        pad,
    ]);
    assert_eq!(
        std::fs::read(&stored).unwrap(),
        std::fs::read(&chunk).unwrap()
    );
    let end = r#"{"name":"pad","configuration":{"location":"end","nbytes":4}}"#;
    let chunk = testdata("offset/zarr/pad_end_zero.zarr/c/0/0");
    ok(&[
        "offset",
        "decode",
        chunk.to_str().unwrap(),
        payload.to_str().unwrap(),
        "--overwrite",
        "--codec",
        end,
    ]);
    let raw = std::fs::read(&chunk).unwrap();
    assert_eq!(std::fs::read(&payload).unwrap(), &raw[..raw.len() - 4]);
    ok(&[
        "offset",
        "encode",
        payload.to_str().unwrap(),
        "--overwrite",
        stored.to_str().unwrap(),
        "--codec",
        end,
    ]);
    assert_eq!(std::fs::read(&stored).unwrap(), raw);
    // The TIFF chunk: 110-byte prefix, then 256x256 little-endian u16 values (byte-exact).
    let tiff = testdata("offset/zarr/tiff_u16_le.zarr/c/0/0");
    ok(&[
        "offset",
        "decode",
        tiff.to_str().unwrap(),
        payload.to_str().unwrap(),
        "--overwrite",
        "--codec",
        r#"{"name":"offset","configuration":{"offset":110}}"#,
    ]);
    let mut want = Vec::new();
    for i0 in 0..256 {
        for i1 in 0..256 {
            want.extend(expected_u16(i0, i1));
        }
    }
    assert!(std::fs::read(&payload).unwrap() == want);
    assert_eq!(
        sha_file(&tiff),
        sum_of("offset", "zarr/tiff_u16_le.zarr/c/0/0")
    );

    // Bad codec JSON and chunks shorter than the header.
    let c = chunk.to_str().unwrap();
    let p = dir.path().join("never");
    let pp = p.to_str().unwrap();
    fails(&["offset", "decode", c, pp, "--codec", "{"], 2, "--codec");
    fails(
        &[
            "offset",
            "decode",
            c,
            pp,
            "--codec",
            r#"{"name":"offset","configuration":{"offset":-1}}"#,
        ],
        2,
        "--codec",
    );
    fails(
        &[
            "offset",
            "decode",
            c,
            pp,
            "--codec",
            r#"{"name":"gzip","configuration":{"level":5}}"#,
        ],
        2,
        "--codec",
    );
    let short = dir.path().join("short");
    std::fs::write(&short, b"0123").unwrap();
    fails(
        &[
            "offset",
            "decode",
            short.to_str().unwrap(),
            pp,
            "--codec",
            codec,
        ],
        2,
        "short",
    );
    assert!(!p.exists());
}

#[test]
fn every_command_has_help_with_an_example() {
    let commands: &[&[&str]] = &[
        &[],
        &["info"],
        &["blosc", "decompress"],
        &["blosc", "compress"],
        &["frame", "extract"],
        &["frame", "chunks"],
        &["frame", "meta"],
        &["frame", "create"],
        &["b2nd", "read"],
        &["wkw", "info"],
        &["wkw", "create"],
        &["wkw", "read"],
        &["wkw", "write"],
        &["wkw", "compress"],
        &["wkw", "verify"],
        &["dwe", "info"],
        &["dwe", "decode"],
        &["dwe", "vector"],
        &["dwe", "related"],
        &["dwe", "trajectories"],
        &["dwe", "create"],
        &["offset", "decode"],
        &["offset", "encode"],
        &["zarr", "read"],
    ];
    for c in commands {
        let mut args = c.to_vec();
        args.push("--help");
        let text = ok(&args);
        assert!(text.contains("Example"), "{c:?}: {text}");
        let name = c.last().copied().unwrap_or("scifmt");
        assert!(
            text.contains(&format!("scifmt {}", c.join(" ")).trim().to_owned())
                || text.contains(name),
            "{c:?}"
        );
    }
    assert!(ok(&["--version"]).starts_with("scifmt "));
    // A group without its subcommand is bad usage: one line, status 2.
    fails(&["wkw"], 2, "scifmt wkw --help");
    fails(&[] as &[&str], 2, "needs a subcommand");
}
