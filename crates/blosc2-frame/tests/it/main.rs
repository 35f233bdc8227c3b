//! The integration tests of `blosc2-frame`, in one test binary: each module was a test binary of
//! its own (`tests/<module>.rs`); one binary is linked once and its tests share the cores.
//! `limits.rs` stays a binary of its own: its counting global allocator measures the whole process.
//!
//! Tests that start this binary again as their child name the child test by its path here
//! (`kill::kill_child`): libtest matches `--exact` against the full name.

mod b2nd_codec;
mod common;
mod concurrency;
mod fixtures;
mod kill;
mod plugins;
mod regressions;
mod remote;
mod remote_memory;
mod robustness;
mod serde;
mod typed;
mod virtualize;
mod virtualize_sparse;
mod writer;
