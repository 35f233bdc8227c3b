//! The integration tests of `offset-codec`, in one test binary: each module was a test binary of
//! its own (`tests/<module>.rs`); one binary is linked once and its tests share the cores.
//! `zarrs_runtime.rs` stays a binary of its own: its codec registrations are process-wide.

mod codec;
mod config;
mod helpers;
mod regressions;
mod remote;
mod serde;
mod zarrs;
