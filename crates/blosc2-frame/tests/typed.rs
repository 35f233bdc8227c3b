//! Typed b2nd reads against the byte reads for every dtype among the fixtures, big-endian
//! dtypes converted to native, dtype mismatches refused; with the `ndarray` feature, regions
//! read into `ArrayD` and frames built from views of any layout.
#![allow(
    clippy::unwrap_used,
    clippy::cast_possible_truncation,
    clippy::cast_precision_loss,
    reason = "a failed unwrap is a failed test; test values are small"
)]

mod common;

use blosc2_frame::blosc_chunk::CParams;
use blosc2_frame::{B2ndArray, B2ndMeta, Element, Error, b2nd_frame, b2nd_frame_from_slice};
use common::testdata;

/// Regions that cover the whole array, an interior box, a corner and an empty box.
fn regions(shape: &[u64]) -> Vec<(Vec<u64>, Vec<u64>)> {
    let zero = vec![0; shape.len()];
    let inner_lo: Vec<u64> = shape.iter().map(|&s| s / 3).collect();
    let inner_hi: Vec<u64> = shape.iter().map(|&s| s - s / 4).collect();
    let corner_lo: Vec<u64> = shape.iter().map(|&s| s - 1).collect();
    let mut empty_hi = shape.to_vec();
    empty_hi[0] = 0;
    vec![
        (zero.clone(), shape.to_vec()),
        (inner_lo, inner_hi),
        (corner_lo, shape.to_vec()),
        (zero, empty_hi),
    ]
}

/// Checks typed reads of `array` as `T` against its byte reads decoded with `from_le`.
fn check_typed<T: Element>(array: &B2ndArray<'_>, from_le: fn(&[u8]) -> T) {
    let dtype = array.dtype().to_string();
    for (lo, hi) in regions(array.shape()) {
        let bytes = array.read_region(&lo, &hi).unwrap();
        let want: Vec<T> = bytes.chunks_exact(size_of::<T>()).map(from_le).collect();
        assert_eq!(
            array.read_region_as::<T>(&lo, &hi).unwrap(),
            want,
            "{dtype} {lo:?}..{hi:?}"
        );
        let mut into = vec![T::default(); want.len()];
        array.read_region_into(&lo, &hi, &mut into).unwrap();
        assert_eq!(into, want, "{dtype} {lo:?}..{hi:?} (into)");
    }
    assert_eq!(
        array.read_all_as::<T>().unwrap().len() as u64,
        array.meta().items()
    );
}

fn open(name: &str) -> B2ndArray<'static> {
    B2ndArray::open(testdata().join("frames").join(name)).unwrap()
}

#[test]
fn every_fixture_dtype_reads_typed_like_its_bytes() {
    let f4 = open("b2nd_f4_20x30.b2nd");
    assert_eq!(f4.dtype(), "<f4");
    check_typed::<f32>(&f4, |b| f32::from_le_bytes(b.try_into().unwrap()));
    // python: np.arange(600, '<f4').reshape(20, 30)
    let want: Vec<f32> = (0..600).map(|i| i as f32).collect();
    assert_eq!(f4.read_all_as::<f32>().unwrap(), want);

    let u2 = open("b2nd_u2_7x9x11.b2nd");
    assert_eq!(u2.dtype(), "<u2");
    check_typed::<u16>(&u2, |b| u16::from_le_bytes(b.try_into().unwrap()));
    // python: (np.arange(693) % 1000).astype('<u2').reshape(7, 9, 11)
    let want: Vec<u16> = (0..693).collect();
    assert_eq!(u2.read_all_as::<u16>().unwrap(), want);

    let f8 = open("b2nd_zeros_f8_50x40.b2nd");
    assert_eq!(f8.dtype(), "<f8");
    check_typed::<f64>(&f8, |b| f64::from_le_bytes(b.try_into().unwrap()));
    // python: blosc2.zeros((50, 40), '<f8'); z[0:5, 0:5] = 1.0
    let got = f8.read_all_as::<f64>().unwrap();
    for (k, &x) in got.iter().enumerate() {
        let (r, c) = (k / 40, k % 40);
        assert_eq!(x, if r < 5 && c < 5 { 1.0 } else { 0.0 }, "({r}, {c})");
    }
}

#[test]
fn a_type_that_does_not_match_the_dtype_is_refused() {
    let u2 = open("b2nd_u2_7x9x11.b2nd");
    for err in [
        u2.read_all_as::<i16>().unwrap_err(),
        u2.read_all_as::<u32>().unwrap_err(),
        u2.read_all_as::<u8>().unwrap_err(),
    ] {
        assert!(
            matches!(&err, Error::DtypeMismatch { dtype, .. } if dtype == "<u2"),
            "{err}"
        );
    }
    assert!(matches!(
        open("b2nd_f4_20x30.b2nd").read_all_as::<i32>(),
        Err(Error::DtypeMismatch { .. })
    ));
    // A wrong output length is the caller's mistake.
    let mut short = vec![0u16; 3];
    assert!(matches!(
        u2.read_region_into(&[0, 0, 0], &[1, 1, 4], &mut short),
        Err(Error::InvalidArgument(_))
    ));
}

/// A frame of `dtype` from items already encoded as that dtype's bytes.
fn frame_of(bytes: &[u8], shape: &[u64], dtype: &str, itemsize: usize) -> Vec<u8> {
    let meta = B2ndMeta::new(shape, &[3, 2], &[2, 1], dtype).unwrap();
    b2nd_frame(bytes, &meta, itemsize, &CParams::default())
        .unwrap()
        .to_bytes()
        .unwrap()
}

#[test]
fn big_endian_dtypes_are_converted_to_native() {
    let shape = [5, 3];
    let u2: Vec<u16> = (0..15).map(|i| 1000 * i + 7).collect();
    let bytes: Vec<u8> = u2.iter().flat_map(|x| x.to_be_bytes()).collect();
    let frame = frame_of(&bytes, &shape, ">u2", 2);
    let a = B2ndArray::from_slice(&frame).unwrap();
    assert_eq!(a.read_all_as::<u16>().unwrap(), u2);
    assert_eq!(a.read_all().unwrap(), bytes, "byte reads stay as stored");
    assert_eq!(
        a.read_region_as::<u16>(&[1, 1], &[3, 3]).unwrap(),
        [u2[4], u2[5], u2[7], u2[8]]
    );

    let f8: Vec<f64> = (0..15).map(|i| f64::from(i) * -1.25e300).collect();
    let bytes: Vec<u8> = f8.iter().flat_map(|x| x.to_be_bytes()).collect();
    let frame = frame_of(&bytes, &shape, ">f8", 8);
    assert_eq!(
        B2ndArray::from_slice(&frame)
            .unwrap()
            .read_all_as::<f64>()
            .unwrap(),
        f8
    );

    let i4: Vec<i32> = (0..15).map(|i| -70_000 * i).collect();
    let bytes: Vec<u8> = i4.iter().flat_map(|x| x.to_be_bytes()).collect();
    let frame = frame_of(&bytes, &shape, ">i4", 4);
    assert_eq!(
        B2ndArray::from_slice(&frame)
            .unwrap()
            .read_all_as::<i32>()
            .unwrap(),
        i4
    );
}

#[test]
fn typed_frames_round_trip_every_element_type() {
    fn round_trip<T: Element>(items: Vec<T>) {
        let w =
            b2nd_frame_from_slice(&items, &[4, 5], &[3, 2], &[2, 2], &CParams::default()).unwrap();
        let bytes = w.to_bytes().unwrap();
        let a = B2ndArray::from_slice(&bytes).unwrap();
        assert_eq!(a.dtype(), T::DTYPE);
        assert_eq!(a.itemsize(), size_of::<T>());
        assert_eq!(a.read_all_as::<T>().unwrap(), items, "{}", T::DTYPE);
    }
    round_trip::<u8>((0..20).collect());
    round_trip::<i8>((-10..10).collect());
    round_trip::<u16>((0..20).map(|i| i * 3000).collect());
    round_trip::<i16>((0..20).map(|i| i * -1600).collect());
    round_trip::<u32>((0..20).map(|i| i * 200_000_000).collect());
    round_trip::<i32>((0..20).map(|i| i * -100_000_000).collect());
    round_trip::<u64>((0..20).map(|i| i << 59).collect());
    round_trip::<i64>((0..20).map(|i| -i << 58).collect());
    round_trip::<f32>((0..20).map(|i| i as f32 / 3.0).collect());
    round_trip::<f64>((0..20).map(|i| f64::from(i) / 7.0).collect());
    // The little-endian bytes are what python-blosc2 would hold for the same values.
    let w = b2nd_frame_from_slice(&[1u16, 2, 3], &[3], &[3], &[3], &CParams::default()).unwrap();
    let bytes = w.to_bytes().unwrap();
    assert_eq!(
        B2ndArray::from_slice(&bytes).unwrap().read_all().unwrap(),
        [1, 0, 2, 0, 3, 0]
    );
}

#[cfg(feature = "ndarray")]
mod ndarray_feature {
    use super::*;
    use blosc2_frame::b2nd_frame_from_ndarray;
    use blosc2_frame::blosc_chunk::{Codec, Filter, SplitMode};
    use ndarray::{Array, ArrayD, IxDyn, ShapeBuilder, s};

    #[test]
    fn fixture_regions_read_into_arrays_of_the_region_shape() {
        let u2 = open("b2nd_u2_7x9x11.b2nd");
        let all: ArrayD<u16> = u2.read_all_ndarray().unwrap();
        assert_eq!(all.shape(), [7, 9, 11]);
        assert!(all.is_standard_layout());
        for (lo, hi) in regions(u2.shape()) {
            let a: ArrayD<u16> = u2.read_region_ndarray(&lo, &hi).unwrap();
            let shape: Vec<usize> = lo.iter().zip(&hi).map(|(a, b)| (b - a) as usize).collect();
            assert_eq!(a.shape(), shape.as_slice());
            // Element (i, j, k) of the region is element lo + (i, j, k) of the array.
            for (idx, &x) in a.indexed_iter() {
                let at: Vec<usize> = (0..3).map(|d| idx[d] + lo[d] as usize).collect();
                assert_eq!(x, all[IxDyn(&at)], "{lo:?}..{hi:?} at {idx:?}");
            }
        }
        let f4 = open("b2nd_f4_20x30.b2nd");
        let a: ArrayD<f32> = f4.read_region_ndarray(&[2, 3], &[4, 6]).unwrap();
        assert_eq!(a.shape(), [2, 3]);
        assert_eq!(a[[1, 2]], (3 * 30 + 5) as f32);
        let f8 = open("b2nd_zeros_f8_50x40.b2nd");
        let a: ArrayD<f64> = f8.read_region_ndarray(&[3, 3], &[7, 6]).unwrap();
        assert_eq!(a.sum(), 2.0 * 2.0);
        assert!(matches!(
            f8.read_all_ndarray::<f32>(),
            Err(Error::DtypeMismatch { .. })
        ));
    }

    #[test]
    fn an_ndarray_rebuilds_the_python_fixture_byte_for_byte() {
        // (np.arange(693) % 1000).astype('<u2').reshape(7,9,11), chunks (4,5,6), blocks
        // (2,3,4), BloscLZ clevel 5 + shuffle, nthreads 1.
        let a = Array::from_shape_vec((7, 9, 11), (0..693u16).collect()).unwrap();
        let mut cp = CParams::default();
        cp.codec = Codec::BloscLz;
        cp.clevel = 5;
        cp.filters = [Filter::NoFilter; 6];
        cp.filters[0] = Filter::Shuffle;
        cp.splitmode = SplitMode::Auto;
        cp.nthreads = 1;
        let w = b2nd_frame_from_ndarray(&a, &[4, 5, 6], &[2, 3, 4], &cp).unwrap();
        let want = std::fs::read(testdata().join("frames/b2nd_u2_7x9x11.b2nd")).unwrap();
        assert!(
            w.to_bytes().unwrap() == want,
            "frame differs from the python fixture"
        );
        // The same array in Fortran layout gives the same frame.
        let mut f = Array::zeros((7, 9, 11).f());
        f.assign(&a);
        let w = b2nd_frame_from_ndarray(&f, &[4, 5, 6], &[2, 3, 4], &cp).unwrap();
        assert!(w.to_bytes().unwrap() == want, "Fortran-order copy differs");
    }

    #[test]
    fn views_of_any_strides_round_trip() {
        let base = Array::from_shape_fn((6, 10), |(i, j)| (i * 10 + j) as f64 - 0.5);
        let views = [
            base.view(),
            base.t(),
            base.slice(s![1..6;2, ..;3]),
            base.slice(s![..;-1, 2..7]),
        ];
        for v in views {
            let w = b2nd_frame_from_ndarray(&v, &[2, 2], &[1, 2], &CParams::default()).unwrap();
            let bytes = w.to_bytes().unwrap();
            let arr = B2ndArray::from_slice(&bytes).unwrap();
            assert_eq!(arr.dtype(), "<f8");
            let back: ArrayD<f64> = arr.read_all_ndarray().unwrap();
            assert_eq!(back, v.into_dyn(), "view of shape {:?}", v.shape());
            let flat: Vec<f64> = v.iter().copied().collect();
            assert_eq!(arr.read_all_as::<f64>().unwrap(), flat);
        }
    }
}
