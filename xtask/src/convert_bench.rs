//! `cargo xtask convert-bench [--size N] [--reps N] [--latency-ms MS] [--layers L,…] [--skip-peer]
//! [--skip-s3]`:
//! WKW → Zarr3 conversion, `scifmt convert` against `webknossos copy-dataset`, side by side in
//! one run (a benchmark: nothing here is a timed test), and the same layers made readable as
//! Zarr v3 without copying (`scifmt virtualize`) against that copy.
//!
//! 1. Builds (release) the `scifmt` and `s3-testserver` binaries and wkw-zarr's `zstd_alone`
//!    example.
//! 2. Creates or reuses the virtualenv `target/convert-bench-venv` with [`REQUIREMENTS`].
//! 3. Makes the sources once per size, cached in `target/convert-bench/<N>/src/`:
//!    `testdata/generators/wkw-zarr/bench_source.py` writes two webKNOSSOS datasets, each one
//!    layer of N³ voxels in one LZ4 WKW file (`block_len` 32, `file_len` N / 32): `uint8` (a
//!    color layer: smooth structure plus noise) and `uint64` (a segmentation layer of labels).
//! 4. Starts `s3-testserver --dir <src> --prefix src --latency-ms MS` (the sources uploaded,
//!    every later request delayed by MS).
//! 5. For each repetition and layer, in alternating order, each into a fresh target:
//!    - ours: `scifmt convert SRC DST --to zarr3 --jobs 2 --overwrite`;
//!    - the peer: `webknossos copy-dataset SRC DST --data-format zarr3 --jobs 2`;
//!    - ours, S3 → S3: `scifmt convert s3://…/src/<layer> s3://…/out/<rep>/<layer> --to zarr3
//!      --jobs 2 --overwrite` against the test server;
//!    - the peer, S3 → S3: `webknossos copy-dataset s3://…/src/<layer> s3://…/peer/<rep>/<layer>
//!      --data-format zarr3 --jobs 2` (webknossos-libs reads remote WKW with its own Python
//!      reader over fsspec and s3fs; `S3_ENDPOINT_URL` points it at the server).
//!
//!    - virtual references instead of a copy: `scifmt virtualize SRC out/virtual/<layer>.json
//!      --to kerchunk --overwrite --json`, and from the test server into it (`s3://…/src/<layer>`
//!      → `s3://…/virtual/<rep>/<layer>.json`); their `--json` summaries give the references and
//!      the bytes read and written, the server's counters the bytes it sent;
//!
//!    - the compressor alone: `zstd_alone FILE.wkw --threads 2 --level 5` (zstd level 5 with
//!      checksum, as both tools write, over the layer's blocks already decoded in memory; the
//!      seconds of the compression phase, which bound how fast any converter writing those
//!      chunks with this libzstd can be on this machine).
//!
//!    Each run is measured by a fresh `xtask convert-bench measure` process that starts the
//!    command and waits for it: wall time, user + system CPU time of the whole process tree
//!    (`getrusage(RUSAGE_CHILDREN)`), the largest single process's `ru_maxrss`, and the peak
//!    of the process tree's summed `VmRSS`, sampled from `/proc` every 10 ms (reported as at
//!    least the largest process's `ru_maxrss`, a peak a sample may miss). For S3 runs the
//!    server's CPU time (from `/proc/<pid>/stat`) and its request counters are recorded too;
//!    the server's memory is not part of the measured tree.
//! 6. Checks, failing the task on a difference: our result and the peer's each verify against
//!    the source block by block (`wkw_zarr::verify`; both equal to the source, hence to each
//!    other), their `zarr.json` and properties documents are JSON-equal, and the S3 result
//!    (read from the server's backing directory) verifies against the source too. Whether our
//!    shard files are byte-identical to the peer's is reported, not required.
//! 7. Prints one Markdown table of medians and the ratios against the targets of the issue:
//!    ≥ 3× less wall time than the peer; peak memory of the tree ≤ 256 MiB and ≤ 1/8 of the
//!    peer's; ours not growing with the voxel size (uint64 vs uint8); S3 → S3 within 1.5× of
//!    the local conversion. Also the compressor alone as a share of our time, and the peer's
//!    time over it: the highest speed-up any converter writing the same chunks can reach here;
//!    and for S3 → S3 the CPU time of ours and of the test server, which share the machine's
//!    cores, spread over them: the least wall time the run could take.
//!
//! 8. Virtual references at scale: a raw `uint8` WKW mag of 2²⁰ blocks (`block_len` 8, 32 files
//!    of 32³ blocks, 512 MiB, made once in `target/convert-bench/refs/`) and one of 2¹⁷ blocks
//!    (4 of those files), each virtualized into kerchunk JSON under `measure`: the peak RSS per
//!    million references, and whether it grows with the number of references (it should not:
//!    the references are streamed out file by file); then each into a new Icechunk repository
//!    and again over it (`--overwrite`: an update finding every reference unchanged), with the
//!    time, peak RSS and repository size (the CLI is built with its `icechunk` feature); and
//!    into kerchunk Parquet references (the mag as the layer of a dataset made of a
//!    `datasource-properties.json` and a symbolic link: Parquet holds arrays in groups only).
//!    `--scale-only` runs only this step.
//!
//! At the default size (1024) the sources take about 1 GB (uint8) and a few GB (uint64) of
//! disk, twice (local and uploaded), and generating the uint64 layer needs 8 GiB of memory
//! once (the wkw library writes a compressed file in one call). Use `--size 256` for a quick
//! trial. Needs Python 3 and PyPI; not part of CI.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};
use wkw_zarr::{ConvertOptions, verify};

use crate::s3server::Server;
use crate::util::{Flags, cargo, cargo_target_dir, exec, median, project_root, venv_at};

/// What the peer and the source generator need, pinned.
/// s3fs (the fsspec version webknossos 4.3.3 brings) lets the peer read and write `s3://`.
pub(crate) const REQUIREMENTS: &[&str] = &["webknossos==4.3.3", "wkw==1.1.24", "s3fs==2026.9.0"];
/// The source generator, relative to the workspace root.
pub(crate) const GENERATOR: &str = "testdata/generators/wkw-zarr/bench_source.py";
/// The two layers: directory name (also the `--dtype` of the generator).
const LAYERS: [&str; 2] = ["uint8", "uint64"];
/// Worker threads (processes for the peer) of every run.
const JOBS: &str = "2";
/// Targets of the issue.
const MIN_SPEEDUP: f64 = 3.0;
const MAX_TREE_MIB: f64 = 256.0;
const MIN_MEMORY_RATIO: f64 = 8.0;
const MAX_S3_SLOWDOWN: f64 = 1.5;
/// Virtual references instead of a copy: at least this much faster than the peer's copy, and
/// reading and writing at most these shares of the dataset's bytes.
const MIN_VIRTUAL_SPEEDUP: f64 = 50.0;
const MAX_VIRTUAL_READ_SHARE: f64 = 0.001;
const MAX_VIRTUAL_WRITE_SHARE: f64 = 0.01;

const USAGE: &str = "convert-bench [--size N] [--reps N] [--latency-ms MS] [--layers uint8,uint64] [--skip-peer] [--skip-s3] [--scale-only]";

struct Opts {
    size: u32,
    reps: usize,
    latency_ms: u64,
    layers: Vec<&'static str>,
    peer: bool,
    s3: bool,
    /// Only step 8 (virtual references at scale).
    scale_only: bool,
}

fn parse(args: &[String]) -> Result<Opts, String> {
    let mut opts = Opts {
        size: 1024,
        reps: 3,
        latency_ms: 20,
        layers: LAYERS.to_vec(),
        peer: true,
        s3: true,
        scale_only: false,
    };
    let mut f = Flags::new(args, USAGE);
    while let Some(a) = f.next_flag() {
        match a {
            "--size" => opts.size = f.power_of_two(a, 32, 1024)?,
            "--reps" => opts.reps = f.number(a, 1..=1000)?,
            "--latency-ms" => opts.latency_ms = f.number(a, 0..=60_000)?,
            "--layers" => {
                let v = f.value(a)?;
                opts.layers = v
                    .split(',')
                    .map(|name| {
                        LAYERS.into_iter().find(|l| *l == name).ok_or_else(|| {
                            format!("--layers {v}: `{name}` is not one of {LAYERS:?}")
                        })
                    })
                    .collect::<Result<_, _>>()?;
            }
            "--skip-peer" => opts.peer = false,
            "--skip-s3" => opts.s3 = false,
            "--scale-only" => opts.scale_only = true,
            other => return Err(f.unknown(other)),
        }
    }
    Ok(opts)
}

/// Runs the task (or, as `measure RESULT PROGRAM ARGS…`, measures one command: see
/// [`measure`]).
///
/// # Errors
/// On bad arguments, a failed build, venv, generator or conversion, a server that does not
/// start, or results that do not verify.
pub(crate) fn run(args: &[String]) -> Result<(), String> {
    if args.first().is_some_and(|a| a == "measure") {
        return measure(&args[1..]);
    }
    let opts = parse(args)?;
    let root = project_root();
    let work = root
        .join("target")
        .join("convert-bench")
        .join(opts.size.to_string());
    let src = work.join("src");
    let out = work.join("out");

    exec(cargo().args([
        "build",
        "--release",
        "-p",
        "scifmt-cli",
        "--features",
        "scifmt-cli/icechunk",
        "--bin",
        "scifmt",
        "-p",
        "scifmt-s3-testserver",
        "--bin",
        "s3-testserver",
        "-p",
        "wkw-zarr",
        "--example",
        "zstd_alone",
    ]))?;
    let release = cargo_target_dir().join("release");
    let scifmt = release.join("scifmt");
    if opts.scale_only {
        println!(
            "{}",
            references_at_scale(&scifmt, &work.with_file_name("refs"))?
        );
        return Ok(());
    }
    let python = venv_at(
        &root.join("target").join("convert-bench-venv"),
        REQUIREMENTS,
    )?;
    let webknossos = python.with_file_name("webknossos");
    for &layer in &opts.layers {
        source(&python, &root.join(GENERATOR), &src, layer, opts.size)?;
    }

    let server = if opts.s3 {
        Some(Server::start(
            &release.join("s3-testserver"),
            &work,
            opts.latency_ms,
            &src,
            Some("src"),
        )?)
    } else {
        None
    };

    let mut runs: Vec<Run> = Vec::new();
    let mut alone: Vec<(&str, f64)> = Vec::new();
    for rep in 0..opts.reps {
        for &layer in &opts.layers {
            let mut tools = vec![Tool::Ours, Tool::Virtual];
            if opts.peer {
                tools.push(Tool::Peer);
            }
            if server.is_some() {
                tools.extend([Tool::OursS3, Tool::VirtualS3]);
                if opts.peer {
                    tools.push(Tool::PeerS3);
                }
            }
            // Alternate the order, so neither tool always runs on a warmer machine.
            let n = tools.len();
            tools.rotate_left(rep % n);
            for tool in tools {
                eprintln!(
                    "convert-bench: repetition {} of {}, {layer}, {}",
                    rep + 1,
                    opts.reps,
                    tool.label()
                );
                let run = match tool {
                    Tool::Ours | Tool::Peer => {
                        let dst = out.join(tool.dir()).join(layer);
                        remove(&dst)?;
                        let mut cmd = if tool == Tool::Ours {
                            let mut c = Command::new(&scifmt);
                            c.arg("convert").arg(src.join(layer)).arg(&dst).args([
                                "--to",
                                "zarr3",
                                "--jobs",
                                JOBS,
                                "--overwrite",
                            ]);
                            c
                        } else {
                            let mut c = Command::new(&webknossos);
                            c.arg("copy-dataset").arg(src.join(layer)).arg(&dst).args([
                                "--data-format",
                                "zarr3",
                                "--jobs",
                                JOBS,
                            ]);
                            c
                        };
                        Run::measured(tool, layer, &work, &mut cmd, None)?
                    }
                    Tool::OursS3 => {
                        let server = server.as_ref().ok_or("no server")?;
                        let bucket = server.var("S3_TESTSERVER_BUCKET")?;
                        let mut cmd = Command::new(&scifmt);
                        // A fresh prefix per repetition, as the local runs get a fresh
                        // directory (deleting the last result is not timed).
                        cmd.arg("convert")
                            .arg(format!("s3://{bucket}/src/{layer}"))
                            .arg(format!("s3://{bucket}/out/{rep}/{layer}"))
                            .args(["--to", "zarr3", "--jobs", JOBS, "--overwrite"])
                            .envs(server.env.iter().cloned());
                        Run::measured(tool, layer, &work, &mut cmd, Some(server))?
                    }
                    Tool::Virtual => {
                        let dst = out.join(tool.dir()).join(format!("{layer}.json"));
                        let mut cmd = Command::new(&scifmt);
                        cmd.arg("virtualize").arg(src.join(layer)).arg(&dst).args([
                            "--to",
                            "kerchunk",
                            "--overwrite",
                            "--json",
                        ]);
                        Run::measured(tool, layer, &work, &mut cmd, None)?
                    }
                    Tool::VirtualS3 => {
                        let server = server.as_ref().ok_or("no server")?;
                        let bucket = server.var("S3_TESTSERVER_BUCKET")?;
                        let mut cmd = Command::new(&scifmt);
                        cmd.arg("virtualize")
                            .arg(format!("s3://{bucket}/src/{layer}"))
                            .arg(format!("s3://{bucket}/virtual/{rep}/{layer}.json"))
                            .args(["--to", "kerchunk", "--overwrite", "--json"])
                            .envs(server.env.iter().cloned());
                        Run::measured(tool, layer, &work, &mut cmd, Some(server))?
                    }
                    Tool::PeerS3 => {
                        let server = server.as_ref().ok_or("no server")?;
                        let bucket = server.var("S3_TESTSERVER_BUCKET")?;
                        let endpoint = server.var("AWS_ENDPOINT_URL")?;
                        let mut cmd = Command::new(&webknossos);
                        cmd.arg("copy-dataset")
                            .arg(format!("s3://{bucket}/src/{layer}"))
                            .arg(format!("s3://{bucket}/peer/{rep}/{layer}"))
                            .args(["--data-format", "zarr3", "--jobs", JOBS])
                            .envs(server.env.iter().cloned())
                            .env("S3_ENDPOINT_URL", endpoint);
                        Run::measured(tool, layer, &work, &mut cmd, Some(server))?
                    }
                };
                eprintln!("convert-bench: {}", run.describe());
                runs.push(run);
            }
            let seconds = zstd_alone(&release, &src.join(layer))?;
            eprintln!("convert-bench: {layer}, zstd alone: {seconds:.2} s");
            alone.push((layer, seconds));
        }
    }

    let mut checks = Vec::new();
    for &layer in &opts.layers {
        let source = src.join(layer);
        let ours = out.join(Tool::Ours.dir()).join(layer);
        checks.push(format!("{layer}: ours {}", verified(&source, &ours)?));
        if opts.peer {
            let peer = out.join(Tool::Peer.dir()).join(layer);
            checks.push(format!("{layer}: peer {}", verified(&source, &peer)?));
            let (a, b) = (json_files(&ours)?, json_files(&peer)?);
            if a != b {
                let differing: Vec<&String> = a
                    .keys()
                    .chain(b.keys())
                    .filter(|k| a.get(*k) != b.get(*k))
                    .collect();
                return Err(format!(
                    "{layer}: our and the peer's metadata differ: {differing:?}"
                ));
            }
            checks.push(format!(
                "{layer}: our and the peer's zarr.json / properties documents are JSON-equal \
                 ({} documents); shard files {}",
                a.len(),
                same_shards(&ours, &peer)?
            ));
        }
        if let Some(server) = &server {
            let last = (opts.reps - 1).to_string();
            let remote = server.backing_dir()?.join("out").join(&last).join(layer);
            checks.push(format!(
                "{layer}: ours S3 → S3 {}",
                verified(&source, &remote)?
            ));
            if opts.peer {
                let remote = server.backing_dir()?.join("peer").join(&last).join(layer);
                checks.push(format!(
                    "{layer}: peer S3 → S3 {}",
                    verified(&source, &remote)?
                ));
            }
        }
    }
    drop(server);
    let mut dataset_bytes = BTreeMap::new();
    for &layer in &opts.layers {
        dataset_bytes.insert(layer, tree_bytes(&src.join(layer))?);
    }
    let at_scale = references_at_scale(&scifmt, &work.with_file_name("refs"))?;

    println!(
        "\nWKW → Zarr3, one {n}³ layer in one WKW file, --jobs {JOBS}, {reps} repetitions \
         (medians), S3 latency {lat} ms:\n",
        n = opts.size,
        reps = opts.reps,
        lat = opts.latency_ms
    );
    println!("{}", table(&runs, &alone, opts.size));
    println!("{}", virtual_table(&runs, &dataset_bytes, opts.size));
    println!("{at_scale}");
    println!("Checks (each a requirement of this task; a failure stops it):\n");
    for c in &checks {
        println!("- {c}");
    }
    Ok(())
}

/// The compressor alone on the layer's one WKW file: wkw-zarr's `zstd_alone` example (zstd
/// level 5 with checksum, one context per thread, `JOBS` threads, the blocks decoded in memory
/// beforehand), its seconds of compression.
fn zstd_alone(release: &Path, layer_dir: &Path) -> Result<f64, String> {
    let file = files(layer_dir)?
        .into_iter()
        .find(|p| {
            p.extension().is_some_and(|e| e == "wkw")
                && p.file_name().is_some_and(|n| n != wkw::HEADER_FILE_NAME)
        })
        .ok_or_else(|| format!("{}: no WKW file", layer_dir.display()))?;
    let example = release.join("examples").join("zstd_alone");
    let output = Command::new(&example)
        .arg(layer_dir.join(&file))
        .args(["--threads", JOBS, "--level", "5"])
        .output()
        .map_err(|e| format!("cannot start {}: {e}", example.display()))?;
    if !output.status.success() {
        return Err(format!(
            "{} failed ({}): {}",
            example.display(),
            output.status,
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    let doc: serde_json::Value = serde_json::from_slice(&output.stdout)
        .map_err(|e| format!("{}: {e}", example.display()))?;
    doc["seconds"]
        .as_f64()
        .ok_or_else(|| format!("{}: no seconds in {doc}", example.display()))
}

/// Makes `src/<layer>` with the generator unless a stamp says it was made by the same script
/// at the same size.
pub(crate) fn source(
    python: &Path,
    script: &Path,
    src: &Path,
    layer: &str,
    size: u32,
) -> Result<(), String> {
    let text = std::fs::read(script).map_err(|e| format!("{}: {e}", script.display()))?;
    let stamp_text = format!("{}\nsize {size}\n", hex::encode(Sha256::digest(&text)));
    let dir = src.join(layer);
    let stamp = src.join(format!("{layer}.stamp"));
    if std::fs::read_to_string(&stamp).is_ok_and(|s| s == stamp_text) {
        return Ok(());
    }
    remove(&dir)?;
    let _ = std::fs::remove_file(&stamp);
    std::fs::create_dir_all(src).map_err(|e| format!("{}: {e}", src.display()))?;
    exec(
        Command::new(python)
            .arg(script)
            .args(["--size", &size.to_string(), "--dtype", layer])
            .arg(&dir),
    )?;
    std::fs::write(&stamp, stamp_text).map_err(|e| format!("{}: {e}", stamp.display()))
}

pub(crate) fn remove(dir: &Path) -> Result<(), String> {
    match std::fs::remove_dir_all(dir) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(format!("{}: {e}", dir.display())),
    }
}

/// `wkw_zarr::verify` of a Zarr3 dataset against its WKW source; an error unless every block
/// is equal.
fn verified(wkw: &Path, zarr: &Path) -> Result<String, String> {
    let options = ConvertOptions::default().with_threads(2);
    let report = verify(wkw, zarr, &options, &|_| {})
        .map_err(|e| format!("verify {} against {}: {e}", zarr.display(), wkw.display()))?;
    if report.is_ok() && report.blocks > 0 {
        Ok(format!(
            "verified equal to the source ({} blocks)",
            report.blocks
        ))
    } else {
        Err(format!(
            "{} differs from {}: {} differing blocks of {}",
            zarr.display(),
            wkw.display(),
            report.differing_blocks,
            report.blocks
        ))
    }
}

/// Every file below `root` by relative path.
fn files(root: &Path) -> Result<Vec<PathBuf>, String> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).map_err(|e| format!("{}: {e}", dir.display()))? {
            let path = entry.map_err(|e| format!("{}: {e}", dir.display()))?.path();
            if path.is_dir() {
                stack.push(path);
            } else {
                out.push(
                    path.strip_prefix(root)
                        .map_err(|e| e.to_string())?
                        .to_path_buf(),
                );
            }
        }
    }
    out.sort();
    Ok(out)
}

/// Every `*.json` document below `root` by relative path.
fn json_files(root: &Path) -> Result<BTreeMap<String, serde_json::Value>, String> {
    let mut out = BTreeMap::new();
    for rel in files(root)? {
        if rel.extension().is_some_and(|e| e == "json") {
            let path = root.join(&rel);
            let bytes = std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
            let doc =
                serde_json::from_slice(&bytes).map_err(|e| format!("{}: {e}", path.display()))?;
            out.insert(rel.to_string_lossy().into_owned(), doc);
        }
    }
    Ok(out)
}

/// Whether the non-JSON files (the shards) of two results are byte-identical, as a phrase.
fn same_shards(a: &Path, b: &Path) -> Result<String, String> {
    let shards = |root: &Path| -> Result<Vec<PathBuf>, String> {
        Ok(files(root)?
            .into_iter()
            .filter(|p| p.extension().is_none_or(|e| e != "json"))
            .collect())
    };
    let (sa, sb) = (shards(a)?, shards(b)?);
    if sa != sb {
        return Ok(format!(
            "differ in names ({} ours, {} theirs)",
            sa.len(),
            sb.len()
        ));
    }
    let mut identical = 0;
    for rel in &sa {
        let read = |root: &Path| {
            let p = root.join(rel);
            std::fs::read(&p).map_err(|e| format!("{}: {e}", p.display()))
        };
        if Sha256::digest(read(a)?) == Sha256::digest(read(b)?) {
            identical += 1;
        }
    }
    Ok(format!(
        "byte-identical: {identical} of {} (informative)",
        sa.len()
    ))
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Tool {
    Ours,
    Peer,
    OursS3,
    PeerS3,
    Virtual,
    VirtualS3,
}

impl Tool {
    fn label(self) -> &'static str {
        match self {
            Self::Ours => "scifmt convert",
            Self::Peer => "webknossos copy-dataset",
            Self::OursS3 => "scifmt convert, S3 → S3",
            Self::PeerS3 => "webknossos copy-dataset, S3 → S3",
            Self::Virtual => "scifmt virtualize",
            Self::VirtualS3 => "scifmt virtualize, S3",
        }
    }

    fn dir(self) -> &'static str {
        match self {
            Self::Ours => "ours",
            Self::Peer => "peer",
            Self::OursS3 => "s3",
            Self::PeerS3 => "peer-s3",
            Self::Virtual => "virtual",
            Self::VirtualS3 => "virtual-s3",
        }
    }
}

/// One measured run.
struct Run {
    tool: Tool,
    layer: &'static str,
    m: Measured,
    /// S3 runs: the server's CPU seconds and its `/stats` over the run.
    server_cpu_s: Option<f64>,
    server_stats: Option<serde_json::Value>,
    /// `scifmt virtualize --json`: its summary (the last JSON line of its output).
    summary: Option<serde_json::Value>,
}

impl Run {
    /// Runs `cmd` under a fresh `measure` process; its output goes to a log file under `work`.
    fn measured(
        tool: Tool,
        layer: &'static str,
        work: &Path,
        cmd: &mut Command,
        server: Option<&Server>,
    ) -> Result<Self, String> {
        let result = work.join("measured.txt");
        let log_path = work.join(format!("{}-{layer}.log", tool.dir()));
        let log =
            std::fs::File::create(&log_path).map_err(|e| format!("{}: {e}", log_path.display()))?;
        let log2 = log
            .try_clone()
            .map_err(|e| format!("{}: {e}", log_path.display()))?;
        let me = std::env::current_exe().map_err(|e| format!("current_exe: {e}"))?;
        let mut wrapper = Command::new(me);
        wrapper
            .args(["convert-bench", "measure"])
            .arg(&result)
            .arg(cmd.get_program())
            .args(cmd.get_args())
            .envs(
                cmd.get_envs()
                    .filter_map(|(k, v)| v.map(|v| (k.to_owned(), v.to_owned()))),
            )
            .stdout(log)
            .stderr(log2);
        let cpu_before = match server {
            Some(s) => {
                s.control("/reset")?;
                Some(s.cpu_seconds()?)
            }
            None => None,
        };
        let _ = std::fs::remove_file(&result);
        let status = wrapper
            .status()
            .map_err(|e| format!("cannot start {wrapper:?}: {e}"))?;
        if !status.success() {
            return Err(format!(
                "{} ({layer}) failed ({status}); its output is in {}",
                tool.label(),
                log_path.display()
            ));
        }
        let (server_cpu_s, server_stats) = match (server, cpu_before) {
            (Some(s), Some(before)) => {
                let stats = serde_json::from_str(&s.control("/stats")?)
                    .map_err(|e| format!("server /stats: {e}"))?;
                (Some(s.cpu_seconds()? - before), Some(stats))
            }
            _ => (None, None),
        };
        let text =
            std::fs::read_to_string(&result).map_err(|e| format!("{}: {e}", result.display()))?;
        let m = Measured::parse(&text)?;
        if m.code != 0 {
            return Err(format!(
                "{} ({layer}) failed (exit {}); its output is in {}",
                tool.label(),
                m.code,
                log_path.display()
            ));
        }
        let summary = if matches!(tool, Tool::Virtual | Tool::VirtualS3) {
            Some(json_summary(&log_path)?)
        } else {
            None
        };
        Ok(Self {
            tool,
            layer,
            m,
            server_cpu_s,
            server_stats,
            summary,
        })
    }

    fn describe(&self) -> String {
        format!(
            "{} {}: wall {:.2} s, cpu {:.2} s, tree peak {:.1} MiB, largest process {:.1} MiB \
             ({} samples; sampling cpu {:.2} s)",
            self.tool.label(),
            self.layer,
            self.m.wall_s,
            self.m.user_s + self.m.sys_s,
            self.m.tree_peak_kib as f64 / 1024.0,
            self.m.max_rss_kib as f64 / 1024.0,
            self.m.samples,
            self.m.self_cpu_s
        )
    }
}

/// What `measure` writes.
struct Measured {
    wall_s: f64,
    user_s: f64,
    sys_s: f64,
    tree_peak_kib: u64,
    max_rss_kib: u64,
    samples: u64,
    /// CPU seconds of the measuring process itself (mostly the sampling).
    self_cpu_s: f64,
    code: i32,
}

impl Measured {
    fn line(&self) -> String {
        format!(
            "wall_s={} user_s={} sys_s={} tree_peak_kib={} max_rss_kib={} samples={} self_cpu_s={} code={}\n",
            self.wall_s,
            self.user_s,
            self.sys_s,
            self.tree_peak_kib,
            self.max_rss_kib,
            self.samples,
            self.self_cpu_s,
            self.code
        )
    }

    fn parse(text: &str) -> Result<Self, String> {
        let f: BTreeMap<&str, &str> = text
            .split_whitespace()
            .filter_map(|kv| kv.split_once('='))
            .collect();
        fn num<T: std::str::FromStr>(f: &BTreeMap<&str, &str>, k: &str) -> Result<T, String> {
            f.get(k)
                .and_then(|v| v.parse().ok())
                .ok_or_else(|| format!("measurement without a valid `{k}`"))
        }
        Ok(Self {
            wall_s: num(&f, "wall_s")?,
            user_s: num(&f, "user_s")?,
            sys_s: num(&f, "sys_s")?,
            tree_peak_kib: num(&f, "tree_peak_kib")?,
            max_rss_kib: num(&f, "max_rss_kib")?,
            samples: num(&f, "samples")?,
            self_cpu_s: num(&f, "self_cpu_s")?,
            code: num(&f, "code")?,
        })
    }
}

/// `measure RESULT PROGRAM ARGS…`: runs the program (stdout and stderr inherited) as this
/// process's only child and writes a [`Measured`] line to RESULT. A fresh process per run, so
/// that `getrusage(RUSAGE_CHILDREN)` covers exactly that command's process tree (every
/// descendant reaped within it).
fn measure(args: &[String]) -> Result<(), String> {
    let [result, program, rest @ ..] = args else {
        return Err("usage: convert-bench measure RESULT PROGRAM [ARGS…]".to_owned());
    };
    let mut sampler = TreeSampler::new();
    let start = Instant::now();
    let mut child = Command::new(program)
        .args(rest)
        .spawn()
        .map_err(|e| format!("cannot start {program}: {e}"))?;
    let root = child.id();
    let (stop_tx, stop_rx) = std::sync::mpsc::channel::<()>();
    let sampling = std::thread::spawn(move || {
        let mut peak = 0u64;
        let mut samples = 0u64;
        loop {
            peak = peak.max(sampler.tree_rss_kib(root));
            samples += 1;
            match stop_rx.recv_timeout(Duration::from_millis(10)) {
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
                _ => return (peak, samples),
            }
        }
    });
    let status = child
        .wait()
        .map_err(|e| format!("waiting for {program}: {e}"))?;
    let wall_s = start.elapsed().as_secs_f64();
    let _ = stop_tx.send(());
    let (tree_peak_kib, samples) = sampling.join().map_err(|_| "the sampler panicked")?;
    let usage = nix::sys::resource::getrusage(nix::sys::resource::UsageWho::RUSAGE_CHILDREN)
        .map_err(|e| format!("getrusage: {e}"))?;
    let me = nix::sys::resource::getrusage(nix::sys::resource::UsageWho::RUSAGE_SELF)
        .map_err(|e| format!("getrusage: {e}"))?;
    let secs = |t: nix::sys::time::TimeVal| t.tv_sec() as f64 + t.tv_usec() as f64 / 1e6;
    let m = Measured {
        wall_s,
        user_s: secs(usage.user_time()),
        sys_s: secs(usage.system_time()),
        tree_peak_kib,
        // Linux reports ru_maxrss in KiB.
        max_rss_kib: u64::try_from(usage.max_rss()).unwrap_or(0),
        samples,
        self_cpu_s: secs(me.user_time()) + secs(me.system_time()),
        code: status.code().unwrap_or(-1),
    };
    std::fs::write(result, m.line()).map_err(|e| format!("{result}: {e}"))
}

/// Samples the summed `VmRSS` of a process tree from `/proc`.
///
/// Reading every process's `stat` for its parent costs milliseconds on a busy machine, so the
/// processes that existed before the command started (which cannot be its descendants) are
/// skipped; one that ends is forgotten, so a reused pid is read again.
struct TreeSampler {
    older: std::collections::HashSet<u32>,
}

impl TreeSampler {
    /// Remembers the processes there now (call before starting the command).
    fn new() -> Self {
        Self {
            older: pids().collect(),
        }
    }

    /// The summed `VmRSS` (KiB) of `root` and all its descendants now (processes that end
    /// while they are read count as 0; an orphan re-parented to init is no longer counted).
    fn tree_rss_kib(&mut self, root: u32) -> u64 {
        self.tree(root).iter().filter_map(|&pid| rss_kib(pid)).sum()
    }

    /// `root` and the descendants started after [`TreeSampler::new`].
    fn tree(&mut self, root: u32) -> Vec<u32> {
        let now: std::collections::HashSet<u32> = pids().collect();
        self.older.retain(|pid| now.contains(pid));
        let mut parent: Vec<(u32, u32)> = Vec::new();
        for &pid in now.difference(&self.older) {
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
                continue;
            };
            // `pid (comm) state ppid …`; comm may hold spaces and parentheses.
            let ppid = stat
                .rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().nth(1))
                .and_then(|p| p.parse::<u32>().ok());
            if let Some(ppid) = ppid {
                parent.push((pid, ppid));
            }
        }
        let mut tree = vec![root];
        let mut i = 0;
        while i < tree.len() {
            let p = tree[i];
            tree.extend(
                parent
                    .iter()
                    .filter(|&&(_, pp)| pp == p)
                    .map(|&(pid, _)| pid),
            );
            i += 1;
        }
        tree
    }
}

/// A process's `VmRSS` in KiB (`None` once it has ended; kernel threads have none).
fn rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
}

/// The pids in `/proc` now.
fn pids() -> impl Iterator<Item = u32> {
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse().ok())
}

/// Medians of one tool and layer.
struct Summary {
    wall_s: f64,
    cpu_s: f64,
    tree_mib: f64,
    max_mib: f64,
    server_cpu_s: Option<f64>,
    /// S3 runs: requests, GETs, round trips on the critical path.
    requests: Option<[f64; 3]>,
}

fn summary(runs: &[Run], tool: Tool, layer: &str) -> Option<Summary> {
    let rs: Vec<&Run> = runs
        .iter()
        .filter(|r| r.tool == tool && r.layer == layer)
        .collect();
    if rs.is_empty() {
        return None;
    }
    let med = |f: &dyn Fn(&Run) -> f64| median(rs.iter().map(|r| f(r)).collect());
    Some(Summary {
        wall_s: med(&|r| r.m.wall_s),
        cpu_s: med(&|r| r.m.user_s + r.m.sys_s),
        // A 10 ms sample can miss a short peak that `ru_maxrss` saw: the tree held at least
        // its largest process.
        tree_mib: med(&|r| r.m.tree_peak_kib.max(r.m.max_rss_kib) as f64 / 1024.0),
        max_mib: med(&|r| r.m.max_rss_kib as f64 / 1024.0),
        server_cpu_s: rs
            .iter()
            .all(|r| r.server_cpu_s.is_some())
            .then(|| med(&|r| r.server_cpu_s.unwrap_or(f64::NAN))),
        requests: rs.iter().all(|r| r.server_stats.is_some()).then(|| {
            ["requests", "get", "critical_path"].map(|k| {
                med(&|r| {
                    r.server_stats
                        .as_ref()
                        .and_then(|s| s[k].as_f64())
                        .unwrap_or(f64::NAN)
                })
            })
        }),
    })
}

/// The bytes of every file below `root`.
fn tree_bytes(root: &Path) -> Result<u64, String> {
    files(root)?.iter().try_fold(0u64, |sum, rel| {
        let path = root.join(rel);
        let len = std::fs::metadata(&path)
            .map_err(|e| format!("{}: {e}", path.display()))?
            .len();
        Ok(sum + len)
    })
}

/// The last line of a log that parses as a JSON object (a `--json` summary).
fn json_summary(log: &Path) -> Result<serde_json::Value, String> {
    let text = std::fs::read_to_string(log).map_err(|e| format!("{}: {e}", log.display()))?;
    text.lines()
        .rev()
        .filter(|l| l.starts_with('{'))
        .find_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .ok_or_else(|| format!("{}: no JSON summary", log.display()))
}

/// The median of a numeric field of the `--json` summaries of `tool`'s runs on `layer`.
fn summary_field(runs: &[Run], tool: Tool, layer: &str, key: &str) -> Option<f64> {
    let values: Vec<f64> = runs
        .iter()
        .filter(|r| r.tool == tool && r.layer == layer)
        .filter_map(|r| r.summary.as_ref()?[key].as_f64())
        .collect();
    (!values.is_empty()).then(|| median(values))
}

/// Virtual references against the peer's copy: the speed-up and the shares of the dataset's
/// bytes read and written, against the targets.
fn virtual_table(runs: &[Run], dataset_bytes: &BTreeMap<&str, u64>, size: u32) -> String {
    let mut out = String::from("Virtual references instead of a copy:\n\n");
    let mut line = |text: String| {
        out.push_str("- ");
        out.push_str(&text);
        out.push('\n');
    };
    for (&layer, &bytes) in dataset_bytes {
        let Some(ours) = summary(runs, Tool::Virtual, layer) else {
            continue;
        };
        let refs = summary_field(runs, Tool::Virtual, layer, "references").unwrap_or(f64::NAN);
        line(format!(
            "{layer}: {refs:.0} references in {:.3} s ({:.1} MiB peak RSS of the tree); the \
             dataset is {bytes} bytes",
            ours.wall_s, ours.tree_mib
        ));
        if let Some(peer) = summary(runs, Tool::Peer, layer) {
            let speedup = peer.wall_s / ours.wall_s;
            line(format!(
                "{layer}: webknossos copy-dataset ÷ scifmt virtualize wall time {speedup:.0}× — \
                 target ≥ {MIN_VIRTUAL_SPEEDUP}×: {}",
                verdict(speedup >= MIN_VIRTUAL_SPEEDUP)
            ));
        }
        let share = |key: &str, tool: Tool| {
            summary_field(runs, tool, layer, key).map(|v| (v, v / bytes as f64))
        };
        for (key, max, what) in [
            ("bytes_read", MAX_VIRTUAL_READ_SHARE, "read"),
            ("bytes_written", MAX_VIRTUAL_WRITE_SHARE, "written"),
        ] {
            if let Some((v, f)) = share(key, Tool::Virtual) {
                line(format!(
                    "{layer}: bytes {what} {v:.0}, {:.4} % of the dataset — target ≤ {} %: {}",
                    100.0 * f,
                    100.0 * max,
                    verdict(f <= max)
                ));
            }
        }
        if let Some(s3) = summary(runs, Tool::VirtualS3, layer) {
            let sent = runs
                .iter()
                .filter(|r| r.tool == Tool::VirtualS3 && r.layer == layer)
                .filter_map(|r| r.server_stats.as_ref()?["bytes_sent"].as_f64())
                .collect::<Vec<_>>();
            let requests = s3.requests.map_or(f64::NAN, |[n, _, _]| n);
            let sent = if sent.is_empty() {
                f64::NAN
            } else {
                median(sent)
            };
            line(format!(
                "{layer}: from the S3 test server: {:.3} s, {requests:.0} requests, the server \
                 sent {sent:.0} bytes ({:.4} % of the dataset; the listing and the headers and \
                 jump tables)",
                s3.wall_s,
                100.0 * sent / bytes as f64
            ));
        }
    }
    if size != 1024 {
        line(format!(
            "size {size}³, not the 1024³ of the targets: the verdicts are indicative only"
        ));
    }
    out
}

/// Virtual references at scale (step 8 of the module docs): raw `uint8` mags of 2¹⁷ and 2²⁰
/// blocks of 8³ voxels, made once under `dir`, each virtualized into kerchunk JSON under
/// `measure`. Returns the report.
fn references_at_scale(scifmt: &Path, dir: &Path) -> Result<String, String> {
    const FILE_SIDE: u32 = 8 * 32;
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut out = String::from("Virtual references at scale (raw uint8, blocks of 8³):\n\n");
    let mut per_million = Vec::new();
    for files in [4u32, 32] {
        let mag = dir.join(format!("files-{files}")).join("1");
        if !mag.join("header.wkw").is_file() {
            remove(&mag)?;
            let header = wkw::Header::new(wkw::VoxelType::U8, 1, 8, 32, wkw::BlockType::Raw)
                .map_err(|e| e.to_string())?;
            let ds = wkw::Dataset::create(&mag, header)
                .map_err(|e| format!("{}: {e}", mag.display()))?;
            // One voxel per file: a raw WKW file holds all its blocks, so each file is whole.
            let voxel = wkw::Array::from_vec(1, [1, 1, 1], wkw::Order::Fortran, vec![1u8])
                .map_err(|e| e.to_string())?;
            for i in 0..files {
                ds.write([i * FILE_SIDE, 0, 0], &voxel.view())
                    .map_err(|e| format!("{}: {e}", mag.display()))?;
            }
        }
        let layer = if files == 4 {
            "131072-blocks"
        } else {
            "1048576-blocks"
        };
        let refs = dir.join(format!("files-{files}.json"));
        let mut cmd = Command::new(scifmt);
        cmd.arg("virtualize").arg(&mag).arg(&refs).args([
            "--to",
            "kerchunk",
            "--overwrite",
            "--json",
        ]);
        let run = Run::measured(Tool::Virtual, layer, dir, &mut cmd, None)?;
        let n = run
            .summary
            .as_ref()
            .and_then(|s| s["references"].as_f64())
            .ok_or("virtualize --json: no `references`")?;
        let written = std::fs::metadata(&refs)
            .map_err(|e| format!("{}: {e}", refs.display()))?
            .len();
        let mib = run.m.tree_peak_kib.max(run.m.max_rss_kib) as f64 / 1024.0;
        per_million.push(mib);
        out.push_str(&format!(
            "- {n:.0} references: {:.2} s, {:.2} s CPU, peak RSS of the tree {mib:.1} MiB, \
             kerchunk JSON {:.1} MiB\n",
            run.m.wall_s,
            run.m.user_s + run.m.sys_s,
            written as f64 / (1024.0 * 1024.0)
        ));
        // The same into a new Icechunk repository, then again over it (an update that finds
        // every reference unchanged).
        let repo = dir.join(format!("files-{files}.icechunk"));
        remove(&repo)?;
        for (what, extra) in [
            ("new repository", None),
            ("update, unchanged", Some("--overwrite")),
        ] {
            let mut cmd = Command::new(scifmt);
            cmd.arg("virtualize")
                .arg(&mag)
                .arg(&repo)
                .args(["--to", "icechunk", "--json"])
                .args(extra);
            let run = Run::measured(Tool::Virtual, layer, dir, &mut cmd, None)?;
            let mib = run.m.tree_peak_kib.max(run.m.max_rss_kib) as f64 / 1024.0;
            out.push_str(&format!(
                "- {n:.0} references, Icechunk ({what}): {:.2} s, {:.2} s CPU, peak RSS of the \
                 tree {mib:.1} MiB, repository {:.1} MiB\n",
                run.m.wall_s,
                run.m.user_s + run.m.sys_s,
                tree_bytes(&repo)? as f64 / (1024.0 * 1024.0)
            ));
        }
        // Kerchunk Parquet: the mag as layer `l` of a dataset (a symbolic link to it).
        let ds = dir.join(format!("files-{files}.dataset"));
        if !ds.join("datasource-properties.json").is_file() {
            remove(&ds)?;
            std::fs::create_dir_all(ds.join("l")).map_err(|e| format!("{}: {e}", ds.display()))?;
            #[cfg(unix)]
            std::os::unix::fs::symlink(&mag, ds.join("l").join("1"))
                .map_err(|e| format!("{}: {e}", ds.display()))?;
            let properties = serde_json::json!({
                "id": {"name": "scale", "team": ""},
                "scale": {"factor": [1.0, 1.0, 1.0], "unit": "nanometer"},
                "dataLayers": [{
                    "name": "l", "category": "color", "dataFormat": "wkw",
                    "elementClass": "uint8", "numChannels": 1,
                    "boundingBox": {"topLeft": [0, 0, 0], "width": files * FILE_SIDE,
                                    "height": FILE_SIDE, "depth": FILE_SIDE},
                    "mags": [{"mag": [1, 1, 1], "path": "./l/1"}],
                }],
            });
            std::fs::write(
                ds.join("datasource-properties.json"),
                properties.to_string(),
            )
            .map_err(|e| format!("{}: {e}", ds.display()))?;
        }
        let parquet = dir.join(format!("files-{files}.parquet"));
        let mut cmd = Command::new(scifmt);
        cmd.arg("virtualize").arg(&ds).arg(&parquet).args([
            "--to",
            "kerchunk-parquet",
            "--overwrite",
            "--json",
        ]);
        let run = Run::measured(Tool::Virtual, layer, dir, &mut cmd, None)?;
        let mib = run.m.tree_peak_kib.max(run.m.max_rss_kib) as f64 / 1024.0;
        out.push_str(&format!(
            "- {n:.0} references, kerchunk Parquet: {:.2} s, {:.2} s CPU, peak RSS of the tree \
             {mib:.1} MiB, {:.1} MiB of references\n",
            run.m.wall_s,
            run.m.user_s + run.m.sys_s,
            tree_bytes(&parquet)? as f64 / (1024.0 * 1024.0)
        ));
    }
    if let [small, large] = per_million[..] {
        out.push_str(&format!(
            "- peak RSS with 8× the references: {:.2}× — target: it does not grow with the \
             number of references (≤ 1.5×): {}\n",
            large / small,
            verdict(large / small <= 1.5)
        ));
    }
    Ok(out)
}

fn verdict(ok: bool) -> &'static str {
    if ok { "met" } else { "MISSED" }
}

/// The Markdown table and the targets.
fn table(runs: &[Run], alone: &[(&str, f64)], size: u32) -> String {
    let mut out = String::from(
        "| layer | run | wall s | user + sys s | peak RSS of the tree MiB | largest process MiB | S3: server CPU s, requests (GETs), round trips on the critical path |\n\
         | --- | --- | ---: | ---: | ---: | ---: | ---: |\n",
    );
    for layer in LAYERS {
        for tool in [
            Tool::Ours,
            Tool::Peer,
            Tool::OursS3,
            Tool::PeerS3,
            Tool::Virtual,
            Tool::VirtualS3,
        ] {
            if let Some(s) = summary(runs, tool, layer) {
                let server = match (s.server_cpu_s, s.requests) {
                    (Some(c), Some([n, get, path])) => {
                        format!("{c:.1}, {n:.0} ({get:.0}), {path:.0}")
                    }
                    _ => String::new(),
                };
                out.push_str(&format!(
                    "| {layer} | {} | {:.2} | {:.2} | {:.1} | {:.1} | {server} |\n",
                    tool.label(),
                    s.wall_s,
                    s.cpu_s,
                    s.tree_mib,
                    s.max_mib
                ));
            }
        }
    }
    out.push_str("\nRatios and targets:\n\n");
    let mut line = |text: String| {
        out.push_str("- ");
        out.push_str(&text);
        out.push('\n');
    };
    for layer in LAYERS {
        let (Some(ours), peer) = (
            summary(runs, Tool::Ours, layer),
            summary(runs, Tool::Peer, layer),
        ) else {
            continue;
        };
        if let Some(peer) = &peer {
            let speedup = peer.wall_s / ours.wall_s;
            let mem = peer.tree_mib / ours.tree_mib;
            let target = if layer == "uint8" {
                format!(
                    " — target ≥ {MIN_SPEEDUP}× at 1024³: {}",
                    verdict(speedup >= MIN_SPEEDUP)
                )
            } else {
                String::new()
            };
            line(format!(
                "{layer}: peer ÷ ours wall time {speedup:.2}×, CPU time {:.2}×{target}",
                peer.cpu_s / ours.cpu_s
            ));

            line(format!(
                "{layer}: peer ÷ ours peak RSS of the tree {mem:.1}× — target ≥ {MIN_MEMORY_RATIO}×: {}",
                verdict(mem >= MIN_MEMORY_RATIO)
            ));
        }
        let floor = median(
            alone
                .iter()
                .filter(|(l, _)| *l == layer)
                .map(|&(_, s)| s)
                .collect(),
        );
        if floor > 0.0 {
            let ceiling = peer.as_ref().map_or(String::new(), |p| {
                format!(
                    "; no converter writing these chunks with this libzstd gets above peer ÷ \
                     that = {:.2}× here",
                    p.wall_s / floor
                )
            });
            line(format!(
                "{layer}: zstd level 5 alone ({JOBS} threads, the blocks decoded in memory \
                 beforehand) {floor:.2} s, {:.0} % of our wall time{ceiling}",
                100.0 * floor / ours.wall_s
            ));
        }
        line(format!(
            "{layer}: ours peak RSS of the tree {:.1} MiB — target ≤ {MAX_TREE_MIB} MiB: {}",
            ours.tree_mib,
            verdict(ours.tree_mib <= MAX_TREE_MIB)
        ));
        if let Some(s3) = summary(runs, Tool::OursS3, layer) {
            let slowdown = s3.wall_s / ours.wall_s;
            line(format!(
                "{layer}: S3 → S3 ÷ local wall time {slowdown:.2}× — target ≤ {MAX_S3_SLOWDOWN}×: {}",
                verdict(slowdown <= MAX_S3_SLOWDOWN)
            ));
            if let Some(server_cpu) = s3.server_cpu_s {
                // The server runs on the same cores: no run can take less wall time than all
                // the CPU time spent, ours and the server's, spread over every core.
                let cores = std::thread::available_parallelism().map_or(1, usize::from);
                let bound = (s3.cpu_s + server_cpu) / cores as f64;
                line(format!(
                    "{layer}: S3 → S3 CPU time: ours {:.1} s ({:+.1} s against the local run), \
                     the test server's {server_cpu:.1} s, on the same {cores} cores: at least \
                     {bound:.1} s of wall time, {:.2}× the local time, with every round trip \
                     hidden",
                    s3.cpu_s,
                    s3.cpu_s - ours.cpu_s,
                    bound / ours.wall_s
                ));
            }
            if let Some(peer_s3) = summary(runs, Tool::PeerS3, layer) {
                line(format!(
                    "{layer}: S3 → S3, peer ÷ ours wall time {:.2}×, peak RSS of the tree {:.1}×",
                    peer_s3.wall_s / s3.wall_s,
                    peer_s3.tree_mib / s3.tree_mib
                ));
            }
        }
    }
    let growth = |tool: Tool| {
        Some(summary(runs, tool, "uint64")?.tree_mib / summary(runs, tool, "uint8")?.tree_mib)
    };
    if let Some(g) = growth(Tool::Ours) {
        let peer = growth(Tool::Peer).map_or(String::new(), |p| format!(", the peer's {p:.1}×"));
        line(format!(
            "uint64 ÷ uint8 peak RSS of the tree: ours {g:.1}×{peer} — target: ours does not grow with the voxel size (≤ 2×): {}",
            verdict(g <= 2.0)
        ));
    }
    if size != 1024 {
        line(format!(
            "size {size}³, not the 1024³ of the targets: the verdicts are indicative only"
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use std::process::Stdio;

    use super::*;

    #[test]
    fn measured_line_parses_back() {
        let m = Measured {
            wall_s: 1.5,
            user_s: 0.25,
            sys_s: 0.125,
            tree_peak_kib: 4096,
            max_rss_kib: 2048,
            samples: 7,
            self_cpu_s: 0.01,
            code: 3,
        };
        let back = Measured::parse(&m.line()).unwrap();
        assert_eq!(
            (back.wall_s, back.user_s, back.sys_s, back.self_cpu_s),
            (1.5, 0.25, 0.125, 0.01)
        );
        assert_eq!(
            (
                back.tree_peak_kib,
                back.max_rss_kib,
                back.samples,
                back.code
            ),
            (4096, 2048, 7, 3)
        );
        assert!(Measured::parse("wall_s=1").is_err());
    }

    #[test]
    fn options_are_checked() {
        let args = |a: &[&str]| a.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        let o = parse(&args(&["--size", "256", "--layers", "uint64", "--skip-s3"])).unwrap();
        assert_eq!(
            (o.size, o.layers.as_slice(), o.s3, o.peer),
            (256, &["uint64"][..], false, true)
        );
        for bad in [
            &["--size", "100"][..],
            &["--size", "2048"],
            &["--reps", "0"],
            &["--layers", "float32"],
            &["--size"],
            &["--fast"],
        ] {
            assert!(parse(&args(bad)).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn a_child_started_after_the_snapshot_is_in_the_tree() {
        let mut sampler = TreeSampler::new();
        let mut child = Command::new("cat")
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        let me = std::process::id();
        let tree = sampler.tree(me);
        let alone = sampler.tree(child.id());
        let kib = sampler.tree_rss_kib(child.id());
        drop(child.stdin.take());
        child.wait().unwrap();
        assert_eq!(tree.first(), Some(&me));
        assert!(tree.contains(&child.id()), "{tree:?}");
        assert_eq!(alone, vec![child.id()]);
        assert!(kib > 0);
        // An ended process is not counted.
        assert_eq!(sampler.tree_rss_kib(child.id()), 0);
    }

    #[test]
    fn medians() {
        assert_eq!(median(vec![3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(vec![4.0, 1.0, 2.0, 3.0]), 2.5);
        assert!(median(Vec::new()).is_nan());
    }
}
