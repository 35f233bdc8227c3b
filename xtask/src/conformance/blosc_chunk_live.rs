//! blosc-chunk `--live`: random data compressed by us is decompressed by python-blosc2
//! 4.14.1, and the same data compressed by python-blosc2 is decompressed by us; for BloscLZ,
//! LZ4, LZ4HC and zstd the two chunks must also be byte-identical. Driver script:
//! `testdata/generators/blosc/live_roundtrip.py`. Plugin filters and codecs (BYTEDELTA,
//! INT_TRUNC, NDCELL, NDMEAN, NDLZ, ZFP_ACC/PREC/RATE) go through single-chunk b2nd arrays
//! with the same block shape on python's side: `live_roundtrip_plugins.py`.

use std::path::Path;
use std::process::Command;

use blosc_chunk::{BlockShape, CParams, Codec, DParams, Filter, SplitMode};

use super::{Ctx, Row};

const SECTION: &str = "blosc-chunk";

struct Case {
    name: String,
    codec: Codec,
    clevel: u8,
    typesize: usize,
    filter: Filter,
    split: &'static str,
    use_dict: bool,
    data: Vec<u8>,
}

/// Deterministic test data: ramps with noise at different strengths (xorshift noise).
fn cases() -> Vec<Case> {
    let mut out = Vec::new();
    let mut seed = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let codecs = [
        Codec::BloscLz,
        Codec::Lz4,
        Codec::Lz4Hc,
        Codec::Zlib,
        Codec::Zstd,
    ];
    let filters = [
        Filter::NoFilter,
        Filter::Shuffle,
        Filter::BitShuffle,
        Filter::Delta,
    ];
    let mut k = 0usize;
    for &codec in &codecs {
        for &filter in &filters {
            for &ts in &[1usize, 2, 4, 8] {
                k += 1;
                let n = 20_000 + (next() % 50_000) as usize;
                let noise = 1 + next() % 64;
                let data: Vec<u8> = (0..n)
                    .map(|i| ((i / ts) as u64 / 3 + next() % noise).to_le_bytes()[0])
                    .collect();
                let clevel = [1u8, 5, 9][k % 3];
                let split = ["auto", "always", "never"][k % 3];
                out.push(Case {
                    name: format!("c{k:03}_{}_{}_ts{ts}", codec.id(), filter.id()),
                    codec,
                    clevel,
                    typesize: ts,
                    filter,
                    split,
                    use_dict: false,
                    data,
                });
            }
        }
    }
    // Dictionary chunks: one or many blocks, split or not, with and without a filter; noise
    // low enough for most to compress, high enough for some to fall back to memcpy.
    for &codec in &[Codec::Zstd, Codec::Lz4, Codec::Lz4Hc] {
        for &filter in &[Filter::NoFilter, Filter::Shuffle] {
            for &(ts, n) in &[
                (1usize, 4_000usize),
                (1, 60_000),
                (4, 300_000),
                (8, 1_000_000),
            ] {
                k += 1;
                let noise = 1 + next() % [4, 16, 256][k % 3];
                let data: Vec<u8> = (0..n)
                    .map(|i| ((i / ts) as u64 / 5 + next() % noise).to_le_bytes()[0])
                    .collect();
                out.push(Case {
                    name: format!("d{k:03}_{}_{}_ts{ts}", codec.id(), filter.id()),
                    codec,
                    clevel: [3u8, 5, 9][k % 3],
                    typesize: ts,
                    filter,
                    split: ["auto", "always", "never"][k % 3],
                    use_dict: true,
                    data,
                });
            }
        }
    }
    out
}

fn params(c: &Case) -> CParams {
    let mut cp = CParams::new(c.codec, c.clevel, c.typesize, c.filter);
    cp.splitmode = match c.split {
        "always" => SplitMode::Always,
        "never" => SplitMode::Never,
        _ => SplitMode::Auto,
    };
    cp.use_dict = c.use_dict;
    cp
}

pub(crate) fn live(ctx: &Ctx) -> Row {
    let mut row = Row::new(
        SECTION,
        "--live round trip + byte-exact vs python-blosc2 4.14.1",
    );
    if let Err(why) = run(ctx, &mut row) {
        row.case("python-blosc2", Err(why));
    }
    row
}

fn run(ctx: &Ctx, row: &mut Row) -> Result<(), String> {
    let Some(python) = crate::util::python_venv(&["blosc2==4.14.1"])? else {
        eprintln!("blosc-chunk --live: python3 unavailable, skipped");
        return Ok(());
    };
    let dir = ctx.root.join("target").join("xtask-blosc-chunk-live");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let cases = cases();
    let mut json = String::from("[");
    for (i, c) in cases.iter().enumerate() {
        let ours = blosc_chunk::compress(&c.data, &params(c)).map_err(|e| e.to_string())?;
        write(&dir.join(format!("{}.raw", c.name)), &c.data)?;
        write(&dir.join(format!("{}.ours", c.name)), &ours)?;
        if i > 0 {
            json.push(',');
        }
        json.push_str(&format!(
            "{{\"name\":\"{}\",\"codec\":{},\"clevel\":{},\"typesize\":{},\"filter\":{},\"splitmode\":\"{}\",\"use_dict\":{}}}",
            c.name,
            c.codec.id(),
            c.clevel,
            c.typesize,
            c.filter.id(),
            c.split,
            c.use_dict
        ));
    }
    json.push(']');
    write(&dir.join("cases.json"), json.as_bytes())?;
    let script = ctx.root.join("testdata/generators/blosc/live_roundtrip.py");
    let status = Command::new(&python)
        .arg(&script)
        .arg(&dir)
        .status()
        .map_err(|e| e.to_string())?;
    if !status.success() {
        return Err(format!("{} failed", script.display()));
    }
    let results = std::fs::read_to_string(dir.join("results.json")).map_err(|e| e.to_string())?;
    for c in &cases {
        let ours = std::fs::read(dir.join(format!("{}.ours", c.name))).unwrap_or_default();
        let py = std::fs::read(dir.join(format!("{}.py", c.name))).unwrap_or_default();
        let verdict = if results.contains(&format!("\"{}\": \"ok\"", c.name)) {
            Ok(())
        } else {
            Err("python could not decode our chunk".to_string())
        };
        row.case(format!("{} ours -> python", c.name), verdict);
        // C-Blosc2 3.3.5 leaves the trailing `nbytes % typesize` bytes of the DELTA output
        // unwritten (stale buffer bytes end up in the chunk): those bytes cannot
        // round-trip through C's chunk, and its bytes cannot be matched without copying that
        // data loss. blosc-chunk passes them through (python decodes our chunk exactly).
        let c_delta_bug = c.filter == Filter::Delta && c.data.len() % c.typesize != 0;
        let keep = if c_delta_bug {
            c.data.len() - c.data.len() % c.typesize
        } else {
            c.data.len()
        };
        let back = blosc_chunk::decompress(&py).map_err(|e| e.to_string());
        row.case(
            format!("{} python -> ours", c.name),
            back.and_then(|b| {
                if b.len() == c.data.len() && b[..keep] == c.data[..keep] {
                    Ok(())
                } else {
                    Err("different bytes".into())
                }
            }),
        );
        // C-Blosc2 3.3.5 marks a dictionary chunk that falls back to memcpy with USEDICT, and
        // then cannot decode it itself; blosc-chunk writes it without the flag (python decodes
        // ours, checked above), so only those chunks' headers differ.
        let c_dict_memcpy_bug = c.use_dict && py.get(2).is_some_and(|f| f & 0x02 != 0);
        if c.codec != Codec::Zlib && !c_delta_bug && !c_dict_memcpy_bug {
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
    run_plugins(&python, ctx, row)
}

fn write(path: &Path, bytes: &[u8]) -> Result<(), String> {
    std::fs::write(path, bytes).map_err(|e| format!("{}: {e}", path.display()))
}

/// A plugin case: a single-chunk b2nd array of `shape` whose blocks span every dimension but
/// the first (`blocks[0]` divides `shape[0]`), so the chunk's block-major bytes are the array
/// in C order and both sides compress the same bytes.
struct PluginCase {
    name: String,
    dtype: &'static str,
    itemsize: usize,
    shape: Vec<u64>,
    blocks: Vec<u64>,
    codec: Codec,
    codec_meta: u8,
    clevel: u8,
    filters: Vec<(Filter, u8)>,
    /// Lossy (INT_TRUNC, NDMEAN, ZFP): compare with what python-blosc2 decodes from its own
    /// chunk instead of the input.
    lossy: bool,
    data: Vec<u8>,
}

/// Smooth values with noise for `dtype`, C order, little-endian.
#[allow(
    clippy::cast_possible_truncation,
    clippy::cast_possible_wrap,
    reason = "test values: wrapping and truncation are fine"
)]
fn plugin_data(dtype: &str, n: usize, next: &mut impl FnMut() -> u64) -> Vec<u8> {
    let mut out = Vec::with_capacity(n * 8);
    for i in 0..n {
        let noise = (next() % 1000) as f64 / 1000.0;
        let v = (i as f64 / 23.0).sin() * 100.0 + (i as f64 / 301.0).cos() * 7.0 + noise * 0.05;
        match dtype {
            "<f4" => out.extend_from_slice(&(v as f32).to_le_bytes()),
            "<f8" => out.extend_from_slice(&v.to_le_bytes()),
            "<i4" => out.extend_from_slice(&((v * 1000.0) as i32 + i as i32).to_le_bytes()),
            "<i2" => out.extend_from_slice(&((v * 100.0) as i16).to_le_bytes()),
            "|u1" => out.push((((i / 4) % 7) * 20 + (next() % 3) as usize) as u8),
            _ => unreachable!("{dtype}"),
        }
    }
    out
}

#[allow(
    clippy::cast_possible_truncation,
    reason = "the case shapes are a few thousand items"
)]
fn plugin_cases() -> Vec<PluginCase> {
    let mut seed = 0x2545_F491_4F6C_DD1Du64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    // (name, dtype, shape, blocks, codec, codec_meta, filters, lossy)
    type Spec = (
        &'static str,
        &'static str,
        &'static [u64],
        &'static [u64],
        Codec,
        u8,
        &'static [(Filter, u8)],
        bool,
    );
    let specs: &[Spec] = &[
        (
            "bytedelta_shuffle_f4_zstd",
            "<f4",
            &[64, 50],
            &[16, 50],
            Codec::Zstd,
            0,
            &[(Filter::Shuffle, 0), (Filter::ByteDelta, 4)],
            false,
        ),
        (
            "bytedelta_shuffle_f4_lz4",
            "<f4",
            &[6000],
            &[1500],
            Codec::Lz4,
            0,
            &[(Filter::Shuffle, 0), (Filter::ByteDelta, 4)],
            false,
        ),
        (
            "bytedelta_shuffle_f8_blosclz",
            "<f8",
            &[12, 10, 30],
            &[4, 10, 30],
            Codec::BloscLz,
            0,
            &[(Filter::Shuffle, 0), (Filter::ByteDelta, 8)],
            false,
        ),
        (
            "bytedelta_shuffle_i2_zstd",
            "<i2",
            &[4000],
            &[1000],
            Codec::Zstd,
            0,
            &[(Filter::Shuffle, 0), (Filter::ByteDelta, 2)],
            false,
        ),
        (
            "bytedelta_shuffle_i4_meta3",
            "<i4",
            &[30, 40],
            &[10, 40],
            Codec::Lz4,
            0,
            &[(Filter::Shuffle, 0), (Filter::ByteDelta, 3)],
            false,
        ),
        (
            "int_trunc_i4_keep20",
            "<i4",
            &[40, 50],
            &[8, 50],
            Codec::Lz4,
            0,
            &[(Filter::IntTrunc, 20), (Filter::Shuffle, 0)],
            true,
        ),
        (
            "int_trunc_i2_minus5",
            "<i2",
            &[3000],
            &[600],
            Codec::Zstd,
            0,
            // INT_TRUNC meta -5 (int8; zero the 5 low bits).
            &[(Filter::IntTrunc, 251)],
            true,
        ),
        (
            "ndcell_f4_meta4_2d",
            "<f4",
            &[32, 48],
            &[16, 48],
            Codec::Lz4,
            0,
            &[(Filter::NdCell, 4), (Filter::Shuffle, 0)],
            false,
        ),
        (
            "ndcell_i2_meta3_3d",
            "<i2",
            &[12, 10, 11],
            &[6, 10, 11],
            Codec::Zstd,
            0,
            &[(Filter::NdCell, 3)],
            false,
        ),
        (
            "ndcell_u1_meta2_1d",
            "|u1",
            &[1200],
            &[300],
            Codec::Zstd,
            0,
            &[(Filter::NdCell, 2)],
            false,
        ),
        (
            "ndmean_f4_meta4_2d",
            "<f4",
            &[32, 45],
            &[8, 45],
            Codec::Lz4,
            0,
            &[(Filter::NdMean, 4)],
            true,
        ),
        (
            "ndmean_f8_meta3_3d",
            "<f8",
            &[12, 10, 11],
            &[6, 10, 11],
            Codec::Zstd,
            0,
            &[(Filter::NdMean, 3), (Filter::Shuffle, 0)],
            true,
        ),
        (
            "ndlz4_u1_2d",
            "|u1",
            &[128, 64],
            &[32, 64],
            Codec::NdLz,
            4,
            &[],
            false,
        ),
        (
            "ndlz8_u1_2d",
            "|u1",
            &[96, 80],
            &[48, 80],
            Codec::NdLz,
            8,
            &[],
            false,
        ),
        (
            "zfp_acc_f4_m3_2d",
            "<f4",
            &[64, 40],
            &[16, 40],
            Codec::ZfpAcc,
            (-3i8).cast_unsigned(),
            &[],
            true,
        ),
        (
            "zfp_acc_f8_m6_3d",
            "<f8",
            &[12, 10, 11],
            &[6, 10, 11],
            Codec::ZfpAcc,
            (-6i8).cast_unsigned(),
            &[],
            true,
        ),
        (
            "zfp_acc_f8_p1_1d",
            "<f8",
            &[2000],
            &[400],
            Codec::ZfpAcc,
            1,
            &[],
            true,
        ),
        (
            "zfp_prec_f4_10_1d",
            "<f4",
            &[2000],
            &[500],
            Codec::ZfpPrec,
            10,
            &[],
            true,
        ),
        (
            "zfp_prec_f8_20_2d",
            "<f8",
            &[30, 45],
            &[10, 45],
            Codec::ZfpPrec,
            20,
            &[],
            true,
        ),
        (
            "zfp_prec_f4_12_3d",
            "<f4",
            &[16, 12, 12],
            &[8, 12, 12],
            Codec::ZfpPrec,
            12,
            &[],
            true,
        ),
        (
            "zfp_rate_f4_50_2d",
            "<f4",
            &[32, 45],
            &[16, 45],
            Codec::ZfpRate,
            50,
            &[],
            true,
        ),
        (
            "zfp_rate_f8_25_3d",
            "<f8",
            &[12, 8, 8],
            &[4, 8, 8],
            Codec::ZfpRate,
            25,
            &[],
            true,
        ),
        (
            "zfp_rate_f8_40_4d",
            "<f8",
            &[8, 4, 5, 6],
            &[4, 4, 5, 6],
            Codec::ZfpRate,
            40,
            &[],
            true,
        ),
    ];
    specs
        .iter()
        .enumerate()
        .map(
            |(k, &(name, dtype, shape, blocks, codec, codec_meta, filters, lossy))| {
                let itemsize = match dtype {
                    "<f8" => 8,
                    "<f4" | "<i4" => 4,
                    "<i2" => 2,
                    _ => 1,
                };
                let n = shape.iter().product::<u64>() as usize;
                PluginCase {
                    name: format!("p{k:03}_{name}"),
                    dtype,
                    itemsize,
                    shape: shape.to_vec(),
                    blocks: blocks.to_vec(),
                    codec,
                    codec_meta,
                    clevel: [5u8, 3, 9][k % 3],
                    filters: filters.to_vec(),
                    lossy,
                    data: plugin_data(dtype, n, &mut next),
                }
            },
        )
        .collect()
}

#[allow(
    clippy::cast_possible_truncation,
    reason = "the case blocks are a few thousand items"
)]
fn plugin_params(c: &PluginCase) -> Result<CParams, String> {
    let mut cp = CParams::new(c.codec, c.clevel, c.itemsize, Filter::NoFilter);
    for (slot, &(f, m)) in c.filters.iter().enumerate() {
        cp.filters[slot] = f;
        cp.filters_meta[slot] = m;
    }
    cp.codec_meta = c.codec_meta;
    cp.blocksize = c.blocks.iter().product::<u64>() as usize * c.itemsize;
    cp.blockshape = Some(BlockShape::new(&c.blocks).map_err(|e| e.to_string())?);
    Ok(cp)
}

fn list(xs: &[u64]) -> String {
    let v: Vec<String> = xs.iter().map(u64::to_string).collect();
    format!("[{}]", v.join(","))
}

/// Plugin round trips: our chunk decoded by python-blosc2 (through a b2nd array with the same
/// block shape), python-blosc2's chunk decoded by us, and the two chunks byte-identical.
fn run_plugins(python: &Path, ctx: &Ctx, row: &mut Row) -> Result<(), String> {
    let dir = ctx
        .root
        .join("target")
        .join("xtask-blosc-chunk-live-plugins");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let cases = plugin_cases();
    let mut json = String::from("[");
    for (i, c) in cases.iter().enumerate() {
        let ours = blosc_chunk::compress(&c.data, &plugin_params(c)?)
            .map_err(|e| format!("{}: {e}", c.name))?;
        write(&dir.join(format!("{}.raw", c.name)), &c.data)?;
        write(&dir.join(format!("{}.ours", c.name)), &ours)?;
        if i > 0 {
            json.push(',');
        }
        let fl: Vec<u64> = c.filters.iter().map(|f| u64::from(f.0.id())).collect();
        let fm: Vec<u64> = c.filters.iter().map(|f| u64::from(f.1)).collect();
        json.push_str(&format!(
            "{{\"name\":\"{}\",\"dtype\":\"{}\",\"shape\":{},\"blocks\":{},\"codec\":{},\"codec_meta\":{},\"clevel\":{},\"typesize\":{},\"filters\":{},\"filters_meta\":{},\"lossy\":{}}}",
            c.name,
            c.dtype,
            list(&c.shape),
            list(&c.blocks),
            c.codec.id(),
            c.codec_meta,
            c.clevel,
            c.itemsize,
            list(&fl),
            list(&fm),
            c.lossy
        ));
    }
    json.push(']');
    write(&dir.join("cases.json"), json.as_bytes())?;
    let script = ctx
        .root
        .join("testdata/generators/blosc/live_roundtrip_plugins.py");
    let status = Command::new(python)
        .arg(&script)
        .arg(&dir)
        .status()
        .map_err(|e| e.to_string())?;
    if !status.success() {
        return Err(format!("{} failed", script.display()));
    }
    let results = std::fs::read_to_string(dir.join("results.json")).map_err(|e| e.to_string())?;
    for c in &cases {
        let ours = std::fs::read(dir.join(format!("{}.ours", c.name))).unwrap_or_default();
        let py = std::fs::read(dir.join(format!("{}.py", c.name))).unwrap_or_default();
        // What python-blosc2 decodes from its own chunk (the input when lossless).
        let pydec = std::fs::read(dir.join(format!("{}.pydec", c.name))).unwrap_or_default();
        let verdict = match results.find(&format!("\"{}\": \"", c.name)) {
            Some(at) if results[at..].starts_with(&format!("\"{}\": \"ok\"", c.name)) => Ok(()),
            Some(at) => Err(results[at..].chars().take(200).collect()),
            None => Err("no result from python".to_string()),
        };
        row.case(format!("{} ours -> python", c.name), verdict);
        let mut dp = DParams::default();
        dp.blockshape = Some(BlockShape::new(&c.blocks).map_err(|e| e.to_string())?);
        let back = blosc_chunk::decompress_ctx(&py, &dp).map_err(|e| e.to_string());
        let want: &[u8] = if c.lossy { &pydec } else { &c.data };
        row.case(
            format!("{} python -> ours", c.name),
            back.and_then(|b| {
                if !want.is_empty() && b == want {
                    Ok(())
                } else {
                    Err("different bytes".into())
                }
            }),
        );
        row.case(
            format!("{} byte-exact", c.name),
            if py == ours {
                Ok(())
            } else {
                Err(format!("ours {} bytes, C {}", ours.len(), py.len()))
            },
        );
    }
    Ok(())
}
