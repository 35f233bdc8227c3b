//! What the emulator modules (`azurite`, `fake_gcs`) share: where `cargo xtask` installs a test
//! server, waiting for the line a server prints when it listens, and the few requests made by
//! hand (what the clients under test cannot make).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::sync::mpsc;
use std::time::Duration;

/// `target/NAME` of the workspace, where `cargo xtask NAME` installs a test server.
#[must_use]
pub(crate) fn install_dir(name: &str) -> PathBuf {
    let testkit = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    // crates/testkit → the workspace root.
    let root = testkit
        .parent()
        .and_then(std::path::Path::parent)
        .unwrap_or(testkit);
    root.join("target").join(name)
}

/// Why [`wait_for_line`] found no line.
pub(crate) enum NoLine {
    /// The stream ended (the process exited); the lines it printed.
    Ended(String),
    /// Nothing matched within the timeout; the lines printed so far.
    Timeout(String),
}

/// Reads `stream`'s lines until `found` returns `Some` for one, for at most `timeout`. The lines
/// go through a channel from a thread, so the wait has a deadline; the thread then drains the
/// stream until it ends, so the process never blocks on a full pipe.
pub(crate) fn wait_for_line<T>(
    stream: impl Read + Send + 'static,
    timeout: Duration,
    found: impl Fn(&str) -> Option<T>,
) -> Result<T, NoLine> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stream).lines() {
            let Ok(line) = line else { break };
            let _ = tx.send(line);
        }
    });
    let mut seen = Vec::new();
    loop {
        match rx.recv_timeout(timeout) {
            Ok(line) => match found(&line) {
                Some(t) => return Ok(t),
                None => seen.push(line),
            },
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                return Err(NoLine::Ended(seen.join(" | ")));
            }
            Err(mpsc::RecvTimeoutError::Timeout) => return Err(NoLine::Timeout(seen.join(" | "))),
        }
    }
}

/// Sends `head` (an HTTP/1.1 request's line and headers, with `Connection: close`) and `body`
/// to `addr`, and returns the response's status code and the whole response (as text), waiting
/// at most `timeout` for each read.
pub(crate) fn http_exchange(
    addr: &str,
    head: &str,
    body: &[u8],
    timeout: Duration,
) -> Result<(String, String), String> {
    let failed = |e: std::io::Error| format!("{addr}: {e}");
    let mut stream = TcpStream::connect(addr).map_err(failed)?;
    stream.set_read_timeout(Some(timeout)).map_err(failed)?;
    stream
        .write_all(head.as_bytes())
        .and_then(|()| stream.write_all(body))
        .map_err(failed)?;
    let mut response = Vec::new();
    stream.read_to_end(&mut response).map_err(failed)?;
    let response = String::from_utf8_lossy(&response).into_owned();
    let status = response
        .split_whitespace()
        .nth(1)
        .unwrap_or_default()
        .to_owned();
    Ok((status, response))
}
