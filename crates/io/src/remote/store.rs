//! Stores from URLs, URLs for messages, and the one mapping of a store's conditional-request
//! failures.

use std::sync::Arc;

use object_store::ObjectStore;
use object_store::path::{Path, PathPart};

use crate::error::{Error, Result};
use crate::redact::redact;

/// A store opened from a URL, the object path inside it and how to name it in messages.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct StoreUrl {
    /// The store.
    pub store: Arc<dyn ObjectStore>,
    /// The path (key or prefix) the URL names inside the store.
    pub path: Path,
    /// The URL without credentials (no user info, query or fragment) and without a trailing
    /// `/`: the name of `path` in messages.
    pub url: String,
    /// `scheme://host[:port]` of the URL (no user info, path, query or fragment): the name of
    /// the store in messages, to which other paths of the store can be joined.
    pub root: String,
}

/// Installs *ring* as the process's default rustls crypto provider, unless the program has
/// installed one: the HTTPS client of the cloud backends (features `aws`, `gcp`, `azure`,
/// `http`) needs a default provider, and this crate builds it without aws-lc-rs (whose C
/// library is the longest build of a typical dependency tree). [`store_for_url`] calls it;
/// call it yourself before using object_store's cloud builders directly.
#[cfg(feature = "https")]
pub fn install_tls_provider() {
    // Err means a provider is installed already (ours or the program's): keep that one.
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// Opens the store `url` names (`s3://bucket/key`, `gs://…`, `az://…`, `http(s)://…`,
/// `file:///…`, `memory:///…`), configured from the environment like
/// `AmazonS3Builder::from_env` and its GCS/Azure peers: every variable whose name starts with
/// `AWS_`, `GOOGLE_` or `AZURE_` (any case), lower-cased as `object_store::parse_url_opts`
/// takes its keys; then `config` (same keys, e.g. `("aws_endpoint_url", "http://…")`;
/// upper-case variable names work too), which wins over the environment. The cloud schemes
/// need this crate's `aws`, `gcp`, `azure` or `http` feature.
///
/// ```
/// let s = scifmt_io::store_for_url("memory:///data/a.wkw", &[])?;
/// assert_eq!(s.path.as_ref(), "data/a.wkw");
/// assert_eq!(s.url, "memory:///data/a.wkw");
/// # Ok::<(), scifmt_io::Error>(())
/// ```
///
/// # Errors
/// [`Error::InvalidArgument`] for a malformed URL (the message names only its scheme);
/// [`Error::Remote`] for an unsupported scheme or bad configuration.
pub fn store_for_url(url: &str, config: &[(String, String)]) -> Result<StoreUrl> {
    #[cfg(feature = "https")]
    install_tls_provider();
    let parsed = url::Url::parse(url).map_err(|e| {
        // The text may hold credentials: name only what cannot.
        let scheme = url.split(':').next().unwrap_or_default();
        Error::InvalidArgument(format!("not a URL ({scheme}:…): {e}"))
    })?;
    let clean = redact(url).trim_end_matches('/').to_string();
    let env = std::env::vars().filter_map(|(k, v)| {
        let lower = k.to_ascii_lowercase();
        (lower.starts_with("aws_") || lower.starts_with("google_") || lower.starts_with("azure_"))
            .then_some((lower, v))
    });
    // An `http://` URL asks for plain HTTP: object_store's HTTP client refuses it unless told
    // (its default is HTTPS only), so the scheme the user wrote says it (a configured
    // `allow_http` still wins).
    let plain_http = (parsed.scheme() == "http").then(|| ("allow_http".to_owned(), "true".into()));
    let env = env.chain(plain_http).chain(
        config
            .iter()
            .map(|(k, v)| (k.to_ascii_lowercase(), v.clone())),
    );
    let (store, path) =
        object_store::parse_url_opts(&parsed, env).map_err(|source| Error::Remote {
            url: clean.clone(),
            source,
        })?;
    let root = match (parsed.host_str(), parsed.port()) {
        (Some(h), Some(p)) => format!("{}://{h}:{p}", parsed.scheme()),
        (Some(h), None) => format!("{}://{h}", parsed.scheme()),
        _ => format!("{}://", parsed.scheme()),
    };
    Ok(StoreUrl {
        store: Arc::from(store),
        path,
        url: clean,
        root,
    })
}

/// `etag` as HTTP writes an entity tag (RFC 9110, section 8.8.3): a quoted string, `W/` before a
/// weak one; an ETag without its quotes gets them.
///
/// Azure's blob listings give ETags without the quotes its `HEAD` and `GET` responses have
/// (object_store passes both on as they come), and Azure Storage compares `If-Match` as
/// written, so a read pinned to a listed ETag failed as if the blob had changed. Every ETag
/// that pins a read or is kept as a checksum goes through this, so the same version compares
/// equal whichever response named it.
///
/// ```
/// assert_eq!(scifmt_io::normalize_etag("0x8DC1"), "\"0x8DC1\"");
/// assert_eq!(scifmt_io::normalize_etag("\"abc\""), "\"abc\"");
/// assert_eq!(scifmt_io::normalize_etag("W/\"abc\""), "W/\"abc\"");
/// ```
#[must_use]
pub fn normalize_etag(etag: &str) -> String {
    if etag.starts_with('"') || etag.starts_with("W/\"") {
        etag.to_owned()
    } else {
        format!("\"{etag}\"")
    }
}

/// `prefix/key` (key with `/` separators).
#[must_use]
pub fn child(prefix: &Path, key: &str) -> Path {
    prefix
        .parts()
        .chain(key.split('/').filter(|p| !p.is_empty()).map(PathPart::from))
        .collect()
}

/// `base/key` for messages.
#[must_use]
pub fn join_url(base: &str, key: &str) -> String {
    format!("{}/{key}", base.trim_end_matches('/'))
}

/// A message URL for a store given as an object: its display name and the path.
#[must_use]
pub fn store_url(store: &dyn ObjectStore, path: &Path) -> String {
    let name = redact(&store.to_string());
    if path.as_ref().is_empty() {
        name
    } else {
        join_url(&name, path.as_ref())
    }
}

/// What a request was for, which decides what a failed condition means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Access {
    /// A read pinned to a version (`If-Match`): a failed condition means the object changed.
    Read,
    /// A conditional put: a failed condition means another writer won.
    Write,
}

/// Whether `e` is a failed condition: `Precondition` (HTTP 412), `NotModified` (304) or
/// `AlreadyExists` (a create-only put found an object; HTTP 409/412).
#[must_use]
pub fn is_condition_failure(e: &object_store::Error) -> bool {
    matches!(
        e,
        object_store::Error::Precondition { .. }
            | object_store::Error::NotModified { .. }
            | object_store::Error::AlreadyExists { .. }
    )
}

impl Error {
    /// The one mapping of a store error for the object at `url`: a failed condition (see
    /// [`is_condition_failure`]) is [`Error::Changed`] for an [`Access::Read`] and
    /// [`Error::Conflict`] for an [`Access::Write`]; anything else is [`Error::Remote`].
    #[must_use]
    pub fn from_store(url: impl Into<String>, source: object_store::Error, access: Access) -> Self {
        let url = url.into();
        match (is_condition_failure(&source), access) {
            (true, Access::Read) => Self::Changed { url },
            (true, Access::Write) => Self::Conflict { url },
            (false, _) => Self::Remote { url, source },
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "a failed unwrap is a failed test")]

    use super::*;

    #[test]
    fn urls_name_the_object_without_credentials() {
        let s = store_for_url("memory:///a/b/", &[]).unwrap();
        assert_eq!(s.url, "memory:///a/b");
        assert_eq!(s.path.as_ref(), "a/b");
        assert_eq!(s.root, "memory://");
        match store_for_url("not a url with:secret@host", &[]) {
            Err(Error::InvalidArgument(m)) => assert!(!m.contains("secret"), "{m}"),
            other => panic!("{other:?}"),
        }
        match store_for_url("nosuchscheme://user:secret@host/k?sig=1", &[]) {
            Err(e @ Error::Remote { .. }) => {
                let m = e.to_string();
                assert!(!m.contains("secret") && !m.contains("sig=1"), "{m}");
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(child(&Path::from("p/q"), "x/y.wkw").as_ref(), "p/q/x/y.wkw");
        assert_eq!(join_url("s3://b/p/", "header.wkw"), "s3://b/p/header.wkw");
    }

    #[test]
    fn condition_failures_map_by_access() {
        let pre = || object_store::Error::Precondition {
            path: "k".into(),
            source: "412".into(),
        };
        assert!(matches!(
            Error::from_store("u", pre(), Access::Read),
            Error::Changed { .. }
        ));
        assert!(matches!(
            Error::from_store("u", pre(), Access::Write),
            Error::Conflict { .. }
        ));
        let exists = object_store::Error::AlreadyExists {
            path: "k".into(),
            source: "409".into(),
        };
        assert!(matches!(
            Error::from_store("u", exists, Access::Write),
            Error::Conflict { .. }
        ));
        let nf = object_store::Error::NotFound {
            path: "k".into(),
            source: "404".into(),
        };
        assert!(matches!(
            Error::from_store("u", nf, Access::Read),
            Error::Remote { .. }
        ));
    }
}
