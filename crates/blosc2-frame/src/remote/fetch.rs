//! Range requests: bounded, length-checked, ETag-checked, coalesced and concurrent.

use std::io;
use std::ops::Range;
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use futures::{StreamExt, TryStreamExt, stream};
use object_store::path::Path;
use object_store::{GetOptions, GetRange, ObjectMeta, ObjectStore};

use super::RemoteOptions;
use crate::{Error, ReadAt, Result};

/// A store plus the printable root of its URLs (no credentials).
#[derive(Debug, Clone)]
pub(crate) struct Location {
    pub(crate) store: Arc<dyn ObjectStore>,
    /// `s3://bucket`, `http://host:port`, `file://`, or the store's `Display` form.
    pub(crate) root: String,
}

impl Location {
    /// A location for a store given as an object (URLs are `{store}/{path}`).
    pub(crate) fn from_store(store: Arc<dyn ObjectStore>) -> Self {
        let root = store.to_string();
        Self { store, root }
    }

    /// The printable URL of `path`.
    pub(crate) fn url(&self, path: &Path) -> String {
        if self.root.ends_with('/') {
            format!("{}{path}", self.root)
        } else {
            format!("{}/{path}", self.root)
        }
    }

    pub(crate) fn err(&self, path: &Path, source: object_store::Error) -> Error {
        Error::Remote {
            url: self.url(path),
            source,
        }
    }
}

/// Opens the store a URL names, configured from the standard environment variables
/// (`AWS_*`, `GOOGLE_*`, `AZURE_*`, lowercased as `object_store`'s config keys expect, the
/// same variables `AmazonS3Builder::from_env` and its GCS/Azure peers read).
pub(crate) fn store_for_url(url: &str) -> Result<(Location, Path)> {
    let parsed = url::Url::parse(url)
        .map_err(|e| Error::InvalidArgument(format!("not a URL ({e}): {}", redact(url))))?;
    let env = std::env::vars().filter_map(|(k, v)| {
        ["AWS_", "GOOGLE_", "AZURE_"]
            .iter()
            .any(|p| k.starts_with(p))
            .then(|| (k.to_ascii_lowercase(), v))
    });
    let root = url_root(&parsed);
    let (store, path) = object_store::parse_url_opts(&parsed, env).map_err(|source| {
        // The store's message quotes the URL as given, which may carry credentials.
        let msg = source
            .to_string()
            .replace(url, &redact(url))
            .replace(parsed.as_str(), &redact(url));
        Error::Remote {
            url: redact(url),
            source: object_store::Error::Generic {
                store: "parse_url",
                source: msg.into(),
            },
        }
    })?;
    Ok((
        Location {
            store: Arc::from(store),
            root,
        },
        path,
    ))
}

/// `scheme://host[:port]` of a URL (no user info, path, query or fragment).
fn url_root(u: &url::Url) -> String {
    match (u.host_str(), u.port()) {
        (Some(h), Some(p)) => format!("{}://{h}:{p}", u.scheme()),
        (Some(h), None) => format!("{}://{h}", u.scheme()),
        _ => format!("{}://", u.scheme()),
    }
}

/// A URL without user info, query or fragment (which may hold credentials or signatures).
pub(crate) fn redact(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(mut u) => {
            let _ = u.set_username("");
            let _ = u.set_password(None);
            u.set_query(None);
            u.set_fragment(None);
            u.to_string()
        }
        Err(_) => "<unparsable URL>".to_string(),
    }
}

/// One object being read: where it is and the version seen at open.
#[derive(Debug, Clone)]
pub(crate) struct Object {
    pub(crate) loc: Location,
    pub(crate) path: Path,
    /// The ETag seen at open (`If-Match` on every later request), when the store has them.
    pub(crate) etag: Option<String>,
}

/// A response body with its object metadata.
#[derive(Debug)]
pub(crate) struct Fetched {
    pub(crate) bytes: Bytes,
    pub(crate) range: Range<u64>,
    pub(crate) meta: ObjectMeta,
}

/// Why one attempt failed.
enum Failure {
    /// Worth another attempt (body cut short or failed while streaming).
    Retry(Error),
    /// Final.
    Fatal(Error),
}

impl Object {
    pub(crate) fn url(&self) -> String {
        self.loc.url(&self.path)
    }

    fn options(&self, range: Option<GetRange>) -> GetOptions {
        GetOptions {
            if_match: self.etag.clone(),
            range,
            ..GetOptions::default()
        }
    }

    /// GET `range` (or the whole object) of `path` (this object, or a sparse chunk file when
    /// `check_etag` is false), rejecting bodies longer than `cap` before reading them.
    pub(crate) async fn get(
        &self,
        path: &Path,
        range: Option<GetRange>,
        check_etag: bool,
        cap: u64,
        opts: &RemoteOptions,
    ) -> Result<Fetched> {
        let mut attempt = 0;
        loop {
            let o = if check_etag {
                self.options(range.clone())
            } else {
                GetOptions {
                    range: range.clone(),
                    ..GetOptions::default()
                }
            };
            match self.get_once(path, o, check_etag, cap).await {
                Ok(f) => return Ok(f),
                Err(Failure::Retry(e)) if attempt < opts.retries => {
                    let _ = e;
                    attempt += 1;
                }
                Err(Failure::Retry(e) | Failure::Fatal(e)) => return Err(e),
            }
        }
    }

    async fn get_once(
        &self,
        path: &Path,
        o: GetOptions,
        check_etag: bool,
        cap: u64,
    ) -> Result<Fetched, Failure> {
        let url = || self.loc.url(path);
        let requested = o.range.clone();
        let r = self
            .loc
            .store
            .get_opts(path, o)
            .await
            .map_err(|e| Failure::Fatal(self.map_get_err(path, e)))?;
        if check_etag && self.etag.is_some() && r.meta.e_tag != self.etag {
            return Err(Failure::Fatal(Error::Changed { url: url() }));
        }
        let range = r.range.clone();
        let meta = r.meta.clone();
        let len = range.end.checked_sub(range.start).ok_or_else(|| {
            Failure::Fatal(Error::invalid(
                "response range",
                range.start,
                format!("{}: end before start", url()),
            ))
        })?;
        if let Some(GetRange::Bounded(want)) = &requested {
            // The store clamps a range reaching past the end; anything else is not what we asked.
            if range.start != want.start
                || range.end > want.end
                || range.end < want.end.min(meta.size)
            {
                return Err(Failure::Fatal(Error::invalid(
                    "response range",
                    range.start,
                    format!("{}: asked for {want:?}, got {range:?}", url()),
                )));
            }
        }
        if len > cap {
            return Err(Failure::Fatal(Error::LimitExceeded {
                what: "remote response body",
                requested: len,
                limit: cap,
            }));
        }
        let n = usize::try_from(len).map_err(|_| {
            Failure::Fatal(Error::Overflow {
                what: "response length",
            })
        })?;
        let mut buf = BytesMut::with_capacity(n);
        let mut body = r.into_stream();
        while let Some(part) = body.next().await {
            let part = part.map_err(|e| Failure::Retry(self.map_get_err(path, e)))?;
            if buf.len().saturating_add(part.len()) > n {
                return Err(Failure::Fatal(Error::invalid(
                    "response body",
                    range.start,
                    format!("{}: longer than the {n} bytes of its range", url()),
                )));
            }
            buf.extend_from_slice(&part);
        }
        if buf.len() != n {
            return Err(Failure::Retry(Error::Truncated {
                what: "remote response body",
                offset: range.start,
                needed: len,
                available: buf.len() as u64,
            }));
        }
        Ok(Fetched {
            bytes: buf.freeze(),
            range,
            meta,
        })
    }

    fn map_get_err(&self, path: &Path, e: object_store::Error) -> Error {
        match e {
            object_store::Error::Precondition { .. } => Error::Changed {
                url: self.loc.url(path),
            },
            e => self.loc.err(path, e),
        }
    }

    /// The bytes of every range in `ranges` (within this object), fetched in one round of
    /// concurrent requests: ranges closer than `coalesce_gap` share a request.
    pub(crate) async fn fetch_ranges(
        &self,
        ranges: &[Range<u64>],
        opts: &RemoteOptions,
    ) -> Result<Vec<Bytes>> {
        let cap = opts.limits.max_output_bytes as u64;
        let groups = coalesce(ranges, opts.coalesce_gap, cap, opts.in_flight());
        // Owned items: a stream over borrowed ones makes the future not `Send` (the closure
        // would have to be general over the borrow's lifetime).
        let requests: Vec<(usize, Range<u64>)> = groups
            .iter()
            .enumerate()
            .map(|(gi, (r, _))| (gi, r.clone()))
            .collect();
        let fetched: Vec<(usize, Bytes)> = stream::iter(requests)
            .map(|(gi, r)| async move {
                let want = r.end - r.start;
                let f = self
                    .get(
                        &self.path,
                        Some(GetRange::Bounded(r.clone())),
                        true,
                        want,
                        opts,
                    )
                    .await?;
                if f.bytes.len() as u64 != want {
                    return Err(Error::Truncated {
                        what: "object",
                        offset: r.start,
                        needed: want,
                        available: f.bytes.len() as u64,
                    });
                }
                Ok::<_, Error>((gi, f.bytes))
            })
            .buffer_unordered(opts.in_flight())
            .try_collect()
            .await?;
        let mut out = vec![Bytes::new(); ranges.len()];
        for (gi, bytes) in fetched {
            let (g, members) = &groups[gi];
            for &i in members {
                let r = &ranges[i];
                out[i] = bytes.slice(to_us(r.start - g.start)?..to_us(r.end - g.start)?);
            }
        }
        Ok(out)
    }
}

/// Groups `ranges` (by index) into requests. Overlapping and touching ranges always share a
/// request; a gap of at most `gap` bytes is bridged, smallest gaps first, while the bridged
/// bytes stay within a tenth of the bytes asked for, or while there are more requests than
/// `max_requests` (so that one round of concurrent requests suffices). No request exceeds `cap`
/// bytes unless a single range does.
pub(crate) fn coalesce(
    ranges: &[Range<u64>],
    gap: u64,
    cap: u64,
    max_requests: usize,
) -> Vec<(Range<u64>, Vec<usize>)> {
    let mut order: Vec<usize> = (0..ranges.len()).collect();
    order.sort_by_key(|&i| (ranges[i].start, ranges[i].end));
    // Runs of overlapping or touching ranges.
    let mut runs: Vec<(Range<u64>, Vec<usize>)> = Vec::new();
    for i in order {
        let r = &ranges[i];
        if let Some((g, members)) = runs.last_mut()
            && r.start <= g.end
            && g.end.max(r.end) - g.start <= cap
        {
            g.end = g.end.max(r.end);
            members.push(i);
            continue;
        }
        runs.push((r.clone(), vec![i]));
    }
    let needed: u64 = runs.iter().map(|(r, _)| r.end - r.start).sum();
    let budget = needed / 10;
    // Gaps between consecutive runs, smallest first.
    let mut gaps: Vec<(u64, usize)> = runs
        .windows(2)
        .enumerate()
        .map(|(k, w)| (w[1].0.start - w[0].0.end, k))
        .filter(|&(g, _)| g <= gap)
        .collect();
    gaps.sort_unstable();
    let mut bridge = vec![false; runs.len().saturating_sub(1)];
    let mut count = runs.len();
    let mut waste = 0u64;
    for (g, k) in gaps {
        if waste.saturating_add(g) > budget && count <= max_requests.max(1) {
            break;
        }
        bridge[k] = true;
        waste = waste.saturating_add(g);
        count -= 1;
    }
    let mut groups: Vec<(Range<u64>, Vec<usize>)> = Vec::new();
    for (k, (r, members)) in runs.into_iter().enumerate() {
        if k > 0
            && bridge[k - 1]
            && let Some((g, m)) = groups.last_mut()
            && r.end - g.start <= cap
        {
            g.end = r.end;
            m.extend(members);
            continue;
        }
        groups.push((r, members));
    }
    groups
}

fn to_us(v: u64) -> Result<usize> {
    usize::try_from(v).map_err(|_| Error::Overflow { what: "range" })
}

/// Byte ranges of an object fetched at open, read back by the local frame parser.
#[derive(Debug)]
pub(crate) struct Prefetched {
    pub(crate) size: u64,
    pub(crate) pieces: Vec<(u64, Bytes)>,
}

impl Prefetched {
    /// Whether `r` is covered by the pieces.
    pub(crate) fn covers(&self, r: &Range<u64>) -> bool {
        self.missing(r).is_empty()
    }

    /// The parts of `r` no piece covers.
    pub(crate) fn missing(&self, r: &Range<u64>) -> Vec<Range<u64>> {
        let mut todo = vec![r.clone()];
        for (start, b) in &self.pieces {
            let p = *start..start.saturating_add(b.len() as u64);
            let mut next = Vec::new();
            for t in todo {
                if t.end <= p.start || t.start >= p.end {
                    next.push(t);
                    continue;
                }
                if t.start < p.start {
                    next.push(t.start..p.start);
                }
                if t.end > p.end {
                    next.push(p.end..t.end);
                }
            }
            todo = next;
        }
        todo.retain(|t| t.start < t.end);
        todo
    }
}

impl ReadAt for Prefetched {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        let mut pos = offset;
        let end = offset
            .checked_add(buf.len() as u64)
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "offset overflows"))?;
        if end > self.size {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "read past the end of the object",
            ));
        }
        while pos < end {
            let piece = self.pieces.iter().find_map(|(s, b)| {
                let e = s.saturating_add(b.len() as u64);
                (*s <= pos && pos < e).then_some((*s, b))
            });
            let Some((s, b)) = piece else {
                return Err(io::Error::other(format!(
                    "bytes {pos}..{end} of the object were not fetched at open"
                )));
            };
            let from = usize::try_from(pos - s).map_err(io::Error::other)?;
            let n = usize::try_from((end - pos).min(b.len() as u64 - (pos - s)))
                .map_err(io::Error::other)?;
            let at = usize::try_from(pos - offset).map_err(io::Error::other)?;
            let (Some(dst), Some(src)) = (buf.get_mut(at..at + n), b.get(from..from + n)) else {
                return Err(io::Error::other("prefetched piece out of range"));
            };
            dst.copy_from_slice(src);
            pos += n as u64;
        }
        Ok(())
    }

    fn size(&self) -> io::Result<u64> {
        Ok(self.size)
    }
}

/// Runs `f` on every item on up to `available_parallelism` threads; the first error wins.
pub(crate) fn par_each<T: Send>(items: Vec<T>, f: impl Fn(T) -> Result<()> + Sync) -> Result<()> {
    let threads = std::thread::available_parallelism()
        .map_or(1, usize::from)
        .min(items.len());
    if threads <= 1 {
        return items.into_iter().try_for_each(f);
    }
    let per = items.len().div_ceil(threads);
    let mut batches: Vec<Vec<T>> = Vec::with_capacity(threads);
    let mut it = items.into_iter();
    loop {
        let b: Vec<T> = it.by_ref().take(per).collect();
        if b.is_empty() {
            break;
        }
        batches.push(b);
    }
    let f = &f;
    std::thread::scope(|s| {
        let handles: Vec<_> = batches
            .into_iter()
            .map(|b| s.spawn(move || b.into_iter().try_for_each(f)))
            .collect();
        let mut first = Ok(());
        for h in handles {
            let r = h.join().unwrap_or_else(|_| {
                Err(Error::InvalidArgument("a decoding thread panicked".into()))
            });
            if first.is_ok() {
                first = r;
            }
        }
        first
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn coalesce_merges_touching_ranges_and_small_gaps_within_budget() {
        // Touching and overlapping ranges share a request whatever the gap setting.
        let g = coalesce(&[10..20, 0..10, 15..30], 0, 1000, 8);
        assert_eq!(g.len(), 1);
        assert_eq!(g[0].0, 0..30);
        assert_eq!(g[0].1, vec![1, 0, 2]);
        // 300 bytes needed: gaps of 5 and 10 bridged (15 <= 30), the gap of 60 not.
        let r = [0..100, 105..200, 210..250, 310..375];
        let g = coalesce(&r, 1000, 1 << 20, 8);
        let spans: Vec<_> = g.iter().map(|(r, _)| r.clone()).collect();
        assert_eq!(spans, vec![0..250, 310..375]);
        // Gaps above `gap` are never bridged; none at all with gap 0.
        assert_eq!(coalesce(&r, 7, 1 << 20, 8).len(), 3);
        assert_eq!(coalesce(&r, 0, 1 << 20, 8).len(), 4);
        // More requests than allowed: bridge (smallest gaps first) beyond the byte budget.
        let g = coalesce(&r, 1000, 1 << 20, 1);
        assert_eq!(g.len(), 1);
        assert_eq!(g[0].0, 0..375);
        // The cap splits requests.
        let g = coalesce(&r, 1000, 200, 1);
        assert!(g.iter().all(|(r, _)| r.end - r.start <= 200), "{g:?}");
        let mut all: Vec<usize> = g.iter().flat_map(|(_, m)| m.clone()).collect();
        all.sort_unstable();
        assert_eq!(all, vec![0, 1, 2, 3]);
    }

    #[test]
    fn prefetched_reads_across_pieces_and_reports_gaps() {
        let p = Prefetched {
            size: 20,
            pieces: vec![
                (0, Bytes::from_static(&[1, 2, 3, 4])),
                (4, Bytes::from_static(&[5, 6])),
                (10, Bytes::from_static(&[9; 10])),
            ],
        };
        let mut b = [0u8; 6];
        p.read_exact_at(&mut b, 0).unwrap();
        assert_eq!(b, [1, 2, 3, 4, 5, 6]);
        assert!(p.read_exact_at(&mut b, 5).is_err());
        assert!(p.read_exact_at(&mut [0u8; 2], 19).is_err());
        assert_eq!(p.missing(&(0..20)), vec![6..10]);
        assert!(p.covers(&(12..20)));
    }
}
