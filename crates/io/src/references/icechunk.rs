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
//! whatever the number of references. The parts are committed on a branch of the writer's own;
//! `main` moves to the last one when the writer finishes (a conditional update: it fails if
//! another writer moved `main` meanwhile), so readers see the empty repository or the whole
//! one. The repository is a local directory or an `s3://` prefix.

use std::collections::HashMap;
use std::sync::Arc;

use icechunk::config::Credentials;
use icechunk::format::SnapshotId;
use icechunk::format::format_constants::SpecVersionBin;
use icechunk::format::manifest::{
    Checksum as IcChecksum, SecondsSinceEpoch, VirtualChunkLocation, VirtualChunkRef,
};
use icechunk::storage::{ETag, S3Credentials, S3Options, S3StaticCredentials};
use icechunk::virtual_chunks::VirtualChunkContainer;
use icechunk::{ObjectStoreConfig, Repository, RepositoryConfig, Storage, Store};
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

/// A branch name of this writer's own, for the parts before `main` moves.
fn work_branch() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!("scifmt-virtualize-{}-{nanos}", std::process::id())
}

/// Writes virtual references into a new Icechunk repository (see the module docs).
pub struct IcechunkWriter {
    name: String,
    repo: Repository,
    store: Store,
    /// The branch the parts are committed on.
    work: String,
    /// `main`'s snapshot when the repository was created.
    initial: SnapshotId,
    arrays: DeclaredArrays,
    pending: u64,
    commits: u64,
    commit_every: u64,
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

/// The setting `names[0]` (or one of its aliases, `names[1..]`): from `config` (keys as
/// [`Location::parse`] takes them, in any case), else from the environment.
fn setting(config: &[(String, String)], names: &[&str]) -> Option<String> {
    let given = names.iter().find_map(|n| {
        config
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(n))
            .map(|(_, v)| v.clone())
    });
    given
        .or_else(|| names.iter().find_map(|n| std::env::var(n).ok()))
        .filter(|v| !v.is_empty())
}

/// Whether a boolean setting is `true`.
fn flag(config: &[(String, String)], names: &[&str]) -> bool {
    setting(config, names).is_some_and(|v| v.eq_ignore_ascii_case("true"))
}

/// The S3 options of `config` and the environment: endpoint, region, plain HTTP, path style
/// for a custom endpoint (as [`store_for_url`](crate::store_for_url) configures S3).
fn s3_options(config: &[(String, String)]) -> (S3Options, bool) {
    let endpoint = setting(config, &["AWS_ENDPOINT_URL", "AWS_ENDPOINT"]);
    let mut options = S3Options::default()
        .with_allow_http(flag(config, &["AWS_ALLOW_HTTP"]))
        .with_force_path_style(
            endpoint.is_some() && !flag(config, &["AWS_VIRTUAL_HOSTED_STYLE_REQUEST"]),
        );
    if let Some(r) = setting(config, &["AWS_REGION", "AWS_DEFAULT_REGION"]) {
        options = options.with_region(r);
    }
    if let Some(e) = &endpoint {
        options = options.with_endpoint_url(e.clone());
    }
    (options, endpoint.is_some())
}

/// The S3 credentials `config` gives (access key and secret, maybe a session token); `None`:
/// Icechunk takes them from the environment.
fn s3_credentials(config: &[(String, String)]) -> Option<S3Credentials> {
    let given = |names: &[&str]| {
        names.iter().find_map(|n| {
            config
                .iter()
                .find(|(k, _)| k.eq_ignore_ascii_case(n))
                .map(|(_, v)| v.clone())
        })
    };
    let key = given(&["AWS_ACCESS_KEY_ID"])?;
    let secret = given(&["AWS_SECRET_ACCESS_KEY"])?;
    Some(S3Credentials::Static(S3StaticCredentials {
        access_key_id: key,
        secret_access_key: secret,
        session_token: given(&["AWS_SESSION_TOKEN", "AWS_TOKEN"]),
        expires_after: None,
    }))
}

/// The virtual chunk container for sources below `prefix` (a reference URL, see
/// [`reference_url`](crate::reference_url)) and the credentials readers of this process use
/// for it (`None`: the environment's).
fn container(
    prefix: &str,
    name: &str,
    config: &[(String, String)],
) -> Result<(VirtualChunkContainer, Option<Credentials>)> {
    let prefix = format!("{}/", prefix.trim_end_matches('/'));
    let (store, credentials) = if let Some(path) = prefix.strip_prefix("file://") {
        (
            ObjectStoreConfig::LocalFileSystem(std::path::PathBuf::from(path)),
            None,
        )
    } else if prefix.starts_with("s3://") {
        let (options, custom_endpoint) = s3_options(config);
        let store = if custom_endpoint {
            ObjectStoreConfig::S3Compatible(options)
        } else {
            ObjectStoreConfig::S3(options)
        };
        (store, s3_credentials(config).map(Credentials::S3))
    } else {
        return Err(Error::Unsupported {
            name: name.to_owned(),
            what: format!("virtual chunks of {prefix}: only local files and s3:// sources so far"),
        });
    };
    let c = VirtualChunkContainer::new(prefix, store).map_err(|e| ic(name, e))?;
    Ok((c, credentials))
}

/// The bucket and the key prefix of an `s3://bucket/prefix` URL.
fn s3_bucket_prefix(url: &str) -> Option<(String, String)> {
    let rest = url.strip_prefix("s3://")?;
    let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
    (!bucket.is_empty()).then(|| (bucket.to_owned(), prefix.trim_matches('/').to_owned()))
}

/// The storage of a repository at `dst`: a local directory, or a prefix on S3 (configured
/// by `config` and the environment).
async fn storage(
    dst: &Location,
    name: &str,
    config: &[(String, String)],
) -> Result<Arc<dyn Storage + Send + Sync>> {
    match dst {
        Location::Local(path) => {
            std::fs::create_dir_all(path).map_err(|e| Error::io(path, e))?;
            icechunk::new_local_filesystem_storage(path)
                .await
                .map_err(|e| ic(name, e))
        }
        Location::Store(s) => {
            let Some((bucket, prefix)) = s3_bucket_prefix(s.url()) else {
                return Err(Error::Unsupported {
                    name: name.to_owned(),
                    what: "Icechunk repositories on object stores: s3:// only so far".into(),
                });
            };
            let (options, _) = s3_options(config);
            icechunk::new_s3_object_store_storage(
                options,
                bucket,
                (!prefix.is_empty()).then_some(prefix),
                s3_credentials(config),
                Vec::new(),
                Vec::new(),
            )
            .await
            .map_err(|e| ic(name, e))
        }
    }
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
    /// Creates a repository at `dst` (a local directory that is empty or absent, or an
    /// `s3://` prefix that holds none) whose virtual chunks may come from below each of
    /// `sources` (reference URLs: `file:///…`, `s3://…`). `config`: object-store settings as
    /// [`Location::parse`] takes them (`AWS_ENDPOINT_URL`, `AWS_ACCESS_KEY_ID`, …; any case),
    /// over the environment's, for the repository and the S3 sources.
    ///
    /// The references are committed on a branch of their own; `main` holds the empty first
    /// snapshot until [`finish`](Self::finish) moves it to the last one, so a reader never
    /// sees a partial repository, however many parts the references are committed in.
    ///
    /// # Errors
    /// [`Error::Unsupported`] for a repository on an object store other than S3 or a source
    /// of another scheme; [`Error::Icechunk`] if Icechunk cannot create it (e.g. `dst` holds
    /// one already).
    pub fn create(dst: &Location, sources: &[String], config: &[(String, String)]) -> Result<Self> {
        let name = dst.to_string();
        let mut repo_config = RepositoryConfig::default();
        let mut authorized: HashMap<String, Option<Credentials>> = HashMap::new();
        for s in sources {
            let (c, credentials) = container(s, &name, config)?;
            authorized.insert(c.url_prefix().to_owned(), credentials);
            repo_config
                .set_virtual_chunk_container(c)
                .map_err(|e| ic(&name, e))?;
        }
        let (repo, store, work, initial) = block_on(async {
            let storage = storage(dst, &name, config).await?;
            let repo = Repository::create(storage)
                .config(repo_config)
                .spec_version(SpecVersionBin::V1)
                .authorize_virtual_chunk_access(authorized)
                .execute()
                .await
                .map_err(|e| ic(&name, e))?;
            let initial = repo.lookup_branch(BRANCH).await.map_err(|e| ic(&name, e))?;
            let work = work_branch();
            repo.create_branch(&work, &initial)
                .await
                .map_err(|e| ic(&name, e))?;
            let store = Self::session(&repo, &work, &name).await?;
            Ok::<_, Error>((repo, store, work, initial))
        })??;
        Ok(Self {
            name,
            repo,
            store,
            work,
            initial,
            arrays: DeclaredArrays::default(),
            pending: 0,
            commits: 0,
            commit_every: COMMIT_EVERY,
        })
    }

    /// Commits a part every `n` chunks (at least 1; 2²⁰ by default): Icechunk
    /// holds a part's changes in memory until it is committed.
    #[must_use]
    pub fn with_commit_every(mut self, n: u64) -> Self {
        self.commit_every = n.max(1);
        self
    }

    async fn session(repo: &Repository, branch: &str, name: &str) -> Result<Store> {
        let session = repo
            .writable_session(branch)
            .await
            .map_err(|e| ic(name, e))?;
        Ok(Store::from_session(Arc::new(RwLock::new(session))).await)
    }

    /// Commits what the current session holds, with `message` (also nothing: the last part
    /// may have just been committed); the snapshot.
    async fn commit(&self, message: &str) -> Result<SnapshotId> {
        let session = self.store.session();
        let mut guard = session.write().await;
        let id = guard
            .commit(message)
            .allow_empty(true)
            .execute()
            .await
            .map_err(|e| ic(&self.name, e))?;
        Ok(id)
    }

    fn set(&self, key: &str, text: serde_json::Result<String>) -> Result<()> {
        let text = text.map_err(|e| Error::InvalidArgument(format!("{key}: {e}")))?;
        block_on(self.store.set(key, text.into()))?.map_err(|e| ic(&self.name, e))
    }

    /// Commits the last references and moves `main` to the snapshot that holds them all (only
    /// if `main` is still where [`create`](Self::create) left it: another writer's commit in
    /// between is an error, not overwritten); its id.
    ///
    /// # Errors
    /// [`Error::Icechunk`].
    pub fn finish(self) -> Result<String> {
        block_on(async {
            let last = self.commit("scifmt virtualize").await?;
            self.repo
                .reset_branch(BRANCH, &last, Some(&self.initial))
                .await
                .map_err(|e| ic(&self.name, e))?;
            self.repo
                .delete_branch(&self.work)
                .await
                .map_err(|e| ic(&self.name, e))?;
            Ok(last.to_string())
        })?
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
    /// Counts one chunk set; commits every `commit_every` of them.
    fn added(&mut self) -> Result<()> {
        self.pending += 1;
        if self.pending >= self.commit_every {
            let name = self.name.clone();
            let part = self.commits + 1;
            let store = block_on(async {
                self.commit(&format!("scifmt virtualize (part {part})"))
                    .await?;
                Self::session(&self.repo, &self.work, &name).await
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

    /// `key` read from the tip of `main` of the Icechunk 1 repository at `dst` (its storage
    /// opened as the writer opens it), its virtual chunks below `prefix` authorized with
    /// `credentials`; the store's error as text (a repository that does not open fails the
    /// test).
    #[allow(
        clippy::unwrap_in_result,
        reason = "only the read's own error is returned"
    )]
    fn read_main(
        dst: &Location,
        config: &[(String, String)],
        prefix: &str,
        credentials: Option<Credentials>,
        key: &str,
    ) -> std::result::Result<Vec<u8>, String> {
        block_on(async {
            let storage = storage(dst, "test", config).await.unwrap();
            let auth = HashMap::from([(format!("{prefix}/"), credentials)]);
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
            store
                .get(key, &ByteRange::ALL)
                .await
                .map(|b| b.to_vec())
                .map_err(|e| e.to_string())
        })
        .unwrap()
    }

    /// An array of 8 bytes in chunks of 4.
    fn eight_bytes() -> ArrayMetadataV3 {
        serde_json::from_value(serde_json::json!({
            "zarr_format": 3, "node_type": "array", "shape": [8], "data_type": "uint8",
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [4]}},
            "chunk_key_encoding": {"name": "default"}, "fill_value": 0,
            "codecs": [{"name": "bytes"}]}))
        .unwrap()
    }

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
            &[],
        )
        .unwrap();
        w.group("", &GroupMetadataV3::new()).unwrap();
        w.array("a", &eight_bytes()).unwrap();
        w.reference(&ChunkReference::new("a", &[1], &url, 16, 4).with_checksum(Some(&checksum)))
            .unwrap();
        w.inline("a", &[0], &[9, 8, 7, 6]).unwrap();
        assert!(w.inline("b", &[0], &[1]).is_err());
        w.finish().unwrap();

        let repo = Location::Local(repo_dir.clone());
        let read = |key: &str| read_main(&repo, &[], &prefix, None, key);
        assert_eq!(read("a/c/1").unwrap(), [16, 17, 18, 19]);
        assert_eq!(read("a/c/0").unwrap(), [9, 8, 7, 6]);
        let f = std::fs::File::options().write(true).open(&file).unwrap();
        f.set_modified(std::time::SystemTime::now() + std::time::Duration::from_secs(60))
            .unwrap();
        let e = read("a/c/1").unwrap_err();
        assert!(e.contains("checksum"), "{e}");
    }

    /// The repository on S3 (the test server), of an S3 source: `main` stays the empty first
    /// snapshot while the parts are committed, holds every reference once the writer
    /// finishes, and a rewritten source fails the read (its ETag).
    #[test]
    fn a_repository_on_s3_reads_back_and_main_moves_only_when_finished() {
        let server = s3_testserver::TestServer::start().unwrap();
        let config = server.env();
        let src = Location::parse(&server.url("src/data.bin"), &config).unwrap();
        src.write_small(
            &(0u8..=255).collect::<Vec<_>>(),
            crate::Durability::default(),
        )
        .unwrap();
        let meta = block_on(async {
            let Location::Store(s) = &src else {
                unreachable!("an s3:// URL")
            };
            object_store::ObjectStoreExt::head(s.store(), s.path()).await
        })
        .unwrap()
        .unwrap();
        let checksum = Checksum::of_object(&meta);
        assert!(matches!(checksum, Checksum::ETag(_)));
        let prefix = server.url("src");
        let url = server.url("src/data.bin");
        let dst = Location::parse(&server.url("repos/one"), &config).unwrap();
        let mut w = IcechunkWriter::create(&dst, std::slice::from_ref(&prefix), &config)
            .unwrap()
            .with_commit_every(1);
        w.group("", &GroupMetadataV3::new()).unwrap();
        w.array("a", &eight_bytes()).unwrap();
        for (i, offset) in [(0u64, 100u64), (1, 16)] {
            w.reference(
                &ChunkReference::new("a", &[i], &url, offset, 4).with_checksum(Some(&checksum)),
            )
            .unwrap();
        }
        assert_eq!(w.commits, 2, "two parts committed before finishing");
        let read = |key: &str| {
            let credentials = s3_credentials(&config).map(Credentials::S3);
            read_main(&dst, &config, &prefix, credentials, key)
        };
        // Parts committed, main not moved: the array is not there yet.
        assert!(read("a/zarr.json").is_err());
        let snapshot = w.finish().unwrap();
        assert!(!snapshot.is_empty());
        assert_eq!(read("a/c/0").unwrap(), [100, 101, 102, 103]);
        assert_eq!(read("a/c/1").unwrap(), [16, 17, 18, 19]);
        assert!(read("zarr.json").is_ok());
        // A repository there already: refused, the existing one untouched.
        assert!(IcechunkWriter::create(&dst, std::slice::from_ref(&prefix), &config).is_err());
        assert_eq!(read("a/c/1").unwrap(), [16, 17, 18, 19]);
        // The source rewritten (same size, other bytes, a new ETag): the read fails.
        src.write_small(&[7u8; 256], crate::Durability::default())
            .unwrap();
        let e = read("a/c/1").unwrap_err();
        assert!(e.contains("checksum") && e.contains(&url), "{e}");
        // Nothing of the writer's own branch is left.
        let branches = block_on(async {
            let storage = storage(&dst, "repos/one", &config).await.unwrap();
            let repo = Repository::open(storage).execute().await.unwrap();
            repo.list_branches().await.unwrap()
        })
        .unwrap();
        assert_eq!(
            branches.into_iter().collect::<Vec<_>>(),
            [BRANCH.to_owned()]
        );
    }
}
