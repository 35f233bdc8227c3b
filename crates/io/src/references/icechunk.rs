//! [`IcechunkWriter`]: virtual references as an Icechunk repository (feature `icechunk`).
//!
//! The repository is created in the Icechunk 1 format (spec version 1), which Icechunk 1.x
//! (Python `icechunk` 1.1) and 2.x both read, with one virtual chunk container per source
//! prefix (`file:///…/` for local files; `s3://bucket/…/` configured from the `AWS_*`
//! environment as [`store_for_url`](crate::store_for_url) reads it). Nodes are written as their
//! `zarr.json` through the Icechunk store, chunks as virtual references with the source's
//! checksum: the ETag, or the modification time rounded up to the second (Icechunk's checksum
//! has whole seconds; it refuses a source modified after it).
//!
//! Icechunk keeps a session's changes in memory until they are committed, so the writer
//! commits every [`COMMIT_EVERY`] references and starts a new session: memory stays bounded
//! whatever the number of references. The repository is local for now.

use std::collections::HashMap;
use std::sync::Arc;

use icechunk::config::Credentials;
use icechunk::format::format_constants::SpecVersionBin;
use icechunk::format::manifest::{
    Checksum as IcChecksum, SecondsSinceEpoch, VirtualChunkLocation, VirtualChunkRef,
};
use icechunk::storage::{ETag, S3Options};
use icechunk::virtual_chunks::VirtualChunkContainer;
use icechunk::{ObjectStoreConfig, Repository, RepositoryConfig, Store};
use tokio::sync::RwLock;
use zarrs_metadata::v3::{ArrayMetadataV3, GroupMetadataV3};

use crate::error::{Error, Result};
use crate::location::Location;
use crate::references::chunk::{
    Checksum, ChunkReference, DeclaredArrays, ReferenceSink, check_node_path, node_key,
};
use crate::remote::runtime::block_on;

/// References committed at once; a larger set is committed in parts of this many.
pub(crate) const COMMIT_EVERY: u64 = 1 << 20;

/// The branch the references are committed to.
const BRANCH: &str = "main";

/// Writes virtual references into a new Icechunk repository (see the module docs).
pub struct IcechunkWriter {
    name: String,
    repo: Repository,
    store: Store,
    arrays: DeclaredArrays,
    pending: u64,
    commits: u64,
}

impl std::fmt::Debug for IcechunkWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IcechunkWriter")
            .field("name", &self.name)
            .field("commits", &self.commits)
            .finish_non_exhaustive()
    }
}

/// An Icechunk error on the repository `name`.
fn ic(name: &str, e: impl std::fmt::Display) -> Error {
    Error::Icechunk {
        repository: name.to_owned(),
        what: crate::redact::redact(&e.to_string()),
    }
}

/// The virtual chunk container for sources below `prefix` (a reference URL, see
/// [`reference_url`](crate::reference_url)).
fn container(prefix: &str, name: &str) -> Result<VirtualChunkContainer> {
    let prefix = format!("{}/", prefix.trim_end_matches('/'));
    let store = if let Some(path) = prefix.strip_prefix("file://") {
        ObjectStoreConfig::LocalFileSystem(std::path::PathBuf::from(path))
    } else if prefix.starts_with("s3://") {
        let env = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
        let endpoint = env("AWS_ENDPOINT_URL").or_else(|| env("AWS_ENDPOINT"));
        let mut options = S3Options::default()
            .with_allow_http(env("AWS_ALLOW_HTTP").is_some_and(|v| v.eq_ignore_ascii_case("true")))
            .with_force_path_style(
                endpoint.is_some()
                    && !env("AWS_VIRTUAL_HOSTED_STYLE_REQUEST")
                        .is_some_and(|v| v.eq_ignore_ascii_case("true")),
            );
        if let Some(r) = env("AWS_REGION").or_else(|| env("AWS_DEFAULT_REGION")) {
            options = options.with_region(r);
        }
        if let Some(e) = &endpoint {
            options = options.with_endpoint_url(e.clone());
        }
        if endpoint.is_some() {
            ObjectStoreConfig::S3Compatible(options)
        } else {
            ObjectStoreConfig::S3(options)
        }
    } else {
        return Err(Error::Unsupported {
            name: name.to_owned(),
            what: format!("virtual chunks of {prefix}: only local files and s3:// sources so far"),
        });
    };
    VirtualChunkContainer::new(prefix, store).map_err(|e| ic(name, e))
}

/// Icechunk's checksum for ours: the ETag, or the modification time rounded up to a second.
fn ic_checksum(c: &Checksum) -> Option<IcChecksum> {
    match c {
        Checksum::ETag(e) => Some(IcChecksum::ETag(ETag(e.clone()))),
        Checksum::LastModified { seconds, nanos } => {
            let up = if *nanos > 0 {
                seconds.checked_add(1)?
            } else {
                *seconds
            };
            Some(IcChecksum::LastModified(SecondsSinceEpoch(
                u32::try_from(up).ok()?,
            )))
        }
    }
}

impl IcechunkWriter {
    /// Creates a repository at `dst` (a local directory that is empty or absent) whose virtual
    /// chunks may come from below each of `sources` (reference URLs: `file:///…`, `s3://…`).
    ///
    /// # Errors
    /// [`Error::Unsupported`] for a repository on an object store or a source of another
    /// scheme; [`Error::Icechunk`] if Icechunk cannot create it (e.g. `dst` is not empty).
    pub fn create(dst: &Location, sources: &[String]) -> Result<Self> {
        let name = dst.to_string();
        let Location::Local(path) = dst else {
            return Err(Error::Unsupported {
                name,
                what: "Icechunk repositories on object stores: not yet (write it locally)".into(),
            });
        };
        let mut config = RepositoryConfig::default();
        let mut authorized: HashMap<String, Option<Credentials>> = HashMap::new();
        for s in sources {
            let c = container(s, &name)?;
            authorized.insert(c.url_prefix().to_owned(), None);
            config
                .set_virtual_chunk_container(c)
                .map_err(|e| ic(&name, e))?;
        }
        std::fs::create_dir_all(path).map_err(|e| Error::io(path, e))?;
        let (repo, store) = block_on(async {
            let storage = icechunk::new_local_filesystem_storage(path)
                .await
                .map_err(|e| ic(&name, e))?;
            let repo = Repository::create(storage)
                .config(config)
                .spec_version(SpecVersionBin::V1)
                .authorize_virtual_chunk_access(authorized)
                .execute()
                .await
                .map_err(|e| ic(&name, e))?;
            let store = Self::session(&repo, &name).await?;
            Ok::<_, Error>((repo, store))
        })??;
        Ok(Self {
            name,
            repo,
            store,
            arrays: DeclaredArrays::default(),
            pending: 0,
            commits: 0,
        })
    }

    async fn session(repo: &Repository, name: &str) -> Result<Store> {
        let session = repo
            .writable_session(BRANCH)
            .await
            .map_err(|e| ic(name, e))?;
        Ok(Store::from_session(Arc::new(RwLock::new(session))).await)
    }

    /// Commits what the current session holds, with `message`; the snapshot id.
    async fn commit(&self, message: &str) -> Result<String> {
        let session = self.store.session();
        let mut guard = session.write().await;
        let id = guard
            .commit(message)
            .execute()
            .await
            .map_err(|e| ic(&self.name, e))?;
        Ok(id.to_string())
    }

    fn set(&self, key: &str, text: serde_json::Result<String>) -> Result<()> {
        let text = text.map_err(|e| Error::InvalidArgument(format!("{key}: {e}")))?;
        block_on(self.store.set(key, text.into()))?.map_err(|e| ic(&self.name, e))
    }

    /// Commits the last references; the id of the snapshot that holds them all.
    ///
    /// # Errors
    /// [`Error::Icechunk`].
    pub fn finish(self) -> Result<String> {
        block_on(self.commit("scifmt virtualize"))?
    }
}

impl ReferenceSink for IcechunkWriter {
    fn group(&mut self, path: &str, group: &GroupMetadataV3) -> Result<()> {
        check_node_path(path)?;
        self.set(&node_key(path, "zarr.json"), serde_json::to_string(group))
    }

    fn array(&mut self, path: &str, array: &ArrayMetadataV3) -> Result<()> {
        check_node_path(path)?;
        let key = node_key(path, "zarr.json");
        self.arrays.declare(path, &key, array)?;
        self.set(&key, serde_json::to_string(array))
    }

    fn reference(&mut self, r: &ChunkReference<'_>) -> Result<()> {
        let key = self.arrays.chunk_key(&self.name, r.array, r.indices)?;
        let reference = VirtualChunkRef {
            location: VirtualChunkLocation::from_url(r.url).map_err(|e| ic(&self.name, e))?,
            offset: r.offset,
            length: r.length,
            checksum: r.checksum.and_then(ic_checksum),
        };
        block_on(self.store.set_virtual_ref(&key, reference, true))?
            .map_err(|e| ic(&self.name, e))?;
        self.added()
    }

    /// Sets the chunk to `bytes` (Icechunk keeps chunks up to its inline threshold, 512 bytes
    /// by default, in the manifest; larger ones as chunk objects of the repository).
    fn inline(&mut self, array: &str, indices: &[u64], bytes: &[u8]) -> Result<()> {
        let key = self.arrays.chunk_key(&self.name, array, indices)?;
        block_on(self.store.set(&key, bytes::Bytes::copy_from_slice(bytes)))?
            .map_err(|e| ic(&self.name, e))?;
        self.added()
    }
}

impl IcechunkWriter {
    /// Counts one chunk set; commits every [`COMMIT_EVERY`] of them.
    fn added(&mut self) -> Result<()> {
        self.pending += 1;
        if self.pending >= COMMIT_EVERY {
            let name = self.name.clone();
            let part = self.commits + 1;
            let store = block_on(async {
                self.commit(&format!("scifmt virtualize (part {part})"))
                    .await?;
                Self::session(&self.repo, &name).await
            })??;
            self.store = store;
            self.commits = part;
            self.pending = 0;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "a failed unwrap is a failed test")]

    use icechunk::format::ByteRange;
    use icechunk::repository::VersionInfo;

    use super::*;
    use crate::references::chunk::reference_url;

    #[test]
    fn icechunk_reads_the_references_back_and_refuses_a_changed_source() {
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path().join("src");
        std::fs::create_dir(&src).unwrap();
        let file = src.join("data.bin");
        std::fs::write(&file, (0u8..=255).collect::<Vec<_>>()).unwrap();
        let prefix = reference_url(&Location::Local(src.clone())).unwrap();
        let url = reference_url(&Location::Local(file.clone())).unwrap();
        let checksum = Checksum::of_file(&std::fs::metadata(&file).unwrap(), &file).unwrap();
        let repo_dir = dir.path().join("repo");
        let mut w = IcechunkWriter::create(
            &Location::Local(repo_dir.clone()),
            std::slice::from_ref(&prefix),
        )
        .unwrap();
        w.group("", &GroupMetadataV3::new()).unwrap();
        let array: ArrayMetadataV3 = serde_json::from_value(serde_json::json!({
            "zarr_format": 3, "node_type": "array", "shape": [8], "data_type": "uint8",
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [4]}},
            "chunk_key_encoding": {"name": "default"}, "fill_value": 0,
            "codecs": [{"name": "bytes"}]}))
        .unwrap();
        w.array("a", &array).unwrap();
        w.reference(&ChunkReference::new("a", &[1], &url, 16, 4).with_checksum(Some(&checksum)))
            .unwrap();
        w.inline("a", &[0], &[9, 8, 7, 6]).unwrap();
        assert!(w.inline("b", &[0], &[1]).is_err());
        w.finish().unwrap();

        let read = |key: &str| {
            block_on(async {
                let storage = icechunk::new_local_filesystem_storage(&repo_dir)
                    .await
                    .unwrap();
                let auth = HashMap::from([(format!("{prefix}/"), None)]);
                let repo = Repository::open(storage)
                    .authorize_virtual_chunk_access(auth)
                    .execute()
                    .await
                    .unwrap();
                assert_eq!(repo.spec_version(), SpecVersionBin::V1);
                let session = repo
                    .readonly_session(&VersionInfo::BranchTipRef(BRANCH.into()))
                    .await
                    .unwrap();
                let store = Store::from_session(Arc::new(RwLock::new(session))).await;
                store.get(key, &ByteRange::ALL).await.map(|b| b.to_vec())
            })
            .unwrap()
        };
        assert_eq!(read("a/c/1").unwrap(), [16, 17, 18, 19]);
        assert_eq!(read("a/c/0").unwrap(), [9, 8, 7, 6]);
        let f = std::fs::File::options().write(true).open(&file).unwrap();
        f.set_modified(std::time::SystemTime::now() + std::time::Duration::from_secs(60))
            .unwrap();
        let e = read("a/c/1").unwrap_err().to_string();
        assert!(e.contains("checksum"), "{e}");
    }
}
