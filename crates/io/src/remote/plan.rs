//! The range planner: which requests fetch the byte ranges a read needs.

use std::ops::Range;

use bytes::{Bytes, BytesMut};

use crate::error::{Error, Result};

/// One range request of a plan: the bytes to fetch and which of the object's wanted ranges
/// (by index) it serves, whole or in part.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// Bytes `[start, end)` of the object.
    pub range: Range<u64>,
    /// Indices (into the object's list of wanted ranges) of the ranges this request overlaps.
    pub members: Vec<usize>,
}

/// The requests that fetch byte ranges of several objects (`objects[i]`: the ranges wanted
/// from object i, any order, may overlap; empty ones need no request), one list per object,
/// sorted by start:
///
/// * overlapping and touching ranges share a request;
/// * gaps of at most `gap` bytes are bridged (the bytes in between fetched and dropped),
///   smallest first, while all bridged bytes stay within 10 % of the bytes wanted, or while
///   there are more requests than `max_requests` (the requests in flight at once: more would
///   cost another round trip);
/// * while there are still more than `max_requests` requests, larger gaps are bridged too,
///   smallest first, as long as the bridged bytes stay within that 10 % budget;
/// * no request is longer than `max_len` bytes (0 counts as 1): ranges are not joined beyond
///   it, and a single range longer than it is split into pieces (fetched concurrently).
///
/// Budget and request count are shared by all objects, so one call plans one round of
/// concurrent requests.
///
/// ```
/// use scifmt_io::coalesce;
/// let plan = coalesce(&[vec![0..100, 100..150, 160..200, 5000..5010]], 64, 1 << 20, 8);
/// let ranges: Vec<_> = plan[0].iter().map(|r| r.range.clone()).collect();
/// assert_eq!(ranges, [0..200, 5000..5010]);
/// ```
#[must_use]
pub fn coalesce(
    objects: &[Vec<Range<u64>>],
    gap: u64,
    max_len: u64,
    max_requests: usize,
) -> Vec<Vec<Request>> {
    let max_len = max_len.max(1);
    let max_requests = max_requests.max(1);
    // Per object: wanted ranges by start, grouped into runs of overlapping/touching ranges.
    let mut runs: Vec<Vec<(Range<u64>, Vec<usize>)>> = Vec::with_capacity(objects.len());
    for ranges in objects {
        let mut order: Vec<usize> = (0..ranges.len())
            .filter(|&i| ranges[i].end > ranges[i].start)
            .collect();
        order.sort_by_key(|&i| (ranges[i].start, ranges[i].end));
        let mut r: Vec<(Range<u64>, Vec<usize>)> = Vec::new();
        for i in order {
            let w = &ranges[i];
            match r.last_mut() {
                Some((run, members)) if w.start <= run.end => {
                    run.end = run.end.max(w.end);
                    members.push(i);
                }
                _ => r.push((w.clone(), vec![i])),
            }
        }
        runs.push(r);
    }
    let needed: u64 = runs
        .iter()
        .flatten()
        .map(|(r, _)| r.end - r.start)
        .fold(0, u64::saturating_add);
    let budget = needed / 10;
    // Every gap between neighbouring runs: (gap bytes, object, index of the left run).
    let mut gaps: Vec<(u64, usize, usize)> = runs
        .iter()
        .enumerate()
        .flat_map(|(o, r)| {
            r.windows(2)
                .enumerate()
                .map(move |(k, w)| (w[1].0.start - w[0].0.end, o, k))
        })
        .collect();
    gaps.sort_unstable();
    let mut bridge: Vec<Vec<bool>> = runs
        .iter()
        .map(|r| vec![false; r.len().saturating_sub(1)])
        .collect();
    let mut count: usize = runs.iter().map(Vec::len).sum();
    let mut waste = 0u64;
    for (g, o, k) in gaps {
        let over = count > max_requests;
        let within = waste.saturating_add(g) <= budget;
        // Gaps come smallest first and the waste only grows: once a gap is refused, so is
        // every later one.
        if !((g <= gap && (within || over)) || (over && within)) {
            break;
        }
        waste = waste.saturating_add(g);
        count -= 1;
        if let Some(b) = bridge.get_mut(o).and_then(|b| b.get_mut(k)) {
            *b = true;
        }
    }
    // Pack: a run joins the request before it when bridged and the request stays within
    // `max_len`; inside a run, ranges join while they fit; longer ranges are split.
    let mut plans = Vec::with_capacity(objects.len());
    for ((ranges, r), b) in objects.iter().zip(runs).zip(bridge) {
        let mut out: Vec<Request> = Vec::new();
        for (k, (_, members)) in r.into_iter().enumerate() {
            let joins_run = k > 0 && b.get(k - 1).copied().unwrap_or(false);
            for (j, i) in members.into_iter().enumerate() {
                let w = &ranges[i];
                let joinable = j > 0 || joins_run;
                if joinable
                    && let Some(last) = out.last_mut()
                    && w.end.max(last.range.end) - last.range.start <= max_len
                {
                    last.range.end = last.range.end.max(w.end);
                    last.members.push(i);
                    continue;
                }
                // A new request (or several, for a range longer than `max_len`); the part of
                // `w` an earlier request already covers is not fetched again.
                let mut lo = match out.last_mut() {
                    Some(last) if joinable && w.start < last.range.end => {
                        last.members.push(i);
                        last.range.end
                    }
                    _ => w.start,
                };
                while lo < w.end {
                    let hi = lo.saturating_add(max_len).min(w.end);
                    out.push(Request {
                        range: lo..hi,
                        members: vec![i],
                    });
                    lo = hi;
                }
            }
        }
        plans.push(out);
    }
    plans
}

/// The bytes of every wanted range (`ranges`, as given to [`coalesce`] for one object) from the
/// bodies of that object's requests (`bodies[k]` for `requests[k]`): a slice of one body where
/// one request holds the whole range (no copy), else the pieces joined; empty ranges give empty
/// bytes.
///
/// # Errors
/// [`Error::InvalidArgument`] if a body is shorter than its request or a range is not fully
/// covered by the requests (a planning bug of the caller).
pub fn assemble(
    ranges: &[Range<u64>],
    requests: &[Request],
    bodies: &[Bytes],
) -> Result<Vec<Bytes>> {
    let short = |what: String| Error::InvalidArgument(what);
    for (q, body) in requests.iter().zip(bodies) {
        if (body.len() as u64) < q.range.end - q.range.start {
            return Err(short(format!(
                "body of request {:?} has {} bytes",
                q.range,
                body.len()
            )));
        }
    }
    let to_usize =
        |v: u64| usize::try_from(v).map_err(|_| short(format!("offset {v} exceeds usize")));
    let mut parts: Vec<Vec<(u64, Bytes)>> = vec![Vec::new(); ranges.len()];
    for (q, body) in requests.iter().zip(bodies) {
        for &i in &q.members {
            let Some(w) = ranges.get(i) else { continue };
            let s = w.start.max(q.range.start);
            let e = w.end.min(q.range.end);
            if e > s {
                let piece = body.slice(to_usize(s - q.range.start)?..to_usize(e - q.range.start)?);
                if let Some(p) = parts.get_mut(i) {
                    p.push((s, piece));
                }
            }
        }
    }
    let mut out = Vec::with_capacity(ranges.len());
    for (w, mut p) in ranges.iter().zip(parts) {
        if w.end <= w.start {
            out.push(Bytes::new());
            continue;
        }
        p.sort_by_key(|(s, _)| *s);
        if let [(s, b)] = p.as_slice()
            && *s == w.start
            && b.len() as u64 == w.end - w.start
        {
            out.push(b.clone());
            continue;
        }
        let mut buf = BytesMut::with_capacity(to_usize(w.end - w.start)?);
        let mut pos = w.start;
        for (s, b) in p {
            if s > pos {
                break;
            }
            let skip = to_usize(pos - s)?;
            if let Some(rest) = b.get(skip..) {
                let take = rest.len().min(to_usize(w.end - pos)?);
                buf.extend_from_slice(&rest[..take]);
                pos += take as u64;
            }
        }
        if pos != w.end {
            return Err(short(format!("bytes {pos}..{} were not requested", w.end)));
        }
        out.push(buf.freeze());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "a failed unwrap is a failed test")]
    #![allow(
        clippy::single_range_in_vec_init,
        clippy::cast_possible_truncation,
        reason = "expected request lists; small test offsets"
    )]

    use super::*;

    fn spans(p: &[Request]) -> Vec<Range<u64>> {
        p.iter().map(|q| q.range.clone()).collect()
    }

    fn one(ranges: Vec<Range<u64>>, gap: u64, max_len: u64, max_requests: usize) -> Vec<Request> {
        coalesce(&[ranges], gap, max_len, max_requests).remove(0)
    }

    // The cases of the range merger wkw had (`plan.rs::coalesce` and `schedule`).

    #[test]
    fn wkw_close_ranges_merge_and_long_ones_split() {
        let p = one(
            vec![100..200, 0..10, 10..20, 250..260, 5..8, 7..7],
            30,
            1000,
            usize::MAX,
        );
        assert_eq!(spans(&p), [0..20, 100..200, 250..260]);
        // A gap above the 10 % budget is bridged only to fit the request limit.
        assert_eq!(
            spans(&one(vec![0..10, 200..210], 190, 1000, 8)),
            [0..10, 200..210]
        );
        assert_eq!(spans(&one(vec![0..10, 200..210], 190, 1000, 1)), [0..210]);
        assert_eq!(
            spans(&one(vec![0..10, 10..25], 0, 10, 8)),
            [0..10, 10..20, 20..25]
        );
        assert!(coalesce(&[vec![]], 10, 10, 1)[0].is_empty());
        assert!(coalesce(&[], 10, 10, 1).is_empty());
    }

    #[test]
    fn wkw_schedule_trades_a_few_bytes_for_fewer_round_trips() {
        // 3 objects, 6 ranges, limit 4: the two smallest gaps (10, 20) are merged, within the
        // budget (10 % of 6 × 1000 bytes needed), although they exceed `gap`.
        let files = vec![
            vec![0..1000, 1010..2010],
            vec![0..1000, 3000..4000],
            vec![0..1000, 1020..2020],
        ];
        let s = coalesce(&files, 0, u64::MAX, 4);
        assert_eq!(spans(&s[0]), [0..2010]);
        assert_eq!(spans(&s[1]), [0..1000, 3000..4000]);
        assert_eq!(spans(&s[2]), [0..2020]);
        // Within the limit: nothing merged; long runs split.
        let s = coalesce(&files, 0, 600, 100);
        assert_eq!(spans(&s[0]), [0..600, 600..1000, 1010..1610, 1610..2010]);
        // No budget for a 2000-byte gap: stays apart even above the limit.
        let s = coalesce(&files, 0, u64::MAX, 1);
        assert_eq!(spans(&s[1]), [0..1000, 3000..4000]);
    }

    // The cases of the range merger blosc2-frame had (`fetch.rs::coalesce`).

    #[test]
    fn frame_touching_ranges_and_small_gaps_within_budget() {
        let p = one(vec![10..20, 0..10, 15..30], 0, 1000, 8);
        assert_eq!(spans(&p), [0..30]);
        assert_eq!(p[0].members, [1, 0, 2]);
        // 300 bytes needed: gaps of 5 and 10 bridged (15 <= 30), the gap of 60 not.
        let r = vec![0..100, 105..200, 210..250, 310..375];
        assert_eq!(spans(&one(r.clone(), 1000, 1 << 20, 8)), [0..250, 310..375]);
        // Gaps above `gap` are bridged only to fit the request limit; none with gap 0.
        assert_eq!(one(r.clone(), 7, 1 << 20, 8).len(), 3);
        assert_eq!(one(r.clone(), 0, 1 << 20, 8).len(), 4);
        // More requests than allowed: bridge (smallest gaps first) beyond the byte budget.
        assert_eq!(spans(&one(r.clone(), 1000, 1 << 20, 1)), [0..375]);
        // The length cap: no request above it, every range in some request.
        let p = one(r, 1000, 200, 1);
        assert!(
            p.iter().all(|q| q.range.end - q.range.start <= 200),
            "{p:?}"
        );
        let mut all: Vec<usize> = p.iter().flat_map(|q| q.members.clone()).collect();
        all.sort_unstable();
        assert_eq!(all, [0, 1, 2, 3]);
    }

    #[test]
    fn assemble_slices_whole_ranges_and_joins_split_ones() {
        let ranges = vec![0..4, 4..6, 10..25, 30..30];
        let plan = one(ranges.clone(), 0, 10, 8);
        assert_eq!(spans(&plan), [0..6, 10..20, 20..25]);
        let object: Vec<u8> = (0..40).collect();
        let bodies: Vec<Bytes> = plan
            .iter()
            .map(|q| Bytes::copy_from_slice(&object[q.range.start as usize..q.range.end as usize]))
            .collect();
        let got = assemble(&ranges, &plan, &bodies).unwrap();
        for (w, g) in ranges.iter().zip(&got) {
            assert_eq!(&g[..], &object[w.start as usize..w.end as usize]);
        }
        // A short body is refused, not read past.
        let mut short = bodies.clone();
        short[1] = short[1].slice(..3);
        assert!(assemble(&ranges, &plan, &short).is_err());
    }

    #[test]
    fn overlapping_ranges_beyond_the_cap_are_all_served() {
        let ranges = vec![0..8, 4..12];
        let plan = one(ranges.clone(), 0, 8, 8);
        let object: Vec<u8> = (0..12).collect();
        let bodies: Vec<Bytes> = plan
            .iter()
            .map(|q| Bytes::copy_from_slice(&object[q.range.start as usize..q.range.end as usize]))
            .collect();
        let got = assemble(&ranges, &plan, &bodies).unwrap();
        assert_eq!(&got[1][..], &object[4..12]);
    }
}
