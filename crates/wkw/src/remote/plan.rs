//! Planning the byte ranges of a remote read, and serving the decoder from the fetched bytes.

use std::io;

use bytes::Bytes;

use super::RemoteOptions;
use crate::io::storage::{Stamp, StorageFile};

/// The requests for the block ranges of several files (`files[i]`: file i's ranges, as
/// `(start, end)`), planned by [`scifmt_io::coalesce`] under `options` (one round of at most
/// `concurrency` requests where the byte budget allows).
pub(crate) fn schedule(
    options: &RemoteOptions,
    files: Vec<Vec<(u64, u64)>>,
) -> Vec<Vec<(u64, u64)>> {
    let objects: Vec<Vec<std::ops::Range<u64>>> = files
        .into_iter()
        .map(|r| r.into_iter().map(|(s, e)| s..e).collect())
        .collect();
    options
        .plan(&objects)
        .into_iter()
        .map(|rs| {
            rs.into_iter()
                .map(|q| (q.range.start, q.range.end))
                .collect()
        })
        .collect()
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
