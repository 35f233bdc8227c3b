//! Typed items of b2nd arrays: the numeric NumPy dtypes (`dtype.str` such as `<u2`, `>f8`,
//! `|u1`) and the Rust types that hold them.
//!
//! A dtype string is a byte order (`<` little-endian, `>` big-endian, `|` not applicable for
//! one-byte items, `=` native), a kind (`u` unsigned, `i` signed integer, `f` IEEE float) and
//! the item size in bytes. Other kinds (bool, complex, strings, structured dtypes) have no
//! [`Element`] type; their bytes remain available through the byte-level reads.

use crate::error::{Error, Result};

mod sealed {
    pub trait Sealed {}
}

/// A Rust type that holds one item of a numeric b2nd dtype: `u8`, `i8`, `u16`, `i16`, `u32`,
/// `i32`, `u64`, `i64`, `f32`, `f64`.
///
/// The trait is sealed: its byte layout and dtype mapping are this crate's guarantee.
pub trait Element:
    sealed::Sealed + bytemuck::Pod + Default + PartialEq + std::fmt::Debug + Send + Sync + 'static
{
    /// The NumPy kind character: `u`, `i` or `f`.
    const KIND: char;
    /// The NumPy dtype string this crate writes for the type: little-endian (`<u2`, `<f8`),
    /// or `|u1` / `|i1` for one-byte items.
    const DTYPE: &'static str;
    /// The value with its bytes in reverse order.
    #[must_use]
    fn swap_bytes(self) -> Self;
}

macro_rules! element {
    ($($t:ty => $kind:literal, $dtype:literal, |$x:ident| $swap:expr;)*) => {$(
        impl sealed::Sealed for $t {}
        impl Element for $t {
            const KIND: char = $kind;
            const DTYPE: &'static str = $dtype;
            fn swap_bytes(self) -> Self {
                let $x = self;
                $swap
            }
        }
    )*};
}

element! {
    u8 => 'u', "|u1", |x| x;
    i8 => 'i', "|i1", |x| x;
    u16 => 'u', "<u2", |x| x.swap_bytes();
    i16 => 'i', "<i2", |x| x.swap_bytes();
    u32 => 'u', "<u4", |x| x.swap_bytes();
    i32 => 'i', "<i4", |x| x.swap_bytes();
    u64 => 'u', "<u8", |x| x.swap_bytes();
    i64 => 'i', "<i8", |x| x.swap_bytes();
    f32 => 'f', "<f4", |x| f32::from_bits(x.to_bits().swap_bytes());
    f64 => 'f', "<f8", |x| f64::from_bits(x.to_bits().swap_bytes());
}

/// Checks that items of `dtype` (stored with `itemsize` bytes each) are `T`s; returns whether
/// their byte order is the opposite of this machine's (so each item must be byte-swapped).
pub(crate) fn check_dtype<T: Element>(dtype: &str, itemsize: usize) -> Result<bool> {
    let size = size_of::<T>();
    let mismatch = || Error::DtypeMismatch {
        dtype: dtype.to_string(),
        requested: std::any::type_name::<T>(),
    };
    let mut chars = dtype.chars();
    let (Some(order), Some(kind)) = (chars.next(), chars.next()) else {
        return Err(mismatch());
    };
    let digits = chars.as_str();
    // NumPy writes the size in plain decimal (`<u2`, never `<u02` or `<u+2`).
    if kind != T::KIND || digits != size.to_string() || itemsize != size {
        return Err(mismatch());
    }
    let little = match order {
        '<' => true,
        '>' => false,
        '=' => cfg!(target_endian = "little"),
        '|' if size == 1 => cfg!(target_endian = "little"),
        _ => return Err(mismatch()),
    };
    Ok(size > 1 && little != cfg!(target_endian = "little"))
}

/// Puts items stored in `dtype`'s byte order into this machine's (see [`check_dtype`]).
pub(crate) fn to_native<T: Element>(items: &mut [T], swap: bool) {
    if swap {
        for x in items {
            *x = x.swap_bytes();
        }
    }
}

/// Items (in the order given) as the little-endian bytes of [`Element::DTYPE`].
pub(crate) fn to_le_bytes<T: Element>(items: impl ExactSizeIterator<Item = T>) -> Vec<u8> {
    let swap = cfg!(target_endian = "big");
    let mut out = Vec::with_capacity(items.len().saturating_mul(size_of::<T>()));
    for x in items {
        let x = if swap { x.swap_bytes() } else { x };
        out.extend_from_slice(bytemuck::bytes_of(&x));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dtype_strings_map_to_types() {
        assert_eq!(
            check_dtype::<u16>("<u2", 2).unwrap(),
            cfg!(target_endian = "big")
        );
        assert_eq!(
            check_dtype::<f64>(">f8", 8).unwrap(),
            cfg!(target_endian = "little")
        );
        assert!(!check_dtype::<u8>("|u1", 1).unwrap());
        assert!(!check_dtype::<i8>("|i1", 1).unwrap());
        for (dtype, size) in [
            ("<u2", 4),
            ("<i2", 2),
            ("<u4", 2),
            ("<c8", 8),
            ("|u2", 2),
            ("<u02", 2),
            ("", 2),
            ("<u+2", 2),
        ] {
            assert!(
                check_dtype::<u16>(dtype, size).is_err(),
                "{dtype} as u16 ({size} bytes)"
            );
        }
    }
}
