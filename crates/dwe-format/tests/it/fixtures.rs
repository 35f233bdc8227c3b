//! Every reference-made fixture in `testdata/dwe/` (copied unchanged from the shared set):
//! decoding, byte-identical re-encoding, manifest values and query outputs from EXPECTED.md.

// Casts below are on fixture sizes and indices far below every type limit; helpers unwrap.
#![allow(
    clippy::unwrap_used,
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    clippy::cast_possible_wrap
)]

use crate::common;

use common::{Expected, expected_queries, fixtures, ints_after, section};
use dwe_format::{DweFile, Layout, OpenOptions, WriteLayout, encode, residuals};

fn open(path: &std::path::Path) -> DweFile<Vec<u8>> {
    OpenOptions::new().read_file(path).unwrap()
}

#[test]
fn layouts_are_detected() {
    for f in fixtures() {
        assert_eq!(open(&f.stream).layout(), Layout::Stream, "{}", f.name);
        assert_eq!(open(&f.block).layout(), Layout::Block, "{}", f.name);
    }
}

#[test]
fn explicit_layout_choice_and_wrong_choice() {
    for f in fixtures() {
        let s = std::fs::read(&f.stream).unwrap();
        let b = std::fs::read(&f.block).unwrap();
        let stream = OpenOptions::new().with_layout(Layout::Stream);
        let block = OpenOptions::new().with_layout(Layout::Block);
        assert_eq!(
            stream.open(&s[..]).unwrap().decode_all().unwrap(),
            f.values()
        );
        assert_eq!(
            block.open(&b[..]).unwrap().decode_all().unwrap(),
            f.values()
        );
        assert!(
            stream.open(&b[..]).is_err(),
            "{} block read as stream",
            f.name
        );
        assert!(
            block.open(&s[..]).is_err(),
            "{} stream read as block",
            f.name
        );
    }
}

#[test]
fn every_file_decodes_to_its_inputs() {
    for f in fixtures() {
        let values = f.values();
        let diffs = f.diffs();
        for path in [&f.stream, &f.block] {
            let file = open(path);
            assert_eq!(file.all_residuals().unwrap(), diffs, "{}", path.display());
            assert_eq!(file.decode_all().unwrap(), values, "{}", path.display());
            file.verify().unwrap();
            let checked = OpenOptions::new()
                .with_check_integrity(true)
                .read_file(path)
                .unwrap();
            assert_eq!(checked.decode_all().unwrap(), values);
        }
    }
}

#[test]
fn random_access_matches_inputs() {
    for f in fixtures() {
        let values = f.values();
        let (t_count, v, k) = (
            f.dims.num_timesteps as usize,
            f.dims.vocab_size as usize,
            f.dims.embedding_dim as usize,
        );
        let diffs = f.diffs();
        for path in [&f.stream, &f.block] {
            let file = open(path);
            for t in 0..t_count {
                let step = &values[t * v * k..(t + 1) * v * k];
                assert_eq!(file.timestep(t as u32).unwrap(), step, "{} t={t}", f.name);
                assert_eq!(
                    file.residuals(t as u32).unwrap(),
                    &diffs[t * v * k..(t + 1) * v * k]
                );
                let f32s = file.timestep_f32(t as u32).unwrap();
                let s = file.scale_factor();
                assert!(
                    f32s.iter()
                        .zip(step)
                        .all(|(&a, &b)| a.to_bits() == (f32::from(b) * s).to_bits())
                );
            }
            for w in 0..v {
                let traj = file.trajectory(w as u32).unwrap();
                for t in 0..t_count {
                    let want = &values[(t * v + w) * k..(t * v + w + 1) * k];
                    assert_eq!(&traj[t * k..(t + 1) * k], want, "{} word {w} t={t}", f.name);
                    assert_eq!(file.vector(w as u32, t as u32).unwrap(), want);
                    assert_eq!(
                        file.residual_vector(w as u32, t as u32).unwrap(),
                        &diffs[(t * v + w) * k..(t * v + w + 1) * k]
                    );
                }
            }
            assert!(file.vector(v as u32, 0).is_err());
            assert!(file.timestep(t_count as u32).is_err());
        }
    }
}

#[cfg(feature = "parallel")]
#[test]
fn parallel_decode_matches() {
    for f in fixtures() {
        for path in [&f.stream, &f.block] {
            assert_eq!(open(path).decode_all_parallel().unwrap(), f.values());
        }
    }
}

#[test]
fn writer_is_byte_identical_to_reference() {
    for f in fixtures() {
        let values = f.values();
        let stream = std::fs::read(&f.stream).unwrap();
        let block = std::fs::read(&f.block).unwrap();
        let scale = DweFile::from_bytes(&stream[..]).unwrap().scale_factor();
        let ours = encode(
            &values,
            f.dims,
            scale,
            WriteLayout::Stream {
                jump_interval: f.jump_interval,
            },
        )
        .unwrap();
        assert!(ours == stream, "{}: stream bytes differ", f.name);
        let ours = encode(
            &values,
            f.dims,
            scale,
            WriteLayout::Block {
                chunk_size: f.chunk_size,
            },
        )
        .unwrap();
        assert!(ours == block, "{}: block bytes differ", f.name);
        assert_eq!(residuals(&values, f.dims).unwrap(), f.diffs());
    }
}

#[test]
fn manifest_header_models_and_sums() {
    for f in fixtures() {
        let lines = section(&f.name);
        let stream = open(&f.stream);
        let block = open(&f.block);
        let find = |prefix: &str| {
            lines
                .iter()
                .find(|l| l.trim_start().starts_with(prefix))
                .unwrap()
                .clone()
        };
        // Header lines: "- header: magic 0x65776400, major 1, minor 0, file_size N, ..."
        let headers: Vec<&String> = lines
            .iter()
            .filter(|l| l.contains("- header: magic"))
            .collect();
        for (h, file) in headers.iter().zip([&stream, &block]) {
            let fs = ints_after(h, "file_size ")[0];
            assert_eq!(i64::from(file.header().file_size), fs);
            let word4 = if file.layout() == Layout::Stream {
                ints_after(h, "jump_table_address ")[0]
            } else {
                ints_after(h, "meta_size ")[0]
            };
            assert_eq!(i64::from(file.header().section_address), word4);
            let bits = h.split("scale_factor bits 0x").nth(1).unwrap();
            let bits = u32::from_str_radix(&bits[..8], 16).unwrap();
            assert_eq!(file.scale_factor().to_bits(), bits);
        }
        // Model sizes.
        let ns = ints_after(&find("- entropy models (num_symbols"), "time step): ");
        for file in [&stream, &block] {
            let got: Vec<i64> = (0..f.dims.num_timesteps)
                .map(|t| file.model(t).unwrap().symbols().len() as i64)
                .collect();
            assert_eq!(got, ns, "{}", f.name);
        }
        // Per-time-step sums.
        let values = stream.decode_all().unwrap();
        let res = stream.all_residuals().unwrap();
        let vk = (f.dims.vocab_size * f.dims.embedding_dim) as usize;
        let k = f.dims.embedding_dim as usize;
        for t in 0..f.dims.num_timesteps as usize {
            let line = lines
                .iter()
                .find(|l| l.trim_start().starts_with(&format!("- t={t}: ")) && l.contains(" | "))
                .unwrap();
            let want = ints_after(line, ": ");
            let r = &res[t * vk..(t + 1) * vk];
            let x = &values[t * vk..(t + 1) * vk];
            let sum_r: i64 = r.iter().map(|&v| i64::from(v)).sum();
            let check = r.iter().enumerate().fold(0i32, |acc, (i, &v)| {
                acc.wrapping_add(i32::from(v).wrapping_mul((i % k) as i32))
            });
            let sum_x: i64 = x.iter().map(|&v| i64::from(v)).sum();
            let sq: i64 = x.iter().map(|&v| i64::from(v) * i64::from(v)).sum();
            assert_eq!(
                vec![sum_r, i64::from(check), sum_x, sq],
                want,
                "{} t={t}",
                f.name
            );
        }
        // Stream jump rows of t=0 (hex states).
        let rows_line = find("- jump table rows");
        let pairs: Vec<(usize, u32)> = rows_line
            .split('(')
            .skip(2)
            .map(|p| {
                let (o, s) = p.split_once(", 0x").unwrap();
                (
                    o.parse().unwrap(),
                    u32::from_str_radix(&s[..8], 16).unwrap(),
                )
            })
            .collect();
        let bytes = stream.as_bytes();
        let jta = stream.header().section_address as usize * 4;
        for (i, (o, s)) in pairs.iter().enumerate() {
            let at = jta + 8 * i;
            let off = u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap()) as usize;
            let st = u32::from_le_bytes(bytes[at + 4..at + 8].try_into().unwrap());
            assert_eq!((off, st), (*o, *s), "{} row {i}", f.name);
        }
        // Block timestep_addrs.
        let addrs = ints_after(&find("- timestep_addrs: "), "timestep_addrs: ");
        let b = block.as_bytes();
        for (t, a) in addrs.iter().enumerate() {
            let at = 40 + 4 * t;
            assert_eq!(
                i64::from(u32::from_le_bytes(b[at..at + 4].try_into().unwrap())),
                *a
            );
        }
    }
}

fn words(e: &Expected, name: &str) -> Vec<u32> {
    e.arg(name)
        .iter()
        .map(|&w| u32::try_from(w).unwrap())
        .collect()
}

#[test]
fn reference_queries_are_reproduced_exactly() {
    let all = fixtures();
    let expected = expected_queries();
    assert!(
        expected.len() >= 30,
        "parsed only {} query lines",
        expected.len()
    );
    for e in &expected {
        let f = all.iter().find(|f| f.name == e.dataset).unwrap();
        for path in [&f.stream, &f.block] {
            let file = open(path);
            match e.call.as_str() {
                "pairwise_trajectories" => {
                    let got = file
                        .pairwise_trajectories(&words(e, "words1"), &words(e, "words2"))
                        .unwrap();
                    let bits: Vec<u32> = got.iter().map(|v| v.to_bits()).collect();
                    assert_eq!(bits, e.bits, "{} {:?}", e.dataset, e.args);
                    let dec: Vec<f32> = e.values.iter().map(|v| v.parse().unwrap()).collect();
                    assert_eq!(got, dec);
                }
                "most_related_to_at_t" => {
                    let t = u32::try_from(e.arg("t")[0]).unwrap();
                    let amt = usize::try_from(e.arg("amt")[0]).unwrap();
                    let got = file
                        .most_related_to_at_t(&words(e, "target_words"), t, amt)
                        .unwrap();
                    let want: Vec<u32> = e.values.iter().map(|v| v.parse().unwrap()).collect();
                    assert_eq!(got, want, "{} {:?}", e.dataset, e.args);
                }
                "largest_changes_wrt" => {
                    let a = |n: &str| usize::try_from(e.arg(n)[0]).unwrap();
                    let got = file
                        .largest_changes_wrt(
                            u32::try_from(e.arg("target_word")[0]).unwrap(),
                            a("amt"),
                            a("min_increasing"),
                            a("min_decreasing"),
                        )
                        .unwrap();
                    let want: Vec<u32> = e.values.iter().map(|v| v.parse().unwrap()).collect();
                    assert_eq!(got, want, "{} {:?}", e.dataset, e.args);
                }
                other => panic!("unknown call {other}"),
            }
        }
    }
}

/// The upstream unit tests' own expectations (EXPECTED.md, last section), on the
/// `random_6_100_16` stream file.
#[test]
fn upstream_unit_test_expectations() {
    let text = std::fs::read_to_string(common::testdata().join("EXPECTED.md")).unwrap();
    let tail = &text[text
        .find("## Upstream's own unit-test expectations")
        .unwrap()..];
    let file = open(&common::testdata().join("stream/random_6_100_16_j20.dwe"));
    // Exact f32 recomputation (9 significant digits round-trip f32 exactly).
    let exact = tail
        .split("Recomputed exactly in f32 with the formula above, the values are")
        .nth(1)
        .unwrap();
    let exact = &exact[..exact.find(".\n").unwrap()];
    let want: Vec<f32> = exact
        .split(|c: char| c == ',' || c.is_whitespace())
        .filter(|x| !x.is_empty())
        .map(|x| x.parse().unwrap())
        .collect();
    assert_eq!(want.len(), 18);
    let got = file
        .pairwise_trajectories(&[3, 50, 1], &[70, 3, 12])
        .unwrap();
    assert_eq!(got, want);
    for t in 0..6u32 {
        let line = tail
            .lines()
            .find(|l| l.trim_start().starts_with(&format!("- t={t}: [")))
            .unwrap();
        let want: Vec<u32> = ints_after(line, ": ").iter().map(|&v| v as u32).collect();
        assert_eq!(want.len(), 30);
        assert_eq!(
            file.most_related_to_at_t(&[3, 34, 4], t, 10).unwrap(),
            want,
            "t={t}"
        );
    }
}

#[test]
fn small_stream_fixture_model_header_and_first_vector() {
    // The reference-made small_2_4_4 stream file (J=2); inputs/small_2_4_4.i16 starts 0 0 1 -1.
    let file = open(&common::testdata().join("stream/small_2_4_4_j2.dwe"));
    let m = file.model(0).unwrap();
    assert_eq!(m.symbols(), [0, 1, -3, -1, 2, 5]);
    assert_eq!(m.frequencies(), [2560, 512, 256, 256, 256, 256]);
    assert_eq!(file.header().section_address, 22);
    assert_eq!(file.residual_vector(0, 0).unwrap(), [0, 0, 1, -1]);
}
