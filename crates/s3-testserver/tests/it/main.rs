//! The integration tests of `scifmt-s3-testserver`, in one test binary: each module was a test
//! binary of its own (`tests/<module>.rs`); one binary is linked once and its tests share the
//! cores.

mod gcs;
mod server;
mod shared_store;
