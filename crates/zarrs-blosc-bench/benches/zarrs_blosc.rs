//! zarrs with blosc-chunk's `blosc` codec against zarrs with its own C-Blosc 1.21 codec
//! (`blosc-src`): whole-array write and read of the same in-memory arrays, interleaved, at
//! zarrs' concurrency target 1 and 2. Before timing, each row checks that both write the same
//! chunk bytes (one thread; C-Blosc 1 runs one thread inside zarrs) and that each codec reads
//! the other's array.
//!
//! `cargo bench -p zarrs-blosc-bench --features c-peer [-- FILTER [REPS]]`
//!
//! Output: a Markdown table, one row per (op, row, threads): compression ratio, median MiB/s
//! of each side and the ratio ours / C (> 1: ours faster).
#![allow(
    missing_docs,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::cast_precision_loss,
    reason = "benchmark harness: fails loudly on a broken setup"
)]

use std::hint::black_box;
use std::sync::Arc;

use zarrs::array::codec::BloscCodec;
use zarrs::array::codec::api::BytesToBytesCodecTraits;
use zarrs::metadata_ext::codec::blosc::BloscCodecConfiguration;
use zarrs_blosc_bench::{array, array_in, interleave, ours, read, rows, stored, write};

const WARMUP: usize = 3;

fn c_codec(row: &zarrs_blosc_bench::Row) -> Arc<dyn BytesToBytesCodecTraits> {
    let config: BloscCodecConfiguration =
        serde_json::from_value(serde_json::to_value(row.configuration()).unwrap()).unwrap();
    Arc::new(BloscCodec::new_with_configuration(&config).unwrap())
}

fn main() {
    // `cargo bench` passes `--bench`; the rest are ours.
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    let filter = args.first().cloned().unwrap_or_default();
    let reps: usize = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(15);
    println!("| op/row/threads | cratio | ours MiB/s | C MiB/s | ours / C |");
    println!("|---|---:|---:|---:|---:|");
    let mut ratios = Vec::new();
    for row in rows() {
        if !row.name().contains(&filter) {
            continue;
        }
        let data = row.data();
        let ours_array = array(&row, ours(&row).unwrap()).unwrap();
        let c_array = array(&row, c_codec(&row)).unwrap();
        // Same metadata, same chunk bytes; each reads the other's chunks.
        assert_eq!(
            serde_json::to_value(ours_array.metadata()).unwrap(),
            serde_json::to_value(c_array.metadata()).unwrap(),
            "{}: metadata",
            row.name()
        );
        write(&ours_array, &data, 1).unwrap();
        write(&c_array, &data, 1).unwrap();
        let (ours_chunks, c_chunks) = (stored(&ours_array).unwrap(), stored(&c_array).unwrap());
        assert_eq!(ours_chunks.len(), 8);
        assert!(ours_chunks == c_chunks, "{}: chunks differ", row.name());
        let cbytes: usize = ours_chunks.values().map(Vec::len).sum();
        let ours_on_c = array_in(&row, ours(&row).unwrap(), c_array.storage()).unwrap();
        let c_on_ours = array_in(&row, c_codec(&row), ours_array.storage()).unwrap();
        assert_eq!(read(&ours_on_c, 1).unwrap(), data);
        assert_eq!(read(&c_on_ours, 1).unwrap(), data);
        let cratio = data.len() as f64 / cbytes as f64;
        let mib = data.len() as f64 / f64::from(1u32 << 20);
        for threads in [1, 2] {
            for op in ["write", "read"] {
                let (t_ours, t_c) = if op == "write" {
                    interleave(
                        WARMUP,
                        reps,
                        || write(&ours_array, black_box(&data), threads).unwrap(),
                        || write(&c_array, black_box(&data), threads).unwrap(),
                    )
                } else {
                    interleave(
                        WARMUP,
                        reps,
                        || {
                            black_box(read(&ours_array, threads).unwrap());
                        },
                        || {
                            black_box(read(&c_array, threads).unwrap());
                        },
                    )
                };
                let ratio = t_c.as_secs_f64() / t_ours.as_secs_f64();
                ratios.push(ratio);
                println!(
                    "| {op}/{}/t{threads} | {cratio:.2} | {:.0} | {:.0} | {ratio:.2}{} |",
                    row.name(),
                    mib / t_ours.as_secs_f64(),
                    mib / t_c.as_secs_f64(),
                    if ratio < 1.0 { " MISS" } else { "" }
                );
            }
        }
    }
    if !ratios.is_empty() {
        let geo = (ratios.iter().map(|r| r.ln()).sum::<f64>() / ratios.len() as f64).exp();
        let below = ratios.iter().filter(|&&r| r < 1.0).count();
        println!(
            "\n{} measurements, {below} below 1.0, geometric mean {geo:.2}",
            ratios.len()
        );
    }
}
