//! offset-codec: the reference-made fixtures of `testdata/offset/` checked without any Zarr
//! implementation (configuration round-trips, TIFF and N5 header helpers byte for byte,
//! uncompressed chunks element by element, headers/trailers of compressed chunks, the z5py
//! truncated N5 blocks recognised), and with `--live` an array written by zarrs with our codec
//! read back by zarr-python 3.1.6 with the reference Python codec
//! (`testdata/generators/offset/`).

use std::path::Path;
use std::process::Command;

use offset_codec::{
    CodecConfiguration, Error, Location, N5ZarrJson, OffsetCodec, OffsetConfiguration,
    PadConfiguration, TiffCompression, TiffSampleType, check_padded_block, n5_default_header,
    tiff_prefix,
};
use serde_json::Value;

use super::{Ctx, Row};

const SECTION: &str = "offset";

const KEYS: [&str; 6] = ["0/0", "0/1", "1/0", "1/1", "2/0", "2/1"];

pub(crate) fn rows(ctx: &Ctx) -> Vec<Row> {
    let mut rows = vec![
        config_round_trips(ctx),
        tiff(ctx),
        offset0(ctx),
        headers_and_trailers(ctx),
        n5_blocks(ctx),
        n5_overlays(ctx),
    ];
    if ctx.live {
        rows.push(live(ctx));
    }
    rows
}

fn read(ctx: &Ctx, rel: &str) -> Result<Vec<u8>, String> {
    std::fs::read(ctx.testdata(&format!("offset/{rel}"))).map_err(|e| format!("{rel}: {e}"))
}

fn read_json(ctx: &Ctx, rel: &str) -> Result<Value, String> {
    serde_json::from_slice(&read(ctx, rel)?).map_err(|e| format!("{rel}: {e}"))
}

fn expected(i0: usize, i1: usize) -> u16 {
    u16::try_from((i0 << 8) | i1).unwrap_or(u16::MAX)
}

/// Every `offset` / `pad` entry of the 10 `zarr.json` files parses and serialises back exactly.
fn config_round_trips(ctx: &Ctx) -> Row {
    let mut row = Row::new(SECTION, "zarr.json codec entries round-trip exactly");
    let files = [
        "zarr/tiff_u16_le.zarr/zarr.json",
        "zarr/gzip_custom_header.zarr/zarr.json",
        "zarr/zstd_zero_prefix.zarr/zarr.json",
        "zarr/offset0_empty_prefix.zarr/zarr.json",
        "zarr/n5_via_offset_zstd.n5/zarr.json",
        "zarr/pad_start_gzip.zarr/zarr.json",
        "zarr/pad_end_zero.zarr/zarr.json",
        "n5/tensorstore_zstd.n5/data/zarr.json",
        "n5/zarr2_gzip.n5/data/zarr.json",
        "n5/z5py_gzip.n5/data/zarr.json",
    ];
    for f in files {
        row.case(
            f,
            (|| {
                let doc = read_json(ctx, f)?;
                let codecs = doc["codecs"].as_array().ok_or("no codecs")?;
                let entry = codecs
                    .iter()
                    .find(|c| c["name"] == "offset" || c["name"] == "pad")
                    .ok_or("no offset/pad entry")?;
                let parsed = CodecConfiguration::from_json(entry).map_err(|e| e.to_string())?;
                if &parsed.to_json() == entry {
                    Ok(())
                } else {
                    Err(format!("serialised as {}", parsed.to_json()))
                }
            })(),
        );
    }
    row
}

/// The TIFF chunk: our 110-byte prefix is its first 110 bytes and the zarr.json prefix, and the
/// 65536 little-endian values after it follow the formula.
fn tiff(ctx: &Ctx) -> Row {
    let mut row = Row::new(SECTION, "tiff_prefix = proposal bytes; TIFF chunk values");
    let result = (|| -> Result<(Vec<u8>, Vec<u8>, Value), String> {
        let ours = tiff_prefix(
            256,
            256,
            TiffSampleType::U16,
            TiffCompression::None,
            131_072,
        )
        .map_err(|e| e.to_string())?;
        Ok((
            ours,
            read(ctx, "zarr/tiff_u16_le.zarr/c/0/0")?,
            read_json(ctx, "zarr/tiff_u16_le.zarr/zarr.json")?,
        ))
    })();
    let (ours, chunk, doc) = match result {
        Ok(v) => v,
        Err(e) => {
            row.case("inputs", Err(e));
            return row;
        }
    };
    row.check("prefix length 110", ours.len() == 110);
    row.check(
        "chunk starts with our prefix",
        chunk.get(..110) == Some(&ours[..]),
    );
    let cfg = OffsetConfiguration::from_json(&doc["codecs"][1]["configuration"]);
    row.check(
        "zarr.json prefix decodes to our prefix",
        cfg.as_ref()
            .ok()
            .and_then(OffsetConfiguration::prefix_bytes)
            == Some(&ours[..]),
    );
    let payload = OffsetCodec::new(OffsetConfiguration::from_prefix(&ours))
        .and_then(|c| c.with_strict(true).decode(&chunk).map(<[u8]>::to_vec));
    match payload {
        Ok(p) => {
            let bad = p
                .chunks_exact(2)
                .enumerate()
                .filter(|(k, b)| u16::from_le_bytes([b[0], b[1]]) != expected(k / 256, k % 256))
                .count();
            row.case(
                "65536 values",
                if p.len() == 131_072 && bad == 0 {
                    Ok(())
                } else {
                    Err(format!("{bad} wrong"))
                },
            );
        }
        Err(e) => row.case("decode", Err(e.to_string())),
    }
    row
}

/// `offset0_empty_prefix.zarr`: raw 4x4 little-endian chunks of a 10x7 array; decode and
/// re-encode byte-exactly, values by the formula (0 outside the array).
fn offset0(ctx: &Ctx) -> Row {
    let mut row = Row::new(SECTION, "offset 0 / empty prefix chunks byte-exact");
    let codec =
        match OffsetConfiguration::from_json(&serde_json::json!({"offset": 0, "prefix": ""}))
            .and_then(OffsetCodec::new)
        {
            Ok(c) => c,
            Err(e) => {
                row.case("codec", Err(e.to_string()));
                return row;
            }
        };
    for key in KEYS {
        row.case(
            key,
            (|| {
                let chunk = read(ctx, &format!("zarr/offset0_empty_prefix.zarr/c/{key}"))?;
                let payload = codec.decode(&chunk).map_err(|e| e.to_string())?;
                let (c0, c1) = key.split_once('/').ok_or("key")?;
                let c0: usize = c0.parse().map_err(|_| "key")?;
                let c1: usize = c1.parse().map_err(|_| "key")?;
                for (k, b) in payload.chunks_exact(2).enumerate() {
                    let (i0, i1) = (c0 * 4 + k / 4, c1 * 4 + k % 4);
                    let want = if i0 < 10 && i1 < 7 {
                        expected(i0, i1)
                    } else {
                        0
                    };
                    if u16::from_le_bytes([b[0], b[1]]) != want {
                        return Err(format!("[{i0},{i1}]"));
                    }
                }
                let again = codec.encode(payload).map_err(|e| e.to_string())?;
                if payload.len() == 32 && again == chunk {
                    Ok(())
                } else {
                    Err("re-encode differs".into())
                }
            })(),
        );
    }
    row
}

/// Compressed stores: strict decoding succeeds (headers/trailers exactly as configured), the
/// payload starts with the compressor's magic, re-encoding gives the stored bytes.
fn headers_and_trailers(ctx: &Ctx) -> Row {
    let mut row = Row::new(SECTION, "headers/trailers of compressed chunks (strict)");
    const GZIP: &[u8] = &[0x1f, 0x8b];
    const ZSTD: &[u8] = &[0x28, 0xb5, 0x2f, 0xfd];
    let n5 = n5_default_header(&[64, 64]).unwrap_or_default();
    let stores: [(&str, Result<OffsetCodec, Error>, &[u8]); 5] = [
        (
            "zarr/gzip_custom_header.zarr/c",
            OffsetCodec::new(OffsetConfiguration::from_prefix(b"MY_CUSTOM_HEADER")),
            GZIP,
        ),
        (
            "zarr/zstd_zero_prefix.zarr/c",
            OffsetCodec::offset_zeros(8),
            ZSTD,
        ),
        (
            "zarr/n5_via_offset_zstd.n5",
            OffsetCodec::new(OffsetConfiguration::from_prefix(&n5)),
            ZSTD,
        ),
        (
            "zarr/pad_start_gzip.zarr/c",
            OffsetCodec::new(PadConfiguration::from_padding(
                Location::Start,
                b"MY_CUSTOM_HEADER",
            )),
            GZIP,
        ),
        (
            "zarr/pad_end_zero.zarr/c",
            OffsetCodec::pad_zeros(Location::End, 4),
            GZIP,
        ),
    ];
    for (dir, codec, magic) in stores {
        let codec = match codec {
            Ok(c) => c.with_strict(true),
            Err(e) => {
                row.case(dir, Err(e.to_string()));
                continue;
            }
        };
        for key in KEYS {
            row.case(
                format!("{dir}/{key}"),
                (|| {
                    let chunk = read(ctx, &format!("{dir}/{key}"))?;
                    let payload = codec.decode(&chunk).map_err(|e| e.to_string())?;
                    if !payload.starts_with(magic) {
                        return Err("payload is not the expected compressed stream".into());
                    }
                    if codec.encode(payload).map_err(|e| e.to_string())? != chunk {
                        return Err("re-encode differs".into());
                    }
                    Ok(())
                })(),
            );
        }
    }
    row
}

/// Real N5 datasets: padded blocks carry the static 64x64 header; z5py's edge blocks are
/// recognised as truncated with the dims of the MANIFEST.
fn n5_blocks(ctx: &Ctx) -> Row {
    let mut row = Row::new(SECTION, "N5 block headers (padded vs z5py truncated)");
    for ds in ["n5/tensorstore_zstd.n5/data", "n5/zarr2_gzip.n5/data"] {
        for key in KEYS {
            row.case(
                format!("{ds}/{key}"),
                (|| {
                    let block = read(ctx, &format!("{ds}/{key}"))?;
                    check_padded_block(&block, &[64, 64])
                        .map(drop)
                        .map_err(|e| e.to_string())
                })(),
            );
        }
    }
    let z5: [(&str, Option<[u32; 2]>); 6] = [
        ("0/0", None),
        ("1/0", None),
        ("0/1", Some([64, 6])),
        ("1/1", Some([64, 6])),
        ("2/0", Some([2, 64])),
        ("2/1", Some([2, 6])),
    ];
    for (key, truncated) in z5 {
        row.case(
            format!("n5/z5py_gzip.n5/data/{key}"),
            (|| {
                let block = read(ctx, &format!("n5/z5py_gzip.n5/data/{key}"))?;
                match (check_padded_block(&block, &[64, 64]), truncated) {
                    (Ok(_), None) => Ok(()),
                    (Err(Error::N5TruncatedBlock { header, .. }), Some(dims)) if header == dims => {
                        Ok(())
                    }
                    (other, _) => Err(format!("unexpected {other:?}")),
                }
            })(),
        );
    }
    row
}

/// `N5ZarrJson` reproduces the three overlays (with the `transpose` the proposal lacks).
fn n5_overlays(ctx: &Ctx) -> Row {
    let mut row = Row::new(SECTION, "N5 zarr.json builder = fixture overlays");
    let cases = [
        (
            "n5/tensorstore_zstd.n5/data/zarr.json",
            serde_json::json!({"name": "zstd", "configuration": {"level": 3, "checksum": false}}),
        ),
        (
            "n5/zarr2_gzip.n5/data/zarr.json",
            serde_json::json!({"name": "gzip", "configuration": {"level": 5}}),
        ),
        (
            "n5/z5py_gzip.n5/data/zarr.json",
            serde_json::json!({"name": "gzip", "configuration": {"level": 5}}),
        ),
    ];
    for (path, compressor) in cases {
        row.case(
            path,
            (|| {
                let built = N5ZarrJson {
                    dimensions: vec![130, 70],
                    block_size: vec![64, 64],
                    data_type: "uint16".into(),
                    compressor: Some(compressor),
                }
                .to_json()
                .map_err(|e| e.to_string())?;
                if built == read_json(ctx, path)? {
                    Ok(())
                } else {
                    Err("differs".into())
                }
            })(),
        );
    }
    row
}

/// `--live`: zarrs writes five arrays with our codec (`write_zarr` example), zarr-python 3.1.6
/// reads them with the reference Python codec and checks every element.
fn live(ctx: &Ctx) -> Row {
    let mut row = Row::new(
        SECTION,
        "--live zarrs-written arrays read by zarr-python 3.1.6",
    );
    if let Err(e) = live_cases(ctx, &mut row) {
        row.case("setup", Err(e));
    }
    row
}

fn live_cases(ctx: &Ctx, row: &mut Row) -> Result<(), String> {
    let Some(python) = crate::util::python_venv(&["zarr==3.1.6", "numcodecs==0.16.6"])? else {
        eprintln!("offset --live: python3 unavailable, skipped");
        return Ok(());
    };
    let dir = ctx.root.join("target").join("xtask-offset-live");
    if dir.exists() {
        std::fs::remove_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    // The example `write_zarr` of offset-codec, built with the workspace's binaries and
    // examples (the build `cargo test --workspace` made: no dependency compiled again).
    let write_zarr = crate::util::build_workspace_bins()?
        .join("examples")
        .join("write_zarr");
    crate::util::exec(Command::new(write_zarr).arg(&dir))?;
    let script: &Path = &ctx.root.join("testdata/generators/offset/read_back.py");
    let out = Command::new(&python)
        .arg(script)
        .arg(&dir)
        .output()
        .map_err(|e| format!("cannot run {}: {e}", python.display()))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let mut lines = 0;
    for line in stdout.lines() {
        let (store, verdict) = line.split_once(' ').unwrap_or((line, ""));
        row.case(
            store,
            if verdict == "OK" {
                Ok(())
            } else {
                Err(verdict.to_string())
            },
        );
        lines += 1;
    }
    if lines != 5 {
        row.case(
            "read_back.py",
            Err(format!(
                "{lines} result lines; stderr: {}",
                String::from_utf8_lossy(&out.stderr)
            )),
        );
    }
    Ok(())
}
