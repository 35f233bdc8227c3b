//! C-Blosc2's in-library plugins: the filters BYTEDELTA (35), INT_TRUNC (36), NDCELL (32) and
//! NDMEAN (33) and the codec NDLZ (32). The rules are described in `FORMAT.md` (section
//! "Plugins"); this is our own implementation of them.
//!
//! NDCELL, NDMEAN and NDLZ work on the b2nd block of the array the chunk belongs to: C-Blosc2
//! reads its shape from the super-chunk's `b2nd` metalayer; here the caller passes it as a
//! [`BlockShape`] in [`DParams`](crate::DParams) / [`CParams`](crate::CParams).

pub(crate) mod bytedelta;
pub(crate) mod cells;
pub(crate) mod inttrunc;
pub(crate) mod ndlz;
mod xxh32;
#[cfg(feature = "zfp")]
pub(crate) mod zfp;

use crate::error::{Error, Result};

/// Most dimensions of a b2nd array (`B2ND_MAX_DIM`).
pub(crate) const MAX_DIM: usize = 16;
/// Most dimensions NDCELL and NDMEAN handle (`NDCELL_MAX_DIM`, `NDMEAN_MAX_DIM`).
pub(crate) const MAX_CELL_DIM: usize = 8;

/// The shape of one b2nd block (items per dimension, C order), which the NDCELL and NDMEAN
/// filters and the NDLZ codec need to decode and encode a chunk. The `b2nd` metalayer of a
/// frame holds it (`blosc2-frame` passes it on by itself).
///
/// ```
/// use blosc_chunk::BlockShape;
/// let b = BlockShape::new(&[8, 10])?;
/// assert_eq!(b.dims(), &[8, 10]);
/// assert_eq!(b.items(), Some(80));
/// # Ok::<(), blosc_chunk::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct BlockShape {
    ndim: u8,
    dims: [u32; MAX_DIM],
}

impl BlockShape {
    /// A block shape of 1 to 16 dimensions, each 1 to `i32::MAX` items (the b2nd limits).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParam`] for 0 or more than 16 dimensions or a dimension of 0 or above
    /// `i32::MAX`.
    pub fn new(dims: &[u64]) -> Result<Self> {
        if dims.is_empty() || dims.len() > MAX_DIM {
            return Err(Error::InvalidParam {
                what: "blockshape",
                why: "must have 1 to 16 dimensions",
            });
        }
        let mut d = [0u32; MAX_DIM];
        for (o, &v) in d.iter_mut().zip(dims) {
            *o = u32::try_from(v)
                .ok()
                .filter(|&v| v >= 1 && i32::try_from(v).is_ok())
                .ok_or(Error::InvalidParam {
                    what: "blockshape",
                    why: "every dimension must be 1..=i32::MAX",
                })?;
        }
        Ok(Self {
            ndim: u8::try_from(dims.len()).unwrap_or(0),
            dims: d,
        })
    }

    /// Number of dimensions.
    #[must_use]
    pub fn ndim(&self) -> usize {
        usize::from(self.ndim)
    }

    /// Items per dimension.
    #[must_use]
    pub fn dims(&self) -> &[u32] {
        &self.dims[..self.ndim()]
    }

    /// Items in one block (`None` if the product overflows `usize`).
    #[must_use]
    pub fn items(&self) -> Option<usize> {
        self.dims()
            .iter()
            .try_fold(1usize, |acc, &d| acc.checked_mul(d as usize))
    }
}

/// The error of a plugin whose parameters do not fit the block.
pub(crate) fn geometry(plugin: &'static str, why: &'static str) -> Error {
    Error::Plugin { plugin, why }
}

/// The block shape, or the error saying that `plugin` needs one.
pub(crate) fn need_shape<'s>(
    plugin: &'static str,
    shape: Option<&'s BlockShape>,
) -> Result<&'s BlockShape> {
    shape.ok_or(Error::MissingBlockShape { plugin })
}
