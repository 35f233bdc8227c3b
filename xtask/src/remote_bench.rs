//! `cargo xtask remote-bench [--reps N] [--latency-ms MS]`: remote reads against
//! their peers on one S3 server with injected latency, as one Markdown table.
//!
//! 1. Builds (release) the `s3-testserver` binary and the benchmark examples next to the code
//!    they measure: `wkw_remote_bench` of `crates/wkw` and `frame_remote_bench` of
//!    `crates/blosc2-frame` (their harness is `s3_testserver::bench`).
//! 2. Creates or reuses the virtualenv `target/remote-bench-venv` with [`REQUIREMENTS`]
//!    (tensorstore from PyPI).
//! 3. Prepares the data once in `target/remote-bench/` (`wkw_remote_bench prepare`: a 512³ LZ4
//!    wkw dataset with block_len 32 / file_len 4; `frame_remote_bench prepare`: a 1 GiB b2nd
//!    frame; then the same wkw voxels as a sharded Zarr v3 array written by tensorstore:
//!    shards = wkw files, inner chunks = wkw blocks, blosc-lz4).
//! 4. Starts `s3-testserver --latency-ms MS --dir target/remote-bench/data` (every request waits
//!    MS before it is handled; the upload is not delayed).
//! 5. Runs both examples' `run` (scifmt's remote readers and the download-then-read-locally
//!    peers) and the tensorstore peer in alternating rounds, each repeating every scenario, with the
//!    server's request log reset and read around every open and every read.
//! 6. Checks every peer's result against the expected voxels (SHA-256 of the same bytes) and
//!    prints medians: requests, round trips on the critical path, bytes sent by the server
//!    (response bodies) vs bytes needed, open and read times; "server busy" is the time from the
//!    read's first request arriving to its last response byte leaving, on the server's clock
//!    (the rest of the read time is the client's own work before and after).
//!
//! Takes one to two minutes after the first build; not part of CI (it needs Python and
//! PyPI).

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Stdio};

use crate::s3server::Server;
use crate::util::{Flags, cargo, exec, median, project_root, venv_at};

/// What the tensorstore peer needs, pinned.
const REQUIREMENTS: &[&str] = &["tensorstore==0.1.86", "numpy==2.4.6"];
/// The peer's script (written to the work directory).
const TENSORSTORE_PEER: &str = include_str!("remote_bench_tensorstore.py");

const USAGE: &str = "remote-bench [--reps N] [--latency-ms MS]";

/// Runs the task.
///
/// # Errors
/// On bad arguments, a failed build, venv or pip install, a server that does not start, a
/// benchmark process failing, or results that differ between peers.
pub(crate) fn run(args: &[String]) -> Result<(), String> {
    let mut reps = 6usize;
    let mut latency_ms = 20u64;
    let mut f = Flags::new(args, USAGE);
    while let Some(a) = f.next_flag() {
        match a {
            "--reps" => reps = f.number(a, 1..=1000)?,
            "--latency-ms" => latency_ms = f.number(a, 0..=60_000)?,
            other => return Err(f.unknown(other)),
        }
    }

    let root = project_root();
    let target = root.join("target");
    let work = target.join("remote-bench");
    std::fs::create_dir_all(&work).map_err(|e| format!("{}: {e}", work.display()))?;

    exec(cargo().args([
        "build",
        "--release",
        "-p",
        "scifmt-s3-testserver",
        "--bin",
        "s3-testserver",
        "-p",
        "wkw",
        "--example",
        "wkw_remote_bench",
        "-p",
        "blosc2-frame",
        "--example",
        "frame_remote_bench",
    ]))?;
    // Cargo's output directory (`CARGO_TARGET_DIR` when set); data and venv stay in `target/`.
    let release = crate::util::cargo_target_dir().join("release");
    let server_bin = release.join("s3-testserver");
    let examples = release.join("examples");
    let python = venv_at(&target.join("remote-bench-venv"), REQUIREMENTS)?;
    let script = work.join("remote_bench_tensorstore.py");
    std::fs::write(&script, TENSORSTORE_PEER).map_err(|e| format!("{}: {e}", script.display()))?;
    // The peers, in the order they run: our two examples, then tensorstore.
    let peer = |program: &Path, script: Option<&Path>| {
        let mut cmd = Command::new(program);
        cmd.args(script);
        cmd
    };
    let peers = [
        (examples.join("wkw_remote_bench"), None),
        (examples.join("frame_remote_bench"), None),
        (python, Some(script)),
    ];

    for (program, script) in &peers {
        exec(
            peer(program, script.as_deref())
                .arg("prepare")
                .arg(if script.is_some() { "--data" } else { "--out" })
                .arg(&work),
        )?;
    }

    let server = Server::start(&server_bin, &work, latency_ms, &work.join("data"), None)?;
    let rounds = reps.min(2);
    let per_round = reps.div_ceil(rounds);
    let total_reps = per_round * rounds;
    let per_round = per_round.to_string();
    let mut lines = Vec::new();
    for round in 0..rounds {
        eprintln!("remote-bench: round {} of {rounds}", round + 1);
        for (program, script) in &peers {
            lines.extend(capture(
                peer(program, script.as_deref())
                    .arg("run")
                    .arg("--data")
                    .arg(&work)
                    .args(["--reps", &per_round])
                    .envs(server.env.iter().cloned()),
            )?);
        }
    }
    drop(server);

    let table = summarize(&lines)?;
    println!(
        "\nRemote reads, {latency_ms} ms injected per request, {total_reps} repetitions per peer \
         (medians; warm-up repetitions dropped):\n"
    );
    println!("{table}");
    Ok(())
}

/// Runs a benchmark process; returns its stdout lines (stderr passes through).
fn capture(cmd: &mut Command) -> Result<Vec<String>, String> {
    eprintln!("$ {cmd:?}");
    let out = cmd
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| format!("cannot start {cmd:?}: {e}"))?;
    if !out.status.success() {
        return Err(format!("{cmd:?} failed with {}", out.status));
    }
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_owned)
        .collect())
}

/// One `RESULT` line.
#[derive(Debug)]
struct Row {
    open_s: f64,
    read_s: f64,
    open_requests: u64,
    open_rt: u64,
    read_requests: u64,
    read_rt: u64,
    bytes: u64,
    span_ms: f64,
    errors: u64,
    needed: u64,
}

fn fields(line: &str) -> BTreeMap<&str, &str> {
    line.split_whitespace()
        .skip(1)
        .filter_map(|kv| kv.split_once('='))
        .collect()
}

fn num<T: std::str::FromStr>(f: &BTreeMap<&str, &str>, k: &str) -> Result<T, String> {
    f.get(k)
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| format!("result line without a valid `{k}`"))
}

/// `a` or `a–b` for the spread of a count over repetitions.
fn spread(v: impl Iterator<Item = u64> + Clone) -> String {
    let (lo, hi) = (v.clone().min().unwrap_or(0), v.max().unwrap_or(0));
    if lo == hi {
        lo.to_string()
    } else {
        format!("{lo}–{hi}")
    }
}

/// Checks the checksums and builds the table.
fn summarize(lines: &[String]) -> Result<String, String> {
    let mut expected: BTreeMap<String, String> = BTreeMap::new();
    let mut notes = Vec::new();
    let mut rows: BTreeMap<(String, String), Vec<Row>> = BTreeMap::new();
    for line in lines {
        let f = fields(line);
        let scenario = f.get("scenario").copied().unwrap_or_default().to_owned();
        if line.starts_with("EXPECT ") {
            let hash = f.get("sha256").copied().unwrap_or_default().to_owned();
            if let Some(old) = expected.insert(scenario.clone(), hash.clone())
                && old != hash
            {
                return Err(format!("{scenario}: expected results differ between runs"));
            }
            if let (Some(frame), Some(logical)) = (f.get("frame_bytes"), f.get("logical_bytes")) {
                let note =
                    format!("{scenario}: frame {frame} bytes stored, {logical} bytes logical");
                if !notes.contains(&note) {
                    notes.push(note);
                }
            }
        } else if line.starts_with("RESULT ") {
            let peer = f.get("peer").copied().unwrap_or_default().to_owned();
            let hash = f.get("sha256").copied().unwrap_or_default();
            if expected.get(&scenario).map(String::as_str) != Some(hash) {
                return Err(format!(
                    "{scenario}: {peer} returned other voxels than expected"
                ));
            }
            if num::<u64>(&f, "rep")? == 0 {
                continue; // warm-up
            }
            rows.entry((scenario, peer)).or_default().push(Row {
                open_s: num(&f, "open_s")?,
                read_s: num(&f, "read_s")?,
                open_requests: num(&f, "open_requests")?,
                open_rt: num(&f, "open_rt")?,
                read_requests: num(&f, "read_requests")?,
                read_rt: num(&f, "read_rt")?,
                bytes: num(&f, "read_bytes")?,
                span_ms: num(&f, "read_span_ms")?,
                errors: num(&f, "errors")?,
                needed: num(&f, "needed")?,
            });
        }
    }
    if rows.is_empty() {
        return Err("no results".to_owned());
    }
    let mut out = String::from(
        "| scenario | peer | requests open + read | round trips open + read | bytes read / needed | open ms | read ms (server busy) | open + read ms | peer ÷ scifmt time: read, open + read (> 1: scifmt faster) |\n\
         | --- | --- | --- | --- | --- | ---: | ---: | ---: | ---: |\n",
    );
    let scenarios: Vec<String> = {
        let mut s: Vec<String> = rows.keys().map(|(s, _)| s.clone()).collect();
        s.dedup();
        s
    };
    let order = ["scifmt", "scifmt-c16", "download", "tensorstore"];
    for scenario in &scenarios {
        let times = |peer: &str| {
            rows.get(&(scenario.clone(), peer.to_owned())).map(|r| {
                (
                    median(r.iter().map(|x| x.read_s).collect()),
                    median(r.iter().map(|x| x.open_s + x.read_s).collect()),
                )
            })
        };
        let base = times("scifmt");
        for peer in order {
            let Some(r) = rows.get(&(scenario.clone(), peer.to_owned())) else {
                continue;
            };
            let (read, total) = times(peer).unwrap_or((f64::NAN, f64::NAN));
            let open = median(r.iter().map(|x| x.open_s).collect());
            let bytes = median(r.iter().map(|x| x.bytes as f64).collect());
            let span = median(r.iter().map(|x| x.span_ms).collect());
            let needed = r.first().map_or(0, |x| x.needed);
            let ratio = match base {
                Some((b_read, b_total)) if peer != "scifmt" => {
                    format!("{:.2}×, {:.2}×", read / b_read, total / b_total)
                }
                _ => "1".to_owned(),
            };
            let errors: u64 = r.iter().map(|x| x.errors).sum();
            let peer_label = if errors > 0 {
                format!("{peer} ({errors} error responses)")
            } else {
                peer.to_owned()
            };
            out.push_str(&format!(
                "| {scenario} | {peer_label} | {} + {} | {} + {} | {:.1} MB / {:.1} MB ({:.2}×) | {:.0} | {:.0} ({span:.0}) | {:.0} | {ratio} |\n",
                spread(r.iter().map(|x| x.open_requests)),
                spread(r.iter().map(|x| x.read_requests)),
                spread(r.iter().map(|x| x.open_rt)),
                spread(r.iter().map(|x| x.read_rt)),
                bytes / 1e6,
                needed as f64 / 1e6,
                bytes / needed as f64,
                open * 1e3,
                read * 1e3,
                total * 1e3,
            ));
        }
    }
    for n in notes {
        out.push_str(&format!("\n{n}"));
    }
    out.push_str(
        "\nEvery peer's result was checked against the same voxels (SHA-256) before it was counted.",
    );
    Ok(out)
}
