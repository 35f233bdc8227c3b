//! `scifmt._scifmt.virtualize`: WKW data and b2nd arrays as virtual Zarr v3 references, through
//! `scifmt_cli::virtualize_sources`, the sources of `scifmt virtualize` laid out as the command
//! lays them out (one at the root, several each under its name; a source is a b2nd frame when
//! `blosc2_frame::is_frame_source` says so, WKW otherwise).
//!
//! * `virtualize(sources, dst, to, …)` streams the references into an Icechunk repository
//!   (`scifmt_io::IcechunkWriter`, with the `icechunk` feature: a new one, or a new commit on an
//!   existing one), a kerchunk JSON file or object (`scifmt_io::KerchunkWriter`) or a kerchunk
//!   Parquet directory (`scifmt_io::KerchunkParquetWriter`), like `scifmt virtualize … --to TO`,
//!   and returns the summary as a dict.
//! * `collect(sources, …)` gathers them in memory for `scifmt.virtual.WKWParser` and
//!   `B2ndParser` (VirtualiZarr): every group's attributes and every array's `zarr.json` as
//!   JSON, and per array three NumPy arrays over its chunk grid (an index into the array's URL
//!   table, the offsets and the lengths) plus its inline chunks (a b2nd frame's runs of NaNs),
//!   built in Rust in one pass ([`Collector`], a `ReferenceSink`), never one Python call per
//!   chunk.
//!
//! Every call releases the GIL, runs on a worker thread that honours Ctrl-C
//! (`common::interruptible`: the run stops between files, nothing is written) and catches
//! panics. Failures raise `VirtualizeError` with the message of `wkw-zarr` / `blosc2-frame` /
//! `scifmt-io` (it names the file or URL, never credentials); an existing output without
//! `overwrite=True` is `OutputExistsError` (also a `FileExistsError`), an output that is a
//! source, inside one or around one `OverlapError` (also a `ValueError`); invalid option values
//! raise `ValueError`.

use std::collections::HashMap;
use std::path::Path;
use std::time::Instant;

use numpy::PyArray1;
use pyo3::exceptions::{PyException, PyFileExistsError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use scifmt_cli::{SourceCounts, SourceError, SourceOptions, virtualize_sources};
use scifmt_io::zarrs_metadata::v3::{ArrayMetadataV3, GroupMetadataV3};
use wkw_zarr::{Cancel, ChunkReference, Location, ReferenceSink};

use crate::common::{TwoBaseException, interruptible};

pyo3::create_exception!(
    scifmt,
    VirtualizeError,
    PyException,
    "Raised when ``scifmt.virtualize``, ``scifmt.virtual.WKWParser`` or \
     ``scifmt.virtual.B2ndParser`` fails: the message names the file or URL."
);

/// The output exists (no `overwrite=True`): a `VirtualizeError` and a `FileExistsError`.
static OUTPUT_EXISTS: TwoBaseException = TwoBaseException::new(
    "scifmt._scifmt.virtualize",
    "OutputExistsError",
    "The output of ``scifmt.virtualize`` exists: ``overwrite=True`` replaces it (a \
     ``VirtualizeError`` and a ``FileExistsError``).",
    |py| {
        [
            py.get_type::<VirtualizeError>(),
            py.get_type::<PyFileExistsError>(),
        ]
    },
);

/// The output is a source, inside one or around one: a `VirtualizeError` and a `ValueError`.
static OVERLAP: TwoBaseException = TwoBaseException::new(
    "scifmt._scifmt.virtualize",
    "OverlapError",
    "The output of ``scifmt.virtualize`` is one of its sources, lies inside one or contains \
     one (a ``VirtualizeError`` and a ``ValueError``).",
    |py| {
        [
            py.get_type::<VirtualizeError>(),
            py.get_type::<PyValueError>(),
        ]
    },
);

/// Adds the `virtualize` submodule to `parent`.
///
/// # Errors
/// A Python error if the module cannot be created or registered.
pub(crate) fn register(parent: &Bound<'_, PyModule>) -> PyResult<()> {
    crate::common::add_submodule(parent, "virtualize", |m| {
        m.add("VirtualizeError", m.py().get_type::<VirtualizeError>())?;
        m.add("OutputExistsError", OUTPUT_EXISTS.class(m.py())?)?;
        m.add("OverlapError", OVERLAP.class(m.py())?)?;
        m.add("MAX_CONCURRENCY", MAX_CONCURRENCY)?;
        m.add("MAX_GRID_POSITIONS", MAX_GRID_POSITIONS)?;
        m.add_function(wrap_pyfunction!(virtualize, m)?)?;
        m.add_function(wrap_pyfunction!(collect, m)?)?;
        Ok(())
    })
}

/// The most requests in flight a call may ask for (as the CLI's `--concurrency`).
const MAX_CONCURRENCY: i64 = 1024;

/// The most chunk-grid positions one array may have in [`collect`] (the grid is dense in
/// VirtualiZarr: 20 bytes per position here, more there).
const MAX_GRID_POSITIONS: u64 = 1 << 26;

/// Why a failure happened, for the Python exception.
enum Failure {
    /// A source's error (`wkw-zarr`'s or `blosc2-frame`'s, cancelling included).
    Source(SourceError),
    /// The output's error (`scifmt-io`).
    Output(scifmt_io::Error),
    /// The output is a source or inside or around one.
    Overlap(String),
    /// The output exists and may not be replaced.
    Exists(String),
    /// An argument out of its range (found without the GIL).
    Value(String),
}

impl From<SourceError> for Failure {
    fn from(e: SourceError) -> Self {
        Self::Source(e)
    }
}

impl From<scifmt_io::Error> for Failure {
    fn from(e: scifmt_io::Error) -> Self {
        Self::Output(e)
    }
}

/// The message of an interrupted run.
const INTERRUPTED: &str = "interrupted: nothing was written (an existing output is untouched)";

/// The Python exception for `f`.
fn failure_err(py: Python<'_>, f: Failure) -> PyErr {
    match f {
        Failure::Source(e) if e.is_cancelled() => VirtualizeError::new_err(INTERRUPTED),
        Failure::Source(e) => VirtualizeError::new_err(e.to_string()),
        Failure::Output(e) => VirtualizeError::new_err(e.to_string()),
        Failure::Overlap(m) => OVERLAP.err(py, m),
        Failure::Exists(m) => OUTPUT_EXISTS.err(py, m),
        Failure::Value(m) => PyValueError::new_err(m),
    }
}

/// Runs `f` on a worker thread that `cancel` stops on Ctrl-C (then `KeyboardInterrupt` is
/// raised); its failure or panic becomes the Python exception.
fn run<T: Send>(
    py: Python<'_>,
    cancel: &Cancel,
    f: impl FnOnce() -> Result<T, Failure> + Send,
) -> PyResult<T> {
    match interruptible(py, cancel, f)? {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => Err(failure_err(py, e)),
        Err(panic) => Err(VirtualizeError::new_err(panic)),
    }
}

/// The options of a run: `concurrency` requests in flight, stopped by `cancel`.
fn options(concurrency: i64, cancel: &Cancel) -> PyResult<SourceOptions> {
    if !(1..=MAX_CONCURRENCY).contains(&concurrency) {
        return Err(PyValueError::new_err(format!(
            "concurrency={concurrency}: must be 1..={MAX_CONCURRENCY}"
        )));
    }
    Ok(SourceOptions::new(
        usize::try_from(concurrency).unwrap_or(8),
        cancel,
    ))
}

/// The sources as locations (configured from the environment, then `config`).
fn locations(sources: &[String], config: &[(String, String)]) -> Result<Vec<Location>, Failure> {
    if sources.is_empty() {
        return Err(Failure::Value("no sources to virtualize".into()));
    }
    sources
        .iter()
        .map(|s| Location::parse(s, config).map_err(Failure::Output))
        .collect()
}

/// What the sources are taken for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// Each as `blosc2_frame::is_frame_source` tells (as `scifmt virtualize` does).
    Detect,
    /// WKW data (`scifmt.virtual.WKWParser`).
    Wkw,
    /// A b2nd frame (`scifmt.virtual.B2ndParser`), whatever its name.
    B2nd,
}

impl Kind {
    fn parse(name: &str) -> PyResult<Self> {
        match name {
            "detect" => Ok(Self::Detect),
            "wkw" => Ok(Self::Wkw),
            "b2nd" => Ok(Self::B2nd),
            other => Err(PyValueError::new_err(format!(
                "kind={other:?}: must be \"detect\", \"wkw\" or \"b2nd\""
            ))),
        }
    }

    /// Whether `src` is taken for a b2nd frame.
    fn is_frame(self, src: &Location) -> bool {
        match self {
            Self::Detect => blosc2_frame::is_frame_source(src),
            Self::Wkw => false,
            Self::B2nd => true,
        }
    }
}

/// The references of `srcs` into `sink`, laid out as `scifmt virtualize` lays them out
/// (`scifmt_cli::virtualize_sources`), each source taken for what `kind` says.
fn produce(
    srcs: &[Location],
    sink: &mut dyn ReferenceSink,
    options: &SourceOptions,
    kind: Kind,
) -> Result<SourceCounts, Failure> {
    let is_frame = |src: &Location| kind.is_frame(src);
    Ok(virtualize_sources(
        srcs,
        &is_frame,
        sink,
        options,
        &|_: &wkw_zarr::Progress| {},
    )?)
}

/// Refuses an output that is a source, inside one or around one (before anything is read).
fn ensure_apart(sources: &[String], dst: &str) -> Result<(), Failure> {
    for s in sources {
        scifmt_io::ensure_apart(Path::new(s), Path::new(dst)).map_err(|e| match e {
            scifmt_io::Error::Overlap { .. } => Failure::Overlap(e.to_string()),
            e => Failure::Output(e),
        })?;
    }
    Ok(())
}

/// Refuses an existing kerchunk output without `overwrite` (and a directory always: a file
/// never replaces one).
fn check_output(dst: &Location, overwrite: bool) -> Result<(), Failure> {
    if let Location::Local(p) = dst
        && p.is_dir()
    {
        return Err(Failure::Exists(format!(
            "{} exists as a directory, and the kerchunk output (a file) never replaces one",
            p.display()
        )));
    }
    match dst.size()? {
        Some(n) if !overwrite => Err(Failure::Exists(format!(
            "{} exists (a file of {n} bytes): overwrite=True replaces it (only once the new \
             one is complete)",
            dst.name().display()
        ))),
        _ => Ok(()),
    }
}

/// `to="kerchunk-parquet"`: the reference directory at `out`, a local one built complete in a
/// hidden sibling and put in place (replacing one there only with `overwrite`); an object
/// store prefix must be empty.
fn parquet(
    srcs: &[Location],
    out: &Location,
    overwrite: bool,
    record_size: u64,
    opts: &SourceOptions,
    durability: wkw_zarr::Durability,
) -> Result<(SourceCounts, u64), Failure> {
    let exists = out.has_contents()?;
    let write = |at: &Location| -> Result<(SourceCounts, u64), Failure> {
        let mut writer = scifmt_io::KerchunkParquetWriter::create(at, &opts.wkw.remote)?
            .with_record_size(record_size)
            .with_name(out.to_string());
        let summary = produce(srcs, &mut writer, opts, Kind::Detect)?;
        let written = writer.finish(durability)?;
        Ok((summary, written.bytes))
    };
    let Location::Local(target) = out else {
        if exists {
            return Err(Failure::Exists(format!(
                "{out} holds objects: to=\"kerchunk-parquet\" writes to an empty prefix (it \
                 does not replace objects, also with overwrite=True)"
            )));
        }
        return write(out);
    };
    if exists && !overwrite {
        return Err(Failure::Exists(format!(
            "{} exists: overwrite=True replaces it (only once the new references are complete)",
            target.display()
        )));
    }
    let mut done = None;
    scifmt_io::build_dir(
        target,
        "scifmt-virtualize",
        durability,
        |staged| -> Result<(), Failure> {
            done = Some(write(&Location::Local(staged.to_path_buf()))?);
            Ok(())
        },
    )?;
    done.ok_or_else(|| Failure::Value("the references were not written".into()))
}

/// The summary's counts.
fn summary_dict<'py>(py: Python<'py>, s: &SourceCounts) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("groups", s.groups)?;
    d.set_item("arrays", s.arrays)?;
    d.set_item("files", s.files)?;
    d.set_item("unchanged_files", s.unchanged_files)?;
    d.set_item("references", s.references)?;
    d.set_item("inline", s.inline)?;
    d.set_item("bytes_read", s.bytes_read)?;
    Ok(d)
}

/// `scifmt virtualize SOURCES... DST --to TO`: the summary as a dict (`to`, `sources`,
/// `groups`, `arrays`, `files`, `unchanged_files`, `references`, `inline`, `bytes_read`,
/// `seconds`, and `bytes_written` for kerchunk, `snapshot` (and `update` for an update) for
/// Icechunk).
#[pyfunction]
#[pyo3(signature = (sources, dst, to="icechunk", *, overwrite=false, fsync=false, concurrency=8, storage_options=None, record_size=100_000))]
#[allow(
    clippy::too_many_arguments,
    reason = "the keyword options of scifmt.virtualize"
)]
fn virtualize<'py>(
    py: Python<'py>,
    sources: Vec<String>,
    dst: String,
    to: &str,
    overwrite: bool,
    fsync: bool,
    concurrency: i64,
    storage_options: Option<Vec<(String, String)>>,
    record_size: i64,
) -> PyResult<Bound<'py, PyDict>> {
    let record_size = u64::try_from(record_size)
        .ok()
        .filter(|&n| n > 0)
        .ok_or_else(|| {
            PyValueError::new_err(format!("record_size={record_size}: must be at least 1"))
        })?;
    match to {
        "kerchunk" | "kerchunk-parquet" | "icechunk" => {}
        "zarr" => {
            return Err(PyValueError::new_err(
                "to=\"zarr\": a plain Zarr v3 hierarchy cannot address WKW blocks or b2nd \
                 chunks in place (each is a byte range inside a file of many): use \
                 to=\"icechunk\" or to=\"kerchunk\"",
            ));
        }
        other => {
            return Err(PyValueError::new_err(format!(
                "to={other:?}: must be \"icechunk\", \"kerchunk\" or \"kerchunk-parquet\""
            )));
        }
    }
    let cancel = Cancel::new();
    let opts = options(concurrency, &cancel)?;
    let config = storage_options.unwrap_or_default();
    let durability = if fsync {
        wkw_zarr::Durability::Fsync
    } else {
        wkw_zarr::Durability::None
    };
    let start = Instant::now();
    let (summary, written) = run(py, &cancel, || {
        ensure_apart(&sources, &dst)?;
        let srcs = locations(&sources, &config)?;
        let out = Location::parse(&dst, &config)?;
        match to {
            "kerchunk-parquet" => {
                let (summary, bytes) =
                    parquet(&srcs, &out, overwrite, record_size, &opts, durability)?;
                Ok((summary, Written::Bytes(bytes)))
            }
            "icechunk" => icechunk(&srcs, &out, overwrite, &opts, &config),
            _ => {
                check_output(&out, overwrite)?;
                let mut writer = wkw_zarr::KerchunkWriter::create(&out, &opts.wkw.remote)?;
                let summary = produce(&srcs, &mut writer, &opts, Kind::Detect)?;
                let written = writer.finish(durability)?;
                Ok((summary, Written::Bytes(written.bytes)))
            }
        }
    })?;
    let seconds = (start.elapsed().as_secs_f64() * 1000.0).round() / 1000.0;
    let d = summary_dict(py, &summary)?;
    d.set_item("to", to)?;
    d.set_item("sources", sources.len())?;
    match written {
        Written::Bytes(n) => d.set_item("bytes_written", n)?,
        Written::Commit(commit) => commit_items(&d, &commit)?,
    }
    d.set_item("seconds", seconds)?;
    Ok(d)
}

/// What a run wrote, for its summary.
enum Written {
    /// The bytes of the kerchunk references (JSON or Parquet).
    Bytes(u64),
    /// The Icechunk commit.
    #[cfg_attr(
        not(feature = "icechunk"),
        allow(dead_code, reason = "made only with the `icechunk` feature")
    )]
    Commit(IcechunkCommitSummary),
}

/// An Icechunk commit as the summary reports it (`snapshot`, and for an update `update`).
#[cfg_attr(
    not(feature = "icechunk"),
    allow(dead_code, reason = "made only with the `icechunk` feature")
)]
struct IcechunkCommitSummary {
    snapshot: String,
    /// `unchanged`, `set`, `deleted`, `nodes_deleted`.
    update: Option<[(&'static str, u64); 4]>,
}

/// The commit's items of the summary: `snapshot` and, for an update, `update` (a dict).
fn commit_items(d: &Bound<'_, PyDict>, commit: &IcechunkCommitSummary) -> PyResult<()> {
    d.set_item("snapshot", &commit.snapshot)?;
    if let Some(counts) = &commit.update {
        let u = PyDict::new(d.py());
        for (k, v) in counts {
            u.set_item(k, v)?;
        }
        d.set_item("update", u)?;
    }
    Ok(())
}

/// `to="icechunk"` without the `icechunk` feature: refused, saying how to get it.
#[cfg(not(feature = "icechunk"))]
fn icechunk(
    _srcs: &[Location],
    _out: &Location,
    _overwrite: bool,
    _opts: &SourceOptions,
    _config: &[(String, String)],
) -> Result<(SourceCounts, Written), Failure> {
    Err(Failure::Value(
        "to=\"icechunk\": this scifmt build lacks Icechunk support (the `icechunk` cargo \
         feature of the Python package, on by default); use to=\"kerchunk\""
            .into(),
    ))
}

/// `to="icechunk"`: a new repository at `out`, or (with `overwrite`, on a repository there) a
/// new commit on its `main` setting only what changed, as `scifmt virtualize --to icechunk`
/// does. A new local repository is built complete in a hidden sibling and put in place (also
/// over another directory, with `overwrite`); on an object store `main` moves only when all is
/// committed, and a prefix holding other objects is refused.
#[cfg(feature = "icechunk")]
fn icechunk(
    srcs: &[Location],
    out: &Location,
    overwrite: bool,
    opts: &SourceOptions,
    config: &[(String, String)],
) -> Result<(SourceCounts, Written), Failure> {
    let exists = out.has_contents()?;
    if exists && scifmt_io::IcechunkWriter::exists(out, config)? {
        if !overwrite {
            return Err(Failure::Exists(format!(
                "{out} is an Icechunk repository: overwrite=True updates it (one new commit on \
                 main that sets what changed; its earlier snapshots stay in its history)"
            )));
        }
        return build_icechunk(srcs, out, true, opts, config);
    }
    let Location::Local(target) = out else {
        if exists {
            return Err(Failure::Exists(format!(
                "{out} holds objects that are not an Icechunk repository: to=\"icechunk\" \
                 writes to an empty prefix or updates a repository (it never replaces other \
                 objects, also with overwrite=True)"
            )));
        }
        return build_icechunk(srcs, out, false, opts, config);
    };
    if exists && !overwrite {
        return Err(Failure::Exists(format!(
            "{} exists: overwrite=True replaces it (only once the new repository is complete)",
            target.display()
        )));
    }
    let mut done = None;
    scifmt_io::build_dir(
        target,
        "scifmt-virtualize",
        scifmt_io::Durability::None,
        |staged| -> Result<(), Failure> {
            let at = Location::Local(staged.to_path_buf());
            done = Some(build_icechunk(srcs, &at, false, opts, config)?);
            Ok(())
        },
    )?;
    done.ok_or_else(|| Failure::Value("the repository was not written".into()))
}

/// The repository at `out`: a new one, or with `update` the one there updated.
#[cfg(feature = "icechunk")]
fn build_icechunk(
    srcs: &[Location],
    out: &Location,
    update: bool,
    opts: &SourceOptions,
    config: &[(String, String)],
) -> Result<(SourceCounts, Written), Failure> {
    // The virtual chunk containers: each source's directory (a .b2nd file's parent).
    let prefixes = srcs
        .iter()
        .map(scifmt_io::container_url)
        .collect::<Result<Vec<_>, _>>()?;
    let mut writer = if update {
        scifmt_io::IcechunkWriter::update(out, &prefixes, config)?
    } else {
        scifmt_io::IcechunkWriter::create(out, &prefixes, config)?
    };
    let summary = produce(srcs, &mut writer, opts, Kind::Detect)?;
    let commit = writer.finish()?;
    let update = commit.update.map(|u| {
        [
            ("unchanged", u.unchanged),
            ("set", u.set),
            ("deleted", u.deleted),
            ("nodes_deleted", u.nodes_deleted),
        ]
    });
    Ok((
        summary,
        Written::Commit(IcechunkCommitSummary {
            snapshot: commit.snapshot,
            update,
        }),
    ))
}

/// One array as [`Collector`] gathers it.
struct ArrayRefs {
    /// Its `zarr.json`.
    meta: String,
    /// Chunks per dimension.
    grid: Vec<u64>,
    /// The distinct URLs, in order of first use; `index[i] = k + 1` names `urls[k]`, 0 none.
    urls: Vec<String>,
    by_url: HashMap<String, u32>,
    index: Vec<u32>,
    offsets: Vec<u64>,
    lengths: Vec<u64>,
    /// The chunks given inline: their C-order positions on the grid and, for each, which of
    /// the distinct encoded chunks `inline_chunks` it is (a b2nd frame's NaN runs all share
    /// one 32-byte chunk).
    inline_at: Vec<u64>,
    inline_which: Vec<u32>,
    inline_chunks: Vec<Vec<u8>>,
    inline_by: HashMap<Vec<u8>, u32>,
}

impl ArrayRefs {
    /// The C-order position of chunk `indices` of array `array` on the grid.
    fn position(&self, array: &str, indices: &[u64], url: &str) -> scifmt_io::Result<u64> {
        if indices.len() != self.grid.len() {
            return Err(scifmt_io::Error::InvalidArgument(format!(
                "a reference of rank {} to array {array:?} of rank {}",
                indices.len(),
                self.grid.len()
            )));
        }
        let mut flat = 0u64;
        for (&i, &g) in indices.iter().zip(&self.grid) {
            if i >= g {
                return Err(scifmt_io::Error::InvalidArgument(format!(
                    "chunk {indices:?} of {array:?} is outside its grid {:?} ({url})",
                    self.grid
                )));
            }
            flat = flat * g + i;
        }
        Ok(flat)
    }
}

/// A `ReferenceSink` that keeps the nodes below `only` (all for `""`) in memory.
struct Collector {
    only: String,
    groups: Vec<(String, String)>,
    arrays: Vec<(String, ArrayRefs)>,
    by_path: HashMap<String, usize>,
    checksums: HashMap<String, String>,
}

impl Collector {
    fn new(only: String) -> Self {
        Self {
            only,
            groups: Vec::new(),
            arrays: Vec::new(),
            by_path: HashMap::new(),
            checksums: HashMap::new(),
        }
    }

    /// Whether the node at `path` is kept.
    fn keeps(&self, path: &str) -> bool {
        self.only.is_empty()
            || path == self.only
            || path
                .strip_prefix(self.only.as_str())
                .is_some_and(|rest| rest.starts_with('/'))
    }
}

/// The error of metadata that does not serialize.
fn json_err(path: &str, e: &serde_json::Error) -> scifmt_io::Error {
    scifmt_io::Error::InvalidArgument(format!("metadata of {path:?}: {e}"))
}

/// The chunk grid of an array's metadata: `ceil(shape / chunk_shape)` per dimension.
fn grid_of(doc: &serde_json::Value, path: &str) -> scifmt_io::Result<Vec<u64>> {
    let bad = |what: &str| {
        scifmt_io::Error::InvalidArgument(format!("array {path:?}: {what} (need a regular grid)"))
    };
    let ints = |v: Option<&serde_json::Value>, what: &str| -> scifmt_io::Result<Vec<u64>> {
        v.and_then(serde_json::Value::as_array)
            .ok_or_else(|| bad(what))?
            .iter()
            .map(|x| x.as_u64().ok_or_else(|| bad(what)))
            .collect()
    };
    let shape = ints(doc.get("shape"), "no shape")?;
    let chunks = ints(
        doc.pointer("/chunk_grid/configuration/chunk_shape"),
        "no chunk_shape",
    )?;
    if shape.len() != chunks.len() || chunks.contains(&0) {
        return Err(bad("a chunk shape that does not fit the shape"));
    }
    Ok(shape
        .iter()
        .zip(&chunks)
        .map(|(s, c)| s.div_ceil(*c))
        .collect())
}

impl ReferenceSink for Collector {
    fn group(&mut self, path: &str, group: &GroupMetadataV3) -> scifmt_io::Result<()> {
        if self.keeps(path) {
            let attrs = serde_json::to_string(&group.attributes).map_err(|e| json_err(path, &e))?;
            self.groups.push((path.to_owned(), attrs));
        }
        Ok(())
    }

    fn array(&mut self, path: &str, array: &ArrayMetadataV3) -> scifmt_io::Result<()> {
        if !self.keeps(path) {
            return Ok(());
        }
        let meta = serde_json::to_string(array).map_err(|e| json_err(path, &e))?;
        let doc: serde_json::Value = serde_json::from_str(&meta)
            .map_err(|e| scifmt_io::Error::InvalidArgument(format!("array {path:?}: {e}")))?;
        let grid = grid_of(&doc, path)?;
        let positions = grid
            .iter()
            .try_fold(1u64, |n, &g| n.checked_mul(g))
            .filter(|&n| n <= MAX_GRID_POSITIONS)
            .ok_or_else(|| {
                scifmt_io::Error::InvalidArgument(format!(
                    "array {path:?}: a chunk grid of {grid:?} has more than {MAX_GRID_POSITIONS} \
                     positions, more than an in-memory manifest holds (use \
                     scifmt.virtualize(..., to=\"kerchunk\"), which streams them)"
                ))
            })?;
        let n = usize::try_from(positions)
            .map_err(|_| scifmt_io::Error::InvalidArgument(format!("{positions} positions")))?;
        let alloc = |what: &str| {
            scifmt_io::Error::InvalidArgument(format!(
                "array {path:?}: cannot allocate the {what} of {n} chunks"
            ))
        };
        let mut index = Vec::new();
        index.try_reserve_exact(n).map_err(|_| alloc("manifest"))?;
        index.resize(n, 0u32);
        let mut offsets = Vec::new();
        offsets.try_reserve_exact(n).map_err(|_| alloc("offsets"))?;
        offsets.resize(n, 0u64);
        let mut lengths = Vec::new();
        lengths.try_reserve_exact(n).map_err(|_| alloc("lengths"))?;
        lengths.resize(n, 0u64);
        if self.by_path.contains_key(path) {
            return Err(scifmt_io::Error::InvalidArgument(format!(
                "array {path:?} declared twice"
            )));
        }
        self.by_path.insert(path.to_owned(), self.arrays.len());
        self.arrays.push((
            path.to_owned(),
            ArrayRefs {
                meta,
                grid,
                urls: Vec::new(),
                by_url: HashMap::new(),
                index,
                offsets,
                lengths,
                inline_at: Vec::new(),
                inline_which: Vec::new(),
                inline_chunks: Vec::new(),
                inline_by: HashMap::new(),
            },
        ));
        Ok(())
    }

    fn reference(&mut self, r: &ChunkReference<'_>) -> scifmt_io::Result<()> {
        if !self.keeps(r.array) {
            return Ok(());
        }
        let (flat, url, new_url) = {
            let a = self.declared(r.array)?;
            let flat = a.position(r.array, r.indices, r.url)?;
            match a.by_url.get(r.url) {
                Some(&u) => (flat, u, false),
                None => {
                    a.urls.push(r.url.to_owned());
                    let u = u32::try_from(a.urls.len()).map_err(|_| {
                        scifmt_io::Error::InvalidArgument(format!(
                            "array {:?} references more than 2^32 files",
                            r.array
                        ))
                    })?;
                    a.by_url.insert(r.url.to_owned(), u);
                    (flat, u, true)
                }
            }
        };
        if new_url && let Some(c) = r.checksum {
            self.checksums
                .entry(r.url.to_owned())
                .or_insert_with(|| c.to_json().to_string());
        }
        let a = self.declared(r.array)?;
        let at = usize::try_from(flat).unwrap_or(usize::MAX);
        match (
            a.index.get_mut(at),
            a.offsets.get_mut(at),
            a.lengths.get_mut(at),
        ) {
            (Some(i), Some(o), Some(l)) => {
                *i = url;
                *o = r.offset;
                *l = r.length;
                Ok(())
            }
            _ => Err(scifmt_io::Error::InvalidArgument(format!(
                "chunk {:?} of {:?} is outside its manifest",
                r.indices, r.array
            ))),
        }
    }

    fn inline(&mut self, array: &str, indices: &[u64], bytes: &[u8]) -> scifmt_io::Result<()> {
        if !self.keeps(array) {
            return Ok(());
        }
        let a = self.declared(array)?;
        let flat = a.position(array, indices, "inline")?;
        let which = match a.inline_by.get(bytes) {
            Some(&w) => w,
            None => {
                let w = u32::try_from(a.inline_chunks.len()).map_err(|_| {
                    scifmt_io::Error::InvalidArgument(format!(
                        "array {array:?} has more than 2^32 distinct inline chunks"
                    ))
                })?;
                a.inline_chunks.push(bytes.to_vec());
                a.inline_by.insert(bytes.to_vec(), w);
                w
            }
        };
        // An inline chunk replaces a reference at its position (none is expected there).
        let at = usize::try_from(flat).unwrap_or(usize::MAX);
        if let Some(i) = a.index.get_mut(at) {
            *i = 0;
        }
        a.inline_at.push(flat);
        a.inline_which.push(which);
        Ok(())
    }
}

impl Collector {
    /// The array declared at `path`.
    fn declared(&mut self, path: &str) -> scifmt_io::Result<&mut ArrayRefs> {
        let Some(&k) = self.by_path.get(path) else {
            return Err(scifmt_io::Error::InvalidArgument(format!(
                "a reference to the undeclared array {path:?}"
            )));
        };
        match self.arrays.get_mut(k) {
            Some((_, a)) => Ok(a),
            None => Err(scifmt_io::Error::InvalidArgument(format!(
                "array {path:?} is gone"
            ))),
        }
    }
}

/// One array for Python: `(path, zarr.json, grid, urls, url index, offsets, lengths,
/// inline positions, inline which, inline chunks)`: url index, offsets and lengths flat in C
/// order over the grid; the inline chunks' C-order positions, for each the index of its
/// encoded bytes in the list of distinct inline chunks, and that list.
type ArrayOut<'py> = (
    String,
    String,
    Vec<u64>,
    Vec<String>,
    Bound<'py, PyArray1<u32>>,
    Bound<'py, PyArray1<u64>>,
    Bound<'py, PyArray1<u64>>,
    Bound<'py, PyArray1<u64>>,
    Bound<'py, PyArray1<u32>>,
    Vec<Bound<'py, PyBytes>>,
);

/// The nodes of `sources` at and below `only` (`""`: all) with their references, for
/// `scifmt.virtual.WKWParser` and `B2ndParser`: `(groups, arrays, checksums, summary)` where
/// `groups` is `[(path, attributes JSON)]`, `arrays` is `[(path, zarr.json, grid, urls, url
/// index, offsets, lengths, inline positions, inline which, inline chunks)]` (see [`ArrayOut`];
/// url index `k + 1` names `urls[k]`, 0 no reference), `checksums` is `{url: checksum JSON}`
/// (`{"etag": …}` or `{"last_modified": [seconds, nanos]}`) and `summary` the counts of the
/// whole run. `kind`: `"detect"` (as `scifmt.virtualize`), `"wkw"` or `"b2nd"` (every source
/// taken for one).
#[pyfunction]
#[pyo3(signature = (sources, *, only="", kind="detect", concurrency=8, storage_options=None))]
#[allow(
    clippy::type_complexity,
    reason = "the tuple Python unpacks, described above"
)]
fn collect<'py>(
    py: Python<'py>,
    sources: Vec<String>,
    only: &str,
    kind: &str,
    concurrency: i64,
    storage_options: Option<Vec<(String, String)>>,
) -> PyResult<(
    Vec<(String, String)>,
    Vec<ArrayOut<'py>>,
    HashMap<String, String>,
    Bound<'py, PyDict>,
)> {
    let kind = Kind::parse(kind)?;
    let cancel = Cancel::new();
    let mut opts = options(concurrency, &cancel)?;
    let config = storage_options.unwrap_or_default();
    let only = only.trim_matches('/').to_owned();
    if kind == Kind::Wkw && sources.len() == 1 {
        // Only the selected layer's or mag's files are read (node paths of one source are
        // the Collector's).
        opts.wkw = opts.wkw.with_only(&only);
    }
    let (collector, summary) = run(py, &cancel, || {
        let srcs = locations(&sources, &config)?;
        let mut sink = Collector::new(only);
        let summary = produce(&srcs, &mut sink, &opts, kind)?;
        Ok((sink, summary))
    })?;
    let arrays = collector
        .arrays
        .into_iter()
        .map(|(path, a)| {
            let chunks = a
                .inline_chunks
                .iter()
                .map(|b| PyBytes::new(py, b))
                .collect();
            (
                path,
                a.meta,
                a.grid,
                a.urls,
                PyArray1::from_vec(py, a.index),
                PyArray1::from_vec(py, a.offsets),
                PyArray1::from_vec(py, a.lengths),
                PyArray1::from_vec(py, a.inline_at),
                PyArray1::from_vec(py, a.inline_which),
                chunks,
            )
        })
        .collect();
    let summary = summary_dict(py, &summary)?;
    Ok((collector.groups, arrays, collector.checksums, summary))
}
