//! The object-store backend of `scifmt._scifmt.wkw.RawDataset`: WKW datasets at `s3://`,
//! `gs://`, `az://`, `http(s)://`, `memory://` URLs through `wkw::BlockingRemoteDataset`.
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
use wkw::{BlockType, BlockingRemoteDataset, Cancel, Header, RemoteOptions, VoxelType};

use crate::common::{ThreadChoice, apart, detached, interruptible};
use crate::wkw::{
    Callback, Closable, INTERRUPTIBLE_BYTES, OUTPUT_EXISTS, OVERLAP, aligned_4d, box_bytes,
    dataset_exists, exc, header_fields, options, parse_order, thread_choice, threads_mode,
    typed_4d, with_voxel,
};

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
    if let wkw::Error::AlreadyExists { path } = e {
        let msg = dataset_exists(&path.display().to_string());
        return Python::attach(|py| OUTPUT_EXISTS.err(py, msg));
    }
    let msg = e.to_string();
    if msg.contains(url) {
        exc(msg)
    } else {
        exc(format!("{url}: {msg}"))
    }
}

/// Whether a dataset (`header.wkw`) is at the URL `url`.
fn remote_dataset_exists(url: &str, config: &[(String, String)]) -> wkw::Result<bool> {
    use wkw::object_store::{Error as StoreError, ObjectStoreExt};
    let at = scifmt_io::store_for_url(url, config)?;
    let header = scifmt_io::child(&at.path, wkw::HEADER_FILE_NAME);
    match scifmt_io::block_on(at.store.head(&header))? {
        Ok(_) => Ok(true),
        Err(StoreError::NotFound { .. }) => Ok(false),
        Err(source) => Err(wkw::Error::Remote {
            url: scifmt_io::join_url(&at.url, wkw::HEADER_FILE_NAME),
            source,
        }),
    }
}

/// `overwrite=True` for a dataset at a URL: refused when one is there. An object store cannot
/// swap a whole prefix in one step, so replacing it would pass through a state with neither
/// the old dataset nor a complete new one; the caller deletes it deliberately instead.
fn refuse_replacing(
    py: Python<'_>,
    url: &str,
    config: &[(String, String)],
    name: &str,
) -> PyResult<()> {
    let exists = detached(py, || remote_dataset_exists(url, config))
        .map_err(exc)?
        .map_err(|e| remote_err(&e, name))?;
    if exists {
        return Err(OUTPUT_EXISTS.err(
            py,
            format!(
                "{name}: a dataset exists there, and a dataset at a URL is never replaced, even \
                 with overwrite=True (an object store cannot swap it in one step, so an \
                 interruption would lose both): delete it first, or choose another URL"
            ),
        ));
    }
    Ok(())
}

/// An open remote dataset (its options name the pool its decoding runs on), with what opens
/// it again with a call's own cancel flag.
#[derive(Debug)]
struct Open {
    ds: BlockingRemoteDataset,
    /// The URL as given (it may carry what the store needs).
    url: String,
    /// `storage_options`.
    config: Vec<(String, String)>,
    /// The options `ds` was opened with.
    opts: RemoteOptions,
}

impl Open {
    /// The dataset opened again with the flag `cancel` (one `header.wkw` request), for a call
    /// Ctrl-C may stop.
    fn with_cancel(&self, cancel: &Cancel) -> wkw::Result<BlockingRemoteDataset> {
        let opts = self.opts.clone().map_format(|mut f| {
            f.dataset = f.dataset.with_cancel(cancel.clone());
            f
        });
        BlockingRemoteDataset::open_url_with_config(&self.url, &self.config, opts)
    }
}

/// A dataset at a URL (closed by `close`): one backend of `RawDataset`.
#[derive(Debug)]
pub(crate) struct Remote {
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

impl Remote {
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

    /// Runs `f` on the dataset opened again with a new cancel flag, on a worker thread that
    /// Ctrl-C stops (`common::interruptible`: then `KeyboardInterrupt` is raised); errors and
    /// panics become `WKWException`s naming the URL.
    fn run_interruptible<T: Send>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&BlockingRemoteDataset) -> wkw::Result<T> + Send,
    ) -> PyResult<T> {
        let open = self.get()?;
        let cancel = Cancel::new();
        let work = || f(&open.with_cancel(&cancel)?);
        match interruptible(py, &cancel, work)? {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(e)) => Err(remote_err(&e, &self.url)),
            Err(panic) => Err(exc(format!("{}: {panic}", self.url))),
        }
    }

    /// Opens (or creates) in a fresh runtime, without the GIL.
    fn build(
        py: Python<'_>,
        url: &str,
        config: Vec<(String, String)>,
        opts: RemoteOptions,
        make: impl FnOnce() -> wkw::Result<BlockingRemoteDataset> + Send,
    ) -> PyResult<Self> {
        let name = scifmt_io::redact(url);
        let ds = match detached(py, make) {
            Ok(Ok(ds)) => ds,
            Ok(Err(e)) => return Err(remote_err(&e, &name)),
            Err(panic) => return Err(exc(format!("{name}: {panic}"))),
        };
        Ok(Self {
            url: ds.url().to_string(),
            inner: Closable::new(Open {
                ds,
                url: url.to_owned(),
                config,
                opts,
            }),
        })
    }
}

impl Remote {
    /// Opens the dataset at `url` (the prefix holding `header.wkw`).
    pub(crate) fn open(
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
        let (u, c, o) = (url.clone(), config.clone(), opts.clone());
        Self::build(py, &url, config, opts, move || {
            BlockingRemoteDataset::open_url_with_config(&u, &c, o)
        })
    }

    /// Creates a dataset at `url` (uploads `header.wkw`). An existing dataset is
    /// `OutputExistsError`, also with `overwrite` (a dataset at a URL is never replaced: an
    /// object store cannot swap it in one step).
    #[allow(clippy::too_many_arguments)] // the header fields and the options
    pub(crate) fn create(
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
        overwrite: bool,
    ) -> PyResult<Self> {
        let name = scifmt_io::redact(&url);
        let vt = VoxelType::from_u8(voxel_type).map_err(|e| exc(e.to_string()))?;
        let bt = BlockType::from_u8(block_type).map_err(|e| exc(e.to_string()))?;
        let header = Header::new(vt, num_channels, block_len, file_len, bt)
            .map_err(|e| remote_err(&e, &name))?;
        let threads = thread_choice(threads)?;
        let opts = remote_options(threads, corrupt_as_zeros, strict_headers)?;
        let config = storage_options.unwrap_or_default();
        if overwrite {
            refuse_replacing(py, &url, &config, &name)?;
        }
        let (u, c, o) = (url.clone(), config.clone(), opts.clone());
        Self::build(py, &url, config, opts, move || {
            BlockingRemoteDataset::create_url_with_config(&u, &c, header, o)
        })
    }

    /// The dataset URL (without credentials).
    pub(crate) fn root(&self) -> String {
        self.url.clone()
    }

    /// `(version, block_len, file_len, block_type, voxel_type, num_channels)`.
    pub(crate) fn header_fields(&self) -> PyResult<(u8, u32, u32, u8, u8, u8)> {
        Ok(header_fields(self.get()?.ds.header()))
    }

    /// Reads the box at `offset` of `shape` voxels as a (C, X, Y, Z) array in `order`.
    pub(crate) fn read<'py>(
        &self,
        py: Python<'py>,
        offset: [u32; 3],
        shape: [u32; 3],
        order: &str,
    ) -> PyResult<Bound<'py, PyAny>> {
        let order = parse_order(order, Path::new(&self.url))?;
        let header = *self.get()?.ds.header();
        let vt = header.voxel_type();
        let large = box_bytes(&header, shape) >= INTERRUPTIBLE_BYTES;
        with_voxel!(vt, T => {
            let read = |ds: &BlockingRemoteDataset| ds.read_ndarray::<T>(offset, shape, order);
            let arr = if large { self.run_interruptible(py, read)? } else { self.run(py, read)? };
            Ok(PyArray4::from_owned_array(py, arr).into_any())
        })
    }

    /// Writes a 4-D numpy array (C, X, Y, Z) of the dataset's dtype at `offset`; each file
    /// touched is a conditional read-modify-write, so concurrent writers lose no update.
    pub(crate) fn write(
        &self,
        py: Python<'_>,
        offset: [u32; 3],
        data: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        let header = *self.get()?.ds.header();
        let vt = header.voxel_type();
        let data = aligned_4d(data)?;
        with_voxel!(vt, T => {
            let ro = typed_4d::<T>(&data, vt)?;
            let view = ro.as_array();
            let shape = [view.dim().1, view.dim().2, view.dim().3]
                .map(|n| u32::try_from(n).unwrap_or(u32::MAX));
            if box_bytes(&header, shape) >= INTERRUPTIBLE_BYTES {
                self.run_interruptible(py, |ds| ds.write_ndarray(offset, view))
            } else {
                self.run(py, |ds| ds.write_ndarray(offset, view))
            }
        })
    }

    /// URLs of every data file, sorted by z, y, x.
    pub(crate) fn list_files<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let files = self.run(py, BlockingRemoteDataset::list_files)?;
        PyList::new(py, files.into_iter().map(|(_, p)| p))
    }

    /// Checks every data file: `(url, problem)` for the files with a problem;
    /// `progress(done, total)` after each file. Ctrl-C stops it between files
    /// (`KeyboardInterrupt`).
    pub(crate) fn verify(
        &self,
        py: Python<'_>,
        progress: Option<Py<PyAny>>,
    ) -> PyResult<Vec<(String, String)>> {
        let callback = Callback::new(progress);
        let report = |p: wkw::Progress<'_>| callback.call(p.done, p.total);
        let problems = self.run_interruptible(py, |ds| {
            let report = ds.verify(&report)?;
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
        })?;
        callback.finish()?;
        Ok(problems)
    }

    /// Converts every data file into a new dataset at `dst_url` (configured from the
    /// environment) with block type `block_type` (1..=3); `progress(done, total)` after each
    /// file. `dst_url` must not be this dataset, inside it or around it (`OverlapError`); an
    /// existing dataset there is `OutputExistsError`, also with `overwrite` (a dataset at a URL
    /// is never replaced: an object store cannot swap it in one step). Ctrl-C stops it between files (`KeyboardInterrupt`).
    pub(crate) fn compress(
        &self,
        py: Python<'_>,
        dst_url: String,
        block_type: u8,
        overwrite: bool,
        progress: Option<Py<PyAny>>,
    ) -> PyResult<()> {
        let bt = BlockType::from_u8(block_type).map_err(|e| exc(e.to_string()))?;
        let open = self.get()?;
        let (src, dst) = (Path::new(&open.url), Path::new(&dst_url));
        detached(py, || apart(src, dst))
            .map_err(exc)?
            .map_err(|m| OVERLAP.err(py, m))?;
        if overwrite {
            refuse_replacing(py, &dst_url, &open.config, &scifmt_io::redact(&dst_url))?;
        }
        let callback = Callback::new(progress);
        let report = |p: wkw::Progress<'_>| callback.call(p.done, p.total);
        self.run_interruptible(py, |ds| ds.compress_to_url(&dst_url, bt, &report).map(drop))?;
        callback.finish()
    }

    /// Closes the dataset; later calls raise `WKWException`. Closing twice is allowed.
    pub(crate) fn close(&self) {
        self.inner.close();
    }

    /// Whether `close` was called.
    pub(crate) fn closed(&self) -> bool {
        self.inner.is_closed()
    }
}
