//! The S3 test server (`crates/s3-testserver`) as a child process of a benchmark task: started
//! with injected latency, its environment (endpoint, credentials) read from its stdout, its
//! control endpoint and CPU time queried, stopped when dropped.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};

/// The S3 test server process; dropping it closes its stdin (it stops and deletes its files).
pub(crate) struct Server {
    child: Child,
    stdin: Option<ChildStdin>,
    /// The `KEY=value` lines it printed (endpoint, credentials, bucket, control URL).
    pub(crate) env: Vec<(String, String)>,
    tmp: PathBuf,
}

impl Server {
    /// Starts `bin` serving the files of `dir` (under the key prefix `prefix`, if given) with
    /// `latency_ms` injected per request, and waits until it is ready.
    pub(crate) fn start(
        bin: &Path,
        work: &Path,
        latency_ms: u64,
        dir: &Path,
        prefix: Option<&str>,
    ) -> Result<Self, String> {
        // The backing directory goes to TMPDIR: keep it under our work directory (found again
        // for the checks), cleared before each start (a killed server leaves it behind).
        let tmp = work.join("tmp");
        if tmp.exists() {
            std::fs::remove_dir_all(&tmp).map_err(|e| format!("{}: {e}", tmp.display()))?;
        }
        std::fs::create_dir_all(&tmp).map_err(|e| format!("{}: {e}", tmp.display()))?;
        let mut cmd = Command::new(bin);
        cmd.args(["--latency-ms", &latency_ms.to_string(), "--dir"])
            .arg(dir)
            .args(prefix.map(|p| ["--prefix", p]).into_iter().flatten())
            .env("TMPDIR", &tmp)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        eprintln!("$ {cmd:?}");
        let mut child = cmd
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", bin.display()))?;
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().ok_or("server stdout")?;
        let mut server = Self {
            child,
            stdin,
            env: Vec::new(),
            tmp,
        };
        for line in BufReader::new(stdout).lines() {
            let line = line.map_err(|e| format!("server stdout: {e}"))?;
            if line == "READY" {
                return Ok(server);
            }
            if let Some((k, v)) = line.split_once('=') {
                server.env.push((k.to_owned(), v.to_owned()));
            }
        }
        Err("the server exited before it was ready".to_owned())
    }

    pub(crate) fn var(&self, name: &str) -> Result<&str, String> {
        self.env
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
            .ok_or_else(|| format!("the server did not print {name}"))
    }

    /// The bucket's directory (the server's only temporary directory under ours).
    pub(crate) fn backing_dir(&self) -> Result<PathBuf, String> {
        let bucket = self.var("S3_TESTSERVER_BUCKET")?;
        let mut dirs = std::fs::read_dir(&self.tmp)
            .map_err(|e| format!("{}: {e}", self.tmp.display()))?
            .flatten()
            .map(|e| e.path().join(bucket))
            .filter(|p| p.is_dir());
        match (dirs.next(), dirs.next()) {
            (Some(dir), None) => Ok(dir),
            _ => Err(format!(
                "{}: not exactly one server directory",
                self.tmp.display()
            )),
        }
    }

    /// A GET on the control endpoint; the response body.
    pub(crate) fn control(&self, path: &str) -> Result<String, String> {
        let base = self.var("S3_TESTSERVER_CONTROL")?;
        let addr = base.strip_prefix("http://").unwrap_or(base);
        let mut stream = TcpStream::connect(addr).map_err(|e| format!("control {addr}: {e}"))?;
        write!(stream, "GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n")
            .map_err(|e| format!("control {path}: {e}"))?;
        let mut response = String::new();
        stream
            .read_to_string(&mut response)
            .map_err(|e| format!("control {path}: {e}"))?;
        let (head, body) = response
            .split_once("\r\n\r\n")
            .ok_or_else(|| format!("control {path}: no response body"))?;
        if !head.starts_with("HTTP/1.0 200") {
            return Err(format!("control {path}: {head}"));
        }
        Ok(body.to_owned())
    }

    /// The server's user + system CPU seconds so far (`/proc/<pid>/stat`, clock ticks of 1/100 s,
    /// the Linux default `USER_HZ`).
    pub(crate) fn cpu_seconds(&self) -> Result<f64, String> {
        let path = format!("/proc/{}/stat", self.child.id());
        let stat = std::fs::read_to_string(&path).map_err(|e| format!("{path}: {e}"))?;
        let fields: Vec<&str> = stat
            .rsplit_once(')')
            .map(|(_, rest)| rest.split_whitespace().collect())
            .unwrap_or_default();
        // After the comm: state(0) ppid(1) … utime(11) stime(12).
        let tick = |i: usize| -> Result<f64, String> {
            fields
                .get(i)
                .and_then(|v| v.parse::<u64>().ok())
                .map(|t| t as f64 / 100.0)
                .ok_or_else(|| format!("{path}: no field {i}"))
        };
        Ok(tick(11)? + tick(12)?)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(mut stdin) = self.stdin.take() {
            let _ = stdin.flush();
        }
        let _ = self.child.wait();
    }
}
