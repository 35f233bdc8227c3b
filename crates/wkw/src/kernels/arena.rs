//! Buffers for the encoded blocks of a compressed file being rebuilt, which must all exist
//! before the file is written in block order; kept between writes.
//!
//! Allocating each encoded block anew (a zero-filled `Vec` of the LZ4 bound, about 33 KiB for a
//! 32³ u8 block) cost a write of a 16 MiB file a zero-fill pass over 16.5 MiB of fresh heap,
//! which the allocator hands back to the system after each write, so the next write page-faults
//! it in again: about a tenth of a C-order 256³ LZ4 write. An [`Arena`] keeps its buffer
//! initialized up to the most it ever held, and spare buffers go to a process-wide list for the
//! next write: at most [`MAX_SPARES`] buffers holding [`MAX_SPARE_TOTAL`] bytes together (the
//! arenas of one 16 MiB file, 64 columns of 32³ blocks, fit), so idle memory stays bounded.

use std::ops::Range;
use std::sync::{Mutex, PoisonError};

use crate::error::{Error, Result};

/// Spare arena buffers (at most [`MAX_SPARES`], at most [`MAX_SPARE_TOTAL`] bytes together).
static SPARES: Mutex<Vec<Vec<u8>>> = Mutex::new(Vec::new());

/// Most buffers kept in [`SPARES`].
const MAX_SPARES: usize = 128;
/// Most bytes kept in [`SPARES`] together.
const MAX_SPARE_TOTAL: usize = 32 << 20;

/// Encoded blocks appended one after another.
#[derive(Debug, Default)]
pub(crate) struct Arena {
    /// Initialized bytes; `..used` hold the appended blocks.
    buf: Vec<u8>,
    used: usize,
}

impl Arena {
    /// An empty arena, reusing a spare buffer if there is one.
    pub(crate) fn take() -> Self {
        let buf = SPARES
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop()
            .unwrap_or_default();
        Self { buf, used: 0 }
    }

    /// Appends the bytes `write` puts at the start of the `cap` bytes it is given (it returns
    /// how many, at most `cap`); returns where they are.
    ///
    /// # Errors
    /// The error of `write`; [`Error::Internal`] if it claims more than `cap` bytes.
    pub(crate) fn append(
        &mut self,
        cap: usize,
        write: impl FnOnce(&mut [u8]) -> Result<usize>,
    ) -> Result<Range<usize>> {
        let start = self.used;
        let end = start
            .checked_add(cap)
            .ok_or_else(|| Error::internal("arena size overflow"))?;
        if self.buf.len() < end {
            self.buf.resize(end, 0);
        }
        let n = write(&mut self.buf[start..end])?;
        if n > cap {
            return Err(Error::internal(format!("{n} bytes written into {cap}")));
        }
        self.used = start + n;
        Ok(start..start + n)
    }

    /// Appended bytes at `range` (as returned by [`Arena::append`]).
    pub(crate) fn get(&self, range: Range<usize>) -> &[u8] {
        self.buf.get(range).unwrap_or_default()
    }

    /// Keeps the buffer for a later write, unless the spare list is full.
    pub(crate) fn give_back(self) {
        let mut spares = SPARES.lock().unwrap_or_else(PoisonError::into_inner);
        let held: usize = spares.iter().map(Vec::len).sum();
        if spares.len() < MAX_SPARES && held + self.buf.len() <= MAX_SPARE_TOTAL {
            spares.push(self.buf);
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "a failed unwrap is a failed test")]

    use super::Arena;

    #[test]
    fn appended_bytes_stay_where_they_were_put() {
        let mut a = Arena::take();
        let r1 = a
            .append(8, |b| {
                b[..3].copy_from_slice(b"abc");
                Ok(3)
            })
            .unwrap();
        let r2 = a.append(4, |b| {
            b.copy_from_slice(b"wxyz");
            Ok(4)
        });
        assert_eq!(a.get(r1), b"abc");
        assert_eq!(a.get(r2.unwrap()), b"wxyz");
        assert!(a.append(2, |_| Ok(3)).is_err());
        a.give_back();
        // A reused buffer starts empty.
        let b = Arena::take();
        assert_eq!(b.used, 0);
    }
}
