//! The `ndarray` feature: reads into `Array4<T>` (C, X, Y, Z) with column-major strides for
//! `Order::Fortran` and row-major for `Order::C`, equal value for value to the byte reads (and
//! so to the reference's hashes) for every fixture read; writes from views of every stride
//! pattern (C, Fortran, stepped, reversed, permuted, 3-D one-channel) for all ten voxel types.
#![cfg(feature = "ndarray")]
#![allow(
    clippy::unwrap_used,
    clippy::cast_possible_truncation,
    reason = "a failed unwrap is a failed test; test sizes are small"
)]

use crate::common;

use common::*;
use testkit::Lcg;
use wkw::ndarray::{Array4, ArrayView4, Axis, ShapeBuilder, s};
use wkw::{BlockType, Dataset, Error, Header, Order, Voxel, VoxelType};

/// Element strides of a (C, X, Y, Z) array of `dims` in `order`.
fn strides(d: [usize; 4], order: Order) -> [isize; 4] {
    let [c, x, y, z] = d.map(|v| isize::try_from(v).unwrap());
    match order {
        Order::Fortran => [1, c, c * x, c * x * y],
        _ => [x * y * z, y * z, z, 1],
    }
}

/// The ndarray read of a fixture box equals the byte read value for value, with the layout's
/// strides; its memory is exactly the byte read's bytes.
fn check_fixture_read<T: Voxel>(ds: &Dataset, off: [u32; 3], shape: [u32; 3], order: Order) {
    let bytes = ds.read(off, shape, order).unwrap();
    let nd = ds.read_ndarray::<T>(off, shape, order).unwrap();
    let c = usize::from(ds.header().num_channels());
    let d = [c, shape[0] as usize, shape[1] as usize, shape[2] as usize];
    assert_eq!(nd.shape(), d);
    if !d.contains(&1) {
        assert_eq!(nd.strides(), strides(d, order), "{order:?}");
    }
    let mem = nd.as_slice_memory_order().unwrap();
    assert_eq!(bytemuck::cast_slice::<T, u8>(mem), bytes.as_bytes());
    let typed = bytes.as_slice::<T>().unwrap();
    for ((ci, x, y, z), v) in nd.indexed_iter() {
        let at = bytes
            .offset_of(ci as u8, [x as u32, y as u32, z as u32])
            .unwrap()
            / size_of::<T>();
        assert_eq!(bytemuck::bytes_of(v), bytemuck::bytes_of(&typed[at]));
    }
    // The same from an `Array`.
    let again = bytes.into_ndarray::<T>().unwrap();
    assert_eq!(again.strides(), nd.strides());
    assert_eq!(
        bytemuck::cast_slice::<T, u8>(again.as_slice_memory_order().unwrap()),
        bytemuck::cast_slice::<T, u8>(mem)
    );
}

#[test]
fn ndarray_reads_of_every_fixture_match_the_reference_in_both_layouts() {
    let reads = fixture_reads();
    assert_eq!(reads.len(), 48, "24 reads in two layouts");
    for (name, off, shape, order, hash) in reads {
        let ds = Dataset::open(testdata().join(&name)).unwrap();
        with_voxel!(ds.header().voxel_type(), T => {
            check_fixture_read::<T>(&ds, off, shape, order);
            let nd = ds.read_ndarray::<T>(off, shape, order).unwrap();
            let mem = nd.as_slice_memory_order().unwrap();
            assert_eq!(sha256(bytemuck::cast_slice(mem)), hash, "{name} {order:?}");
        });
    }
}

fn random4<T: Voxel>(d: (usize, usize, usize, usize), seed: u64) -> Array4<T> {
    let mut rng = Lcg(seed);
    let mut a = Array4::<T>::from_elem(d, T::zeroed());
    for b in bytemuck::cast_slice_mut::<T, u8>(a.as_slice_mut().unwrap()) {
        *b = rng.next_u64() as u8;
    }
    a
}

/// `view` written at `at`, read back in both layouts, equals the view element for element
/// (compared as bits: random float bits include NaNs).
fn check_write<T: Voxel>(ds: &Dataset, at: [u32; 3], view: ArrayView4<'_, T>, what: &str) {
    ds.write_ndarray(at, view).unwrap();
    let (_, x, y, z) = view.dim();
    let shape = [x as u32, y as u32, z as u32];
    for order in [Order::Fortran, Order::C] {
        let back = ds.read_ndarray::<T>(at, shape, order).unwrap();
        assert_eq!(back.dim(), view.dim());
        for (i, (a, b)) in back.iter().zip(view.iter()).enumerate() {
            assert_eq!(
                bytemuck::bytes_of(a),
                bytemuck::bytes_of(b),
                "{:?} {what}, read {order:?}: element {i}",
                T::VOXEL_TYPE
            );
        }
    }
}

fn write_every_stride<T: Voxel>() {
    let vt = T::VOXEL_TYPE;
    for block_type in [BlockType::Raw, BlockType::Lz4] {
        let dir = tempfile::tempdir().unwrap();
        let ds =
            Dataset::create(dir.path(), Header::new(vt, 2, 4, 2, block_type).unwrap()).unwrap();
        let seed = u64::from(vt.to_u8());
        let c_order = random4::<T>((2, 7, 6, 5), seed);
        check_write(&ds, [1, 2, 3], c_order.view(), "C-contiguous");
        let mut f_order = Array4::<T>::from_elem((2, 7, 6, 5).f(), T::zeroed());
        f_order.assign(&random4::<T>((2, 7, 6, 5), seed + 1));
        assert!(f_order.view().reversed_axes().is_standard_layout());
        check_write(&ds, [5, 0, 2], f_order.view(), "Fortran-contiguous");
        let big = random4::<T>((2, 14, 6, 10), seed + 2);
        check_write(&ds, [0, 3, 1], big.slice(s![.., ..;2, .., ..;2]), "stepped");
        check_write(
            &ds,
            [2, 2, 2],
            big.slice(s![.., ..;-1, 1..5, ..]),
            "reversed x",
        );
        let yx = random4::<T>((2, 6, 7, 5), seed + 3);
        check_write(
            &ds,
            [3, 1, 0],
            yx.view().permuted_axes([0, 2, 1, 3]),
            "x and y swapped",
        );
        // One channel of a two-channel array is not contiguous either.
        let one = Dataset::create(
            dir.path().join("one"),
            Header::new(vt, 1, 4, 2, block_type).unwrap(),
        )
        .unwrap();
        let chan = big.index_axis(Axis(0), 1);
        one.write_ndarray3([4, 4, 4], chan).unwrap();
        let back = one
            .read_ndarray::<T>([4, 4, 4], [14, 6, 10], Order::C)
            .unwrap();
        for (a, b) in back.index_axis(Axis(0), 0).iter().zip(chan.iter()) {
            assert_eq!(bytemuck::bytes_of(a), bytemuck::bytes_of(b), "{vt:?} 3-D");
        }
        assert!(matches!(
            ds.write_ndarray3([0; 3], chan),
            Err(Error::ArrayMismatch(_))
        ));
    }
}

#[test]
fn writes_from_views_of_any_strides_for_every_voxel_type() {
    for vt in VoxelType::ALL {
        with_voxel!(vt, T => write_every_stride::<T>());
    }
}

#[test]
fn the_wrong_voxel_type_is_an_error() {
    let ds = Dataset::open(testdata().join("u16_3ch_lz4_b8_f4")).unwrap();
    assert!(matches!(
        ds.read_ndarray::<i16>([0; 3], [2; 3], Order::C),
        Err(Error::ArrayMismatch(_))
    ));
    let a = Array4::<u32>::zeros((3, 2, 2, 2));
    assert!(matches!(
        ds.write_ndarray([0; 3], a.view()),
        Err(Error::ArrayMismatch(_))
    ));
}
