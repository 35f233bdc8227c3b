//! `cargo xtask ci`: the checks CI runs, in order.

use crate::util::{cargo, exec};

pub(crate) fn run_ci_steps() -> Result<(), String> {
    exec(cargo().args(["fmt", "--all", "--", "--check"]))?;
    exec(cargo().args([
        "clippy",
        "--workspace",
        "--all-targets",
        "--",
        "-D",
        "warnings",
    ]))?;
    exec(cargo().args(["test", "--workspace"]))?;
    exec(
        cargo()
            .args(["doc", "--workspace", "--no-deps"])
            .env("RUSTDOCFLAGS", "-D warnings"),
    )?;
    // The advisories check downloads its database from outside the package registries, which
    // CI machines cannot reach: it stays configured in deny.toml for users and is skipped here.
    exec(cargo().args(["deny", "check", "bans", "licenses", "sources"]))
}

pub(crate) fn run(args: &[String]) -> Result<(), String> {
    if let Some(extra) = args.first() {
        return Err(format!("unexpected argument `{extra}`"));
    }
    run_ci_steps()
}
