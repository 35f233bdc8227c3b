//! The integration tests of `wkw-zarr`, in one test binary: each module was a test binary of its
//! own (`tests/<module>.rs`); one binary is linked once and its tests share the cores.
//!
//! Tests that start this binary again as their child name the child test by its path here
//! (`kill::kill_child`): libtest matches `--exact` against the full name.

mod codecs;
mod common;
mod fixtures;
mod icechunk;
mod kill;
mod overwrite;
mod remote;
mod resume;
mod units;
mod virtualize;
mod zarrs_reads;
