//! [`Voxel`]: the Rust types of the ten voxel types, for typed access to arrays.
//!
//! Voxel values are stored little-endian in the files and in [`crate::Array`] buffers. Typed
//! access hands out the buffer as `&[T]` without copying, so the values are read in the
//! target's native byte order: that is right on little-endian targets (x86, ARM, RISC-V …).
//! On big-endian targets every typed access is refused with [`Error::Unsupported`] instead of
//! returning byte-swapped values; use the byte API and `T::from_le_bytes` there.

use crate::error::{Error, Result};
use crate::format::header::VoxelType;

mod sealed {
    pub trait Sealed {}
}

/// A Rust type that holds one value of a [`VoxelType`]: `u8`, `u16`, `u32`, `u64`, `i8`,
/// `i16`, `i32`, `i64`, `f32`, `f64`. Sealed: implemented for exactly these.
pub trait Voxel:
    sealed::Sealed + bytemuck::Pod + Default + PartialEq + std::fmt::Debug + Send + Sync + 'static
{
    /// The voxel type this Rust type represents.
    const VOXEL_TYPE: VoxelType;
}

macro_rules! voxel {
    ($($t:ty => $v:ident,)*) => {$(
        impl sealed::Sealed for $t {}
        impl Voxel for $t {
            const VOXEL_TYPE: VoxelType = VoxelType::$v;
        }
    )*};
}

voxel! {
    u8 => U8,
    u16 => U16,
    u32 => U32,
    u64 => U64,
    f32 => F32,
    f64 => F64,
    i8 => I8,
    i16 => I16,
    i32 => I32,
    i64 => I64,
}

/// Runs `$body` with the type name `$t` bound to the [`Voxel`] type of the [`VoxelType`]
/// `$vt`, for code that is generic over the voxel type but gets it at run time; the last arm
/// (`other => …`) takes voxel types this version does not know (the enum is
/// `#[non_exhaustive]`).
///
/// ```
/// use wkw::{Voxel, VoxelType, with_voxel_type};
/// fn size(vt: VoxelType) -> Option<usize> {
///     with_voxel_type!(vt, T => Some(std::mem::size_of::<T>()), _ => None)
/// }
/// assert_eq!(size(VoxelType::F32), Some(4));
/// assert_eq!(with_voxel_type!(VoxelType::I16, T => T::VOXEL_TYPE, _ => VoxelType::U8), VoxelType::I16);
/// ```
#[macro_export]
macro_rules! with_voxel_type {
    ($vt:expr, $t:ident => $body:expr, $other:pat => $fallback:expr) => {
        match $vt {
            $crate::VoxelType::U8 => {
                type $t = u8;
                $body
            }
            $crate::VoxelType::U16 => {
                type $t = u16;
                $body
            }
            $crate::VoxelType::U32 => {
                type $t = u32;
                $body
            }
            $crate::VoxelType::U64 => {
                type $t = u64;
                $body
            }
            $crate::VoxelType::F32 => {
                type $t = f32;
                $body
            }
            $crate::VoxelType::F64 => {
                type $t = f64;
                $body
            }
            $crate::VoxelType::I8 => {
                type $t = i8;
                $body
            }
            $crate::VoxelType::I16 => {
                type $t = i16;
                $body
            }
            $crate::VoxelType::I32 => {
                type $t = i32;
                $body
            }
            $crate::VoxelType::I64 => {
                type $t = i64;
                $body
            }
            #[allow(unreachable_patterns)]
            $other => $fallback,
        }
    };
}

/// Checks that `T` is the array's voxel type and that the target is little-endian.
pub(crate) fn check<T: Voxel>(voxel_type: VoxelType) -> Result<()> {
    if cfg!(target_endian = "big") {
        return Err(Error::Unsupported(
            "typed voxel access on a big-endian target (values are little-endian; use the byte API)",
        ));
    }
    if T::VOXEL_TYPE != voxel_type {
        return Err(Error::ArrayMismatch(format!(
            "the array holds {voxel_type:?} values, not {:?} ({})",
            T::VOXEL_TYPE,
            std::any::type_name::<T>()
        )));
    }
    Ok(())
}

/// `bytes` as values of `T` (the caller checked the type); an error if `bytes` is not aligned
/// for `T` or not a whole number of values.
pub(crate) fn cast<T: Voxel>(bytes: &[u8]) -> Result<&[T]> {
    bytemuck::try_cast_slice(bytes).map_err(|e| misaligned::<T>(bytes.as_ptr(), bytes.len(), e))
}

/// [`cast`], mutable.
pub(crate) fn cast_mut<T: Voxel>(bytes: &mut [u8]) -> Result<&mut [T]> {
    let (ptr, len) = (bytes.as_ptr(), bytes.len());
    bytemuck::try_cast_slice_mut(bytes).map_err(|e| misaligned::<T>(ptr, len, e))
}

fn misaligned<T>(ptr: *const u8, len: usize, e: bytemuck::PodCastError) -> Error {
    Error::ArrayMismatch(format!(
        "{len} bytes at address {:#x} cannot be viewed as {} values ({e:?})",
        ptr.addr(),
        std::any::type_name::<T>()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_voxel_type_has_one_rust_type_of_its_size() {
        fn size<T: Voxel>() -> (VoxelType, usize) {
            (T::VOXEL_TYPE, std::mem::size_of::<T>())
        }
        let all = [
            size::<u8>(),
            size::<u16>(),
            size::<u32>(),
            size::<u64>(),
            size::<f32>(),
            size::<f64>(),
            size::<i8>(),
            size::<i16>(),
            size::<i32>(),
            size::<i64>(),
        ];
        for (t, (vt, bytes)) in VoxelType::ALL.iter().zip(all) {
            assert_eq!(*t, vt);
            assert_eq!(usize::from(vt.size()), bytes, "{vt:?}");
        }
    }
}
