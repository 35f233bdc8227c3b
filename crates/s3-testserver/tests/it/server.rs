//! The test server against object_store's AmazonS3 client over TCP: protocol basics, conditional
//! requests, each fault kind, counters.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use futures::TryStreamExt;
use object_store::path::Path;
use object_store::{
    Error, GetOptions, ObjectStore, ObjectStoreExt, PutMode, PutOptions, PutPayload, UpdateVersion,
};
use s3_testserver::{CLIENT_MAX_RETRIES, FaultKind, FaultRule, Gate, TestServer, critical_path};

fn data(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| i.to_le_bytes()[0].wrapping_mul(31).wrapping_add(seed))
        .collect()
}

async fn put(store: &Arc<dyn ObjectStore>, key: &str, bytes: &[u8]) -> String {
    store
        .put(&Path::from(key), PutPayload::from(bytes.to_vec()))
        .await
        .unwrap()
        .e_tag
        .expect("PUT returns an ETag")
}

async fn get(store: &Arc<dyn ObjectStore>, key: &str) -> object_store::Result<Vec<u8>> {
    Ok(store.get(&Path::from(key)).await?.bytes().await?.to_vec())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn put_get_range_head_list_delete() {
    let server = TestServer::start().unwrap();
    let store = server.store();
    let body = data(100_000, 1);
    let etag = put(&store, "dir/a.bin", &body).await;
    put(&store, "dir/sub/b.bin", b"bb").await;
    put(&store, "other.bin", b"c").await;

    assert_eq!(get(&store, "dir/a.bin").await.unwrap(), body);
    let range = store
        .get_range(&Path::from("dir/a.bin"), 1000..5000)
        .await
        .unwrap();
    assert_eq!(range.as_ref(), &body[1000..5000]);
    let ranges = store
        .get_ranges(&Path::from("dir/a.bin"), &[0..10, 99_990..100_000])
        .await
        .unwrap();
    assert_eq!(ranges[0].as_ref(), &body[..10]);
    assert_eq!(ranges[1].as_ref(), &body[99_990..]);

    let meta = store.head(&Path::from("dir/a.bin")).await.unwrap();
    assert_eq!(meta.size, 100_000);
    assert_eq!(meta.e_tag.as_deref(), Some(etag.as_str()));

    let mut listed: Vec<String> = store
        .list(Some(&Path::from("dir")))
        .map_ok(|m| m.location.to_string())
        .try_collect()
        .await
        .unwrap();
    listed.sort();
    assert_eq!(listed, ["dir/a.bin", "dir/sub/b.bin"]);
    let delim = store
        .list_with_delimiter(Some(&Path::from("dir")))
        .await
        .unwrap();
    assert_eq!(delim.objects.len(), 1);
    assert_eq!(delim.common_prefixes, [Path::from("dir/sub")]);

    store.delete(&Path::from("dir/a.bin")).await.unwrap();
    assert!(matches!(
        store.head(&Path::from("dir/a.bin")).await,
        Err(Error::NotFound { .. })
    ));
    assert!(matches!(
        get(&store, "missing").await,
        Err(Error::NotFound { .. })
    ));
    // The object is a plain file in the backing directory.
    assert_eq!(
        std::fs::read(server.backing_dir().join("other.bin")).unwrap(),
        b"c"
    );

    let stats = server.stats();
    assert_eq!(stats.method("PUT"), 3);
    assert!(stats.method("GET") >= 5, "{stats:?}");
    assert!(stats.bytes_received >= 100_003);
    assert!(stats.bytes_sent >= 100_000 + 4000 + 20);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn etags_change_with_content_and_are_stable() {
    let server = TestServer::start().unwrap();
    let store = server.store();
    let e1 = put(&store, "k", b"one").await;
    let e1_head = store.head(&Path::from("k")).await.unwrap().e_tag.unwrap();
    assert_eq!(e1, e1_head);
    let e2 = put(&store, "k", b"two").await;
    assert_ne!(e1, e2);
    let e2_get = store
        .get(&Path::from("k"))
        .await
        .unwrap()
        .meta
        .e_tag
        .unwrap();
    assert_eq!(e2, e2_get);
    // Same bytes, same ETag (the MD5 of the content, as on S3).
    let e3 = put(&store, "k", b"one").await;
    assert_eq!(e1, e3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn multipart_upload_and_abort() {
    let server = TestServer::start().unwrap();
    let store = server.store();
    let part1 = data(5 * 1024 * 1024, 2);
    let part2 = data(1234, 3);
    let mut up = store.put_multipart(&Path::from("mp/obj")).await.unwrap();
    up.put_part(PutPayload::from(part1.clone())).await.unwrap();
    up.put_part(PutPayload::from(part2.clone())).await.unwrap();
    let res = up.complete().await.unwrap();
    let etag = res.e_tag.unwrap();
    assert!(etag.contains("-2"), "multipart ETag {etag}");
    let mut all = part1.clone();
    all.extend_from_slice(&part2);
    assert_eq!(get(&store, "mp/obj").await.unwrap(), all);

    // Aborted mid-way: one part sent, then abort.
    let mut up = store
        .put_multipart(&Path::from("mp/aborted"))
        .await
        .unwrap();
    up.put_part(PutPayload::from(part1.clone())).await.unwrap();
    up.abort().await.unwrap();
    assert!(matches!(
        store.head(&Path::from("mp/aborted")).await,
        Err(Error::NotFound { .. })
    ));
    // Abandoned (never completed nor aborted): nothing under the key either.
    let mut up = store
        .put_multipart(&Path::from("mp/abandoned"))
        .await
        .unwrap();
    up.put_part(PutPayload::from(part2.clone())).await.unwrap();
    drop(up);
    assert!(matches!(
        store.head(&Path::from("mp/abandoned")).await,
        Err(Error::NotFound { .. })
    ));
    assert!(!server.backing_dir().join("mp/aborted").exists());
    assert!(!server.backing_dir().join("mp/abandoned").exists());
    let listed: Vec<_> = store
        .list(Some(&Path::from("mp")))
        .try_collect()
        .await
        .unwrap();
    assert_eq!(listed.len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_conditional_updates_exactly_one_wins() {
    let server = TestServer::start().unwrap();
    let store = server.store();
    for round in 0..40u8 {
        let key = Path::from("cas/obj");
        let base = put(&store, "cas/obj", &[round, 0]).await;
        let tasks: Vec<_> = (1..=2u8)
            .map(|w| {
                let store = Arc::clone(&store);
                let key = key.clone();
                let base = base.clone();
                tokio::spawn(async move {
                    let opts = PutOptions::from(PutMode::Update(UpdateVersion {
                        e_tag: Some(base),
                        version: None,
                    }));
                    store
                        .put_opts(&key, PutPayload::from(vec![round, w, 7]), opts)
                        .await
                        .map(|_| w)
                })
            })
            .collect();
        let mut winners = Vec::new();
        for t in tasks {
            match t.await.unwrap() {
                Ok(w) => winners.push(w),
                Err(Error::Precondition { .. }) => {}
                Err(e) => panic!("round {round}: unexpected error {e}"),
            }
        }
        assert_eq!(winners.len(), 1, "round {round}: winners {winners:?}");
        // The stored object is the winner's.
        assert_eq!(
            get(&store, "cas/obj").await.unwrap(),
            [round, winners[0], 7]
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conditional_create_and_stale_update() {
    let server = TestServer::start().unwrap();
    let store = server.store();
    let key = Path::from("c/obj");
    let create = || PutOptions::from(PutMode::Create);
    store
        .put_opts(&key, PutPayload::from_static(b"first"), create())
        .await
        .unwrap();
    let err = store
        .put_opts(&key, PutPayload::from_static(b"second"), create())
        .await
        .unwrap_err();
    assert!(matches!(err, Error::AlreadyExists { .. }), "{err}");
    assert_eq!(get(&store, "c/obj").await.unwrap(), b"first");

    // Update on a stale ETag, and on a missing object.
    let stale = store.head(&key).await.unwrap().e_tag.unwrap();
    put(&store, "c/obj", b"third").await;
    let update = |e: &str| {
        PutOptions::from(PutMode::Update(UpdateVersion {
            e_tag: Some(e.to_owned()),
            version: None,
        }))
    };
    let err = store
        .put_opts(&key, PutPayload::from_static(b"lost"), update(&stale))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Precondition { .. }), "{err}");
    let err = store
        .put_opts(
            &Path::from("c/none"),
            PutPayload::from_static(b"x"),
            update(&stale),
        )
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Precondition { .. }), "{err}");
    assert_eq!(get(&store, "c/obj").await.unwrap(), b"third");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conditional_reads() {
    let server = TestServer::start().unwrap();
    let store = server.store();
    let key = Path::from("r/obj");
    let old = put(&store, "r/obj", &data(10_000, 4)).await;

    // If-Match with the current ETag: data; If-None-Match with it: 304 NotModified.
    let ok = store
        .get_opts(
            &key,
            GetOptions::default()
                .with_if_match(Some(old.clone()))
                .with_range(Some(100..200u64)),
        )
        .await
        .unwrap();
    assert_eq!(ok.meta.e_tag.as_deref(), Some(old.as_str()));
    assert_eq!(
        ok.bytes().await.unwrap().as_ref(),
        &data(10_000, 4)[100..200]
    );
    let err = store
        .get_opts(
            &key,
            GetOptions::default().with_if_none_match(Some(old.clone())),
        )
        .await
        .unwrap_err();
    assert!(matches!(err, Error::NotModified { .. }), "{err}");

    // Replaced: If-Match with the old ETag fails with 412, for GET (also with a range the new
    // object is too short for) and HEAD.
    let new = put(&store, "r/obj", b"short").await;
    assert_ne!(old, new);
    for (head, range) in [(false, None), (false, Some(100..200u64)), (true, None)] {
        let err = store
            .get_opts(
                &key,
                GetOptions::default()
                    .with_if_match(Some(old.clone()))
                    .with_range(range.clone())
                    .with_head(head),
            )
            .await
            .unwrap_err();
        assert!(
            matches!(err, Error::Precondition { .. }),
            "head={head} range={range:?}: {err}"
        );
    }
    // If-None-Match with the old ETag: the new data.
    let got = store
        .get_opts(&key, GetOptions::default().with_if_none_match(Some(old)))
        .await
        .unwrap();
    assert_eq!(got.bytes().await.unwrap().as_ref(), b"short");

    // Dates: unmodified since an hour from now holds, modified since then does not.
    let future =
        chrono::DateTime::<chrono::Utc>::from(SystemTime::now() + Duration::from_secs(3600));
    let got = store
        .get_opts(
            &key,
            GetOptions::default().with_if_unmodified_since(Some(future)),
        )
        .await
        .unwrap();
    assert_eq!(got.bytes().await.unwrap().as_ref(), b"short");
    let err = store
        .get_opts(
            &key,
            GetOptions::default().with_if_modified_since(Some(future)),
        )
        .await
        .unwrap_err();
    assert!(matches!(err, Error::NotModified { .. }), "{err}");
    let past = chrono::DateTime::<chrono::Utc>::from(SystemTime::now() - Duration::from_secs(3600));
    let err = store
        .get_opts(
            &key,
            GetOptions::default().with_if_unmodified_since(Some(past)),
        )
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Precondition { .. }), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_faults_are_retried_or_surface() {
    let server = TestServer::start().unwrap();
    let store = server.store();
    let body = data(4096, 5);
    put(&store, "f/obj", &body).await;
    server.reset_stats();

    // Two 503s, then success: the client retried.
    server.faults().fail_next(2, 503);
    assert_eq!(get(&store, "f/obj").await.unwrap(), body);
    let stats = server.stats();
    assert_eq!(stats.method("GET"), 3, "{stats:?}");
    assert_eq!(stats.faults, 2);
    assert_eq!(stats.by_status.get(&503), Some(&2));

    // HEAD too (its error response has no body).
    server.faults().fail_next(1, 503);
    assert_eq!(store.head(&Path::from("f/obj")).await.unwrap().size, 4096);

    // More 500s than the client retries: an error, after 1 + CLIENT_MAX_RETRIES requests.
    server.reset_stats();
    let n = u32::try_from(CLIENT_MAX_RETRIES).unwrap() + 1;
    server.faults().fail_next(n, 500);
    let err = get(&store, "f/obj").await.unwrap_err();
    assert!(err.to_string().contains("500"), "{err}");
    assert_eq!(server.stats().method("GET"), u64::from(n));
    assert_eq!(server.faults().pending(), 0);

    // A failed PUT stores nothing; a filter on method/key leaves other requests alone.
    server.faults().inject(
        FaultRule::new(FaultKind::Status(500), 100)
            .method("put")
            .key_contains("never"),
    );
    let err = store
        .put(&Path::from("f/never"), PutPayload::from_static(b"x"))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("500"), "{err}");
    assert!(matches!(
        store.head(&Path::from("f/never")).await,
        Err(Error::NotFound { .. })
    ));
    assert_eq!(get(&store, "f/obj").await.unwrap(), body);
    server.faults().clear();
    assert_eq!(server.faults().pending(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connection_reset_is_retried_or_surfaces() {
    let server = TestServer::start().unwrap();
    let store = server.store();
    let body = data(50_000, 6);
    put(&store, "f/obj", &body).await;
    server.reset_stats();

    server.faults().reset_next(1);
    match get(&store, "f/obj").await {
        Ok(got) => assert_eq!(got, body),
        Err(e) => panic!("one reset should be retried: {e}"),
    }
    let log = server.log();
    assert_eq!(log.len(), 2, "{log:?}");
    assert_eq!(log[0].status, 0);
    assert_eq!(log[0].fault.as_deref(), Some("reset"));

    // Resets beyond the retries: an error, never data.
    server
        .faults()
        .reset_next(u32::try_from(CLIENT_MAX_RETRIES).unwrap() + 1);
    assert!(get(&store, "f/obj").await.is_err());
    server.faults().clear();

    // Reset PUTs store nothing.
    server
        .faults()
        .inject(FaultRule::new(FaultKind::Reset, 100).method("PUT"));
    let res = store
        .put(&Path::from("f/reset-put"), PutPayload::from(body.clone()))
        .await;
    assert!(res.is_err());
    server.faults().clear();
    assert!(matches!(
        store.head(&Path::from("f/reset-put")).await,
        Err(Error::NotFound { .. })
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn truncated_body_never_returns_wrong_bytes() {
    let server = TestServer::start().unwrap();
    let store = server.store();
    let body = data(300_000, 7);
    put(&store, "f/obj", &body).await;
    server.reset_stats();

    for n in [1, 2, 10] {
        server.faults().truncate_next(n);
        match get(&store, "f/obj").await {
            Ok(got) => assert_eq!(got, body, "truncated x{n}: wrong bytes"),
            Err(e) => assert!(n > 1, "a single truncation should be recovered: {e}"),
        }
        let ranged = store.get_range(&Path::from("f/obj"), 1000..201_000).await;
        if let Ok(got) = ranged {
            assert_eq!(got.as_ref(), &body[1000..201_000]);
        }
        server.faults().clear();
    }
    let log = server.log();
    let truncated: Vec<_> = log
        .iter()
        .filter(|r| r.fault.as_deref() == Some("truncated body"))
        .collect();
    assert!(!truncated.is_empty());
    for r in truncated {
        assert!(r.bytes_sent < 300_000, "{r:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn latency_and_slow_body_add_delay_and_round_trips_are_counted() {
    let server = TestServer::start().unwrap();
    let store = server.store();
    let body = data(8192, 8);
    put(&store, "f/obj", &body).await;
    server.reset_stats();

    let latency = Duration::from_millis(100);
    server.faults().set_latency(latency);
    let t = Instant::now();
    for _ in 0..3 {
        store.head(&Path::from("f/obj")).await.unwrap();
    }
    assert!(t.elapsed() >= latency * 3);
    // Three dependent requests, then three concurrent ones: 4 round trips. The three wait for
    // each other at a gate, so they overlap however the client's threads are scheduled.
    server.faults().inject(
        FaultRule::new(FaultKind::Gate(Gate::new(3)), 3)
            .method("GET")
            .key_contains("f/obj"),
    );
    let key = Path::from("f/obj");
    let reads = (0..3).map(|_| store.get_range(&key, 0..100));
    for r in futures::future::join_all(reads).await {
        assert_eq!(r.unwrap().as_ref(), &body[..100]);
    }
    let log = server.log();
    assert_eq!(log.len(), 6);
    assert!(log.iter().all(|r| r.end.unwrap() - r.start >= latency));
    assert_eq!(critical_path(&log), 4);
    server.faults().set_latency(Duration::ZERO);

    // Without latency, sequential requests still count one round trip each: a record ends when
    // its last byte is handed to the connection, before the client can send the next request.
    server.reset_stats();
    for _ in 0..20 {
        assert_eq!(get(&store, "f/obj").await.unwrap(), body);
        store.head(&Path::from("f/obj")).await.unwrap();
    }
    assert_eq!(critical_path(&server.log()), 40);

    // A delay rule holds only the requests it matches.
    server.reset_stats();
    server.faults().inject(
        FaultRule::new(FaultKind::Delay(Duration::from_millis(150)), 1).key_contains("f/obj"),
    );
    let t = Instant::now();
    store.head(&Path::from("f/obj")).await.unwrap();
    assert!(t.elapsed() >= Duration::from_millis(150));
    let log = server.log();
    assert_eq!(log[0].fault.as_deref(), Some("delay 150ms"));
    assert!(log[0].end.unwrap() - log[0].start >= Duration::from_millis(150));

    server
        .faults()
        .slow_body_next(1, 1024, Duration::from_millis(5));
    let t = Instant::now();
    assert_eq!(get(&store, "f/obj").await.unwrap(), body);
    assert!(t.elapsed() >= Duration::from_millis(40));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_during_replacement_are_old_new_or_error() {
    let server = TestServer::start().unwrap();
    let store = server.store();
    let old: Vec<u8> = vec![1; 200_000];
    let new: Vec<u8> = vec![2; 200_000];
    let old_tag = put(&store, "x/obj", &old).await;
    let writer = {
        let store = Arc::clone(&store);
        let (old, new) = (old.clone(), new.clone());
        tokio::spawn(async move {
            for i in 0..20 {
                let b = if i % 2 == 0 { &new } else { &old };
                put(&store, "x/obj", b).await;
            }
        })
    };
    for _ in 0..40 {
        let res = store
            .get_opts(
                &Path::from("x/obj"),
                GetOptions::default()
                    .with_if_match(Some(old_tag.clone()))
                    .with_range(Some(50_000..150_000u64)),
            )
            .await;
        match res {
            Ok(r) => {
                assert_eq!(r.meta.e_tag.as_deref(), Some(old_tag.as_str()));
                let b = r.bytes().await.unwrap();
                assert!(
                    b.iter().all(|&x| x == 1),
                    "mixed or new bytes under the old ETag"
                );
            }
            Err(Error::Precondition { .. }) => {}
            Err(e) => panic!("{e}"),
        }
        // Unconditional reads: one version, never a mix.
        let b = get(&store, "x/obj").await.unwrap();
        assert!(b.iter().all(|&x| x == b[0]));
    }
    writer.await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn checksummed_put_is_verified_and_stored() {
    let server = TestServer::start().unwrap();
    let store = server
        .s3_builder()
        .with_checksum_algorithm(object_store::aws::Checksum::SHA256)
        .build()
        .unwrap();
    let body = data(70_000, 9);
    store
        .put(&Path::from("ck/obj"), PutPayload::from(body.clone()))
        .await
        .unwrap();
    let got = store.get(&Path::from("ck/obj")).await.unwrap();
    assert_eq!(got.bytes().await.unwrap().as_ref(), body.as_slice());
}

#[test]
fn env_and_helpers_from_sync_code() {
    let server = TestServer::start().unwrap();
    let src = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(src.path().join("z/sub")).unwrap();
    std::fs::write(src.path().join("z/.zarray"), b"{}").unwrap();
    std::fs::write(src.path().join("z/sub/0.0"), data(3000, 10)).unwrap();
    assert_eq!(server.upload_dir(src.path(), "up/load").unwrap(), 2);
    assert!(server.log().is_empty(), "helper requests are not logged");
    assert!(server.backing_dir().join("up/load/z/sub/0.0").is_file());

    // A client configured only from the environment variables, as parse_url_opts takes them.
    let url = url::Url::parse(&server.url("up/load/z/sub/0.0")).unwrap();
    let opts: Vec<(String, String)> = server
        .env()
        .into_iter()
        .map(|(k, v)| (k.to_ascii_lowercase(), v))
        .collect();
    let (store, path) = object_store::parse_url_opts(&url, opts).unwrap();
    assert_eq!(path.as_ref(), "up/load/z/sub/0.0");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let got = rt
        .block_on(async { store.get(&path).await.unwrap().bytes().await })
        .unwrap();
    assert_eq!(got.as_ref(), data(3000, 10).as_slice());
    assert_eq!(server.stats().method("GET"), 1);

    let dst = tempfile::tempdir().unwrap();
    assert_eq!(server.download_prefix("up/load", dst.path()).unwrap(), 2);
    assert_eq!(
        std::fs::read(dst.path().join("z/sub/0.0")).unwrap(),
        data(3000, 10)
    );
    assert_eq!(std::fs::read(dst.path().join("z/.zarray")).unwrap(), b"{}");
    assert_eq!(server.url(""), "s3://scifmt-test/");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replace_between_reads_and_rules_after_n() {
    let server = TestServer::start().unwrap();
    let store = server.store();
    let key = Path::from("rep/obj");
    let old_tag = put(&store, "rep/obj", b"old contents").await;
    // Replace the object just before its second GET.
    server.faults().inject(
        FaultRule::new(
            FaultKind::Replace(bytes::Bytes::from_static(b"new contents!")),
            1,
        )
        .method("GET")
        .key_contains("rep/")
        .after(1),
    );
    let first = store
        .get_opts(&key, GetOptions::default().with_range(Some(0..3u64)))
        .await
        .unwrap();
    assert_eq!(first.meta.e_tag.as_deref(), Some(old_tag.as_str()));
    assert_eq!(first.bytes().await.unwrap().as_ref(), b"old");
    let err = store
        .get_opts(
            &key,
            GetOptions::default()
                .with_if_match(Some(old_tag.clone()))
                .with_range(Some(4..12u64)),
        )
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Precondition { .. }), "{err}");
    let meta = store.head(&key).await.unwrap();
    assert_ne!(meta.e_tag.as_deref(), Some(old_tag.as_str()));
    assert_eq!(get(&store, "rep/obj").await.unwrap(), b"new contents!");
    assert_eq!(server.faults().pending(), 0);

    // `after(2)`: the first two PUTs go through, the following ones fail.
    server.faults().inject(
        FaultRule::new(FaultKind::Status(500), 10)
            .method("PUT")
            .after(2),
    );
    let store_no_retry = server
        .s3_builder()
        .with_retry(object_store::RetryConfig {
            max_retries: 0,
            ..Default::default()
        })
        .build()
        .unwrap();
    let mut results = Vec::new();
    for i in 0..4 {
        let key = Path::from(format!("after/{i}"));
        results.push(
            store_no_retry
                .put(&key, PutPayload::from_static(b"x"))
                .await
                .is_ok(),
        );
    }
    assert_eq!(results, [true, true, false, false]);
    server.faults().clear();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn uploads_cut_mid_way_leave_nothing() {
    let server = TestServer::start().unwrap();
    let store = server.store();
    let body = data(200_000, 11);
    put(&store, "cut/existing", b"previous").await;
    server
        .faults()
        .inject(FaultRule::new(FaultKind::CutUpload, 100).method("PUT"));
    for key in ["cut/new", "cut/existing"] {
        let res = store
            .put(&Path::from(key), PutPayload::from(body.clone()))
            .await;
        assert!(res.is_err(), "{key}");
    }
    // Multipart: a part cut short fails; the upload is then aborted.
    let mut up = store.put_multipart(&Path::from("cut/mp")).await.unwrap();
    assert!(up.put_part(PutPayload::from(body.clone())).await.is_err());
    up.abort().await.unwrap();
    server.faults().clear();

    let cut: Vec<_> = server
        .log()
        .into_iter()
        .filter(|r| r.fault.as_deref() == Some("cut upload"))
        .collect();
    assert!(cut.len() >= 3);
    assert!(cut.iter().all(|r| r.bytes_received <= 100_000), "{cut:?}");
    assert!(matches!(
        store.head(&Path::from("cut/new")).await,
        Err(Error::NotFound { .. })
    ));
    assert!(matches!(
        store.head(&Path::from("cut/mp")).await,
        Err(Error::NotFound { .. })
    ));
    assert_eq!(get(&store, "cut/existing").await.unwrap(), b"previous");
    // No temporary or part files left behind in the store's directory.
    let root = server.backing_dir().parent().unwrap().to_path_buf();
    let leftovers: Vec<_> = std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".tmp.") || n.contains(".part-"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    assert_eq!(
        std::fs::read_dir(server.backing_dir().join("cut"))
            .unwrap()
            .count(),
        1
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn suffix_ranges_and_directory_keys_behave_as_on_s3() {
    let server = TestServer::start().unwrap();
    let store = server.store();
    let body = data(1000, 12);
    put(&store, "s/small", &body).await;
    put(&store, "s/dir/inner", b"inner").await;
    server.reset_stats();

    // A suffix longer than the object selects all of it (RFC 9110 section 14.1.2).
    let got = store
        .get_opts(
            &Path::from("s/small"),
            GetOptions::default().with_range(Some(object_store::GetRange::Suffix(65_536))),
        )
        .await
        .unwrap();
    assert_eq!(got.range, 0..1000);
    assert_eq!(got.bytes().await.unwrap().as_ref(), body.as_slice());
    let got = store
        .get_opts(
            &Path::from("s/small"),
            GetOptions::default().with_range(Some(object_store::GetRange::Suffix(10))),
        )
        .await
        .unwrap();
    assert_eq!(got.bytes().await.unwrap().as_ref(), &body[990..]);

    // A key that is a "directory" of other keys, or below an object: not found, at once (one
    // request each: no retry, no listing behind it).
    server.reset_stats();
    for key in ["s/dir", "s/small/below", "s/dir/"] {
        assert!(
            matches!(get(&store, key).await, Err(Error::NotFound { .. })),
            "GET {key}"
        );
        assert!(
            matches!(
                store.head(&Path::from(key)).await,
                Err(Error::NotFound { .. })
            ),
            "HEAD {key}"
        );
    }
    assert_eq!(server.log().len(), 6, "{:#?}", server.log());
    let stats = server.stats();
    assert!(stats.by_status.keys().all(|s| *s < 500), "{stats:?}");
}

/// `upload_dir` of a file over the 64 MiB multipart threshold (slow in debug builds:
/// `cargo test -p scifmt-s3-testserver -- --ignored`).
#[test]
#[ignore = "moves 130 MiB; run with --ignored"]
fn upload_dir_large_file_as_multipart() {
    use std::io::{Seek, SeekFrom, Write};
    let server = TestServer::start().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let big = dir.path().join("big.bin");
    let mut f = std::fs::File::create(&big).unwrap();
    f.set_len(65 << 20).unwrap();
    for off in [0u64, 16 << 20, (65 << 20) - 5] {
        f.seek(SeekFrom::Start(off)).unwrap();
        f.write_all(b"mark!").unwrap();
    }
    drop(f);
    assert_eq!(server.upload_dir(dir.path(), "big").unwrap(), 1);
    let down = tempfile::tempdir().unwrap();
    assert_eq!(server.download_prefix("big", down.path()).unwrap(), 1);
    let (a, b) = (
        std::fs::read(big).unwrap(),
        std::fs::read(down.path().join("big.bin")).unwrap(),
    );
    assert!(a == b);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let meta = rt
        .block_on(server.store().head(&Path::from("big/big.bin")))
        .unwrap();
    assert!(meta.e_tag.unwrap().ends_with("-5\""), "5 parts of 16 MiB");
}
