//! BMI2 `pdep`/`pext` implementation (x86-64 only), reached through [`Bmi2`].
//!
//! One `pdep` per axis encodes, one `pext` per axis decodes. On Intel since Haswell and on AMD
//! since Zen 3 these are single-cycle-throughput instructions; on AMD Zen 1/Zen 2 they are
//! microcoded (tens to hundreds of cycles), which is why the dispatcher in this crate does not
//! pick them there even though the CPU reports BMI2.

#![allow(
    unsafe_code,
    reason = "BMI2 pdep/pext intrinsics, reached only after runtime detection; see the SAFETY comments"
)]

use core::arch::x86_64::{_pdep_u32, _pdep_u64, _pext_u32, _pext_u64};

use crate::portable::unpack3;

const X3_64: u64 = 0x1249_2492_4924_9249;
const X3_32: u32 = 0x0924_9249;
const X2_64: u64 = 0x5555_5555_5555_5555;

/// Proof that the running CPU supports BMI2; its methods are the BMI2 paths.
///
/// Obtained with [`Bmi2::detect`]. It says nothing about speed: use
/// [`crate::implementation`] to see what the dispatched API chose.
#[derive(Debug, Clone, Copy)]
pub struct Bmi2(());

impl Bmi2 {
    /// Returns the token if the CPU supports BMI2.
    #[must_use]
    pub fn detect() -> Option<Self> {
        std::is_x86_feature_detected!("bmi2").then_some(Self(()))
    }

    /// The token, for callers that already know BMI2 is supported (the dispatcher).
    #[inline(always)]
    pub(crate) const fn new_detected() -> Self {
        Self(())
    }

    /// 3-D u64 key, coordinates masked to 21 bits (same as [`crate::encode_3d_u64_wrapping`]).
    #[inline]
    #[must_use]
    pub fn encode_3d_u64(self, p: [u32; 3]) -> u64 {
        // SAFETY: `self` exists only if BMI2 was detected on this CPU.
        unsafe { enc3_64(p[0], p[1], p[2]) }
    }

    /// Coordinates of a 3-D u64 key, bit 63 ignored.
    #[inline]
    #[must_use]
    pub fn decode_3d_u64(self, key: u64) -> [u32; 3] {
        // SAFETY: `self` exists only if BMI2 was detected on this CPU.
        unpack3(widen(unsafe { dec3_64(key) }))
    }

    /// [`Self::decode_3d_u64`] packed as by `portable::pack3`, for the dispatcher.
    #[inline(always)]
    pub(crate) fn decode_3d_u64_packed(self, key: u64) -> u128 {
        // SAFETY: `self` exists only if BMI2 was detected on this CPU.
        widen(unsafe { dec3_64(key) })
    }

    /// 3-D u32 key, coordinates masked to 10 bits.
    #[inline]
    #[must_use]
    pub fn encode_3d_u32(self, p: [u32; 3]) -> u32 {
        // SAFETY: `self` exists only if BMI2 was detected on this CPU.
        unsafe { enc3_32(p[0], p[1], p[2]) }
    }

    /// Coordinates of a 3-D u32 key, bits 30–31 ignored.
    #[inline]
    #[must_use]
    pub fn decode_3d_u32(self, key: u32) -> [u32; 3] {
        // SAFETY: `self` exists only if BMI2 was detected on this CPU.
        unpack3(widen(unsafe { dec3_32(key) }))
    }

    /// [`Self::decode_3d_u32`] packed as by `portable::pack3`, for the dispatcher.
    #[inline(always)]
    pub(crate) fn decode_3d_u32_packed(self, key: u32) -> u128 {
        // SAFETY: `self` exists only if BMI2 was detected on this CPU.
        widen(unsafe { dec3_32(key) })
    }

    /// 2-D u64 key.
    #[inline]
    #[must_use]
    pub fn encode_2d_u64(self, p: [u32; 2]) -> u64 {
        // SAFETY: `self` exists only if BMI2 was detected on this CPU.
        unsafe { enc2_64(p[0], p[1]) }
    }

    /// Coordinates of a 2-D u64 key.
    #[inline]
    #[must_use]
    pub fn decode_2d_u64(self, key: u64) -> [u32; 2] {
        // SAFETY: `self` exists only if BMI2 was detected on this CPU.
        let xy = unsafe { dec2_64(key) };
        #[allow(clippy::cast_possible_truncation)] // splitting a packed pair of u32 values
        [xy as u32, (xy >> 32) as u32]
    }

    /// Batch 3-D u64 encode with coordinates masked to 21 bits; returns the OR of all
    /// coordinates so the caller can check the range after the fact.
    pub(crate) fn encode_3d_u64_slice(self, points: &[[u32; 3]], out: &mut [u64]) -> u32 {
        // SAFETY: `self` exists only if BMI2 was detected on this CPU.
        unsafe { enc3_64_slice(points, out) }
    }

    /// Batch 3-D u64 decode; returns the OR of all keys.
    pub(crate) fn decode_3d_u64_slice(self, keys: &[u64], out: &mut [[u32; 3]]) -> u64 {
        // SAFETY: `self` exists only if BMI2 was detected on this CPU.
        unsafe { dec3_64_slice(keys, out) }
    }
}

/// `(x | y << 32, z)` as `x | y << 32 | z << 64`.
#[inline(always)]
fn widen((xy, z): (u64, u32)) -> u128 {
    u128::from(xy) | u128::from(z) << 64
}

// The non-inlinable `#[target_feature]` functions take scalars and return scalars or a
// (u64, u32) pair, which travel in registers: returning `[u32; 3]` goes through memory, and
// the caller's wide reload of three narrow stores stalls store forwarding (measured: 9 ns
// instead of 2 ns per decode on Zen 3).

#[target_feature(enable = "bmi2")]
fn enc3_64(x: u32, y: u32, z: u32) -> u64 {
    _pdep_u64(u64::from(x), X3_64)
        | _pdep_u64(u64::from(y), X3_64 << 1)
        | _pdep_u64(u64::from(z), X3_64 << 2)
}

/// `(x | y << 32, z)`.
#[target_feature(enable = "bmi2")]
fn dec3_64(key: u64) -> (u64, u32) {
    let xy = _pext_u64(key, X3_64) | (_pext_u64(key, X3_64 << 1) << 32);
    #[allow(clippy::cast_possible_truncation)] // pext into a 21-bit mask yields at most 21 bits
    let z = _pext_u64(key, X3_64 << 2) as u32;
    (xy, z)
}

#[target_feature(enable = "bmi2")]
fn enc3_32(x: u32, y: u32, z: u32) -> u32 {
    _pdep_u32(x, X3_32) | _pdep_u32(y, X3_32 << 1) | _pdep_u32(z, X3_32 << 2)
}

/// `(x | y << 32, z)`.
#[target_feature(enable = "bmi2")]
fn dec3_32(key: u32) -> (u64, u32) {
    let xy = u64::from(_pext_u32(key, X3_32)) | (u64::from(_pext_u32(key, X3_32 << 1)) << 32);
    (xy, _pext_u32(key, X3_32 << 2))
}

#[target_feature(enable = "bmi2")]
fn enc2_64(x: u32, y: u32) -> u64 {
    _pdep_u64(u64::from(x), X2_64) | _pdep_u64(u64::from(y), X2_64 << 1)
}

/// `x | y << 32`.
#[target_feature(enable = "bmi2")]
fn dec2_64(key: u64) -> u64 {
    _pext_u64(key, X2_64) | (_pext_u64(key, X2_64 << 1) << 32)
}

/// Points per block of [`enc3_64_slice`]: small enough to stay in L1 between the two passes.
const ENC_BLOCK: usize = 64;

#[target_feature(enable = "bmi2")]
fn enc3_64_slice(points: &[[u32; 3]], out: &mut [u64]) -> u32 {
    // Per block: OR all coordinates as one flat slice (vectorised), then encode from L1. An
    // OR per point inside the pdep loop measured 20-25 % slower than the plain pdep loop.
    let mut seen = 0;
    for (ps, os) in points.chunks(ENC_BLOCK).zip(out.chunks_mut(ENC_BLOCK)) {
        seen |= ps.as_flattened().iter().fold(0, |s, &v| s | v);
        for (p, o) in ps.iter().zip(os.iter_mut()) {
            *o = enc3_64(p[0], p[1], p[2]);
        }
    }
    seen
}

#[target_feature(enable = "bmi2")]
fn dec3_64_slice(keys: &[u64], out: &mut [[u32; 3]]) -> u64 {
    let mut seen = 0;
    for (k, o) in keys.iter().zip(out.iter_mut()) {
        seen |= *k;
        *o = unpack3(widen(dec3_64(*k)));
    }
    seen
}
