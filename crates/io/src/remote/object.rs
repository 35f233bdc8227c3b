//! [`Object`]: the one version-pinned, length-checked, retried and coalesced ranged read of an
//! object every scifmt crate uses.

use std::ops::Range;
use std::sync::{Arc, OnceLock};

use bytes::{Bytes, BytesMut};
use futures::{StreamExt, TryStreamExt, stream};
use object_store::path::Path;
use object_store::{GetOptions, GetRange, ObjectMeta, ObjectStore, ObjectStoreExt};

use crate::error::{Error, Result};
use crate::remote::options::RemoteOptions;
use crate::remote::store::{Access, normalize_etag, store_url};

/// One object read in ranges, all of one version.
///
/// **Pinning.** The object is pinned to the ETag given by [`Object::with_etag`] (from a
/// listing or a `HEAD`) or, if none was given, to the ETag of the first response. Every later
/// request carries `If-Match` with it and every response's ETag is compared with it (for
/// stores that ignore `If-Match`), so a replaced object is [`Error::Changed`], never a mix of
/// two versions. An object that is gone after it was pinned is [`Error::Changed`] as well.
/// Stores that report no ETags (some HTTP servers) cannot be checked this way.
///
/// **Checks and retries.** A response must cover exactly the range asked for (a store may cut
/// a range that reaches past the end at the end; [`Object::get_range`] and
/// [`Object::get_ranges`] refuse that); a body longer than its range is refused before it is
/// read on. These are [`Error::Remote`] errors naming the object and the problem. A body cut short or failing
/// while streaming is fetched again, [`RemoteOptions::read_retries`] times, on top of the
/// store client's own retries of failed requests; a failed request is not repeated here.
///
/// Clones share the pin.
#[derive(Debug, Clone)]
pub struct Object {
    store: Arc<dyn ObjectStore>,
    path: Path,
    url: String,
    etag: Arc<OnceLock<String>>,
}

/// One response: the bytes, the range of the object they are and the object's metadata.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Response {
    /// The body.
    pub bytes: Bytes,
    /// Which bytes of the object the body holds.
    pub range: Range<u64>,
    /// The object's length, ETag, … as the response reported them.
    pub meta: ObjectMeta,
}

/// Why one attempt failed.
enum Attempt {
    /// Worth another attempt (body cut short or failed while streaming).
    Retry(Error),
    /// Final.
    Fail(Error),
}

impl Object {
    /// The object at `path` in `store`, named `url` in messages (no credentials: see
    /// [`redact`](crate::redact)); pinned by its first response.
    #[must_use]
    pub fn new(store: Arc<dyn ObjectStore>, path: Path, url: impl Into<String>) -> Self {
        Self {
            store,
            path,
            url: url.into(),
            etag: Arc::new(OnceLock::new()),
        }
    }

    /// The object at `path` in `store`, named by the store's display form and the path.
    #[must_use]
    pub fn from_store(store: Arc<dyn ObjectStore>, path: Path) -> Self {
        let url = store_url(store.as_ref(), &path);
        Self::new(store, path, url)
    }

    /// Pins the object to `etag` (`None`: pinned by the first response); an ETag without its
    /// quotes (as Azure lists them) gets them ([`normalize_etag`]).
    #[must_use]
    pub fn with_etag(self, etag: Option<String>) -> Self {
        let lock = OnceLock::new();
        if let Some(e) = etag {
            let _ = lock.set(normalize_etag(&e));
        }
        Self {
            etag: Arc::new(lock),
            ..self
        }
    }

    /// The store.
    #[must_use]
    pub fn store(&self) -> &Arc<dyn ObjectStore> {
        &self.store
    }

    /// The object's path in the store.
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The object's name in messages.
    #[must_use]
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The ETag reads are pinned to, once known.
    #[must_use]
    pub fn etag(&self) -> Option<&str> {
        self.etag.get().map(String::as_str)
    }

    fn error(&self, e: object_store::Error) -> Error {
        if matches!(e, object_store::Error::NotFound { .. }) && self.etag.get().is_some() {
            return Error::Changed {
                url: self.url.clone(),
            };
        }
        Error::from_store(self.url.clone(), e, Access::Read)
    }

    /// A response that is not what was asked for: [`Error::Remote`] with the problem as a
    /// generic store error (as `object_store` reports protocol errors).
    fn response_error(&self, problem: String) -> Error {
        Error::Remote {
            url: self.url.clone(),
            source: object_store::Error::Generic {
                store: "response",
                source: problem.into(),
            },
        }
    }

    /// The object's metadata (`HEAD`), pinning it if it was not; `None` if there is no
    /// object (and it was never pinned).
    ///
    /// # Errors
    /// [`Error::Changed`] when the object no longer has the pinned ETag; [`Error::Remote`].
    pub async fn head(&self) -> Result<Option<ObjectMeta>> {
        match self.store.head(&self.path).await {
            Ok(meta) => {
                self.check_version(&meta)?;
                Ok(Some(meta))
            }
            Err(object_store::Error::NotFound { .. }) if self.etag.get().is_none() => Ok(None),
            Err(e) => Err(self.error(e)),
        }
    }

    /// Compares `meta`'s ETag with the pin, pinning it if nothing was.
    fn check_version(&self, meta: &ObjectMeta) -> Result<()> {
        if let Some(got) = meta.e_tag.as_deref().map(normalize_etag)
            && *self.etag.get_or_init(|| got.clone()) != got
        {
            return Err(Error::Changed {
                url: self.url.clone(),
            });
        }
        Ok(())
    }

    /// One `GET` of `range` (`None`: the whole object), pinned and checked as the type
    /// describes; a body longer than `cap` bytes is refused before it is read. A bounded range
    /// reaching past the end comes back cut at the end (see [`Response::range`]). `None`
    /// if there is no object (and it was never pinned).
    ///
    /// # Errors
    /// [`Error::Changed`]; [`Error::Remote`] for a failed request, a response that is not the range asked
    /// for, longer than `cap`, or still cut short after
    /// [`read_retries`](RemoteOptions::read_retries) attempts.
    pub async fn get<F>(
        &self,
        range: Option<GetRange>,
        cap: u64,
        options: &RemoteOptions<F>,
    ) -> Result<Option<Response>> {
        let mut attempt = 0;
        loop {
            match self.get_once(range.clone(), cap).await {
                Ok(r) => return Ok(r),
                Err(Attempt::Retry(_)) if attempt < options.read_retries => attempt += 1,
                Err(Attempt::Retry(e) | Attempt::Fail(e)) => return Err(e),
            }
        }
    }

    async fn get_once(
        &self,
        range: Option<GetRange>,
        cap: u64,
    ) -> Result<Option<Response>, Attempt> {
        let options = GetOptions {
            if_match: self.etag.get().cloned(),
            range: range.clone(),
            ..GetOptions::default()
        };
        let r = match self.store.get_opts(&self.path, options).await {
            Ok(r) => r,
            Err(object_store::Error::NotFound { .. }) if self.etag.get().is_none() => {
                return Ok(None);
            }
            Err(e) => return Err(Attempt::Fail(self.error(e))),
        };
        self.check_version(&r.meta).map_err(Attempt::Fail)?;
        let got = r.range.clone();
        let meta = r.meta.clone();
        let wrong = |what: String| Attempt::Fail(self.response_error(what));
        let len = got
            .end
            .checked_sub(got.start)
            .ok_or_else(|| wrong(format!("response range {got:?} ends before it starts")))?;
        if got.end > meta.size {
            return Err(wrong(format!(
                "response range {got:?} reaches past the object's {} bytes",
                meta.size
            )));
        }
        match &range {
            // A store cuts a range reaching past the end at the end; anything else is not
            // what was asked for.
            Some(GetRange::Bounded(want))
                if got.start != want.start
                    || got.end > want.end
                    || got.end < want.end.min(meta.size) =>
            {
                return Err(wrong(format!("asked for bytes {want:?}, got {got:?}")));
            }
            Some(GetRange::Suffix(n)) if got.end != meta.size || len > *n => {
                return Err(wrong(format!("asked for the last {n} bytes, got {got:?}")));
            }
            Some(GetRange::Offset(o)) if got.start != *o || got.end != meta.size => {
                return Err(wrong(format!("asked for bytes from {o} on, got {got:?}")));
            }
            None if got.start != 0 || got.end != meta.size => {
                return Err(wrong(format!("asked for the whole object, got {got:?}")));
            }
            _ => {}
        }
        if len > cap {
            return Err(wrong(format!(
                "a body of {len} bytes is longer than the {cap} allowed"
            )));
        }
        let n = usize::try_from(len).map_err(|_| wrong(format!("{len} bytes exceed usize")))?;
        let mut buf = BytesMut::with_capacity(n);
        let mut body = r.into_stream();
        while let Some(part) = body.next().await {
            let part = part.map_err(|e| Attempt::Retry(self.error(e)))?;
            if buf.len().saturating_add(part.len()) > n {
                return Err(wrong(format!(
                    "the body is longer than the {n} bytes of range {got:?}"
                )));
            }
            buf.extend_from_slice(&part);
        }
        if buf.len() != n {
            return Err(Attempt::Retry(self.response_error(format!(
                "the body of range {got:?} was cut short at {} bytes",
                buf.len()
            ))));
        }
        Ok(Some(Response {
            bytes: buf.freeze(),
            range: got,
            meta,
        }))
    }

    /// Bytes `range` of the object, exactly; `None` if there is no object (and it was never
    /// pinned).
    ///
    /// # Errors
    /// [`Error::Remote`] also if the range reaches past the end; as [`Object::get`].
    pub async fn get_range<F>(
        &self,
        range: Range<u64>,
        options: &RemoteOptions<F>,
    ) -> Result<Option<Bytes>> {
        if range.end <= range.start {
            return Ok(Some(Bytes::new()));
        }
        let want = range.end - range.start;
        let Some(r) = self
            .get(Some(GetRange::Bounded(range.clone())), want, options)
            .await?
        else {
            return Ok(None);
        };
        if r.bytes.len() as u64 != want {
            return Err(self.response_error(format!(
                "bytes {range:?} reach past the end of the object ({} bytes)",
                r.meta.size
            )));
        }
        Ok(Some(r.bytes))
    }

    /// The bytes of each of `ranges` (any order; overlaps and empty ranges allowed), fetched
    /// in one round of concurrent requests planned by [`RemoteOptions::plan`] (touching ranges
    /// share a request, small gaps are bridged within the planner's budget, long ranges are
    /// split), at most [`concurrency`](RemoteOptions::concurrency) in flight. `None` if there
    /// is no object (and it was never pinned).
    ///
    /// # Errors
    /// As [`Object::get_range`].
    pub async fn get_ranges<F>(
        &self,
        ranges: &[Range<u64>],
        options: &RemoteOptions<F>,
    ) -> Result<Option<Vec<Bytes>>> {
        let plan = options.plan(&[ranges.to_vec()]).pop().unwrap_or_default();
        // Owned items keep the future `Send`.
        let requests: Vec<Range<u64>> = plan.iter().map(|q| q.range.clone()).collect();
        let bodies: Vec<Option<Bytes>> = stream::iter(requests)
            .map(|r| self.get_range(r, options))
            .buffered(options.in_flight())
            .try_collect()
            .await?;
        let Some(bodies) = bodies.into_iter().collect::<Option<Vec<Bytes>>>() else {
            return Ok(None);
        };
        crate::remote::plan::assemble(ranges, &plan, &bodies).map(Some)
    }

    /// The whole object, at most `limit` bytes; `None` if there is none (and it was never
    /// pinned).
    ///
    /// # Errors
    /// [`Error::Remote`] also for an object longer than `limit`; as [`Object::get`].
    pub async fn get_all<F>(
        &self,
        limit: u64,
        options: &RemoteOptions<F>,
    ) -> Result<Option<Bytes>> {
        Ok(self.get(None, limit, options).await?.map(|r| r.bytes))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "a failed unwrap is a failed test")]

    use object_store::memory::InMemory;
    use object_store::{ObjectStoreExt, PutPayload};

    use super::*;
    use crate::remote::runtime::block_on;

    fn setup() -> (Arc<InMemory>, Object, Vec<u8>) {
        let data: Vec<u8> = (0..10_000u32).map(|i| (i * 7 % 251) as u8).collect();
        let mem = Arc::new(InMemory::new());
        block_on(mem.put(&Path::from("k"), PutPayload::from(data.clone())))
            .unwrap()
            .unwrap();
        let o = Object::new(mem.clone(), Path::from("k"), "memory:///k");
        (mem, o, data)
    }

    #[test]
    fn ranges_are_exact_coalesced_and_pinned() {
        let (mem, o, data) = setup();
        let opts = RemoteOptions::<()>::default().with_coalesce_gap(16);
        let got = block_on(o.get_ranges(&[10..20, 5..12, 9_990..10_000, 30..30], &opts))
            .unwrap()
            .unwrap()
            .unwrap();
        assert_eq!(got[0], data[10..20]);
        assert_eq!(got[1], data[5..12]);
        assert_eq!(got[2], data[9_990..]);
        assert!(got[3].is_empty());
        assert!(o.etag().is_some());
        // Past the end: refused, naming the object.
        let e = block_on(o.get_range(9_999..10_001, &opts))
            .unwrap()
            .unwrap_err();
        let m = e.to_string();
        assert!(matches!(e, Error::Remote { .. }), "{e}");
        assert!(
            m.contains("memory:///k") && m.contains("past the end"),
            "{m}"
        );
        // Whole object within a limit; beyond it refused.
        assert_eq!(
            block_on(o.get_all(10_000, &opts))
                .unwrap()
                .unwrap()
                .unwrap(),
            data
        );
        assert!(matches!(
            block_on(o.get_all(9_999, &opts)).unwrap(),
            Err(Error::Remote { .. })
        ));
        // Replaced: the pinned reader says so; a fresh one reads the new version.
        block_on(mem.put(&Path::from("k"), PutPayload::from(vec![1u8; 50])))
            .unwrap()
            .unwrap();
        assert!(matches!(
            block_on(o.get_range(0..4, &opts)).unwrap(),
            Err(Error::Changed { .. })
        ));
        assert!(matches!(
            block_on(o.head()).unwrap(),
            Err(Error::Changed { .. })
        ));
        let fresh = Object::new(mem.clone(), Path::from("k"), "memory:///k");
        assert_eq!(
            block_on(fresh.get_range(0..4, &opts))
                .unwrap()
                .unwrap()
                .unwrap(),
            [1u8; 4][..]
        );
        // Deleted after pinning: changed; never pinned: no object.
        block_on(mem.delete(&Path::from("k"))).unwrap().unwrap();
        assert!(matches!(
            block_on(fresh.get_range(0..4, &opts)).unwrap(),
            Err(Error::Changed { .. })
        ));
        let never = Object::new(mem, Path::from("k"), "memory:///k");
        assert!(
            block_on(never.get_range(0..4, &opts))
                .unwrap()
                .unwrap()
                .is_none()
        );
        assert!(block_on(never.head()).unwrap().unwrap().is_none());
    }

    #[test]
    fn suffix_and_clamped_reads_report_their_range() {
        let (_, o, data) = setup();
        let opts = RemoteOptions::<()>::default();
        let r = block_on(o.get(Some(GetRange::Suffix(100)), 100, &opts))
            .unwrap()
            .unwrap()
            .unwrap();
        assert_eq!(r.range, 9_900..10_000);
        assert_eq!(r.bytes, data[9_900..]);
        let r = block_on(o.get(Some(GetRange::Bounded(9_000..20_000)), 11_000, &opts))
            .unwrap()
            .unwrap()
            .unwrap();
        assert_eq!(r.range, 9_000..10_000);
        assert_eq!(r.meta.size, 10_000);
        // A cap below the body: refused before reading.
        assert!(matches!(
            block_on(o.get(Some(GetRange::Suffix(100)), 99, &opts)).unwrap(),
            Err(Error::Remote { .. })
        ));
    }
}
