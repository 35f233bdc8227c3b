//! What a user sees when something is wrong: the message names the object the user gave, once,
//! says what is wrong and, where there is one, how to fix it. No message quotes a temporary
//! file or repeats a path.
//!
//! Cloud-credential tests never reach a cloud: every `AWS_*`/`GOOGLE_*`/`AZURE_*` variable is
//! removed from the child's environment, and the instance-metadata services (the clients' last
//! resort) point at a closed loopback port, so the lookup fails at once on any machine.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

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

#[test]
fn missing_cloud_credentials_are_named_with_the_fix() {
    let cases: [(&str, &[(&str, &str)], &[&str]); 3] = [
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
            "scifmt: {}: not a WKW dataset (no header.wkw), a sparse Blosc2 frame (no chunks.b2frame) or a Zarr store (no zarr.json, .zarray or .zgroup); for a Zarr v3 array use `scifmt zarr read`",
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
}

#[test]
fn bytes_that_are_no_blosc_chunk_say_so_first() {
    let dir = tmp();
    let bin = dir.path().join("notes.txt");
    // Text: the block size the letters spell is beyond any Blosc block.
    std::fs::write(&bin, b"This is a text file, not a Blosc chunk at all.\n").unwrap();
    let out = dir.path().join("o.raw");
    let err = fails(
        &["blosc", "decompress", bin.to_str().unwrap(), out.to_str().unwrap()],
        2,
        "not a Blosc chunk",
    );
    assert_eq!(
        err.trim_end(),
        format!("scifmt: {}: not a Blosc chunk: invalid blocksize 1702109281", bin.display())
    );
    let mut zero_typesize = vec![2u8, 1, 0x01, 0];
    zero_typesize.extend_from_slice(&[16, 0, 0, 0, 16, 0, 0, 0, 32, 0, 0, 0]);
    zero_typesize.extend_from_slice(&[0; 16]);
    std::fs::write(&bin, &zero_typesize).unwrap();
    let err = fails(
        &["blosc", "decompress", bin.to_str().unwrap(), out.to_str().unwrap()],
        2,
        "not a Blosc chunk",
    );
    assert_eq!(
        err.trim_end(),
        format!("scifmt: {}: not a Blosc chunk: invalid typesize 0", bin.display())
    );
    assert!(!out.exists());
}
