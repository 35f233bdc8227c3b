//! Bounds-checked big-endian field access on untrusted byte slices.
//!
//! `base` is the position of `buf[0]` inside the frame, so errors report frame offsets.

use crate::error::{Error, Result};

/// A read-only view with the frame position of its first byte.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Bytes<'a> {
    pub(crate) buf: &'a [u8],
    pub(crate) base: u64,
}

impl<'a> Bytes<'a> {
    pub(crate) fn new(buf: &'a [u8], base: u64) -> Self {
        Self { buf, base }
    }

    fn pos(&self, at: usize) -> u64 {
        self.base.saturating_add(at as u64)
    }

    /// `n` bytes at `at`.
    pub(crate) fn get(&self, what: &'static str, at: usize, n: usize) -> Result<&'a [u8]> {
        at.checked_add(n)
            .and_then(|end| self.buf.get(at..end))
            .ok_or_else(|| Error::Truncated {
                what,
                offset: self.pos(at),
                needed: n as u64,
                available: self.buf.len().saturating_sub(at) as u64,
            })
    }

    pub(crate) fn array<const N: usize>(&self, what: &'static str, at: usize) -> Result<[u8; N]> {
        let s = self.get(what, at, N)?;
        let mut a = [0u8; N];
        a.copy_from_slice(s);
        Ok(a)
    }

    pub(crate) fn u8(&self, what: &'static str, at: usize) -> Result<u8> {
        Ok(self.array::<1>(what, at)?[0])
    }

    pub(crate) fn be_u16(&self, what: &'static str, at: usize) -> Result<u16> {
        Ok(u16::from_be_bytes(self.array(what, at)?))
    }

    pub(crate) fn be_u32(&self, what: &'static str, at: usize) -> Result<u32> {
        Ok(u32::from_be_bytes(self.array(what, at)?))
    }

    pub(crate) fn be_i16(&self, what: &'static str, at: usize) -> Result<i16> {
        Ok(i16::from_be_bytes(self.array(what, at)?))
    }

    pub(crate) fn be_i32(&self, what: &'static str, at: usize) -> Result<i32> {
        Ok(i32::from_be_bytes(self.array(what, at)?))
    }

    pub(crate) fn be_i64(&self, what: &'static str, at: usize) -> Result<i64> {
        Ok(i64::from_be_bytes(self.array(what, at)?))
    }

    pub(crate) fn be_u64(&self, what: &'static str, at: usize) -> Result<u64> {
        Ok(u64::from_be_bytes(self.array(what, at)?))
    }

    /// Requires the byte at `at` to be `expected`.
    pub(crate) fn marker(&self, what: &'static str, at: usize, expected: u8) -> Result<()> {
        let found = self.u8(what, at)?;
        if found == expected {
            Ok(())
        } else {
            Err(Error::Marker {
                what,
                offset: self.pos(at),
                expected,
                found,
            })
        }
    }
}

/// `a + b` for offsets/lengths, naming the quantity on overflow.
pub(crate) fn add(what: &'static str, a: u64, b: u64) -> Result<u64> {
    a.checked_add(b).ok_or(Error::Overflow { what })
}

/// A `u64` that must fit in `usize` (for indexing in-memory buffers).
pub(crate) fn to_usize(what: &'static str, v: u64) -> Result<usize> {
    usize::try_from(v).map_err(|_| Error::Overflow { what })
}
