//! `scifmt._scifmt.wkw.RawDataset`, the Rust side of `scifmt.wkw.Dataset`: one class over a
//! local directory (`wkw::Local`) or an object-store URL (`wkw_remote::Remote`), chosen by
//! `scifmt_io::is_url` as every scifmt tool chooses.

use std::path::{Path, PathBuf};

use pyo3::prelude::*;
use pyo3::types::PyList;

use crate::wkw::{Local, compress, exc, verify};
use crate::wkw_remote::Remote;

/// Adds `RawDataset` to the existing `wkw` submodule of `parent`.
///
/// # Errors
/// A Python error if the submodule is missing.
pub(crate) fn register(parent: &Bound<'_, PyModule>) -> PyResult<()> {
    let m = parent.getattr("wkw")?;
    m.setattr("RawDataset", parent.py().get_type::<RawDataset>())
}

/// The Rust side of `scifmt.wkw.Dataset`: one open dataset, in a local directory or at an
/// object-store URL (`s3://`, `gs://`, `az://`, `http(s)://`, `memory://`; see
/// `scifmt_io::Location::parse`), closed by `close`.
#[pyclass(module = "scifmt._scifmt.wkw", frozen)]
#[derive(Debug)]
pub(crate) struct RawDataset {
    backend: Backend,
}

#[derive(Debug)]
enum Backend {
    Local(Local),
    Remote(Remote),
}

#[pymethods]
impl RawDataset {
    /// Opens the dataset at `root`, a directory or a URL (the prefix holding `header.wkw`;
    /// `storage_options` are store settings applied after the environment's, URLs only).
    #[staticmethod]
    #[pyo3(signature = (root, storage_options=None, threads=None, corrupt_as_zeros=false, strict_headers=false))]
    fn open(
        py: Python<'_>,
        root: PathBuf,
        storage_options: Option<Vec<(String, String)>>,
        threads: Option<usize>,
        corrupt_as_zeros: bool,
        strict_headers: bool,
    ) -> PyResult<Self> {
        let backend = match url_text(&root) {
            Some(url) => Backend::Remote(Remote::open(
                py,
                url,
                storage_options,
                threads,
                corrupt_as_zeros,
                strict_headers,
            )?),
            None => {
                local_only(storage_options.as_deref(), &root)?;
                Backend::Local(Local::open(
                    py,
                    root,
                    threads,
                    corrupt_as_zeros,
                    strict_headers,
                )?)
            }
        };
        Ok(Self { backend })
    }

    /// Creates a dataset at `root` (a directory or a URL): `voxel_type` is the on-disk code
    /// 1..=10, `block_type` 1..=3. An existing dataset is `OutputExistsError` unless
    /// `overwrite` (then a new empty local dataset replaces it whole; a dataset at a URL is
    /// never replaced: an object store cannot swap it in one step).
    #[staticmethod]
    #[pyo3(signature = (root, voxel_type, num_channels, block_len, file_len, block_type, storage_options=None, threads=None, corrupt_as_zeros=false, strict_headers=false, overwrite=false))]
    #[allow(clippy::too_many_arguments)] // the header fields and the options
    fn create(
        py: Python<'_>,
        root: PathBuf,
        voxel_type: u8,
        num_channels: u8,
        block_len: u32,
        file_len: u32,
        block_type: u8,
        storage_options: Option<Vec<(String, String)>>,
        threads: Option<usize>,
        corrupt_as_zeros: bool,
        strict_headers: bool,
        overwrite: bool,
    ) -> PyResult<Self> {
        let backend = match url_text(&root) {
            Some(url) => Backend::Remote(Remote::create(
                py,
                url,
                voxel_type,
                num_channels,
                block_len,
                file_len,
                block_type,
                storage_options,
                threads,
                corrupt_as_zeros,
                strict_headers,
                overwrite,
            )?),
            None => {
                local_only(storage_options.as_deref(), &root)?;
                Backend::Local(Local::create(
                    py,
                    root,
                    voxel_type,
                    num_channels,
                    block_len,
                    file_len,
                    block_type,
                    threads,
                    corrupt_as_zeros,
                    strict_headers,
                    overwrite,
                )?)
            }
        };
        Ok(Self { backend })
    }

    /// The dataset root: the path as given, or the URL without credentials.
    #[getter]
    fn root(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        match &self.backend {
            Backend::Local(l) => Ok(l.root.clone().into_pyobject(py)?.into_any().unbind()),
            Backend::Remote(r) => Ok(r.root().into_pyobject(py)?.into_any().unbind()),
        }
    }

    /// Whether the dataset is at a URL.
    #[getter]
    fn remote(&self) -> bool {
        matches!(self.backend, Backend::Remote(_))
    }

    /// `(version, block_len, file_len, block_type, voxel_type, num_channels)` with the on-disk
    /// codes of block and voxel type.
    fn header_fields(&self) -> PyResult<(u8, u32, u32, u8, u8, u8)> {
        match &self.backend {
            Backend::Local(l) => l.header_fields(),
            Backend::Remote(r) => r.header_fields(),
        }
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
        match &self.backend {
            Backend::Local(l) => l.read(py, offset, shape, order),
            Backend::Remote(r) => r.read(py, offset, shape, order),
        }
    }

    /// Writes a 4-D numpy array (C, X, Y, Z) of the dataset's dtype at `offset`, from any
    /// strides (contiguous arrays without a copy); at a URL each file touched is a conditional
    /// read-modify-write, so concurrent writers lose no update.
    fn write(&self, py: Python<'_>, offset: [u32; 3], data: &Bound<'_, PyAny>) -> PyResult<()> {
        match &self.backend {
            Backend::Local(l) => l.write(py, offset, data),
            Backend::Remote(r) => r.write(py, offset, data),
        }
    }

    /// Paths (or URLs) of every data file, sorted by z, y, x.
    fn list_files<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        match &self.backend {
            Backend::Local(l) => l.list_files(py),
            Backend::Remote(r) => r.list_files(py),
        }
    }

    /// Checks every data file: `(path or url, problem)` for the files with a problem;
    /// `progress(done, total)` after each file. Ctrl-C stops it (`KeyboardInterrupt`).
    #[pyo3(signature = (threads=None, progress=None))]
    fn verify(
        &self,
        py: Python<'_>,
        threads: Option<usize>,
        progress: Option<Py<PyAny>>,
    ) -> PyResult<Vec<(String, String)>> {
        match &self.backend {
            Backend::Local(l) => Ok(verify(py, l.root.clone(), threads, progress)?
                .into_iter()
                .map(|(p, m)| (p.display().to_string(), m))
                .collect()),
            Backend::Remote(r) => r.verify(py, progress),
        }
    }

    /// Converts every data file into a new dataset at `dst` (a directory for a local dataset,
    /// a URL for one at a URL) with block type `block_type` (1..=3); see the module function
    /// `compress` and, for URLs, `wkw::RemoteDataset::compress_to`.
    #[pyo3(signature = (dst, block_type, threads=None, overwrite=false, progress=None))]
    fn compress(
        &self,
        py: Python<'_>,
        dst: PathBuf,
        block_type: u8,
        threads: Option<usize>,
        overwrite: bool,
        progress: Option<Py<PyAny>>,
    ) -> PyResult<()> {
        match (&self.backend, url_text(&dst)) {
            (Backend::Local(l), None) => compress(
                py,
                l.root.clone(),
                dst,
                block_type,
                threads,
                overwrite,
                progress,
            ),
            (Backend::Remote(r), Some(url)) => r.compress(py, url, block_type, overwrite, progress),
            _ => Err(exc(
                "compress: a local dataset compresses into a directory, one at a URL into a URL",
            )),
        }
    }

    /// Closes the dataset; later calls raise `WKWException`. Closing twice is allowed.
    fn close(&self) {
        match &self.backend {
            Backend::Local(l) => l.inner.close(),
            Backend::Remote(r) => r.close(),
        }
    }

    /// Whether `close` was called.
    #[getter]
    fn closed(&self) -> bool {
        match &self.backend {
            Backend::Local(l) => l.inner.is_closed(),
            Backend::Remote(r) => r.closed(),
        }
    }
}

/// `root` as a URL, if it is written as one (`scifmt_io::is_url`).
fn url_text(root: &Path) -> Option<String> {
    scifmt_io::is_url(root)
        .then(|| root.to_str().map(str::to_owned))
        .flatten()
}

/// `storage_options` are for URLs: given with a local path, a `ValueError`.
fn local_only(storage_options: Option<&[(String, String)]>, root: &Path) -> PyResult<()> {
    match storage_options {
        Some(o) if !o.is_empty() => Err(exc(format!(
            "{}: storage_options apply to URLs only",
            root.display()
        ))),
        _ => Ok(()),
    }
}
