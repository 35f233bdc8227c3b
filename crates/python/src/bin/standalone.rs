//! The standalone `scifmt` binary of the release archive (`cargo xtask dist`), renamed `scifmt`
//! there. It is the CLI's own `main` (the same one line as `crates/cli/src/main.rs`), built from
//! this package only so that its release build resolves every dependency's features exactly as
//! the wheel's does and reuses what that build compiled (see `[[bin]]` in Cargo.toml).

use std::process::ExitCode;

fn main() -> ExitCode {
    ExitCode::from(scifmt_cli::run(std::env::args_os()))
}
