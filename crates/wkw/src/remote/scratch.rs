//! Local scratch space for whole remote data files: a temporary local dataset where files are
//! downloaded, rebuilt or checked, and error messages that name the object instead of the
//! temporary file.

use std::path::{Path as FsPath, PathBuf};

use bytes::Bytes;
use futures::StreamExt;
use object_store::{ObjectStoreExt, UpdateVersion};

use super::RemoteDataset;
use crate::dataset::root::Dataset;
use crate::error::{Error, Result};
use crate::format::header::Header;
use crate::options::{Durability, Options};

impl RemoteDataset {
    /// Downloads data file `idx` to `to` (removing `to` if there is no object), returning the
    /// version it had.
    pub(super) async fn download(
        &self,
        idx: [u32; 3],
        to: &FsPath,
    ) -> Result<Option<UpdateVersion>> {
        let url = self.file_url(idx);
        // The local copy is scratch space: its errors name the object, never the temporary path.
        self.download_to(idx, to)
            .await
            .map_err(|e| relabel(e, to, &url))
    }

    async fn download_to(&self, idx: [u32; 3], to: &FsPath) -> Result<Option<UpdateVersion>> {
        let location = self.file_location(idx);
        let url = self.file_url(idx);
        let res = match self.inner.store.get(&location).await {
            Ok(r) => r,
            Err(object_store::Error::NotFound { .. }) => {
                match std::fs::remove_file(to) {
                    Ok(()) => {}
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                    Err(e) => return Err(Error::io(to, e)),
                }
                return Ok(None);
            }
            Err(source) => return Err(Error::Remote { url, source }),
        };
        let version = UpdateVersion {
            e_tag: res.meta.e_tag.clone(),
            version: res.meta.version.clone(),
        };
        let size = res.meta.size;
        if let Some(dir) = to.parent() {
            std::fs::create_dir_all(dir).map_err(|e| Error::io(to, e))?;
        }
        let mut file = std::fs::File::create(to).map_err(|e| Error::io(to, e))?;
        let mut stream = res.into_stream();
        let mut written = 0u64;
        while let Some(chunk) = stream.next().await {
            let chunk = chunk.map_err(|source| Error::Remote {
                url: url.clone(),
                source,
            })?;
            std::io::Write::write_all(&mut file, &chunk).map_err(|e| Error::io(to, e))?;
            written += chunk.len() as u64;
        }
        if written != size {
            return Err(Error::Remote {
                url,
                source: object_store::Error::Generic {
                    store: "wkw",
                    source: format!("got {written} of {size} bytes").into(),
                },
            });
        }
        Ok(Some(version))
    }
}

/// A local dataset in a temporary directory, where remote files are rebuilt.
pub(super) struct Scratch {
    pub(super) ds: Dataset,
    _dir: tempfile::TempDir,
}

impl Scratch {
    pub(super) fn new(header: &Header, options: &Options) -> Result<Self> {
        let dir = tempfile::Builder::new()
            .prefix(".wkw-remote-")
            .tempdir()
            .map_err(|e| Error::io(std::env::temp_dir(), e))?;
        // Errors name the system's temporary directory, never the scratch folder inside it.
        let ds = Dataset::create_with(
            dir.path().join("ds"),
            *header,
            options.clone().with_durability(Durability::None),
        )
        .map_err(|e| match e {
            Error::Io { source, .. } => Error::io(std::env::temp_dir(), source),
            e => e,
        })?;
        Ok(Self { ds, _dir: dir })
    }
}

/// Reads a scratch file into memory for an upload.
pub(super) fn tokio_free_read(path: &FsPath) -> Result<Bytes> {
    std::fs::read(path)
        .map(Bytes::from)
        .map_err(|e| Error::io(path, e))
}

/// Replaces the scratch path `from` by `url` in errors that name it.
pub(super) fn relabel(e: Error, from: &FsPath, url: &str) -> Error {
    match e {
        Error::Io { path, source } if path == from => Error::Io {
            path: PathBuf::from(url),
            source,
        },
        Error::Format { path, source } if path == from => Error::Format {
            path: PathBuf::from(url),
            source,
        },
        e => e,
    }
}
