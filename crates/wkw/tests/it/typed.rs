//! Typed access (`Array::as_slice::<T>` and friends): for every reference fixture read, in both
//! layouts, the typed values are exactly the little-endian values of the bytes whose hashes the
//! reference produced; every voxel type round-trips typed through write and read in both
//! layouts; the wrong type is an error, never a reinterpretation.
#![allow(
    clippy::unwrap_used,
    clippy::cast_possible_truncation,
    reason = "a failed unwrap is a failed test; test sizes are small"
)]

use crate::common;

use common::*;
use testkit::Lcg;
use wkw::{
    Array, ArrayView, ArrayViewMut, BlockType, Dataset, Error, Header, Order, Voxel, VoxelType,
};

/// Decodes little-endian bytes into values of `T` without the typed API.
fn decode_le<T: Voxel>(bytes: &[u8]) -> Vec<T> {
    bytes
        .chunks_exact(size_of::<T>())
        .map(|c| {
            let mut v = T::zeroed();
            bytemuck::bytes_of_mut(&mut v).copy_from_slice(c);
            if cfg!(target_endian = "big") {
                bytemuck::bytes_of_mut(&mut v).reverse();
            }
            v
        })
        .collect()
}

/// Typed values of `a` equal its little-endian bytes decoded by hand, bit for bit.
fn check_typed<T: Voxel>(a: &Array) {
    let typed = a.as_slice::<T>().unwrap();
    let by_hand = decode_le::<T>(a.as_bytes());
    assert_eq!(
        bytemuck::cast_slice::<T, u8>(typed),
        bytemuck::cast_slice::<T, u8>(&by_hand)
    );
    assert_eq!(a.view().as_slice::<T>().unwrap().as_ptr(), typed.as_ptr());
    // Owned, too.
    let owned = a.clone().into_vec::<T>().unwrap();
    assert_eq!(bytemuck::cast_slice::<T, u8>(&owned), a.as_bytes());
}

#[test]
fn typed_reads_of_every_fixture_match_the_reference_bytes() {
    let reads = fixture_reads();
    assert_eq!(reads.len(), 48, "24 reads in two layouts");
    // The reference-made fixtures cover every voxel type.
    let mut types: Vec<u8> = reads
        .iter()
        .map(|(name, ..)| {
            Dataset::open(testdata().join(name))
                .unwrap()
                .header()
                .voxel_type()
                .to_u8()
        })
        .collect();
    types.sort_unstable();
    types.dedup();
    assert_eq!(
        types,
        (1..=10).collect::<Vec<u8>>(),
        "voxel types of the fixtures"
    );
    for (name, off, shape, order, hash) in reads {
        let ds = Dataset::open(testdata().join(&name)).unwrap();
        let a = ds.read(off, shape, order).unwrap();
        assert_eq!(sha256(a.as_bytes()), hash, "{name} {off:?} {order:?}");
        with_voxel!(ds.header().voxel_type(), T => {
            check_typed::<T>(&a);
            // read_into a typed buffer gives the same values.
            let mut buf = vec![T::default(); a.as_bytes().len() / size_of::<T>()];
            let channels = ds.header().num_channels();
            let mut view = ArrayViewMut::from_slice_mut(channels, shape, order, &mut buf).unwrap();
            ds.read_into(off, &mut view).unwrap();
            assert_eq!(view.as_slice::<T>().unwrap().len(), buf.len());
            assert_eq!(bytemuck::cast_slice::<T, u8>(&buf), a.as_bytes());
        });
    }
}

/// The fixtures' formulas (the reference's inputs) through typed access: F2 is u16
/// `(X + 64Y + 2048Z + 21845c) mod 65536`, F5 is i16 `±(X − 7Y + 13Z)` on the box written at
/// (3, 5, 7) of shape (10, 6, 4).
#[test]
fn typed_values_are_the_fixture_formulas() {
    let ds = Dataset::open(testdata().join("u16_3ch_lz4_b8_f4")).unwrap();
    let a = ds.read([30, 1, 2], [5, 6, 7], Order::C).unwrap();
    let v = a.as_slice::<u16>().unwrap();
    for c in 0..3u8 {
        for x in 0..5 {
            for y in 0..6 {
                for z in 0..7 {
                    let at = a.offset_of(c, [x, y, z]).unwrap() / 2;
                    let (gx, gy, gz) = (u64::from(30 + x), u64::from(1 + y), u64::from(2 + z));
                    let want = ((gx + 64 * gy + 2048 * gz + 21845 * u64::from(c)) % 65536) as u16;
                    assert_eq!(v[at], want, "F2 c{c} ({x},{y},{z})");
                }
            }
        }
    }
    let ds = Dataset::open(testdata().join("i16_2ch_raw_b8_f2")).unwrap();
    let a = ds.read([3, 5, 7], [10, 6, 4], Order::Fortran).unwrap();
    let v = a.as_slice::<i16>().unwrap();
    assert_eq!(v.len(), 2 * 10 * 6 * 4);
    for (i, w) in v.iter().enumerate() {
        // Fortran order: channel fastest, then x, y, z.
        let (c, vox) = (i % 2, i / 2);
        let (x, y, z) = (vox % 10, vox / 10 % 6, vox / 60);
        let raw = f5_value(c as u32, 3 + x as u64, 5 + y as u64, 7 + z as u64);
        assert_eq!(*w, i16::from_le_bytes(raw), "F5 value {i}");
    }
}

fn random<T: Voxel>(n: usize, seed: u64) -> Vec<T> {
    let mut rng = Lcg(seed);
    let mut v = vec![T::zeroed(); n];
    for b in bytemuck::cast_slice_mut::<T, u8>(&mut v) {
        *b = rng.next_u64() as u8;
    }
    v
}

fn round_trip<T: Voxel>() {
    let vt = T::VOXEL_TYPE;
    for block_type in [BlockType::Raw, BlockType::Lz4] {
        let dir = tempfile::tempdir().unwrap();
        // 2 channels, 4³ blocks, 2³ blocks per file: the box spans 8 files.
        let ds =
            Dataset::create(dir.path(), Header::new(vt, 2, 4, 2, block_type).unwrap()).unwrap();
        let shape = [9, 10, 11];
        let n = 2 * 9 * 10 * 11;
        for order in [Order::Fortran, Order::C] {
            let values: Vec<T> = random(n, u64::from(vt.to_u8()) * 7 + order as u64);
            let a = Array::from_vec(2, shape, order, values.clone()).unwrap();
            assert_eq!(a.voxel_type(), vt);
            ds.write([3, 2, 1], &a.view()).unwrap();
            // Also through a view of the caller's slice.
            ds.write(
                [3, 2, 1],
                &ArrayView::from_slice(2, shape, order, &values).unwrap(),
            )
            .unwrap();
            for read_order in [Order::Fortran, Order::C] {
                let back = ds.read([3, 2, 1], shape, read_order).unwrap();
                let want = a.to_order(read_order);
                let (got, want) = (back.as_slice::<T>().unwrap(), want.as_slice::<T>().unwrap());
                assert_eq!(
                    bytemuck::cast_slice::<T, u8>(got),
                    bytemuck::cast_slice::<T, u8>(want),
                    "{vt:?} {block_type:?} written {order:?}, read {read_order:?}"
                );
                check_typed::<T>(&back);
            }
        }
    }
}

#[test]
fn every_voxel_type_round_trips_typed_in_both_layouts() {
    for vt in VoxelType::ALL {
        with_voxel!(vt, T => round_trip::<T>());
    }
}

#[test]
fn the_wrong_type_or_length_is_an_error() {
    let a = Array::zeros(VoxelType::U16, 1, [2, 2, 2], Order::C).unwrap();
    assert!(matches!(a.as_slice::<i16>(), Err(Error::ArrayMismatch(_))));
    assert!(matches!(a.as_slice::<u8>(), Err(Error::ArrayMismatch(_))));
    assert!(matches!(
        a.view().as_slice::<u32>(),
        Err(Error::ArrayMismatch(_))
    ));
    assert!(matches!(
        a.clone().into_vec::<f32>(),
        Err(Error::ArrayMismatch(_))
    ));
    assert_eq!(a.as_slice::<u16>().unwrap(), [0; 8]);
    assert!(matches!(
        Array::from_vec(1, [2, 2, 2], Order::C, vec![0u32; 7]),
        Err(Error::ArrayMismatch(_))
    ));
    assert!(matches!(
        ArrayView::from_slice(2, [2, 2, 2], Order::C, &[0f64; 8]),
        Err(Error::ArrayMismatch(_))
    ));
    // A dataset refuses an array of another voxel type.
    let dir = tempfile::tempdir().unwrap();
    let ds = Dataset::create(
        dir.path(),
        Header::new(VoxelType::F32, 1, 8, 2, BlockType::Raw).unwrap(),
    )
    .unwrap();
    let ints = Array::from_vec(1, [2, 2, 2], Order::C, vec![1i32; 8]).unwrap();
    assert!(matches!(
        ds.write([0; 3], &ints.view()),
        Err(Error::ArrayMismatch(_))
    ));
}

#[test]
fn empty_arrays_are_typed_empty_slices() {
    for order in [Order::Fortran, Order::C] {
        let a = Array::zeros(VoxelType::F64, 3, [0, 5, 2], order).unwrap();
        assert!(a.as_slice::<f64>().unwrap().is_empty());
        let b = Array::from_bytes(VoxelType::U64, 1, [4, 0, 1], order, Vec::new()).unwrap();
        assert!(b.as_slice::<u64>().unwrap().is_empty());
        assert!(b.into_vec::<u64>().unwrap().is_empty());
    }
}
