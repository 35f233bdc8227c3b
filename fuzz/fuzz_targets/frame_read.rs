//! blosc2-frame: open an untrusted contiguous frame, read every chunk, every metalayer and
//! vlmetalayer; a frame that opens must also re-serialise and re-open.
#![no_main]

use blosc2_frame::{Frame, FrameWriter, Limits};
use libfuzzer_sys::fuzz_target;

fn limits() -> Limits {
    let mut l = Limits::default();
    l.max_chunk_nbytes = 16 << 20;
    l.max_nchunks = 1 << 16;
    l.max_output_bytes = 64 << 20;
    l
}

fuzz_target!(|data: &[u8]| {
    let Ok(frame) = Frame::from_slice_with(data, &limits()) else {
        return;
    };
    let _ = frame.header();
    for layer in frame.metalayers() {
        assert_eq!(frame.metalayer(&layer.name), Some(layer.content.as_slice()));
        let _ = frame.metalayer_value(&layer.name);
    }
    for layer in frame.vlmetalayers() {
        let _ = frame.vlmetalayer(&layer.name);
        let _ = frame.vlmetalayer_value(&layer.name);
    }
    let mut total = 0u64;
    let mut all_ok = true;
    for i in 0..frame.nchunks() {
        let _ = frame.chunk(i);
        let n = frame.chunk_nbytes(i);
        match frame.decompress_chunk(i) {
            Ok(out) => {
                if let Ok(n) = n {
                    assert_eq!(
                        n,
                        out.len(),
                        "chunk_nbytes disagrees with the decoded chunk {i}"
                    );
                }
                total += out.len() as u64;
            }
            Err(_) => all_ok = false,
        }
    }
    assert!(frame.decompress_chunk(frame.nchunks()).is_err());
    if let Ok(all) = frame.decompress_all() {
        if all_ok {
            assert_eq!(all.len() as u64, total);
        }
        let hi = all.len() as u64;
        if let Ok(s) = frame.get_slice(hi / 3, hi - hi / 4) {
            assert_eq!(
                s.as_slice(),
                &all[(hi / 3) as usize..(hi - hi / 4) as usize]
            );
        }
    }
    let _ = frame.get_slice(0, u64::MAX);
    // Re-serialise what we read: it must open again with the same chunk count.
    if let Ok(w) = FrameWriter::from_frame(&frame) {
        if let Ok(bytes) = w.to_bytes() {
            let again = Frame::from_slice_with(&bytes, &Limits::default())
                .expect("a frame we serialised must open");
            assert_eq!(again.nchunks(), frame.nchunks());
        }
    }
});
