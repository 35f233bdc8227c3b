//! The built-in filters of a chunk's blocks, each a function from one block's bytes to the
//! same number of bytes (C-Blosc2's filter ids 1–4):
//!
//! * `shuffle`: byte shuffle (id 1), byte `j` of every item grouped together;
//! * `bitshuffle`: bit shuffle (id 2), a whole-block bit transpose;
//! * `delta`: delta (id 3), XOR against block 0;
//! * `truncprec`: truncate precision (id 4, lossy), low mantissa bits of floats zeroed;
//! * `simd`: the SSE2/AVX2/AVX-512 kernels of the byte shuffle and the bit transpose
//!   (x86-64).
//!
//! The plugin filters (BYTEDELTA, INT_TRUNC, NDCELL, NDMEAN) are in `plugins`.

pub(crate) mod bitshuffle;
pub(crate) mod delta;
pub(crate) mod shuffle;
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
pub(crate) mod simd;
pub(crate) mod truncprec;
