//! The storage layer against a server speaking the S3 protocol over TCP (`s3-testserver`):
//! uploads that fail or are abandoned leave no multipart upload and no partial object behind,
//! create-only puts never replace, pinned reads never mix versions, cut bodies are fetched
//! again, locations list and read.

#![allow(clippy::unwrap_used, reason = "a failed unwrap is a failed test")]

use std::path::Path as FsPath;
use std::sync::Arc;

use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt, PutMode};
use s3_testserver::{FaultKind, FaultRule, TestServer};
use scifmt_io::bytes::Bytes;
use scifmt_io::{Error, Location, Object, RemoteOptions, Upload, block_on, object_store, put};

type TestResult = Result<(), Box<dyn std::error::Error>>;

/// Every file below `dir` whose name shows an unfinished upload (s3s-fs keeps an upload's
/// parts as `.upload_id-*` / `.tmp.*` files until it is completed or aborted).
fn unfinished_uploads(dir: &FsPath) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let name = e.file_name().to_string_lossy().into_owned();
                if name.contains("upload") || name.starts_with(".tmp") {
                    out.push(name);
                }
            }
        }
    }
    out
}

fn missing(store: &dyn ObjectStore, key: &str) -> bool {
    matches!(
        block_on(store.head(&Path::from(key))).unwrap(),
        Err(object_store::Error::NotFound { .. })
    )
}

/// The smallest parts S3 (and s3s) accept for all but the last part.
const PART: usize = 5 << 20;

/// Multipart from one part on, two parts in flight.
fn options() -> RemoteOptions {
    RemoteOptions::default()
        .with_multipart(PART as u64, PART as u64)
        .with_concurrency(2)
}

fn data(n: usize) -> Bytes {
    (0..n)
        .map(|i| u8::try_from(i % 251).unwrap_or(0))
        .collect::<Vec<u8>>()
        .into()
}

#[test]
fn multipart_uploads_complete_or_leave_nothing_behind() -> TestResult {
    let server = TestServer::start()?;
    let store = server.store();
    let o = options();
    // A multipart upload that completes: the object, no upload left.
    block_on(put(
        Arc::clone(&store),
        Path::from("ok"),
        "s3://b/ok",
        data(2 * PART + 100),
        PutMode::Overwrite,
        &o,
    ))??;
    let got = block_on(async { store.get(&Path::from("ok")).await?.bytes().await })??;
    assert_eq!(got, data(2 * PART + 100));
    assert!(
        server
            .log()
            .iter()
            .any(|r| r.method == "POST" && r.query.contains("uploadId")),
        "no multipart upload was completed"
    );
    assert!(unfinished_uploads(&server.backing_dir()).is_empty());

    // A part refused (403 is not retried): the upload is aborted, nothing under the key.
    server.reset_stats();
    server.faults().inject(
        FaultRule::new(FaultKind::Status(403), 1)
            .method("PUT")
            .key_contains("refused")
            .after(1),
    );
    let e = block_on(put(
        Arc::clone(&store),
        Path::from("refused"),
        "s3://b/refused",
        data(2 * PART + 100),
        PutMode::Overwrite,
        &o,
    ))?
    .unwrap_err();
    assert!(matches!(e, Error::Remote { .. }), "{e:?}");
    assert!(e.to_string().contains("s3://b/refused"), "{e}");
    assert!(missing(store.as_ref(), "refused"));
    let log = server.log();
    assert!(
        log.iter()
            .any(|r| r.method == "DELETE" && r.query.contains("uploadId")),
        "the failed upload was not aborted: {log:?}"
    );
    assert!(
        unfinished_uploads(&server.backing_dir()).is_empty(),
        "{:?}",
        unfinished_uploads(&server.backing_dir())
    );

    // A part whose connection breaks mid-body, on every attempt: aborted as well.
    server.faults().clear();
    server.faults().inject(
        FaultRule::new(FaultKind::CutUpload, 100)
            .method("PUT")
            .key_contains("cut"),
    );
    let e = block_on(put(
        Arc::clone(&store),
        Path::from("cut"),
        "s3://b/cut",
        data(2 * PART + 100),
        PutMode::Overwrite,
        &o,
    ))?;
    assert!(e.is_err());
    server.faults().clear();
    assert!(missing(store.as_ref(), "cut"));
    assert!(unfinished_uploads(&server.backing_dir()).is_empty());

    // An upload abandoned halfway (its producer failed and dropped it): aborted on drop.
    server.reset_stats();
    let mut u = Upload::new(
        Arc::clone(&store),
        Path::from("dropped"),
        "s3://b/dropped",
        PutMode::Overwrite,
        &o,
    );
    block_on(u.write(data(PART + 10)))??;
    drop(u);
    assert!(missing(store.as_ref(), "dropped"));
    assert!(
        server
            .log()
            .iter()
            .any(|r| r.method == "DELETE" && r.query.contains("uploadId")),
        "the dropped upload was not aborted"
    );
    assert!(unfinished_uploads(&server.backing_dir()).is_empty());
    Ok(())
}

#[test]
fn create_only_puts_never_replace_and_updates_need_the_version() -> TestResult {
    let server = TestServer::start()?;
    let store = server.store();
    let o = options();
    for (key, n) in [("small", 500), ("large", 2 * PART + 100)] {
        block_on(put(
            Arc::clone(&store),
            Path::from(key),
            key,
            data(n),
            PutMode::Create,
            &o,
        ))??;
        server.reset_stats();
        let e = block_on(put(
            Arc::clone(&store),
            Path::from(key),
            key,
            Bytes::from(vec![0u8; n]),
            PutMode::Create,
            &o,
        ))?;
        assert!(matches!(e, Err(Error::Conflict { .. })), "{key}: {e:?}");
        let got = block_on(async { store.get(&Path::from(key)).await?.bytes().await })??;
        assert_eq!(got, data(n), "{key}");
        // The large one was refused by its HEAD check: no upload was started.
        assert!(
            !server.log().iter().any(|r| r.query.contains("uploads")),
            "{key}"
        );
    }
    // If-Match on a stale version: a conflict, the object unchanged.
    let meta = block_on(store.head(&Path::from("small")))??;
    block_on(put(
        Arc::clone(&store),
        Path::from("small"),
        "small",
        data(10),
        PutMode::Overwrite,
        &o,
    ))??;
    let stale = object_store::UpdateVersion {
        e_tag: meta.e_tag,
        version: meta.version,
    };
    let e = block_on(put(
        Arc::clone(&store),
        Path::from("small"),
        "small",
        data(20),
        PutMode::Update(stale),
        &o,
    ))?;
    assert!(matches!(e, Err(Error::Conflict { .. })), "{e:?}");
    Ok(())
}

#[test]
fn pinned_reads_refuse_a_replaced_object_and_retry_cut_bodies() -> TestResult {
    let server = TestServer::start()?;
    let store = server.store();
    let o: RemoteOptions = RemoteOptions::default().with_coalesce_gap(0);
    block_on(store.put(&Path::from("obj"), data(5000).into()))??;
    let object = Object::new(Arc::clone(&store), Path::from("obj"), server.url("obj"));
    assert_eq!(
        block_on(object.get_range(0..10, &o))??.unwrap(),
        data(5000).slice(0..10)
    );
    // A body cut short once is fetched again.
    server.faults().truncate_next(1);
    let got = block_on(object.get_ranges(&[100..200, 4000..5000], &o))??.unwrap();
    assert_eq!(got[1], data(5000).slice(4000..5000));
    // Cut on every attempt: an error, never short data.
    server.faults().truncate_next(100);
    let e = block_on(object.get_range(0..4000, &o))?.unwrap_err();
    assert!(matches!(e, Error::Remote { .. }), "{e:?}");
    server.faults().clear();
    // Replaced after pinning: Changed, whatever the store does with If-Match.
    server.faults().inject(
        FaultRule::new(FaultKind::Replace(Bytes::from(vec![7u8; 5000])), 1)
            .method("GET")
            .key_contains("obj"),
    );
    let e = block_on(object.get_range(10..20, &o))?.unwrap_err();
    assert!(matches!(e, Error::Changed { .. }), "{e:?}");
    assert!(e.to_string().contains(&server.url("obj")), "{e}");
    Ok(())
}

#[test]
fn locations_on_s3_list_read_write_and_refuse_unknown_schemes() -> TestResult {
    let server = TestServer::start()?;
    let config: Vec<(String, String)> = server.env();
    let root = Location::parse(&server.url("ds"), &config)?;
    assert_eq!(root.to_string(), server.url("ds"));
    root.join("a/b.bin")
        .write_small(b"hello", scifmt_io::Durability::default())?;
    let mut sink = root.join("big.bin").create(&options())?;
    for _ in 0..3 {
        sink.write_all(&data(PART / 2 + 1))?;
    }
    sink.finish(scifmt_io::Durability::default())?;
    let listed = root.list()?;
    let keys: Vec<&str> = listed.iter().map(|(k, _, _)| k.as_str()).collect();
    assert_eq!(keys, ["a/b.bin", "big.bin"]);
    assert_eq!(listed[1].1, 3 * (PART as u64 / 2 + 1));
    assert_eq!(
        root.join("a/b.bin").read_all()?.as_deref(),
        Some(&b"hello"[..])
    );
    let r = root.join("big.bin").open(None, &options())?.unwrap();
    let half = PART as u64 / 2 + 1;
    let want: Vec<u8> = data(PART / 2 + 1)
        .iter()
        .skip(PART / 2 - 4)
        .chain(data(10).iter())
        .copied()
        .collect();
    assert_eq!(r.read_range(half - 5, half + 10)?, want);
    assert!(root.join("none").open(None, &options())?.is_none());
    assert!(unfinished_uploads(&server.backing_dir()).is_empty());
    match Location::parse("ftp://host/x", &[]) {
        Err(Error::InvalidArgument(m)) => assert!(m.contains("ftp://") && m.contains("s3"), "{m}"),
        other => panic!("{other:?}"),
    }
    Ok(())
}

#[test]
fn https_clients_work_with_ring_as_the_provider() -> TestResult {
    // The cloud backends run reqwest over rustls with *ring* (no aws-lc-rs), which needs a
    // process-wide default provider: `store_for_url` installs it (here
    // `install_tls_provider`). Against the test server's plain-HTTP port an `https://` request
    // really starts a TLS handshake and fails on the server's plain reply: never a missing
    // provider or a panic. (One request, directly: object_store would retry it for a minute.)
    let server = TestServer::start()?;
    scifmt_io::install_tls_provider();
    let client = reqwest::Client::builder().build()?;
    let https = server.endpoint().replacen("http://", "https://", 1);
    let err = block_on(client.get(https).send())?.unwrap_err();
    let mut text = err.to_string();
    let mut source = std::error::Error::source(&err);
    while let Some(e) = source {
        text.push_str(&format!(" / {e}"));
        source = e.source();
    }
    assert!(text.contains("InvalidContentType"), "{text}");
    Ok(())
}

/// Locations on a plain HTTP server with WebDAV (`WebDavServer`, which refuses a `PROPFIND` of
/// infinite depth as Apache's `mod_dav` does by default): a directory lists recursively, a
/// file reads by ranges, and a read pinned to the listed ETag fails once the file is
/// rewritten (the server honours `If-Match`).
#[test]
fn locations_on_a_webdav_server_list_and_read() -> TestResult {
    let server = s3_testserver::WebDavServer::start()?;
    let dir = server.root().join("ds");
    std::fs::create_dir_all(dir.join("a/b"))?;
    std::fs::write(dir.join("a/b/one.bin"), data(5000))?;
    std::fs::write(dir.join("two.bin"), data(10))?;
    let root = Location::parse(&server.url("ds"), &[])?;
    let listed = root.list()?;
    let keys: Vec<(&str, u64)> = listed.iter().map(|(k, n, _)| (k.as_str(), *n)).collect();
    assert_eq!(keys, [("a/b/one.bin", 5000), ("two.bin", 10)]);
    let etag = listed[0].2.clone();
    assert!(etag.is_some(), "{listed:?}");
    let one = root.join("a/b/one.bin");
    let r = one.open(Some((5000, etag.clone())), &options())?.unwrap();
    assert_eq!(r.read_range(100, 120)?, data(5000).slice(100..120));
    std::fs::write(dir.join("a/b/one.bin"), data(4000))?;
    let r = one.open(Some((5000, etag)), &options())?;
    let e = match r {
        None => panic!("the file is there"),
        Some(r) => r.read_range(100, 120).unwrap_err(),
    };
    assert!(matches!(e, Error::Changed { .. }), "{e:?}");
    Ok(())
}
