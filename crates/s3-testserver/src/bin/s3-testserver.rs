//! `s3-testserver`: the in-process test server as a process, for benchmarks and manual runs
//! with clients in other languages (e.g. tensorstore).
//!
//! ```text
//! s3-testserver [--gcs] [--latency-ms N] [--dir PATH] [--prefix KEY]
//! s3-testserver --webdav
//! ```
//!
//! `--webdav` (feature `webdav`) serves the WebDAV server (`WebDavServer`) instead:
//! it prints `WEBDAV_ENDPOINT=http://127.0.0.1:PORT` and `WEBDAV_ROOT=DIR` (the served
//! directory, which clients fill directly), then `READY`, and runs until its standard input
//! reaches end of file (the directory is then deleted).
//!
//! - `--gcs`: also speak Cloud Storage's XML API (`TestServer::start_gcs`); the environment
//!   printed then adds `GOOGLE_BASE_URL`, `GCE_METADATA_HOST` (the server as the metadata
//!   server: VM-style credentials for object_store's and Icechunk's GCS clients) and
//!   `GCS_TESTSERVER_TOKEN` (the bearer token writes need).
//! - `--latency-ms N`: every request waits N ms before it is handled (default 0).
//! - `--dir PATH`: upload every file under PATH (recursively) before serving, to
//!   `KEY/<relative path>` (`--prefix`, default the bucket root); the upload bypasses latency
//!   and the log.
//!
//! When ready, it prints `NAME=value` lines to stdout — the client environment of
//! [`TestServer::env`], `S3_TESTSERVER_BUCKET`, and `S3_TESTSERVER_CONTROL` (the control
//! endpoint below) — then a line `READY`. It runs until its standard input reaches end of file
//! (close the pipe; the backing directory is then deleted) or it is killed (a killed server
//! leaves its temporary directory behind: point `TMPDIR` at a directory you clean).
//!
//! The control endpoint is plain HTTP/1.0 on another loopback port, one request per
//! connection, answering `GET`s:
//!
//! | path | answer |
//! | --- | --- |
//! | `/reset` | clears the request log (`{"ok":true}`) |
//! | `/stats` | JSON over the log: `requests`, `critical_path`, `bytes_sent`, `bytes_received`, `get`, `head`, `put`, `other`, `errors` (status 0 or ≥ 400), `span_ms` (first start to last end) |
//! | `/log` | one tab-separated line per request: seq, method, key, range, status, bytes sent, start and end in µs |
//! | `/latency?ms=N` | sets the injected latency |
//! | `/quit` | stops the server |

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::mpsc;
use std::time::Duration;

#[cfg(feature = "webdav")]
use s3_testserver::WebDavServer;
use s3_testserver::{TestServer, critical_path};

/// Command-line options.
struct Args {
    webdav: bool,
    gcs: bool,
    latency: Duration,
    dir: Option<PathBuf>,
    prefix: String,
}

const USAGE: &str = "usage: s3-testserver [--gcs] [--latency-ms N] [--dir PATH] [--prefix KEY] \
                     | s3-testserver --webdav";

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        webdav: false,
        gcs: false,
        latency: Duration::ZERO,
        dir: None,
        prefix: String::new(),
    };
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        let mut value = || {
            it.next()
                .ok_or_else(|| format!("{a} needs a value\n{USAGE}"))
        };
        match a.as_str() {
            "--latency-ms" => {
                let v = value()?;
                let ms: u64 = v
                    .parse()
                    .map_err(|e| format!("--latency-ms {v}: {e}\n{USAGE}"))?;
                args.latency = Duration::from_millis(ms);
            }
            "--dir" => args.dir = Some(PathBuf::from(value()?)),
            "--webdav" => args.webdav = true,
            "--gcs" => args.gcs = true,
            "--prefix" => args.prefix = value()?,
            "-h" | "--help" => return Err(USAGE.to_owned()),
            other => return Err(format!("unknown argument `{other}`\n{USAGE}")),
        }
    }
    Ok(args)
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(msg) => {
            eprintln!("s3-testserver: {msg}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<(), String> {
    let args = parse_args()?;
    if args.webdav {
        #[cfg(feature = "webdav")]
        return run_webdav();
        #[cfg(not(feature = "webdav"))]
        return Err("--webdav: built without the `webdav` feature".to_owned());
    }
    let server = if args.gcs {
        TestServer::start_gcs()
    } else {
        TestServer::start()
    };
    let server = Arc::new(server.map_err(|e| format!("starting the server: {e}"))?);
    if let Some(dir) = &args.dir {
        let n = server
            .upload_dir(dir, &args.prefix)
            .map_err(|e| format!("uploading {}: {e}", dir.display()))?;
        eprintln!("s3-testserver: uploaded {n} files from {}", dir.display());
    }
    server.faults().set_latency(args.latency);

    let control = TcpListener::bind(("127.0.0.1", 0)).map_err(|e| format!("control port: {e}"))?;
    let control_addr = control
        .local_addr()
        .map_err(|e| format!("control port: {e}"))?;
    let (quit_tx, quit_rx) = mpsc::channel::<()>();

    {
        // A weak reference, so that `main` owns the server alone when it stops it.
        let server = Arc::downgrade(&server);
        let quit = quit_tx.clone();
        std::thread::Builder::new()
            .name("s3-testserver-control".into())
            .spawn(move || {
                for stream in control.incoming() {
                    let Ok(stream) = stream else { continue };
                    let Some(server) = server.upgrade() else {
                        break;
                    };
                    if let Err(e) = answer(stream, &server, &quit) {
                        eprintln!("s3-testserver: control request: {e}");
                    }
                }
            })
            .map_err(|e| format!("control thread: {e}"))?;
    }
    std::thread::Builder::new()
        .name("s3-testserver-stdin".into())
        .spawn(move || {
            // Ends when stdin reaches EOF (or fails).
            let _ = std::io::copy(&mut std::io::stdin().lock(), &mut std::io::sink());
            let _ = quit_tx.send(());
        })
        .map_err(|e| format!("stdin thread: {e}"))?;

    {
        let mut out = std::io::stdout().lock();
        let gcs = if args.gcs {
            let mut env = server.gcs_env();
            env.push((
                "GCS_TESTSERVER_TOKEN".to_owned(),
                server.gcs_token().to_owned(),
            ));
            env
        } else {
            Vec::new()
        };
        let lines = server
            .env()
            .into_iter()
            .chain(gcs)
            .chain([
                (
                    "S3_TESTSERVER_BUCKET".to_owned(),
                    server.bucket().to_owned(),
                ),
                (
                    "S3_TESTSERVER_CONTROL".to_owned(),
                    format!("http://{control_addr}"),
                ),
            ])
            .map(|(k, v)| format!("{k}={v}\n"))
            .collect::<String>();
        out.write_all(lines.as_bytes())
            .and_then(|()| out.write_all(b"READY\n"))
            .and_then(|()| out.flush())
            .map_err(|e| format!("stdout: {e}"))?;
    }

    let _ = quit_rx.recv();
    // Stop the server and delete its backing directory.
    match Arc::try_unwrap(server) {
        Ok(server) => drop(server),
        Err(shared) => {
            // A control request is being answered right now: delete the files ourselves.
            let dir = shared.backing_dir();
            if let Some(root) = dir.parent() {
                let _ = std::fs::remove_dir_all(root);
            }
        }
    }
    Ok(())
}

/// `--webdav`: the WebDAV server until stdin ends.
#[cfg(feature = "webdav")]
fn run_webdav() -> Result<(), String> {
    let server = WebDavServer::start().map_err(|e| format!("starting the server: {e}"))?;
    let mut out = std::io::stdout().lock();
    let lines = format!(
        "WEBDAV_ENDPOINT={}\nWEBDAV_ROOT={}\nREADY\n",
        server.endpoint(),
        server.root().display()
    );
    out.write_all(lines.as_bytes())
        .and_then(|()| out.flush())
        .map_err(|e| format!("stdout: {e}"))?;
    drop(out);
    // Ends when stdin reaches EOF (or fails); dropping the server deletes its directory.
    let _ = std::io::copy(&mut std::io::stdin().lock(), &mut std::io::sink());
    Ok(())
}

/// Answers one control request.
fn answer(stream: TcpStream, server: &TestServer, quit: &mpsc::Sender<()>) -> std::io::Result<()> {
    stream.set_read_timeout(Some(Duration::from_secs(5)))?;
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut request_line = String::new();
    reader.by_ref().take(8192).read_line(&mut request_line)?;
    // Skip the headers.
    loop {
        let mut line = String::new();
        let n = reader.by_ref().take(8192).read_line(&mut line)?;
        if n == 0 || line == "\r\n" || line == "\n" {
            break;
        }
    }
    let target = request_line.split_whitespace().nth(1).unwrap_or("/");
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let (status, content_type, body) = match path {
        "/reset" => {
            server.reset_stats();
            ("200 OK", "application/json", "{\"ok\":true}\n".to_owned())
        }
        "/stats" => ("200 OK", "application/json", stats_json(server)),
        "/log" => ("200 OK", "text/plain", log_text(server)),
        "/latency" => {
            let ms = query
                .split('&')
                .find_map(|kv| kv.strip_prefix("ms="))
                .and_then(|v| v.parse::<u64>().ok());
            match ms {
                Some(ms) => {
                    server.faults().set_latency(Duration::from_millis(ms));
                    ("200 OK", "application/json", "{\"ok\":true}\n".to_owned())
                }
                None => ("400 Bad Request", "text/plain", "need ?ms=N\n".to_owned()),
            }
        }
        "/quit" => {
            let _ = quit.send(());
            ("200 OK", "application/json", "{\"ok\":true}\n".to_owned())
        }
        _ => ("404 Not Found", "text/plain", "unknown path\n".to_owned()),
    };
    let mut stream = stream;
    write!(
        stream,
        "HTTP/1.0 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )?;
    stream.flush()
}

/// The `/stats` JSON.
fn stats_json(server: &TestServer) -> String {
    let log = server.log();
    let (mut get, mut head, mut put, mut other, mut errors) = (0u64, 0u64, 0u64, 0u64, 0u64);
    let (mut sent, mut received) = (0u64, 0u64);
    for r in &log {
        match r.method.as_str() {
            "GET" => get += 1,
            "HEAD" => head += 1,
            "PUT" => put += 1,
            _ => other += 1,
        }
        if r.status == 0 || r.status >= 400 {
            errors += 1;
        }
        sent = sent.saturating_add(r.bytes_sent);
        received = received.saturating_add(r.bytes_received);
    }
    let first = log.iter().map(|r| r.start).min();
    let last = log.iter().filter_map(|r| r.end).max();
    let span_ms = match (first, last) {
        (Some(a), Some(b)) => b.saturating_sub(a).as_secs_f64() * 1e3,
        _ => 0.0,
    };
    format!(
        "{{\"requests\":{},\"critical_path\":{},\"bytes_sent\":{sent},\"bytes_received\":{received},\
         \"get\":{get},\"head\":{head},\"put\":{put},\"other\":{other},\"errors\":{errors},\"span_ms\":{span_ms:.3}}}\n",
        log.len(),
        critical_path(&log)
    )
}

/// The `/log` text.
fn log_text(server: &TestServer) -> String {
    server
        .log()
        .iter()
        .map(|r| {
            format!(
                "{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\n",
                r.seq,
                r.method,
                r.key,
                r.range.as_deref().unwrap_or("-"),
                r.status,
                r.bytes_sent,
                r.start.as_micros(),
                r.end
                    .map_or_else(|| "-".to_owned(), |e| e.as_micros().to_string())
            )
        })
        .collect()
}
