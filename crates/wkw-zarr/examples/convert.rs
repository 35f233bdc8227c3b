//! `cargo run --release --example convert -- SRC DST zarr3|wkw [THREADS]`: converts and prints
//! the summary and the seconds taken (what the benchmark against `webknossos copy-dataset`
//! runs).

use std::path::Path;
use std::time::Instant;

use wkw_zarr::{ConvertOptions, Format, convert};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [src, dst, to, rest @ ..] = &args[..] else {
        return Err("usage: convert SRC DST zarr3|wkw [THREADS]".into());
    };
    let to = if to == "wkw" {
        Format::Wkw
    } else {
        Format::Zarr3
    };
    let threads = rest.first().map_or(Ok(0), |t| t.parse())?;
    let start = Instant::now();
    let options = ConvertOptions::default().with_threads(threads);
    let summary = convert(Path::new(src), Path::new(dst), to, &options, &|_| {})?;
    println!("{summary:?} seconds={:.2}", start.elapsed().as_secs_f64());
    Ok(())
}
