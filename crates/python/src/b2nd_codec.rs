//! `scifmt._scifmt.b2nd_codec`: the `b2nd` codec (blosc2-frame's `B2ndCodec`: one Blosc2
//! chunk of a b2nd array as a Zarr chunk in C order) for the Python codec classes in
//! `python/scifmt/codecs.py` (zarr-python and numcodecs).
//!
//! The Python wrapper checks the types of the arguments and turns any buffer into a 1-D `uint8`
//! numpy view; this module checks every value, runs the codec with the GIL released and under
//! `catch_unwind`, and turns every error into `B2ndError` (a `ValueError`) naming the problem.

use blosc2_frame::blosc_chunk::{BloscShuffle, Codec};
use blosc2_frame::{B2ndCodec, B2ndCodecConfig};
use numpy::{PyReadonlyArray1, PyReadwriteArray1};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::common::detached;

pyo3::create_exception!(
    scifmt.codecs,
    B2ndError,
    PyValueError,
    "A chunk that is not a b2nd chunk of the expected shape, block shape and item size, or a \
     bad codec configuration."
);

/// Adds the `b2nd_codec` submodule to `parent`.
///
/// # Errors
/// A Python error if the module cannot be created.
pub(crate) fn register(parent: &Bound<'_, PyModule>) -> PyResult<()> {
    crate::common::add_submodule(parent, "b2nd_codec", |m| {
        m.add("B2ndError", m.py().get_type::<B2ndError>())?;
        m.add("NAME", B2ndCodecConfig::NAME)?;
        m.add_function(wrap_pyfunction!(encode, m)?)?;
        m.add_function(wrap_pyfunction!(decode, m)?)?;
        m.add_function(wrap_pyfunction!(decode_into, m)?)?;
        m.add_function(wrap_pyfunction!(check_configuration, m)?)?;
        Ok(())
    })
}

fn err(msg: impl Into<String>) -> PyErr {
    B2ndError::new_err(msg.into())
}

/// Extents as `u64` (each non-negative).
fn extents(v: &[i64], what: &str) -> PyResult<Vec<u64>> {
    v.iter()
        .map(|&x| {
            u64::try_from(x).map_err(|_| err(format!("`{what}` extents must be >= 0, not {x}")))
        })
        .collect()
}

/// A positive item size.
fn itemsize(typesize: i64) -> PyResult<usize> {
    usize::try_from(typesize)
        .ok()
        .filter(|&t| t >= 1)
        .ok_or_else(|| err(format!("the item size must be at least 1, not {typesize}")))
}

/// The codec for a block shape and the encoding parameters (names as in Zarr's `blosc` codec,
/// parsed by blosc-chunk's vocabulary).
fn codec(
    blockshape: &[i64],
    cname: &str,
    clevel: i64,
    shuffle: &str,
    nthreads: i64,
) -> PyResult<B2ndCodec> {
    let cname = Codec::from_cname(cname).map_err(|e| err(format!("b2nd codec: {e}")))?;
    let shuffle = shuffle
        .parse::<BloscShuffle>()
        .map_err(|e| err(format!("b2nd codec: {e}")))?;
    let clevel = u8::try_from(clevel)
        .map_err(|_| err(format!("b2nd codec: `clevel` must be 0 to 9, not {clevel}")))?;
    let nthreads = usize::try_from(nthreads)
        .map_err(|_| err(format!("`nthreads` must be >= 0, not {nthreads}")))?;
    let config = B2ndCodecConfig::new(&extents(blockshape, "blockshape")?)
        .with_cname(cname)
        .with_clevel(clevel)
        .with_shuffle(shuffle);
    B2ndCodec::new(config)
        .map(|c| c.with_nthreads(nthreads))
        .map_err(|e| err(e.to_string()))
}

/// Checks a configuration (`blockshape`, `cname`, `clevel`, `shuffle`) without coding anything.
///
/// # Errors
/// `B2ndError` naming the bad value.
#[pyfunction]
#[pyo3(signature = (blockshape, cname="zstd", clevel=5, shuffle="shuffle"))]
fn check_configuration(
    blockshape: Vec<i64>,
    cname: &str,
    clevel: i64,
    shuffle: &str,
) -> PyResult<()> {
    codec(&blockshape, cname, clevel, shuffle, 1).map(drop)
}

fn slice<'a>(a: &'a PyReadonlyArray1<'_, u8>, what: &str) -> PyResult<&'a [u8]> {
    a.as_slice()
        .map_err(|_| err(format!("{what} must be a C-contiguous buffer")))
}

/// Encodes one chunk (its items in C order, as stored: in the array's byte order) as one b2nd
/// chunk.
///
/// # Errors
/// `B2ndError` for a bad configuration, a chunk shape that does not fit the block shape or
/// data of the wrong size.
#[pyfunction]
#[pyo3(signature = (data, chunkshape, typesize, blockshape, cname="zstd", clevel=5,
                    shuffle="shuffle", nthreads=1))]
#[allow(clippy::too_many_arguments)]
fn encode<'py>(
    py: Python<'py>,
    data: PyReadonlyArray1<'py, u8>,
    chunkshape: Vec<i64>,
    typesize: i64,
    blockshape: Vec<i64>,
    cname: &str,
    clevel: i64,
    shuffle: &str,
    nthreads: i64,
) -> PyResult<Bound<'py, PyBytes>> {
    let codec = codec(&blockshape, cname, clevel, shuffle, nthreads)?;
    let (shape, ts) = (extents(&chunkshape, "chunkshape")?, itemsize(typesize)?);
    let src = slice(&data, "data")?;
    let out = detached(py, || codec.encode(src, &shape, ts))
        .map_err(err)?
        .map_err(|e| err(e.to_string()))?;
    Ok(PyBytes::new(py, &out))
}

/// Decodes one b2nd chunk to its items in C order (in the stored byte order).
///
/// # Errors
/// `B2ndError` if the chunk is not a b2nd chunk of this shape, block shape and item size.
#[pyfunction]
#[pyo3(signature = (data, chunkshape, typesize, blockshape, nthreads=1))]
fn decode<'py>(
    py: Python<'py>,
    data: PyReadonlyArray1<'py, u8>,
    chunkshape: Vec<i64>,
    typesize: i64,
    blockshape: Vec<i64>,
    nthreads: i64,
) -> PyResult<Bound<'py, PyBytes>> {
    let codec = codec(&blockshape, "zstd", 5, "shuffle", nthreads)?;
    let (shape, ts) = (extents(&chunkshape, "chunkshape")?, itemsize(typesize)?);
    let src = slice(&data, "data")?;
    let out = detached(py, || codec.decode(src, &shape, ts))
        .map_err(err)?
        .map_err(|e| err(e.to_string()))?;
    Ok(PyBytes::new(py, &out))
}

/// Decodes one b2nd chunk into `out`, which it must fill exactly.
///
/// # Errors
/// As `decode`, and `B2ndError` for an `out` of the wrong size.
#[pyfunction]
#[pyo3(signature = (data, chunkshape, typesize, blockshape, out, nthreads=1))]
fn decode_into<'py>(
    py: Python<'py>,
    data: PyReadonlyArray1<'py, u8>,
    chunkshape: Vec<i64>,
    typesize: i64,
    blockshape: Vec<i64>,
    mut out: PyReadwriteArray1<'py, u8>,
    nthreads: i64,
) -> PyResult<()> {
    let codec = codec(&blockshape, "zstd", 5, "shuffle", nthreads)?;
    let (shape, ts) = (extents(&chunkshape, "chunkshape")?, itemsize(typesize)?);
    let src = slice(&data, "data")?;
    let dst = out
        .as_slice_mut()
        .map_err(|_| err("out must be a writable C-contiguous buffer"))?;
    detached(py, || codec.decode_into(src, &shape, ts, dst))
        .map_err(err)?
        .map_err(|e| err(e.to_string()))
}
