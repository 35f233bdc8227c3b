//! Remote reads against object_store's in-memory and local-file stores (the S3 tests are in
//! `remote.rs`; both compare with local reads through `common::assert_same`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::sync::Arc;

use blosc2_frame::blosc_chunk::CParams;
use blosc2_frame::object_store::memory::InMemory;
use blosc2_frame::object_store::path::Path;
use blosc2_frame::object_store::{self, ObjectStore, ObjectStoreExt, PutPayload};
use blosc2_frame::{
    B2ndArray, BlockingRemoteB2nd, BlockingRemoteFrame, Error, Frame, FrameParams, FrameWriter,
    Limits, RemoteB2nd, RemoteFrame, RemoteOptions, WriteMode, b2nd_frame_from_slice,
};
use common::{CONTIGUOUS, SPARSE, assert_same, testdata};

fn put(store: &Arc<InMemory>, key: &str, bytes: Vec<u8>) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(store.put(&Path::from(key), PutPayload::from(bytes)))
        .unwrap();
}

fn upload_sparse(store: &Arc<InMemory>, dir: &str) {
    for e in std::fs::read_dir(testdata().join(SPARSE)).unwrap() {
        let e = e.unwrap();
        let name = e.file_name().into_string().unwrap();
        put(
            store,
            &format!("{dir}/{name}"),
            std::fs::read(e.path()).unwrap(),
        );
    }
}

#[test]
fn every_fixture_reads_identically_from_memory() {
    let store = Arc::new(InMemory::new());
    for name in CONTIGUOUS {
        let bytes = std::fs::read(testdata().join(name)).unwrap();
        put(&store, name, bytes.clone());
        let local = Frame::from_slice(&bytes).unwrap();
        // Small speculative ranges force the second round trip; large ones need one.
        for (head, tail) in [(64 << 10, 64 << 10), (87, 23), (100, 200)] {
            let o = RemoteOptions::default()
                .map_format(|f| f.with_head_bytes(head))
                .map_format(|f| f.with_tail_bytes(tail));
            let remote = BlockingRemoteFrame::open(store.clone(), Path::from(*name), o).unwrap();
            assert!(!remote.inner().is_sparse());
            assert_same(&local, &remote, name);
        }
    }
}

#[test]
fn sparse_frame_reads_identically_by_prefix_and_index_key() {
    let store = Arc::new(InMemory::new());
    upload_sparse(&store, "sp/sparse_lz4.b2frame");
    let local = Frame::open(testdata().join(SPARSE)).unwrap();
    for o in [
        RemoteOptions::default(),
        RemoteOptions::default()
            .map_format(|f| f.with_head_bytes(90))
            .map_format(|f| f.with_tail_bytes(30)),
    ] {
        let by_dir = BlockingRemoteFrame::open(
            store.clone(),
            Path::from("sp/sparse_lz4.b2frame"),
            o.clone(),
        )
        .unwrap();
        assert!(by_dir.inner().is_sparse());
        assert_same(&local, &by_dir, "sparse by dir");
        let by_index = BlockingRemoteFrame::open(
            store.clone(),
            Path::from("sp/sparse_lz4.b2frame/chunks.b2frame"),
            o.clone(),
        )
        .unwrap();
        assert_same(&local, &by_index, "sparse by index");
        let explicit =
            BlockingRemoteFrame::open_sparse(store.clone(), Path::from("sp/sparse_lz4.b2frame"), o)
                .unwrap();
        assert_same(&local, &explicit, "sparse explicit");
    }
}

#[test]
fn b2nd_regions_match_local() {
    let store = Arc::new(InMemory::new());
    for name in [
        "frames/b2nd_f4_20x30.b2nd",
        "frames/b2nd_u2_7x9x11.b2nd",
        "frames/b2nd_zeros_f8_50x40.b2nd",
    ] {
        let bytes = std::fs::read(testdata().join(name)).unwrap();
        put(&store, name, bytes.clone());
        let local = B2ndArray::from_slice(&bytes).unwrap();
        let remote =
            BlockingRemoteB2nd::open(store.clone(), Path::from(name), RemoteOptions::default())
                .unwrap();
        assert_eq!(remote.meta(), local.meta());
        assert_eq!(remote.read_all().unwrap(), local.read_all().unwrap());
        let shape = local.shape().to_vec();
        let mid: Vec<u64> = shape.iter().map(|&s| s / 2).collect();
        let one: Vec<u64> = shape.iter().map(|&s| s.min(1)).collect();
        let third: Vec<u64> = shape.iter().map(|&s| s / 3).collect();
        for (a, b) in [(&one, &mid), (&third, &shape), (&mid, &mid)] {
            assert_eq!(
                remote.read_region(a, b).unwrap(),
                local.read_region(a, b).unwrap(),
                "{name} {a:?}..{b:?}"
            );
        }
    }
    let bytes = std::fs::read(testdata().join("frames/b2nd_u2_7x9x11.b2nd")).unwrap();
    let local = B2ndArray::from_slice(&bytes).unwrap();
    let remote = BlockingRemoteB2nd::open(
        store.clone(),
        Path::from("frames/b2nd_u2_7x9x11.b2nd"),
        RemoteOptions::default(),
    )
    .unwrap();
    assert_eq!(
        remote
            .read_region_as::<u16>(&[1, 2, 3], &[6, 8, 10])
            .unwrap(),
        local
            .read_region_as::<u16>(&[1, 2, 3], &[6, 8, 10])
            .unwrap()
    );
    assert!(matches!(
        remote.read_all_as::<f32>(),
        Err(Error::DtypeMismatch { .. })
    ));
    assert!(matches!(
        remote.read_region(&[0, 0], &[1, 1]),
        Err(Error::InvalidArgument(_))
    ));
}

#[test]
fn writes_read_back_locally_and_remotely() {
    let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let data: Vec<f64> = (0..3000).map(f64::from).collect();
    let w =
        b2nd_frame_from_slice(&data, &[30, 100], &[8, 32], &[4, 8], &CParams::default()).unwrap();
    let local = w.to_bytes().unwrap();
    // Single put, then multipart (tiny threshold and parts).
    for (key, o) in [
        ("w/single.b2nd", RemoteOptions::default()),
        (
            "w/multi.b2nd",
            RemoteOptions::default().with_multipart(1, 1000),
        ),
    ] {
        BlockingRemoteFrame::put(store.clone(), &Path::from(key), &w, &o).unwrap();
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let got = rt
            .block_on(async { store.get(&Path::from(key)).await.unwrap().bytes().await })
            .unwrap();
        assert_eq!(&got[..], &local[..], "{key}");
        let a = BlockingRemoteB2nd::open(store.clone(), Path::from(key), o).unwrap();
        assert_eq!(a.read_all_as::<f64>().unwrap(), data);
    }
    // Create-only refuses an existing key, single or multipart.
    for o in [
        RemoteOptions::default().with_write_mode(WriteMode::Conditional),
        RemoteOptions::default()
            .with_write_mode(WriteMode::Conditional)
            .with_multipart(1, 1000),
    ] {
        let e = BlockingRemoteFrame::put(store.clone(), &Path::from("w/single.b2nd"), &w, &o);
        assert!(matches!(e, Err(Error::Conflict { .. })), "{e:?}");
    }
    // Sparse: written, read back remotely and (after download) locally; rewriting replaces
    // the chunk files.
    BlockingRemoteFrame::put_sparse(
        store.clone(),
        &Path::from("w/sparse"),
        &w,
        &RemoteOptions::default(),
    )
    .unwrap();
    let r = BlockingRemoteFrame::open(
        store.clone(),
        Path::from("w/sparse"),
        RemoteOptions::default(),
    )
    .unwrap();
    assert!(r.inner().is_sparse());
    let local_frame = Frame::from_slice(&local).unwrap();
    assert_eq!(
        r.decompress_all().unwrap(),
        local_frame.decompress_all().unwrap()
    );
    BlockingRemoteFrame::put_sparse(
        store.clone(),
        &Path::from("w/sparse"),
        &w,
        &RemoteOptions::default(),
    )
    .unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let names: Vec<String> = rt.block_on(async {
        use futures::TryStreamExt;
        let metas: Vec<_> = store
            .list(Some(&Path::from("w/sparse")))
            .try_collect()
            .await
            .unwrap();
        let mut names = Vec::new();
        for m in metas {
            let b = store.get(&m.location).await.unwrap().bytes().await.unwrap();
            let name = m.location.filename().unwrap().to_string();
            std::fs::write(dir.path().join(&name), &b).unwrap();
            names.push(name);
        }
        names
    });
    // Old chunk files were deleted: one index plus one file per stored chunk.
    assert_eq!(names.len(), 1 + local_frame.nchunks(), "{names:?}");
    let f = Frame::open(dir.path()).unwrap();
    assert_eq!(
        f.decompress_all().unwrap(),
        local_frame.decompress_all().unwrap()
    );
    let e = BlockingRemoteFrame::put_sparse(
        store.clone(),
        &Path::from("w/sparse"),
        &w,
        &RemoteOptions::default().with_write_mode(WriteMode::Conditional),
    );
    assert!(matches!(e, Err(Error::Conflict { .. })), "{e:?}");
}

#[test]
fn replaced_object_is_an_error_never_mixed_data() {
    let store = Arc::new(InMemory::new());
    let mk = |v: u8| {
        let mut w = FrameWriter::new(FrameParams::new(CParams::default(), 4096)).unwrap();
        for _ in 0..4 {
            w.append_buffer(&[v; 4096]).unwrap();
        }
        w.to_bytes().unwrap()
    };
    put(&store, "r.b2frame", mk(1));
    let f = BlockingRemoteFrame::open(
        store.clone(),
        Path::from("r.b2frame"),
        RemoteOptions::default(),
    )
    .unwrap();
    assert_eq!(f.decompress_chunk(0).unwrap(), vec![1; 4096]);
    put(&store, "r.b2frame", mk(2));
    assert!(matches!(f.decompress_chunk(1), Err(Error::Changed { .. })));
    assert!(matches!(f.decompress_all(), Err(Error::Changed { .. })));
    assert_eq!(
        f.reopen().unwrap().decompress_all().unwrap(),
        vec![2; 4 * 4096]
    );
    let f = BlockingRemoteFrame::open(
        store.clone(),
        Path::from("r.b2frame"),
        RemoteOptions::default(),
    )
    .unwrap();
    assert_eq!(f.decompress_all().unwrap(), vec![2; 4 * 4096]);
}

#[test]
fn missing_and_hostile_objects_are_errors() {
    let store = Arc::new(InMemory::new());
    let e = BlockingRemoteFrame::open(store.clone(), Path::from("nope"), RemoteOptions::default());
    match e {
        Err(Error::Remote {
            url,
            source: object_store::Error::NotFound { .. },
        }) => {
            assert!(url.ends_with("/nope"), "{url}");
        }
        other => panic!("{other:?}"),
    }
    put(&store, "short", vec![0x9e; 40]);
    assert!(
        BlockingRemoteFrame::open(store.clone(), Path::from("short"), RemoteOptions::default())
            .is_err()
    );
    // A frame whose index claims more chunks than the limit allows.
    let bytes =
        std::fs::read(testdata().join("frames/zstd_delta_shuffle_many_chunks.b2frame")).unwrap();
    put(&store, "many", bytes.clone());
    let limits = Limits::default().with_max_nchunks(2);
    let e = BlockingRemoteFrame::open(
        store.clone(),
        Path::from("many"),
        RemoteOptions::default().map_format(|f| f.with_limits(limits)),
    );
    assert!(matches!(e, Err(Error::LimitExceeded { .. })), "{e:?}");
    // Metadata larger than the output limit is refused before it is fetched.
    let limits = Limits::default().with_max_output_bytes(100);
    let e = BlockingRemoteFrame::open(
        store.clone(),
        Path::from("many"),
        RemoteOptions::default()
            .map_format(|f| f.with_head_bytes(87))
            .map_format(|f| f.with_tail_bytes(23))
            .map_format(|f| f.with_limits(limits)),
    );
    assert!(matches!(e, Err(Error::LimitExceeded { .. })), "{e:?}");
    // Corrupt bytes after the header (a sample): whenever the remote read succeeds, the local
    // reader accepts the same bytes and returns the same data; never a panic.
    let mut remote_ok = 0;
    for pos in (87..bytes.len()).step_by(23) {
        let mut b = bytes.clone();
        b[pos] ^= 0x5a;
        let local = Frame::from_slice(&b).and_then(|f| f.decompress_all());
        put(&store, "bad", b);
        let remote =
            BlockingRemoteFrame::open(store.clone(), Path::from("bad"), RemoteOptions::default())
                .and_then(|f| f.decompress_all());
        if let Ok(r) = remote {
            assert_eq!(r, local.unwrap(), "byte {pos}");
            remote_ok += 1;
        }
    }
    assert!(remote_ok > 0);
}

#[test]
fn local_file_store_and_file_urls_work() {
    let dir = tempfile::tempdir().unwrap();
    let src = testdata().join("frames/lz4_shuffle_meta_vlmeta.b2frame");
    std::fs::copy(&src, dir.path().join("a.b2frame")).unwrap();
    let url = format!("file://{}/a.b2frame", dir.path().display());
    let f = BlockingRemoteFrame::open_url(&url, RemoteOptions::default()).unwrap();
    let local = Frame::open(&src).unwrap();
    assert_same(&local, &f, "file url");
    assert!(f.inner().url().starts_with("file://"));
    let e = BlockingRemoteFrame::open_url("nonsense", RemoteOptions::default());
    assert!(matches!(e, Err(Error::InvalidArgument(_))));
    let e = BlockingRemoteFrame::open_url(
        "s3x://user:secret@host/k?X-Amz-Signature=abc",
        RemoteOptions::default(),
    );
    let msg = e.unwrap_err().to_string();
    assert!(!msg.contains("secret") && !msg.contains("abc"), "{msg}");
}

#[test]
fn blocking_api_refuses_to_run_inside_a_runtime() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let e = rt.block_on(async {
        BlockingRemoteFrame::open(store, Path::from("x"), RemoteOptions::default())
    });
    assert!(matches!(e, Err(Error::InvalidArgument(_))));
}

#[test]
fn async_api_works_on_a_caller_runtime() {
    let store = Arc::new(InMemory::new());
    let bytes = std::fs::read(testdata().join("frames/b2nd_f4_20x30.b2nd")).unwrap();
    put(&store, "a.b2nd", bytes.clone());
    let local = B2ndArray::from_slice(&bytes).unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let got = rt.block_on(async {
        let a = RemoteB2nd::open(store, Path::from("a.b2nd"), RemoteOptions::default())
            .await
            .unwrap();
        a.read_region_as::<f32>(&[3, 5], &[17, 29]).await.unwrap()
    });
    assert_eq!(
        got,
        local.read_region_as::<f32>(&[3, 5], &[17, 29]).unwrap()
    );
}

/// The async API's futures can be spawned on multi-threaded runtimes (checked at compile time).
#[test]
fn futures_are_send() {
    fn assert_send<T: Send>(_: &T) {}
    fn check(f: &RemoteFrame, a: &RemoteB2nd, store: Arc<dyn ObjectStore>, w: &FrameWriter) {
        assert_send(&f.decompress_all());
        assert_send(&f.decompress_chunks(&[0]));
        assert_send(&f.get_slice(0, 1));
        assert_send(&f.chunk_sizes());
        assert_send(&f.reopen());
        assert_send(&a.read_region(&[0], &[1]));
        assert_send(&a.read_region_as::<f32>(&[0], &[1]));
        assert_send(&RemoteFrame::open(
            store.clone(),
            Path::from("x"),
            RemoteOptions::default(),
        ));
        assert_send(&RemoteB2nd::open(
            store.clone(),
            Path::from("x"),
            RemoteOptions::default(),
        ));
        let o = RemoteOptions::default();
        assert_send(&RemoteFrame::put(store.clone(), &Path::from("x"), w, &o));
        assert_send(&RemoteFrame::put_sparse(store, &Path::from("x"), w, &o));
    }
    let _ = check;
}

#[cfg(feature = "ndarray")]
#[test]
fn ndarray_regions_match_local() {
    let store = Arc::new(InMemory::new());
    let bytes = std::fs::read(testdata().join("frames/b2nd_u2_7x9x11.b2nd")).unwrap();
    put(&store, "a.b2nd", bytes.clone());
    let local = B2ndArray::from_slice(&bytes).unwrap();
    let remote =
        BlockingRemoteB2nd::open(store, Path::from("a.b2nd"), RemoteOptions::default()).unwrap();
    let (a, b) = ([1, 2, 3], [6, 8, 10]);
    let got = remote.read_region_ndarray::<u16>(&a, &b).unwrap();
    assert_eq!(got.shape(), [5, 6, 7]);
    assert_eq!(got, local.read_region_ndarray::<u16>(&a, &b).unwrap());
}
