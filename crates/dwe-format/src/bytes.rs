//! Bounds-checked little-endian reads from untrusted bytes.

use crate::error::{Error, Result};

/// Reads the u32 at byte offset `offset`.
pub(crate) fn u32_at(data: &[u8], offset: usize, what: &'static str) -> Result<u32> {
    match offset.checked_add(4).and_then(|end| data.get(offset..end)) {
        Some(&[a, b, c, d]) => Ok(u32::from_le_bytes([a, b, c, d])),
        _ => Err(truncated(data, offset, 4, what)),
    }
}

/// Reads the u16 at byte offset `offset`.
pub(crate) fn u16_at(data: &[u8], offset: usize, what: &'static str) -> Result<u16> {
    match offset.checked_add(2).and_then(|end| data.get(offset..end)) {
        Some(&[a, b]) => Ok(u16::from_le_bytes([a, b])),
        _ => Err(truncated(data, offset, 2, what)),
    }
}

/// The `Truncated` error for a read of `needed` bytes at `offset`.
pub(crate) fn truncated(data: &[u8], offset: usize, needed: u64, what: &'static str) -> Error {
    Error::Truncated {
        what,
        offset: offset as u64,
        needed,
        available: data.len() as u64,
    }
}

/// `a * b` in usize, or an overflow error naming `what`.
pub(crate) fn mul(a: usize, b: usize, what: &'static str) -> Result<usize> {
    a.checked_mul(b).ok_or(Error::LimitExceeded {
        what,
        requested: u64::MAX,
        limit: usize::MAX as u64,
    })
}

/// `a + b` in usize, or an overflow error naming `what`.
pub(crate) fn add(a: usize, b: usize, what: &'static str) -> Result<usize> {
    a.checked_add(b).ok_or(Error::LimitExceeded {
        what,
        requested: u64::MAX,
        limit: usize::MAX as u64,
    })
}

/// Converts a u32 from the file to usize (lossless on every supported target).
pub(crate) fn us(x: u32) -> usize {
    // u32 -> usize is lossless on 32- and 64-bit targets, the only ones Rust std supports here.
    x as usize
}
