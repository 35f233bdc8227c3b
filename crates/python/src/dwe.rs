//! `scifmt._scifmt.dwe`: the Rust core of `scifmt.dwe` (compressed dynamic word embeddings
//! through `dwe-format`).
//!
//! `File` reads a whole `.dwe` file (bounded by the crate's `Limits`) and answers the queries of
//! `scifmt dwe` with the GIL released; results are flat numpy arrays the Python wrapper
//! reshapes. `write` encodes an i16 tensor. Errors are `DweError` (`IndexError` for word or
//! time-step indices out of range, `OSError` for I/O), naming the file.

use std::path::PathBuf;

use dwe_format::{Dims, Durability, DweFile, Layout, Limits, OpenOptions, WriteLayout};
use numpy::{PyArray1, PyReadonlyArray1};
use pyo3::exceptions::{PyFileNotFoundError, PyIndexError, PyOSError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::common::detached;

pyo3::create_exception!(
    scifmt.dwe,
    DweError,
    PyValueError,
    "A .dwe file could not be read or written (malformed file, bad arguments, a limit \
     exceeded)."
);

/// The Python exception for `e` on file `path`.
fn dwe_err(path: &str, e: &dwe_format::Error) -> PyErr {
    let msg = format!("{path}: {e}");
    match e {
        dwe_format::Error::Io(io) if io.kind() == std::io::ErrorKind::NotFound => {
            PyFileNotFoundError::new_err(msg)
        }
        dwe_format::Error::Io(_) => PyOSError::new_err(msg),
        dwe_format::Error::IndexOutOfRange { .. } => PyIndexError::new_err(msg),
        _ => DweError::new_err(msg),
    }
}

/// A word or time-step index from Python.
fn index(v: i64, what: &str) -> PyResult<u32> {
    u32::try_from(v).map_err(|_| PyIndexError::new_err(format!("{what} {v} is out of range")))
}

/// Word indices from Python.
fn indices(v: &[i64], what: &str) -> PyResult<Vec<u32>> {
    v.iter().map(|&x| index(x, what)).collect()
}

/// An opened `.dwe` file (read into memory).
#[pyclass(frozen, module = "scifmt._scifmt.dwe")]
struct File {
    path: String,
    file: DweFile<Vec<u8>>,
}

impl File {
    /// Runs `f` on the file with the GIL released, mapping errors.
    fn run<T: Send>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&DweFile<Vec<u8>>) -> dwe_format::Result<T> + Send,
    ) -> PyResult<T> {
        detached(py, || f(&self.file))
            .map_err(|m| DweError::new_err(format!("{}: {m}", self.path)))?
            .map_err(|e| dwe_err(&self.path, &e))
    }
}

#[pymethods]
impl File {
    /// Opens `path`: `layout` is `None` (detect), `"block"` or `"stream"`;
    /// `check_integrity` checks decoder end states while decoding; `max_file_bytes` caps the
    /// file size (default 4 GiB).
    #[new]
    #[pyo3(signature = (path, layout=None, check_integrity=false, max_file_bytes=None))]
    fn new(
        py: Python<'_>,
        path: PathBuf,
        layout: Option<&str>,
        check_integrity: bool,
        max_file_bytes: Option<u64>,
    ) -> PyResult<Self> {
        let name = path.display().to_string();
        let mut limits = Limits::default();
        if let Some(m) = max_file_bytes {
            limits.max_file_bytes = m;
        }
        let mut opts = OpenOptions::new()
            .with_limits(limits)
            .with_check_integrity(check_integrity);
        opts = match layout {
            None => opts,
            Some("block") => opts.with_layout(Layout::Block),
            Some("stream") => opts.with_layout(Layout::Stream),
            Some(other) => {
                return Err(DweError::new_err(format!(
                    "layout {other:?} is not \"block\" or \"stream\""
                )));
            }
        };
        let file = detached(py, || opts.read_file(&path))
            .map_err(|m| DweError::new_err(format!("{name}: {m}")))?
            .map_err(|e| dwe_err(&name, &e))?;
        Ok(Self { path: name, file })
    }

    /// The file name.
    #[getter]
    fn path(&self) -> &str {
        &self.path
    }

    /// Number of time steps T.
    #[getter]
    fn num_timesteps(&self) -> u32 {
        self.file.num_timesteps()
    }

    /// Vocabulary size V.
    #[getter]
    fn vocab_size(&self) -> u32 {
        self.file.vocab_size()
    }

    /// Embedding dimension K.
    #[getter]
    fn embedding_dim(&self) -> u32 {
        self.file.embedding_dim()
    }

    /// The scale factor (real value = scale_factor × i16 value).
    #[getter]
    fn scale_factor(&self) -> f32 {
        self.file.scale_factor()
    }

    /// `"block"` or `"stream"`.
    #[getter]
    fn layout(&self) -> &'static str {
        match self.file.layout() {
            Layout::Block => "block",
            _ => "stream",
        }
    }

    /// The header and per-time-step model sizes, as `scifmt dwe info` prints them.
    fn info<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let h = self.file.header();
        let block = self.file.layout() == Layout::Block;
        let d = PyDict::new(py);
        d.set_item("format", "dwe")?;
        d.set_item("layout", self.layout())?;
        d.set_item("file_len", self.file.as_bytes().len())?;
        d.set_item("major_version", dwe_format::MAJOR_VERSION)?;
        d.set_item("minor_version", h.minor_version)?;
        d.set_item("file_size_words", h.file_size)?;
        d.set_item(
            if block {
                "meta_size"
            } else {
                "jump_table_address"
            },
            h.section_address,
        )?;
        d.set_item("num_timesteps", h.num_timesteps)?;
        d.set_item("vocab_size", h.vocab_size)?;
        d.set_item("embedding_dim", h.embedding_dim)?;
        d.set_item(
            if block { "chunk_size" } else { "jump_interval" },
            h.interval,
        )?;
        d.set_item("scale_factor", h.scale_factor)?;
        d.set_item(
            "scale_factor_bits",
            format!("{:08x}", h.scale_factor.to_bits()),
        )?;
        let sizes: Vec<Option<usize>> = (0..self.file.num_timesteps())
            .map(|t| self.file.model(t).map(|e| e.symbols().len()))
            .collect();
        d.set_item("model_num_symbols", sizes)?;
        Ok(d)
    }

    /// The K values of `word` at time step `t` (i16, or f32 scaled).
    #[pyo3(signature = (word, t, scaled=false))]
    fn vector<'py>(
        &self,
        py: Python<'py>,
        word: i64,
        t: i64,
        scaled: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        let (w, t) = (index(word, "word")?, index(t, "time step")?);
        Ok(if scaled {
            PyArray1::from_vec(py, self.run(py, |f| f.vector_f32(w, t))?).into_any()
        } else {
            PyArray1::from_vec(py, self.run(py, |f| f.vector(w, t))?).into_any()
        })
    }

    /// All V·K values of time step `t`, flat (i16, or f32 scaled).
    #[pyo3(signature = (t, scaled=false))]
    fn timestep<'py>(&self, py: Python<'py>, t: i64, scaled: bool) -> PyResult<Bound<'py, PyAny>> {
        let t = index(t, "time step")?;
        Ok(if scaled {
            PyArray1::from_vec(py, self.run(py, |f| f.timestep_f32(t))?).into_any()
        } else {
            PyArray1::from_vec(py, self.run(py, |f| f.timestep(t))?).into_any()
        })
    }

    /// The T·K values of `word` over all time steps, flat (i16, or f32 scaled).
    #[pyo3(signature = (word, scaled=false))]
    fn trajectory<'py>(
        &self,
        py: Python<'py>,
        word: i64,
        scaled: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        let w = index(word, "word")?;
        Ok(if scaled {
            PyArray1::from_vec(py, self.run(py, |f| f.trajectory_f32(w))?).into_any()
        } else {
            PyArray1::from_vec(py, self.run(py, |f| f.trajectory(w))?).into_any()
        })
    }

    /// The stored residuals of time step `t`, flat V·K i16.
    fn residuals<'py>(&self, py: Python<'py>, t: i64) -> PyResult<Bound<'py, PyArray1<i16>>> {
        let t = index(t, "time step")?;
        Ok(PyArray1::from_vec(py, self.run(py, |f| f.residuals(t))?))
    }

    /// Every value, flat T·V·K i16.
    fn decode_all<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyArray1<i16>>> {
        Ok(PyArray1::from_vec(py, self.run(py, DweFile::decode_all)?))
    }

    /// The reference reader's `pairwise_trajectories`: flat `[pair][T]` f32.
    fn pairwise_trajectories<'py>(
        &self,
        py: Python<'py>,
        words1: Vec<i64>,
        words2: Vec<i64>,
    ) -> PyResult<Bound<'py, PyArray1<f32>>> {
        let (a, b) = (indices(&words1, "word")?, indices(&words2, "word")?);
        Ok(PyArray1::from_vec(
            py,
            self.run(py, |f| f.pairwise_trajectories(&a, &b))?,
        ))
    }

    /// The reference reader's `most_related_to_at_t`: flat `[target][rank]` u32, `u32::MAX`
    /// for ranks the vocabulary cannot fill.
    fn most_related_to_at_t<'py>(
        &self,
        py: Python<'py>,
        target_words: Vec<i64>,
        t: i64,
        amt: i64,
    ) -> PyResult<Bound<'py, PyArray1<u32>>> {
        let words = indices(&target_words, "word")?;
        let t = index(t, "time step")?;
        let amt = usize::try_from(amt)
            .map_err(|_| PyValueError::new_err(format!("amt {amt} is negative")))?;
        Ok(PyArray1::from_vec(
            py,
            self.run(py, |f| f.most_related_to_at_t(&words, t, amt))?,
        ))
    }

    /// The reference reader's `largest_changes_wrt`.
    fn largest_changes_wrt(
        &self,
        py: Python<'_>,
        target_word: i64,
        amt: i64,
        min_increasing: i64,
        min_decreasing: i64,
    ) -> PyResult<Vec<u32>> {
        let w = index(target_word, "word")?;
        let count = |v: i64, what: &str| {
            usize::try_from(v).map_err(|_| PyValueError::new_err(format!("{what} {v} is negative")))
        };
        let (amt, inc, dec) = (
            count(amt, "amt")?,
            count(min_increasing, "min_increasing")?,
            count(min_decreasing, "min_decreasing")?,
        );
        self.run(py, |f| f.largest_changes_wrt(w, amt, inc, dec))
    }

    /// Decodes everything and checks every integrity invariant.
    fn verify(&self, py: Python<'_>) -> PyResult<()> {
        self.run(py, DweFile::verify)
    }

    fn __repr__(&self) -> String {
        format!(
            "<scifmt dwe file {:?} {} T={} V={} K={}>",
            self.path,
            self.layout(),
            self.file.num_timesteps(),
            self.file.vocab_size(),
            self.file.embedding_dim()
        )
    }
}

/// Encodes `values` (flat T·V·K i16, C order) into a `.dwe` file at `path` (atomically;
/// without `overwrite`, only onto a free name).
///
/// # Errors
/// `DweError` for bad shapes or parameters, `OSError` for I/O errors.
#[pyfunction]
#[pyo3(signature = (path, values, shape, scale_factor, chunk_size=None, jump_interval=None, fsync=false, overwrite=true))]
#[allow(clippy::too_many_arguments)]
fn write(
    py: Python<'_>,
    path: PathBuf,
    values: PyReadonlyArray1<'_, i16>,
    shape: (i64, i64, i64),
    scale_factor: f32,
    chunk_size: Option<i64>,
    jump_interval: Option<i64>,
    fsync: bool,
    overwrite: bool,
) -> PyResult<()> {
    let name = path.display().to_string();
    let dim = |v: i64, what: &str| {
        u32::try_from(v).map_err(|_| DweError::new_err(format!("{what} {v} is out of range")))
    };
    let dims = Dims::new(dim(shape.0, "T")?, dim(shape.1, "V")?, dim(shape.2, "K")?);
    let layout = match (chunk_size, jump_interval) {
        (Some(c), None) => WriteLayout::Block {
            chunk_size: dim(c, "chunk_size")?,
        },
        (None, Some(j)) => WriteLayout::Stream {
            jump_interval: dim(j, "jump_interval")?,
        },
        _ => {
            return Err(DweError::new_err(
                "give exactly one of chunk_size (block layout) or jump_interval (stream layout)",
            ));
        }
    };
    let data = values
        .as_slice()
        .map_err(|_| DweError::new_err("values must be C-contiguous"))?;
    let durability = if fsync {
        Durability::Fsync
    } else {
        Durability::None
    };
    let written = detached(py, || {
        let bytes = dwe_format::encode(data, dims, scale_factor, layout)?;
        crate::common::write_file(&path, durability, overwrite, |f| {
            std::io::Write::write_all(f, &bytes).map_err(dwe_format::Error::Io)
        })
    })
    .map_err(|m| DweError::new_err(format!("{name}: {m}")))?
    .map_err(|e| dwe_err(&name, &e))?;
    if written {
        Ok(())
    } else {
        Err(crate::common::appeared(&name))
    }
}

/// Adds the `dwe` submodule to `parent`.
///
/// # Errors
/// A Python error if the module cannot be created.
pub(crate) fn register(parent: &Bound<'_, PyModule>) -> PyResult<()> {
    crate::common::add_submodule(parent, "dwe", |m| {
        m.add("DweError", m.py().get_type::<DweError>())?;
        m.add_class::<File>()?;
        m.add_function(wrap_pyfunction!(write, m)?)?;
        Ok(())
    })
}
