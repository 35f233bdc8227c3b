//! Resource limits: small hostile WKW files whose headers claim huge geometry (jump tables,
//! blocks) and huge read requests are refused before any large allocation. A counting global
//! allocator measures the peak heap growth of each call.

#![allow(
    clippy::unwrap_used,
    clippy::cast_possible_truncation,
    reason = "a failed unwrap is a failed test; test sizes are small"
)]

use std::path::Path;

use wkw::{BlockType, Dataset, Header, Limits, Options, Order, VoxelType};

use testkit::{lock_serial, peak_during};

#[global_allocator]
static GLOBAL: testkit::CountingAlloc = testkit::CountingAlloc;

const SMALL: usize = 1 << 20;

/// A raw 16-byte WKW header.
fn header(per_dim_log2: u8, block_type: u8, voxel_type: u8, voxel_size: u8, off: u64) -> Vec<u8> {
    let mut h = b"WKW".to_vec();
    h.extend_from_slice(&[1, per_dim_log2, block_type, voxel_type, voxel_size]);
    h.extend_from_slice(&off.to_le_bytes());
    h
}

/// A dataset whose `header.wkw` and only data file `z0/y0/x0.wkw` are given.
fn dataset(root: &Path, dataset_header: &[u8], file: &[u8]) {
    std::fs::write(root.join(wkw::HEADER_FILE_NAME), dataset_header).unwrap();
    std::fs::create_dir_all(root.join("z0/y0")).unwrap();
    std::fs::write(root.join("z0/y0/x0.wkw"), file).unwrap();
}

#[test]
fn jump_table_of_2_pow_45_entries_is_refused_before_allocating() {
    let _g = lock_serial();
    let dir = tempfile::tempdir().unwrap();
    // 2^15 blocks per dimension (2^45 per file) of LZ4 blocks: a 256 TiB jump table claimed by a
    // 24-byte file.
    let n: u64 = 1 << 45;
    let mut file = header(0xf0, 2, 1, 1, 16 + 8 * n);
    file.extend_from_slice(&u64::MAX.to_le_bytes());
    dataset(dir.path(), &header(0xf0, 2, 1, 1, 0), &file);
    let (peak, r) = peak_during(|| {
        Dataset::open(dir.path()).and_then(|ds| ds.read([0; 3], [1, 1, 1], Order::Fortran))
    });
    assert!(
        r.is_err(),
        "a 24-byte file cannot hold a 2^45-entry jump table"
    );
    assert!(peak < SMALL, "refusing it allocated {peak} bytes");
    // Also under the reference-compatible policy that reads corrupt files as zeros.
    let opts = Options::default().with_missing_or_corrupt(wkw::MissingOrCorrupt::Zeros);
    let (peak, _) = peak_during(|| {
        Dataset::open_with(dir.path(), opts).and_then(|ds| ds.read([0; 3], [1, 1, 1], Order::C))
    });
    assert!(peak < SMALL, "reading it as zeros allocated {peak} bytes");
}

#[test]
fn huge_blocks_are_refused_before_allocating() {
    let _g = lock_serial();
    let dir = tempfile::tempdir().unwrap();
    // 2^15-voxel blocks of 255-byte voxels: one block claims 2^45 * 255 bytes. LZ4, one block
    // per file, whose jump table entry points at 8 bytes of garbage.
    let mut file = header(0x0f, 2, 1, 255, 24);
    file.extend_from_slice(&32u64.to_le_bytes());
    file.extend_from_slice(&[0x55; 8]);
    dataset(dir.path(), &header(0x0f, 2, 1, 255, 0), &file);
    let (peak, r) = peak_during(|| {
        Dataset::open(dir.path()).and_then(|ds| ds.read([0; 3], [2, 2, 2], Order::Fortran))
    });
    assert!(
        r.is_err(),
        "a 2^45-byte block is above Limits::max_block_bytes"
    );
    assert!(peak < SMALL, "refusing it allocated {peak} bytes");
}

/// Fuzz finding (`wkw_file`): with the data file unreadable and read as zeros, a
/// small read still handled whole blocks of `header.wkw`'s geometry and allocated one of
/// 2^36 bytes. Such a dataset is now refused when it is opened or created.
#[test]
fn huge_blocks_of_header_wkw_are_refused_at_open_and_create() {
    use wkw::MissingOrCorrupt;
    let _g = lock_serial();
    let dir = tempfile::tempdir().unwrap();
    // 2^11-voxel blocks of 8-byte voxels (2^36 bytes), one block per file; the data file is
    // garbage, so it reads as zeros under the lenient policy.
    let hdr = header(0x0b, 2, 10, 8, 0);
    dataset(dir.path(), &hdr, b"not a wkw file");
    let opts = Options::default().with_missing_or_corrupt(MissingOrCorrupt::Zeros);
    let (peak, r) = peak_during(|| {
        Dataset::open_with(dir.path(), opts.clone())
            .and_then(|ds| ds.read([0; 3], [4, 4, 4], Order::Fortran))
    });
    assert!(
        matches!(
            r,
            Err(wkw::Error::LimitExceeded {
                what: "raw block",
                ..
            })
        ),
        "got {r:?}"
    );
    assert!(peak < SMALL, "refusing it allocated {peak} bytes");
    let h = Header::parse(&hdr).unwrap();
    let other = tempfile::tempdir().unwrap();
    assert!(matches!(
        Dataset::create_with(other.path().join("ds"), h, opts.clone()),
        Err(wkw::Error::LimitExceeded { .. })
    ));
    assert!(!other.path().join("ds").exists(), "nothing created");
    // A caller who raises the limit gets the dataset.
    let mut big = Limits::default();
    big.max_block_bytes = u64::MAX;
    assert!(Dataset::open_with(dir.path(), opts.with_limits(big)).is_ok());
}

#[test]
fn huge_read_requests_are_refused_before_allocating() {
    let _g = lock_serial();
    let dir = tempfile::tempdir().unwrap();
    let h = Header::new(VoxelType::U64, 1, 8, 4, BlockType::Lz4).unwrap();
    let ds = Dataset::create(dir.path(), h).unwrap();
    // 2^20 voxels per side of u64: 2^63 bytes.
    let (peak, r) = peak_during(|| ds.read([0; 3], [1 << 20; 3], Order::C));
    assert!(r.is_err());
    assert!(peak < SMALL, "refusing it allocated {peak} bytes");
    // A caller-lowered cap applies too.
    let mut l = Limits::default();
    l.max_read_bytes = 1 << 16;
    let ds = Dataset::open_with(dir.path(), Options::default().with_limits(l)).unwrap();
    let (peak, r) = peak_during(|| ds.read([0; 3], [64, 64, 64], Order::C));
    assert!(r.is_err(), "2 MiB read above a 64 KiB cap");
    assert!(peak < SMALL, "refusing it allocated {peak} bytes");
    let (_, r) = peak_during(|| ds.read([0; 3], [8, 8, 8], Order::C));
    assert_eq!(r.unwrap().as_bytes(), vec![0u8; 8 * 8 * 8 * 8].as_slice());
}
