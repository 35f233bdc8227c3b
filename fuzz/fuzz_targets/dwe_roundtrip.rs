//! dwe-format: encode arbitrary small tensors in both layouts, open and decode them back.
#![no_main]

use arbitrary::Arbitrary;
use dwe_format::{Dims, OpenOptions, WriteLayout, encode};
use libfuzzer_sys::fuzz_target;

#[derive(Debug, Arbitrary)]
struct Input {
    t: u8,
    v: u8,
    k: u8,
    param: u8,
    stream: bool,
    scale: f32,
    spread: u8,
    values: Vec<i16>,
}

fuzz_target!(|inp: Input| {
    let dims = Dims::new(
        u32::from(inp.t % 12),
        u32::from(inp.v % 40),
        u32::from(inp.k % 24),
    );
    let Some(len) = dims.len() else {
        return;
    };
    // Values with a controllable range, so small alphabets and residual overflow both occur.
    let shift = inp.spread % 16;
    let values: Vec<i16> = (0..len)
        .map(|i| {
            inp.values
                .get(i % inp.values.len().max(1))
                .copied()
                .unwrap_or(0)
                >> shift
        })
        .collect();
    let layout = if inp.stream {
        WriteLayout::Stream {
            jump_interval: u32::from(inp.param),
        }
    } else {
        WriteLayout::Block {
            chunk_size: u32::from(inp.param),
        }
    };
    let Ok(bytes) = encode(&values, dims, inp.scale, layout) else {
        return;
    };
    let f = OpenOptions::new()
        .with_check_integrity(true)
        .open(&bytes)
        .expect("a file we wrote must open");
    assert_eq!(
        (f.num_timesteps(), f.vocab_size(), f.embedding_dim()),
        (dims.num_timesteps, dims.vocab_size, dims.embedding_dim)
    );
    f.verify().expect("a file we wrote must verify");
    assert_eq!(
        f.decode_all().expect("decode"),
        values,
        "round trip changed the values"
    );
});
