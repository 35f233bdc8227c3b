//! An output buffer filled without zero-initialising it first.
//!
//! [`build`] hands out the spare capacity of a new `Vec<u8>` as one [`Seg`]; segments can only
//! be split (into disjoint parts) and consumed by [`Seg::fill`], which writes every byte of the
//! segment and returns a [`Filled`] token of its length. The vector's length is set only if the
//! tokens returned add up to the whole buffer: as the segments are disjoint and each one is
//! filled at most once (`fill` takes it by value), every byte is then initialised. Segments
//! and tokens are branded with an invariant lifetime unique to one `build` call, so tokens of
//! another call cannot be mixed in.
#![allow(
    unsafe_code,
    reason = "Vec::set_len after every byte is provably written"
)]

use std::marker::PhantomData;
use std::mem::MaybeUninit;

use crate::error::{Error, Result};

/// Invariant lifetime brand.
type Brand<'b> = PhantomData<fn(&'b ()) -> &'b ()>;

/// A not yet written part of the buffer of one [`build`] call.
#[derive(Debug)]
pub(crate) struct Seg<'b> {
    bytes: &'b mut [MaybeUninit<u8>],
    _brand: Brand<'b>,
}

/// Proof that a segment of `len` bytes was written entirely.
#[derive(Debug)]
pub(crate) struct Filled<'b> {
    len: usize,
    _brand: Brand<'b>,
}

impl<'b> Seg<'b> {
    /// Length in bytes.
    pub(crate) fn len(&self) -> usize {
        self.bytes.len()
    }

    /// The first `n` bytes and the rest; `None` if `n > len`.
    pub(crate) fn split_at(self, n: usize) -> Option<(Self, Self)> {
        let (a, b) = self.bytes.split_at_mut_checked(n)?;
        Some((
            Seg {
                bytes: a,
                _brand: PhantomData,
            },
            Seg {
                bytes: b,
                _brand: PhantomData,
            },
        ))
    }

    /// Writes all of `src` (of exactly the segment's length; else `None`, nothing written).
    pub(crate) fn fill(self, src: &[u8]) -> Option<Filled<'b>> {
        if src.len() != self.bytes.len() {
            return None;
        }
        for (d, &s) in self.bytes.iter_mut().zip(src) {
            d.write(s);
        }
        Some(Filled {
            len: src.len(),
            _brand: PhantomData,
        })
    }
}

/// A `Vec<u8>` of `len` bytes, all written by `f` through the segment it is given; an error if
/// the returned tokens do not cover all `len` bytes (or `f` fails).
pub(crate) fn build<F>(len: usize, f: F) -> Result<Vec<u8>>
where
    F: for<'b> FnOnce(Seg<'b>) -> Result<Vec<Filled<'b>>>,
{
    let mut v: Vec<u8> = Vec::with_capacity(len);
    let spare = v
        .spare_capacity_mut()
        .get_mut(..len)
        .ok_or_else(|| Error::internal("allocation shorter than requested"))?;
    let tokens = f(Seg {
        bytes: spare,
        _brand: PhantomData,
    })?;
    let written = tokens
        .iter()
        .try_fold(0usize, |acc, t| acc.checked_add(t.len));
    if written != Some(len) {
        return Err(Error::internal(format!(
            "read wrote {written:?} of {len} bytes"
        )));
    }
    // SAFETY: `len <= capacity` (`get_mut(..len)` succeeded). The tokens, which only
    // `Seg::fill` creates after writing every byte of its segment, sum to `len`; the segments
    // are disjoint parts of `spare` (only `split_at` makes new ones from an owned one, and
    // `fill` consumes its segment, so no byte is counted twice), and the invariant brand
    // ties every token to this call's `spare`. Hence bytes `0..len` are initialised.
    unsafe { v.set_len(len) };
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn all_filled_gives_the_bytes() {
        let v = build(10, |s| {
            let (a, b) = s.split_at(4).unwrap();
            Ok(vec![
                b.fill(&[9; 6]).unwrap(),
                a.fill(&[1, 2, 3, 4]).unwrap(),
            ])
        })
        .unwrap();
        assert_eq!(v, [1, 2, 3, 4, 9, 9, 9, 9, 9, 9]);
    }

    #[test]
    fn partly_filled_is_an_error() {
        assert!(
            build(10, |s| {
                let (a, _b) = s.split_at(4).unwrap();
                Ok(vec![a.fill(&[1, 2, 3, 4]).unwrap()])
            })
            .is_err()
        );
        assert!(build(3, |s| Ok(s.fill(&[1, 2]).into_iter().collect())).is_err());
        assert!(build(0, |_| Ok(Vec::new())).unwrap().is_empty());
    }
}
