//! blosc-chunk, `--live` only: random data round-tripped through python-blosc2 both ways, and
//! Blosc1-format chunks through python-blosc 1.11.4 (C-Blosc 1.21) both ways; Zarr arrays with
//! blosc-chunk's `blosc` codec against zarr-python.
//!
//! The fixture oracle `testdata/blosc/manifest.json` is checked once, by the crate's tests
//! (`crates/blosc-chunk/tests/it/fixtures.rs`, run by `cargo test`): every chunk decodes to its
//! sha256 (also through `decompress_into`, into uninitialised memory and on two threads), every
//! chunk made by a recorded compress call is re-encoded byte for byte on one and two threads (the
//! zlib ones too), and the special-chunk constructors match their fixtures.

use super::{Ctx, Row};

pub(crate) fn rows(ctx: &Ctx) -> Vec<Row> {
    if !ctx.live {
        return Vec::new();
    }
    vec![
        crate::conformance::blosc_chunk_live::live(ctx),
        crate::conformance::blosc1_live::live(ctx),
        crate::conformance::zarr_live::live(ctx),
    ]
}
