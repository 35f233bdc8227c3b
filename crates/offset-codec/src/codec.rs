//! The codec itself: zero-copy decode, single-allocation encode, strict mode, dynamic prefixes.

use std::fmt;
use std::sync::Arc;

use crate::config::{CodecConfiguration, Location, OffsetConfiguration, PadConfiguration};
use crate::error::{BoxError, Error, Result};

/// What a dynamic prefix callback is told about the chunk being encoded.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct PrefixContext<'a> {
    /// The encoded payload the header/trailer will accompany (the output of the previous codec).
    pub payload: &'a [u8],
    /// The chunk's grid coordinates, when the host knows them (zarrs does not pass them to a
    /// bytes→bytes codec, so they are `None` there).
    pub chunk_indices: Option<&'a [u64]>,
    /// The chunk's shape in elements, when the host knows it (`None` inside zarrs).
    pub chunk_shape: Option<&'a [u64]>,
}

impl<'a> PrefixContext<'a> {
    /// A context holding only the payload.
    #[must_use]
    pub const fn new(payload: &'a [u8]) -> Self {
        Self {
            payload,
            chunk_indices: None,
            chunk_shape: None,
        }
    }

    /// Adds the chunk's grid coordinates and shape.
    #[must_use]
    pub const fn with_chunk(mut self, indices: &'a [u64], shape: &'a [u64]) -> Self {
        self.chunk_indices = Some(indices);
        self.chunk_shape = Some(shape);
        self
    }
}

type PrefixFn = dyn Fn(&PrefixContext<'_>) -> core::result::Result<Vec<u8>, BoxError> + Send + Sync;

/// A callback that builds the header (or trailer) of each chunk from its payload, e.g. a TIFF
/// header whose StripByteCounts is the compressed length. Its output must be exactly
/// `offset`/`nbytes` bytes long; `zarr.json` still records only the static configuration.
#[derive(Clone)]
pub struct DynamicPrefix(Arc<PrefixFn>);

impl DynamicPrefix {
    /// Wraps a callback.
    pub fn new<F>(f: F) -> Self
    where
        F: Fn(&PrefixContext<'_>) -> core::result::Result<Vec<u8>, BoxError>
            + Send
            + Sync
            + 'static,
    {
        Self(Arc::new(f))
    }

    /// Runs the callback and checks the length.
    fn build(&self, ctx: &PrefixContext<'_>, expected: usize) -> Result<Vec<u8>> {
        let bytes = (self.0)(ctx).map_err(|source| Error::DynamicPrefix { source })?;
        if bytes.len() == expected {
            Ok(bytes)
        } else {
            Err(Error::DynamicPrefixLength {
                actual: u64::try_from(bytes.len()).unwrap_or(u64::MAX),
                expected: u64::try_from(expected).unwrap_or(u64::MAX),
            })
        }
    }
}

impl fmt::Debug for DynamicPrefix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("DynamicPrefix(..)")
    }
}

/// When the expected prefix is an N5 default-mode header and the skipped bytes are one with
/// other dims, the clearer error: a truncated N5 edge block.
fn n5_mismatch(expected: Option<&[u8]>, skipped: &[u8]) -> Option<Error> {
    let want = crate::n5::N5BlockHeader::parse(expected?).ok()?;
    let got = crate::n5::N5BlockHeader::parse(skipped).ok()?;
    let n5 = crate::types::N5Mode::Default;
    (want.mode == n5
        && got.mode == n5
        && want.len() == skipped.len()
        && got.dims.len() == want.dims.len())
    .then_some(Error::N5TruncatedBlock {
        header: got.dims,
        block_size: want.dims,
    })
}

/// The `offset` / `pad` codec.
///
/// Decoding returns a sub-slice of its input (O(1), no copy); encoding writes header, payload
/// (and trailer) into one allocation of exactly the final size.
///
/// ```
/// use offset_codec::{OffsetCodec, OffsetConfiguration};
/// let codec = OffsetCodec::new(OffsetConfiguration::from_prefix(b"HDR"))?;
/// let stored = codec.encode(b"payload")?;
/// assert_eq!(stored, b"HDRpayload");
/// assert_eq!(codec.decode(&stored)?, b"payload");
/// assert!(codec.decode(b"HD").is_err()); // shorter than the header
/// # Ok::<(), offset_codec::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct OffsetCodec {
    config: CodecConfiguration,
    nbytes: usize,
    strict: bool,
    dynamic: Option<DynamicPrefix>,
}

impl OffsetCodec {
    /// A codec from a parsed configuration (`offset` or `pad`).
    ///
    /// # Errors
    /// [`Error::SizeLimit`] if the size does not fit in `usize` on this platform.
    pub fn new(config: impl Into<CodecConfiguration>) -> Result<Self> {
        let config = config.into();
        let n = config.nbytes();
        let nbytes = usize::try_from(n).map_err(|_| Error::SizeLimit {
            field: match config {
                CodecConfiguration::Offset(_) => "offset",
                CodecConfiguration::Pad(_) => "nbytes",
            },
            value: n,
            limit: u64::try_from(usize::MAX).unwrap_or(u64::MAX),
        })?;
        Ok(Self {
            config,
            nbytes,
            strict: false,
            dynamic: None,
        })
    }

    /// A codec for `{"offset": offset}` (zero header, absent `prefix`).
    ///
    /// # Errors
    /// As [`new`](Self::new).
    pub fn offset_zeros(offset: u64) -> Result<Self> {
        Self::new(OffsetConfiguration::new(offset))
    }

    /// A codec for `pad` with `nbytes` zero bytes at `location`.
    ///
    /// # Errors
    /// As [`new`](Self::new).
    pub fn pad_zeros(location: Location, nbytes: u64) -> Result<Self> {
        Self::new(PadConfiguration::new(location, nbytes))
    }

    /// Strict mode: decoding also checks that the skipped bytes equal the configured literal
    /// (zeros when none is configured, or the dynamic callback's output for the payload).
    /// Off by default: the proposal gives the skipped bytes no meaning for decoding.
    ///
    /// A mismatch is [`Error::PrefixMismatch`], except when the literal is an N5 default-mode
    /// header and the skipped bytes are one with other dims: then [`Error::N5TruncatedBlock`]
    /// (a truncated N5 edge block, which this codec cannot read).
    #[must_use]
    pub fn with_strict(mut self, strict: bool) -> Self {
        self.strict = strict;
        self
    }

    /// Builds each chunk's header/trailer with `prefix` instead of the static literal.
    #[must_use]
    pub fn with_dynamic_prefix(mut self, prefix: DynamicPrefix) -> Self {
        self.dynamic = Some(prefix);
        self
    }

    /// The configuration (serialises back to the exact `zarr.json` entry).
    #[must_use]
    pub const fn configuration(&self) -> &CodecConfiguration {
        &self.config
    }

    /// Where the fixed bytes sit.
    #[must_use]
    pub const fn location(&self) -> Location {
        self.config.location()
    }

    /// Number of fixed bytes (`offset` / `nbytes`).
    #[must_use]
    pub const fn nbytes(&self) -> usize {
        self.nbytes
    }

    /// Whether strict mode is on.
    #[must_use]
    pub const fn is_strict(&self) -> bool {
        self.strict
    }

    /// Size of an encoded chunk for a payload of `decoded_len` bytes.
    ///
    /// # Errors
    /// [`Error::Overflow`] if the sum does not fit in `u64`.
    pub fn encoded_len(&self, decoded_len: u64) -> Result<u64> {
        decoded_len
            .checked_add(self.nbytes_u64())
            .ok_or(Error::Overflow {
                what: "encoded chunk length",
            })
    }

    pub(crate) fn nbytes_u64(&self) -> u64 {
        self.config.nbytes()
    }

    /// Byte range of the payload within an encoded chunk of `len` bytes.
    pub(crate) fn payload_bounds(&self, len: usize) -> Result<core::ops::Range<usize>> {
        let rest = len.checked_sub(self.nbytes).ok_or(Error::ChunkTooShort {
            len: u64::try_from(len).unwrap_or(u64::MAX),
            nbytes: self.nbytes_u64(),
        })?;
        Ok(match self.location() {
            Location::Start => self.nbytes..len,
            Location::End => 0..rest,
        })
    }

    /// The payload of an encoded chunk: a borrowed sub-slice, O(1) in the chunk size (plus an
    /// O(`nbytes`) comparison in strict mode).
    ///
    /// # Errors
    /// [`Error::ChunkTooShort`] if `encoded` is shorter than `nbytes`; in strict mode
    /// [`Error::PrefixMismatch`] (or a dynamic-prefix error) when the skipped bytes differ.
    pub fn decode<'a>(&self, encoded: &'a [u8]) -> Result<&'a [u8]> {
        let bounds = self.payload_bounds(encoded.len())?;
        let payload = encoded.get(bounds.clone()).unwrap_or_default();
        if self.strict {
            let (skipped, at) = match self.location() {
                Location::Start => (encoded.get(..self.nbytes), 0),
                Location::End => (encoded.get(bounds.end..), bounds.end),
            };
            self.check_skipped(skipped.unwrap_or_default(), at, payload)?;
        }
        Ok(payload)
    }

    fn check_skipped(&self, skipped: &[u8], at: usize, payload: &[u8]) -> Result<()> {
        let dynamic;
        let expected: Option<&[u8]> = if let Some(d) = &self.dynamic {
            dynamic = d.build(&PrefixContext::new(payload), self.nbytes)?;
            Some(&dynamic)
        } else {
            self.config.literal()
        };
        let mismatch = skipped.iter().enumerate().find_map(|(i, &found)| {
            let want = expected.map_or(0, |e| e.get(i).copied().unwrap_or(0));
            (found != want).then_some((i, found, want))
        });
        let Some((i, found, want)) = mismatch else {
            return Ok(());
        };
        if let Some(e) = n5_mismatch(expected, skipped) {
            return Err(e);
        }
        Err(Error::PrefixMismatch {
            offset: u64::try_from(at.saturating_add(i)).unwrap_or(u64::MAX),
            found,
            expected: want,
        })
    }

    /// Encodes a payload: header + payload (or payload + trailer) in one allocation.
    ///
    /// # Errors
    /// [`Error::Overflow`] if the total size overflows; dynamic-prefix errors
    /// ([`Error::DynamicPrefix`], [`Error::DynamicPrefixLength`]).
    pub fn encode(&self, payload: &[u8]) -> Result<Vec<u8>> {
        self.encode_with(&PrefixContext::new(payload))
    }

    /// [`encode`](Self::encode) with chunk coordinates and shape for a dynamic prefix.
    ///
    /// # Errors
    /// As [`encode`](Self::encode).
    pub fn encode_with(&self, ctx: &PrefixContext<'_>) -> Result<Vec<u8>> {
        let payload = ctx.payload;
        let total = payload
            .len()
            .checked_add(self.nbytes)
            .ok_or(Error::Overflow {
                what: "encoded chunk length",
            })?;
        let dynamic = match &self.dynamic {
            Some(d) => Some(d.build(ctx, self.nbytes)?),
            None => None,
        };
        let fixed: Option<&[u8]> = dynamic.as_deref().or_else(|| self.config.literal());
        let mut out = Vec::with_capacity(total);
        if self.location() == Location::End {
            out.extend_from_slice(payload);
        }
        match fixed {
            Some(bytes) => out.extend_from_slice(bytes),
            None => out.resize(out.len().saturating_add(self.nbytes), 0),
        }
        if self.location() == Location::Start {
            out.extend_from_slice(payload);
        }
        debug_assert_eq!(out.len(), total);
        Ok(out)
    }
}
