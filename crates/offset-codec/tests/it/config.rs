//! Configuration parsing: exact round-trips of every fixture's codec entry and one test per
//! rejection, each asserting its own error variant.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers outside #[test] fns
#![allow(clippy::cast_possible_truncation, clippy::cast_precision_loss)] // small test sizes

use offset_codec::{
    CodecConfiguration, Error, Limits, Location, OffsetConfiguration, PadConfiguration,
};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

fn testdata() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/offset")
}

/// Every `zarr.json` of the fixture set (stores and N5 overlays).
fn fixture_zarr_jsons() -> Vec<PathBuf> {
    let mut out = Vec::new();
    for sub in ["zarr", "n5"] {
        for entry in std::fs::read_dir(testdata().join(sub)).unwrap() {
            let p = entry.unwrap().path();
            for candidate in [p.join("zarr.json"), p.join("data/zarr.json")] {
                if candidate.exists() {
                    out.push(candidate);
                }
            }
        }
    }
    out.sort();
    out
}

#[test]
fn every_fixture_entry_round_trips_exactly() {
    let files = fixture_zarr_jsons();
    assert_eq!(files.len(), 10, "7 zarr stores + 3 N5 overlays");
    let mut seen = 0;
    for f in files {
        let doc: Value = serde_json::from_slice(&std::fs::read(&f).unwrap()).unwrap();
        for entry in doc["codecs"].as_array().unwrap() {
            let name = entry["name"].as_str().unwrap();
            if name != "offset" && name != "pad" {
                continue;
            }
            seen += 1;
            let parsed = CodecConfiguration::from_json(entry).unwrap();
            assert_eq!(&parsed.to_json(), entry, "{}", f.display());
            // via serde too
            let via_serde: CodecConfiguration = serde_json::from_value(entry.clone()).unwrap();
            assert_eq!(serde_json::to_value(&via_serde).unwrap(), *entry);
            assert_eq!(via_serde, parsed);
        }
    }
    assert_eq!(seen, 10);
}

#[test]
fn absent_prefix_stays_absent() {
    let cfg = OffsetConfiguration::from_json(&json!({"offset": 8})).unwrap();
    assert_eq!(cfg.prefix_base64(), None);
    assert_eq!(cfg.prefix_bytes(), None);
    assert_eq!(Value::Object(cfg.to_json()), json!({"offset": 8}));
    let pad = PadConfiguration::from_json(&json!({"location": "end", "nbytes": 4})).unwrap();
    assert_eq!(pad.padding_bytes(), None);
    assert_eq!(pad.location(), Location::End);
    assert_eq!(
        Value::Object(pad.to_json()),
        json!({"location": "end", "nbytes": 4})
    );
}

#[test]
fn proposal_prefixes_decode_to_the_verified_bytes() {
    let c = OffsetConfiguration::from_json(
        &json!({"offset": 16, "prefix": "TVlfQ1VTVE9NX0hFQURFUg=="}),
    )
    .unwrap();
    assert_eq!(c.prefix_bytes().unwrap(), b"MY_CUSTOM_HEADER");
    let n5 = OffsetConfiguration::from_json(&json!({"offset": 12, "prefix": "AAAAAgAAAEAAAABA"}))
        .unwrap();
    assert_eq!(
        n5.prefix_bytes().unwrap(),
        [0, 0, 0, 2, 0, 0, 0, 0x40, 0, 0, 0, 0x40]
    );
}

#[test]
fn built_configurations_use_canonical_base64() {
    let c = OffsetConfiguration::from_prefix(b"MY_CUSTOM_HEADER");
    assert_eq!(c.prefix_base64(), Some("TVlfQ1VTVE9NX0hFQURFUg=="));
    assert_eq!(c.offset(), 16);
    let p = PadConfiguration::from_padding(Location::Start, b"MY_CUSTOM_HEADER");
    assert_eq!(
        serde_json::to_value(&p).unwrap(),
        json!({"location": "start", "nbytes": 16, "padding": "TVlfQ1VTVE9NX0hFQURFUg=="})
    );
    let empty = OffsetConfiguration::from_prefix(b"");
    assert_eq!(
        serde_json::to_value(&empty).unwrap(),
        json!({"offset": 0, "prefix": ""})
    );
}

#[test]
fn non_canonical_trailing_bits_are_accepted_and_kept_verbatim() {
    // Python's b64decode(validate=True) accepts "AB==" (trailing bits 0b1011 ≠ 0) as b"\x00".
    let v = json!({"offset": 1, "prefix": "AB=="});
    let c = OffsetConfiguration::from_json(&v).unwrap();
    assert_eq!(c.prefix_bytes().unwrap(), [0]);
    assert_eq!(Value::Object(c.to_json()), v);
}

fn err(v: Value) -> Error {
    OffsetConfiguration::from_json(&v).unwrap_err()
}

fn pad_err(v: Value) -> Error {
    PadConfiguration::from_json(&v).unwrap_err()
}

#[test]
fn rejects_unknown_keys() {
    assert!(matches!(
        err(json!({"offset": 1, "extra": true})),
        Error::UnknownKey { codec: "offset", ref key } if key == "extra"
    ));
    assert!(matches!(
        pad_err(json!({"location": "start", "nbytes": 1, "offset": 1})),
        Error::UnknownKey { codec: "pad", ref key } if key == "offset"
    ));
    // a `pad` key inside `offset` (mixing the revisions) is unknown too
    assert!(matches!(
        err(json!({"offset": 1, "padding": "AA=="})),
        Error::UnknownKey { .. }
    ));
}

#[test]
fn rejects_non_integer_sizes() {
    for bad in [
        json!(12.5),
        json!(12.0),
        json!("12"),
        json!(true),
        json!(null),
        json!([12]),
    ] {
        let e = err(json!({"offset": bad}));
        assert!(
            matches!(
                e,
                Error::NotAnInteger {
                    field: "offset",
                    ..
                }
            ),
            "{bad}: {e}"
        );
        let e = pad_err(json!({"location": "end", "nbytes": bad}));
        assert!(
            matches!(
                e,
                Error::NotAnInteger {
                    field: "nbytes",
                    ..
                }
            ),
            "{e}"
        );
    }
    // beyond u64: serde_json reads it as a float
    let v: Value = serde_json::from_str(r#"{"offset": 18446744073709551616}"#).unwrap();
    assert!(matches!(err(v), Error::NotAnInteger { .. }));
}

#[test]
fn rejects_negative_sizes() {
    assert!(matches!(
        err(json!({"offset": -1})),
        Error::NegativeSize {
            field: "offset",
            value: -1
        }
    ));
    assert!(matches!(
        pad_err(json!({"location": "start", "nbytes": -12})),
        Error::NegativeSize {
            field: "nbytes",
            value: -12
        }
    ));
}

#[test]
fn rejects_sizes_above_the_limit() {
    let e = OffsetConfiguration::from_json(&json!({"offset": (16u64 << 20) + 1})).unwrap_err();
    assert!(matches!(
        e,
        Error::SizeLimit {
            field: "offset",
            limit: Limits::DEFAULT_MAX_NBYTES,
            ..
        }
    ));
    let small = Limits::default().with_max_nbytes(8);
    assert!(OffsetConfiguration::from_json_with_limits(&json!({"offset": 8}), &small).is_ok());
    assert!(matches!(
        OffsetConfiguration::from_json_with_limits(&json!({"offset": 9}), &small),
        Err(Error::SizeLimit {
            value: 9,
            limit: 8,
            ..
        })
    ));
    let big = 1u64 << 40;
    let c =
        OffsetConfiguration::from_json_with_limits(&json!({ "offset": big }), &Limits::unlimited())
            .unwrap();
    assert_eq!(c.offset(), big);
}

#[test]
fn rejects_missing_fields() {
    assert!(matches!(
        err(json!({})),
        Error::MissingField {
            codec: "offset",
            field: "offset"
        }
    ));
    assert!(matches!(
        err(json!({"prefix": ""})),
        Error::MissingField {
            field: "offset",
            ..
        }
    ));
    assert!(matches!(
        pad_err(json!({"nbytes": 1})),
        Error::MissingField {
            codec: "pad",
            field: "location"
        }
    ));
    assert!(matches!(
        pad_err(json!({"location": "end"})),
        Error::MissingField {
            field: "nbytes",
            ..
        }
    ));
}

#[test]
fn rejects_invalid_base64() {
    for bad in [
        "AAAA!AAA", "AAAAAAA", "AA=A", "AAA A", "AAAA\n", "AA", "A===",
    ] {
        let e = err(json!({"offset": 3, "prefix": bad}));
        assert!(
            matches!(
                e,
                Error::InvalidBase64 {
                    field: "prefix",
                    ..
                }
            ),
            "{bad:?}: {e}"
        );
    }
    // url-safe alphabet is not the standard one
    let e = err(json!({"offset": 3, "prefix": "-_-_"}));
    assert!(matches!(e, Error::InvalidBase64 { .. }), "{e}");
    let e = pad_err(json!({"location": "end", "nbytes": 1, "padding": "A"}));
    assert!(
        matches!(
            e,
            Error::InvalidBase64 {
                field: "padding",
                ..
            }
        ),
        "{e}"
    );
}

#[test]
fn rejects_non_string_prefix() {
    for bad in [json!(null), json!(12), json!(["AA=="]), json!({"a": 1})] {
        let e = err(json!({"offset": 1, "prefix": bad}));
        assert!(
            matches!(
                e,
                Error::NotAString {
                    field: "prefix",
                    ..
                }
            ),
            "{e}"
        );
    }
}

#[test]
fn rejects_prefix_length_mismatch() {
    let e = err(json!({"offset": 15, "prefix": "TVlfQ1VTVE9NX0hFQURFUg=="}));
    assert!(matches!(
        e,
        Error::PrefixLengthMismatch {
            field: "prefix",
            size_field: "offset",
            actual: 16,
            expected: 15
        }
    ));
    let e = pad_err(json!({"location": "start", "nbytes": 0, "padding": "AA=="}));
    assert!(matches!(
        e,
        Error::PrefixLengthMismatch {
            field: "padding",
            actual: 1,
            expected: 0,
            ..
        }
    ));
}

#[test]
fn rejects_bad_location_and_shapes() {
    for bad in [json!("middle"), json!("Start"), json!(0), json!(null)] {
        let e = pad_err(json!({"location": bad, "nbytes": 0}));
        assert!(matches!(e, Error::InvalidLocation { .. }), "{e}");
    }
    assert!(matches!(
        err(json!([1])),
        Error::NotAnObject {
            codec: "offset",
            found: "an array",
            ..
        }
    ));
    assert!(matches!(
        CodecConfiguration::from_json(&json!({"name": "gzip", "configuration": {"level": 5}})),
        Err(Error::UnexpectedName { .. })
    ));
    assert!(matches!(
        CodecConfiguration::from_json(&json!({"name": "offset"})),
        Err(Error::MissingField {
            field: "configuration",
            ..
        })
    ));
    assert!(matches!(
        CodecConfiguration::from_json(
            &json!({"name": "offset", "configuration": {"offset": 0}, "x": 1})
        ),
        Err(Error::UnknownKey { .. })
    ));
    assert!(matches!(
        CodecConfiguration::from_json(&json!("offset")),
        Err(Error::NotAnObject { .. })
    ));
}

#[test]
fn serde_errors_carry_the_message() {
    let e = serde_json::from_value::<OffsetConfiguration>(json!({"offset": -1})).unwrap_err();
    assert_eq!(e.to_string(), "`offset` must be non-negative, got -1");
}

proptest::proptest! {
    #[test]
    fn random_json_never_panics(s in ".{0,64}") {
        if let Ok(v) = serde_json::from_str::<Value>(&s) {
            let _ = OffsetConfiguration::from_json(&v);
            let _ = PadConfiguration::from_json(&v);
            let _ = CodecConfiguration::from_json(&v);
        }
    }

    #[test]
    fn built_prefixes_round_trip(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..300)) {
        let c = OffsetConfiguration::from_prefix(&bytes);
        let back = OffsetConfiguration::from_json(&Value::Object(c.to_json())).unwrap();
        proptest::prop_assert_eq!(back.prefix_bytes().unwrap(), &bytes[..]);
        proptest::prop_assert_eq!(back, c);
    }
}
