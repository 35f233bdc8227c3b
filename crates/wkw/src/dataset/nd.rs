//! `ndarray` interop (feature `ndarray`): boxes read into [`ndarray::Array4`] of shape
//! (channels, x, y, z) and written from [`ndarray::ArrayView4`] / [`ndarray::ArrayView3`] of
//! any strides.

use ndarray::{Array4, ArrayView3, ArrayView4, Axis, ShapeBuilder};

use crate::dataset::array::{Array, ArrayView, ArrayViewMut, Order};
use crate::dataset::root::Dataset;
use crate::error::{Error, Result};
use crate::format::voxel::{self, Voxel};

/// `(channels, x, y, z)` of an array of this spatial `shape`.
fn dims(channels: u8, [x, y, z]: [u32; 3]) -> (usize, usize, usize, usize) {
    (usize::from(channels), x as usize, y as usize, z as usize)
}

/// Wraps `values` (laid out in `order`) as an `Array4` of `dims`.
fn wrap<T: Voxel>(
    d: (usize, usize, usize, usize),
    order: Order,
    values: Vec<T>,
) -> Result<Array4<T>> {
    let shaped = match order {
        Order::C => Array4::from_shape_vec(d, values),
        Order::Fortran => Array4::from_shape_vec(d.f(), values),
    };
    shaped.map_err(|e| Error::internal(format!("ndarray shape {d:?}: {e}")))
}

/// The voxel values of an `ndarray` view (channels, x, y, z) in one memory order: borrowed
/// when the view is C- or Fortran-contiguous, else copied into a Fortran-order array (the
/// faster layout for writes).
pub(crate) struct Values<'a, T: Voxel> {
    channels: u8,
    shape: [u32; 3],
    order: Order,
    values: std::borrow::Cow<'a, [T]>,
}

impl<'a, T: Voxel> Values<'a, T> {
    /// # Errors
    /// [`Error::ArrayMismatch`] if an axis is too long (channels beyond 255, spatial beyond
    /// `u32::MAX`).
    pub(crate) fn of(data: &ArrayView4<'a, T>) -> Result<Self> {
        let (c, x, y, z) = data.dim();
        let too_long = |what: &str, n: usize| {
            Error::ArrayMismatch(format!("ndarray {what} axis of length {n} does not fit"))
        };
        let channels = u8::try_from(c).map_err(|_| too_long("channel", c))?;
        let u = |n: usize| u32::try_from(n).map_err(|_| too_long("spatial", n));
        let shape = [u(x)?, u(y)?, u(z)?];
        let (order, values) = if let Some(v) = data.to_slice() {
            (Order::C, std::borrow::Cow::Borrowed(v))
        } else if let Some(v) = (*data).reversed_axes().to_slice() {
            (Order::Fortran, std::borrow::Cow::Borrowed(v))
        } else {
            let mut owned = Array4::<T>::from_elem((c, x, y, z).f(), T::zeroed());
            owned.assign(data);
            let (v, offset) = owned.into_raw_vec_and_offset();
            if offset.is_some_and(|o| o != 0) {
                return Err(Error::internal("a new Fortran-order ndarray starts at 0"));
            }
            (Order::Fortran, std::borrow::Cow::Owned(v))
        };
        Ok(Self {
            channels,
            shape,
            order,
            values,
        })
    }

    /// The values as an [`ArrayView`] for [`Dataset::write`] and the remote writes.
    ///
    /// # Errors
    /// [`Error::Unsupported`] on big-endian targets.
    pub(crate) fn view(&self) -> Result<ArrayView<'_>> {
        ArrayView::from_slice(self.channels, self.shape, self.order, &self.values)
    }
}

impl Dataset {
    /// Reads the box at `offset` (x, y, z) of `shape` voxels into an [`ndarray::Array4`] of
    /// shape `(channels, x, y, z)`, like [`Dataset::read`]. With [`Order::Fortran`] the array
    /// is column-major (`.f()`: channel fastest, strides `[1, C, C·X, C·X·Y]` in elements, the
    /// layout of the reference's numpy result); with [`Order::C`] it is row-major (standard
    /// layout, z fastest). Indexing (`a[[c, x, y, z]]`) is the same either way.
    ///
    /// # Errors
    /// [`Error::ArrayMismatch`] if `T` is not the dataset's voxel type, [`Error::Unsupported`]
    /// on big-endian targets, and every error of [`Dataset::read`].
    #[cfg_attr(docsrs, doc(cfg(feature = "ndarray")))]
    pub fn read_ndarray<T: Voxel>(
        &self,
        offset: [u32; 3],
        shape: [u32; 3],
        order: Order,
    ) -> Result<Array4<T>> {
        voxel::check::<T>(self.header().voxel_type())?;
        let channels = self.header().num_channels();
        let d = dims(channels, shape);
        let (_, len) = self.new_array_layout(shape, order)?;
        let n = len / size_of::<T>();
        let mut values = vec![T::zeroed(); n];
        let mut view = ArrayViewMut::from_slice_mut(channels, shape, order, &mut values)?;
        self.read_into(offset, &mut view)?;
        wrap(d, order, values)
    }

    /// Writes `data` of shape `(channels, x, y, z)` at `offset` (x, y, z), like
    /// [`Dataset::write`]. Any strides: a C-contiguous or Fortran-contiguous view is written
    /// without copying; any other view (sliced with steps, negative strides, permuted axes) is
    /// first copied into a Fortran-order array, the faster layout for writes.
    ///
    /// # Errors
    /// [`Error::ArrayMismatch`] if `T` is not the dataset's voxel type, the channel count
    /// differs or an axis is longer than `u32::MAX`; [`Error::Unsupported`] on big-endian
    /// targets; every error of [`Dataset::write`].
    #[cfg_attr(docsrs, doc(cfg(feature = "ndarray")))]
    pub fn write_ndarray<T: Voxel>(&self, offset: [u32; 3], data: ArrayView4<'_, T>) -> Result<()> {
        voxel::check::<T>(self.header().voxel_type())?;
        let values = Values::of(&data)?;
        self.write(offset, &values.view()?)
    }

    /// [`Dataset::write_ndarray`] for a one-channel dataset, from `data` of shape `(x, y, z)`.
    ///
    /// # Errors
    /// As [`Dataset::write_ndarray`] ([`Error::ArrayMismatch`] if the dataset has more than
    /// one channel).
    #[cfg_attr(docsrs, doc(cfg(feature = "ndarray")))]
    pub fn write_ndarray3<T: Voxel>(
        &self,
        offset: [u32; 3],
        data: ArrayView3<'_, T>,
    ) -> Result<()> {
        self.write_ndarray(offset, data.insert_axis(Axis(0)))
    }
}

impl Array {
    /// The array as an [`ndarray::Array4`] of shape `(channels, x, y, z)`, column-major for
    /// [`Order::Fortran`] and row-major for [`Order::C`] (as [`Dataset::read_ndarray`]);
    /// without copying when [`Array::into_vec`] does not.
    ///
    /// # Errors
    /// As [`Array::into_vec`].
    #[cfg_attr(docsrs, doc(cfg(feature = "ndarray")))]
    pub fn into_ndarray<T: Voxel>(self) -> Result<Array4<T>> {
        let (d, order) = (dims(self.num_channels(), self.shape()), self.order());
        wrap(d, order, self.into_vec()?)
    }
}

#[cfg(feature = "object_store")]
impl crate::RemoteDataset {
    /// [`Dataset::read_ndarray`] of a remote dataset: the box read as
    /// [`RemoteDataset::read`](crate::RemoteDataset::read) does, as an [`ndarray::Array4`] of
    /// shape `(channels, x, y, z)` in `order`'s layout.
    ///
    /// # Errors
    /// [`Error::ArrayMismatch`] if `T` is not the dataset's voxel type, [`Error::Unsupported`]
    /// on big-endian targets, and every error of the read.
    #[cfg_attr(docsrs, doc(cfg(all(feature = "ndarray", feature = "object_store"))))]
    pub async fn read_ndarray<T: Voxel>(
        &self,
        offset: [u32; 3],
        shape: [u32; 3],
        order: Order,
    ) -> Result<Array4<T>> {
        voxel::check::<T>(self.header().voxel_type())?;
        self.read(offset, shape, order).await?.into_ndarray()
    }

    /// [`Dataset::write_ndarray`] of a remote dataset: `data` of any strides written as
    /// [`RemoteDataset::write`](crate::RemoteDataset::write) does (a view that is neither C-
    /// nor Fortran-contiguous is copied first).
    ///
    /// # Errors
    /// [`Error::ArrayMismatch`] if `T` is not the dataset's voxel type or an axis is too long;
    /// every error of the write.
    #[cfg_attr(docsrs, doc(cfg(all(feature = "ndarray", feature = "object_store"))))]
    pub async fn write_ndarray<T: Voxel>(
        &self,
        offset: [u32; 3],
        data: ArrayView4<'_, T>,
    ) -> Result<()> {
        voxel::check::<T>(self.header().voxel_type())?;
        let values = Values::of(&data)?;
        self.write(offset, &values.view()?).await
    }
}

#[cfg(feature = "object_store")]
impl crate::BlockingRemoteDataset {
    /// [`RemoteDataset::read_ndarray`](crate::RemoteDataset::read_ndarray), blocking.
    ///
    /// # Errors
    /// As [`RemoteDataset::read_ndarray`](crate::RemoteDataset::read_ndarray).
    #[cfg_attr(docsrs, doc(cfg(all(feature = "ndarray", feature = "object_store"))))]
    pub fn read_ndarray<T: Voxel>(
        &self,
        offset: [u32; 3],
        shape: [u32; 3],
        order: Order,
    ) -> Result<Array4<T>> {
        voxel::check::<T>(self.header().voxel_type())?;
        self.read(offset, shape, order)?.into_ndarray()
    }

    /// [`RemoteDataset::write_ndarray`](crate::RemoteDataset::write_ndarray), blocking.
    ///
    /// # Errors
    /// As [`RemoteDataset::write_ndarray`](crate::RemoteDataset::write_ndarray).
    #[cfg_attr(docsrs, doc(cfg(all(feature = "ndarray", feature = "object_store"))))]
    pub fn write_ndarray<T: Voxel>(&self, offset: [u32; 3], data: ArrayView4<'_, T>) -> Result<()> {
        voxel::check::<T>(self.header().voxel_type())?;
        let values = Values::of(&data)?;
        self.write(offset, &values.view()?)
    }
}
