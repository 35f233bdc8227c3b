//! The `serde` feature: field names and values as documented, round trips through JSON for
//! every fixture header and file, validation on input, and the verify report's shape.
#![cfg(feature = "serde")]
#![allow(clippy::unwrap_used, reason = "a failed unwrap is a failed test")]

use crate::common;

use common::*;
use serde_json::json;
use wkw::{BlockType, FileInfo, Header, Limits, Order, VoxelType};

#[test]
fn header_json_has_the_documented_fields() {
    let h = Header::new(VoxelType::U16, 3, 32, 32, BlockType::Lz4).unwrap();
    assert_eq!(
        serde_json::to_value(h).unwrap(),
        json!({
            "voxel_type": "u16", "num_channels": 3, "voxel_size": 6, "block_len": 32,
            "file_len": 32, "block_type": "lz4", "data_offset": 0
        })
    );
    // voxel_size may be left out on input.
    let back: Header = serde_json::from_value(json!({
        "voxel_type": "u16", "num_channels": 3, "block_len": 32, "file_len": 32,
        "block_type": "lz4", "data_offset": 0
    }))
    .unwrap();
    assert_eq!(back, h);
}

#[test]
fn every_fixture_header_round_trips_through_json() {
    let exp = expected();
    let mut n = 0;
    for (name, e) in exp.as_object().unwrap() {
        let Some(files) = e.get("files").and_then(|f| f.as_object()) else {
            continue;
        };
        for rel in files.keys() {
            let path = testdata().join(name).join(rel);
            let h = Header::parse(&std::fs::read(&path).unwrap()).unwrap();
            let text = serde_json::to_string(&h).unwrap();
            let back: Header = serde_json::from_str(&text).unwrap();
            assert_eq!(back, h, "{name}/{rel}");
            assert_eq!(back.to_bytes(), h.to_bytes());
            if rel != "header.wkw" {
                let info = wkw::inspect_file(&path, &Limits::default()).unwrap();
                let text = serde_json::to_string(&info).unwrap();
                let back: FileInfo = serde_json::from_str(&text).unwrap();
                assert_eq!(back, info, "{name}/{rel}");
                let v = serde_json::to_value(&info).unwrap();
                assert_eq!(v["file_len"], json!(info.file_len));
                assert_eq!(
                    v["block_lengths"].is_null(),
                    !h.block_type().is_compressed()
                );
            }
            n += 1;
        }
    }
    assert!(n >= 16, "{n} fixture files");
}

#[test]
fn enum_names_are_lowercase_rust_and_format_names() {
    let names: Vec<String> = VoxelType::ALL
        .iter()
        .map(|v| {
            serde_json::to_value(v)
                .unwrap()
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(
        names,
        [
            "u8", "u16", "u32", "u64", "f32", "f64", "i8", "i16", "i32", "i64"
        ]
    );
    for (b, s) in [
        (BlockType::Raw, "raw"),
        (BlockType::Lz4, "lz4"),
        (BlockType::Lz4Hc, "lz4hc"),
    ] {
        assert_eq!(serde_json::to_value(b).unwrap(), json!(s));
        assert_eq!(serde_json::from_value::<BlockType>(json!(s)).unwrap(), b);
    }
    for (o, s) in [(Order::Fortran, "fortran"), (Order::C, "c")] {
        assert_eq!(serde_json::to_value(o).unwrap(), json!(s));
        assert_eq!(serde_json::from_value::<Order>(json!(s)).unwrap(), o);
    }
}

#[test]
fn invalid_headers_are_refused_on_input() {
    let good = json!({
        "voxel_type": "f32", "num_channels": 1, "block_len": 16, "file_len": 2,
        "block_type": "lz4hc", "data_offset": 80
    });
    assert!(serde_json::from_value::<Header>(good.clone()).is_ok());
    let with = |k: &str, v: serde_json::Value| {
        let mut j = good.clone();
        j[k] = v;
        serde_json::from_value::<Header>(j)
    };
    assert!(with("block_len", json!(12)).is_err(), "not a power of two");
    assert!(with("num_channels", json!(0)).is_err());
    assert!(with("num_channels", json!(64)).is_err(), "voxel_size > 255");
    assert!(
        with("voxel_size", json!(8)).is_err(),
        "voxel_size disagrees"
    );
    assert!(with("voxel_type", json!("u128")).is_err());
    assert!(with("block_type", json!(2)).is_err());
    assert!(with("extra", json!(1)).is_err(), "unknown field");
}

#[test]
fn limits_round_trip_and_default_missing_fields() {
    let mut l = Limits::default();
    l.max_read_bytes = 1234;
    let text = serde_json::to_string(&l).unwrap();
    assert_eq!(serde_json::from_str::<Limits>(&text).unwrap(), l);
    let partial: Limits = serde_json::from_value(json!({"max_read_bytes": 1234})).unwrap();
    assert_eq!(partial, l);
}

#[test]
fn verify_report_serializes_ok_files_and_problem_messages() {
    let dir = copy_fixture("u64_raw_b4_f2_multi");
    let ds = wkw::Dataset::open(dir.path()).unwrap();
    let files = ds.list_files().unwrap();
    // Truncate the first file inside its block data.
    let first = &files[0].1;
    let len = std::fs::metadata(first).unwrap().len();
    std::fs::OpenOptions::new()
        .write(true)
        .open(first)
        .unwrap()
        .set_len(len - 1)
        .unwrap();
    let report = wkw::verify(dir.path(), wkw::Options::default(), &|_| {}).unwrap();
    let v = serde_json::to_value(&report).unwrap();
    assert_eq!(v["ok"], json!(false));
    let out = v["files"].as_array().unwrap();
    assert_eq!(out.len(), files.len());
    let idx = files[0].0;
    assert_eq!(out[0]["index"], json!(idx));
    assert_eq!(out[0]["path"], json!(first.to_str().unwrap()));
    let problem = report.files[0].problem.as_ref().unwrap().to_string();
    assert_eq!(out[0]["problem"], json!(problem));
    assert!(out[1..].iter().all(|f| f["problem"].is_null()));
}
