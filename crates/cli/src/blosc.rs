//! `scifmt blosc …`: single chunks; the compression flags shared with `frame create`; the
//! names of codecs and filters used in every listing.

use std::path::PathBuf;

use blosc_chunk::{
    BlockShape, Blocksize, CParams, ChunkHeader, Codec, DParams, Filter, Format, MAX_BUFFERSIZE,
    MAX_FILTERS, MAX_OVERHEAD, SplitMode,
};
use clap::{Args, Subcommand, ValueEnum};
use serde_json::{Map, Value, json};

use crate::fail::{At, CliResult, Fail};
use crate::guard::{OverwriteFlag, file_output};
use crate::inout::{in_name, read_whole, write_output};

/// `scifmt blosc`.
#[derive(Debug, Subcommand)]
pub(crate) enum Cmd {
    /// Decompress one chunk.
    #[command(
        after_help = "Examples:\n  scifmt blosc decompress chunk.cdata chunk.raw\n  scifmt blosc decompress chunk.cdata - | sha256sum\n  scifmt blosc decompress s3://bucket/c.cdata s3://bucket/c.raw\n  scifmt blosc decompress ndcell.cdata ndcell.raw --blockshape 8,10"
    )]
    Decompress(DecompressArgs),
    /// Compress a file into one chunk, byte-identical to C-Blosc2 3.3.5 with one thread (or,
    /// with `--format blosc1`, to C-Blosc 1.21 for all codecs but zlib).
    #[command(
        after_help = "Examples:\n  scifmt blosc compress data.raw data.cdata --typesize 4 --codec lz4 --filter shuffle --blocksize 4096 --splitmode auto\n  scifmt blosc compress text.raw text.cdata --typesize 1 --codec zstd --filter none --use-dict\n  scifmt blosc compress data.raw zarr-chunk --format blosc1 --typesize 4 --codec lz4 --filter shuffle\n  cat data.raw | scifmt blosc compress - - --typesize 4 > data.cdata\n  scifmt blosc compress f4.raw f4.cdata --typesize 4 --codec zstd --filter shuffle --filter bytedelta:4\n  scifmt blosc compress img.raw img.cdata --typesize 1 --codec ndlz --codec-meta 4 --blockshape 16,16 --blocksize 256\n  scifmt blosc compress f8.raw f8.cdata --typesize 8 --codec zfp-prec --codec-meta 20 --blockshape 8,10 --blocksize 640"
    )]
    Compress(CompressArgs),
}

impl Cmd {
    /// Runs the subcommand.
    pub(crate) fn run(self) -> CliResult {
        match self {
            Self::Decompress(a) => decompress(&a),
            Self::Compress(a) => compress(&a),
        }
    }
}

/// `blosc decompress`.
#[derive(Debug, Args)]
pub(crate) struct DecompressArgs {
    /// Compressed chunk (`-`: stdin).
    input: PathBuf,
    /// Decompressed bytes (`-`: stdout).
    output: PathBuf,
    /// The b2nd block shape (items per dimension, comma-separated), which chunks using the
    /// NDCELL / NDMEAN filters or the ZFP codecs need.
    #[arg(long, value_name = "D0,D1,...", value_parser = parse_blockshape)]
    blockshape: Option<BlockShape>,
    #[command(flatten)]
    overwrite: OverwriteFlag,
}

/// `blosc compress`.
#[derive(Debug, Args)]
pub(crate) struct CompressArgs {
    /// Raw bytes (`-`: stdin).
    input: PathBuf,
    /// Compressed chunk (`-`: stdout).
    output: PathBuf,
    #[command(flatten)]
    cparams: CParamArgs,
    /// Build a dictionary from the data and compress with it (zstd, lz4, lz4hc; C-Blosc2's
    /// `use_dict`).
    #[arg(long)]
    use_dict: bool,
    /// Chunk format: blosc2 (what C-Blosc2 3.3.5 writes, version 5) or blosc1 (what C-Blosc
    /// 1.21 writes, version 2: python-blosc, numcodecs and most Zarr blosc chunks; readable by
    /// C-Blosc 1.x; at most one --filter, shuffle or bitshuffle).
    #[arg(long, value_enum, ignore_case = true, default_value = "blosc2")]
    format: FormatArg,
    #[command(flatten)]
    overwrite: OverwriteFlag,
}

/// A chunk format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum FormatArg {
    /// C-Blosc2 3.3.5's chunks (format version 5).
    Blosc2,
    /// C-Blosc 1.21's chunks (format version 2, 16-byte header).
    Blosc1,
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

/// Compression parameters. The defaults are python-blosc2's (`blosc2.CParams()`: zstd, clevel
/// 5, shuffle, typesize 8, automatic split, all cores), the same as `scifmt.blosc.compress`'s.
#[derive(Debug, Clone, Args)]
pub(crate) struct CParamArgs {
    /// Item size in bytes (python-blosc2's default: 8).
    #[arg(long, value_name = "N", default_value_t = 8)]
    typesize: usize,
    /// Codec (case-insensitive): blosclz, lz4, lz4hc, zlib, zstd; the plugins ndlz (2-D
    /// blocks of 1-byte items; --codec-meta 4 or 8 = cell edge; needs --blockshape), zfp_acc
    /// (float32/64; --codec-meta E: tolerance 10^E), zfp_prec (--codec-meta P: P + 3 + 2*ndim
    /// bits), zfp_rate (--codec-meta R: R percent of the input size; the ZFP codecs need
    /// --blockshape; `zfp-acc` etc. work too).
    #[arg(long, value_parser = crate::args::codec_parser(), default_value = "zstd")]
    codec: Codec,
    /// Compression level 0-9.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u8).range(0..=9))]
    clevel: u8,
    /// Filter, repeatable, applied in the order given (slots 0, 1, ...):
    /// none|shuffle|bitshuffle|delta|truncprec:META|bytedelta:META|int_trunc:META|ndcell:META|ndmean:META
    /// (META is optional for truncprec and bytedelta). Default: shuffle in slot 5 (C-Blosc2).
    /// ndcell/ndmean need --blockshape.
    #[arg(long = "filter", value_name = "FILTER", value_parser = parse_filter)]
    filters: Vec<FilterArg>,
    /// Codec metadata byte (NDLZ: cell edge 4 or 8; ZFP: see --codec), -128..=255.
    #[arg(long, default_value_t = 0, value_name = "N", allow_negative_numbers = true, value_parser = parse_meta)]
    codec_meta: u8,
    /// The b2nd block shape (items per dimension, comma-separated) for NDCELL, NDMEAN, NDLZ and
    /// ZFP; --blocksize must then be its byte size.
    #[arg(long, value_name = "D0,D1,...", value_parser = parse_blockshape)]
    blockshape: Option<BlockShape>,
    /// Block size in bytes (0 = automatic).
    #[arg(long, default_value = "0", value_name = "N", value_parser = crate::args::parse_blocksize)]
    blocksize: Blocksize,
    /// When to split blocks into byte streams (default: auto; forward with --format blosc1,
    /// as C-Blosc 1.21 and python-blosc2 do).
    #[arg(long, value_enum, ignore_case = true)]
    splitmode: Option<SplitArg>,
    /// Compression threads, 0 = all cores (output is identical for any count).
    #[arg(long, default_value_t = 0, value_name = "N")]
    threads: usize,
}

/// One `--filter` value: the filter and its slot metadata.
pub(crate) type FilterArg = (Filter, u8);

/// Parses a metadata byte given as -128..=255 (negative values as their `i8` byte).
fn parse_meta(s: &str) -> Result<u8, String> {
    let v: i16 = s
        .parse()
        .map_err(|_| format!("META `{s}` is not an integer in -128..=255"))?;
    if let Ok(b) = u8::try_from(v) {
        Ok(b)
    } else if let Ok(b) = i8::try_from(v) {
        Ok(b.to_le_bytes()[0])
    } else {
        Err(format!("META `{s}` is not an integer in -128..=255"))
    }
}

/// Parses a block shape `D0,D1,...` (1 to 16 positive dimensions).
pub(crate) fn parse_blockshape(s: &str) -> Result<BlockShape, String> {
    let dims = s
        .split(',')
        .map(|d| {
            d.trim()
                .parse::<u64>()
                .map_err(|_| format!("`{d}` is not a dimension"))
        })
        .collect::<Result<Vec<_>, _>>()?;
    BlockShape::new(&dims).map_err(|e| e.to_string())
}

/// Parses `none|shuffle|bitshuffle|delta|truncprec[:META]|bytedelta[:META]|int_trunc:META|
/// ndcell:META|ndmean:META` (truncprec/int_trunc META: bits to keep, or negative: bits to zero,
/// as python-blosc2's `filters_meta`; bytedelta: the number of byte streams, 0 = typesize;
/// ndcell/ndmean: the cell edge).
pub(crate) fn parse_filter(s: &str) -> Result<FilterArg, String> {
    let (name, meta) = match s.split_once(':') {
        Some((n, m)) => (n, Some(m)),
        None => (s, None),
    };
    let filter = match name.to_ascii_lowercase().as_str() {
        "none" | "nofilter" => Filter::NoFilter,
        "shuffle" => Filter::Shuffle,
        "bitshuffle" => Filter::BitShuffle,
        "delta" => Filter::Delta,
        "truncprec" => Filter::TruncPrec,
        "bytedelta" => Filter::ByteDelta,
        "int_trunc" => Filter::IntTrunc,
        "ndcell" => Filter::NdCell,
        "ndmean" => Filter::NdMean,
        other => {
            return Err(format!(
                "unknown filter `{other}` (none|shuffle|bitshuffle|delta|truncprec[:META]|bytedelta[:META]|int_trunc:META|ndcell:META|ndmean:META)"
            ));
        }
    };
    let meta = match (filter, meta) {
        (Filter::IntTrunc | Filter::NdCell | Filter::NdMean, None) => {
            return Err(format!("filter `{name}` needs a META (`{name}:N`)"));
        }
        (_, None) => 0,
        (Filter::TruncPrec | Filter::IntTrunc, Some(m)) => {
            let v: i8 = m
                .parse()
                .map_err(|_| format!("{name} META `{m}` is not an integer in -128..=127"))?;
            v.to_le_bytes()[0]
        }
        (Filter::ByteDelta | Filter::NdCell | Filter::NdMean, Some(m)) => m
            .parse()
            .map_err(|_| format!("{name} META `{m}` is not an integer in 0..=255"))?,
        (_, Some(_)) => return Err(format!("filter `{name}` takes no META")),
    };
    Ok((filter, meta))
}

impl CParamArgs {
    /// [`CParams`] from the command-line flags (C-Blosc2 defaults for what is not given).
    pub(crate) fn cparams(&self) -> CliResult<CParams> {
        let mut p = CParams::default();
        p.codec = self.codec;
        p.clevel = self.clevel;
        p.typesize = self.typesize;
        p.blocksize = self.blocksize.bytes();
        p.nthreads = self.threads;
        p.codec_meta = self.codec_meta;
        p.blockshape = self.blockshape;
        p.splitmode = match self.splitmode.unwrap_or(SplitArg::Auto) {
            SplitArg::Always => SplitMode::Always,
            SplitArg::Never => SplitMode::Never,
            SplitArg::Auto => SplitMode::Auto,
            SplitArg::Forward => SplitMode::ForwardCompat,
        };
        if !self.filters.is_empty() {
            if self.filters.len() > MAX_FILTERS {
                return Err(Fail::usage(format!(
                    "at most {MAX_FILTERS} --filter values, got {}",
                    self.filters.len()
                )));
            }
            p.filters = [Filter::NoFilter; MAX_FILTERS];
            p.filters_meta = [0; MAX_FILTERS];
            for (slot, &(f, m)) in self.filters.iter().enumerate() {
                if let (Some(fs), Some(ms)) =
                    (p.filters.get_mut(slot), p.filters_meta.get_mut(slot))
                {
                    *fs = f;
                    *ms = m;
                }
            }
        }
        Ok(p)
    }
}

/// The largest chunk there is: [`blosc_chunk::Limits`]' default `max_nbytes` (C-Blosc2's
/// `BLOSC2_MAX_BUFFERSIZE`) plus the header overhead.
fn max_chunk_bytes() -> u64 {
    (blosc_chunk::Limits::default().max_nbytes as u64).saturating_add(MAX_OVERHEAD as u64)
}

/// `blosc decompress IN OUT`.
fn decompress(a: &DecompressArgs) -> CliResult {
    let overwrite = a.overwrite.overwrite;
    file_output(&[&a.input], &a.output, overwrite)?;
    let chunk = read_whole(
        &a.input,
        max_chunk_bytes(),
        "the size of the largest Blosc chunk",
    )?;
    let mut p = DParams::default();
    p.blockshape = a.blockshape;
    let data = blosc_chunk::decompress_ctx(&chunk, &p).at(in_name(&a.input))?;
    write_output(&a.output, &data, overwrite)
}

/// `blosc compress IN OUT …`.
fn compress(a: &CompressArgs) -> CliResult {
    let overwrite = a.overwrite.overwrite;
    file_output(&[&a.input], &a.output, overwrite)?;
    let mut params = a.cparams.cparams()?;
    params.use_dict = a.use_dict;
    params.format = match a.format {
        FormatArg::Blosc2 => Format::Blosc2,
        FormatArg::Blosc1 => Format::Blosc1,
    };
    if a.format == FormatArg::Blosc1 && a.cparams.splitmode.is_none() {
        params.splitmode = SplitMode::ForwardCompat;
    }
    let data = read_whole(
        &a.input,
        MAX_BUFFERSIZE as u64,
        "the most one Blosc chunk can hold",
    )?;
    let chunk = blosc_chunk::compress(&data, &params).at(in_name(&a.input))?;
    write_output(&a.output, &chunk, overwrite)
}

/// A codec's C-Blosc2 name (`Codec::name`), or `codec-<id>` for an id the library does not
/// know.
pub(crate) fn codec_name(c: Codec) -> String {
    match c {
        Codec::Other(_) => format!("codec-{}", c.id()),
        known => known.name().to_owned(),
    }
}

/// A short lowercase filter name.
pub(crate) fn filter_name(f: Filter) -> String {
    match f {
        Filter::NoFilter => "none".into(),
        Filter::Shuffle => "shuffle".into(),
        Filter::BitShuffle => "bitshuffle".into(),
        Filter::Delta => "delta".into(),
        Filter::TruncPrec => "truncprec".into(),
        Filter::ByteDelta => "bytedelta".into(),
        Filter::IntTrunc => "int_trunc".into(),
        Filter::NdCell => "ndcell".into(),
        Filter::NdMean => "ndmean".into(),
        other => format!("filter-{}", other.id()),
    }
}

/// Names of the filter slots by id.
pub(crate) fn filter_names(ids: &[u8]) -> Vec<String> {
    ids.iter()
        .map(|&i| filter_name(Filter::from_id(i)))
        .collect()
}

/// The special value a chunk header declares, lowercase (`zeros`, `nan`, …), if any.
pub(crate) fn special_name(h: &ChunkHeader) -> Option<String> {
    h.special().map(|s| format!("{s:?}").to_lowercase())
}

/// `info` on a chunk file of `len` bytes: every header field.
pub(crate) fn chunk_info(h: &ChunkHeader, len: u64) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("format".into(), json!("blosc-chunk"));
    m.insert("file_len".into(), json!(len));
    m.insert("version".into(), json!(h.version()));
    m.insert("versionlz".into(), json!(h.versionlz()));
    m.insert("flags".into(), json!(h.flags()));
    m.insert("typesize".into(), json!(h.typesize()));
    m.insert("nbytes".into(), json!(h.nbytes()));
    m.insert("cbytes".into(), json!(h.cbytes()));
    m.insert("blocksize".into(), json!(h.blocksize_field()));
    m.insert("nblocks".into(), json!(h.nblocks()));
    m.insert("header_len".into(), json!(h.header_len()));
    m.insert("extended_header".into(), json!(h.is_extended()));
    m.insert("codec".into(), json!(codec_name(h.codec())));
    m.insert("filters".into(), json!(filter_names(&h.filter_ids())));
    m.insert("filters_meta".into(), json!(h.filters_meta()));
    m.insert("udcodec".into(), json!(h.udcodec()));
    m.insert("compcode_meta".into(), json!(h.compcode_meta()));
    m.insert("blosc2_flags".into(), json!(h.blosc2_flags()));
    m.insert("blosc2_flags2".into(), json!(h.blosc2_flags2()));
    m.insert("memcpyed".into(), json!(h.is_memcpyed()));
    m.insert("split".into(), json!(!h.dont_split()));
    m.insert("dict".into(), json!(h.uses_dict()));
    m.insert("vl_blocks".into(), json!(h.vl_blocks()));
    m.insert("special".into(), json!(special_name(h)));
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filters_parse_with_meta() {
        assert_eq!(parse_filter("shuffle").unwrap(), (Filter::Shuffle, 0));
        assert_eq!(
            parse_filter("truncprec:10").unwrap(),
            (Filter::TruncPrec, 10)
        );
        assert_eq!(
            parse_filter("truncprec:-20").unwrap(),
            (Filter::TruncPrec, 236)
        );
        assert!(parse_filter("delta:3").is_err());
        assert!(parse_filter("snappy").is_err());
    }
}
