//! Planning the byte ranges of a remote read, and serving the decoder from the fetched bytes.

use std::io;

use bytes::Bytes;

use crate::storage::{Stamp, StorageFile};

/// Merges the byte ranges `[start, end)` (any order, may overlap or be empty) into the
/// requests to make: ranges whose gap is at most `gap` bytes become one request (the bytes in
/// between are fetched and dropped), and no request is longer than `max_len` (longer runs are
/// split, so that they are fetched concurrently). The result is sorted and disjoint.
pub(crate) fn coalesce(mut ranges: Vec<(u64, u64)>, gap: u64, max_len: u64) -> Vec<(u64, u64)> {
    let max_len = max_len.max(1);
    ranges.retain(|&(s, e)| e > s);
    ranges.sort_unstable();
    let mut merged: Vec<(u64, u64)> = Vec::with_capacity(ranges.len());
    for (s, e) in ranges {
        match merged.last_mut() {
            Some(last) if s <= last.1.saturating_add(gap) => last.1 = last.1.max(e),
            _ => merged.push((s, e)),
        }
    }
    let mut out = Vec::with_capacity(merged.len());
    for (s, e) in merged {
        let mut lo = s;
        while lo < e {
            let hi = lo.saturating_add(max_len).min(e);
            out.push((lo, hi));
            lo = hi;
        }
    }
    out
}

/// The requests for the block ranges of several files (`files[i]`: file i's ranges): each
/// file's ranges coalesced at `gap`; then, while there are more requests than `limit` (the
/// requests in flight at once, so more would cost another round trip), the closest neighbours
/// are merged as long as all bytes fetched stay within 110 % of those needed; finally
/// requests longer than `max_len` are split (concurrent pieces of one long run).
pub(crate) fn schedule(
    files: Vec<Vec<(u64, u64)>>,
    gap: u64,
    max_len: u64,
    limit: usize,
) -> Vec<Vec<(u64, u64)>> {
    let needed: u64 = files
        .iter()
        .flatten()
        .map(|&(s, e)| e.saturating_sub(s))
        .sum();
    let mut files: Vec<Vec<(u64, u64)>> = files
        .into_iter()
        .map(|r| coalesce(r, gap, u64::MAX))
        .collect();
    let fetched: u64 = files.iter().flatten().map(|&(s, e)| e - s).sum();
    let mut count: usize = files.iter().map(Vec::len).sum();
    if count > limit {
        // Every gap between neighbours: (gap bytes, file, index of the left range).
        let mut gaps: Vec<(u64, usize, usize)> = files
            .iter()
            .enumerate()
            .flat_map(|(f, r)| {
                r.windows(2)
                    .enumerate()
                    .map(move |(i, w)| (w[1].0 - w[0].1, f, i))
            })
            .collect();
        gaps.sort_unstable();
        // At most ~10 % more than needed in all, counting what `gap` already added.
        let mut budget = (needed / 10).saturating_sub(fetched.saturating_sub(needed));
        let mut merge: Vec<Vec<bool>> = files.iter().map(|r| vec![false; r.len()]).collect();
        for (g, f, i) in gaps {
            if count <= limit || g > budget {
                break;
            }
            budget -= g;
            count -= 1;
            if let Some(m) = merge.get_mut(f).and_then(|m| m.get_mut(i)) {
                *m = true;
            }
        }
        for (r, m) in files.iter_mut().zip(&merge) {
            let mut out: Vec<(u64, u64)> = Vec::with_capacity(r.len());
            let mut join = false;
            for (&(s, e), &next) in r.iter().zip(m) {
                match out.last_mut() {
                    Some(last) if join => last.1 = e,
                    _ => out.push((s, e)),
                }
                join = next;
            }
            *r = out;
        }
    }
    files.into_iter().map(|r| coalesce(r, 0, max_len)).collect()
}

/// The part of `[s, e)` not inside `[0, have)`: `None` if nothing is left.
pub(crate) fn beyond(s: u64, e: u64, have: u64) -> Option<(u64, u64)> {
    let s = s.max(have);
    (e > s).then_some((s, e))
}

/// A data file as far as it was fetched: its length and some byte ranges. Reads outside the
/// fetched ranges fail (they would be a planning bug, reported as an I/O error naming the file).
#[derive(Debug)]
pub(crate) struct Fetched {
    len: u64,
    /// Sorted by start, disjoint.
    pieces: Vec<(u64, Bytes)>,
}

impl Fetched {
    pub(crate) fn new(len: u64, mut pieces: Vec<(u64, Bytes)>) -> Self {
        pieces.retain(|(_, b)| !b.is_empty());
        pieces.sort_unstable_by_key(|(s, _)| *s);
        Self { len, pieces }
    }

    /// Bytes held from offset 0 on without a hole.
    pub(crate) fn prefix_len(&self) -> u64 {
        let mut end = 0u64;
        for (s, b) in &self.pieces {
            if *s > end {
                break;
            }
            end = end.max(s + b.len() as u64);
        }
        end
    }

    pub(crate) fn add(&mut self, start: u64, bytes: Bytes) {
        if !bytes.is_empty() {
            let at = self.pieces.partition_point(|(s, _)| *s < start);
            self.pieces.insert(at, (start, bytes));
        }
    }
}

impl StorageFile for Fetched {
    fn len(&self) -> u64 {
        self.len
    }
    fn stamp(&self) -> Option<Stamp> {
        None
    }
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        let mut pos = offset;
        let mut rest = buf;
        while !rest.is_empty() {
            // The last piece starting at or before `pos`.
            let i = self.pieces.partition_point(|(s, _)| *s <= pos);
            let piece = i.checked_sub(1).and_then(|i| self.pieces.get(i));
            let src = piece.and_then(|(s, b)| {
                let at = usize::try_from(pos - s).ok()?;
                b.get(at..).filter(|r| !r.is_empty())
            });
            let Some(src) = src else {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    format!("bytes at offset {pos} were not fetched"),
                ));
            };
            let n = src.len().min(rest.len());
            let (head, tail) = rest.split_at_mut(n);
            head.copy_from_slice(&src[..n]);
            rest = tail;
            pos += n as u64;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn coalesce_merges_close_ranges_and_splits_long_ones() {
        let r = coalesce(
            vec![(100, 200), (0, 10), (10, 20), (250, 260), (5, 8), (7, 7)],
            30,
            1000,
        );
        assert_eq!(r, vec![(0, 20), (100, 200), (250, 260)]);
        let r = coalesce(vec![(0, 10), (200, 210)], 190, 1000);
        assert_eq!(r, vec![(0, 210)]);
        let r = coalesce(vec![(0, 10), (10, 25)], 0, 10);
        assert_eq!(r, vec![(0, 10), (10, 20), (20, 25)]);
        assert!(coalesce(vec![], 10, 10).is_empty());
    }

    #[test]
    fn schedule_trades_a_few_bytes_for_fewer_round_trips() {
        // 3 files, 6 ranges, limit 4: the two smallest gaps (10, 20) are merged, within the
        // budget (10 % of 6 × 1000 bytes needed).
        let files = vec![
            vec![(0, 1000), (1010, 2010)],
            vec![(0, 1000), (3000, 4000)],
            vec![(0, 1000), (1020, 2020)],
        ];
        let s = schedule(files.clone(), 0, u64::MAX, 4);
        assert_eq!(
            s,
            vec![
                vec![(0, 2010)],
                vec![(0, 1000), (3000, 4000)],
                vec![(0, 2020)],
            ]
        );
        // Within the limit: nothing merged; long runs split.
        let s = schedule(files.clone(), 0, 600, 100);
        assert_eq!(
            s[0],
            vec![(0, 600), (600, 1000), (1010, 1610), (1610, 2010)]
        );
        // No budget for a 2000-byte gap: stays apart even above the limit.
        let s = schedule(files, 0, u64::MAX, 1);
        assert_eq!(s[1], vec![(0, 1000), (3000, 4000)]);
    }

    #[test]
    fn fetched_reads_across_adjacent_pieces_and_refuses_holes() {
        let f = Fetched::new(
            100,
            vec![
                (10, Bytes::from_static(&[1, 2, 3])),
                (0, Bytes::from_static(&[9; 10])),
                (20, Bytes::from_static(&[7, 7])),
            ],
        );
        assert_eq!(f.prefix_len(), 13);
        let mut buf = [0u8; 5];
        f.read_exact_at(&mut buf, 8).unwrap();
        assert_eq!(buf, [9, 9, 1, 2, 3]);
        let mut two = [0u8; 2];
        f.read_exact_at(&mut two, 20).unwrap();
        assert_eq!(two, [7, 7]);
        assert!(f.read_exact_at(&mut buf, 11).is_err());
        assert!(f.read_exact_at(&mut two, 21).is_err());
        assert_eq!(beyond(0, 10, 13), None);
        assert_eq!(beyond(5, 20, 13), Some((13, 20)));
    }
}
