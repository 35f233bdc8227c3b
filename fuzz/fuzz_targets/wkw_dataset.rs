//! wkw: a dataset read over an arbitrary small directory tree. Record 0 is `header.wkw`;
//! record k ≥ 1 becomes the file at `z{z}/y{y}/x{x}.wkw` with x, y, z from bits 0–1, 2–3, 4–5 of
//! its tag; tag bit 6 makes it a directory instead (a hostile tree), bit 7 a stray file next to
//! it. Reads of a 2×2×2-file box must agree with reads of each file's own box, and Fortran-order
//! reads (block rows, output filled without zero-initialisation) with C-order reads.
#![no_main]

use libfuzzer_sys::fuzz_target;
use scifmt_fuzz::{records, scratch_dir};
use wkw::{Dataset, HeaderCheck, Limits, Options, Order};

const MAX_READ: u64 = 16 << 20;

fn options(check: HeaderCheck) -> Options {
    let mut l = Limits::default();
    l.max_block_bytes = 4 << 20;
    l.max_blocks_per_file = 1 << 15;
    l.max_read_bytes = MAX_READ;
    Options::default().with_limits(l).with_header_check(check)
}

fuzz_target!(|data: &[u8]| {
    let recs = records(data, 12);
    let Some(first) = recs.first() else {
        return;
    };
    let dir = scratch_dir();
    std::fs::write(dir.join(wkw::HEADER_FILE_NAME), first.bytes).expect("header");
    for r in recs.iter().skip(1) {
        let (x, y, z) = (r.tag & 3, (r.tag >> 2) & 3, (r.tag >> 4) & 3);
        let sub = dir.join(format!("z{z}/y{y}"));
        std::fs::create_dir_all(&sub).expect("mkdir");
        let path = sub.join(format!("x{x}.wkw"));
        if r.tag & 0x40 != 0 {
            let _ = std::fs::create_dir_all(&path);
        } else if r.tag & 0x80 != 0 {
            let _ = std::fs::write(sub.join(format!("x{x}.wkw.tmp-stray")), r.bytes);
        } else {
            let _ = std::fs::write(&path, r.bytes);
        }
    }
    for check in [HeaderCheck::Strict, HeaderCheck::Lenient] {
        let Ok(ds) = Dataset::open_with(&dir, options(check)) else {
            continue;
        };
        let _ = ds.list_files();
        let _ = wkw::verify(&dir, options(check), &|_| {});
        let h = *ds.header();
        let f = h.file_len_vx();
        let vs = u64::from(h.voxel_size());
        if u64::from(f).pow(3) * 8 * vs > MAX_READ {
            let _ = ds.read([0; 3], [h.block_len().min(32); 3], Order::C);
            continue;
        }
        let Ok(big) = ds.read([0; 3], [2 * f; 3], Order::C) else {
            continue;
        };
        let fort = ds
            .read([0; 3], [2 * f; 3], Order::Fortran)
            .expect("the C-order read of the same box succeeded");
        assert_eq!(fort.to_order(Order::C).as_bytes(), big.as_bytes());
        let shape = [
            2 * f - 1,
            (2 * f).saturating_sub(2),
            (2 * f).saturating_sub(3),
        ];
        if shape.iter().all(|&s| s > 0) {
            let fu = ds.read([1, 2, 3], shape, Order::Fortran);
            let cu = ds.read([1, 2, 3], shape, Order::C);
            if let (Ok(fu), Ok(cu)) = (fu, cu) {
                assert_eq!(fu.to_order(Order::C).as_bytes(), cu.as_bytes());
            }
        }
        // C order: (channel, x, y, z) with z fastest; elements of the voxel type's size.
        let ts = usize::from(h.voxel_type().size());
        let ch = usize::from(h.num_channels());
        let (f, n) = (f as usize, 2 * f as usize);
        for oz in 0..2usize {
            for oy in 0..2usize {
                for ox in 0..2usize {
                    let at = [(ox * f) as u32, (oy * f) as u32, (oz * f) as u32];
                    let Ok(part) = ds.read(at, [f as u32; 3], Order::C) else {
                        continue;
                    };
                    let (pb, bb) = (part.as_bytes(), big.as_bytes());
                    for c in 0..ch {
                        for x in 0..f {
                            for y in 0..f {
                                let p = (((c * f + x) * f + y) * f) * ts;
                                let gx = ox * f + x;
                                let gy = oy * f + y;
                                let b = (((c * n + gx) * n + gy) * n + oz * f) * ts;
                                assert_eq!(pb[p..p + f * ts], bb[b..b + f * ts]);
                            }
                        }
                    }
                }
            }
        }
    }
});
