//! Replays the kept fuzz findings and hand-made hostile files in
//! `testdata/regressions/wkw/<target>/` through the entry points the fuzz targets drive
//! (`wkw_header`, `wkw_file`, `wkw_dataset`): each must give `Ok` or a typed `Err`, never a
//! panic; a successful write must read back.

#![allow(
    clippy::unwrap_used,
    clippy::cast_possible_truncation,
    reason = "a failed unwrap is a failed test; test sizes are small"
)]

use std::path::Path;

use wkw::{
    Array, BlockType, Dataset, Header, HeaderCheck, Limits, MissingOrCorrupt, Options, Order,
    VoxelType,
};

fn replay_all(target: &str, f: fn(&[u8])) {
    let _ = testkit::replay_all("wkw", target, f);
}

const MAX_READ: u64 = 32 << 20;

fn options() -> Options {
    let mut l = Limits::default();
    l.max_block_bytes = 4 << 20;
    l.max_blocks_per_file = 1 << 15;
    l.max_read_bytes = MAX_READ;
    Options::default()
        .with_limits(l)
        .with_header_check(HeaderCheck::Lenient)
}

fn header(data: &[u8]) {
    let h = match Header::parse(data) {
        Ok(h) => h,
        Err(e) => return assert!(!e.to_string().is_empty()),
    };
    assert_eq!(Header::parse(&h.to_bytes()).unwrap(), h);
    let _ = (
        h.blocks_per_file(),
        h.block_bytes(),
        h.raw_file_len(),
        h.check_data_offset(),
    );
}

fn read_file(root: &Path, policy: MissingOrCorrupt) {
    let Ok(ds) = Dataset::open_with(root, options().with_missing_or_corrupt(policy)) else {
        return;
    };
    let h = *ds.header();
    let side = h.file_len_vx();
    let shape = if u64::from(side).pow(3) * u64::from(h.voxel_size()) <= MAX_READ {
        [side; 3]
    } else {
        [h.block_len().min(64); 3]
    };
    let _ = ds.read([0; 3], shape, Order::Fortran);
    let _ = wkw::verify(root, options().with_missing_or_corrupt(policy), &|_| {});
}

fn file(data: &[u8]) {
    let header = Header::parse(data).map_or_else(
        |_| Header::new(VoxelType::U8, 1, 8, 4, BlockType::Lz4).unwrap(),
        |h| h.with_data_offset(0),
    );
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::write(root.join(wkw::HEADER_FILE_NAME), header.to_bytes()).unwrap();
    std::fs::create_dir_all(root.join("z0/y0")).unwrap();
    std::fs::write(root.join("z0/y0/x0.wkw"), data).unwrap();
    read_file(root, MissingOrCorrupt::Error);
    read_file(root, MissingOrCorrupt::Zeros);
    let Ok(ds) = Dataset::open_with(
        root,
        options().with_missing_or_corrupt(MissingOrCorrupt::Zeros),
    ) else {
        return;
    };
    let h = *ds.header();
    let b = h.block_len().min(16);
    let n = (b as usize).pow(3) * usize::from(h.voxel_size());
    let payload: Vec<u8> = (0..n).map(|i| (i * 7 + 3) as u8).collect();
    let arr = Array::from_bytes(
        h.voxel_type(),
        h.num_channels(),
        [b; 3],
        Order::Fortran,
        payload,
    )
    .unwrap();
    if ds.write([0; 3], &arr.view()).is_ok() {
        assert_eq!(ds.read([0; 3], [b; 3], Order::Fortran).unwrap(), arr);
    }
}

/// Record container of `fuzz/src/lib.rs`: `tag: u8, len: u32 LE, bytes` (cut at the end).
fn records(mut data: &[u8], max: usize) -> Vec<(u8, &[u8])> {
    let mut out = Vec::new();
    while out.len() < max && data.len() >= 5 {
        let len = u32::from_le_bytes([data[1], data[2], data[3], data[4]]) as usize;
        let rest = &data[5..];
        let n = len.min(rest.len());
        out.push((data[0], &rest[..n]));
        data = &rest[n..];
    }
    out
}

fn dataset(data: &[u8]) {
    let recs = records(data, 12);
    let Some((_, first)) = recs.first() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::write(root.join(wkw::HEADER_FILE_NAME), first).unwrap();
    for (tag, bytes) in recs.iter().skip(1) {
        let (x, y, z) = (tag & 3, (tag >> 2) & 3, (tag >> 4) & 3);
        let sub = root.join(format!("z{z}/y{y}"));
        std::fs::create_dir_all(&sub).unwrap();
        let path = sub.join(format!("x{x}.wkw"));
        if tag & 0x40 != 0 {
            let _ = std::fs::create_dir_all(&path);
        } else if tag & 0x80 != 0 {
            let _ = std::fs::write(sub.join(format!("x{x}.wkw.tmp-stray")), bytes);
        } else {
            let _ = std::fs::write(&path, bytes);
        }
    }
    for check in [HeaderCheck::Strict, HeaderCheck::Lenient] {
        let Ok(ds) = Dataset::open_with(root, options().with_header_check(check)) else {
            continue;
        };
        let _ = ds.list_files();
        let _ = wkw::verify(root, options().with_header_check(check), &|_| {});
        let _ = ds.read([0; 3], [ds.header().block_len().min(32); 3], Order::C);
    }
}

#[test]
fn header_regressions_replay() {
    replay_all("wkw_header", header);
}

#[test]
fn file_regressions_replay() {
    replay_all("wkw_file", file);
}

#[test]
fn dataset_regressions_replay() {
    replay_all("wkw_dataset", dataset);
}
