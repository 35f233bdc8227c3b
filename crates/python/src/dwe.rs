//! `scifmt._scifmt.dwe`: the Rust core of `scifmt.dwe`.

use pyo3::prelude::*;

/// Adds the `dwe` submodule to `parent`.
///
/// # Errors
/// A Python error if the module cannot be created.
pub(crate) fn register(parent: &Bound<'_, PyModule>) -> PyResult<()> {
    crate::common::add_submodule(parent, "dwe", |_m| Ok(()))
}
