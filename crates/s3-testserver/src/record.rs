//! Request log and counters.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU16, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// One HTTP request the server received, as the log keeps it.
///
/// Times are measured from the server's start on the server's monotonic clock. `end` is when the
/// last byte of the response body was handed to the connection (or the request failed); it is
/// `None` while the response is still being sent.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct RequestRecord {
    /// Sequence number (0, 1, ... since the last [`reset`](crate::TestServer::reset_stats)).
    pub seq: u64,
    /// HTTP method (`GET`, `PUT`, `HEAD`, `POST`, `DELETE`).
    pub method: String,
    /// Object key (percent-decoded path after the bucket); empty for bucket-level requests.
    pub key: String,
    /// Raw query string (e.g. `uploads`, `partNumber=1&uploadId=...`, `list-type=2&prefix=...`).
    pub query: String,
    /// The `Range` header, if any (e.g. `bytes=0-1023`).
    pub range: Option<String>,
    /// When the request arrived.
    pub start: Duration,
    /// When the response was complete (see the type docs).
    pub end: Option<Duration>,
    /// HTTP status sent; 0 when no response was sent (connection reset, or the request is still
    /// being handled).
    pub status: u16,
    /// Request body bytes read.
    pub bytes_received: u64,
    /// Response body bytes sent.
    pub bytes_sent: u64,
    /// The fault injected into this request, if any (its `Display` text).
    pub fault: Option<String>,
}

impl RequestRecord {
    /// Whether this is a GET of an object (a data read).
    #[must_use]
    pub fn is_object_get(&self) -> bool {
        self.method == "GET" && !self.key.is_empty()
    }
}

/// Counters since the server started or the last reset.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Stats {
    /// Requests received (including faulted ones).
    pub requests: u64,
    /// Requests by HTTP method.
    pub by_method: BTreeMap<String, u64>,
    /// Responses by status (0 = no response: connection reset, or still being handled).
    pub by_status: BTreeMap<u16, u64>,
    /// Request body bytes read by the server.
    pub bytes_received: u64,
    /// Response body bytes sent by the server.
    pub bytes_sent: u64,
    /// Requests that got an injected fault.
    pub faults: u64,
}

impl Stats {
    /// Requests with this method (0 if none).
    #[must_use]
    pub fn method(&self, method: &str) -> u64 {
        self.by_method.get(method).copied().unwrap_or(0)
    }
}

/// Live state of one request (shared between the handler and the body wrappers).
#[derive(Debug)]
pub(crate) struct LiveRecord {
    pub(crate) seq: u64,
    pub(crate) method: String,
    pub(crate) key: String,
    pub(crate) query: String,
    pub(crate) range: Option<String>,
    pub(crate) start: Duration,
    /// Nanoseconds since server start + 1 (0 = not ended).
    end: AtomicU64,
    pub(crate) status: AtomicU16,
    pub(crate) bytes_received: AtomicU64,
    pub(crate) bytes_sent: AtomicU64,
    pub(crate) fault: Option<String>,
    epoch: Instant,
}

impl LiveRecord {
    /// Mark the request finished now (first call wins).
    pub(crate) fn finish(&self) {
        let nanos = u64::try_from(self.epoch.elapsed().as_nanos())
            .unwrap_or(u64::MAX - 1)
            .saturating_add(1);
        let _ = self
            .end
            .compare_exchange(0, nanos, Ordering::AcqRel, Ordering::Acquire);
    }

    fn snapshot(&self) -> RequestRecord {
        let end = self.end.load(Ordering::Acquire);
        RequestRecord {
            seq: self.seq,
            method: self.method.clone(),
            key: self.key.clone(),
            query: self.query.clone(),
            range: self.range.clone(),
            start: self.start,
            end: (end != 0).then(|| Duration::from_nanos(end - 1)),
            status: self.status.load(Ordering::Acquire),
            bytes_received: self.bytes_received.load(Ordering::Acquire),
            bytes_sent: self.bytes_sent.load(Ordering::Acquire),
            fault: self.fault.clone(),
        }
    }
}

/// Log of live and finished requests.
#[derive(Debug)]
pub(crate) struct Recorder {
    epoch: Instant,
    inner: Mutex<Vec<Arc<LiveRecord>>>,
}

/// What a new request record needs.
pub(crate) struct NewRecord {
    pub(crate) method: String,
    pub(crate) key: String,
    pub(crate) query: String,
    pub(crate) range: Option<String>,
    pub(crate) fault: Option<String>,
}

impl Recorder {
    pub(crate) fn new() -> Self {
        Self {
            epoch: Instant::now(),
            inner: Mutex::new(Vec::new()),
        }
    }

    pub(crate) fn begin(&self, new: NewRecord) -> Arc<LiveRecord> {
        let start = self.epoch.elapsed();
        let mut log = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        let rec = Arc::new(LiveRecord {
            seq: log.len() as u64,
            method: new.method,
            key: new.key,
            query: new.query,
            range: new.range,
            start,
            end: AtomicU64::new(0),
            status: AtomicU16::new(0),
            bytes_received: AtomicU64::new(0),
            bytes_sent: AtomicU64::new(0),
            fault: new.fault,
            epoch: self.epoch,
        });
        log.push(Arc::clone(&rec));
        rec
    }

    pub(crate) fn records(&self) -> Vec<RequestRecord> {
        let log = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        log.iter().map(|r| r.snapshot()).collect()
    }

    pub(crate) fn stats(&self) -> Stats {
        let mut s = Stats::default();
        for r in self.records() {
            s.requests += 1;
            *s.by_method.entry(r.method).or_insert(0) += 1;
            *s.by_status.entry(r.status).or_insert(0) += 1;
            s.bytes_received = s.bytes_received.saturating_add(r.bytes_received);
            s.bytes_sent = s.bytes_sent.saturating_add(r.bytes_sent);
            if r.fault.is_some() {
                s.faults += 1;
            }
        }
        s
    }

    pub(crate) fn reset(&self) {
        self.inner
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clear();
    }
}

/// The number of round trips on the critical path of a set of requests: the length of the longest
/// chain of requests in which each one started after the previous one had ended.
///
/// With a per-request latency `L` injected ([`Faults::set_latency`](crate::Faults::set_latency)),
/// a client that needs `n` dependent steps takes at least `n·L`; this counts those steps from the
/// log without relying on wall-clock time. Requests still in flight (no `end`) count as ending at
/// the latest time seen in the log.
#[must_use]
pub fn critical_path(records: &[RequestRecord]) -> usize {
    let horizon = records
        .iter()
        .map(|r| r.end.unwrap_or(r.start).max(r.start))
        .max()
        .unwrap_or_default();
    let mut spans: Vec<(Duration, Duration)> = records
        .iter()
        .map(|r| (r.start, r.end.unwrap_or(horizon)))
        .collect();
    spans.sort_by_key(|s| s.1);
    // Sorted by end time, the requests that ended by the time request i started form a prefix
    // of `spans`, all before i (a request ends after it starts). best_upto[k] is the longest
    // chain among the first k spans.
    let mut best_upto: Vec<usize> = Vec::with_capacity(spans.len() + 1);
    best_upto.push(0);
    for &(start, _) in &spans {
        let before = spans.partition_point(|s| s.1 <= start);
        let depth = best_upto[before.min(best_upto.len() - 1)] + 1;
        let prev = best_upto[best_upto.len() - 1];
        best_upto.push(prev.max(depth));
    }
    best_upto[best_upto.len() - 1]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(start_ms: u64, end_ms: u64) -> RequestRecord {
        RequestRecord {
            seq: 0,
            method: "GET".into(),
            key: "k".into(),
            query: String::new(),
            range: None,
            start: Duration::from_millis(start_ms),
            end: Some(Duration::from_millis(end_ms)),
            status: 200,
            bytes_received: 0,
            bytes_sent: 0,
            fault: None,
        }
    }

    #[test]
    fn critical_path_counts_sequential_steps() {
        assert_eq!(critical_path(&[]), 0);
        // Two parallel requests, then one after both: 2 round trips.
        let log = [rec(0, 10), rec(1, 11), rec(12, 20)];
        assert_eq!(critical_path(&log), 2);
        // Three in a row plus overlapping noise: 3.
        let log = [rec(0, 10), rec(10, 20), rec(5, 25), rec(21, 30)];
        assert_eq!(critical_path(&log), 3);
        // Zero-length and identical spans; order of the input does not matter.
        let log = [
            rec(30, 40),
            rec(0, 0),
            rec(0, 0),
            rec(0, 10),
            rec(10, 10),
            rec(10, 30),
        ];
        assert_eq!(critical_path(&log), 6);
        // Many sequential requests.
        let log: Vec<_> = (0..10_000).rev().map(|i| rec(i * 2, i * 2 + 1)).collect();
        assert_eq!(critical_path(&log), 10_000);
    }
}
