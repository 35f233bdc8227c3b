//! Opening a frame: the speculative head and tail of the first round trip, the metadata still
//! missing in a second one, and the probe for a sparse frame behind a prefix.

use std::ops::Range;
use std::sync::Arc;

use object_store::GetRange;
use scifmt_io::{Object, Prefetched, ReadAt, child, join_url};

use super::RemoteOptions;
use super::read::{fetch_ranges, not_found, request_options};
use crate::error::{Error, Result};
use crate::header::{FrameHeader, FrameType, HEADER_FIXED_LEN};
use crate::reader::SPARSE_FRAME_FILE;
use crate::trailer::TAIL_LEN;

/// Which kind of object `open` expects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Target {
    /// A key that may be a contiguous frame, or a sparse-frame prefix.
    Auto,
    /// A `chunks.b2frame` index object.
    SparseIndex,
}

/// `at` again, not pinned to a version (an open pins its object anew).
pub(crate) fn unpinned(at: &Object) -> Object {
    Object::new(Arc::clone(at.store()), at.path().clone(), at.url())
}

/// The object `name` below the prefix `at` names, not pinned.
pub(crate) fn below(at: &Object, name: &str) -> Object {
    Object::new(
        Arc::clone(at.store()),
        child(at.path(), name),
        join_url(at.url(), name),
    )
}

/// The fixed header from the prefetched bytes.
pub(crate) fn peek_header(pre: &Prefetched) -> Result<FrameHeader> {
    if pre.len() < HEADER_FIXED_LEN as u64 {
        return Err(Error::Truncated {
            what: "frame header",
            offset: 0,
            needed: HEADER_FIXED_LEN as u64,
            available: pre.len(),
        });
    }
    let mut h = [0u8; HEADER_FIXED_LEN];
    pre.read_exact_at(&mut h, 0)?;
    FrameHeader::parse(&h)
}

fn is_not_found(e: &Error) -> bool {
    matches!(
        e,
        Error::Remote {
            source: object_store::Error::NotFound { .. },
            ..
        }
    )
}

/// The first round trip on `obj` (not yet pinned): head and tail ranges, concurrently. The
/// first response pins `obj` and the other must come from the same version (same ETag, same
/// length).
async fn round1(
    obj: &Object,
    head_n: u64,
    tail_n: u64,
    opts: &RemoteOptions,
) -> Result<Prefetched> {
    let head = obj.get(Some(GetRange::Bounded(0..head_n)), head_n, opts);
    let tail = obj.get(Some(GetRange::Suffix(tail_n)), tail_n, opts);
    let (h, t) = futures::future::join(head, tail).await;
    match (h?, t?) {
        (Some(h), Some(t)) if h.meta.size == t.meta.size => {
            let mut pre = Prefetched::new(t.meta.size);
            pre.insert(h.range.start, h.bytes);
            pre.insert(t.range.start, t.bytes);
            Ok(pre)
        }
        (None, None) => Err(not_found(obj)),
        // Two lengths (a store without ETags), or created between the two requests.
        _ => Err(Error::Changed {
            url: obj.url().to_owned(),
        }),
    }
}

/// Round trip 1 on `at` (head and tail; for a sparse-frame prefix a second round on its index)
/// and, if needed, round trip 2 (the missing parts of header, index and trailer): the object
/// read, pinned to the version read, and its bytes fetched. Retried once when the object
/// changed between the requests of round 1.
pub(crate) async fn open_target(
    at: &Object,
    target: Target,
    opts: &RemoteOptions,
) -> Result<(Object, Prefetched)> {
    let mut attempt = 0;
    loop {
        match open_once(at, target, opts).await {
            Err(Error::Changed { .. }) if attempt == 0 => attempt += 1,
            r => return r,
        }
    }
}

async fn open_once(
    at: &Object,
    target: Target,
    opts: &RemoteOptions,
) -> Result<(Object, Prefetched)> {
    let cap = opts.format.limits.max_output_bytes as u64;
    let head_n = opts.format.head_bytes.max(HEADER_FIXED_LEN as u64).min(cap);
    let tail_n = opts.format.tail_bytes.max(TAIL_LEN as u64).min(cap);
    // A key that is no object may be a sparse-frame prefix: then continue with its index
    // file (one more round trip). Any failure on the key itself leads there, since stores
    // backed by file systems may answer a "directory" key with an error other than 404; the
    // key's own error is reported when the prefix holds no sparse frame either.
    let key = unpinned(at);
    let (obj, mut pre) = match round1(&key, head_n, tail_n, opts).await {
        Ok(pre) => (key, pre),
        Err(e @ Error::Changed { .. }) => return Err(e),
        Err(e) if target == Target::Auto => {
            let index = below(at, SPARSE_FRAME_FILE);
            match round1(&index, head_n, tail_n, opts).await {
                Ok(pre) => (index, pre),
                Err(Error::Remote {
                    source: object_store::Error::NotFound { .. },
                    ..
                }) => return Err(e),
                Err(e2) if is_not_found(&e) => return Err(e2),
                Err(_) => return Err(e),
            }
        }
        Err(e) => return Err(e),
    };
    let size = pre.len();
    // What the parser will read: the header with its metalayers, and everything from the
    // index chunk to the end of the frame (index, trailer). Without the fixed header (the
    // sparse probe), everything before the fetched tail.
    let needed: Vec<Range<u64>> = if pre.covers(&(0..(HEADER_FIXED_LEN as u64).min(size)))
        && size >= HEADER_FIXED_LEN as u64
    {
        let h = peek_header(&pre)?;
        let frame_len = h.frame_len.min(size);
        let header_len = u64::from(h.header_len).min(frame_len);
        let index_start = if h.frame_type == FrameType::Sparse {
            header_len
        } else {
            header_len.saturating_add(h.cbytes)
        };
        let index_start = if index_start > frame_len {
            frame_len.saturating_sub(TAIL_LEN as u64)
        } else {
            index_start
        };
        vec![0..header_len, index_start..frame_len]
    } else {
        std::iter::once(0..size).collect()
    };
    let missing: Vec<Range<u64>> = needed.iter().flat_map(|r| pre.missing(r)).collect();
    let total: u64 = missing.iter().map(|r| r.end - r.start).sum();
    // Checked before anything is fetched.
    if total > cap {
        return Err(Error::LimitExceeded {
            what: "frame metadata (header, index, trailer)",
            requested: total,
            limit: cap,
        });
    }
    if !missing.is_empty() {
        let requests = request_options(opts).with_coalesce_gap(0);
        let got = fetch_ranges(&obj, &missing, &requests).await?;
        for (r, b) in missing.iter().zip(got) {
            pre.insert(r.start, b);
        }
    }
    Ok((obj, pre))
}
