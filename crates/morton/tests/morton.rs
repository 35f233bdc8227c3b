//! Integration tests: anchors, exhaustive and random agreement of all paths, peers, boxes.

#![allow(clippy::unwrap_used, clippy::cast_possible_truncation)]

use morton_code::{
    Error, MortonBox, decode_2d_u32, decode_2d_u64, decode_2d_u64_batch, decode_3d_u32,
    decode_3d_u32_wrapping, decode_3d_u64, decode_3d_u64_batch, decode_3d_u64_wrapping,
    encode_2d_u32, encode_2d_u64, encode_2d_u64_batch, encode_3d_u32, encode_3d_u32_wrapping,
    encode_3d_u64, encode_3d_u64_batch, encode_3d_u64_wrapping, portable,
};
use proptest::prelude::*;

/// The definition, one bit at a time: bit i of axis a goes to bit D*i + a.
fn bit_loop<const D: usize>(p: [u32; D], bits: u32) -> u64 {
    let mut k = 0u64;
    for i in 0..bits {
        for (a, &c) in p.iter().enumerate() {
            k |= u64::from((c >> i) & 1) << (D as u32 * i + a as u32);
        }
    }
    k
}

/// Anchors from the reference WKW implementation's tests
/// (<https://github.com/scalableminds/webknossos-wrap/blob/master/rust/src/morton.rs>) and the
/// worked example `(5, 9, 1)` → 1095 of libmorton's author.
#[test]
fn wkw_anchors() {
    let anchors: &[([u32; 3], u64)] = &[
        ([1, 0, 0], 1),
        ([0, 1, 0], 2),
        ([0, 0, 1], 4),
        ([1, 1, 1], 7),
        ([2, 0, 0], 8),
        ([0, 2, 0], 16),
        ([0, 0, 2], 32),
        ([29, 20, 3], 13029),
        ([23, 20, 3], 12525),
        ([5, 9, 1], 1095),
    ];
    for &(p, k) in anchors {
        assert_eq!(encode_3d_u64(p), Ok(k), "{p:?}");
        assert_eq!(decode_3d_u64(k), Ok(p), "{k}");
        assert_eq!(encode_3d_u32(p), Ok(u32::try_from(k).unwrap()), "{p:?}");
        assert_eq!(decode_3d_u32(u32::try_from(k).unwrap()), Ok(p));
    }
}

#[test]
fn exhaustive_3d_against_bit_loop() {
    for z in 0..64 {
        for y in 0..64 {
            for x in 0..64 {
                let p = [x, y, z];
                let k = bit_loop(p, 21);
                assert_eq!(encode_3d_u64(p), Ok(k));
                assert_eq!(portable::encode_3d_u64(p), k);
                assert_eq!(decode_3d_u64(k), Ok(p));
                assert_eq!(portable::decode_3d_u64(k), p);
                let k32 = u32::try_from(k).unwrap();
                assert_eq!(encode_3d_u32(p), Ok(k32));
                assert_eq!(decode_3d_u32(k32), Ok(p));
            }
        }
    }
}

#[test]
fn exhaustive_2d_against_bit_loop() {
    for y in 0..256u16 {
        for x in 0..256u16 {
            let k = bit_loop([u32::from(x), u32::from(y)], 16);
            assert_eq!(u64::from(encode_2d_u32([x, y])), k);
            assert_eq!(decode_2d_u32(u32::try_from(k).unwrap()), [x, y]);
            assert_eq!(encode_2d_u64([x.into(), y.into()]), k);
            assert_eq!(decode_2d_u64(k), [u32::from(x), u32::from(y)]);
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[test]
fn bmi2_matches_portable_exhaustively_on_small_ranges() {
    let Some(t) = morton_code::Bmi2::detect() else {
        eprintln!("no BMI2 on this CPU: nothing to compare");
        return;
    };
    for z in 0..64 {
        for y in 0..64 {
            for x in 0..64 {
                let p = [x, y, z];
                let k = portable::encode_3d_u64(p);
                assert_eq!(t.encode_3d_u64(p), k);
                assert_eq!(t.decode_3d_u64(k), p);
                assert_eq!(t.encode_3d_u32(p), portable::encode_3d_u32(p));
                assert_eq!(t.decode_3d_u32(portable::encode_3d_u32(p)), p);
                let p2 = [x | (y << 6), z];
                assert_eq!(t.encode_2d_u64(p2), portable::encode_2d_u64(p2));
            }
        }
    }
}

#[test]
fn extremes() {
    let m = (1 << 21) - 1;
    assert_eq!(encode_3d_u64([m, m, m]), Ok((1 << 63) - 1));
    assert_eq!(decode_3d_u64((1 << 63) - 1), Ok([m, m, m]));
    assert_eq!(encode_2d_u64([u32::MAX, u32::MAX]), u64::MAX);
    assert_eq!(decode_2d_u64(u64::MAX), [u32::MAX; 2]);
    assert_eq!(encode_2d_u32([u16::MAX, 0]), 0x5555_5555);
    assert_eq!(encode_3d_u32([1023, 1023, 1023]), Ok((1 << 30) - 1));
}

#[test]
fn out_of_range_is_an_error_never_masked() {
    assert_eq!(
        encode_3d_u64([0, 1 << 21, 0]),
        Err(Error::CoordinateOutOfRange {
            axis: 1,
            value: 1 << 21,
            bits: 21,
            index: None
        })
    );
    assert_eq!(
        encode_3d_u32([0, 0, 1024]),
        Err(Error::CoordinateOutOfRange {
            axis: 2,
            value: 1024,
            bits: 10,
            index: None
        })
    );
    assert_eq!(
        decode_3d_u64(1 << 63),
        Err(Error::KeyOutOfRange {
            key: 1 << 63,
            bits: 63,
            index: None
        })
    );
    assert!(matches!(
        decode_3d_u32(1 << 30),
        Err(Error::KeyOutOfRange { bits: 30, .. })
    ));
    // The wrapping API masks, as documented.
    assert_eq!(encode_3d_u64_wrapping([(1 << 21) | 5, 0, 0]), 0b100_0001);
    assert_eq!(encode_3d_u32_wrapping([1024 | 1, 0, 0]), 1);
    assert_eq!(decode_3d_u64_wrapping((1 << 63) | 7), [1, 1, 1]);
    assert_eq!(decode_3d_u32_wrapping((3 << 30) | 7), [1, 1, 1]);
    let e = encode_3d_u64([0, 0, 1 << 22]).unwrap_err().to_string();
    assert!(e.contains("coordinate 2") && e.contains("21 bits"), "{e}");
}

#[test]
fn batch_errors_name_the_index() {
    let mut pts = vec![[1u32, 2, 3]; 100];
    let mut out = vec![0u64; 100];
    assert_eq!(
        encode_3d_u64_batch(&pts, &mut out[..99]),
        Err(Error::LengthMismatch {
            input: 100,
            output: 99
        })
    );
    pts[57][0] = 1 << 21;
    assert_eq!(
        encode_3d_u64_batch(&pts, &mut out),
        Err(Error::CoordinateOutOfRange {
            axis: 0,
            value: 1 << 21,
            bits: 21,
            index: Some(57)
        })
    );
    let mut keys = vec![7u64; 10];
    keys[3] = u64::MAX;
    let mut back = vec![[0u32; 3]; 10];
    assert_eq!(
        decode_3d_u64_batch(&keys, &mut back),
        Err(Error::KeyOutOfRange {
            key: u64::MAX,
            bits: 63,
            index: Some(3)
        })
    );
}

fn coord21() -> impl Strategy<Value = u32> {
    0u32..(1 << 21)
}

proptest! {
    #[test]
    fn full_range_3d_all_paths_agree(x in coord21(), y in coord21(), z in coord21()) {
        let p = [x, y, z];
        let k = bit_loop(p, 21);
        prop_assert_eq!(encode_3d_u64(p), Ok(k));
        prop_assert_eq!(portable::encode_3d_u64(p), k);
        prop_assert_eq!(decode_3d_u64(k), Ok(p));
        #[cfg(target_arch = "x86_64")]
        if let Some(t) = morton_code::Bmi2::detect() {
            prop_assert_eq!(t.encode_3d_u64(p), k);
            prop_assert_eq!(t.decode_3d_u64(k), p);
        }
    }

    #[test]
    fn full_range_2d_all_paths_agree(x: u32, y: u32) {
        let k = bit_loop([x, y], 32);
        prop_assert_eq!(encode_2d_u64([x, y]), k);
        prop_assert_eq!(decode_2d_u64(k), [x, y]);
        #[cfg(target_arch = "x86_64")]
        if let Some(t) = morton_code::Bmi2::detect() {
            prop_assert_eq!(t.encode_2d_u64([x, y]), k);
            prop_assert_eq!(t.decode_2d_u64(k), [x, y]);
        }
    }

    #[test]
    fn any_key_round_trips(k in 0u64..(1 << 63)) {
        let p = decode_3d_u64(k).unwrap();
        prop_assert_eq!(encode_3d_u64(p), Ok(k));
    }

    #[test]
    fn batch_equals_scalar(pts in prop::collection::vec((coord21(), coord21(), coord21()), 0..300)) {
        let pts: Vec<[u32; 3]> = pts.into_iter().map(|(x, y, z)| [x, y, z]).collect();
        let mut keys = vec![0; pts.len()];
        encode_3d_u64_batch(&pts, &mut keys).unwrap();
        for (p, k) in pts.iter().zip(&keys) {
            prop_assert_eq!(Ok(*k), encode_3d_u64(*p));
        }
        let mut back = vec![[0; 3]; keys.len()];
        decode_3d_u64_batch(&keys, &mut back).unwrap();
        prop_assert_eq!(&back, &pts);
        let pts2: Vec<[u32; 2]> = pts.iter().map(|p| [p[0] ^ (p[2] << 11), p[1]]).collect();
        let mut keys2 = vec![0; pts2.len()];
        encode_2d_u64_batch(&pts2, &mut keys2).unwrap();
        let mut back2 = vec![[0; 2]; keys2.len()];
        decode_2d_u64_batch(&keys2, &mut back2).unwrap();
        prop_assert_eq!(&back2, &pts2);
        for (p, k) in pts2.iter().zip(&keys2) {
            prop_assert_eq!(*k, encode_2d_u64(*p));
        }
    }

    /// Peer `morton-encoding` puts the first array element in the most significant bit of
    /// each group, so WKW order is `[z, y, x]` there.
    #[test]
    fn differential_morton_encoding(x in coord21(), y in coord21(), z in coord21()) {
        // Three u32 coordinates give a u128 key there; ours fit its low 63 bits.
        let theirs: u128 = morton_encoding::morton_encode([z, y, x]);
        prop_assert_eq!(encode_3d_u64([x, y, z]).map(u128::from), Ok(theirs));
        let [dz, dy, dx]: [u32; 3] = morton_encoding::morton_decode(theirs);
        prop_assert_eq!(decode_3d_u64(u64::try_from(theirs).unwrap()), Ok([dx, dy, dz]));
        let theirs16: u64 = morton_encoding::morton_encode([z as u16, y as u16, x as u16]);
        prop_assert_eq!(encode_3d_u64([x & 0xffff, y & 0xffff, z & 0xffff]), Ok(theirs16));
    }

    /// Peer `zorder` puts the first element lowest, like us: `[x, y, z]`.
    #[test]
    fn differential_zorder(x: u16, y: u16, z: u16, a: u32, b: u32) {
        let theirs: u64 = zorder::index_of([x, y, z]);
        prop_assert_eq!(encode_3d_u64([x.into(), y.into(), z.into()]), Ok(theirs));
        let theirs2: u64 = zorder::index_of([a, b]);
        prop_assert_eq!(encode_2d_u64([a, b]), theirs2);
        prop_assert_eq!(decode_2d_u64(theirs2), zorder::coord_of::<u64, 2>(theirs2));
        let theirs_u32: u32 = zorder::index_of([x, y]);
        prop_assert_eq!(encode_2d_u32([x, y]), theirs_u32);
    }
}

fn brute_3d(min: [u32; 3], max: [u32; 3], side: u32) -> Vec<u64> {
    let mut v = Vec::new();
    for z in 0..side {
        for y in 0..side {
            for x in 0..side {
                let p = [x, y, z];
                if (0..3).all(|a| min[a] <= p[a] && p[a] < max[a]) {
                    v.push(encode_3d_u64(p).unwrap());
                }
            }
        }
    }
    v.sort_unstable();
    v
}

#[test]
fn box_ranges_are_maximal_and_sorted() {
    let b = MortonBox::<3>::new([0, 0, 0], [2, 2, 1]).unwrap();
    assert_eq!(b.ranges().collect::<Vec<_>>(), vec![0..4]);
    let b = MortonBox::<3>::new([0, 0, 0], [4, 4, 4]).unwrap();
    assert_eq!(b.ranges().collect::<Vec<_>>(), vec![0..64]);
    let b = MortonBox::<3>::new([1, 0, 0], [3, 1, 1]).unwrap();
    assert_eq!(b.ranges().collect::<Vec<_>>(), vec![1..2, 8..9]);
    let empty = MortonBox::<3>::new([5, 5, 5], [5, 9, 9]).unwrap();
    assert!(empty.is_empty());
    assert_eq!(empty.ranges().count(), 0);
    assert_eq!(empty.next_in_box(0), None);
    assert!(matches!(
        MortonBox::<3>::new([3, 0, 0], [2, 1, 1]),
        Err(Error::InvalidBox { axis: 0, .. })
    ));
    assert!(matches!(
        MortonBox::<3>::new([0, 0, 0], [1, 1, (1 << 21) + 1]),
        Err(Error::InvalidBox { axis: 2, .. })
    ));
    // The whole 2^21 cube is one range.
    let all = MortonBox::<3>::new([0; 3], [1 << 21; 3]).unwrap();
    assert_eq!(all.ranges().collect::<Vec<_>>(), vec![0..(1 << 63)]);
    assert_eq!(all.cell_count(), 1 << 63);
    // A single cell far out.
    let far = MortonBox::<3>::from_inclusive([2_000_000, 3, 1_999_999], [2_000_000, 3, 1_999_999])
        .unwrap();
    let k = encode_3d_u64([2_000_000, 3, 1_999_999]).unwrap();
    assert_eq!(far.ranges().collect::<Vec<_>>(), vec![k..k + 1]);
    // 2-D up to the last representable column.
    let b2 = MortonBox::<2>::from_inclusive([u32::MAX - 1, 0], [u32::MAX, 1]).unwrap();
    let keys: Vec<u64> = b2.indices().collect();
    let mut want: Vec<u64> = [
        [u32::MAX - 1, 0],
        [u32::MAX, 0],
        [u32::MAX - 1, 1],
        [u32::MAX, 1],
    ]
    .iter()
    .map(|p| encode_2d_u64(*p))
    .collect();
    want.sort_unstable();
    assert_eq!(keys, want);
}

#[test]
fn every_box_in_an_8_cube_matches_brute_force() {
    // All 36^3 boxes [lo, hi) with 0 <= lo < hi <= 8 per axis, restricted to a few per axis.
    let spans: Vec<(u32, u32)> = (0..8)
        .flat_map(|lo| (lo + 1..=8).map(move |hi| (lo, hi)))
        .collect();
    for &(x0, x1) in &spans {
        for &(y0, y1) in spans.iter().step_by(5) {
            for &(z0, z1) in spans.iter().step_by(7) {
                let (min, max) = ([x0, y0, z0], [x1, y1, z1]);
                let b = MortonBox::<3>::new(min, max).unwrap();
                let ranges: Vec<_> = b.ranges().collect();
                for w in ranges.windows(2) {
                    assert!(
                        w[0].end < w[1].start,
                        "ranges not maximal/sorted: {ranges:?}"
                    );
                }
                let ours: Vec<u64> = ranges.into_iter().flatten().collect();
                assert_eq!(ours, brute_3d(min, max, 8), "{min:?}..{max:?}");
                assert_eq!(u128::try_from(ours.len()).unwrap(), b.cell_count());
            }
        }
    }
}

proptest! {
    #[test]
    fn box_iter_and_bigmin_match_brute_force(
        x0 in 0u32..16, y0 in 0u32..16, z0 in 0u32..16,
        dx in 0u32..16, dy in 0u32..16, dz in 0u32..16,
        key in 0u64..4096,
    ) {
        let min = [x0, y0, z0];
        let max = [(x0 + dx).min(16), (y0 + dy).min(16), (z0 + dz).min(16)];
        let b = MortonBox::<3>::new(min, max).unwrap();
        let brute = brute_3d(min, max, 16);
        let ours: Vec<u64> = b.indices().collect();
        prop_assert_eq!(&ours, &brute);
        let want = brute.iter().copied().find(|&k| k >= key);
        prop_assert_eq!(b.next_in_box(key), want);
        for p in [min, [x0 + dx / 2, y0 + dy / 2, z0 + dz / 2]] {
            prop_assert_eq!(b.contains(p), brute.binary_search(&encode_3d_u64(p).unwrap()).is_ok());
        }
    }

    #[test]
    fn bigmin_2d_matches_brute_force(x0 in 0u32..32, y0 in 0u32..32, dx in 1u32..32, dy in 1u32..32, key in 0u64..1024) {
        let max = [(x0 + dx).min(32), (y0 + dy).min(32)];
        let b = MortonBox::<2>::new([x0, y0], max).unwrap();
        let mut brute: Vec<u64> = (0..1024u64)
            .filter(|&k| { let [x, y] = decode_2d_u64(k); x >= x0 && x < max[0] && y >= y0 && y < max[1] })
            .collect();
        brute.sort_unstable();
        prop_assert_eq!(b.indices().collect::<Vec<_>>(), brute.clone());
        prop_assert_eq!(b.next_in_box(key), brute.iter().copied().find(|&k| k >= key));
    }
}

#[test]
fn parallel_batch_equals_serial_and_reports_global_index() {
    let n = 300_000;
    let pts: Vec<[u32; 3]> = (0..n as u32)
        .map(|i| [i % 2_000_000, (i * 7) % 2_097_151, i / 3])
        .collect();
    let mut serial = vec![0u64; n];
    let mut par = vec![0u64; n];
    morton_code::encode_3d_u64_batch(&pts, &mut serial).unwrap();
    for threads in [0, 1, 2, 3, 8] {
        morton_code::encode_3d_u64_batch_parallel(&pts, &mut par, threads).unwrap();
        assert_eq!(par, serial, "threads = {threads}");
        let mut back = vec![[0u32; 3]; n];
        morton_code::decode_3d_u64_batch_parallel(&par, &mut back, threads).unwrap();
        assert_eq!(back, pts);
    }
    let mut bad = pts.clone();
    bad[250_001][2] = u32::MAX;
    assert_eq!(
        morton_code::encode_3d_u64_batch_parallel(&bad, &mut par, 4),
        Err(Error::CoordinateOutOfRange {
            axis: 2,
            value: u32::MAX,
            bits: 21,
            index: Some(250_001)
        })
    );
    let mut keys = serial.clone();
    keys[199_999] |= 1 << 63;
    let mut back = vec![[0u32; 3]; n];
    assert!(matches!(
        morton_code::decode_3d_u64_batch_parallel(&keys, &mut back, 2),
        Err(Error::KeyOutOfRange {
            index: Some(199_999),
            ..
        })
    ));
    assert_eq!(
        morton_code::encode_3d_u64_batch_parallel(&pts, &mut par[1..], 2),
        Err(Error::LengthMismatch {
            input: n,
            output: n - 1
        })
    );
}
