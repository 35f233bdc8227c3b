//! The Blosc1 writer ([`Format::Blosc1`]) against chunks written by C-Blosc 1.21.7.dev
//! (python-blosc 1.11.4) in `testdata/blosc/blosc1/` (`gen_blosc1_fixtures.py`): for every
//! fixture, the input is regenerated here, our output equals the fixture byte for byte (zlib:
//! see below), compressing on 1 and 2 threads gives the same bytes, and both the fixture and our
//! output decode back to the input.
//!
//! zlib: C-Blosc 1.21 links stock zlib 1.3.1, this crate zlib-rs (a zlib-ng port), whose
//! deflate streams differ. zlib chunks that are not identical must have the same header apart
//! from `cbytes` and the memcpy bit, and both must decode.
//!
//! zstd: the wheel links libzstd 1.5.6, this crate 1.5.7. Their streams agree on every fixture
//! except blocks of 256 KiB and more (five fixtures), where 1.5.7 compresses differently (a
//! python `zstandard` built on libzstd 1.5.6 reproduces the fixture's streams exactly). Those
//! must have the same header apart from `cbytes` and both must decode.

#![allow(
    clippy::unwrap_used,
    clippy::panic,
    clippy::cast_possible_truncation,
    reason = "test helpers: a failed unwrap is a failed test; sizes fit in usize"
)]
use std::path::PathBuf;

use blosc_chunk::{CParams, ChunkHeader, Codec, Filter, SplitMode, compress, decompress};
use serde_json::Value;
use sha2::{Digest, Sha256};

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../testdata/blosc/blosc1")
}

fn manifest() -> Value {
    serde_json::from_str(&std::fs::read_to_string(dir().join("manifest.json")).unwrap()).unwrap()
}

const SEED: u64 = 0x9E37_79B9_7F4A_7C15;

/// `n` successive xorshift64 (13, 7, 17) states from [`SEED`].
fn xorshift(n: usize) -> Vec<u64> {
    let mut x = SEED;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        })
        .collect()
}

fn u32s(values: impl Iterator<Item = u64>, n: usize) -> Vec<u8> {
    let mut v: Vec<u8> = values.flat_map(|x| (x as u32).to_le_bytes()).collect();
    v.truncate(n);
    v
}

/// The generator's `make_input`.
fn make_input(kind: &str, n: usize) -> Vec<u8> {
    let k = n.div_ceil(4) as u64;
    match kind {
        "ramp32" => u32s((0..k).map(|i| 3 * i), n),
        "noisy32" => u32s(
            xorshift(k as usize)
                .into_iter()
                .zip(0..)
                .map(|(r, i)| 1000 + 7 * i + (r & 15)),
            n,
        ),
        "random" => xorshift(n).into_iter().map(|r| r as u8).collect(),
        "mixed" => {
            let mut v = make_input("noisy32", n / 2);
            v.extend(make_input("random", n - n / 2));
            v
        }
        "text" => {
            let phrase = b"the quick brown fox jumps over the lazy dog ";
            (0..n)
                .map(|i| {
                    if i % 50 == 0 {
                        (i / 50) as u8
                    } else {
                        phrase[i % phrase.len()]
                    }
                })
                .collect()
        }
        other => panic!("unknown input kind {other}"),
    }
}

fn cparams(e: &Value) -> CParams {
    let codec = match e["codec"].as_str().unwrap() {
        "blosclz" => Codec::BloscLz,
        "lz4" => Codec::Lz4,
        "lz4hc" => Codec::Lz4Hc,
        "zlib" => Codec::Zlib,
        "zstd" => Codec::Zstd,
        other => panic!("codec {other}"),
    };
    let filter = match e["shuffle"].as_str().unwrap() {
        "noshuffle" => Filter::NoFilter,
        "shuffle" => Filter::Shuffle,
        "bitshuffle" => Filter::BitShuffle,
        other => panic!("shuffle {other}"),
    };
    let mut cp = CParams::blosc1(
        codec,
        e["clevel"].as_u64().unwrap() as u8,
        e["typesize"].as_u64().unwrap() as usize,
        filter,
    );
    cp.blocksize = e["blocksize"].as_u64().unwrap() as usize;
    cp.splitmode = match e["splitmode"].as_str().unwrap() {
        "forward_compat" => SplitMode::ForwardCompat,
        "auto" => SplitMode::Auto,
        "never" => SplitMode::Never,
        "always" => SplitMode::Always,
        other => panic!("splitmode {other}"),
    };
    cp
}

fn sha_hex(b: &[u8]) -> String {
    hex::encode(Sha256::digest(b))
}

#[test]
fn sha256sums_match_files() {
    let sums = std::fs::read_to_string(dir().join("SHA256SUMS")).unwrap();
    let mut n = 0;
    for line in sums.lines() {
        let (sum, name) = line.split_once("  ").unwrap();
        assert_eq!(
            sha_hex(&std::fs::read(dir().join(name)).unwrap()),
            sum,
            "{name}"
        );
        n += 1;
    }
    assert!(n > 800, "{n} files");
}

/// Every fixture: byte-identical output (zlib: decodable output), identical on 2 threads, and
/// both chunks decode to the input.
#[test]
fn blosc1_writer_matches_c_blosc_1_21() {
    let m = manifest();
    let entries = m["entries"].as_array().unwrap();
    let mut exact = 0;
    let mut zlib_differs = 0;
    let mut zlib_memcpy_differs = 0;
    let mut zstd_differs = 0;
    let mut skipped = 0;
    let mut failures = Vec::new();
    for e in entries {
        let file = e["file"].as_str().unwrap();
        let fixture = std::fs::read(dir().join(file)).unwrap();
        let input = make_input(
            e["input"]["kind"].as_str().unwrap(),
            e["input"]["len"].as_u64().unwrap() as usize,
        );
        assert_eq!(
            sha_hex(&input),
            e["input_sha256"].as_str().unwrap(),
            "{file}: input"
        );
        let mut cp = cparams(e);
        if !cp.codec.is_enabled() {
            skipped += 1;
            continue;
        }
        let ours = compress(&input, &cp).unwrap();
        cp.nthreads = 2;
        assert!(
            compress(&input, &cp).unwrap() == ours,
            "{file}: 2 threads differ"
        );
        assert!(
            decompress(&fixture).unwrap() == input,
            "{file}: fixture decode"
        );
        assert!(decompress(&ours).unwrap() == input, "{file}: our decode");
        if ours == fixture {
            exact += 1;
        } else if cp.codec == Codec::Zlib {
            // Same header apart from cbytes and, where one deflate fits the budget and the
            // other does not, the memcpy bit.
            let (a, b) = (
                ChunkHeader::parse(&ours).unwrap(),
                ChunkHeader::parse(&fixture).unwrap(),
            );
            let mask = |h: &[u8]| [h[0], h[1], h[2] & !0x02, h[3]];
            assert_eq!(mask(&ours), mask(&fixture), "{file}: zlib header");
            assert_eq!(ours[4..12], fixture[4..12], "{file}: zlib nbytes/blocksize");
            if a.is_memcpyed() != b.is_memcpyed() {
                zlib_memcpy_differs += 1;
            }
            zlib_differs += 1;
        } else if cp.codec == Codec::Zstd && input.len() >= 1 << 18 {
            assert_eq!(ours[..12], fixture[..12], "{file}: zstd header");
            zstd_differs += 1;
        } else {
            let at = ours.iter().zip(&fixture).position(|(x, y)| x != y);
            failures.push(format!(
                "{file}: ours {} bytes, C {} bytes, first difference at {at:?}",
                ours.len(),
                fixture.len()
            ));
        }
    }
    eprintln!(
        "{} fixtures: {exact} byte-identical, {zlib_differs} zlib chunks decodable but not \
         identical ({zlib_memcpy_differs} memcpyed on one side only), {zstd_differs} zstd chunks \
         with 256 KiB blocks decodable but not identical (libzstd 1.5.7 vs 1.5.6), {skipped} \
         skipped (codec feature off)",
        entries.len()
    );
    assert!(
        failures.is_empty(),
        "{} mismatches:\n{}",
        failures.len(),
        failures.join("\n")
    );
    if Codec::Zstd.is_enabled() {
        assert!(zstd_differs <= 5, "{zstd_differs} zstd chunks differ");
    }
}

/// Hostile versions of C-Blosc 1 chunks (a sample of every group and codec): truncated at every
/// length and with every bit of the header and a bit of every payload byte flipped, they
/// decode to `Ok` of the right length or to `Err`, never a panic.
#[test]
fn corrupted_c_blosc_1_chunks_never_panic() {
    let limits = blosc_chunk::Limits::default().with_max_nbytes(8 << 20);
    let m = manifest();
    let mut n = 0;
    for e in m["entries"].as_array().unwrap().iter().step_by(23) {
        let chunk = std::fs::read(dir().join(e["file"].as_str().unwrap())).unwrap();
        let check = |c: &[u8]| {
            let r = blosc_chunk::decompress_with(c, &limits);
            if let (Ok(v), Ok(h)) = (&r, ChunkHeader::parse(c)) {
                assert_eq!(v.len(), h.nbytes());
            }
        };
        for len in 0..chunk.len().min(2048) {
            check(&chunk[..len]);
        }
        let mut c = chunk.clone();
        for i in 0..c.len().min(1024) {
            let bits = if i < 16 { 0..8 } else { (i % 8)..(i % 8 + 1) };
            for bit in bits {
                c[i] ^= 1 << bit;
                check(&c);
                c[i] ^= 1 << bit;
            }
        }
        n += 1;
    }
    assert!(n > 30);
}
