#![doc = include_str!("../README.md")]

mod blosc;
mod dwe;
mod frame;
mod info;
mod msgpack;
mod offset;
mod util;
mod wkw_cmd;
mod zarr;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::util::{CliResult, Region, parse_region, parse_xyz};

/// Inspect, convert and check Blosc chunks and frames, b2nd arrays, WKW datasets, .dwe word
/// embeddings and Zarr v3 stores with offset/pad codecs.
#[derive(Debug, Parser)]
#[command(
    name = "scifmt",
    version,
    after_help = "Examples:\n  scifmt info data.b2frame\n  scifmt frame extract data.b2frame data.raw\n  scifmt wkw read dataset/ out.raw --offset 0,0,0 --shape 64,64,64\n\nExit status: 0 success, 1 `verify` found problems, 2 bad usage or bad input."
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Debug, Subcommand)]
enum Cmd {
    /// Detect the format of PATH (Blosc chunk, Blosc2 frame or sparse-frame directory, b2nd,
    /// WKW dataset or .wkw file, .dwe) and print its header and structure.
    #[command(after_help = "Example:\n  scifmt info data.b2nd --json")]
    Info {
        /// File or directory to inspect.
        path: PathBuf,
        /// Print one JSON object with a "format" field and the header fields.
        #[arg(long)]
        json: bool,
    },
    /// Blosc1/Blosc2 chunks.
    #[command(subcommand)]
    Blosc(BloscCmd),
    /// Blosc2 frames (contiguous files and sparse directories).
    #[command(subcommand)]
    Frame(FrameCmd),
    /// b2nd N-dimensional arrays.
    #[command(subcommand)]
    B2nd(B2ndCmd),
    /// WKW (webKNOSSOS wrapper) datasets.
    #[command(subcommand)]
    Wkw(WkwCmd),
    /// .dwe compressed dynamic word embeddings.
    #[command(subcommand)]
    Dwe(DweCmd),
    /// The Zarr v3 `offset` / `pad` bytes->bytes codec on single chunks.
    #[command(subcommand)]
    Offset(OffsetCmd),
    /// Zarr v3 arrays (read through zarrs, with the offset/pad codecs registered).
    #[command(subcommand)]
    Zarr(ZarrCmd),
}

/// A Blosc codec.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum CodecArg {
    /// BloscLZ.
    Blosclz,
    /// LZ4.
    Lz4,
    /// LZ4HC.
    Lz4hc,
    /// zlib.
    Zlib,
    /// Zstandard.
    Zstd,
}

/// A split mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum SplitArg {
    /// Always split blocks into one stream per byte of the type.
    Always,
    /// Never split.
    Never,
    /// Split when it usually pays.
    Auto,
    /// Forward-compatible (the C-Blosc2 default; same rule as auto).
    Forward,
}

/// Compression parameters (defaults: C-Blosc2's).
#[derive(Debug, Clone, Args)]
pub(crate) struct CParamArgs {
    /// Item size in bytes.
    #[arg(long, value_name = "N")]
    pub(crate) typesize: usize,
    /// Codec.
    #[arg(long, value_enum, default_value = "blosclz")]
    pub(crate) codec: CodecArg,
    /// Compression level 0-9.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u8).range(0..=9))]
    pub(crate) clevel: u8,
    /// Filter, repeatable, applied in the order given (slots 0, 1, ...):
    /// none|shuffle|bitshuffle|delta|truncprec|truncprec:META. Default: shuffle in slot 5 (C-Blosc2).
    #[arg(long = "filter", value_name = "FILTER", value_parser = blosc::parse_filter)]
    pub(crate) filters: Vec<blosc::FilterArg>,
    /// Block size in bytes (0 = automatic).
    #[arg(long, default_value_t = 0, value_name = "N")]
    pub(crate) blocksize: usize,
    /// When to split blocks into byte streams.
    #[arg(long, value_enum, default_value = "forward")]
    pub(crate) splitmode: SplitArg,
    /// Compression threads (output is identical for any count).
    #[arg(long, default_value_t = 1, value_name = "N")]
    pub(crate) threads: usize,
}

#[derive(Debug, Subcommand)]
enum BloscCmd {
    /// Decompress one chunk.
    #[command(after_help = "Example:\n  scifmt blosc decompress chunk.cdata chunk.raw")]
    Decompress {
        /// Compressed chunk.
        input: PathBuf,
        /// Decompressed bytes.
        output: PathBuf,
    },
    /// Compress a file into one chunk (byte-identical to C-Blosc2 for all codecs but zlib).
    #[command(
        after_help = "Examples:\n  scifmt blosc compress data.raw data.cdata --typesize 4 --codec lz4 --filter shuffle --blocksize 4096 --splitmode auto\n  scifmt blosc compress text.raw text.cdata --typesize 1 --codec zstd --filter none --use-dict"
    )]
    Compress {
        /// Raw bytes.
        input: PathBuf,
        /// Compressed chunk.
        output: PathBuf,
        #[command(flatten)]
        cparams: CParamArgs,
        /// Build a dictionary from the data and compress with it (zstd, lz4, lz4hc; C-Blosc2's
        /// `use_dict`).
        #[arg(long)]
        use_dict: bool,
    },
}

#[derive(Debug, Subcommand)]
enum FrameCmd {
    /// Write all chunks decompressed in index order (python-blosc2's `schunk[:]`).
    #[command(after_help = "Example:\n  scifmt frame extract data.b2frame data.raw")]
    Extract {
        /// Frame file or sparse-frame directory.
        input: PathBuf,
        /// Output file.
        output: PathBuf,
    },
    /// List chunks: index, offset or special kind, nbytes, cbytes, codec, filters.
    #[command(after_help = "Example:\n  scifmt frame chunks data.b2frame --json")]
    Chunks {
        /// Frame file or sparse-frame directory.
        input: PathBuf,
        /// Print a JSON array.
        #[arg(long)]
        json: bool,
    },
    /// Print metalayers and vlmetalayers, msgpack decoded to JSON.
    #[command(
        after_help = "Example:\n  scifmt frame meta data.b2frame --json\n\nBinary msgpack values print as {\"$bin\": \"<hex>\"}; undecodable layers as {\"$raw\": \"<hex>\"}."
    )]
    Meta {
        /// Frame file or sparse-frame directory.
        input: PathBuf,
        /// Print one JSON object.
        #[arg(long)]
        json: bool,
    },
    /// Build a frame from raw bytes, CHUNKSIZE bytes per chunk (the last may be shorter).
    #[command(
        after_help = "Example:\n  scifmt frame create data.raw data.b2frame --typesize 8 --chunksize 8000 --codec zstd --filter delta --filter shuffle --meta 'm=[1,2,3]' --vlmeta 'info={\"a\":1}'"
    )]
    Create {
        /// Raw bytes.
        input: PathBuf,
        /// Frame file (or directory with --sparse).
        output: PathBuf,
        /// Bytes per chunk (a multiple of the typesize).
        #[arg(long, value_name = "BYTES")]
        chunksize: usize,
        #[command(flatten)]
        cparams: CParamArgs,
        /// Metalayer NAME=JSON (stored as msgpack), repeatable.
        #[arg(long = "meta", value_name = "NAME=JSON", value_parser = msgpack::parse_layer)]
        meta: Vec<(String, Vec<u8>)>,
        /// Variable-length metalayer NAME=JSON (stored as msgpack), repeatable.
        #[arg(long = "vlmeta", value_name = "NAME=JSON", value_parser = msgpack::parse_layer)]
        vlmeta: Vec<(String, Vec<u8>)>,
        /// Write a sparse frame (a directory) instead of a contiguous file.
        #[arg(long)]
        sparse: bool,
    },
}

#[derive(Debug, Subcommand)]
enum B2ndCmd {
    /// Write C-order raw bytes of a region (default: the whole array).
    #[command(after_help = "Example:\n  scifmt b2nd read data.b2nd part.raw --region 0:10,5:20")]
    Read {
        /// b2nd file.
        input: PathBuf,
        /// Output file.
        output: PathBuf,
        /// START:STOP per dimension (STOP exclusive; empty bounds = array edges).
        #[arg(long, value_parser = parse_region)]
        region: Option<Region>,
    },
}

/// A WKW voxel type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum VoxelArg {
    /// uint8
    U8,
    /// uint16
    U16,
    /// uint32
    U32,
    /// uint64
    U64,
    /// float32
    F32,
    /// float64
    F64,
    /// int8
    I8,
    /// int16
    I16,
    /// int32
    I32,
    /// int64
    I64,
}

/// A WKW block type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum BlockArg {
    /// Uncompressed.
    Raw,
    /// LZ4.
    Lz4,
    /// LZ4HC.
    Lz4hc,
}

/// Array layout of a WKW read/write file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum OrderArg {
    /// Fortran order: channel fastest, then x, y, z (the reference layout).
    F,
    /// C order of the (C, X, Y, Z) array: z fastest, channel slowest.
    C,
}

#[derive(Debug, Subcommand)]
enum WkwCmd {
    /// Print the dataset header and its data files.
    #[command(after_help = "Example:\n  scifmt wkw info dataset/ --json")]
    Info {
        /// Dataset root (holding header.wkw).
        dataset: PathBuf,
        /// Print one JSON object.
        #[arg(long)]
        json: bool,
    },
    /// Create an empty dataset (header.wkw).
    #[command(
        after_help = "Example:\n  scifmt wkw create dataset/ --voxel-type u16 --channels 3 --block-type lz4"
    )]
    Create {
        /// Dataset root to create.
        dataset: PathBuf,
        /// Voxel type.
        #[arg(long, value_enum)]
        voxel_type: VoxelArg,
        /// Channels per voxel.
        #[arg(long, default_value_t = 1)]
        channels: u8,
        /// Voxels per block edge (power of two).
        #[arg(long, default_value_t = 32)]
        block_len: u32,
        /// Blocks per file edge (power of two).
        #[arg(long, default_value_t = 32)]
        file_len: u32,
        /// Block storage.
        #[arg(long, value_enum, default_value = "raw")]
        block_type: BlockArg,
    },
    /// Read a box into OUT: the (C,X,Y,Z) array in Fortran (default) or C order.
    #[command(
        after_help = "Example:\n  scifmt wkw read dataset/ box.raw --offset 0,0,0 --shape 64,64,32 --order c"
    )]
    Read {
        /// Dataset root.
        dataset: PathBuf,
        /// Output file.
        output: PathBuf,
        /// Box corner X,Y,Z.
        #[arg(long, value_parser = parse_xyz)]
        offset: [u32; 3],
        /// Box size X,Y,Z.
        #[arg(long, value_parser = parse_xyz)]
        shape: [u32; 3],
        /// Layout of OUT.
        #[arg(long, value_enum, default_value = "f")]
        order: OrderArg,
    },
    /// Write a box from IN (the (C,X,Y,Z) array in Fortran (default) or C order).
    #[command(
        after_help = "Example:\n  scifmt wkw write dataset/ box.raw --offset 32,0,0 --shape 64,64,32"
    )]
    Write {
        /// Dataset root.
        dataset: PathBuf,
        /// Input file.
        input: PathBuf,
        /// Box corner X,Y,Z.
        #[arg(long, value_parser = parse_xyz)]
        offset: [u32; 3],
        /// Box size X,Y,Z.
        #[arg(long, value_parser = parse_xyz)]
        shape: [u32; 3],
        /// Layout of IN.
        #[arg(long, value_enum, default_value = "f")]
        order: OrderArg,
    },
    /// Convert every data file of SRC into a new dataset DST with another block type.
    #[command(
        after_help = "Example:\n  scifmt wkw compress raw_ds/ lz4_ds/ --block-type lz4hc --threads 4"
    )]
    Compress {
        /// Source dataset.
        src: PathBuf,
        /// New dataset (must not exist as a dataset).
        dst: PathBuf,
        /// Block type of DST.
        #[arg(long, value_enum, default_value = "lz4")]
        block_type: BlockArg,
        /// Worker threads (default: all cores).
        #[arg(long, value_name = "N")]
        threads: Option<usize>,
    },
    /// Check every data file (headers, jump tables, lengths, every block decodes).
    #[command(
        after_help = "Example:\n  scifmt wkw verify dataset/ --json\n\nExit status 1 when a file has a problem."
    )]
    Verify {
        /// Dataset root.
        dataset: PathBuf,
        /// Print one JSON object.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Subcommand)]
enum DweCmd {
    /// Print layout (block|stream), header and per-time-step model sizes.
    #[command(after_help = "Example:\n  scifmt dwe info words.dwe --json")]
    Info {
        /// .dwe file.
        file: PathBuf,
        /// Print one JSON object.
        #[arg(long)]
        json: bool,
    },
    /// Write all values: i16 little-endian, shape (T, V, K), C order.
    #[command(after_help = "Example:\n  scifmt dwe decode words.dwe values.i16")]
    Decode {
        /// .dwe file.
        file: PathBuf,
        /// Output file.
        output: PathBuf,
    },
    /// Print one embedding vector, one value per line.
    #[command(after_help = "Example:\n  scifmt dwe vector words.dwe --word 12 --t 3 --f32")]
    Vector {
        /// .dwe file.
        file: PathBuf,
        /// Word index.
        #[arg(long)]
        word: u32,
        /// Time step.
        #[arg(long)]
        t: u32,
        /// Print f32 values (value × scale_factor) instead of i16.
        #[arg(long)]
        f32: bool,
    },
    /// For each target word, the AMT most related words at time step T (one line per target;
    /// `-` marks ranks the vocabulary cannot fill).
    #[command(after_help = "Example:\n  scifmt dwe related words.dwe --words 0,2 --t 0 --amt 5")]
    Related {
        /// .dwe file.
        file: PathBuf,
        /// Target words W1,W2,...
        #[arg(long, value_delimiter = ',', required = true)]
        words: Vec<u32>,
        /// Time step.
        #[arg(long)]
        t: u32,
        /// Words per target.
        #[arg(long)]
        amt: usize,
    },
    /// Dot-product trajectories of word pairs: one line per pair, T values.
    #[command(
        after_help = "Example:\n  scifmt dwe trajectories words.dwe --words1 0,3 --words2 99,2"
    )]
    Trajectories {
        /// First words of the pairs.
        #[arg(long, value_delimiter = ',', required = true)]
        words1: Vec<u32>,
        /// Second words of the pairs.
        #[arg(long, value_delimiter = ',', required = true)]
        words2: Vec<u32>,
        /// .dwe file.
        file: PathBuf,
    },
    /// Encode i16 little-endian values of shape (T, V, K) (C order) into a .dwe file.
    #[command(
        after_help = "Example:\n  scifmt dwe create values.i16 words.dwe --shape 6,100,16 --scale 0.015074313 --jump-interval 20"
    )]
    Create {
        /// Raw i16 values.
        input: PathBuf,
        /// .dwe file to write.
        output: PathBuf,
        /// T,V,K.
        #[arg(long, value_delimiter = ',', required = true)]
        shape: Vec<u32>,
        /// scale_factor (f32).
        #[arg(long)]
        scale: f32,
        /// Block layout with this many words per chunk (must divide V).
        #[arg(
            long,
            value_name = "C",
            group = "layout",
            required_unless_present = "jump_interval"
        )]
        chunk_size: Option<u32>,
        /// Stream layout with a jump-table row every J words.
        #[arg(long, value_name = "J", group = "layout")]
        jump_interval: Option<u32>,
    },
}

#[derive(Debug, Subcommand)]
enum OffsetCmd {
    /// Strip the header/trailer of one stored chunk.
    #[command(
        after_help = "Example:\n  scifmt offset decode c/0/0 payload.bin --codec '{\"name\":\"offset\",\"configuration\":{\"offset\":16}}'"
    )]
    Decode {
        /// Stored chunk.
        input: PathBuf,
        /// Payload.
        output: PathBuf,
        /// One zarr.json codec entry ({"name":"offset",...} or {"name":"pad",...}).
        #[arg(long, value_name = "JSON")]
        codec: String,
    },
    /// Add the header/trailer to a payload.
    #[command(
        after_help = "Example:\n  scifmt offset encode payload.bin chunk.bin --codec '{\"name\":\"pad\",\"configuration\":{\"location\":\"end\",\"nbytes\":4}}'"
    )]
    Encode {
        /// Payload.
        input: PathBuf,
        /// Stored chunk.
        output: PathBuf,
        /// One zarr.json codec entry ({"name":"offset",...} or {"name":"pad",...}).
        #[arg(long, value_name = "JSON")]
        codec: String,
    },
}

#[derive(Debug, Subcommand)]
enum ZarrCmd {
    /// Write C-order little-endian bytes of a Zarr v3 array (or a region of it).
    #[command(after_help = "Example:\n  scifmt zarr read store.zarr out.raw --region 0:64,10:20")]
    Read {
        /// Array directory (holding zarr.json).
        store: PathBuf,
        /// Output file.
        output: PathBuf,
        /// START:STOP per dimension (STOP exclusive; empty bounds = array edges).
        #[arg(long, value_parser = parse_region)]
        region: Option<Region>,
    },
}

fn run(cmd: Cmd) -> CliResult {
    match cmd {
        Cmd::Info { path, json } => info::run(&path, json),
        Cmd::Blosc(BloscCmd::Decompress { input, output }) => blosc::decompress(&input, &output),
        Cmd::Blosc(BloscCmd::Compress {
            input,
            output,
            cparams,
            use_dict,
        }) => blosc::compress(&input, &output, &cparams, use_dict),
        Cmd::Frame(FrameCmd::Extract { input, output }) => frame::extract(&input, &output),
        Cmd::Frame(FrameCmd::Chunks { input, json }) => frame::chunks(&input, json),
        Cmd::Frame(FrameCmd::Meta { input, json }) => frame::meta(&input, json),
        Cmd::Frame(FrameCmd::Create {
            input,
            output,
            chunksize,
            cparams,
            meta,
            vlmeta,
            sparse,
        }) => frame::create(&frame::CreateArgs {
            input: &input,
            output: &output,
            chunksize,
            cparams: &cparams,
            meta: &meta,
            vlmeta: &vlmeta,
            sparse,
        }),
        Cmd::B2nd(B2ndCmd::Read {
            input,
            output,
            region,
        }) => frame::b2nd_read(&input, &output, region.as_ref().map(|r| r.0.as_slice())),
        Cmd::Wkw(c) => run_wkw(c),
        Cmd::Dwe(c) => run_dwe(c),
        Cmd::Offset(OffsetCmd::Decode {
            input,
            output,
            codec,
        }) => offset::run(&input, &output, &codec, false),
        Cmd::Offset(OffsetCmd::Encode {
            input,
            output,
            codec,
        }) => offset::run(&input, &output, &codec, true),
        Cmd::Zarr(ZarrCmd::Read {
            store,
            output,
            region,
        }) => zarr::read(&store, &output, region.as_ref().map(|r| r.0.as_slice())),
    }
}

fn run_wkw(cmd: WkwCmd) -> CliResult {
    match cmd {
        WkwCmd::Info { dataset, json } => wkw_cmd::info(&dataset, json),
        WkwCmd::Create {
            dataset,
            voxel_type,
            channels,
            block_len,
            file_len,
            block_type,
        } => wkw_cmd::create(
            &dataset, voxel_type, channels, block_len, file_len, block_type,
        ),
        WkwCmd::Read {
            dataset,
            output,
            offset,
            shape,
            order,
        } => wkw_cmd::read(&dataset, &output, offset, shape, order),
        WkwCmd::Write {
            dataset,
            input,
            offset,
            shape,
            order,
        } => wkw_cmd::write(&dataset, &input, offset, shape, order),
        WkwCmd::Compress {
            src,
            dst,
            block_type,
            threads,
        } => wkw_cmd::compress(&src, &dst, block_type, threads),
        WkwCmd::Verify { dataset, json } => wkw_cmd::verify(&dataset, json),
    }
}

fn run_dwe(cmd: DweCmd) -> CliResult {
    match cmd {
        DweCmd::Info { file, json } => dwe::info(&file, json),
        DweCmd::Decode { file, output } => dwe::decode(&file, &output),
        DweCmd::Vector { file, word, t, f32 } => dwe::vector(&file, word, t, f32),
        DweCmd::Related {
            file,
            words,
            t,
            amt,
        } => dwe::related(&file, &words, t, amt),
        DweCmd::Trajectories {
            file,
            words1,
            words2,
        } => dwe::trajectories(&file, &words1, &words2),
        DweCmd::Create {
            input,
            output,
            shape,
            scale,
            chunk_size,
            jump_interval,
        } => dwe::create(&dwe::CreateArgs {
            input: &input,
            output: &output,
            shape: &shape,
            scale,
            chunk_size,
            jump_interval,
        }),
    }
}

fn main() -> ExitCode {
    // A bug must still end with one line and status 2, never a backtrace.
    std::panic::set_hook(Box::new(|info| {
        let text = info.to_string();
        eprintln!(
            "scifmt: internal error: {}",
            text.split_whitespace().collect::<Vec<_>>().join(" ")
        );
    }));
    match std::panic::catch_unwind(parse_and_run) {
        Ok(code) => code,
        Err(_) => ExitCode::from(2),
    }
}

fn parse_and_run() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => return usage_error(&e),
    };
    match run(cli.cmd) {
        Ok(()) => ExitCode::SUCCESS,
        Err(fail) => {
            eprintln!("scifmt: {}", fail.msg);
            ExitCode::from(fail.code)
        }
    }
}

/// Help and version as clap prints them; every other parse error as one line, status 2.
fn usage_error(e: &clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) {
        let _ = e.print();
        return ExitCode::SUCCESS;
    }
    if e.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
        let mut words = vec![String::from("scifmt")];
        words.extend(std::env::args().skip(1));
        let cmd = words.join(" ");
        eprintln!("scifmt: `{cmd}` needs a subcommand (see {cmd} --help)");
        return ExitCode::from(2);
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
    ExitCode::from(2)
}
