//! `scifmt._scifmt.b2nd`: the Rust core of `scifmt.b2nd` (b2nd arrays in Blosc2 frames through
//! `blosc2-frame`).
//!
//! Reading: `File` opens a frame, exposes its b2nd metalayer, metalayers and vlmetalayers
//! (msgpack decoded to Python values) and reads hyper-slabs with the GIL released (only the
//! chunks and blocks a region touches are decoded). Writing: `Writer` takes chunks already laid
//! out block-major by the Python wrapper, compresses them with the GIL released and writes the
//! frame file atomically. Every error is a `B2ndError` (or `OSError` for I/O) naming the file.

use std::path::PathBuf;

use blosc2_frame::blosc_chunk::{CParams, Codec, Filter, MAX_FILTERS, SplitMode};
use blosc2_frame::rmpv::{self, Value};
use blosc2_frame::{
    B2ND_METALAYER, B2ndArray, B2ndMeta, BlockingRemoteB2nd, ChunkLocation, Durability,
    FrameHeader, FrameParams, FrameWriter, Layer, Limits, RemoteOptions,
};
use numpy::{PyArray1, PyReadonlyArray1};
use pyo3::exceptions::{PyFileNotFoundError, PyOSError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};

use crate::common::{detached, guarded};

pyo3::create_exception!(
    scifmt.b2nd,
    B2ndError,
    PyValueError,
    "A b2nd frame could not be read or written (malformed or unsupported frame, bad \
     arguments, a limit exceeded)."
);

/// Deepest msgpack nesting converted to or from Python values.
const MAX_DEPTH: usize = 256;

/// The Python exception for a frame error on `path`: `FileNotFoundError` / `OSError` for I/O
/// errors, `B2ndError` otherwise; the message names the file.
/// Remote errors name their URL themselves (`path` empty).
fn frame_err(path: &str, e: &blosc2_frame::Error) -> PyErr {
    let msg = if path.is_empty() {
        e.to_string()
    } else {
        format!("{path}: {e}")
    };
    match e {
        blosc2_frame::Error::Io(io) if io.kind() == std::io::ErrorKind::NotFound => {
            PyFileNotFoundError::new_err(msg)
        }
        blosc2_frame::Error::Remote {
            source: blosc2_frame::object_store::Error::NotFound { .. },
            ..
        } => PyFileNotFoundError::new_err(msg),
        blosc2_frame::Error::Remote { .. } => PyOSError::new_err(msg),
        blosc2_frame::Error::Io(_) => PyOSError::new_err(msg),
        _ => B2ndError::new_err(msg),
    }
}

/// `B2ndError` with `msg`.
fn err(msg: impl Into<String>) -> PyErr {
    B2ndError::new_err(msg.into())
}

/// A msgpack value as a Python object: nil → None, integers → int, floats → float, strings →
/// str (bytes if not UTF-8), binary → bytes, arrays → list, maps → dict, ext → (type, bytes).
fn to_py<'py>(py: Python<'py>, v: &Value, depth: usize) -> PyResult<Bound<'py, PyAny>> {
    if depth > MAX_DEPTH {
        return Err(err(format!(
            "msgpack nested deeper than {MAX_DEPTH} levels"
        )));
    }
    Ok(match v {
        Value::Nil => py.None().into_bound(py),
        Value::Boolean(b) => PyBool::new(py, *b).to_owned().into_any(),
        Value::Integer(i) => {
            if let Some(n) = i.as_i64() {
                n.into_pyobject(py)?.into_any()
            } else {
                i.as_u64().unwrap_or(0).into_pyobject(py)?.into_any()
            }
        }
        Value::F32(f) => PyFloat::new(py, f64::from(*f)).into_any(),
        Value::F64(f) => PyFloat::new(py, *f).into_any(),
        Value::String(s) => match s.as_str() {
            Some(t) => PyString::new(py, t).into_any(),
            None => PyBytes::new(py, s.as_bytes()).into_any(),
        },
        Value::Binary(b) => PyBytes::new(py, b).into_any(),
        Value::Array(items) => {
            let l = PyList::empty(py);
            for x in items {
                l.append(to_py(py, x, depth + 1)?)?;
            }
            l.into_any()
        }
        Value::Map(pairs) => {
            let d = PyDict::new(py);
            for (k, x) in pairs {
                let mut key = to_py(py, k, depth + 1)?;
                if let Ok(l) = key.cast::<PyList>() {
                    key = PyTuple::new(py, l.iter())?.into_any();
                }
                d.set_item(key, to_py(py, x, depth + 1)?)?;
            }
            d.into_any()
        }
        Value::Ext(t, data) => PyTuple::new(
            py,
            [
                t.into_pyobject(py)?.into_any(),
                PyBytes::new(py, data).into_any(),
            ],
        )?
        .into_any(),
    })
}

/// A Python value as msgpack (the inverse of [`to_py`]; tuples become arrays).
///
/// # Errors
/// `TypeError` for values msgpack cannot hold, `B2ndError` for nesting beyond 256 levels.
fn from_py(obj: &Bound<'_, PyAny>, depth: usize) -> PyResult<Value> {
    if depth > MAX_DEPTH {
        return Err(err(format!("value nested deeper than {MAX_DEPTH} levels")));
    }
    if obj.is_none() {
        return Ok(Value::Nil);
    }
    if let Ok(b) = obj.cast::<PyBool>() {
        return Ok(Value::Boolean(b.is_true()));
    }
    if obj.is_instance_of::<PyInt>() {
        if let Ok(n) = obj.extract::<i64>() {
            return Ok(Value::from(n));
        }
        if let Ok(n) = obj.extract::<u64>() {
            return Ok(Value::from(n));
        }
        return Err(PyValueError::new_err(
            "integer out of msgpack's range (-2**63 .. 2**64-1)",
        ));
    }
    if let Ok(f) = obj.cast::<PyFloat>() {
        return Ok(Value::F64(f.value()));
    }
    if let Ok(s) = obj.cast::<PyString>() {
        return Ok(Value::from(s.extract::<String>()?));
    }
    if let Ok(b) = obj.cast::<PyBytes>() {
        return Ok(Value::Binary(b.as_bytes().to_vec()));
    }
    if let Ok(l) = obj.cast::<PyList>() {
        return l
            .iter()
            .map(|x| from_py(&x, depth + 1))
            .collect::<PyResult<Vec<_>>>()
            .map(Value::Array);
    }
    if let Ok(t) = obj.cast::<PyTuple>() {
        return t
            .iter()
            .map(|x| from_py(&x, depth + 1))
            .collect::<PyResult<Vec<_>>>()
            .map(Value::Array);
    }
    if let Ok(d) = obj.cast::<PyDict>() {
        let mut pairs = Vec::with_capacity(d.len());
        for (k, v) in d.iter() {
            pairs.push((from_py(&k, depth + 1)?, from_py(&v, depth + 1)?));
        }
        return Ok(Value::Map(pairs));
    }
    Err(PyTypeError::new_err(format!(
        "cannot store a {} in msgpack metadata (None, bool, int, float, str, bytes, list, tuple, dict)",
        obj.get_type().name()?
    )))
}

/// Encodes a Python value as msgpack bytes.
fn pack(obj: &Bound<'_, PyAny>) -> PyResult<Vec<u8>> {
    let v = guarded(|| from_py(obj, 0)).map_err(err)??;
    let mut out = Vec::new();
    rmpv::encode::write_value(&mut out, &v).map_err(|e| err(format!("msgpack encoding: {e}")))?;
    Ok(out)
}

/// Unsigned coordinates from Python integers, refusing negative ones.
fn coords(v: &[i64], what: &str) -> PyResult<Vec<u64>> {
    v.iter()
        .map(|&x| u64::try_from(x).map_err(|_| err(format!("{what} coordinate {x} is negative"))))
        .collect()
}

/// Where an opened array lives: a file or in-memory frame, or an object-store URL.
#[allow(
    clippy::large_enum_variant,
    reason = "one per open array; boxing would only add an indirection"
)]
enum Source {
    Local(B2ndArray<'static>),
    Remote(BlockingRemoteB2nd),
}

impl Source {
    fn meta(&self) -> &B2ndMeta {
        match self {
            Self::Local(a) => a.meta(),
            Self::Remote(r) => r.meta(),
        }
    }

    fn dtype(&self) -> &str {
        match self {
            Self::Local(a) => a.dtype(),
            Self::Remote(r) => r.dtype(),
        }
    }

    fn itemsize(&self) -> usize {
        match self {
            Self::Local(a) => a.itemsize(),
            Self::Remote(r) => r.itemsize(),
        }
    }

    fn header(&self) -> &FrameHeader {
        match self {
            Self::Local(a) => a.frame().header(),
            Self::Remote(r) => r.inner().header(),
        }
    }

    fn nchunks(&self) -> usize {
        match self {
            Self::Local(a) => a.frame().nchunks(),
            Self::Remote(r) => r.inner().nchunks(),
        }
    }

    fn metalayers(&self) -> &[Layer] {
        match self {
            Self::Local(a) => a.frame().metalayers(),
            Self::Remote(r) => r.inner().metalayers(),
        }
    }

    fn vlmetalayers(&self) -> &[Layer] {
        match self {
            Self::Local(a) => a.frame().vlmetalayers(),
            Self::Remote(r) => r.inner().vlmetalayers(),
        }
    }

    fn metalayer(&self, name: &str) -> Option<&[u8]> {
        match self {
            Self::Local(a) => a.frame().metalayer(name),
            Self::Remote(r) => r.inner().metalayer(name),
        }
    }

    fn metalayer_value(&self, name: &str) -> blosc2_frame::Result<Value> {
        match self {
            Self::Local(a) => a.frame().metalayer_value(name),
            Self::Remote(r) => r.inner().metalayer_value(name),
        }
    }

    fn vlmetalayer(&self, name: &str) -> blosc2_frame::Result<Vec<u8>> {
        match self {
            Self::Local(a) => a.frame().vlmetalayer(name),
            Self::Remote(r) => r.inner().vlmetalayer(name),
        }
    }

    fn vlmetalayer_value(&self, name: &str) -> blosc2_frame::Result<Value> {
        match self {
            Self::Local(a) => a.frame().vlmetalayer_value(name),
            Self::Remote(r) => r.inner().vlmetalayer_value(name),
        }
    }

    /// The region `start..stop`; a remote read fetches only the chunks it touches.
    fn read_region(&self, start: &[u64], stop: &[u64]) -> blosc2_frame::Result<Vec<u8>> {
        match self {
            Self::Local(a) => a.read_region(start, stop),
            Self::Remote(r) => r.read_region(start, stop),
        }
    }
}

/// An opened b2nd array: a frame file, an in-memory frame or an object-store URL.
#[pyclass(frozen, module = "scifmt._scifmt.b2nd")]
struct File {
    path: String,
    array: Source,
}

#[pymethods]
impl File {
    /// Opens `path`, reading header, index and trailer (chunks are read on demand).
    /// `max_output_bytes` caps a single read (default: the crate's 4 GiB).
    #[new]
    #[pyo3(signature = (path, max_output_bytes=None))]
    fn new(py: Python<'_>, path: PathBuf, max_output_bytes: Option<u64>) -> PyResult<Self> {
        let name = path.display().to_string();
        let mut limits = Limits::default();
        if let Some(m) = max_output_bytes {
            limits.max_output_bytes = usize::try_from(m).unwrap_or(usize::MAX);
        }
        let array = detached(py, || B2ndArray::open_with(&path, &limits))
            .map_err(|m| err(format!("{name}: {m}")))?
            .map_err(|e| frame_err(&name, &e))?;
        Ok(Self {
            path: name,
            array: Source::Local(array),
        })
    }

    /// Opens the b2nd array at an object-store URL (`s3://`, `gs://`, `az://`, `http(s)://`,
    /// `memory://`): header, metalayers, index and trailer are fetched (at most two requests),
    /// chunks on demand. Credentials and endpoints come from the environment (`AWS_*`,
    /// `GOOGLE_*`, `AZURE_*`); messages name the URL without credentials.
    #[staticmethod]
    #[pyo3(signature = (url, max_output_bytes=None))]
    fn open_url(py: Python<'_>, url: &str, max_output_bytes: Option<u64>) -> PyResult<Self> {
        let mut options = RemoteOptions::default();
        if let Some(m) = max_output_bytes {
            let mut limits = Limits::default();
            limits.max_output_bytes = usize::try_from(m).unwrap_or(usize::MAX);
            options = options.map_format(|f| f.with_limits(limits));
        }
        let array = detached(py, || BlockingRemoteB2nd::open_url(url, options))
            .map_err(err)?
            .map_err(|e| frame_err("", &e))?;
        Ok(Self {
            path: array.inner().url(),
            array: Source::Remote(array),
        })
    }

    /// Parses an in-memory contiguous frame (python-blosc2's `to_cframe()` bytes); the bytes
    /// are copied once and owned by the result.
    #[staticmethod]
    #[pyo3(signature = (data, max_output_bytes=None))]
    fn from_cframe(
        py: Python<'_>,
        data: PyReadonlyArray1<'_, u8>,
        max_output_bytes: Option<u64>,
    ) -> PyResult<Self> {
        let name = "<cframe>".to_string();
        let mut limits = Limits::default();
        if let Some(m) = max_output_bytes {
            limits.max_output_bytes = usize::try_from(m).unwrap_or(usize::MAX);
        }
        let buf = data
            .as_slice()
            .map_err(|_| err("the frame must be a C-contiguous buffer"))?
            .to_vec();
        let array = detached(py, || {
            blosc2_frame::Frame::from_reader(buf, 0, &limits).and_then(B2ndArray::new)
        })
        .map_err(|m| err(format!("{name}: {m}")))?
        .map_err(|e| frame_err(&name, &e))?;
        Ok(Self {
            path: name,
            array: Source::Local(array),
        })
    }

    /// The file name given to `open`.
    #[getter]
    fn path(&self) -> &str {
        &self.path
    }

    /// The array shape.
    #[getter]
    fn shape(&self) -> Vec<u64> {
        self.array.meta().shape.clone()
    }

    /// The chunk shape.
    #[getter]
    fn chunks(&self) -> Vec<u64> {
        self.array.meta().chunkshape.clone()
    }

    /// The block shape.
    #[getter]
    fn blocks(&self) -> Vec<u64> {
        self.array.meta().blockshape.clone()
    }

    /// The dtype string as stored (NumPy `dtype.str` or a structured dtype's repr).
    #[getter]
    fn dtype(&self) -> &str {
        self.array.dtype()
    }

    /// Bytes per item.
    #[getter]
    fn itemsize(&self) -> usize {
        self.array.itemsize()
    }

    /// Number of chunks.
    #[getter]
    fn nchunks(&self) -> usize {
        self.array.nchunks()
    }

    /// Length of the frame in bytes (header, chunks, index and trailer).
    #[getter]
    fn frame_len(&self) -> u64 {
        self.array.header().frame_len
    }

    /// The frame's default compression parameters: (codec id, clevel, typesize).
    #[getter]
    fn cparams(&self) -> (u8, u8, u32) {
        let h = self.array.header();
        (h.codec().id(), h.clevel, h.typesize)
    }

    /// Names of the fixed-size metalayers (header), in file order.
    fn metalayer_names(&self) -> Vec<String> {
        self.array
            .metalayers()
            .iter()
            .map(|l| l.name.clone())
            .collect()
    }

    /// Names of the variable-length metalayers (trailer), in file order.
    fn vlmeta_names(&self) -> Vec<String> {
        self.array
            .vlmetalayers()
            .iter()
            .map(|l| l.name.clone())
            .collect()
    }

    /// The raw bytes of metalayer `name`.
    fn metalayer_raw<'py>(&self, py: Python<'py>, name: &str) -> PyResult<Bound<'py, PyBytes>> {
        let raw = self.array.metalayer(name).ok_or_else(|| {
            pyo3::exceptions::PyKeyError::new_err(format!("{}: no metalayer {name:?}", self.path))
        })?;
        Ok(PyBytes::new(py, raw))
    }

    /// Metalayer `name` decoded from msgpack.
    fn metalayer<'py>(&self, py: Python<'py>, name: &str) -> PyResult<Bound<'py, PyAny>> {
        if self.array.metalayer(name).is_none() {
            return Err(pyo3::exceptions::PyKeyError::new_err(format!(
                "{}: no metalayer {name:?}",
                self.path
            )));
        }
        let v = guarded(|| self.array.metalayer_value(name))
            .map_err(err)?
            .map_err(|e| frame_err(&self.path, &e))?;
        guarded(|| to_py(py, &v, 0)).map_err(err)?
    }

    /// The decompressed bytes of vlmetalayer `name`.
    fn vlmeta_raw<'py>(&self, py: Python<'py>, name: &str) -> PyResult<Bound<'py, PyBytes>> {
        let raw = detached(py, || self.array.vlmetalayer(name))
            .map_err(err)?
            .map_err(|e| self.lookup_err(name, &e))?;
        Ok(PyBytes::new(py, &raw))
    }

    /// Vlmetalayer `name` decompressed and decoded from msgpack.
    fn vlmeta<'py>(&self, py: Python<'py>, name: &str) -> PyResult<Bound<'py, PyAny>> {
        let v = detached(py, || self.array.vlmetalayer_value(name))
            .map_err(err)?
            .map_err(|e| self.lookup_err(name, &e))?;
        guarded(|| to_py(py, &v, 0)).map_err(err)?
    }

    /// The hyper-slab `start..stop` as a 1-D `uint8` array of C-order items (stored byte
    /// order), decoded with the GIL released; only the chunks and blocks it touches are read.
    fn read<'py>(
        &self,
        py: Python<'py>,
        start: Vec<i64>,
        stop: Vec<i64>,
    ) -> PyResult<Bound<'py, PyArray1<u8>>> {
        let start = coords(&start, "start")?;
        let stop = coords(&stop, "stop")?;
        let data = detached(py, || self.array.read_region(&start, &stop))
            .map_err(|m| err(format!("{}: {m}", self.path)))?
            .map_err(|e| frame_err(&self.path, &e))?;
        Ok(PyArray1::from_vec(py, data))
    }

    /// File offsets of the stored chunks (`None` for special chunks: zeros, NaN, uninit), for
    /// tests and tools.
    fn chunk_offsets(&self) -> PyResult<Vec<Option<u64>>> {
        let Source::Local(a) = &self.array else {
            return Err(err(format!(
                "{}: chunk offsets of a remote array",
                self.path
            )));
        };
        let f = a.frame();
        let base = u64::from(f.header().header_len);
        Ok(f.index()
            .iter()
            .map(|l| match l {
                ChunkLocation::Stored(off) if !f.is_sparse() => base.checked_add(*off),
                _ => None,
            })
            .collect())
    }

    fn __repr__(&self) -> String {
        format!(
            "<scifmt b2nd file {:?} shape={:?} dtype={} chunks={:?} blocks={:?}>",
            self.path,
            self.array.meta().shape,
            self.array.dtype(),
            self.array.meta().chunkshape,
            self.array.meta().blockshape
        )
    }
}

impl File {
    /// `KeyError` for a missing layer, the frame error otherwise.
    fn lookup_err(&self, name: &str, e: &blosc2_frame::Error) -> PyErr {
        if let blosc2_frame::Error::NotFound { .. } = e {
            pyo3::exceptions::PyKeyError::new_err(format!("{}: no vlmetalayer {name:?}", self.path))
        } else {
            frame_err(&self.path, e)
        }
    }
}

/// Builds a b2nd frame from block-major chunks and writes it to a file.
#[pyclass(module = "scifmt._scifmt.b2nd")]
struct Writer {
    writer: Option<FrameWriter>,
    chunk_bytes: usize,
    nchunks: u64,
}

/// The compression parameters for a b2nd frame.
#[allow(clippy::too_many_arguments)]
fn frame_cparams(
    itemsize: usize,
    block_bytes: usize,
    codec: i64,
    clevel: i64,
    filters: &[i64],
    filters_meta: &[i64],
    splitmode: i64,
    nthreads: i64,
    use_dict: bool,
) -> PyResult<CParams> {
    let mut p = CParams::default();
    p.codec = u8::try_from(codec)
        .map(Codec::from_id)
        .ok()
        .filter(|c| !matches!(c, Codec::Other(_)))
        .ok_or_else(|| err(format!("codec {codec} is not supported")))?;
    p.clevel = u8::try_from(clevel)
        .ok()
        .filter(|&c| c <= 9)
        .ok_or_else(|| err(format!("clevel {clevel} is not in 0..=9")))?;
    if filters.len() > MAX_FILTERS || filters_meta.len() > MAX_FILTERS {
        return Err(err(format!("at most {MAX_FILTERS} filters")));
    }
    p.filters = [Filter::NoFilter; MAX_FILTERS];
    for (slot, &f) in p.filters.iter_mut().zip(filters) {
        *slot = u8::try_from(f)
            .map(Filter::from_id)
            .ok()
            .filter(|f| !matches!(f, Filter::Other(_)))
            .ok_or_else(|| err(format!("filter {f} is not supported")))?;
    }
    for (slot, &m) in p.filters_meta.iter_mut().zip(filters_meta) {
        *slot = i8::try_from(m)
            .map(|v| v.to_le_bytes()[0])
            .or_else(|_| u8::try_from(m))
            .map_err(|_| err(format!("filters_meta {m} is not in -128..=255")))?;
    }
    p.splitmode = match splitmode {
        1 => SplitMode::Always,
        2 => SplitMode::Never,
        3 => SplitMode::Auto,
        4 => SplitMode::ForwardCompat,
        _ => return Err(err(format!("splitmode {splitmode} is not in 1..=4"))),
    };
    p.nthreads = usize::try_from(nthreads)
        .ok()
        .filter(|&n| n <= 4096)
        .ok_or_else(|| err(format!("nthreads {nthreads} is not in 0..=4096")))?;
    p.typesize = itemsize;
    p.blocksize = block_bytes;
    p.use_dict = use_dict;
    Ok(p)
}

#[pymethods]
impl Writer {
    /// A writer for an array of `shape` items of `dtype` (`itemsize` bytes) stored in chunks
    /// of `chunks` and blocks of `blocks`, compressed with the given parameters (numbers as in
    /// `scifmt.blosc`).
    #[new]
    #[pyo3(signature = (shape, chunks, blocks, dtype, itemsize, codec, clevel, filters, filters_meta, splitmode, nthreads, use_dict, codec_meta=0))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        shape: Vec<i64>,
        chunks: Vec<i64>,
        blocks: Vec<i64>,
        dtype: &str,
        itemsize: i64,
        codec: i64,
        clevel: i64,
        filters: Vec<i64>,
        filters_meta: Vec<i64>,
        splitmode: i64,
        nthreads: i64,
        use_dict: bool,
        codec_meta: i64,
    ) -> PyResult<Self> {
        let meta = B2ndMeta::new(
            &coords(&shape, "shape")?,
            &coords(&chunks, "chunks")?,
            &coords(&blocks, "blocks")?,
            dtype,
        )
        .map_err(|e| err(e.to_string()))?;
        let itemsize = usize::try_from(itemsize)
            .ok()
            .filter(|&s| s >= 1)
            .ok_or_else(|| err(format!("itemsize {itemsize} must be at least 1")))?;
        let sized = |items: u64, what: &str| {
            usize::try_from(items)
                .ok()
                .and_then(|n| n.checked_mul(itemsize))
                .filter(|&n| n <= blosc2_frame::blosc_chunk::MAX_BUFFERSIZE)
                .ok_or_else(|| err(format!("{what} exceeds Blosc's 2 GiB chunk limit")))
        };
        let chunk_bytes = sized(meta.chunk_items(), "chunk size")?;
        let block_bytes = sized(meta.block_items(), "block size")?;
        let mut cp = frame_cparams(
            itemsize,
            block_bytes,
            codec,
            clevel,
            &filters,
            &filters_meta,
            splitmode,
            nthreads,
            use_dict,
        )?;
        // Plugins (NDCELL, NDMEAN, NDLZ, ZFP) work on the b2nd block and the codec meta.
        cp.blockshape = blosc2_frame::blosc_chunk::BlockShape::new(&meta.blockshape).ok();
        cp.codec_meta = i8::try_from(codec_meta)
            .map(|v| v.to_le_bytes()[0])
            .or_else(|_| u8::try_from(codec_meta))
            .map_err(|_| err(format!("codec_meta {codec_meta} is not in -128..=255")))?;
        let mut params = FrameParams::new(cp, chunk_bytes);
        params.nthreads_compress = i16::try_from(nthreads.max(1)).unwrap_or(i16::MAX);
        let mut w = FrameWriter::new(params).map_err(|e| err(e.to_string()))?;
        w.add_metalayer(
            B2ND_METALAYER,
            &meta.to_bytes().map_err(|e| err(e.to_string()))?,
        )
        .map_err(|e| err(e.to_string()))?;
        Ok(Self {
            writer: Some(w),
            chunk_bytes,
            nchunks: meta.nchunks(),
        })
    }

    /// Bytes each chunk passed to `append` must have (padded, block-major).
    #[getter]
    fn chunk_bytes(&self) -> usize {
        self.chunk_bytes
    }

    /// Number of chunks the array needs.
    #[getter]
    fn nchunks(&self) -> u64 {
        self.nchunks
    }

    /// Adds a fixed-size metalayer holding `value` as msgpack (before the first chunk).
    fn add_metalayer(&mut self, name: &str, value: &Bound<'_, PyAny>) -> PyResult<()> {
        let content = pack(value)?;
        self.writer_mut()?
            .add_metalayer(name, &content)
            .map_err(|e| err(e.to_string()))
    }

    /// Sets vlmetalayer `name` to `value` as msgpack.
    fn set_vlmeta(&mut self, name: &str, value: &Bound<'_, PyAny>) -> PyResult<()> {
        let content = pack(value)?;
        let py = value.py();
        let w = self.writer_mut()?;
        detached(py, || w.set_vlmetalayer(name, &content))
            .map_err(err)?
            .map_err(|e| err(e.to_string()))
    }

    /// Compresses and appends one chunk (exactly `chunk_bytes` bytes, block-major).
    fn append(&mut self, py: Python<'_>, chunk: PyReadonlyArray1<'_, u8>) -> PyResult<()> {
        let data = chunk
            .as_slice()
            .map_err(|_| err("chunk must be a C-contiguous uint8 array"))?;
        if data.len() != self.chunk_bytes {
            return Err(err(format!(
                "chunk has {} bytes, expected {}",
                data.len(),
                self.chunk_bytes
            )));
        }
        let total = self.nchunks;
        let w = self.writer_mut()?;
        if w.nchunks() as u64 >= total {
            return Err(err(format!("the array has only {total} chunks")));
        }
        detached(py, || w.append_buffer(data))
            .map_err(err)?
            .map_err(|e| err(e.to_string()))
    }

    /// The whole frame as bytes (python-blosc2's `to_cframe()` form).
    fn to_bytes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        let w = self.finished()?;
        let bytes = detached(py, || w.to_bytes())
            .map_err(err)?
            .map_err(|e| err(e.to_string()))?;
        Ok(PyBytes::new(py, &bytes))
    }

    /// Writes the frame to `path` (atomically: a temporary file renamed into place; with
    /// `fsync`, flushed to disk first; without `overwrite`, only onto a free name). The writer
    /// cannot be used afterwards.
    #[pyo3(signature = (path, fsync=false, overwrite=true))]
    fn write(
        &mut self,
        py: Python<'_>,
        path: PathBuf,
        fsync: bool,
        overwrite: bool,
    ) -> PyResult<()> {
        let name = path.display().to_string();
        let w = self
            .writer
            .take()
            .ok_or_else(|| err("the frame was already written"))?;
        if w.nchunks() as u64 != self.nchunks {
            let n = w.nchunks();
            self.writer = Some(w);
            return Err(err(format!(
                "{name}: {n} of {} chunks appended",
                self.nchunks
            )));
        }
        let durability = if fsync {
            Durability::Fsync
        } else {
            Durability::None
        };
        let written = detached(py, || {
            crate::common::write_file(&path, durability, overwrite, |f| w.write_to(f))
        })
        .map_err(|m| err(format!("{name}: {m}")))?
        .map_err(|e| frame_err(&name, &e))?;
        if written {
            Ok(())
        } else {
            Err(crate::common::appeared(&name))
        }
    }
}

impl Writer {
    fn finished(&self) -> PyResult<&FrameWriter> {
        let w = self
            .writer
            .as_ref()
            .ok_or_else(|| err("the frame was already written"))?;
        if w.nchunks() as u64 != self.nchunks {
            return Err(err(format!(
                "{} of {} chunks appended",
                w.nchunks(),
                self.nchunks
            )));
        }
        Ok(w)
    }

    fn writer_mut(&mut self) -> PyResult<&mut FrameWriter> {
        self.writer
            .as_mut()
            .ok_or_else(|| err("the frame was already written"))
    }
}

/// Adds the `b2nd` submodule to `parent`.
///
/// # Errors
/// A Python error if the module cannot be created.
pub(crate) fn register(parent: &Bound<'_, PyModule>) -> PyResult<()> {
    crate::common::add_submodule(parent, "b2nd", |m| {
        m.add("B2ndError", m.py().get_type::<B2ndError>())?;
        m.add("MAX_DIM", blosc2_frame::B2ND_MAX_DIM)?;
        m.add_class::<File>()?;
        m.add_class::<Writer>()?;
        Ok(())
    })
}
