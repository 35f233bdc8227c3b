//! `--json` on every command that prints: one JSON value on one line, in the documented shape
//! (README "JSON output"), holding the same values as the text output.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::cast_possible_truncation
)] // test helpers outside #[test] fns; small fixture sizes

use crate::common;

use serde_json::{Map, Value};

use common::{copy_dir, json, ok, run, testdata, tmp};

/// Commands that print something on stdout, and so take `--json`.
const PRINTING: &[&[&str]] = &[
    &["info"],
    &["convert"], // writes a dataset and prints its summary (tests/it/convert.rs checks the JSON)
    &["virtualize"], // writes references and prints its summary (tests/it/virtualize.rs)
    &["frame", "chunks"],
    &["frame", "meta"],
    &["wkw", "info"],
    &["wkw", "verify"],
    &["dwe", "info"],
    &["dwe", "vector"],
    &["dwe", "related"],
    &["dwe", "trajectories"],
];

/// Commands that only write files (or stdout for `-`): nothing to print, no `--json`.
const WRITING: &[&[&str]] = &[
    &["blosc", "decompress"],
    &["blosc", "compress"],
    &["frame", "extract"],
    &["frame", "create"],
    &["b2nd", "read"],
    &["wkw", "create"],
    &["wkw", "read"],
    &["wkw", "write"],
    &["wkw", "compress"],
    &["dwe", "decode"],
    &["dwe", "create"],
    &["offset", "decode"],
    &["offset", "encode"],
    &["zarr", "read"],
];

/// The leaf commands `scifmt --help` and each group's `--help` list.
fn leaf_commands() -> Vec<Vec<String>> {
    fn listed(help: &str) -> Vec<String> {
        help.split("Commands:\n")
            .nth(1)
            .unwrap_or_default()
            .lines()
            .take_while(|l| l.starts_with("  "))
            .filter_map(|l| l.split_whitespace().next())
            .filter(|c| *c != "help")
            .map(str::to_owned)
            .collect()
    }
    let mut out = Vec::new();
    for top in listed(&ok(&["--help"])) {
        let sub = listed(&ok(&[top.as_str(), "--help"]));
        if sub.is_empty() {
            out.push(vec![top]);
        } else {
            out.extend(sub.into_iter().map(|s| vec![top.clone(), s]));
        }
    }
    out
}

#[test]
fn the_inventory_covers_every_command_and_only_printing_ones_take_json() {
    let mut known: Vec<Vec<String>> = PRINTING
        .iter()
        .chain(WRITING)
        .map(|c| c.iter().map(|s| (*s).to_owned()).collect())
        .collect();
    known.sort();
    let mut listed = leaf_commands();
    listed.sort();
    assert_eq!(
        listed, known,
        "a command is missing from PRINTING / WRITING"
    );
    for c in PRINTING {
        let help = ok(&[&c[..], &["--help"]].concat());
        assert!(help.contains("--json"), "{c:?} lacks --json");
    }
    for c in WRITING {
        let help = ok(&[&c[..], &["--help"]].concat());
        assert!(
            !help.contains("--json"),
            "{c:?} has --json but prints nothing"
        );
    }
}

fn is_snake(k: &str) -> bool {
    k.starts_with(|c: char| c.is_ascii_lowercase())
        && k.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}

/// The `key: value` lines of a text output.
fn text_fields(text: &str) -> Vec<(String, String)> {
    text.lines()
        .map(|l| {
            let (k, v) = l
                .split_once(": ")
                .unwrap_or_else(|| panic!("not key: value: {l}"));
            (k.to_owned(), v.to_owned())
        })
        .collect()
}

/// How a JSON value reads in text output: strings bare, everything else as compact JSON.
fn as_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Asserts `args` prints an object describing a file (first key "format", snake_case keys)
/// whose entries are the text output's lines, in the same order.
fn object_matches_text(args: &[&str]) -> Map<String, Value> {
    let obj = json(&[args, &["--json"]].concat());
    let obj = obj
        .as_object()
        .unwrap_or_else(|| panic!("{args:?}: not an object"));
    assert_eq!(
        obj.keys().next().map(String::as_str),
        Some("format"),
        "{args:?}"
    );
    assert!(
        obj.keys().all(|k| is_snake(k)),
        "{args:?}: {:?}",
        obj.keys()
    );
    let text = text_fields(&ok(args));
    let from_json: Vec<(String, String)> =
        obj.iter().map(|(k, v)| (k.clone(), as_text(v))).collect();
    assert_eq!(text, from_json, "{args:?}");
    obj.clone()
}

#[test]
fn info_json_holds_the_text_fields_for_every_format() {
    let formats = [
        ("blosc/chunks/lz4_shuffle_ts4.cdata", "blosc-chunk"),
        ("blosc/misc/special_zero_chunk.cdata", "blosc-chunk"),
        (
            "blosc/frames/lz4_shuffle_meta_vlmeta.b2frame",
            "blosc2-frame",
        ),
        ("blosc/frames/sparse_lz4.b2frame", "blosc2-sparse-frame"),
        ("blosc/frames/b2nd_u2_7x9x11.b2nd", "b2nd"),
        ("wkw/u16_3ch_lz4_b8_f4", "wkw-dataset"),
        ("wkw/u16_3ch_lz4_b8_f4/z0/y0/x0.wkw", "wkw-file"),
        ("wkw/u8_raw_b8_f4/z0/y0/x0.wkw", "wkw-file"),
        ("dwe/stream/random_6_100_16_j20.dwe", "dwe"),
        ("dwe/block/random_6_100_16_c20.dwe", "dwe"),
    ];
    for (rel, format) in formats {
        let path = testdata(rel);
        let obj = object_matches_text(&["info", path.to_str().unwrap()]);
        assert_eq!(obj["format"], format, "{rel}");
    }
    let ds = testdata("wkw/u16_3ch_lz4_b8_f4");
    let wkw = object_matches_text(&["wkw", "info", ds.to_str().unwrap()]);
    assert_eq!(wkw, object_matches_text(&["info", ds.to_str().unwrap()]));
    assert_eq!(
        wkw["files"],
        serde_json::json!(["z0/y0/x0.wkw", "z0/y0/x1.wkw"])
    );
    let dwe = testdata("dwe/stream/small_2_4_4_j2.dwe");
    let obj = object_matches_text(&["dwe", "info", dwe.to_str().unwrap()]);
    assert_eq!(obj, object_matches_text(&["info", dwe.to_str().unwrap()]));
    assert!(obj["num_timesteps"].is_u64() && obj["scale_factor"].is_f64());
}

/// The columns of one `frame chunks` table line (fixed widths).
fn table_cells(line: &str) -> [String; 6] {
    let cell = |a: usize, b: usize| {
        line.get(a..b.min(line.len()))
            .unwrap_or("")
            .trim()
            .to_owned()
    };
    [
        cell(0, 6),
        cell(7, 23),
        cell(24, 32),
        cell(33, 41),
        cell(43, 52),
        cell(53, line.len()),
    ]
}

#[test]
fn frame_chunks_json_is_one_row_object_per_table_line() {
    for rel in [
        "blosc/frames/lz4_shuffle_meta_vlmeta.b2frame",
        "blosc/frames/zstd_delta_shuffle_many_chunks.b2frame",
        "blosc/frames/sparse_lz4.b2frame",
        "blosc/frames/fill_special_nan.b2frame",
        "blosc/frames/b2nd_zeros_f8_50x40.b2nd",
    ] {
        let path = testdata(rel);
        let p = path.to_str().unwrap();
        let rows = json(&["frame", "chunks", p, "--json"]);
        let rows = rows
            .as_array()
            .unwrap_or_else(|| panic!("{rel}: not an array"));
        let text = ok(&["frame", "chunks", p]);
        let lines: Vec<&str> = text.lines().skip(1).collect();
        assert_eq!(rows.len(), lines.len(), "{rel}");
        assert!(!rows.is_empty(), "{rel}");
        let keys: Vec<&String> = rows[0].as_object().unwrap().keys().collect();
        let place = if rel.contains("sparse") {
            "file"
        } else {
            "offset"
        };
        assert_eq!(
            keys,
            [
                "index",
                place,
                "special",
                "nbytes",
                "cbytes",
                "codec",
                "filters",
                "filters_meta"
            ],
            "{rel}"
        );
        for (row, line) in rows.iter().zip(lines) {
            let row = row.as_object().unwrap();
            assert_eq!(
                row.keys().collect::<Vec<_>>(),
                keys,
                "{rel}: same keys in every row"
            );
            let [index, at, nbytes, cbytes, codec, filters] = table_cells(line);
            assert_eq!(index, row["index"].to_string(), "{rel}");
            assert_eq!(nbytes, row["nbytes"].to_string(), "{rel}");
            assert_eq!(cbytes, row["cbytes"].to_string(), "{rel}");
            let want_at = match (&row[place], row["special"].as_str()) {
                (Value::Null, Some(s)) => format!("special {s}"),
                (o, Some(s)) => format!("{place} {o} ({s})"),
                (o, None) => format!("{place} {o}"),
            };
            assert_eq!(at, want_at, "{rel}");
            assert_eq!(codec, row["codec"].as_str().unwrap_or("-"), "{rel}");
            let names: Vec<&str> = row["filters"]
                .as_array()
                .map(|f| {
                    f.iter()
                        .map(|v| v.as_str().unwrap())
                        .filter(|n| *n != "none")
                        .collect()
                })
                .unwrap_or_default();
            let want = if names.is_empty() {
                "-".to_owned()
            } else {
                names.join(",")
            };
            assert_eq!(filters, want, "{rel}");
        }
    }
}

#[test]
fn frame_meta_json_holds_the_text_lines() {
    for rel in [
        "blosc/frames/lz4_shuffle_meta_vlmeta.b2frame",
        "blosc/frames/sparse_lz4.b2frame",
        "blosc/frames/b2nd_u2_7x9x11.b2nd",
    ] {
        let path = testdata(rel);
        let p = path.to_str().unwrap();
        let obj = json(&["frame", "meta", p, "--json"]);
        let obj = obj.as_object().unwrap();
        assert_eq!(
            obj.keys().collect::<Vec<_>>(),
            ["metalayers", "vlmetalayers"],
            "{rel}"
        );
        let mut want = Vec::new();
        for (section, prefix) in [("metalayers", "meta"), ("vlmetalayers", "vlmeta")] {
            for (k, v) in obj[section].as_object().unwrap() {
                want.push(format!("{prefix} {k}: {v}"));
            }
        }
        let text = ok(&["frame", "meta", p]);
        assert_eq!(text.lines().collect::<Vec<_>>(), want, "{rel}");
    }
}

#[test]
fn wkw_verify_json_holds_the_text_summary_and_problems() {
    let dir = tmp();
    let good = testdata("wkw/u64_raw_b4_f2_multi");
    let bad = dir.path().join("bad");
    copy_dir(&testdata("wkw/u16_3ch_lz4_b8_f4"), &bad);
    let victim = bad.join("z0/y0/x1.wkw");
    let bytes = std::fs::read(&victim).unwrap();
    std::fs::write(&victim, &bytes[..bytes.len() - 100]).unwrap();
    for (ds, code) in [(good.as_path(), 0), (bad.as_path(), 1)] {
        let d = ds.to_str().unwrap();
        let j = run(&["wkw", "verify", d, "--json"]);
        assert_eq!(j.status.code(), Some(code));
        let text = String::from_utf8(j.stdout).unwrap();
        assert_eq!(text.lines().count(), 1, "{text}");
        let obj: Value = serde_json::from_str(&text).unwrap();
        let obj = obj.as_object().unwrap();
        assert_eq!(obj.keys().collect::<Vec<_>>(), ["ok", "files", "problems"]);
        assert_eq!(obj["ok"], code == 0);
        let t = run(&["wkw", "verify", d]);
        assert_eq!(t.status.code(), Some(code));
        let text = String::from_utf8(t.stdout).unwrap();
        let mut want: Vec<String> = obj["problems"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| {
                let row = p.as_object().unwrap();
                assert_eq!(row.keys().collect::<Vec<_>>(), ["path", "index", "problem"]);
                // The text names the file once (the problem may start with its name).
                let path = p["path"].as_str().unwrap();
                let problem = p["problem"].as_str().unwrap();
                let problem = problem
                    .strip_prefix(&format!("{path}: "))
                    .unwrap_or(problem);
                format!("{path}: {problem}")
            })
            .collect();
        want.push(format!("files: {}", obj["files"]));
        want.push(format!(
            "problems: {}",
            obj["problems"].as_array().unwrap().len()
        ));
        assert_eq!(text.lines().collect::<Vec<_>>(), want);
    }
}

#[test]
fn dwe_query_json_holds_the_text_values() {
    for rel in [
        "dwe/stream/random_6_100_16_j20.dwe",
        "dwe/block/random_6_100_16_c20.dwe",
        "dwe/stream/zeros_3_4_2_j4.dwe",
    ] {
        let path = testdata(rel);
        let p = path.to_str().unwrap();
        // vector: {"word", "t", "values"}; i16 exactly, f32 to the bit.
        for f32 in [false, true] {
            let mut args = vec!["dwe", "vector", p, "--word", "1", "--t", "2"];
            if f32 {
                args.push("--f32");
            }
            let obj = json(&[&args[..], &["--json"]].concat());
            let obj = obj.as_object().unwrap();
            assert_eq!(
                obj.keys().collect::<Vec<_>>(),
                ["word", "t", "values"],
                "{rel}"
            );
            assert_eq!(
                (obj["word"].as_u64(), obj["t"].as_u64()),
                (Some(1), Some(2))
            );
            let text = ok(&args);
            let values = obj["values"].as_array().unwrap();
            assert_eq!(values.len(), text.lines().count(), "{rel}");
            for (v, l) in values.iter().zip(text.lines()) {
                if f32 {
                    let j = v.as_f64().unwrap() as f32;
                    assert_eq!(j.to_bits(), l.parse::<f32>().unwrap().to_bits(), "{rel}");
                } else {
                    assert_eq!(v.as_i64().unwrap(), l.parse::<i64>().unwrap(), "{rel}");
                }
            }
        }
        // related: one {"word", "related"} per target; `-` is null.
        let args = [
            "dwe", "related", p, "--words", "0,2,1", "--t", "1", "--amt", "5",
        ];
        let rows = json(&[&args[..], &["--json"]].concat());
        let rows = rows.as_array().unwrap();
        let text = ok(&args);
        assert_eq!(rows.len(), 3);
        for ((row, line), word) in rows.iter().zip(text.lines()).zip([0, 2, 1]) {
            let obj = row.as_object().unwrap();
            assert_eq!(obj.keys().collect::<Vec<_>>(), ["word", "related"], "{rel}");
            assert_eq!(obj["word"], word);
            let cells: Vec<String> = obj["related"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_u64().map_or_else(|| "-".to_owned(), |w| w.to_string()))
                .collect();
            assert_eq!(format!("{word}: {}", cells.join(" ")), line, "{rel}");
        }
        // trajectories: one {"word1", "word2", "values"} per pair, T values each.
        let args = [
            "dwe",
            "trajectories",
            p,
            "--words1",
            "0,1",
            "--words2",
            "1,1",
        ];
        let rows = json(&[&args[..], &["--json"]].concat());
        let rows = rows.as_array().unwrap();
        let text = ok(&args);
        assert_eq!(rows.len(), text.lines().count(), "{rel}");
        for ((row, line), (w1, w2)) in rows.iter().zip(text.lines()).zip([(0, 1), (1, 1)]) {
            let obj = row.as_object().unwrap();
            assert_eq!(
                obj.keys().collect::<Vec<_>>(),
                ["word1", "word2", "values"],
                "{rel}"
            );
            assert_eq!(
                (obj["word1"].as_u64(), obj["word2"].as_u64()),
                (Some(w1), Some(w2))
            );
            let j: Vec<u32> = obj["values"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| (v.as_f64().unwrap() as f32).to_bits())
                .collect();
            let t: Vec<u32> = line
                .split_whitespace()
                .map(|x| x.parse::<f32>().unwrap().to_bits())
                .collect();
            assert_eq!(j, t, "{rel}");
        }
    }
    // The zeros file's vocabulary of 4 cannot fill 5 ranks: nulls in JSON, `-` in text.
    let z = testdata("dwe/stream/zeros_3_4_2_j4.dwe");
    let rows = json(&[
        "dwe",
        "related",
        z.to_str().unwrap(),
        "--words",
        "0",
        "--t",
        "0",
        "--amt",
        "5",
        "--json",
    ]);
    let nulls = rows[0]["related"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|v| v.is_null())
        .count();
    assert_eq!(nulls, 2, "{rows}");
}
