//! `scifmt blosc compress/decompress` with C-Blosc2's plugin filters and codecs, on chunk 0 of
//! every array in `testdata/blosc/plugins/` (python-blosc2 4.14.1): our chunk from the raw
//! content equals the stored one byte for byte, and decompressing it (with `--blockshape`)
//! gives what python-blosc2 decompresses.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::cast_possible_truncation
)] // test helpers; small fixture sizes

use crate::common;

use common::{fails, ok, testdata, tmp};
use serde_json::Value;

fn entries() -> Vec<Value> {
    let text = std::fs::read_to_string(testdata("blosc/plugins/manifest.json")).unwrap();
    let v: Value = serde_json::from_str(&text).unwrap();
    v["entries"].as_array().unwrap().clone()
}

fn filter_flag(id: u64, meta: u64) -> String {
    let name = match id {
        0 => return "none".into(),
        1 => "shuffle",
        2 => "bitshuffle",
        3 => "delta",
        4 => "truncprec",
        32 => "ndcell",
        33 => "ndmean",
        35 => "bytedelta",
        36 => "int_trunc",
        other => panic!("filter {other}"),
    };
    match id {
        4 | 36 => format!("{name}:{}", (meta as u8).cast_signed()),
        1..=3 => name.into(),
        _ => format!("{name}:{meta}"),
    }
}

#[test]
fn plugin_chunks_compress_byte_identical_and_decompress() {
    let dir = tmp();
    let mut n = 0;
    for e in entries() {
        let name = e["name"].as_str().unwrap();
        let metas = e["filters_meta"].as_array().unwrap();
        if e["filters"]
            .as_array()
            .unwrap()
            .iter()
            .zip(metas)
            .any(|(f, m)| f == 0 && m != 0)
        {
            // python-blosc2 dropped BYTEDELTA for typesize 1 but kept its meta in the empty
            // slot; `--filter none` takes no META (the library test covers this chunk).
            continue;
        }
        let codec = match e["codec"].as_u64().unwrap() {
            0 => "blosclz",
            1 => "lz4",
            2 => "lz4hc",
            4 => "zlib",
            5 => "zstd",
            32 => "ndlz",
            33 => "zfp-acc",
            34 => "zfp-prec",
            _ => "zfp-rate",
        };
        let ts = e["itemsize"].as_u64().unwrap();
        let blocks: Vec<u64> = e["blocks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_u64().unwrap())
            .collect();
        let shape = blocks
            .iter()
            .map(u64::to_string)
            .collect::<Vec<_>>()
            .join(",");
        let blocksize = blocks.iter().product::<u64>() * ts;
        let split = match e["splitmode"].as_u64().unwrap() {
            1 => "always",
            2 => "never",
            3 => "auto",
            _ => "forward",
        };
        let mut args: Vec<String> = vec![
            "blosc".into(),
            "compress".into(),
            testdata(&format!(
                "blosc/plugins/{}",
                e["files"]["c0.raw"].as_str().unwrap()
            ))
            .display()
            .to_string(),
            dir.path().join("c.cdata").display().to_string(),
            "--overwrite".into(),
            "--typesize".into(),
            ts.to_string(),
            "--codec".into(),
            codec.into(),
            "--clevel".into(),
            e["clevel"].to_string(),
            "--codec-meta".into(),
            e["codec_meta"].to_string(),
            "--blockshape".into(),
            shape.clone(),
            "--blocksize".into(),
            blocksize.to_string(),
            "--splitmode".into(),
            split.into(),
        ];
        for (i, f) in e["filters"].as_array().unwrap().iter().enumerate() {
            args.push("--filter".into());
            args.push(filter_flag(f.as_u64().unwrap(), metas[i].as_u64().unwrap()));
        }
        if e["filters"].as_array().unwrap().is_empty() {
            args.push("--filter".into());
            args.push("none".into());
        }
        ok(&args);
        let ours = std::fs::read(dir.path().join("c.cdata")).unwrap();
        let theirs = std::fs::read(testdata(&format!(
            "blosc/plugins/{}",
            e["files"]["c0.cdata"].as_str().unwrap()
        )))
        .unwrap();
        assert!(ours == theirs, "{name}: chunk differs");
        let out = dir.path().join("c.raw");
        ok(&[
            "blosc",
            "decompress",
            dir.path().join("c.cdata").to_str().unwrap(),
            out.to_str().unwrap(),
            "--overwrite",
            "--blockshape",
            &shape,
        ]);
        let want = e["files"]["c0.dec"]
            .as_str()
            .or(e["files"]["c0.raw"].as_str())
            .unwrap();
        let want = std::fs::read(testdata(&format!("blosc/plugins/{want}"))).unwrap();
        assert!(
            std::fs::read(&out).unwrap() == want,
            "{name}: decoded bytes differ"
        );
        n += 1;
    }
    assert_eq!(n, 33);
}

#[test]
fn a_cell_chunk_without_blockshape_fails_with_a_message() {
    let dir = tmp();
    let chunk = testdata("blosc/plugins/ndcell_f8_meta2_3d.c0.cdata");
    fails(
        &[
            "blosc",
            "decompress",
            chunk.to_str().unwrap(),
            dir.path().join("x").to_str().unwrap(),
        ],
        2,
        "block shape",
    );
}
