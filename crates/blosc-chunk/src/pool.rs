//! Thread pools for block-parallel decoding and encoding (feature `parallel`).
//!
//! A leaf module: it knows nothing about chunks, only how to run work on `nthreads` threads.

use std::sync::{Arc, Mutex, PoisonError};

use crate::error::{Error, Result};

/// Whether `nthreads` asks for parallel work and there is more than one block.
pub(crate) fn use_threads(nthreads: usize, nblocks: usize) -> bool {
    nthreads != 1 && nblocks > 1
}

static POOLS: Mutex<Vec<(usize, Arc<rayon::ThreadPool>)>> = Mutex::new(Vec::new());

/// The cached pool with `nthreads` threads (`None` = rayon's global pool for 0). Pools are
/// built once per thread count.
fn pool(nthreads: usize) -> Result<Option<Arc<rayon::ThreadPool>>> {
    if nthreads == 0 {
        return Ok(None);
    }
    let mut pools = POOLS.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some((_, p)) = pools.iter().find(|(n, _)| *n == nthreads) {
        return Ok(Some(Arc::clone(p)));
    }
    let p = rayon::ThreadPoolBuilder::new()
        .num_threads(nthreads)
        .build()
        .map_err(|e| Error::Codec {
            codec: "thread pool",
            why: e.to_string(),
        })?;
    let p = Arc::new(p);
    pools.push((nthreads, Arc::clone(&p)));
    Ok(Some(p))
}

/// Runs `work` on the calling thread and on `nthreads - 1` threads of the pool at once (the
/// caller works too, so no hand-off is needed before the first block starts).
pub(crate) fn on_threads<'a>(nthreads: usize, work: &'a (dyn Fn() + Sync)) -> Result<()> {
    let helpers = if nthreads == 0 {
        rayon::current_num_threads()
    } else {
        nthreads
    }
    .saturating_sub(1);
    let pool = pool(nthreads)?;
    let run = |s: &rayon::Scope<'a>| {
        for _ in 0..helpers {
            s.spawn(|_| work());
        }
        work();
    };
    match pool {
        Some(p) => p.in_place_scope(run),
        None => rayon::in_place_scope(run),
    }
    Ok(())
}
