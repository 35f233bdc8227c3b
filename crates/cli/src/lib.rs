#![doc = include_str!("../README.md")]
//!
//! ## The library target
//!
//! The `scifmt` command is this crate's binary. Its library target holds the command itself,
//! so that the `scifmt` Python wheel can carry the same command: [`run`] takes the arguments
//! and returns the exit status; [`virtualize_sources`] is the source dispatch of
//! `scifmt virtualize`, which `scifmt.virtualize` and `scifmt.virtual` in the wheel share. It is
//! not an API for other programs (parse the `--json` output of the command instead).

mod args;
mod b2nd;
mod blosc;
mod convert;
mod dwe;
mod fail;
mod frame;
mod guard;
mod info;
mod inout;
mod msgpack;
mod names;
mod offset;
mod print;
mod progress;
mod remote;
mod sources;
mod virtualize;
mod webknossos;
mod wkw_cmd;
mod zarr;

use std::ffi::OsString;
use std::io::Write;

use clap::{Parser, Subcommand};

use crate::fail::CliResult;

pub use sources::{SourceCounts, SourceError, SourceOptions, virtualize_sources};

/// Inspect, convert and check Blosc chunks and frames, b2nd arrays, WKW and webKNOSSOS
/// datasets, .dwe word embeddings and Zarr v2/v3 arrays (offset/pad and blosc codecs included).
#[derive(Debug, Parser)]
#[command(
    name = "scifmt",
    version,
    after_help = "Examples:\n  scifmt info data.b2frame\n  scifmt frame extract data.b2frame data.raw\n  scifmt blosc decompress chunk.cdata - | sha256sum\n  scifmt wkw read dataset/ out.raw --offset 0,0,0 --shape 64,64,64\n\n`-` as a data file argument means stdin (inputs) or stdout (outputs) where the command's\nhelp says so.\n\nURLs: data arguments (and the outputs of wkw create|write|compress, frame create, dwe create\nand the raw outputs) may be s3://, gs://, az://, abfs://, http(s):// or file:// URLs, configured\nfrom the environment as object_store reads it (AWS_ENDPOINT_URL, AWS_ACCESS_KEY_ID,\nAWS_SECRET_ACCESS_KEY, AWS_REGION, AWS_ALLOW_HTTP, ...; GOOGLE_*, AZURE_*):\n  scifmt wkw read s3://bucket/volume box.raw --offset 0,0,0 --shape 64,64,64\n\nOutputs: an existing output file, object or dataset is replaced only with --overwrite (a\ndataset is built beside the old one and swapped in when complete); an output that is an\ninput, lies inside one or contains one is refused in every case, whatever the spelling\n(symlinks, `..`, hard links, URLs).\n\nJSON output: `--json` prints exactly one JSON value on one line: an object for commands\nthat describe one thing (`info`, `wkw info|verify`, `dwe info|vector`, `frame meta`), an array\nof objects with the same keys for commands that list items (`frame chunks`, `dwe\nrelated|trajectories`). Keys are snake_case, numbers are numbers, missing values null,\nmsgpack binary {\"$bin\": \"<hex>\"}.\n\nExit status: 0 success (also when a reader closes stdout early), 1 `verify` found problems,\n2 bad usage or bad input."
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Debug, Subcommand)]
enum Cmd {
    /// Detect the format of PATH (Blosc chunk, Blosc2 frame or sparse-frame directory, b2nd,
    /// WKW dataset or .wkw file, webKNOSSOS dataset root, Zarr v2/v3 array or group, .dwe) and
    /// print its header and structure.
    #[command(
        after_help = "Examples:\n  scifmt info data.b2nd --json\n  scifmt info s3://bucket/volume --json"
    )]
    Info(info::InfoArgs),
    /// Blosc1/Blosc2 chunks.
    #[command(subcommand)]
    Blosc(blosc::Cmd),
    /// Blosc2 frames (contiguous files and sparse directories).
    #[command(subcommand)]
    Frame(frame::Cmd),
    /// b2nd N-dimensional arrays.
    #[command(subcommand)]
    B2nd(b2nd::Cmd),
    /// WKW (webKNOSSOS wrapper) datasets.
    #[command(subcommand)]
    Wkw(wkw_cmd::Cmd),
    /// .dwe compressed dynamic word embeddings.
    #[command(subcommand)]
    Dwe(dwe::Cmd),
    /// The Zarr v3 `offset` / `pad` bytes->bytes codec on single chunks.
    #[command(subcommand)]
    Offset(offset::Cmd),
    /// Zarr v2 and v3 arrays (read through zarrs, with the offset/pad and blosc codecs
    /// registered).
    #[command(subcommand)]
    Zarr(zarr::Cmd),
    /// Convert webKNOSSOS datasets, WKW mags and sharded Zarr v3 arrays between WKW and Zarr v3,
    /// block by block (no voxel is re-laid), resumable, optionally verified.
    #[command(
        after_help = "Examples:\n  scifmt convert dataset_wkw/ dataset_zarr3/ --to zarr3 --verify\n  scifmt convert color/1 color_1.zarr --to zarr3 --codec zstd --zstd-level 3 --jobs 2\n  scifmt convert dataset_zarr3/ dataset_wkw/ --to wkw --block-type lz4hc --json\n  scifmt convert dataset_wkw/ dataset_zarr3/ --to zarr3 --resume\n  scifmt convert color/1 color_1.zarr --to zarr3 --codec blosc --blosc-cname lz4 --clevel 5 --shuffle shuffle\n  scifmt convert s3://bucket/ds_wkw s3://bucket/ds_zarr3 --to zarr3 --verify\n\nSRC and DST are paths or URLs (s3://, gs://, az://, http(s)://, file://; credentials from the\nAWS_*, GOOGLE_*, AZURE_* environment). An existing DST is refused unless --overwrite or --resume. Exit status 1 when --verify finds\ndifferences, 2 for bad usage or bad input."
    )]
    Convert(convert::ConvertArgs),
    /// Reference WKW data and b2nd arrays as Zarr v3 in place (virtual chunks: one per WKW
    /// block or b2nd chunk, read from the files by offset and length), reading only the files'
    /// headers, jump tables and chunk indexes.
    #[command(
        after_help = "Examples:\n  scifmt virtualize dataset_wkw/ refs.json --to kerchunk\n  scifmt virtualize s3://bucket/ds_wkw refs.json --to kerchunk --json\n  scifmt virtualize color/1 color/2-2-1 both.json --to kerchunk\n  scifmt virtualize dataset_wkw/ repo/ --to icechunk\n  scifmt virtualize dataset_wkw/ repo/ --overwrite --json    (an update: a new commit)\n  scifmt virtualize data.b2nd refs.json --to kerchunk\n\nThe layout is the one `scifmt convert --to zarr3` writes (a dataset: a group per layer, an array\nper mag at <layer>/<mag>; one mag: the array at the root; several sources: one node each, named\nlike its directory), with one chunk per WKW block (c, b, b, b): codecs transpose [3,2,1,0],\nbytes, and lz4-block for LZ4/LZ4HC files (a reader needs that codec: scifmt's Python package\nregisters it with zarr-python), fill value 0. A missing WKW file is missing chunks.\n\nA b2nd array (a .b2nd file of python-blosc2, a contiguous .b2frame with the b2nd metalayer,\nor a sparse frame: a directory of chunks.b2frame and %08X.chunk files, each chunk referenced\nas its whole file; plain super-chunks are refused) is one array: its shape, a regular chunk grid\nof its chunkshape, the data type of its NumPy dtype, fill value 0 and the b2nd codec with its\nblockshape (scifmt's Python package registers it); chunk c/i/j/... is the stored chunk of that\ngrid position. Runs of zeros stored as flags have no reference (the fill value); runs of NaNs\nare inline chunks (base64: values in kerchunk, inline chunks in Icechunk).\n\nEach reference carries its file's ETag (object stores) or modification time (local files):\nscifmt's reader and Icechunk refuse a chunk whose file changed since; fsspec does not check\n(kerchunk has no place for it; the checksums are kept under the key \"scifmt\").\n\nkerchunk: a JSON file {\"version\": 1, \"refs\": {...}} for fsspec's ReferenceFileSystem\n(zarr-python 3: zarr.open_group(FsspecStore(fs), mode=\"r\")). icechunk: a repository written\nwith the Icechunk crate (needs a scifmt built with the `icechunk` feature); run again with\n--overwrite on a repository, it commits only what changed on main (the earlier snapshots stay\nin its history). zarr: refused, saying\nwhy (WKW blocks and b2nd chunks cannot be addressed by Zarr chunk keys).\n\nExit status 2 for bad usage or bad input, 130 when interrupted (nothing is written)."
    )]
    Virtualize(virtualize::VirtualizeArgs),
}

impl Cmd {
    fn run(self) -> CliResult {
        match self {
            Self::Info(a) => info::run(&a),
            Self::Blosc(c) => c.run(),
            Self::Frame(c) => c.run(),
            Self::B2nd(c) => c.run(),
            Self::Wkw(c) => c.run(),
            Self::Dwe(c) => c.run(),
            Self::Offset(c) => c.run(),
            Self::Zarr(c) => c.run(),
            Self::Convert(a) => convert::run(&a),
            Self::Virtualize(a) => virtualize::run(&a),
        }
    }
}

/// Runs the `scifmt` command on `args` (the program name first, as `std::env::args_os` gives
/// them) and returns its exit status: what the `scifmt` binary does, for callers that are not
/// that binary (the Python wheel's `scifmt` command). Standard output is flushed before it
/// returns.
///
/// It installs a panic hook (a bug ends with one line and status 2) and, for a long
/// conversion, a Ctrl-C handler: call it once per process.
pub fn run<I, T>(args: I) -> u8
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let args: Vec<OsString> = args.into_iter().map(Into::into).collect();
    // A bug must still end with one line and status 2, never a backtrace.
    std::panic::set_hook(Box::new(|info| {
        let text = names::scrub(&info.to_string());
        eprintln!(
            "scifmt: internal error: {}",
            text.split_whitespace().collect::<Vec<_>>().join(" ")
        );
    }));
    let code = std::panic::catch_unwind(|| parse_and_run(&args)).unwrap_or(2);
    let _ = std::io::stdout().flush();
    code
}

fn parse_and_run(args: &[OsString]) -> u8 {
    let cli = match Cli::try_parse_from(args) {
        Ok(c) => c,
        Err(e) => return usage_error(&e, args),
    };
    match cli.cmd.run() {
        Ok(()) => 0,
        Err(fail) => {
            if !fail.msg.is_empty() {
                // Credentials never reach stderr, whatever a library put in its message.
                eprintln!("scifmt: {}", names::scrub(&fail.msg));
            }
            fail.code
        }
    }
}

/// Help and version as clap prints them; every other parse error as one line, status 2.
fn usage_error(e: &clap::Error, args: &[OsString]) -> u8 {
    use clap::error::ErrorKind;
    if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) {
        let _ = e.print();
        return 0;
    }
    if e.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
        let mut words = vec![String::from("scifmt")];
        words.extend(
            args.iter()
                .skip(1)
                .map(|a| a.to_string_lossy().into_owned()),
        );
        let cmd = words.join(" ");
        eprintln!("scifmt: `{cmd}` needs a subcommand (see {cmd} --help)");
        return 2;
    }
    let text = e.to_string();
    let body = text.split("\n\nUsage:").next().unwrap_or_default();
    let body = body.split("\n\n  tip:").next().unwrap_or_default();
    let body = body
        .split("\n\nFor more information")
        .next()
        .unwrap_or_default();
    let line = body.split_whitespace().collect::<Vec<_>>().join(" ");
    let line = line.trim_start_matches("error: ");
    eprintln!("scifmt: {line} (see --help)");
    2
}
