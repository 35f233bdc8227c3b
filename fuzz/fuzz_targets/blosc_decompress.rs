//! blosc-chunk: decompress an untrusted chunk (+ `getitem`, `LazyChunk::parse`).
#![no_main]

use blosc_chunk::{ChunkHeader, LazyChunk, Limits, decompress_into, decompress_with, getitem};
use libfuzzer_sys::fuzz_target;

/// Cap on decoded size: the default (2 GiB) is legitimate for real chunks but would trip the
/// fuzzer's malloc limit on a valid tiny "zeros" chunk claiming 2 GiB.
const MAX: usize = 64 << 20;

fuzz_target!(|data: &[u8]| {
    let limits = Limits::default().with_max_nbytes(MAX);
    let _ = LazyChunk::parse(data);
    let Ok(out) = decompress_with(data, &limits) else {
        return;
    };
    assert!(out.len() <= MAX);
    // A chunk that decodes must decode the same way into a caller buffer.
    let mut buf = vec![0u8; out.len()];
    let n = decompress_into(data, &mut buf).expect("decompress_into after decompress_with");
    assert_eq!(n, out.len());
    assert_eq!(buf, out);
    // getitem over a few ranges must agree with the full decode.
    if let Ok(h) = ChunkHeader::parse(data) {
        let ts = h.typesize().max(1);
        let nitems = out.len() / ts;
        for (start, n) in [
            (0, nitems),
            (nitems / 3, nitems / 2),
            (nitems.saturating_sub(1), 1),
        ] {
            if start + n > nitems {
                continue;
            }
            let got = getitem(data, start, n).expect("getitem in range of a decodable chunk");
            assert_eq!(got, out[start * ts..(start + n) * ts]);
        }
    }
});
