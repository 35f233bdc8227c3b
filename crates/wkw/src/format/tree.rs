//! The dataset's directory tree on the local file system: where data file `(x, y, z)` lives
//! (`z{z}/y{y}/x{x}.wkw` below the root) and the listing of every data file.
//!
//! Only names of exactly that shape count as data: the lock directory ([`crate::io::lock`]),
//! temporary files of interrupted writes (hidden names starting with `.`) and anything else a
//! user puts into the dataset are never listed, read, verified or converted.

use std::io;
use std::path::{Path, PathBuf};

/// The dataset-relative key of data file `(fx, fy, fz)`: `z{fz}/y{fy}/x{fx}.wkw`.
pub(crate) fn file_key([fx, fy, fz]: [u32; 3]) -> String {
    format!("z{fz}/y{fy}/x{fx}.wkw")
}

/// Parses `x{n}.wkw` style names: the number after `prefix`, before `suffix` (decimal, no
/// leading zeros, fits `u32`).
pub(crate) fn parse_index(name: &str, prefix: &str, suffix: &str) -> Option<u32> {
    let digits = name.strip_prefix(prefix)?.strip_suffix(suffix)?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    if digits.len() > 1 && digits.starts_with('0') {
        return None;
    }
    digits.parse().ok()
}

/// Every data file `z*/y*/x*.wkw` below `root`, as (file index, path), sorted by (z, y, x).
pub(crate) fn list_files(root: &Path) -> io::Result<Vec<([u32; 3], PathBuf)>> {
    let mut out = Vec::new();
    for z in std::fs::read_dir(root)? {
        let z = z?;
        let Some(fz) = z.file_name().to_str().and_then(|n| parse_index(n, "z", "")) else {
            continue;
        };
        if !z.file_type()?.is_dir() {
            continue;
        }
        for y in std::fs::read_dir(z.path())? {
            let y = y?;
            let Some(fy) = y.file_name().to_str().and_then(|n| parse_index(n, "y", "")) else {
                continue;
            };
            if !y.file_type()?.is_dir() {
                continue;
            }
            for x in std::fs::read_dir(y.path())? {
                let x = x?;
                let Some(fx) = x
                    .file_name()
                    .to_str()
                    .and_then(|n| parse_index(n, "x", ".wkw"))
                else {
                    continue;
                };
                if x.file_type()?.is_file() {
                    out.push(([fx, fy, fz], x.path()));
                }
            }
        }
    }
    out.sort_by_key(|(i, _)| [i[2], i[1], i[0]]);
    Ok(out)
}
