//! dwe-format: open an untrusted `.dwe` file (layout detected, and forced to each layout),
//! decode everything, a vector, a trajectory and `verify`; partial reads must agree with the
//! whole-file decode.
#![no_main]

use dwe_format::{Layout, Limits, OpenOptions, Prefix};
use libfuzzer_sys::fuzz_target;

fn limits() -> Limits {
    let mut l = Limits::default();
    l.max_table_bytes = 16 << 20;
    l.max_timestep_values = 1 << 22;
    l.max_total_values = 1 << 24;
    l
}

fuzz_target!(|data: &[u8]| {
    for layout in [Layout::Block, Layout::Stream] {
        let _ = Prefix::parse(data, layout);
    }
    let base = OpenOptions::new().with_limits(limits());
    for (i, opts) in [
        base,
        base.with_layout(Layout::Block),
        base.with_layout(Layout::Stream),
        base.with_check_integrity(true),
    ]
    .into_iter()
    .enumerate()
    {
        let Ok(f) = opts.open(data) else {
            continue;
        };
        let (t_n, v, k) = (f.num_timesteps(), f.vocab_size(), f.embedding_dim());
        let verified = f.verify().is_ok();
        let _ = f.all_residuals();
        assert!(f.vector(v, 0).is_err() && f.vector(0, t_n).is_err());
        // A "random" word and time step chosen from the input.
        let word = (data.len() as u32).wrapping_mul(2_654_435_761) % v.max(1);
        let t = (data.len() as u32 ^ i as u32) % t_n.max(1);
        let all = f.decode_all();
        let vec = f.vector(word, t);
        let traj = f.trajectory(word);
        let step = f.timestep(t);
        let _ = f.vector_f32(word, t);
        let _ = f.most_related_to_at_t(&[word], t, 3);
        // Without integrity checks a corrupt file may decode differently through the jump table
        // than sequentially (like the reference); a file that verifies must read consistently.
        if let (true, Ok(all)) = (verified, all) {
            let (vu, ku) = (v as usize, k as usize);
            assert_eq!(all.len(), t_n as usize * vu * ku);
            let at = (t as usize * vu + word as usize) * ku;
            if let Ok(vec) = vec {
                assert_eq!(vec.as_slice(), &all[at..at + ku], "vector vs decode_all");
            }
            if let Ok(step) = step {
                let s = t as usize * vu * ku;
                assert_eq!(
                    step.as_slice(),
                    &all[s..s + vu * ku],
                    "timestep vs decode_all"
                );
            }
            if let Ok(traj) = traj {
                assert_eq!(traj.len(), t_n as usize * ku);
            }
        }
    }
});
