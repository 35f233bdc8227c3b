//! In-memory voxel arrays of shape (C, X, Y, Z) in Fortran or C layout, as little-endian
//! bytes with typed access ([`Voxel`]).
//!
//! An [`Array`]'s buffer always starts at an address aligned for its voxel type, so
//! [`Array::as_slice`] never copies and never fails for the right `T` (on little-endian
//! targets): buffers made by this crate's reads (plain `Vec<u8>` allocations, which the system
//! allocator aligns to at least 8 bytes in practice) are kept as they are when aligned and
//! copied once into a buffer of the voxel type otherwise; [`Array::from_vec`] keeps the
//! caller's `Vec<T>`. Views over caller-provided bytes ([`ArrayView::new`]) may be unaligned:
//! their [`ArrayView::as_slice`] reports that as [`Error::ArrayMismatch`].

use crate::error::{Error, Result};
use crate::format::header::VoxelType;
use crate::format::voxel::{self, Voxel};

/// Memory layout of a (C, X, Y, Z) array. With the `serde` feature: `"fortran"`, `"c"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "lowercase"))]
#[non_exhaustive]
pub enum Order {
    /// Channel fastest, then x, y, z: the layout of a raw block and of the reference's reads
    /// (numpy `order="F"`).
    #[default]
    Fortran,
    /// z fastest, then y, x, channel slowest: what a C-contiguous numpy array of shape
    /// (C, X, Y, Z) holds.
    C,
}

/// Shape and type description shared by [`Array`], [`ArrayView`] and [`ArrayViewMut`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Layout {
    pub(crate) voxel_type: VoxelType,
    pub(crate) num_channels: u8,
    pub(crate) shape: [u32; 3],
    pub(crate) order: Order,
}

impl Layout {
    pub(crate) fn new(
        voxel_type: VoxelType,
        num_channels: u8,
        shape: [u32; 3],
        order: Order,
    ) -> Result<Self> {
        if num_channels == 0 || voxel_type.size().checked_mul(num_channels).is_none() {
            return Err(Error::ArrayMismatch(format!(
                "{num_channels} channels of {voxel_type:?} is not a valid voxel"
            )));
        }
        Ok(Self {
            voxel_type,
            num_channels,
            shape,
            order,
        })
    }

    /// Alignment of one value of the voxel type (its size).
    pub(crate) fn align(&self) -> usize {
        usize::from(self.voxel_type.size())
    }

    /// Bytes per voxel (all channels).
    pub(crate) fn voxel_size(&self) -> usize {
        usize::from(self.voxel_type.size()) * usize::from(self.num_channels)
    }

    /// Total bytes, `None` if it overflows `usize`.
    pub(crate) fn byte_len(&self) -> Option<usize> {
        self.shape.iter().try_fold(self.voxel_size(), |acc, &s| {
            acc.checked_mul(usize::try_from(s).ok()?)
        })
    }

    fn check_len(&self, len: usize) -> Result<()> {
        match self.byte_len() {
            Some(n) if n == len => Ok(()),
            n => Err(Error::ArrayMismatch(format!(
                "buffer of {len} bytes for shape {:?} × {} channels of {:?} (needs {})",
                self.shape,
                self.num_channels,
                self.voxel_type,
                n.map_or_else(|| "more than usize::MAX".to_string(), |n| n.to_string())
            ))),
        }
    }

    /// Byte strides of the (c, x, y, z) axes.
    pub(crate) fn strides(&self) -> [usize; 4] {
        let ts = usize::from(self.voxel_type.size());
        let c = usize::from(self.num_channels);
        // Cannot overflow: byte_len() was checked when the layout was attached to a buffer.
        let [x, y, z] = self.shape.map(|v| v as usize);
        match self.order {
            Order::Fortran => [ts, ts * c, ts * c * x, ts * c * x * y],
            Order::C => [ts * x * y * z, ts * y * z, ts * z, ts],
        }
    }
}

macro_rules! accessors {
    () => {
        /// Spatial shape (x, y, z).
        #[must_use]
        pub fn shape(&self) -> [u32; 3] {
            self.layout.shape
        }
        /// Memory layout.
        #[must_use]
        pub fn order(&self) -> Order {
            self.layout.order
        }
        /// Voxel value type.
        #[must_use]
        pub fn voxel_type(&self) -> VoxelType {
            self.layout.voxel_type
        }
        /// Channels per voxel.
        #[must_use]
        pub fn num_channels(&self) -> u8 {
            self.layout.num_channels
        }
        /// Byte offset of value (`channel`, `x`, `y`, `z`) in the buffer, `None` outside.
        #[must_use]
        pub fn offset_of(&self, channel: u8, [x, y, z]: [u32; 3]) -> Option<usize> {
            let l = &self.layout;
            if channel >= l.num_channels || x >= l.shape[0] || y >= l.shape[1] || z >= l.shape[2] {
                return None;
            }
            let s = l.strides();
            Some(
                usize::from(channel) * s[0]
                    + x as usize * s[1]
                    + y as usize * s[2]
                    + z as usize * s[3],
            )
        }
    };
}

/// The bytes of an [`Array`], held so that they start at an address aligned for the voxel
/// type: a `Vec<u8>` that happens to be aligned (what reads produce), or a vector of the
/// voxel type's size.
#[derive(Debug)]
enum Buf {
    Bytes(Vec<u8>),
    W2(Vec<u16>),
    W4(Vec<u32>),
    W8(Vec<u64>),
}

impl Buf {
    /// Keeps `v` if it starts at an address aligned to `align` (1, 2, 4 or 8), else copies it.
    /// `v.len()` is a multiple of `align` (a whole number of values).
    fn from_bytes(v: Vec<u8>, align: usize) -> Self {
        if v.as_ptr().addr().is_multiple_of(align) {
            Self::Bytes(v)
        } else {
            Self::copied(&v, align)
        }
    }

    /// A copy of `bytes` (a multiple of `align` long) aligned to `align`.
    fn copied(bytes: &[u8], align: usize) -> Self {
        let mut buf = Self::zeroed(bytes.len(), align);
        let dst = buf.bytes_mut();
        let n = dst.len().min(bytes.len());
        if let (Some(d), Some(s)) = (dst.get_mut(..n), bytes.get(..n)) {
            d.copy_from_slice(s);
        }
        buf
    }

    /// `len` zero bytes aligned to `align` (`len` a multiple of `align`).
    fn zeroed(len: usize, align: usize) -> Self {
        match align {
            2 => Self::W2(vec![0; len / 2]),
            4 => Self::W4(vec![0; len / 4]),
            8 => Self::W8(vec![0; len / 8]),
            _ => Self::Bytes(vec![0; len]),
        }
    }

    /// Keeps a vector of voxel values without copying.
    fn from_vec<T: Voxel>(v: Vec<T>) -> Self {
        // Same size and alignment on both sides of each cast: never fails.
        let fallback = |v: Vec<T>| Self::Bytes(bytemuck::cast_slice(&v).to_vec());
        match std::mem::size_of::<T>() {
            1 => {
                bytemuck::allocation::try_cast_vec(v).map_or_else(|(_, v)| fallback(v), Self::Bytes)
            }
            2 => bytemuck::allocation::try_cast_vec(v).map_or_else(|(_, v)| fallback(v), Self::W2),
            4 => bytemuck::allocation::try_cast_vec(v).map_or_else(|(_, v)| fallback(v), Self::W4),
            _ => bytemuck::allocation::try_cast_vec(v).map_or_else(|(_, v)| fallback(v), Self::W8),
        }
    }

    fn bytes(&self) -> &[u8] {
        match self {
            Self::Bytes(v) => v,
            Self::W2(v) => bytemuck::cast_slice(v),
            Self::W4(v) => bytemuck::cast_slice(v),
            Self::W8(v) => bytemuck::cast_slice(v),
        }
    }

    fn bytes_mut(&mut self) -> &mut [u8] {
        match self {
            Self::Bytes(v) => v,
            Self::W2(v) => bytemuck::cast_slice_mut(v),
            Self::W4(v) => bytemuck::cast_slice_mut(v),
            Self::W8(v) => bytemuck::cast_slice_mut(v),
        }
    }

    /// The bytes as a `Vec<u8>` (without copying if they are one).
    fn into_bytes(self) -> Vec<u8> {
        match self {
            Self::Bytes(v) => v,
            other => other.bytes().to_vec(),
        }
    }

    /// The values as a `Vec<T>` (without copying if they are held as words of `T`'s size);
    /// `bytes` must be a whole number of aligned `T` values.
    fn into_vec<T: Voxel>(self) -> Result<Vec<T>> {
        let copy = |b: &[u8]| voxel::cast::<T>(b).map(<[T]>::to_vec);
        fn cast<A: bytemuck::Pod, T: Voxel>(v: Vec<A>) -> Result<Vec<T>> {
            bytemuck::allocation::try_cast_vec(v)
                .map_err(|(e, _)| Error::internal(format!("voxel vector cast: {e:?}")))
        }
        match (self, std::mem::size_of::<T>()) {
            (Self::Bytes(v), 1) => cast(v),
            (Self::W2(v), 2) => cast(v),
            (Self::W4(v), 4) => cast(v),
            (Self::W8(v), 8) => cast(v),
            (other, _) => copy(other.bytes()),
        }
    }

    /// A copy, aligned to `align` like the original.
    fn clone_aligned(&self, align: usize) -> Self {
        match self {
            Self::Bytes(v) => Self::from_bytes(v.clone(), align),
            Self::W2(v) => Self::W2(v.clone()),
            Self::W4(v) => Self::W4(v.clone()),
            Self::W8(v) => Self::W8(v.clone()),
        }
    }
}

/// An owned (C, X, Y, Z) array: little-endian voxel bytes plus shape, type and layout, with
/// typed access ([`Array::as_slice`]) for the matching [`Voxel`] type.
///
/// ```
/// use wkw::{Array, Order, VoxelType};
///
/// // 2 channels of u16 on a 3×1×1 box, Fortran order: channel fastest.
/// let mut a = Array::from_vec(2, [3, 1, 1], Order::Fortran, vec![1u16, 10, 2, 20, 3, 30])?;
/// assert_eq!(a.voxel_type(), VoxelType::U16);
/// assert_eq!(a.as_slice::<u16>()?[a.offset_of(1, [2, 0, 0]).unwrap() / 2], 30);
/// a.as_slice_mut::<u16>()?[0] = 7;
/// assert_eq!(&a.as_bytes()[..2], &7u16.to_le_bytes());
/// // Asking for another type is an error, not a reinterpretation.
/// assert!(a.as_slice::<i16>().is_err());
/// # Ok::<(), wkw::Error>(())
/// ```
#[derive(Debug)]
pub struct Array {
    layout: Layout,
    data: Buf,
}

impl Clone for Array {
    fn clone(&self) -> Self {
        Self {
            layout: self.layout,
            data: self.data.clone_aligned(self.layout.align()),
        }
    }
}

impl PartialEq for Array {
    fn eq(&self, other: &Self) -> bool {
        self.layout == other.layout && self.as_bytes() == other.as_bytes()
    }
}

impl Eq for Array {}

impl Array {
    /// An all-zero array.
    ///
    /// # Errors
    /// [`Error::ArrayMismatch`] if the size overflows `usize` or `num_channels` is invalid.
    pub fn zeros(
        voxel_type: VoxelType,
        num_channels: u8,
        shape: [u32; 3],
        order: Order,
    ) -> Result<Self> {
        let layout = Layout::new(voxel_type, num_channels, shape, order)?;
        let len = layout
            .byte_len()
            .ok_or_else(|| Error::ArrayMismatch(format!("shape {shape:?} overflows usize")))?;
        Ok(Self {
            data: Buf::zeroed(len, layout.align()),
            layout,
        })
    }

    /// Wraps little-endian voxel bytes laid out in `order` (without copying them, unless they
    /// are not aligned for the voxel type).
    ///
    /// # Errors
    /// [`Error::ArrayMismatch`] if `data.len()` differs from the shape's byte length.
    pub fn from_bytes(
        voxel_type: VoxelType,
        num_channels: u8,
        shape: [u32; 3],
        order: Order,
        data: Vec<u8>,
    ) -> Result<Self> {
        let layout = Layout::new(voxel_type, num_channels, shape, order)?;
        layout.check_len(data.len())?;
        Ok(Self::from_parts(layout, data))
    }

    /// Wraps voxel values laid out in `order` (without copying them); the voxel type is `T`'s.
    ///
    /// # Errors
    /// [`Error::ArrayMismatch`] if `data.len()` differs from the number of values of the shape
    /// (`num_channels` × x × y × z); [`Error::Unsupported`] on big-endian targets.
    pub fn from_vec<T: Voxel>(
        num_channels: u8,
        shape: [u32; 3],
        order: Order,
        data: Vec<T>,
    ) -> Result<Self> {
        voxel::check::<T>(T::VOXEL_TYPE)?;
        let layout = Layout::new(T::VOXEL_TYPE, num_channels, shape, order)?;
        layout.check_len(std::mem::size_of_val(data.as_slice()))?;
        Ok(Self {
            layout,
            data: Buf::from_vec(data),
        })
    }

    pub(crate) fn from_parts(layout: Layout, data: Vec<u8>) -> Self {
        Self {
            data: Buf::from_bytes(data, layout.align()),
            layout,
        }
    }

    accessors!();

    /// The voxel bytes.
    #[must_use]
    pub fn as_bytes(&self) -> &[u8] {
        self.data.bytes()
    }
    /// The voxel bytes, mutable.
    #[must_use]
    pub fn as_bytes_mut(&mut self) -> &mut [u8] {
        self.data.bytes_mut()
    }
    /// The voxel bytes, consuming the array (without copying unless the array was made from a
    /// `Vec<T>` of a wider type, or its bytes had to be aligned).
    #[must_use]
    pub fn into_bytes(self) -> Vec<u8> {
        self.data.into_bytes()
    }
    /// The voxel values as `T` (native byte order, see [`Voxel`]), in the array's order: value
    /// (c, x, y, z) is at [`Array::offset_of`] / `size_of::<T>()`. Never copies.
    ///
    /// # Errors
    /// [`Error::ArrayMismatch`] if `T` is not the array's voxel type; [`Error::Unsupported`] on
    /// big-endian targets.
    pub fn as_slice<T: Voxel>(&self) -> Result<&[T]> {
        voxel::check::<T>(self.layout.voxel_type)?;
        voxel::cast(self.data.bytes()).map_err(|e| Error::internal(format!("aligned array: {e}")))
    }
    /// [`Array::as_slice`], mutable.
    ///
    /// # Errors
    /// As [`Array::as_slice`].
    pub fn as_slice_mut<T: Voxel>(&mut self) -> Result<&mut [T]> {
        voxel::check::<T>(self.layout.voxel_type)?;
        voxel::cast_mut(self.data.bytes_mut())
            .map_err(|e| Error::internal(format!("aligned array: {e}")))
    }
    /// The voxel values as a `Vec<T>`, consuming the array (without copying if it was made by
    /// [`Array::from_vec`] with `T`, or `T` is one byte).
    ///
    /// # Errors
    /// As [`Array::as_slice`] (the array is dropped).
    pub fn into_vec<T: Voxel>(self) -> Result<Vec<T>> {
        voxel::check::<T>(self.layout.voxel_type)?;
        self.data.into_vec()
    }
    /// A borrowed view.
    #[must_use]
    pub fn view(&self) -> ArrayView<'_> {
        ArrayView {
            layout: self.layout,
            data: self.data.bytes(),
        }
    }
    /// A mutable borrowed view.
    #[must_use]
    pub fn view_mut(&mut self) -> ArrayViewMut<'_> {
        ArrayViewMut {
            layout: self.layout,
            data: self.data.bytes_mut(),
        }
    }
    /// The same array in another layout (a copy).
    #[must_use]
    pub fn to_order(&self, order: Order) -> Self {
        let mut layout = self.layout;
        layout.order = order;
        let src = self.data.bytes();
        let mut data = Buf::zeroed(src.len(), layout.align());
        let [nx, ny, nz] = self.layout.shape.map(|v| v as usize);
        crate::kernels::copy::copy_4d(
            data.bytes_mut(),
            0,
            layout.strides(),
            src,
            0,
            self.layout.strides(),
            [usize::from(self.layout.num_channels), nx, ny, nz],
            usize::from(self.layout.voxel_type.size()),
        );
        Self { layout, data }
    }
}

/// A borrowed (C, X, Y, Z) array, e.g. the input of [`crate::Dataset::write`].
#[derive(Debug, Clone, Copy)]
pub struct ArrayView<'a> {
    pub(crate) layout: Layout,
    pub(crate) data: &'a [u8],
}

impl<'a> ArrayView<'a> {
    /// Views little-endian voxel bytes laid out in `order`.
    ///
    /// # Errors
    /// [`Error::ArrayMismatch`] if `data.len()` differs from the shape's byte length.
    pub fn new(
        voxel_type: VoxelType,
        num_channels: u8,
        shape: [u32; 3],
        order: Order,
        data: &'a [u8],
    ) -> Result<Self> {
        let layout = Layout::new(voxel_type, num_channels, shape, order)?;
        layout.check_len(data.len())?;
        Ok(Self { layout, data })
    }

    /// Views voxel values laid out in `order`; the voxel type is `T`'s.
    ///
    /// # Errors
    /// [`Error::ArrayMismatch`] if `data.len()` differs from the number of values of the shape;
    /// [`Error::Unsupported`] on big-endian targets.
    pub fn from_slice<T: Voxel>(
        num_channels: u8,
        shape: [u32; 3],
        order: Order,
        data: &'a [T],
    ) -> Result<Self> {
        voxel::check::<T>(T::VOXEL_TYPE)?;
        Self::new(
            T::VOXEL_TYPE,
            num_channels,
            shape,
            order,
            bytemuck::cast_slice(data),
        )
    }

    accessors!();

    /// The voxel bytes.
    #[must_use]
    pub fn as_bytes(&self) -> &'a [u8] {
        self.data
    }

    /// The voxel values as `T` (see [`Array::as_slice`]). Never copies.
    ///
    /// # Errors
    /// As [`Array::as_slice`], and [`Error::ArrayMismatch`] if the bytes the view was made from
    /// ([`ArrayView::new`]) are not aligned for `T` (views of an [`Array`] or made by
    /// [`ArrayView::from_slice`] always are).
    pub fn as_slice<T: Voxel>(&self) -> Result<&'a [T]> {
        voxel::check::<T>(self.layout.voxel_type)?;
        voxel::cast(self.data)
    }
}

/// A mutable borrowed (C, X, Y, Z) array, the destination of [`crate::Dataset::read_into`].
#[derive(Debug)]
pub struct ArrayViewMut<'a> {
    pub(crate) layout: Layout,
    pub(crate) data: &'a mut [u8],
}

impl<'a> ArrayViewMut<'a> {
    /// Views a mutable buffer of little-endian voxel bytes laid out in `order`.
    ///
    /// # Errors
    /// [`Error::ArrayMismatch`] if `data.len()` differs from the shape's byte length.
    pub fn new(
        voxel_type: VoxelType,
        num_channels: u8,
        shape: [u32; 3],
        order: Order,
        data: &'a mut [u8],
    ) -> Result<Self> {
        let layout = Layout::new(voxel_type, num_channels, shape, order)?;
        layout.check_len(data.len())?;
        Ok(Self { layout, data })
    }

    /// Views a mutable buffer of voxel values laid out in `order`, e.g. to
    /// [`crate::Dataset::read_into`] a `Vec<T>`; the voxel type is `T`'s.
    ///
    /// # Errors
    /// As [`ArrayView::from_slice`].
    pub fn from_slice_mut<T: Voxel>(
        num_channels: u8,
        shape: [u32; 3],
        order: Order,
        data: &'a mut [T],
    ) -> Result<Self> {
        voxel::check::<T>(T::VOXEL_TYPE)?;
        Self::new(
            T::VOXEL_TYPE,
            num_channels,
            shape,
            order,
            bytemuck::cast_slice_mut(data),
        )
    }

    accessors!();

    /// The voxel bytes.
    #[must_use]
    pub fn as_bytes(&self) -> &[u8] {
        self.data
    }

    /// The voxel values as `T` (see [`ArrayView::as_slice`]).
    ///
    /// # Errors
    /// As [`ArrayView::as_slice`].
    pub fn as_slice<T: Voxel>(&self) -> Result<&[T]> {
        voxel::check::<T>(self.layout.voxel_type)?;
        voxel::cast(self.data)
    }

    /// The voxel values as `T`, mutable (see [`ArrayView::as_slice`]).
    ///
    /// # Errors
    /// As [`ArrayView::as_slice`].
    pub fn as_slice_mut<T: Voxel>(&mut self) -> Result<&mut [T]> {
        voxel::check::<T>(self.layout.voxel_type)?;
        voxel::cast_mut(self.data)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "a failed unwrap is a failed test")]

    use super::*;

    /// 16 bytes at an 8-aligned address.
    fn aligned() -> [u64; 2] {
        [
            u64::from_le_bytes(*b"\x01\x02\x03\x04\x05\x06\x07\x08"),
            0x0a0b_0c0d_0e0f_1011,
        ]
    }

    #[test]
    fn misaligned_bytes_are_copied_into_aligned_storage() {
        let words = aligned();
        let bytes: &[u8] = bytemuck::cast_slice(&words);
        let odd = &bytes[1..9];
        assert!(!odd.as_ptr().addr().is_multiple_of(8));
        for align in [1, 2, 4, 8] {
            let buf = Buf::copied(odd, align);
            assert_eq!(buf.bytes(), odd, "align {align}");
            assert!(
                buf.bytes().as_ptr().addr().is_multiple_of(align),
                "align {align}"
            );
        }
    }

    #[test]
    fn views_of_misaligned_bytes_refuse_typed_access() {
        let words = aligned();
        let bytes: &[u8] = bytemuck::cast_slice(&words);
        let v = ArrayView::new(VoxelType::U32, 1, [2, 1, 1], Order::C, &bytes[1..9]).unwrap();
        assert!(matches!(v.as_slice::<u32>(), Err(Error::ArrayMismatch(_))));
        // The bytes are still there, and an aligned copy is typed.
        let a = Array::from_bytes(
            VoxelType::U32,
            1,
            [2, 1, 1],
            Order::C,
            v.as_bytes().to_vec(),
        )
        .unwrap();
        let expected: Vec<u32> = bytes[1..9]
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
            .collect();
        assert_eq!(a.as_slice::<u32>().unwrap(), expected);
    }

    #[test]
    fn from_vec_and_into_vec_do_not_copy() {
        let v: Vec<f64> = (0..24).map(f64::from).collect();
        let ptr = v.as_ptr();
        let a = Array::from_vec(2, [3, 2, 2], Order::C, v).unwrap();
        assert_eq!(a.voxel_type(), VoxelType::F64);
        assert_eq!(a.as_slice::<f64>().unwrap().as_ptr(), ptr);
        let back = a.clone().into_vec::<f64>().unwrap();
        assert_eq!(back, (0..24).map(f64::from).collect::<Vec<_>>());
        let owned = a.into_vec::<f64>().unwrap();
        assert_eq!(owned.as_ptr(), ptr);
    }
}
