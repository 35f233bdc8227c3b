//! Whole-dataset operations: [`compress`] (convert every file to another block type) and
//! [`verify`] (check every file), both with progress callbacks.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::dataset::root::Dataset;
use crate::error::{Error, Result};
use crate::format::file::{FileMeta, OpenFailure, write_compressed_head};
use crate::format::header::BlockType;
use crate::format::lz4;
use crate::io::fsio::write_all_at;
use crate::io::storage::FsFile;
use crate::options::Options;
use scifmt_io::{ReadAt, Staged};

/// Progress of a whole-dataset operation, passed to the callback after each file.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct Progress<'a> {
    /// Files finished so far (including this one).
    pub done: usize,
    /// Files in total.
    pub total: usize,
    /// The file just finished.
    pub path: &'a Path,
}

/// The verdict on one data file. With the `serde` feature it serializes as
/// `{"path": "…", "index": [x, y, z], "problem": "message" | null}` (the error's message).
#[derive(Debug)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[non_exhaustive]
pub struct FileReport {
    /// The file.
    pub path: PathBuf,
    /// File index (x, y, z).
    pub index: [u32; 3],
    /// `None` if the file is sound, otherwise the first problem found.
    #[cfg_attr(feature = "serde", serde(serialize_with = "problem_message"))]
    pub problem: Option<Error>,
}

/// Serializes a problem as its message.
#[cfg(feature = "serde")]
fn problem_message<S: serde::Serializer>(
    problem: &Option<Error>,
    s: S,
) -> core::result::Result<S::Ok, S::Error> {
    match problem {
        Some(e) => s.serialize_some(&e.to_string()),
        None => s.serialize_none(),
    }
}

/// What [`verify`] found. With the `serde` feature it serializes as
/// `{"ok": bool, "files": [FileReport, …]}`.
#[derive(Debug)]
#[non_exhaustive]
pub struct VerifyReport {
    /// One entry per data file, sorted by (z, y, x).
    pub files: Vec<FileReport>,
}

#[cfg(feature = "serde")]
impl serde::Serialize for VerifyReport {
    fn serialize<S: serde::Serializer>(&self, s: S) -> core::result::Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut st = s.serialize_struct("VerifyReport", 2)?;
        st.serialize_field("ok", &self.is_ok())?;
        st.serialize_field("files", &self.files)?;
        st.end()
    }
}

impl VerifyReport {
    /// Whether every file is sound.
    #[must_use]
    pub fn is_ok(&self) -> bool {
        self.files.iter().all(|f| f.problem.is_none())
    }

    /// The files with problems.
    pub fn problems(&self) -> impl Iterator<Item = &FileReport> {
        self.files.iter().filter(|f| f.problem.is_some())
    }
}

/// Converts every data file of the dataset at `src` into a new dataset at `dst` with
/// `block_type` (any direction: raw → LZ4/LZ4HC, compressed → raw, LZ4 ↔ LZ4HC). Every block is
/// written, also all-zero ones; files are converted in parallel and each is written to a
/// temporary name and renamed into place. `progress` is called after each file.
///
/// Unlike the reference's `Dataset.compress`, which only writes `header.wkw` unless asked,
/// this converts the data.
///
/// `options` apply to both datasets: limits, header check and threads to reading the source,
/// durability ([`crate::Durability::Fsync`]) to every file written. A corrupt source file is
/// always an error, whatever [`Options::missing_or_corrupt`] says: converting it to zeros would
/// lose its data for good (run [`verify`] first to find such files). [`Options::cancel`] is
/// checked before each file and each batch of blocks.
///
/// `dst` must be apart from `src`: not the same directory (whatever the spelling: symlinks,
/// `..`, relative or absolute), not inside it and not around it (checked by
/// `scifmt_io::ensure_apart` before anything is written).
///
/// # Errors
/// [`Error::Overlap`] if `dst` is `src`, lies inside it or contains it;
/// [`Error::AlreadyExists`] if `dst` is a dataset already; any read error of a source file
/// (corrupt files are errors); [`Error::Io`]; [`Error::Cancelled`] once [`Options::cancel`] is
/// raised (the files converted so far stay in `dst`, each complete).
pub fn compress(
    src: impl AsRef<Path>,
    dst: impl AsRef<Path>,
    block_type: BlockType,
    options: Options,
    progress: &(dyn Fn(Progress<'_>) + Sync),
) -> Result<Dataset> {
    scifmt_io::ensure_apart(src.as_ref(), dst.as_ref())?;
    let source = Dataset::open_with(src, options.clone())?;
    let header = source.header().with_block_type(block_type);
    let target = Dataset::create_with(dst, header, options)?;
    let files = source.list_files()?;
    let total = files.len();
    let done = AtomicUsize::new(0);
    crate::kernels::par::try_for_each(source.options().threads, files, |(idx, path)| {
        source.options().cancel.check()?;
        convert_file(&source, &target, idx, &path)?;
        let d = done.fetch_add(1, Ordering::Relaxed) + 1;
        progress(Progress {
            done: d,
            total,
            path: &path,
        });
        Ok(())
    })?;
    Ok(target)
}

pub(crate) fn convert_file(
    source: &Dataset,
    target: &Dataset,
    idx: [u32; 3],
    path: &Path,
) -> Result<()> {
    let f = std::fs::File::open(path)
        .and_then(FsFile::new)
        .map_err(|e| Error::io(path, e))?;
    let meta = match FileMeta::parse(&f, &source.options().limits, path) {
        Ok(m) => m,
        Err(OpenFailure::Unreadable(e)) => return Err(Error::format(path, e)),
        Err(OpenFailure::Hard(e)) => return Err(e),
    };
    source.check_file_header(&meta.header, path)?;
    let out_header = target.header().for_data_file();
    let block_len =
        usize::try_from(meta.header.block_bytes()).map_err(|_| Error::LimitExceeded {
            what: "raw block",
            requested: meta.header.block_bytes(),
            limit: usize::MAX as u64,
        })?;
    let out_path = target.file_path(idx);
    if let Some(dir) = out_path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    }
    let tmp = Staged::create(&out_path)?;
    let n = meta.header.blocks_per_file();
    let per_chunk = (64u64 << 20) / meta.header.block_bytes().max(1);
    let per_chunk = per_chunk.clamp(1, 4096);
    let mut ends = Vec::new();
    let mut pos = out_header.data_offset();
    let mut k0 = 0;
    while k0 < n {
        source.options().cancel.check()?;
        let k1 = (k0 + per_chunk).min(n);
        let blocks =
            crate::kernels::par::try_map(source.options().threads, (k0..k1).collect(), |k| {
                let mut block = vec![0u8; block_len];
                let mut scratch = Vec::new();
                meta.read_block(&f, k, &mut scratch, &mut block, path)?;
                lz4::compress(&block, out_header.block_type())
            })?;
        for b in blocks {
            write_all_at(tmp.file(), &b, pos).map_err(|e| Error::io(tmp.target(), e))?;
            pos += b.len() as u64;
            ends.push(pos);
        }
        k0 = k1;
    }
    if out_header.block_type().is_compressed() {
        write_compressed_head(tmp.file(), tmp.target(), &out_header, &ends)?;
    } else {
        write_all_at(tmp.file(), &out_header.to_bytes(), 0)
            .map_err(|e| Error::io(tmp.target(), e))?;
    }
    tmp.file()
        .set_len(pos)
        .map_err(|e| Error::io(tmp.target(), e))?;
    Ok(tmp.persist(target.options().durability)?)
}

/// Checks every data file of the dataset at `root`: header (and agreement with `header.wkw`),
/// dataOffset, jump table, raw file length, and that every block reads/decodes to exactly one
/// raw block. Files are checked in parallel; `progress` is called after each.
/// [`Options::cancel`] is checked before each file and each block.
///
/// # Errors
/// Only for problems with the dataset itself (no `header.wkw`, unlistable directories) and
/// [`Error::Cancelled`]; file problems are reported in the [`VerifyReport`].
pub fn verify(
    root: impl AsRef<Path>,
    options: Options,
    progress: &(dyn Fn(Progress<'_>) + Sync),
) -> Result<VerifyReport> {
    let ds = Dataset::open_with(root, options)?;
    let files = ds.list_files()?;
    let total = files.len();
    let done = AtomicUsize::new(0);
    let files = crate::kernels::par::try_map(ds.options().threads, files, |(index, path)| {
        ds.options().cancel.check()?;
        let problem = verify_file(&ds, &path).err();
        if matches!(problem, Some(Error::Cancelled)) {
            return Err(Error::Cancelled);
        }
        let d = done.fetch_add(1, Ordering::Relaxed) + 1;
        progress(Progress {
            done: d,
            total,
            path: &path,
        });
        Ok(FileReport {
            path,
            index,
            problem,
        })
    })?;
    Ok(VerifyReport { files })
}

pub(crate) fn verify_file(ds: &Dataset, path: &Path) -> Result<()> {
    let f = std::fs::File::open(path)
        .and_then(FsFile::new)
        .map_err(|e| Error::io(path, e))?;
    let meta = match FileMeta::parse(&f, &ds.options().limits, path) {
        Ok(m) => m,
        Err(OpenFailure::Unreadable(e)) => return Err(Error::format(path, e)),
        Err(OpenFailure::Hard(e)) => return Err(e),
    };
    ds.check_file_header(&meta.header, path)?;
    let block_len =
        usize::try_from(meta.header.block_bytes()).map_err(|_| Error::LimitExceeded {
            what: "raw block",
            requested: meta.header.block_bytes(),
            limit: usize::MAX as u64,
        })?;
    if meta.jump.is_none() {
        // Raw: the file must hold every block; contents cannot be wrong.
        let full = meta.header.raw_file_len().unwrap_or(u64::MAX);
        if meta.len < full {
            return Err(Error::format(
                path,
                crate::FormatError::BlockPastEnd {
                    index: meta.header.blocks_per_file() - 1,
                    end: full,
                    file_len: meta.len,
                },
            ));
        }
        let mut last = [0u8; 1];
        return ReadAt::read_exact_at(&f.file, &mut last, full - 1).map_err(|e| Error::io(path, e));
    }
    let mut block = vec![0u8; block_len];
    let mut scratch = Vec::new();
    for k in 0..meta.header.blocks_per_file() {
        ds.options().cancel.check()?;
        meta.read_block(&f, k, &mut scratch, &mut block, path)?;
    }
    Ok(())
}
