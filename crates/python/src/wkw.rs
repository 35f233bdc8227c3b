//! `scifmt._scifmt.wkw`: the Rust core of `scifmt.wkw` (the Python layer in
//! `python/scifmt/wkw/wkw.py` keeps the reference package's names and argument checks).
//!
//! Every method releases the GIL while it touches files or decodes, and runs its work under
//! `catch_unwind`: errors and panics both arrive in Python as `WKWException` whose message is
//! the `wkw` crate's, with the file or dataset path.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use numpy::{PyArray4, PyArrayMethods, PyUntypedArray, PyUntypedArrayMethods};
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use pyo3::types::PyList;
use wkw::{
    BlockType, Dataset, Header, HeaderCheck, MissingOrCorrupt, Options, Order, Threads, VoxelType,
};

use crate::common::{ThreadChoice, detached, in_pool};

pyo3::create_exception!(
    scifmt.wkw,
    WKWException,
    PyException,
    "Raised for every error of a WKW dataset operation (the reference package's exception)."
);

/// Adds the `wkw` submodule to `parent`.
///
/// # Errors
/// A Python error if the module cannot be created.
pub(crate) fn register(parent: &Bound<'_, PyModule>) -> PyResult<()> {
    crate::common::add_submodule(parent, "wkw", |m| {
        m.add("WKWException", m.py().get_type::<WKWException>())?;
        m.add_class::<RawDataset>()?;
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
        return exc(msg);
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
        wkw::Error::AlreadyExists { path } => Some(format!(
            "Header \"{}\" file already exists: a dataset exists there",
            name(path)
        )),
        _ => None,
    }
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

/// Calls `$body` with `$t` bound to the Rust type of voxel type `$vt`.
macro_rules! with_voxel {
    ($vt:expr, $t:ident => $body:expr) => {
        match $vt {
            VoxelType::U8 => {
                type $t = u8;
                $body
            }
            VoxelType::U16 => {
                type $t = u16;
                $body
            }
            VoxelType::U32 => {
                type $t = u32;
                $body
            }
            VoxelType::U64 => {
                type $t = u64;
                $body
            }
            VoxelType::F32 => {
                type $t = f32;
                $body
            }
            VoxelType::F64 => {
                type $t = f64;
                $body
            }
            VoxelType::I8 => {
                type $t = i8;
                $body
            }
            VoxelType::I16 => {
                type $t = i16;
                $body
            }
            VoxelType::I32 => {
                type $t = i32;
                $body
            }
            VoxelType::I64 => {
                type $t = i64;
                $body
            }
            other => Err(exc(format!("unsupported voxel type {other:?}"))),
        }
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

/// Boxes touching at most this many blocks (a 2×2×2 neighbourhood) run on the calling thread
/// even when the dataset has a pool: handing a few block decodes to a pool and waiting for them
/// costs more than it saves (measured on 2 busy cores, 32³-voxel u8 LZ4 blocks: a 1-voxel read
/// 45 µs through the pool, 19 µs inline; a 32³ box touching 8 blocks 106 µs and 72 µs).
const INLINE_MAX_BLOCKS: u64 = 8;

/// An open dataset plus where its work runs.
#[derive(Debug)]
struct Open {
    ds: Dataset,
    /// The same dataset with `Threads::Caller`, for small boxes (`None` when `ds` is already
    /// single-threaded).
    inline: Option<Dataset>,
}

impl Open {
    fn new(ds: Dataset, threads: ThreadChoice, opts: Options) -> wkw::Result<Self> {
        let inline = if threads.caller_only() {
            None
        } else {
            Some(Dataset::open_with(
                ds.root(),
                opts.with_threads(Threads::Caller),
            )?)
        };
        Ok(Self { ds, inline })
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

/// The Rust side of `scifmt.wkw.Dataset`: an open dataset (closed by `close`).
#[pyclass(module = "scifmt._scifmt.wkw", frozen)]
#[derive(Debug)]
pub(crate) struct RawDataset {
    root: PathBuf,
    inner: Closable<Open>,
}

impl RawDataset {
    fn get(&self) -> PyResult<Arc<Open>> {
        self.inner.get(&self.root.display())
    }

    fn new(root: PathBuf, open: Open) -> Self {
        Self {
            root,
            inner: Closable::new(open),
        }
    }
}

#[pymethods]
impl RawDataset {
    /// Opens the dataset at `root`.
    #[staticmethod]
    #[pyo3(signature = (root, threads=None, corrupt_as_zeros=false, strict_headers=false))]
    fn open(
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
            Open::new(Dataset::open_with(r, opts)?, threads, opts)
        })?;
        Ok(Self::new(root, open))
    }

    /// Creates a dataset at `root`: `voxel_type` is the on-disk code 1..=10, `block_type` 1..=3.
    #[staticmethod]
    #[pyo3(signature = (root, voxel_type, num_channels, block_len, file_len, block_type, threads=None, corrupt_as_zeros=false, strict_headers=false))]
    #[allow(clippy::too_many_arguments)] // the header fields and the options
    fn create(
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
    ) -> PyResult<Self> {
        let vt = VoxelType::from_u8(voxel_type).map_err(|e| exc(e.to_string()))?;
        let bt = BlockType::from_u8(block_type).map_err(|e| exc(e.to_string()))?;
        let header = Header::new(vt, num_channels, block_len, file_len, bt)
            .map_err(|e| wkw_err(&e, &root))?;
        let threads = thread_choice(threads)?;
        let opts = options(threads_mode(threads)?, corrupt_as_zeros, strict_headers);
        let r = root.clone();
        let open = run(py, &root, move || {
            Open::new(Dataset::create_with(r, header, opts)?, threads, opts)
        })?;
        Ok(Self::new(root, open))
    }

    /// The dataset root as given.
    #[getter]
    fn root(&self) -> PathBuf {
        self.root.clone()
    }

    /// `(version, block_len, file_len, block_type, voxel_type, num_channels)` with the on-disk
    /// codes of block and voxel type.
    fn header_fields(&self) -> PyResult<(u8, u32, u32, u8, u8, u8)> {
        Ok(header_fields(self.get()?.ds.header()))
    }

    /// Reads the box at `offset` of `shape` voxels as a numpy array of shape (C, X, Y, Z) in
    /// `order` ("F": Fortran-contiguous like the reference, "C": C-contiguous).
    #[pyo3(signature = (offset, shape, order="F"))]
    fn read<'py>(
        &self,
        py: Python<'py>,
        offset: [u32; 3],
        shape: [u32; 3],
        order: &str,
    ) -> PyResult<Bound<'py, PyAny>> {
        let order = parse_order(order, &self.root)?;
        let open = self.get()?;
        let vt = open.ds.header().voxel_type();
        with_voxel!(vt, T => {
            let small = open.blocks_touched(offset, shape) <= INLINE_MAX_BLOCKS;
            let arr = open.run(py, &self.root, small, |ds| {
                ds.read(offset, shape, order)?.into_ndarray::<T>()
            })?;
            Ok(PyArray4::from_owned_array(py, arr).into_any())
        })
    }

    /// Writes a 4-D numpy array (C, X, Y, Z) of the dataset's dtype at `offset`, from any
    /// strides (contiguous arrays without a copy).
    fn write(&self, py: Python<'_>, offset: [u32; 3], data: &Bound<'_, PyAny>) -> PyResult<()> {
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
            let small = !open.ds.header().block_type().is_compressed()
                && open.blocks_touched(offset, shape) <= INLINE_MAX_BLOCKS;
            open.run(py, &self.root, small, |ds| ds.write_ndarray(offset, view))
        })
    }

    /// Paths of every data file, sorted by z, y, x.
    fn list_files<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let open = self.get()?;
        let files = open.run(py, &self.root, true, Dataset::list_files)?;
        PyList::new(py, files.into_iter().map(|(_, p)| p))
    }

    /// Closes the dataset; later calls raise `WKWException`. Closing twice is allowed.
    fn close(&self) {
        self.inner.close();
    }

    /// Whether `close` was called.
    #[getter]
    fn closed(&self) -> bool {
        self.inner.is_closed()
    }
}

/// Converts every data file of the dataset at `src` into a new dataset at `dst` with block type
/// `block_type` (1..=3).
#[pyfunction]
#[pyo3(signature = (src, dst, block_type, threads=None))]
fn compress(
    py: Python<'_>,
    src: PathBuf,
    dst: PathBuf,
    block_type: u8,
    threads: Option<usize>,
) -> PyResult<()> {
    let bt = BlockType::from_u8(block_type).map_err(|e| exc(e.to_string()))?;
    let threads = thread_choice(threads)?;
    let opts = options(threads_mode(threads)?, false, false);
    let pool = threads.pool().map_err(exc)?;
    let work = || -> wkw::Result<()> { wkw::compress(&src, &dst, bt, opts, &|_| {}).map(drop) };
    run(py, &src, || in_pool(pool, work))
}

/// Checks every data file of the dataset at `root`: a list of `(path, problem)` for the files
/// with a problem (empty when all are sound).
#[pyfunction]
#[pyo3(signature = (root, threads=None))]
fn verify(
    py: Python<'_>,
    root: PathBuf,
    threads: Option<usize>,
) -> PyResult<Vec<(PathBuf, String)>> {
    let threads = thread_choice(threads)?;
    let opts = options(threads_mode(threads)?, false, false);
    let pool = threads.pool().map_err(exc)?;
    let work = || -> wkw::Result<Vec<(PathBuf, String)>> {
        let report = wkw::verify(&root, opts, &|_| {})?;
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
    run(py, &root, || in_pool(pool, work))
}
