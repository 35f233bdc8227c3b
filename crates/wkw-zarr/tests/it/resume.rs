//! Existing targets, interrupted conversions and their resumption, and `verify`.

use crate::common;

use std::panic::AssertUnwindSafe;

use common::{OFFSET, TestResult, lz4_mag_and_its_zarr3, make_mag, tree};
use wkw_zarr::{
    BlockType, ConvertOptions, Error, Existing, Format, MARKER, ZarrCodec, convert, verify,
};

#[test]
fn an_existing_target_is_refused_unless_overwritten_or_resumed() -> TestResult {
    let dir = tempfile::tempdir()?;
    let src = dir.path().join("wkw");
    make_mag(&src, BlockType::Lz4)?;
    let dst = dir.path().join("zarr");
    let options = ConvertOptions::default();
    let first = convert(&src, &dst, Format::Zarr3, &options, &|_| {})?;
    assert_eq!(first.shards_written, 30);
    assert!(!dst.join(MARKER).exists());
    let done = tree(&dst)?;

    let err = convert(&src, &dst, Format::Zarr3, &options, &|_| {}).err();
    assert!(
        matches!(&err, Some(Error::TargetExists { path, .. }) if *path == dst),
        "{err:?}"
    );

    // Resuming a finished conversion keeps every shard.
    let again = options.clone().with_existing(Existing::Resume);
    let s = convert(&src, &dst, Format::Zarr3, &again, &|_| {})?;
    assert_eq!((s.shards_written, s.shards_skipped), (0, 30));
    assert_eq!(tree(&dst)?, done);

    // Overwriting with other options replaces it.
    let raw = options
        .clone()
        .with_existing(Existing::Overwrite)
        .with_codec(ZarrCodec::None);
    let s = convert(&src, &dst, Format::Zarr3, &raw, &|_| {})?;
    assert_eq!(s.shards_written, 30);
    assert_ne!(tree(&dst)?, done);
    assert!(verify(&src, &dst, &options, &|_| {})?.is_ok());
    Ok(())
}

#[test]
fn an_interrupted_conversion_resumes_to_the_same_bytes() -> TestResult {
    for to in [Format::Zarr3, Format::Wkw] {
        let dir = tempfile::tempdir()?;
        let (wkw_src, zarr_src) = lz4_mag_and_its_zarr3(dir.path())?;
        let src = if to == Format::Zarr3 {
            &wkw_src
        } else {
            &zarr_src
        };
        let options = ConvertOptions::default().with_threads(2);
        let clean = dir.path().join("clean");
        convert(src, &clean, to, &options, &|_| {})?;

        // Interrupted after the 7th shard: the callback panics, unwinding out of the run.
        let dst = dir.path().join("dst");
        let stop = |p: &wkw_zarr::Progress| assert!(p.done < 7, "interrupted");
        let r =
            std::panic::catch_unwind(AssertUnwindSafe(|| convert(src, &dst, to, &options, &stop)));
        assert!(r.is_err());
        assert!(dst.join(MARKER).exists(), "the marker says: interrupted");
        let partial = tree(&dst)?;
        assert!(partial.len() < tree(&clean)?.len());
        // A stray temporary file, as a SIGKILLed run leaves one.
        let some_dir = dst.join(if to == Format::Zarr3 {
            "c/0/0/0"
        } else {
            "z0/y0"
        });
        std::fs::create_dir_all(&some_dir)?;
        std::fs::write(some_dir.join(".0.a1b2c3.tmp"), b"half")?;

        // Resuming with other settings is refused; with the same ones it completes.
        let other = options
            .clone()
            .with_existing(Existing::Resume)
            .with_codec(ZarrCodec::Zstd { level: 1 })
            .with_block_type(BlockType::Raw);
        let err = convert(src, &dst, to, &other, &|_| {}).err();
        assert!(matches!(err, Some(Error::InvalidArgument(_))), "{err:?}");
        let resume = options.clone().with_existing(Existing::Resume);
        let s = convert(src, &dst, to, &resume, &|_| {})?;
        assert!(s.shards_skipped >= 6, "{s:?}");
        assert_eq!(tree(&dst)?, tree(&clean)?, "{to:?}");
    }
    Ok(())
}

#[test]
fn verify_names_the_first_differing_voxel_of_each_block() -> TestResult {
    let dir = tempfile::tempdir()?;
    let src = dir.path().join("wkw");
    make_mag(&src, BlockType::Raw)?;
    let dst = dir.path().join("zarr");
    convert(
        &src,
        &dst,
        Format::Zarr3,
        &ConvertOptions::default(),
        &|_| {},
    )?;
    let ds = wkw::Dataset::open(&src)?;
    // Channel 1 of voxel (20, 10, 12) changes; and a voxel outside the written box, in a
    // block that is all zero in the Zarr array (absent chunk).
    let mut one = ds.read([20, 10, 12], [1, 1, 1], wkw::Order::Fortran)?;
    one.as_bytes_mut()[2] ^= 1;
    ds.write([20, 10, 12], &one.view())?;
    let v = wkw::Array::from_vec(2, [1, 1, 1], wkw::Order::Fortran, vec![0u16, 9])?;
    ds.write([0, 0, 0], &v.view())?;
    let report = verify(&src, &dst, &ConvertOptions::default(), &|_| {})?;
    assert!(!report.is_ok());
    assert_eq!(report.differing_blocks, 2);
    let mut found: Vec<([u64; 3], u64)> = report
        .differences
        .iter()
        .map(|d| (d.voxel, d.channel))
        .collect();
    found.sort_unstable();
    assert_eq!(found, vec![([0, 0, 0], 1), ([20, 10, 12], 1)]);
    assert!(
        report.differences[0]
            .to_string()
            .contains("differ at voxel")
    );
    // Verification is symmetric in its arguments.
    assert_eq!(
        verify(&dst, &src, &ConvertOptions::default(), &|_| {})?.differing_blocks,
        2
    );
    let _ = OFFSET;
    Ok(())
}

#[test]
fn a_corrupt_shard_index_is_an_error_naming_the_shard() -> TestResult {
    let dir = tempfile::tempdir()?;
    let src = dir.path().join("wkw");
    make_mag(&src, BlockType::Lz4)?;
    let zarr = dir.path().join("zarr");
    convert(
        &src,
        &zarr,
        Format::Zarr3,
        &ConvertOptions::default(),
        &|_| {},
    )?;
    let shard = zarr.join("c/0/1/1/0");
    let mut bytes = std::fs::read(&shard)?;
    let n = bytes.len();
    bytes[n - 10] ^= 0x40; // inside the index: the checksum no longer matches
    std::fs::write(&shard, &bytes)?;
    let err = convert(
        &zarr,
        dir.path().join("back"),
        Format::Wkw,
        &ConvertOptions::default(),
        &|_| {},
    )
    .err();
    match err {
        Some(Error::Corrupt { path, what }) => {
            assert_eq!(path, shard);
            assert!(what.contains("checksum"), "{what}");
        }
        other => panic!("{other:?}"),
    }
    // A chunk that does not decode (index intact): named with its block.
    let shard = zarr.join("c/0/2/1/0");
    let mut bytes = std::fs::read(&shard)?;
    bytes[20] ^= 0xff;
    std::fs::write(&shard, &bytes)?;
    let err = verify(&src, &zarr, &ConvertOptions::default(), &|_| {}).err();
    assert!(
        matches!(&err, Some(Error::Corrupt { path, .. }) if *path == shard || path.ends_with("c/0/1/1/0")),
        "{err:?}"
    );
    Ok(())
}

#[test]
fn unsupported_arrays_are_refused_naming_the_document() -> TestResult {
    let dir = tempfile::tempdir()?;
    let src = dir.path().join("wkw");
    make_mag(&src, BlockType::Lz4)?;
    let zarr = dir.path().join("zarr");
    convert(
        &src,
        &zarr,
        Format::Zarr3,
        &ConvertOptions::default(),
        &|_| {},
    )?;
    let meta = zarr.join("zarr.json");
    let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(&meta)?)?;
    // Shards splitting the 2 channels, and an inner compressor this crate lacks.
    for (pointer, value) in [
        (
            "/chunk_grid/configuration/chunk_shape",
            serde_json::json!([1, 16, 16, 16]),
        ),
        (
            "/codecs/0/configuration/codecs/2",
            serde_json::json!({"name": "numcodecs.lzma", "configuration": {"preset": 5}}),
        ),
    ] {
        let mut d = doc.clone();
        *d.pointer_mut(pointer).ok_or("no such field")? = value;
        std::fs::write(&meta, serde_json::to_vec(&d)?)?;
        let err = convert(
            &zarr,
            dir.path().join("back"),
            Format::Wkw,
            &ConvertOptions::default().with_existing(Existing::Overwrite),
            &|_| {},
        )
        .err();
        assert!(
            matches!(&err, Some(Error::Unsupported { path, .. }) if *path == meta),
            "{pointer}: {err:?}"
        );
    }
    Ok(())
}
