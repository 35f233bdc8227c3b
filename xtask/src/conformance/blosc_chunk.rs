//! blosc-chunk: every chunk fixture (python-blosc2 4.14.1 / C-Blosc2 3.3.5 and c-blosc2
//! `compat/` legacy chunks) decodes to the sha256 in `testdata/blosc/manifest.json`; chunks made
//! by a recorded compress call are re-encoded byte for byte; special-chunk constructors match.
//! `--live` round-trips random data through python-blosc2 both ways, and Blosc1-format chunks
//! through python-blosc 1.11.4 (C-Blosc 1.21) both ways.

use std::path::Path;

use blosc_chunk::{CParams, ChunkHeader, Codec, Filter, SplitMode};
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::{Ctx, Row};

const SECTION: &str = "blosc-chunk";
const FOLDERS: [&str; 4] = ["chunks/", "misc/", "blosc1hdr/", "legacy/"];

pub(crate) fn rows(ctx: &Ctx) -> Vec<Row> {
    let dir = ctx.testdata("blosc");
    let entries = match load_entries(&dir) {
        Ok(e) => e,
        Err(why) => {
            let mut row = Row::new(SECTION, "load testdata/blosc/manifest.json");
            row.case("manifest.json", Err(why));
            return vec![row];
        }
    };
    let mut rows = vec![
        decode_rows(&dir, &entries),
        reencode_rows(&dir, &entries),
        specials(&dir),
    ];
    if ctx.live {
        rows.push(crate::conformance::blosc_chunk_live::live(ctx));
        rows.push(crate::conformance::blosc1_live::live(ctx));
        rows.push(crate::conformance::zarr_live::live(ctx));
    }
    rows
}

fn load_entries(dir: &Path) -> Result<Vec<Value>, String> {
    let text = std::fs::read_to_string(dir.join("manifest.json")).map_err(|e| e.to_string())?;
    let v: Value = serde_json::from_str(&text).map_err(|e| e.to_string())?;
    let all = v["entries"].as_array().ok_or("no entries array")?;
    Ok(all
        .iter()
        .filter(|e| {
            let p = e["path"].as_str().unwrap_or("");
            e["kind"] == "chunk" && FOLDERS.iter().any(|f| p.starts_with(f))
        })
        .cloned()
        .collect())
}

fn sha_hex(b: &[u8]) -> String {
    Sha256::digest(b)
        .iter()
        .map(|x| format!("{x:02x}"))
        .collect()
}

fn decode_one(dir: &Path, e: &Value) -> Result<(), String> {
    let path = e["path"].as_str().unwrap_or("");
    let chunk = std::fs::read(dir.join(path)).map_err(|e| e.to_string())?;
    let out = blosc_chunk::decompress(&chunk).map_err(|e| e.to_string())?;
    if Some(out.len() as u64) != e["decompressed_len"].as_u64() {
        return Err(format!("length {}", out.len()));
    }
    if path.contains("uninit") {
        return Ok(());
    }
    let covered = e["sha256_covers_first_bytes"]
        .as_u64()
        .and_then(|c| usize::try_from(c).ok())
        .unwrap_or(out.len());
    let got = sha_hex(out.get(..covered).unwrap_or(&out));
    if Some(got.as_str()) == e["sha256_decompressed"].as_str() {
        Ok(())
    } else {
        Err(format!("sha256 {got}"))
    }
}

fn decode_rows(dir: &Path, entries: &[Value]) -> Row {
    let mut row = Row::new(SECTION, "decode chunk fixtures (sha256 vs manifest)");
    for e in entries {
        row.case(e["path"].as_str().unwrap_or("?"), decode_one(dir, e));
    }
    row
}

fn arg<'a>(call: &'a str, key: &str) -> Option<&'a str> {
    let i = call.find(key)? + key.len();
    let rest = call.get(i..)?;
    let end = rest.find([',', ')']).unwrap_or(rest.len());
    rest.get(..end).map(str::trim)
}

/// Parameters recorded for a fixture: codec/typesize/filters from its header, clevel,
/// blocksize, splitmode and `use_dict` from the recorded python call. `None` for chunks not
/// made by a compress call (special constructors, legacy files).
pub(crate) fn recorded_params(e: &Value, h: &ChunkHeader) -> Option<CParams> {
    let call = e["call"].as_str()?;
    if !(call.contains("compress2(") || call.contains("compress(")) {
        return None;
    }
    let blosc1 = call.contains("BLOSC_BLOSC1_COMPAT=1");
    let mut cp = CParams::default();
    cp.clevel = arg(call, "clevel=")?.parse().ok()?;
    cp.blocksize = arg(call, "blocksize=").map_or(Some(0), |b| b.parse().ok())?;
    cp.splitmode = match arg(call, "splitmode=") {
        Some(s) if s.contains("ALWAYS") => SplitMode::Always,
        Some(s) if s.contains("NEVER") => SplitMode::Never,
        _ if blosc1 => SplitMode::ForwardCompat,
        _ => SplitMode::Auto,
    };
    cp.typesize = h.typesize();
    cp.filters = h.filters();
    cp.filters_meta = h.filters_meta();
    cp.codec = Codec::from_id(h.udcodec());
    if blosc1 {
        cp.codec = match h.codec_format() {
            0 => Codec::BloscLz,
            1 => Codec::Lz4,
            3 => Codec::Zlib,
            _ => Codec::Zstd,
        };
        let f = arg(call, "filter=").unwrap_or("");
        cp.filters = [Filter::NoFilter; 6];
        if f.contains("BITSHUFFLE") {
            cp.filters[5] = Filter::BitShuffle;
        } else if f.contains("SHUFFLE") {
            cp.filters[5] = Filter::Shuffle;
        }
        cp.blosc1_header = true;
    }
    cp.use_dict = call.contains("use_dict=True");
    Some(cp)
}

fn reencode_rows(dir: &Path, entries: &[Value]) -> Row {
    let mut row = Row::new(
        SECTION,
        "byte-exact re-encode, BloscLZ/LZ4/LZ4HC/zstd (recorded params, 1 and 2 threads)",
    );
    for e in entries {
        let path = e["path"].as_str().unwrap_or("?");
        let Ok(chunk) = std::fs::read(dir.join(path)) else {
            row.case(path, Err("unreadable".into()));
            continue;
        };
        let Ok(h) = ChunkHeader::parse(&chunk) else {
            continue;
        };
        let Some(mut cp) = recorded_params(e, &h) else {
            continue;
        };
        // C-Blosc2 links zlib-ng; its deflate streams differ from stock zlib (decode-only).
        if cp.codec == Codec::Zlib && !h.is_memcpyed() {
            continue;
        }
        let result = (|| {
            let data = blosc_chunk::decompress(&chunk).map_err(|e| e.to_string())?;
            let one = blosc_chunk::compress(&data, &cp).map_err(|e| e.to_string())?;
            cp.nthreads = 2;
            let two = blosc_chunk::compress(&data, &cp).map_err(|e| e.to_string())?;
            if one != chunk {
                return Err(format!(
                    "differs (ours {} bytes, C {})",
                    one.len(),
                    chunk.len()
                ));
            }
            if two != one {
                return Err("2-thread output differs".into());
            }
            Ok(())
        })();
        row.case(path, result);
    }
    row
}

fn specials(dir: &Path) -> Row {
    let mut row = Row::new(SECTION, "special-chunk constructors byte-exact");
    let read = |p: &str| std::fs::read(dir.join(p)).unwrap_or_default();
    let value = read("misc/special_value_chunk.cdata");
    let cases: [(&str, blosc_chunk::Result<Vec<u8>>); 4] = [
        (
            "misc/special_zero_chunk.cdata",
            blosc_chunk::zeros_chunk(4000, 4),
        ),
        (
            "misc/special_nan_chunk.cdata",
            blosc_chunk::nans_chunk(8000, 8),
        ),
        (
            "misc/special_uninit_chunk.cdata",
            blosc_chunk::uninit_chunk(4000, 4),
        ),
        (
            "misc/special_value_chunk.cdata",
            blosc_chunk::repeatval_chunk(8000, value.get(32..).unwrap_or_default()),
        ),
    ];
    for (path, made) in cases {
        row.check(path, made.ok().as_deref() == Some(read(path).as_slice()));
    }
    row
}
