//! `scifmt b2nd read`: regions of b2nd N-dimensional arrays.

use std::path::PathBuf;

use clap::{Args, Subcommand};

use crate::args::{Region, parse_region, resolve_region};
use crate::fail::{At, CliResult, Fail};
use crate::frame::AnyB2nd;
use crate::guard::{OverwriteFlag, file_output};
use crate::inout::{in_name, write_output};

/// `scifmt b2nd`.
#[derive(Debug, Subcommand)]
pub(crate) enum Cmd {
    /// Write C-order raw bytes of a region (default: the whole array).
    #[command(
        after_help = "Examples:\n  scifmt b2nd read data.b2nd part.raw --region 0:10,5:20\n  cat data.b2nd | scifmt b2nd read - - | od -An -tu2 | head\n  scifmt b2nd read s3://bucket/data.b2nd part.raw --region 0:10,5:20"
    )]
    Read(ReadArgs),
}

impl Cmd {
    /// Runs the subcommand.
    pub(crate) fn run(self) -> CliResult {
        match self {
            Self::Read(a) => read(&a),
        }
    }
}

/// `b2nd read`.
#[derive(Debug, Args)]
pub(crate) struct ReadArgs {
    /// b2nd file (`-`: stdin).
    input: PathBuf,
    /// Output file (`-`: stdout).
    output: PathBuf,
    /// START:STOP per dimension (STOP exclusive; empty bounds = array edges).
    #[arg(long, value_parser = parse_region)]
    region: Option<Region>,
    #[command(flatten)]
    overwrite: OverwriteFlag,
}

/// `b2nd read IN OUT [--region …]`.
fn read(a: &ReadArgs) -> CliResult {
    file_output(&[&a.input], &a.output, a.overwrite.overwrite)?;
    let name = &in_name(&a.input);
    let array = AnyB2nd::new(crate::frame::open(&a.input)?).at(name)?;
    let (start, stop) =
        resolve_region(a.region.as_ref(), array.shape()).map_err(|e| Fail::input(name, e))?;
    let data = array.read_region(&start, &stop)?.at(name)?;
    write_output(&a.output, &data, a.overwrite.overwrite)
}
