//! Range requests: bounded, length-checked, ETag-checked, coalesced and concurrent.

use std::io;
use std::ops::Range;
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use futures::{StreamExt, TryStreamExt, stream};
use object_store::path::Path;
use object_store::{GetOptions, GetRange, ObjectMeta, ObjectStore};

use super::RemoteOptions;
use crate::error::{Error, Result};
use scifmt_io::Access;
use scifmt_io::ReadAt;

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
        let root = scifmt_io::redact(&store.to_string());
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

/// Opens the store a URL names (see [`scifmt_io::store_for_url`]: configured from the `AWS_*`,
/// `GOOGLE_*` and `AZURE_*` environment variables).
pub(crate) fn store_for_url(url: &str) -> Result<(Location, Path)> {
    let s = scifmt_io::store_for_url(url, &[])?;
    Ok((
        Location {
            store: s.store,
            root: s.root,
        },
        s.path,
    ))
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
                Err(Failure::Retry(e)) if attempt < opts.read_retries => {
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
        scifmt_io::Error::from_store(self.loc.url(path), e, Access::Read).into()
    }

    /// The bytes of every range in `ranges` (within this object), fetched in one round of
    /// concurrent requests: ranges closer than `coalesce_gap` share a request.
    pub(crate) async fn fetch_ranges(
        &self,
        ranges: &[Range<u64>],
        opts: &RemoteOptions,
    ) -> Result<Vec<Bytes>> {
        let cap = (opts.format.limits.max_output_bytes as u64).min(opts.max_request_bytes);
        let plan =
            scifmt_io::coalesce(&[ranges.to_vec()], opts.coalesce_gap, cap, opts.in_flight())
                .pop()
                .unwrap_or_default();
        // Owned items: a stream over borrowed ones makes the future not `Send` (the closure
        // would have to be general over the borrow's lifetime).
        let requests: Vec<(usize, Range<u64>)> = plan
            .iter()
            .enumerate()
            .map(|(k, q)| (k, q.range.clone()))
            .collect();
        let mut fetched: Vec<(usize, Bytes)> = stream::iter(requests)
            .map(|(k, r)| async move {
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
                Ok::<_, Error>((k, f.bytes))
            })
            .buffer_unordered(opts.in_flight())
            .try_collect()
            .await?;
        fetched.sort_unstable_by_key(|(k, _)| *k);
        let bodies: Vec<Bytes> = fetched.into_iter().map(|(_, b)| b).collect();
        Ok(scifmt_io::assemble(ranges, &plan, &bodies)?)
    }
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
                Err(Error::Internal {
                    what: "a decoding thread panicked".into(),
                })
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
