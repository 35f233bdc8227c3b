//! The integration tests of `dwe-format`, in one test binary: each module was a test binary of its
//! own (`tests/<module>.rs`); one binary is linked once and its tests share the cores. `limits.rs`
//! stays a binary of its own: its counting global allocator measures the whole process.

mod common;
mod fixtures;
mod regressions;
mod robustness;
mod roundtrip;
mod serde;
