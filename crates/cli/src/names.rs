//! Names in messages: URL arguments are recognised by their `SCHEME://` and shown without user
//! info, query string or fragment; the values of credential environment variables and the
//! credentials found in URL arguments are masked in every message the tool prints.

use std::path::Path;
use std::sync::{Mutex, OnceLock};

/// The `SCHEME` of a `SCHEME://…` argument.
pub(crate) fn scheme_of(s: &str) -> Option<&str> {
    let (scheme, _) = s.split_once("://")?;
    let mut chars = scheme.chars();
    let first = chars.next()?;
    (first.is_ascii_alphabetic()
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.')))
    .then_some(scheme)
}

/// Whether `path` is written as a URL (`SCHEME://…`).
pub(crate) fn is_url(path: &Path) -> bool {
    path.to_str().and_then(scheme_of).is_some()
}

/// The URL without user info, query and fragment ([`scifmt_io::redact`]) and without one
/// trailing `/` (unless the path is only `/`).
pub(crate) fn shown_url(url: &url::Url) -> String {
    let s = scifmt_io::redact(url.as_str());
    s.strip_suffix('/')
        .filter(|t| !t.ends_with('/'))
        .unwrap_or(&s)
        .to_owned()
}

/// How `path` is named in messages: a URL without credentials, otherwise the path.
pub(crate) fn display_name(path: &Path) -> String {
    match path.to_str().map(|s| (s, scheme_of(s))) {
        Some((s, Some(scheme))) => match url::Url::parse(s) {
            Ok(u) => shown_url(&u),
            Err(_) => format!("{scheme}://…"),
        },
        _ => path.display().to_string(),
    }
}

/// Secrets that must never appear in a message: credentials found in URL arguments.
fn url_secrets() -> &'static Mutex<Vec<String>> {
    static SECRETS: OnceLock<Mutex<Vec<String>>> = OnceLock::new();
    SECRETS.get_or_init(|| Mutex::new(Vec::new()))
}

/// Whether an environment variable holds a credential (its value is masked in messages).
fn is_secret_var(name: &str) -> bool {
    let n = name.to_ascii_uppercase();
    (n.starts_with("AWS_") || n.starts_with("GOOGLE_") || n.starts_with("AZURE_"))
        && ["SECRET", "TOKEN", "KEY", "PASSWORD", "CREDENTIAL", "SAS"]
            .iter()
            .any(|w| n.contains(w))
        && !n.ends_with("_ID")
}

/// Shorter values are not masked: flags such as `true` are no secrets, and masking them
/// would garble messages.
const MIN_SECRET_LEN: usize = 8;

/// `msg` with every credential (from the environment or from URL arguments) replaced by `***`.
pub(crate) fn scrub(msg: &str) -> String {
    let mut out = msg.to_owned();
    let mut secrets: Vec<String> = std::env::vars()
        .filter(|(k, v)| is_secret_var(k) && v.len() >= MIN_SECRET_LEN)
        .map(|(_, v)| v)
        .collect();
    if let Ok(s) = url_secrets().lock() {
        secrets.extend(s.iter().filter(|v| v.len() >= MIN_SECRET_LEN).cloned());
    }
    // Longest first, so a secret containing another is masked whole.
    secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
    for s in &secrets {
        out = out.replace(s.as_str(), "***");
    }
    out
}

/// Remembers the credentials `url` carries (password, query values) for [`scrub`].
pub(crate) fn remember_secrets(url: &url::Url) {
    if let Ok(mut secrets) = url_secrets().lock() {
        if let Some(p) = url.password() {
            secrets.push(p.to_owned());
        }
        if let Some(q) = url.query() {
            secrets.extend(
                q.split('&')
                    .filter_map(|kv| kv.split_once('='))
                    .map(|(_, v)| v.to_owned()),
            );
        }
    }
}
