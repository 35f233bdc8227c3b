//! morton-code: anchors from the reference, the block order of a reference-written WKW file,
//! and agreement of the two implementations and of the box iterator.

use super::{Ctx, Row};
use morton_code::{MortonBox, decode_3d_u64, encode_3d_u64, portable};

const SECTION: &str = "morton";

/// Anchors from the reference WKW implementation's tests
/// (<https://github.com/scalableminds/webknossos-wrap/blob/master/rust/src/morton.rs>); the
/// exhaustive check against the bit-by-bit definition in `crates/morton/tests/morton.rs` covers
/// every one.
const ANCHORS: &[([u32; 3], u64)] = &[
    ([0, 0, 0], 0),
    ([1, 0, 0], 1),
    ([0, 1, 0], 2),
    ([1, 1, 0], 3),
    ([0, 0, 1], 4),
    ([1, 1, 1], 7),
    ([2, 0, 0], 8),
    ([0, 2, 0], 16),
    ([0, 0, 2], 32),
    ([29, 20, 3], 13029),
    ([23, 20, 3], 12525),
    ([5, 9, 1], 1095),
];

pub(crate) fn rows(ctx: &Ctx) -> Vec<Row> {
    vec![
        anchors(),
        wkw_block_order(ctx),
        implementations(),
        box_ranges(),
    ]
}

fn anchors() -> Row {
    let mut row = Row::new(SECTION, "reference anchors encode/decode");
    for &(p, k) in ANCHORS {
        row.check(
            format!("{p:?} -> {k}"),
            encode_3d_u64(p) == Ok(k) && decode_3d_u64(k) == Ok(p),
        );
    }
    row
}

/// `testdata/wkw/u8_raw_b8_f4/z0/y0/x0.wkw` was written by the reference `wkw` package with
/// `data[X,Y,Z] = (X + 3Y + 7Z) mod 256` over the whole 32³ file: raw block `k` (8³ voxels, x
/// fastest, at `16 + 512k`) must hold the block at `decode_3d_u64(k)`.
fn wkw_block_order(ctx: &Ctx) -> Row {
    let mut row = Row::new(SECTION, "block order of reference WKW raw file");
    let path = ctx.testdata("wkw/u8_raw_b8_f4/z0/y0/x0.wkw");
    let bytes = match std::fs::read(&path) {
        Ok(b) => b,
        Err(e) => {
            row.case(path.display(), Err(e.to_string()));
            return row;
        }
    };
    for k in 0..64u64 {
        let result = decode_3d_u64(k)
            .map_err(|e| e.to_string())
            .and_then(|[bx, by, bz]| {
                let start = 16 + 512 * usize::try_from(k).map_err(|e| e.to_string())?;
                let block = bytes.get(start..start + 512).ok_or("file too short")?;
                let ok = block.iter().enumerate().all(|(i, &v)| {
                    let (x, y, z) = (i % 8, i / 8 % 8, i / 64);
                    let (gx, gy, gz) = (
                        8 * bx as usize + x,
                        8 * by as usize + y,
                        8 * bz as usize + z,
                    );
                    usize::from(v) == (gx + 3 * gy + 7 * gz) % 256
                });
                if ok {
                    Ok(())
                } else {
                    Err(format!("block {k} content differs"))
                }
            });
        row.case(format!("block {k}"), result);
    }
    row
}

/// Dispatched (possibly BMI2) vs portable paths, exhaustively over 0..64 per axis.
fn implementations() -> Row {
    let mut row = Row::new(SECTION, "dispatched == portable (64^3 points)");
    for z in 0..64 {
        for y in 0..64 {
            for x in 0..64 {
                let p = [x, y, z];
                let k = portable::encode_3d_u64(p);
                row.check(
                    format!("{p:?}"),
                    morton_code::encode_3d_u64_wrapping(p) == k
                        && morton_code::decode_3d_u64_wrapping(k) == p,
                );
            }
        }
    }
    row
}

/// Box ranges vs brute-force enumeration of the cube, for boxes inside a 16³ cube.
fn box_ranges() -> Row {
    let mut row = Row::new(SECTION, "box ranges == brute force (16^3 cube)");
    let boxes = [
        ([0, 0, 0], [16, 16, 16]),
        ([1, 2, 3], [9, 7, 5]),
        ([3, 0, 0], [4, 16, 16]),
        ([5, 5, 5], [6, 6, 6]),
        ([8, 8, 8], [16, 16, 16]),
        ([0, 7, 2], [15, 9, 13]),
        ([2, 2, 2], [2, 5, 5]),
    ];
    for (min, max) in boxes {
        let result = MortonBox::<3>::new(min, max)
            .map_err(|e| e.to_string())
            .map(|b| {
                let ours: Vec<u64> = b.indices().collect();
                let mut brute: Vec<u64> = (0..4096u64)
                    .filter(|&k| {
                        let p = portable::decode_3d_u64(k);
                        (0..3).all(|a| min[a] <= p[a] && p[a] < max[a])
                    })
                    .collect();
                brute.sort_unstable();
                ours == brute
            });
        row.case(
            format!("{min:?}..{max:?}"),
            match result {
                Ok(true) => Ok(()),
                Ok(false) => Err("index list differs".into()),
                Err(e) => Err(e),
            },
        );
    }
    row
}
