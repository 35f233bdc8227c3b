//! Crash safety: a child process edits a frame in a loop (append a chunk, update chunk 0, set
//! the `gen` vlmetalayer, write) and is SIGKILLed at pseudo-random moments, 100 times per
//! scenario. After every kill the frame must open and hold exactly one generation's state:
//! `gen` = n, n + 1 chunks, chunk i ≥ 1 filled with byte i, chunk 0 filled with byte n,.
//! Scenarios: a contiguous file (`write_file`), a sparse
//! directory (`write_sparse`), a streamed file and a streamed sparse directory
//! (`FrameFileWriter::create` / `create_sparse`, whose target is either absent or complete).
//!
//! The test binary is its own child: `kill_child` does nothing unless `FRAME_KILL_CHILD` is set.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::cast_possible_truncation,
    reason = "a failed unwrap is a failed test; test sizes are small"
)]

use std::path::Path;
use testkit::{Lcg, run_and_kill};

use blosc2_frame::blosc_chunk::CParams;
use blosc2_frame::{Durability, Frame, FrameFileWriter, FrameParams, FrameWriter};

const KILLS: usize = 100;
const ENV: &str = "FRAME_KILL_CHILD";
const CHUNK: usize = 4096;
/// Generations wrap around so frames stay small.
const MAX_GEN: u32 = 60;

fn params() -> FrameParams {
    let mut cp = CParams::default();
    cp.typesize = 1;
    FrameParams::new(cp, CHUNK)
}

/// The frame of generation `n`.
fn generation(n: u32) -> FrameWriter {
    let mut w = FrameWriter::new(params()).unwrap();
    w.append_data(&[n as u8; CHUNK]).unwrap();
    for i in 1..=n {
        w.append_data(&[i as u8; CHUNK]).unwrap();
    }
    w.set_vlmetalayer("gen", n.to_string().as_bytes()).unwrap();
    w
}

/// Checks that `frame` is exactly one generation's state; returns it.
fn check(frame: &Frame<'_>) -> u32 {
    let n: u32 = String::from_utf8(frame.vlmetalayer("gen").unwrap())
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(frame.nchunks(), n as usize + 1, "generation {n}");
    assert_eq!(frame.decompress_chunk(0).unwrap(), vec![n as u8; CHUNK]);
    for i in 1..=n as usize {
        assert_eq!(frame.decompress_chunk(i).unwrap(), vec![i as u8; CHUNK]);
    }
    n
}

/// The child: loads the current state, makes the next generation by editing it, writes it.
#[test]
fn kill_child() {
    let Ok(spec) = std::env::var(ENV) else {
        return;
    };
    let (mode, path) = spec.split_once(':').unwrap();
    let path = Path::new(path);
    loop {
        match mode {
            "file" | "sparse" => {
                let frame = if mode == "file" {
                    Frame::open(path).unwrap()
                } else {
                    Frame::open_sparse_with(path, &blosc2_frame::Limits::default()).unwrap()
                };
                let n = check(&frame);
                let next = if n == MAX_GEN { 0 } else { n + 1 };
                let mut w = if next == 0 {
                    generation(0)
                } else {
                    let mut w = FrameWriter::from_frame(&frame).unwrap();
                    w.append_data(&[next as u8; CHUNK]).unwrap();
                    let c0 = blosc2_frame::blosc_chunk::compress(
                        &[next as u8; CHUNK],
                        &params().cparams,
                    )
                    .unwrap();
                    w.update_chunk(0, c0).unwrap();
                    w
                };
                w.set_vlmetalayer("gen", next.to_string().as_bytes())
                    .unwrap();
                drop(frame);
                if mode == "file" {
                    w.write_file(path, Durability::None).unwrap();
                } else {
                    w.write_sparse(path, Durability::None).unwrap();
                }
                testkit::kill_child_step_done();
            }
            _ => {
                // Streamed: each round rewrites the whole frame through a FrameFileWriter.
                for n in [3u32, 7] {
                    let mut s = if mode == "stream-sparse" {
                        FrameFileWriter::create_sparse(path, params(), &[], Durability::None)
                            .unwrap()
                    } else {
                        FrameFileWriter::create(path, params(), &[], Durability::None).unwrap()
                    };
                    s.append_data(&[n as u8; CHUNK]).unwrap();
                    for i in 1..=n {
                        s.append_data(&[i as u8; CHUNK]).unwrap();
                    }
                    s.set_vlmetalayer("gen", n.to_string().as_bytes()).unwrap();
                    s.finish().unwrap();
                    testkit::kill_child_step_done();
                }
            }
        }
    }
}

fn run(mode: &str, target: &Path, seed: u64, mut after_kill: impl FnMut() -> Option<u32>) {
    let mut rng = Lcg(seed);
    let mut last = after_kill();
    let mut changed = 0;
    let spec = format!("{mode}:{}", target.display());
    for _ in 0..KILLS {
        run_and_kill("kill::kill_child", ENV, &spec, &mut rng);
        let now = after_kill();
        if now != last {
            changed += 1;
        }
        last = now;
    }
    assert!(
        changed >= KILLS / 4,
        "only {changed} of {KILLS} kills saw new data"
    );
}

#[test]
fn contiguous_file_edits_survive_sigkill() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("f.b2frame");
    generation(0).write_file(&path, Durability::None).unwrap();
    run("file", &path, 11, || {
        let n = check(&Frame::open(&path).unwrap());
        Some(n)
    });
}

#[test]
fn sparse_frame_edits_survive_sigkill() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("s.b2frame");
    generation(0).write_sparse(&root, Durability::None).unwrap();
    run("sparse", &root, 12, || {
        let frame = Frame::open_sparse_with(&root, &blosc2_frame::Limits::default()).unwrap();
        let n = check(&frame);
        Some(n)
    });
}

#[test]
fn streamed_file_is_absent_or_complete_after_sigkill() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("stream.b2frame");
    let mut opened = 0;
    run("stream", &path, 13, || {
        if !path.exists() {
            return None;
        }
        opened += 1;
        let n = check(&Frame::open(&path).unwrap());
        assert!(n == 3 || n == 7, "generation {n}");
        Some(n)
    });
    assert!(opened > 0);
}

#[test]
fn streamed_sparse_frame_is_absent_or_complete_after_sigkill() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("stream-sparse.b2frame");
    let mut opened = 0;
    run("stream-sparse", &root, 14, || {
        if !root.join(blosc2_frame::SPARSE_FRAME_FILE).exists() {
            return None;
        }
        opened += 1;
        let frame = Frame::open_sparse_with(&root, &blosc2_frame::Limits::default()).unwrap();
        let n = check(&frame);
        assert!(n == 3 || n == 7, "generation {n}");
        Some(n)
    });
    assert!(opened > 0);
}
