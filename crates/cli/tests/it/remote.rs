//! `scifmt` on URLs, against a real S3-compatible server over loopback TCP
//! (`scifmt-s3-testserver`): every fixture the local tests use, uploaded and run by `s3://` URL,
//! gives byte-identical output to the same command on the local path; writes to URLs read back
//! locally and vice versa; failures name the URL and never print a credential; an injected
//! 503 is retried.
//!
//! The server's configuration reaches the `scifmt` subprocess only through `Command::envs`
//! (`AWS_ENDPOINT_URL`, `AWS_ACCESS_KEY_ID`, …); nothing is set in the test process.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use common::{blosc_manifest, testdata, tmp, wkw_expected, xyz};
use s3_testserver::TestServer;

/// The testdata folders uploaded to the server, under `td/<folder>`.
const FOLDERS: &[&str] = &["blosc", "wkw", "offset", "dwe"];

/// A server holding the fixtures under `td/`.
fn server() -> TestServer {
    let s = TestServer::start().expect("start the S3 test server");
    for f in FOLDERS {
        s.upload_dir(&testdata(f), &format!("td/{f}"))
            .expect("upload fixtures");
    }
    s
}

/// The URL of the fixture `testdata/<rel>`.
fn url(s: &TestServer, rel: &str) -> String {
    s.url(&format!("td/{rel}"))
}

/// Runs `scifmt args…` with `env` (the server's, or a variant) and stdin closed.
fn run_env(env: &[(String, String)], args: &[OsString]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_scifmt"))
        .args(args)
        .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .stdin(Stdio::null())
        .output()
        .expect("spawn scifmt")
}

fn os(args: &[&str]) -> Vec<OsString> {
    args.iter().map(OsString::from).collect()
}

/// Runs with the server's environment and asserts success with an empty stderr; returns stdout.
fn ok(s: &TestServer, args: &[OsString]) -> Vec<u8> {
    let out = run_env(&s.env(), args);
    assert!(
        out.status.success(),
        "{args:?} failed ({:?}): {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.stderr.is_empty(),
        "{args:?}: stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// Runs the command on the local fixture and on its URL (`{}` in `args` stands for the data
/// argument) and asserts identical stdout, exit status and (apart from the name) stderr;
/// returns stdout.
fn same(s: &TestServer, rel: &str, args: &[&str]) -> Vec<u8> {
    let local = testdata(rel);
    let local = local.to_str().unwrap();
    let remote = url(s, rel);
    let with = |data: &str| -> Vec<OsString> {
        args.iter()
            .map(|a| OsString::from(if *a == "{}" { data } else { a }))
            .collect()
    };
    let l = run_env(&s.env(), &with(local));
    let r = run_env(&s.env(), &with(&remote));
    assert_eq!(
        l.status.code(),
        r.status.code(),
        "{args:?} on {rel}: local stderr {} / remote stderr {}",
        String::from_utf8_lossy(&l.stderr),
        String::from_utf8_lossy(&r.stderr)
    );
    assert!(
        l.stdout == r.stdout,
        "{args:?} on {rel}: stdout differs:\nlocal:  {}\nremote: {}",
        String::from_utf8_lossy(&l.stdout),
        String::from_utf8_lossy(&r.stdout)
    );
    let le = String::from_utf8_lossy(&l.stderr).replace(local, "DATA");
    let re = String::from_utf8_lossy(&r.stderr).replace(&remote, "DATA");
    assert_eq!(le, re, "{args:?} on {rel}: stderr differs");
    l.stdout
}

/// Every file below `testdata/<folder>` with one of `exts`, as paths relative to `testdata`.
fn files(folder: &str, exts: &[&str]) -> Vec<String> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(&p, out);
            } else {
                out.push(p);
            }
        }
    }
    let root = testdata("");
    let mut all = Vec::new();
    walk(&testdata(folder), &mut all);
    let mut v: Vec<String> = all
        .into_iter()
        .filter(|p| {
            p.extension()
                .and_then(OsStr::to_str)
                .is_some_and(|e| exts.contains(&e))
        })
        .map(|p| {
            p.strip_prefix(&root)
                .unwrap()
                .to_string_lossy()
                .trim_start_matches('/')
                .to_owned()
        })
        .collect();
    v.sort();
    v
}

/// The WKW reference datasets (directories holding header.wkw).
fn wkw_datasets() -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(testdata("wkw"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("header.wkw").is_file())
        .map(|p| format!("wkw/{}", p.file_name().unwrap().to_string_lossy()))
        .collect();
    v.sort();
    v
}

#[test]
fn info_of_every_fixture_matches_local() {
    let s = server();
    let mut n = 0;
    let mut rels = files("blosc", &["cdata", "b2frame", "b2nd"]);
    // A sparse frame is a directory.
    rels.retain(|r| !r.contains("sparse_lz4.b2frame/"));
    rels.push("blosc/frames/sparse_lz4.b2frame".into());
    // The 833 Blosc1-format chunks print the same way: a sample of them.
    rels.retain(|r| !r.contains("blosc1/") || r.contains("cross_lz4_shuffle_c5"));
    rels.extend(files("dwe", &["dwe"]));
    rels.extend(wkw_datasets());
    rels.extend(files("wkw", &["wkw"]));
    for rel in &rels {
        same(&s, rel, &["info", "{}", "--json"]);
        // Text output too, for one of each kind (chunks are many and print the same way).
        if !rel.ends_with(".cdata") || rel.ends_with("lz4_shuffle_ts4.cdata") {
            same(&s, rel, &["info", "{}"]);
        }
        n += 1;
    }
    assert!(n > 150, "only {n} fixtures");
}

#[test]
fn frames_and_b2nd_match_local() {
    let s = server();
    let mut rels = files("blosc/frames", &["b2frame", "b2nd"]);
    rels.extend(files("blosc/legacy", &["b2frame"]));
    rels.retain(|r| !r.contains("sparse_lz4.b2frame/"));
    rels.push("blosc/frames/sparse_lz4.b2frame".into());
    for rel in &rels {
        same(&s, rel, &["frame", "chunks", "{}", "--json"]);
        same(&s, rel, &["frame", "chunks", "{}"]);
        same(&s, rel, &["frame", "meta", "{}", "--json"]);
        let data = same(&s, rel, &["frame", "extract", "{}", "-"]);
        if !rel.contains("uninit") {
            assert!(!data.is_empty(), "{rel}");
        }
    }
    for rel in files("blosc/frames", &["b2nd"]) {
        same(&s, &rel, &["b2nd", "read", "{}", "-"]);
    }
    let part = same(
        &s,
        "blosc/frames/b2nd_u2_7x9x11.b2nd",
        &["b2nd", "read", "{}", "-", "--region", "1:5,2:9,3:4"],
    );
    assert_eq!(part.len(), 4 * 7 * 2);
}

#[test]
fn chunks_dwe_and_offset_match_local() {
    let s = server();
    let mut n = 0;
    for e in blosc_manifest() {
        let Some(rel) = e["path"].as_str() else {
            continue;
        };
        if !rel.ends_with(".cdata") {
            continue;
        }
        same(
            &s,
            &format!("blosc/{rel}"),
            &["blosc", "decompress", "{}", "-"],
        );
        n += 1;
    }
    assert!(n > 100, "only {n} chunks");
    for rel in files("dwe", &["dwe"]) {
        same(&s, &rel, &["dwe", "decode", "{}", "-"]);
        same(&s, &rel, &["dwe", "info", "{}", "--json"]);
        same(
            &s,
            &rel,
            &["dwe", "vector", "{}", "--word", "1", "--t", "0", "--f32"],
        );
        same(
            &s,
            &rel,
            &[
                "dwe", "related", "{}", "--words", "0,1", "--t", "0", "--amt", "2", "--json",
            ],
        );
        same(
            &s,
            &rel,
            &[
                "dwe",
                "trajectories",
                "--words1",
                "0,1",
                "--words2",
                "1,0",
                "{}",
                "--json",
            ],
        );
    }
    let codec =
        r#"{"name":"offset","configuration":{"offset":16,"prefix":"TVlfQ1VTVE9NX0hFQURFUg=="}}"#;
    let payload = same(
        &s,
        "offset/zarr/gzip_custom_header.zarr/c/0/0",
        &["offset", "decode", "{}", "-", "--codec", codec],
    );
    assert!(!payload.is_empty());
}

#[test]
fn zarr_stores_match_local() {
    let s = server();
    for &rel in testkit::ZARR_STORES {
        let all = same(&s, rel, &["zarr", "read", "{}", "-"]);
        assert!(!all.is_empty(), "{rel}");
        same(&s, rel, &["zarr", "read", "{}", "-", "--region", "1:7,2:5"]);
    }
}

#[test]
fn wkw_datasets_match_local() {
    let s = server();
    let expected = wkw_expected();
    for rel in wkw_datasets() {
        same(&s, &rel, &["wkw", "info", "{}", "--json"]);
        same(&s, &rel, &["wkw", "info", "{}"]);
        // verify names the files by path or URL: compare with the root replaced.
        same(&s, &rel, &["wkw", "verify", "{}", "--json"]);
        let name = rel.trim_start_matches("wkw/");
        let reads = expected[name]["reads"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        for r in reads {
            let (off, shape) = (xyz(&r["offset_xyz"]), xyz(&r["shape_xyz"]));
            for order in ["f", "c"] {
                let args = [
                    "wkw", "read", "{}", "-", "--offset", &off, "--shape", &shape, "--order", order,
                ];
                same(&s, &rel, &args);
            }
        }
        // One box across every file of the dataset, from the origin.
        same(
            &s,
            &rel,
            &[
                "wkw", "read", "{}", "-", "--offset", "0,0,0", "--shape", "40,36,33",
            ],
        );
    }
}

/// Every file below `dir` as (relative path with `/`, bytes), sorted.
fn tree(dir: &Path) -> Vec<(String, Vec<u8>)> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<(String, Vec<u8>)>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            // Local bookkeeping (wkw's `.wkw-locks`) is not part of the data.
            if p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with('.'))
            {
                continue;
            }
            if p.is_dir() {
                walk(root, &p, out);
            } else {
                let rel = p.strip_prefix(root).unwrap();
                let rel: Vec<String> = rel
                    .components()
                    .map(|c| c.as_os_str().to_string_lossy().into_owned())
                    .collect();
                out.push((rel.join("/"), std::fs::read(&p).unwrap()));
            }
        }
    }
    let mut v = Vec::new();
    walk(dir, dir, &mut v);
    v.sort();
    v
}

/// Downloads the objects below `prefix` into a new directory below `into`.
fn download(s: &TestServer, prefix: &str, into: &Path) -> PathBuf {
    let dir = into.join(prefix.replace('/', "_"));
    let n = s.download_prefix(prefix, &dir).unwrap();
    assert!(n > 0, "nothing under {prefix}");
    dir
}

/// Downloads the single object `key` (via its parent prefix) and returns its bytes.
fn download_object(s: &TestServer, key: &str, into: &Path) -> Vec<u8> {
    let (parent, name) = key.rsplit_once('/').unwrap();
    let dir = download(s, parent, into);
    std::fs::read(dir.join(name)).unwrap()
}

fn assert_same_tree(a: &Path, b: &Path) {
    let (ta, tb) = (tree(a), tree(b));
    let names = |t: &[(String, Vec<u8>)]| t.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>();
    assert_eq!(names(&ta), names(&tb), "{} vs {}", a.display(), b.display());
    for ((n, x), (_, y)) in ta.iter().zip(&tb) {
        assert!(
            x == y,
            "{n} differs between {} and {}",
            a.display(),
            b.display()
        );
    }
}

/// Deterministic bytes.
fn pattern(n: usize) -> Vec<u8> {
    (0..n)
        .map(|i| u8::try_from((i * 31 + i / 7) % 251).unwrap())
        .collect()
}

#[test]
fn wkw_writes_to_urls_read_back_locally() {
    let s = server();
    let d = tmp();
    let d = d.path();
    let raw = d.join("box.raw");
    std::fs::write(&raw, pattern(20 * 17 * 9 * 3 * 2)).unwrap();
    let raw = raw.to_str().unwrap();
    let box_args = ["--offset", "3,5,7", "--shape", "20,17,9"];

    // create + write: local and by URL, byte-identical files.
    let local = d.join("local_ds");
    let mut create: Vec<&str> = vec!["wkw", "create", local.to_str().unwrap()];
    create.extend(common::U16_3CH_LZ4_CREATE);
    ok(&s, &os(&create));
    let mut write = vec!["wkw", "write", local.to_str().unwrap(), raw];
    write.extend(box_args);
    ok(&s, &os(&write));

    let ds_url = s.url("out/ds");
    let mut create: Vec<&str> = vec!["wkw", "create", &ds_url];
    create.extend(common::U16_3CH_LZ4_CREATE);
    ok(&s, &os(&create));
    let mut write = vec!["wkw", "write", ds_url.as_str(), raw];
    write.extend(box_args);
    ok(&s, &os(&write));
    assert_same_tree(&local, &download(&s, "out/ds", d));

    // The box reads back by URL, and the input of `wkw write` may be a URL too.
    let mut read = vec!["wkw", "read", ds_url.as_str(), "-"];
    read.extend(box_args);
    assert_eq!(ok(&s, &os(&read)), std::fs::read(raw).unwrap());
    let up = d.join("up");
    std::fs::create_dir(&up).unwrap();
    std::fs::copy(raw, up.join("box.raw")).unwrap();
    s.upload_dir(&up, "in").unwrap();
    let box_url = s.url("in/box.raw");
    let ds2_url = s.url("out/ds2");
    let mut create: Vec<&str> = vec!["wkw", "create", &ds2_url];
    create.extend(common::U16_3CH_LZ4_CREATE);
    ok(&s, &os(&create));
    let mut write = vec!["wkw", "write", ds2_url.as_str(), box_url.as_str()];
    write.extend(box_args);
    ok(&s, &os(&write));
    assert_same_tree(&local, &download(&s, "out/ds2", d));

    // compress: local -> local (reference), local -> URL, URL -> URL, URL -> local.
    let src = testdata("wkw/u8_raw_b8_f4");
    let src = src.to_str().unwrap();
    let want = d.join("c_local");
    ok(
        &s,
        &os(&[
            "wkw",
            "compress",
            src,
            want.to_str().unwrap(),
            "--block-type",
            "lz4hc",
        ]),
    );
    let c1 = s.url("out/c1");
    ok(
        &s,
        &os(&["wkw", "compress", src, &c1, "--block-type", "lz4hc"]),
    );
    assert_same_tree(&want, &download(&s, "out/c1", d));
    let c2 = s.url("out/c2");
    let src_url = url(&s, "wkw/u8_raw_b8_f4");
    ok(
        &s,
        &os(&["wkw", "compress", &src_url, &c2, "--block-type", "lz4hc"]),
    );
    assert_same_tree(&want, &download(&s, "out/c2", d));
    let c3 = d.join("c3");
    ok(
        &s,
        &os(&[
            "wkw",
            "compress",
            &src_url,
            c3.to_str().unwrap(),
            "--block-type",
            "lz4hc",
        ]),
    );
    assert_same_tree(&want, &c3);
    // And the compressed dataset verifies by URL.
    let v = ok(&s, &os(&["wkw", "verify", &c2, "--json"]));
    assert!(String::from_utf8(v).unwrap().contains(r#""ok":true"#));
}

#[test]
fn frame_and_plain_outputs_to_urls() {
    let s = server();
    let d = tmp();
    let d = d.path();
    let recipe = common::meta_recipe();
    let raw = d.join("frame.raw");
    std::fs::write(&raw, &recipe.data).unwrap();
    let raw = raw.to_str().unwrap();

    // Contiguous: by URL it is the same file as locally, and as python-blosc2's fixture.
    let local = d.join("local.b2frame");
    let mut args = vec!["frame", "create", raw, local.to_str().unwrap()];
    args.extend(recipe.flags);
    ok(&s, &os(&args));
    let f_url = s.url("out/f.b2frame");
    let mut args = vec!["frame", "create", raw, f_url.as_str()];
    args.extend(recipe.flags);
    ok(&s, &os(&args));
    let got = download_object(&s, "out/f.b2frame", &d.join("dl1"));
    assert!(got == std::fs::read(&local).unwrap());
    // ... and it reads back through the URL.
    let back = ok(&s, &os(&["frame", "extract", &f_url, "-"]));
    assert!(back == recipe.data);

    // Input by URL, sparse output by URL.
    let up = d.join("up");
    std::fs::create_dir(&up).unwrap();
    std::fs::copy(raw, up.join("frame.raw")).unwrap();
    s.upload_dir(&up, "in").unwrap();
    let raw_url = s.url("in/frame.raw");
    let local_sparse = d.join("local_sparse");
    let mut args = vec![
        "frame",
        "create",
        raw,
        local_sparse.to_str().unwrap(),
        "--sparse",
    ];
    args.extend(recipe.flags);
    ok(&s, &os(&args));
    let sp_url = s.url("out/sparse");
    let mut args = vec![
        "frame",
        "create",
        raw_url.as_str(),
        sp_url.as_str(),
        "--sparse",
    ];
    args.extend(recipe.flags);
    ok(&s, &os(&args));
    assert_same_tree(&local_sparse, &download(&s, "out/sparse", d));
    let back = ok(&s, &os(&["frame", "extract", &sp_url, "-"]));
    assert!(back == recipe.data);

    // Plain outputs: blosc decompress URL -> URL, dwe create -> URL.
    let chunk = url(&s, "blosc/chunks/lz4_shuffle_ts4.cdata");
    let out_url = s.url("out/c.raw");
    ok(&s, &os(&["blosc", "decompress", &chunk, &out_url]));
    let want = common::run(&[
        "blosc",
        "decompress",
        testdata("blosc/chunks/lz4_shuffle_ts4.cdata")
            .to_str()
            .unwrap(),
        "-",
    ])
    .stdout;
    assert!(download_object(&s, "out/c.raw", &d.join("dl2")) == want);

    let values = testdata("dwe/inputs/small_2_4_4.i16");
    let local_dwe = d.join("small.dwe");
    let dwe_args = ["--shape", "2,4,4", "--scale", "0.5", "--chunk-size", "4"];
    let mut args = vec![
        "dwe",
        "create",
        values.to_str().unwrap(),
        local_dwe.to_str().unwrap(),
    ];
    args.extend(dwe_args);
    ok(&s, &os(&args));
    let dwe_url = s.url("out/small.dwe");
    let mut args = vec!["dwe", "create", values.to_str().unwrap(), dwe_url.as_str()];
    args.extend(dwe_args);
    ok(&s, &os(&args));
    assert!(
        download_object(&s, "out/small.dwe", &d.join("dl3")) == std::fs::read(&local_dwe).unwrap()
    );
}

/// The stderr of a failing command: one line, status 2, naming `needle`, with neither secret.
fn fails_clean(
    env: &[(String, String)],
    args: &[OsString],
    needle: &str,
    secrets: &[&str],
) -> String {
    let out = run_env(env, args);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
    assert!(err.contains(needle), "{args:?}: `{needle}` not in {err}");
    for secret in secrets {
        assert!(!err.contains(secret), "{args:?}: secret in {err}");
    }
    assert!(!err.contains("panicked"), "{err}");
    err
}

#[test]
fn errors_name_the_url_and_hide_credentials() {
    let s = server();
    let secret = s.secret_key().to_owned();
    let env = s.env();
    let missing = url(&s, "blosc/chunks/no_such_chunk.cdata");
    for args in [
        vec!["info", missing.as_str()],
        vec!["blosc", "decompress", missing.as_str(), "-"],
        vec!["frame", "chunks", missing.as_str()],
        vec!["b2nd", "read", missing.as_str(), "-"],
        vec!["dwe", "info", missing.as_str()],
        vec!["wkw", "info", missing.as_str()],
        vec![
            "wkw",
            "read",
            missing.as_str(),
            "-",
            "--offset",
            "0,0,0",
            "--shape",
            "1,1,1",
        ],
        vec!["zarr", "read", missing.as_str(), "-"],
    ] {
        fails_clean(&env, &os(&args), &missing, &[&secret]);
    }

    // Wrong credentials: the server answers 403; neither the wrong nor the right secret shows.
    let wrong = "wrong-secret-key-4f2a9c";
    let bad_env: Vec<(String, String)> = env
        .iter()
        .map(|(k, v)| {
            let v = if k == "AWS_SECRET_ACCESS_KEY" {
                wrong.to_owned()
            } else {
                v.clone()
            };
            (k.clone(), v)
        })
        .collect();
    let chunk = url(&s, "blosc/chunks/lz4_shuffle_ts4.cdata");
    let frame = url(&s, "blosc/frames/lz4_shuffle_meta_vlmeta.b2frame");
    let ds = url(&s, "wkw/u8_lz4_b32_f4");
    for (args, name) in [
        (vec!["blosc", "decompress", chunk.as_str(), "-"], &chunk),
        (vec!["frame", "extract", frame.as_str(), "-"], &frame),
        (vec!["wkw", "info", ds.as_str()], &ds),
        (vec!["info", chunk.as_str()], &chunk),
    ] {
        fails_clean(&bad_env, &os(&args), name, &[wrong, &secret]);
    }

    // Credentials in the URL itself never reach a message.
    let with_user = format!(
        "http://user:url-password-77@{}/scifmt-test/td/none.cdata?X-Amz-Signature=sig-value-99",
        s.addr()
    );
    let err = fails_clean(
        &env,
        &os(&["blosc", "decompress", &with_user, "-"]),
        "none.cdata",
        &["url-password-77", "sig-value-99", &secret],
    );
    assert!(err.contains("http://"), "{err}");

    // Unknown schemes are bad usage.
    fails_clean(&env, &os(&["info", "ftp://host/x"]), "not supported", &[]);
}

#[test]
fn injected_503s_are_retried() {
    let s = server();
    let faults = s.faults();
    let rel = "blosc/frames/zstd_delta_shuffle_many_chunks.b2frame";
    let want = common::run(&["frame", "extract", testdata(rel).to_str().unwrap(), "-"]).stdout;
    faults.fail_next(2, 503);
    assert!(ok(&s, &os(&["frame", "extract", &url(&s, rel), "-"])) == want);
    assert!(faults.injected() >= 2, "{}", faults.injected());

    let chunk = "blosc/chunks/zstd_shuffle_ts4.cdata";
    let want = common::run(&[
        "blosc",
        "decompress",
        testdata(chunk).to_str().unwrap(),
        "-",
    ])
    .stdout;
    let before = faults.injected();
    faults.fail_next(1, 503);
    assert!(ok(&s, &os(&["blosc", "decompress", &url(&s, chunk), "-"])) == want);
    assert!(faults.injected() > before);

    let ds = "wkw/u16_3ch_lz4_b8_f4";
    let box_args = ["--offset", "0,0,0", "--shape", "40,36,33"];
    let mut args: Vec<String> = vec![
        "wkw".into(),
        "read".into(),
        testdata(ds).to_str().unwrap().to_owned(),
        "-".into(),
    ];
    args.extend(box_args.iter().map(|a| (*a).to_owned()));
    let want = common::run(&args).stdout;
    let before = faults.injected();
    faults.fail_next(3, 503);
    args[2] = url(&s, ds);
    let args: Vec<OsString> = args.iter().map(OsString::from).collect();
    assert!(ok(&s, &args) == want);
    assert!(faults.injected() > before);
}

#[test]
fn file_urls_match_local_paths() {
    let file_url = |rel: &str| {
        let p = std::fs::canonicalize(testdata(rel)).unwrap();
        format!("file://{}", p.display())
    };
    for (rel, args) in [
        (
            "blosc/frames/b2nd_u2_7x9x11.b2nd",
            vec!["info", "{}", "--json"],
        ),
        (
            "blosc/frames/sparse_lz4.b2frame",
            vec!["frame", "extract", "{}", "-"],
        ),
        (
            "blosc/chunks/lz4_shuffle_ts4.cdata",
            vec!["blosc", "decompress", "{}", "-"],
        ),
        (
            "offset/zarr/pad_end_zero.zarr",
            vec!["zarr", "read", "{}", "-"],
        ),
        (
            "wkw/u16_3ch_lz4_b8_f4",
            vec![
                "wkw", "read", "{}", "-", "--offset", "1,2,3", "--shape", "20,30,9",
            ],
        ),
    ] {
        let with = |data: &str| -> Vec<String> {
            args.iter()
                .map(|a| {
                    if *a == "{}" {
                        data.to_owned()
                    } else {
                        (*a).to_owned()
                    }
                })
                .collect()
        };
        let local = common::run(&with(testdata(rel).to_str().unwrap()));
        let by_url = common::run(&with(&file_url(rel)));
        assert!(local.status.success(), "{rel}");
        assert!(
            local.stdout == by_url.stdout && by_url.status.success(),
            "{rel}: {}",
            String::from_utf8_lossy(&by_url.stderr)
        );
    }
}

#[test]
fn large_outputs_upload_in_parts_and_never_partially() {
    use s3_testserver::{FaultKind, FaultRule};
    let s = server();
    let d = tmp();
    // 512 x 512 x 280 u8 voxels of a dataset without data files: 70 MiB of zeros, above the
    // 64 MiB multipart threshold (five 16 MiB parts).
    let ds = testdata("wkw/u8_default_header_only");
    let read = |out: &str| {
        os(&[
            "wkw",
            "read",
            ds.to_str().unwrap(),
            out,
            "--offset",
            "0,0,0",
            "--shape",
            "512,512,280",
        ])
    };
    let big = s.url("out/big.raw");
    ok(&s, &read(&big));
    let uploads = s.log().iter().filter(|r| r.method == "PUT").count();
    assert!(
        uploads >= 5,
        "{uploads} PUT requests: not a multipart upload"
    );
    let got = download_object(&s, "out/big.raw", &d.path().join("dl"));
    assert_eq!(got.len(), 512 * 512 * 280);
    assert!(got.iter().all(|&b| b == 0));

    // A part refused by the server (403, not retried): the command fails naming the URL, and
    // no object appears under the key.
    s.faults().inject(
        FaultRule::new(FaultKind::Status(403), 1)
            .method("PUT")
            .key_contains("big2.raw")
            .after(1),
    );
    let big2 = s.url("out/big2.raw");
    fails_clean(&s.env(), &read(&big2), &big2, &[s.secret_key()]);
    let listed = s.download_prefix("out", &d.path().join("after")).unwrap();
    assert!(
        !d.path().join("after/big2.raw").exists(),
        "a partial object was left ({listed} objects under out/)"
    );
}

#[test]
fn url_reads_fetch_only_what_they_need() {
    let s = server();
    // One 8³ block of a 197 KB compressed WKW file: header.wkw, the file's header + jump table,
    // the block's byte range; never the whole file.
    let ds = "wkw/u16_3ch_lz4_b8_f4";
    s.reset_stats();
    let out = same(
        &s,
        ds,
        &[
            "wkw", "read", "{}", "-", "--offset", "8,8,8", "--shape", "8,8,8",
        ],
    );
    assert_eq!(out.len(), 8 * 8 * 8 * 6);
    let log = s.log();
    let gets: Vec<_> = log.iter().filter(|r| r.is_object_get()).collect();
    let file = std::fs::metadata(testdata(ds).join("z0/y0/x0.wkw"))
        .unwrap()
        .len();
    let sent: u64 = gets.iter().map(|r| r.bytes_sent).sum();
    eprintln!(
        "wkw read of one block by URL: {} GETs, {sent} bytes sent, file {file} bytes",
        gets.len()
    );
    assert!(gets.len() <= 3, "{} GETs: {gets:?}", gets.len());
    assert!(
        sent * 10 < file,
        "{sent} bytes sent for one block of a {file}-byte file"
    );
    assert!(
        gets.iter()
            .all(|r| r.key == format!("td/{ds}/header.wkw") || r.range.is_some())
    );

    // A zarr region: only the chunks it touches (plus the metadata).
    let store = "offset/zarr/gzip_custom_header.zarr";
    s.reset_stats();
    same(
        &s,
        store,
        &["zarr", "read", "{}", "-", "--region", "0:1,0:1"],
    );
    let chunk_gets = s
        .log()
        .iter()
        .filter(|r| r.is_object_get() && r.key.contains("/c/"))
        .count();
    assert_eq!(chunk_gets, 1, "{:?}", s.log());
}

#[test]
fn convert_between_urls_and_paths_writes_the_local_bytes() {
    let s = TestServer::start().expect("start the S3 test server");
    let src = testdata("wkw-zarr/multi/wkw");
    s.upload_dir(&src, "conv/multi").unwrap();
    let dir = tmp();
    let d = dir.path();
    // The local conversions (`id.name` is the target's last segment, the same in both).
    let local_zarr = d.join("local").join("multi_zarr3");
    let local_wkw = d.join("local").join("multi_wkw");
    let p = |p: &Path| p.to_str().unwrap().to_owned();
    ok(
        &s,
        &os(&[
            "convert",
            &p(&src),
            &p(&local_zarr),
            "--to",
            "zarr3",
            "--json",
        ]),
    );
    ok(
        &s,
        &os(&[
            "convert",
            &p(&local_zarr),
            &p(&local_wkw),
            "--to",
            "wkw",
            "--json",
        ]),
    );

    // S3 → S3, then S3 → local.
    let remote_src = s.url("conv/multi");
    let remote_zarr = s.url("out/multi_zarr3");
    ok(
        &s,
        &os(&[
            "convert",
            &remote_src,
            &remote_zarr,
            "--to",
            "zarr3",
            "--json",
        ]),
    );
    assert_same_tree(&download(&s, "out/multi_zarr3", &d.join("dl")), &local_zarr);
    let back = d.join("back").join("multi_wkw");
    ok(
        &s,
        &os(&["convert", &remote_zarr, &p(&back), "--to", "wkw", "--json"]),
    );
    assert_same_tree(&back, &local_wkw);

    // An existing target is refused (naming the URL, no credentials), then overwritten.
    let secret = s.secret_key().to_owned();
    fails_clean(
        &s.env(),
        &os(&["convert", &remote_src, &remote_zarr, "--to", "zarr3"]),
        "target exists: s3://scifmt-test/out/multi_zarr3",
        &[&secret],
    );
    ok(
        &s,
        &os(&[
            "convert",
            &p(&src),
            &remote_zarr,
            "--to",
            "zarr3",
            "--overwrite",
            "--json",
        ]),
    );
    assert_same_tree(
        &download(&s, "out/multi_zarr3", &d.join("dl2")),
        &local_zarr,
    );
    // A target key prefix that is the source's, inside it or around it is refused in every
    // mode, and the source's objects stay as they were.
    let before = tree(&download(&s, "conv/multi", &d.join("before")));
    for (from, to, says) in [
        (remote_src.clone(), remote_src.clone(), "is the input"),
        (remote_src.clone(), format!("{remote_src}/"), "is the input"),
        (
            remote_src.clone(),
            s.url("conv/multi/sub"),
            "is inside the input",
        ),
        (s.url("conv/multi/color/1"), remote_src.clone(), "is inside"),
    ] {
        for mode in [None, Some("--overwrite"), Some("--resume")] {
            let mut args = vec!["convert", &from, &to, "--to", "zarr3"];
            args.extend(mode);
            fails_clean(&s.env(), &os(&args), says, &[&secret]);
        }
    }
    assert_eq!(tree(&download(&s, "conv/multi", &d.join("after"))), before);

    // --verify with URLs: S3 ↔ S3, S3 ↔ local, blosc chunks; differences name the URL.
    let out = ok(
        &s,
        &os(&[
            "convert",
            &remote_src,
            &s.url("out/blosc"),
            "--to",
            "zarr3",
            "--codec",
            "blosc",
            "--blosc-cname",
            "lz4",
            "--verify",
            "--json",
        ]),
    );
    let out: serde_json::Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(out["differing_blocks"], 0, "{out}");
    assert!(out["verified_blocks"].as_u64().unwrap() > 0, "{out}");
    let out = ok(
        &s,
        &os(&[
            "convert",
            &s.url("out/blosc"),
            &p(&d.join("blosc_wkw")),
            "--to",
            "wkw",
            "--verify",
            "--json",
        ]),
    );
    let out: serde_json::Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(out["differing_blocks"], 0, "{out}");
    // One raw chunk changed on the store: --verify exits 1 naming the array's URL.
    ok(
        &s,
        &os(&[
            "convert",
            &p(&src.join("color/1")),
            &s.url("out/raw"),
            "--to",
            "zarr3",
            "--codec",
            "none",
        ]),
    );
    let shard = tree(&download(&s, "out/raw", &d.join("dl-raw")))
        .into_iter()
        .find(|(k, _)| k.starts_with("c/"))
        .unwrap();
    let mut bytes = shard.1;
    bytes[7] ^= 1;
    scifmt_io::block_on(scifmt_io::object_store::ObjectStoreExt::put(
        s.store().as_ref(),
        &scifmt_io::object_store::path::Path::from(format!("out/raw/{}", shard.0)),
        bytes.into(),
    ))
    .unwrap()
    .unwrap();
    let out = run_env(
        &s.env(),
        &os(&[
            "convert",
            &p(&src.join("color/1")),
            &s.url("out/raw"),
            "--to",
            "zarr3",
            "--codec",
            "none",
            "--resume",
            "--verify",
        ]),
    );
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(&format!("and {} differ at voxel", s.url("out/raw"))),
        "{text}"
    );
    assert!(!text.contains(&secret) && !String::from_utf8_lossy(&out.stderr).contains(&secret));

    // A missing source names its URL.
    let missing = s.url("conv/none");
    fails_clean(
        &s.env(),
        &os(&["convert", &missing, &p(&d.join("x")), "--to", "wkw"]),
        &missing,
        &[&secret],
    );
}

/// Ctrl-C stops a conversion cleanly: SIGINT while a source read is held by an injected delay
/// (so work certainly remains) ends the command with status 130 and a message naming
/// `--resume`; every completed shard stays, the marker says the target is unfinished, and
/// `--resume` finishes it with the bytes of an uninterrupted run.
#[cfg(unix)]
#[test]
fn ctrl_c_stops_a_conversion_cleanly_and_resume_finishes_it() {
    use s3_testserver::{FaultKind, FaultRule};
    let s = TestServer::start().unwrap();
    s.upload_dir(&testdata("wkw-zarr/multi/wkw"), "ds").unwrap();
    let dir = tmp();
    let d = dir.path();
    let p = |p: &Path| p.to_str().unwrap().to_owned();
    // An uninterrupted run, to count its source reads and for its bytes.
    let clean = d.join("clean").join("out");
    let src = s.url("ds");
    let args = ["convert", &src, &p(&clean), "--to", "zarr3", "--jobs", "1"];
    s.reset_stats();
    ok(&s, &os(&args));
    let reads = s
        .log()
        .iter()
        .filter(|r| r.method == "GET" && r.key.ends_with(".wkw") && !r.key.ends_with("header.wkw"))
        .count();
    assert!(reads >= 4, "{reads} data-file reads");
    // The same run, with the read halfway held for 10 s; Ctrl-C once it is held (the command
    // stops at its next batch, after that read).
    let out = d.join("out");
    let faults = s.faults();
    let before = faults.injected();
    faults.inject(
        FaultRule::new(FaultKind::Delay(std::time::Duration::from_secs(10)), 1)
            .method("GET")
            .key_contains(".wkw")
            .after(u32::try_from(reads / 2).unwrap()),
    );
    let child = Command::new(env!("CARGO_BIN_EXE_scifmt"))
        .args(["convert", &src, &p(&out), "--to", "zarr3", "--jobs", "1"])
        .envs(s.env())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Wait for the held request (a condition, not a time): at most two minutes.
    let start = std::time::Instant::now();
    while faults.injected() == before {
        assert!(
            start.elapsed().as_secs() < 120,
            "the delayed read never came"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let pid = nix::unistd::Pid::from_raw(i32::try_from(child.id()).unwrap());
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT).unwrap();
    let done = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&done.stderr);
    assert_eq!(done.status.code(), Some(130), "{err}");
    assert!(
        err.contains("interrupted") && err.contains("--resume"),
        "{err}"
    );
    assert!(out.join(".wkw-zarr-conversion.json").exists());
    faults.clear();
    // --resume finishes it: the bytes of the uninterrupted run (but for the dataset's name).
    let resumed = ok(
        &s,
        &os(&[
            "convert",
            &src,
            &p(&out),
            "--to",
            "zarr3",
            "--resume",
            "--json",
        ]),
    );
    let resumed: serde_json::Value = serde_json::from_slice(&resumed).unwrap();
    assert!(resumed["shards_skipped"].as_u64().unwrap() > 0, "{resumed}");
    let (a, b) = (tree(&out), tree(&clean));
    let keys = |t: &[(String, Vec<u8>)]| t.iter().map(|(k, _)| k.clone()).collect::<Vec<_>>();
    assert_eq!(keys(&a), keys(&b));
    for ((k, x), (_, y)) in a.iter().zip(&b) {
        if k != "datasource-properties.json" {
            assert_eq!(x, y, "{k}");
        }
    }
}
