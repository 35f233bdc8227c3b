//! `cargo xtask read-bench [--size N] [--reps N] [--regions N] [--data DIR] [--wheel PATH]
//! [--scifmt PATH] [--latency-ms MS] [--skip-s3]`:
//! reading cubic regions of a WKW layer as "virtual Zarr" (the WKW blocks read in place as
//! Zarr v3 chunks, through references) against reading its converted copy (Zarr3, zstd
//! shards) and against reading the WKW directly, side by side in one run (a benchmark: nothing
//! here is a timed test).
//!
//! **Data.** The `uint8` layer of `cargo xtask convert-bench` at `--size` N (default 1024):
//! a webKNOSSOS dataset of one layer `color`, one mag `1`, N³ voxels in one LZ4 WKW file of
//! 32³ blocks (smooth waves plus noise; `testdata/generators/wkw-zarr/bench_source.py`), at
//! `<data>/src/uint8`, and its conversion by `scifmt convert SRC DST --to zarr3` (one shard of
//! N³, inner chunks 32³, zstd level 5 with checksum) at `<data>/out/ours/uint8`. `<data>` is
//! `target/convert-bench/<N>` (convert-bench's cache: made here when absent, with convert-bench's
//! generator venv) or `--data DIR`, which is only read (never written: both must exist there).
//! Made fresh in `target/read-bench/<N>/` on every run (cheap: headers only): the kerchunk
//! references (`scifmt virtualize SRC refs.json --to kerchunk`) and a local Icechunk repository
//! of the same references (`read_bench.py icechunk`: `scifmt.virtual.WKWParser` + VirtualiZarr's
//! `.vz.to_icechunk`, as docs/wkw-virtual-zarr.md shows).
//!
//! **Regions.** `--regions` R (default 8) origins drawn once from a fixed seed, the same for
//! every contender: the first half aligned to the 32³ blocks (each coordinate a multiple of
//! 32: 8³ whole chunks per 256³ region), the rest unaligned (no coordinate a multiple of 32:
//! 9³ chunks touched). The side is 256 voxels (16 MiB of uint8), or N / 2 when N < 512.
//!
//! **Contenders**, each reading every region from an already open array (opening, metadata
//! and page cache warmed by an untimed first pass; the timed figure is one region read into
//! memory, C order `(c, x, y, z)`):
//!
//! * Python (`xtask/src/read_bench.py`, in the venv `target/read-bench-venv` with zarr-python,
//!   VirtualiZarr, Icechunk, obstore and xarray at the pins of `cargo xtask python`'s list,
//!   fsspec 2026.9.0, and the scifmt wheel installed `--no-deps`: the `lz4-block` codec comes
//!   from its entry points): `scifmt.wkw` direct (`Dataset.read(…, order="C")`), zarr-python
//!   over the converted Zarr3 (`LocalStore`), over the Icechunk repository (read-only session
//!   store), and over the kerchunk JSON (fsspec `ReferenceFileSystem` + `FsspecStore`);
//!   zarr-python at its default configuration.
//! * Rust (wkw-zarr's `examples/read_bench.rs`, release build): the `wkw` crate direct, zarrs
//!   over the kerchunk JSON (`scifmt_io::ReferenceStore`, the `lz4-block` zarrs plug-in), zarrs
//!   over the Icechunk repository (`zarrs_icechunk`), zarrs over the converted Zarr3
//!   (`FilesystemStore`, sharding + zstd), zarrs' default options.
//! * S3 (unless `--skip-s3`; Rust, the same example): `s3-testserver --latency-ms MS` (default
//!   20) serving `<data>/src`, the references made by `scifmt virtualize s3://…/src/uint8
//!   refs-s3.json` (chunks are `s3://` byte ranges), then zarrs over those references against
//!   the `wkw` crate reading the `s3://` mag directly (`BlockingRemoteDataset`), same regions.
//!
//! **Order.** Each process (Python, Rust, Rust on S3) runs `--reps` timed passes (default 5)
//! over all regions; for each region its contenders run in rotated order (A B C, B C A, …, the
//! rotation advancing with region and repetition). The processes run one after the other.
//!
//! **Checked** (a difference fails the task): in the untimed pass each contender's region is
//! compared with the direct WKW read of the same process (`scifmt.wkw`, the `wkw` crate), and
//! every timed read's CRC-32 with the direct read's, which must also agree across the
//! processes.
//!
//! **Printed**: one Markdown table of the medians over all timed reads (aligned and unaligned
//! regions separately and together, milliseconds, and MB/s), then the ratios of medians against
//! the targets: zarr-python through the virtual references (Icechunk; the kerchunk JSON
//! as a second row) at least as fast as through the converted Zarr3 (≥ 1.0×) and within 1.5×
//! of `scifmt.wkw` direct; zarrs over the references ≥ 1.0× zarrs over the Zarr3; on S3, zarrs
//! over the references within 1.2× of the direct remote WKW read. Sizes other than 1024 print
//! the verdicts as indicative only. Needs Python 3 and PyPI; not part of CI.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::s3server::Server;
use crate::util::{
    Flags, cargo, cargo_target_dir, exec, median, pip_install, project_root, venv_at,
};

/// The packages of the Python test venv (`crate::python::REQUIREMENTS`) this benchmark needs,
/// taken with the pins CI tests; fsspec (the kerchunk row's `ReferenceFileSystem`) is pinned
/// here at the version the test venv resolves.
const FROM_TEST_VENV: &[&str] = &[
    "numpy",
    "zarr",
    "numcodecs",
    "virtualizarr",
    "xarray",
    "obstore",
    "obspec-utils",
    "icechunk",
];
const FSSPEC: &str = "fsspec==2026.9.0";
/// The Python side, run from the source tree.
const SCRIPT: &str = "xtask/src/read_bench.py";
/// The layer of convert-bench's sources that is read, and its layer and mag inside.
const LAYER: &str = "uint8";
const ARRAY: &str = "color/1";
/// Targets of the issue (ratios of medians).
const MIN_VIRTUAL_VS_ZARR3: f64 = 1.0;
const MAX_VIRTUAL_VS_WKW: f64 = 1.5;
const MAX_S3_VIRTUAL_VS_WKW: f64 = 1.2;

const USAGE: &str = "read-bench [--size N] [--reps N] [--regions N] [--data DIR] [--wheel PATH] [--scifmt PATH] [--latency-ms MS] [--skip-s3]";

#[derive(Debug)]
struct Opts {
    size: u32,
    reps: u32,
    regions: usize,
    data: Option<PathBuf>,
    wheel: Option<PathBuf>,
    scifmt: Option<PathBuf>,
    latency_ms: u64,
    s3: bool,
}

fn parse(args: &[String]) -> Result<Opts, String> {
    let mut o = Opts {
        size: 1024,
        reps: 5,
        regions: 8,
        data: None,
        wheel: None,
        scifmt: None,
        latency_ms: 20,
        s3: true,
    };
    let mut f = Flags::new(args, USAGE);
    while let Some(a) = f.next_flag() {
        match a {
            "--size" => o.size = f.power_of_two(a, 64, 1024)?,
            "--reps" => o.reps = f.number(a, 1..=1000)?,
            "--regions" => o.regions = f.number(a, 1..=1000)?,
            "--data" => o.data = Some(PathBuf::from(f.value(a)?)),
            "--wheel" => o.wheel = Some(PathBuf::from(f.value(a)?)),
            "--scifmt" => o.scifmt = Some(PathBuf::from(f.value(a)?)),
            "--latency-ms" => o.latency_ms = f.number(a, 0..=60_000)?,
            "--skip-s3" => o.s3 = false,
            other => return Err(f.unknown(other)),
        }
    }
    Ok(o)
}

/// The region side for a source of `size`³ voxels: 256, or half the source when smaller.
fn side(size: u32) -> u32 {
    256.min(size / 2)
}

/// `n` region origins in `[0, size - side]³` from a fixed seed (splitmix64): the first half
/// (rounded up) with every coordinate a multiple of 32, the rest with none.
fn regions(n: usize, size: u32, side: u32) -> Vec<[u32; 3]> {
    let mut state: u64 = 0x5eed_2026_1128;
    let mut next = || {
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    };
    let span = u64::from(size - side);
    let aligned = n.div_ceil(2);
    (0..n)
        .map(|i| {
            [0; 3].map(|_| {
                if i < aligned {
                    let v = (next() % (span / 32 + 1)) * 32;
                    u32::try_from(v).unwrap_or(0)
                } else {
                    // 1..=31 past a multiple of 32, within the span.
                    let v = (next() % (span / 32)) * 32 + 1 + next() % 31;
                    u32::try_from(v).unwrap_or(0)
                }
            })
        })
        .collect()
}

/// One timed read, as the Python script and the Rust example print it.
#[derive(Debug, Clone)]
struct Read {
    side: String,
    contender: String,
    region: usize,
    seconds: f64,
    crc32: u64,
}

fn parse_reads(text: &str) -> Result<Vec<Read>, String> {
    text.lines()
        .filter(|l| l.starts_with('{'))
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).map_err(|e| format!("{l}: {e}"))?;
            let s = |k: &str| {
                v[k].as_str()
                    .map(str::to_owned)
                    .ok_or_else(|| format!("{l}: no {k}"))
            };
            Ok(Read {
                side: s("side")?,
                contender: s("contender")?,
                region: v["region"]
                    .as_u64()
                    .and_then(|r| usize::try_from(r).ok())
                    .ok_or_else(|| format!("{l}: no region"))?,
                seconds: v["seconds"]
                    .as_f64()
                    .ok_or_else(|| format!("{l}: no seconds"))?,
                crc32: v["crc32"]
                    .as_u64()
                    .ok_or_else(|| format!("{l}: no crc32"))?,
            })
        })
        .collect()
}

/// Runs `cmd`, its stderr passed through; its stdout (the JSON lines) is returned and saved
/// to `log`.
fn reads_of(cmd: &mut Command, log: &Path) -> Result<Vec<Read>, String> {
    eprintln!("$ {cmd:?}");
    let out = cmd
        .stderr(std::process::Stdio::inherit())
        .output()
        .map_err(|e| format!("cannot start {cmd:?}: {e}"))?;
    std::fs::write(log, &out.stdout).map_err(|e| format!("{}: {e}", log.display()))?;
    if !out.status.success() {
        return Err(format!(
            "{cmd:?} failed with {} (a region differing from the direct read fails it)",
            out.status
        ));
    }
    parse_reads(&String::from_utf8_lossy(&out.stdout))
}

/// Runs the task.
///
/// # Errors
/// On bad arguments, a failed build, venv or data preparation, a contender's failure or a
/// region that differs from the direct WKW read.
pub(crate) fn run(args: &[String]) -> Result<(), String> {
    let o = parse(args)?;
    let root = project_root();
    let side = side(o.size);
    let work = root
        .join("target")
        .join("read-bench")
        .join(o.size.to_string());
    std::fs::create_dir_all(&work).map_err(|e| format!("{}: {e}", work.display()))?;

    // 1. Binaries (release): the example, and `scifmt` and the S3 test server unless given.
    let mut build = cargo();
    build.args([
        "build",
        "--release",
        "-p",
        "wkw-zarr",
        "--example",
        "read_bench",
    ]);
    if o.scifmt.is_none() {
        build.args(["-p", "scifmt-cli", "--bin", "scifmt"]);
    }
    if o.s3 {
        build.args(["-p", "scifmt-s3-testserver", "--bin", "s3-testserver"]);
    }
    exec(&mut build)?;
    let release = cargo_target_dir().join("release");
    let scifmt = o.scifmt.clone().unwrap_or_else(|| release.join("scifmt"));
    let example = release.join("examples").join("read_bench");

    // 2. Data: the source and its conversion, made only in our own cache.
    let data = o.data.clone().unwrap_or_else(|| {
        root.join("target")
            .join("convert-bench")
            .join(o.size.to_string())
    });
    let src_dir = data.join("src");
    let src = src_dir.join(LAYER);
    let zarr3 = data.join("out").join("ours").join(LAYER);
    if o.data.is_some() {
        for need in [
            src.join("datasource-properties.json"),
            zarr3.join("zarr.json"),
        ] {
            if !need.is_file() {
                return Err(format!(
                    "--data {}: {} is missing (--data is only read; without it the data are \
                     made in target/convert-bench/<N>)",
                    data.display(),
                    need.display()
                ));
            }
        }
    } else {
        let gen_python = venv_at(
            &root.join("target").join("convert-bench-venv"),
            crate::convert_bench::REQUIREMENTS,
        )?;
        crate::convert_bench::source(
            &gen_python,
            &root.join(crate::convert_bench::GENERATOR),
            &src_dir,
            LAYER,
            o.size,
        )?;
        // Converted again whenever the source is newer than the conversion.
        let stamp = src_dir.join(format!("{LAYER}.stamp"));
        let newer = |a: &Path, b: &Path| -> bool {
            match (std::fs::metadata(a), std::fs::metadata(b)) {
                (Ok(a), Ok(b)) => a.modified().ok() > b.modified().ok(),
                _ => true,
            }
        };
        if newer(&stamp, &zarr3.join("zarr.json")) {
            crate::convert_bench::remove(&zarr3)?;
            exec(
                Command::new(&scifmt)
                    .arg("convert")
                    .arg(&src)
                    .arg(&zarr3)
                    .args(["--to", "zarr3", "--jobs", "2"]),
            )?;
        }
    }
    let mag = src.join(ARRAY);

    // 3. The Python venv, with the wheel under test.
    let wanted: Vec<&str> = crate::python::REQUIREMENTS
        .iter()
        .copied()
        .filter(|pin| {
            FROM_TEST_VENV
                .iter()
                .any(|name| pin.split_once("==").is_some_and(|(n, _)| n == *name))
        })
        .chain([FSSPEC])
        .collect();
    if wanted.len() != FROM_TEST_VENV.len() + 1 {
        return Err(format!(
            "xtask/src/python.rs no longer pins all of {FROM_TEST_VENV:?}"
        ));
    }
    let python = venv_at(&root.join("target").join("read-bench-venv"), &wanted)?;
    let wheel = match &o.wheel {
        Some(w) => w.clone(),
        None => default_wheel(&root.join("target").join("dist"))?,
    };
    pip_install(
        &python,
        &[
            std::ffi::OsStr::new("--force-reinstall"),
            std::ffi::OsStr::new("--no-deps"),
            wheel.as_os_str(),
        ],
    )?;
    let script = root.join(SCRIPT);

    // 4. The references, made fresh.
    let refs = work.join("refs.json");
    exec(
        Command::new(&scifmt)
            .arg("virtualize")
            .arg(&src)
            .arg(&refs)
            .args(["--to", "kerchunk", "--overwrite"]),
    )?;
    let repo = work.join("repo.icechunk");
    exec(
        Command::new(&python)
            .arg(&script)
            .arg("icechunk")
            .arg("--source")
            .arg(&src)
            .args(["--layer", "color", "--repo"])
            .arg(&repo),
    )?;

    // 5. The runs.
    let origins = regions(o.regions, o.size, side);
    let aligned = o.regions.div_ceil(2);
    let config = |contenders: &[&str], kerchunk: &Path, mag: &str| {
        serde_json::json!({
            "source": src, "mag": mag, "array": ARRAY, "zarr3": zarr3,
            "kerchunk": kerchunk, "icechunk": repo, "regions": origins, "side": side,
            "reps": o.reps, "contenders": contenders,
        })
    };
    let write_config = |name: &str, doc: serde_json::Value| -> Result<PathBuf, String> {
        let path = work.join(name);
        std::fs::write(&path, doc.to_string()).map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(path)
    };
    let mag_str = mag.to_string_lossy().into_owned();
    let mut reads = Vec::new();
    let rust_cfg = write_config(
        "rust.json",
        config(
            &["wkw", "zarrs-kerchunk", "zarrs-icechunk", "zarrs-zarr3"],
            &refs,
            &mag_str,
        ),
    )?;
    reads.extend(reads_of(
        Command::new(&example).arg(&rust_cfg),
        &work.join("rust.log"),
    )?);
    let py_cfg = write_config(
        "python.json",
        config(&["wkw", "zarr3", "icechunk", "kerchunk"], &refs, &mag_str),
    )?;
    reads.extend(reads_of(
        Command::new(&python)
            .arg(&script)
            .arg("run")
            .arg("--config")
            .arg(&py_cfg),
        &work.join("python.log"),
    )?);
    if o.s3 {
        reads.extend(s3_reads(
            &o, &release, &scifmt, &example, &work, &src_dir, &config,
        )?);
    }

    // 6. The same bytes everywhere (each process already compared with its direct read).
    let mut crcs: BTreeMap<usize, u64> = BTreeMap::new();
    for r in &reads {
        if *crcs.entry(r.region).or_insert(r.crc32) != r.crc32 {
            return Err(format!(
                "{} {}: region {} differs from the other contenders' (CRC-32)",
                r.side, r.contender, r.region
            ));
        }
    }
    eprintln!(
        "read-bench: {} timed reads, every region equal to the direct WKW read",
        reads.len()
    );
    println!("{}", table(&reads, aligned, side, o.size, o.latency_ms));
    Ok(())
}

/// The newest `scifmt-*.whl` in `dir`.
fn default_wheel(dir: &Path) -> Result<PathBuf, String> {
    std::fs::read_dir(dir)
        .map_err(|e| {
            format!(
                "{}: {e} (build the wheel with `cargo xtask dist` or pass --wheel)",
                dir.display()
            )
        })?
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("scifmt-") && n.ends_with(".whl"))
        })
        .max_by_key(|p| std::fs::metadata(p).and_then(|m| m.modified()).ok())
        .ok_or_else(|| format!("no scifmt-*.whl in {} (pass --wheel)", dir.display()))
}

/// The S3 part: the test server with latency, references made from it, then the Rust example
/// reading through them and the `wkw` crate reading the `s3://` mag.
fn s3_reads(
    o: &Opts,
    release: &Path,
    scifmt: &Path,
    example: &Path,
    work: &Path,
    src_dir: &Path,
    config: &dyn Fn(&[&str], &Path, &str) -> serde_json::Value,
) -> Result<Vec<Read>, String> {
    let server = Server::start(
        &release.join("s3-testserver"),
        work,
        o.latency_ms,
        src_dir,
        Some("src"),
    )?;
    let bucket = server.var("S3_TESTSERVER_BUCKET")?;
    let refs = work.join("refs-s3.json");
    exec(
        Command::new(scifmt)
            .arg("virtualize")
            .arg(format!("s3://{bucket}/src/{LAYER}"))
            .arg(&refs)
            .args(["--to", "kerchunk", "--overwrite"])
            .envs(server.env.iter().cloned()),
    )?;
    let mag = format!("s3://{bucket}/src/{LAYER}/{ARRAY}");
    let mut doc = config(&["wkw", "zarrs-kerchunk"], &refs, &mag);
    // The direct reads that check the regions stay local (the same bytes the server holds).
    doc["check_mag"] = serde_json::Value::String(
        src_dir
            .join(LAYER)
            .join(ARRAY)
            .to_string_lossy()
            .into_owned(),
    );
    doc["label"] = serde_json::Value::String("s3".into());
    let path = work.join("s3.json");
    std::fs::write(&path, doc.to_string()).map_err(|e| format!("{}: {e}", path.display()))?;
    reads_of(
        Command::new(example)
            .arg(&path)
            .envs(server.env.iter().cloned()),
        &work.join("s3.log"),
    )
}

fn verdict(ok: bool) -> &'static str {
    if ok { "met" } else { "MISSED" }
}

/// The Markdown table of medians and the ratios against the targets.
fn table(reads: &[Read], aligned: usize, side: u32, size: u32, latency_ms: u64) -> String {
    let med = |s: &str, c: &str, pick: &dyn Fn(usize) -> bool| {
        let v: Vec<f64> = reads
            .iter()
            .filter(|r| r.side == s && r.contender == c && pick(r.region))
            .map(|r| r.seconds)
            .collect();
        (!v.is_empty()).then(|| median(v))
    };
    let all = |s: &str, c: &str| med(s, c, &|_| true);
    let mb = f64::from(side).powi(3) / 1e6;
    let rows: &[(&str, &str, &str)] = &[
        ("python", "wkw", "Python: scifmt.wkw, the WKW directly"),
        (
            "python",
            "zarr3",
            "Python: zarr-python, converted Zarr3 (zstd shards)",
        ),
        (
            "python",
            "icechunk",
            "Python: zarr-python, virtual (Icechunk, lz4-block)",
        ),
        (
            "python",
            "kerchunk",
            "Python: zarr-python, virtual (kerchunk JSON via fsspec)",
        ),
        ("rust", "wkw", "Rust: wkw crate, the WKW directly"),
        (
            "rust",
            "zarrs-zarr3",
            "Rust: zarrs, converted Zarr3 (zstd shards)",
        ),
        (
            "rust",
            "zarrs-kerchunk",
            "Rust: zarrs, virtual (kerchunk JSON, ReferenceStore)",
        ),
        (
            "rust",
            "zarrs-icechunk",
            "Rust: zarrs, virtual (Icechunk, zarrs_icechunk)",
        ),
        ("s3", "wkw", "S3: wkw crate, the s3:// WKW directly"),
        (
            "s3",
            "zarrs-kerchunk",
            "S3: zarrs, virtual (kerchunk JSON, s3:// ranges)",
        ),
    ];
    let mut out = format!(
        "Regions of {side}³ uint8 ({mb:.1} MB) from the {size}³ layer: {aligned} aligned to the \
         32³ blocks, {} unaligned; medians of every timed read (milliseconds).{}\n\n\
         | contender | aligned ms | unaligned ms | all ms | MB/s (all) |\n\
         | --- | ---: | ---: | ---: | ---: |\n",
        reads
            .iter()
            .map(|r| r.region)
            .max()
            .map_or(0, |m| m + 1)
            .saturating_sub(aligned),
        if reads.iter().any(|r| r.side == "s3") {
            format!(" S3 rows: s3-testserver with {latency_ms} ms per request.")
        } else {
            String::new()
        }
    );
    let ms = |v: Option<f64>| v.map_or(String::from("–"), |s| format!("{:.1}", s * 1e3));
    for &(s, c, label) in rows {
        let Some(a) = all(s, c) else { continue };
        out.push_str(&format!(
            "| {label} | {} | {} | {:.1} | {:.0} |\n",
            ms(med(s, c, &|r| r < aligned)),
            ms(med(s, c, &|r| r >= aligned)),
            a * 1e3,
            mb / a
        ));
    }
    out.push_str("\nRatios of medians (all regions) and targets:\n\n");
    let mut line = |text: String| {
        out.push_str("- ");
        out.push_str(&text);
        out.push('\n');
    };
    let ratio =
        |num: (&str, &str), den: (&str, &str)| Some(all(num.0, num.1)? / all(den.0, den.1)?);
    for (virt, what) in [("icechunk", "Icechunk"), ("kerchunk", "kerchunk JSON")] {
        if let Some(r) = ratio(("python", "zarr3"), ("python", virt)) {
            line(format!(
                "zarr-python, converted Zarr3 ÷ virtual ({what}) time: {r:.2}× — target ≥ \
                 {MIN_VIRTUAL_VS_ZARR3}×: {}",
                verdict(r >= MIN_VIRTUAL_VS_ZARR3)
            ));
        }
        if let Some(r) = ratio(("python", virt), ("python", "wkw")) {
            line(format!(
                "zarr-python, virtual ({what}) ÷ scifmt.wkw direct time: {r:.2}× — goal ≤ \
                 {MAX_VIRTUAL_VS_WKW}×: {}",
                verdict(r <= MAX_VIRTUAL_VS_WKW)
            ));
        }
    }
    for (virt, what) in [
        ("zarrs-icechunk", "Icechunk"),
        ("zarrs-kerchunk", "kerchunk"),
    ] {
        if let Some(r) = ratio(("rust", "zarrs-zarr3"), ("rust", virt)) {
            line(format!(
                "zarrs, converted Zarr3 ÷ virtual ({what}) time: {r:.2}× — target ≥ \
                 {MIN_VIRTUAL_VS_ZARR3}×: {}",
                verdict(r >= MIN_VIRTUAL_VS_ZARR3)
            ));
        }
    }
    if let Some(r) = ratio(("rust", "zarrs-kerchunk"), ("rust", "wkw")) {
        line(format!(
            "zarrs, virtual (kerchunk) ÷ wkw crate direct time: {r:.2}× (no target)"
        ));
    }
    if let Some(r) = ratio(("python", "wkw"), ("rust", "wkw")) {
        line(format!(
            "scifmt.wkw ÷ wkw crate (the same reader, through Python) time: {r:.2}× (no target)"
        ));
    }
    if let Some(r) = ratio(("s3", "zarrs-kerchunk"), ("s3", "wkw")) {
        line(format!(
            "S3 at {latency_ms} ms: zarrs, virtual (kerchunk) ÷ wkw crate direct remote time: \
             {r:.2}× — target ≤ {MAX_S3_VIRTUAL_VS_WKW}×: {}",
            verdict(r <= MAX_S3_VIRTUAL_VS_WKW)
        ));
    }
    if size != 1024 {
        line(format!(
            "size {size}³ (regions {side}³), not the 1024³ with 256³ regions of the targets: \
             the verdicts are indicative only"
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn options_are_checked() {
        let o = parse(&args(&["--size", "256", "--reps", "2", "--skip-s3"])).unwrap();
        assert_eq!((o.size, o.reps, o.regions, o.s3), (256, 2, 8, false));
        for bad in [
            &["--size", "100"][..],
            &["--size", "32"],
            &["--reps", "0"],
            &["--regions"],
            &["--fast"],
        ] {
            assert!(parse(&args(bad)).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn regions_are_inside_and_aligned_then_unaligned() {
        for size in [64, 256, 1024] {
            let s = side(size);
            let r = regions(7, size, s);
            assert_eq!(r, regions(7, size, s), "deterministic");
            for (i, o) in r.iter().enumerate() {
                for &v in o {
                    assert!(v + s <= size, "{o:?}");
                    assert_eq!(v % 32 == 0, i < 4, "{i}: {o:?}");
                }
            }
        }
    }

    #[test]
    fn reads_parse() {
        let r = parse_reads(
            "noise\n{\"side\":\"rust\",\"contender\":\"wkw\",\"rep\":0,\"region\":3,\
             \"seconds\":0.5,\"crc32\":7}\n",
        )
        .unwrap();
        assert_eq!((r.len(), r[0].region, r[0].crc32), (1, 3, 7));
        assert!(parse_reads("{\"side\":\"rust\"}").is_err());
    }
}
