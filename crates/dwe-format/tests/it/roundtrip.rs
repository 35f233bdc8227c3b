//! Property tests: random tensors round-trip through both layouts; random bytes never panic;
//! writer errors; atomic file writing; memory-mapped reading.

#![allow(
    clippy::unwrap_used,
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss
)]

use crate::common;

use dwe_format::{
    Dims, Durability, DweFile, Error, Layout, Limits, OpenOptions, WriteLayout, encode, encode_f32,
    quantise, write_file,
};
use proptest::prelude::*;

/// Values from a small alphabet, any i16, or the extremes only.
fn value_strategy() -> impl Strategy<Value = i16> {
    prop_oneof![
        4 => -3i16..=3,
        2 => -300i16..=300,
        1 => any::<i16>(),
        1 => prop::sample::select(vec![i16::MIN, i16::MIN + 1, -1, 0, 1, i16::MAX - 1, i16::MAX]),
    ]
}

fn tensor() -> impl Strategy<Value = (Dims, Vec<i16>)> {
    (2u32..12, 1u32..24, 1u32..7).prop_flat_map(|(t, v, k)| {
        let len = (t * v * k) as usize;
        (
            Just(Dims::new(t, v, k)),
            prop::collection::vec(value_strategy(), len),
        )
    })
}

/// Exact residual check, independent of the crate: does any residual overflow i16?
fn overflows(dims: Dims, x: &[i16]) -> bool {
    let vk = (dims.vocab_size * dims.embedding_dim) as usize;
    let mut stack = vec![(0usize, dims.num_timesteps as usize - 1)];
    while let Some((l, r)) = stack.pop() {
        let m = (l + r) / 2;
        if m == l {
            continue;
        }
        for i in 0..vk {
            let pred = (i32::from(x[l * vk + i]) + i32::from(x[r * vk + i])) / 2;
            if i16::try_from(i32::from(x[m * vk + i]) - pred).is_err() {
                return true;
            }
        }
        stack.push((l, m));
        stack.push((m, r));
    }
    false
}

fn check_file(bytes: &[u8], layout: Layout, dims: Dims, values: &[i16]) {
    let f = DweFile::from_bytes(bytes).unwrap();
    assert_eq!(f.layout(), layout);
    assert_eq!(f.decode_all().unwrap(), values);
    f.verify().unwrap();
    let (t_count, v, k) = (
        dims.num_timesteps,
        dims.vocab_size,
        dims.embedding_dim as usize,
    );
    let vk = v as usize * k;
    for w in [0, v / 2, v - 1] {
        let traj = f.trajectory(w).unwrap();
        for t in 0..t_count {
            let at = t as usize * vk + w as usize * k;
            assert_eq!(&traj[t as usize * k..][..k], &values[at..at + k]);
            assert_eq!(f.vector(w, t).unwrap(), &values[at..at + k]);
        }
    }
    let t = t_count / 2;
    assert_eq!(f.timestep(t).unwrap(), &values[t as usize * vk..][..vk]);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn round_trip_both_layouts((dims, values) in tensor(), j_seed in any::<u32>(), c_seed in any::<u32>(), scale in 0.001f32..10.0) {
        let v = dims.vocab_size;
        let jump_interval = 1 + j_seed % v;
        let divisors: Vec<u32> = (1..=v).filter(|d| v % d == 0).collect();
        let chunk_size = divisors[c_seed as usize % divisors.len()];
        let stream = encode(&values, dims, scale, WriteLayout::Stream { jump_interval });
        let block = encode(&values, dims, scale, WriteLayout::Block { chunk_size });
        if overflows(dims, &values) {
            let is_overflow = matches!(stream, Err(Error::ResidualOverflow { .. }));
            prop_assert!(is_overflow, "stream: {:?}", stream.map(|b| b.len()));
            let is_overflow = matches!(block, Err(Error::ResidualOverflow { .. }));
            prop_assert!(is_overflow, "block: {:?}", block.map(|b| b.len()));
        } else {
            let (stream, block) = (stream.unwrap(), block.unwrap());
            check_file(&stream, Layout::Stream, dims, &values);
            check_file(&block, Layout::Block, dims, &values);
            prop_assert_eq!(DweFile::from_bytes(&stream[..]).unwrap().scale_factor(), scale);
        }
    }

    #[test]
    fn random_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..600)) {
        let opts = OpenOptions::new().with_limits(Limits::default().with_max_timestep_values(1 << 14).with_max_total_values(1 << 16));
        for o in [opts, opts.with_layout(Layout::Stream), opts.with_layout(Layout::Block)] {
            if let Ok(f) = o.open(&bytes[..]) {
                let _ = f.decode_all();
                let _ = f.verify();
            }
        }
    }

    #[test]
    fn random_bodies_behind_a_valid_header(
        t in 2u32..6, v in 1u32..9, k in 1u32..5, interval in 1u32..9, word4 in 11u32..40,
        body in prop::collection::vec(any::<u8>(), 0..400),
    ) {
        let mut bytes = Vec::new();
        let words = 10 + body.len() / 4;
        for w in [0x6577_6400u32, 1, 0, words as u32, word4, t, v, k, interval, 0x3f80_0000] {
            bytes.extend_from_slice(&w.to_le_bytes());
        }
        bytes.extend_from_slice(&body[..body.len() / 4 * 4]);
        for o in [OpenOptions::new().with_layout(Layout::Stream), OpenOptions::new().with_layout(Layout::Block), OpenOptions::new()] {
            if let Ok(f) = o.open(&bytes[..]) {
                let _ = f.decode_all();
                let _ = f.verify();
                let _ = f.vector(v - 1, t / 2);
                let _ = f.most_related_to_at_t(&[0], t - 1, 2);
            }
        }
    }
}

#[test]
fn extreme_edge_tensors() {
    // T = 2, odd T, V not divisible by J, constant tensors (degenerate one-symbol models).
    for (dims, fill) in [
        (Dims::new(2, 5, 3), 0i16),
        (Dims::new(3, 7, 1), i16::MIN),
        (Dims::new(7, 10, 2), i16::MAX),
        (Dims::new(9, 11, 4), -1),
    ] {
        let values = vec![fill; dims.len().unwrap()];
        let s = encode(&values, dims, 1.0, WriteLayout::Stream { jump_interval: 3 }).unwrap();
        check_file(&s, Layout::Stream, dims, &values);
        let b = encode(&values, dims, 1.0, WriteLayout::Block { chunk_size: 1 }).unwrap();
        check_file(&b, Layout::Block, dims, &values);
    }
}

#[test]
fn writer_errors() {
    let dims = Dims::new(3, 1, 1);
    // x0 = x2 = -32768, x1 = 32767: residual 65535.
    let err = encode(
        &[-32768, 32767, -32768],
        dims,
        1.0,
        WriteLayout::Stream { jump_interval: 1 },
    )
    .unwrap_err();
    assert!(
        matches!(
            err,
            Error::ResidualOverflow {
                timestep: 1,
                word: 0,
                component: 0,
                value: 65535
            }
        ),
        "{err}"
    );
    // More than 4096 distinct residuals in one time step.
    let dims = Dims::new(2, 1, 5000);
    let values: Vec<i16> = (0..10_000).map(|i| (i % 5000) as i16).collect();
    let err = encode(&values, dims, 1.0, WriteLayout::Block { chunk_size: 1 }).unwrap_err();
    assert!(
        matches!(
            err,
            Error::TooManySymbols {
                timestep: 0,
                count: 5000
            }
        ),
        "{err}"
    );
    // Exactly 4096 distinct residuals is fine.
    let dims = Dims::new(2, 1, 4096);
    let values: Vec<i16> = (0..8192).map(|i| (i % 4096) as i16 - 2048).collect();
    let bytes = encode(&values, dims, 1.0, WriteLayout::Stream { jump_interval: 1 }).unwrap();
    assert_eq!(
        DweFile::from_bytes(&bytes[..])
            .unwrap()
            .decode_all()
            .unwrap(),
        values
    );
    // Parameter errors.
    let dims = Dims::new(2, 4, 1);
    let v = [0i16; 8];
    for layout in [
        WriteLayout::Block { chunk_size: 3 },
        WriteLayout::Block { chunk_size: 0 },
        WriteLayout::Stream { jump_interval: 0 },
        WriteLayout::Stream { jump_interval: 5 },
    ] {
        assert!(matches!(
            encode(&v, dims, 1.0, layout),
            Err(Error::InvalidParameter { .. })
        ));
    }
    let s = WriteLayout::Stream { jump_interval: 1 };
    assert!(matches!(
        encode(&v[..7], dims, 1.0, s),
        Err(Error::InvalidParameter { .. })
    ));
    assert!(matches!(
        encode(&[0; 4], Dims::new(1, 4, 1), 1.0, s),
        Err(Error::InvalidParameter { .. })
    ));
}

#[test]
fn f32_to_file_in_one_call() {
    let dims = Dims::new(3, 2, 2);
    let floats = [
        0.1f32, -0.2, 0.3, 0.0, 0.11, -0.19, 0.33, 0.02, 0.12, -0.22, 0.29, 0.01,
    ];
    let bytes = encode_f32(
        &floats,
        dims,
        0.01,
        WriteLayout::Stream { jump_interval: 1 },
    )
    .unwrap();
    let f = DweFile::from_bytes(&bytes[..]).unwrap();
    assert_eq!(f.decode_all().unwrap(), quantise(&floats, 0.01).unwrap());
    assert_eq!(f.vector(0, 0).unwrap(), [10, -20]);
    let back = f.vector_f32(0, 0).unwrap();
    assert_eq!(back, [10.0f32 * 0.01, -20.0f32 * 0.01]);
}

#[test]
fn write_file_is_atomic_and_replaces() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("emb.dwe");
    std::fs::write(&path, b"old contents").unwrap();
    let dims = Dims::new(2, 3, 2);
    let values = [1i16, -1, 0, 0, 2, 2, 1, 0, 0, 1, 2, 3];
    let layout = WriteLayout::Block { chunk_size: 3 };
    write_file(&path, &values, dims, 0.25, layout, Durability::Fsync).unwrap();
    assert_eq!(
        std::fs::read(&path).unwrap(),
        encode(&values, dims, 0.25, layout).unwrap()
    );
    write_file(
        &path,
        &values,
        dims,
        0.5,
        WriteLayout::Stream { jump_interval: 2 },
        Durability::None,
    )
    .unwrap();
    let f = OpenOptions::new().read_file(&path).unwrap();
    assert_eq!(f.layout(), Layout::Stream);
    assert_eq!(f.decode_all().unwrap(), values);
    // No temporary files left behind.
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    // A failed encode leaves the old file untouched.
    assert!(write_file(&path, &values[..5], dims, 0.5, layout, Durability::None).is_err());
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    assert_eq!(
        OpenOptions::new()
            .read_file(&path)
            .unwrap()
            .decode_all()
            .unwrap(),
        values
    );
}

#[test]
#[allow(
    unsafe_code,
    reason = "tests the unsafe `map_file` on read-only fixtures"
)]
fn memory_mapped_reading_matches() {
    for f in common::fixtures() {
        for path in [&f.stream, &f.block] {
            // SAFETY: the fixture files are read-only test data nobody modifies during the test.
            let mapped = unsafe { OpenOptions::new().map_file(path) }.unwrap();
            assert_eq!(mapped.decode_all().unwrap(), f.values());
        }
    }
}

#[test]
fn read_file_respects_the_size_limit() {
    let path = common::testdata().join("stream/wide_5_64_32_j10.dwe");
    let small = Limits::default().with_max_file_bytes(1000);
    let err = OpenOptions::new()
        .with_limits(small)
        .read_file(path)
        .unwrap_err();
    assert!(matches!(err, Error::LimitExceeded { .. }));
}

/// `encode_with_progress` reports 1, 2, …, 2T out of 2T (models, then encoded time steps) and
/// writes exactly what `encode` writes; `write_file_with_progress` likewise.
#[test]
fn progress_counts_every_time_step_twice_and_changes_nothing() {
    let dims = Dims::new(7, 12, 5);
    let values: Vec<i16> = (0..7 * 12 * 5)
        .map(|i| ((i * 37) % 23 - 11) as i16)
        .collect();
    for layout in [
        WriteLayout::Block { chunk_size: 4 },
        WriteLayout::Stream { jump_interval: 5 },
    ] {
        let mut seen = Vec::new();
        let with = dwe_format::encode_with_progress(&values, dims, 0.01, layout, &mut |d, t| {
            seen.push((d, t));
        })
        .unwrap();
        assert_eq!(with, encode(&values, dims, 0.01, layout).unwrap());
        let expected: Vec<(u64, u64)> = (1..=14).map(|d| (d, 14)).collect();
        assert_eq!(seen, expected);

        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.dwe");
        let mut calls = 0;
        dwe_format::write_file_with_progress(
            &path,
            &values,
            dims,
            0.01,
            layout,
            Durability::None,
            &mut |_, _| {
                calls += 1;
            },
        )
        .unwrap();
        assert_eq!(calls, 14);
        assert_eq!(std::fs::read(&path).unwrap(), with);
    }
}
