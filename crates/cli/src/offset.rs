//! `scifmt offset decode|encode`: one chunk through the `offset` / `pad` codec.

use std::path::PathBuf;

use clap::{Args, Subcommand};
use offset_codec::{CodecConfiguration, OffsetCodec};

use crate::fail::{At, CliResult, Fail, describe};
use crate::guard::{OverwriteFlag, file_output};
use crate::inout::{MAX_WHOLE_INPUT, in_name, read_whole, write_output};

/// `scifmt offset`.
#[derive(Debug, Subcommand)]
pub(crate) enum Cmd {
    /// Strip the header/trailer of one stored chunk.
    #[command(
        after_help = "Examples:\n  scifmt offset decode c/0/0 payload.bin --codec '{\"name\":\"offset\",\"configuration\":{\"offset\":16}}'\n  scifmt offset decode c/0/0 - --codec '{\"name\":\"offset\",\"configuration\":{\"offset\":16}}' | gzip -dc"
    )]
    Decode(CodecArgs),
    /// Add the header/trailer to a payload.
    #[command(
        after_help = "Examples:\n  scifmt offset encode payload.bin chunk.bin --codec '{\"name\":\"pad\",\"configuration\":{\"location\":\"end\",\"nbytes\":4}}'\n  gzip -c data | scifmt offset encode - chunk.bin --codec '{\"name\":\"offset\",\"configuration\":{\"offset\":16}}'"
    )]
    Encode(CodecArgs),
}

impl Cmd {
    /// Runs the subcommand.
    pub(crate) fn run(self) -> CliResult {
        match self {
            Self::Decode(a) => run(&a, false),
            Self::Encode(a) => run(&a, true),
        }
    }
}

/// `offset decode` and `offset encode`.
#[derive(Debug, Args)]
pub(crate) struct CodecArgs {
    /// Input: the stored chunk (decode) or the payload (encode) (`-`: stdin).
    input: PathBuf,
    /// Output: the payload (decode) or the stored chunk (encode) (`-`: stdout).
    output: PathBuf,
    /// One zarr.json codec entry ({"name":"offset",...} or {"name":"pad",...}).
    #[arg(long, value_name = "JSON")]
    codec: String,
    #[command(flatten)]
    overwrite: OverwriteFlag,
}

/// Parses the `--codec` zarr.json entry.
fn codec(json: &str) -> CliResult<OffsetCodec> {
    let entry: serde_json::Value =
        serde_json::from_str(json).map_err(|e| Fail::usage(format!("--codec is not JSON: {e}")))?;
    let config = CodecConfiguration::from_json(&entry)
        .map_err(|e| Fail::usage(format!("--codec: {}", describe(&e))))?;
    OffsetCodec::new(config).map_err(|e| Fail::usage(format!("--codec: {}", describe(&e))))
}

/// `offset decode|encode IN OUT --codec JSON`.
fn run(a: &CodecArgs, encode: bool) -> CliResult {
    let codec = codec(&a.codec)?;
    let overwrite = a.overwrite.overwrite;
    file_output(&[&a.input], &a.output, overwrite)?;
    let data = read_whole(&a.input, MAX_WHOLE_INPUT, "the most one chunk may have")?;
    let input = &in_name(&a.input);
    if encode {
        let stored = codec.encode(&data).at(input)?;
        write_output(&a.output, &stored, overwrite)
    } else {
        let payload = codec.decode(&data).at(input)?;
        write_output(&a.output, payload, overwrite)
    }
}
