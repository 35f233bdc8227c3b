//! `serde` feature: metalayers and vlmetalayers set from `Serialize` values and read into
//! `Deserialize` types (checked byte for byte against the python-blosc2 fixture), and the
//! public header/metadata types round-tripping through JSON with stable snake_case names.
#![cfg(feature = "serde")]
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "a failed unwrap is a failed test"
)]

use crate::common;

use blosc2_frame::blosc_chunk::{CParams, Codec, Filter, SplitMode};
use blosc2_frame::{
    B2ndArray, B2ndMeta, ChunkLocation, Error, Frame, FrameHeader, FrameParams, FrameType,
    FrameWriter, Limits,
};
use common::{frame_entries, testdata};
use serde::{Deserialize, Serialize};
use serde_json::json;

/// python: `meta={'mymeta': {'a': 1}}`.
#[derive(Debug, PartialEq, Serialize, Deserialize)]
struct MyMeta {
    a: u32,
}

/// python: `vlmeta['info'] = {'hello': 'world'}`.
#[derive(Debug, PartialEq, Serialize, Deserialize)]
struct Info {
    hello: String,
}

/// A byte string serialized as msgpack `bin` (python `bytes`).
#[derive(Debug, PartialEq)]
struct Bin(Vec<u8>);

impl Serialize for Bin {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bytes(&self.0)
    }
}

impl<'de> Deserialize<'de> for Bin {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = Bin;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("bytes")
            }
            fn visit_bytes<E: serde::de::Error>(self, v: &[u8]) -> Result<Bin, E> {
                Ok(Bin(v.to_vec()))
            }
        }
        d.deserialize_bytes(V)
    }
}

fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(testdata().join("frames").join(name)).unwrap()
}

#[test]
fn serde_layers_rebuild_the_python_fixture_byte_for_byte() {
    // The recorded call of lz4_shuffle_meta_vlmeta.b2frame, with every layer given as a value.
    let mut cp = CParams::default();
    cp.codec = Codec::Lz4;
    cp.clevel = 5;
    cp.typesize = 4;
    cp.filters = [Filter::NoFilter; 6];
    cp.filters[0] = Filter::Shuffle;
    cp.splitmode = SplitMode::Auto;
    cp.nthreads = 1;
    let mut w = FrameWriter::new(FrameParams::new(cp, 100_000)).unwrap();
    w.add_metalayer_serde("m1", &[1, 2, 3]).unwrap();
    w.add_metalayer_serde("mymeta", &MyMeta { a: 1 }).unwrap();
    let i32s =
        |v: &mut dyn Iterator<Item = i32>| -> Vec<u8> { v.flat_map(i32::to_le_bytes).collect() };
    w.append_data(&i32s(&mut (0..25_000))).unwrap();
    w.append_data(&i32s(&mut std::iter::repeat_n(0, 25_000)))
        .unwrap();
    w.append_data(&i32s(&mut (0..10_000).map(|i| i * 3)))
        .unwrap();
    w.set_vlmetalayer_serde(
        "info",
        &Info {
            hello: "world".into(),
        },
    )
    .unwrap();
    w.set_vlmetalayer_serde("bin", &Bin(vec![0, 1, 2])).unwrap();
    let want = fixture("lz4_shuffle_meta_vlmeta.b2frame");
    assert!(
        w.to_bytes().unwrap() == want,
        "rebuilt frame differs from the fixture"
    );
}

#[test]
fn fixture_layers_read_into_serde_types() {
    let f = Frame::open(testdata().join("frames/lz4_shuffle_meta_vlmeta.b2frame")).unwrap();
    assert_eq!(f.metalayer_as::<Vec<i32>>("m1").unwrap(), [1, 2, 3]);
    assert_eq!(f.metalayer_as::<MyMeta>("mymeta").unwrap(), MyMeta { a: 1 });
    assert_eq!(
        f.vlmetalayer_as::<Info>("info").unwrap(),
        Info {
            hello: "world".into()
        }
    );
    assert_eq!(f.vlmetalayer_as::<Bin>("bin").unwrap(), Bin(vec![0, 1, 2]));
    // Valid msgpack of another shape, and missing names, are typed errors.
    assert!(matches!(
        f.metalayer_as::<Info>("m1"),
        Err(Error::Serde {
            kind: "metalayer",
            ..
        })
    ));
    assert!(matches!(
        f.vlmetalayer_as::<Info>("nope"),
        Err(Error::NotFound { .. })
    ));
}

#[test]
fn serde_metalayer_update_and_trailing_bytes() {
    let mut w = FrameWriter::new(FrameParams::new(CParams::default(), 0)).unwrap();
    w.add_metalayer_serde("m", &MyMeta { a: 7 }).unwrap();
    w.update_metalayer_serde("m", &MyMeta { a: 300 }).unwrap();
    w.add_metalayer("junk", &[0x01, 0x02]).unwrap(); // msgpack 1, then a trailing byte
    let bytes = w.to_bytes().unwrap();
    let f = Frame::from_slice(&bytes).unwrap();
    assert_eq!(
        f.metalayer("m"),
        Some(&[0x81, 0xa1, b'a', 0xcd, 0x01, 0x2c][..])
    );
    assert_eq!(f.metalayer_as::<MyMeta>("m").unwrap(), MyMeta { a: 300 });
    assert!(matches!(
        f.metalayer_as::<u8>("junk"),
        Err(Error::Serde { .. })
    ));
}

#[test]
fn fixture_headers_and_indexes_round_trip_through_json() {
    for e in frame_entries() {
        let path = e["path"].as_str().unwrap();
        let f = Frame::open_with(testdata().join(path), &Limits::default()).unwrap();
        let h = f.header();
        let v = serde_json::to_value(h).unwrap();
        assert_eq!(v["header_len"], e["header_len"], "{path}");
        assert_eq!(v["chunksize"], e["chunksize"], "{path}");
        assert_eq!(v["typesize"], e["typesize"], "{path}");
        assert_eq!(v["nbytes"], e["decompressed_len"], "{path}");
        let back: FrameHeader = serde_json::from_value(v).unwrap();
        assert_eq!(&back, h, "{path}");
        let idx = serde_json::to_value(f.index()).unwrap();
        let back: Vec<ChunkLocation> = serde_json::from_value(idx).unwrap();
        assert_eq!(back, f.index(), "{path}");
    }
}

#[test]
fn enums_and_limits_use_snake_case_names() {
    assert_eq!(
        serde_json::to_value(FrameType::Contiguous).unwrap(),
        json!("contiguous")
    );
    assert_eq!(
        serde_json::to_value(FrameType::Sparse).unwrap(),
        json!("sparse")
    );
    assert_eq!(
        serde_json::to_value(FrameType::Other(7)).unwrap(),
        json!({"other": 7})
    );
    for (loc, want) in [
        (ChunkLocation::Stored(77), json!({"stored": 77})),
        (ChunkLocation::Zeros, json!("zeros")),
        (ChunkLocation::Nan, json!("nan")),
        (ChunkLocation::Uninit, json!("uninit")),
    ] {
        assert_eq!(serde_json::to_value(loc).unwrap(), want);
        assert_eq!(serde_json::from_value::<ChunkLocation>(want).unwrap(), loc);
    }
    let l = Limits::default();
    let v = serde_json::to_value(l).unwrap();
    assert!(v["max_nchunks"].is_u64() && v["max_output_bytes"].is_u64());
    assert_eq!(serde_json::from_value::<Limits>(v).unwrap(), l);
}

#[test]
fn b2nd_meta_round_trips_and_is_checked_on_the_way_in() {
    let a = B2ndArray::open(testdata().join("frames/b2nd_u2_7x9x11.b2nd")).unwrap();
    let v = serde_json::to_value(a.meta()).unwrap();
    assert_eq!(
        v,
        json!({"version": 0, "shape": [7, 9, 11], "chunkshape": [4, 5, 6],
               "blockshape": [2, 3, 4], "dtype_format": 0, "dtype": "<u2"})
    );
    assert_eq!(&serde_json::from_value::<B2ndMeta>(v).unwrap(), a.meta());
    // A block larger than its chunk is refused, as when parsing a file.
    let bad = json!({"version": 0, "shape": [4], "chunkshape": [2], "blockshape": [3],
                     "dtype_format": 0, "dtype": "|u1"});
    assert!(serde_json::from_value::<B2ndMeta>(bad).is_err());
}
