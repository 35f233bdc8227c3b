//! `scifmt._scifmt.wkw`: the Rust core of `scifmt.wkw`.

use pyo3::prelude::*;

/// Adds the `wkw` submodule to `parent`.
///
/// # Errors
/// A Python error if the module cannot be created.
pub(crate) fn register(parent: &Bound<'_, PyModule>) -> PyResult<()> {
    crate::common::add_submodule(parent, "wkw", |_m| Ok(()))
}
