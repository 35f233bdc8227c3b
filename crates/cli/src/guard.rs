//! What a writing command checks before it writes or deletes anything, and the `--overwrite`
//! flag that lets it replace an existing output.
//!
//! - **Never the input**: an output that is an input, lies inside it or contains it is refused
//!   with or without `--overwrite` ([`apart`], through `scifmt_io::ensure_apart`: local paths by
//!   identity, so symlinks, `..`, relative and absolute spellings and hard links name one thing;
//!   URLs by store and key prefix; `file://` URLs are local paths). `-` (stdin/stdout) is no
//!   path and never checked.
//! - **Never an existing output without `--overwrite`** ([`file_output`], [`dir_output`]): the
//!   refusal names the flag and what would be deleted (`out.bin exists (a file of 1234 bytes)`).
//!   A file output never replaces a directory and a dataset never replaces a file or a directory
//!   of another kind, with or without the flag.
//! - **Race-free where the system allows**: without `--overwrite` a file is moved into place
//!   only if the name is still free (`Staged::persist_new`), an object is put create-only
//!   (`PutMode::Create`, see [`crate::remote::upload_file`]), a directory built beside its
//!   target is renamed into place (a rename never replaces a non-empty directory). With
//!   `--overwrite` a directory output is built complete beside the old one and swapped in
//!   ([`Staging`], `scifmt_io::replace_dir`): the old content is deleted last.

use std::path::{Path, PathBuf};

use clap::Args;

use crate::fail::{CliResult, Fail, describe};
use crate::inout::is_std;
use crate::names::display_name;
use crate::remote;
use scifmt_io::StoreLocation;

/// `--overwrite`, the same on every command that writes an output.
#[derive(Debug, Clone, Copy, Args)]
pub(crate) struct OverwriteFlag {
    /// Replace an existing output file or object (without it, an existing output is refused
    /// and left as it is). An output that is an input, or lies inside or around one, is
    /// refused either way.
    #[arg(long)]
    pub(crate) overwrite: bool,
}

/// The kinds of directory (or URL prefix) a command writes as a whole.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DirKind {
    /// A WKW dataset (`header.wkw` and `z*/y*/x*.wkw`).
    Wkw,
    /// A sparse Blosc2 frame (`chunks.b2frame` and `%08X.chunk` files).
    SparseFrame,
}

impl DirKind {
    /// `a WKW dataset`, as messages say it.
    fn name(self) -> &'static str {
        match self {
            Self::Wkw => "a WKW dataset",
            Self::SparseFrame => "a sparse Blosc2 frame",
        }
    }

    /// The file whose presence makes a directory one of these.
    fn marker(self) -> &'static str {
        match self {
            Self::Wkw => wkw::HEADER_FILE_NAME,
            Self::SparseFrame => blosc2_frame::SPARSE_FRAME_FILE,
        }
    }
}

/// What is at a directory output's place, as [`dir_output`] found it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DirPlan {
    /// Nothing (or an empty directory): the new one is renamed into place.
    New,
    /// A non-empty directory (or prefix) of another kind that the command only adds files to
    /// without replacing any (`wkw create`'s `header.wkw`, written create-only).
    Fill,
    /// One of the same kind, to be replaced (`--overwrite`).
    Replace,
}

/// Refuses an `output` that is one of `inputs`, lies inside one or contains one (`-` on
/// either side is never a path and is skipped). The refusal is `scifmt_io`'s sentence naming
/// both and saying which contains which; exit status 2.
pub(crate) fn apart(inputs: &[&Path], output: &Path) -> CliResult {
    if is_std(output) {
        return Ok(());
    }
    for &input in inputs {
        if is_std(input) {
            continue;
        }
        scifmt_io::ensure_apart(input, output).map_err(|e| match e {
            scifmt_io::Error::Overlap { .. } => Fail::usage(e),
            scifmt_io::Error::Io { path, source } => Fail::input(path, describe(&source)),
            other => Fail::usage(describe(&other)),
        })?;
    }
    Ok(())
}

/// The checks before a command writes the file (or object) `output` from `inputs`: apart from
/// every input ([`apart`]); not an existing file or object unless `overwrite`; never a
/// directory. `-` is stdout and always fine.
pub(crate) fn file_output(inputs: &[&Path], output: &Path, overwrite: bool) -> CliResult {
    apart(inputs, output)?;
    if is_std(output) {
        return Ok(());
    }
    if let Some(url) = remote::parse_url(output)? {
        return match remote::head_size(&url)? {
            Some(n) if !overwrite => Err(exists(
                url.url(),
                &format!("an object of {}", count(n, "byte")),
            )),
            _ => Ok(()),
        };
    }
    let meta = match std::fs::symlink_metadata(output) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(Fail::input(output, describe(&e))),
    };
    let name = display_name(output);
    match std::fs::metadata(output) {
        Ok(m) if m.is_dir() => Err(Fail::input(
            output,
            format!(
                "exists as {}, and a file output never replaces a directory",
                describe_dir(output)?.text
            ),
        )),
        _ if overwrite => Ok(()),
        Ok(m) if m.is_file() => Err(exists(
            &name,
            &format!("a file of {}", count(m.len(), "byte")),
        )),
        Ok(_) => Err(exists(&name, "a special file")),
        Err(_) if meta.is_symlink() => Err(exists(&name, "a symbolic link to nothing")),
        Err(e) => Err(Fail::input(output, describe(&e))),
    }
}

/// `NAME exists (WHAT): add --overwrite to replace it`.
fn exists(name: &str, what: &str) -> Fail {
    Fail::usage(format!(
        "{name} exists ({what}): add --overwrite to replace it"
    ))
}

/// The checks before a command writes the directory (or URL prefix) `output` of `kind` from
/// `inputs`: apart from every input; an existing one replaced only with `overwrite`, only if it
/// is of the same `kind` and only for a local directory (or a sparse frame at a URL, whose new
/// index replaces the old one only when all its chunks are uploaded); `fill`: a non-empty
/// directory of another kind is written into (the command adds files create-only).
pub(crate) fn dir_output(
    inputs: &[&Path],
    output: &Path,
    kind: DirKind,
    overwrite: bool,
    fill: bool,
) -> CliResult<DirPlan> {
    apart(inputs, output)?;
    let (found, remote) = match remote::parse_url(output)? {
        Some(url) => (describe_prefix(&url)?, true),
        None => match std::fs::symlink_metadata(output) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(DirPlan::New),
            Err(e) => return Err(Fail::input(output, describe(&e))),
            Ok(_) => match std::fs::metadata(output) {
                Ok(m) if m.is_dir() => (Some(describe_dir(output)?), false),
                Ok(m) => {
                    let what = if m.is_file() {
                        format!("a file of {}", count(m.len(), "byte"))
                    } else {
                        "a special file".to_owned()
                    };
                    return Err(Fail::input(
                        output,
                        format!(
                            "exists as {what}, and {} never replaces a file",
                            kind.name()
                        ),
                    ));
                }
                Err(e) => return Err(Fail::input(output, describe(&e))),
            },
        },
    };
    let Some(found) = found.filter(|f| f.files > 0) else {
        return Ok(DirPlan::New);
    };
    let name = display_name(output);
    if found.kind != Some(kind) {
        if fill {
            return Ok(DirPlan::Fill);
        }
        return Err(Fail::usage(format!(
            "{name} exists ({}), which is not {}: it is neither written into nor replaced (choose another output, or delete it first)",
            found.text,
            kind.name()
        )));
    }
    if remote && kind != DirKind::SparseFrame {
        return Err(Fail::usage(format!(
            "{name} exists ({}): a dataset at a URL cannot be replaced in one step, so it is never replaced (delete it first, or choose another output)",
            found.text
        )));
    }
    if !overwrite {
        let how = if remote {
            "the new frame's index replaces the old one only when all its chunks are uploaded"
        } else {
            "the new one is built beside it and replaces it only when complete"
        };
        return Err(Fail::usage(format!(
            "{name} exists ({}): add --overwrite to replace it ({how})",
            found.text
        )));
    }
    Ok(DirPlan::Replace)
}

/// What a directory or prefix holds: its kind (if it is one a command writes), the number of
/// files and the text messages show.
#[derive(Debug)]
struct Found {
    kind: Option<DirKind>,
    files: u64,
    text: String,
}

/// `N things` with the plural where needed.
fn count(n: u64, what: &str) -> String {
    if n == 1 {
        format!("1 {what}")
    } else {
        format!("{n} {what}s")
    }
}

/// A byte count for people: `812 bytes`, `23.1 MB` (powers of 1000).
pub(crate) fn size_text(n: u64) -> String {
    const UNITS: [&str; 5] = ["kB", "MB", "GB", "TB", "PB"];
    if n < 1000 {
        return count(n, "byte");
    }
    #[allow(clippy::cast_precision_loss, reason = "a size for display")]
    let mut v = n as f64 / 1000.0;
    let mut unit = UNITS[0];
    for u in &UNITS[1..] {
        if v < 999.95 {
            break;
        }
        v /= 1000.0;
        unit = u;
    }
    format!("{v:.1} {unit}")
}

/// The kind named by the markers among a directory's direct entries.
fn kind_of(names: &[String]) -> (Option<DirKind>, &'static str) {
    let has = |n: &str| names.iter().any(|x| x == n);
    for kind in [DirKind::Wkw, DirKind::SparseFrame] {
        if has(kind.marker()) {
            return (Some(kind), kind.name());
        }
    }
    let other = if has("zarr.json") || has(".zarray") || has(".zgroup") {
        "a Zarr array or group"
    } else if has("datasource-properties.json") {
        "a webKNOSSOS dataset"
    } else {
        "a directory"
    };
    (None, other)
}

/// Describes a local directory: kind, files (recursively, symlinks not followed) and bytes.
fn describe_dir(dir: &Path) -> CliResult<Found> {
    fn walk(dir: &Path, files: &mut u64, bytes: &mut u64) -> std::io::Result<()> {
        for e in std::fs::read_dir(dir)? {
            let e = e?;
            let t = e.file_type()?;
            if t.is_dir() {
                walk(&e.path(), files, bytes)?;
            } else {
                *files += 1;
                *bytes += e.metadata()?.len();
            }
        }
        Ok(())
    }
    let names: Vec<String> = std::fs::read_dir(dir)
        .and_then(|it| {
            it.map(|e| e.map(|e| e.file_name().to_string_lossy().into_owned()))
                .collect()
        })
        .map_err(|e| Fail::input(dir, describe(&e)))?;
    let (mut files, mut bytes) = (0, 0);
    walk(dir, &mut files, &mut bytes).map_err(|e| Fail::input(dir, describe(&e)))?;
    let (kind, what) = kind_of(&names);
    Ok(Found {
        kind,
        files,
        text: format!("{what}, {}, {}", count(files, "file"), size_text(bytes)),
    })
}

/// Describes the objects under a URL prefix (`None` if there are none).
fn describe_prefix(url: &StoreLocation) -> CliResult<Option<Found>> {
    let objects = remote::list_prefix(url)?;
    if objects.is_empty() {
        return Ok(None);
    }
    let names: Vec<String> = objects
        .iter()
        .filter(|(rel, _)| !rel.contains('/'))
        .map(|(rel, _)| rel.clone())
        .collect();
    let bytes = objects.iter().map(|(_, n)| n).sum::<u64>();
    let n = objects.len() as u64;
    let (kind, what) = kind_of(&names);
    let what = if what == "a directory" {
        "a prefix"
    } else {
        what
    };
    Ok(Some(Found {
        kind,
        files: n,
        text: format!("{what}, {}, {}", count(n, "object"), size_text(bytes)),
    }))
}

/// A directory built beside its target (a hidden sibling in the same parent, created empty
/// here) and then put in its place ([`Staging::publish`]); removed if dropped unpublished.
#[derive(Debug)]
pub(crate) struct Staging {
    path: PathBuf,
    target: PathBuf,
    published: bool,
}

impl Staging {
    /// Creates the empty staging directory beside `target` (and `target`'s parent directories).
    pub(crate) fn new(target: &Path) -> CliResult<Self> {
        let stamp = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let tag = format!("scifmt-new-{}-{stamp:08x}", std::process::id());
        let path = scifmt_io::sibling(target, &tag).map_err(|e| Fail::usage(describe(&e)))?;
        if let Some(parent) = target.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).map_err(|e| Fail::input(target, describe(&e)))?;
        }
        std::fs::create_dir(&path).map_err(|e| Fail::input(target, describe(&e)))?;
        Ok(Self {
            path,
            target: target.to_path_buf(),
            published: false,
        })
    }

    /// The staging directory (the command builds the new content here).
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// `fail` naming the target wherever it names the staging directory.
    pub(crate) fn relabel(&self, fail: Fail) -> Fail {
        remote::relabel(fail, &self.path, &display_name(&self.target))
    }

    /// Puts the complete staging directory in the target's place: swapped with the old one
    /// for [`DirPlan::Replace`] (the old content deleted last), otherwise renamed, which fails
    /// rather than replace a directory that appeared meanwhile.
    pub(crate) fn publish(mut self, plan: DirPlan) -> CliResult {
        let r = if plan == DirPlan::Replace {
            scifmt_io::replace_dir(&self.path, &self.target, scifmt_io::Durability::None)
                .map_err(|e| self.relabel(Fail::input(&self.target, describe(&e))))
        } else {
            std::fs::rename(&self.path, &self.target).map_err(|e| {
                if std::fs::symlink_metadata(&self.target).is_ok() {
                    Fail::appeared(&self.target)
                } else {
                    Fail::input(&self.target, describe(&e))
                }
            })
        };
        if r.is_ok() {
            self.published = true;
        }
        r
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        if !self.published {
            let _ = std::fs::remove_dir_all(&self.path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inout::Output;

    use testkit::dir_names as names;

    #[test]
    fn a_file_created_meanwhile_is_not_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("out.bin");
        file_output(&[], &target, false).unwrap();
        let mut out = Output::create(&target, false).unwrap();
        out.write(b"ours").unwrap();
        // Another process creates the output between the check and the commit.
        std::fs::write(&target, b"theirs").unwrap();
        let fail = out.commit().unwrap_err();
        assert_eq!(fail.code, 2);
        assert!(
            fail.msg.contains("out.bin exists (created while"),
            "{}",
            fail.msg
        );
        assert_eq!(std::fs::read(&target).unwrap(), b"theirs");
        assert_eq!(names(dir.path()), ["out.bin"]);
        // With --overwrite it is replaced.
        let mut out = Output::create(&target, true).unwrap();
        out.write(b"ours").unwrap();
        out.commit().unwrap();
        assert_eq!(std::fs::read(&target).unwrap(), b"ours");
    }

    #[test]
    fn an_object_created_meanwhile_is_not_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("out.bin");
        let url = format!("file://{}", target.display());
        let url = remote::parse_url(Path::new(&url)).unwrap().unwrap();
        let local = dir.path().join("local");
        std::fs::write(&local, b"ours").unwrap();
        std::fs::write(&target, b"theirs").unwrap();
        let fail =
            remote::upload_file(&local, &url, scifmt_io::WriteMode::Conditional).unwrap_err();
        assert!(fail.msg.contains("exists (created while"), "{}", fail.msg);
        assert_eq!(std::fs::read(&target).unwrap(), b"theirs");
        remote::upload_file(&local, &url, scifmt_io::WriteMode::Overwrite).unwrap();
        assert_eq!(std::fs::read(&target).unwrap(), b"ours");
    }

    #[test]
    fn a_directory_created_meanwhile_is_not_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("ds");
        assert_eq!(
            dir_output(&[], &target, DirKind::Wkw, false, false).unwrap(),
            DirPlan::New
        );
        let staging = Staging::new(&target).unwrap();
        std::fs::write(staging.path().join("header.wkw"), b"ours").unwrap();
        std::fs::create_dir(&target).unwrap();
        std::fs::write(target.join("header.wkw"), b"theirs").unwrap();
        let fail = staging.publish(DirPlan::New).unwrap_err();
        assert!(
            fail.msg.contains("ds exists (created while"),
            "{}",
            fail.msg
        );
        assert_eq!(std::fs::read(target.join("header.wkw")).unwrap(), b"theirs");
        // The staging directory went with the refusal.
        assert_eq!(names(dir.path()), ["ds"]);
        // Replaced whole with --overwrite.
        let staging = Staging::new(&target).unwrap();
        std::fs::write(staging.path().join("header.wkw"), b"ours").unwrap();
        staging.publish(DirPlan::Replace).unwrap();
        assert_eq!(std::fs::read(target.join("header.wkw")).unwrap(), b"ours");
        assert_eq!(names(dir.path()), ["ds"]);
    }

    #[test]
    fn sizes_read_like_people_write_them() {
        assert_eq!(size_text(0), "0 bytes");
        assert_eq!(size_text(1), "1 byte");
        assert_eq!(size_text(999), "999 bytes");
        assert_eq!(size_text(1000), "1.0 kB");
        assert_eq!(size_text(23_100_000), "23.1 MB");
        assert_eq!(size_text(999_960), "1.0 MB");
        assert_eq!(count(52, "file"), "52 files");
    }
}
