//! Conversions with object stores at either or both ends, against the in-process S3 test
//! server (the real S3 protocol over TCP): the objects written equal, byte for byte, the files
//! of the same conversion between local directories; faults injected mid-conversion are
//! retried to success, or fail with an error naming the object and leave nothing half-written
//! under a final key, and resuming then finishes with the same bytes; a conversion SIGKILLed
//! at pseudo-random moments resumes to the same bytes.

use crate::common;

use std::path::{Path, PathBuf};

use common::{TestResult, at, lz4_mag_and_its_zarr3, objects, tree};
use s3_testserver::{FaultKind, FaultRule, TestServer};
use scifmt_io::object_store::path::Path as ObjectPath;
use testkit::{Lcg, run_and_kill};
use wkw_zarr::{
    ConvertOptions, Existing, Format, Location, MARKER, RemoteOptions, ZarrCodec, convert, verify,
};

/// The smallest part S3 takes: the 16 MiB shards of [`big_raw_mag`] are multipart uploads.
const PART: u64 = 5 << 20;

fn options() -> ConvertOptions {
    ConvertOptions::default()
        .with_threads(2)
        .with_remote(RemoteOptions::default().with_multipart(PART, PART))
}

/// A raw WKW mag of one 256³ u8 file (16 MiB) of pseudo-random voxels, not one block zero.
fn big_raw_mag(root: &Path) -> Result<(), Box<dyn std::error::Error>> {
    let header = wkw::Header::new(wkw::VoxelType::U8, 1, 32, 8, wkw::BlockType::Raw)?;
    let ds = wkw::Dataset::create(root, header)?;
    let mut rng = Lcg(7);
    let values: Vec<u8> = (0..256 * 256 * 256)
        .map(|_| (rng.next_u64() >> 56) as u8 | 1)
        .collect();
    let array = wkw::Array::from_vec(1, [256, 256, 256], wkw::Order::Fortran, values)?;
    ds.write([0, 0, 0], &array.view())?;
    Ok(())
}

/// The local sources and their local conversions: `(wkw, zarr, wkw→zarr, zarr→wkw)`.
fn sources(dir: &Path) -> Result<(PathBuf, PathBuf, PathBuf, PathBuf), Box<dyn std::error::Error>> {
    let (wkw_src, zarr_src) = lz4_mag_and_its_zarr3(dir)?;
    let to_zarr = dir.join("clean-zarr3");
    convert(&wkw_src, &to_zarr, Format::Zarr3, &options(), &|_| {})?;
    let to_wkw = dir.join("clean-wkw");
    convert(&zarr_src, &to_wkw, Format::Wkw, &options(), &|_| {})?;
    Ok((wkw_src, zarr_src, to_zarr, to_wkw))
}

/// [`sources`], with the two sources uploaded to a new test server under `src/wkw` and
/// `src/zarr`: `(server, wkw→zarr, zarr→wkw)`.
fn sources_on_s3(dir: &Path) -> Result<(TestServer, PathBuf, PathBuf), Box<dyn std::error::Error>> {
    let (wkw_src, zarr_src, to_zarr, to_wkw) = sources(dir)?;
    let server = TestServer::start()?;
    server.upload_dir(&wkw_src, "src/wkw")?;
    server.upload_dir(&zarr_src, "src/zarr")?;
    Ok((server, to_zarr, to_wkw))
}

/// Both directions on the server of [`sources_on_s3`]: `(format, source prefix, target
/// prefix, the local conversion the target must equal)`.
fn both_ways<'a>(
    to_zarr: &'a Path,
    to_wkw: &'a Path,
) -> [(Format, &'static str, &'static str, &'a Path); 2] {
    [
        (Format::Zarr3, "src/wkw", "dst/zarr", to_zarr),
        (Format::Wkw, "src/zarr", "dst/wkw", to_wkw),
    ]
}

#[test]
fn every_mix_of_local_and_s3_writes_the_bytes_of_the_local_conversion() -> TestResult {
    let dir = tempfile::tempdir()?;
    let (wkw_src, zarr_src, to_zarr, to_wkw) = sources(dir.path())?;
    let (want_zarr, want_wkw) = (tree(&to_zarr)?, tree(&to_wkw)?);
    let server = TestServer::start()?;
    server.upload_dir(&wkw_src, "src/wkw")?;
    server.upload_dir(&zarr_src, "src/zarr")?;

    // Local → S3.
    convert(
        &wkw_src,
        at(&server, "l2s/zarr"),
        Format::Zarr3,
        &options(),
        &|_| {},
    )?;
    assert_eq!(objects(&server, "l2s/zarr")?, want_zarr);
    convert(
        &zarr_src,
        at(&server, "l2s/wkw"),
        Format::Wkw,
        &options(),
        &|_| {},
    )?;
    assert_eq!(objects(&server, "l2s/wkw")?, want_wkw);

    // S3 → local.
    let local_zarr = dir.path().join("s2l-zarr");
    convert(
        at(&server, "src/wkw"),
        &local_zarr,
        Format::Zarr3,
        &options(),
        &|_| {},
    )?;
    assert_eq!(tree(&local_zarr)?, want_zarr);
    let local_wkw = dir.path().join("s2l-wkw");
    convert(
        at(&server, "src/zarr"),
        &local_wkw,
        Format::Wkw,
        &options(),
        &|_| {},
    )?;
    assert_eq!(tree(&local_wkw)?, want_wkw);

    // S3 → S3.
    convert(
        at(&server, "src/wkw"),
        at(&server, "s2s/zarr"),
        Format::Zarr3,
        &options(),
        &|_| {},
    )?;
    assert_eq!(objects(&server, "s2s/zarr")?, want_zarr);
    convert(
        at(&server, "src/zarr"),
        at(&server, "s2s/wkw"),
        Format::Wkw,
        &options(),
        &|_| {},
    )?;
    assert_eq!(objects(&server, "s2s/wkw")?, want_wkw);

    // Source blocks are fetched in coalesced ranges, not one request per block: per file one
    // GET for the header and jump table, one for its 8 blocks (one batch with 2 threads).
    server.reset_stats();
    convert(
        at(&server, "src/wkw"),
        dir.path().join("count"),
        Format::Zarr3,
        &options(),
        &|_| {},
    )?;
    let gets = server
        .log()
        .iter()
        .filter(|r| r.method == "GET" && r.range.is_some())
        .count();
    assert_eq!(gets, 2 * 30, "ranged GETs for 30 files of 8 blocks");
    Ok(())
}

#[test]
fn shards_larger_than_a_part_are_multipart_uploads_with_the_local_bytes() -> TestResult {
    let dir = tempfile::tempdir()?;
    let src = dir.path().join("big");
    big_raw_mag(&src)?;
    let local_zarr = dir.path().join("zarr");
    convert(&src, &local_zarr, Format::Zarr3, &options(), &|_| {})?;
    let local_wkw = dir.path().join("back");
    convert(
        &local_zarr,
        &local_wkw,
        Format::Wkw,
        &options().with_block_type(wkw::BlockType::Raw),
        &|_| {},
    )?;
    let server = TestServer::start()?;
    server.upload_dir(&src, "src/big")?;
    for (to, from, dst, want, options) in [
        (Format::Zarr3, "src/big", "s2s/zarr", &local_zarr, options()),
        (
            Format::Wkw,
            "s2s/zarr",
            "s2s/wkw",
            &local_wkw,
            options().with_block_type(wkw::BlockType::Raw),
        ),
    ] {
        server.reset_stats();
        convert(at(&server, from), at(&server, dst), to, &options, &|_| {})?;
        let parts = server
            .log()
            .iter()
            .filter(|r| r.method == "PUT" && r.query.contains("partNumber"))
            .count();
        assert!(
            parts >= 3,
            "{to:?}: {parts} parts uploaded for a 16 MiB object"
        );
        assert_eq!(objects(&server, dst)?, tree(want)?, "{to:?}");
    }
    Ok(())
}

#[test]
fn a_webknossos_dataset_converts_between_stores() -> TestResult {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/wkw-zarr/multi/wkw");
    let dir = tempfile::tempdir()?;
    // `id.name` is the target's last path segment: the same locally and on the store.
    let local = dir.path().join("multi_zarr3");
    convert(&src, &local, Format::Zarr3, &options(), &|_| {})?;
    let server = TestServer::start()?;
    server.upload_dir(&src, "in/multi")?;
    let dst = at(&server, "out/multi_zarr3");
    convert(
        at(&server, "in/multi"),
        &dst,
        Format::Zarr3,
        &options(),
        &|_| {},
    )?;
    assert_eq!(objects(&server, "out/multi_zarr3")?, tree(&local)?);
    // And back.
    let back = dir.path().join("multi_wkw");
    convert(&local, &back, Format::Wkw, &options(), &|_| {})?;
    convert(
        &dst,
        at(&server, "back/multi_wkw"),
        Format::Wkw,
        &options(),
        &|_| {},
    )?;
    assert_eq!(objects(&server, "back/multi_wkw")?, tree(&back)?);
    Ok(())
}

#[test]
fn transient_faults_are_retried_to_the_same_bytes() -> TestResult {
    let dir = tempfile::tempdir()?;
    let (server, to_zarr, to_wkw) = sources_on_s3(dir.path())?;
    let faults = server.faults();
    for (to, src, dst, want) in both_ways(&to_zarr, &to_wkw) {
        faults.inject(
            FaultRule::new(FaultKind::Status(503), 2)
                .method("PUT")
                .after(3),
        );
        faults.inject(
            FaultRule::new(FaultKind::CutUpload, 1)
                .method("PUT")
                .after(6),
        );
        faults.inject(FaultRule::new(FaultKind::Reset, 1).method("GET").after(4));
        faults.inject(
            FaultRule::new(FaultKind::Status(500), 1)
                .method("GET")
                .after(8),
        );
        faults.inject(FaultRule::new(FaultKind::TruncateBody, 1).after(10));
        convert(at(&server, src), at(&server, dst), to, &options(), &|_| {})?;
        assert_eq!(faults.pending(), 0, "{to:?}: every fault was hit");
        assert_eq!(objects(&server, dst)?, tree(want)?, "{to:?}");
    }
    Ok(())
}

#[test]
fn a_failing_store_is_an_error_naming_the_object_and_resuming_finishes() -> TestResult {
    let dir = tempfile::tempdir()?;
    let (server, to_zarr, to_wkw) = sources_on_s3(dir.path())?;
    let faults = server.faults();
    for (to, src, dst, want) in both_ways(&to_zarr, &to_wkw) {
        let want = tree(want)?;
        // Writes work for a while, then every write fails (more often than the client
        // retries), while some are still in flight.
        faults.inject(
            FaultRule::new(FaultKind::Status(500), 100_000)
                .method("PUT")
                .after(12),
        );
        let err = convert(at(&server, src), at(&server, dst), to, &options(), &|_| {})
            .err()
            .ok_or("the conversion succeeded against a failing store")?;
        let message = err.to_string();
        assert!(message.contains(&server.url(dst)), "{message}");
        assert!(!message.contains(server.secret_key()), "{message}");
        faults.clear();
        // Nothing half-written: every object under the target is one of the finished
        // conversion's, with its bytes (or the marker).
        let partial = objects(&server, dst)?;
        assert!(
            partial.contains_key(MARKER),
            "the marker says the target is unfinished"
        );
        for (key, bytes) in &partial {
            if key != MARKER {
                assert_eq!(Some(bytes), want.get(key), "{to:?}: {key}");
            }
        }
        // Refused without --resume, finished with it.
        assert!(matches!(
            convert(at(&server, src), at(&server, dst), to, &options(), &|_| {}),
            Err(wkw_zarr::Error::TargetExists { .. })
        ));
        let resume = options().with_existing(Existing::Resume);
        let summary = convert(at(&server, src), at(&server, dst), to, &resume, &|_| {})?;
        assert!(summary.shards_skipped > 0, "{summary:?}");
        assert_eq!(objects(&server, dst)?, want, "{to:?}");
    }
    Ok(())
}

const ENV: &str = "WKW_ZARR_S3_KILL_CHILD";
const ROUNDS: usize = 4;

/// The child: converts between two URLs of the parent's server, with one thread, reporting
/// every shard, until done or killed. The spec is `to|src|dst|endpoint`.
#[test]
fn s3_kill_child() -> TestResult {
    let Ok(spec) = std::env::var(ENV) else {
        return Ok(());
    };
    let parts: Vec<&str> = spec.splitn(4, '|').collect();
    let [to, src, dst, endpoint] = parts[..] else {
        return Err("bad spec".into());
    };
    let config: Vec<(String, String)> = [
        ("aws_endpoint_url", endpoint),
        ("aws_access_key_id", "scifmt-test-access-key"),
        ("aws_secret_access_key", "scifmt-test-secret-key"),
        ("aws_region", "us-east-1"),
        ("aws_allow_http", "true"),
        ("aws_virtual_hosted_style_request", "false"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .collect();
    let to = if to == "zarr3" {
        Format::Zarr3
    } else {
        Format::Wkw
    };
    let options = options().with_threads(1).with_existing(Existing::Resume);
    convert(
        Location::parse(src, &config)?,
        Location::parse(dst, &config)?,
        to,
        &options,
        &|_| testkit::kill_child_step_done(),
    )?;
    Ok(())
}

#[test]
fn a_killed_s3_conversion_resumes_to_the_bytes_of_an_uninterrupted_one() -> TestResult {
    let dir = tempfile::tempdir()?;
    let (server, to_zarr, to_wkw) = sources_on_s3(dir.path())?;
    assert_eq!(server.access_key(), "scifmt-test-access-key");
    let mut rng = Lcg(0x53eed);
    for (to, src, want) in [
        (Format::Zarr3, "src/wkw", tree(&to_zarr)?),
        (Format::Wkw, "src/zarr", tree(&to_wkw)?),
    ] {
        let mut interrupted = 0;
        for round in 0..ROUNDS {
            let dst = format!("killed/{}-{round}", to.name());
            let spec = format!(
                "{}|{}|{}|{}",
                to.name(),
                server.url(src),
                server.url(&dst),
                server.endpoint()
            );
            run_and_kill("remote::s3_kill_child", ENV, &spec, &mut rng);
            if objects(&server, &dst)?.contains_key(MARKER) {
                interrupted += 1;
            }
            let resume = options().with_existing(Existing::Resume);
            convert(at(&server, src), at(&server, &dst), to, &resume, &|_| {})?;
            assert_eq!(objects(&server, &dst)?, want, "{to:?} round {round}");
        }
        println!("{to:?}: {interrupted} of {ROUNDS} runs were killed before they finished");
    }
    Ok(())
}

#[test]
fn a_source_file_replaced_while_it_is_read_is_an_error_naming_it() -> TestResult {
    let dir = tempfile::tempdir()?;
    let (wkw_src, _) = lz4_mag_and_its_zarr3(dir.path())?;
    let server = TestServer::start()?;
    server.upload_dir(&wkw_src, "src/wkw")?;
    // Another valid file of the mag replaces `z0/y0/x0.wkw` between the read of its header
    // and jump table and the read of its blocks.
    let other = std::fs::read(wkw_src.join("z0/y0/x1.wkw"))?;
    server.faults().inject(
        FaultRule::new(FaultKind::Replace(other.into()), 1)
            .method("GET")
            .key_contains("src/wkw/z0/y0/x0.wkw")
            .after(1),
    );
    let err = convert(
        at(&server, "src/wkw"),
        at(&server, "dst"),
        Format::Zarr3,
        &options(),
        &|_| {},
    )
    .err()
    .ok_or("a replaced source converted without an error")?;
    assert!(
        matches!(&err, wkw_zarr::Error::Remote(e) if matches!(**e, scifmt_io::Error::Changed { .. })),
        "{err:?}"
    );
    assert!(
        err.to_string()
            .contains(&server.url("src/wkw/z0/y0/x0.wkw")),
        "{err}"
    );
    Ok(())
}

#[test]
fn a_corrupt_shard_on_the_store_is_an_error_naming_its_url() -> TestResult {
    let dir = tempfile::tempdir()?;
    let (_, zarr_src) = lz4_mag_and_its_zarr3(dir.path())?;
    let server = TestServer::start()?;
    server.upload_dir(&zarr_src, "src/zarr")?;
    // The first shard's index (at its end) overwritten with 0xff bytes but the last.
    let key = tree(&zarr_src)?
        .into_keys()
        .find(|k| k.starts_with("c/"))
        .ok_or("no shard")?;
    let mut bytes = std::fs::read(zarr_src.join(&key))?;
    let n = bytes.len();
    bytes[n - 40..n - 4].fill(0xff);
    let path = ObjectPath::from(format!("src/zarr/{key}"));
    scifmt_io::block_on(scifmt_io::object_store::ObjectStoreExt::put(
        server.store().as_ref(),
        &path,
        bytes.into(),
    ))??;
    let err = convert(
        at(&server, "src/zarr"),
        dir.path().join("out"),
        Format::Wkw,
        &options(),
        &|_| {},
    )
    .err()
    .ok_or("a corrupt shard converted")?;
    assert!(matches!(err, wkw_zarr::Error::Corrupt { .. }), "{err:?}");
    assert!(
        err.to_string()
            .contains(&server.url(&format!("src/zarr/{key}"))),
        "{err}"
    );
    Ok(())
}

#[test]
fn a_conversion_killed_during_multipart_uploads_resumes_to_the_same_bytes() -> TestResult {
    // Two raw files of 128³ u32 voxels (8 MiB each): every shard is a two-part upload.
    let dir = tempfile::tempdir()?;
    let src = dir.path().join("wkw");
    let header = wkw::Header::new(wkw::VoxelType::U32, 1, 32, 4, wkw::BlockType::Raw)?;
    let ds = wkw::Dataset::create(&src, header)?;
    let mut rng = Lcg(11);
    let values: Vec<u32> = (0..256 * 128 * 128)
        .map(|_| (rng.next_u64() >> 32) as u32 | 1)
        .collect();
    ds.write(
        [0, 0, 0],
        &wkw::Array::from_vec(1, [256, 128, 128], wkw::Order::Fortran, values)?.view(),
    )?;
    let clean = dir.path().join("clean");
    convert(&src, &clean, Format::Zarr3, &options(), &|_| {})?;
    let want = tree(&clean)?;
    let server = TestServer::start()?;
    server.upload_dir(&src, "src/big")?;
    for round in 0..2 {
        let dst = format!("killed-big/{round}");
        let spec = format!(
            "zarr3|{}|{}|{}",
            server.url("src/big"),
            server.url(&dst),
            server.endpoint()
        );
        run_and_kill("remote::s3_kill_child", ENV, &spec, &mut rng);
        // Whatever the kill interrupted, every shard present is complete.
        for (key, bytes) in objects(&server, &dst)? {
            if key != MARKER {
                assert_eq!(Some(&bytes), want.get(&key), "round {round}: {key}");
            }
        }
        let resume = options().with_existing(Existing::Resume);
        convert(
            at(&server, "src/big"),
            at(&server, &dst),
            Format::Zarr3,
            &resume,
            &|_| {},
        )?;
        assert_eq!(objects(&server, &dst)?, want, "round {round}");
    }
    Ok(())
}

/// Replaces the object `key` on the server with `bytes`.
fn put(server: &TestServer, key: &str, bytes: Vec<u8>) -> TestResult {
    scifmt_io::block_on(scifmt_io::object_store::ObjectStoreExt::put(
        server.store().as_ref(),
        &ObjectPath::from(key),
        bytes.into(),
    ))??;
    Ok(())
}

#[test]
fn verify_compares_local_and_s3_sides_and_names_a_differing_or_corrupt_chunk_by_url() -> TestResult
{
    let dir = tempfile::tempdir()?;
    let (wkw_src, zarr_src) = lz4_mag_and_its_zarr3(dir.path())?;
    let server = TestServer::start()?;
    server.upload_dir(&wkw_src, "src/wkw")?;
    server.upload_dir(&zarr_src, "src/zarr")?;
    let o = options();
    // Every mix, either order.
    let pairs: [(Location, Location); 4] = [
        (at(&server, "src/wkw"), Location::from(&zarr_src)),
        (Location::from(&wkw_src), at(&server, "src/zarr")),
        (at(&server, "src/wkw"), at(&server, "src/zarr")),
        (at(&server, "src/zarr"), at(&server, "src/wkw")),
    ];
    for (a, b) in pairs {
        let report = verify(&a, &b, &o, &|_| {})?;
        assert!(report.is_ok(), "{a} {b}: {report:?}");
        assert_eq!(report.arrays, 1);
        assert_eq!(report.blocks, 30 * 8, "{a} {b}");
    }

    // Raw chunks on the store, one byte of one chunk changed: a difference named by URL.
    let raw = o.clone().with_codec(ZarrCodec::None);
    convert(
        &wkw_src,
        at(&server, "raw/zarr"),
        Format::Zarr3,
        &raw,
        &|_| {},
    )?;
    let (key, mut bytes) = objects(&server, "raw/zarr")?
        .into_iter()
        .find(|(k, _)| k.starts_with("c/"))
        .ok_or("no shard")?;
    bytes[100] ^= 0x40;
    put(&server, &format!("raw/zarr/{key}"), bytes)?;
    let report = verify(&wkw_src, at(&server, "raw/zarr"), &raw, &|_| {})?;
    assert_eq!(report.differing_blocks, 1);
    assert_eq!(
        report.differences[0].zarr,
        Path::new(&server.url("raw/zarr"))
    );
    assert_eq!(report.differences[0].wkw, wkw_src);
    assert!(
        report.differences[0]
            .to_string()
            .contains(&server.url("raw/zarr")),
        "{}",
        report.differences[0]
    );

    // A zstd chunk that no longer decodes: an error naming the shard's URL.
    let (key, mut bytes) = tree(&zarr_src)?
        .into_iter()
        .find(|(k, _)| k.starts_with("c/"))
        .ok_or("no shard")?;
    bytes[20] ^= 0xff;
    bytes[21] ^= 0xff;
    put(&server, &format!("src/zarr/{key}"), bytes)?;
    let err = verify(&wkw_src, at(&server, "src/zarr"), &o, &|_| {})
        .err()
        .ok_or("a corrupt chunk verified")?;
    assert!(matches!(err, wkw_zarr::Error::Corrupt { .. }), "{err:?}");
    assert!(
        err.to_string()
            .contains(&server.url(&format!("src/zarr/{key}"))),
        "{err}"
    );
    Ok(())
}
