//! `scifmt convert SRC DST --to zarr3|wkw`: webKNOSSOS datasets, WKW mags and Zarr v3 arrays,
//! converted block by block by `wkw-zarr`.

use std::path::PathBuf;
use std::time::Instant;

use blosc_chunk::{Blocksize, BloscShuffle};
use clap::{Args, ValueEnum};
use serde_json::{Map, Value, json};
use wkw_zarr::{
    Cancel, ConvertOptions, Durability, Existing, Format, Location, Progress, ZarrCodec,
};

use crate::fail::{CliResult, Fail, describe};
use crate::inout::need_path;
use crate::print::{JsonFlag, emit, emit_json, fields_text};
use crate::progress::progress;
use crate::remote;

/// The format `--to` names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum To {
    /// Sharded Zarr v3 (a webKNOSSOS `zarr3` dataset, or one array per WKW mag).
    Zarr3,
    /// WKW (a webKNOSSOS `wkw` dataset, or one mag per Zarr array).
    Wkw,
}

/// The Zarr inner-chunk compressor `--codec` names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Codec {
    /// zstd (level `--zstd-level`) for compressed WKW files, none for raw ones (what
    /// `webknossos copy-dataset` does).
    Auto,
    /// zstd at `--zstd-level`, with checksum.
    Zstd,
    /// No compressor.
    None,
    /// Blosc (Blosc1 chunks as C-Blosc 1.21 writes them): --blosc-cname, --clevel, --shuffle,
    /// --typesize, --blocksize.
    Blosc,
}

/// WKW block types of `--block-type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Block {
    /// Uncompressed blocks.
    Raw,
    /// LZ4 blocks.
    Lz4,
    /// LZ4HC (level 9) blocks.
    Lz4hc,
}

/// `scifmt convert`.
#[derive(Debug, Args)]
pub(crate) struct ConvertArgs {
    /// Source: a webKNOSSOS dataset root (datasource-properties.json), a WKW mag directory
    /// (header.wkw) or a Zarr v3 array directory (zarr.json); a path or a URL (s3://, gs://,
    /// az://, http(s)://, file://) of that directory.
    src: PathBuf,
    /// Target directory or URL prefix (refused if anything is there, unless --overwrite or
    /// --resume).
    dst: PathBuf,
    /// The format to write.
    #[arg(long, value_enum, ignore_case = true)]
    to: To,
    /// Compressor of the Zarr inner chunks (only with --to zarr3; default auto).
    #[arg(long, value_enum, ignore_case = true)]
    codec: Option<Codec>,
    /// zstd level (only with --to zarr3 and --codec zstd or auto; default 5).
    #[arg(long, allow_negative_numbers = true, value_parser = clap::value_parser!(i32).range(-131072..=22))]
    zstd_level: Option<i32>,
    /// Compressor inside the Blosc chunks (with --codec blosc; zarr-python's default: zstd;
    /// case-insensitive).
    #[arg(long, value_name = "CNAME", value_parser = crate::args::cname_parser())]
    blosc_cname: Option<blosc_chunk::Codec>,
    /// Blosc compression level 0-9 (with --codec blosc; default 5).
    #[arg(long, value_parser = clap::value_parser!(u8).range(0..=9))]
    clevel: Option<u8>,
    /// Blosc filter (with --codec blosc; default auto: bitshuffle for 1-byte voxels, shuffle
    /// for wider ones, as zarr-python chooses; case-insensitive).
    #[arg(long, value_parser = crate::args::shuffle_parser())]
    shuffle: Option<BloscShuffle>,
    /// Blosc item size in bytes, 1-255 (with --codec blosc; default: the voxel type's size).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u8).range(1..=255))]
    typesize: Option<u8>,
    /// Blosc block size in bytes, 0 = automatic (with --codec blosc; default 0).
    #[arg(long, value_name = "N", value_parser = crate::args::parse_blocksize)]
    blocksize: Option<Blocksize>,
    /// Block type of the WKW files (only with --to wkw; default lz4).
    #[arg(long, value_enum, ignore_case = true)]
    block_type: Option<Block>,
    /// Worker threads (0: every core).
    #[arg(long, visible_alias = "threads", default_value_t = 0)]
    jobs: usize,
    /// Compare source and target block by block afterwards, decoded (paths or URLs; exit 1 on
    /// differences, each named with its voxel).
    #[arg(long)]
    verify: bool,
    /// Replace an existing target: the new one is built beside it (hidden `.NAME.scifmt-overwrite`)
    /// and replaces it only when complete, so an interruption leaves the old target (and --resume
    /// finishes the new one). Never allowed when DST is SRC, inside it or around it.
    #[arg(long, conflicts_with = "resume")]
    overwrite: bool,
    /// Continue an interrupted conversion into the existing target (same options), keeping
    /// every shard or file already complete.
    #[arg(long)]
    resume: bool,
    /// fsync every written local file before it is renamed into place.
    #[arg(long)]
    fsync: bool,
    #[command(flatten)]
    json: JsonFlag,
}

/// A local path, or a URL's store and prefix (configured from the `AWS_*`, `GOOGLE_*`,
/// `AZURE_*` environment like every command; named without credentials).
pub(crate) fn location(path: &std::path::Path) -> CliResult<Location> {
    Ok(match remote::parse_url(path)? {
        Some(url) => Location::Store(url),
        None => Location::Local(path.to_path_buf()),
    })
}

/// The exit status after Ctrl-C (128 + SIGINT, as shells report it).
pub(crate) const INTERRUPTED: u8 = 130;

/// A flag Ctrl-C (SIGINT) raises: the conversion stops at its next batch of blocks, keeping
/// what is complete. A second Ctrl-C ends the process at once.
pub(crate) fn interrupt_cancels() -> Cancel {
    let cancel = Cancel::new();
    let flag = cancel.clone();
    // Without a handler (one was set already) Ctrl-C ends the process as before: every file
    // is still replaced atomically, so that is safe too.
    let _ = ctrlc::set_handler(move || {
        if flag.is_cancelled() {
            std::process::exit(i32::from(INTERRUPTED));
        }
        flag.cancel();
    });
    cancel
}

/// The message of a failed conversion, in the command's words (its flags).
fn convert_failure(e: &wkw_zarr::Error) -> Fail {
    match e {
        wkw_zarr::Error::TargetExists {
            path, files, bytes, ..
        } => Fail::usage(format!(
            "target exists: {} ({files} files, {}): add --overwrite to replace it (the new target is built beside it and replaces it, everything in it now deleted, only when complete), or --resume to continue an interrupted conversion into it",
            crate::names::display_name(path),
            crate::guard::size_text(*bytes)
        )),
        wkw_zarr::Error::Cancelled => Fail {
            code: INTERRUPTED,
            msg: "interrupted: every shard or file completed so far is kept (an existing target is untouched); run the same command with --resume to finish".into(),
        },
        wkw_zarr::Error::Corrupt { .. }
        | wkw_zarr::Error::Wkw(wkw::Error::Format { .. }) => {
            Fail::usage(format!(
                "{}; every shard or file completed so far is kept: once the source is repaired, run the same command with --resume to finish",
                describe(e)
            ))
        }
        e => Fail::usage(describe(e)),
    }
}

/// The Blosc options given (by their flags).
fn blosc_flags(a: &ConvertArgs) -> Vec<&'static str> {
    [
        ("--blosc-cname", a.blosc_cname.is_some()),
        ("--clevel", a.clevel.is_some()),
        ("--shuffle", a.shuffle.is_some()),
        ("--typesize", a.typesize.is_some()),
        ("--blocksize", a.blocksize.is_some()),
    ]
    .into_iter()
    .filter_map(|(flag, set)| set.then_some(flag))
    .collect()
}

/// The Zarr codec and the WKW block type, with every option checked against `--to` and
/// `--codec`: an option that would not apply is refused (bad usage), never ignored.
fn format_options(a: &ConvertArgs) -> CliResult<(ZarrCodec, wkw::BlockType)> {
    let blosc = blosc_flags(a);
    if a.to == To::Wkw {
        let mut zarr_only: Vec<&str> = Vec::new();
        if a.codec.is_some() {
            zarr_only.push("--codec");
        }
        if a.zstd_level.is_some() {
            zarr_only.push("--zstd-level");
        }
        zarr_only.extend(&blosc);
        if !zarr_only.is_empty() {
            return Err(Fail::usage(format!(
                "{} only with --to zarr3 (Zarr compressors); with --to wkw choose the WKW block type with --block-type raw|lz4|lz4hc",
                listed(&zarr_only, "applies", "apply")
            )));
        }
    } else if let Some(b) = a.block_type {
        let name = b
            .to_possible_value()
            .map(|v| v.get_name().to_owned())
            .unwrap_or_default();
        return Err(Fail::usage(format!(
            "--block-type {name} applies only with --to wkw (WKW files); with --to zarr3 choose the compressor with --codec auto|zstd|none|blosc"
        )));
    }
    let codec = a.codec.unwrap_or(Codec::Auto);
    if !blosc.is_empty() && codec != Codec::Blosc {
        return Err(Fail::usage(format!(
            "{} --codec blosc (Blosc compressor settings; --codec is {})",
            listed(&blosc, "needs", "need"),
            codec_name(codec)
        )));
    }
    let codec = match (codec, a.zstd_level) {
        (Codec::None | Codec::Blosc, Some(_)) => {
            return Err(Fail::usage(format!(
                "--zstd-level applies only with --codec zstd (or auto at level 5), not --codec {}{}",
                codec_name(codec),
                if codec == Codec::Blosc {
                    " (Blosc's own zstd level is --clevel, with --blosc-cname zstd)"
                } else {
                    ""
                }
            )));
        }
        (Codec::None, None) => ZarrCodec::None,
        (Codec::Blosc, None) => ZarrCodec::Blosc {
            cname: a.blosc_cname.unwrap_or(blosc_chunk::Codec::Zstd),
            clevel: a.clevel.unwrap_or(5),
            shuffle: a.shuffle.unwrap_or(BloscShuffle::AutoShuffle),
            typesize: a.typesize,
            blocksize: a.blocksize.unwrap_or_default(),
        },
        (Codec::Zstd, level) => ZarrCodec::Zstd {
            level: level.unwrap_or(5),
        },
        (Codec::Auto, None | Some(5)) => ZarrCodec::Auto,
        (Codec::Auto, Some(_)) => {
            return Err(Fail::usage(
                "--zstd-level other than 5 needs --codec zstd (auto writes level 5 like webknossos-libs)",
            ));
        }
    };
    let block_type = match a.block_type.unwrap_or(Block::Lz4) {
        Block::Raw => wkw::BlockType::Raw,
        Block::Lz4 => wkw::BlockType::Lz4,
        Block::Lz4hc => wkw::BlockType::Lz4Hc,
    };
    Ok((codec, block_type))
}

/// `flags` joined, with the verb in the singular or the plural.
fn listed(flags: &[&str], one: &str, many: &str) -> String {
    format!(
        "{} {}",
        flags.join(", "),
        if flags.len() == 1 { one } else { many }
    )
}

/// `--codec`'s name of `c`.
fn codec_name(c: Codec) -> String {
    c.to_possible_value()
        .map(|v| v.get_name().to_owned())
        .unwrap_or_default()
}

/// The array a progress report is about (`array`, a target array), as the user knows it: its
/// layer and mag below the target DST (`layer color, mag 2-2-1`), or its name for a single
/// array.
fn array_label(dst: &std::path::Path, array: &std::path::Path) -> String {
    let dst = dst.to_string_lossy();
    let dst = dst.trim_end_matches('/');
    let array = array.to_string_lossy();
    let array = array.trim_end_matches('/');
    match array.strip_prefix(dst).map(|r| r.trim_matches('/')) {
        Some("") => crate::names::display_name(std::path::Path::new(dst)),
        Some(rel) => match rel.rsplit_once('/') {
            Some((layer, mag)) => format!("layer {layer}, mag {mag}"),
            None => format!("mag {rel}"),
        },
        // Built beside DST (--overwrite): named by its last components.
        None => {
            let mut parts = array.rsplit('/');
            match (parts.next(), parts.next()) {
                (Some(mag), Some(layer)) if !mag.starts_with('.') && !layer.starts_with('.') => {
                    format!("layer {layer}, mag {mag}")
                }
                (Some(mag), Some(_)) if !mag.starts_with('.') => format!("mag {mag}"),
                _ => crate::names::display_name(std::path::Path::new(dst)),
            }
        }
    }
}

/// What convert reads, for messages about a source of the wrong kind.
const SOURCES: &str = "a webKNOSSOS dataset root (datasource-properties.json), a WKW mag directory (header.wkw) or a Zarr v3 array directory (zarr.json)";

/// A local SRC that does not exist or is a file is refused, saying so and what to give.
fn local_source(src: &std::path::Path) -> CliResult {
    if crate::names::is_url(src) {
        return Ok(());
    }
    match std::fs::metadata(src) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(Fail::input(
            src,
            format!("does not exist (SRC is {SOURCES})"),
        )),
        Ok(m) if m.is_file() => {
            // A data file of a mag: the mag is the nearest directory above it with header.wkw.
            let mag = src
                .ancestors()
                .skip(1)
                .take(4)
                .find(|d| d.join(wkw::HEADER_FILE_NAME).is_file());
            let instead = match mag {
                Some(d) => format!(
                    "give its mag directory {}",
                    crate::names::display_name(if d.as_os_str().is_empty() {
                        std::path::Path::new(".")
                    } else {
                        d
                    })
                ),
                None => format!("SRC is {SOURCES}"),
            };
            Err(Fail::input(
                src,
                format!("a file, not a dataset or array directory: {instead}"),
            ))
        }
        _ => Ok(()),
    }
}

/// Runs `scifmt convert`.
pub(crate) fn run(a: &ConvertArgs) -> CliResult {
    need_path(&a.src, "SRC")?;
    need_path(&a.dst, "DST")?;
    local_source(&a.src)?;
    let src = location(&a.src)?;
    let dst = location(&a.dst)?;
    let (codec, block_type) = format_options(a)?;
    let existing = if a.overwrite {
        Existing::Overwrite
    } else if a.resume {
        Existing::Resume
    } else {
        Existing::Refuse
    };
    let options = ConvertOptions::default()
        .with_cancel(interrupt_cancels())
        .with_codec(codec)
        .with_block_type(block_type)
        .with_threads(a.jobs)
        .with_existing(existing)
        .with_durability(if a.fsync {
            Durability::Fsync
        } else {
            Durability::None
        });
    let to = match a.to {
        To::Zarr3 => Format::Zarr3,
        To::Wkw => Format::Wkw,
    };
    let unit = if to == Format::Wkw { "files" } else { "shards" };
    let bar = progress(0, "convert");
    let on_progress = |p: &Progress| {
        bar.set_length(p.total);
        bar.set_position(p.done);
        bar.set_message(format!(
            "convert {} ({unit})",
            array_label(&a.dst, &p.array)
        ));
    };
    let start = Instant::now();
    let result = wkw_zarr::convert(&src, &dst, to, &options, &on_progress);
    bar.finish_and_clear();
    let summary = result.map_err(|e| convert_failure(&e))?;
    let seconds = start.elapsed().as_secs_f64();
    let mut out = Map::new();
    out.insert("to".into(), json!(to.name()));
    out.insert("arrays".into(), json!(summary.arrays));
    // The target's words: shards of Zarr arrays, files of WKW mags.
    if to == Format::Wkw {
        out.insert("files_written".into(), json!(summary.shards_written));
        out.insert("files_skipped".into(), json!(summary.shards_skipped));
        out.insert("files_empty".into(), json!(summary.shards_empty));
    }
    // Deprecated for --to wkw (the files_* keys hold the same numbers); kept for old readers.
    out.insert("shards_written".into(), json!(summary.shards_written));
    out.insert("shards_skipped".into(), json!(summary.shards_skipped));
    out.insert("shards_empty".into(), json!(summary.shards_empty));
    // Non-zero blocks written (all-zero blocks are not stored).
    out.insert("nonzero_blocks_written".into(), json!(summary.blocks));
    // Deprecated: the same count as nonzero_blocks_written.
    out.insert("blocks".into(), json!(summary.blocks));
    out.insert("bytes_in".into(), json!(summary.bytes_in));
    out.insert("bytes_out".into(), json!(summary.bytes_out));
    out.insert("seconds".into(), json!((seconds * 1000.0).round() / 1000.0));
    let mut differences = Vec::new();
    if a.verify {
        let bar = progress(0, "verify");
        let on_progress = |p: &Progress| {
            bar.set_length(p.total);
            bar.set_position(p.done);
            bar.set_message(format!("verify {}", array_label(&a.dst, &p.array)));
        };
        let report = wkw_zarr::verify(&src, &dst, &options, &on_progress)
            .map_err(|e| Fail::usage(describe(&e)))?;
        bar.finish_and_clear();
        out.insert("verified_blocks".into(), json!(report.blocks));
        out.insert("differing_blocks".into(), json!(report.differing_blocks));
        differences = report.differences.iter().map(ToString::to_string).collect();
    }
    if a.json.json {
        if a.verify {
            out.insert("differences".into(), json!(differences));
        }
        emit_json(&Value::Object(out.clone()))?;
    } else {
        let mut text = String::new();
        for d in &differences {
            text.push_str(d);
            text.push('\n');
        }
        text.push_str(&fields_text(&out));
        emit(&text)?;
    }
    match out.get("differing_blocks").and_then(Value::as_u64) {
        Some(n) if n > 0 => Err(Fail::problems(format!(
            "{n} blocks of {} differ from {}",
            crate::names::display_name(&a.dst),
            crate::names::display_name(&a.src)
        ))),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn progress_names_the_layer_and_the_mag() {
        let label = |dst: &str, array: &str| array_label(Path::new(dst), Path::new(array));
        assert_eq!(label("out/", "out/color/2-2-1"), "layer color, mag 2-2-1");
        assert_eq!(label("s3://b/out", "s3://b/out/seg/1"), "layer seg, mag 1");
        assert_eq!(label("c1.zarr", "c1.zarr"), "c1.zarr");
        // Built beside DST (--overwrite).
        assert_eq!(
            label("d/out", "d/.out.scifmt-overwrite/color/1"),
            "layer color, mag 1"
        );
        assert_eq!(
            label("d/c1.zarr", "d/.c1.zarr.scifmt-overwrite"),
            "d/c1.zarr"
        );
    }
}
