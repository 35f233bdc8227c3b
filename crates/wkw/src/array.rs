//! In-memory voxel arrays of shape (C, X, Y, Z) in Fortran or C layout.

use crate::error::{Error, Result};
use crate::header::VoxelType;

/// Memory layout of a (C, X, Y, Z) array.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
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

/// An owned (C, X, Y, Z) array: little-endian voxel bytes plus shape, type and layout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Array {
    layout: Layout,
    data: Vec<u8>,
}

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
            layout,
            data: vec![0; len],
        })
    }

    /// Wraps little-endian voxel bytes laid out in `order`.
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
        Ok(Self { layout, data })
    }

    pub(crate) fn from_parts(layout: Layout, data: Vec<u8>) -> Self {
        Self { layout, data }
    }

    accessors!();

    /// The voxel bytes.
    #[must_use]
    pub fn as_bytes(&self) -> &[u8] {
        &self.data
    }
    /// The voxel bytes, mutable.
    #[must_use]
    pub fn as_bytes_mut(&mut self) -> &mut [u8] {
        &mut self.data
    }
    /// The voxel bytes, consuming the array.
    #[must_use]
    pub fn into_bytes(self) -> Vec<u8> {
        self.data
    }
    /// A borrowed view.
    #[must_use]
    pub fn view(&self) -> ArrayView<'_> {
        ArrayView {
            layout: self.layout,
            data: &self.data,
        }
    }
    /// A mutable borrowed view.
    #[must_use]
    pub fn view_mut(&mut self) -> ArrayViewMut<'_> {
        ArrayViewMut {
            layout: self.layout,
            data: &mut self.data,
        }
    }
    /// The same array in another layout (a copy).
    #[must_use]
    pub fn to_order(&self, order: Order) -> Self {
        let mut layout = self.layout;
        layout.order = order;
        let mut data = vec![0u8; self.data.len()];
        let [nx, ny, nz] = self.layout.shape.map(|v| v as usize);
        crate::copy::copy_4d(
            &mut data,
            0,
            layout.strides(),
            &self.data,
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

    accessors!();

    /// The voxel bytes.
    #[must_use]
    pub fn as_bytes(&self) -> &'a [u8] {
        self.data
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

    accessors!();

    /// The voxel bytes.
    #[must_use]
    pub fn as_bytes(&self) -> &[u8] {
        self.data
    }
}
