//! `scifmt._scifmt.wkw`: the Rust core of `scifmt.wkw` (the Python layer in
//! `python/scifmt/wkw/wkw.py` keeps the reference package's names and argument checks).
//!
//! Every method releases the GIL while it touches files or decodes, and runs its work under
//! `catch_unwind`: errors and panics both arrive in Python as `WKWException` whose message is
//! the `wkw` crate's, with the file or dataset path.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use numpy::{PyArray4, PyArrayMethods, PyUntypedArray, PyUntypedArrayMethods};
use pyo3::exceptions::{PyException, PyFileExistsError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyList;
use wkw::{
    BlockType, Cancel, Dataset, Durability, Header, HeaderCheck, MissingOrCorrupt, Options, Order,
    Threads, VoxelType,
};

use crate::common::{ThreadChoice, TwoBaseException, apart, detached, in_pool, interruptible};

pyo3::create_exception!(
    scifmt.wkw,
    WKWException,
    PyException,
    "Raised for every error of a WKW dataset operation (the reference package's exception)."
);

/// An output (dataset or data file) exists and `overwrite=True` was not given: a
/// `WKWException` (what the reference raises for an existing dataset) and a `FileExistsError`.
pub(crate) static OUTPUT_EXISTS: TwoBaseException = TwoBaseException::new(
    "scifmt.wkw",
    "OutputExistsError",
    "The output exists: ``overwrite=True`` replaces it (a ``WKWException`` and a \
     ``FileExistsError``).",
    |py| {
        [
            py.get_type::<WKWException>(),
            py.get_type::<PyFileExistsError>(),
        ]
    },
);

/// An output is its own input, lies inside it or contains it: a `WKWException` and a
/// `ValueError`.
pub(crate) static OVERLAP: TwoBaseException = TwoBaseException::new(
    "scifmt.wkw",
    "OverlapError",
    "The output is its own input, lies inside it or contains it (a ``WKWException`` and a \
     ``ValueError``).",
    |py| [py.get_type::<WKWException>(), py.get_type::<PyValueError>()],
);

/// Adds the `wkw` submodule to `parent`.
///
/// # Errors
/// A Python error if the module cannot be created.
pub(crate) fn register(parent: &Bound<'_, PyModule>) -> PyResult<()> {
    crate::common::add_submodule(parent, "wkw", |m| {
        m.add("WKWException", m.py().get_type::<WKWException>())?;
        m.add("OutputExistsError", OUTPUT_EXISTS.class(m.py())?)?;
        m.add("OverlapError", OVERLAP.class(m.py())?)?;
        m.add_function(wrap_pyfunction!(verify, m)?)?;
        m.add_function(wrap_pyfunction!(compress, m)?)?;
        Ok(())
    })
}

/// A `WKWException` with `msg`.
pub(crate) fn exc(msg: impl Into<String>) -> PyErr {
    WKWException::new_err(msg.into())
}

/// A `WKWException` for `e`: the message starts with wkw 1.1.24's wording where the reference
/// has one for the same failure ([`reference_message`]), otherwise with the file it names, or
/// with `root` for errors that name no file.
fn wkw_err(e: &wkw::Error, root: &Path) -> PyErr {
    if let Some(msg) = reference_message(e, &|p: &Path| p.display().to_string()) {
        if matches!(e, wkw::Error::AlreadyExists { .. }) {
            return Python::attach(|py| OUTPUT_EXISTS.err(py, msg));
        }
        return exc(msg);
    }
    if matches!(e, wkw::Error::Overlap { .. }) {
        // The message names both paths and says which contains which.
        return Python::attach(|py| OVERLAP.err(py, e.to_string()));
    }
    let names_a_path = matches!(
        e,
        wkw::Error::Io { .. }
            | wkw::Error::Format { .. }
            | wkw::Error::Lock { .. }
            | wkw::Error::AlreadyExists { .. }
            | wkw::Error::NotADataset { .. }
    );
    if names_a_path {
        exc(e.to_string())
    } else {
        exc(format!("{}: {e}", root.display()))
    }
}

/// The message for `e` that starts as wkw 1.1.24's message for the same failure (callers of the
/// reference match on those words), with our detail after it; `None` where the reference has no
/// message of its own for it. `name` renders a path (local paths, or URLs for remote datasets).
///
/// The reference's wording: a data file it cannot read is `Error while reading from file
/// "<file>": ` plus a phrase (`Corrupt jump table`, `Unexpected compressed block length N`,
/// `Error while reading LZ4 block`, `Could not read raw block`, `Error in
/// LZ4_decompress_safe`); a bad `header.wkw` is the phrase alone (`Sequence of magic bytes [..]
/// is invalid`, `Version number 'N' is invalid`, `Voxel type 'N' is invalid`, `Block type 'N' is
/// invalid`, `Could not read raw header`); `Dataset root "<root>" is not a directory`, `Could not
/// open header file "<file>"` and `Header "<file>" file already exists` for datasets.
pub(crate) fn reference_message(e: &wkw::Error, name: &dyn Fn(&Path) -> String) -> Option<String> {
    use wkw::FormatError as F;
    match e {
        wkw::Error::Format { path, source } => {
            let phrase = match source {
                F::JumpTableNotMonotone { .. } => "Corrupt jump table".to_owned(),
                F::BlockTooLong { length, .. } => {
                    format!("Unexpected compressed block length {length}")
                }
                F::BlockPastEnd { .. } => {
                    if stored_block_type(path).is_some_and(|b| b == 1) {
                        "Could not read raw block".to_owned()
                    } else {
                        "Error while reading LZ4 block".to_owned()
                    }
                }
                F::Decompress { .. } => "Error in LZ4_decompress_safe".to_owned(),
                F::BadMagic { found } => format!("Sequence of magic bytes {found:?} is invalid"),
                F::UnsupportedVersion(v) => format!("Version number '{v}' is invalid"),
                F::InvalidVoxelType(v) => format!("Voxel type '{v}' is invalid"),
                F::InvalidBlockType(v) => format!("Block type '{v}' is invalid"),
                F::Truncated { what, .. } if what.contains("jump table") => {
                    "Could not read jump table".to_owned()
                }
                F::Truncated { .. } => "Could not read raw header".to_owned(),
                _ => return None,
            };
            let file = name(path);
            if path.file_name().is_some_and(|n| n == "header.wkw") {
                Some(format!("{phrase}: {file}: {source}"))
            } else {
                Some(format!(
                    "Error while reading from file \"{file}\": {phrase}: {source}"
                ))
            }
        }
        wkw::Error::NotADataset { path } => {
            let header = path.join("header.wkw");
            Some(if path.is_dir() {
                format!(
                    "Could not open header file \"{}\": not a wkw dataset",
                    name(&header)
                )
            } else {
                format!(
                    "Dataset root \"{}\" is not a directory: not a wkw dataset",
                    name(path)
                )
            })
        }
        wkw::Error::AlreadyExists { path } => Some(dataset_exists(&name(path))),
        _ => None,
    }
}

/// The message for an existing dataset whose `header.wkw` is `header`: the reference's words
/// (`Header "…" file already exists`), then ours.
pub(crate) fn dataset_exists(header: &str) -> String {
    format!(
        "Header \"{header}\" file already exists: a dataset exists there (overwrite=True \
         replaces it)"
    )
}

/// The blockType byte of the local data file at `path` (1 raw, 2 LZ4, 3 LZ4HC), for the
/// reference's wording of a truncated block; `None` if it cannot be read.
fn stored_block_type(path: &Path) -> Option<u8> {
    use std::io::Read;
    let mut head = [0u8; 6];
    std::fs::File::open(path).ok()?.read_exact(&mut head).ok()?;
    Some(head[5])
}

/// Runs `f` without the GIL; a `wkw` error or a panic becomes a `WKWException`.
fn run<T: Send>(
    py: Python<'_>,
    root: &Path,
    f: impl FnOnce() -> wkw::Result<T> + Send,
) -> PyResult<T> {
    match detached(py, f) {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => Err(wkw_err(&e, root)),
        Err(panic) => Err(exc(format!("{}: {panic}", root.display()))),
    }
}

/// Calls `$body` with `$t` bound to the Rust type of voxel type `$vt`
/// (`wkw::with_voxel_type`); a voxel type this build does not know is a `WKWException`.
macro_rules! with_voxel {
    ($vt:expr, $t:ident => $body:expr) => {
        wkw::with_voxel_type!($vt, $t => $body, other => Err(exc(format!("unsupported voxel type {other:?}"))))
    };
}
pub(crate) use with_voxel;

/// The `threads` argument, or a `WKWException`.
pub(crate) fn thread_choice(threads: Option<usize>) -> PyResult<ThreadChoice> {
    ThreadChoice::new(threads).map_err(exc)
}

/// The dataset's thread mode for a `threads` choice: the calling thread only, or the
/// process's pool for that choice (the calling thread works too when it is outside the pool).
///
/// # Errors
/// A `WKWException` if the pool's threads cannot be started.
pub(crate) fn threads_mode(choice: ThreadChoice) -> PyResult<Threads> {
    Ok(match choice.pool().map_err(exc)? {
        None => Threads::Caller,
        Some(pool) => Threads::Pool(pool),
    })
}

/// The dataset options: the Python defaults are the reference's lenient header check (each
/// file decoded with its own block type) and errors for corrupt files.
pub(crate) fn options(threads: Threads, corrupt_as_zeros: bool, strict_headers: bool) -> Options {
    Options::default()
        .with_threads(threads)
        .with_header_check(if strict_headers {
            HeaderCheck::Strict
        } else {
            HeaderCheck::Lenient
        })
        .with_missing_or_corrupt(if corrupt_as_zeros {
            MissingOrCorrupt::Zeros
        } else {
            MissingOrCorrupt::Error
        })
}

pub(crate) fn parse_order(order: &str, root: &Path) -> PyResult<Order> {
    match order {
        "F" | "f" => Ok(Order::Fortran),
        "C" | "c" => Ok(Order::C),
        other => Err(exc(format!(
            "{}: order must be \"F\" or \"C\", not {other:?}",
            root.display()
        ))),
    }
}

/// Runs `f` on a worker thread that `cancel` stops when a signal handler raises (Ctrl-C; see
/// `common::interruptible`): then the handler's exception (`KeyboardInterrupt`) is raised;
/// otherwise a `wkw` error or a panic becomes a `WKWException`.
fn run_interruptible<T: Send>(
    py: Python<'_>,
    root: &Path,
    cancel: &Cancel,
    f: impl FnOnce() -> wkw::Result<T> + Send,
) -> PyResult<T> {
    match interruptible(py, cancel, f)? {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => Err(wkw_err(&e, root)),
        Err(panic) => Err(exc(format!("{}: {panic}", root.display()))),
    }
}

/// Boxes of at least this many bytes are read and written on a worker thread that Ctrl-C
/// stops between block rows (reads) or files (writes): such a call takes tens of milliseconds
/// or more, next to which the worker thread and reopening the dataset with the call's own
/// cancel flag (a read of `header.wkw`) cost little.
pub(crate) const INTERRUPTIBLE_BYTES: u64 = 64 << 20;

/// The bytes of a box of `shape` voxels of `header`'s voxel size (saturating).
pub(crate) fn box_bytes(header: &Header, shape: [u32; 3]) -> u64 {
    shape
        .iter()
        .fold(u64::from(header.voxel_size()), |acc, &n| {
            acc.saturating_mul(u64::from(n))
        })
}

/// A Python progress callback `progress(done, total)` called from worker threads (with the
/// GIL); its first exception is kept and raised when the call ends.
pub(crate) struct Callback {
    callback: Option<Py<PyAny>>,
    failed: Mutex<Option<PyErr>>,
}

impl Callback {
    pub(crate) fn new(callback: Option<Py<PyAny>>) -> Self {
        Self {
            callback,
            failed: Mutex::new(None),
        }
    }

    /// Calls the callback (unless an earlier call failed).
    pub(crate) fn call(&self, done: usize, total: usize) {
        let Some(cb) = &self.callback else { return };
        let mut failed = self.failed.lock().unwrap_or_else(PoisonError::into_inner);
        if failed.is_none()
            && let Err(e) = Python::attach(|py| cb.call1(py, (done, total)).map(drop))
        {
            *failed = Some(e);
        }
    }

    /// The first exception of the callback, if any.
    pub(crate) fn finish(self) -> PyResult<()> {
        match self
            .failed
            .into_inner()
            .unwrap_or_else(PoisonError::into_inner)
        {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

/// What is at the path a dataset is written to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Output {
    /// Nothing (or a dangling symlink).
    Missing,
    /// An empty directory.
    EmptyDir,
    /// A dataset (`header.wkw` inside).
    Dataset,
    /// A directory with other content.
    OtherDir,
    /// Not a directory (a file).
    File,
}

/// What is at `path` (symlinks followed).
fn output_state(path: &Path) -> std::io::Result<Output> {
    let meta = match std::fs::metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Output::Missing),
        Err(e) => return Err(e),
        Ok(m) => m,
    };
    if !meta.is_dir() {
        return Ok(Output::File);
    }
    if std::fs::symlink_metadata(path.join(wkw::HEADER_FILE_NAME)).is_ok() {
        return Ok(Output::Dataset);
    }
    Ok(if std::fs::read_dir(path)?.next().is_none() {
        Output::EmptyDir
    } else {
        Output::OtherDir
    })
}

/// How a dataset is written to `dst`.
enum Placement {
    /// Straight into `dst`.
    Direct,
    /// Complete in the hidden sibling, then put in place of `dst` (`scifmt_io::replace_dir`):
    /// an interrupted or failed call leaves `dst` as it was (the sibling is removed).
    Staged(PathBuf),
}

/// Decides how a whole dataset is written to `dst` (the checks of every dataset writer): a
/// dataset or a file there is refused without `overwrite` and replaced with it (the new
/// dataset is built beside `dst` and put in its place complete); a new dataset (`staged`) is
/// built beside `dst` too; a directory with other content is written into (as the reference
/// does: nothing in it is replaced).
///
/// # Errors
/// `OutputExistsError` for a dataset or a file without `overwrite`; `WKWException` if `dst`
/// cannot be inspected.
fn placement(py: Python<'_>, dst: &Path, overwrite: bool, staged: bool) -> PyResult<Placement> {
    let state = detached(py, || output_state(dst))
        .map_err(|m| exc(format!("{}: {m}", dst.display())))?
        .map_err(|e| exc(format!("{}: {e}", dst.display())))?;
    match state {
        Output::File if !overwrite => Err(OUTPUT_EXISTS.err(
            py,
            format!(
                "{} exists (a file, not a dataset): overwrite=True replaces it",
                dst.display()
            ),
        )),
        Output::Dataset if !overwrite => Err(OUTPUT_EXISTS.err(
            py,
            dataset_exists(&dst.join(wkw::HEADER_FILE_NAME).display().to_string()),
        )),
        Output::OtherDir => Ok(Placement::Direct),
        Output::Dataset | Output::File => Ok(Placement::Staged(staging(dst)?)),
        // A target without a name of its own (`.`) has no sibling: written directly.
        Output::Missing | Output::EmptyDir if staged => {
            Ok(staging(dst).map_or(Placement::Direct, Placement::Staged))
        }
        Output::Missing | Output::EmptyDir => Ok(Placement::Direct),
    }
}

/// A new hidden sibling of `dst` to build a replacement in (`.{name}.scifmt-new-{pid}-{n}`).
fn staging(dst: &Path) -> PyResult<PathBuf> {
    static COUNT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = COUNT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let tag = format!("scifmt-new-{}-{n}", std::process::id());
    scifmt_io::sibling(dst, &tag).map_err(|e| exc(e.to_string()))
}

/// Writes a dataset at `dst` through `place`: `build(path)` makes it at the path to use, then
/// a staged dataset is put in place of `dst` (a failed or cancelled build is removed).
fn place_dataset<T>(
    place: &Placement,
    dst: &Path,
    build: impl FnOnce(&Path) -> wkw::Result<T>,
) -> wkw::Result<T> {
    match place {
        Placement::Direct => build(dst),
        Placement::Staged(stage) => {
            let built = build(stage).map_err(|e| relabel(e, stage, dst));
            if built.is_ok() {
                scifmt_io::replace_dir(stage, dst, Durability::None)?;
            } else {
                let _ = std::fs::remove_dir_all(stage);
            }
            built
        }
    }
}

/// `e` with paths below `from` (a staging directory) shown below `to` (the target).
fn relabel(e: wkw::Error, from: &Path, to: &Path) -> wkw::Error {
    let moved = |p: PathBuf| match p.strip_prefix(from) {
        Ok(rest) => to.join(rest),
        Err(_) => p,
    };
    match e {
        wkw::Error::Io { path, source } => wkw::Error::Io {
            path: moved(path),
            source,
        },
        wkw::Error::Format { path, source } => wkw::Error::Format {
            path: moved(path),
            source,
        },
        wkw::Error::Lock { path, source } => wkw::Error::Lock {
            path: moved(path),
            source,
        },
        wkw::Error::AlreadyExists { path } => wkw::Error::AlreadyExists { path: moved(path) },
        e => e,
    }
}

/// Boxes touching at most this many blocks (a 2×2×2 neighbourhood) run on the calling thread
/// even when the dataset has a pool: handing a few block decodes to a pool and waiting for them
/// costs more than it saves (measured on 2 busy cores, 32³-voxel u8 LZ4 blocks: a 1-voxel read
/// 45 µs through the pool, 19 µs inline; a 32³ box touching 8 blocks 106 µs and 72 µs).
const INLINE_MAX_BLOCKS: u64 = 8;

/// An open dataset plus where its work runs.
#[derive(Debug)]
pub(crate) struct Open {
    ds: Dataset,
    /// The same dataset with `Threads::Caller`, for small boxes (`None` when `ds` is already
    /// single-threaded).
    inline: Option<Dataset>,
    /// The options `ds` was opened with, to open it again with a call's own cancel flag.
    opts: Options,
}

impl Open {
    fn new(ds: Dataset, threads: ThreadChoice, opts: Options) -> wkw::Result<Self> {
        let inline = if threads.caller_only() {
            None
        } else {
            Some(Dataset::open_with(
                ds.root(),
                opts.clone().with_threads(Threads::Caller),
            )?)
        };
        Ok(Self { ds, inline, opts })
    }

    /// Runs `f` on the dataset opened again with a new cancel flag, on a worker thread that
    /// Ctrl-C stops (see [`run_interruptible`]); for boxes of [`INTERRUPTIBLE_BYTES`] or more.
    fn run_interruptible<T: Send>(
        &self,
        py: Python<'_>,
        root: &Path,
        f: impl FnOnce(&Dataset) -> wkw::Result<T> + Send,
    ) -> PyResult<T> {
        let cancel = Cancel::new();
        let opts = self.opts.clone().with_cancel(cancel.clone());
        let at = self.ds.root();
        run_interruptible(py, root, &cancel, || f(&Dataset::open_with(at, opts)?))
    }

    /// Number of blocks the box touches (saturating).
    fn blocks_touched(&self, offset: [u32; 3], shape: [u32; 3]) -> u64 {
        let bl = u64::from(self.ds.header().block_len().max(1));
        offset.iter().zip(shape).fold(1u64, |acc, (&o, n)| {
            if n == 0 {
                return 0;
            }
            let (o, n) = (u64::from(o), u64::from(n));
            acc.saturating_mul((o + n - 1) / bl - o / bl + 1)
        })
    }

    /// Runs `f` without the GIL: on the calling thread only for a box touching few blocks (or
    /// `small`), else with the dataset's pool, whose threads join the calling thread (see
    /// `wkw::Threads::Pool`; handing the whole call to the pool instead would make this
    /// thread wait for a parked pool thread to wake up, then be woken itself).
    fn run<T: Send>(
        &self,
        py: Python<'_>,
        root: &Path,
        small: bool,
        f: impl FnOnce(&Dataset) -> wkw::Result<T> + Send,
    ) -> PyResult<T> {
        match (small, &self.inline) {
            (true, Some(inline)) => run(py, root, || f(inline)),
            _ => run(py, root, || f(&self.ds)),
        }
    }
}

/// `data` checked to be a 4-D numpy array, copied first if unaligned (Rust slices and
/// ndarray views must be aligned; e.g. `np.frombuffer` at an odd offset is not).
pub(crate) fn aligned_4d<'py>(data: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    let untyped = data
        .cast::<PyUntypedArray>()
        .map_err(|_| exc("Data must be a NumPy ndarray"))?;
    if untyped.ndim() != 4 {
        return Err(exc("Data must be four-dimensional (C, X, Y, Z)"));
    }
    let aligned: bool = data.getattr("flags")?.getattr("aligned")?.extract()?;
    if aligned {
        Ok(data.clone())
    } else {
        data.call_method0("copy")
    }
}

/// A read-only typed view of an [`aligned_4d`] array whose dtype must be voxel type `vt`.
pub(crate) fn typed_4d<'py, T: numpy::Element>(
    data: &Bound<'py, PyAny>,
    vt: VoxelType,
) -> PyResult<numpy::PyReadonlyArray4<'py, T>> {
    let typed = data.cast::<PyArray4<T>>().map_err(|_| {
        let dtype = data
            .getattr("dtype")
            .map_or_else(|_| "?".to_string(), |d| d.to_string());
        exc(format!(
            "Data elements must be of type {vt:?} (got {dtype})"
        ))
    })?;
    typed.try_readonly().map_err(|e| exc(e.to_string()))
}

/// An open dataset that `close` drops: later uses raise `WKWException` naming `what`.
#[derive(Debug)]
pub(crate) struct Closable<T>(Mutex<Option<Arc<T>>>);

impl<T> Closable<T> {
    pub(crate) fn new(open: T) -> Self {
        Self(Mutex::new(Some(Arc::new(open))))
    }

    /// The open value, or a `WKWException` if closed.
    pub(crate) fn get(&self, what: &dyn std::fmt::Display) -> PyResult<Arc<T>> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
            .ok_or_else(|| exc(format!("{what}: dataset is closed")))
    }

    /// Drops the value (calls running on it finish first); closing twice is allowed.
    pub(crate) fn close(&self) {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).take();
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .is_none()
    }
}

/// `(version, block_len, file_len, block_type, voxel_type, num_channels)` of `h`, with the
/// on-disk codes of block and voxel type (what the Python `Header` is built from).
pub(crate) fn header_fields(h: &Header) -> (u8, u32, u32, u8, u8, u8) {
    (
        wkw::VERSION,
        h.block_len(),
        h.file_len(),
        h.block_type().to_u8(),
        h.voxel_type().to_u8(),
        h.num_channels(),
    )
}

/// A dataset in a local directory (closed by `close`): one backend of
/// `wkw_dataset::RawDataset`.
#[derive(Debug)]
pub(crate) struct Local {
    pub(crate) root: PathBuf,
    pub(crate) inner: Closable<Open>,
}

impl Local {
    fn get(&self) -> PyResult<Arc<Open>> {
        self.inner.get(&self.root.display())
    }

    fn new(root: PathBuf, open: Open) -> Self {
        Self {
            root,
            inner: Closable::new(open),
        }
    }

    /// Opens the dataset at `root`.
    pub(crate) fn open(
        py: Python<'_>,
        root: PathBuf,
        threads: Option<usize>,
        corrupt_as_zeros: bool,
        strict_headers: bool,
    ) -> PyResult<Self> {
        let threads = thread_choice(threads)?;
        let opts = options(threads_mode(threads)?, corrupt_as_zeros, strict_headers);
        let r = root.clone();
        let open = run(py, &root, move || {
            Open::new(Dataset::open_with(r, opts.clone())?, threads, opts)
        })?;
        Ok(Self::new(root, open))
    }

    /// Creates a dataset at `root`: `voxel_type` is the on-disk code 1..=10, `block_type` 1..=3.
    /// An existing dataset is `OutputExistsError` unless `overwrite` (then a new empty dataset
    /// replaces it whole); a file at `root` is `NotADirectoryError`.
    #[allow(clippy::too_many_arguments)] // the header fields and the options
    pub(crate) fn create(
        py: Python<'_>,
        root: PathBuf,
        voxel_type: u8,
        num_channels: u8,
        block_len: u32,
        file_len: u32,
        block_type: u8,
        threads: Option<usize>,
        corrupt_as_zeros: bool,
        strict_headers: bool,
        overwrite: bool,
    ) -> PyResult<Self> {
        let vt = VoxelType::from_u8(voxel_type).map_err(|e| exc(e.to_string()))?;
        let bt = BlockType::from_u8(block_type).map_err(|e| exc(e.to_string()))?;
        let header = Header::new(vt, num_channels, block_len, file_len, bt)
            .map_err(|e| wkw_err(&e, &root))?;
        let threads = thread_choice(threads)?;
        let opts = options(threads_mode(threads)?, corrupt_as_zeros, strict_headers);
        let place = placement(py, &root, overwrite, false)?;
        let r = root.clone();
        let open = run(py, &root, move || {
            place_dataset(&place, &r, |at| {
                Dataset::create_with(at, header, opts.clone()).map(drop)
            })?;
            Open::new(Dataset::open_with(&r, opts.clone())?, threads, opts)
        })?;
        Ok(Self::new(root, open))
    }

    /// `(version, block_len, file_len, block_type, voxel_type, num_channels)` with the on-disk
    /// codes of block and voxel type.
    pub(crate) fn header_fields(&self) -> PyResult<(u8, u32, u32, u8, u8, u8)> {
        Ok(header_fields(self.get()?.ds.header()))
    }

    /// Reads the box at `offset` of `shape` voxels as a numpy array of shape (C, X, Y, Z) in
    /// `order` ("F": Fortran-contiguous like the reference, "C": C-contiguous).
    pub(crate) fn read<'py>(
        &self,
        py: Python<'py>,
        offset: [u32; 3],
        shape: [u32; 3],
        order: &str,
    ) -> PyResult<Bound<'py, PyAny>> {
        let order = parse_order(order, &self.root)?;
        let open = self.get()?;
        let vt = open.ds.header().voxel_type();
        let large = box_bytes(open.ds.header(), shape) >= INTERRUPTIBLE_BYTES;
        with_voxel!(vt, T => {
            let read = |ds: &Dataset| ds.read(offset, shape, order)?.into_ndarray::<T>();
            let arr = if large {
                open.run_interruptible(py, &self.root, read)?
            } else {
                let small = open.blocks_touched(offset, shape) <= INLINE_MAX_BLOCKS;
                open.run(py, &self.root, small, read)?
            };
            Ok(PyArray4::from_owned_array(py, arr).into_any())
        })
    }

    /// Writes a 4-D numpy array (C, X, Y, Z) of the dataset's dtype at `offset`, from any
    /// strides (contiguous arrays without a copy).
    pub(crate) fn write(
        &self,
        py: Python<'_>,
        offset: [u32; 3],
        data: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        let open = self.get()?;
        let vt = open.ds.header().voxel_type();
        let data = aligned_4d(data)?;
        with_voxel!(vt, T => {
            let ro = typed_4d::<T>(&data, vt)?;
            let view = ro.as_array();
            // Raw files are written block by block; a compressed file is decoded and
            // recompressed whole, which the pool speeds up whatever the box.
            let shape = [view.dim().1, view.dim().2, view.dim().3]
                .map(|n| u32::try_from(n).unwrap_or(u32::MAX));
            if box_bytes(open.ds.header(), shape) >= INTERRUPTIBLE_BYTES {
                return open.run_interruptible(py, &self.root, |ds| ds.write_ndarray(offset, view));
            }
            let small = !open.ds.header().block_type().is_compressed()
                && open.blocks_touched(offset, shape) <= INLINE_MAX_BLOCKS;
            open.run(py, &self.root, small, |ds| ds.write_ndarray(offset, view))
        })
    }

    /// Paths of every data file, sorted by z, y, x.
    pub(crate) fn list_files<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let open = self.get()?;
        let files = open.run(py, &self.root, true, Dataset::list_files)?;
        PyList::new(py, files.into_iter().map(|(_, p)| p))
    }
}

/// Converts every data file of the dataset at `src` into a new dataset at `dst` with block type
/// `block_type` (1..=3); `progress(done, total)` is called after each file. `dst` must not be
/// `src`, inside it or around it (`OverlapError`); an existing dataset there is
/// `OutputExistsError` unless `overwrite`. A new dataset (or one replacing an old one) is built
/// beside `dst` and put in place complete, so an interrupted or failed call leaves `dst` as it
/// was. Ctrl-C stops it between files and batches of blocks (`KeyboardInterrupt`).
#[pyfunction]
#[pyo3(signature = (src, dst, block_type, threads=None, overwrite=false, progress=None))]
pub(crate) fn compress(
    py: Python<'_>,
    src: PathBuf,
    dst: PathBuf,
    block_type: u8,
    threads: Option<usize>,
    overwrite: bool,
    progress: Option<Py<PyAny>>,
) -> PyResult<()> {
    let bt = BlockType::from_u8(block_type).map_err(|e| exc(e.to_string()))?;
    let threads = thread_choice(threads)?;
    let cancel = Cancel::new();
    let opts = options(threads_mode(threads)?, false, false).with_cancel(cancel.clone());
    let pool = threads.pool().map_err(exc)?;
    detached(py, || apart(&src, &dst))
        .map_err(exc)?
        .map_err(|m| OVERLAP.err(py, m))?;
    let place = placement(py, &dst, overwrite, true)?;
    let callback = Callback::new(progress);
    let report = |p: wkw::Progress<'_>| callback.call(p.done, p.total);
    let work = || -> wkw::Result<()> {
        place_dataset(&place, &dst, |at| {
            wkw::compress(&src, at, bt, opts, &report).map(drop)
        })
    };
    run_interruptible(py, &src, &cancel, || in_pool(pool, work))?;
    callback.finish()
}

/// Checks every data file of the dataset at `root`: a list of `(path, problem)` for the files
/// with a problem (empty when all are sound); `progress(done, total)` is called after each
/// file. Ctrl-C stops it between files and blocks (`KeyboardInterrupt`).
#[pyfunction]
#[pyo3(signature = (root, threads=None, progress=None))]
pub(crate) fn verify(
    py: Python<'_>,
    root: PathBuf,
    threads: Option<usize>,
    progress: Option<Py<PyAny>>,
) -> PyResult<Vec<(PathBuf, String)>> {
    let threads = thread_choice(threads)?;
    let cancel = Cancel::new();
    let opts = options(threads_mode(threads)?, false, false).with_cancel(cancel.clone());
    let pool = threads.pool().map_err(exc)?;
    let callback = Callback::new(progress);
    let report = |p: wkw::Progress<'_>| callback.call(p.done, p.total);
    let work = || -> wkw::Result<Vec<(PathBuf, String)>> {
        let report = wkw::verify(&root, opts, &report)?;
        Ok(report
            .problems()
            .map(|f| {
                let msg = f
                    .problem
                    .as_ref()
                    .map_or_else(String::new, ToString::to_string);
                (f.path.clone(), msg)
            })
            .collect())
    };
    let problems = run_interruptible(py, &root, &cancel, || in_pool(pool, work))?;
    callback.finish()?;
    Ok(problems)
}
