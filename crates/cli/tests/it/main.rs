//! The integration tests of `scifmt-cli`, in one test binary: each module was a test binary of its
//! own (`tests/<module>.rs`); one binary is linked once and its tests share the cores.

mod blosc_frame;
mod blosc_plugins;
mod common;
mod convert;
mod dwe_offset_zarr;
mod json;
mod messages;
mod pipes;
mod readme;
mod remote;
mod robustness;
mod safety;
mod virtualize;
mod wkw;
mod zarr_blosc;
