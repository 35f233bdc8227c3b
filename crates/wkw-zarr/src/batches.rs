//! Work over the blocks of one file or shard in batches: each batch is read (one ranged read
//! per block locally, coalesced requests on a store), its blocks are coded on the thread pool,
//! and the results are written in order. When a file's blocks are coded in parallel, the next
//! batches are read on a thread of their own while the current one is coded, so a store's
//! request latency hides behind compression instead of adding to it.
//!
//! Memory: at most [`READ_AHEAD`] + 2 batches of stored bytes (the ones read ahead, the one
//! being coded, and the one being read) and one batch of coded blocks, each about
//! [`BATCH_BYTES`] of blocks, whatever the file size.

use std::ops::Range;
use std::sync::mpsc;

use rayon::prelude::*;

use crate::error::Result;

/// Raw bytes of blocks a batch aims at: big enough that one batch's compression outlasts a
/// store request's latency, small enough to keep memory low.
pub(crate) const BATCH_BYTES: u64 = 4 << 20;

/// Batches read ahead of the one being coded.
pub(crate) const READ_AHEAD: usize = 2;

/// Blocks per batch for blocks of `block_bytes` bytes on `threads` threads: at least four per
/// thread, else [`BATCH_BYTES`] worth.
pub(crate) fn blocks_per_batch(threads: usize, block_bytes: u64) -> u64 {
    let per_threads = u64::try_from(threads).unwrap_or(u64::MAX).saturating_mul(4);
    per_threads.max(BATCH_BYTES / block_bytes.max(1)).max(1)
}

/// Runs `f` over `items`, in parallel on `pool` if `parallel`, keeping their order.
pub(crate) fn run<T: Send, R: Send>(
    pool: &rayon::ThreadPool,
    parallel: bool,
    items: Vec<T>,
    f: impl Fn(T) -> R + Sync + Send,
) -> Vec<R> {
    if parallel {
        pool.install(|| items.into_par_iter().map(f).collect())
    } else {
        items.into_iter().map(f).collect()
    }
}

/// Runs blocks `0..n` in batches of `per_batch`: `read` fetches a batch's items, `code`
/// transforms each item (on `pool` if `parallel`), and `write` takes the results in block
/// order. With `parallel`, batches are read ahead on a thread of their own. The first error
/// stops the work and is returned.
///
/// # Errors
///
/// The first error of `read`, `code` or `write`.
pub(crate) fn stream<I: Send, O: Send>(
    pool: &rayon::ThreadPool,
    parallel: bool,
    n: u64,
    per_batch: u64,
    read: impl Fn(Range<u64>) -> Result<Vec<I>> + Send,
    code: impl Fn(I) -> Result<O> + Sync + Send,
    mut write: impl FnMut(O) -> Result<()>,
) -> Result<()> {
    let per_batch = per_batch.max(1);
    let batches =
        (0..n.div_ceil(per_batch)).map(move |b| b * per_batch..n.min((b + 1) * per_batch));
    if !parallel {
        for r in batches {
            for item in read(r)? {
                write(code(item)?)?;
            }
        }
        return Ok(());
    }
    std::thread::scope(|s| {
        let (tx, rx) = mpsc::sync_channel::<Result<Vec<I>>>(READ_AHEAD);
        s.spawn(move || {
            for r in batches {
                let got = read(r);
                let failed = got.is_err();
                // A closed channel: the coding side stopped (an error); so does reading.
                if tx.send(got).is_err() || failed {
                    break;
                }
            }
        });
        // Returning early drops `rx`, which ends the reading thread at its next batch.
        for got in rx {
            for out in run(pool, true, got?, &code) {
                write(out?)?;
            }
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error;

    fn pool() -> rayon::ThreadPool {
        rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .build()
            .unwrap()
    }

    #[test]
    fn every_block_once_in_order() {
        let pool = pool();
        for parallel in [false, true] {
            for (n, per) in [(0, 3), (1, 3), (10, 3), (12, 4), (5, 100)] {
                let mut seen = Vec::new();
                stream(
                    &pool,
                    parallel,
                    n,
                    per,
                    |r| Ok(r.collect()),
                    |k: u64| Ok(k * 2),
                    |v| {
                        seen.push(v);
                        Ok(())
                    },
                )
                .unwrap();
                assert_eq!(seen, (0..n).map(|k| k * 2).collect::<Vec<_>>(), "{n} {per}");
            }
        }
    }

    #[test]
    fn the_first_error_of_any_stage_is_returned() {
        let pool = pool();
        let failing = |at: u64| {
            move |k: u64| {
                if k == at {
                    Err(Error::Internal(format!("{k}")))
                } else {
                    Ok(k)
                }
            }
        };
        for parallel in [false, true] {
            let e = stream(
                &pool,
                parallel,
                100,
                7,
                |r| r.map(failing(30)).collect(),
                Ok,
                |_| Ok(()),
            );
            assert!(matches!(e, Err(Error::Internal(m)) if m == "30"));
            let e = stream(
                &pool,
                parallel,
                100,
                7,
                |r| Ok(r.collect()),
                failing(41),
                |_| Ok(()),
            );
            assert!(matches!(e, Err(Error::Internal(m)) if m == "41"));
            let mut written = 0;
            let e = stream(
                &pool,
                parallel,
                100,
                7,
                |r| Ok(r.collect()),
                Ok,
                |k| {
                    written += 1;
                    failing(55)(k).map(|_| ())
                },
            );
            assert!(matches!(e, Err(Error::Internal(m)) if m == "55"));
            assert_eq!(written, 56, "writing stops at the error");
        }
    }
}
