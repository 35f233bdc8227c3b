//! The chunk files of a sparse frame for the crate's `virtualize`: which files the
//! index names, and their lengths and checksums, from metadata alone (a `stat` per file
//! locally, one listing of the directory on an object store, plus a `HEAD` per chunk file on
//! stores whose listings carry no ETags). See the module docs of `virtualize` for the layout
//! and for what is checked.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use futures::{StreamExt, TryStreamExt, stream};
use object_store::ObjectStore;
use object_store::path::Path as ObjectPath;
use scifmt_io::{Cancel, Checksum, Object};

use crate::error::{Error, Result};
use crate::offsets::ChunkLocation;
use crate::reader::MIN_CHUNK_LEN;

/// Index entries (or listed objects) between two looks at the cancel flag.
const CANCEL_EVERY: usize = 4096;

/// Length of a chunk file's name: 8 hexadecimal digits and `.chunk`.
const NAME_LEN: usize = 14;

/// The name of chunk file `num`: `%08X.chunk`, as C-Blosc2 names them.
pub(crate) fn chunk_file_name(num: u32) -> String {
    format!("{num:08X}.chunk")
}

/// The number of the chunk file named `name` (exactly as [`chunk_file_name`] spells it:
/// upper-case digits), or `None` for any other name.
fn chunk_file_number(name: &str) -> Option<u32> {
    if name.len() != NAME_LEN {
        return None;
    }
    let hex = name.strip_suffix(".chunk")?;
    if !hex
        .bytes()
        .all(|b| b.is_ascii_digit() || (b'A'..=b'F').contains(&b))
    {
        return None;
    }
    u32::from_str_radix(hex, 16).ok()
}

/// One chunk file: its length and checksum.
#[derive(Debug)]
pub(crate) struct ChunkFile {
    /// Its length in bytes (the length of the reference).
    pub(crate) len: u64,
    /// Its ETag or modification time.
    pub(crate) checksum: Checksum,
}

/// Where the directory of a sparse frame is.
pub(crate) enum ChunkDir {
    /// A local directory.
    Local(std::path::PathBuf),
    /// A prefix of an object store.
    Store {
        /// The store.
        store: Arc<dyn ObjectStore>,
        /// The prefix.
        path: ObjectPath,
        /// `HEAD` requests in flight at most (stores whose listings carry no ETags).
        concurrency: usize,
    },
}

/// The chunk files of a sparse frame that its index names.
#[derive(Debug)]
pub(crate) struct ChunkFiles {
    /// The directory's URL (no trailing `/`).
    dir_url: String,
    /// By file number.
    files: HashMap<u32, ChunkFile>,
}

impl ChunkFiles {
    /// The files `index` names in the directory `dir` (named `dir_url`), by their metadata.
    /// `index_start` (the index chunk's offset in `chunks.b2frame`) is named in errors.
    ///
    /// # Errors
    /// [`Error::Io`] (locally) or [`Error::Remote`] (on a store) with `NotFound` for a chunk
    /// file that is not there, naming it and the chunk; [`Error::Invalid`] for an index entry
    /// that is no file number, or a chunk file that is not a file or shorter than a chunk
    /// header; [`Error::Io`] / [`Error::Remote`] for failed `stat`s or listings;
    /// [`Error::Cancelled`].
    pub(crate) fn read(
        dir: &ChunkDir,
        dir_url: &str,
        index: &[ChunkLocation],
        index_start: u64,
        cancel: &Cancel,
    ) -> Result<Self> {
        let dir_url = dir_url.trim_end_matches('/').to_owned();
        // The numbers the index names, each with the first chunk naming it (for messages).
        let mut wanted: HashMap<u32, usize> = HashMap::new();
        for (i, loc) in index.iter().enumerate() {
            if i % CANCEL_EVERY == 0 {
                cancel.check()?;
            }
            if let ChunkLocation::Stored(off) = *loc {
                wanted.entry(number(i, off, index_start)?).or_insert(i);
            }
        }
        let mut files = Self {
            dir_url,
            files: HashMap::new(),
        };
        match dir {
            ChunkDir::Local(path) => files.stat_local(path, &wanted, cancel)?,
            ChunkDir::Store {
                store,
                path,
                concurrency,
            } => files.list_store(store, path, &wanted, cancel, *concurrency)?,
        }
        Ok(files)
    }

    /// The URL of chunk file `num`.
    pub(crate) fn url(&self, num: u32) -> String {
        format!("{}/{}", self.dir_url, chunk_file_name(num))
    }

    /// Number of distinct chunk files.
    pub(crate) fn len(&self) -> usize {
        self.files.len()
    }

    /// Chunk `i`, stored in file `off` (an index entry): the file's number and metadata.
    ///
    /// # Errors
    /// [`Error::Invalid`] for an entry that is no file number; [`Error::Internal`] for a file
    /// [`ChunkFiles::read`] did not see (it fails for those).
    pub(crate) fn get(&self, i: usize, off: u64, index_start: u64) -> Result<(u32, &ChunkFile)> {
        let num = number(i, off, index_start)?;
        let file = self.files.get(&num).ok_or_else(|| Error::Internal {
            what: format!("chunk {i}: chunk file {num} was not looked up"),
        })?;
        Ok((num, file))
    }

    /// Locally: one `stat` per chunk file.
    fn stat_local(
        &mut self,
        dir: &Path,
        wanted: &HashMap<u32, usize>,
        cancel: &Cancel,
    ) -> Result<()> {
        // In order of the chunks, so the first missing file is reported.
        let mut order: Vec<(usize, u32)> = wanted.iter().map(|(&n, &i)| (i, n)).collect();
        order.sort_unstable();
        for (k, (i, num)) in order.into_iter().enumerate() {
            if k % CANCEL_EVERY == 0 {
                cancel.check()?;
            }
            let name = chunk_file_name(num);
            let path = dir.join(&name);
            let url = format!("{}/{name}", self.dir_url);
            let meta = std::fs::metadata(&path).map_err(|e| {
                let detail = if e.kind() == std::io::ErrorKind::NotFound {
                    format!(
                        "chunk {i} of the index is stored in this chunk file (number {num}), \
                         which does not exist"
                    )
                } else {
                    format!("the chunk file of chunk {i}: {e}")
                };
                Error::Io(std::io::Error::new(e.kind(), format!("{url}: {detail}")))
            })?;
            check_file(meta.is_file(), meta.len(), i, &url)?;
            let checksum = Checksum::of_file(&meta, &path)?;
            self.files.insert(
                num,
                ChunkFile {
                    len: meta.len(),
                    checksum,
                },
            );
        }
        Ok(())
    }

    /// On a store: one listing of the prefix, keeping the objects the index names. An object
    /// listed without an ETag (some stores' listings have none) is asked for its metadata
    /// with a `HEAD`, so its checksum is the one a reader sees (its ETag, or the
    /// modification time a `HEAD` reports, which may be coarser than a listing's).
    fn list_store(
        &mut self,
        store: &Arc<dyn ObjectStore>,
        dir: &ObjectPath,
        wanted: &HashMap<u32, usize>,
        cancel: &Cancel,
        concurrency: usize,
    ) -> Result<()> {
        let prefix = (!dir.as_ref().is_empty()).then_some(dir);
        let dir_url = self.dir_url.clone();
        let files = &mut self.files;
        let mut without_etag: Vec<(usize, u32)> = Vec::new();
        scifmt_io::block_on(async {
            let mut listing = store.list(prefix);
            let mut seen = 0usize;
            while let Some(meta) = listing.next().await {
                if seen.is_multiple_of(CANCEL_EVERY) {
                    cancel.check()?;
                }
                seen += 1;
                let meta = meta.map_err(|source| Error::Remote {
                    url: dir_url.clone(),
                    source,
                })?;
                // Only the objects right below the prefix (not deeper), named as chunk files.
                let Some(mut parts) = meta.location.prefix_match(dir) else {
                    continue;
                };
                let (Some(name), None) = (parts.next(), parts.next()) else {
                    continue;
                };
                let Some(num) = chunk_file_number(name.as_ref()) else {
                    continue;
                };
                let Some(&i) = wanted.get(&num) else {
                    continue;
                };
                let url = format!("{dir_url}/{}", chunk_file_name(num));
                check_file(true, meta.size, i, &url)?;
                if meta.e_tag.is_none() {
                    without_etag.push((i, num));
                }
                files.insert(
                    num,
                    ChunkFile {
                        len: meta.size,
                        checksum: Checksum::of_object(&meta),
                    },
                );
            }
            Ok::<(), Error>(())
        })??;
        self.head_store(store, dir, without_etag, cancel, concurrency)?;
        // The first chunk (in index order) whose file the listing lacks.
        let missing = wanted
            .iter()
            .filter(|(num, _)| !self.files.contains_key(num))
            .map(|(&num, &i)| (i, num))
            .min();
        if let Some((i, num)) = missing {
            return Err(missing_object(dir, i, num, &self.url(num)));
        }
        Ok(())
    }
}

impl ChunkFiles {
    /// The metadata of the chunk files `heads` (`(chunk, number)`, listed without an ETag) by
    /// `HEAD` requests, `concurrency` at a time.
    fn head_store(
        &mut self,
        store: &Arc<dyn ObjectStore>,
        dir: &ObjectPath,
        mut heads: Vec<(usize, u32)>,
        cancel: &Cancel,
        concurrency: usize,
    ) -> Result<()> {
        heads.sort_unstable();
        for batch in heads.chunks(CANCEL_EVERY) {
            cancel.check()?;
            let metas: Vec<(usize, u32, Object, Option<object_store::ObjectMeta>)> =
                scifmt_io::block_on(
                    stream::iter(batch.iter().map(|&(i, num)| {
                        let object = Object::new(
                            Arc::clone(store),
                            scifmt_io::child(dir, &chunk_file_name(num)),
                            self.url(num),
                        );
                        async move {
                            let meta = object.head().await?;
                            Ok::<_, scifmt_io::Error>((i, num, object, meta))
                        }
                    }))
                    .buffered(concurrency.max(1))
                    .try_collect(),
                )??;
            for (i, num, object, meta) in metas {
                // Listed, then gone: as if it were not listed.
                let meta = meta.ok_or_else(|| missing_object(dir, i, num, object.url()))?;
                check_file(true, meta.size, i, object.url())?;
                self.files.insert(
                    num,
                    ChunkFile {
                        len: meta.size,
                        checksum: Checksum::of_object(&meta),
                    },
                );
            }
        }
        Ok(())
    }
}

/// `Error::Remote` with `NotFound` for chunk file `num` of chunk `i`, at `url` below `dir`.
fn missing_object(dir: &ObjectPath, i: usize, num: u32, url: &str) -> Error {
    Error::Remote {
        source: object_store::Error::NotFound {
            path: scifmt_io::child(dir, &chunk_file_name(num)).to_string(),
            source: format!(
                "chunk {i} of the index is stored in this chunk file (number {num}), which \
                 the listing of the directory does not hold"
            )
            .into(),
        },
        url: url.to_owned(),
    }
}

/// The file number of index entry `off` of chunk `i` (C-Blosc2 numbers chunk files with 32
/// bits; [`Frame`](crate::Frame) checks that at open, this again).
fn number(i: usize, off: u64, index_start: u64) -> Result<u32> {
    u32::try_from(off).map_err(|_| {
        Error::invalid(
            "chunk offset",
            index_start,
            format!("chunk {i}: {off} is no chunk file number (32 bits)"),
        )
    })
}

/// A chunk file must be a file of at least a chunk header's length.
fn check_file(is_file: bool, len: u64, i: usize, url: &str) -> Result<()> {
    if !is_file {
        return Err(Error::invalid(
            "chunk file",
            0,
            format!("{url}: the chunk file of chunk {i} is not a file"),
        ));
    }
    if len < MIN_CHUNK_LEN {
        return Err(Error::invalid(
            "chunk file",
            0,
            format!(
                "{url}: the chunk file of chunk {i} holds {len} bytes, less than a chunk \
                 header ({MIN_CHUNK_LEN})"
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunk_file_names_round_trip() {
        for n in [0, 1, 0x1A, 0xDEAD_BEEF, u32::MAX] {
            assert_eq!(chunk_file_number(&chunk_file_name(n)), Some(n));
        }
        assert_eq!(chunk_file_name(26), "0000001A.chunk");
        for other in [
            "0000001a.chunk",
            "1A.chunk",
            "000000001A.chunk",
            "0000001A.chunks",
            "chunks.b2frame",
            "+000001A.chunk",
            "0000001A.CHUNK",
            "",
        ] {
            assert_eq!(chunk_file_number(other), None, "{other}");
        }
    }

    #[test]
    fn entries_past_32_bits_are_no_file_numbers() {
        assert!(matches!(
            number(3, 1 << 32, 123),
            Err(Error::Invalid {
                what: "chunk offset",
                offset: 123,
                ..
            })
        ));
        assert_eq!(number(3, 7, 123).unwrap_or(0), 7);
    }
}
