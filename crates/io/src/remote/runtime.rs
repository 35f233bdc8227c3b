//! The one tokio runtime every blocking remote call of the scifmt crates runs on.

use std::future::Future;
use std::sync::OnceLock;

use tokio::runtime::{Builder, Handle, Runtime};

use crate::error::{Error, Result};

/// The process-wide runtime of blocking remote calls: two I/O worker threads
/// (`scifmt-io`), built on first use.
///
/// One shared runtime, not one per object, because an object store client pools its
/// connections and each connection is driven by the runtime that opened it: with a runtime per
/// object, a connection opened by one object's idle runtime and reused by another object (the
/// same `Arc<dyn ObjectStore>`) would never make progress.
///
/// # Errors
/// [`Error::InvalidArgument`] when called on a thread that runs a tokio runtime (blocking there
/// would stall it); [`Error::Io`] if the runtime cannot be started.
pub fn runtime() -> Result<&'static Runtime> {
    static RT: OnceLock<Runtime> = OnceLock::new();
    outside_runtime("a blocking remote call")?;
    if let Some(rt) = RT.get() {
        return Ok(rt);
    }
    let rt = Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("scifmt-io")
        .enable_all()
        .build()
        .map_err(|e| Error::io("tokio runtime", e))?;
    // A racing thread may have set it first; its runtime is as good as ours.
    Ok(RT.get_or_init(|| rt))
}

/// Runs `f` to completion on [`runtime`], blocking the calling thread. Tasks `f` spawns run
/// on the runtime's workers.
///
/// ```
/// let v = scifmt_io::block_on(async { 6 * 7 })?;
/// assert_eq!(v, 42);
/// # Ok::<(), scifmt_io::Error>(())
/// ```
///
/// # Errors
/// As [`runtime`].
pub fn block_on<F: Future>(f: F) -> Result<F::Output> {
    Ok(runtime()?.block_on(f))
}

/// The handle of [`runtime`], for adapters that block on futures themselves (from threads
/// outside any runtime).
///
/// # Errors
/// As [`runtime`].
pub fn handle() -> Result<Handle> {
    Ok(runtime()?.handle().clone())
}

/// `Ok` unless the calling thread runs a tokio runtime; then [`Error::InvalidArgument`] (a
/// misuse by the caller) naming `what`.
///
/// # Errors
/// [`Error::InvalidArgument`] inside a runtime.
pub fn outside_runtime(what: &'static str) -> Result<()> {
    if Handle::try_current().is_ok() {
        return Err(Error::InvalidArgument(format!(
            "{what} called from inside a tokio runtime (use the async API there)"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "a failed unwrap is a failed test")]

    use super::*;

    #[test]
    fn blocking_inside_a_runtime_is_a_typed_error_not_a_panic() {
        assert_eq!(block_on(async { 1 }).unwrap(), 1);
        // Inside the shared runtime itself, and inside another one.
        let nested = block_on(async { block_on(async { 2 }) }).unwrap();
        assert!(matches!(nested, Err(Error::InvalidArgument(_))));
        let other = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let r = other.block_on(async { block_on(async { 3 }) });
        assert!(matches!(r, Err(Error::InvalidArgument(_))));
        assert!(other.block_on(async { handle() }).is_err());
    }

    #[test]
    fn one_runtime_serves_many_threads() {
        let threads: Vec<_> = (0..8)
            .map(|i| {
                std::thread::spawn(move || {
                    block_on(async move {
                        tokio::time::sleep(std::time::Duration::from_millis(1)).await;
                        i
                    })
                    .unwrap()
                })
            })
            .collect();
        let sum: i32 = threads.into_iter().map(|t| t.join().unwrap()).sum();
        assert_eq!(sum, 28);
        assert!(std::ptr::eq(runtime().unwrap(), runtime().unwrap()));
    }
}
