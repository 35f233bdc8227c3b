//! Replays the kept fuzz findings and hand-made hostile files in
//! `testdata/regressions/dwe-format/dwe_read/` through the reader entry points the `dwe_read`
//! fuzz target drives (detected and forced layouts, whole-file and partial decodes, `verify`):
//! each must give `Ok` or a typed `Err`, never a panic, and partial reads must agree with the
//! whole-file decode.

#![allow(
    clippy::unwrap_used,
    clippy::cast_possible_truncation,
    reason = "a failed unwrap is a failed test; test sizes are small"
)]

use dwe_format::{Layout, Limits, OpenOptions, Prefix};

fn read(data: &[u8]) {
    let limits = Limits::default()
        .with_max_table_bytes(16 << 20)
        .with_max_timestep_values(1 << 22)
        .with_max_total_values(1 << 24);
    for layout in [Layout::Block, Layout::Stream] {
        let _ = Prefix::parse(data, layout);
    }
    let base = OpenOptions::new().with_limits(limits);
    for opts in [
        base,
        base.with_layout(Layout::Block),
        base.with_layout(Layout::Stream),
        base.with_check_integrity(true),
    ] {
        let f = match opts.open(data) {
            Ok(f) => f,
            Err(e) => {
                assert!(!e.to_string().is_empty());
                continue;
            }
        };
        let (t_n, v, k) = (f.num_timesteps(), f.vocab_size(), f.embedding_dim());
        let verified = f.verify().is_ok();
        assert!(f.vector(v, 0).is_err() && f.vector(0, t_n).is_err());
        let (word, t) = (v / 2, t_n / 2);
        // A corrupt file may decode differently through the jump table than sequentially
        // (as in the reference); one that verifies must read consistently.
        if let (true, Ok(all), Ok(vec)) = (verified, f.decode_all(), f.vector(word, t)) {
            let at = ((t * v + word) * k) as usize;
            assert_eq!(vec.as_slice(), &all[at..at + k as usize]);
        }
        let _ = f.trajectory(word);
    }
}

#[test]
fn dwe_read_regressions_replay() {
    testkit::replay_all("dwe-format", "dwe_read", read);
}
