//! `cargo xtask features`: the crates with Cargo features, built in the feature combinations
//! users pick (also a step of `cargo xtask ci`).
//!
//! * `blosc-chunk`: its tests with no codec feature (BloscLZ only), each codec alone, and the
//!   defaults — the codec features change what decodes, so these are test runs (the crate gates
//!   the fixtures each test needs); clippy with no default features.
//! * `scifmt-io`, `wkw`, `blosc2-frame`, `dwe-format`, `offset-codec`: clippy `-D warnings` on all targets
//!   with no default features and with all features (a `cfg` mistake shows up as an unused item
//!   or a missing one), and the tests with all features (the optional `serde` / `ndarray` APIs
//!   have their own tests). Their default-feature tests are run by `cargo test --workspace`.
//! * `wkw-zarr` (store features only) and `zarrs-blosc-bench` (`c-peer`, the C peer its bench
//!   needs): clippy with no default and with all features, no extra test run.
//!
//! Checks, not tests, wherever features only add API: CI has two cores.

use crate::util::{cargo, exec};

/// The `--features` selections of blosc-chunk whose tests are run.
const BLOSC_CHUNK_SETS: &[&[&str]] = &[
    &["--no-default-features"],
    &["--no-default-features", "--features", "lz4"],
    &["--no-default-features", "--features", "zstd"],
    &["--no-default-features", "--features", "zlib"],
    &[],
];

/// Crates checked with no default features and with all features.
const CHECKED: &[&str] = &[
    "scifmt-io",
    "wkw",
    "blosc2-frame",
    "dwe-format",
    "offset-codec",
];

/// Crates only checked (clippy) with no default features and with all features.
const CHECKED_ONLY: &[&str] = &["wkw-zarr", "zarrs-blosc-bench"];

fn clippy(package: &str, features: &[&str]) -> Result<(), String> {
    exec(
        cargo()
            .args(["clippy", "-p", package, "--all-targets"])
            .args(features)
            .args(["--", "-D", "warnings"]),
    )
}

pub(crate) fn run_steps() -> Result<(), String> {
    clippy("blosc-chunk", &["--no-default-features"])?;
    for set in BLOSC_CHUNK_SETS {
        exec(
            cargo()
                .args(["test", "-p", "blosc-chunk", "--lib", "--tests"])
                .args(*set),
        )?;
    }
    for package in CHECKED {
        clippy(package, &["--no-default-features"])?;
        clippy(package, &["--all-features"])?;
        exec(cargo().args(["test", "-p", package, "--all-features"]))?;
    }
    for package in CHECKED_ONLY {
        clippy(package, &["--no-default-features"])?;
        clippy(package, &["--all-features"])?;
    }
    Ok(())
}

pub(crate) fn run(args: &[String]) -> Result<(), String> {
    if let Some(extra) = args.first() {
        return Err(format!("unexpected argument `{extra}`"));
    }
    run_steps()
}
