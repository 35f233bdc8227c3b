//! The HTTP layer in front of s3s: request log, latency, fault injection, body wrappers.

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderValue, Request, Response, StatusCode};
use http_body::{Body, Frame, SizeHint};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use s3s::service::S3Service;

use crate::faults::{FaultKind, Faults};
use crate::record::{LiveRecord, NewRecord, Recorder};

/// Header the server's own helper client sends: such requests are neither logged nor faulted.
pub(crate) const INTERNAL_HEADER: &str = "x-scifmt-testserver-internal";

pub(crate) type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// State shared by all connections of one server.
#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) s3: S3Service,
    /// The same store as behind `s3`, for `FaultKind::Replace`.
    pub(crate) objects: crate::guard::Guarded,
    pub(crate) faults: Faults,
    pub(crate) recorder: Recorder,
    pub(crate) bucket: String,
    /// Cloud Storage's XML dialect on top (`TestServer::start_gcs`): its generation numbers.
    pub(crate) gcs: Option<crate::gcs::Generations>,
}

/// Decode `%XX` escapes (object keys in the request path).
fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%'
            && i + 2 < b.len()
            && let (Some(h), Some(l)) = (hex_val(b[i + 1]), hex_val(b[i + 2]))
        {
            out.push(h * 16 + l);
            i += 3;
            continue;
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn hex_val(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

/// The object key of a path-style request (`/bucket/key...`), empty for bucket-level requests.
fn key_of(path: &str, bucket: &str) -> String {
    let path = path.strip_prefix('/').unwrap_or(path);
    let rest = match path.split_once('/') {
        Some((b, rest)) if percent_decode(b) == bucket => rest,
        _ => return String::new(),
    };
    percent_decode(rest)
}

fn s3_error_body(status: u16) -> Bytes {
    let code = match status {
        503 => "SlowDown",
        500 => "InternalError",
        _ => "InjectedFault",
    };
    Bytes::from(format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>{code}</Code>\
         <Message>fault injected by the scifmt S3 test server</Message></Error>"
    ))
}

/// Handle one request (the hyper service function).
pub(crate) async fn handle(
    shared: Arc<Shared>,
    req: Request<Incoming>,
) -> Result<Response<ServerBody>, BoxError> {
    if req.headers().contains_key(INTERNAL_HEADER) {
        let resp = shared
            .s3
            .call(req.map(s3s::Body::from))
            .await
            .map_err(|e| -> BoxError { format!("s3s: {e:?}").into() })?;
        return Ok(resp.map(|b| ServerBody::new(b, None, None, None)));
    }

    let method = req.method().as_str().to_owned();
    let is_head = req.method() == http::Method::HEAD;
    let key = key_of(req.uri().path(), &shared.bucket);
    let (latency, fault) = shared.faults.take(&method, &key);
    let record = shared.recorder.begin(NewRecord {
        method,
        key: key.clone(),
        query: req.uri().query().unwrap_or_default().to_owned(),
        range: req
            .headers()
            .get(http::header::RANGE)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned),
        fault: fault.as_ref().map(ToString::to_string),
    });
    // Finishes the record if this future is dropped before a response exists.
    let guard = FinishOnDrop(Arc::clone(&record));

    if !latency.is_zero() {
        tokio::time::sleep(latency).await;
    }
    match &fault {
        Some(FaultKind::Delay(d)) => tokio::time::sleep(*d).await,
        Some(FaultKind::Gate(g)) => g.pass().await,
        _ => {}
    }

    let (mut parts, incoming) = req.into_parts();
    let cut_at = match &fault {
        Some(FaultKind::CutUpload) => Some(
            parts
                .headers
                .get(http::header::CONTENT_LENGTH)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.parse::<u64>().ok())
                .unwrap_or(0)
                / 2,
        ),
        _ => None,
    };
    let body = CountingBody {
        inner: incoming,
        record: Arc::clone(&record),
        cut_at,
        received: 0,
    };

    if let Some(FaultKind::Replace(data)) = &fault
        && !key.is_empty()
    {
        shared
            .objects
            .replace(&shared.bucket, &key, data.clone())
            .await
            .map_err(|e| -> BoxError {
                record.finish();
                format!("replacing {key}: {e:?}").into()
            })?;
    }

    match fault {
        Some(FaultKind::Status(status)) => {
            let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            // A response to HEAD has no body (hyper would not send it).
            let payload = if is_head {
                Bytes::new()
            } else {
                s3_error_body(status.as_u16())
            };
            let resp = answer_here(body, &record, status, payload, "application/xml").await;
            drop(guard);
            Ok(resp)
        }
        Some(FaultKind::Reset) => {
            record.finish();
            drop(guard);
            Err("connection reset injected by the scifmt S3 test server".into())
        }
        other => {
            if let Some(generations) = &shared.gcs {
                let answer = match crate::gcs::metadata(parts.uri.path(), &parts.headers) {
                    Some(answer) => Some(answer),
                    None => {
                        crate::gcs::request(&parts.method, &mut parts.headers, &key, generations)
                            .err()
                            .map(|status| (status, String::new()))
                    }
                };
                if let Some((status, text)) = answer {
                    let resp =
                        answer_here(body, &record, status, Bytes::from(text), "application/json")
                            .await;
                    drop(guard);
                    return Ok(resp);
                }
            }
            let req = Request::from_parts(parts, s3s::Body::http_body_unsync(body));
            let mut resp = shared.s3.call(req).await.map_err(|e| -> BoxError {
                record.finish();
                format!("s3s: {e:?}").into()
            })?;
            if let Some(generations) = &shared.gcs {
                crate::gcs::response(resp.headers_mut(), &key, generations);
            }
            let status = resp.status();
            record.status.store(status.as_u16(), Ordering::Release);
            let shaping = match other {
                Some(FaultKind::TruncateBody) if status.is_success() => {
                    let len = resp
                        .headers()
                        .get(http::header::CONTENT_LENGTH)
                        .and_then(|v| v.to_str().ok())
                        .and_then(|v| v.parse::<u64>().ok())
                        .unwrap_or(0);
                    (len > 0).then(|| Shaping::Truncate { keep: len / 2 })
                }
                Some(FaultKind::SlowBody { chunk, delay }) => Some(Shaping::Slow {
                    chunk: chunk.max(1),
                    delay,
                    pending: Bytes::new(),
                    sleep: None,
                }),
                _ => None,
            };
            drop(guard);
            let expected = if is_head {
                None
            } else {
                resp.headers()
                    .get(http::header::CONTENT_LENGTH)
                    .and_then(|v| v.to_str().ok())
                    .and_then(|v| v.parse::<u64>().ok())
            };
            Ok(resp.map(|b| ServerBody::new(b, Some(record), shaping, expected)))
        }
    }
}

/// A response made here rather than by s3s (an injected status, a Cloud Storage answer),
/// recorded; the request body is read first so the client sees the status rather than a
/// broken pipe.
async fn answer_here(
    body: CountingBody,
    record: &Arc<LiveRecord>,
    status: StatusCode,
    payload: Bytes,
    content_type: &'static str,
) -> Response<ServerBody> {
    let _ = body.collect().await;
    record.status.store(status.as_u16(), Ordering::Release);
    let len = payload.len() as u64;
    let mut resp = Response::new(ServerBody::new(
        s3s::Body::from(payload),
        Some(Arc::clone(record)),
        None,
        Some(len),
    ));
    *resp.status_mut() = status;
    resp.headers_mut().insert(
        http::header::CONTENT_TYPE,
        HeaderValue::from_static(content_type),
    );
    resp
}

struct FinishOnDrop(Arc<LiveRecord>);

impl Drop for FinishOnDrop {
    fn drop(&mut self) {
        // A no-op if the response already finished the record; otherwise the end of a request
        // that never got a response (client went away during the latency or the handler).
        if self.0.status.load(Ordering::Acquire) == 0 {
            self.0.finish();
        }
    }
}

/// Request body that counts the bytes s3s reads (and, for `CutUpload`, fails half-way).
struct CountingBody {
    inner: Incoming,
    record: Arc<LiveRecord>,
    cut_at: Option<u64>,
    received: u64,
}

impl Body for CountingBody {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = &mut *self;
        if let Some(cut) = this.cut_at
            && this.received >= cut
        {
            return Poll::Ready(Some(Err(
                "upload cut short by the scifmt S3 test server".into()
            )));
        }
        let frame = match ready!(Pin::new(&mut this.inner).poll_frame(cx)) {
            None => return Poll::Ready(None),
            Some(Err(e)) => return Poll::Ready(Some(Err(e.into()))),
            Some(Ok(f)) => f,
        };
        let frame = match frame.into_data() {
            Ok(mut d) => {
                if let Some(cut) = this.cut_at {
                    let room = cut.saturating_sub(this.received);
                    if (d.len() as u64) > room {
                        d.truncate(usize::try_from(room).unwrap_or(usize::MAX));
                    }
                }
                this.received = this.received.saturating_add(d.len() as u64);
                this.record
                    .bytes_received
                    .fetch_add(d.len() as u64, Ordering::AcqRel);
                Frame::data(d)
            }
            Err(f) => f,
        };
        Poll::Ready(Some(Ok(frame)))
    }

    fn is_end_stream(&self) -> bool {
        self.cut_at.is_none() && self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// How a response body is altered by a fault.
enum Shaping {
    /// Send `keep` bytes, then fail (hyper closes the connection).
    Truncate { keep: u64 },
    /// Send `chunk` bytes after each `delay`.
    Slow {
        chunk: usize,
        delay: Duration,
        pending: Bytes,
        sleep: Option<Pin<Box<tokio::time::Sleep>>>,
    },
}

/// Response body: counts bytes sent, marks the record's end, applies truncation / slowness.
pub(crate) struct ServerBody {
    inner: s3s::Body,
    record: Option<Arc<LiveRecord>>,
    shaping: Option<Shaping>,
    /// Body length announced by `Content-Length` (not for HEAD): the record ends when the last
    /// byte is handed to hyper, before the client can have it and send its next request.
    expected: Option<u64>,
    sent: u64,
    done: bool,
}

impl ServerBody {
    fn new(
        inner: s3s::Body,
        record: Option<Arc<LiveRecord>>,
        shaping: Option<Shaping>,
        expected: Option<u64>,
    ) -> Self {
        let this = Self {
            inner,
            record,
            shaping,
            expected,
            sent: 0,
            done: false,
        };
        if this.shaping.is_none()
            && (this.inner.is_end_stream() || this.expected == Some(0))
            && let Some(r) = &this.record
        {
            r.finish();
        }
        this
    }
}

impl Drop for ServerBody {
    fn drop(&mut self) {
        if let Some(r) = &self.record {
            r.finish();
        }
    }
}

impl Body for ServerBody {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let Self {
            inner,
            record,
            shaping,
            expected,
            sent,
            done,
        } = &mut *self;
        if *done {
            return Poll::Ready(None);
        }
        let record: &Option<Arc<LiveRecord>> = record;
        let finish = |done: &mut bool| {
            *done = true;
            if let Some(r) = record {
                r.finish();
            }
        };
        let count = |sent: &mut u64, n: usize| {
            *sent = sent.saturating_add(n as u64);
            if let Some(r) = record {
                r.bytes_sent.fetch_add(n as u64, Ordering::AcqRel);
            }
        };
        match shaping {
            Some(Shaping::Slow {
                chunk,
                delay,
                pending,
                sleep,
            }) => loop {
                if !pending.is_empty() {
                    let s = sleep.get_or_insert_with(|| Box::pin(tokio::time::sleep(*delay)));
                    ready!(s.as_mut().poll(cx));
                    *sleep = None;
                    let piece = pending.split_to((*chunk).min(pending.len()));
                    count(sent, piece.len());
                    return Poll::Ready(Some(Ok(Frame::data(piece))));
                }
                match ready!(Pin::new(&mut *inner).poll_frame(cx)) {
                    Some(Ok(f)) => match f.into_data() {
                        Ok(d) => *pending = d,
                        Err(f) => return Poll::Ready(Some(Ok(f))),
                    },
                    Some(Err(e)) => {
                        finish(done);
                        return Poll::Ready(Some(Err(e)));
                    }
                    None => {
                        finish(done);
                        return Poll::Ready(None);
                    }
                }
            },
            Some(Shaping::Truncate { keep }) => {
                let room = keep.saturating_sub(*sent);
                let truncated = || -> BoxError {
                    "response body truncated by the scifmt S3 test server".into()
                };
                if room == 0 {
                    finish(done);
                    return Poll::Ready(Some(Err(truncated())));
                }
                match ready!(Pin::new(&mut *inner).poll_frame(cx)) {
                    Some(Ok(f)) => match f.into_data() {
                        Ok(mut d) => {
                            if (d.len() as u64) > room {
                                d.truncate(usize::try_from(room).unwrap_or(usize::MAX));
                            }
                            count(sent, d.len());
                            Poll::Ready(Some(Ok(Frame::data(d))))
                        }
                        Err(f) => Poll::Ready(Some(Ok(f))),
                    },
                    Some(Err(e)) => {
                        finish(done);
                        Poll::Ready(Some(Err(e)))
                    }
                    None => {
                        finish(done);
                        Poll::Ready(Some(Err(truncated())))
                    }
                }
            }
            None => match ready!(Pin::new(&mut *inner).poll_frame(cx)) {
                Some(Ok(f)) => {
                    if let Some(d) = f.data_ref() {
                        count(sent, d.len());
                    }
                    if inner.is_end_stream() || expected.is_some_and(|n| *sent >= n) {
                        finish(done);
                    }
                    Poll::Ready(Some(Ok(f)))
                }
                Some(Err(e)) => {
                    finish(done);
                    Poll::Ready(Some(Err(e)))
                }
                None => {
                    finish(done);
                    Poll::Ready(None)
                }
            },
        }
    }

    fn is_end_stream(&self) -> bool {
        self.done || (self.shaping.is_none() && self.inner.is_end_stream())
    }

    fn size_hint(&self) -> SizeHint {
        if self.shaping.is_some() {
            SizeHint::default()
        } else {
            self.inner.size_hint()
        }
    }
}
