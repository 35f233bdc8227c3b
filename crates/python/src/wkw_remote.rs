//! `scifmt._scifmt.wkw.RawRemoteDataset`: WKW datasets on object stores (`s3://`, `gs://`,
//! `az://`, `http(s)://`, `memory://` URLs) through `wkw::BlockingRemoteDataset`, behind the
//! same Python `Dataset` as local ones.
//!
//! Credentials and endpoints come from the environment (`AWS_*`, `GOOGLE_*`, `AZURE_*`, as
//! `object_store` reads them) and from `storage_options` (the same keys, applied after the
//! environment's). Messages name the URL without credentials. Every call releases the GIL and
//! runs under `catch_unwind`, like the local class.

use std::path::Path;
use std::sync::Arc;

use numpy::PyArray4;
use pyo3::prelude::*;
use pyo3::types::PyList;
use wkw::{BlockType, BlockingRemoteDataset, Header, RemoteOptions, VoxelType};

use crate::common::{ThreadChoice, detached};
use crate::wkw::{
    Closable, aligned_4d, exc, header_fields, options, parse_order, thread_choice, threads_mode,
    typed_4d, with_voxel,
};

/// Adds `RawRemoteDataset` to the existing `wkw` submodule of `parent`.
///
/// # Errors
/// A Python error if the submodule is missing.
pub(crate) fn register(parent: &Bound<'_, PyModule>) -> PyResult<()> {
    let m = parent.getattr("wkw")?;
    m.setattr(
        "RawRemoteDataset",
        parent.py().get_type::<RawRemoteDataset>(),
    )
}

/// A `WKWException` for `e` on the dataset at `url` (credentials already removed); messages
/// that name no URL get it in front.
fn remote_err(e: &wkw::Error, url: &str) -> PyErr {
    // A broken object: the reference's leading words, as for local files.
    if matches!(e, wkw::Error::Format { .. })
        && let Some(msg) =
            crate::wkw::reference_message(e, &|p: &std::path::Path| p.display().to_string())
    {
        return exc(msg);
    }
    let msg = e.to_string();
    if msg.contains(url) {
        exc(msg)
    } else {
        exc(format!("{url}: {msg}"))
    }
}

/// The URL as messages show it: without user info, query or fragment (where keys may hide).
fn shown(url: &str) -> String {
    let cut = url.find(['?', '#']).unwrap_or(url.len());
    let url = &url[..cut];
    let Some(s) = url.find("://") else {
        return url.to_string();
    };
    let (scheme, rest) = url.split_at(s + 3);
    let authority = &rest[..rest.find('/').unwrap_or(rest.len())];
    // The last `@` of the authority ends the user info (a raw `@` in a password comes before).
    match authority.rfind('@') {
        Some(at) => format!("{scheme}{}", &rest[at + 1..]),
        None => url.to_string(),
    }
}

/// An open remote dataset (its options name the pool its decoding runs on).
#[derive(Debug)]
struct Open {
    ds: BlockingRemoteDataset,
}

/// The Rust side of `scifmt.wkw.Dataset` for URLs (closed by `close`).
#[pyclass(module = "scifmt._scifmt.wkw", frozen)]
#[derive(Debug)]
pub(crate) struct RawRemoteDataset {
    url: String,
    inner: Closable<Open>,
}

/// The remote options for the Python arguments.
fn remote_options(
    threads: ThreadChoice,
    corrupt_as_zeros: bool,
    strict_headers: bool,
) -> PyResult<RemoteOptions> {
    let dataset = options(threads_mode(threads)?, corrupt_as_zeros, strict_headers);
    Ok(RemoteOptions::default().map_format(|f| f.with_dataset(dataset)))
}

impl RawRemoteDataset {
    fn get(&self) -> PyResult<Arc<Open>> {
        self.inner.get(&self.url)
    }

    /// Runs `f` without the GIL on the calling thread; the decoding inside uses the dataset's
    /// pool (`wkw::Threads::Pool`). Errors and panics become `WKWException`s naming the URL.
    ///
    /// Not inside the pool (`install`): the dataset decodes on a tokio blocking thread, whose
    /// parallel work the pool's threads join, so a pool thread must never be the one blocked
    /// waiting for that decode (with every pool thread blocked so, nothing would run it).
    fn run<T: Send>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&BlockingRemoteDataset) -> wkw::Result<T> + Send,
    ) -> PyResult<T> {
        let open = self.get()?;
        match detached(py, || f(&open.ds)) {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(e)) => Err(remote_err(&e, &self.url)),
            Err(panic) => Err(exc(format!("{}: {panic}", self.url))),
        }
    }

    /// Opens (or creates) in a fresh runtime, without the GIL.
    fn build(
        py: Python<'_>,
        url: &str,
        make: impl FnOnce() -> wkw::Result<BlockingRemoteDataset> + Send,
    ) -> PyResult<Self> {
        let name = shown(url);
        let ds = match detached(py, make) {
            Ok(Ok(ds)) => ds,
            Ok(Err(e)) => return Err(remote_err(&e, &name)),
            Err(panic) => return Err(exc(format!("{name}: {panic}"))),
        };
        Ok(Self {
            url: ds.url().to_string(),
            inner: Closable::new(Open { ds }),
        })
    }
}

#[pymethods]
impl RawRemoteDataset {
    /// Opens the dataset at `url` (the prefix holding `header.wkw`).
    #[staticmethod]
    #[pyo3(signature = (url, storage_options=None, threads=None, corrupt_as_zeros=false, strict_headers=false))]
    fn open(
        py: Python<'_>,
        url: String,
        storage_options: Option<Vec<(String, String)>>,
        threads: Option<usize>,
        corrupt_as_zeros: bool,
        strict_headers: bool,
    ) -> PyResult<Self> {
        let threads = thread_choice(threads)?;
        let opts = remote_options(threads, corrupt_as_zeros, strict_headers)?;
        let config = storage_options.unwrap_or_default();
        let u = url.clone();
        Self::build(py, &url, move || {
            BlockingRemoteDataset::open_url_with_config(&u, &config, opts)
        })
    }

    /// Creates a dataset at `url` (uploads `header.wkw`; `WKWException` if one exists).
    #[staticmethod]
    #[pyo3(signature = (url, voxel_type, num_channels, block_len, file_len, block_type, storage_options=None, threads=None, corrupt_as_zeros=false, strict_headers=false))]
    #[allow(clippy::too_many_arguments)] // the header fields and the options
    fn create(
        py: Python<'_>,
        url: String,
        voxel_type: u8,
        num_channels: u8,
        block_len: u32,
        file_len: u32,
        block_type: u8,
        storage_options: Option<Vec<(String, String)>>,
        threads: Option<usize>,
        corrupt_as_zeros: bool,
        strict_headers: bool,
    ) -> PyResult<Self> {
        let name = shown(&url);
        let vt = VoxelType::from_u8(voxel_type).map_err(|e| exc(e.to_string()))?;
        let bt = BlockType::from_u8(block_type).map_err(|e| exc(e.to_string()))?;
        let header = Header::new(vt, num_channels, block_len, file_len, bt)
            .map_err(|e| remote_err(&e, &name))?;
        let threads = thread_choice(threads)?;
        let opts = remote_options(threads, corrupt_as_zeros, strict_headers)?;
        let config = storage_options.unwrap_or_default();
        let u = url.clone();
        Self::build(py, &url, move || {
            BlockingRemoteDataset::create_url_with_config(&u, &config, header, opts)
        })
    }

    /// The dataset URL (without credentials).
    #[getter]
    fn root(&self) -> String {
        self.url.clone()
    }

    /// `(version, block_len, file_len, block_type, voxel_type, num_channels)`.
    fn header_fields(&self) -> PyResult<(u8, u32, u32, u8, u8, u8)> {
        Ok(header_fields(self.get()?.ds.header()))
    }

    /// Reads the box at `offset` of `shape` voxels as a (C, X, Y, Z) array in `order`.
    #[pyo3(signature = (offset, shape, order="F"))]
    fn read<'py>(
        &self,
        py: Python<'py>,
        offset: [u32; 3],
        shape: [u32; 3],
        order: &str,
    ) -> PyResult<Bound<'py, PyAny>> {
        let order = parse_order(order, Path::new(&self.url))?;
        let vt = self.get()?.ds.header().voxel_type();
        with_voxel!(vt, T => {
            let arr = self.run(py, |ds| ds.read_ndarray::<T>(offset, shape, order))?;
            Ok(PyArray4::from_owned_array(py, arr).into_any())
        })
    }

    /// Writes a 4-D numpy array (C, X, Y, Z) of the dataset's dtype at `offset`; each file
    /// touched is a conditional read-modify-write, so concurrent writers lose no update.
    fn write(&self, py: Python<'_>, offset: [u32; 3], data: &Bound<'_, PyAny>) -> PyResult<()> {
        let vt = self.get()?.ds.header().voxel_type();
        let data = aligned_4d(data)?;
        with_voxel!(vt, T => {
            let ro = typed_4d::<T>(&data, vt)?;
            let view = ro.as_array();
            self.run(py, |ds| ds.write_ndarray(offset, view))
        })
    }

    /// URLs of every data file, sorted by z, y, x.
    fn list_files<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let files = self.run(py, BlockingRemoteDataset::list_files)?;
        PyList::new(py, files.into_iter().map(|(_, p)| p))
    }

    /// Checks every data file: `(url, problem)` for the files with a problem.
    fn verify(&self, py: Python<'_>) -> PyResult<Vec<(String, String)>> {
        self.run(py, |ds| {
            let report = ds.verify(&|_| {})?;
            Ok(report
                .problems()
                .map(|f| {
                    let msg = f
                        .problem
                        .as_ref()
                        .map_or_else(String::new, ToString::to_string);
                    (f.path.display().to_string(), msg)
                })
                .collect())
        })
    }

    /// Converts every data file into a new dataset at `dst_url` (configured from the
    /// environment) with block type `block_type` (1..=3).
    fn compress(&self, py: Python<'_>, dst_url: String, block_type: u8) -> PyResult<()> {
        let bt = BlockType::from_u8(block_type).map_err(|e| exc(e.to_string()))?;
        self.run(py, |ds| ds.compress_to_url(&dst_url, bt, &|_| {}).map(drop))
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
