//! Shared plumbing: errors with exit codes, atomic output files, progress bars, argument
//! parsers and JSON printing.

use std::fmt::Display;
use std::fs::File;
use std::io::{BufWriter, IsTerminal, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use indicatif::{ProgressBar, ProgressStyle};
use serde_json::{Map, Value};

/// A failed command: the exit code and the one-line message printed on stderr.
#[derive(Debug)]
pub(crate) struct Fail {
    /// 1 = a check found problems, 2 = bad usage or bad input.
    pub(crate) code: u8,
    /// One line, naming the file and the problem.
    pub(crate) msg: String,
}

impl Fail {
    /// Bad input in `path` (exit 2).
    pub(crate) fn input(path: &Path, msg: impl Display) -> Self {
        Self {
            code: 2,
            msg: one_line(&format!("{}: {msg}", path.display())),
        }
    }

    /// Bad usage (exit 2).
    pub(crate) fn usage(msg: impl Display) -> Self {
        Self {
            code: 2,
            msg: one_line(&msg.to_string()),
        }
    }

    /// A check found problems (exit 1).
    pub(crate) fn problems(msg: impl Display) -> Self {
        Self {
            code: 1,
            msg: one_line(&msg.to_string()),
        }
    }
}

/// The result of a command.
pub(crate) type CliResult<T = ()> = Result<T, Fail>;

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// An error message with its source chain (sources not already part of the message).
pub(crate) fn describe(e: &(dyn std::error::Error + 'static)) -> String {
    let mut msg = e.to_string();
    let mut src = e.source();
    while let Some(s) = src {
        let part = s.to_string();
        if !msg.contains(&part) {
            msg.push_str(": ");
            msg.push_str(&part);
        }
        src = s.source();
    }
    msg
}

/// Attaches the file an error is about.
pub(crate) trait At<T> {
    /// Maps the error to [`Fail::input`] naming `path`.
    fn at(self, path: &Path) -> CliResult<T>;
}

impl<T, E: std::error::Error + 'static> At<T> for Result<T, E> {
    fn at(self, path: &Path) -> CliResult<T> {
        self.map_err(|e| Fail::input(path, describe(&e)))
    }
}

/// Reads a whole input file.
pub(crate) fn read_input(path: &Path) -> CliResult<Vec<u8>> {
    std::fs::read(path).at(path)
}

/// Opens an input file for streaming reads.
pub(crate) fn open_input(path: &Path) -> CliResult<File> {
    File::open(path).at(path)
}

/// Reads exactly `buf.len()` bytes at `offset` of `file`.
pub(crate) fn read_at(file: &mut File, path: &Path, offset: u64, buf: &mut [u8]) -> CliResult {
    file.seek(SeekFrom::Start(offset)).at(path)?;
    file.read_exact(buf).at(path)
}

/// An output file written under a unique temporary name in the target directory and renamed
/// over the target by [`Output::commit`]: an interrupted command never leaves a partial file.
#[derive(Debug)]
pub(crate) struct Output {
    path: PathBuf,
    w: BufWriter<tempfile::NamedTempFile>,
}

impl Output {
    /// Starts writing `path`.
    pub(crate) fn create(path: &Path) -> CliResult<Self> {
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let tmp = tempfile::Builder::new()
            .prefix(".scifmt-")
            .tempfile_in(&dir)
            .at(path)?;
        Ok(Self {
            path: path.to_path_buf(),
            w: BufWriter::with_capacity(1 << 20, tmp),
        })
    }

    /// Appends bytes.
    pub(crate) fn write(&mut self, bytes: &[u8]) -> CliResult {
        self.w.write_all(bytes).at(&self.path)
    }

    /// Writes bytes at an absolute position (the file grows as needed).
    pub(crate) fn write_at(&mut self, offset: u64, bytes: &[u8]) -> CliResult {
        self.w.seek(SeekFrom::Start(offset)).at(&self.path)?;
        self.w.write_all(bytes).at(&self.path)
    }

    /// Flushes and renames the file into place.
    pub(crate) fn commit(self) -> CliResult {
        let path = self.path;
        let tmp = self
            .w
            .into_inner()
            .map_err(|e| Fail::input(&path, describe(e.error())))?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o644))
                .at(&path)?;
        }
        tmp.persist(&path)
            .map_err(|e| Fail::input(&path, describe(&e.error)))?;
        Ok(())
    }
}

/// Writes `bytes` to `path` atomically.
pub(crate) fn write_output(path: &Path, bytes: &[u8]) -> CliResult {
    let mut out = Output::create(path)?;
    out.write(bytes)?;
    out.commit()
}

/// A progress bar of `len` units on a terminal; hidden when stderr is not a terminal.
pub(crate) fn progress(len: u64, what: &str) -> ProgressBar {
    if !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let style = ProgressStyle::with_template("{msg} [{bar:40}] {pos}/{len} ({eta})")
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("=> ");
    ProgressBar::new(len)
        .with_style(style)
        .with_message(what.to_owned())
}

/// A progress bar counting bytes.
pub(crate) fn progress_bytes(len: u64, what: &str) -> ProgressBar {
    if !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let style = ProgressStyle::with_template("{msg} [{bar:40}] {bytes}/{total_bytes} ({eta})")
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("=> ");
    ProgressBar::new(len)
        .with_style(style)
        .with_message(what.to_owned())
}

/// Parses `X,Y,Z` (three unsigned integers).
pub(crate) fn parse_xyz(s: &str) -> Result<[u32; 3], String> {
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

/// Resolves a region against an array shape into (start, stop) per dimension.
pub(crate) fn resolve_region(
    region: Option<&[RegionDim]>,
    shape: &[u64],
) -> Result<(Vec<u64>, Vec<u64>), String> {
    let Some(region) = region else {
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
        if a > b || b > n {
            return Err(format!(
                "--region {a}:{b} is outside dimension {d} of length {n}"
            ));
        }
        start.push(a);
        stop.push(b);
    }
    Ok((start, stop))
}

/// Prints `value` as one JSON document on stdout.
pub(crate) fn print_json(value: &Value) {
    println!("{value}");
}

/// Prints an object as `key: value` lines (strings unquoted, other values as compact JSON).
pub(crate) fn print_fields(map: &Map<String, Value>) {
    for (k, v) in map {
        match v {
            Value::String(s) => println!("{k}: {s}"),
            other => println!("{k}: {other}"),
        }
    }
}

/// Prints `map` as JSON or as `key: value` lines.
pub(crate) fn print_object(map: Map<String, Value>, json: bool) {
    if json {
        print_json(&Value::Object(map));
    } else {
        print_fields(&map);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regions_parse_and_resolve() {
        let r = parse_region("1:3,:,2:").unwrap().0;
        let (a, b) = resolve_region(Some(&r), &[5, 6, 7]).unwrap();
        assert_eq!((a, b), (vec![1, 0, 2], vec![3, 6, 7]));
        assert!(resolve_region(Some(&r), &[2, 6, 7]).is_err());
        assert!(resolve_region(Some(&r), &[5, 6]).is_err());
        assert!(parse_region("1-3").is_err());
        assert_eq!(parse_xyz("1, 2,3").unwrap(), [1, 2, 3]);
        assert!(parse_xyz("1,2").is_err());
    }

    #[test]
    fn messages_are_one_line() {
        let f = Fail::input(Path::new("a.bin"), "bad\nthing");
        assert_eq!(f.msg, "a.bin: bad thing");
        assert_eq!(f.code, 2);
    }
}
