//! Replays the kept fuzz findings and hand-made hostile frames in
//! `testdata/regressions/blosc2-frame/<target>/` through the entry points the fuzz targets
//! drive (`frame_read`, `b2nd_read`, `frame_sparse`): each must give `Ok` or a typed `Err`,
//! never a panic, and what opens must read consistently.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::cast_possible_truncation,
    reason = "a failed unwrap is a failed test; test sizes are small"
)]

use std::path::PathBuf;

use blosc2_frame::{B2ND_METALAYER, B2ndArray, B2ndMeta, Frame, FrameWriter, Limits};

fn files(target: &str) -> Vec<(PathBuf, Vec<u8>)> {
    testkit::regression_files("blosc2-frame", target)
}

fn limits() -> Limits {
    let mut l = Limits::default();
    l.max_chunk_nbytes = 16 << 20;
    l.max_nchunks = 1 << 16;
    l.max_output_bytes = 64 << 20;
    l
}

fn replay_all(target: &str, f: fn(&[u8])) -> usize {
    testkit::replay_all("blosc2-frame", target, f)
}

fn frame_read(data: &[u8]) {
    let frame = match Frame::from_slice_with(data, &limits()) {
        Ok(f) => f,
        Err(e) => return assert!(!e.to_string().is_empty()),
    };
    for layer in frame.metalayers() {
        assert_eq!(frame.metalayer(&layer.name), Some(layer.content.as_slice()));
        let _ = frame.metalayer_value(&layer.name);
    }
    for layer in frame.vlmetalayers() {
        let _ = frame.vlmetalayer_value(&layer.name);
    }
    for i in 0..frame.nchunks() {
        let _ = frame.chunk(i);
        if let (Ok(n), Ok(out)) = (frame.chunk_nbytes(i), frame.decompress_chunk(i)) {
            assert_eq!(n, out.len());
        }
    }
    assert!(frame.decompress_chunk(frame.nchunks()).is_err());
    let _ = frame.decompress_all();
    let _ = frame.get_slice(0, u64::MAX);
    if let Ok(bytes) = FrameWriter::from_frame(&frame).and_then(|w| w.to_bytes()) {
        let again = Frame::from_slice_with(&bytes, &Limits::default()).unwrap();
        assert_eq!(again.nchunks(), frame.nchunks());
    }
}

fn b2nd_read(data: &[u8]) {
    let _ = B2ndMeta::parse(data).map(|m| m.to_bytes());
    let Ok(frame) = Frame::from_slice_with(data, &limits()) else {
        return;
    };
    if let Some(Ok(meta)) = frame.metalayer(B2ND_METALAYER).map(B2ndMeta::parse)
        && let Ok(bytes) = meta.to_bytes()
    {
        assert_eq!(B2ndMeta::parse(&bytes).unwrap(), meta);
    }
    let Ok(array) = B2ndArray::new(frame) else {
        return;
    };
    let shape = array.shape().to_vec();
    let _ = array.read_all();
    let start: Vec<u64> = shape.iter().map(|&s| s / 3).collect();
    let stop: Vec<u64> = shape.iter().map(|&s| s - s / 4).collect();
    let _ = array.read_region(&start, &stop);
    assert!(array.read_region(&[0], &[0, 0]).is_err());
}

/// Record container of `fuzz/src/lib.rs`: `tag: u8, len: u32 LE, bytes` (cut at the end).
fn records(mut data: &[u8], max: usize) -> Vec<&[u8]> {
    let mut out = Vec::new();
    while out.len() < max && data.len() >= 5 {
        let len = u32::from_le_bytes([data[1], data[2], data[3], data[4]]) as usize;
        let rest = &data[5..];
        let n = len.min(rest.len());
        out.push(&rest[..n]);
        data = &rest[n..];
    }
    out
}

fn frame_sparse(data: &[u8]) {
    let recs = records(data, 9);
    let Some(first) = recs.first() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join(blosc2_frame::SPARSE_FRAME_FILE), first).unwrap();
    for (k, r) in recs.iter().skip(1).enumerate() {
        std::fs::write(dir.path().join(format!("{k:08X}.chunk")), r).unwrap();
    }
    let Ok(frame) = Frame::open_sparse_with(dir.path(), &limits()) else {
        return;
    };
    for i in 0..frame.nchunks() {
        if let (Ok(n), Ok(out)) = (frame.chunk_nbytes(i), frame.decompress_chunk(i)) {
            assert_eq!(n, out.len());
        }
    }
    let _ = frame.decompress_all();
}

#[test]
fn frame_read_regressions_replay() {
    replay_all("frame_read", frame_read);
}

#[test]
fn b2nd_read_regressions_replay() {
    replay_all("b2nd_read", b2nd_read);
}

#[test]
fn frame_sparse_regressions_replay() {
    replay_all("frame_sparse", frame_sparse);
}

/// Fuzz finding (b2nd_read, slow unit: 134 s under the fuzzer): chunks claiming 640 MiB in
/// 48 MiB blocks inside a frame that expects 3200-byte chunks. Whole-array reads refused them,
/// but partial region reads decoded the touched 48 MiB blocks once per b2nd block. Every read
/// path now checks a stored chunk's `nbytes` against the frame before decoding.
#[test]
fn region_reads_refuse_chunks_larger_than_the_frame_says() {
    let data = files("b2nd_read")
        .into_iter()
        .find(|(p, _)| p.ends_with("slow-b2nd-region"))
        .expect("regression file present")
        .1;
    let frame = Frame::from_slice_with(&data, &limits()).unwrap();
    let array = B2ndArray::new(frame).unwrap();
    for (start, stop) in [(vec![16, 13], vec![38, 30]), (vec![0, 0], vec![50, 40])] {
        let err = array.read_region(&start, &stop).unwrap_err();
        assert!(err.to_string().contains("chunk nbytes"), "{err}");
    }
}

/// Fuzz finding (frame_sparse, slow unit: 32 s under the fuzzer, 6 s in release): a sparse
/// frame of variable-size chunks (20 000 bytes in all) whose 7973 index entries all point at one
/// chunk claiming far more. Each entry decoded that chunk again. A stored chunk may not claim
/// more bytes than the whole frame.
#[test]
fn variable_chunks_larger_than_the_frame_are_refused() {
    let data = files("frame_sparse")
        .into_iter()
        .find(|(p, _)| p.ends_with("slow-sparse-variable-chunks"))
        .expect("regression file present")
        .1;
    let recs = records(&data, 9);
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join(blosc2_frame::SPARSE_FRAME_FILE), recs[0]).unwrap();
    for (k, r) in recs.iter().skip(1).enumerate() {
        std::fs::write(dir.path().join(format!("{k:08X}.chunk")), r).unwrap();
    }
    let frame = Frame::open_sparse_with(dir.path(), &limits()).unwrap();
    assert!(frame.nchunks() > 1000);
    let err = frame.chunk_nbytes(0).unwrap_err();
    assert!(err.to_string().contains("more than the frame"), "{err}");
    assert!(frame.decompress_chunk(0).is_err());
}
