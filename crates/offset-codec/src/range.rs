//! Partial decoding: mapping byte ranges of the payload to byte ranges of the stored chunk.
//!
//! Two entry points:
//! * [`OffsetCodec::map_range`] when the stored chunk's length is known: returns the exact
//!   interval to read, clamping suffixes to the payload.
//! * [`OffsetCodec::plan_range`] when it is not (a store's suffix read): returns a request to
//!   send to the store and trims what comes back, so that a suffix longer than the payload
//!   never returns header bytes and a range never reaches into a trailer.
//!
//! All arithmetic is checked.

use core::ops::Range;

use crate::codec::OffsetCodec;
use crate::config::Location;
use crate::error::{Error, Result};
use crate::types::ByteRange;

/// A deferred overflow error naming `what` overflowed.
const fn overflow(what: &'static str) -> impl Fn() -> Error {
    move || Error::Overflow { what }
}

/// A store request for a payload range plus how to trim the bytes the store returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RangePlan {
    decoded: ByteRange,
    request: ByteRange,
    /// Bytes to drop from the start of the fetched bytes.
    skip_front: u64,
    /// Bytes to drop from the end of the fetched bytes.
    skip_back: u64,
    /// Exact number of bytes the fetched data must have, when known.
    expect_len: Option<u64>,
}

impl RangePlan {
    /// The range to request from the store (in stored-chunk coordinates).
    #[must_use]
    pub const fn request(&self) -> ByteRange {
        self.request
    }

    /// Where, within `fetched_len` bytes returned for [`request`](Self::request), the asked
    /// payload bytes are.
    ///
    /// # Errors
    /// [`Error::UnexpectedReadLength`] if a bounded request came back with another length,
    /// [`Error::RangeOutOfBounds`] / [`Error::ChunkTooShort`] if the chunk is too short for
    /// the requested payload range.
    pub fn bounds(&self, fetched_len: usize) -> Result<Range<usize>> {
        let len = u64::try_from(fetched_len).map_err(|_| Error::Overflow {
            what: "fetched length",
        })?;
        if let Some(want) = self.expect_len
            && len != want
        {
            return Err(Error::UnexpectedReadLength {
                actual: len,
                requested: want,
            });
        }
        if let ByteRange::Suffix(n) = self.request
            && len > n
        {
            return Err(Error::UnexpectedReadLength {
                actual: len,
                requested: n,
            });
        }
        let end = len
            .checked_sub(self.skip_back)
            .ok_or(Error::ChunkTooShort {
                len,
                nbytes: self.skip_back,
            })?;
        if end < self.skip_front {
            return Err(Error::ChunkTooShort {
                len,
                nbytes: self.skip_front.saturating_add(self.skip_back),
            });
        }
        let start = usize::try_from(self.skip_front).map_err(|_| Error::Overflow {
            what: "payload start",
        })?;
        let end = usize::try_from(end).map_err(|_| Error::Overflow {
            what: "payload end",
        })?;
        Ok(start..end)
    }

    /// The payload bytes within the bytes `fetched` for [`request`](Self::request).
    ///
    /// # Errors
    /// As [`bounds`](Self::bounds).
    pub fn finish<'a>(&self, fetched: &'a [u8]) -> Result<&'a [u8]> {
        let r = self.bounds(fetched.len())?;
        fetched.get(r).ok_or(Error::RangeOutOfBounds {
            range: self.decoded,
            len: u64::try_from(fetched.len()).unwrap_or(u64::MAX),
        })
    }
}

impl OffsetCodec {
    /// The exact interval of a stored chunk of `encoded_len` bytes that holds the payload
    /// bytes `range`. A suffix longer than the payload is clamped to the whole payload.
    ///
    /// # Errors
    /// [`Error::ChunkTooShort`] if the chunk cannot hold the header/trailer,
    /// [`Error::RangeOutOfBounds`] if a from-start range ends past the payload,
    /// [`Error::Overflow`] on arithmetic overflow.
    pub fn map_range(&self, range: ByteRange, encoded_len: u64) -> Result<Range<u64>> {
        let n = self.nbytes_u64();
        let payload_len = encoded_len.checked_sub(n).ok_or(Error::ChunkTooShort {
            len: encoded_len,
            nbytes: n,
        })?;
        let base = match self.location() {
            Location::Start => n,
            Location::End => 0,
        };
        let (start, end) = match range {
            ByteRange::FromStart { offset, length } => {
                let end = match length {
                    Some(l) => offset.checked_add(l).ok_or_else(overflow("range end"))?,
                    None => payload_len.max(offset),
                };
                if end > payload_len {
                    return Err(Error::RangeOutOfBounds {
                        range,
                        len: payload_len,
                    });
                }
                (offset, end)
            }
            ByteRange::Suffix(k) => (payload_len - k.min(payload_len), payload_len),
        };
        // base + end ≤ base + payload_len = encoded_len for `Start`, = payload_len for `End`.
        let s = base
            .checked_add(start)
            .ok_or_else(overflow("stored range"))?;
        let e = base.checked_add(end).ok_or_else(overflow("stored range"))?;
        Ok(s..e)
    }

    /// A store request for the payload bytes `range` when the stored length is unknown.
    ///
    /// * header (`Start`, n bytes): `FromStart(o, l)` → `FromStart(o + n, l)`;
    ///   `Suffix(k)` → `Suffix(k + n)` and the first n of the returned bytes dropped, which is
    ///   exactly right whether or not the chunk was longer than `k + n`.
    /// * trailer (`End`): `FromStart(o, Some(l))` → `FromStart(o, Some(l + n))`, keep the
    ///   first l; `FromStart(o, None)` and `Suffix(k)` → same start, `Suffix(k + n)`, drop the
    ///   last n.
    ///
    /// # Errors
    /// [`Error::Overflow`] when a shifted offset or length does not fit in `u64`.
    pub fn plan_range(&self, range: ByteRange) -> Result<RangePlan> {
        let n = self.nbytes_u64();
        let mut plan = RangePlan {
            decoded: range,
            request: range,
            skip_front: 0,
            skip_back: 0,
            expect_len: None,
        };
        match (self.location(), range) {
            (Location::Start, ByteRange::FromStart { offset, length }) => {
                let offset = offset
                    .checked_add(n)
                    .ok_or_else(overflow("range offset + header"))?;
                plan.request = ByteRange::FromStart { offset, length };
                plan.expect_len = length;
            }
            (Location::Start, ByteRange::Suffix(k)) => {
                plan.request = match k.checked_add(n) {
                    Some(k) => ByteRange::Suffix(k),
                    // Longer than any chunk: the whole payload.
                    None => ByteRange::FromStart {
                        offset: n,
                        length: None,
                    },
                };
                plan.skip_front = if matches!(plan.request, ByteRange::Suffix(_)) {
                    n
                } else {
                    0
                };
            }
            (Location::End, ByteRange::FromStart { offset, length }) => {
                match length {
                    Some(l) => {
                        let l_n = l
                            .checked_add(n)
                            .ok_or_else(overflow("range length + trailer"))?;
                        plan.request = ByteRange::FromStart {
                            offset,
                            length: Some(l_n),
                        };
                        plan.expect_len = Some(l_n);
                    }
                    None => plan.request = range,
                }
                plan.skip_back = n;
            }
            (Location::End, ByteRange::Suffix(k)) => {
                plan.request = match k.checked_add(n) {
                    Some(k) => ByteRange::Suffix(k),
                    None => ByteRange::FromStart {
                        offset: 0,
                        length: None,
                    },
                };
                plan.skip_back = n;
            }
        }
        Ok(plan)
    }
}
