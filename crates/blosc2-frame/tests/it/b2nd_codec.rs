//! The `b2nd` codec (`B2ndCodec`, and its zarrs plugin of feature `zarrs`) against every b2nd
//! fixture python-blosc2 wrote (`frames/b2nd_*.b2nd`, the plugin arrays of `plugins/`): each
//! chunk's stored bytes, taken from the frame, decode — directly and as the chunks of a zarrs
//! array over an in-memory store — to what this crate's reader (tested against python-blosc2's
//! values in `fixtures.rs` and `plugins.rs`) reads; chunks the codec and zarrs encode, put back
//! into the frame, read back the same. Hostile chunks and shapes give errors.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::cast_possible_truncation
)]

use std::sync::Arc;

use blosc2_frame::blosc_chunk::{self, BloscShuffle, Codec};
use blosc2_frame::{
    B2ndArray, B2ndCodec, B2ndCodecConfig, ChunkLocation, Endian, Error, FrameWriter, Limits,
};
use proptest::prelude::*;
use serde_json::{Value, json};
use zarrs::array::codec::api::CodecOptions;
use zarrs::array::{Array, ArrayBytes, ArrayMetadata, ArraySubset};
use zarrs::storage::store::MemoryStore;
use zarrs::storage::{ReadableStorageTraits, WritableStorageTraits};

use crate::common::{frame_entries, testdata};

/// One b2nd fixture: its name and bytes.
struct Fixture {
    name: String,
    bytes: Vec<u8>,
}

/// Every b2nd array python-blosc2 made for the fixtures: the per-dtype and `blosc2.zeros`
/// arrays of `frames/` and the plugin-filter and plugin-codec arrays of `plugins/`.
fn fixtures() -> Vec<Fixture> {
    let mut v: Vec<Fixture> = frame_entries()
        .iter()
        .filter(|e| e["kind"] == "b2nd")
        // A sparse frame's chunks are files of their own (`virtualize_sparse.rs`).
        .filter(|e| !testdata().join(e["path"].as_str().unwrap()).is_dir())
        .map(|e| {
            let path = e["path"].as_str().unwrap();
            Fixture {
                name: path.to_string(),
                bytes: std::fs::read(testdata().join(path)).unwrap(),
            }
        })
        .collect();
    let plugins: Value = serde_json::from_str(
        &std::fs::read_to_string(testdata().join("plugins/manifest.json")).unwrap(),
    )
    .unwrap();
    for e in plugins["entries"].as_array().unwrap() {
        let file = e["files"]["b2nd"].as_str().unwrap();
        v.push(Fixture {
            name: format!("plugins/{file}"),
            bytes: std::fs::read(testdata().join("plugins").join(file)).unwrap(),
        });
    }
    assert!(v.len() >= 40, "{} b2nd fixtures", v.len());
    v
}

/// The byte order of a NumPy dtype string.
fn endian_of(dtype: &str) -> Endian {
    if dtype.starts_with('>') {
        Endian::Big
    } else {
        Endian::Little
    }
}

/// The zarrs data type of a numeric NumPy dtype, or raw bits of the item size for others.
fn zarr_data_type(dtype: &str, itemsize: usize) -> String {
    let kind = &dtype[1..];
    match kind {
        "u1" | "u2" | "u4" | "u8" => format!("uint{}", itemsize * 8),
        "i1" | "i2" | "i4" | "i8" => format!("int{}", itemsize * 8),
        "f4" | "f8" => format!("float{}", itemsize * 8),
        _ => format!("r{}", itemsize * 8),
    }
}

/// Items of `itemsize` bytes from `endian` order to this machine's.
fn to_native(mut bytes: Vec<u8>, itemsize: usize, endian: Endian) -> Vec<u8> {
    if endian != Endian::native() {
        for item in bytes.chunks_exact_mut(itemsize) {
            item.reverse();
        }
    }
    bytes
}

/// The items of the box `[0, stop)` of a C-order buffer of `shape`.
fn sub_box(buf: &[u8], shape: &[u64], stop: &[u64], itemsize: usize) -> Vec<u8> {
    if shape.is_empty() {
        return buf[..itemsize].to_vec();
    }
    let inner: usize = shape[1..].iter().product::<u64>() as usize * itemsize;
    let mut out = Vec::new();
    for i in 0..stop[0] as usize {
        out.extend(sub_box(
            &buf[i * inner..(i + 1) * inner],
            &shape[1..],
            &stop[1..],
            itemsize,
        ));
    }
    out
}

/// Chunk `i`'s grid coordinates.
fn chunk_coords(mut i: u64, grid: &[u64]) -> Vec<u64> {
    let mut c = vec![0; grid.len()];
    for (x, &g) in c.iter_mut().zip(grid).rev() {
        *x = i % g;
        i /= g;
    }
    c
}

/// The stored bytes of chunk `i` as python-blosc2's `schunk.get_chunk(i)` gives them: the
/// frame's bytes, or for a special index entry the special-value chunk C builds for it.
fn stored_chunk(a: &B2ndArray<'_>, i: usize) -> Vec<u8> {
    let f = a.frame();
    let nbytes = f.chunk_nbytes(i).unwrap();
    let ts = f.header().typesize as usize;
    match f.index()[i] {
        ChunkLocation::Stored(_) => f.chunk(i).unwrap().into_owned(),
        ChunkLocation::Zeros => blosc_chunk::zeros_chunk(nbytes, ts).unwrap(),
        ChunkLocation::Nan => blosc_chunk::nans_chunk(nbytes, ts).unwrap(),
        ChunkLocation::Uninit => blosc_chunk::uninit_chunk(nbytes, ts).unwrap(),
        other => panic!("unexpected chunk location {other:?}"),
    }
}

fn config_of(a: &B2ndArray<'_>) -> B2ndCodecConfig {
    B2ndCodecConfig::new(&a.meta().blockshape).with_endian(endian_of(a.dtype()))
}

#[test]
fn every_stored_chunk_decodes_to_the_readers_items() {
    let (mut chunks, mut padded, mut reordered) = (0, 0, 0);
    for fx in fixtures() {
        let a = B2ndArray::from_slice(&fx.bytes).unwrap();
        let m = a.meta().clone();
        let ts = a.itemsize();
        let codec = B2ndCodec::new(config_of(&a)).unwrap();
        let grid = m.chunks_per_dim();
        for i in 0..a.frame().nchunks() {
            let what = format!("{} chunk {i}", fx.name);
            let stored = stored_chunk(&a, i);
            let decoded = codec
                .decode(&stored, &m.chunkshape, ts)
                .unwrap_or_else(|e| panic!("{what}: {e}"));
            assert_eq!(
                decoded.len() as u64,
                m.chunkshape.iter().product::<u64>() * ts as u64,
                "{what}"
            );
            // The part of the chunk inside the array is the reader's region.
            let origin: Vec<u64> = chunk_coords(i as u64, &grid)
                .iter()
                .zip(&m.chunkshape)
                .map(|(c, s)| c * s)
                .collect();
            let stop: Vec<u64> = origin
                .iter()
                .zip(&m.chunkshape)
                .zip(&m.shape)
                .map(|((o, c), s)| (o + c).min(*s))
                .collect();
            let want = a.read_region(&origin, &stop).unwrap();
            let extent: Vec<u64> = stop.iter().zip(&origin).map(|(s, o)| s - o).collect();
            assert_eq!(
                sub_box(&decoded, &m.chunkshape, &extent, ts),
                want,
                "{what}"
            );
            // decode_into gives the same; an output of another size is refused.
            let mut out = vec![0xa5; decoded.len()];
            codec
                .decode_into(&stored, &m.chunkshape, ts, &mut out)
                .unwrap();
            assert_eq!(out, decoded, "{what}");
            assert!(matches!(
                codec.decode_into(&stored, &m.chunkshape, ts, &mut out[1..]),
                Err(Error::InvalidArgument(_))
            ));
            chunks += 1;
            padded += usize::from(extent != m.chunkshape);
            reordered += usize::from(m.blockshape != m.chunkshape);
        }
    }
    // Blocks other than the chunk (also blocks that do not divide it) and edge chunks.
    assert!(
        chunks > 200 && padded > 50 && reordered > 200,
        "{chunks} chunks, {padded} at the edge, {reordered} with blocks"
    );
}

/// `metadata` of a Zarr v3 array holding fixture `a` with the `b2nd` codec `config`.
fn zarr_metadata(a: &B2ndArray<'_>, data_type: &str, config: &B2ndCodecConfig) -> ArrayMetadata {
    let m = a.meta();
    // Raw bits take their fill value as bytes.
    let fill_value = if data_type.starts_with('r') {
        json!(vec![0; a.itemsize()])
    } else {
        json!(0)
    };
    serde_json::from_value(json!({
        "zarr_format": 3, "node_type": "array", "shape": m.shape, "data_type": data_type,
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": m.chunkshape}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": fill_value, "codecs": [config.to_entry()], "attributes": {}
    }))
    .unwrap()
}

/// A Zarr v3 array over an in-memory store whose chunks are the stored chunks of `a`, as a
/// virtual reference to the frame would make it.
fn zarr_view(a: &B2ndArray<'_>, data_type: &str) -> Array<MemoryStore> {
    let store = Arc::new(MemoryStore::new());
    let array = Array::new_with_metadata(
        store.clone(),
        "/",
        zarr_metadata(a, data_type, &config_of(a)),
    )
    .unwrap();
    let grid = a.meta().chunks_per_dim();
    for i in 0..a.frame().nchunks() {
        let key = array.chunk_key(&chunk_coords(i as u64, &grid));
        store.set(&key, stored_chunk(a, i).into()).unwrap();
    }
    array
}

#[test]
fn zarrs_arrays_over_the_stored_chunks_read_the_arrays() {
    let mut raw = 0;
    for fx in fixtures() {
        let a = B2ndArray::from_slice(&fx.bytes).unwrap();
        let m = a.meta().clone();
        let ts = a.itemsize();
        let want = to_native(a.read_all().unwrap(), ts, endian_of(a.dtype()));
        let mut types = vec![zarr_data_type(a.dtype(), ts)];
        // The same items as raw bits (a fixed-size data type without byte order) for the
        // little-endian arrays.
        if endian_of(a.dtype()) == Endian::Little && !types[0].starts_with('r') {
            types.push(format!("r{}", ts * 8));
        }
        for dt in types {
            raw += usize::from(dt.starts_with('r'));
            let what = format!("{} as {dt}", fx.name);
            let array = zarr_view(&a, &dt);
            let all = ArraySubset::new_with_shape(m.shape.clone());
            let got: ArrayBytes<'static> = array
                .retrieve_array_subset(&all)
                .unwrap_or_else(|e| panic!("{what}: {e}"));
            assert_eq!(got.into_fixed().unwrap().as_ref(), &want[..], "{what}");
            // A region across chunk boundaries and up to the array's end.
            let start: Vec<u64> = m.shape.iter().map(|&s| s / 3).collect();
            let region =
                ArraySubset::new_with_start_end_exc(start.clone(), m.shape.clone()).unwrap();
            let got: ArrayBytes<'static> = array.retrieve_array_subset(&region).unwrap();
            let mut want_region = a.read_region(&start, &m.shape).unwrap();
            want_region = to_native(want_region, ts, endian_of(a.dtype()));
            assert_eq!(
                got.into_fixed().unwrap().as_ref(),
                &want_region[..],
                "{what}"
            );
        }
    }
    assert!(raw > 20, "{raw} raw-bits arrays");
}

#[test]
fn zarrs_encoded_chunks_read_back_through_the_frame() {
    for fx in fixtures() {
        let a = B2ndArray::from_slice(&fx.bytes).unwrap();
        let m = a.meta().clone();
        let ts = a.itemsize();
        let endian = endian_of(a.dtype());
        let stored_order = a.read_all().unwrap();
        let native = to_native(stored_order.clone(), ts, endian);
        for (cname, shuffle) in [
            (Codec::Lz4, BloscShuffle::Shuffle),
            (Codec::Zstd, BloscShuffle::BitShuffle),
        ] {
            let what = format!("{} {cname} {shuffle}", fx.name);
            let config = config_of(&a).with_cname(cname).with_shuffle(shuffle);
            let store = Arc::new(MemoryStore::new());
            let dt = zarr_data_type(a.dtype(), ts);
            let array =
                Array::new_with_metadata(store, "/", zarr_metadata(&a, &dt, &config)).unwrap();
            let all = ArraySubset::new_with_shape(m.shape.clone());
            array
                .store_array_subset_opt(
                    &all,
                    ArrayBytes::new_flen(native.clone()),
                    &CodecOptions::default().with_store_empty_chunks(true),
                )
                .unwrap_or_else(|e| panic!("{what}: {e}"));
            // Every chunk zarrs wrote replaces the frame's; this crate's reader reads the
            // frame as before.
            let mut w = FrameWriter::from_frame(a.frame()).unwrap();
            let grid = m.chunks_per_dim();
            for i in 0..a.frame().nchunks() {
                let chunk = array
                    .retrieve_encoded_chunk(&chunk_coords(i as u64, &grid))
                    .unwrap()
                    .unwrap();
                let h = blosc_chunk::ChunkHeader::parse(&chunk).unwrap();
                assert_eq!(h.codec(), cname, "{what}");
                assert_eq!(h.blocksize(), m.block_items() as usize * ts, "{what}");
                w.update_chunk(i, chunk).unwrap();
            }
            let bytes = w.to_bytes().unwrap();
            let back = B2ndArray::from_slice(&bytes).unwrap();
            assert_eq!(back.read_all().unwrap(), stored_order, "{what}");
        }
    }
}

#[test]
fn encode_is_the_inverse_of_decode() {
    for fx in fixtures().iter().step_by(3) {
        let a = B2ndArray::from_slice(&fx.bytes).unwrap();
        let m = a.meta();
        let ts = a.itemsize();
        let codec = B2ndCodec::new(config_of(&a).with_clevel(9).with_cname(Codec::BloscLz))
            .unwrap()
            .with_nthreads(2);
        for i in 0..a.frame().nchunks() {
            let decoded = codec
                .decode(&stored_chunk(&a, i), &m.chunkshape, ts)
                .unwrap();
            let again = codec.encode(&decoded, &m.chunkshape, ts).unwrap();
            assert!(again.len() <= codec.max_encoded_len(&m.chunkshape, ts).unwrap());
            assert_eq!(
                codec.decode(&again, &m.chunkshape, ts).unwrap(),
                decoded,
                "{} chunk {i}",
                fx.name
            );
        }
    }
}

#[test]
fn configuration_json_and_zarrs_metadata() {
    let c = B2ndCodecConfig::from_json(&json!({"blockshape": [2, 3]})).unwrap();
    assert_eq!(c, B2ndCodecConfig::new(&[2, 3]));
    let full = json!({"blockshape": [2, 3], "endian": "big", "cname": "lz4hc", "clevel": 0,
                      "shuffle": "bitshuffle"});
    let c = B2ndCodecConfig::from_json(&full).unwrap();
    assert_eq!(c.to_json(), full);
    assert_eq!(B2ndCodecConfig::from_entry(&c.to_entry()).unwrap(), c);
    // numcodecs' shuffle numbers, as blosc-chunk's vocabulary reads them.
    let c = B2ndCodecConfig::from_json(&json!({"blockshape": [2], "shuffle": 2})).unwrap();
    assert_eq!(c.shuffle, BloscShuffle::BitShuffle);
    for bad in [
        json!({}),
        json!({"blockshape": []}),
        json!({"blockshape": [0, 2]}),
        json!({"blockshape": [3_000_000_000u64]}),
        json!({"blockshape": vec![1; 17]}),
        json!({"blockshape": [2], "endian": "middle"}),
        json!({"blockshape": [2], "cname": "ndlz"}),
        json!({"blockshape": [2], "cname": "snappy"}),
        json!({"blockshape": [2], "clevel": 10}),
        json!({"blockshape": [2], "shuffle": "auto"}),
        json!({"blockshape": [2], "typesize": 4}),
        json!({"blockshape": "2"}),
        json!([2]),
    ] {
        assert!(
            matches!(
                B2ndCodecConfig::from_json(&bad),
                Err(Error::InvalidArgument(_))
            ),
            "{bad}"
        );
    }
    assert!(B2ndCodecConfig::from_entry(&json!({"name": "blosc", "configuration": {}})).is_err());
    assert!(B2ndCodecConfig::from_entry(&json!({"name": "b2nd"})).is_err());

    // zarrs writes the configuration back as read; a bad one fails when the array is opened.
    let fx = &fixtures()[0];
    let a = B2ndArray::from_slice(&fx.bytes).unwrap();
    let array = zarr_view(&a, &zarr_data_type(a.dtype(), a.itemsize()));
    let written = serde_json::to_value(array.metadata()).unwrap();
    assert_eq!(written["codecs"][0], config_of(&a).to_entry());
    let mut meta = serde_json::to_value(zarr_metadata(
        &a,
        "uint8",
        &B2ndCodecConfig::new(&a.meta().blockshape),
    ))
    .unwrap();
    meta["codecs"][0]["configuration"]["clevel"] = json!(12);
    let meta: ArrayMetadata = serde_json::from_value(meta).unwrap();
    assert!(Array::new_with_metadata(Arc::new(MemoryStore::new()), "/", meta).is_err());
}

#[test]
fn run_time_registration() {
    // The run-time plugin creates the same codec as the compile-time one.
    let fx = fixtures()
        .into_iter()
        .find(|f| f.name.contains("u2_7x9x11"))
        .unwrap();
    let a = B2ndArray::from_slice(&fx.bytes).unwrap();
    let r = blosc2_frame::register();
    assert_eq!(format!("{r:?}"), "Registration(b2nd)");
    let array = zarr_view(&a, "uint16");
    let got: Vec<u16> = array
        .retrieve_array_subset(&ArraySubset::new_with_shape(a.shape().to_vec()))
        .unwrap();
    assert_eq!(got, a.read_all_as::<u16>().unwrap());
    assert!(r.unregister());
}

/// A fixture's codec, first stored chunk, chunk shape and item size.
fn sample() -> (B2ndCodec, Vec<u8>, Vec<u64>, usize) {
    let fx = fixtures()
        .into_iter()
        .find(|f| f.name.contains("u2_7x9x11"))
        .unwrap();
    let a = B2ndArray::from_slice(&fx.bytes).unwrap();
    let codec = B2ndCodec::new(config_of(&a)).unwrap();
    (
        codec,
        stored_chunk(&a, 0),
        a.meta().chunkshape.clone(),
        a.itemsize(),
    )
}

#[test]
fn hostile_chunks_and_shapes_are_errors() {
    let (codec, stored, cs, ts) = sample();
    assert_eq!((cs.as_slice(), ts), (&[4, 5, 6][..], 2));
    let invalid = |r: Result<Vec<u8>, Error>, what: &str| match r {
        Err(Error::Invalid { what: w, .. }) => assert!(w.contains(what), "{w}"),
        other => panic!("{what}: {other:?}"),
    };
    // Another chunk shape (other stored size), item size or block size. (A block shape with as
    // many items per block as the chunk's, e.g. [4, 3, 2] for [2, 3, 4], cannot be told apart.)
    invalid(codec.decode(&stored, &[4, 7, 6], 2), "nbytes");
    invalid(codec.decode(&stored, &[8, 5, 6], 1), "typesize");
    // Blocks of 48 items where the chunk has 24: the same stored size.
    let other_blocks = B2ndCodec::new(B2ndCodecConfig::new(&[4, 3, 4])).unwrap();
    invalid(other_blocks.decode(&stored, &[4, 5, 6], 2), "blocksize");
    // Misuse: shapes that do not fit the block shape, item size 0.
    for (shape, ts) in [
        (&[4, 5][..], 2),
        (&[4, 5, 6, 1][..], 2),
        (&[4, 0, 6][..], 2),
        (&[1, 5, 6][..], 2),
        (&[4, 5, 6][..], 0),
        (&[3_000_000_000, 5, 6][..], 2),
        (&[u64::MAX, u64::MAX, u64::MAX][..], 2),
    ] {
        assert!(
            matches!(
                codec.decode(&stored, shape, ts),
                Err(Error::InvalidArgument(_))
            ),
            "{shape:?} {ts}"
        );
        assert!(
            codec.encode(&[0; 240], shape, ts).is_err(),
            "{shape:?} {ts}"
        );
    }
    assert!(matches!(
        codec.encode(&[0; 239], &cs, ts),
        Err(Error::InvalidArgument(_))
    ));
    // A chunk shape beyond the limits is refused before anything is allocated.
    let small = codec
        .clone()
        .with_limits(Limits::default().with_max_chunk_nbytes(100));
    assert!(matches!(
        small.decode(&stored, &cs, ts),
        Err(Error::LimitExceeded { .. })
    ));
    let huge = B2ndCodec::new(B2ndCodecConfig::new(&[1, 1])).unwrap();
    assert!(matches!(
        huge.decode(&stored, &[1 << 30, 1 << 30], 8),
        Err(Error::LimitExceeded { .. })
    ));
    // A header claiming the right size over a cut or damaged body.
    for cut in [0, 1, 16, 31, 32, stored.len() / 2, stored.len() - 1] {
        assert!(codec.decode(&stored[..cut], &cs, ts).is_err(), "cut {cut}");
    }
    // Bad configurations.
    for bad in [
        B2ndCodecConfig::new(&[]),
        B2ndCodecConfig::new(&[0, 1]),
        B2ndCodecConfig::new(&[1; 17]),
        B2ndCodecConfig::new(&[2]).with_clevel(10),
        B2ndCodecConfig::new(&[2]).with_cname(Codec::ZfpAcc),
        B2ndCodecConfig::new(&[2]).with_shuffle(BloscShuffle::AutoShuffle),
    ] {
        assert!(
            matches!(B2ndCodec::new(bad.clone()), Err(Error::InvalidArgument(_))),
            "{bad:?}"
        );
    }
}

#[test]
fn zarrs_hostile_chunks_and_data_types_are_errors() {
    let fx = fixtures()
        .into_iter()
        .find(|f| f.name.contains("u2_7x9x11"))
        .unwrap();
    let a = B2ndArray::from_slice(&fx.bytes).unwrap();
    let array = zarr_view(&a, "uint16");
    let key = array.chunk_key(&[0, 0, 0]);
    let store = array.storage();
    let good = store.get(&key).unwrap().unwrap();
    for bad in [
        good[..good.len() / 2].to_vec(),
        vec![0u8; 40],
        good.iter().map(|b| b ^ 0x5a).collect(),
    ] {
        store.set(&key, bad.into()).unwrap();
        assert!(array.retrieve_chunk::<Vec<u16>>(&[0, 0, 0]).is_err());
    }
    // The same chunks under a data type of another size, or without a fixed size.
    for dt in ["uint32", "uint8", "string"] {
        let store = Arc::new(MemoryStore::new());
        let array =
            Array::new_with_metadata(store.clone(), "/", zarr_metadata(&a, dt, &config_of(&a)));
        let Ok(array) = array else {
            continue; // refused when opened: fine too
        };
        store
            .set(&array.chunk_key(&[0, 0, 0]), good.clone())
            .unwrap();
        assert!(
            array
                .retrieve_chunk::<ArrayBytes<'static>>(&[0, 0, 0])
                .is_err(),
            "{dt}"
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Any bytes, any small chunk shape: a result of exactly the chunk's size or an error,
    /// never a panic.
    #[test]
    fn hostile_bytes_never_panic(
        stored in proptest::collection::vec(any::<u8>(), 0..400),
        shape in proptest::collection::vec(1u64..9, 3),
        ts in 1usize..9,
    ) {
        let codec = B2ndCodec::new(B2ndCodecConfig::new(&[1, 2, 3])).unwrap();
        if let Ok(out) = codec.decode(&stored, &shape, ts) {
            prop_assert_eq!(out.len() as u64, shape.iter().product::<u64>() * ts as u64);
        }
    }

    /// Damaged real chunks: an error or a result of the right size.
    #[test]
    fn damaged_chunks_never_panic(flip in any::<usize>(), xor in 1u8..=255, cut in any::<usize>()) {
        let (codec, mut stored, cs, ts) = sample();
        let at = flip % stored.len();
        stored[at] ^= xor;
        stored.truncate(stored.len() - cut % 8);
        if let Ok(out) = codec.decode(&stored, &cs, ts) {
            prop_assert_eq!(out.len(), 4 * 5 * 6 * 2);
        }
    }

    /// Round trips of random chunks through encode and decode, with blocks that do and do
    /// not divide the chunk.
    #[test]
    fn round_trips(
        dims in proptest::collection::vec((1u64..7, 1u64..7), 1..4),
        ts in prop::sample::select(vec![1usize, 2, 4, 8, 3, 300]),
        seed in any::<u64>(),
    ) {
        let chunk: Vec<u64> = dims.iter().map(|&(c, b)| c.max(b)).collect();
        let block: Vec<u64> = dims.iter().map(|&(c, b)| c.min(b)).collect();
        let n = chunk.iter().product::<u64>() as usize * ts;
        let data: Vec<u8> = (0..n as u64).map(|i| (i.wrapping_mul(seed | 1) >> 3) as u8).collect();
        let codec = B2ndCodec::new(B2ndCodecConfig::new(&block)).unwrap();
        let stored = codec.encode(&data, &chunk, ts).unwrap();
        prop_assert_eq!(codec.decode(&stored, &chunk, ts).unwrap(), data);
    }
}
