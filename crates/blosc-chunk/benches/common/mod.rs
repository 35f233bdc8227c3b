//! The benchmark workloads and the C-Blosc2 calls, shared by `benches/blosc.rs` (criterion)
//! and `examples/interleaved_vs_c.rs` (interleaved timing).
#![allow(
    dead_code,
    unsafe_code,
    clippy::unwrap_used,
    clippy::cast_possible_truncation,
    clippy::cast_possible_wrap,
    clippy::cast_sign_loss,
    reason = "benchmark support: FFI calls into the C peer, synthetic data"
)]

use std::ffi::CString;

use blosc_chunk::{CParams, Codec, Filter};

pub(crate) const N: usize = 4 << 20;

pub(crate) fn int32_ramp_noise() -> Vec<u8> {
    let mut s = 0x1234_5678_9abc_def1u64;
    (0..N / 4)
        .flat_map(|i| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            let v = (i as u32).wrapping_mul(3).wrapping_add((s % 64) as u32);
            v.to_le_bytes()
        })
        .collect()
}

pub(crate) fn f32_sine_noise() -> Vec<u8> {
    let mut s = 0x0fed_cba9_8765_4321u64;
    (0..N / 4)
        .flat_map(|i| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            let noise = (s % 1000) as f32 / 1.0e5;
            ((i as f32 / 1000.0).sin() * 100.0 + noise).to_le_bytes()
        })
        .collect()
}

pub(crate) struct Config {
    pub(crate) name: &'static str,
    pub(crate) codec: Codec,
    pub(crate) cname: &'static str,
    pub(crate) filter: Filter,
}

pub(crate) const CONFIGS: [Config; 4] = [
    Config {
        name: "blosclz+shuffle",
        codec: Codec::BloscLz,
        cname: "blosclz",
        filter: Filter::Shuffle,
    },
    Config {
        name: "lz4+shuffle",
        codec: Codec::Lz4,
        cname: "lz4",
        filter: Filter::Shuffle,
    },
    Config {
        name: "zstd+shuffle",
        codec: Codec::Zstd,
        cname: "zstd",
        filter: Filter::Shuffle,
    },
    Config {
        name: "lz4+bitshuffle",
        codec: Codec::Lz4,
        cname: "lz4",
        filter: Filter::BitShuffle,
    },
];

pub(crate) fn ours_params(c: &Config, nthreads: usize) -> CParams {
    let mut p = CParams::default();
    p.codec = c.codec;
    p.clevel = 5;
    p.typesize = 4;
    p.filters = [Filter::NoFilter; 6];
    p.filters[5] = c.filter;
    p.nthreads = nthreads;
    p
}

pub(crate) fn c_setup(c: &Config, nthreads: usize) {
    let name = CString::new(c.cname).unwrap();
    // SAFETY: plain setters of C-Blosc2's global state; `name` outlives the call.
    unsafe {
        blosc2_src::blosc1_set_compressor(name.as_ptr());
        blosc2_src::blosc2_set_nthreads(nthreads as i16);
    }
}

pub(crate) fn c_compress(c: &Config, data: &[u8], out: &mut [u8]) -> usize {
    let doshuffle = if c.filter == Filter::BitShuffle { 2 } else { 1 };
    // SAFETY: `data` and `out` are live, non-overlapping buffers of the given lengths.
    let n = unsafe {
        blosc2_src::blosc2_compress(
            5,
            doshuffle,
            4,
            data.as_ptr().cast(),
            data.len() as i32,
            out.as_mut_ptr().cast(),
            out.len() as i32,
        )
    };
    assert!(n > 0);
    n as usize
}

pub(crate) fn c_decompress(chunk: &[u8], out: &mut [u8]) -> usize {
    // SAFETY: `chunk` and `out` are live, non-overlapping buffers of the given lengths.
    let n = unsafe {
        blosc2_src::blosc2_decompress(
            chunk.as_ptr().cast(),
            chunk.len() as i32,
            out.as_mut_ptr().cast(),
            out.len() as i32,
        )
    };
    assert!(n > 0);
    n as usize
}
