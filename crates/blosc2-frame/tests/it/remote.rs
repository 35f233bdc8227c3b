//! blosc2-frame remote frames against the real S3 protocol (s3s over loopback TCP): every frame
//! fixture (contiguous, sparse, b2nd) read remotely like locally, the round trips of open and of
//! a b2nd region read counted from the server's log, remote writes read back locally after
//! download and vice versa, injected faults, and an object replaced during reads.
// Test helpers unwrap and panic like the tests themselves.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use blosc2_frame::blosc_chunk::CParams;
use blosc2_frame::object_store::path::Path;
use blosc2_frame::object_store::{ObjectStoreExt, PutPayload};
use blosc2_frame::{
    B2ndArray, BlockingRemoteB2nd, BlockingRemoteFrame, ChunkLocation, Durability, Error, Frame,
    FrameParams, FrameWriter, RemoteOptions, WriteMode, b2nd_frame_from_slice,
};
use common::{CONTIGUOUS, SPARSE, SPARSE_B2ND, assert_same, testdata};
use s3_testserver::{TestServer, critical_path};

/// A server with the fixtures uploaded under `fx/`.
fn server_with_fixtures() -> TestServer {
    let server = TestServer::start().unwrap();
    server
        .upload_dir(&testdata().join("frames"), "fx/frames")
        .unwrap();
    server
        .upload_dir(&testdata().join("legacy"), "fx/legacy")
        .unwrap();
    server
}

fn open(server: &TestServer, key: &str, o: RemoteOptions) -> BlockingRemoteFrame {
    BlockingRemoteFrame::open(server.store(), Path::from(key), o).unwrap()
}

#[test]
fn every_fixture_reads_remotely_like_locally() {
    let mut on_disk: Vec<String> = std::fs::read_dir(testdata().join("frames"))
        .unwrap()
        .map(|e| format!("frames/{}", e.unwrap().file_name().to_string_lossy()))
        .filter(|n| !testdata().join(n).is_dir())
        .collect();
    on_disk.sort();
    let listed: Vec<&str> = CONTIGUOUS
        .iter()
        .copied()
        .filter(|n| n.starts_with("frames/"))
        .collect();
    assert_eq!(
        on_disk, listed,
        "CONTIGUOUS lists every contiguous frame fixture"
    );
    let server = server_with_fixtures();
    for name in CONTIGUOUS {
        let local = Frame::open(testdata().join(name)).unwrap();
        let remote = open(&server, &format!("fx/{name}"), RemoteOptions::default());
        assert!(!remote.inner().is_sparse());
        assert_same(&local, &remote, name);
        // Forced second round trip (tiny speculative ranges).
        let o = RemoteOptions::default()
            .map_format(|f| f.with_head_bytes(87))
            .map_format(|f| f.with_tail_bytes(23));
        assert_same(&local, &open(&server, &format!("fx/{name}"), o), name);
    }
    // The sparse frames: a plain super-chunk, a b2nd array.
    for sparse in [SPARSE, SPARSE_B2ND] {
        let local = Frame::open(testdata().join(sparse)).unwrap();
        for key in [
            format!("fx/{sparse}"),
            format!("fx/{sparse}/chunks.b2frame"),
        ] {
            let remote = open(&server, &key, RemoteOptions::default());
            assert!(remote.inner().is_sparse(), "{key}");
            assert_same(&local, &remote, &key);
        }
        let remote = BlockingRemoteFrame::open_sparse(
            server.store(),
            Path::from(format!("fx/{sparse}")),
            RemoteOptions::default(),
        )
        .unwrap();
        assert_same(&local, &remote, "open_sparse");
    }
}

#[test]
fn every_b2nd_fixture_reads_regions_like_locally() {
    let server = server_with_fixtures();
    for name in [
        "frames/b2nd_f4_20x30.b2nd",
        "frames/b2nd_u2_7x9x11.b2nd",
        "frames/b2nd_zeros_f8_50x40.b2nd",
    ] {
        let local = B2ndArray::open(testdata().join(name)).unwrap();
        let remote = BlockingRemoteB2nd::open(
            server.store(),
            Path::from(format!("fx/{name}")),
            RemoteOptions::default(),
        )
        .unwrap();
        assert_eq!(remote.meta(), local.meta(), "{name}");
        assert_eq!(remote.dtype(), local.dtype());
        assert_eq!(
            remote.read_all().unwrap(),
            local.read_all().unwrap(),
            "{name}"
        );
        let shape = local.shape().to_vec();
        let one: Vec<u64> = shape.iter().map(|&s| s.min(1)).collect();
        let mid: Vec<u64> = shape.iter().map(|&s| s / 2 + 1).collect();
        let third: Vec<u64> = shape.iter().map(|&s| s / 3).collect();
        for (a, b) in [(&one, &mid), (&third, &shape), (&mid, &mid)] {
            assert_eq!(
                remote.read_region(a, b).unwrap(),
                local.read_region(a, b).unwrap(),
                "{name} {a:?}..{b:?}"
            );
        }
    }
    let name = "frames/b2nd_f4_20x30.b2nd";
    let local = B2ndArray::open(testdata().join(name)).unwrap();
    let remote = BlockingRemoteB2nd::open(
        server.store(),
        Path::from(format!("fx/{name}")),
        RemoteOptions::default(),
    )
    .unwrap();
    assert_eq!(
        remote.read_region_as::<f32>(&[3, 5], &[17, 29]).unwrap(),
        local.read_region_as::<f32>(&[3, 5], &[17, 29]).unwrap()
    );
    assert_eq!(
        remote.read_all_as::<f32>().unwrap(),
        local.read_all_as::<f32>().unwrap()
    );
}

#[test]
fn open_takes_at_most_two_round_trips() {
    let server = server_with_fixtures();
    // With a per-request latency, concurrent requests overlap and dependent ones cannot.
    server.faults().set_latency(Duration::from_millis(30));
    let mut keys: Vec<String> = CONTIGUOUS.iter().map(|n| format!("fx/{n}")).collect();
    keys.push(format!("fx/{SPARSE}/chunks.b2frame"));
    for key in &keys {
        for (o, max_trips) in [
            // The fixtures fit the default 64 KiB head and tail: one round trip.
            (RemoteOptions::default(), 1),
            (
                RemoteOptions::default()
                    .map_format(|f| f.with_head_bytes(87))
                    .map_format(|f| f.with_tail_bytes(23)),
                2,
            ),
        ] {
            server.reset_stats();
            let f = open(&server, key, o);
            let log = server.log();
            let trips = critical_path(&log);
            assert!(
                trips <= max_trips,
                "{key}: {trips} round trips, log {log:#?}"
            );
            assert!(log.iter().all(|r| r.method == "GET"), "{key}: {log:#?}");
            // Requests: head + tail (+ the sparse probe) in round 1, at most 2 in round 2.
            assert!(log.len() <= 5, "{key}: {} requests", log.len());
            drop(f);
        }
    }
    // A sparse frame by its prefix: the failed requests on the prefix key, then its index.
    server.reset_stats();
    let f = open(&server, &format!("fx/{SPARSE}"), RemoteOptions::default());
    assert!(f.inner().is_sparse());
    assert!(critical_path(&server.log()) <= 2, "{:#?}", server.log());
    // open_sparse goes to the index directly.
    for (o, max_trips) in [
        (RemoteOptions::default(), 1),
        (
            RemoteOptions::default()
                .map_format(|f| f.with_head_bytes(87))
                .map_format(|f| f.with_tail_bytes(23)),
            2,
        ),
    ] {
        server.reset_stats();
        let f =
            BlockingRemoteFrame::open_sparse(server.store(), Path::from(format!("fx/{SPARSE}")), o)
                .unwrap();
        assert!(f.inner().is_sparse());
        let trips = critical_path(&server.log());
        assert!(trips <= max_trips, "open_sparse: {trips} round trips");
    }
}

/// A 120×200 f32 b2nd array in 48 chunks of 20×25 (blocks 10×25).
fn big_b2nd() -> (Vec<f32>, FrameWriter) {
    let data: Vec<f32> = (0..120 * 200).map(|i| (i as f32).sin() * 1000.0).collect();
    let w = b2nd_frame_from_slice(
        &data,
        &[120, 200],
        &[20, 25],
        &[10, 25],
        &CParams::default(),
    )
    .unwrap();
    (data, w)
}

#[test]
fn b2nd_region_fetches_its_chunks_in_one_round_trip() {
    let server = TestServer::start().unwrap();
    let (data, w) = big_b2nd();
    let bytes = w.to_bytes().unwrap();
    BlockingRemoteFrame::put(
        server.store(),
        &Path::from("big/a.b2nd"),
        &w,
        &RemoteOptions::default(),
    )
    .unwrap();
    let local = B2ndArray::from_slice(&bytes).unwrap();
    server.faults().set_latency(Duration::from_millis(30));
    // Rows 25..75 touch chunk rows 1..=3, columns 30..110 chunk columns 1..=4: k = 12 chunks.
    let (start, stop) = ([25u64, 30], [75u64, 110]);
    let touched: Vec<usize> = (1..=3)
        .flat_map(|r| (1..=4).map(move |c| r * 8 + c))
        .collect();
    let frame = local.frame();
    let stored_bytes: u64 = touched
        .iter()
        .map(|&i| frame.chunk(i).unwrap().len() as u64)
        .sum();
    for gap in [0u64, 256 << 10] {
        let o = RemoteOptions::default().with_coalesce_gap(gap);
        server.reset_stats();
        let a = BlockingRemoteB2nd::open(server.store(), Path::from("big/a.b2nd"), o).unwrap();
        let open_log = server.log();
        assert!(critical_path(&open_log) <= 2, "open: {open_log:#?}");
        server.reset_stats();
        let got = a.read_region_as::<f32>(&start, &stop).unwrap();
        let log = server.log();
        assert_eq!(critical_path(&log), 1, "gap {gap}: {log:#?}");
        assert!(log.iter().all(|r| r.is_object_get() && r.range.is_some()));
        assert!(
            !log.is_empty() && log.len() <= touched.len(),
            "gap {gap}: {} GETs",
            log.len()
        );
        let sent: u64 = log.iter().map(|r| r.bytes_sent).sum();
        if gap == 0 {
            // Only the touched chunks' bytes travel.
            assert_eq!(sent, stored_bytes, "gap 0");
        }
        // Bridged gaps stay within the 10 % byte budget.
        assert!(
            sent * 10 <= stored_bytes * 11,
            "gap {gap}: {sent} bytes for {stored_bytes}"
        );
        let expect: Vec<f32> = (25..75)
            .flat_map(|r| (30..110).map(move |c| (r, c)))
            .map(|(r, c)| data[r * 200 + c])
            .collect();
        assert_eq!(got, expect);
        assert_eq!(got, local.read_region_as::<f32>(&start, &stop).unwrap());
    }
}

/// Pseudo-random bytes (barely compressible), deterministic.
fn noise(n: usize, seed: u64) -> Vec<u8> {
    let mut x = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
    (0..n)
        .map(|_| {
            x = x
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (x >> 56) as u8
        })
        .collect()
}

#[test]
fn remote_writes_read_back_locally_and_local_writes_remotely() {
    let server = TestServer::start().unwrap();
    let store = server.store();
    let (data, w) = big_b2nd();
    let bytes = w.to_bytes().unwrap();
    let tmp = tempfile::tempdir().unwrap();

    // Contiguous, single PUT: downloaded bytes are the local writer's bytes.
    BlockingRemoteFrame::put(
        store.clone(),
        &Path::from("w/one.b2nd"),
        &w,
        &RemoteOptions::default(),
    )
    .unwrap();
    server.download_prefix("w", tmp.path()).unwrap();
    assert_eq!(std::fs::read(tmp.path().join("one.b2nd")).unwrap(), bytes);
    let a = B2ndArray::open(tmp.path().join("one.b2nd")).unwrap();
    assert_eq!(a.read_all_as::<f32>().unwrap(), data);

    // Contiguous, multipart (11 MiB in 5 MiB parts).
    let mut big = FrameWriter::new(FrameParams::new(CParams::default(), 1 << 20)).unwrap();
    let raw = noise(11 << 20, 7);
    big.append_data(&raw).unwrap();
    let o = RemoteOptions::default().with_multipart(1 << 20, 5 << 20);
    server.reset_stats();
    BlockingRemoteFrame::put(store.clone(), &Path::from("m/big.b2frame"), &big, &o).unwrap();
    let parts = server
        .log()
        .iter()
        .filter(|r| r.method == "PUT" && r.query.contains("partNumber"))
        .count();
    assert!(parts >= 3, "{parts} parts");
    let dl = tmp.path().join("m");
    server.download_prefix("m", &dl).unwrap();
    assert_eq!(
        std::fs::read(dl.join("big.b2frame")).unwrap(),
        big.to_bytes().unwrap()
    );
    let r = open(&server, "m/big.b2frame", RemoteOptions::default());
    assert_eq!(r.decompress_all().unwrap(), raw);

    // Create-only: refused on an existing key, single and multipart.
    for o in [
        RemoteOptions::default().with_write_mode(WriteMode::Conditional),
        RemoteOptions::default()
            .with_write_mode(WriteMode::Conditional)
            .with_multipart(1, 5 << 20),
    ] {
        let e = BlockingRemoteFrame::put(store.clone(), &Path::from("w/one.b2nd"), &w, &o);
        assert!(matches!(e, Err(Error::Conflict { .. })), "{e:?}");
    }
    BlockingRemoteFrame::put(
        store.clone(),
        &Path::from("w/new.b2nd"),
        &w,
        &RemoteOptions::default().with_write_mode(WriteMode::Conditional),
    )
    .unwrap();

    // Sparse through S3, twice (the rewrite replaces the chunk files), read back locally.
    for _ in 0..2 {
        BlockingRemoteFrame::put_sparse(
            store.clone(),
            &Path::from("s/arr.b2nd"),
            &w,
            &RemoteOptions::default(),
        )
        .unwrap();
    }
    let sdir = tmp.path().join("s");
    let n = server.download_prefix("s/arr.b2nd", &sdir).unwrap();
    assert_eq!(n, 1 + 48, "index plus one file per chunk");
    let a = B2ndArray::open(&sdir).unwrap();
    assert_eq!(a.read_all_as::<f32>().unwrap(), data);
    let r = BlockingRemoteB2nd::open(
        store.clone(),
        Path::from("s/arr.b2nd"),
        RemoteOptions::default(),
    )
    .unwrap();
    assert_eq!(
        r.read_region_as::<f32>(&[5, 7], &[100, 190]).unwrap(),
        a.read_region_as::<f32>(&[5, 7], &[100, 190]).unwrap()
    );

    // Local writes (contiguous file and sparse directory) uploaded and read remotely.
    let ldir = tmp.path().join("local");
    std::fs::create_dir_all(&ldir).unwrap();
    w.write_file(ldir.join("c.b2nd"), Durability::None).unwrap();
    w.write_sparse(ldir.join("sp.b2nd"), Durability::None)
        .unwrap();
    server.upload_dir(&ldir, "up").unwrap();
    for key in ["up/c.b2nd", "up/sp.b2nd"] {
        let r = BlockingRemoteB2nd::open(store.clone(), Path::from(key), RemoteOptions::default())
            .unwrap();
        assert_eq!(r.read_all_as::<f32>().unwrap(), data, "{key}");
    }
}

#[test]
fn injected_faults_are_retried_or_clear_errors_never_wrong_data() {
    let server = server_with_fixtures();
    let name = "frames/zstd_delta_shuffle_many_chunks.b2frame";
    let key = format!("fx/{name}");
    let local = Frame::open(testdata().join(name)).unwrap();
    let expect = local.decompress_all().unwrap();
    let faults = server.faults();
    // Transient faults on open and on the chunk reads: retried, same data.
    let injections: Vec<Box<dyn Fn()>> = vec![
        Box::new(|| faults.fail_next(2, 503)),
        Box::new(|| faults.fail_next(1, 500)),
        Box::new(|| faults.reset_next(1)),
        Box::new(|| faults.truncate_next(2)),
        Box::new(|| faults.slow_body_next(1, 64, Duration::from_millis(2))),
    ];
    for inject in &injections {
        inject();
        let f = open(&server, &key, RemoteOptions::default());
        inject();
        assert_eq!(f.decompress_all().unwrap(), expect);
        inject();
        assert_eq!(
            f.get_slice(100, 5000).unwrap(),
            local.get_slice(100, 5000).unwrap()
        );
        faults.clear();
    }
    // Persistent failure: a clear error naming the object, without credentials.
    let f = open(&server, &key, RemoteOptions::default());
    faults.fail_next(1000, 500);
    let e = f.decompress_all().unwrap_err();
    assert!(matches!(e, Error::Remote { .. }), "{e:?}");
    let msg = format!("{e} {e:?}");
    assert!(msg.contains(name), "{msg}");
    assert!(!msg.contains(server.secret_key()), "{msg}");
    let e = BlockingRemoteFrame::open(
        server.store(),
        Path::from(key.as_str()),
        RemoteOptions::default(),
    )
    .unwrap_err();
    assert!(matches!(e, Error::Remote { .. }), "{e:?}");
    faults.clear();
    // Persistently truncated bodies: retried, then a truncation error (never short data).
    faults.truncate_next(1000);
    let e = f.decompress_all().unwrap_err();
    assert!(
        matches!(e, Error::Truncated { .. } | Error::Remote { .. }),
        "{e:?}"
    );
    faults.clear();
    assert_eq!(f.decompress_all().unwrap(), expect);
}

/// A frame of `n` chunks whose every byte is `v`.
fn uniform(v: u8, n: usize) -> Vec<u8> {
    let mut w = FrameWriter::new(FrameParams::new(CParams::default(), 64 << 10)).unwrap();
    for k in 0..n {
        // Distinct chunks so that a mix of versions would show.
        let mut c = noise(64 << 10, k as u64);
        c[0] = v;
        c.iter_mut().step_by(97).for_each(|b| *b = v);
        w.append_buffer(&c).unwrap();
    }
    w.to_bytes().unwrap()
}

#[test]
fn object_replaced_during_reads_is_old_new_or_an_error_never_a_mix() {
    let server = TestServer::start().unwrap();
    // The library's requests run on its runtime, this test's own puts on `rt` and the writer
    // thread's runtime: one client each (a pooled connection is driven by the runtime that
    // opened it).
    let store = server.store();
    let direct = server.store();
    let key = Path::from("r/x.b2frame");
    let versions: Vec<Vec<u8>> = (0..2).map(|v| uniform(v, 16)).collect();
    let contents: Vec<Vec<u8>> = versions
        .iter()
        .map(|b| Frame::from_slice(b).unwrap().decompress_all().unwrap())
        .collect();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(direct.put(&key, PutPayload::from(versions[0].clone())))
        .unwrap();

    // Replaced between open and read: the ETag check refuses the new bytes.
    let f =
        BlockingRemoteFrame::open(store.clone(), key.clone(), RemoteOptions::default()).unwrap();
    rt.block_on(direct.put(&key, PutPayload::from(versions[1].clone())))
        .unwrap();
    let e = f.decompress_all().unwrap_err();
    assert!(matches!(e, Error::Changed { .. }), "{e:?}");

    // Replaced continuously while readers open and read (slow responses widen the window),
    // until at least 20 reads and 2 replacements happened (counted, not timed).
    server.faults().set_latency(Duration::from_millis(3));
    let stop = Arc::new(AtomicBool::new(false));
    let writes = Arc::new(AtomicUsize::new(0));
    let writer = {
        let (store, key, versions, stop, writes) = (
            server.store(),
            key.clone(),
            versions.clone(),
            stop.clone(),
            writes.clone(),
        );
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            let mut i = 0usize;
            while !stop.load(Ordering::Relaxed) {
                i += 1;
                rt.block_on(store.put(&key, PutPayload::from(versions[i % 2].clone())))
                    .unwrap();
                writes.store(i, Ordering::Relaxed);
            }
        })
    };
    let (mut ok, mut changed) = (0, 0);
    while ok + changed < 20 || writes.load(Ordering::Relaxed) < 2 {
        let o = RemoteOptions::default()
            .with_coalesce_gap(0)
            .with_concurrency(4);
        match BlockingRemoteFrame::open(store.clone(), key.clone(), o)
            .and_then(|f| f.decompress_all())
        {
            Ok(d) => {
                assert!(d == contents[0] || d == contents[1], "mixed data");
                ok += 1;
            }
            Err(Error::Changed { .. }) => changed += 1,
            Err(e) => panic!("unexpected error {e:?}"),
        }
    }
    stop.store(true, Ordering::Relaxed);
    writer.join().unwrap();
}

#[test]
fn chunk_index_of_remote_matches_local_for_sparse_writes() {
    // A sparse frame written through S3 keeps special chunks as index entries (no files).
    let server = TestServer::start().unwrap();
    let mut w = FrameWriter::new(FrameParams::new(CParams::default(), 4096)).unwrap();
    w.append_buffer(&[1u8; 4096]).unwrap();
    w.fill_special(4096, &blosc2_frame::Fill::Zeros).unwrap();
    w.append_buffer(&noise(4096, 3)).unwrap();
    BlockingRemoteFrame::put_sparse(
        server.store(),
        &Path::from("sp"),
        &w,
        &RemoteOptions::default(),
    )
    .unwrap();
    let r = open(&server, "sp", RemoteOptions::default());
    assert!(matches!(r.index()[1], ChunkLocation::Zeros));
    let local = Frame::from_slice(&w.to_bytes().unwrap())
        .unwrap()
        .decompress_all()
        .unwrap();
    assert_eq!(r.decompress_all().unwrap(), local);
}

/// Benchmark (not a timed test; run with `cargo test --release … -- --ignored --nocapture`): a
/// 256 MiB f32 b2nd array in 1 MiB chunks on the server with 20 ms latency per request; open,
/// then a region touching 16 chunks, against downloading the whole object and reading it
/// locally.
#[test]
#[ignore = "benchmark; run with --ignored --nocapture"]
fn bench_b2nd_region_with_latency() {
    use std::time::Instant;
    let server = TestServer::start().unwrap();
    let shape = [1024u64, 1024, 64];
    let n = 1024 * 1024 * 64;
    // A ramp plus 8 bits of hashed noise (compresses about 10:1 with the default codec).
    let data: Vec<f32> = (0..n)
        .map(|i: u64| {
            let noise = (i.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 56) as f32;
            ((i % 65_536) as f32) * 0.25 + noise
        })
        .collect();
    let w = b2nd_frame_from_slice(
        &data,
        &shape,
        &[64, 64, 64],
        &[16, 64, 64],
        &CParams::default(),
    )
    .unwrap();
    drop(data);
    let bytes = w.to_bytes().unwrap();
    let key = Path::from("bench/a.b2nd");
    BlockingRemoteFrame::put(server.store(), &key, &w, &RemoteOptions::default()).unwrap();
    drop(w);
    let local = B2ndArray::from_slice(&bytes).unwrap();
    let (start, stop) = ([100u64, 100, 0], [300u64, 300, 64]);
    let touched: Vec<usize> = (1..=4)
        .flat_map(|r| (1..=4).map(move |c| r * 16 + c))
        .collect();
    let needed: u64 = touched
        .iter()
        .map(|&i| local.frame().chunk(i).unwrap().len() as u64)
        .sum();
    let expect = local.read_region(&start, &stop).unwrap();
    server.faults().set_latency(Duration::from_millis(20));

    server.reset_stats();
    let t = Instant::now();
    let a =
        BlockingRemoteB2nd::open(server.store(), key.clone(), RemoteOptions::default()).unwrap();
    let t_open = t.elapsed();
    let open_log = server.log();
    server.reset_stats();
    let t = Instant::now();
    let got = a.read_region(&start, &stop).unwrap();
    let t_region = t.elapsed();
    let log = server.log();
    assert_eq!(got, expect);
    let sent: u64 = log.iter().map(|r| r.bytes_sent).sum();
    println!(
        "frame {} bytes ({} chunks); open: {} requests, {} round trips, {} bytes, {t_open:?}",
        bytes.len(),
        local.frame().nchunks(),
        open_log.len(),
        critical_path(&open_log),
        open_log.iter().map(|r| r.bytes_sent).sum::<u64>()
    );
    println!(
        "region touching {} chunks: {} requests, {} round trips, {sent} bytes sent for {needed} \
         compressed bytes needed ({:.3}x), {t_region:?}",
        touched.len(),
        log.len(),
        critical_path(&log),
        sent as f64 / needed as f64
    );

    // Peer: download the whole object, then read locally.
    server.reset_stats();
    let t = Instant::now();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let store = server.store();
    let whole = rt
        .block_on(async { store.get(&key).await.unwrap().bytes().await })
        .unwrap();
    let b = B2ndArray::from_slice(&whole).unwrap();
    assert_eq!(b.read_region(&start, &stop).unwrap(), expect);
    println!(
        "download whole + local read: {} requests, {} bytes, {:?}",
        server.log().len(),
        whole.len(),
        t.elapsed()
    );
}

/// `open_url` / `put_url` configured only by the standard `AWS_*` variables: the test runs
/// itself as a child process with the server's environment (the variables are never set in
/// this process).
#[test]
fn open_url_and_put_url_take_s3_configuration_from_the_environment() {
    const CHILD: &str = "SCIFMT_FRAME_REMOTE_CHILD_URL";
    let name = "frames/lz4_shuffle_meta_vlmeta.b2frame";
    if let Ok(url) = std::env::var(CHILD) {
        let local = Frame::open(testdata().join(name)).unwrap();
        let f = BlockingRemoteFrame::open_url(&url, RemoteOptions::default()).unwrap();
        assert!(f.inner().url().starts_with("s3://"), "{}", f.inner().url());
        assert_eq!(f.decompress_all().unwrap(), local.decompress_all().unwrap());
        let a = BlockingRemoteB2nd::open_url(
            &url.replace(name, "frames/b2nd_u2_7x9x11.b2nd"),
            RemoteOptions::default(),
        )
        .unwrap();
        assert_eq!(a.shape(), [7, 9, 11]);
        let w = FrameWriter::from_frame(&local).unwrap();
        BlockingRemoteFrame::put_url(
            &url.replace(name, "copies/c.b2frame"),
            &w,
            &RemoteOptions::default(),
        )
        .unwrap();
        // A missing object: the error names the URL and no secret.
        let e = BlockingRemoteFrame::open_url(
            &url.replace(name, "nope.b2frame"),
            RemoteOptions::default(),
        )
        .unwrap_err();
        let msg = format!("{e} {e:?}");
        assert!(msg.contains("nope.b2frame"), "{msg}");
        assert!(
            !msg.contains(&std::env::var("AWS_SECRET_ACCESS_KEY").unwrap()),
            "{msg}"
        );
        return;
    }
    let server = server_with_fixtures();
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "remote::open_url_and_put_url_take_s3_configuration_from_the_environment",
            "--nocapture",
            "--test-threads=1",
        ])
        .envs(server.env())
        .env(CHILD, server.url(&format!("fx/{name}")))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "child failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    // The child really talked to this server, and its upload is readable here.
    assert!(server.log().iter().any(|r| r.key.ends_with(name)));
    let copy = open(&server, "fx/copies/c.b2frame", RemoteOptions::default());
    let local = Frame::open(testdata().join(name)).unwrap();
    assert_same(&local, &copy, "put_url copy");
}

/// The async API on a caller's multi-threaded runtime: concurrent region reads of one array
/// from spawned tasks.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn async_region_reads_from_spawned_tasks() {
    let server = TestServer::start().unwrap();
    let (data, w) = big_b2nd();
    let store = server.store();
    blosc2_frame::RemoteFrame::put(
        store.clone(),
        &Path::from("async/a.b2nd"),
        &w,
        &RemoteOptions::default(),
    )
    .await
    .unwrap();
    let a = Arc::new(
        blosc2_frame::RemoteB2nd::open(store, Path::from("async/a.b2nd"), RemoteOptions::default())
            .await
            .unwrap(),
    );
    let tasks: Vec<_> = (0..6u64)
        .map(|k| {
            let a = a.clone();
            tokio::spawn(async move {
                let (r0, c0) = (k * 17, k * 29);
                let got = a
                    .read_region_as::<f32>(&[r0, c0], &[r0 + 20, c0 + 30])
                    .await
                    .unwrap();
                (r0, c0, got)
            })
        })
        .collect();
    for t in tasks {
        let (r0, c0, got) = t.await.unwrap();
        let expect: Vec<f32> = (r0..r0 + 20)
            .flat_map(|r| (c0..c0 + 30).map(move |c| (r, c)))
            .map(|(r, c)| data[usize::try_from(r * 200 + c).unwrap()])
            .collect();
        assert_eq!(got, expect, "region at {r0},{c0}");
    }
}

/// Metadata larger than the speculative ranges (a 300 KB vlmetalayer, a 100 KB metalayer): the
/// second round trip fetches exactly what is missing, and everything matches the local read.
#[test]
fn large_metadata_needs_exactly_a_second_round_trip() {
    let server = TestServer::start().unwrap();
    let mut w = FrameWriter::new(FrameParams::new(CParams::default(), 4096)).unwrap();
    w.add_metalayer("big", &noise(100_000, 1)).unwrap();
    for k in 0..50 {
        w.append_buffer(&noise(4096, k)).unwrap();
    }
    w.set_vlmetalayer("notes", &noise(300_000, 2)).unwrap();
    let bytes = w.to_bytes().unwrap();
    BlockingRemoteFrame::put(
        server.store(),
        &Path::from("meta/a.b2frame"),
        &w,
        &RemoteOptions::default(),
    )
    .unwrap();
    server.faults().set_latency(Duration::from_millis(30));
    server.reset_stats();
    let r = open(&server, "meta/a.b2frame", RemoteOptions::default());
    let log = server.log();
    assert_eq!(critical_path(&log), 2, "{log:#?}");
    let sent: u64 = log.iter().map(|r| r.bytes_sent).sum();
    let local = Frame::from_slice(&bytes).unwrap();
    // Header with metalayers and index + trailer, plus at most the two speculative ranges.
    let needed = u64::from(local.header().header_len) + local.trailer_len();
    assert!(
        sent <= needed + 2 * (64 << 10) + 4096,
        "{sent} bytes for {needed}"
    );
    assert_eq!(r.inner().vlmetalayer("notes").unwrap(), noise(300_000, 2));
    assert_eq!(r.inner().metalayer("big").unwrap(), &noise(100_000, 1)[..]);
    assert_same(&local, &r, "large metadata");
}
