//! Parsers for argument values shared by several commands: `X,Y,Z`, number lists and
//! `--region A:B,C:D,...`.

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
}
