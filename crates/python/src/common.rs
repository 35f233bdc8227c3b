//! Helpers shared by every format module: running Rust code without the GIL and without
//! letting a panic reach Python.

use std::panic::{AssertUnwindSafe, catch_unwind};

use pyo3::prelude::*;

/// Adds `child` as submodule `name` of `parent`, also under its dotted name in `sys.modules`
/// (`scifmt._scifmt.<name>`), so `import scifmt._scifmt.<name>` works.
///
/// # Errors
/// A Python error if the module cannot be created or registered.
pub(crate) fn add_submodule<'py>(
    parent: &Bound<'py, PyModule>,
    name: &str,
    fill: impl FnOnce(&Bound<'py, PyModule>) -> PyResult<()>,
) -> PyResult<()> {
    let py = parent.py();
    let child = PyModule::new(py, name)?;
    fill(&child)?;
    parent.add_submodule(&child)?;
    let full = format!("{}.{name}", parent.name()?);
    child.setattr("__name__", &full)?;
    py.import("sys")?
        .getattr("modules")?
        .set_item(full, &child)?;
    Ok(())
}

/// The message of a caught panic payload.
pub(crate) fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "unknown panic payload".to_string()
    }
}

/// Runs `f` with the GIL released and any panic caught: `Err(message)` for a panic, so the
/// caller turns it into its module's exception instead of letting pyo3 raise a
/// `PanicException` (a `BaseException` that `except Exception` does not catch).
pub(crate) fn detached<T: Send>(py: Python<'_>, f: impl FnOnce() -> T + Send) -> Result<T, String> {
    py.detach(|| {
        catch_unwind(AssertUnwindSafe(f)).map_err(|p| {
            format!(
                "internal error (a bug in scifmt, please report it): panic: {}",
                panic_message(p.as_ref())
            )
        })
    })
}

/// Runs `f`, which needs the GIL (it builds Python values or reads them), with any panic
/// caught like [`detached`]: `Err(message)` for the caller's module exception.
pub(crate) fn guarded<T>(f: impl FnOnce() -> T) -> Result<T, String> {
    catch_unwind(AssertUnwindSafe(f)).map_err(|p| {
        format!(
            "internal error (a bug in scifmt, please report it): panic: {}",
            panic_message(p.as_ref())
        )
    })
}

/// Panics on purpose, with the GIL released (`detach`) or held, through [`detached`] or
/// [`guarded`]: the test suite checks that the panic arrives as an ordinary `Exception`
/// (`scifmt._scifmt._panic_for_tests`), never as pyo3's `PanicException`.
///
/// # Errors
/// Always: a `RuntimeError` with the panic's message.
#[pyfunction]
#[allow(clippy::panic, reason = "the panic is what this test hook is for")]
pub(crate) fn _panic_for_tests(py: Python<'_>, detach: bool) -> PyResult<()> {
    let boom = || -> () { panic!("deliberate panic for the test suite") };
    let r = if detach {
        detached(py, boom)
    } else {
        guarded(boom)
    };
    r.map_err(pyo3::exceptions::PyRuntimeError::new_err)
}

/// Where the parallel work of a call runs, chosen by a `threads` argument.
///
/// Never rayon's global pool: a process forked after that pool started (Python's
/// `multiprocessing` forks by default on Linux before 3.14) inherits it without its threads,
/// and any work handed to it hangs. Pools here are tagged with the process id that made them
/// and made again in a forked child (the stale one is leaked, never joined).
#[derive(Debug, Clone, Copy)]
pub(crate) struct ThreadChoice {
    /// `None`: the process-wide pool of every core; `Some(n)`: the process-wide pool of `n`
    /// threads; `Some(1)`: no pool, the calling thread only.
    threads: Option<usize>,
}

/// The pools this process made, by thread count (0: every core). They are never dropped, so
/// datasets can hold them as `wkw::Threads::Pool` (`&'static`); there is one per distinct
/// `threads` value, shared by every dataset opened with it.
static POOLS: std::sync::Mutex<Vec<(u32, usize, &'static rayon::ThreadPool)>> =
    std::sync::Mutex::new(Vec::new());

/// This process's pool of `threads` threads (0: rayon's default, the number of cores or
/// `RAYON_NUM_THREADS`), made on first use.
fn pool_of(threads: usize) -> Result<&'static rayon::ThreadPool, String> {
    let pid = std::process::id();
    let mut pools = POOLS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    // Pools made by the parent of a fork: their threads do not exist here (leaked anyway).
    pools.retain(|&(owner, _, _)| owner == pid);
    if let Some(&(_, _, pool)) = pools.iter().find(|&&(_, n, _)| n == threads) {
        return Ok(pool);
    }
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .thread_name(|i| format!("scifmt-{i}"))
        .build()
        .map_err(|e| format!("cannot start a thread pool: {e}"))?;
    let pool: &'static rayon::ThreadPool = Box::leak(Box::new(pool));
    pools.push((pid, threads, pool));
    Ok(pool)
}

impl ThreadChoice {
    /// Checks a `threads` argument: `None`, or 1..=1024.
    ///
    /// # Errors
    /// A message for 0 or more than 1024 threads.
    pub(crate) fn new(threads: Option<usize>) -> Result<Self, String> {
        match threads {
            Some(0) => Err("threads must be at least 1 (or None for every core)".into()),
            Some(n) if n > 1024 => Err(format!("threads={n}: at most 1024")),
            _ => Ok(Self { threads }),
        }
    }

    /// Whether work runs on the calling thread only (`threads=1`).
    pub(crate) fn caller_only(self) -> bool {
        self.threads == Some(1)
    }

    /// The pool (`None` for `threads=1`), made in this process.
    ///
    /// # Errors
    /// A message if the pool's threads cannot be started.
    pub(crate) fn pool(self) -> Result<Option<&'static rayon::ThreadPool>, String> {
        match self.threads {
            Some(1) => Ok(None),
            None => pool_of(0).map(Some),
            Some(n) => pool_of(n).map(Some),
        }
    }
}

/// Runs `f` inside `pool` (if any), so rayon work in `f` uses that pool.
pub(crate) fn in_pool<T: Send>(
    pool: Option<&rayon::ThreadPool>,
    f: impl FnOnce() -> T + Send,
) -> T {
    match pool {
        Some(p) => p.install(f),
        None => f(),
    }
}
