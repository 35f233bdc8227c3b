//! Run-time choice between the portable and the BMI2 implementation.

use std::sync::atomic::{AtomicU8, Ordering};

#[cfg(target_arch = "x86_64")]
use crate::bmi2::Bmi2;

/// Which implementation the dispatched functions use on this machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Implementation {
    /// Portable magic bits (any target; also x86-64 without fast BMI2).
    Portable,
    /// BMI2 `pdep`/`pext` (x86-64 with BMI2, excluding AMD before Zen 3).
    Bmi2,
}

const UNKNOWN: u8 = 0;
const PORTABLE: u8 = 1;
const BMI2: u8 = 2;

static CHOICE: AtomicU8 = AtomicU8::new(UNKNOWN);

/// The implementation the dispatched functions use.
///
/// Decided once per process: BMI2 when the CPU has it and it is fast there (Intel, AMD family
/// 0x19 / Zen 3 and later, other vendors), portable otherwise. The environment variable
/// `MORTON_CODE_IMPL=portable` forces the portable path (`bmi2` forces BMI2 where supported);
/// it is read once, at the first call.
#[must_use]
pub fn implementation() -> Implementation {
    match choice() {
        BMI2 => Implementation::Bmi2,
        _ => Implementation::Portable,
    }
}

#[inline(always)]
fn choice() -> u8 {
    match CHOICE.load(Ordering::Relaxed) {
        UNKNOWN => init(),
        c => c,
    }
}

#[cold]
#[inline(never)]
fn init() -> u8 {
    let c = detect();
    CHOICE.store(c, Ordering::Relaxed);
    c
}

/// The BMI2 token if the dispatcher chose BMI2 (one relaxed atomic load after the first call).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub(crate) fn fast_bmi2() -> Option<Bmi2> {
    // CHOICE is BMI2 only after `detect` saw BMI2 support on this CPU.
    if choice() == BMI2 {
        Some(Bmi2::new_detected())
    } else {
        None
    }
}

#[cfg(target_arch = "x86_64")]
fn detect() -> u8 {
    let forced = std::env::var("MORTON_CODE_IMPL").ok();
    let has = Bmi2::detect().is_some();
    match forced.as_deref() {
        Some("portable") => PORTABLE,
        Some("bmi2") if has => BMI2,
        _ if has && !pdep_is_microcoded() => BMI2,
        _ => PORTABLE,
    }
}

#[cfg(not(target_arch = "x86_64"))]
fn detect() -> u8 {
    PORTABLE
}

/// AMD CPUs before family 0x19 (Zen 3) implement `pdep`/`pext` in microcode.
#[cfg(target_arch = "x86_64")]
fn pdep_is_microcoded() -> bool {
    use core::arch::x86_64::__cpuid;
    let vendor = __cpuid(0);
    let amd = vendor.ebx == u32::from_le_bytes(*b"Auth")
        && vendor.edx == u32::from_le_bytes(*b"enti")
        && vendor.ecx == u32::from_le_bytes(*b"cAMD");
    if !amd {
        return false;
    }
    let eax = __cpuid(1).eax;
    let base = (eax >> 8) & 0xf;
    let family = if base == 0xf {
        base + ((eax >> 20) & 0xff)
    } else {
        base
    };
    family < 0x19
}

/// Whether SIMD copies of the portable loops may be used (not when `MORTON_CODE_IMPL` forces
/// one scalar implementation, so benchmarks and tests can pin a path).
#[cfg(target_arch = "x86_64")]
pub(crate) fn implementation_allows_simd() -> bool {
    static FORCED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    !*FORCED.get_or_init(|| std::env::var_os("MORTON_CODE_IMPL").is_some())
}
