//! `scifmt._scifmt.cli_main`: the `scifmt` command inside the wheel (`python/scifmt/_cli.py`
//! is its console-script entry point), the same code as the `scifmt` binary (`scifmt_cli::run`).

use std::ffi::OsString;

use pyo3::prelude::*;

/// Runs the `scifmt` command on `argv` (the program name first) and returns its exit status.
/// The GIL is released while it runs. For the `scifmt` console script only: it installs a
/// process-wide panic hook and, for `convert`, a Ctrl-C handler, as the binary does.
#[pyfunction]
fn cli_main(py: Python<'_>, argv: Vec<OsString>) -> u8 {
    py.detach(|| scifmt_cli::run(argv))
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(cli_main, m)?)
}
