//! `ndarray` interop (feature `ndarray`): b2nd regions read into `ArrayD<T>`, and b2nd frames
//! built from any array or view, whatever its memory order or strides.

use blosc_chunk::CParams;
use ndarray::{ArrayBase, ArrayD, Data, Dimension, IxDyn};

use crate::array::{B2ndArray, b2nd_frame};
use crate::b2nd::B2ndMeta;
use crate::element::{Element, to_le_bytes};
use crate::error::{Error, Result};
use crate::writer::FrameWriter;

impl B2ndArray<'_> {
    /// The hyper-slab `start..stop` as an `ndarray` array of shape `stop - start` in standard
    /// (C) layout, items converted as by [`B2ndArray::read_region_as`].
    ///
    /// # Errors
    /// As [`B2ndArray::read_region_as`].
    #[cfg_attr(docsrs, doc(cfg(feature = "ndarray")))]
    pub fn read_region_ndarray<T: Element>(
        &self,
        start: &[u64],
        stop: &[u64],
    ) -> Result<ArrayD<T>> {
        region_array(start, stop, self.read_region_as::<T>(start, stop)?)
    }

    /// The whole array as an `ndarray` array (see [`B2ndArray::read_region_ndarray`]).
    ///
    /// # Errors
    /// As [`B2ndArray::read_region_as`].
    #[cfg_attr(docsrs, doc(cfg(feature = "ndarray")))]
    pub fn read_all_ndarray<T: Element>(&self) -> Result<ArrayD<T>> {
        let zero = vec![0; self.meta().ndim()];
        self.read_region_ndarray(&zero, self.shape())
    }
}

/// The items of region `start..stop` (C order) as an array of shape `stop - start`.
fn region_array<T>(start: &[u64], stop: &[u64], items: Vec<T>) -> Result<ArrayD<T>> {
    let shape = start
        .iter()
        .zip(stop)
        .map(|(&a, &b)| {
            usize::try_from(b.saturating_sub(a)).map_err(|_| Error::Overflow {
                what: "region shape",
            })
        })
        .collect::<Result<Vec<usize>>>()?;
    ArrayD::from_shape_vec(IxDyn(&shape), items)
        .map_err(|e| Error::InvalidArgument(format!("region shape {shape:?}: {e}")))
}

#[cfg(feature = "object_store")]
impl crate::RemoteB2nd {
    /// The hyper-slab `start..stop` as an `ndarray` array (as
    /// [`B2ndArray::read_region_ndarray`]), fetching only the chunks it touches.
    ///
    /// # Errors
    /// As [`RemoteB2nd::read_region_as`](crate::RemoteB2nd::read_region_as).
    #[cfg_attr(docsrs, doc(cfg(all(feature = "ndarray", feature = "object_store"))))]
    pub async fn read_region_ndarray<T: Element>(
        &self,
        start: &[u64],
        stop: &[u64],
    ) -> Result<ArrayD<T>> {
        region_array(start, stop, self.read_region_as::<T>(start, stop).await?)
    }
}

#[cfg(feature = "object_store")]
impl crate::BlockingRemoteB2nd {
    /// [`RemoteB2nd::read_region_ndarray`](crate::RemoteB2nd::read_region_ndarray), blocking.
    ///
    /// # Errors
    /// As [`RemoteB2nd::read_region_as`](crate::RemoteB2nd::read_region_as).
    #[cfg_attr(docsrs, doc(cfg(all(feature = "ndarray", feature = "object_store"))))]
    pub fn read_region_ndarray<T: Element>(
        &self,
        start: &[u64],
        stop: &[u64],
    ) -> Result<ArrayD<T>> {
        region_array(start, stop, self.read_region_as::<T>(start, stop)?)
    }
}

/// Builds a b2nd frame holding `array` (any layout: C, Fortran, sliced or transposed views),
/// with dtype [`Element::DTYPE`] and the given chunk and block shapes. Items are taken in
/// logical C order, so reading the frame back gives `array`'s elements in `array.iter()` order.
///
/// # Errors
/// [`Error::InvalidArgument`] for chunk or block shapes that do not fit the array (see
/// [`B2ndMeta::new`]); chunk errors.
#[cfg_attr(docsrs, doc(cfg(feature = "ndarray")))]
pub fn b2nd_frame_from_ndarray<T, S, D>(
    array: &ArrayBase<S, D>,
    chunkshape: &[u64],
    blockshape: &[u64],
    cparams: &CParams,
) -> Result<FrameWriter>
where
    T: Element,
    S: Data<Elem = T>,
    D: Dimension,
{
    let shape: Vec<u64> = array.shape().iter().map(|&n| n as u64).collect();
    let meta = B2ndMeta::new(&shape, chunkshape, blockshape, T::DTYPE)?;
    let bytes = to_le_bytes(array.iter().copied());
    b2nd_frame(&bytes, &meta, size_of::<T>(), cparams)
}
