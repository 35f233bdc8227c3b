//! blosc2-frame: a sparse frame directory (`chunks.b2frame` index frame plus `%08X.chunk`
//! files) built from the input records: record 0 is `chunks.b2frame`, record k ≥ 1 is chunk
//! file k − 1.
#![no_main]

use blosc2_frame::{Frame, Limits, SPARSE_FRAME_FILE};
use libfuzzer_sys::fuzz_target;
use scifmt_fuzz::{records, scratch_dir};

fuzz_target!(|data: &[u8]| {
    let recs = records(data, 9);
    let Some(first) = recs.first() else {
        return;
    };
    let dir = scratch_dir();
    std::fs::write(dir.join(SPARSE_FRAME_FILE), first.bytes).expect("write index");
    for (k, r) in recs.iter().skip(1).enumerate() {
        std::fs::write(dir.join(format!("{k:08X}.chunk")), r.bytes).expect("write chunk");
    }
    let mut l = Limits::default();
    l.max_chunk_nbytes = 16 << 20;
    l.max_nchunks = 1 << 16;
    l.max_output_bytes = 64 << 20;
    let Ok(frame) = Frame::open_sparse_with(&dir, &l) else {
        return;
    };
    assert!(frame.is_sparse());
    let _ = frame.index();
    for layer in frame.vlmetalayers() {
        let _ = frame.vlmetalayer(&layer.name);
    }
    for i in 0..frame.nchunks() {
        let _ = frame.chunk(i);
        if let (Ok(n), Ok(out)) = (frame.chunk_nbytes(i), frame.decompress_chunk(i)) {
            assert_eq!(n, out.len());
        }
    }
    let _ = frame.decompress_all();
});
