//! `scifmt._scifmt.convert`: WKW ↔ Zarr v3 conversions through `wkw-zarr`, in the three steps
//! `plan`, `convert_units` and `finish` (so `scifmt.convert` can hand the units to Dask
//! workers), plus `verify`.
//!
//! Every call releases the GIL and runs under `catch_unwind`. Conversion failures raise
//! `scifmt.ConvertError` with `wkw-zarr`'s message (it names the file or URL, never
//! credentials): an existing target as `TargetExistsError` (also a `FileExistsError`), a target
//! that is the source, inside it or around it as `OverlapError` (also a `ValueError`); invalid
//! option values raise `ValueError`, wrong types `TypeError`. `convert_units` and `verify` run
//! on a worker thread and honour Ctrl-C (`common::interruptible`): the conversion stops between
//! batches of blocks, its completed shards stay, and the `KeyboardInterrupt` propagates.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use blosc_chunk::{Blocksize, BloscShuffle, Codec};
use pyo3::exceptions::{PyException, PyFileExistsError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use wkw_zarr::{
    BlockType, Cancel, ConvertOptions, Durability, Existing, Format, Location, Plan, Progress,
    Summary, ZarrCodec,
};

use crate::common::{TwoBaseException, detached, interruptible};

pyo3::create_exception!(
    scifmt,
    ConvertError,
    PyException,
    "Raised when a conversion (``scifmt.convert``) fails: the message names the file or URL."
);

/// The target exists (neither `overwrite=True` nor `resume=True`): a `ConvertError` and a
/// `FileExistsError`.
static TARGET_EXISTS: TwoBaseException = TwoBaseException::new(
    "scifmt._scifmt.convert",
    "TargetExistsError",
    "The target of ``scifmt.convert`` exists: ``overwrite=True`` replaces it, ``resume=True`` \
     continues an interrupted conversion (a ``ConvertError`` and a ``FileExistsError``).",
    |py| {
        [
            py.get_type::<ConvertError>(),
            py.get_type::<PyFileExistsError>(),
        ]
    },
);

/// The target is the source, inside it or around it: a `ConvertError` and a `ValueError`.
static OVERLAP: TwoBaseException = TwoBaseException::new(
    "scifmt._scifmt.convert",
    "OverlapError",
    "The target of ``scifmt.convert`` is its source, lies inside it or contains it (a \
     ``ConvertError`` and a ``ValueError``).",
    |py| [py.get_type::<ConvertError>(), py.get_type::<PyValueError>()],
);

/// Adds the `convert` submodule to `parent`.
///
/// # Errors
/// A Python error if the module cannot be created or registered.
pub(crate) fn register(parent: &Bound<'_, PyModule>) -> PyResult<()> {
    crate::common::add_submodule(parent, "convert", |m| {
        m.add("ConvertError", m.py().get_type::<ConvertError>())?;
        m.add("TargetExistsError", TARGET_EXISTS.class(m.py())?)?;
        m.add("OverlapError", OVERLAP.class(m.py())?)?;
        m.add_function(wrap_pyfunction!(plan, m)?)?;
        m.add_function(wrap_pyfunction!(convert_units, m)?)?;
        m.add_function(wrap_pyfunction!(finish, m)?)?;
        m.add_function(wrap_pyfunction!(verify, m)?)?;
        Ok(())
    })
}

/// The most threads a call may ask for.
const MAX_JOBS: i64 = 1024;

/// The options of a conversion from the Python arguments.
///
/// # Errors
/// `ValueError` for a value out of its range or a name not among the choices.
fn options(
    codec: &str,
    zstd_level: Option<i64>,
    blosc: Option<BloscArgs>,
    block_type: &str,
    fsync: bool,
    jobs: Option<i64>,
    existing: &str,
) -> PyResult<ConvertOptions> {
    let level = match zstd_level {
        None => None,
        Some(l) if (-131_072..=22).contains(&l) => Some(i32::try_from(l).unwrap_or(5)),
        Some(l) => {
            return Err(PyValueError::new_err(format!(
                "zstd_level={l}: must be in -131072..=22"
            )));
        }
    };
    if blosc.is_some() && codec != "blosc" {
        return Err(PyValueError::new_err("blosc settings need codec=\"blosc\""));
    }
    let codec = match (codec, level) {
        ("blosc", None) => blosc_codec(blosc.unwrap_or_default())?,
        ("blosc", Some(l)) => {
            return Err(PyValueError::new_err(format!(
                "zstd_level={l} needs codec=\"zstd\" (blosc takes clevel)"
            )));
        }
        ("none", _) => ZarrCodec::None,
        ("zstd", l) => ZarrCodec::Zstd {
            level: l.unwrap_or(5),
        },
        ("auto", None | Some(5)) => ZarrCodec::Auto,
        ("auto", Some(l)) => {
            return Err(PyValueError::new_err(format!(
                "zstd_level={l} needs codec=\"zstd\" (\"auto\" writes level 5 like webknossos-libs)"
            )));
        }
        (other, _) => {
            return Err(PyValueError::new_err(format!(
                "codec={other:?}: must be \"auto\", \"zstd\", \"blosc\" or \"none\""
            )));
        }
    };
    let block_type = choice(
        "block_type",
        block_type,
        &[
            ("raw", BlockType::Raw),
            ("lz4", BlockType::Lz4),
            ("lz4hc", BlockType::Lz4Hc),
        ],
    )?;
    let threads = match jobs {
        None => 0,
        Some(n) if (1..=MAX_JOBS).contains(&n) => usize::try_from(n).unwrap_or(1),
        Some(n) => {
            return Err(PyValueError::new_err(format!(
                "jobs={n}: must be 1..={MAX_JOBS} (or None for every core)"
            )));
        }
    };
    let existing = choice(
        "existing",
        existing,
        &[
            ("refuse", Existing::Refuse),
            ("overwrite", Existing::Overwrite),
            ("resume", Existing::Resume),
        ],
    )?;
    Ok(ConvertOptions::default()
        .with_codec(codec)
        .with_block_type(block_type)
        .with_threads(threads)
        .with_existing(existing)
        .with_durability(if fsync {
            Durability::Fsync
        } else {
            Durability::None
        }))
}

/// The `blosc` settings from Python: `(cname, clevel, shuffle, typesize, blocksize)`, each
/// `None` for the default (`zstd`, 5, `auto`, the voxel size, automatic).
type BloscArgs = (
    Option<String>,
    Option<i64>,
    Option<String>,
    Option<i64>,
    Option<i64>,
);

/// The Zarr `blosc` codec the Python settings ask for.
///
/// # Errors
/// `ValueError` for a value out of its range or a name not among the choices.
fn blosc_codec((cname, clevel, shuffle, typesize, blocksize): BloscArgs) -> PyResult<ZarrCodec> {
    let cname = cname.as_deref().unwrap_or("zstd");
    let cname =
        Codec::from_cname(cname).map_err(|e| PyValueError::new_err(format!("blosc_cname: {e}")))?;
    let clevel = match clevel.unwrap_or(5) {
        l @ 0..=9 => u8::try_from(l).unwrap_or(5),
        l => return Err(PyValueError::new_err(format!("clevel={l}: must be 0..=9"))),
    };
    let shuffle = match shuffle.as_deref() {
        None => BloscShuffle::AutoShuffle,
        Some(s) => s
            .parse()
            .map_err(|e| PyValueError::new_err(format!("shuffle: {e}")))?,
    };
    let typesize = match typesize {
        None => None,
        Some(t @ 1..=255) => Some(u8::try_from(t).unwrap_or(1)),
        Some(t) => {
            return Err(PyValueError::new_err(format!(
                "typesize={t}: must be 1..=255"
            )));
        }
    };
    let blocksize = match blocksize.unwrap_or(0) {
        b @ 0..=0x7fff_ffff => Blocksize::from_bytes(usize::try_from(b).unwrap_or(0)),
        b => {
            return Err(PyValueError::new_err(format!(
                "blocksize={b}: must be 0 (automatic) ..= 2147483647"
            )));
        }
    };
    Ok(ZarrCodec::Blosc {
        cname,
        clevel,
        shuffle,
        typesize,
        blocksize,
    })
}

/// The format `to` names.
fn format(to: &str) -> PyResult<Format> {
    choice("to", to, &[("zarr3", Format::Zarr3), ("wkw", Format::Wkw)])
}

/// The value `name` picks among `choices` (the Python keyword `what`).
///
/// # Errors
/// `ValueError` naming `what`, `name` and the choices when `name` is not among them.
fn choice<T: Copy>(what: &str, name: &str, choices: &[(&str, T)]) -> PyResult<T> {
    choices
        .iter()
        .find(|(n, _)| *n == name)
        .map(|&(_, v)| v)
        .ok_or_else(|| {
            let names: Vec<&str> = choices.iter().map(|&(n, _)| n).collect();
            PyValueError::new_err(format!("{what}={name:?}: must be one of {names:?}"))
        })
}

/// The Python exception for `e`: `TargetExistsError` (naming the target and the keywords that
/// replace or continue it), `OverlapError`, else `ConvertError`.
fn convert_err(py: Python<'_>, e: &wkw_zarr::Error) -> PyErr {
    match e {
        wkw_zarr::Error::TargetExists {
            path, files, bytes, ..
        } => TARGET_EXISTS.err(
            py,
            format!(
                "target exists: {} ({files} files, {bytes} bytes): overwrite=True replaces it \
                 (the new target is built beside it and replaces it only when complete), \
                 resume=True continues an interrupted conversion",
                path.display()
            ),
        ),
        wkw_zarr::Error::Overlap(_) => OVERLAP.err(py, e.to_string()),
        _ => ConvertError::new_err(e.to_string()),
    }
}

/// Runs `f` without the GIL; its error or panic becomes a `ConvertError` (see
/// [`convert_err`]).
fn run<T: Send>(py: Python<'_>, f: impl FnOnce() -> wkw_zarr::Result<T> + Send) -> PyResult<T> {
    match detached(py, f) {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => Err(convert_err(py, &e)),
        Err(panic) => Err(ConvertError::new_err(panic)),
    }
}

/// [`run`] on a worker thread that `cancel` stops when a signal handler raises (Ctrl-C): then
/// the handler's exception (`KeyboardInterrupt`) is raised.
fn run_interruptible<T: Send>(
    py: Python<'_>,
    cancel: &Cancel,
    f: impl FnOnce() -> wkw_zarr::Result<T> + Send,
) -> PyResult<T> {
    match interruptible(py, cancel, f)? {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => Err(convert_err(py, &e)),
        Err(panic) => Err(ConvertError::new_err(panic)),
    }
}

/// Both sides of a conversion: local paths or URLs (configured from the environment, then
/// `storage_options`).
fn locations(
    src: &str,
    dst: &str,
    storage_options: Option<Vec<(String, String)>>,
) -> wkw_zarr::Result<(Location, Location)> {
    let config = storage_options.unwrap_or_default();
    Ok((
        Location::parse(src, &config)?,
        Location::parse(dst, &config)?,
    ))
}

/// A plan for Python: its JSON, `(unit id, source bytes)` of every unit, and the number of
/// arrays.
type Planned = (String, Vec<(String, u64)>, usize);

/// Prepares the conversion of `src` into `to` at `dst` (the target refused, emptied or resumed
/// as `existing` says, and marked): `(plan as JSON, [(unit id, source bytes)], arrays)`.
#[pyfunction]
#[pyo3(signature = (src, dst, to, *, codec="auto", zstd_level=None, blosc=None, block_type="lz4", fsync=false, existing="refuse", storage_options=None))]
#[allow(
    clippy::too_many_arguments,
    reason = "the keyword options of scifmt.convert"
)]
fn plan(
    py: Python<'_>,
    src: String,
    dst: String,
    to: &str,
    codec: &str,
    zstd_level: Option<i64>,
    blosc: Option<BloscArgs>,
    block_type: &str,
    fsync: bool,
    existing: &str,
    storage_options: Option<Vec<(String, String)>>,
) -> PyResult<Planned> {
    let to = format(to)?;
    let opts = options(codec, zstd_level, blosc, block_type, fsync, None, existing)?;
    run(py, move || {
        let (src, dst) = locations(&src, &dst, storage_options)?;
        let plan = wkw_zarr::plan(src, dst, to, &opts)?;
        let units = plan
            .units()
            .iter()
            .map(|u| (u.id().to_owned(), u.source_bytes()))
            .collect();
        Ok((plan.to_json(), units, plan.arrays()))
    })
}

/// A summary as a dict of the `Summary` fields.
fn summary_dict<'py>(py: Python<'py>, s: &Summary) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("arrays", s.arrays)?;
    d.set_item("shards_written", s.shards_written)?;
    d.set_item("shards_skipped", s.shards_skipped)?;
    d.set_item("shards_empty", s.shards_empty)?;
    d.set_item("blocks", s.blocks)?;
    d.set_item("bytes_in", s.bytes_in)?;
    d.set_item("bytes_out", s.bytes_out)?;
    Ok(d)
}

/// Converts the units `ids` of the plan `plan_json` on `jobs` threads; `progress(done, total)`
/// is called after each unit (with the GIL; its first exception is raised at the end). The
/// summary's `arrays` counts the arrays touched. Ctrl-C stops it between batches of blocks
/// (`KeyboardInterrupt`; the completed shards stay, the target stays resumable).
#[pyfunction]
#[pyo3(signature = (src, dst, plan_json, ids, *, codec="auto", zstd_level=None, blosc=None, block_type="lz4", fsync=false, jobs=None, storage_options=None, progress=None))]
#[allow(
    clippy::too_many_arguments,
    reason = "the keyword options of scifmt.convert"
)]
fn convert_units<'py>(
    py: Python<'py>,
    src: String,
    dst: String,
    plan_json: &str,
    ids: Vec<String>,
    codec: &str,
    zstd_level: Option<i64>,
    blosc: Option<BloscArgs>,
    block_type: &str,
    fsync: bool,
    jobs: Option<i64>,
    storage_options: Option<Vec<(String, String)>>,
    progress: Option<Py<PyAny>>,
) -> PyResult<Bound<'py, PyDict>> {
    let cancel = Cancel::new();
    let opts = options(codec, zstd_level, blosc, block_type, fsync, jobs, "refuse")?
        .with_cancel(cancel.clone());
    let plan = Plan::from_json(plan_json).map_err(|e| PyValueError::new_err(e.to_string()))?;
    let total = ids.len() as u64;
    let done = AtomicU64::new(0);
    let failed: Mutex<Option<PyErr>> = Mutex::new(None);
    let report = |_: &Progress| {
        let n = done.fetch_add(1, Ordering::Relaxed) + 1;
        let Some(cb) = &progress else { return };
        let mut failed = failed
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if failed.is_none()
            && let Err(e) = Python::attach(|py| cb.call1(py, (n, total)).map(drop))
        {
            *failed = Some(e);
        }
    };
    let summary = run_interruptible(py, &cancel, || {
        let (src, dst) = locations(&src, &dst, storage_options)?;
        wkw_zarr::convert_units(src, dst, &plan, &ids, &opts, &report)
    })?;
    if let Some(e) = failed
        .into_inner()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
    {
        return Err(e);
    }
    summary_dict(py, &summary)
}

/// Completes the plan `plan_json` once all its units are converted: the metadata, then the
/// marker removed.
#[pyfunction]
#[pyo3(signature = (src, dst, plan_json, *, codec="auto", zstd_level=None, blosc=None, block_type="lz4", fsync=false, storage_options=None))]
#[allow(
    clippy::too_many_arguments,
    reason = "the keyword options of scifmt.convert"
)]
fn finish(
    py: Python<'_>,
    src: String,
    dst: String,
    plan_json: &str,
    codec: &str,
    zstd_level: Option<i64>,
    blosc: Option<BloscArgs>,
    block_type: &str,
    fsync: bool,
    storage_options: Option<Vec<(String, String)>>,
) -> PyResult<()> {
    let opts = options(codec, zstd_level, blosc, block_type, fsync, None, "refuse")?;
    let plan = Plan::from_json(plan_json).map_err(|e| PyValueError::new_err(e.to_string()))?;
    run(py, move || {
        let (src, dst) = locations(&src, &dst, storage_options)?;
        wkw_zarr::finish(src, dst, &plan, &opts)
    })
}

/// Compares the WKW and Zarr sides (paths or URLs) block by block: `(blocks compared,
/// differing blocks, descriptions of the first differences)`. Ctrl-C stops it between batches
/// of blocks (`KeyboardInterrupt`).
#[pyfunction]
#[pyo3(signature = (src, dst, *, jobs=None, storage_options=None))]
fn verify(
    py: Python<'_>,
    src: String,
    dst: String,
    jobs: Option<i64>,
    storage_options: Option<Vec<(String, String)>>,
) -> PyResult<(u64, u64, Vec<String>)> {
    let cancel = Cancel::new();
    let opts =
        options("auto", None, None, "lz4", false, jobs, "refuse")?.with_cancel(cancel.clone());
    run_interruptible(py, &cancel, move || {
        let (src, dst) = locations(&src, &dst, storage_options)?;
        let report = wkw_zarr::verify(src, dst, &opts, &|_| {})?;
        Ok((
            report.blocks,
            report.differing_blocks,
            report.differences.iter().map(ToString::to_string).collect(),
        ))
    })
}
