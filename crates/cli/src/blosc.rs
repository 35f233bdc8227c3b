//! `scifmt blosc …`: single chunks.

use std::path::Path;

use blosc_chunk::{CParams, Codec, Filter, MAX_FILTERS, SplitMode};

use crate::util::{At, CliResult, Fail, read_input, write_output};
use crate::{CParamArgs, CodecArg, SplitArg};

/// One `--filter` value: the filter and its slot metadata.
pub(crate) type FilterArg = (Filter, u8);

/// Parses `none|shuffle|bitshuffle|delta|truncprec[:META]` (META: bits to keep, or negative:
/// bits to zero, as python-blosc2's `filters_meta`).
pub(crate) fn parse_filter(s: &str) -> Result<FilterArg, String> {
    let (name, meta) = match s.split_once(':') {
        Some((n, m)) => (n, Some(m)),
        None => (s, None),
    };
    let filter = match name {
        "none" => Filter::NoFilter,
        "shuffle" => Filter::Shuffle,
        "bitshuffle" => Filter::BitShuffle,
        "delta" => Filter::Delta,
        "truncprec" => Filter::TruncPrec,
        other => {
            return Err(format!(
                "unknown filter `{other}` (none|shuffle|bitshuffle|delta|truncprec[:META])"
            ));
        }
    };
    let meta = match (filter, meta) {
        (_, None) => 0,
        (Filter::TruncPrec, Some(m)) => {
            let v: i8 = m
                .parse()
                .map_err(|_| format!("truncprec META `{m}` is not an integer in -128..=127"))?;
            v.to_le_bytes()[0]
        }
        (_, Some(_)) => return Err(format!("filter `{name}` takes no META")),
    };
    Ok((filter, meta))
}

/// The library codec for a codec argument.
fn codec(c: CodecArg) -> Codec {
    match c {
        CodecArg::Blosclz => Codec::BloscLz,
        CodecArg::Lz4 => Codec::Lz4,
        CodecArg::Lz4hc => Codec::Lz4Hc,
        CodecArg::Zlib => Codec::Zlib,
        CodecArg::Zstd => Codec::Zstd,
    }
}

/// Builds [`CParams`] from the command-line flags (C-Blosc2 defaults for what is not given).
pub(crate) fn cparams(a: &CParamArgs) -> CliResult<CParams> {
    let mut p = CParams::default();
    p.codec = codec(a.codec);
    p.clevel = a.clevel;
    p.typesize = a.typesize;
    p.blocksize = a.blocksize;
    p.nthreads = a.threads;
    p.splitmode = match a.splitmode {
        SplitArg::Always => SplitMode::Always,
        SplitArg::Never => SplitMode::Never,
        SplitArg::Auto => SplitMode::Auto,
        SplitArg::Forward => SplitMode::ForwardCompat,
    };
    if !a.filters.is_empty() {
        if a.filters.len() > MAX_FILTERS {
            return Err(Fail::usage(format!(
                "at most {MAX_FILTERS} --filter values, got {}",
                a.filters.len()
            )));
        }
        p.filters = [Filter::NoFilter; MAX_FILTERS];
        p.filters_meta = [0; MAX_FILTERS];
        for (slot, &(f, m)) in a.filters.iter().enumerate() {
            if let (Some(fs), Some(ms)) = (p.filters.get_mut(slot), p.filters_meta.get_mut(slot)) {
                *fs = f;
                *ms = m;
            }
        }
    }
    Ok(p)
}

/// `blosc decompress IN OUT`.
pub(crate) fn decompress(input: &Path, output: &Path) -> CliResult {
    let chunk = read_input(input)?;
    let data = blosc_chunk::decompress(&chunk).at(input)?;
    write_output(output, &data)
}

/// `blosc compress IN OUT …`.
pub(crate) fn compress(
    input: &Path,
    output: &Path,
    args: &CParamArgs,
    use_dict: bool,
) -> CliResult {
    let mut params = cparams(args)?;
    params.use_dict = use_dict;
    let data = read_input(input)?;
    let chunk = blosc_chunk::compress(&data, &params).at(input)?;
    write_output(output, &chunk)
}

/// A short lowercase codec name.
pub(crate) fn codec_name(c: Codec) -> String {
    match c {
        Codec::BloscLz => "blosclz".into(),
        Codec::Lz4 => "lz4".into(),
        Codec::Lz4Hc => "lz4hc".into(),
        Codec::Zlib => "zlib".into(),
        Codec::Zstd => "zstd".into(),
        other => format!("codec-{}", other.id()),
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
        other => format!("filter-{}", other.id()),
    }
}

/// Names of the filter slots by id.
pub(crate) fn filter_names(ids: &[u8]) -> Vec<String> {
    ids.iter()
        .map(|&i| filter_name(Filter::from_id(i)))
        .collect()
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
