//! [`Prefetched`]: byte ranges of an object fetched ahead of time, read back as a file.

use std::io;
use std::ops::Range;

use bytes::Bytes;

use crate::read_at::ReadAt;

/// An object (or file) as far as it was fetched: its length and some byte ranges of it, read
/// back through [`ReadAt`] by a parser written for local files. A read that reaches a byte
/// that was not fetched fails (`UnexpectedEof`, naming the offset): a planning bug shows as
/// an error, never as zeros.
///
/// Pieces may touch and overlap; a read may span several.
///
/// ```
/// use bytes::Bytes;
/// use scifmt_io::{Prefetched, ReadAt};
/// let mut p = Prefetched::new(100);
/// p.insert(0, Bytes::from_static(b"head"));
/// p.insert(90, Bytes::from_static(b"0123456789"));
/// let mut buf = [0u8; 3];
/// p.read_exact_at(&mut buf, 91)?;
/// assert_eq!(&buf, b"123");
/// assert_eq!(p.missing(&(0..100)), [4..90]);
/// assert_eq!(p.contiguous_len(), 4);
/// assert!(p.read_exact_at(&mut buf, 2).is_err());
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug, Clone, Default)]
pub struct Prefetched {
    size: u64,
    /// Sorted by start; non-empty.
    pieces: Vec<(u64, Bytes)>,
}

impl Prefetched {
    /// Nothing fetched yet of an object of `size` bytes.
    #[must_use]
    pub fn new(size: u64) -> Self {
        Self {
            size,
            pieces: Vec::new(),
        }
    }

    /// The object's length.
    #[must_use]
    pub fn len(&self) -> u64 {
        self.size
    }

    /// Whether the object is empty.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.size == 0
    }

    /// Adds the bytes fetched from offset `start` (empty pieces are dropped).
    pub fn insert(&mut self, start: u64, bytes: Bytes) {
        if bytes.is_empty() {
            return;
        }
        let at = self.pieces.partition_point(|(s, _)| *s <= start);
        self.pieces.insert(at, (start, bytes));
    }

    /// The fetched pieces, sorted by start.
    #[must_use]
    pub fn pieces(&self) -> &[(u64, Bytes)] {
        &self.pieces
    }

    /// How many bytes from offset 0 on are held without a hole.
    #[must_use]
    pub fn contiguous_len(&self) -> u64 {
        let mut end = 0u64;
        for (s, b) in &self.pieces {
            if *s > end {
                break;
            }
            end = end.max(s.saturating_add(b.len() as u64));
        }
        end
    }

    /// The parts of `range` no piece holds, in order.
    #[must_use]
    pub fn missing(&self, range: &Range<u64>) -> Vec<Range<u64>> {
        let mut out = Vec::new();
        let mut pos = range.start;
        for (s, b) in &self.pieces {
            if pos >= range.end {
                break;
            }
            let e = s.saturating_add(b.len() as u64);
            if e <= pos {
                continue;
            }
            if *s > pos {
                out.push(pos..(*s).min(range.end));
            }
            pos = pos.max(e);
        }
        if pos < range.end {
            out.push(pos..range.end);
        }
        out
    }

    /// Whether every byte of `range` was fetched.
    #[must_use]
    pub fn covers(&self, range: &Range<u64>) -> bool {
        self.missing(range).is_empty()
    }
}

impl ReadAt for Prefetched {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        let end = offset
            .checked_add(buf.len() as u64)
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "offset overflows"))?;
        if end > self.size {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!(
                    "bytes {offset}..{end} are past the end ({} bytes)",
                    self.size
                ),
            ));
        }
        let mut pos = offset;
        let mut rest = buf;
        while !rest.is_empty() {
            // The piece starting at or before `pos` that reaches furthest past it.
            let upto = self.pieces.partition_point(|(s, _)| *s <= pos);
            let src = self.pieces[..upto]
                .iter()
                .filter_map(|(s, b)| b.get(usize::try_from(pos - s).ok()?..))
                .filter(|r| !r.is_empty())
                .max_by_key(|r| r.len());
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

    fn size(&self) -> io::Result<u64> {
        Ok(self.size)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "a failed unwrap is a failed test")]

    use super::*;

    fn three() -> Prefetched {
        let mut p = Prefetched::new(20);
        p.insert(10, Bytes::from_static(&[9; 10]));
        p.insert(0, Bytes::from_static(&[1, 2, 3, 4]));
        p.insert(4, Bytes::from_static(&[5, 6]));
        p.insert(7, Bytes::new());
        p
    }

    #[test]
    fn reads_across_touching_pieces_and_refuses_holes() {
        let p = three();
        let mut b = [0u8; 6];
        p.read_exact_at(&mut b, 0).unwrap();
        assert_eq!(b, [1, 2, 3, 4, 5, 6]);
        let e = p.read_exact_at(&mut b, 5).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::UnexpectedEof);
        assert!(e.to_string().contains("offset 6"), "{e}");
        assert!(p.read_exact_at(&mut [0u8; 2], 19).is_err());
        p.read_exact_at(&mut [0u8; 1], 19).unwrap();
        assert!(p.read_exact_at(&mut [0u8; 1], u64::MAX).is_err());
        assert_eq!(p.missing(&(0..20)), vec![6..10]);
        assert_eq!(p.missing(&(2..8)), vec![6..8]);
        assert!(p.covers(&(12..20)));
        assert_eq!(p.contiguous_len(), 6);
        assert_eq!(p.pieces().len(), 3);
        assert_eq!(p.size().unwrap(), 20);
    }

    #[test]
    fn overlapping_pieces_serve_the_longest_run() {
        let mut p = Prefetched::new(10);
        p.insert(0, Bytes::from_static(&[0, 1, 2, 3, 4, 5, 6, 7, 8, 9]));
        p.insert(2, Bytes::from_static(&[2, 3]));
        let mut b = [0u8; 8];
        p.read_exact_at(&mut b, 2).unwrap();
        assert_eq!(b, [2, 3, 4, 5, 6, 7, 8, 9]);
        assert!(p.missing(&(0..10)).is_empty());
        assert_eq!(p.contiguous_len(), 10);
    }
}
