//! Parsers for argument values shared by several commands: `X,Y,Z`, number lists,
//! `--region A:B,C:D,...`, and the Blosc vocabulary (codec, `cname`, shuffle, block size)
//! through blosc-chunk's own parsers.

use std::ffi::OsStr;

use blosc_chunk::{Blocksize, BloscShuffle, Codec};
use clap::builder::{PossibleValue, StringValueParser, TypedValueParser};

/// Parses `X,Y,Z` (three unsigned integers; a negative one is named as such).
pub(crate) fn parse_xyz(s: &str) -> Result<[u32; 3], String> {
    if let Some(neg) = s
        .split(',')
        .map(str::trim)
        .find(|p| p.starts_with('-') && p[1..].parse::<u64>().is_ok())
    {
        return Err(format!(
            "negative coordinate {neg}: X,Y,Z are voxel coordinates from 0"
        ));
    }
    let v = parse_list::<u32>(s)?;
    <[u32; 3]>::try_from(v).map_err(|v| format!("expected X,Y,Z, got {} values", v.len()))
}

/// Parses a comma-separated list of numbers.
pub(crate) fn parse_list<T: std::str::FromStr>(s: &str) -> Result<Vec<T>, String> {
    s.split(',')
        .map(|p| {
            p.trim()
                .parse::<T>()
                .map_err(|_| format!("`{p}` is not a valid number"))
        })
        .collect()
}

/// One dimension of a `--region A:B,C:D,...` argument; a missing bound means the array edge.
pub(crate) type RegionDim = (Option<u64>, Option<u64>);

/// A parsed `--region` argument.
#[derive(Debug, Clone)]
pub(crate) struct Region(pub(crate) Vec<RegionDim>);

/// Parses `A:B,C:D,...` (`:B`, `A:` and `:` allowed).
pub(crate) fn parse_region(s: &str) -> Result<Region, String> {
    s.split(',')
        .map(|p| {
            let (a, b) = p
                .split_once(':')
                .ok_or_else(|| format!("`{p}` is not START:STOP"))?;
            let num = |t: &str| -> Result<Option<u64>, String> {
                let t = t.trim();
                if t.is_empty() {
                    Ok(None)
                } else {
                    t.parse::<u64>()
                        .map(Some)
                        .map_err(|_| format!("`{t}` is not a valid index"))
                }
            };
            Ok((num(a)?, num(b)?))
        })
        .collect::<Result<Vec<_>, String>>()
        .map(Region)
}

/// Resolves an optional region against an array shape into (start, stop) per dimension.
pub(crate) fn resolve_region(
    region: Option<&Region>,
    shape: &[u64],
) -> Result<(Vec<u64>, Vec<u64>), String> {
    let Some(Region(region)) = region else {
        return Ok((vec![0; shape.len()], shape.to_vec()));
    };
    if region.len() != shape.len() {
        return Err(format!(
            "--region has {} dimensions, the array has {}",
            region.len(),
            shape.len()
        ));
    }
    let mut start = Vec::with_capacity(shape.len());
    let mut stop = Vec::with_capacity(shape.len());
    for (d, (&(a, b), &n)) in region.iter().zip(shape).enumerate() {
        let a = a.unwrap_or(0);
        let b = b.unwrap_or(n);
        if a > b {
            return Err(format!(
                "--region {a}:{b} in dimension {d} is reversed: START must not exceed STOP"
            ));
        }
        if b > n {
            return Err(format!(
                "--region {a}:{b} is outside dimension {d} of length {n}"
            ));
        }
        start.push(a);
        stop.push(b);
    }
    Ok((start, stop))
}

/// A value parser for a name of blosc-chunk's vocabulary: the name is parsed by blosc-chunk
/// (any ASCII case; its error names the value and lists the names), and the names are the
/// possible values `--help` lists.
#[derive(Clone)]
pub(crate) struct VocabularyParser<T> {
    names: Vec<&'static str>,
    parse: fn(&str) -> blosc_chunk::Result<T>,
}

impl<T: Clone + Send + Sync + 'static> TypedValueParser for VocabularyParser<T> {
    type Value = T;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &OsStr,
    ) -> Result<T, clap::Error> {
        let parse = self.parse;
        StringValueParser::new()
            .try_map(move |s| parse(&s))
            .parse_ref(cmd, arg, value)
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = PossibleValue> + '_>> {
        Some(Box::new(self.names.iter().map(|&n| PossibleValue::new(n))))
    }
}

/// A Blosc codec by name (`blosclz`, `lz4`, …, `zfp_acc`; `zfp-acc` too).
pub(crate) fn codec_parser() -> VocabularyParser<Codec> {
    VocabularyParser {
        names: Codec::NAMED.map(Codec::name).to_vec(),
        parse: str::parse,
    }
}

/// The `cname` of Zarr's `blosc` codec (`blosclz`, `lz4`, `lz4hc`, `zlib`, `zstd`).
pub(crate) fn cname_parser() -> VocabularyParser<Codec> {
    VocabularyParser {
        names: Codec::BLOSC1.map(Codec::name).to_vec(),
        parse: Codec::from_cname,
    }
}

/// The shuffle of Zarr's `blosc` codec (`noshuffle`, `shuffle`, `bitshuffle`, `auto`).
pub(crate) fn shuffle_parser() -> VocabularyParser<BloscShuffle> {
    VocabularyParser {
        names: BloscShuffle::ALL.map(BloscShuffle::name).to_vec(),
        parse: str::parse,
    }
}

/// A block size in bytes, 0 for automatic.
pub(crate) fn parse_blocksize(s: &str) -> blosc_chunk::Result<Blocksize> {
    s.parse()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regions_parse_and_resolve() {
        let r = parse_region("1:3,:,2:").unwrap();
        let (a, b) = resolve_region(Some(&r), &[5, 6, 7]).unwrap();
        assert_eq!((a, b), (vec![1, 0, 2], vec![3, 6, 7]));
        assert!(resolve_region(Some(&r), &[2, 6, 7]).is_err());
        assert!(resolve_region(Some(&r), &[5, 6]).is_err());
        assert!(parse_region("1-3").is_err());
        assert_eq!(parse_xyz("1, 2,3").unwrap(), [1, 2, 3]);
        assert!(parse_xyz("1,2").is_err());
        assert!(
            parse_xyz("-5,0,0")
                .unwrap_err()
                .starts_with("negative coordinate -5")
        );
        let reversed = parse_region("5:2").unwrap();
        let e = resolve_region(Some(&reversed), &[9]).unwrap_err();
        assert!(e.contains("reversed"), "{e}");
    }

    #[test]
    fn vocabulary_values_parse_in_any_case_and_are_listed() {
        let cmd = clap::Command::new("t");
        let parse = |p: &VocabularyParser<Codec>, s: &str| p.parse_ref(&cmd, None, OsStr::new(s));
        assert_eq!(parse(&codec_parser(), "ZFP-ACC").unwrap(), Codec::ZfpAcc);
        assert_eq!(parse(&cname_parser(), "LZ4").unwrap(), Codec::Lz4);
        let e = parse(&cname_parser(), "ndlz").unwrap_err().to_string();
        assert!(
            e.contains("ndlz") && e.contains("blosclz, lz4, lz4hc, zlib, zstd"),
            "{e}"
        );
        let names: Vec<String> = shuffle_parser()
            .possible_values()
            .unwrap()
            .map(|v| v.get_name().to_owned())
            .collect();
        assert_eq!(names, ["noshuffle", "shuffle", "bitshuffle", "auto"]);
        assert_eq!(parse_blocksize("0").unwrap(), Blocksize::Auto);
        assert!(parse_blocksize("-1").is_err());
    }
}
