//! Parallel iteration over independent tasks: rayon with the `parallel` feature and
//! [`Threads::Rayon`], a plain loop on the calling thread otherwise.

use crate::error::Result;
use crate::options::Threads;

/// Runs `f` on every item, stopping at the first error.
pub(crate) fn try_for_each<T, F>(threads: Threads, items: Vec<T>, f: F) -> Result<()>
where
    T: Send,
    F: Fn(T) -> Result<()> + Sync + Send,
{
    #[cfg(feature = "parallel")]
    if threads == Threads::Rayon {
        use rayon::prelude::*;
        return items.into_par_iter().try_for_each(f);
    }
    #[cfg(not(feature = "parallel"))]
    let _ = threads;
    items.into_iter().try_for_each(f)
}

/// Maps every item, keeping order, stopping at the first error.
pub(crate) fn try_map<T, R, F>(threads: Threads, items: Vec<T>, f: F) -> Result<Vec<R>>
where
    T: Send,
    R: Send,
    F: Fn(T) -> Result<R> + Sync + Send,
{
    #[cfg(feature = "parallel")]
    if threads == Threads::Rayon {
        use rayon::prelude::*;
        return items.into_par_iter().map(f).collect();
    }
    #[cfg(not(feature = "parallel"))]
    let _ = threads;
    items.into_iter().map(f).collect()
}

/// Runs `f` on every item with a reusable scratch buffer of `len` zero-initialised bytes per
/// worker (contents carry over between items), stopping at the first error.
pub(crate) fn try_for_each_with_buf<T, F>(
    threads: Threads,
    items: Vec<T>,
    len: usize,
    f: F,
) -> Result<()>
where
    T: Send,
    F: Fn(T, &mut [u8]) -> Result<()> + Sync + Send,
{
    #[cfg(feature = "parallel")]
    if threads == Threads::Rayon {
        use rayon::prelude::*;
        return items
            .into_par_iter()
            .try_for_each_init(|| vec![0u8; len], |buf, item| f(item, buf));
    }
    #[cfg(not(feature = "parallel"))]
    let _ = threads;
    let mut buf = vec![0u8; len];
    items.into_iter().try_for_each(|item| f(item, &mut buf))
}
