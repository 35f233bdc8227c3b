//! Helpers shared by every format module: running Rust code without the GIL and without
//! letting a panic reach Python ([`detached`], [`guarded`]), long calls that honour Ctrl-C
//! ([`interruptible`]), exception classes with two bases ([`TwoBaseException`]) and the
//! overlap and existing-output checks of every writing call ([`ensure_apart`]).

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::Path;
use std::sync::mpsc::{RecvTimeoutError, sync_channel};
use std::time::Duration;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyTuple, PyType};
use scifmt_io::Cancel;

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
    // Free-threading-safe like the parent module (`#[pymodule(gil_used = false)]`): on a
    // free-threaded interpreter a submodule that does not say so turns the GIL back on.
    child.gil_used(false)?;
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

/// The message for work of an [`interruptible`] call that is not there to run (a bug).
const LOST_WORK: &str =
    "internal error (a bug in scifmt, please report it): the work of an interruptible call is gone";

/// How long a call waiting for its worker ([`interruptible`]) sleeps between two looks for
/// signals (Ctrl-C): the delay between a signal and the stop request to the worker.
const SIGNAL_POLL: Duration = Duration::from_millis(50);

/// Runs `f` on a new worker thread while the calling thread, with the GIL released, waits for
/// it and runs Python's signal handlers every [`SIGNAL_POLL`] (`Python::check_signals`; they
/// only run on the main thread). When a handler raises (Ctrl-C: `KeyboardInterrupt`),
/// `cancel` is raised, the worker is joined (it stops at its next [`Cancel::check`], between
/// units of work; what it completed stays complete) and the handler's exception is the outer
/// `Err`, whatever the worker returned. A panic in `f` is the inner `Err(message)`, as with
/// [`detached`]. The worker may take the GIL (progress callbacks): the caller never waits for
/// it while holding the GIL. If no thread can be started, `f` runs like [`detached`] (no
/// Ctrl-C until it returns).
///
/// # Errors
/// The exception a signal handler raised.
pub(crate) fn interruptible<T: Send>(
    py: Python<'_>,
    cancel: &Cancel,
    f: impl FnOnce() -> T + Send,
) -> PyResult<Result<T, String>> {
    let job = std::sync::Mutex::new(Some(f));
    std::thread::scope(|s| {
        let (done, finished) = sync_channel::<()>(1);
        let job = &job;
        let work = move || {
            // Dropped when the work ends (also by a panic): the waiting caller wakes up.
            let _done = done;
            let f = job
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .take();
            match f {
                Some(f) => catch_unwind(AssertUnwindSafe(f)).map_err(|p| panic_text(p.as_ref())),
                None => Err(LOST_WORK.into()),
            }
        };
        let worker = match std::thread::Builder::new()
            .name("scifmt-call".into())
            .spawn_scoped(s, work)
        {
            Ok(worker) => worker,
            Err(_) => {
                let f = job
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .take();
                return Ok(match f {
                    Some(f) => detached(py, f),
                    None => Err(LOST_WORK.into()),
                });
            }
        };
        let mut finished = finished;
        loop {
            let (rx, r) = py.detach(move || {
                let r = finished.recv_timeout(SIGNAL_POLL);
                (finished, r)
            });
            finished = rx;
            if !matches!(r, Err(RecvTimeoutError::Timeout)) {
                break;
            }
            if let Err(e) = py.check_signals() {
                // Raised before the GIL is released again: a worker that was waiting for the
                // GIL (a progress callback) finds the flag raised at its next check.
                cancel.cancel();
                let _ = py.detach(move || worker.join());
                return Err(e);
            }
        }
        Ok(py
            .detach(move || worker.join())
            .unwrap_or_else(|p| Err(panic_text(p.as_ref()))))
    })
}

/// The message for a panic caught in our code.
fn panic_text(payload: &(dyn std::any::Any + Send)) -> String {
    format!(
        "internal error (a bug in scifmt, please report it): panic: {}",
        panic_message(payload)
    )
}

/// An exception class with two bases, made on first use (once per process): a module's own
/// exception and the built-in one for the same event, e.g. `WKWException` + `FileExistsError`,
/// so code written for either catches it.
pub(crate) struct TwoBaseException {
    class: PyOnceLock<Py<PyType>>,
    module: &'static str,
    name: &'static str,
    doc: &'static str,
    bases: for<'py> fn(Python<'py>) -> [Bound<'py, PyType>; 2],
}

impl TwoBaseException {
    /// The class `module.name` deriving from `bases` (the module's exception first).
    pub(crate) const fn new(
        module: &'static str,
        name: &'static str,
        doc: &'static str,
        bases: for<'py> fn(Python<'py>) -> [Bound<'py, PyType>; 2],
    ) -> Self {
        Self {
            class: PyOnceLock::new(),
            module,
            name,
            doc,
            bases,
        }
    }

    /// The class.
    ///
    /// # Errors
    /// A Python error if it cannot be made.
    pub(crate) fn class<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyType>> {
        let class = self.class.get_or_try_init(py, || -> PyResult<Py<PyType>> {
            let namespace = PyDict::new(py);
            namespace.set_item("__module__", self.module)?;
            namespace.set_item("__doc__", self.doc)?;
            let bases = PyTuple::new(py, (self.bases)(py))?;
            let class = py
                .import("builtins")?
                .getattr("type")?
                .call1((self.name, bases, namespace))?
                .cast_into::<PyType>()?;
            Ok(class.unbind())
        })?;
        Ok(class.bind(py).clone())
    }

    /// An exception of this class with `message` (or the error of making the class).
    pub(crate) fn err(&self, py: Python<'_>, message: impl Into<String>) -> PyErr {
        match self.class(py) {
            Ok(class) => PyErr::from_type(class, message.into()),
            Err(e) => e,
        }
    }
}

/// `Err(message)` of [`scifmt_io::ensure_apart`] when `output` is `input`, lies inside it or
/// contains it (compared by file identity: symlinks, `..` and hard links see through; URLs by
/// store and key prefix); also its error when a path cannot be resolved.
pub(crate) fn apart(input: &Path, output: &Path) -> Result<(), String> {
    scifmt_io::ensure_apart(input, output).map_err(|e| e.to_string())
}

/// `scifmt._scifmt.ensure_apart(input, output)`: `ValueError` (with the message of
/// `scifmt_io::ensure_apart`) when `output` is `input`, inside it or around it, for the writers
/// written in Python.
///
/// # Errors
/// `ValueError`.
#[pyfunction]
pub(crate) fn ensure_apart(py: Python<'_>, input: String, output: String) -> PyResult<()> {
    let (i, o) = (Path::new(&input), Path::new(&output));
    match detached(py, || apart(i, o)) {
        Ok(r) => r.map_err(PyValueError::new_err),
        Err(panic) => Err(PyValueError::new_err(panic)),
    }
}

/// Writes what `body` writes to the file `path` through a staged file beside it: with
/// `overwrite` it replaces whatever is there; without it the file is renamed into place only if
/// the name is still free, so a file another process created after the caller's check is never
/// replaced (`Ok(false)`, and nothing written).
///
/// # Errors
/// `body`'s error; the staged file's I/O errors (converted).
pub(crate) fn write_file<E: From<scifmt_io::Error>>(
    path: &Path,
    durability: scifmt_io::Durability,
    overwrite: bool,
    body: impl FnOnce(&mut std::io::BufWriter<scifmt_io::Staged>) -> Result<(), E>,
) -> Result<bool, E> {
    let mut out = std::io::BufWriter::new(scifmt_io::Staged::create(path)?);
    body(&mut out)?;
    if overwrite {
        scifmt_io::commit(out, durability)?;
        return Ok(true);
    }
    let staged = out.into_inner().map_err(|e| {
        let (error, staged) = e.into_parts();
        scifmt_io::Error::io(staged.get_ref().target(), error)
    })?;
    Ok(staged.persist_new(durability)?)
}

/// The `FileExistsError` for an output that appeared between the check and the write.
pub(crate) fn appeared(name: &str) -> PyErr {
    pyo3::exceptions::PyFileExistsError::new_err(format!(
        "{name} exists (it appeared while the output was written; nothing was replaced): \
         overwrite=True replaces it"
    ))
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
