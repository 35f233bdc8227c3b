//! Fault injection: rules the tests program, consumed by the HTTP layer one request at a time.

use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

/// What an injected fault does to the request it hits.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum FaultKind {
    /// Answer with this HTTP status (e.g. 500 or 503) and an S3 XML error body, without touching
    /// the store. The request body, if any, is read and discarded first, so the client sees the
    /// status rather than a broken pipe.
    Status(u16),
    /// Close the connection without sending a response (the client sees a connection error).
    /// Nothing is stored.
    Reset,
    /// For a GET that succeeds with a non-empty body: send the status and headers (with the full
    /// `Content-Length`), then only the first half of the body, then close the connection.
    TruncateBody,
    /// For a GET that succeeds: send the body in pieces of `chunk` bytes with `delay` before each.
    SlowBody {
        /// Bytes per piece (at least 1).
        chunk: usize,
        /// Pause before each piece.
        delay: Duration,
    },
    /// Before the request is handled, replace the object it names with these bytes (as a PUT
    /// would: new ETag), then handle the request normally. For "object replaced between two
    /// reads" tests: e.g. `FaultRule::new(FaultKind::Replace(new), 1).method("GET")
    /// .key_contains("x0.wkw").after(1)` replaces the file just before its second GET.
    Replace(bytes::Bytes),
    /// Hold the request this long (on top of the latency) before handling it: a slow response
    /// for chosen requests, or a window for another client to act in.
    Delay(Duration),
    /// Hold the request (after the latency) until as many requests as the gate has parties have
    /// reached it, then let them all go on together: requests a client sends concurrently are
    /// then in flight at the same time however the machine schedules the client, so a test can
    /// rely on them overlapping. Give the rule a count equal to the parties. A gate that is never
    /// filled opens after a minute (the test then fails on what it asserts, it does not hang).
    Gate(Gate),
    /// PUT requests only (PutObject, UploadPart): the server receives half of it, then the body
    /// fails, as if the client's connection broke mid-upload. s3s-fs has started writing its
    /// temporary file by then; nothing may appear under the key.
    CutUpload,
}

impl FaultKind {
    /// Whether the fault applies only to GET requests (it acts on a response body).
    fn get_only(&self) -> bool {
        matches!(self, Self::TruncateBody | Self::SlowBody { .. })
    }
}

impl fmt::Display for FaultKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Status(s) => write!(f, "status {s}"),
            Self::Reset => f.write_str("reset"),
            Self::TruncateBody => f.write_str("truncated body"),
            Self::SlowBody { chunk, delay } => write!(f, "slow body ({chunk} B per {delay:?})"),
            Self::Replace(b) => write!(f, "replaced ({} B)", b.len()),
            Self::CutUpload => f.write_str("cut upload"),
            Self::Delay(d) => write!(f, "delay {d:?}"),
            Self::Gate(g) => write!(f, "gate of {}", g.inner.parties),
        }
    }
}

/// A rendezvous of requests for [`FaultKind::Gate`] (cheap to clone: clones are the same gate).
#[derive(Clone)]
pub struct Gate {
    inner: Arc<GateInner>,
}

struct GateInner {
    parties: u32,
    arrived: std::sync::atomic::AtomicU32,
    open: tokio::sync::Notify,
}

impl Gate {
    /// How long a request waits at a gate that does not fill.
    pub const MAX_WAIT: Duration = Duration::from_secs(60);

    /// A gate that opens when `parties` requests have arrived.
    #[must_use]
    pub fn new(parties: u32) -> Self {
        Self {
            inner: Arc::new(GateInner {
                parties,
                arrived: std::sync::atomic::AtomicU32::new(0),
                open: tokio::sync::Notify::new(),
            }),
        }
    }

    /// Arrive, then wait until every party has arrived (or [`Gate::MAX_WAIT`] has passed).
    pub(crate) async fn pass(&self) {
        use std::sync::atomic::Ordering;
        let g = &self.inner;
        if g.arrived.fetch_add(1, Ordering::AcqRel) + 1 >= g.parties {
            g.open.notify_waiters();
            return;
        }
        let wait = async {
            loop {
                let opened = g.open.notified();
                tokio::pin!(opened);
                opened.as_mut().enable();
                if g.arrived.load(Ordering::Acquire) >= g.parties {
                    return;
                }
                opened.await;
            }
        };
        let _ = tokio::time::timeout(Self::MAX_WAIT, wait).await;
    }
}

impl fmt::Debug for Gate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Gate")
            .field("parties", &self.inner.parties)
            .field(
                "arrived",
                &self
                    .inner
                    .arrived
                    .load(std::sync::atomic::Ordering::Relaxed),
            )
            .finish()
    }
}

/// Gates are equal when they are the same gate.
impl PartialEq for Gate {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }
}

impl Eq for Gate {}

/// A fault to inject into the next `count` requests that match the filters.
///
/// Rules are checked in the order they were added; the first matching rule with requests left is
/// applied (and its count decremented). A request gets at most one fault.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FaultRule {
    kind: FaultKind,
    count: u32,
    skip: u32,
    method: Option<String>,
    key_contains: Option<String>,
}

impl FaultRule {
    /// A rule applying `kind` to the next `count` requests (of any method and key; `TruncateBody`
    /// and `SlowBody` only ever apply to GET requests, `CutUpload` to PUT requests).
    #[must_use]
    pub fn new(kind: FaultKind, count: u32) -> Self {
        Self {
            kind,
            count,
            skip: 0,
            method: None,
            key_contains: None,
        }
    }

    /// Only requests with this HTTP method (`"GET"`, `"PUT"`, `"HEAD"`, ...; case-insensitive).
    #[must_use]
    pub fn method(mut self, method: &str) -> Self {
        self.method = Some(method.to_ascii_uppercase());
        self
    }

    /// Let the first `n` matching requests through untouched (they may still match later rules),
    /// then inject into the next `count`.
    #[must_use]
    pub fn after(mut self, n: u32) -> Self {
        self.skip = n;
        self
    }

    /// Only requests whose object key contains `needle` (the key is the percent-decoded path after
    /// the bucket; for bucket-level requests such as LIST it is empty).
    #[must_use]
    pub fn key_contains(mut self, needle: &str) -> Self {
        self.key_contains = Some(needle.to_owned());
        self
    }

    fn matches(&self, method: &str, key: &str) -> bool {
        if self.count == 0 {
            return false;
        }
        if self.kind.get_only() && method != "GET" {
            return false;
        }
        if self.kind == FaultKind::CutUpload && method != "PUT" {
            return false;
        }
        if let Some(m) = &self.method
            && m != method
        {
            return false;
        }
        if let Some(needle) = &self.key_contains
            && !key.contains(needle.as_str())
        {
            return false;
        }
        true
    }
}

#[derive(Debug, Default)]
struct FaultState {
    latency: Duration,
    rules: Vec<FaultRule>,
    injected: u64,
}

/// Handle to the server's fault injection (cheap to clone; all clones control the same server).
///
/// Requests made by the server's own helpers ([`TestServer::upload_dir`](crate::TestServer::upload_dir),
/// [`TestServer::download_prefix`](crate::TestServer::download_prefix)) bypass faults and latency.
#[derive(Clone, Default)]
pub struct Faults {
    state: Arc<Mutex<FaultState>>,
}

impl fmt::Debug for Faults {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let st = self.lock();
        f.debug_struct("Faults")
            .field("latency", &st.latency)
            .field("rules", &st.rules)
            .finish()
    }
}

impl Faults {
    fn lock(&self) -> std::sync::MutexGuard<'_, FaultState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Delay every request by `latency` before it is handled (to emulate a remote store's round
    /// trip; `Duration::ZERO` turns it off). Applies until changed.
    pub fn set_latency(&self, latency: Duration) {
        self.lock().latency = latency;
    }

    /// The per-request latency currently set.
    #[must_use]
    pub fn latency(&self) -> Duration {
        self.lock().latency
    }

    /// Add a rule (see [`FaultRule`]).
    pub fn inject(&self, rule: FaultRule) {
        self.lock().rules.push(rule);
    }

    /// Answer the next `n` requests (any method, any key) with HTTP `status` (e.g. 500, 503).
    pub fn fail_next(&self, n: u32, status: u16) {
        self.inject(FaultRule::new(FaultKind::Status(status), n));
    }

    /// Close the connection of the next `n` requests without a response.
    pub fn reset_next(&self, n: u32) {
        self.inject(FaultRule::new(FaultKind::Reset, n));
    }

    /// Truncate the body of the next `n` successful GET responses with a body.
    pub fn truncate_next(&self, n: u32) {
        self.inject(FaultRule::new(FaultKind::TruncateBody, n));
    }

    /// Send the body of the next `n` GET responses slowly (`chunk` bytes, then `delay`, ...).
    pub fn slow_body_next(&self, n: u32, chunk: usize, delay: Duration) {
        self.inject(FaultRule::new(
            FaultKind::SlowBody {
                chunk: chunk.max(1),
                delay,
            },
            n,
        ));
    }

    /// Remove all rules and set the latency to zero (the count of injected faults is kept).
    pub fn clear(&self) {
        let mut st = self.lock();
        st.rules.clear();
        st.latency = Duration::ZERO;
    }

    /// How many injections the rules still hold (sum of their remaining counts).
    #[must_use]
    pub fn pending(&self) -> u64 {
        self.lock().rules.iter().map(|r| u64::from(r.count)).sum()
    }

    /// How many faults have been injected since the server started (never reset).
    #[must_use]
    pub fn injected(&self) -> u64 {
        self.lock().injected
    }

    /// Pick the fault for a request (consuming one count of the first matching rule).
    pub(crate) fn take(&self, method: &str, key: &str) -> (Duration, Option<FaultKind>) {
        let mut st = self.lock();
        let latency = st.latency;
        let mut hit = None;
        for rule in st.rules.iter_mut().filter(|r| r.matches(method, key)) {
            if rule.skip > 0 {
                rule.skip -= 1;
                continue;
            }
            rule.count -= 1;
            hit = Some(rule.kind.clone());
            break;
        }
        if hit.is_some() {
            st.injected = st.injected.saturating_add(1);
            st.rules.retain(|r| r.count > 0);
        }
        (latency, hit)
    }
}
