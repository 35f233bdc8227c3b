//! Parallel iteration over independent tasks ([`Workers`]): rayon with the `parallel` feature
//! and [`Threads::Rayon`] or [`Threads::Pool`], scoped threads of one call for work done under
//! a file lock, a plain loop on the calling thread otherwise.
//!
//! A rayon batch started on a thread outside the pool (an application's main thread, a
//! Python thread) is not handed to the pool whole: the calling thread takes items from a
//! shared queue at once and the pool's threads join in as they wake up
//! ([`shared_queue`] with rayon helpers). Handing the batch over (`install`, or a parallel
//! iterator from outside the pool) makes the caller wait for a parked pool thread to wake and
//! later be woken itself, about 70 µs each on a busy 2-core machine: a large share of a read
//! of a few hundred microseconds.

use crate::error::Result;
use crate::options::Threads;

/// Where a batch of tasks runs.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Workers {
    /// The calling thread only.
    Caller,
    /// Rayon's current pool.
    Rayon,
    /// A given rayon pool.
    #[cfg(feature = "parallel")]
    Pool(&'static rayon::ThreadPool),
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
            #[cfg(feature = "parallel")]
            Threads::Pool(p) => Self::Pool(p),
            _ => Self::Rayon,
        }
    }

    /// The workers for `threads` while holding a file lock: as many scoped threads as the
    /// rayon pool has, or the calling thread only.
    pub(crate) fn locked(threads: Threads) -> Self {
        match Self::of(threads) {
            #[cfg(feature = "parallel")]
            Self::Rayon => Self::Scoped(rayon::current_num_threads()),
            #[cfg(feature = "parallel")]
            Self::Pool(p) => Self::Scoped(p.current_num_threads()),
            _ => Self::Caller,
        }
    }

    /// For rayon workers: `Inside` when the calling thread belongs to the pool (a parallel
    /// iterator then splits the work there), else the pool (`None`: rayon's current one) and
    /// its size, for [`shared_queue`].
    #[cfg(feature = "parallel")]
    fn placement(self) -> Placement {
        match self {
            Self::Pool(p) if p.current_thread_index().is_none() => {
                Placement::Outside(Some(p), p.current_num_threads())
            }
            Self::Rayon if rayon::current_thread_index().is_none() => {
                Placement::Outside(None, rayon::current_num_threads())
            }
            Self::Pool(_) | Self::Rayon => Placement::Inside,
            Self::Caller | Self::Scoped(_) => Placement::NotRayon,
        }
    }
}

/// See [`Workers::placement`].
#[cfg(feature = "parallel")]
enum Placement {
    Inside,
    Outside(Option<&'static rayon::ThreadPool>, usize),
    NotRayon,
}

impl From<Threads> for Workers {
    fn from(threads: Threads) -> Self {
        Self::of(threads)
    }
}

/// Who helps the calling thread in [`shared_queue`].
#[derive(Clone, Copy)]
enum Helpers {
    /// Scoped threads started for the batch.
    Spawned,
    /// Jobs in a rayon pool (`None`: the current one).
    #[cfg(feature = "parallel")]
    Rayon(Option<&'static rayon::ThreadPool>),
}

/// Runs `f` over `items` on the calling thread and up to `n - 1` helpers: each takes the next
/// item from a shared queue, with its own state from `init`; stops taking items after the
/// first error. Results in item order.
fn shared_queue<T, R, S, I, F>(
    helpers: Helpers,
    n: usize,
    items: Vec<T>,
    init: I,
    f: F,
) -> Result<Vec<R>>
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
    let parts: Vec<Result<Vec<(usize, R)>>> = match helpers {
        _ if threads == 1 => vec![run()],
        Helpers::Spawned => std::thread::scope(|s| {
            // A thread that cannot be started leaves its share to the others.
            let handles: Vec<_> = (1..threads)
                .filter_map(|_| std::thread::Builder::new().spawn_scoped(s, run).ok())
                .collect();
            let mut parts = vec![run()];
            for h in handles {
                parts.push(h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)));
            }
            parts
        }),
        #[cfg(feature = "parallel")]
        Helpers::Rayon(pool) => {
            let parts = Mutex::new(Vec::with_capacity(threads));
            let keep = |p| parts.lock().unwrap_or_else(PoisonError::into_inner).push(p);
            // The caller starts on the queue at once; the helper jobs take items once a pool
            // thread picks them up (or find the queue empty).
            match pool {
                Some(p) => p.in_place_scope(|s| {
                    (1..threads).for_each(|_| s.spawn(|_| keep(run())));
                    keep(run());
                }),
                None => rayon::in_place_scope(|s| {
                    (1..threads).for_each(|_| s.spawn(|_| keep(run())));
                    keep(run());
                }),
            }
            parts.into_inner().unwrap_or_else(PoisonError::into_inner)
        }
    };
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
    try_map(workers, items, f).map(drop)
}

/// Maps every item, keeping order, stopping at the first error.
pub(crate) fn try_map<T, R, F>(workers: impl Into<Workers>, items: Vec<T>, f: F) -> Result<Vec<R>>
where
    T: Send,
    R: Send,
    F: Fn(T) -> Result<R> + Sync + Send,
{
    map_with(workers.into(), items, || (), |(), item| f(item))
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
    map_with(
        workers.into(),
        items,
        || vec![0u8; len],
        |buf, item| f(item, buf),
    )
    .map(drop)
}

/// Maps every item with per-worker state from `init`, keeping order, stopping at the first
/// error.
fn map_with<T, R, S, I, F>(workers: Workers, items: Vec<T>, init: I, f: F) -> Result<Vec<R>>
where
    T: Send,
    R: Send,
    S: Send,
    I: Fn() -> S + Sync + Send,
    F: Fn(&mut S, T) -> Result<R> + Sync + Send,
{
    #[cfg(feature = "parallel")]
    match workers.placement() {
        Placement::Inside => {
            use rayon::prelude::*;
            return items
                .into_par_iter()
                .map_init(&init, |s, item| f(s, item))
                .collect();
        }
        Placement::Outside(pool, n) => {
            return shared_queue(Helpers::Rayon(pool), n, items, init, f);
        }
        Placement::NotRayon => {}
    }
    match workers {
        Workers::Scoped(n) if n > 1 => shared_queue(Helpers::Spawned, n, items, init, f),
        _ => {
            let mut state = init();
            items.into_iter().map(|item| f(&mut state, item)).collect()
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
        #[cfg(feature = "parallel")]
        let pool: &'static rayon::ThreadPool = Box::leak(Box::new(
            rayon::ThreadPoolBuilder::new()
                .num_threads(3)
                .build()
                .unwrap(),
        ));
        let all = [
            Workers::Caller,
            Workers::Scoped(1),
            Workers::Scoped(3),
            Workers::Rayon,
            #[cfg(feature = "parallel")]
            Workers::Pool(pool),
        ];
        for workers in all {
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

    /// From outside a pool, the calling thread takes items too (it does not hand the batch
    /// over and wait); from inside, the batch runs on the pool's threads.
    #[cfg(feature = "parallel")]
    #[test]
    fn the_calling_thread_works_unless_it_is_a_pool_thread() {
        use std::thread::{ThreadId, current};
        let pool: &'static rayon::ThreadPool = Box::leak(Box::new(
            rayon::ThreadPoolBuilder::new()
                .num_threads(2)
                .build()
                .unwrap(),
        ));
        // Every other thread holds its item until the thread that started the batch has taken
        // one (or a minute has passed: then nobody waits any more and the assertions below
        // fail). So the caller gets an item however the threads are scheduled, if it takes
        // items at all.
        let who = |workers: Workers| -> Vec<ThreadId> {
            let caller = current().id();
            let release = (std::sync::Mutex::new(false), std::sync::Condvar::new());
            try_map(workers, (0..400u32).collect(), |_| {
                let (released, cv) = &release;
                let released = released.lock().unwrap();
                let minute = std::time::Duration::from_secs(60);
                let mut released = if current().id() == caller {
                    released
                } else {
                    cv.wait_timeout_while(released, minute, |r| !*r).unwrap().0
                };
                *released = true;
                cv.notify_all();
                Ok(current().id())
            })
            .unwrap()
        };
        let me = current().id();
        assert!(who(Workers::Pool(pool)).contains(&me));
        assert!(who(Workers::Rayon).contains(&me));
        let inside = pool.install(|| (current().id(), who(Workers::Pool(pool))));
        assert!(inside.1.iter().all(|&t| t != me));
        assert!(pool.current_thread_index().is_none());
    }
}
