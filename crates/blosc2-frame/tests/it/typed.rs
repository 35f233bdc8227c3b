//! Typed b2nd reads against the byte reads and against the reference (python-blosc2 4.14.1)
//! fixtures of every `Element` type, including big-endian `>i4` / `>f8` (converted to native);
//! dtype mismatches refused; with the `ndarray` feature, regions read into `ArrayD` in C and
//! Fortran order and frames built from C, Fortran and transposed views, byte for byte the
//! reference frames.
#![allow(
    clippy::unwrap_used,
    clippy::cast_possible_truncation,
    clippy::cast_precision_loss,
    reason = "a failed unwrap is a failed test; test values are small"
)]

use crate::common;

use blosc2_frame::blosc_chunk::CParams;
use blosc2_frame::{B2ndArray, B2ndMeta, Element, Error, b2nd_frame, b2nd_frame_from_slice};
use common::{frame_entries, sha256_hex, testdata};
use serde_json::Value;

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

/// The b2nd fixtures made for every dtype (`gen_fixtures.py` section 3b): the manifest entries
/// with reference hashes of regions (`regions`: start, stop and the sha256 of `arr[start:stop]`
/// as stored and as little-endian values in C and in Fortran order).
fn dtype_entries() -> Vec<Value> {
    frame_entries()
        .into_iter()
        .filter(|e| e["kind"] == "b2nd" && e["regions"].is_array())
        .collect()
}

fn entry_name(e: &Value) -> &str {
    e["path"].as_str().unwrap().trim_start_matches("frames/")
}

fn u64s(v: &Value) -> Vec<u64> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_u64().unwrap())
        .collect()
}

/// `items` as little-endian bytes (NumPy's `<` order) on any machine.
fn le_bytes<'a, T: Element>(items: impl IntoIterator<Item = &'a T>) -> Vec<u8> {
    let mut out = Vec::new();
    for &x in items {
        let x = if cfg!(target_endian = "big") {
            x.swap_bytes()
        } else {
            x
        };
        out.extend_from_slice(bytemuck::bytes_of(&x));
    }
    out
}

/// Runs `$f::<T>($args)` with the `Element` type `T` of NumPy dtype `$dtype` (either order).
macro_rules! with_element {
    ($dtype:expr, $f:ident($($arg:expr),*)) => {
        match &$dtype[1..] {
            "u1" => $f::<u8>($($arg),*),
            "i1" => $f::<i8>($($arg),*),
            "u2" => $f::<u16>($($arg),*),
            "i2" => $f::<i16>($($arg),*),
            "u4" => $f::<u32>($($arg),*),
            "i4" => $f::<i32>($($arg),*),
            "u8" => $f::<u64>($($arg),*),
            "i8" => $f::<i64>($($arg),*),
            "f4" => $f::<f32>($($arg),*),
            "f8" => $f::<f64>($($arg),*),
            other => panic!("no Element type for {other}"),
        }
    };
}

#[test]
fn the_reference_fixtures_cover_every_element_type_in_both_orders() {
    let b2nd: Vec<Value> = frame_entries()
        .into_iter()
        .filter(|e| e["kind"] == "b2nd")
        .collect();
    assert_eq!(b2nd.len(), 13, "b2nd fixtures");
    assert_eq!(dtype_entries().len(), 9, "b2nd fixtures with region hashes");
    let dtypes: Vec<String> = b2nd
        .iter()
        .map(|e| e["dtype"].as_str().unwrap().to_string())
        .collect();
    let mut kinds: Vec<&str> = dtypes.iter().map(|d| &d[1..]).collect();
    kinds.sort_unstable();
    kinds.dedup();
    assert_eq!(
        kinds,
        ["f4", "f8", "i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8"],
        "kinds and sizes of the fixtures' dtypes"
    );
    for order in ["|", "<", ">"] {
        assert!(
            dtypes.iter().any(|d| d.starts_with(order)),
            "no {order} dtype among {dtypes:?}"
        );
    }
    // Every Element type has a fixture of its own dtype.
    fn has<T: Element>(dtypes: &[String]) -> bool {
        dtypes.iter().any(|d| d == T::DTYPE)
    }
    for dtype in [
        "|u1", "|i1", "<u2", "<i2", "<u4", "<i4", "<u8", "<i8", "<f4", "<f8",
    ] {
        assert!(with_element!(dtype, has(&dtypes)), "{dtype}");
    }
}

/// Typed reads of every region recorded for `e` against the reference hashes.
fn check_reference_regions<T: Element>(e: &Value) {
    let name = entry_name(e);
    let a = open(name);
    assert_eq!(a.dtype(), e["dtype"].as_str().unwrap());
    let regions = e["regions"].as_array().unwrap();
    assert_eq!(regions.len(), 5, "{name}");
    for r in regions {
        let (lo, hi) = (u64s(&r["start"]), u64s(&r["stop"]));
        let at = format!("{name} {lo:?}..{hi:?}");
        let stored = a.read_region(&lo, &hi).unwrap();
        assert_eq!(sha256_hex(&stored), r["sha256_c_order"], "{at} (bytes)");
        let typed = a.read_region_as::<T>(&lo, &hi).unwrap();
        assert_eq!(
            sha256_hex(&le_bytes(&typed)),
            r["sha256_le_c_order"],
            "{at} (as)"
        );
        let mut into = vec![T::default(); typed.len()];
        a.read_region_into(&lo, &hi, &mut into).unwrap();
        assert_eq!(into, typed, "{at} (into)");
    }
    // Region 0 is the whole array.
    assert_eq!(u64s(&regions[0]["stop"]), a.shape(), "{name}");
    let all = a.read_all_as::<T>().unwrap();
    assert_eq!(
        sha256_hex(&le_bytes(&all)),
        regions[0]["sha256_le_c_order"],
        "{name} (all)"
    );
    assert_eq!(
        sha256_hex(&a.read_all().unwrap()),
        e["sha256_array_c_order"],
        "{name} (all bytes)"
    );
}

#[test]
fn every_dtype_fixture_reads_typed_regions_like_the_reference() {
    for e in dtype_entries() {
        with_element!(e["dtype"].as_str().unwrap(), check_reference_regions(&e));
    }
}

/// The whole array `name` read as `T` equals `value(i)` for item `i` (C order), where `numpy`
/// is the expression the generator evaluated (asserted equal to the manifest's `values`).
fn check_values<T: Element>(name: &str, numpy: &str, value: impl Fn(i64) -> T) {
    let e = dtype_entries()
        .into_iter()
        .find(|e| entry_name(e) == name)
        .unwrap();
    assert_eq!(e["values"], numpy, "{name}");
    let a = open(name);
    let n = i64::try_from(a.meta().items()).unwrap();
    let want: Vec<T> = (0..n).map(value).collect();
    assert_eq!(a.read_all_as::<T>().unwrap(), want, "{name}");
}

#[test]
fn every_dtype_fixture_holds_the_numpy_values() {
    check_values(
        "b2nd_u1_33x17.b2nd",
        "(np.arange(561) * 37 % 256).astype('|u1').reshape(33, 17)",
        |i| u8::try_from(i * 37 % 256).unwrap(),
    );
    check_values(
        "b2nd_i1_5x6x7.b2nd",
        "(np.arange(210) * 5 % 256 - 128).astype('|i1').reshape(5, 6, 7)",
        |i| i8::try_from(i * 5 % 256 - 128).unwrap(),
    );
    check_values(
        "b2nd_i2_40x9.b2nd",
        "(np.arange(360) * 177 - 31000).astype('<i2').reshape(40, 9)",
        |i| i16::try_from(i * 177 - 31000).unwrap(),
    );
    check_values(
        "b2nd_u4_500.b2nd",
        "(np.arange(500, dtype='<u8') * 8589869 + 3).astype('<u4')",
        |i| u32::try_from(i * 8_589_869 + 3).unwrap(),
    );
    check_values(
        "b2nd_i4_12x11.b2nd",
        "((np.arange(132) - 66) * 16_000_000).astype('<i4').reshape(12, 11)",
        |i| i32::try_from((i - 66) * 16_000_000).unwrap(),
    );
    check_values(
        "b2nd_u8_5x4x3x3.b2nd",
        "(np.arange(180, dtype='<u8') * 100_000_000_000_000_000 + 7).astype('<u8').reshape(5, 4, 3, 3)",
        |i| u64::try_from(i).unwrap() * 100_000_000_000_000_000 + 7,
    );
    check_values(
        "b2nd_i8_25x7.b2nd",
        "((np.arange(175) - 87) * 100_000_000_000_000_000).astype('<i8').reshape(25, 7)",
        |i| (i - 87) * 100_000_000_000_000_000,
    );
    check_values(
        "b2nd_be_i4_9x13.b2nd",
        "((np.arange(117) - 58) * 12_345_679).astype('>i4').reshape(9, 13)",
        |i| i32::try_from((i - 58) * 12_345_679).unwrap(),
    );
    check_values(
        "b2nd_be_f8_11x10.b2nd",
        "((np.arange(110) - 55) / 7.0).astype('>f8').reshape(11, 10)",
        |i| (i - 55) as f64 / 7.0,
    );
    // Big-endian arrays: the byte reads stay as stored, the typed reads are native.
    let be = open("b2nd_be_i4_9x13.b2nd");
    assert_eq!(be.dtype(), ">i4");
    assert_eq!(
        be.read_region(&[0, 0], &[1, 1]).unwrap(),
        (-58i32 * 12_345_679).to_be_bytes()
    );
    assert!(matches!(
        be.read_all_as::<u32>(),
        Err(Error::DtypeMismatch { dtype, .. }) if dtype == ">i4"
    ));
    assert!(matches!(
        open("b2nd_i1_5x6x7.b2nd").read_all_as::<u8>(),
        Err(Error::DtypeMismatch { .. })
    ));
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

    /// Region reads of `e` into arrays against the reference hashes, walked in C order, in
    /// Fortran order (the transposed view) and from a Fortran-layout copy's memory.
    fn check_ndarray_reads<T: Element>(e: &Value) {
        let name = entry_name(e);
        let a = open(name);
        for r in e["regions"].as_array().unwrap() {
            let (lo, hi) = (u64s(&r["start"]), u64s(&r["stop"]));
            let at = format!("{name} {lo:?}..{hi:?}");
            let x: ArrayD<T> = a.read_region_ndarray(&lo, &hi).unwrap();
            let shape: Vec<usize> = lo.iter().zip(&hi).map(|(a, b)| (b - a) as usize).collect();
            assert_eq!(x.shape(), shape.as_slice(), "{at}");
            assert!(x.is_standard_layout(), "{at}");
            assert_eq!(
                sha256_hex(&le_bytes(x.iter())),
                r["sha256_le_c_order"],
                "{at} (C order)"
            );
            assert_eq!(
                sha256_hex(&le_bytes(x.t().iter())),
                r["sha256_le_f_order"],
                "{at} (transposed view: Fortran order)"
            );
            let mut f = Array::from_elem(IxDyn(&shape).f(), T::default());
            f.assign(&x);
            assert_eq!(
                sha256_hex(&le_bytes(f.as_slice_memory_order().unwrap())),
                r["sha256_le_f_order"],
                "{at} (Fortran-layout copy)"
            );
        }
        let all: ArrayD<T> = a.read_all_ndarray().unwrap();
        assert_eq!(
            sha256_hex(&le_bytes(all.iter())),
            e["regions"][0]["sha256_le_c_order"],
            "{name} (all)"
        );
    }

    #[test]
    fn every_dtype_fixture_reads_into_arrays_in_both_orders() {
        for e in dtype_entries() {
            with_element!(e["dtype"].as_str().unwrap(), check_ndarray_reads(&e));
        }
    }

    /// The compression parameters python-blosc2 reported for `e` (manifest `cparams`).
    fn reference_cparams(e: &Value) -> CParams {
        let c = &e["cparams"];
        let byte = |v: &Value| u8::try_from(v.as_u64().unwrap()).unwrap();
        let mut cp = CParams::default();
        cp.codec = Codec::from_id(byte(&c["codec"]));
        cp.clevel = byte(&c["clevel"]);
        for (k, f) in c["filters"].as_array().unwrap().iter().enumerate() {
            cp.filters[k] = Filter::from_id(byte(f));
        }
        for (k, m) in c["filters_meta"].as_array().unwrap().iter().enumerate() {
            cp.filters_meta[k] = byte(m);
        }
        // C-Blosc2's BLOSC_ALWAYS_SPLIT = 1, NEVER = 2, AUTO = 3, FORWARD_COMPAT = 4.
        cp.splitmode = match c["splitmode"].as_u64().unwrap() {
            1 => SplitMode::Always,
            2 => SplitMode::Never,
            3 => SplitMode::Auto,
            _ => SplitMode::ForwardCompat,
        };
        assert_eq!(c["use_dict"], false);
        cp.nthreads = 1;
        cp
    }

    /// Frames written from arrays holding the reference values of `e` (checked against the
    /// reference hash first) in C layout, Fortran layout and as a transposed view: for
    /// little-endian dtypes byte for byte the python-blosc2 fixture, for big-endian ones (this
    /// crate writes `T::DTYPE`) the same values in little-endian order.
    fn check_ndarray_writes<T: Element>(e: &Value) {
        let name = entry_name(e);
        let a = open(name);
        let values = a.read_all_as::<T>().unwrap();
        let le_c = &e["regions"][0]["sha256_le_c_order"];
        assert_eq!(sha256_hex(&le_bytes(&values)), *le_c, "{name}");
        let shape: Vec<usize> = a.shape().iter().map(|&n| n as usize).collect();
        let c = ArrayD::from_shape_vec(IxDyn(&shape), values).unwrap();
        let mut f = Array::from_elem(IxDyn(&shape).f(), T::default());
        f.assign(&c);
        // A C-layout array of the reversed shape holding the Fortran-order items: its transpose
        // is a view of `shape` with Fortran strides.
        let reversed: Vec<usize> = shape.iter().rev().copied().collect();
        let fortran_items = f.as_slice_memory_order().unwrap().to_vec();
        let t_owner = ArrayD::from_shape_vec(IxDyn(&reversed), fortran_items).unwrap();
        assert_eq!(t_owner.t(), c, "{name}");
        let want = std::fs::read(testdata().join(e["path"].as_str().unwrap())).unwrap();
        let cp = reference_cparams(e);
        let (chunks, blocks) = (u64s(&e["chunks"]), u64s(&e["blocks"]));
        let dtype = e["dtype"].as_str().unwrap();
        for (layout, view) in [
            ("C layout", c.view()),
            ("Fortran layout", f.view()),
            ("transposed view", t_owner.t()),
        ] {
            let w = b2nd_frame_from_ndarray(&view, &chunks, &blocks, &cp).unwrap();
            let ours = w.to_bytes().unwrap();
            if dtype.starts_with('>') {
                let back = B2ndArray::from_slice(&ours).unwrap();
                assert_eq!(back.dtype(), T::DTYPE, "{name} {layout}");
                assert_eq!(
                    sha256_hex(&back.read_all().unwrap()),
                    *le_c,
                    "{name} {layout}"
                );
            } else {
                let at = ours.iter().zip(&want).position(|(x, y)| x != y);
                assert!(
                    ours == want,
                    "{name} {layout}: {} vs {} bytes, first difference at {at:?}",
                    ours.len(),
                    want.len()
                );
            }
        }
    }

    #[test]
    fn arrays_of_the_reference_values_rebuild_every_dtype_fixture() {
        for e in dtype_entries() {
            with_element!(e["dtype"].as_str().unwrap(), check_ndarray_writes(&e));
        }
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
