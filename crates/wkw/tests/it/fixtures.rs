//! Conformance against the reference-made fixtures in `testdata/wkw` (see its MANIFEST.md):
//! every read hash in both layouts, header bytes, byte-exact raw writes, decoded-content LZ4
//! writes, and `compress` F4 → F6.
// Helpers outside #[test] functions unwrap and panic like the tests themselves.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use common::*;
use wkw::{BlockType, Dataset, Header, Order, VoxelType};

const DATASETS: [&str; 13] = [
    "u8_raw_b8_f4",
    "u16_3ch_lz4_b8_f4",
    "f32_lz4hc_b16_f2",
    "u64_raw_b4_f2_multi",
    "i16_2ch_raw_b8_f2",
    "u64_lz4hc_from_compress",
    "u8_lz4_b32_f4",
    "u8_default_header_only",
    "i8_raw_b8_f2",
    "u32_2ch_lz4_b8_f2",
    "i32_lz4hc_b8_f2",
    "i64_raw_b4_f2_multi",
    "f64_lz4_b8_f2",
];

fn voxel_type_name(vt: VoxelType) -> &'static str {
    match vt {
        VoxelType::U8 => "uint8",
        VoxelType::U16 => "uint16",
        VoxelType::U32 => "uint32",
        VoxelType::U64 => "uint64",
        VoxelType::F32 => "float32",
        VoxelType::F64 => "float64",
        VoxelType::I8 => "int8",
        VoxelType::I16 => "int16",
        VoxelType::I32 => "int32",
        VoxelType::I64 => "int64",
        _ => "unknown",
    }
}

#[test]
fn every_read_hash_matches_in_both_layouts() {
    let exp = expected();
    let mut checked = 0;
    for name in DATASETS {
        let e = &exp[name];
        let ds = Dataset::open(testdata().join(name)).unwrap();
        let h = ds.header();
        assert_eq!(
            u64::from(h.block_len()),
            e["header"]["block_len"].as_u64().unwrap()
        );
        assert_eq!(
            u64::from(h.file_len()),
            e["header"]["file_len"].as_u64().unwrap()
        );
        assert_eq!(
            u64::from(h.block_type().to_u8()),
            e["header"]["block_type"].as_u64().unwrap()
        );
        assert_eq!(
            u64::from(h.num_channels()),
            e["header"]["num_channels"].as_u64().unwrap()
        );
        assert_eq!(voxel_type_name(h.voxel_type()), e["header"]["voxel_type"]);
        for r in e["reads"].as_array().unwrap() {
            let (off, shape) = (xyz(&r["offset_xyz"]), xyz(&r["shape_xyz"]));
            let f = ds.read(off, shape, Order::Fortran).unwrap();
            assert_eq!(
                sha256(f.as_bytes()),
                r["sha256_fortran_bytes"],
                "{name} {off:?} F"
            );
            let c = ds.read(off, shape, Order::C).unwrap();
            assert_eq!(
                sha256(c.as_bytes()),
                r["sha256_c_bytes"],
                "{name} {off:?} C"
            );
            // read_into a dirty buffer overwrites every byte (missing files included).
            let mut buf = vec![0xa5u8; f.as_bytes().len()];
            let mut view =
                wkw::ArrayViewMut::new(h.voxel_type(), h.num_channels(), shape, Order::C, &mut buf)
                    .unwrap();
            ds.read_into(off, &mut view).unwrap();
            assert_eq!(
                sha256(&buf),
                r["sha256_c_bytes"],
                "{name} {off:?} read_into C"
            );
            let ts = usize::from(h.voxel_type().size());
            let nonzero = f
                .as_bytes()
                .chunks(ts)
                .filter(|v| v.iter().any(|&b| b != 0))
                .count();
            assert_eq!(
                nonzero as u64,
                r["nonzero_voxels"].as_u64().unwrap(),
                "{name}"
            );
            checked += 1;
        }
    }
    assert_eq!(checked, 24);
}

#[test]
fn fixture_files_are_intact_and_headers_round_trip() {
    let exp = expected();
    for name in DATASETS {
        for (rel, f) in exp[name]["files"].as_object().unwrap() {
            let bytes = std::fs::read(testdata().join(name).join(rel)).unwrap();
            assert_eq!(
                bytes.len() as u64,
                f["size"].as_u64().unwrap(),
                "{name}/{rel}"
            );
            assert_eq!(sha256(&bytes), f["sha256"], "{name}/{rel}");
            let h = Header::parse(&bytes).unwrap();
            assert_eq!(h.to_bytes()[..], bytes[..16], "{name}/{rel}");
            if rel == "header.wkw" {
                assert_eq!(h.data_offset(), 0);
            } else {
                h.check_data_offset().unwrap();
            }
        }
    }
}

/// The header table of MANIFEST.md.
#[test]
fn manifest_header_bytes() {
    let cases = [
        (
            "u8_raw_b8_f4/z0/y0/x0.wkw",
            "574b5701230101011000000000000000",
        ),
        (
            "u16_3ch_lz4_b8_f4/z0/y0/x0.wkw",
            "574b5701230202061002000000000000",
        ),
        (
            "f32_lz4hc_b16_f2/z1/y0/x1.wkw",
            "574b5701140305045000000000000000",
        ),
        (
            "i16_2ch_raw_b8_f2/header.wkw",
            "574b5701130108040000000000000000",
        ),
        (
            "u64_lz4hc_from_compress/header.wkw",
            "574b5701120304080000000000000000",
        ),
        (
            "u8_lz4_b32_f4/z0/y0/x0.wkw",
            "574b5701250201011002000000000000",
        ),
        (
            "u8_default_header_only/header.wkw",
            "574b5701550101010000000000000000",
        ),
    ];
    for (rel, hex_bytes) in cases {
        let bytes = std::fs::read(testdata().join(rel)).unwrap();
        assert_eq!(hex::encode(&bytes[..16]), hex_bytes, "{rel}");
    }
    let h = Header::new(VoxelType::U8, 1, 32, 32, BlockType::Raw).unwrap();
    assert_eq!(
        hex::encode(h.to_bytes()),
        "574b5701550101010000000000000000"
    );
    let h = Header::new(VoxelType::U16, 3, 8, 4, BlockType::Lz4).unwrap();
    assert_eq!(
        hex::encode(h.for_data_file().to_bytes()),
        "574b5701230202061002000000000000"
    );
}

/// Formula check independent of the hashes: F1 read 1 equals (X + 3Y + 7Z) mod 256.
#[test]
fn f1_formula() {
    let ds = Dataset::open(testdata().join("u8_raw_b8_f4")).unwrap();
    let a = ds.read([0, 0, 0], [32, 32, 32], Order::C).unwrap();
    let want = build(VoxelType::U8, 1, [0; 3], [32; 3], Order::C, f1_value);
    assert_eq!(a, want);
}

fn assert_files_equal(ours: &std::path::Path, name: &str) {
    let exp = expected();
    let files = exp[name]["files"].as_object().unwrap();
    let listed = wkw::Dataset::open(ours).unwrap().list_files().unwrap();
    assert_eq!(listed.len() + 1, files.len(), "{name}: file count");
    for (rel, f) in files {
        let bytes = std::fs::read(ours.join(rel)).unwrap();
        assert_eq!(
            sha256(&bytes),
            f["sha256"],
            "{name}/{rel} differs from the reference"
        );
    }
}

#[test]
fn raw_writes_are_byte_exact_f1() {
    // Both layouts of the written array (the Fortran one was checked by `cargo xtask
    // conformance` before that check moved here).
    for order in [Order::C, Order::Fortran] {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("ds");
        let ds = Dataset::create(
            &root,
            Header::new(VoxelType::U8, 1, 8, 4, BlockType::Raw).unwrap(),
        )
        .unwrap();
        let data = build(VoxelType::U8, 1, [0; 3], [32; 3], order, f1_value);
        ds.write([0, 0, 0], &data.view()).unwrap();
        assert_files_equal(&root, "u8_raw_b8_f4");
    }
}

#[test]
fn raw_writes_are_byte_exact_f4_multi_file_partial_blocks() {
    for (o1, o2) in [(Order::C, Order::Fortran), (Order::Fortran, Order::C)] {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("ds");
        let header = Header::new(VoxelType::U64, 1, 4, 2, BlockType::Raw).unwrap();
        let ds = Dataset::create(&root, header).unwrap();
        let d1 = build(VoxelType::U64, 1, [5, 3, 10], [13, 7, 9], o1, f4_d1);
        ds.write([5, 3, 10], &d1.view()).unwrap();
        let d2 = build(VoxelType::U64, 1, [0, 0, 0], [6, 4, 11], o2, f4_d2);
        ds.write([0, 0, 0], &d2.view()).unwrap();
        assert_files_equal(&root, "u64_raw_b4_f2_multi");
    }
}

#[test]
fn raw_writes_are_byte_exact_f5_two_channels() {
    for order in [Order::Fortran, Order::C] {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("ds");
        let header = Header::new(VoxelType::I16, 2, 8, 2, BlockType::Raw).unwrap();
        let ds = Dataset::create(&root, header).unwrap();
        let data = build(VoxelType::I16, 2, [3, 5, 7], [10, 6, 4], order, f5_value);
        ds.write([3, 5, 7], &data.view()).unwrap();
        assert_files_equal(&root, "i16_2ch_raw_b8_f2");
    }
}

/// Structure of a compressed file: header, dataOffset = 16 + 8N, monotone jump table, file
/// length = last entry.
fn check_lz4_structure(path: &std::path::Path, block_type: BlockType) {
    let bytes = std::fs::read(path).unwrap();
    let h = Header::parse(&bytes).unwrap();
    assert_eq!(h.block_type(), block_type);
    let n = usize::try_from(h.blocks_per_file()).unwrap();
    assert_eq!(h.data_offset(), 16 + 8 * n as u64);
    let mut prev = h.data_offset();
    for k in 0..n {
        let e = u64::from_le_bytes(bytes[16 + 8 * k..24 + 8 * k].try_into().unwrap());
        assert!(
            e > prev,
            "{}: block {k} empty or not monotone",
            path.display()
        );
        prev = e;
    }
    assert_eq!(prev, bytes.len() as u64);
}

/// Compares every file of two datasets by decoded content (whole file cube).
fn assert_same_content(a: &Dataset, b: &Dataset) {
    let fa = a.list_files().unwrap();
    let fb = b.list_files().unwrap();
    assert_eq!(
        fa.iter().map(|f| f.0).collect::<Vec<_>>(),
        fb.iter().map(|f| f.0).collect::<Vec<_>>()
    );
    let side = a.header().file_len_vx();
    for (idx, _) in fa {
        let off = idx.map(|i| i * side);
        let x = a.read(off, [side; 3], Order::Fortran).unwrap();
        let y = b.read(off, [side; 3], Order::Fortran).unwrap();
        assert!(x == y, "file {idx:?} differs");
    }
}

#[test]
fn lz4_writes_decode_like_the_reference_f2_f3_f7() {
    type Make = Box<dyn Fn(Order) -> wkw::Array>;
    let cases: [(&str, Header, [u32; 3], Make); 3] = [
        (
            "u16_3ch_lz4_b8_f4",
            Header::new(VoxelType::U16, 3, 8, 4, BlockType::Lz4).unwrap(),
            [0, 0, 0],
            Box::new(|o| build(VoxelType::U16, 3, [0; 3], [64, 32, 32], o, f2_value)),
        ),
        (
            "f32_lz4hc_b16_f2",
            Header::new(VoxelType::F32, 1, 16, 2, BlockType::Lz4Hc).unwrap(),
            [32, 0, 32],
            Box::new(|o| build(VoxelType::F32, 1, [32, 0, 32], [32; 3], o, f3_value)),
        ),
        (
            "u8_lz4_b32_f4",
            Header::new(VoxelType::U8, 1, 32, 4, BlockType::Lz4).unwrap(),
            [0, 0, 0],
            Box::new(|o| build(VoxelType::U8, 1, [0; 3], [128; 3], o, f1_value)),
        ),
    ];
    for (name, header, off, data) in cases {
        for order in [Order::C, Order::Fortran] {
            let dir = tempfile::tempdir().unwrap();
            let root = dir.path().join("ds");
            let ds = Dataset::create(&root, header).unwrap();
            ds.write(off, &data(order).view()).unwrap();
            let reference = Dataset::open(testdata().join(name)).unwrap();
            assert_same_content(&ds, &reference);
            for (_, p) in ds.list_files().unwrap() {
                check_lz4_structure(&p, header.block_type());
            }
            // header.wkw is byte-exact.
            assert_eq!(
                std::fs::read(root.join("header.wkw")).unwrap(),
                std::fs::read(testdata().join(name).join("header.wkw")).unwrap()
            );
        }
    }
}

#[test]
fn compress_f4_gives_f6_content() {
    let dir = tempfile::tempdir().unwrap();
    let dst = dir.path().join("f6");
    let calls = std::sync::atomic::AtomicUsize::new(0);
    let ds = wkw::compress(
        testdata().join("u64_raw_b4_f2_multi"),
        &dst,
        BlockType::Lz4Hc,
        wkw::Options::default(),
        &|p| {
            assert_eq!(p.total, 13);
            assert!(p.done >= 1 && p.done <= 13);
            calls.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        },
    )
    .unwrap();
    assert_eq!(calls.into_inner(), 13);
    let reference = Dataset::open(testdata().join("u64_lz4hc_from_compress")).unwrap();
    assert_same_content(&ds, &reference);
    assert_eq!(
        std::fs::read(dst.join("header.wkw")).unwrap(),
        std::fs::read(testdata().join("u64_lz4hc_from_compress/header.wkw")).unwrap()
    );
    for (_, p) in ds.list_files().unwrap() {
        check_lz4_structure(&p, BlockType::Lz4Hc);
    }
    // And back to raw: byte-exact with F4.
    let raw = dir.path().join("raw");
    wkw::compress(&dst, &raw, BlockType::Raw, wkw::Options::default(), &|_| {}).unwrap();
    assert_files_equal(&raw, "u64_raw_b4_f2_multi");
    // The same conversion on the calling thread, with fsync: the same bytes.
    let serial = dir.path().join("raw-serial");
    let options = wkw::Options::default()
        .with_threads(wkw::Threads::Caller)
        .with_durability(wkw::Durability::Fsync);
    wkw::compress(&dst, &serial, BlockType::Raw, options, &|_| {}).unwrap();
    assert_files_equal(&serial, "u64_raw_b4_f2_multi");
    // Verify passes on every fixture.
    for name in DATASETS {
        let report = wkw::verify(testdata().join(name), wkw::Options::default(), &|_| {}).unwrap();
        assert!(
            report.is_ok(),
            "{name}: {:?}",
            report.problems().collect::<Vec<_>>()
        );
    }
}

/// `inspect_file` on reference-made files: compressed files list one stored length per block,
/// summing to the bytes between the data offset and the end of the last block (the jump
/// table's last entry, read here independently); raw files have none.
#[test]
fn inspect_file_reports_the_jump_table_of_reference_files() {
    let limits = wkw::Limits::default();
    for name in DATASETS {
        let ds = Dataset::open(testdata().join(name)).unwrap();
        for (_, path) in ds.list_files().unwrap() {
            let info = wkw::inspect_file(&path, &limits).unwrap();
            let bytes = std::fs::read(&path).unwrap();
            assert_eq!(info.file_len, bytes.len() as u64);
            assert_eq!(info.header, Header::parse(&bytes[..16]).unwrap());
            let n = info.header.blocks_per_file();
            match &info.block_lengths {
                Some(lengths) => {
                    assert!(info.header.block_type().is_compressed());
                    assert_eq!(lengths.len() as u64, n);
                    let at = 16 + 8 * (usize::try_from(n).unwrap() - 1);
                    let last_end = u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap());
                    assert_eq!(
                        info.stored_block_bytes(),
                        last_end - info.header.data_offset()
                    );
                }
                None => {
                    assert_eq!(info.header.block_type(), BlockType::Raw);
                    assert_eq!(info.stored_block_bytes(), n * info.header.block_bytes());
                }
            }
        }
    }
    assert!(wkw::inspect_file(testdata().join("no-such-file.wkw"), &limits).is_err());
}
