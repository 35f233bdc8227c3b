//! Helpers shared by every format module: running Rust code without the GIL and without
//! letting a panic reach Python.

use std::panic::{AssertUnwindSafe, catch_unwind};

use pyo3::prelude::*;

/// Adds `child` as submodule `name` of `parent`, also under its dotted name in `sys.modules`
/// (`scifmt._scifmt.<name>`), so `import scifmt._scifmt.<name>` works.
///
/// # Errors
/// A Python error if the module cannot be created or registered.
pub(crate) fn add_submodule<'py>(
    parent: &Bound<'py, PyModule>,
    name: &str,
    fill: impl FnOnce(&Bound<'py, PyModule>) -> PyResult<()>,
) -> PyResult<()> {
    let py = parent.py();
    let child = PyModule::new(py, name)?;
    fill(&child)?;
    parent.add_submodule(&child)?;
    let full = format!("{}.{name}", parent.name()?);
    child.setattr("__name__", &full)?;
    py.import("sys")?
        .getattr("modules")?
        .set_item(full, &child)?;
    Ok(())
}

/// The message of a caught panic payload.
pub(crate) fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "unknown panic payload".to_string()
    }
}

/// Runs `f` with the GIL released and any panic caught: `Err(message)` for a panic, so the
/// caller turns it into its module's exception instead of letting pyo3 raise a
/// `PanicException` (a `BaseException` that `except Exception` does not catch).
pub(crate) fn detached<T: Send>(py: Python<'_>, f: impl FnOnce() -> T + Send) -> Result<T, String> {
    py.detach(|| {
        catch_unwind(AssertUnwindSafe(f)).map_err(|p| {
            format!(
                "internal error (a bug in scifmt, please report it): panic: {}",
                panic_message(p.as_ref())
            )
        })
    })
}
