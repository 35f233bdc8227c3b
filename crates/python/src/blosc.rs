//! `scifmt._scifmt.blosc`: the Rust core of `scifmt.blosc` (Blosc2 chunks through
//! `blosc-chunk`).
//!
//! The Python wrapper turns any contiguous buffer into a 1-D `uint8` numpy view (no copy) and
//! names (codecs, filters, split modes) into numbers; this module checks every number, runs
//! the codec with the GIL released and turns every error into `BloscError`.

use blosc_chunk::{
    BlockShape, BloscShuffle, CParams, ChunkHeader, Codec, DParams, Filter, Format, Limits,
    MAX_FILTERS, SpecialValue, SplitMode,
};
use core::mem::MaybeUninit;

use numpy::PyReadonlyArray1;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

use crate::common::{detached, guarded};

pyo3::create_exception!(
    scifmt.blosc,
    BloscError,
    PyValueError,
    "A Blosc chunk could not be compressed or decompressed (bad parameters, a corrupt or \
     unsupported chunk, or a limit exceeded)."
);

/// `BloscError` with `msg`.
fn err(msg: impl Into<String>) -> PyErr {
    BloscError::new_err(msg.into())
}

/// The bytes of a 1-D contiguous `uint8` array (the Python wrapper makes one from any buffer).
fn bytes_of<'a>(a: &'a PyReadonlyArray1<'_, u8>, what: &str) -> PyResult<&'a [u8]> {
    a.as_slice()
        .map_err(|_| err(format!("{what} must be a C-contiguous buffer")))
}

/// The split mode with python-blosc2's number (`blosc2.SplitMode`).
fn splitmode(n: i64) -> PyResult<SplitMode> {
    Ok(match n {
        1 => SplitMode::Always,
        2 => SplitMode::Never,
        3 => SplitMode::Auto,
        4 => SplitMode::ForwardCompat,
        _ => {
            return Err(err(format!(
                "splitmode {n} is not one of 1 (ALWAYS_SPLIT), 2 (NEVER_SPLIT), 3 (AUTO_SPLIT), \
                 4 (FORWARD_COMPAT_SPLIT)"
            )));
        }
    })
}

/// Builds the compression parameters from already-numeric Python arguments, checking ranges.
#[allow(clippy::too_many_arguments)]
fn cparams(
    typesize: i64,
    clevel: i64,
    codec: i64,
    filters: &[i64],
    filters_meta: &[i64],
    blocksize: i64,
    split: i64,
    nthreads: i64,
    use_dict: bool,
    blosc1: bool,
) -> PyResult<CParams> {
    let typesize = usize::try_from(typesize)
        .ok()
        .filter(|&t| t >= 1 && i32::try_from(t).is_ok())
        .ok_or_else(|| err(format!("typesize {typesize} is not in 1..=2147483647")))?;
    let clevel = u8::try_from(clevel)
        .ok()
        .filter(|&c| c <= 9)
        .ok_or_else(|| err(format!("clevel {clevel} is not in 0..=9")))?;
    let codec = u8::try_from(codec)
        .map(Codec::from_id)
        .map_err(|_| err(format!("codec {codec} is not a codec id (0..=255)")))?;
    if let Codec::Other(id) = codec {
        let known: Vec<String> = Codec::NAMED
            .iter()
            .map(|c| format!("{} {}", c.name(), c.id()))
            .collect();
        return Err(err(format!(
            "codec {id} is not supported ({})",
            known.join(", ")
        )));
    }
    if filters.len() > MAX_FILTERS || filters_meta.len() > MAX_FILTERS {
        return Err(err(format!(
            "at most {MAX_FILTERS} filters and filters_meta entries, got {} and {}",
            filters.len(),
            filters_meta.len()
        )));
    }
    let mut fs = [Filter::NoFilter; MAX_FILTERS];
    for (slot, &f) in fs.iter_mut().zip(filters) {
        let id = u8::try_from(f).map_err(|_| err(format!("filter {f} is not a filter id")))?;
        *slot = Filter::from_id(id);
        if let Filter::Other(id) = *slot {
            return Err(err(format!(
                "filter {id} is not supported (nofilter 0, shuffle 1, bitshuffle 2, delta 3, \
                 trunc_prec 4, ndcell 32, ndmean 33, bytedelta 35, int_trunc 36)"
            )));
        }
    }
    let mut meta = [0u8; MAX_FILTERS];
    for (slot, &m) in meta.iter_mut().zip(filters_meta) {
        // C stores filters_meta as uint8_t: python-blosc2 passes -20 for TRUNC_PREC as 236.
        *slot = match m {
            0..=255 => u8::try_from(m).unwrap_or(0),
            -128..=-1 => i8::try_from(m).map(|v| v.to_le_bytes()[0]).unwrap_or(0),
            _ => return Err(err(format!("filters_meta {m} is not in -128..=255"))),
        };
    }
    let blocksize = usize::try_from(blocksize)
        .ok()
        .filter(|&b| b <= blosc_chunk::MAX_BLOCKSIZE)
        .ok_or_else(|| {
            err(format!(
                "blocksize {blocksize} is not in 0..={}",
                blosc_chunk::MAX_BLOCKSIZE
            ))
        })?;
    let nthreads = usize::try_from(nthreads)
        .ok()
        .filter(|&n| n <= 4096)
        .ok_or_else(|| err(format!("nthreads {nthreads} is not in 0..=4096")))?;
    let mut p = CParams::default();
    p.codec = codec;
    p.clevel = clevel;
    p.typesize = typesize;
    p.filters = fs;
    p.filters_meta = meta;
    p.blocksize = blocksize;
    p.splitmode = splitmode(split)?;
    p.nthreads = nthreads;
    p.use_dict = use_dict;
    if blosc1 {
        p.format = Format::Blosc1;
    }
    Ok(p)
}

/// The b2nd block shape from the Python argument (`None`: no block shape).
fn blockshape(dims: Option<Vec<i64>>) -> PyResult<Option<BlockShape>> {
    let Some(dims) = dims else {
        return Ok(None);
    };
    let dims = dims
        .iter()
        .map(|&d| {
            u64::try_from(d).map_err(|_| err(format!("blockshape dimension {d} is negative")))
        })
        .collect::<PyResult<Vec<u64>>>()?;
    BlockShape::new(&dims)
        .map(Some)
        .map_err(|e| err(e.to_string()))
}

/// Compresses a contiguous `uint8` array into one Blosc2 chunk, or with `blosc1` into the
/// Blosc1 format C-Blosc 1.21 writes (all arguments numeric; see `scifmt.blosc.compress`).
///
/// # Errors
/// `BloscError` for out-of-range parameters, inputs above C-Blosc2's 2 GiB limit, or anything
/// `blosc_chunk::compress` refuses.
#[pyfunction]
#[pyo3(signature = (data, typesize, clevel, codec, filters, filters_meta, blocksize, splitmode, nthreads, use_dict, blosc1=false, codec_meta=0, blockshape=None))]
#[allow(clippy::too_many_arguments)]
fn compress<'py>(
    py: Python<'py>,
    data: PyReadonlyArray1<'py, u8>,
    typesize: i64,
    clevel: i64,
    codec: i64,
    filters: Vec<i64>,
    filters_meta: Vec<i64>,
    blocksize: i64,
    splitmode: i64,
    nthreads: i64,
    use_dict: bool,
    blosc1: bool,
    codec_meta: i64,
    blockshape: Option<Vec<i64>>,
) -> PyResult<Bound<'py, PyBytes>> {
    let mut p = cparams(
        typesize,
        clevel,
        codec,
        &filters,
        &filters_meta,
        blocksize,
        splitmode,
        nthreads,
        use_dict,
        blosc1,
    )?;
    // C stores the codec meta as uint8_t: python-blosc2 passes ZFP_ACC's -3 as 253.
    p.codec_meta = match codec_meta {
        0..=255 => u8::try_from(codec_meta).unwrap_or(0),
        -128..=-1 => i8::try_from(codec_meta)
            .map(|v| v.to_le_bytes()[0])
            .unwrap_or(0),
        _ => return Err(err(format!("codec_meta {codec_meta} is not in -128..=255"))),
    };
    p.blockshape = self::blockshape(blockshape)?;
    let src = bytes_of(&data, "data")?;
    if src.len() > blosc_chunk::MAX_BUFFERSIZE {
        return Err(err(format!(
            "data has {} bytes, a Blosc chunk holds at most {}",
            src.len(),
            blosc_chunk::MAX_BUFFERSIZE
        )));
    }
    let chunk = detached(py, || blosc_chunk::compress(src, &p))
        .map_err(err)?
        .map_err(|e| err(e.to_string()))?;
    Ok(PyBytes::new(py, &chunk))
}

/// The header of `chunk`, checked against `max_nbytes` and the chunk's own length.
fn checked_header(chunk: &[u8], max_nbytes: usize) -> PyResult<ChunkHeader> {
    let h = ChunkHeader::parse(chunk).map_err(|e| err(e.to_string()))?;
    if h.nbytes() > max_nbytes {
        return Err(err(format!(
            "limit exceeded: the chunk decompresses to {} bytes, max_nbytes is {max_nbytes}",
            h.nbytes()
        )));
    }
    Ok(h)
}

/// Decompresses one chunk into a new `bytes` object, decoding with the GIL released.
///
/// # Errors
/// `BloscError` for a malformed, truncated, unsupported or too large chunk.
#[pyfunction]
#[pyo3(signature = (chunk, nthreads, max_nbytes, blockshape=None))]
fn decompress<'py>(
    py: Python<'py>,
    chunk: PyReadonlyArray1<'py, u8>,
    nthreads: i64,
    max_nbytes: i64,
    blockshape: Option<Vec<i64>>,
) -> PyResult<Bound<'py, PyBytes>> {
    let src = bytes_of(&chunk, "chunk")?;
    let mut params = dparams(nthreads, max_nbytes)?;
    params.blockshape = self::blockshape(blockshape)?;
    let h = checked_header(src, params.limits.max_nbytes)?;
    bytes_written_by(py, h.nbytes(), |out| {
        detached(py, || {
            blosc_chunk::decompress_into_uninit_ctx(src, out, &params).map(|d| d.len())
        })
        .map_err(err)?
        .map_err(|e| err(e.to_string()))
    })
}

/// A new `bytes` object of `len` bytes, all written by `fill` (which returns how many it
/// wrote; anything but `len` is an error), without zero-filling it first as
/// `PyBytes::new_with` does: that pass over the output cost a fifth of a fast 4 MiB decode.
fn bytes_written_by<'py>(
    py: Python<'py>,
    len: usize,
    fill: impl FnOnce(&mut [MaybeUninit<u8>]) -> PyResult<usize>,
) -> PyResult<Bound<'py, PyBytes>> {
    let size = pyo3::ffi::Py_ssize_t::try_from(len)
        .map_err(|_| err(format!("{len} bytes do not fit in a Python bytes object")))?;
    // SAFETY: a null pointer with a size asks CPython for a new `bytes` object of `size` bytes
    // whose contents are not yet set; it returns a new reference, or null with an exception
    // set (turned into `Err`).
    #[allow(unsafe_code, reason = "see SAFETY")]
    let obj = unsafe {
        Bound::from_owned_ptr_or_err(
            py,
            pyo3::ffi::PyBytes_FromStringAndSize(core::ptr::null(), size),
        )?
    };
    let bytes = obj.cast_into::<PyBytes>()?;
    // SAFETY: `PyBytes_AsString` of a `bytes` object is its buffer of `len` bytes (plus the
    // terminating NUL); the object is new and only referenced here, so nothing else reads or
    // writes the buffer while `buf` lives, and it lives no longer than `bytes` (dropped on
    // error, returned only once all `len` bytes are written).
    #[allow(unsafe_code, reason = "see SAFETY")]
    let buf = unsafe {
        core::slice::from_raw_parts_mut(
            pyo3::ffi::PyBytes_AsString(bytes.as_ptr()).cast::<MaybeUninit<u8>>(),
            len,
        )
    };
    let written = fill(buf)?;
    if written != len {
        return Err(err(format!(
            "internal error (a bug in scifmt, please report it): {written} of {len} bytes written"
        )));
    }
    Ok(bytes)
}

/// Decompresses one chunk into a writable contiguous `uint8` array; returns the byte count.
///
/// # Errors
/// `BloscError` for a bad chunk or an output smaller than the chunk's `nbytes`.
#[pyfunction]
#[pyo3(signature = (chunk, out, nthreads, max_nbytes, blockshape=None))]
fn decompress_into(
    py: Python<'_>,
    chunk: PyReadonlyArray1<'_, u8>,
    mut out: numpy::PyReadwriteArray1<'_, u8>,
    nthreads: i64,
    max_nbytes: i64,
    blockshape: Option<Vec<i64>>,
) -> PyResult<usize> {
    let src = bytes_of(&chunk, "chunk")?;
    let mut params = dparams(nthreads, max_nbytes)?;
    params.blockshape = self::blockshape(blockshape)?;
    let h = checked_header(src, params.limits.max_nbytes)?;
    let dst = out
        .as_slice_mut()
        .map_err(|_| err("out must be a writable C-contiguous buffer"))?;
    if dst.len() < h.nbytes() {
        return Err(err(format!(
            "out holds {} bytes, the chunk decompresses to {}",
            dst.len(),
            h.nbytes()
        )));
    }
    detached(py, || blosc_chunk::decompress_into_ctx(src, dst, &params))
        .map_err(err)?
        .map_err(|e| err(e.to_string()))
}

/// Decoding parameters from the Python arguments.
fn dparams(nthreads: i64, max_nbytes: i64) -> PyResult<DParams> {
    let nthreads = usize::try_from(nthreads)
        .ok()
        .filter(|&n| n <= 4096)
        .ok_or_else(|| err(format!("nthreads {nthreads} is not in 0..=4096")))?;
    let max = usize::try_from(max_nbytes)
        .map_err(|_| err(format!("max_nbytes {max_nbytes} is negative")))?;
    let mut p = DParams::default().with_threads(nthreads);
    p.limits = Limits::default().with_max_nbytes(max.min(blosc_chunk::MAX_BUFFERSIZE));
    Ok(p)
}

/// The header fields of `chunk` as a dict (the Python wrapper builds `ChunkInfo` from it).
///
/// # Errors
/// `BloscError` if the header is malformed.
#[pyfunction]
fn info<'py>(py: Python<'py>, chunk: PyReadonlyArray1<'py, u8>) -> PyResult<Bound<'py, PyDict>> {
    let src = bytes_of(&chunk, "chunk")?;
    let h = guarded(|| ChunkHeader::parse(src))
        .map_err(err)?
        .map_err(|e| err(e.to_string()))?;
    let d = PyDict::new(py);
    d.set_item("version", h.version())?;
    d.set_item("versionlz", h.versionlz())?;
    d.set_item("flags", h.flags())?;
    d.set_item("nbytes", h.nbytes())?;
    d.set_item("cbytes", h.cbytes())?;
    d.set_item("blocksize", h.blocksize())?;
    d.set_item("nblocks", h.nblocks())?;
    d.set_item("typesize", h.typesize())?;
    d.set_item("codec", h.codec().id())?;
    d.set_item("codec_format", h.codec_format())?;
    d.set_item("filters", h.filter_ids().to_vec())?;
    d.set_item("filters_meta", h.filters_meta().to_vec())?;
    d.set_item("compcode_meta", h.compcode_meta())?;
    d.set_item("blosc2_flags", h.blosc2_flags())?;
    d.set_item("header_len", h.header_len())?;
    d.set_item("extended_header", h.is_extended())?;
    d.set_item("memcpyed", h.is_memcpyed())?;
    d.set_item("split", !h.dont_split())?;
    d.set_item("use_dict", h.uses_dict())?;
    d.set_item("lazy", h.is_lazy())?;
    d.set_item("vl_blocks", h.vl_blocks())?;
    let special = h.special().map(|s| match s {
        SpecialValue::Zeros => "zeros",
        SpecialValue::Nan => "nan",
        SpecialValue::Value => "value",
        SpecialValue::Uninit => "uninit",
        _ => "other",
    });
    d.set_item("special", special)?;
    Ok(d)
}

/// Names and ids of the codecs this build has (`blosc2.compressor_list()`'s analogue).
#[pyfunction]
fn codecs() -> Vec<(&'static str, u8)> {
    Codec::NAMED
        .into_iter()
        .filter(|c| c.is_enabled())
        .map(|c| (c.name(), c.id()))
        .collect()
}

/// The `cname` values of Zarr's `blosc` codec (blosc-chunk's `Codec::BLOSC1`), for
/// `scifmt.zarr`.
#[pyfunction]
fn cnames() -> Vec<&'static str> {
    Codec::BLOSC1.map(Codec::name).to_vec()
}

/// The shuffles of Zarr's `blosc` codec as `(name, numcodecs number)`: `noshuffle` 0,
/// `shuffle` 1, `bitshuffle` 2, `auto` -1, for `scifmt.zarr`.
#[pyfunction]
fn shuffles() -> Vec<(&'static str, i8)> {
    BloscShuffle::ALL
        .map(|s| (s.name(), s.numcodecs()))
        .to_vec()
}

/// The filter id of numcodecs' shuffle number `shuffle` for items of `itemsize` bytes
/// (`AUTOSHUFFLE`, -1, resolved: bitshuffle for 1-byte items, shuffle otherwise).
///
/// # Errors
/// `BloscError` (a `ValueError`) for a number other than -1, 0, 1, 2.
#[pyfunction]
fn shuffle_filter(shuffle: i64, itemsize: i64) -> PyResult<u8> {
    // Only an item size of 1 matters (for AUTOSHUFFLE); others stand for "wider".
    let itemsize = usize::try_from(itemsize).unwrap_or(0);
    BloscShuffle::from_numcodecs(shuffle)
        .map(|s| s.filter(itemsize).id())
        .map_err(|e| err(e.to_string()))
}

/// Adds the `blosc` submodule to `parent`.
///
/// # Errors
/// A Python error if the module cannot be created.
pub(crate) fn register(parent: &Bound<'_, PyModule>) -> PyResult<()> {
    crate::common::add_submodule(parent, "blosc", |m| {
        m.add("BloscError", m.py().get_type::<BloscError>())?;
        m.add("MAX_BUFFERSIZE", blosc_chunk::MAX_BUFFERSIZE)?;
        m.add("MAX_BLOCKSIZE", blosc_chunk::MAX_BLOCKSIZE)?;
        m.add("MAX_OVERHEAD", blosc_chunk::MAX_OVERHEAD)?;
        m.add_function(wrap_pyfunction!(compress, m)?)?;
        m.add_function(wrap_pyfunction!(decompress, m)?)?;
        m.add_function(wrap_pyfunction!(decompress_into, m)?)?;
        m.add_function(wrap_pyfunction!(info, m)?)?;
        m.add_function(wrap_pyfunction!(codecs, m)?)?;
        m.add_function(wrap_pyfunction!(cnames, m)?)?;
        m.add_function(wrap_pyfunction!(shuffles, m)?)?;
        m.add_function(wrap_pyfunction!(shuffle_filter, m)?)?;
        Ok(())
    })
}
