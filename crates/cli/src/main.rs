//! The `scifmt` command (the library target holds it: see [`scifmt_cli::run`]).

use std::process::ExitCode;

fn main() -> ExitCode {
    ExitCode::from(scifmt_cli::run(std::env::args_os()))
}
