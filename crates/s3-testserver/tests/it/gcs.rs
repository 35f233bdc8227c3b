//! The Cloud Storage dialect (`TestServer::start_gcs`) against object_store's
//! GoogleCloudStorage client over TCP: the operations it sends, generation numbers and
//! generation preconditions (the conditional writes Icechunk commits with).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use futures::TryStreamExt;
use object_store::gcp::{GcpCredential, GoogleCloudStorageBuilder};
use object_store::path::Path;
use object_store::{
    ClientOptions, Error, ObjectStore, ObjectStoreExt, PutMode, PutOptions, PutPayload,
    StaticCredentialProvider, UpdateVersion,
};
use s3_testserver::TestServer;

fn builder(server: &TestServer) -> GoogleCloudStorageBuilder {
    scifmt_io::install_tls_provider();
    GoogleCloudStorageBuilder::new()
        .with_bucket_name(server.bucket())
        .with_base_url(&server.endpoint())
        .with_client_options(ClientOptions::new().with_allow_http(true))
}

/// A client with the server's token (as a service account's would be).
fn gcs(server: &TestServer) -> Arc<dyn ObjectStore> {
    let token = StaticCredentialProvider::new(GcpCredential {
        bearer: server.gcs_token().to_owned(),
    });
    Arc::new(
        builder(server)
            .with_credentials(Arc::new(token))
            .build()
            .unwrap(),
    )
}

fn payload(b: &[u8]) -> PutPayload {
    PutPayload::from(b.to_vec())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn put_get_list_copy_delete_through_the_gcs_client() {
    let server = TestServer::start_gcs().unwrap();
    let store = gcs(&server);
    let put = store
        .put(&Path::from("d/a.bin"), payload(b"hello world"))
        .await
        .unwrap();
    let generation = put.version.expect("PUT answers with x-goog-generation");
    assert!(generation.parse::<i64>().unwrap() > 0, "{generation}");
    store
        .put(&Path::from("d/s/b.bin"), payload(b"b"))
        .await
        .unwrap();

    let got = store.get(&Path::from("d/a.bin")).await.unwrap();
    assert_eq!(got.meta.version.as_deref(), Some(generation.as_str()));
    assert_eq!(got.bytes().await.unwrap().as_ref(), b"hello world");
    let range = store
        .get_range(&Path::from("d/a.bin"), 6..11)
        .await
        .unwrap();
    assert_eq!(range.as_ref(), b"world");
    let head = store.head(&Path::from("d/a.bin")).await.unwrap();
    assert_eq!(head.size, 11);
    assert_eq!(head.version.as_deref(), Some(generation.as_str()));

    let mut all: Vec<String> = store
        .list(Some(&Path::from("d")))
        .map_ok(|m| m.location.to_string())
        .try_collect()
        .await
        .unwrap();
    all.sort();
    assert_eq!(all, ["d/a.bin", "d/s/b.bin"]);
    let level = store
        .list_with_delimiter(Some(&Path::from("d")))
        .await
        .unwrap();
    assert_eq!(level.objects.len(), 1);
    assert_eq!(level.common_prefixes, [Path::from("d/s")]);

    store
        .copy(&Path::from("d/a.bin"), &Path::from("e/a.bin"))
        .await
        .unwrap();
    let copied = store.get(&Path::from("e/a.bin")).await.unwrap();
    assert_eq!(copied.bytes().await.unwrap().as_ref(), b"hello world");
    let e = store
        .copy_if_not_exists(&Path::from("d/s/b.bin"), &Path::from("e/a.bin"))
        .await
        .unwrap_err();
    assert!(matches!(e, Error::AlreadyExists { .. }), "{e}");

    store.delete(&Path::from("e/a.bin")).await.unwrap();
    let e = store.head(&Path::from("e/a.bin")).await.unwrap_err();
    assert!(matches!(e, Error::NotFound { .. }), "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn generation_preconditions_guard_writes() {
    let server = TestServer::start_gcs().unwrap();
    let store = gcs(&server);
    let key = Path::from("ref.json");
    let create = PutOptions::from(PutMode::Create);
    let first = store
        .put_opts(&key, payload(b"v1"), create.clone())
        .await
        .unwrap();
    let e = store
        .put_opts(&key, payload(b"other"), create)
        .await
        .unwrap_err();
    assert!(matches!(e, Error::AlreadyExists { .. }), "{e}");

    let update = |from: &object_store::PutResult| {
        PutOptions::from(PutMode::Update(UpdateVersion {
            e_tag: from.e_tag.clone(),
            version: from.version.clone(),
        }))
    };
    let second = store
        .put_opts(&key, payload(b"v2"), update(&first))
        .await
        .unwrap();
    assert_ne!(second.version, first.version);
    // A writer that read v1 loses: its update names a generation that is no longer current.
    let e = store
        .put_opts(&key, payload(b"lost"), update(&first))
        .await
        .unwrap_err();
    assert!(matches!(e, Error::Precondition { .. }), "{e}");
    let now = store.get(&key).await.unwrap();
    assert_eq!(now.meta.version, second.version);
    assert_eq!(now.bytes().await.unwrap().as_ref(), b"v2");
    // A generation the server never gave.
    let never = PutOptions::from(PutMode::Update(UpdateVersion {
        e_tag: None,
        version: Some("1".into()),
    }));
    let e = store
        .put_opts(&key, payload(b"x"), never)
        .await
        .unwrap_err();
    assert!(matches!(e, Error::Precondition { .. }), "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_generation_updates_exactly_one_wins() {
    let server = TestServer::start_gcs().unwrap();
    let store = gcs(&server);
    let key = Path::from("counter");
    let base = store.put(&key, payload(b"0")).await.unwrap();
    let tasks: Vec<_> = (0..8u8)
        .map(|i| {
            let store = Arc::clone(&store);
            let key = key.clone();
            let mode = PutMode::Update(UpdateVersion {
                e_tag: base.e_tag.clone(),
                version: base.version.clone(),
            });
            tokio::spawn(async move {
                store
                    .put_opts(&key, payload(&[b'a' + i]), PutOptions::from(mode))
                    .await
            })
        })
        .collect();
    let mut won = 0;
    for t in tasks {
        match t.await.unwrap() {
            Ok(_) => won += 1,
            Err(Error::Precondition { .. }) => {}
            Err(e) => panic!("{e}"),
        }
    }
    assert_eq!(won, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn multipart_upload_through_the_gcs_client() {
    let server = TestServer::start_gcs().unwrap();
    let store = gcs(&server);
    let key = Path::from("big.bin");
    let part: Vec<u8> = (0..5 << 20).map(|i: u32| i.to_le_bytes()[1]).collect();
    let mut upload = store.put_multipart(&key).await.unwrap();
    upload.put_part(payload(&part)).await.unwrap();
    upload.put_part(payload(b"tail")).await.unwrap();
    upload.complete().await.unwrap();
    let got = store.get(&key).await.unwrap().bytes().await.unwrap();
    assert_eq!(got.len(), part.len() + 4);
    assert_eq!(&got[part.len()..], b"tail");
    assert_eq!(&got[..part.len()], &part[..]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_may_be_anonymous_writes_need_the_token() {
    let server = TestServer::start_gcs().unwrap();
    gcs(&server)
        .put(&Path::from("a"), payload(b"a"))
        .await
        .unwrap();
    let anonymous: Arc<dyn ObjectStore> =
        Arc::new(builder(&server).with_skip_signature(true).build().unwrap());
    let got = anonymous.get(&Path::from("a")).await.unwrap();
    assert_eq!(got.bytes().await.unwrap().as_ref(), b"a");
    let wrong = StaticCredentialProvider::new(GcpCredential {
        bearer: "wrong".to_owned(),
    });
    let wrong: Arc<dyn ObjectStore> = Arc::new(
        builder(&server)
            .with_credentials(Arc::new(wrong))
            .build()
            .unwrap(),
    );
    let e = wrong
        .put(&Path::from("b"), payload(b"b"))
        .await
        .unwrap_err();
    assert!(e.to_string().contains("401"), "{e}");
    let e = wrong.delete(&Path::from("a")).await.unwrap_err();
    assert!(e.to_string().contains("401"), "{e}");
}
