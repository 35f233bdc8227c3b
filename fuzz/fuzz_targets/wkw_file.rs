//! wkw: one untrusted data file `z0/y0/x0.wkw` in a dataset whose `header.wkw` has the file's
//! own geometry (or a default one when the file's header does not parse). Open, read every
//! block, verify, then write one block and read it back.
#![no_main]

use libfuzzer_sys::fuzz_target;
use scifmt_fuzz::scratch_dir;
use wkw::{
    Array, BlockType, Dataset, HeaderCheck, Limits, MissingOrCorrupt, Options, Order, VoxelType,
};

const MAX_READ: u64 = 32 << 20;

fn options(policy: MissingOrCorrupt) -> Options {
    let mut l = Limits::default();
    l.max_block_bytes = 4 << 20;
    l.max_blocks_per_file = 1 << 15;
    l.max_read_bytes = MAX_READ;
    Options::default()
        .with_limits(l)
        .with_header_check(HeaderCheck::Lenient)
        .with_missing_or_corrupt(policy)
}

fuzz_target!(|data: &[u8]| {
    let header = match wkw::Header::parse(data) {
        Ok(h) => h.with_data_offset(0),
        Err(_) => match wkw::Header::new(VoxelType::U8, 1, 8, 4, BlockType::Lz4) {
            Ok(h) => h,
            Err(_) => return,
        },
    };
    let dir = scratch_dir();
    std::fs::write(dir.join(wkw::HEADER_FILE_NAME), header.to_bytes()).expect("header");
    std::fs::create_dir_all(dir.join("z0/y0")).expect("mkdir");
    std::fs::write(dir.join("z0/y0/x0.wkw"), data).expect("data file");

    for policy in [MissingOrCorrupt::Error, MissingOrCorrupt::Zeros] {
        let Ok(ds) = Dataset::open_with(&dir, options(policy)) else {
            return;
        };
        let h = *ds.header();
        let side = h.file_len_vx();
        let bytes = u64::from(side).pow(3) * u64::from(h.voxel_size());
        let shape = if bytes <= MAX_READ {
            [side; 3]
        } else {
            [h.block_len().min(64); 3]
        };
        if let Ok(a) = ds.read([0; 3], shape, Order::Fortran) {
            assert_eq!(
                a.as_bytes().len() as u64,
                u64::from(shape[0]).pow(3) * u64::from(h.voxel_size())
            );
        }
        let _ = wkw::verify(&dir, options(policy), &|_| {});
    }

    // A write of one block over the (possibly corrupt) file either fails cleanly or reads back.
    let Ok(ds) = Dataset::open_with(&dir, options(MissingOrCorrupt::Zeros)) else {
        return;
    };
    let h = *ds.header();
    let b = h.block_len().min(16);
    let n = (b as usize).pow(3) * usize::from(h.voxel_size());
    let payload: Vec<u8> = (0..n).map(|i| (i * 7 + 3) as u8).collect();
    let Ok(arr) = Array::from_bytes(
        h.voxel_type(),
        h.num_channels(),
        [b; 3],
        Order::Fortran,
        payload,
    ) else {
        return;
    };
    if ds.write([0; 3], &arr.view()).is_ok() {
        let back = ds
            .read([0; 3], [b; 3], Order::Fortran)
            .expect("read after a successful write");
        assert_eq!(back, arr, "write then read gave different data");
    }
});
