//! Decoding fetched chunks in parallel, on scoped threads started by the calling task.

use crate::error::{Error, Result};

/// Runs `f` on every item on up to `available_parallelism` threads; the first error wins.
pub(crate) fn par_each<T: Send>(items: Vec<T>, f: impl Fn(T) -> Result<()> + Sync) -> Result<()> {
    let threads = std::thread::available_parallelism()
        .map_or(1, usize::from)
        .min(items.len());
    if threads <= 1 {
        return items.into_iter().try_for_each(f);
    }
    let per = items.len().div_ceil(threads);
    let mut batches: Vec<Vec<T>> = Vec::with_capacity(threads);
    let mut it = items.into_iter();
    loop {
        let b: Vec<T> = it.by_ref().take(per).collect();
        if b.is_empty() {
            break;
        }
        batches.push(b);
    }
    let f = &f;
    std::thread::scope(|s| {
        let handles: Vec<_> = batches
            .into_iter()
            .map(|b| s.spawn(move || b.into_iter().try_for_each(f)))
            .collect();
        let mut first = Ok(());
        for h in handles {
            let r = h.join().unwrap_or_else(|_| {
                Err(Error::Internal {
                    what: "a decoding thread panicked".into(),
                })
            });
            if first.is_ok() {
                first = r;
            }
        }
        first
    })
}
