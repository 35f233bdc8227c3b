//! Waits between attempts.

use std::hash::{BuildHasher, Hasher};
use std::time::Duration;

/// How long a writer waits before redoing a read-modify-write it lost (attempt 1, 2, …):
/// doubling from 1 ms up to 64 ms, times a random factor in [0.5, 1.5) so that writers that
/// collided do not collide again in lock step.
///
/// ```
/// let d = scifmt_io::conflict_backoff(1);
/// assert!(d.as_micros() >= 500 && d.as_micros() < 1500);
/// ```
#[must_use]
pub fn conflict_backoff(attempt: u32) -> Duration {
    let base_us = 1000u64 << attempt.saturating_sub(1).min(6);
    // A fresh `RandomState` is randomly keyed: its hash of nothing is a random number.
    let r = std::collections::hash_map::RandomState::new()
        .build_hasher()
        .finish();
    let factor_per_mille = 500 + r % 1000;
    Duration::from_micros(base_us * factor_per_mille / 1000)
}

#[cfg(test)]
mod tests {
    use super::conflict_backoff;

    #[test]
    fn backoff_doubles_up_to_64_ms_with_jitter() {
        for attempt in 0..20u32 {
            let base = 1000u128 << attempt.saturating_sub(1).min(6);
            let d = conflict_backoff(attempt).as_micros();
            assert!(d >= base / 2 && d < base * 3 / 2, "{attempt}: {d}");
        }
        // Randomized: 32 draws are not all equal.
        let first = conflict_backoff(7);
        assert!((0..32).any(|_| conflict_backoff(7) != first));
    }
}
