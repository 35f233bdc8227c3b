//! Input and output files, where `-` means stdin or stdout.
//!
//! Outputs named by a path are written atomically: a `scifmt_io::Staged` file in the target
//! directory, persisted (renamed) over the target only when complete, so an interrupted or
//! failed command never leaves a partial file; without `--overwrite` it is moved into place only
//! if the name is still free (see the `guard` module). `-` writes to stdout as the data comes; a reader
//! that closes the pipe early (`| head`) ends the command quietly ([`Fail::closed_stdout`]).
//!
//! Inputs read whole into memory are read through [`read_whole`], which stops one byte past a
//! limit whether the bytes come from a file, a pipe or a URL: a hostile or endless stdin (or
//! server) cannot make the command allocate more than the limit.
//!
//! A URL (see [`crate::remote`]) works as an input of [`read_whole`] and as an output: the
//! output is spooled to a local temporary file and uploaded by [`Output::commit`] only when
//! complete.

use std::borrow::Cow;
use std::fs::File;
use std::io::{BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use crate::fail::{At, CliResult, Fail, describe};
use crate::names;
use crate::remote;
use scifmt_io::StoreLocation;

/// The most bytes read into memory from an input whose format crate sets no input limit (an
/// `offset` chunk, a frame or b2nd array from stdin): 4 GiB, blosc2-frame's default
/// `Limits::max_output_bytes` on 64-bit targets.
pub(crate) const MAX_WHOLE_INPUT: u64 = 4 << 30;

/// Whether a file argument is `-` (stdin for inputs, stdout for outputs).
pub(crate) fn is_std(path: &Path) -> bool {
    path.as_os_str() == "-"
}

/// The name an input is called in messages (`<stdin>` for `-`, a URL without credentials).
pub(crate) fn in_name(path: &Path) -> Cow<'_, Path> {
    if is_std(path) {
        Cow::Borrowed(Path::new("<stdin>"))
    } else if names::is_url(path) {
        Cow::Owned(PathBuf::from(names::display_name(path)))
    } else {
        Cow::Borrowed(path)
    }
}

/// The name an output is called in messages (`<stdout>` for `-`, a URL without credentials).
pub(crate) fn out_name(path: &Path) -> Cow<'_, Path> {
    if is_std(path) {
        Cow::Borrowed(Path::new("<stdout>"))
    } else if names::is_url(path) {
        Cow::Owned(PathBuf::from(names::display_name(path)))
    } else {
        Cow::Borrowed(path)
    }
}

/// Refuses `-` for an argument that must name a file or directory (one a library writes or
/// reads by path).
pub(crate) fn need_path(path: &Path, what: &str) -> CliResult {
    if is_std(path) {
        return Err(Fail::usage(format!(
            "{what} must be a path: `-` (stdin/stdout) is not supported here (write ./- for a file named -)"
        )));
    }
    Ok(())
}

/// The failure for an error writing to stdout: quiet for a closed pipe.
pub(crate) fn stdout_error(e: &std::io::Error) -> Fail {
    if e.kind() == std::io::ErrorKind::BrokenPipe {
        Fail::closed_stdout()
    } else {
        Fail::input(Path::new("<stdout>"), describe(e))
    }
}

/// Reads a whole input (a file, or stdin for `-`) of at most `limit` bytes; `what` says what
/// the limit is in the error message.
pub(crate) fn read_whole(path: &Path, limit: u64, what: &str) -> CliResult<Vec<u8>> {
    if let Some(url) = remote::parse_url(path)? {
        return remote::read_object(&url, limit, what);
    }
    let name = in_name(path);
    let source: Box<dyn Read> = if is_std(path) {
        Box::new(std::io::stdin().lock())
    } else {
        let file = File::open(path).at(path)?;
        if file.metadata().at(path)?.len() > limit {
            return Err(too_long(&name, limit, what));
        }
        Box::new(file)
    };
    let mut data = Vec::new();
    // Never trust a length: read at most one byte past the limit.
    source
        .take(limit.saturating_add(1))
        .read_to_end(&mut data)
        .at(&name)?;
    if data.len() as u64 > limit {
        return Err(too_long(&name, limit, what));
    }
    Ok(data)
}

fn too_long(name: &Path, limit: u64, what: &str) -> Fail {
    Fail::input(name, format!("holds more than {limit} bytes, {what}"))
}

/// Opens an input file for reads at positions (`-` is not accepted: see [`spool_stdin`]; a URL
/// is not either: see [`remote::spool`]).
pub(crate) fn open_input(path: &Path) -> CliResult<File> {
    File::open(path).at(path)
}

/// Copies stdin into an anonymous temporary file, at most `limit + 1` bytes, for an input read
/// at random positions; returns the file (positioned at its start) and the bytes copied.
pub(crate) fn spool_stdin(limit: u64) -> CliResult<(File, u64)> {
    let name = Path::new("<stdin>");
    let mut file = tempfile::tempfile().at(name)?;
    let n = std::io::copy(
        &mut std::io::stdin().lock().take(limit.saturating_add(1)),
        &mut file,
    )
    .at(name)?;
    file.seek(SeekFrom::Start(0)).at(name)?;
    Ok((file, n))
}

/// Reads exactly `buf.len()` bytes at `offset` of `file` (`name` for messages).
pub(crate) fn read_at(file: &mut File, name: &Path, offset: u64, buf: &mut [u8]) -> CliResult {
    file.seek(SeekFrom::Start(offset)).at(name)?;
    file.read_exact(buf).at(name)
}

/// Where an [`Output`] goes.
#[derive(Debug)]
enum Sink {
    /// A temporary file beside the target, persisted over it by [`Output::commit`].
    File {
        path: PathBuf,
        w: BufWriter<scifmt_io::Staged>,
        overwrite: bool,
    },
    /// A temporary file uploaded to `url` by [`Output::commit`].
    Remote {
        url: StoreLocation,
        w: BufWriter<tempfile::NamedTempFile>,
        overwrite: bool,
    },
    /// Stdout, written in order (`pos` bytes so far).
    Stdout {
        w: BufWriter<std::io::Stdout>,
        pos: u64,
    },
}

/// An output file (written atomically), an object at a URL (uploaded when complete) or stdout
/// (for `-`).
#[derive(Debug)]
pub(crate) struct Output(Sink);

impl Output {
    /// Starts writing `path` (stdout for `-`, an object for a URL). [`Output::commit`]
    /// replaces an existing file or object only if `overwrite`; otherwise it fails with
    /// [`Fail::appeared`] and leaves it as it is (the command checked with
    /// `guard::file_output` before; this catches one created meanwhile).
    pub(crate) fn create(path: &Path, overwrite: bool) -> CliResult<Self> {
        if is_std(path) {
            return Ok(Self(Sink::Stdout {
                w: BufWriter::with_capacity(1 << 20, std::io::stdout()),
                pos: 0,
            }));
        }
        if let Some(url) = remote::parse_url(path)? {
            let tmp = tempfile::Builder::new()
                .prefix(".scifmt-upload-")
                .tempfile()
                .at(remote::name(&url))?;
            return Ok(Self(Sink::Remote {
                url,
                w: BufWriter::with_capacity(1 << 20, tmp),
                overwrite,
            }));
        }
        // Beside the target, with the permissions a plain `File::create` gives.
        let tmp = scifmt_io::Staged::create(path).map_err(|e| Fail::input(path, describe(&e)))?;
        Ok(Self(Sink::File {
            path: path.to_path_buf(),
            w: BufWriter::with_capacity(1 << 20, tmp),
            overwrite,
        }))
    }

    /// Whether [`Output::write_at`] accepts any position (a file), or only the next one
    /// (stdout).
    pub(crate) fn is_seekable(&self) -> bool {
        matches!(self.0, Sink::File { .. } | Sink::Remote { .. })
    }

    /// Appends bytes.
    pub(crate) fn write(&mut self, bytes: &[u8]) -> CliResult {
        match &mut self.0 {
            Sink::File { path, w, .. } => w.write_all(bytes).at(path),
            Sink::Remote { url, w, .. } => w.write_all(bytes).at(remote::name(url)),
            Sink::Stdout { w, pos } => {
                w.write_all(bytes).map_err(|e| stdout_error(&e))?;
                *pos += bytes.len() as u64;
                Ok(())
            }
        }
    }

    /// Writes bytes at an absolute position (a file grows as needed; stdout takes only the
    /// position it has reached).
    pub(crate) fn write_at(&mut self, offset: u64, bytes: &[u8]) -> CliResult {
        match &mut self.0 {
            Sink::File { path, w, .. } => {
                w.seek(SeekFrom::Start(offset)).at(&*path)?;
                w.write_all(bytes).at(&*path)
            }
            Sink::Remote { url, w, .. } => {
                w.seek(SeekFrom::Start(offset)).at(remote::name(url))?;
                w.write_all(bytes).at(remote::name(url))
            }
            Sink::Stdout { pos, .. } if *pos != offset => Err(Fail::usage(format!(
                "internal error: stdout is at byte {pos}, not {offset}"
            ))),
            Sink::Stdout { .. } => self.write(bytes),
        }
    }

    /// Flushes, and renames a file into place or uploads the object (neither replacing an
    /// existing one without `overwrite`).
    pub(crate) fn commit(self) -> CliResult {
        match self.0 {
            Sink::File { path, w, overwrite } => {
                let staged = w
                    .into_inner()
                    .map_err(|e| Fail::input(&path, describe(e.error())))?;
                let durability = scifmt_io::Durability::None;
                if overwrite {
                    staged
                        .persist(durability)
                        .map_err(|e| Fail::input(&path, describe(&e)))
                } else if staged
                    .persist_new(durability)
                    .map_err(|e| Fail::input(&path, describe(&e)))?
                {
                    Ok(())
                } else {
                    Err(Fail::appeared(&path))
                }
            }
            Sink::Remote { url, w, overwrite } => {
                let tmp = w
                    .into_inner()
                    .map_err(|e| Fail::input(remote::name(&url), describe(e.error())))?;
                remote::upload_file(tmp.path(), &url, write_mode(overwrite))
            }
            Sink::Stdout { mut w, .. } => w.flush().map_err(|e| stdout_error(&e)),
        }
    }
}

/// Writes `bytes` to `path` atomically (or to stdout for `-`), replacing an existing file or
/// object only if `overwrite`.
pub(crate) fn write_output(path: &Path, bytes: &[u8], overwrite: bool) -> CliResult {
    let mut out = Output::create(path, overwrite)?;
    out.write(bytes)?;
    out.commit()
}

/// How uploads put objects: replacing (`--overwrite`) or create-only.
pub(crate) fn write_mode(overwrite: bool) -> scifmt_io::WriteMode {
    if overwrite {
        scifmt_io::WriteMode::Overwrite
    } else {
        scifmt_io::WriteMode::Conditional
    }
}

/// Reads until `buf` is full or the input ends; returns the bytes read.
pub(crate) fn read_full(r: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        let Some(rest) = buf.get_mut(n..) else { break };
        match r.read(rest) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}
