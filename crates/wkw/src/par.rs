//! Parallel iteration over independent tasks ([`Workers`]): rayon with the `parallel` feature
//! and [`Threads::Rayon`], scoped threads of one call for work done under a file lock, a plain
//! loop on the calling thread otherwise.

use crate::error::Result;
use crate::options::Threads;

/// Where a batch of tasks runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Workers {
    /// The calling thread only.
    Caller,
    /// Rayon's current pool.
    Rayon,
    /// The calling thread plus up to `n - 1` scoped threads started for this batch, which run
    /// nothing else. For work done while holding a writer's file lock: a thread that holds a
    /// lock must never wait for rayon work, because a rayon worker waiting in a join runs
    /// other queued jobs, and one of them may be another write blocking on the same lock
    /// further up that worker's own stack (a deadlock seen with concurrent writers sharing a
    /// pool). Scoped threads are joined by a plain blocking wait.
    #[cfg_attr(
        not(any(feature = "parallel", test)),
        expect(
            dead_code,
            reason = "without `parallel` locked work runs on the caller"
        )
    )]
    Scoped(usize),
}

impl Workers {
    /// The workers for `threads` outside any lock.
    pub(crate) fn of(threads: Threads) -> Self {
        match threads {
            Threads::Caller => Self::Caller,
            _ => Self::Rayon,
        }
    }

    /// The workers for `threads` while holding a file lock: as many scoped threads as the
    /// current rayon pool has, or the calling thread only.
    pub(crate) fn locked(threads: Threads) -> Self {
        match Self::of(threads) {
            #[cfg(feature = "parallel")]
            Self::Rayon => Self::Scoped(rayon::current_num_threads()),
            _ => Self::Caller,
        }
    }
}

impl From<Threads> for Workers {
    fn from(threads: Threads) -> Self {
        Self::of(threads)
    }
}

/// Runs `f` over `items` on `n` threads of one `std::thread::scope` (the calling thread
/// among them): each takes the next item from a shared queue, with its own state from
/// `init`; stops taking items after the first error. Results in item order.
fn scoped<T, R, S, I, F>(n: usize, items: Vec<T>, init: I, f: F) -> Result<Vec<R>>
where
    T: Send,
    R: Send,
    I: Fn() -> S + Sync,
    F: Fn(&mut S, T) -> Result<R> + Sync,
{
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{Mutex, PoisonError};
    let len = items.len();
    let threads = n.clamp(1, len.max(1));
    let queue = Mutex::new(items.into_iter().enumerate());
    let failed = AtomicBool::new(false);
    let run = || -> Result<Vec<(usize, R)>> {
        let mut state = init();
        let mut out = Vec::new();
        while !failed.load(Ordering::Relaxed) {
            let next = queue.lock().unwrap_or_else(PoisonError::into_inner).next();
            let Some((i, item)) = next else { break };
            match f(&mut state, item) {
                Ok(r) => out.push((i, r)),
                Err(e) => {
                    failed.store(true, Ordering::Relaxed);
                    return Err(e);
                }
            }
        }
        Ok(out)
    };
    let parts: Vec<Result<Vec<(usize, R)>>> = std::thread::scope(|s| {
        // A thread that cannot be started leaves its share to the others.
        let handles: Vec<_> = (1..threads)
            .filter_map(|_| std::thread::Builder::new().spawn_scoped(s, run).ok())
            .collect();
        let mut parts = vec![run()];
        for h in handles {
            parts.push(h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)));
        }
        parts
    });
    let mut pairs = Vec::with_capacity(len);
    for p in parts {
        pairs.extend(p?);
    }
    pairs.sort_unstable_by_key(|p| p.0);
    Ok(pairs.into_iter().map(|p| p.1).collect())
}

/// Runs `f` on every item, stopping at the first error.
pub(crate) fn try_for_each<T, F>(workers: impl Into<Workers>, items: Vec<T>, f: F) -> Result<()>
where
    T: Send,
    F: Fn(T) -> Result<()> + Sync + Send,
{
    match workers.into() {
        #[cfg(feature = "parallel")]
        Workers::Rayon => {
            use rayon::prelude::*;
            items.into_par_iter().try_for_each(f)
        }
        Workers::Scoped(n) if n > 1 => scoped(n, items, || (), |(), item| f(item)).map(drop),
        _ => items.into_iter().try_for_each(f),
    }
}

/// Maps every item, keeping order, stopping at the first error.
pub(crate) fn try_map<T, R, F>(workers: impl Into<Workers>, items: Vec<T>, f: F) -> Result<Vec<R>>
where
    T: Send,
    R: Send,
    F: Fn(T) -> Result<R> + Sync + Send,
{
    match workers.into() {
        #[cfg(feature = "parallel")]
        Workers::Rayon => {
            use rayon::prelude::*;
            items.into_par_iter().map(f).collect()
        }
        Workers::Scoped(n) if n > 1 => scoped(n, items, || (), |(), item| f(item)),
        _ => items.into_iter().map(f).collect(),
    }
}

/// Runs `f` on every item with a reusable scratch buffer of `len` zero-initialised bytes per
/// worker (contents carry over between items), stopping at the first error.
pub(crate) fn try_for_each_with_buf<T, F>(
    workers: impl Into<Workers>,
    items: Vec<T>,
    len: usize,
    f: F,
) -> Result<()>
where
    T: Send,
    F: Fn(T, &mut [u8]) -> Result<()> + Sync + Send,
{
    match workers.into() {
        #[cfg(feature = "parallel")]
        Workers::Rayon => {
            use rayon::prelude::*;
            items
                .into_par_iter()
                .try_for_each_init(|| vec![0u8; len], |buf, item| f(item, buf))
        }
        Workers::Scoped(n) if n > 1 => {
            scoped(n, items, || vec![0u8; len], |buf, item| f(item, buf)).map(drop)
        }
        _ => {
            let mut buf = vec![0u8; len];
            items.into_iter().try_for_each(|item| f(item, &mut buf))
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "a failed unwrap is a failed test")]

    use super::{Workers, try_for_each, try_for_each_with_buf, try_map};
    use crate::error::Error;

    #[test]
    fn scoped_workers_keep_order_share_buffers_per_thread_and_stop_at_errors() {
        for workers in [Workers::Caller, Workers::Scoped(1), Workers::Scoped(3)] {
            let squares = try_map(workers, (0..100u64).collect(), |i| Ok(i * i)).unwrap();
            assert_eq!(squares, (0..100u64).map(|i| i * i).collect::<Vec<_>>());
            try_for_each_with_buf(workers, (0..50u8).collect(), 16, |i, buf| {
                assert_eq!(buf.len(), 16);
                buf.fill(i);
                Ok(())
            })
            .unwrap();
            let seen = std::sync::atomic::AtomicUsize::new(0);
            let r = try_for_each(workers, (0..1000u32).collect(), |i| {
                seen.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                if i == 10 {
                    Err(Error::internal("stop"))
                } else {
                    Ok(())
                }
            });
            assert!(matches!(r, Err(Error::Internal { .. })));
            // Every thread stops taking items soon after the first error.
            assert!(seen.into_inner() < 1000);
        }
    }
}
