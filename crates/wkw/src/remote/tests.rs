//! Remote reads and writes against `object_store`'s in-memory store, compared with local
//! datasets holding the same data (the real-server tests live in the S3 test server crate).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::cast_possible_truncation
)]

use std::path::PathBuf;
use std::sync::Arc;

use object_store::ObjectStore;
use object_store::memory::InMemory;
use object_store::path::Path;

use crate::dataset::array::{Array, Order};
use crate::dataset::root::Dataset;
use crate::error::Error;
use crate::format::header::{BlockType, Header, VoxelType};
use crate::remote::{BlockingRemoteDataset, RemoteOptions};

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../testdata/wkw")
}

/// Uploads every file below `root` to `store` under `prefix` (blocking).
fn upload(
    rt: &tokio::runtime::Runtime,
    store: &Arc<dyn ObjectStore>,
    root: &std::path::Path,
    prefix: &str,
) {
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let p = entry.unwrap().path();
            if p.is_dir() {
                stack.push(p);
                continue;
            }
            let rel = p
                .strip_prefix(root)
                .unwrap()
                .to_str()
                .unwrap()
                .replace('\\', "/");
            let key = Path::from(format!("{prefix}/{rel}"));
            let bytes = std::fs::read(&p).unwrap();
            rt.block_on(object_store::ObjectStoreExt::put(
                store.as_ref(),
                &key,
                bytes.into(),
            ))
            .unwrap();
        }
    }
}

fn pattern(h: &Header, shape: [u32; 3], seed: u32, order: Order) -> Array {
    let mut a = Array::zeros(h.voxel_type(), h.num_channels(), shape, order).unwrap();
    for (i, b) in a.as_bytes_mut().iter_mut().enumerate() {
        let v = (i as u32)
            .wrapping_mul(2_654_435_761)
            .wrapping_add(seed.wrapping_mul(97));
        *b = (v >> 13) as u8 | 1;
    }
    a
}

#[test]
fn fixtures_read_remotely_like_locally() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let mut checked = 0;
    for entry in std::fs::read_dir(fixtures()).unwrap() {
        let dir = entry.unwrap().path();
        if !dir.join("header.wkw").is_file() {
            continue;
        }
        let name = dir.file_name().unwrap().to_str().unwrap().to_string();
        upload(&rt, &store, &dir, &name);
        let local = Dataset::open(&dir).unwrap();
        let remote = BlockingRemoteDataset::open(
            Arc::clone(&store),
            Path::from(name.as_str()),
            RemoteOptions::default(),
        )
        .unwrap();
        assert_eq!(remote.header(), local.header());
        let side = local.header().file_len_vx().min(48);
        let boxes = [
            ([0, 0, 0], [side, side, side]),
            ([1, 2, 3], [side + 5, 7, side / 2 + 3]),
            ([side - 3, side / 2, 1], [9, side, 4]),
            ([0, 0, 0], [2 * side, 2 * side, 2 * side]),
        ];
        for (offset, shape) in boxes {
            for order in [Order::Fortran, Order::C] {
                let want = local.read(offset, shape, order).unwrap();
                let got = remote.read(offset, shape, order).unwrap();
                assert_eq!(
                    got.as_bytes(),
                    want.as_bytes(),
                    "{name} {offset:?} {shape:?}"
                );
                // Second read: metadata from the cache.
                let again = remote.read(offset, shape, order).unwrap();
                assert_eq!(again.as_bytes(), want.as_bytes());
                checked += 1;
            }
        }
        let listed: Vec<[u32; 3]> = remote
            .list_files()
            .unwrap()
            .into_iter()
            .map(|f| f.0)
            .collect();
        let local_listed: Vec<[u32; 3]> = local
            .list_files()
            .unwrap()
            .into_iter()
            .map(|f| f.0)
            .collect();
        assert_eq!(listed, local_listed);
        assert!(remote.verify(&|_| {}).unwrap().is_ok());
    }
    assert!(checked >= 8 * 8, "{checked}");
}

#[test]
fn writes_match_local_writes_in_every_block_type_and_order() {
    for bt in [BlockType::Raw, BlockType::Lz4, BlockType::Lz4Hc] {
        let h = Header::new(VoxelType::U16, 2, 8, 4, bt).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let local = Dataset::create(dir.path().join("l"), h).unwrap();
        let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
        let remote = BlockingRemoteDataset::create(
            Arc::clone(&store),
            Path::from("a/b"),
            h,
            RemoteOptions::default(),
        )
        .unwrap();
        let writes = [
            ([3, 5, 7], [40, 20, 9], Order::Fortran),
            ([30, 0, 2], [8, 33, 40], Order::C),
            ([0, 0, 0], [32, 32, 32], Order::Fortran),
            ([31, 31, 31], [2, 2, 2], Order::C),
        ];
        for (i, (offset, shape, order)) in writes.into_iter().enumerate() {
            let a = pattern(&h, shape, i as u32, order);
            local.write(offset, &a.view()).unwrap();
            remote.write(offset, &a.view()).unwrap();
            for order in [Order::Fortran, Order::C] {
                let want = local.read([0, 0, 0], [70, 70, 50], order).unwrap();
                let got = remote.read([0, 0, 0], [70, 70, 50], order).unwrap();
                assert_eq!(got.as_bytes(), want.as_bytes(), "{bt:?} write {i}");
            }
        }
        // A second handle with a cold cache sees the same; and the dataset exists now.
        let other = BlockingRemoteDataset::open(
            Arc::clone(&store),
            Path::from("a/b"),
            RemoteOptions::default(),
        )
        .unwrap();
        let want = local.read([1, 1, 1], [64, 64, 64], Order::C).unwrap();
        assert_eq!(
            other
                .read([1, 1, 1], [64, 64, 64], Order::C)
                .unwrap()
                .as_bytes(),
            want.as_bytes()
        );
        assert!(matches!(
            BlockingRemoteDataset::create(store, Path::from("a/b"), h, RemoteOptions::default()),
            Err(Error::AlreadyExists { .. })
        ));
    }
}

#[test]
fn a_file_replaced_after_caching_is_read_in_its_new_version() {
    let h = Header::new(VoxelType::U8, 1, 8, 4, BlockType::Lz4).unwrap();
    let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let a = BlockingRemoteDataset::create(
        Arc::clone(&store),
        Path::from("d"),
        h,
        RemoteOptions::default(),
    )
    .unwrap();
    let b = BlockingRemoteDataset::open(
        Arc::clone(&store),
        Path::from("d"),
        RemoteOptions::default(),
    )
    .unwrap();
    a.write(
        [0, 0, 0],
        &pattern(&h, [32, 32, 32], 1, Order::Fortran).view(),
    )
    .unwrap();
    let first = b.read([0, 0, 0], [32, 32, 32], Order::Fortran).unwrap();
    assert_eq!(
        first.as_bytes(),
        pattern(&h, [32, 32, 32], 1, Order::Fortran).as_bytes()
    );
    // Replaced by another handle: different compressed block lengths, so a stale jump table
    // would decode garbage or fail.
    let mut zeros_and_more = pattern(&h, [32, 32, 32], 2, Order::Fortran);
    zeros_and_more.as_bytes_mut()[..16_000].fill(0);
    a.write([0, 0, 0], &zeros_and_more.view()).unwrap();
    let second = b.read([0, 0, 0], [32, 32, 32], Order::Fortran).unwrap();
    assert_eq!(second.as_bytes(), zeros_and_more.as_bytes());
}

#[test]
fn write_conflicts_are_typed_errors_without_retries() {
    // The conflict path: an RMW whose conditional put loses. Simulated by an object that
    // changes between download and upload is not possible in-process with InMemory, so check
    // the create race instead: `PutMode::Create` on an object made meanwhile.
    let h = Header::new(VoxelType::U8, 1, 8, 4, BlockType::Raw).unwrap();
    let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let ds = BlockingRemoteDataset::create(
        Arc::clone(&store),
        Path::from("d"),
        h,
        RemoteOptions::default(),
    )
    .unwrap();
    ds.write([0, 0, 0], &pattern(&h, [4, 4, 4], 3, Order::C).view())
        .unwrap();
    let got = ds.read([0, 0, 0], [4, 4, 4], Order::C).unwrap();
    assert_eq!(
        got.as_bytes(),
        pattern(&h, [4, 4, 4], 3, Order::C).as_bytes()
    );
    assert!(ds.url().starts_with("InMemory"), "{}", ds.url());
    assert_eq!(
        ds.as_async().file_url([1, 2, 3]),
        format!("{}/z3/y2/x1.wkw", ds.url())
    );
}

#[test]
fn open_url_memory_and_errors_name_the_url_without_credentials() {
    let err = BlockingRemoteDataset::open_url("memory:///nothing/here", RemoteOptions::default())
        .unwrap_err();
    assert!(matches!(err, Error::NotADataset { .. }), "{err}");
    let err = BlockingRemoteDataset::open_url(
        "s3://user:secret@bucket/x?X-Amz-Signature=abc",
        RemoteOptions::default(),
    )
    .unwrap_err();
    let msg = err.to_string();
    assert!(!msg.contains("secret") && !msg.contains("abc"), "{msg}");
}

#[test]
fn blocking_calls_inside_a_runtime_are_refused() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let r = rt.block_on(async {
        BlockingRemoteDataset::open(
            Arc::new(InMemory::new()),
            Path::from("x"),
            RemoteOptions::default(),
        )
    });
    assert!(matches!(r, Err(Error::InvalidArgument(_))));
}

#[test]
fn compress_remote_to_remote_keeps_the_voxels() {
    let h = Header::new(VoxelType::U32, 1, 8, 2, BlockType::Raw).unwrap();
    let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let src = BlockingRemoteDataset::create(
        Arc::clone(&store),
        Path::from("raw"),
        h,
        RemoteOptions::default(),
    )
    .unwrap();
    let data = pattern(&h, [40, 17, 33], 5, Order::Fortran);
    src.write([2, 3, 4], &data.view()).unwrap();
    let calls = std::sync::atomic::AtomicUsize::new(0);
    let dst = src
        .compress_to(
            Arc::clone(&store),
            Path::from("lz4"),
            BlockType::Lz4Hc,
            &|p| {
                calls.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                assert!(p.path.to_str().unwrap().contains("raw/z"));
            },
        )
        .unwrap();
    assert_eq!(calls.into_inner(), src.list_files().unwrap().len());
    assert_eq!(dst.header().block_type(), BlockType::Lz4Hc);
    let dst =
        BlockingRemoteDataset::open(store, Path::from("lz4"), RemoteOptions::default()).unwrap();
    let got = dst.read([2, 3, 4], [40, 17, 33], Order::Fortran).unwrap();
    assert_eq!(got.as_bytes(), data.as_bytes());
    assert!(dst.verify(&|_| {}).unwrap().is_ok());
}

#[test]
fn compress_to_refuses_the_source_and_prefixes_inside_or_around_it() {
    let h = Header::new(VoxelType::U8, 1, 8, 2, BlockType::Raw).unwrap();
    let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let src = BlockingRemoteDataset::create(
        Arc::clone(&store),
        Path::from("data/raw"),
        h,
        RemoteOptions::default(),
    )
    .unwrap();
    src.write([0; 3], &pattern(&h, [8, 8, 8], 1, Order::Fortran).view())
        .unwrap();
    let before = src.list_files().unwrap();
    for (prefix, want) in [
        ("data/raw", scifmt_io::Overlap::Same),
        ("data/raw/lz4", scifmt_io::Overlap::OutputInsideInput),
        ("data", scifmt_io::Overlap::InputInsideOutput),
        ("", scifmt_io::Overlap::InputInsideOutput),
    ] {
        match src.compress_to(
            Arc::clone(&store),
            Path::from(prefix),
            BlockType::Lz4,
            &|_| {},
        ) {
            Err(e @ Error::Overlap { .. }) => {
                let Error::Overlap { how, .. } = &e else {
                    unreachable!()
                };
                assert_eq!(*how, want, "{prefix}");
                assert!(e.to_string().contains("data/raw"), "{e}");
            }
            other => panic!("{prefix}: {other:?}"),
        }
    }
    assert_eq!(src.list_files().unwrap(), before);
    // By URL: the same prefix spelled differently.
    let mem =
        BlockingRemoteDataset::create_url("memory:///ds", h, RemoteOptions::default()).unwrap();
    assert!(matches!(
        mem.compress_to_url("memory:///./ds/x/..", BlockType::Lz4, &|_| {}),
        Err(Error::Overlap {
            how: scifmt_io::Overlap::Same,
            ..
        })
    ));
    // A sibling prefix, and another in-memory store at the same prefix, are apart.
    src.compress_to(
        Arc::clone(&store),
        Path::from("data/raw2"),
        BlockType::Lz4,
        &|_| {},
    )
    .unwrap();
    src.compress_to(
        Arc::new(InMemory::new()),
        Path::from("data/raw"),
        BlockType::Lz4,
        &|_| {},
    )
    .unwrap();
}
