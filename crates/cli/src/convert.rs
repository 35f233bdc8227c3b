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
    /// Compressor of the Zarr inner chunks (with --to zarr3).
    #[arg(long, value_enum, ignore_case = true, default_value_t = Codec::Auto)]
    codec: Codec,
    /// zstd level (with --codec zstd or auto).
    #[arg(long, default_value_t = 5, allow_negative_numbers = true, value_parser = clap::value_parser!(i32).range(-131072..=22))]
    zstd_level: i32,
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
    /// Block type of the WKW files (with --to wkw).
    #[arg(long, value_enum, ignore_case = true, default_value_t = Block::Lz4)]
    block_type: Block,
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
        e => Fail::usage(describe(e)),
    }
}

/// Runs `scifmt convert`.
pub(crate) fn run(a: &ConvertArgs) -> CliResult {
    need_path(&a.src, "SRC")?;
    need_path(&a.dst, "DST")?;
    let src = location(&a.src)?;
    let dst = location(&a.dst)?;
    let blosc_set = a.blosc_cname.is_some()
        || a.clevel.is_some()
        || a.shuffle.is_some()
        || a.typesize.is_some()
        || a.blocksize.is_some();
    if blosc_set && a.codec != Codec::Blosc {
        return Err(Fail::usage(
            "--blosc-cname, --clevel, --shuffle, --typesize and --blocksize need --codec blosc",
        ));
    }
    let codec = match (a.codec, a.zstd_level) {
        (Codec::None, _) => ZarrCodec::None,
        (Codec::Blosc, _) => ZarrCodec::Blosc {
            cname: a.blosc_cname.unwrap_or(blosc_chunk::Codec::Zstd),
            clevel: a.clevel.unwrap_or(5),
            shuffle: a.shuffle.unwrap_or(BloscShuffle::AutoShuffle),
            typesize: a.typesize,
            blocksize: a.blocksize.unwrap_or_default(),
        },
        (Codec::Zstd, level) => ZarrCodec::Zstd { level },
        (Codec::Auto, 5) => ZarrCodec::Auto,
        (Codec::Auto, _) => {
            return Err(Fail::usage(
                "--zstd-level other than 5 needs --codec zstd (auto writes level 5 like webknossos-libs)",
            ));
        }
    };
    let block_type = match a.block_type {
        Block::Raw => wkw::BlockType::Raw,
        Block::Lz4 => wkw::BlockType::Lz4,
        Block::Lz4hc => wkw::BlockType::Lz4Hc,
    };
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
    let bar = progress(0, "convert");
    let on_progress = |p: &Progress| {
        bar.set_length(p.total);
        bar.set_position(p.done);
        let name = p
            .array
            .file_name()
            .map(|n| n.to_string_lossy().into_owned());
        bar.set_message(format!("convert {}", name.unwrap_or_default()));
    };
    let start = Instant::now();
    let result = wkw_zarr::convert(&src, &dst, to, &options, &on_progress);
    bar.finish_and_clear();
    let summary = result.map_err(|e| convert_failure(&e))?;
    let seconds = start.elapsed().as_secs_f64();
    let mut out = Map::new();
    out.insert("to".into(), json!(to.name()));
    out.insert("arrays".into(), json!(summary.arrays));
    out.insert("shards_written".into(), json!(summary.shards_written));
    out.insert("shards_skipped".into(), json!(summary.shards_skipped));
    out.insert("shards_empty".into(), json!(summary.shards_empty));
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
