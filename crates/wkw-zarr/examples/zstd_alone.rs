//! The compressor alone: how long zstd takes to encode every block of one WKW file, with the
//! blocks already decoded in memory. This is the floor under a WKW → Zarr3 conversion with the
//! `zstd` inner codec (what `scifmt convert` and webknossos-libs write): no reading, no LZ4
//! decoding, no shard assembly, no writing. `cargo xtask convert-bench` runs it next to the
//! conversions.
//!
//! ```text
//! cargo run --release -p wkw-zarr --example zstd_alone -- FILE.wkw [--threads N] [--level L]
//! ```
//!
//! Prints one JSON line: `blocks`, `bytes_in`, `bytes_out`, `threads`, `level` and `seconds`
//! (wall time of the compression phase only). The encoder is set up as the conversion sets up
//! its own: one `ZSTD_CCtx` per thread, reused, with the level and the content checksum, one
//! `ZSTD_compress2` per block. Threads take the blocks in turn (block `k` to thread
//! `k mod N`).

use std::time::Instant;

use wkw::{BlockReader, Limits};
use zstd_safe::{CCtx, CParameter};

fn main() {
    if let Err(e) = run() {
        eprintln!("zstd_alone: {e}");
        std::process::exit(2);
    }
}

fn run() -> Result<(), String> {
    let usage = "usage: zstd_alone FILE.wkw [--threads N] [--level L]";
    let mut args = std::env::args().skip(1);
    let mut file = None;
    let mut threads = 2usize;
    let mut level = 5i32;
    while let Some(a) = args.next() {
        match a.as_str() {
            "--threads" => {
                threads = args
                    .next()
                    .and_then(|v| v.parse().ok())
                    .filter(|&n| n > 0)
                    .ok_or(usage)?;
            }
            "--level" => {
                level = args.next().and_then(|v| v.parse().ok()).ok_or(usage)?;
            }
            _ if file.is_none() => file = Some(a),
            _ => return Err(usage.into()),
        }
    }
    let file = file.ok_or(usage)?;

    let reader = BlockReader::open(&file, &Limits::default()).map_err(|e| e.to_string())?;
    let block_bytes = usize::try_from(reader.header().block_bytes()).map_err(|e| e.to_string())?;
    let count = reader.block_count();
    let total = usize::try_from(count)
        .ok()
        .and_then(|n| n.checked_mul(block_bytes))
        .ok_or("the file's blocks do not fit in memory")?;
    let mut raw = vec![0u8; total];
    let mut scratch = Vec::new();
    for (k, out) in (0..count).zip(raw.chunks_exact_mut(block_bytes)) {
        reader
            .read_block(k, &mut scratch, out)
            .map_err(|e| e.to_string())?;
    }
    let blocks: Vec<&[u8]> = raw.chunks_exact(block_bytes).collect();

    let start = Instant::now();
    let bytes_out = std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads)
            .map(|t| {
                let blocks = &blocks;
                s.spawn(move || -> Result<usize, String> {
                    let name = |code| zstd_safe::get_error_name(code).to_owned();
                    let mut cctx = CCtx::create();
                    cctx.set_parameter(CParameter::CompressionLevel(level))
                        .map_err(name)?;
                    cctx.set_parameter(CParameter::ChecksumFlag(true))
                        .map_err(name)?;
                    let mut out = Vec::with_capacity(zstd_safe::compress_bound(block_bytes));
                    let mut written = 0;
                    for block in blocks.iter().skip(t).step_by(threads) {
                        out.clear();
                        written += cctx.compress2(&mut out, block).map_err(name)?;
                    }
                    Ok(written)
                })
            })
            .collect();
        workers
            .into_iter()
            .map(|w| w.join().map_err(|_| "a worker panicked".to_owned())?)
            .sum::<Result<usize, String>>()
    })?;
    let seconds = start.elapsed().as_secs_f64();
    println!(
        "{{\"blocks\":{count},\"bytes_in\":{total},\"bytes_out\":{bytes_out},\"threads\":{threads},\"level\":{level},\"seconds\":{seconds:.3}}}"
    );
    Ok(())
}
