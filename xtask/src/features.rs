//! `cargo xtask features`: the feature combinations of the library crates that
//! `cargo test --workspace` and `cargo clippy --workspace --all-targets` do not already build
//! (also a step of `cargo xtask ci`).
//!
//! Cargo unifies features over the packages it builds at once. In the workspace runs every
//! library crate has **all** its features: what the CLI and the Python package turn on, plus each
//! crate's dev-dependency on itself (`path = "."`), which names the features its tests need
//! (blosc2-frame: `ndarray`, `serde`, `zfp`, `zarrs`; dwe-format: `parallel`, `serde`). So the
//! all-features tests and clippy runs of a crate compile exactly the code the workspace runs
//! compile, and are not repeated here; [`check_workspace_has_all_features`] fails when that
//! stops being true (a feature added without adding it to the crate's dev-dependency on itself).
//!
//! What remains, each a build the workspace runs do not make:
//!
//! * **blosc-chunk without `zfp`**: its integration tests (`it`, `limits`) and clippy on all
//!   targets with its default features plus `zarrs` (what its dev-dependency on itself adds).
//!   A dev-dependency on itself
//!   with default features turns the defaults back on whenever tests or examples are built, so
//!   `--no-default-features` or a single codec feature builds this same code: the five
//!   per-codec test runs this step used to make compiled and ran the same tests five times.
//! * **Libraries without features**: clippy on the library targets of `scifmt-io`,
//!   `blosc-chunk`, `blosc2-frame`, `wkw`, `dwe-format`, `offset-codec` and `lz4-block-codec` with
//!   `--no-default-features` (a `cfg` mistake shows up as an unused item or a missing one). Only
//!   the library targets: the test targets always get the dev-dependency's features. None of
//!   these crates turns on a feature of another, so one invocation builds each without any.
//! * **zarrs-blosc-bench with `c-peer`** (zarrs' C-Blosc codec, which its bench needs and which
//!   must stay out of the workspace tests): clippy on all targets, only with `--c-peer`
//!   (`cargo xtask features --c-peer`), in the same invocation as blosc-chunk's (the `blosc`
//!   feature of zarrs changes no code of blosc-chunk). Not in `cargo xtask ci`: it compiles
//!   C-Blosc and zarrs a second time (about 100 CPU-seconds of CI's two cores) to lint a
//!   benchmark harness, which `cargo bench -p zarrs-blosc-bench --features c-peer` compiles
//!   whenever it is run.
//!
//! scifmt-io's test targets are not checked without features: its dev-dependency on itself turns
//! on `aws`, `zarrs`, `references`, `icechunk` and `parquet` for them, so such a run checked a
//! second feature mix of the whole crate (and compiled `icechunk` once more) for little.
//!
//! `wkw-zarr` has no `cfg(feature)` code (its features only pick object-store backends of
//! `scifmt-io`), so its builds with and without features are the same code.

use std::collections::BTreeSet;
use std::process::Stdio;

use serde_json::Value;

use crate::util::{cargo, exec};

/// Features the workspace runs leave off on purpose: (package, feature).
const NOT_IN_WORKSPACE: &[(&str, &str)] = &[
    // C-Blosc through zarrs would replace blosc-chunk's codec in blosc-chunk's own tests.
    ("zarrs-blosc-bench", "c-peer"),
];

/// Library crates checked with no features at all, in one clippy invocation (none of them turns
/// on a feature of another).
const WITHOUT_FEATURES: &[&str] = &[
    "scifmt-io",
    "blosc-chunk",
    "blosc2-frame",
    "wkw",
    "dwe-format",
    "offset-codec",
    "lz4-block-codec",
];

fn clippy(args: &[&str]) -> Result<(), String> {
    exec(
        cargo()
            .arg("clippy")
            .args(args)
            .args(["--", "-D", "warnings"]),
    )
}

/// Fails unless `cargo test --workspace` builds every workspace package with every feature it
/// declares (except [`NOT_IN_WORKSPACE`]): the resolve of `cargo metadata` is the one of a build
/// of all members with their dev-dependencies.
fn check_workspace_has_all_features() -> Result<(), String> {
    let out = cargo()
        .args(["metadata", "--format-version", "1"])
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| format!("cannot run cargo metadata: {e}"))?;
    if !out.status.success() {
        return Err(format!("cargo metadata failed with {}", out.status));
    }
    let meta: Value =
        serde_json::from_slice(&out.stdout).map_err(|e| format!("cargo metadata output: {e}"))?;
    let members: BTreeSet<&str> = meta["workspace_members"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    let mut missing = Vec::new();
    for node in meta["resolve"]["nodes"].as_array().into_iter().flatten() {
        let Some(id) = node["id"].as_str().filter(|id| members.contains(id)) else {
            continue;
        };
        let Some(package) = meta["packages"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|p| p["id"].as_str() == Some(id))
        else {
            continue;
        };
        let name = package["name"].as_str().unwrap_or("?");
        let on: BTreeSet<&str> = node["features"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        for feature in package["features"].as_object().into_iter().flatten() {
            let feature = feature.0.as_str();
            if !on.contains(feature) && !NOT_IN_WORKSPACE.contains(&(name, feature)) {
                missing.push(format!("{name}/{feature}"));
            }
        }
    }
    if missing.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "`cargo test --workspace` no longer builds these features: {}; add them to the \
             crate's dev-dependency on itself (or list them in xtask/src/features.rs)",
            missing.join(", ")
        ))
    }
}

/// The steps; with `c_peer` zarrs-blosc-bench's `c-peer` build too.
pub(crate) fn run_steps(c_peer: bool) -> Result<(), String> {
    check_workspace_has_all_features()?;
    let mut blosc = vec!["-p", "blosc-chunk", "--all-targets"];
    if c_peer {
        blosc.extend([
            "-p",
            "zarrs-blosc-bench",
            "--features",
            "zarrs-blosc-bench/c-peer",
        ]);
    }
    clippy(&blosc)?;
    // The integration tests only: they assert what the features change (which codecs encode,
    // which fixtures decode); the library's unit tests have no `zfp`-dependent case, and
    // compiling the library a second time in test mode took about a minute of CI.
    exec(cargo().args([
        "test",
        "-p",
        "blosc-chunk",
        "--test",
        "it",
        "--test",
        "limits",
    ]))?;
    let mut libs = Vec::new();
    for package in WITHOUT_FEATURES {
        libs.extend(["-p", package]);
    }
    libs.extend(["--no-default-features", "--lib"]);
    clippy(&libs)
}

pub(crate) fn run(args: &[String]) -> Result<(), String> {
    let mut c_peer = false;
    for a in args {
        match a.as_str() {
            "--c-peer" => c_peer = true,
            extra => return Err(format!("unexpected argument `{extra}`")),
        }
    }
    run_steps(c_peer)
}
