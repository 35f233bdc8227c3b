//! Serde forms of the public configuration and metadata types: the names are part of the API
//! (the CLI's `--json` output and users' files rely on them), so each is pinned here and every
//! value round-trips.

#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};

use offset_codec::{
    CodecConfiguration, Error, Location, N5BlockHeader, N5Mode, OffsetConfiguration,
    PadConfiguration, TiffCompression, TiffSampleType,
};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

fn testdata() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/offset")
}

/// Serialises `value`, checks the JSON is `expected`, and deserialises it back to `value`.
fn round_trip<T>(value: &T, expected: &Value)
where
    T: Serialize + DeserializeOwned + PartialEq + std::fmt::Debug,
{
    let json = serde_json::to_value(value).unwrap();
    assert_eq!(&json, expected, "serialised form of {value:?}");
    let back: T = serde_json::from_value(json).unwrap();
    assert_eq!(&back, value, "round trip of {expected}");
    // and through text, as a file or the CLI would carry it
    let text = serde_json::to_string(value).unwrap();
    assert_eq!(&serde_json::from_str::<T>(&text).unwrap(), value);
}

#[test]
fn offset_configuration_serialises_as_the_zarr_json_configuration() {
    round_trip(&OffsetConfiguration::new(12), &json!({"offset": 12}));
    round_trip(
        &OffsetConfiguration::from_prefix(b"MY_CUSTOM_HEADER"),
        &json!({"offset": 16, "prefix": "TVlfQ1VTVE9NX0hFQURFUg=="}),
    );
    round_trip(
        &OffsetConfiguration::from_prefix(b""),
        &json!({"offset": 0, "prefix": ""}),
    );
}

#[test]
fn pad_configuration_serialises_as_the_zarr_json_configuration() {
    round_trip(
        &PadConfiguration::new(Location::End, 4),
        &json!({"location": "end", "nbytes": 4}),
    );
    round_trip(
        &PadConfiguration::from_padding(Location::Start, &[0, 0, 0, 2, 0, 0, 0, 64, 0, 0, 0, 64]),
        &json!({"location": "start", "nbytes": 12, "padding": "AAAAAgAAAEAAAABA"}),
    );
}

#[test]
fn codec_configuration_serialises_as_the_codec_entry() {
    round_trip(
        &CodecConfiguration::from(OffsetConfiguration::new(3)),
        &json!({"name": "offset", "configuration": {"offset": 3}}),
    );
    round_trip(
        &CodecConfiguration::from(PadConfiguration::new(Location::Start, 0)),
        &json!({"name": "pad", "configuration": {"location": "start", "nbytes": 0}}),
    );
}

#[test]
fn every_fixture_codec_entry_round_trips_through_serde() {
    let mut seen = 0;
    for store in std::fs::read_dir(testdata().join("zarr")).unwrap() {
        let doc: Value = serde_json::from_slice(
            &std::fs::read(store.unwrap().path().join("zarr.json")).unwrap(),
        )
        .unwrap();
        for entry in doc["codecs"].as_array().unwrap() {
            let name = entry["name"].as_str().unwrap();
            if name == "offset" || name == "pad" {
                let config: CodecConfiguration = serde_json::from_value(entry.clone()).unwrap();
                round_trip(&config, entry);
                seen += 1;
            }
        }
    }
    assert!(
        seen >= 7,
        "only {seen} offset/pad entries in the fixture stores"
    );
}

#[test]
fn configuration_deserialisation_applies_the_strict_parser() {
    let e = serde_json::from_value::<OffsetConfiguration>(json!({"offset": 2, "extra": 1}))
        .unwrap_err();
    assert!(e.to_string().contains("unknown key `extra`"), "{e}");
    let e = serde_json::from_value::<PadConfiguration>(json!({"location": "middle", "nbytes": 1}))
        .unwrap_err();
    assert!(e.to_string().contains("\"start\" or \"end\""), "{e}");
    let e = serde_json::from_value::<CodecConfiguration>(
        json!({"name": "gzip", "configuration": {"level": 5}}),
    )
    .unwrap_err();
    assert!(e.to_string().contains("expected one of"), "{e}");
}

#[test]
fn location_names_are_start_and_end() {
    round_trip(&Location::Start, &json!("start"));
    round_trip(&Location::End, &json!("end"));
    assert_eq!(Location::Start.as_str(), "start");
    assert!(serde_json::from_value::<Location>(json!("Start")).is_err());
}

#[test]
fn n5_headers_of_the_fixture_blocks_round_trip() {
    // z5py writes truncated edge blocks: 64x6 (0/1), 2x64 (2/0), 2x6 (2/1) per the MANIFEST
    for (key, dims) in [
        ("0/0", [64, 64]),
        ("0/1", [64, 6]),
        ("2/0", [2, 64]),
        ("2/1", [2, 6]),
    ] {
        let block = std::fs::read(testdata().join("n5/z5py_gzip.n5/data").join(key)).unwrap();
        let header = N5BlockHeader::parse(&block).unwrap();
        round_trip(&header, &json!({"mode": "default", "dims": dims}));
    }
    let varlength = N5BlockHeader::parse(&[0, 1, 0, 1, 0, 0, 0, 9, 0, 0, 0, 7]).unwrap();
    round_trip(
        &varlength,
        &json!({"mode": "varlength", "dims": [9], "num_elements": 7}),
    );
    round_trip(&N5Mode::Default, &json!("default"));
    round_trip(&N5Mode::Varlength, &json!("varlength"));
}

#[test]
fn n5_header_deserialisation_rejects_what_parse_rejects() {
    let err = |v: Value| {
        serde_json::from_value::<N5BlockHeader>(v)
            .unwrap_err()
            .to_string()
    };
    let no_dims = err(json!({"mode": "default", "dims": []}));
    assert!(
        no_dims.contains(&Error::N5DimensionCount { ndim: 0 }.to_string()),
        "{no_dims}"
    );
    let too_many = err(json!({"mode": "default", "dims": vec![1; 65_536]}));
    assert!(too_many.contains("1 to 65535 dimensions"), "{too_many}");
    let stray = err(json!({"mode": "default", "dims": [4], "num_elements": 4}));
    assert!(stray.contains("`num_elements`"), "{stray}");
    let missing = err(json!({"mode": "varlength", "dims": [4]}));
    assert!(missing.contains("`num_elements`"), "{missing}");
    let unknown = err(json!({"mode": "default", "dims": [4], "ndim": 1}));
    assert!(unknown.contains("unknown field `ndim`"), "{unknown}");
    let mode = err(json!({"mode": "varlen", "dims": [4]}));
    assert!(mode.contains("unknown variant `varlen`"), "{mode}");
}

#[test]
fn tiff_sample_types_serialise_as_their_zarr_names() {
    let all = [
        TiffSampleType::U8,
        TiffSampleType::U16,
        TiffSampleType::U32,
        TiffSampleType::U64,
        TiffSampleType::I8,
        TiffSampleType::I16,
        TiffSampleType::I32,
        TiffSampleType::I64,
        TiffSampleType::F32,
        TiffSampleType::F64,
    ];
    for t in all {
        round_trip(&t, &json!(t.zarr_name()));
    }
    round_trip(&TiffCompression::None, &json!("none"));
    round_trip(&TiffCompression::Deflate, &json!("deflate"));
}
