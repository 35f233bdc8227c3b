//! blosc2-frame: b2nd metalayer parsing and region reads over an untrusted `.b2nd` frame.
#![no_main]

use blosc2_frame::{B2ND_METALAYER, B2ndArray, B2ndMeta, Frame, Limits};
use libfuzzer_sys::fuzz_target;

fn limits() -> Limits {
    let mut l = Limits::default();
    l.max_chunk_nbytes = 16 << 20;
    l.max_nchunks = 1 << 16;
    l.max_output_bytes = 64 << 20;
    l
}

fuzz_target!(|data: &[u8]| {
    // The metalayer parser on its own, on raw bytes.
    if let Ok(meta) = B2ndMeta::parse(data) {
        let _ = meta.to_bytes();
        let _ = (
            meta.nchunks(),
            meta.items(),
            meta.chunk_items(),
            meta.block_items(),
        );
        let _ = (
            meta.extchunkshape(),
            meta.chunks_per_dim(),
            meta.blocks_per_chunk_dim(),
        );
    }
    let Ok(frame) = Frame::from_slice_with(data, &limits()) else {
        return;
    };
    if let Some(content) = frame.metalayer(B2ND_METALAYER) {
        if let Ok(meta) = B2ndMeta::parse(content) {
            // What parses must serialise and parse back to the same thing.
            if let Ok(bytes) = meta.to_bytes() {
                assert_eq!(B2ndMeta::parse(&bytes).ok().as_ref(), Some(&meta));
            }
        }
    }
    let Ok(array) = B2ndArray::new(frame) else {
        return;
    };
    let shape = array.shape().to_vec();
    let itemsize = array.itemsize() as u64;
    let all = array.read_all();
    let start: Vec<u64> = shape.iter().map(|&s| s / 3).collect();
    let stop: Vec<u64> = shape.iter().map(|&s| s - s / 4).collect();
    if let Ok(region) = array.read_region(&start, &stop) {
        let items: u64 = start.iter().zip(&stop).map(|(a, b)| b - a).product();
        assert_eq!(region.len() as u64, items * itemsize);
        if let (Ok(all), Some(&last)) = (&all, shape.last()) {
            // Check the region's first row against the full read (C order).
            if items > 0 {
                let mut off = 0u64;
                for (i, &s) in start.iter().enumerate() {
                    off = off * shape[i] + s;
                }
                let row = (stop[stop.len() - 1] - start[start.len() - 1]) * itemsize;
                let off = off * itemsize;
                let _ = last;
                assert_eq!(
                    &region[..row as usize],
                    &all[off as usize..(off + row) as usize]
                );
            }
        }
    }
    // Out-of-range and wrong-rank regions are errors, never panics.
    let too_far: Vec<u64> = shape.iter().map(|&s| s.saturating_add(1)).collect();
    assert!(array.read_region(&vec![0; shape.len()], &too_far).is_err() || shape.is_empty());
    assert!(array.read_region(&[0], &[0, 0]).is_err());
});
