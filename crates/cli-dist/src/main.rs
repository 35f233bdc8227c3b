//! The `scifmt` command of the CLI archive (`cargo xtask dist`): scifmt-cli's `main`, built with
//! the Python wheel's dependency features (see Cargo.toml). The archive names it `scifmt`.

use std::process::ExitCode;

fn main() -> ExitCode {
    ExitCode::from(scifmt_cli::run(std::env::args_os()))
}
