//! Cloud Storage's XML API ([`TestServer::start_gcs`](crate::TestServer::start_gcs)): the
//! S3-compatible dialect Google Cloud Storage speaks at `https://storage.googleapis.com/BUCKET/KEY`
//! and object_store's GCS client uses for everything (get, put, list, multipart, copy), mapped
//! onto the same s3s store.
//!
//! What differs from S3, per the public documentation
//! (<https://cloud.google.com/storage/docs/xml-api/overview>,
//! <https://cloud.google.com/storage/docs/request-preconditions>):
//!
//! - **Authentication**: `Authorization: Bearer <token>`. Reads may be anonymous (a public
//!   bucket); writes (`PUT`, `POST`, `DELETE`) need `TOKEN`, else `401`. SigV4-signed S3
//!   requests are served as by the S3 server, so tests can set objects up either way. The
//!   server also answers the Compute Engine metadata server's token request
//!   (`GET /computeMetadata/v1/instance/service-accounts/default/token` with `Metadata-Flavor:
//!   Google`, <https://cloud.google.com/compute/docs/access/authenticate-workloads>) with that
//!   token, so a client told `GCE_METADATA_HOST=127.0.0.1:PORT` finds credentials as on a VM.
//! - **Generations**: every version of an object has a generation number, sent as
//!   `x-goog-generation` with the object (PUT, GET, HEAD). Here a generation is allocated the
//!   first time the server answers with a version (key and ETag) it has not numbered yet,
//!   counting up from the start time in microseconds (Cloud Storage's are such timestamps
//!   too). A rewrite with identical bytes keeps its ETag and so its generation (Cloud Storage
//!   would give a new one).
//! - **Preconditions**: `x-goog-if-generation-match: 0` — the object must not exist;
//!   `x-goog-if-generation-match: G` — its current generation must be `G`; otherwise `412
//!   Precondition Failed`. Mapped onto `If-None-Match: *` / `If-Match: <ETag of G>`, which the
//!   store checks atomically per key. `x-goog-if-metageneration-match` must be `1` (objects'
//!   metadata is never updated here).
//! - `x-goog-copy-source` and `x-goog-meta-*` are S3's `x-amz-copy-source` / `x-amz-meta-*`.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use http::{HeaderMap, HeaderName, HeaderValue, StatusCode};

/// The access token the server hands out (metadata server) and wants on writes.
pub(crate) const TOKEN: &str = "scifmt-test-gcs-token";

const GENERATION: &str = "x-goog-generation";
const METAGENERATION: &str = "x-goog-metageneration";
const IF_GENERATION_MATCH: &str = "x-goog-if-generation-match";
const IF_METAGENERATION_MATCH: &str = "x-goog-if-metageneration-match";

/// The generation numbers handed out, both ways.
#[derive(Debug)]
pub(crate) struct Generations {
    inner: Mutex<Table>,
}

#[derive(Debug)]
struct Table {
    next: i64,
    /// (key, ETag) → generation.
    by_version: HashMap<(String, String), i64>,
    /// generation → (key, ETag).
    by_generation: HashMap<i64, (String, String)>,
}

impl Generations {
    pub(crate) fn new() -> Self {
        let start = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |d| i64::try_from(d.as_micros()).unwrap_or(i64::MAX / 2));
        Self {
            inner: Mutex::new(Table {
                next: start,
                by_version: HashMap::new(),
                by_generation: HashMap::new(),
            }),
        }
    }

    /// The generation of `key` at `etag`, numbered now if it is new.
    fn of(&self, key: &str, etag: &str) -> i64 {
        let mut t = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        let id = (key.to_owned(), etag.to_owned());
        if let Some(g) = t.by_version.get(&id) {
            return *g;
        }
        let g = t.next;
        t.next = t.next.saturating_add(1);
        t.by_version.insert(id.clone(), g);
        t.by_generation.insert(g, id);
        g
    }

    /// The ETag of `key` at generation `g`, if the server numbered that version.
    fn etag(&self, key: &str, g: i64) -> Option<String> {
        let t = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        t.by_generation
            .get(&g)
            .filter(|(k, _)| k == key)
            .map(|(_, e)| e.clone())
    }
}

/// Rewrite a Cloud Storage request for s3s: drop the bearer token, map the preconditions and the
/// `x-goog-*` headers. `Err(status)`: answer with that status without asking the store (a
/// precondition that cannot hold).
pub(crate) fn request(
    method: &http::Method,
    headers: &mut HeaderMap,
    key: &str,
    generations: &Generations,
) -> Result<(), StatusCode> {
    let bearer = headers
        .get(http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::to_owned);
    if bearer.is_some() {
        headers.remove(http::header::AUTHORIZATION);
    }
    // S3 requests (SigV4-signed) still reach s3s, which verifies their signature.
    let signed = headers
        .get(http::header::AUTHORIZATION)
        .is_some_and(|v| v.as_bytes().starts_with(b"AWS4-"));
    let write = [http::Method::PUT, http::Method::POST, http::Method::DELETE].contains(method);
    if write && !signed && bearer.as_deref() != Some(TOKEN) {
        return Err(StatusCode::UNAUTHORIZED);
    }
    if let Some(v) = headers.remove(IF_METAGENERATION_MATCH)
        && v.as_bytes() != b"1"
    {
        return Err(StatusCode::PRECONDITION_FAILED);
    }
    if let Some(v) = headers.remove(IF_GENERATION_MATCH) {
        let g = v
            .to_str()
            .ok()
            .and_then(|s| s.trim().parse::<i64>().ok())
            .ok_or(StatusCode::BAD_REQUEST)?;
        if g == 0 {
            headers.insert(http::header::IF_NONE_MATCH, HeaderValue::from_static("*"));
        } else {
            let etag = generations
                .etag(key, g)
                .ok_or(StatusCode::PRECONDITION_FAILED)?;
            let etag = HeaderValue::from_str(&etag).map_err(|_| StatusCode::PRECONDITION_FAILED)?;
            headers.insert(http::header::IF_MATCH, etag);
        }
    }
    let renamed: Vec<(HeaderName, HeaderValue)> = headers
        .iter()
        .filter_map(|(name, value)| {
            let s3 = if name.as_str() == "x-goog-copy-source" {
                "x-amz-copy-source".to_owned()
            } else {
                format!("x-amz-meta-{}", name.as_str().strip_prefix("x-goog-meta-")?)
            };
            Some((HeaderName::from_bytes(s3.as_bytes()).ok()?, value.clone()))
        })
        .collect();
    remove_goog(headers);
    for (name, value) in renamed {
        headers.insert(name, value);
    }
    Ok(())
}

/// The metadata server's answer to a request for `path`, if it is one (`None`: not a metadata
/// request): the token as JSON, or `403` without the `Metadata-Flavor: Google` header.
pub(crate) fn metadata(path: &str, headers: &HeaderMap) -> Option<(StatusCode, String)> {
    if !path.starts_with("/computeMetadata/") {
        return None;
    }
    let flavored = headers
        .get("metadata-flavor")
        .is_some_and(|v| v.as_bytes() == b"Google");
    Some(if !flavored {
        (StatusCode::FORBIDDEN, String::new())
    } else if path == "/computeMetadata/v1/instance/service-accounts/default/token" {
        (
            StatusCode::OK,
            format!(
                "{{\"access_token\":\"{TOKEN}\",\"expires_in\":3600,\"token_type\":\"Bearer\"}}"
            ),
        )
    } else {
        (StatusCode::NOT_FOUND, String::new())
    })
}

/// Add the generation of the version a response is about (it carries an `ETag`).
pub(crate) fn response(headers: &mut HeaderMap, key: &str, generations: &Generations) {
    if key.is_empty() {
        return;
    }
    let Some(etag) = headers
        .get(http::header::ETAG)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
    else {
        return;
    };
    let g = generations.of(key, &etag);
    if let Ok(v) = HeaderValue::from_str(&g.to_string()) {
        headers.insert(GENERATION, v);
        headers.insert(METAGENERATION, HeaderValue::from_static("1"));
    }
}

/// Remove every `x-goog-*` header (after they are mapped).
fn remove_goog(headers: &mut HeaderMap) {
    let goog: Vec<HeaderName> = headers
        .keys()
        .filter(|n| n.as_str().starts_with("x-goog-"))
        .cloned()
        .collect();
    for name in goog {
        headers.remove(name);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        pairs
            .iter()
            .map(|(k, v)| {
                (
                    HeaderName::from_bytes(k.as_bytes()).unwrap(),
                    HeaderValue::from_str(v).unwrap(),
                )
            })
            .collect()
    }

    #[test]
    fn generations_name_one_version_of_one_key() {
        let g = Generations::new();
        let a = g.of("k", "\"e1\"");
        assert_eq!(g.of("k", "\"e1\""), a);
        let b = g.of("k", "\"e2\"");
        assert_ne!(a, b);
        assert_ne!(g.of("other", "\"e1\""), a);
        assert_eq!(g.etag("k", a).as_deref(), Some("\"e1\""));
        assert_eq!(g.etag("other", a), None);
        assert_eq!(g.etag("k", 12), None);
    }

    #[test]
    fn preconditions_become_s3_conditions() {
        let g = Generations::new();
        let mut h = headers(&[
            ("authorization", "Bearer t"),
            ("x-goog-if-generation-match", "0"),
            ("x-goog-meta-color", "red"),
        ]);
        request(&http::Method::GET, &mut h, "k", &g).unwrap();
        assert_eq!(h.get("if-none-match").unwrap(), "*");
        assert_eq!(h.get("x-amz-meta-color").unwrap(), "red");
        assert!(h.get("authorization").is_none());
        assert!(h.keys().all(|k| !k.as_str().starts_with("x-goog-")));

        let gen_ = g.of("k", "\"e1\"");
        let mut h = headers(&[("x-goog-if-generation-match", &gen_.to_string())]);
        request(&http::Method::GET, &mut h, "k", &g).unwrap();
        assert_eq!(h.get("if-match").unwrap(), "\"e1\"");

        let mut h = headers(&[("x-goog-if-generation-match", &gen_.to_string())]);
        assert_eq!(
            request(&http::Method::GET, &mut h, "other", &g),
            Err(StatusCode::PRECONDITION_FAILED)
        );
        let mut h = headers(&[("x-goog-if-generation-match", "x")]);
        assert_eq!(
            request(&http::Method::GET, &mut h, "k", &g),
            Err(StatusCode::BAD_REQUEST)
        );
        let mut h = headers(&[("x-goog-if-metageneration-match", "2")]);
        assert_eq!(
            request(&http::Method::GET, &mut h, "k", &g),
            Err(StatusCode::PRECONDITION_FAILED)
        );
        let mut h = headers(&[("x-goog-copy-source", "b/a%2Fb")]);
        request(&http::Method::GET, &mut h, "k", &g).unwrap();
        assert_eq!(h.get("x-amz-copy-source").unwrap(), "b/a%2Fb");
    }

    #[test]
    fn writes_need_the_token() {
        let g = Generations::new();
        for method in [http::Method::PUT, http::Method::POST, http::Method::DELETE] {
            let mut h = headers(&[]);
            assert_eq!(
                request(&method, &mut h, "k", &g),
                Err(StatusCode::UNAUTHORIZED)
            );
            let mut h = headers(&[("authorization", "Bearer wrong")]);
            assert_eq!(
                request(&method, &mut h, "k", &g),
                Err(StatusCode::UNAUTHORIZED)
            );
            let mut h = headers(&[("authorization", &format!("Bearer {TOKEN}"))]);
            request(&method, &mut h, "k", &g).unwrap();
            assert!(h.get("authorization").is_none());
        }
        let mut h = headers(&[]);
        request(&http::Method::GET, &mut h, "k", &g).unwrap();
    }

    #[test]
    fn the_metadata_server_hands_out_the_token() {
        let path = "/computeMetadata/v1/instance/service-accounts/default/token";
        let (status, body) = metadata(path, &headers(&[("metadata-flavor", "Google")])).unwrap();
        assert_eq!(status, StatusCode::OK);
        assert!(body.contains(TOKEN), "{body}");
        assert_eq!(
            metadata(path, &headers(&[])).unwrap().0,
            StatusCode::FORBIDDEN
        );
        assert!(metadata("/scifmt-test/k", &headers(&[])).is_none());
    }

    #[test]
    fn responses_carry_the_generation() {
        let g = Generations::new();
        let mut h = headers(&[("etag", "\"e1\"")]);
        response(&mut h, "k", &g);
        let sent: i64 = h
            .get(GENERATION)
            .unwrap()
            .to_str()
            .unwrap()
            .parse()
            .unwrap();
        assert_eq!(g.etag("k", sent).as_deref(), Some("\"e1\""));
        let mut h = headers(&[]);
        response(&mut h, "k", &g);
        assert!(h.get(GENERATION).is_none());
    }
}
