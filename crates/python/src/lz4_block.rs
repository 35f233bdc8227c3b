//! `scifmt._scifmt.lz4_block`: the `lz4-block` codec (crate `lz4-block-codec`) for the
//! Python codec classes in `python/scifmt/codecs.py` (zarr-python and numcodecs).
//!
//! Every call releases the GIL and runs under `catch_unwind`; a bad block or configuration is a
//! `ValueError` (`LZ4BlockError`) naming the problem.

use lz4_block_codec::{Lz4BlockCodec, Lz4BlockConfiguration};
use numpy::{PyReadonlyArray1, PyReadwriteArray1};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::common::detached;

pyo3::create_exception!(
    scifmt.codecs,
    LZ4BlockError,
    PyValueError,
    "A chunk that is not an LZ4 block of the expected size, or a bad codec configuration."
);

/// Adds the `lz4_block` submodule to `parent`.
///
/// # Errors
/// A Python error if the module cannot be created.
pub(crate) fn register(parent: &Bound<'_, PyModule>) -> PyResult<()> {
    crate::common::add_submodule(parent, "lz4_block", |m| {
        m.add("LZ4BlockError", m.py().get_type::<LZ4BlockError>())?;
        m.add("NAME", lz4_block_codec::NAME)?;
        m.add_function(wrap_pyfunction!(encode, m)?)?;
        m.add_function(wrap_pyfunction!(decode, m)?)?;
        m.add_function(wrap_pyfunction!(decode_into, m)?)?;
        m.add_function(wrap_pyfunction!(check_configuration, m)?)?;
        Ok(())
    })
}

fn err(msg: impl Into<String>) -> PyErr {
    LZ4BlockError::new_err(msg.into())
}

/// The codec for a mode and its parameter.
fn codec(mode: &str, acceleration: u32, level: Option<u32>) -> PyResult<Lz4BlockCodec> {
    let config = match (mode, level) {
        ("fast", None) => Lz4BlockConfiguration::Fast { acceleration },
        ("hc", Some(level)) => Lz4BlockConfiguration::Hc { level },
        ("fast", Some(_)) => return Err(err("`level` belongs to mode \"hc\"")),
        ("hc", None) => return Err(err("mode \"hc\" needs a `level` (1..=12)")),
        (other, _) => {
            return Err(err(format!(
                "`mode` must be \"fast\" or \"hc\", not {other:?}"
            )));
        }
    };
    Lz4BlockCodec::new(config).map_err(|e| err(e.to_string()))
}

/// Checks a configuration (`mode`, `acceleration`, `level`) without encoding anything.
///
/// # Errors
/// `LZ4BlockError` naming the bad value.
#[pyfunction]
#[pyo3(signature = (mode, acceleration=1, level=None))]
fn check_configuration(mode: &str, acceleration: u32, level: Option<u32>) -> PyResult<()> {
    codec(mode, acceleration, level).map(drop)
}

fn slice<'a>(a: &'a PyReadonlyArray1<'_, u8>, what: &str) -> PyResult<&'a [u8]> {
    a.as_slice()
        .map_err(|_| err(format!("{what} must be a C-contiguous buffer")))
}

/// Encodes one chunk as one LZ4 block (liblz4's bytes).
///
/// # Errors
/// `LZ4BlockError` for a bad configuration or a chunk too large for LZ4.
#[pyfunction]
#[pyo3(signature = (data, mode="fast", acceleration=1, level=None))]
fn encode<'py>(
    py: Python<'py>,
    data: PyReadonlyArray1<'py, u8>,
    mode: &str,
    acceleration: u32,
    level: Option<u32>,
) -> PyResult<Bound<'py, PyBytes>> {
    let codec = codec(mode, acceleration, level)?;
    let src = slice(&data, "data")?;
    let out = detached(py, || codec.encode(src))
        .map_err(err)?
        .map_err(|e| err(e.to_string()))?;
    Ok(PyBytes::new(py, &out))
}

/// Decodes one block to exactly `size` bytes.
///
/// # Errors
/// `LZ4BlockError` if the block does not decode to exactly `size` bytes.
#[pyfunction]
fn decode<'py>(
    py: Python<'py>,
    data: PyReadonlyArray1<'py, u8>,
    size: usize,
) -> PyResult<Bound<'py, PyBytes>> {
    let src = slice(&data, "data")?;
    let out = detached(py, || Lz4BlockCodec::default().decode(src, size))
        .map_err(err)?
        .map_err(|e| err(e.to_string()))?;
    Ok(PyBytes::new(py, &out))
}

/// Decodes one block into `out`, which it must fill exactly.
///
/// # Errors
/// `LZ4BlockError` if the block does not decode to exactly `len(out)` bytes.
#[pyfunction]
fn decode_into<'py>(
    py: Python<'py>,
    data: PyReadonlyArray1<'py, u8>,
    mut out: PyReadwriteArray1<'py, u8>,
) -> PyResult<()> {
    let src = slice(&data, "data")?;
    let dst = out
        .as_slice_mut()
        .map_err(|_| err("out must be a writable C-contiguous buffer"))?;
    detached(py, || Lz4BlockCodec::default().decode_into(src, dst))
        .map_err(err)?
        .map_err(|e| err(e.to_string()))
}
