//! blosc-chunk `--live`, Blosc1 writer: random data compressed by us with `Format::Blosc1` is
//! decompressed by C-Blosc 1.21.7.dev (python-blosc 1.11.4), and the same data compressed by
//! C-Blosc 1.21 is decompressed by us; for BloscLZ, LZ4 and LZ4HC the two chunks must also be
//! byte-identical, for zstd too when every block is under 256 KiB (above, libzstd 1.5.6 in the
//! wheel and 1.5.7 here differ). zlib: C-Blosc 1.21 links stock zlib, we zlib-rs, so only the
//! two decodes are checked. Driver script: `testdata/generators/blosc/live_blosc1.py`.

use std::path::Path;
use std::process::Command;

use blosc_chunk::{CParams, ChunkHeader, Codec, Filter};

use super::{Ctx, Row};

const SECTION: &str = "blosc-chunk";

struct Case {
    name: String,
    codec: Codec,
    clevel: u8,
    typesize: usize,
    filter: Filter,
    blocksize: usize,
    data: Vec<u8>,
}

/// Deterministic data: ramps with xorshift noise of different strengths, and some
/// incompressible cases; sizes not multiples of the typesize.
fn cases() -> Vec<Case> {
    let mut out = Vec::new();
    let mut seed = 0x2545_F491_4F6C_DD1Du64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let mut k = 0usize;
    for codec in [
        Codec::BloscLz,
        Codec::Lz4,
        Codec::Lz4Hc,
        Codec::Zlib,
        Codec::Zstd,
    ] {
        for filter in [Filter::NoFilter, Filter::Shuffle, Filter::BitShuffle] {
            for ts in [1usize, 2, 4, 8, 12] {
                k += 1;
                let n = [3_000usize, 40_000, 150_000][k % 3] + (next() % 1000) as usize;
                let noise = [1u64, 4, 64, 256][k % 4];
                let data: Vec<u8> = (0..n)
                    .map(|i| ((i / ts) as u64 / 3 + next() % noise).to_le_bytes()[0])
                    .collect();
                out.push(Case {
                    name: format!("b{k:03}_{}_{}_ts{ts}", codec.name(), filter.id()),
                    codec,
                    clevel: [1u8, 5, 9, 3][k % 4],
                    typesize: ts,
                    filter,
                    blocksize: [0usize, 0, 2048, 20_000][k % 4],
                    data,
                });
            }
        }
    }
    out
}

fn params(c: &Case) -> CParams {
    let mut cp = CParams::blosc1(c.codec, c.clevel, c.typesize, c.filter);
    cp.blocksize = c.blocksize;
    cp
}

pub(crate) fn live(ctx: &Ctx) -> Row {
    let mut row = Row::new(
        SECTION,
        "--live Blosc1 writer: round trip + byte-exact vs python-blosc 1.11.4 (C-Blosc 1.21)",
    );
    if let Err(why) = run(ctx, &mut row) {
        row.case("python-blosc", Err(why));
    }
    row
}

fn run(ctx: &Ctx, row: &mut Row) -> Result<(), String> {
    let Some(python) = crate::util::python_venv(&["blosc==1.11.4"])? else {
        eprintln!("blosc-chunk --live (Blosc1): python3 unavailable, skipped");
        return Ok(());
    };
    let dir = ctx.root.join("target").join("xtask-blosc1-live");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let cases = cases();
    let mut json = Vec::new();
    for c in &cases {
        let ours = blosc_chunk::compress(&c.data, &params(c)).map_err(|e| e.to_string())?;
        write(&dir.join(format!("{}.raw", c.name)), &c.data)?;
        write(&dir.join(format!("{}.ours", c.name)), &ours)?;
        json.push(serde_json::json!({
            "name": c.name,
            "codec": c.codec.name(),
            "clevel": c.clevel,
            "typesize": c.typesize,
            "shuffle": c.filter.id(),
            "blocksize": c.blocksize,
        }));
    }
    let text = serde_json::to_string(&json).map_err(|e| e.to_string())?;
    write(&dir.join("cases.json"), text.as_bytes())?;
    let script = ctx.root.join("testdata/generators/blosc/live_blosc1.py");
    let status = Command::new(&python)
        .arg(&script)
        .arg(&dir)
        .status()
        .map_err(|e| e.to_string())?;
    if !status.success() {
        return Err(format!("{} failed", script.display()));
    }
    let results: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join("results.json")).map_err(|e| e.to_string())?,
    )
    .map_err(|e| e.to_string())?;
    for c in &cases {
        let ours = std::fs::read(dir.join(format!("{}.ours", c.name))).unwrap_or_default();
        let py = std::fs::read(dir.join(format!("{}.py", c.name))).unwrap_or_default();
        let verdict = match results[&c.name].as_str() {
            Some("ok") => Ok(()),
            Some(e) => Err(e.to_string()),
            None => Err("no result".to_string()),
        };
        row.case(format!("{} ours -> C-Blosc 1.21", c.name), verdict);
        let back = blosc_chunk::decompress(&py).map_err(|e| e.to_string());
        row.case(
            format!("{} C-Blosc 1.21 -> ours", c.name),
            back.and_then(|b| {
                if b == c.data {
                    Ok(())
                } else {
                    Err("different bytes".into())
                }
            }),
        );
        let big_zstd = c.codec == Codec::Zstd
            && ChunkHeader::parse(&py).is_ok_and(|h| h.blocksize() >= 1 << 18);
        if c.codec != Codec::Zlib && !big_zstd {
            row.case(
                format!("{} byte-exact", c.name),
                if py == ours {
                    Ok(())
                } else {
                    Err(format!("ours {} bytes, C {}", ours.len(), py.len()))
                },
            );
        }
    }
    Ok(())
}

fn write(path: &Path, bytes: &[u8]) -> Result<(), String> {
    std::fs::write(path, bytes).map_err(|e| format!("{}: {e}", path.display()))
}
