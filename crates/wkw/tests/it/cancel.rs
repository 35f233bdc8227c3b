//! `Options::cancel`: a raised flag stops `compress`, `verify`, reads and writes (local and
//! remote) with `Error::Cancelled` between units of work; what was completed stays complete.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::atomic::{AtomicUsize, Ordering};

use s3_testserver::TestServer;
use wkw::object_store::path::Path;
use wkw::{
    Array, BlockType, BlockingRemoteDataset, Cancel, Dataset, Error, Header, Options, Order,
    RemoteOptions, Threads, VoxelType,
};

/// Files per axis of the test volume (each file 16³ voxels: 2³ blocks of 8³).
const FILES: u32 = 4;

fn header() -> Header {
    Header::new(VoxelType::U8, 1, 8, 2, BlockType::Lz4).unwrap()
}

fn side() -> u32 {
    header().file_len_vx() * FILES
}

fn volume() -> Array {
    let s = side();
    let mut a = Array::zeros(VoxelType::U8, 1, [s, s, s], Order::Fortran).unwrap();
    for (i, v) in a.as_bytes_mut().iter_mut().enumerate() {
        *v = i.wrapping_mul(2_654_435_761).to_le_bytes()[3] | 1;
    }
    a
}

/// A dataset of `FILES³` LZ4 files in a temporary directory.
fn make() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("src");
    let ds = Dataset::create(&root, header()).unwrap();
    ds.write([0, 0, 0], &volume().view()).unwrap();
    (dir, root)
}

fn raised() -> Cancel {
    let c = Cancel::new();
    c.cancel();
    c
}

#[test]
fn a_raised_flag_stops_every_long_local_operation() {
    let (dir, root) = make();
    let opts = Options::default().with_cancel(raised());
    let ds = Dataset::open_with(&root, opts.clone()).unwrap();
    let s = side();
    assert!(matches!(
        ds.read([0, 0, 0], [s, s, s], Order::Fortran),
        Err(Error::Cancelled)
    ));
    assert!(matches!(
        ds.read([0, 0, 0], [s, s, s], Order::C),
        Err(Error::Cancelled)
    ));
    assert!(matches!(
        ds.write([0, 0, 0], &volume().view()),
        Err(Error::Cancelled)
    ));
    assert!(matches!(
        wkw::verify(&root, opts.clone(), &|_| {}),
        Err(Error::Cancelled)
    ));
    let dst = dir.path().join("dst");
    assert!(matches!(
        wkw::compress(&root, &dst, BlockType::Lz4Hc, opts, &|_| {}),
        Err(Error::Cancelled)
    ));
    assert!(
        Dataset::open(&dst)
            .unwrap()
            .list_files()
            .unwrap()
            .is_empty()
    );
    // Nothing was changed: the source reads as written.
    let back = Dataset::open(&root).unwrap();
    let a = back.read([0, 0, 0], [s, s, s], Order::Fortran).unwrap();
    assert_eq!(a.as_bytes(), volume().as_bytes());
    assert!(
        wkw::verify(&root, Options::default(), &|_| {})
            .unwrap()
            .is_ok()
    );
    assert!(format!("{}", Error::Cancelled).contains("cancelled"));
}

#[test]
fn a_flag_raised_during_compress_stops_it_after_the_current_file() {
    let (dir, root) = make();
    let cancel = Cancel::new();
    let opts = Options::default()
        .with_threads(Threads::Caller)
        .with_cancel(cancel.clone());
    let dst = dir.path().join("dst");
    let seen = AtomicUsize::new(0);
    let r = wkw::compress(&root, &dst, BlockType::Lz4Hc, opts.clone(), &|p| {
        seen.fetch_add(1, Ordering::Relaxed);
        if p.done == 3 {
            cancel.cancel();
        }
    });
    assert!(matches!(r, Err(Error::Cancelled)));
    assert_eq!(seen.into_inner(), 3);
    // The three converted files are complete, the rest were never started.
    let out = Dataset::open(&dst).unwrap();
    assert_eq!(out.list_files().unwrap().len(), 3);
    assert!(
        wkw::verify(&dst, Options::default(), &|_| {})
            .unwrap()
            .is_ok()
    );

    let cancel = Cancel::new();
    let opts = opts.with_cancel(cancel.clone());
    let seen = AtomicUsize::new(0);
    let r = wkw::verify(&root, opts, &|p| {
        seen.fetch_add(1, Ordering::Relaxed);
        if p.done == 2 {
            cancel.cancel();
        }
    });
    assert!(matches!(r, Err(Error::Cancelled)));
    assert_eq!(seen.into_inner(), 2);
}

#[test]
fn a_raised_flag_stops_remote_writes_compress_and_verify() {
    let server = TestServer::start().unwrap();
    let (_dir, root) = make();
    let s = side();
    let remote = |prefix: &str, cancel: Cancel| {
        let opts = RemoteOptions::default().map_format(|mut f| {
            f.dataset = f.dataset.with_cancel(cancel);
            f
        });
        (opts, Path::from(prefix))
    };
    let (opts, prefix) = remote("src", Cancel::new());
    let ds = BlockingRemoteDataset::create(server.store(), prefix, header(), opts).unwrap();
    ds.write([0, 0, 0], &volume().view()).unwrap();

    let (opts, prefix) = remote("src", raised());
    let ds = BlockingRemoteDataset::open(server.store(), prefix, opts).unwrap();
    assert!(matches!(
        ds.read([0, 0, 0], [s, s, s], Order::Fortran),
        Err(Error::Cancelled)
    ));
    assert!(matches!(
        ds.write([0, 0, 0], &volume().view()),
        Err(Error::Cancelled)
    ));
    assert!(matches!(ds.verify(&|_| {}), Err(Error::Cancelled)));
    assert!(matches!(
        ds.compress_to(server.store(), Path::from("dst"), BlockType::Lz4Hc, &|_| {}),
        Err(Error::Cancelled)
    ));
    // The source is as written.
    let (opts, prefix) = remote("src", Cancel::new());
    let ds = BlockingRemoteDataset::open(server.store(), prefix, opts).unwrap();
    let a = ds.read([0, 0, 0], [s, s, s], Order::Fortran).unwrap();
    assert_eq!(a.as_bytes(), volume().as_bytes());
    assert!(ds.verify(&|_| {}).unwrap().is_ok());
    drop(root);
}
