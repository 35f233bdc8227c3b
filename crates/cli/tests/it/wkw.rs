//! `scifmt wkw …` and `info` on the reference `wkw==1.1.24` fixtures (`testdata/wkw/expected.json`).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::cast_possible_truncation
)] // test helpers outside #[test] fns; small fixture sizes

use crate::common;

use common::{copy_dir, fails, json, ok, sha_file, testdata, tmp, wkw_expected, xyz};

#[test]
fn wkw_read_matches_every_expected_read_in_both_orders() {
    let dir = tmp();
    let out = dir.path().join("out.raw");
    let exp = wkw_expected();
    let mut checked = 0;
    for (name, ds) in exp.as_object().unwrap() {
        if name.starts_with('_') {
            continue;
        }
        let root = testdata(&format!("wkw/{name}"));
        for r in ds["reads"].as_array().unwrap() {
            let (off, shape) = (xyz(&r["offset_xyz"]), xyz(&r["shape_xyz"]));
            for (order, key) in [("f", "sha256_fortran_bytes"), ("c", "sha256_c_bytes")] {
                ok(&[
                    "wkw",
                    "read",
                    root.to_str().unwrap(),
                    out.to_str().unwrap(),
                    "--overwrite",
                    "--offset",
                    &off,
                    "--shape",
                    &shape,
                    "--order",
                    order,
                ]);
                assert_eq!(
                    sha_file(&out),
                    r[key].as_str().unwrap(),
                    "{name} {off} {shape} {order}"
                );
                checked += 1;
            }
        }
        // Default order is Fortran.
        let r = &ds["reads"][0];
        ok(&[
            "wkw",
            "read",
            root.to_str().unwrap(),
            out.to_str().unwrap(),
            "--overwrite",
            "--offset",
            &xyz(&r["offset_xyz"]),
            "--shape",
            &xyz(&r["shape_xyz"]),
        ]);
        assert_eq!(sha_file(&out), r["sha256_fortran_bytes"].as_str().unwrap());
    }
    assert_eq!(checked, 48, "24 reads in two orders");
}

#[test]
fn wkw_info_and_file_info() {
    let exp = wkw_expected();
    for (name, ds) in exp.as_object().unwrap() {
        if name.starts_with('_') {
            continue;
        }
        let root = testdata(&format!("wkw/{name}"));
        let h = &ds["header"];
        for info in [
            json(&["wkw", "info", root.to_str().unwrap(), "--json"]),
            json(&["info", root.to_str().unwrap(), "--json"]),
        ] {
            assert_eq!(info["format"], "wkw-dataset", "{name}");
            assert_eq!(info["block_len"], h["block_len"], "{name}");
            assert_eq!(info["file_len"], h["file_len"], "{name}");
            assert_eq!(info["num_channels"], h["num_channels"], "{name}");
            let bt = ["", "raw", "lz4", "lz4hc"][h["block_type"].as_u64().unwrap() as usize];
            assert_eq!(info["block_type"], bt, "{name}");
            let vt = h["voxel_type"].as_str().unwrap();
            let short = vt
                .replace("uint", "u")
                .replace("int", "i")
                .replace("float", "f");
            assert_eq!(info["voxel_type"], short, "{name}");
            let files = ds["files"].as_object().unwrap().len() - 1;
            assert_eq!(info["num_files"], files, "{name}");
        }
    }
    let file = testdata("wkw/u16_3ch_lz4_b8_f4/z0/y0/x0.wkw");
    let info = json(&["info", file.to_str().unwrap(), "--json"]);
    // MANIFEST: dataOffset 0x210 = 16 + 64*8, LZ4, uint16, voxelSize 6.
    assert_eq!(info["format"], "wkw-file");
    assert_eq!(info["data_offset"], 0x210);
    assert_eq!(info["voxel_size"], 6);
    assert_eq!(info["block_type"], "lz4");
    // Structure from the jump table: 64 blocks stored between dataOffset and the file's end.
    let len = std::fs::metadata(&file).unwrap().len();
    assert_eq!(info["stored_block_bytes"], len - 0x210);
    let (min, max) = (
        info["min_block_bytes"].as_u64().unwrap(),
        info["max_block_bytes"].as_u64().unwrap(),
    );
    assert!(0 < min && min <= max && max <= len - 0x210, "{info}");
    assert!(info["compression_ratio"].as_f64().unwrap() > 0.0);
    let text = ok(&[
        "wkw",
        "info",
        testdata("wkw/u8_raw_b8_f4").to_str().unwrap(),
    ]);
    assert!(text.starts_with("format: wkw-dataset\n"), "{text}");
    assert!(text.contains("\nnum_files: 1\n"), "{text}");
}

#[test]
fn wkw_create_writes_the_reference_header() {
    let dir = tmp();
    let exp = wkw_expected();
    let cases = [
        ("u8_default_header_only", vec!["--voxel-type", "u8"]),
        ("u16_3ch_lz4_b8_f4", common::U16_3CH_LZ4_CREATE.to_vec()),
        (
            "f32_lz4hc_b16_f2",
            vec![
                "--voxel-type",
                "f32",
                "--block-len",
                "16",
                "--file-len",
                "2",
                "--block-type",
                "lz4hc",
            ],
        ),
        (
            "i16_2ch_raw_b8_f2",
            vec![
                "--voxel-type",
                "i16",
                "--channels",
                "2",
                "--block-len",
                "8",
                "--file-len",
                "2",
            ],
        ),
    ];
    for (name, flags) in cases {
        let root = dir.path().join(name);
        let mut args = vec!["wkw", "create", root.to_str().unwrap()];
        args.extend(flags);
        ok(&args);
        assert_eq!(
            sha_file(&root.join("header.wkw")),
            exp[name]["files"]["header.wkw"]["sha256"].as_str().unwrap(),
            "{name}"
        );
        fails(&args, 2, name);
    }
    fails(
        &[
            "wkw",
            "create",
            dir.path().join("x").to_str().unwrap(),
            "--voxel-type",
            "u8",
            "--block-len",
            "3",
        ],
        2,
        "power",
    );
    fails(
        &[
            "wkw",
            "create",
            dir.path().join("y").to_str().unwrap(),
            "--voxel-type",
            "u7",
        ],
        2,
        "u7",
    );
}

#[test]
fn wkw_write_rebuilds_raw_files_byte_for_byte_in_both_orders() {
    let dir = tmp();
    let exp = wkw_expected();
    // (dataset, create flags, file, box shape = whole file)
    let cases = [
        (
            "u8_raw_b8_f4",
            vec!["--voxel-type", "u8", "--block-len", "8", "--file-len", "4"],
            "z0/y0/x0.wkw",
            "32,32,32",
        ),
        (
            "i16_2ch_raw_b8_f2",
            vec![
                "--voxel-type",
                "i16",
                "--channels",
                "2",
                "--block-len",
                "8",
                "--file-len",
                "2",
            ],
            "z0/y0/x0.wkw",
            "16,16,16",
        ),
    ];
    for (name, flags, file, shape) in cases {
        for order in ["f", "c"] {
            let box_raw = dir.path().join(format!("{name}.{order}.raw"));
            ok(&[
                "wkw",
                "read",
                testdata(&format!("wkw/{name}")).to_str().unwrap(),
                box_raw.to_str().unwrap(),
                "--offset",
                "0,0,0",
                "--shape",
                shape,
                "--order",
                order,
            ]);
            let root = dir.path().join(format!("{name}.{order}"));
            let mut args = vec!["wkw", "create", root.to_str().unwrap()];
            args.extend(flags.iter().copied());
            ok(&args);
            ok(&[
                "wkw",
                "write",
                root.to_str().unwrap(),
                box_raw.to_str().unwrap(),
                "--offset",
                "0,0,0",
                "--shape",
                shape,
                "--order",
                order,
            ]);
            assert_eq!(
                sha_file(&root.join(file)),
                exp[name]["files"][file]["sha256"].as_str().unwrap(),
                "{name} {order}"
            );
        }
    }
    // A box not aligned to files, into a compressed dataset, read back in the other order.
    let src = testdata("wkw/u16_3ch_lz4_b8_f4");
    let f = dir.path().join("box.f");
    let c = dir.path().join("box.c");
    let back = dir.path().join("back.c");
    let args = ["--offset", "3,5,7", "--shape", "50,20,9"];
    ok(&[
        &["wkw", "read", src.to_str().unwrap(), f.to_str().unwrap()][..],
        &args[..],
    ]
    .concat());
    ok(&[
        &[
            "wkw",
            "read",
            src.to_str().unwrap(),
            c.to_str().unwrap(),
            "--order",
            "c",
        ][..],
        &args[..],
    ]
    .concat());
    let root = dir.path().join("lz4");
    ok(&[
        &["wkw", "create", root.to_str().unwrap()][..],
        common::U16_3CH_LZ4_CREATE,
    ]
    .concat());
    ok(&[
        &["wkw", "write", root.to_str().unwrap(), f.to_str().unwrap()][..],
        &args[..],
    ]
    .concat());
    ok(&[
        &[
            "wkw",
            "read",
            root.to_str().unwrap(),
            back.to_str().unwrap(),
            "--order",
            "c",
        ][..],
        &args[..],
    ]
    .concat());
    assert_eq!(std::fs::read(&back).unwrap(), std::fs::read(&c).unwrap());
    // Wrong input size.
    fails(
        &[
            &["wkw", "write", root.to_str().unwrap(), f.to_str().unwrap()][..],
            &["--offset", "0,0,0", "--shape", "50,20,8"][..],
        ]
        .concat(),
        2,
        "box.f",
    );
}

#[test]
fn wkw_compress_and_verify() {
    let dir = tmp();
    let exp = wkw_expected();
    let src = testdata("wkw/u64_raw_b4_f2_multi");
    let dst = dir.path().join("lz4hc");
    ok(&[
        "wkw",
        "compress",
        src.to_str().unwrap(),
        dst.to_str().unwrap(),
        "--block-type",
        "lz4hc",
        "--threads",
        "2",
    ]);
    // Same decoded content as the reference's compress output.
    let want = &exp["u64_lz4hc_from_compress"];
    let out = dir.path().join("out.raw");
    for r in want["reads"].as_array().unwrap() {
        ok(&[
            "wkw",
            "read",
            dst.to_str().unwrap(),
            out.to_str().unwrap(),
            "--offset",
            &xyz(&r["offset_xyz"]),
            "--shape",
            &xyz(&r["shape_xyz"]),
        ]);
        assert_eq!(sha_file(&out), r["sha256_fortran_bytes"].as_str().unwrap());
    }
    let info = json(&["wkw", "info", dst.to_str().unwrap(), "--json"]);
    assert_eq!(info["block_type"], "lz4hc");
    assert_eq!(info["num_files"], 13);
    let v = json(&["wkw", "verify", dst.to_str().unwrap(), "--json"]);
    assert_eq!(
        v,
        serde_json::json!({"ok": true, "files": 13, "problems": []})
    );
    assert_eq!(
        ok(&["wkw", "verify", src.to_str().unwrap()]),
        "files: 13\nproblems: 0\n"
    );
    // Default block type lz4; existing destination refused.
    let dst2 = dir.path().join("lz4");
    ok(&[
        "wkw",
        "compress",
        src.to_str().unwrap(),
        dst2.to_str().unwrap(),
    ]);
    assert_eq!(
        json(&["wkw", "info", dst2.to_str().unwrap(), "--json"])["block_type"],
        "lz4"
    );
    fails(
        &[
            "wkw",
            "compress",
            src.to_str().unwrap(),
            dst2.to_str().unwrap(),
        ],
        2,
        "exists",
    );
    // Back to raw (decompression): every file byte-identical to the reference's raw source.
    let raw = dir.path().join("r");
    ok(&[
        "wkw",
        "compress",
        dst.to_str().unwrap(),
        raw.to_str().unwrap(),
        "--block-type",
        "raw",
    ]);
    let mut files = 0;
    for z in std::fs::read_dir(&src).unwrap() {
        let z = z.unwrap().path();
        if !z.is_dir() {
            continue;
        }
        for y in std::fs::read_dir(&z).unwrap() {
            for x in std::fs::read_dir(y.unwrap().path()).unwrap() {
                let x = x.unwrap().path();
                let rel = x.strip_prefix(&src).unwrap();
                assert_eq!(
                    std::fs::read(raw.join(rel)).unwrap(),
                    std::fs::read(&x).unwrap(),
                    "{}",
                    rel.display()
                );
                files += 1;
            }
        }
    }
    assert_eq!(files, 13);
    assert_eq!(
        std::fs::read(raw.join("header.wkw")).unwrap(),
        std::fs::read(src.join("header.wkw")).unwrap()
    );

    // A corrupt copy: verify exits 1 and names the file.
    let bad = dir.path().join("bad");
    copy_dir(&testdata("wkw/u16_3ch_lz4_b8_f4"), &bad);
    let victim = bad.join("z0/y0/x1.wkw");
    let mut bytes = std::fs::read(&victim).unwrap();
    bytes.truncate(bytes.len() - 100);
    std::fs::write(&victim, bytes).unwrap();
    let out = common::run(&["wkw", "verify", bad.to_str().unwrap(), "--json"]);
    assert_eq!(out.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["ok"], false);
    assert_eq!(v["files"], 2);
    assert_eq!(v["problems"].as_array().unwrap().len(), 1);
    assert!(
        v["problems"][0]["path"]
            .as_str()
            .unwrap()
            .ends_with("x1.wkw")
    );
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.lines().count(), 1);
    assert!(err.contains("1 of 2 data files"), "{err}");
    fails(&["wkw", "verify", bad.to_str().unwrap()], 1, "bad");
    // Reading the corrupt file is an input error.
    fails(
        &[
            "wkw",
            "read",
            bad.to_str().unwrap(),
            dir.path().join("o").to_str().unwrap(),
            "--offset",
            "32,0,0",
            "--shape",
            "8,8,8",
        ],
        2,
        "x1.wkw",
    );
}

#[test]
fn wkw_bad_usage_and_inputs() {
    let dir = tmp();
    let out = dir.path().join("o.raw");
    let ds = testdata("wkw/u8_raw_b8_f4");
    let d = ds.to_str().unwrap();
    let o = out.to_str().unwrap();
    fails(
        &["wkw", "read", d, o, "--offset", "0,0", "--shape", "1,1,1"],
        2,
        "X,Y,Z",
    );
    fails(
        &["wkw", "read", d, o, "--offset", "0,0,x", "--shape", "1,1,1"],
        2,
        "x",
    );
    fails(
        &[
            "wkw", "read", d, o, "--offset", "0,0,0", "--shape", "1,1,1", "--order", "z",
        ],
        2,
        "z",
    );
    fails(&["wkw", "read", d, o, "--shape", "1,1,1"], 2, "--offset");
    fails(
        &[
            "wkw", "read", d, o, "--offset", "-5,0,0", "--shape", "1,1,1",
        ],
        2,
        "negative coordinate -5",
    );
    fails(
        &[
            "wkw",
            "read",
            d,
            o,
            "--offset",
            "0,0,0",
            "--shape",
            "4000000000,4000000000,1",
        ],
        2,
        "read limit",
    );
    fails(
        &["wkw", "info", dir.path().to_str().unwrap()],
        2,
        "header.wkw",
    );
    fails(
        &["wkw", "verify", dir.path().to_str().unwrap()],
        2,
        "header.wkw",
    );
    // A truncated single file and a wrong-format dataset header.
    let file = dir.path().join("x0.wkw");
    std::fs::write(&file, b"WKW\x01").unwrap();
    fails(&["info", file.to_str().unwrap()], 2, "x0.wkw");
    let fake = dir.path().join("fake");
    std::fs::create_dir(&fake).unwrap();
    std::fs::write(fake.join("header.wkw"), b"not a wkw header").unwrap();
    fails(&["wkw", "info", fake.to_str().unwrap()], 2, "fake");
    fails(&["info", fake.to_str().unwrap()], 2, "fake");
    assert!(!out.exists());
}
