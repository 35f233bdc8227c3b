//! `scifmt._scifmt.b2nd`: the Rust core of `scifmt.b2nd`.

use pyo3::prelude::*;

/// Adds the `b2nd` submodule to `parent`.
///
/// # Errors
/// A Python error if the module cannot be created.
pub(crate) fn register(parent: &Bound<'_, PyModule>) -> PyResult<()> {
    crate::common::add_submodule(parent, "b2nd", |_m| Ok(()))
}
