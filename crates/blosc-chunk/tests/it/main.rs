//! The integration tests of `blosc-chunk`, in one test binary: each module was a test binary of its
//! own (`tests/<module>.rs`); one binary is linked once and its tests share the cores. `limits.rs`
//! (a counting global allocator) and `zarrs_runtime.rs` (a process-wide codec registration with
//! other options) stay binaries of their own.

mod blosc1_fixtures;
mod blosc1_writer;
mod dict;
mod features;
mod fixtures;
mod plugins;
mod plugins_robustness;
mod regressions;
mod robustness;
mod roundtrip;
mod shuffle_alignment;
mod zarrs;
mod zarrs_remote;
