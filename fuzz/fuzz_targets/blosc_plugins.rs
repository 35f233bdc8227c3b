//! blosc-chunk plugins: decode an untrusted chunk with an untrusted b2nd block shape (the
//! NDCELL/NDMEAN filters and the NDLZ/ZFP codecs take geometry from it). The first byte gives
//! the number of dimensions (1–8), the next ones the dimensions (1–32); the rest is the chunk.
#![no_main]

use blosc_chunk::{BlockShape, ChunkHeader, DParams, Limits, decompress_ctx, getitem_ctx};
use libfuzzer_sys::fuzz_target;

const MAX: usize = 16 << 20;

fuzz_target!(|data: &[u8]| {
    let Some((&n, rest)) = data.split_first() else {
        return;
    };
    let ndim = usize::from(n % 8) + 1;
    if rest.len() < ndim {
        return;
    }
    let (dims, chunk) = rest.split_at(ndim);
    let dims: Vec<u64> = dims.iter().map(|&d| u64::from(d % 32) + 1).collect();
    let Ok(shape) = BlockShape::new(&dims) else {
        return;
    };
    let mut p = DParams::default().with_blockshape(shape);
    p.limits = Limits::default().with_max_nbytes(MAX);
    let Ok(out) = decompress_ctx(chunk, &p) else {
        return;
    };
    assert!(out.len() <= MAX);
    if let Ok(h) = ChunkHeader::parse(chunk) {
        let ts = h.typesize().max(1);
        let nitems = out.len() / ts;
        let (start, k) = (nitems / 3, nitems / 2);
        let got = getitem_ctx(chunk, start, k, &p).expect("getitem in range of a decodable chunk");
        assert_eq!(got, out[start * ts..(start + k) * ts]);
    }
});
