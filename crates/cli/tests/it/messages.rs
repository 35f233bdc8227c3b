//! What a user sees when something is wrong: the message names the object the user gave, once,
//! says what is wrong and, where there is one, how to fix it. No message quotes a temporary
//! file or repeats a path.
//!
//! Cloud-credential tests never reach a cloud: every `AWS_*`/`GOOGLE_*`/`AZURE_*` variable is
//! removed from the child's environment, and the instance-metadata services (the clients' last
//! resort) point at a closed loopback port, so the lookup fails at once on any machine.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::path::Path;
use std::process::{Command, Output, Stdio};

use common::{fails, run, testdata, tmp};

/// A loopback address nothing listens on (port 1 is never served to tests).
const CLOSED: &str = "127.0.0.1:1";

/// Runs `scifmt args…` with no cloud credentials configured and the instance-metadata services
/// of AWS, GCE and Azure on a closed loopback port; `extra` variables are added.
fn run_without_credentials(args: &[&str], extra: &[(&str, &str)]) -> Output {
    let home = tmp();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_scifmt"));
    for (k, _) in std::env::vars() {
        let u = k.to_ascii_uppercase();
        if u.starts_with("AWS_")
            || u.starts_with("GOOGLE_")
            || u.starts_with("AZURE_")
            || u.starts_with("GCE_")
        {
            cmd.env_remove(&k);
        }
    }
    cmd.env("HOME", home.path())
        .env("AWS_METADATA_ENDPOINT", format!("http://{CLOSED}"))
        .env("GCE_METADATA_HOST", CLOSED)
        .env("GCE_METADATA_IP", CLOSED)
        .env(
            "AZURE_MSI_ENDPOINT",
            format!("http://{CLOSED}/metadata/identity/oauth2/token"),
        )
        .envs(extra.iter().copied())
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("spawn scifmt")
}

/// The one stderr line of a failed run (status 2).
fn one_error(out: &Output, what: &str) -> String {
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "{what}: {err}");
    assert_eq!(err.lines().count(), 1, "{what}: {err}");
    err.trim_end().to_owned()
}

/// A credentials case: the URL, extra environment variables, the phrases the message must hold.
type CredentialsCase<'a> = (&'a str, &'a [(&'a str, &'a str)], &'a [&'a str]);

#[test]
fn missing_cloud_credentials_are_named_with_the_fix() {
    let cases: [CredentialsCase<'_>; 3] = [
        (
            "s3://my-bucket/volume",
            &[],
            &[
                "no AWS credentials found",
                "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY",
                "AWS_SKIP_SIGNATURE=true",
            ],
        ),
        (
            "gs://my-bucket/volume",
            &[],
            &[
                "no Google Cloud credentials found",
                "GOOGLE_APPLICATION_CREDENTIALS",
                "GOOGLE_SKIP_SIGNATURE=true",
            ],
        ),
        (
            "az://container/volume",
            &[("AZURE_STORAGE_ACCOUNT_NAME", "account")],
            &[
                "no Azure credentials found",
                "AZURE_STORAGE_ACCOUNT_KEY",
                "AZURE_SKIP_SIGNATURE=true",
            ],
        ),
    ];
    for (url, extra, needles) in cases {
        let err = one_error(&run_without_credentials(&["info", url], extra), url);
        assert!(
            err.starts_with(&format!("scifmt: {url}: cannot be read: ")),
            "{err}"
        );
        for n in needles {
            assert!(err.contains(n), "`{n}` not in {err}");
        }
        assert!(
            err.ends_with(&format!(
                "(the instance-metadata service at http://{CLOSED}, asked last, gave none)"
            )),
            "{err}"
        );
        assert_eq!(err.matches(url).count(), 1, "{err}");
        assert!(
            !err.contains("header.wkw") && !err.contains("Generic"),
            "{err}"
        );
    }
    // Without an account, Azure says how to name one.
    let err = one_error(
        &run_without_credentials(&["info", "az://container/volume"], &[]),
        "az",
    );
    assert_eq!(
        err,
        "scifmt: az://container/volume: cannot be read: no Azure storage account given: set AZURE_STORAGE_ACCOUNT_NAME, or write the URL as abfs://CONTAINER@ACCOUNT.dfs.core.windows.net/PATH"
    );
    // Other commands reading a URL say the same.
    let out = tmp();
    let raw = out.path().join("o.raw");
    let err = one_error(
        &run_without_credentials(
            &[
                "frame",
                "extract",
                "s3://my-bucket/a.b2frame",
                raw.to_str().unwrap(),
            ],
            &[],
        ),
        "frame extract",
    );
    assert!(
        err.starts_with("scifmt: s3://my-bucket/a.b2frame: "),
        "{err}"
    );
    assert!(err.contains("no AWS credentials found"), "{err}");
}

#[test]
fn info_names_the_object_the_user_gave() {
    // A server that cannot be reached: the named object and why, not a probe's file name.
    let url = format!("https://{CLOSED}/data.b2nd");
    let err = one_error(&run(&["info", &url]), "info https");
    assert!(
        err.starts_with(&format!("scifmt: {url}: cannot be read: ")),
        "{err}"
    );
    assert!(err.contains("Connection refused"), "{err}");
    assert!(
        !err.contains("header.wkw") && !err.contains("chunks.b2frame"),
        "{err}"
    );

    // A directory that is none of the formats: what was tried, and where Zarr is read.
    let dir = tmp();
    let err = fails(
        &["info", dir.path().to_str().unwrap()],
        2,
        "not a WKW dataset",
    );
    assert_eq!(
        err.trim_end(),
        format!(
            "scifmt: {}: not a WKW dataset (no header.wkw), a webKNOSSOS dataset (no datasource-properties.json), a sparse Blosc2 frame (no chunks.b2frame) or a Zarr v2/v3 store (no zarr.json, .zarray or .zgroup)",
            dir.path().display()
        )
    );
}

#[test]
fn info_summarises_zarr_nodes() {
    let store = testdata("offset/zarr/gzip_custom_header.zarr");
    let v = common::json(&["info", store.to_str().unwrap(), "--json"]);
    assert_eq!(v["format"], "zarr");
    assert_eq!(v["zarr_format"], 3);
    assert_eq!(v["node_type"], "array");
    assert_eq!(v["shape"], serde_json::json!([130, 70]));
    assert_eq!(v["data_type"], "uint16");
    assert_eq!(v["chunk_shape"], serde_json::json!([64, 64]));
    assert_eq!(v["codecs"], serde_json::json!(["bytes", "gzip", "offset"]));
    assert_eq!(v["read_with"], "scifmt zarr read");
    // Zarr v2 metadata as zarr-python writes it.
    let dir = tmp();
    std::fs::write(
        dir.path().join(".zarray"),
        r#"{"chunks":[10],"compressor":{"id":"zlib","level":1},"dtype":"<u2","fill_value":0,"filters":null,"order":"C","shape":[100],"zarr_format":2}"#,
    )
    .unwrap();
    let v = common::json(&["info", dir.path().to_str().unwrap(), "--json"]);
    assert_eq!(v["zarr_format"], 2);
    assert_eq!(v["data_type"], "<u2");
    assert_eq!(v["compressor"]["id"], "zlib");
    // ... which `scifmt zarr read` reads (zarrs reads Zarr v2 arrays).
    assert_eq!(v["read_with"], "scifmt zarr read");
}

#[test]
fn bytes_that_are_no_blosc_chunk_say_so_first() {
    let dir = tmp();
    let bin = dir.path().join("notes.txt");
    // Text: its first byte (`T`, 84) is no Blosc format version.
    std::fs::write(&bin, b"This is a text file, not a Blosc chunk at all.\n").unwrap();
    let out = dir.path().join("o.raw");
    let err = fails(
        &[
            "blosc",
            "decompress",
            bin.to_str().unwrap(),
            out.to_str().unwrap(),
        ],
        2,
        "not a Blosc chunk",
    );
    assert_eq!(
        err.trim_end(),
        format!(
            "scifmt: {}: not a Blosc chunk: invalid format version 84",
            bin.display()
        )
    );
    let mut zero_typesize = vec![2u8, 1, 0x01, 0];
    zero_typesize.extend_from_slice(&[16, 0, 0, 0, 16, 0, 0, 0, 32, 0, 0, 0]);
    zero_typesize.extend_from_slice(&[0; 16]);
    std::fs::write(&bin, &zero_typesize).unwrap();
    let err = fails(
        &[
            "blosc",
            "decompress",
            bin.to_str().unwrap(),
            out.to_str().unwrap(),
        ],
        2,
        "not a Blosc chunk",
    );
    assert_eq!(
        err.trim_end(),
        format!(
            "scifmt: {}: not a Blosc chunk: invalid typesize 0",
            bin.display()
        )
    );
    assert!(!out.exists());
}

/// Whether `line` quotes a temporary file: the staged-write names (`.NAME.XXXXXX.tmp`), the
/// tool's and the libraries' scratch prefixes, or tempfile's `at path "…"` suffix.
fn quotes_a_temp_file(line: &str) -> bool {
    let staged = line
        .split(['/', ' ', '"', ':'])
        .any(|w| w.starts_with('.') && w.ends_with(".tmp") && w.len() > ".a.XXXXXX.tmp".len() - 1);
    staged
        || line.contains(".scifmt-")
        || line.contains(".wkw-remote-")
        || line.contains("at path \"")
}

/// Whether a `PATH: ` prefix is repeated (`x.wkw: x.wkw: …`) or a message ends with the path it
/// started with (`box.raw: not a dataset: box.raw`).
fn repeats_a_path(line: &str) -> bool {
    let body = line.trim_end().strip_prefix("scifmt: ").unwrap_or(line);
    let Some((first, rest)) = body.split_once(": ") else {
        return false;
    };
    rest.starts_with(&format!("{first}: ")) || rest.ends_with(&format!(": {first}"))
}

#[test]
fn errors_name_the_object_once_and_never_a_temporary_file() {
    let dir = tmp();
    let d = |rel: &str| dir.path().join(rel).to_str().unwrap().to_owned();
    std::fs::write(d("file"), b"x").unwrap();
    std::fs::write(d("box2.raw"), vec![0u8; 64]).unwrap();
    let ds = testdata("wkw/u16_3ch_lz4_b8_f4");
    let ds = ds.to_str().unwrap();
    common::copy_dir(Path::new(ds), Path::new(&d("bad")));
    // One data file damaged past its jump table.
    let data = d("bad/z0/y0/x1.wkw");
    let mut bytes = std::fs::read(&data).unwrap();
    for b in bytes.iter_mut().skip(600).step_by(7) {
        *b ^= 0x5a;
    }
    std::fs::write(&data, bytes).unwrap();
    let frame = testdata("blosc/frames/b2nd_u2_7x9x11.b2nd");
    let frame = frame.to_str().unwrap();
    let raw = d("box2.raw");

    // (arguments, the object the message must name first)
    let cases: Vec<(Vec<String>, String)> = vec![
        (
            vec!["wkw", "compress", ds, &d("file/out")]
                .into_iter()
                .map(String::from)
                .collect(),
            d("file/out"),
        ),
        (
            vec!["wkw", "compress", ds, &d("file")]
                .into_iter()
                .map(String::from)
                .collect(),
            d("file"),
        ),
        (
            vec!["frame", "extract", frame, &d("file/o.raw")]
                .into_iter()
                .map(String::from)
                .collect(),
            d("file/o.raw"),
        ),
        (
            vec!["b2nd", "read", frame, &d("file/o.raw")]
                .into_iter()
                .map(String::from)
                .collect(),
            d("file/o.raw"),
        ),
        (
            vec!["blosc", "compress", &raw, &d("file/x.cdata")]
                .into_iter()
                .map(String::from)
                .collect(),
            d("file/x.cdata"),
        ),
        (
            vec![
                "frame",
                "create",
                &raw,
                &d("file/x.b2frame"),
                "--chunksize",
                "16",
            ]
            .into_iter()
            .map(String::from)
            .collect(),
            d("file/x.b2frame"),
        ),
        (
            vec!["wkw", "create", &d("file/ds"), "--voxel-type", "u8"]
                .into_iter()
                .map(String::from)
                .collect(),
            d("file/ds"),
        ),
        (
            vec![
                "wkw",
                "create",
                &d("new"),
                "--voxel-type",
                "uint16",
                "--block-len",
                "33",
            ]
            .into_iter()
            .map(String::from)
            .collect(),
            d("new"),
        ),
        (
            vec![
                "wkw",
                "read",
                &raw,
                &d("o.raw"),
                "--offset",
                "0,0,0",
                "--shape",
                "1,1,1",
            ]
            .into_iter()
            .map(String::from)
            .collect(),
            raw.clone(),
        ),
        (
            vec!["wkw", "info", &raw]
                .into_iter()
                .map(String::from)
                .collect(),
            raw.clone(),
        ),
        (
            vec![
                "wkw",
                "read",
                &data,
                &d("o.raw"),
                "--offset",
                "0,0,0",
                "--shape",
                "1,1,1",
            ]
            .into_iter()
            .map(String::from)
            .collect(),
            data.clone(),
        ),
        (
            vec![
                "wkw",
                "read",
                &d("bad"),
                &d("o.raw"),
                "--offset",
                "0,0,0",
                "--shape",
                "64,64,64",
            ]
            .into_iter()
            .map(String::from)
            .collect(),
            d("bad"),
        ),
        (
            vec![
                "wkw",
                "read",
                ds,
                &d("file/o.raw"),
                "--offset",
                "0,0,0",
                "--shape",
                "8,8,8",
            ]
            .into_iter()
            .map(String::from)
            .collect(),
            d("file/o.raw"),
        ),
        (
            vec!["info", &d("nothing-here")]
                .into_iter()
                .map(String::from)
                .collect(),
            d("nothing-here"),
        ),
        (
            vec!["dwe", "info", &raw]
                .into_iter()
                .map(String::from)
                .collect(),
            raw.clone(),
        ),
    ];
    for (args, named) in &cases {
        let out = run(args);
        let err = one_error(&out, &args.join(" "));
        assert!(
            err.starts_with(&format!("scifmt: {named}: ")),
            "{args:?}: {err}"
        );
        assert!(!quotes_a_temp_file(&err), "{args:?}: {err}");
        assert!(!repeats_a_path(&err), "{args:?}: {err}");
    }
    // No staged file is left behind either.
    for entry in std::fs::read_dir(dir.path()).unwrap() {
        let name = entry.unwrap().file_name();
        assert!(!name.to_string_lossy().ends_with(".tmp"), "{name:?}");
    }
    // `wkw verify` lists each damaged file once.
    let out = run(&["wkw", "verify", &d("bad")]);
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8(out.stdout).unwrap();
    let line = text.lines().next().unwrap();
    assert!(line.starts_with(&format!("{data}: block ")), "{line}");
    assert!(!repeats_a_path(line), "{line}");
}

#[test]
fn the_sweep_recognises_what_it_must_refuse() {
    assert!(quotes_a_temp_file(
        r#"scifmt: o: i/o error on file: Not a directory (os error 20) at path "/tmp/x/file/.o.raw.r2gBfn.tmp""#
    ));
    assert!(quotes_a_temp_file("scifmt: /d/.o.b2nd.Qk9hTr.tmp: denied"));
    assert!(quotes_a_temp_file("scifmt: at /tmp/.scifmt-DrKosZ: denied"));
    assert!(!quotes_a_temp_file("scifmt: a.tmp: denied"));
    assert!(repeats_a_path(
        "scifmt: ds/z0/y0/x0.wkw: ds/z0/y0/x0.wkw: block 32"
    ));
    assert!(repeats_a_path(
        "scifmt: box2.raw: not a wkw dataset (no header.wkw): box2.raw"
    ));
    assert!(!repeats_a_path("scifmt: ds: ds/z0/y0/x0.wkw: block 32"));
}

#[test]
fn blosc_defaults_are_python_blosc2s_and_names_any_case() {
    let dir = tmp();
    // 3000 int64 of a slow ramp with noise (any data would do; the point is the parameters).
    let raw: Vec<u8> = (0u64..3000)
        .flat_map(|i| (100_000 + 7 * i + (i * 2_654_435_761) % 16).to_le_bytes())
        .collect();
    let input = dir.path().join("in.raw");
    std::fs::write(&input, &raw).unwrap();
    let out = |name: &str, extra: &[&str]| {
        let p = dir.path().join(name);
        let mut args = vec![
            "blosc",
            "compress",
            input.to_str().unwrap(),
            p.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        common::ok(&args);
        std::fs::read(p).unwrap()
    };
    let default = out("default.cdata", &[]);
    // python-blosc2 4.14's `blosc2.CParams()`: zstd, clevel 5, typesize 8, shuffle in the
    // last filter slot, automatic split (thread count does not change the bytes).
    let explicit = out(
        "explicit.cdata",
        &[
            "--codec",
            "zstd",
            "--clevel",
            "5",
            "--typesize",
            "8",
            "--splitmode",
            "auto",
            "--threads",
            "1",
        ],
    );
    assert_eq!(default, explicit);
    let upper = out(
        "upper.cdata",
        &[
            "--codec",
            "ZSTD",
            "--splitmode",
            "AUTO",
            "--filter",
            "SHUFFLE",
        ],
    );
    let lower = out(
        "lower.cdata",
        &[
            "--codec",
            "zstd",
            "--splitmode",
            "auto",
            "--filter",
            "shuffle",
        ],
    );
    assert_eq!(upper, lower);
    let v = common::json(&[
        "info",
        dir.path().join("default.cdata").to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(v["codec"], "zstd", "{v}");
    assert_eq!(v["typesize"], 8, "{v}");

    // wkw: numpy's dtype names and any case.
    let ds = dir.path().join("ds");
    common::ok(&[
        "wkw",
        "create",
        ds.to_str().unwrap(),
        "--voxel-type",
        "UInt16",
        "--block-type",
        "LZ4",
    ]);
    let v = common::json(&["wkw", "info", ds.to_str().unwrap(), "--json"]);
    assert_eq!(v["voxel_type"], "u16", "{v}");
    assert_eq!(v["block_type"], "lz4", "{v}");
    let o = dir.path().join("o.raw");
    common::ok(&[
        "wkw",
        "read",
        ds.to_str().unwrap(),
        o.to_str().unwrap(),
        "--offset",
        "0,0,0",
        "--shape",
        "2,2,2",
        "--order",
        "C",
    ]);
    assert_eq!(std::fs::read(&o).unwrap(), vec![0u8; 16]);
}

#[test]
fn one_version_for_the_command_and_the_python_package() {
    let out = common::ok(&["--version"]);
    assert_eq!(
        out.trim_end(),
        format!("scifmt {}", env!("CARGO_PKG_VERSION"))
    );
    let root =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../Cargo.toml"))
            .unwrap();
    assert!(root.contains(&format!("\nversion = \"{}\"\n", env!("CARGO_PKG_VERSION"))));
    for manifest in ["../cli/Cargo.toml", "../python/Cargo.toml"] {
        let text =
            std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(manifest)).unwrap();
        assert!(text.contains("\nversion.workspace = true\n"), "{manifest}");
    }
    let pyproject = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../python/pyproject.toml"),
    )
    .unwrap();
    assert!(pyproject.contains("dynamic = [\"version\"]") && !pyproject.contains("\nversion ="));
}

#[test]
fn the_readme_shows_the_credentials_message_as_printed() {
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    let shown = readme
        .lines()
        .find(|l| l.starts_with("scifmt: s3://my-bucket/volume: "))
        .expect("the README shows the message");
    let got = one_error(
        &run_without_credentials(&["info", "s3://my-bucket/volume"], &[]),
        "readme",
    );
    // The README shows the default metadata address; the test asks a closed local port.
    assert_eq!(
        got.replace(&format!("http://{CLOSED}"), "http://169.254.169.254"),
        shown
    );
}

/// Every `convert` option that does not apply to the chosen `--to` / `--codec` is refused as
/// bad usage (status 2, one line naming the option), never silently ignored; nothing is written.
#[test]
fn convert_refuses_options_that_do_not_apply() {
    let dir = tmp();
    let src = testdata("wkw-zarr/multi/wkw");
    let src = src.to_str().unwrap();
    let dst = dir.path().join("out");
    let dst = dst.to_str().unwrap();
    let cases: &[(&[&str], &str)] = &[
        (
            &["--to", "zarr3", "--codec", "blosc", "--zstd-level", "3"],
            "--zstd-level applies only with --codec zstd",
        ),
        (
            &["--to", "zarr3", "--codec", "none", "--zstd-level", "3"],
            "not --codec none",
        ),
        (
            &["--to", "zarr3", "--block-type", "lz4hc"],
            "--block-type lz4hc applies only with --to wkw",
        ),
        (
            &["--to", "zarr3", "--codec", "zstd", "--block-type", "raw"],
            "--block-type raw applies only with --to wkw",
        ),
        (
            &["--to", "wkw", "--codec", "zstd"],
            "--codec applies only with --to zarr3",
        ),
        (
            &["--to", "wkw", "--zstd-level", "3"],
            "--zstd-level applies only with --to zarr3",
        ),
        (
            &["--to", "wkw", "--codec", "blosc", "--clevel", "3"],
            "--codec, --clevel apply only with --to zarr3",
        ),
        (
            &["--to", "wkw", "--shuffle", "shuffle"],
            "--shuffle applies only with --to zarr3",
        ),
        (
            &["--to", "zarr3", "--codec", "zstd", "--typesize", "2"],
            "--typesize needs --codec blosc",
        ),
        (
            &["--to", "zarr3", "--clevel", "3", "--blocksize", "0"],
            "--clevel, --blocksize need --codec blosc",
        ),
    ];
    for (opts, says) in cases {
        let mut args = vec!["convert", src, dst];
        args.extend_from_slice(opts);
        let err = fails(&args, 2, says);
        assert!(!err.contains(dst), "{args:?}: {err}");
        assert!(!Path::new(dst).exists(), "{args:?}: nothing is written");
    }
}

/// `s` of a path, for argument lists.
fn arg(p: &Path) -> String {
    p.to_str().unwrap().to_owned()
}

/// A jump-table entry that cannot be right (block 0 would be exabytes long) is named as a
/// corrupt jump table, with the file and the entry's offset, by `info` and by `convert`.
#[test]
fn a_corrupt_jump_table_is_named_with_its_file() {
    let dir = tmp();
    let ds = dir.path().join("wkw");
    common::copy_dir(&testdata("wkw-zarr/multi/wkw"), &ds);
    let file = ds.join("color/1/z0/y0/x0.wkw");
    let mut bytes = std::fs::read(&file).unwrap();
    bytes[16..24].copy_from_slice(&0xFFFF_FFFF_0000_1010u64.to_le_bytes());
    std::fs::write(&file, &bytes).unwrap();
    let err = fails(&["info", &arg(&file)], 2, "corrupt jump table");
    assert!(
        err.starts_with(&format!(
            "scifmt: {}: corrupt jump table: entry 0 at offset 16",
            file.display()
        )),
        "{err}"
    );
    let err = fails(
        &[
            "convert",
            &arg(&ds),
            &arg(&dir.path().join("out")),
            "--to",
            "zarr3",
        ],
        2,
        "corrupt jump table",
    );
    assert!(err.contains("color/1/z0/y0/x0.wkw"), "{err}");
    assert!(err.contains("--resume"), "{err}");
}

/// A block whose LZ4 data does not decode: `convert` names the file, the block and its byte
/// offset, as `wkw verify` does, and says how to finish once the source is repaired.
#[test]
fn convert_names_a_corrupt_block_with_its_offset_and_how_to_resume() {
    let dir = tmp();
    let ds = dir.path().join("wkw");
    common::copy_dir(&testdata("wkw-zarr/multi/wkw"), &ds);
    let file = ds.join("color/1/z0/y0/x0.wkw");
    let mut bytes = std::fs::read(&file).unwrap();
    let word = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap());
    let (start, end) = (word(8), word(16));
    let (s, e) = (
        usize::try_from(start).unwrap(),
        usize::try_from(end).unwrap(),
    );
    // Zeros are no LZ4 block (a match offset of 0).
    bytes[s..e].fill(0);
    std::fs::write(&file, &bytes).unwrap();
    let at = format!("block 0 at offset {start}");
    let verify = run(&["wkw", "verify", &arg(&ds.join("color/1"))]);
    assert_eq!(verify.status.code(), Some(1));
    let report = String::from_utf8_lossy(&verify.stdout);
    assert!(report.contains(&at), "{report}");
    let err = fails(
        &[
            "convert",
            &arg(&ds),
            &arg(&dir.path().join("out")),
            "--to",
            "zarr3",
        ],
        2,
        &at,
    );
    assert!(err.contains("color/1/z0/y0/x0.wkw"), "{err}");
    assert!(err.contains("run the same command with --resume"), "{err}");
}

/// Sources that are not there, or not what a command reads, are named as such, with what to
/// give instead.
#[test]
fn wrong_sources_say_what_they_are_and_what_to_give() {
    let dir = tmp();
    let missing = dir.path().join("missing");
    let out = dir.path().join("out");
    for args in [
        vec![
            "convert".to_owned(),
            arg(&missing),
            arg(&out),
            "--to".into(),
            "zarr3".into(),
        ],
        vec!["info".to_owned(), arg(&missing)],
        vec!["wkw".to_owned(), "info".into(), arg(&missing)],
    ] {
        let err = fails(&args, 2, "does not exist");
        assert!(
            err.starts_with(&format!("scifmt: {}: does not exist", missing.display())),
            "{err}"
        );
    }
    // A .wkw data file where a dataset (or mag) is read: its mag directory is named.
    let ds = testdata("wkw-zarr/multi/wkw");
    let file = ds.join("color/1/z0/y0/x0.wkw");
    let err = fails(
        &["convert", &arg(&file), &arg(&out), "--to", "zarr3"],
        2,
        "a file, not a dataset",
    );
    assert!(
        err.contains(&format!(
            "give its mag directory {}",
            ds.join("color/1").display()
        )),
        "{err}"
    );
    fails(
        &["wkw", "verify", &arg(&file)],
        2,
        "a file, not a WKW dataset",
    );
    // A WKW source converted to WKW.
    let err = fails(
        &["convert", &arg(&ds), &arg(&out), "--to", "wkw"],
        2,
        "already WKW",
    );
    assert!(err.contains("a webKNOSSOS dataset of WKW layers"), "{err}");
    fails(
        &[
            "convert",
            &arg(&ds.join("color/1")),
            &arg(&out),
            "--to",
            "wkw",
        ],
        2,
        "a WKW mag (header.wkw): already WKW",
    );
    assert!(!out.exists());
}

/// `zarr read` of a group says so and names the arrays to read.
#[test]
fn zarr_read_of_a_group_lists_its_arrays() {
    let dir = tmp();
    let group = testdata("wkw-zarr/multi/zarr3/color");
    let out = dir.path().join("out.raw");
    let err = fails(
        &["zarr", "read", &arg(&group), &arg(&out)],
        2,
        "a Zarr group, not an array",
    );
    let g = group.display();
    assert!(
        err.contains(&format!("give one of its 2 arrays: {g}/1, {g}/2-2-1")),
        "{err}"
    );
    assert!(!out.exists());
    // Zarr v2 groups too.
    let v2 = dir.path().join("v2");
    std::fs::create_dir_all(v2.join("a")).unwrap();
    std::fs::write(v2.join(".zgroup"), r#"{"zarr_format":2}"#).unwrap();
    std::fs::write(
        v2.join("a/.zarray"),
        r#"{"chunks":[10],"compressor":null,"dtype":"<u2","fill_value":0,"filters":null,"order":"C","shape":[10],"zarr_format":2}"#,
    )
    .unwrap();
    let err = fails(
        &["zarr", "read", &arg(&v2), &arg(&out)],
        2,
        "a Zarr group, not an array",
    );
    assert!(
        err.contains(&format!("give one of its 1 arrays: {}/a", v2.display())),
        "{err}"
    );
    let v = common::json(&["info", &arg(&v2), "--json"]);
    assert_eq!(v["node_type"], "group");
    assert!(
        v["read_with"].as_str().unwrap().contains("lists them"),
        "{v}"
    );
}

/// A webKNOSSOS dataset root: `info` lists its layers and mags; `wkw info` and `wkw verify`
/// name the WKW mags to give.
#[test]
fn dataset_roots_are_listed_or_their_mags_named() {
    let ds = testdata("wkw-zarr/multi/wkw");
    let v = common::json(&["info", &arg(&ds), "--json"]);
    assert_eq!(v["format"], "webknossos-dataset");
    assert_eq!(v["num_mags"], 5);
    let color = v["layers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["name"] == "color")
        .unwrap();
    assert_eq!(color["data_format"], "wkw");
    assert_eq!(color["mags"], serde_json::json!(["color/1", "color/2-2-1"]));
    let z = common::json(&["info", &arg(&testdata("wkw-zarr/multi/zarr3")), "--json"]);
    assert_eq!(z["format"], "webknossos-dataset");
    assert_eq!(z["num_mags"], 5);
    let d = ds.display();
    for cmd in ["info", "verify"] {
        let err = fails(
            &["wkw", cmd, &arg(&ds)],
            2,
            "a webKNOSSOS dataset (datasource-properties.json), not a WKW mag",
        );
        assert!(
            err.contains(&format!("give one of its 5 WKW mags: {d}/")),
            "{err}"
        );
        assert!(err.contains(&format!("{d}/color/2-2-1")), "{err}");
    }
    // Each mag named there is one `wkw verify` takes.
    common::ok(&["wkw", "verify", &arg(&ds.join("color/2-2-1"))]);
}

/// `convert --json` counts in the target's words: files for WKW (the `shards_*` keys stay as
/// deprecated aliases), and `nonzero_blocks_written` says what `blocks` counts.
#[test]
fn convert_summary_uses_the_targets_words() {
    let dir = tmp();
    let to_wkw = common::json(&[
        "convert",
        &arg(&testdata("wkw-zarr/multi/zarr3/color/1")),
        &arg(&dir.path().join("wkw")),
        "--to",
        "wkw",
        "--json",
    ]);
    assert!(to_wkw["files_written"].as_u64().unwrap() > 0, "{to_wkw}");
    for k in ["written", "skipped", "empty"] {
        assert_eq!(
            to_wkw[format!("files_{k}")],
            to_wkw[format!("shards_{k}")],
            "{to_wkw}"
        );
    }
    assert_eq!(to_wkw["nonzero_blocks_written"], to_wkw["blocks"]);
    let to_zarr = common::json(&[
        "convert",
        &arg(&testdata("wkw-zarr/multi/wkw/color/1")),
        &arg(&dir.path().join("z")),
        "--to",
        "zarr3",
        "--json",
    ]);
    assert!(to_zarr.get("files_written").is_none(), "{to_zarr}");
    assert!(to_zarr["shards_written"].as_u64().unwrap() > 0);
    assert!(to_zarr["nonzero_blocks_written"].as_u64().unwrap() > 0);
}

/// `wkw compress` to a target that is there leads with the target's path, whatever is there.
#[test]
fn wkw_compress_to_an_existing_target_names_the_target_first() {
    let dir = tmp();
    let src = testdata("wkw/u8_lz4_b32_f4");
    let ds = dir.path().join("ds");
    common::copy_dir(&testdata("wkw/u8_raw_b8_f4"), &ds);
    let other = dir.path().join("other");
    std::fs::create_dir(&other).unwrap();
    std::fs::write(other.join("notes.txt"), b"x").unwrap();
    let file = dir.path().join("file");
    std::fs::write(&file, b"x").unwrap();
    for (dst, says) in [
        (&ds, "exists (a WKW dataset"),
        (&other, "exists (a directory"),
        (&file, "exists as a file"),
    ] {
        let err = fails(&["wkw", "compress", &arg(&src), &arg(dst)], 2, says);
        assert!(
            err.starts_with(&format!("scifmt: {}", dst.display())),
            "{err}"
        );
    }
}
