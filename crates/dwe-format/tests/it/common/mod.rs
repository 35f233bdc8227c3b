//! Shared helpers for the integration tests: fixture discovery and the EXPECTED.md manifest.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers

use std::path::{Path, PathBuf};

use dwe_format::Dims;

pub(crate) fn testdata() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/dwe")
}

/// One dataset with its two reference-made files.
#[derive(Debug, Clone)]
pub(crate) struct Fixture {
    pub(crate) name: String,
    pub(crate) dims: Dims,
    pub(crate) stream: PathBuf,
    pub(crate) jump_interval: u32,
    pub(crate) block: PathBuf,
    pub(crate) chunk_size: u32,
}

impl Fixture {
    pub(crate) fn values(&self) -> Vec<i16> {
        read_i16(&testdata().join(format!("inputs/{}.i16", self.name)))
    }
    pub(crate) fn diffs(&self) -> Vec<i16> {
        read_i16(&testdata().join(format!("inputs/{}.diffs.i16", self.name)))
    }
}

pub(crate) fn read_i16(path: &Path) -> Vec<i16> {
    std::fs::read(path)
        .unwrap()
        .chunks_exact(2)
        .map(|b| i16::from_le_bytes([b[0], b[1]]))
        .collect()
}

/// `prefix_NAME_<letter>N.dwe` → (NAME, N)
fn split_param(file: &str, letter: char) -> (String, u32) {
    let stem = file.strip_suffix(".dwe").unwrap();
    let (name, p) = stem.rsplit_once('_').unwrap();
    (
        name.to_owned(),
        p.strip_prefix(letter).unwrap().parse().unwrap(),
    )
}

pub(crate) fn fixtures() -> Vec<Fixture> {
    let mut out = Vec::new();
    let mut streams: Vec<_> = std::fs::read_dir(testdata().join("stream"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    streams.sort();
    let blocks: Vec<_> = std::fs::read_dir(testdata().join("block"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    for s in streams {
        let (name, j) = split_param(&s, 'j');
        let b = blocks
            .iter()
            .find(|b| split_param(b, 'c').0 == name)
            .unwrap();
        let (_, c) = split_param(b, 'c');
        let dims: Vec<u32> = name
            .split('_')
            .skip(1)
            .map(|x| x.parse().unwrap())
            .collect();
        out.push(Fixture {
            dims: Dims::new(dims[0], dims[1], dims[2]),
            stream: testdata().join("stream").join(&s),
            jump_interval: j,
            block: testdata().join("block").join(b),
            chunk_size: c,
            name,
        });
    }
    assert_eq!(out.len(), 7, "expected 7 datasets");
    out
}

/// One `- reference `call(args)`...: [values]` line of EXPECTED.md, with its dataset.
#[derive(Debug, Clone)]
pub(crate) struct Expected {
    pub(crate) dataset: String,
    pub(crate) call: String,
    pub(crate) args: Vec<(String, Vec<i64>)>,
    pub(crate) values: Vec<String>,
    /// The following "same, as f32 bit patterns" line, if any.
    pub(crate) bits: Vec<u32>,
}

impl Expected {
    pub(crate) fn arg(&self, name: &str) -> Vec<i64> {
        self.args.iter().find(|a| a.0 == name).unwrap().1.clone()
    }
}

fn parse_list(s: &str) -> Vec<String> {
    let s = s.trim().trim_start_matches('[').trim_end_matches(']');
    s.split(',')
        .map(|x| x.trim().to_owned())
        .filter(|x| !x.is_empty())
        .collect()
}

/// Parses the "reference" query lines of EXPECTED.md per dataset section.
pub(crate) fn expected_queries() -> Vec<Expected> {
    let text = std::fs::read_to_string(testdata().join("EXPECTED.md")).unwrap();
    let mut dataset = String::new();
    let mut out: Vec<Expected> = Vec::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("## `") {
            dataset = rest.split('`').next().unwrap().to_owned();
            continue;
        }
        if let Some(rest) = line
            .trim_start()
            .strip_prefix("- same, as f32 bit patterns: ")
        {
            let last = out.last_mut().unwrap();
            last.bits = parse_list(rest)
                .iter()
                .map(|h| u32::from_str_radix(h, 16).unwrap())
                .collect();
            continue;
        }
        let Some(rest) = line.strip_prefix("- reference `") else {
            continue;
        };
        let (call, tail) = rest.split_once('`').unwrap();
        let (fname, args) = call.split_once('(').unwrap();
        let args = args.strip_suffix(')').unwrap();
        // Split "a=[1, 2], b=3" on top-level commas.
        let mut parsed = Vec::new();
        let mut depth = 0;
        let mut cur = String::new();
        for ch in args.chars().chain(std::iter::once(',')) {
            match ch {
                '[' => depth += 1,
                ']' => depth -= 1,
                _ => {}
            }
            if ch == ',' && depth == 0 {
                let (k, v) = cur.trim().split_once('=').unwrap();
                let vals = parse_list(v).iter().map(|x| x.parse().unwrap()).collect();
                parsed.push((k.to_owned(), vals));
                cur.clear();
            } else {
                cur.push(ch);
            }
        }
        let values = parse_list(tail.rsplit_once(": ").unwrap().1);
        out.push(Expected {
            dataset: dataset.clone(),
            call: fname.to_owned(),
            args: parsed,
            values,
            bits: Vec::new(),
        });
    }
    out
}

/// The bullet lines of one dataset section of EXPECTED.md.
pub(crate) fn section(dataset: &str) -> Vec<String> {
    let text = std::fs::read_to_string(testdata().join("EXPECTED.md")).unwrap();
    let start = text.find(&format!("## `{dataset}`")).unwrap();
    let body = &text[start..];
    let end = body[3..].find("\n## ").map_or(body.len(), |e| e + 3);
    body[..end].lines().map(str::to_owned).collect()
}

/// Integers in `line` after `marker`, e.g. "timestep_addrs: [1, 2]".
pub(crate) fn ints_after(line: &str, marker: &str) -> Vec<i64> {
    let rest = &line[line.find(marker).unwrap() + marker.len()..];
    rest.split(|c: char| !(c.is_ascii_digit() || c == '-'))
        .filter(|x| !x.is_empty() && *x != "-")
        .map(|x| x.parse().unwrap())
        .collect()
}
