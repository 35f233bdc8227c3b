//! Object-store access (feature `object_store`).

pub(crate) mod object;
pub(crate) mod options;
pub(crate) mod plan;
pub(crate) mod retry;
pub(crate) mod runtime;
pub(crate) mod store;
pub(crate) mod upload;
#[cfg(feature = "zarrs")]
pub(crate) mod zarrs_store;
