//! `-` as stdin / stdout: every streaming command gives the same bytes through pipes as
//! through files, stdin is read only up to a limit, and a reader that closes stdout early
//! (`| head`) ends the command quietly.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::cast_possible_truncation
)] // test helpers outside #[test] fns; small fixture sizes

use crate::common;

use std::ffi::OsString;
use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};

use common::{ok, ok_stdin, run_stdin, testdata, tmp, xyz};

/// `pre IN OUT post` as arguments.
fn line(pre: &[&str], input: &Path, output: &Path, post: &[&str]) -> Vec<OsString> {
    let mut v: Vec<OsString> = pre.iter().map(Into::into).collect();
    v.push(input.into());
    v.push(output.into());
    v.extend(post.iter().map(Into::into));
    v
}

/// Runs `pre IN OUT post` with files, then with `-` for the input (`stdin`), the output
/// (`stdout`) and both, and asserts every run writes the bytes the file run wrote.
fn same_bytes_through_pipes(pre: &[&str], input: &Path, post: &[&str], stdin: bool, stdout: bool) {
    let dir = tmp();
    let file_out = dir.path().join("file.out");
    ok(&line(pre, input, &file_out, post));
    let want = std::fs::read(&file_out).unwrap();
    let bytes = if stdin {
        std::fs::read(input).unwrap()
    } else {
        Vec::new()
    };
    let dash = Path::new("-");
    let what = format!("{pre:?} {} {post:?}", input.display());
    if stdout {
        let got = ok_stdin(&line(pre, input, dash, post), b"");
        assert!(got == want, "{what}: file -> stdout differs");
    }
    if stdin {
        let piped_out = dir.path().join("piped.out");
        let got = ok_stdin(&line(pre, dash, &piped_out, post), &bytes);
        assert!(got.is_empty(), "{what}: stdout not empty");
        assert!(
            std::fs::read(&piped_out).unwrap() == want,
            "{what}: stdin -> file differs"
        );
    }
    if stdin && stdout {
        let got = ok_stdin(&line(pre, dash, dash, post), &bytes);
        assert!(got == want, "{what}: stdin -> stdout differs");
    }
}

#[test]
fn blosc_decompress_and_compress_through_pipes() {
    for chunk in [
        "blosc/chunks/lz4_shuffle_ts4.cdata",
        "blosc/chunks/zstd_shuffle_ts4.cdata",
        "blosc/misc/special_zero_chunk.cdata",
        "blosc/misc/zstd_dict_text.cdata",
    ] {
        same_bytes_through_pipes(&["blosc", "decompress"], &testdata(chunk), &[], true, true);
    }
    let dir = tmp();
    let raw = dir.path().join("in.raw");
    ok(&[
        "blosc".as_ref(),
        "decompress".as_ref(),
        testdata("blosc/chunks/lz4_shuffle_ts4.cdata").as_os_str(),
        raw.as_os_str(),
    ]);
    let flags = [
        "--typesize",
        "4",
        "--codec",
        "lz4",
        "--filter",
        "shuffle",
        "--blocksize",
        "4096",
        "--splitmode",
        "auto",
    ];
    same_bytes_through_pipes(&["blosc", "compress"], &raw, &flags, true, true);
    // And that output is still the C-Blosc2 fixture.
    let piped = ok_stdin(
        &[&["blosc", "compress", "-", "-"][..], &flags[..]].concat(),
        &std::fs::read(&raw).unwrap(),
    );
    assert!(piped == std::fs::read(testdata("blosc/chunks/lz4_shuffle_ts4.cdata")).unwrap());
    same_bytes_through_pipes(
        &["blosc", "compress"],
        &raw,
        &["--typesize", "4", "--codec", "zstd", "--threads", "2"],
        true,
        true,
    );
}

#[test]
fn frame_extract_b2nd_read_and_frame_create_through_pipes() {
    for frame in [
        "blosc/frames/lz4_shuffle_meta_vlmeta.b2frame",
        "blosc/frames/zstd_delta_shuffle_many_chunks.b2frame",
        "blosc/frames/fill_special_nan.b2frame",
    ] {
        same_bytes_through_pipes(&["frame", "extract"], &testdata(frame), &[], true, true);
    }
    // A sparse frame is a directory: stdout only.
    same_bytes_through_pipes(
        &["frame", "extract"],
        &testdata("blosc/frames/sparse_lz4.b2frame"),
        &[],
        false,
        true,
    );
    let b2nd = testdata("blosc/frames/b2nd_u2_7x9x11.b2nd");
    same_bytes_through_pipes(&["b2nd", "read"], &b2nd, &[], true, true);
    same_bytes_through_pipes(
        &["b2nd", "read"],
        &b2nd,
        &["--region", "2:5,1:9,3:4"],
        true,
        true,
    );
    same_bytes_through_pipes(
        &["b2nd", "read"],
        &testdata("blosc/frames/b2nd_f4_20x30.b2nd"),
        &["--region", "3:,:7"],
        true,
        true,
    );

    // frame create reads stdin one chunk at a time; to stdout the frame is built in memory and
    // written by FrameWriter::write_to. Both give the python-blosc2 fixtures again, and the
    // same bytes as the file FrameFileWriter streams.
    let dir = tmp();
    for recipe in [common::many_chunks_recipe(), common::meta_recipe()] {
        let want = common::sum_of("blosc", recipe.fixture);
        let out = dir.path().join("out.b2frame");
        let create = |input: &str, output: &str| {
            ok_stdin(
                &[
                    &["frame", "create", input, output, "--overwrite"][..],
                    recipe.flags,
                ]
                .concat(),
                &recipe.data,
            )
        };
        create("-", out.to_str().unwrap());
        assert_eq!(common::sha_file(&out), want, "{}", recipe.fixture);
        assert_eq!(common::sha(&create("-", "-")), want, "{}", recipe.fixture);
        let raw = dir.path().join("in.raw");
        std::fs::write(&raw, &recipe.data).unwrap();
        same_bytes_through_pipes(&["frame", "create"], &raw, recipe.flags, true, true);
    }
}

#[test]
fn frame_chunks_and_meta_read_a_frame_from_stdin() {
    let frame = testdata("blosc/frames/lz4_shuffle_meta_vlmeta.b2frame");
    let bytes = std::fs::read(&frame).unwrap();
    for cmd in ["chunks", "meta"] {
        for json in [false, true] {
            let mut args = vec!["frame", cmd, frame.to_str().unwrap()];
            if json {
                args.push("--json");
            }
            let want = ok(&args);
            args[2] = "-";
            assert_eq!(ok_stdin(&args, &bytes), want.as_bytes(), "{args:?}");
        }
    }
}

#[test]
fn offset_and_dwe_and_zarr_through_pipes() {
    let codec =
        r#"{"name":"offset","configuration":{"offset":16,"prefix":"TVlfQ1VTVE9NX0hFQURFUg=="}}"#;
    let chunk = testdata("offset/zarr/gzip_custom_header.zarr/c/0/0");
    same_bytes_through_pipes(
        &["offset", "decode"],
        &chunk,
        &["--codec", codec],
        true,
        true,
    );
    let dir = tmp();
    let payload = dir.path().join("payload");
    std::fs::write(&payload, &std::fs::read(&chunk).unwrap()[16..]).unwrap();
    same_bytes_through_pipes(
        &["offset", "encode"],
        &payload,
        &["--codec", codec],
        true,
        true,
    );
    let end = r#"{"name":"pad","configuration":{"location":"end","nbytes":4}}"#;
    same_bytes_through_pipes(
        &["offset", "decode"],
        &testdata("offset/zarr/pad_end_zero.zarr/c/0/0"),
        &["--codec", end],
        true,
        true,
    );

    for f in [
        "dwe/stream/random_6_100_16_j20.dwe",
        "dwe/block/random_6_100_16_c20.dwe",
        "dwe/stream/wide_5_64_32_j10.dwe",
    ] {
        same_bytes_through_pipes(&["dwe", "decode"], &testdata(f), &[], true, true);
    }
    // dwe create from stdin: the upstream file again.
    let out = dir.path().join("r.dwe");
    ok_stdin(
        &[
            "dwe",
            "create",
            "-",
            out.to_str().unwrap(),
            "--shape",
            "6,100,16",
            "--scale",
            "0.015074313",
            "--jump-interval",
            "20",
        ],
        &std::fs::read(testdata("dwe/inputs/random_6_100_16.i16")).unwrap(),
    );
    assert_eq!(
        common::sha_file(&out),
        common::sum_of("dwe", "stream/random_6_100_16_j20.dwe")
    );

    // zarr read: the store is a directory, the output may be stdout.
    let store = testdata("offset/zarr/gzip_custom_header.zarr");
    let file_out = dir.path().join("z.raw");
    for region in [None, Some("60:70,65:")] {
        let mut args = vec![
            "zarr".to_owned(),
            "read".into(),
            store.to_str().unwrap().into(),
            file_out.to_str().unwrap().into(),
            "--overwrite".into(),
        ];
        if let Some(r) = region {
            args.extend(["--region".into(), r.into()]);
        }
        ok(&args);
        args[3] = "-".into();
        assert!(ok_stdin(&args, b"") == std::fs::read(&file_out).unwrap());
    }
}

#[test]
fn wkw_read_to_stdout_matches_the_reference_in_both_orders() {
    // Every reference read, including 2- and 3-channel C order (one pass per channel on a pipe).
    let exp = common::wkw_expected();
    let mut checked = 0;
    for (name, ds) in exp.as_object().unwrap() {
        if name.starts_with('_') {
            continue;
        }
        let root = testdata(&format!("wkw/{name}"));
        for r in ds["reads"].as_array().unwrap() {
            for (order, key) in [("f", "sha256_fortran_bytes"), ("c", "sha256_c_bytes")] {
                let out = ok_stdin(
                    &[
                        "wkw",
                        "read",
                        root.to_str().unwrap(),
                        "-",
                        "--offset",
                        &xyz(&r["offset_xyz"]),
                        "--shape",
                        &xyz(&r["shape_xyz"]),
                        "--order",
                        order,
                    ],
                    b"",
                );
                assert_eq!(
                    common::sha(&out),
                    r[key].as_str().unwrap(),
                    "{name} {order}"
                );
                checked += 1;
            }
        }
    }
    assert_eq!(checked, 48, "24 reads in two orders");
}

/// Every file under `root` as (relative path, bytes), sorted.
fn tree(root: &Path) -> Vec<(String, Vec<u8>)> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<(String, Vec<u8>)>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(root, &p, out);
            } else {
                let rel = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
                out.push((rel, std::fs::read(&p).unwrap()));
            }
        }
    }
    let mut out = Vec::new();
    walk(root, root, &mut out);
    out.sort();
    out
}

#[test]
fn wkw_write_from_stdin_matches_a_file_write() {
    let dir = tmp();
    let src = testdata("wkw/u16_3ch_lz4_b8_f4");
    let create = common::U16_3CH_LZ4_CREATE;
    // A box across files, not aligned to blocks, in both orders (3 channels).
    let bx = ["--offset", "3,5,7", "--shape", "50,20,9"];
    for order in ["f", "c"] {
        let raw = dir.path().join(format!("box.{order}"));
        ok(&[
            &[
                "wkw",
                "read",
                src.to_str().unwrap(),
                raw.to_str().unwrap(),
                "--order",
                order,
            ][..],
            &bx[..],
        ]
        .concat());
        let bytes = std::fs::read(&raw).unwrap();
        let by_file = dir.path().join(format!("file.{order}"));
        let by_pipe = dir.path().join(format!("pipe.{order}"));
        for root in [&by_file, &by_pipe] {
            ok(&[&["wkw", "create", root.to_str().unwrap()][..], create].concat());
        }
        fn write<'a>(
            root: &'a Path,
            input: &'a str,
            order: &'a str,
            bx: &[&'a str],
        ) -> Vec<&'a str> {
            [
                &[
                    "wkw",
                    "write",
                    root.to_str().unwrap(),
                    input,
                    "--order",
                    order,
                ][..],
                bx,
            ]
            .concat()
        }
        ok(&write(&by_file, raw.to_str().unwrap(), order, &bx));
        ok_stdin(&write(&by_pipe, "-", order, &bx), &bytes);
        let (a, b) = (tree(&by_file), tree(&by_pipe));
        assert!(a.len() >= 3, "{order}: {} files", a.len());
        assert!(a == b, "{order}: datasets differ");
        // And the box reads back through a pipe as it went in.
        let back = ok_stdin(
            &[
                &[
                    "wkw",
                    "read",
                    by_pipe.to_str().unwrap(),
                    "-",
                    "--order",
                    order,
                ][..],
                &bx[..],
            ]
            .concat(),
            b"",
        );
        assert!(back == bytes, "{order}: read back differs");
    }
}

#[test]
fn stdin_of_the_wrong_size_is_refused_before_anything_is_written() {
    let dir = tmp();
    let root = dir.path().join("ds");
    ok(&[
        "wkw",
        "create",
        root.to_str().unwrap(),
        "--voxel-type",
        "u8",
        "--block-len",
        "8",
        "--file-len",
        "2",
    ]);
    let args = [
        "wkw",
        "write",
        root.to_str().unwrap(),
        "-",
        "--offset",
        "0,0,0",
        "--shape",
        "16,16,16",
    ];
    for (len, needle) in [
        (4095, "<stdin>: holds 4095 bytes"),
        (4097, "<stdin>: holds more than 4096 bytes"),
        (1 << 20, "<stdin>: holds more than 4096 bytes"),
    ] {
        let out = run_stdin(&args, &vec![7u8; len]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{len}: {err}");
        assert!(err.contains(needle), "{len}: {err}");
        assert_eq!(err.lines().count(), 1);
        assert_eq!(tree(&root).len(), 1, "{len}: only header.wkw");
    }
    // dwe create reads exactly T*V*K*2 bytes.
    let out_file = dir.path().join("x.dwe");
    let out = run_stdin(
        &[
            "dwe",
            "create",
            "-",
            out_file.to_str().unwrap(),
            "--shape",
            "2,3,2",
            "--scale",
            "0.25",
            "--chunk-size",
            "3",
        ],
        &[0u8; 100],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("<stdin>: holds more than 24 bytes"), "{err}");
    assert!(!out_file.exists());
    // Broken input on stdin names <stdin>.
    let out = run_stdin(
        &["blosc", "decompress", "-", "-"],
        b"not a chunk at all, no",
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.starts_with("scifmt: <stdin>: "), "{err}");
    assert!(out.stdout.is_empty());
    // `-` where a path is needed is bad usage, not a file named `-`.
    for args in [
        &[
            "frame",
            "create",
            "-",
            "-",
            "--typesize",
            "1",
            "--chunksize",
            "10",
            "--sparse",
        ][..],
        &[
            "dwe",
            "create",
            "-",
            "-",
            "--shape",
            "1,1,5",
            "--scale",
            "1",
            "--chunk-size",
            "1",
        ][..],
        &["wkw", "create", "-", "--voxel-type", "u8"][..],
    ] {
        let out = run_stdin(args, b"0123456789");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains("`-`"), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(!Path::new("-").exists());
    }
}

/// Runs `args` with stdout read for `keep` bytes and then closed, as `| head -c keep` does;
/// returns the status code and stderr.
fn closed_after(args: &[&str], keep: usize) -> (Option<i32>, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_scifmt"))
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let mut buf = vec![0u8; keep];
    stdout.read_exact(&mut buf).unwrap();
    drop(stdout);
    let out = child.wait_with_output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_closed_stdout_ends_the_command_quietly() {
    let dir = tmp();
    // 32 MiB of data: far more than a pipe buffers.
    let raw = dir.path().join("big.raw");
    let data: Vec<u8> = (0..8u32 << 20)
        .flat_map(|i| (i / 3).to_le_bytes())
        .collect();
    std::fs::write(&raw, &data).unwrap();
    let chunk = dir.path().join("big.cdata");
    let frame = dir.path().join("big.b2frame");
    let r = raw.to_str().unwrap();
    ok(&[
        "blosc",
        "compress",
        r,
        chunk.to_str().unwrap(),
        "--typesize",
        "4",
    ]);
    ok(&[
        "frame",
        "create",
        r,
        frame.to_str().unwrap(),
        "--typesize",
        "4",
        "--chunksize",
        "1000000",
    ]);
    let wkw = testdata("wkw/u16_3ch_lz4_b8_f4");
    let wkw_read = |order: &'static str| -> Vec<&str> {
        let mut v = vec!["wkw", "read", wkw.to_str().unwrap(), "-"];
        v.extend([
            "--offset",
            "0,0,0",
            "--shape",
            "256,256,64",
            "--order",
            order,
        ]);
        v
    };
    let (read_f, read_c) = (wkw_read("f"), wkw_read("c"));
    let cases: &[&[&str]] = &[
        &["blosc", "decompress", chunk.to_str().unwrap(), "-"],
        &["frame", "extract", frame.to_str().unwrap(), "-"],
        &read_f,
        &read_c,
    ];
    for args in cases {
        let (code, err) = closed_after(args, 10);
        assert_eq!(code, Some(0), "{args:?}: {err}");
        assert!(err.is_empty(), "{args:?}: stderr {err}");
    }
    // Printing commands too: a listing of 20000 chunks (about 1.3 MB of text, 2.4 MB JSON).
    let many = dir.path().join("many.b2frame");
    std::fs::write(&raw, vec![1u8; 20_000 * 8]).unwrap();
    ok(&[
        "frame",
        "create",
        r,
        many.to_str().unwrap(),
        "--typesize",
        "8",
        "--chunksize",
        "8",
    ]);
    for json in [false, true] {
        let mut args = vec!["frame", "chunks", many.to_str().unwrap()];
        if json {
            args.push("--json");
        }
        let (code, err) = closed_after(&args, 10);
        assert_eq!(code, Some(0), "{args:?}: {err}");
        assert!(err.is_empty(), "{args:?}: stderr {err}");
    }
}
