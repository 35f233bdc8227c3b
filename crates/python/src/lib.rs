//! The `scifmt._scifmt` extension module behind the `scifmt` Python package.
//!
//! Each format is one Rust module with a `register(parent)` function that adds a submodule of
//! the same name (`scifmt._scifmt.<name>`); the pure-Python package `python/scifmt/<name>`
//! wraps it with the public API. See the crate README.

use pyo3::prelude::*;

mod b2nd;
mod b2nd_codec;
mod blosc;
mod cli;
mod common;
mod convert;
mod dwe;
mod lz4_block;
mod virtualize;
mod wkw;
mod wkw_dataset;
mod wkw_remote;

/// The extension module: one submodule per format.
#[pymodule(gil_used = false)]
fn _scifmt(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    wkw::register(m)?;
    wkw_dataset::register(m)?;
    blosc::register(m)?;
    b2nd::register(m)?;
    dwe::register(m)?;
    convert::register(m)?;
    lz4_block::register(m)?;
    cli::register(m)?;
    b2nd_codec::register(m)?;
    virtualize::register(m)?;
    m.add_function(wrap_pyfunction!(common::_panic_for_tests, m)?)?;
    m.add_function(wrap_pyfunction!(common::ensure_apart, m)?)?;
    Ok(())
}
