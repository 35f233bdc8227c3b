//! The harness of the remote-read benchmarks of `wkw` and `blosc2-frame` (their
//! `examples/wkw_remote_bench.rs` and `examples/frame_remote_bench.rs`, driven by `cargo xtask remote-bench`): command line, synthetic
//! data, the `s3-testserver` binary's control endpoint (request counters), one timed
//! open-then-read sample, the `RESULT` line the xtask summarises, and the download peer's
//! whole-object GET.
//!
//! A separate namespace because only those two examples use it; the server itself does not.

use std::future::Future;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

use object_store::aws::AmazonS3Builder;
use object_store::path::Path as ObjectPath;
use object_store::{ObjectStore, ObjectStoreExt};

/// Result with a message.
pub type Res<T> = Result<T, String>;

/// Concurrency of the download peers (whole objects or 8 MiB parts fetched at once).
pub const DOWNLOAD_CONCURRENCY: usize = 8;

/// The command line of a benchmark example:
///
/// ```text
/// <name> prepare --out DIR
/// <name> run --data DIR [--reps N] [--only SCENARIO:PEER]
/// ```
///
/// `run` needs the server's environment (`AWS_*`, `S3_TESTSERVER_*`). Errors are printed and
/// make the exit status a failure.
pub fn main<F: Future<Output = Res<()>>>(
    prepare: fn(&Path) -> Res<()>,
    run: fn(PathBuf, usize, String) -> F,
) -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("prepare") => flag(&args, "--out").and_then(|d| prepare(Path::new(&d))),
        Some("run") => flag(&args, "--data").and_then(|d| {
            let reps = flag(&args, "--reps")
                .ok()
                .map_or(Ok(3), |r| r.parse().map_err(|e| format!("--reps: {e}")))?;
            let only = flag(&args, "--only").unwrap_or_default();
            block_on(run(PathBuf::from(d), reps, only))
        }),
        _ => Err(
            "usage: (wkw|frame)_remote_bench prepare --out DIR | run --data DIR [--reps N] [--only SCENARIO:PEER]"
                .to_owned(),
        ),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("remote_bench: {e}");
            ExitCode::FAILURE
        }
    }
}

fn flag(args: &[String], name: &str) -> Res<String> {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .cloned()
        .ok_or_else(|| format!("missing {name}"))
}

/// `map_err` helper: prefixes an error with `what`.
pub fn err<E: std::fmt::Display>(what: &str) -> impl FnOnce(E) -> String + '_ {
    move |e| format!("{what}: {e}")
}

/// Whether `scenario`/`peer` is selected by `only` (empty: all; else a substring of
/// `scenario:peer`).
#[must_use]
pub fn selected(only: &str, scenario: &str, peer: &str) -> bool {
    only.is_empty() || format!("{scenario}:{peer}").contains(only)
}

/// Runs `f` to completion on a new multi-threaded tokio runtime.
fn block_on<F: Future<Output = Res<()>>>(f: F) -> Res<()> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(err("runtime"))?
        .block_on(f)
}

/// Runs `f` (a local read) on tokio's blocking threads.
///
/// # Errors
/// `f`'s error, or a panic in `f`.
pub async fn blocking<T: Send + 'static>(f: impl FnOnce() -> Res<T> + Send + 'static) -> Res<T> {
    tokio::task::spawn_blocking(f).await.map_err(err("join"))?
}

/// Whether the data in `out` was prepared as `version` (a stamp file `PREPARED.<name>`).
#[must_use]
pub fn prepared(out: &Path, name: &str, version: &str) -> bool {
    std::fs::read_to_string(out.join(format!("PREPARED.{name}"))).is_ok_and(|s| s == version)
}

/// Records that the data in `out` is prepared as `version`.
///
/// # Errors
/// If the stamp cannot be written.
pub fn mark_prepared(out: &Path, name: &str, version: &str) -> Res<()> {
    std::fs::write(out.join(format!("PREPARED.{name}")), version).map_err(err("stamp"))
}

// ---------------------------------------------------------------------------------------------
// Synthetic data

/// A cheap deterministic hash (for the random voxels).
#[must_use]
pub fn mix(mut x: u64) -> u64 {
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^= x >> 33;
    x = x.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    x ^ (x >> 33)
}

/// A smooth profile along one axis.
#[must_use]
#[allow(
    clippy::cast_precision_loss,
    reason = "indices of benchmark data, far below 2^52"
)]
pub fn profile(n: usize, period: f64, phase: f64) -> Vec<f64> {
    (0..n)
        .map(|i| 40.0 * ((i as f64) / period + phase).sin())
        .collect()
}

// ---------------------------------------------------------------------------------------------
// The server's control endpoint

/// Minimal HTTP GET of the control endpoint (`S3_TESTSERVER_CONTROL`).
fn control(path: &str) -> Res<String> {
    use std::io::{Read, Write};
    let base = std::env::var("S3_TESTSERVER_CONTROL").map_err(err("S3_TESTSERVER_CONTROL"))?;
    let addr = base.trim_start_matches("http://").trim_end_matches('/');
    let mut s = std::net::TcpStream::connect(addr).map_err(err("control connect"))?;
    write!(s, "GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n").map_err(err("control write"))?;
    let mut out = String::new();
    s.read_to_string(&mut out).map_err(err("control read"))?;
    let (head, body) = out.split_once("\r\n\r\n").ok_or("control: bad answer")?;
    if !head.starts_with("HTTP/1.0 200") {
        return Err(format!("control {path}: {head}"));
    }
    Ok(body.to_owned())
}

/// Counters of the requests since the last reset.
#[derive(Debug, Default, Clone, Copy)]
pub struct Counts {
    /// Requests.
    pub requests: u64,
    /// Round trips on the critical path.
    pub critical_path: u64,
    /// Response body bytes sent.
    pub bytes: u64,
    /// Error responses.
    pub errors: u64,
    /// First request's arrival to the last response's end, on the server (ms).
    pub span_ms: f64,
}

fn stats() -> Res<Counts> {
    let body = control("/stats")?;
    let field = |name: &str| -> Res<u64> { number(&body, name) };
    Ok(Counts {
        requests: field("requests")?,
        critical_path: field("critical_path")?,
        bytes: field("bytes_sent")?,
        errors: field("errors")?,
        span_ms: number(&body, "span_ms")?,
    })
}

/// A number field of the `/stats` JSON.
fn number<T: std::str::FromStr>(body: &str, name: &str) -> Res<T>
where
    T::Err: std::fmt::Display,
{
    let key = format!("\"{name}\":");
    let at = body
        .find(&key)
        .ok_or_else(|| format!("stats: no {name} in {body}"))?;
    body[at + key.len()..]
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '.')
        .collect::<String>()
        .parse()
        .map_err(|e| format!("stats {name}: {e}"))
}

fn reset() -> Res<()> {
    control("/reset").map(drop)
}

// ---------------------------------------------------------------------------------------------
// Measurement

/// One measured operation: open, then read; `data` is what the read returned (kept as the
/// reader made it: copying it is not part of the read).
#[derive(Debug)]
pub struct Sample<D> {
    /// Open time (s).
    pub open_s: f64,
    /// Read time (s).
    pub read_s: f64,
    /// The server's counters of the open.
    pub open: Counts,
    /// The server's counters of the read.
    pub read: Counts,
    /// The read's result.
    pub data: D,
}

/// Prints the `RESULT` line of one sample (the line `cargo xtask remote-bench` summarises).
pub fn report<D>(scenario: &str, peer: &str, rep: usize, s: &Sample<D>, needed: u64, hash: &str) {
    println!(
        "RESULT scenario={scenario} peer={peer} rep={rep} open_s={:.6} read_s={:.6} \
         open_requests={} open_rt={} open_bytes={} read_requests={} read_rt={} read_bytes={} \
         read_span_ms={:.3} errors={} needed={needed} sha256={hash}",
        s.open_s,
        s.read_s,
        s.open.requests,
        s.open.critical_path,
        s.open.bytes,
        s.read.requests,
        s.read.critical_path,
        s.read.bytes,
        s.read.span_ms,
        s.open.errors + s.read.errors,
    );
}

/// Times `open` and then `read` (which gets open's output), with the server's counters of each.
///
/// # Errors
/// `open`'s or `read`'s error, or a failed request to the control endpoint.
pub async fn measure<O, D, F1, F2, Fut1, Fut2>(open: F1, read: F2) -> Res<Sample<D>>
where
    F1: FnOnce() -> Fut1,
    Fut1: Future<Output = Res<O>>,
    F2: FnOnce(O) -> Fut2,
    Fut2: Future<Output = Res<D>>,
{
    reset()?;
    let t = Instant::now();
    let opened = open().await?;
    let open_s = t.elapsed().as_secs_f64();
    let open_counts = stats()?;
    reset()?;
    let t = Instant::now();
    let data = read(opened).await?;
    let read_s = t.elapsed().as_secs_f64();
    let read_counts = stats()?;
    Ok(Sample {
        open_s,
        read_s,
        open: open_counts,
        read: read_counts,
        data,
    })
}

/// The S3 store of the server whose environment this process runs in.
///
/// # Errors
/// A missing variable, or a client that cannot be built.
pub fn store_from_env() -> Res<Arc<dyn ObjectStore>> {
    let var = |k: &str| {
        std::env::var(k).map_err(|_| format!("{k} is not set (run under the server's environment)"))
    };
    let s3 = AmazonS3Builder::new()
        .with_endpoint(var("AWS_ENDPOINT_URL")?)
        .with_bucket_name(var("S3_TESTSERVER_BUCKET")?)
        .with_access_key_id(var("AWS_ACCESS_KEY_ID")?)
        .with_secret_access_key(var("AWS_SECRET_ACCESS_KEY")?)
        .with_region(var("AWS_REGION")?)
        .with_allow_http(true)
        .with_virtual_hosted_style_request(false)
        .build()
        .map_err(err("S3 client"))?;
    Ok(Arc::new(s3))
}

/// GET a whole object into memory.
///
/// # Errors
/// A failed request.
pub async fn get_all(store: &Arc<dyn ObjectStore>, key: &ObjectPath) -> Res<bytes::Bytes> {
    store
        .get(key)
        .await
        .map_err(err("GET"))?
        .bytes()
        .await
        .map_err(err("GET body"))
}
