//! Missing, short, corrupt and truncated files, mismatching headers and hostile geometry: an
//! `Err` where the reference (`wkwrap` / the `wkw` Python package) silently returns zeros or
//! aborts, zeros only under `MissingOrCorrupt::Zeros` where the reference does so, and never a
//! panic. Each error is the variant that says what happened: bad input is never reported as
//! [`Error::Internal`] (a bug), bad constructor arguments are [`Error::InvalidArgument`].
// Helpers outside #[test] functions unwrap and panic like the tests themselves.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::path::Path;

use common::*;
use wkw::{Dataset, Error, FormatError, HeaderCheck, MissingOrCorrupt, Options, Order};

/// F3 (LZ4HC f32): the only file is z1/y0/x1.wkw, file side 32.
const F3: &str = "f32_lz4hc_b16_f2";
const F3_FILE: &str = "z1/y0/x1.wkw";
const F3_BOX: ([u32; 3], [u32; 3]) = ([32, 0, 32], [32, 32, 32]);

fn zeros_opts() -> Options {
    Options::default().with_missing_or_corrupt(MissingOrCorrupt::Zeros)
}

fn read_f3(root: &Path, opts: Options) -> wkw::Result<wkw::Array> {
    let ds = Dataset::open_with(root, opts)?;
    ds.read(F3_BOX.0, F3_BOX.1, Order::Fortran)
}

fn mutate(root: &Path, rel: &str, f: impl FnOnce(&mut Vec<u8>)) {
    let p = root.join(rel);
    let mut b = std::fs::read(&p).unwrap();
    f(&mut b);
    std::fs::write(&p, b).unwrap();
}

fn is_zero(a: &wkw::Array) -> bool {
    a.as_bytes().iter().all(|&b| b == 0)
}

fn format_error(r: wkw::Result<wkw::Array>) -> FormatError {
    match r {
        Err(Error::Format { source, .. }) => source,
        other => panic!("expected a format error, got {other:?}"),
    }
}

#[test]
fn missing_file_reads_zeros() {
    let dir = copy_fixture(F3);
    std::fs::remove_file(dir.path().join(F3_FILE)).unwrap();
    assert!(is_zero(&read_f3(dir.path(), Options::default()).unwrap()));
}

#[test]
fn short_file_is_an_error_or_zeros_when_lenient() {
    for len in [0usize, 10, 15] {
        let dir = copy_fixture(F3);
        mutate(dir.path(), F3_FILE, |b| b.truncate(len));
        assert!(matches!(
            format_error(read_f3(dir.path(), Options::default())),
            FormatError::Truncated { what: "header", .. }
        ));
        assert!(is_zero(&read_f3(dir.path(), zeros_opts()).unwrap()));
    }
}

#[test]
fn bad_magic_version_types_are_errors_or_zeros_when_lenient() {
    type Check = fn(&FormatError) -> bool;
    let cases: [(usize, u8, Check); 5] = [
        (0, b'X', |e| matches!(e, FormatError::BadMagic { .. })),
        (3, 2, |e| matches!(e, FormatError::UnsupportedVersion(2))),
        (5, 4, |e| matches!(e, FormatError::InvalidBlockType(4))),
        (6, 11, |e| matches!(e, FormatError::InvalidVoxelType(11))),
        (7, 3, |e| matches!(e, FormatError::InvalidVoxelSize { .. })),
    ];
    for (at, value, check) in cases {
        let dir = copy_fixture(F3);
        mutate(dir.path(), F3_FILE, |b| b[at] = value);
        let e = format_error(read_f3(dir.path(), Options::default()));
        assert!(check(&e), "byte {at} = {value}: {e:?}");
        assert!(is_zero(&read_f3(dir.path(), zeros_opts()).unwrap()));
    }
}

#[test]
fn lz4_truncated_inside_jump_table() {
    let dir = copy_fixture(F3);
    mutate(dir.path(), F3_FILE, |b| b.truncate(40));
    assert!(matches!(
        format_error(read_f3(dir.path(), Options::default())),
        FormatError::Truncated {
            what: "jump table",
            ..
        }
    ));
    assert!(is_zero(&read_f3(dir.path(), zeros_opts()).unwrap()));
}

#[test]
fn lz4_truncated_inside_block_data_is_an_error_under_both_policies() {
    let dir = copy_fixture(F3);
    mutate(dir.path(), F3_FILE, |b| b.truncate(b.len() - 10));
    for opts in [Options::default(), zeros_opts()] {
        assert!(matches!(
            format_error(read_f3(dir.path(), opts)),
            FormatError::BlockPastEnd { index: 7, .. }
        ));
    }
}

#[test]
fn jump_table_zeroed_or_not_monotone_is_an_error() {
    let dir = copy_fixture(F3);
    mutate(dir.path(), F3_FILE, |b| b[16..80].fill(0));
    for opts in [Options::default(), zeros_opts()] {
        assert!(matches!(
            format_error(read_f3(dir.path(), opts)),
            FormatError::JumpTableNotMonotone {
                index: 0,
                offset: 16,
                ..
            }
        ));
    }
    let dir = copy_fixture(F3);
    // Swap entries 2 and 3.
    mutate(dir.path(), F3_FILE, |b| {
        let (e2, e3) = (b[32..40].to_vec(), b[40..48].to_vec());
        b[32..40].copy_from_slice(&e3);
        b[40..48].copy_from_slice(&e2);
    });
    assert!(matches!(
        format_error(read_f3(dir.path(), Options::default())),
        FormatError::JumpTableNotMonotone { .. }
    ));
}

#[test]
fn block_longer_than_lz4_bound_is_an_error() {
    let dir = copy_fixture(F3);
    // Entry 0 = dataOffset + 1 MiB, all later entries pushed past it, file padded to match.
    mutate(dir.path(), F3_FILE, |b| {
        let big = 80u64 + (1 << 20);
        for k in 0..8 {
            b[16 + 8 * k..24 + 8 * k].copy_from_slice(&(big + k as u64).to_le_bytes());
        }
        b.resize(usize::try_from(big + 8).unwrap(), 0);
    });
    assert!(matches!(
        format_error(read_f3(dir.path(), Options::default())),
        FormatError::BlockTooLong { index: 0, .. }
    ));
}

#[test]
fn garbage_compressed_bytes_are_an_error() {
    let dir = copy_fixture(F3);
    mutate(dir.path(), F3_FILE, |b| {
        let start = usize::try_from(u64::from_le_bytes(b[16..24].try_into().unwrap())).unwrap();
        for v in &mut b[80..start] {
            *v = 0xff;
        }
    });
    for opts in [Options::default(), zeros_opts()] {
        assert!(matches!(
            format_error(read_f3(dir.path(), opts)),
            FormatError::Decompress {
                index: 0,
                offset: 80,
                ..
            }
        ));
    }
}

#[test]
fn trailing_bytes_after_the_last_block_are_ignored() {
    let dir = copy_fixture(F3);
    let want = read_f3(dir.path(), Options::default()).unwrap();
    mutate(dir.path(), F3_FILE, |b| b.extend_from_slice(&[0xaa; 100]));
    assert_eq!(read_f3(dir.path(), Options::default()).unwrap(), want);
}

#[test]
fn lz4_file_with_data_offset_zero_is_an_error_not_an_abort() {
    let dir = copy_fixture(F3);
    // header.wkw copied over a data file (the reference aborts the process on this).
    std::fs::copy(dir.path().join("header.wkw"), dir.path().join(F3_FILE)).unwrap();
    assert!(matches!(
        format_error(read_f3(dir.path(), Options::default())),
        FormatError::DataOffset { found: 0, .. }
    ));
    assert!(is_zero(&read_f3(dir.path(), zeros_opts()).unwrap()));
}

#[test]
fn leftover_reference_tmp_file_is_ignored_and_writes_work() {
    let dir = copy_fixture(F3);
    let f = dir.path().join(F3_FILE);
    std::fs::rename(&f, dir.path().join("z1/y0/x1.wkw_tmp")).unwrap();
    assert!(is_zero(&read_f3(dir.path(), Options::default()).unwrap()));
    let ds = Dataset::open(dir.path()).unwrap();
    let data = build(
        wkw::VoxelType::F32,
        1,
        F3_BOX.0,
        F3_BOX.1,
        Order::C,
        f3_value,
    );
    ds.write(F3_BOX.0, &data.view()).unwrap();
    assert_eq!(ds.read(F3_BOX.0, F3_BOX.1, Order::C).unwrap(), data);
}

#[test]
fn raw_file_truncated_inside_block_data() {
    // F1: one raw file of 64 blocks of 512 bytes at 16 + 512k.
    let dir = copy_fixture("u8_raw_b8_f4");
    mutate(dir.path(), "z0/y0/x0.wkw", |b| {
        b.truncate(16 + 512 * 10 + 100)
    });
    let ds = Dataset::open(dir.path()).unwrap();
    // Block 0 (voxels 0..8) is complete; block 10 = Morton (2, 1, 0) (x 16..24, y 8..16) is cut.
    let ok = ds.read([0, 0, 0], [8, 8, 8], Order::Fortran).unwrap();
    let want = build(
        wkw::VoxelType::U8,
        1,
        [0; 3],
        [8; 3],
        Order::Fortran,
        f1_value,
    );
    assert_eq!(ok, want);
    let e = ds.read([16, 8, 0], [8, 8, 8], Order::Fortran);
    assert!(matches!(
        format_error(e),
        FormatError::BlockPastEnd { index: 10, .. }
    ));
    // A write into the truncated file is refused (default) rather than half-applied.
    let data = build(
        wkw::VoxelType::U8,
        1,
        [0; 3],
        [4; 3],
        Order::Fortran,
        f1_value,
    );
    assert!(ds.write([0, 0, 0], &data.view()).is_err());
    // The verify report names the file.
    let report = wkw::verify(dir.path(), Options::default(), &|_| {}).unwrap();
    assert_eq!(report.problems().count(), 1);
}

#[test]
fn header_mismatch_is_an_error_lenient_decodes_with_the_file_header() {
    // F6's LZ4HC files dropped into a copy of F4 (RAW header.wkw).
    let dir = copy_fixture("u64_raw_b4_f2_multi");
    let f6 = testdata().join("u64_lz4hc_from_compress");
    std::fs::copy(f6.join("z1/y0/x1.wkw"), dir.path().join("z1/y0/x1.wkw")).unwrap();
    let ds = Dataset::open(dir.path()).unwrap();
    let e = ds.read([8, 0, 8], [8, 8, 8], Order::Fortran);
    assert!(matches!(
        format_error(e),
        FormatError::HeaderMismatch {
            field: "blockType",
            file: 3,
            dataset: 1
        }
    ));
    // A partial write into it is refused too (the reference would corrupt it).
    let data = build(wkw::VoxelType::U64, 1, [8, 0, 8], [2; 3], Order::C, f4_d1);
    assert!(ds.write([8, 0, 8], &data.view()).is_err());
    let lenient = Dataset::open_with(
        dir.path(),
        Options::default().with_header_check(HeaderCheck::Lenient),
    )
    .unwrap();
    let reference = Dataset::open(testdata().join("u64_raw_b4_f2_multi")).unwrap();
    assert_eq!(
        lenient.read([0, 0, 0], [24, 16, 24], Order::C).unwrap(),
        reference.read([0, 0, 0], [24, 16, 24], Order::C).unwrap()
    );
    // Lenient writes keep the file's own block type and stay readable.
    lenient.write([8, 0, 8], &data.view()).unwrap();
    assert_eq!(lenient.read([8, 0, 8], [2; 3], Order::C).unwrap(), data);
    let bytes = std::fs::read(dir.path().join("z1/y0/x1.wkw")).unwrap();
    assert_eq!(
        wkw::Header::parse(&bytes).unwrap().block_type(),
        wkw::BlockType::Lz4Hc
    );
    // Geometry mismatches are errors even when lenient.
    let mut b = bytes;
    b[4] = 0x13;
    std::fs::write(dir.path().join("z1/y0/x1.wkw"), b).unwrap();
    assert!(lenient.read([8, 0, 8], [2; 3], Order::C).is_err());
}

#[test]
fn corrupt_file_is_not_overwritten_unless_zeros_policy() {
    let dir = copy_fixture(F3);
    mutate(dir.path(), F3_FILE, |b| b[0] = b'X');
    let data = build(
        wkw::VoxelType::F32,
        1,
        [40, 0, 40],
        [4; 3],
        Order::C,
        f3_value,
    );
    let ds = Dataset::open(dir.path()).unwrap();
    assert!(ds.write([40, 0, 40], &data.view()).is_err());
    let ds = Dataset::open_with(dir.path(), zeros_opts()).unwrap();
    ds.write([40, 0, 40], &data.view()).unwrap();
    let back = ds.read([32, 0, 32], [32; 3], Order::Fortran).unwrap();
    let strict = Dataset::open(dir.path()).unwrap();
    assert_eq!(
        strict.read([32, 0, 32], [32; 3], Order::Fortran).unwrap(),
        back
    );
    assert_eq!(ds.read([40, 0, 40], [4; 3], Order::C).unwrap(), data);
}

#[test]
fn dataset_level_errors() {
    let dir = tempfile::tempdir().unwrap();
    assert!(matches!(
        Dataset::open(dir.path()),
        Err(Error::NotADataset { .. })
    ));
    let h = wkw::Header::new(wkw::VoxelType::U8, 1, 8, 4, wkw::BlockType::Raw).unwrap();
    Dataset::create(dir.path(), h).unwrap();
    assert!(matches!(
        Dataset::create(dir.path(), h),
        Err(Error::AlreadyExists { .. })
    ));
    let ds = Dataset::open(dir.path()).unwrap();
    assert!(matches!(
        ds.read([u32::MAX, 0, 0], [2, 1, 1], Order::C),
        Err(Error::BoxOutOfRange { .. })
    ));
    // Last voxel of the coordinate range is addressable.
    assert!(is_zero(
        &ds.read([u32::MAX, 0, 0], [1, 1, 1], Order::C).unwrap()
    ));
    let wrong = wkw::Array::zeros(wkw::VoxelType::U16, 1, [2; 3], Order::C).unwrap();
    assert!(matches!(
        ds.write([0; 3], &wrong.view()),
        Err(Error::ArrayMismatch(_))
    ));
    let mut limits = wkw::Limits::default();
    limits.max_read_bytes = 100;
    let ds = Dataset::open_with(dir.path(), Options::default().with_limits(limits)).unwrap();
    assert!(matches!(
        ds.read([0; 3], [5, 5, 5], Order::C),
        Err(Error::LimitExceeded { .. })
    ));
    // header.wkw with a data offset is refused when strict.
    mutate(dir.path(), "header.wkw", |b| b[8] = 16);
    assert!(Dataset::open(dir.path()).is_err());
    assert!(
        Dataset::open_with(
            dir.path(),
            Options::default().with_header_check(HeaderCheck::Lenient)
        )
        .is_ok()
    );
    // Invalid constructor arguments are `InvalidArgument`, not internal errors.
    for (vt, channels, block_len) in [
        (wkw::VoxelType::U8, 1, 3),
        (wkw::VoxelType::U8, 0, 8),
        (wkw::VoxelType::U64, 32, 8),
    ] {
        assert!(matches!(
            wkw::Header::new(vt, channels, block_len, 4, wkw::BlockType::Raw),
            Err(Error::InvalidArgument(_))
        ));
    }
}

#[test]
fn internal_errors_say_they_are_bugs_to_report() {
    let e = Error::Internal {
        what: "read unit: slot".into(),
    };
    let text = e.to_string();
    assert!(text.contains("bug"), "{text}");
    assert!(text.contains("please report"), "{text}");
    assert!(text.ends_with("read unit: slot"), "{text}");
}

#[test]
fn hostile_geometry_is_refused_without_allocating() {
    let dir = copy_fixture(F3);
    // file_len_log2 15 with LZ4: 2^45 blocks (8 * 2^45 bytes of jump table) -> refused.
    mutate(dir.path(), F3_FILE, |b| b[4] = 0xf4);
    assert!(read_f3(dir.path(), Options::default()).is_err());
    let mut h = [0x57, 0x4b, 0x57, 1, 0xff, 2, 4, 8, 0, 0, 0, 0, 0, 0, 0, 0];
    assert!(matches!(
        wkw::Header::parse(&h),
        Err(FormatError::Geometry { .. })
    ));
    h[4] = 0x7f; // 2^7 blocks × 2^15 voxels per side: file side 2^22, ok; bytes 2^66·8 overflow.
    assert!(matches!(
        wkw::Header::parse(&h),
        Err(FormatError::Geometry { .. })
    ));
}

/// Every file below `root` with its bytes, sorted by path.
fn tree(root: &Path) -> Vec<(std::path::PathBuf, Vec<u8>)> {
    fn walk(dir: &Path, out: &mut Vec<(std::path::PathBuf, Vec<u8>)>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(&p, out);
            } else {
                let bytes = std::fs::read(&p).unwrap();
                out.push((p, bytes));
            }
        }
    }
    let mut v = Vec::new();
    walk(root, &mut v);
    v.sort();
    v
}

#[test]
fn compress_refuses_a_destination_that_overlaps_the_source() {
    let dir = copy_fixture(F3);
    let src = dir.path();
    let before = tree(src);
    let parent = src.parent().unwrap();
    let name = src.file_name().unwrap();
    let cases = [
        (src.to_path_buf(), wkw::Overlap::Same),
        (src.join("."), wkw::Overlap::Same),
        (src.join("z1/..").join(""), wkw::Overlap::Same),
        (src.join("sub"), wkw::Overlap::OutputInsideInput),
        (src.join("z1"), wkw::Overlap::OutputInsideInput),
        (parent.to_path_buf(), wkw::Overlap::InputInsideOutput),
        (parent.join(name).join("..").join(name), wkw::Overlap::Same),
    ];
    for (dst, want) in cases {
        match wkw::compress(src, &dst, wkw::BlockType::Raw, Options::default(), &|_| {}) {
            Err(e @ Error::Overlap { .. }) => {
                let Error::Overlap { how, .. } = &e else {
                    unreachable!()
                };
                assert_eq!(*how, want, "{}", dst.display());
                let m = e.to_string();
                assert!(
                    m.contains(&src.display().to_string())
                        && m.contains(&dst.display().to_string()),
                    "{m}"
                );
            }
            other => panic!("{}: {other:?}", dst.display()),
        }
        assert_eq!(tree(src), before, "{}", dst.display());
    }
    #[cfg(unix)]
    {
        let other = tempfile::tempdir().unwrap();
        let link = other.path().join("link");
        std::os::unix::fs::symlink(src, &link).unwrap();
        assert!(matches!(
            wkw::compress(src, &link, wkw::BlockType::Raw, Options::default(), &|_| {}),
            Err(Error::Overlap {
                how: wkw::Overlap::Same,
                ..
            })
        ));
        assert_eq!(tree(src), before);
    }
    // Apart: converted.
    let out = tempfile::tempdir().unwrap();
    wkw::compress(
        src,
        out.path().join("raw"),
        wkw::BlockType::Raw,
        Options::default(),
        &|_| {},
    )
    .unwrap();
}
