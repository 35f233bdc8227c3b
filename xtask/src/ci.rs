//! `cargo xtask ci [--skip-tests]`: the checks CI runs, in order: the house conventions
//! (`cargo xtask conventions`), fmt, clippy, tests, rustdoc, the feature combinations the
//! workspace build does not cover (`cargo xtask features`), the README examples (`cargo xtask
//! readme-examples`), cargo deny. `--skip-tests` leaves out `cargo test --workspace` for callers
//! that have just run it (`.ci/run` runs the README's test command first).
//!
//! The order lets each step reuse what the one before compiled: clippy checks every crate of the
//! workspace; the features step checks and tests only the feature sets the workspace runs do not
//! build; the README project builds in the workspace's target directory (its dependencies with
//! the workspace's features are not compiled again).

use crate::util::{cargo, exec};

fn run_ci_steps(tests: bool) -> Result<(), String> {
    crate::conventions::run(&[])?;
    exec(cargo().args(["fmt", "--all", "--", "--check"]))?;
    exec(cargo().args([
        "clippy",
        "--workspace",
        "--all-targets",
        "--",
        "-D",
        "warnings",
    ]))?;
    if tests {
        exec(cargo().args(["test", "--workspace"]))?;
    }
    exec(
        cargo()
            .args(["doc", "--workspace", "--no-deps"])
            .env("RUSTDOCFLAGS", "-D warnings"),
    )?;
    crate::features::run_steps(false)?;
    crate::readme_examples::run(&[])?;
    // The advisories check downloads its database from outside the package registries, which
    // CI machines cannot reach: it stays configured in deny.toml for users and is skipped here.
    exec(cargo().args(["deny", "check", "bans", "licenses", "sources"]))
}

pub(crate) fn run(args: &[String]) -> Result<(), String> {
    let mut tests = true;
    for a in args {
        match a.as_str() {
            "--skip-tests" => tests = false,
            extra => return Err(format!("unexpected argument `{extra}`")),
        }
    }
    run_ci_steps(tests)
}
