//! `scifmt virtualize SRC... DST --to icechunk|kerchunk|kerchunk-parquet|zarr`: WKW data and b2nd arrays as
//! Zarr v3 in place, as virtual references (`wkw_zarr::virtualize` and
//! `blosc2_frame::virtualize` streaming into a `scifmt_io` writer).
//!
//! Each source is told apart by what it is: a local file starting with the Blosc2 frame magic,
//! a file or URL named `*.b2nd` / `*.b2frame`, or a directory holding `chunks.b2frame` (a
//! sparse frame) is a b2nd frame; anything else is WKW (a dataset
//! root or a mag, as `wkw_zarr` detects them).

use std::path::PathBuf;
use std::time::Instant;

use clap::{Args, ValueEnum};
use serde_json::{Map, Value, json};
use wkw_zarr::{Location, Progress};

use crate::convert::{INTERRUPTED, interrupt_cancels, location};
use crate::fail::{CliResult, Fail, describe};
use crate::guard::{apart, file_output};
use crate::inout::need_path;
use crate::print::{JsonFlag, emit, emit_json, fields_text};
use crate::progress::progress;
use crate::sources::{SourceCounts, SourceError, SourceOptions, virtualize_sources};

/// What `--to` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum To {
    /// An Icechunk repository (a directory or URL prefix) of virtual chunks.
    Icechunk,
    /// A kerchunk JSON reference file (version 1; fsspec's ReferenceFileSystem reads it).
    Kerchunk,
    /// A directory (or prefix) of kerchunk Parquet references, for datasets with millions of
    /// chunks: fsspec's ReferenceFileSystem reads it (with fastparquet) as a Zarr v2 hierarchy,
    /// the LZ4 and b2nd chunks through the scifmt wheel's numcodecs codecs. Arrays need a name:
    /// a dataset root, or several sources.
    KerchunkParquet,
    /// A plain Zarr v3 hierarchy of metadata for raw data: not possible for WKW or b2nd
    /// (refused, saying why).
    Zarr,
}

/// `scifmt virtualize`.
#[derive(Debug, Args)]
pub(crate) struct VirtualizeArgs {
    /// One or more sources, then the output. A source is a webKNOSSOS WKW dataset root
    /// (datasource-properties.json: every layer and mag), a WKW mag directory (header.wkw) or
    /// a b2nd array (a contiguous Blosc2 frame with the b2nd metalayer, as python-blosc2
    /// writes .b2nd files; told by its magic bytes, or for URLs by the name ending in .b2nd or
    /// .b2frame), a path or a URL (s3://, gs://, az://, http(s)://, file://). The output is a
    /// file or object (kerchunk) or a directory or prefix (icechunk, kerchunk-parquet), refused
    /// if it exists unless --overwrite; never an input, inside one or around one.
    #[arg(value_name = "SRC... DST", num_args = 2.., required = true)]
    paths: Vec<PathBuf>,
    /// What to write.
    #[arg(long, value_enum, ignore_case = true, default_value_t = To::Icechunk)]
    to: To,
    /// Replace an existing output (it is replaced only once the new one is complete); an
    /// existing Icechunk repository is updated instead (one new commit on main).
    #[arg(long)]
    overwrite: bool,
    /// fsync a local kerchunk output (the file, or the Parquet directory's files) before it is
    /// renamed into place (not for Icechunk, which writes its files itself).
    #[arg(long)]
    fsync: bool,
    /// Requests in flight to an object store: the headers and jump tables of 4 × N WKW files
    /// are read per round (local sources are read one file at a time; a b2nd frame's metadata
    /// takes one or two rounds).
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u64).range(1..=1024))]
    concurrency: u64,
    /// --to kerchunk-parquet: chunks per Parquet file (each file holds this many consecutive
    /// chunks of one array in C order; a reader loads a whole file for any chunk in it).
    #[arg(long, default_value_t = scifmt_io::DEFAULT_RECORD_SIZE, value_parser = clap::value_parser!(u64).range(1..=100_000_000))]
    record_size: u64,
    #[command(flatten)]
    json: JsonFlag,
}

/// Why `--to zarr` cannot be done, in one line.
const NO_PLAIN_ZARR: &str = "--to zarr cannot address WKW blocks in place: a Zarr v3 chunk is a whole object named by its chunk key (`default`: c/0/X/Y/Z, `v2`: 0.X.Y.Z; no encoding gives z{z}/y{y}/x{x}.wkw), while a WKW block is a byte range inside a file of many blocks in Morton order; `sharding_indexed` would need an index of (offset, length) per chunk in each file, which WKW files lack (a raw file has none, an LZ4 file a jump table of end offsets at its start), and the `offset` codec only skips a header (a b2nd frame's chunks are likewise byte ranges of one file, located by its index). Use --to icechunk or --to kerchunk, which reference each block by file, offset and length";

/// Runs `scifmt virtualize`.
pub(crate) fn run(a: &VirtualizeArgs) -> CliResult {
    let Some((dst_path, src_paths)) = a.paths.split_last() else {
        return Err(Fail::usage("virtualize needs SRC... DST"));
    };
    for p in src_paths {
        need_path(p, "SRC")?;
    }
    need_path(dst_path, "DST")?;
    if a.to == To::Zarr {
        return Err(Fail::usage(NO_PLAIN_ZARR));
    }
    let inputs: Vec<&std::path::Path> = src_paths.iter().map(PathBuf::as_path).collect();
    let srcs = src_paths
        .iter()
        .map(|p| location(p))
        .collect::<CliResult<Vec<Location>>>()?;
    let dst = location(dst_path)?;
    let concurrency = usize::try_from(a.concurrency).unwrap_or(8);
    let cancel = interrupt_cancels();
    let options = SourceOptions::new(concurrency, &cancel);
    let durability = if a.fsync {
        wkw_zarr::Durability::Fsync
    } else {
        wkw_zarr::Durability::None
    };
    let bar = progress(0, "virtualize");
    let on_progress = |p: &Progress| {
        bar.set_length(p.total);
        bar.set_position(p.done);
        let name = p.array.to_string_lossy().into_owned();
        bar.set_message(format!("virtualize {name}"));
    };
    let start = Instant::now();
    let mut out = Map::new();
    let to_name =
        a.to.to_possible_value()
            .map_or_else(String::new, |v| v.get_name().to_owned());
    out.insert("to".into(), json!(to_name));
    out.insert("sources".into(), json!(srcs.len()));
    let result = match a.to {
        To::Kerchunk => {
            file_output(&inputs, dst_path, a.overwrite)?;
            kerchunk(&srcs, &dst, &options, durability, &on_progress, &mut out)
        }
        To::KerchunkParquet => {
            apart(&inputs, dst_path)?;
            kerchunk_parquet(
                &srcs,
                &dst,
                a.overwrite,
                a.record_size,
                &options,
                durability,
                &on_progress,
                &mut out,
            )
        }
        To::Icechunk => {
            apart(&inputs, dst_path)?;
            icechunk(&srcs, &dst, a.overwrite, &options, &on_progress, &mut out)
        }
        To::Zarr => Err(Fail::usage(NO_PLAIN_ZARR)),
    };
    bar.finish_and_clear();
    result?;
    let seconds = start.elapsed().as_secs_f64();
    out.insert("seconds".into(), json!((seconds * 1000.0).round() / 1000.0));
    if a.json.json {
        emit_json(&Value::Object(out))
    } else {
        emit(&fields_text(&out))
    }
}

/// Ctrl-C's failure.
fn interrupted() -> Fail {
    Fail {
        code: INTERRUPTED,
        msg: "interrupted: nothing was written (an existing output is untouched)".into(),
    }
}

/// A source's failure: Ctrl-C's, the command's usage or output failure, or the input's
/// (naming the source).
fn source_fail(e: SourceError) -> Fail {
    if e.is_cancelled() {
        return interrupted();
    }
    match e {
        SourceError::Frame { source_name, error } => match *error {
            e @ (blosc2_frame::Error::NotVirtualizable { .. }
            | blosc2_frame::Error::Changed { .. }
            | blosc2_frame::Error::Remote { .. }
            | blosc2_frame::Error::Sink(_)) => Fail::usage(describe(&e)),
            e => Fail::input(source_name, describe(&e)),
        },
        SourceError::Wkw(e) => Fail::usage(describe(&e)),
        SourceError::Output(e) => Fail::usage(describe(&e)),
    }
}

/// The sources into `sink` ([`virtualize_sources`]: a source is a b2nd frame when
/// `blosc2_frame::is_frame_source` says so).
fn produce(
    srcs: &[Location],
    sink: &mut dyn scifmt_io::ReferenceSink,
    options: &SourceOptions,
    progress: &(dyn Fn(&Progress) + Sync),
) -> CliResult<SourceCounts> {
    virtualize_sources(
        srcs,
        &blosc2_frame::is_frame_source,
        sink,
        options,
        progress,
    )
    .map_err(source_fail)
}

/// The summary's counts in `out`.
fn record(counts: &SourceCounts, out: &mut Map<String, Value>) {
    out.insert("groups".into(), json!(counts.groups));
    out.insert("arrays".into(), json!(counts.arrays));
    out.insert("files".into(), json!(counts.files));
    out.insert("unchanged_files".into(), json!(counts.unchanged_files));
    out.insert("references".into(), json!(counts.references));
    out.insert("inline".into(), json!(counts.inline));
    out.insert("bytes_read".into(), json!(counts.bytes_read));
}

/// The counts and the bytes a kerchunk writer (JSON or Parquet) wrote.
fn record_written(
    counts: &SourceCounts,
    written: &scifmt_io::KerchunkSummary,
    out: &mut Map<String, Value>,
) {
    record(counts, out);
    out.insert("bytes_written".into(), json!(written.bytes));
}

/// `--to kerchunk`: one JSON file (or object), replaced when complete.
fn kerchunk(
    srcs: &[Location],
    dst: &Location,
    options: &SourceOptions,
    durability: wkw_zarr::Durability,
    progress: &(dyn Fn(&Progress) + Sync),
    out: &mut Map<String, Value>,
) -> CliResult {
    let fail = |e: scifmt_io::Error| Fail::input(dst.name(), describe(&e));
    let mut writer = scifmt_io::KerchunkWriter::create(dst, &options.wkw.remote).map_err(fail)?;
    let summary = produce(srcs, &mut writer, options, progress)?;
    let written = writer.finish(durability).map_err(fail)?;
    record_written(&summary, &written, out);
    Ok(())
}

/// `--to kerchunk-parquet`: a new reference directory at `dst`. A local one is built complete in
/// a hidden sibling and then put in place (also over another directory, with `overwrite`); an
/// object store prefix must be empty (`.zmetadata`, written last, completes it).
#[expect(
    clippy::too_many_arguments,
    reason = "the command's options, passed through"
)]
fn kerchunk_parquet(
    srcs: &[Location],
    dst: &Location,
    overwrite: bool,
    record_size: u64,
    options: &SourceOptions,
    durability: wkw_zarr::Durability,
    progress: &(dyn Fn(&Progress) + Sync),
    out: &mut Map<String, Value>,
) -> CliResult {
    let fail = |e: scifmt_io::Error| Fail::input(dst.name(), describe(&e));
    let exists = dst.has_contents().map_err(fail)?;
    let build = |at: &Location, out: &mut Map<String, Value>| {
        let mut writer = scifmt_io::KerchunkParquetWriter::create(at, &options.wkw.remote)
            .map_err(fail)?
            .with_record_size(record_size)
            .with_name(dst.to_string());
        let summary = produce(srcs, &mut writer, options, progress)?;
        let written = writer.finish(durability).map_err(fail)?;
        record_written(&summary, &written, out);
        Ok(())
    };
    let Location::Local(target) = dst else {
        if exists {
            return Err(Fail::usage(format!(
                "{dst} holds objects: --to kerchunk-parquet writes to an empty prefix (it does not replace objects, also with --overwrite)"
            )));
        }
        return build(dst, out);
    };
    if exists && !overwrite {
        return Err(Fail::usage(format!(
            "{} exists: add --overwrite to replace it (the new references replace it only when complete)",
            crate::names::display_name(target)
        )));
    }
    staged_dir(target, durability, |staged| build(staged, out))
}

/// Builds a local directory output complete in a hidden sibling of `target`, then puts it in
/// place (replacing the directory there, if any; with `Fsync` the parent directory is synced
/// after the rename); the sibling is removed on failure.
fn staged_dir(
    target: &std::path::Path,
    durability: scifmt_io::Durability,
    build: impl FnOnce(&Location) -> CliResult,
) -> CliResult {
    scifmt_io::build_dir(target, "scifmt-virtualize", durability, |staged| {
        build(&Location::Local(staged.to_path_buf()))
    })
}

/// `--to icechunk` without the `icechunk` feature: refused, saying how to get it.
#[cfg(not(feature = "icechunk"))]
fn icechunk(
    _srcs: &[Location],
    _dst: &Location,
    _overwrite: bool,
    _options: &SourceOptions,
    _progress: &(dyn Fn(&Progress) + Sync),
    _out: &mut Map<String, Value>,
) -> CliResult {
    Err(Fail::usage(
        "--to icechunk: this scifmt was built without Icechunk support (cargo feature `icechunk` of scifmt-cli); use --to kerchunk, or build with `cargo install scifmt-cli --features icechunk`",
    ))
}

/// `--to icechunk`: a new repository at `dst`, or (with `overwrite`) a new commit on `main` of
/// the Icechunk repository there, setting only what changed (the earlier snapshots stay in its
/// history). A new local repository is built complete in a hidden sibling and then put in
/// place, also over another local directory (with `overwrite`); on an object store `main`
/// moves only when all is committed. Another prefix of an object store is refused.
#[cfg(feature = "icechunk")]
fn icechunk(
    srcs: &[Location],
    dst: &Location,
    overwrite: bool,
    options: &SourceOptions,
    progress: &(dyn Fn(&Progress) + Sync),
    out: &mut Map<String, Value>,
) -> CliResult {
    let fail = |e: scifmt_io::Error| Fail::input(dst.name(), describe(&e));
    let exists = dst.has_contents().map_err(fail)?;
    if exists && scifmt_io::IcechunkWriter::exists(dst, &[]).map_err(fail)? {
        if !overwrite {
            return Err(Fail::usage(format!(
                "{dst} is an Icechunk repository: add --overwrite to update it (one new commit on main that sets what changed; its earlier snapshots stay in its history)"
            )));
        }
        return build_icechunk(srcs, dst, true, options, progress, out);
    }
    let Location::Local(target) = dst else {
        if exists {
            return Err(Fail::usage(format!(
                "{dst} holds objects that are not an Icechunk repository: --to icechunk writes to an empty prefix or updates a repository (never replaces other objects, also with --overwrite)"
            )));
        }
        return build_icechunk(srcs, dst, false, options, progress, out);
    };
    if exists && !overwrite {
        return Err(Fail::usage(format!(
            "{} exists: add --overwrite to replace it (the new repository replaces it only when complete)",
            crate::names::display_name(target)
        )));
    }
    staged_dir(target, scifmt_io::Durability::None, |staged| {
        build_icechunk(srcs, staged, false, options, progress, out)
    })
}

/// The repository at `dst`: a new one, or with `update` the one there updated.
#[cfg(feature = "icechunk")]
fn build_icechunk(
    srcs: &[Location],
    dst: &Location,
    update: bool,
    options: &SourceOptions,
    progress: &(dyn Fn(&Progress) + Sync),
    out: &mut Map<String, Value>,
) -> CliResult {
    let fail = |e: scifmt_io::Error| Fail::input(dst.name(), describe(&e));
    // The virtual chunk containers: each source's directory (a .b2nd file's parent).
    let prefixes = srcs
        .iter()
        .map(scifmt_io::container_url)
        .collect::<Result<Vec<_>, _>>()
        .map_err(fail)?;
    // Object stores as the environment configures them (as for every URL of the command).
    let mut writer = if update {
        scifmt_io::IcechunkWriter::update(dst, &prefixes, &[])
    } else {
        scifmt_io::IcechunkWriter::create(dst, &prefixes, &[])
    }
    .map_err(fail)?;
    let summary = produce(srcs, &mut writer, options, progress)?;
    let commit = writer.finish().map_err(fail)?;
    record(&summary, out);
    out.insert("snapshot".into(), json!(commit.snapshot));
    if let Some(u) = commit.update {
        out.insert(
            "update".into(),
            json!({
                "unchanged": u.unchanged,
                "set": u.set,
                "deleted": u.deleted,
                "nodes_deleted": u.nodes_deleted,
            }),
        );
    }
    Ok(())
}
