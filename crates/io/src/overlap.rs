//! Whether a command's output would land on its own input.
//!
//! A command that reads `input` and writes (or replaces, or deletes) `output` must not run
//! when the two are the same file or directory, or one lies inside the other: replacing the
//! output would then delete or overwrite the input. Strings cannot say it: `ds`, `./ds`,
//! `/home/u/ds`, `sub/../ds`, a symlink to `ds` and a hard link to a file all name one thing.
//! So local paths are compared by **identity** (device and inode on unix, the file index on
//! Windows, through the `same-file` crate) of the path and of each of its ancestors, after the
//! longest existing part of the path is resolved (`std::fs::canonicalize`: symlinks and `..`);
//! a part that does not exist yet is appended as written.
//!
//! URLs (`s3://bucket/prefix`, `gs://…`, `az://…`, `http(s)://host/…`, `memory:///…`) overlap
//! when they name the same store (scheme, host, port) and one key prefix is the other or
//! contains it, compared segment by segment after normalising (percent-decoding, empty and `.`
//! segments dropped, `..` resolved, no trailing `/`): `s3://b/ds` contains `s3://b/ds/color`,
//! not `s3://b/ds2`. A `file://` URL is its local path. A local path and a remote URL never
//! overlap.

use std::path::{Component, Path, PathBuf};

use crate::error::{Error, Overlap, Result};

/// Whether a path argument is a URL (`scheme://…`) rather than a local path.
#[must_use]
pub fn is_url(path: &Path) -> bool {
    path.to_str().and_then(scheme_of).is_some()
}

/// The scheme of text that starts with `SCHEME://` (a letter, then letters, digits, `+`, `-`,
/// `.`), the rule by which an argument is a URL.
pub(crate) fn scheme_of(text: &str) -> Option<&str> {
    let (scheme, _) = text.split_once("://")?;
    let mut chars = scheme.chars();
    (chars.next()?.is_ascii_alphabetic()
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.')))
    .then_some(scheme)
}

/// How `output` relates to `input`, each a local path or a URL (see the crate
/// docs); `None` when they are apart.
///
/// # Errors
/// [`Error::Io`] if a path's existing part cannot be resolved or opened (other than not
/// existing); [`Error::InvalidArgument`] for a malformed URL.
pub fn overlap(input: &Path, output: &Path) -> Result<Option<Overlap>> {
    match (place(input)?, place(output)?) {
        (Place::Local(i), Place::Local(o)) => local_overlap(&i, &o),
        (Place::Remote(i), Place::Remote(o)) => Ok(key_overlap(&i, &o)),
        _ => Ok(None),
    }
}

/// [`overlap`] as a refusal: [`Error::Overlap`] naming both (as given, without credentials)
/// when `output` is `input`, inside it or around it.
///
/// # Errors
/// [`Error::Overlap`]; the errors of [`overlap`].
pub fn ensure_apart(input: &Path, output: &Path) -> Result<()> {
    match overlap(input, output)? {
        None => Ok(()),
        Some(how) => Err(Error::Overlap {
            input: shown(input),
            output: shown(output),
            how,
        }),
    }
}

/// A path or URL as messages show it (a URL without credentials or query).
fn shown(path: &Path) -> String {
    if is_url(path) {
        crate::redact::redact(&path.to_string_lossy())
            .trim_end_matches('/')
            .to_owned()
    } else {
        path.display().to_string()
    }
}

/// What an argument names, ready to compare.
enum Place {
    Local(PathBuf),
    Remote(RemoteKey),
}

/// A store (`scheme://host:port`, lower case) and the normalised key segments inside it.
#[derive(Debug, PartialEq, Eq)]
struct RemoteKey {
    store: String,
    segments: Vec<String>,
}

fn place(path: &Path) -> Result<Place> {
    if !is_url(path) {
        return Ok(Place::Local(path.to_path_buf()));
    }
    let text = path.to_string_lossy();
    let (scheme, rest) = text.split_once("://").unwrap_or_default();
    let scheme = scheme.to_ascii_lowercase();
    // Drop user info, query and fragment; split authority from path.
    let rest = rest.split(['?', '#']).next().unwrap_or_default();
    let (authority, key) = rest.split_once('/').unwrap_or((rest, ""));
    let host = authority.rsplit('@').next().unwrap_or_default();
    if scheme == "file" {
        if !(host.is_empty() || host.eq_ignore_ascii_case("localhost")) {
            return Err(Error::InvalidArgument(format!(
                "file URL with a host ({}): only local files are file URLs",
                shown(path)
            )));
        }
        return Ok(Place::Local(PathBuf::from(format!("/{}", decode(key)?))));
    }
    let mut segments: Vec<String> = Vec::new();
    for seg in key.split('/') {
        let seg = decode(seg)?;
        match seg.as_str() {
            "" | "." => {}
            ".." => {
                segments.pop();
            }
            _ => segments.push(seg),
        }
    }
    Ok(Place::Remote(RemoteKey {
        store: format!("{scheme}://{}", host.to_ascii_lowercase()),
        segments,
    }))
}

/// Percent-decoding of one URL path segment (the key a store sees).
fn decode(seg: &str) -> Result<String> {
    let bytes = seg.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        if b == b'%' {
            let hex = bytes
                .get(i + 1..i + 3)
                .and_then(|h| std::str::from_utf8(h).ok())
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .ok_or_else(|| {
                    Error::InvalidArgument(format!("bad percent escape in URL segment {seg:?}"))
                })?;
            out.push(hex);
            i += 3;
        } else {
            out.push(b);
            i += 1;
        }
    }
    Ok(String::from_utf8_lossy(&out).into_owned())
}

fn key_overlap(input: &RemoteKey, output: &RemoteKey) -> Option<Overlap> {
    if input.store != output.store {
        return None;
    }
    let (i, o) = (&input.segments, &output.segments);
    if i == o {
        Some(Overlap::Same)
    } else if o.starts_with(i) {
        Some(Overlap::OutputInsideInput)
    } else if i.starts_with(o) {
        Some(Overlap::InputInsideOutput)
    } else {
        None
    }
}

/// A local path resolved as far as it exists: the identities of its existing part and of every
/// ancestor of that (nearest first), whether the whole path exists, and the resolved path.
struct Resolved {
    /// Identity of the existing part (first) and of each of its ancestors.
    chain: Vec<same_file::Handle>,
    /// Whether the path exists entirely (the first identity is the path's own).
    exists: bool,
    /// The canonical existing part with the rest appended (for paths where identities say
    /// nothing, e.g. two paths that do not exist).
    path: PathBuf,
}

fn resolve(path: &Path) -> Result<Resolved> {
    let absolute = if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir()
            .map_err(|e| Error::io(path, e))?
            .join(path)
    };
    // Lexically clean the part that does not exist, so that `new/../x` is `x`.
    let mut existing = absolute.clone();
    let mut rest: Vec<std::ffi::OsString> = Vec::new();
    let canonical = loop {
        match std::fs::canonicalize(&existing) {
            Ok(c) => break c,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                // The last component: a name, or `..` / `.` of a part that does not exist.
                let Some(last) = existing.components().next_back() else {
                    return Err(Error::io(path, e));
                };
                rest.push(last.as_os_str().to_os_string());
                if !existing.pop() {
                    return Err(Error::io(path, e));
                }
            }
            Err(e) => return Err(Error::io(path, e)),
        }
    };
    let mut chain = Vec::new();
    let mut at = Some(canonical.as_path());
    while let Some(p) = at {
        chain.push(same_file::Handle::from_path(p).map_err(|e| Error::io(p, e))?);
        at = p.parent();
    }
    let mut full = canonical;
    for name in rest.iter().rev() {
        match Path::new(name).components().next() {
            Some(Component::ParentDir) => {
                full.pop();
            }
            Some(Component::CurDir) | None => {}
            _ => full.push(name),
        }
    }
    if rest.iter().any(|n| n == "..") {
        // `missing/../x` is `x` once `missing` is created (as writers do): resolve that.
        return resolve(&full);
    }
    Ok(Resolved {
        chain,
        exists: rest.is_empty(),
        path: full,
    })
}

/// How local `output` relates to local `input`, by identity (see the crate docs).
fn local_overlap(input: &Path, output: &Path) -> Result<Option<Overlap>> {
    let (i, o) = (resolve(input)?, resolve(output)?);
    match (i.exists, o.exists) {
        (true, true) => {
            let (ih, oh) = (&i.chain[0], &o.chain[0]);
            if ih == oh {
                Ok(Some(Overlap::Same))
            } else if o.chain[1..].contains(ih) {
                Ok(Some(Overlap::OutputInsideInput))
            } else if i.chain[1..].contains(oh) {
                Ok(Some(Overlap::InputInsideOutput))
            } else {
                Ok(None)
            }
        }
        // A new output is inside the input if the input is one of its existing ancestors.
        (true, false) => Ok(o
            .chain
            .contains(&i.chain[0])
            .then_some(Overlap::OutputInsideInput)),
        (false, true) => Ok(i
            .chain
            .contains(&o.chain[0])
            .then_some(Overlap::InputInsideOutput)),
        // Neither exists: the resolved spellings decide.
        (false, false) => Ok(if i.path == o.path {
            Some(Overlap::Same)
        } else if o.path.starts_with(&i.path) {
            Some(Overlap::OutputInsideInput)
        } else if i.path.starts_with(&o.path) {
            Some(Overlap::InputInsideOutput)
        } else {
            None
        }),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "a failed unwrap is a failed test")]

    use super::*;

    fn rel(i: &Path, o: &Path) -> Option<Overlap> {
        overlap(i, o).unwrap()
    }

    #[test]
    fn local_paths_compare_by_identity() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let ds = d.join("ds");
        std::fs::create_dir_all(ds.join("color/1")).unwrap();
        std::fs::write(ds.join("color/1/header.wkw"), b"h").unwrap();
        std::fs::create_dir(d.join("other")).unwrap();
        assert_eq!(rel(&ds, &ds), Some(Overlap::Same));
        assert_eq!(rel(&ds, &d.join("ds/./")), Some(Overlap::Same));
        assert_eq!(rel(&ds, &d.join("other/../ds")), Some(Overlap::Same));
        assert_eq!(
            rel(&ds, &ds.join("color")),
            Some(Overlap::OutputInsideInput)
        );
        assert_eq!(
            rel(&ds, &ds.join("new/sub")),
            Some(Overlap::OutputInsideInput)
        );
        assert_eq!(
            rel(&ds.join("color/1"), &ds),
            Some(Overlap::InputInsideOutput)
        );
        assert_eq!(rel(&ds, &d.join("other")), None);
        assert_eq!(rel(&ds, &d.join("ds2")), None);
        assert_eq!(rel(&ds, &d.join("new/../ds")), Some(Overlap::Same));
        assert_eq!(
            rel(&d.join("a"), &d.join("a/b")),
            Some(Overlap::OutputInsideInput)
        );
    }

    #[cfg(unix)]
    #[test]
    fn symlinks_and_hard_links_are_seen_through() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let ds = d.join("ds");
        std::fs::create_dir(&ds).unwrap();
        std::os::unix::fs::symlink(&ds, d.join("link")).unwrap();
        assert_eq!(rel(&ds, &d.join("link")), Some(Overlap::Same));
        assert_eq!(
            rel(&d.join("link"), &ds.join("x")),
            Some(Overlap::OutputInsideInput)
        );
        assert_eq!(
            rel(&ds.join("x"), &d.join("link")),
            Some(Overlap::InputInsideOutput)
        );
        std::fs::write(ds.join("f.bin"), b"data").unwrap();
        std::fs::hard_link(ds.join("f.bin"), d.join("g.bin")).unwrap();
        assert_eq!(
            rel(&ds.join("f.bin"), &d.join("g.bin")),
            Some(Overlap::Same)
        );
        assert_eq!(
            rel(&ds.join("f.bin"), &d.join("link")),
            Some(Overlap::InputInsideOutput)
        );
    }

    #[test]
    fn relative_paths_resolve_from_the_working_directory() {
        let here = std::env::current_dir().unwrap();
        assert_eq!(rel(Path::new("."), &here), Some(Overlap::Same));
        assert_eq!(
            rel(Path::new("src"), &here.join("src/nope")),
            Some(Overlap::OutputInsideInput)
        );
    }

    #[test]
    fn urls_compare_by_store_and_key_prefix() {
        let u = |s: &str| PathBuf::from(s);
        assert_eq!(rel(&u("s3://b/ds"), &u("s3://b/ds/")), Some(Overlap::Same));
        assert_eq!(
            rel(&u("s3://b/ds"), &u("s3://b//ds/./x/../")),
            Some(Overlap::Same)
        );
        assert_eq!(rel(&u("s3://B/ds"), &u("S3://b/ds")), Some(Overlap::Same));
        assert_eq!(
            rel(&u("s3://b/ds"), &u("s3://b/ds/color")),
            Some(Overlap::OutputInsideInput)
        );
        assert_eq!(
            rel(&u("s3://b/ds/color"), &u("s3://b/ds")),
            Some(Overlap::InputInsideOutput)
        );
        assert_eq!(rel(&u("s3://b/d%73"), &u("s3://b/ds")), Some(Overlap::Same));
        assert_eq!(rel(&u("s3://b/ds"), &u("s3://b/ds2")), None);
        assert_eq!(rel(&u("s3://b/ds"), &u("s3://c/ds")), None);
        assert_eq!(rel(&u("s3://b/ds"), &u("gs://b/ds")), None);
        assert_eq!(
            rel(&u("s3://key:secret@b/ds?x=1"), &u("s3://b/ds")),
            Some(Overlap::Same)
        );
        assert_eq!(
            rel(&u("s3://b"), &u("s3://b/x")),
            Some(Overlap::OutputInsideInput)
        );
        assert_eq!(rel(&u("s3://b/ds"), Path::new("ds")), None);
    }

    #[test]
    fn file_urls_are_local_paths() {
        let dir = tempfile::tempdir().unwrap();
        let ds = dir.path().join("ds");
        std::fs::create_dir(&ds).unwrap();
        let url = PathBuf::from(format!("file://{}", ds.display()));
        assert_eq!(rel(&ds, &url), Some(Overlap::Same));
        assert_eq!(rel(&url, &ds.join("x")), Some(Overlap::OutputInsideInput));
    }

    #[test]
    fn refusals_name_both_sides_without_credentials() {
        let e = ensure_apart(
            Path::new("s3://user:secret@b/ds"),
            Path::new("s3://b/ds/sub"),
        )
        .unwrap_err();
        let m = e.to_string();
        assert!(
            m.contains("s3://b/ds/sub is inside the input s3://b/ds"),
            "{m}"
        );
        assert!(!m.contains("secret"), "{m}");
        assert!(matches!(
            e,
            Error::Overlap {
                how: Overlap::OutputInsideInput,
                ..
            }
        ));
        ensure_apart(Path::new("s3://b/a"), Path::new("s3://b/b")).unwrap();
    }
}
