//! Conformance against the reference-made fixtures in `testdata/blosc/` (python-blosc2 4.14.1 /
//! C-Blosc2 3.3.5, plus legacy chunks from c-blosc2's `compat/`): every chunk decodes to the
//! sha256 recorded in `manifest.json`, and every chunk made by a recorded compress call is
//! re-encoded byte for byte.

#![allow(
    clippy::unwrap_used,
    clippy::cast_possible_truncation,
    reason = "test helpers: a failed unwrap is a failed test; sizes fit in usize"
)]
use std::path::PathBuf;

use blosc_chunk::{CParams, ChunkHeader, Codec, Filter, SplitMode};
use serde_json::Value;
use sha2::{Digest, Sha256};

fn testdata() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../testdata/blosc")
}

const FOLDERS: [&str; 4] = ["chunks/", "misc/", "blosc1hdr/", "legacy/"];

fn entries() -> Vec<Value> {
    let text = std::fs::read_to_string(testdata().join("manifest.json")).unwrap();
    let v: Value = serde_json::from_str(&text).unwrap();
    v["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| {
            let p = e["path"].as_str().unwrap();
            e["kind"] == "chunk" && FOLDERS.iter().any(|f| p.starts_with(f))
        })
        .cloned()
        .collect()
}

/// The codec `chunk` needs if this build lacks it (its Cargo feature is off): chunks with
/// compressed blocks only; special, memcpyed and empty chunks need no codec.
fn disabled_codec(chunk: &[u8]) -> Option<Codec> {
    let h = ChunkHeader::parse(chunk).unwrap();
    let needs_codec = h.special().is_none() && !h.is_memcpyed() && h.nbytes() > 0;
    (needs_codec && !h.codec().is_enabled()).then(|| h.codec())
}

fn sha_hex(b: &[u8]) -> String {
    hex::encode(Sha256::digest(b))
}

/// Every line of `testdata/blosc/SHA256SUMS` (the frames, the manifest and the reference's
/// verify output too, not only this crate's chunk folders) names a file with that hash.
#[test]
fn sha256sums_match_files() {
    let sums = std::fs::read_to_string(testdata().join("SHA256SUMS")).unwrap();
    let mut checked = 0;
    for line in sums.lines() {
        let (sum, path) = line.split_once("  ").unwrap();
        let path = path.trim_start_matches("./");
        let bytes = std::fs::read(testdata().join(path)).unwrap();
        assert_eq!(sha_hex(&bytes), sum, "{path}");
        checked += 1;
    }
    assert_eq!(checked, sums.lines().count());
    assert!(checked >= 190, "only {checked} files listed");
}

#[test]
fn every_chunk_decodes_to_the_manifest_sha() {
    let mut n = 0;
    // Chunks of codecs this build lacks: see `fixtures_of_disabled_codecs_give_a_typed_error`.
    let mut skipped = 0;
    for e in entries() {
        let path = e["path"].as_str().unwrap();
        let chunk = std::fs::read(testdata().join(path)).unwrap();
        if disabled_codec(&chunk).is_some() {
            skipped += 1;
            continue;
        }
        let out = blosc_chunk::decompress(&chunk).unwrap_or_else(|err| panic!("{path}: {err}"));
        assert_eq!(
            out.len() as u64,
            e["decompressed_len"].as_u64().unwrap(),
            "{path}"
        );
        if path.contains("uninit") {
            assert!(
                out.iter().all(|&b| b == 0),
                "{path}: uninit decodes as zeros"
            );
            n += 1;
            continue;
        }
        let covered = e["sha256_covers_first_bytes"]
            .as_u64()
            .map_or(out.len(), |c| c as usize);
        assert_eq!(
            sha_hex(&out[..covered]),
            e["sha256_decompressed"].as_str().unwrap(),
            "{path}"
        );
        // The same through decompress_into and multi-threaded decoding.
        let mut buf = vec![0xAAu8; out.len() + 3];
        assert_eq!(
            blosc_chunk::decompress_into(&chunk, &mut buf).unwrap(),
            out.len()
        );
        assert_eq!(&buf[..covered], &out[..covered], "{path} into");
        let par =
            blosc_chunk::decompress_ctx(&chunk, &blosc_chunk::DParams::default().with_threads(2))
                .unwrap();
        assert_eq!(&par[..covered], &out[..covered], "{path} 2 threads");
        // And into memory never written before, on one and on two threads.
        for threads in [1, 2] {
            let mut fresh: Vec<u8> = Vec::with_capacity(out.len() + 3);
            let got = blosc_chunk::decompress_into_uninit_ctx(
                &chunk,
                fresh.spare_capacity_mut(),
                &blosc_chunk::DParams::default().with_threads(threads),
            )
            .unwrap();
            assert_eq!(got.len(), out.len(), "{path} uninit");
            assert_eq!(
                &got[..covered],
                &out[..covered],
                "{path} uninit, {threads} threads"
            );
        }
        n += 1;
    }
    assert!(
        n + skipped >= 150,
        "only {n} chunks decoded ({skipped} need a disabled codec)"
    );
}

#[test]
fn getitem_matches_full_decode() {
    for e in entries() {
        let path = e["path"].as_str().unwrap();
        if path.contains("uninit") || e["sha256_covers_first_bytes"].is_u64() {
            continue;
        }
        let chunk = std::fs::read(testdata().join(path)).unwrap();
        if disabled_codec(&chunk).is_some() {
            continue;
        }
        let h = ChunkHeader::parse(&chunk).unwrap();
        let full = blosc_chunk::decompress(&chunk).unwrap();
        let ts = h.typesize();
        let nitems = h.nbytes() / ts;
        for (start, n) in [
            (0, nitems),
            (0, 1),
            (nitems / 3, nitems / 2),
            (nitems.saturating_sub(7), 7.min(nitems)),
        ] {
            let got = blosc_chunk::getitem(&chunk, start, n).unwrap();
            assert_eq!(
                got,
                &full[start * ts..(start + n) * ts],
                "{path} {start}+{n}"
            );
        }
        assert!(blosc_chunk::getitem(&chunk, nitems, 1).is_err());
    }
}

fn arg<'a>(call: &'a str, key: &str) -> Option<&'a str> {
    let i = call.find(key)? + key.len();
    let rest = &call[i..];
    let end = rest.find([',', ')']).unwrap_or(rest.len());
    Some(rest[..end].trim())
}

/// Compression parameters recorded for a fixture: codec, typesize and filters from its header,
/// clevel / blocksize / splitmode from the recorded call.
fn recorded_params(e: &Value, h: &ChunkHeader) -> Option<CParams> {
    let call = e["call"].as_str()?;
    if !(call.contains("compress2(") || call.contains("compress(")) {
        return None;
    }
    let blosc1 = call.contains("BLOSC_BLOSC1_COMPAT=1");
    let clevel: u8 = arg(call, "clevel=")?.parse().ok()?;
    let blocksize = arg(call, "blocksize=").map_or(0, |b| b.parse().unwrap());
    let splitmode = match arg(call, "splitmode=") {
        Some(s) if s.contains("ALWAYS") => SplitMode::Always,
        Some(s) if s.contains("NEVER") => SplitMode::Never,
        _ if blosc1 => SplitMode::ForwardCompat,
        _ => SplitMode::Auto,
    };
    let mut cp = CParams::default();
    cp.codec = if blosc1 {
        match h.codec_format() {
            0 => Codec::BloscLz,
            1 => Codec::Lz4,
            3 => Codec::Zlib,
            _ => Codec::Zstd,
        }
    } else {
        Codec::from_id(h.udcodec())
    };
    cp.clevel = clevel;
    cp.typesize = h.typesize();
    cp.filters = h.filters();
    cp.filters_meta = h.filters_meta();
    if blosc1 {
        // Memcpyed Blosc1 chunks carry no filter flags; the call names the filter.
        let f = arg(call, "filter=").unwrap_or("");
        cp.filters = [Filter::NoFilter; 6];
        if f.contains("BITSHUFFLE") {
            cp.filters[5] = Filter::BitShuffle;
        } else if f.contains("SHUFFLE") {
            cp.filters[5] = Filter::Shuffle;
        }
    }
    cp.blocksize = blocksize;
    cp.splitmode = splitmode;
    cp.blosc1_header = blosc1;
    cp.use_dict = call.contains("use_dict=True");
    Some(cp)
}

#[test]
fn byte_exact_reencode() {
    let mut exact = 0;
    let mut zlib = 0;
    // Fixtures made with a codec this build lacks.
    let mut skipped = 0;
    let mut failures = Vec::new();
    for e in entries() {
        let path = e["path"].as_str().unwrap();
        let chunk = std::fs::read(testdata().join(path)).unwrap();
        let h = ChunkHeader::parse(&chunk).unwrap();
        let Some(cp) = recorded_params(&e, &h) else {
            continue;
        };
        if !cp.codec.is_enabled() || disabled_codec(&chunk).is_some() {
            skipped += 1;
            continue;
        }
        let data = blosc_chunk::decompress(&chunk).unwrap();
        let ours = blosc_chunk::compress(&data, &cp).unwrap();
        assert_eq!(
            blosc_chunk::decompress(&ours).unwrap(),
            data,
            "{path}: round trip"
        );
        let mut par = cp.clone();
        par.nthreads = 2;
        assert_eq!(
            blosc_chunk::compress(&data, &par).unwrap(),
            ours,
            "{path}: 2 threads"
        );
        if ours == chunk {
            exact += 1;
            if cp.codec == Codec::Zlib && !h.is_memcpyed() {
                zlib += 1;
            }
        } else {
            failures.push(path.to_string());
        }
    }
    assert!(
        failures.is_empty(),
        "{} not byte-exact: {failures:?}",
        failures.len()
    );
    assert!(
        exact + skipped >= 142,
        "only {exact} byte-exact cases ({zlib} zlib, {skipped} of disabled codecs)"
    );
    // zlib-rs deflates as zlib-ng 2.3.3 (bundled by C-Blosc2 3.3.5) does: all 25 compressed
    // zlib fixtures (22 chunk-matrix files, 3 Blosc1-header files) come out byte for byte.
    assert!(
        zlib >= 25 || !Codec::Zlib.is_enabled(),
        "only {zlib} byte-exact zlib cases"
    );
}

#[test]
fn special_constructors_match_fixtures() {
    let read = |p: &str| std::fs::read(testdata().join(p)).unwrap();
    assert_eq!(
        blosc_chunk::zeros_chunk(4000, 4).unwrap(),
        read("misc/special_zero_chunk.cdata")
    );
    assert_eq!(
        blosc_chunk::nans_chunk(8000, 8).unwrap(),
        read("misc/special_nan_chunk.cdata")
    );
    assert_eq!(
        blosc_chunk::uninit_chunk(4000, 4).unwrap(),
        read("misc/special_uninit_chunk.cdata")
    );
    let v = read("misc/special_value_chunk.cdata");
    assert_eq!(blosc_chunk::repeatval_chunk(8000, &v[32..]).unwrap(), v);
}

#[test]
fn lazy_chunk_points_at_the_frame_chunk() {
    let lazy_bytes = std::fs::read(testdata().join("misc/lazychunk_from_frame.bin")).unwrap();
    let lazy = blosc_chunk::LazyChunk::parse(&lazy_bytes).unwrap();
    assert!(lazy.header().is_lazy());
    assert_eq!(lazy.nchunk(), 0);
    assert!(matches!(
        blosc_chunk::decompress(&lazy_bytes),
        Err(blosc_chunk::Error::Unsupported { .. })
    ));
    let frame = std::fs::read(testdata().join("frames/lz4_shuffle_meta_vlmeta.b2frame")).unwrap();
    let (off, cbytes) = lazy.chunk_range();
    let off = usize::try_from(off).unwrap();
    let chunk = &frame[off..off + cbytes];
    // Same header except the lazy bit; same block starts.
    assert_eq!(&chunk[..31], &lazy_bytes[..31]);
    assert_eq!(chunk[31] | 0x08, lazy_bytes[31]);
    assert_eq!(&chunk[32..36], &lazy_bytes[32..36]);
    let (boff, blen) = lazy.block_range(0).unwrap();
    assert_eq!(usize::try_from(boff).unwrap() + blen, off + cbytes);
    #[cfg(feature = "lz4")]
    assert_eq!(blosc_chunk::decompress(chunk).unwrap().len(), 100_000);
}

/// With a codec's Cargo feature off, every fixture that needs the codec is refused with
/// `Error::CodecDisabled` naming the codec and the feature, by every decoding entry point.
#[cfg(not(all(feature = "lz4", feature = "zstd", feature = "zlib")))]
#[test]
fn fixtures_of_disabled_codecs_give_a_typed_error() {
    let mut refused: Vec<Codec> = Vec::new();
    for e in entries() {
        let path = e["path"].as_str().unwrap();
        let chunk = std::fs::read(testdata().join(path)).unwrap();
        let Some(codec) = disabled_codec(&chunk) else {
            continue;
        };
        let feature = codec.feature().unwrap();
        let expected = blosc_chunk::Error::CodecDisabled { codec, feature };
        assert_eq!(
            blosc_chunk::decompress(&chunk),
            Err(expected.clone()),
            "{path}"
        );
        let mut buf = vec![0u8; ChunkHeader::parse(&chunk).unwrap().nbytes()];
        assert_eq!(
            blosc_chunk::decompress_into(&chunk, &mut buf),
            Err(expected.clone()),
            "{path}"
        );
        assert_eq!(
            blosc_chunk::getitem(&chunk, 0, 1),
            Err(expected.clone()),
            "{path}"
        );
        let msg = expected.to_string();
        assert!(
            msg.contains(codec.name()) && msg.contains(&format!("`{feature}`")),
            "{msg}"
        );
        refused.push(codec);
    }
    // The fixtures hold chunks of every codec, so each disabled one was met.
    for codec in [Codec::Lz4, Codec::Zstd, Codec::Zlib] {
        assert_eq!(
            refused.iter().any(|c| c.feature() == codec.feature()),
            !codec.is_enabled(),
            "{codec}"
        );
    }
}
