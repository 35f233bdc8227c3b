//! [`IcechunkWriter`]: virtual references as an Icechunk repository (feature `icechunk`).
//!
//! The repository is created in the Icechunk 1 format (spec version 1), which Icechunk 1.x
//! (Python `icechunk` 1.1) and 2.x both read, with one virtual chunk container per source
//! prefix (`file:///…/` for local files; `s3://bucket/…/` configured from the `AWS_*`
//! environment as [`store_for_url`](crate::store_for_url) reads it; `az://container/…/` with
//! the account from `AZURE_STORAGE_ACCOUNT_NAME` and its endpoint settings, which the container
//! keeps for readers, never the key; `gs://bucket/…/` with `GOOGLE_BASE_URL` if set, the
//! credentials from the `GOOGLE_*` settings, which readers must also give: Icechunk reads GCS
//! virtual chunks anonymously without them; `http(s)://host/…/`, plain HTTP allowed for
//! `http://`, its chunks checked by modification time: see [`IcechunkWriter`]'s `checksum`).
//! Nodes are written as their
//! `zarr.json` through the Icechunk store, chunks as virtual references with the source's
//! checksum: the ETag, or the modification time rounded up to the second (Icechunk's checksum
//! has whole seconds; it refuses a source modified after it).
//!
//! Icechunk keeps a session's changes in memory until they are committed, so the writer
//! commits every [`COMMIT_EVERY`] references and starts a new session, with the manifests split
//! every [`MANIFEST_SPLIT`] chunks along each axis so a part rewrites only the manifests it
//! touches (a writer's setting, not stored in the repository): memory stays bounded
//! whatever the number of references. The parts are committed on a branch of the writer's own;
//! `main` moves to the last one when the writer finishes (a conditional update: it fails if
//! another writer moved `main` meanwhile), so readers see the empty repository or the whole
//! one. The repository is a local directory, an `s3://` prefix or an `az://container/prefix`
//! (the account from `AZURE_STORAGE_ACCOUNT_NAME`; an access key, SAS or bearer token from the
//! settings, else object_store's Azure credential chain).
//!
//! [`IcechunkWriter::update`] opens an existing repository instead: the work branch starts at
//! `main`'s tip, and the run's nodes and references are compared with what is there. A
//! reference that is already there (same file, range and checksum) is not set again, and what
//! the run no longer produces is deleted: references to files it did not reference or whose
//! checksum changed, chunks stored in the repository that it did not store, and nodes it did not
//! write. `main` then moves to one new commit holding exactly what a new repository would hold;
//! the earlier snapshots stay in its history. (Stored chunks larger than Icechunk's inline
//! threshold are chunk objects, not compared: they are set again.)
//!
//! An update reads the references `main` holds first, to tell a producer which sources it
//! need not read ([`ReferenceSink::unchanged_source`]): a source whose version (ETag,
//! modification time) is the one all its references in the same array carry, when that
//! array's metadata is unchanged, keeps its references as they are. (Modification times
//! compare in whole seconds, the precision of Icechunk's checksum: a local file rewritten
//! within the second its recorded time names passes, as it passes Icechunk's read check.)
//!
//! A writer dropped before it finishes (an error, Ctrl-C) deletes its branch; `main` did not
//! move. Memory: a checksum per source file, a path per
//! node, the coordinates of the stored chunks (runs of NaNs), besides Icechunk's session.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use futures::TryStreamExt;
use icechunk::config::{
    AzureCredentials, AzureStaticCredentials, Credentials, GcsBearerCredential, GcsCredentials,
    GcsStaticCredentials, HttpConfig,
};
use icechunk::format::format_constants::SpecVersionBin;
use icechunk::format::manifest::ChunkPayload;
use icechunk::format::manifest::{
    Checksum as IcChecksum, SecondsSinceEpoch, VirtualChunkLocation, VirtualChunkRef,
};
use icechunk::format::{ByteRange, ChunkIndices, NodeType, Path, SnapshotId};
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

/// References committed at once; a larger set is committed in parts of this many. An
/// Icechunk session holds about 700 bytes per reference set until it is committed (measured:
/// 773 MiB peak for 2²⁰ references in one part), so a part of 2¹⁶ keeps it near 50 MiB.
pub(crate) const COMMIT_EVERY: u64 = 1 << 16;

/// Chunks per axis of one manifest: a commit rewrites only the manifests whose chunks it
/// changed, so the parts of a large array (WKW files of 32³ blocks, streamed file by file) do
/// not rewrite all its references each time.
const MANIFEST_SPLIT: u32 = 32;

/// The writer's configuration, layered on the repository's when the writer opens it and
/// never stored (readers need none of it): manifests split every [`MANIFEST_SPLIT`] chunks
/// along every axis, and caches of about four parts of references (Icechunk's defaults keep
/// 15 million chunk references of the manifests it reads and writes).
fn writer_config() -> RepositoryConfig {
    use icechunk::config::{
        CachingConfig, ManifestConfig, ManifestSplitCondition, ManifestSplitDim,
        ManifestSplitDimCondition, ManifestSplittingConfig,
    };
    let splitting = ManifestSplittingConfig {
        split_sizes: Some(vec![(
            ManifestSplitCondition::AnyArray,
            vec![ManifestSplitDim {
                condition: ManifestSplitDimCondition::Any,
                num_chunks: MANIFEST_SPLIT,
            }],
        )]),
    };
    RepositoryConfig {
        manifest: Some(ManifestConfig {
            splitting: Some(splitting),
            ..ManifestConfig::default()
        }),
        caching: Some(CachingConfig {
            num_chunk_refs: Some(4 * COMMIT_EVERY),
            num_transaction_changes: Some(4 * COMMIT_EVERY),
            ..CachingConfig::default()
        }),
        ..RepositoryConfig::default()
    }
}

/// The repository in `storage` opened for writing: with [`writer_config`], its virtual chunk
/// containers authorized.
async fn open_for_writing(
    storage: Arc<dyn Storage + Send + Sync>,
    authorized: HashMap<String, Option<Credentials>>,
    name: &str,
) -> Result<Repository> {
    Repository::open(storage)
        .config(writer_config())
        .authorize_virtual_chunk_access(authorized)
        .execute()
        .await
        .map_err(|e| ic(name, e))
}

/// The branch the references are committed to.
const BRANCH: &str = "main";

/// A branch name of this writer's own, for the parts before `main` moves.
fn work_branch() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!("scifmt-virtualize-{}-{nanos}", std::process::id())
}

/// Writes virtual references into an Icechunk repository, new or existing (see the module
/// docs).
pub struct IcechunkWriter {
    name: String,
    repo: Repository,
    store: Store,
    /// The branch the parts are committed on.
    work: String,
    /// `main`'s snapshot when the writer started.
    initial: SnapshotId,
    arrays: DeclaredArrays,
    pending: u64,
    commits: u64,
    commit_every: u64,
    /// Set when updating an existing repository.
    update: Option<Update>,
    /// Whether the work branch is gone (finished, or deleted by `Drop`).
    done: bool,
    /// The store settings sources are read with (for [`Self::checksum`]'s `HEAD`s).
    config: Vec<(String, String)>,
    /// The checksum recorded for each `http(s)://` source (see [`Self::checksum`]).
    http_checksums: HashMap<String, Option<IcChecksum>>,
}

/// A writer dropped before [`IcechunkWriter::finish`] (an error, Ctrl-C) deletes its work
/// branch: `main` never moved, so the repository is as it was (a new one: empty).
impl Drop for IcechunkWriter {
    fn drop(&mut self) {
        if !self.done {
            let _ = block_on(self.repo.delete_branch(&self.work));
        }
    }
}

/// What an update compares against and deletes by (see the module docs).
#[derive(Debug, Default)]
struct Update {
    /// The nodes this run wrote, as Icechunk paths.
    nodes: HashSet<String>,
    /// Each source file this run referenced, with its checksum now.
    files: HashMap<String, Option<IcChecksum>>,
    /// The chunks this run stored in the repository (inline or as chunk objects), by array.
    stored: HashMap<String, HashSet<Vec<u32>>>,
    /// The virtual chunks `main` held when the update started, by source URL.
    before: HashMap<String, Before>,
    /// The arrays (Icechunk paths) whose `zarr.json` this run found as it was.
    same_arrays: HashSet<String>,
    counts: UpdateCounts,
}

/// A source's virtual chunks in the repository an update starts from.
#[derive(Debug)]
struct Before {
    /// The array (Icechunk path) holding them; `None` if more than one does.
    array: Option<String>,
    /// Their checksum; `None` if they do not all have one and the same.
    checksum: Option<IcChecksum>,
    count: u64,
}

/// The virtual chunks of every array of the session, by source URL (a checksum per source
/// file and the path of its array: memory grows with the files, not the chunks).
async fn sources_before(store: &Store, name: &str) -> Result<HashMap<String, Before>> {
    let session = store.session();
    let guard = session.read().await;
    let arrays: Vec<Path> = guard
        .list_nodes(&Path::root())
        .await
        .map_err(|e| ic(name, e))?
        .filter_map(|n| match n {
            Ok(n) if n.node_type() == NodeType::Array => Some(Ok(n.path)),
            Ok(_) => None,
            Err(e) => Some(Err(e)),
        })
        .collect::<std::result::Result<_, _>>()
        .map_err(|e| ic(name, e))?;
    let mut before: HashMap<String, Before> = HashMap::new();
    for path in arrays {
        let array = path.to_string();
        guard
            .array_chunk_iterator(&path)
            .await
            .try_for_each(|info| {
                if let ChunkPayload::Virtual(v) = &info.payload {
                    let entry = before
                        .entry(v.location.url().to_owned())
                        .or_insert_with(|| Before {
                            array: Some(array.clone()),
                            checksum: v.checksum.clone(),
                            count: 0,
                        });
                    if entry.array.as_deref() != Some(array.as_str()) {
                        entry.array = None;
                    }
                    if entry.checksum != v.checksum {
                        entry.checksum = None;
                    }
                    entry.count += 1;
                }
                std::future::ready(Ok(()))
            })
            .await
            .map_err(|e| ic(name, e))?;
    }
    Ok(before)
}

/// What [`IcechunkWriter::update`] changed: chunks set and deleted, chunks that were already
/// there as this run found them.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct UpdateCounts {
    /// Chunks that were already in the repository as this run produced them (not set again).
    pub unchanged: u64,
    /// Chunks set: new, or changed since the last run.
    pub set: u64,
    /// Chunks deleted: their file is gone or changed, or the run no longer produces them.
    pub deleted: u64,
    /// Nodes (groups, arrays) deleted: the run no longer produces them.
    pub nodes_deleted: u64,
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
    } else if azure_container_prefix(&prefix).is_some() {
        let settings = cloud_settings(config, "azure_");
        let account = azure_account(&settings, name)?;
        // Stored in the repository (readers use it): where the account is, never a secret.
        let mut options = HashMap::from([("account".to_owned(), account)]);
        for key in AZURE_LOCATION_KEYS {
            if let Some(v) = settings.get(*key) {
                options.insert((*key).to_owned(), v.clone());
            }
        }
        (
            ObjectStoreConfig::Azure(options),
            Some(Credentials::Azure(azure_credentials(&settings))),
        )
    } else if prefix.starts_with("gs://") || prefix.starts_with("gcs://") {
        let settings = cloud_settings(config, "google_");
        // Stored in the repository (readers use it): where the service is, never a secret.
        let options = GOOGLE_LOCATION_KEYS
            .iter()
            .filter_map(|k| settings.get(*k).map(|v| ((*k).to_owned(), v.clone())))
            .collect();
        (
            ObjectStoreConfig::Gcs(options),
            Some(Credentials::Gcs(gcs_credentials(&settings))),
        )
    } else if prefix.starts_with("http://") || prefix.starts_with("https://") {
        // Plain HTTP must be allowed by name (object_store's client is HTTPS-only otherwise);
        // the URL's scheme asks for it, as `store_for_url` reads it. No credentials: Icechunk
        // sends none to HTTP servers.
        let opts = if prefix.starts_with("http://") {
            HashMap::from([("allow_http".to_owned(), "true".to_owned())])
        } else {
            HashMap::new()
        };
        let store = ObjectStoreConfig::Http(HttpConfig {
            opts,
            headers: HashMap::new(),
        });
        (store, None)
    } else {
        return Err(Error::Unsupported {
            name: name.to_owned(),
            what: format!(
                "virtual chunks of {prefix}: only local files, s3://, az://, gs:// and \
                 http(s):// sources so far"
            ),
        });
    };
    let c = VirtualChunkContainer::new(prefix, store).map_err(|e| ic(name, e))?;
    Ok((c, credentials))
}

/// The object_store settings of Azure (`azure_*`, lower case) that locate an account: its
/// endpoint (e.g. a private endpoint or Azurite's), plain HTTP, the emulator. A repository's
/// virtual chunk container keeps them.
const AZURE_LOCATION_KEYS: &[&str] = &[
    "azure_storage_endpoint",
    "azure_allow_http",
    "azure_storage_use_emulator",
];

/// The container and the blob prefix of an `az://container/prefix` (or `azure://`) URL.
fn azure_container_prefix(url: &str) -> Option<(String, String)> {
    let rest = url
        .strip_prefix("az://")
        .or_else(|| url.strip_prefix("azure://"))?;
    let (container, prefix) = rest.split_once('/').unwrap_or((rest, ""));
    (!container.is_empty() && !container.contains('@'))
        .then(|| (container.to_owned(), prefix.trim_matches('/').to_owned()))
}

/// The settings of one cloud: the environment's variables whose names start with `prefix`
/// (`azure_`, `google_`; any case) and then `config`'s (which win), keys in lower case, as
/// [`store_for_url`](crate::store_for_url) takes them.
fn cloud_settings(config: &[(String, String)], prefix: &str) -> HashMap<String, String> {
    std::env::vars()
        .chain(config.iter().cloned())
        .filter_map(|(k, v)| {
            let k = k.to_ascii_lowercase();
            (k.starts_with(prefix) && !v.is_empty()).then_some((k, v))
        })
        .collect()
}

/// The storage account the settings name.
fn azure_account(settings: &HashMap<String, String>, name: &str) -> Result<String> {
    ["azure_storage_account_name", "azure_storage_account"]
        .iter()
        .find_map(|k| settings.get(*k).cloned())
        .ok_or_else(|| {
            Error::InvalidArgument(format!(
                "{name}: no Azure storage account given: set AZURE_STORAGE_ACCOUNT_NAME (Icechunk \
             names Azure containers by account and container)"
            ))
        })
}

/// The Azure credentials the settings give: an access key, a SAS token or a bearer token;
/// otherwise the environment's (object_store's chain: workload identity, managed identity,
/// the Azure CLI).
fn azure_credentials(settings: &HashMap<String, String>) -> AzureCredentials {
    let get = |keys: &[&str]| keys.iter().find_map(|k| settings.get(*k).cloned());
    if let Some(key) = get(&["azure_storage_account_key", "azure_storage_access_key"]) {
        AzureCredentials::Static(AzureStaticCredentials::AccessKey(key))
    } else if let Some(sas) = get(&["azure_storage_sas_key", "azure_storage_sas_token"]) {
        AzureCredentials::Static(AzureStaticCredentials::SASToken(sas))
    } else if let Some(token) = get(&["azure_storage_token"]) {
        AzureCredentials::Static(AzureStaticCredentials::BearerToken(token))
    } else {
        AzureCredentials::FromEnv
    }
}

/// The object_store settings of Google Cloud Storage (`google_*`, lower case) that locate the
/// service: its base URL (a private endpoint, an emulator). A repository's virtual chunk
/// container keeps them.
const GOOGLE_LOCATION_KEYS: &[&str] = &["google_base_url"];

/// The Google Cloud credentials the settings give: a service-account key (its JSON) or key
/// file, application-default credentials from a file, a bearer token, or anonymous access
/// (`google_skip_signature`); otherwise the environment's (object_store's chain). Icechunk
/// reads GCS virtual chunks anonymously unless given credentials, so they are always given.
fn gcs_credentials(settings: &HashMap<String, String>) -> GcsCredentials {
    let get = |keys: &[&str]| keys.iter().find_map(|k| settings.get(*k).cloned());
    if let Some(key) = get(&["google_service_account_key"]) {
        GcsCredentials::Static(GcsStaticCredentials::ServiceAccountKey(key))
    } else if let Some(path) = get(&["google_service_account", "google_service_account_path"]) {
        GcsCredentials::Static(GcsStaticCredentials::ServiceAccount(path.into()))
    } else if let Some(path) = get(&["google_application_credentials"]) {
        GcsCredentials::Static(GcsStaticCredentials::ApplicationCredentials(path.into()))
    } else if let Some(bearer) = get(&["google_bearer_token"]) {
        GcsCredentials::Static(GcsStaticCredentials::BearerToken(GcsBearerCredential {
            bearer,
            expires_after: None,
        }))
    } else if get(&["google_skip_signature"]).is_some_and(|v| v.eq_ignore_ascii_case("true")) {
        GcsCredentials::Anonymous
    } else {
        GcsCredentials::FromEnv
    }
}

/// The bucket and the key prefix of a `gs://bucket/prefix` (or `gcs://`) URL.
fn gcs_bucket_prefix(url: &str) -> Option<(String, String)> {
    let rest = url
        .strip_prefix("gs://")
        .or_else(|| url.strip_prefix("gcs://"))?;
    let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
    (!bucket.is_empty()).then(|| (bucket.to_owned(), prefix.trim_matches('/').to_owned()))
}

/// The bucket and the key prefix of an `s3://bucket/prefix` URL.
fn s3_bucket_prefix(url: &str) -> Option<(String, String)> {
    let rest = url.strip_prefix("s3://")?;
    let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
    (!bucket.is_empty()).then(|| (bucket.to_owned(), prefix.trim_matches('/').to_owned()))
}

/// The storage of a repository at `dst`: a local directory (made if `create`), or a prefix on
/// S3, Cloud Storage or Azure (configured by `config` and the environment).
async fn storage(
    dst: &Location,
    name: &str,
    config: &[(String, String)],
    create: bool,
) -> Result<Arc<dyn Storage + Send + Sync>> {
    match dst {
        Location::Local(path) => {
            if create {
                std::fs::create_dir_all(path).map_err(|e| Error::io(path, e))?;
            }
            icechunk::new_local_filesystem_storage(path)
                .await
                .map_err(|e| ic(name, e))
        }
        Location::Store(s) => {
            if let Some((container, prefix)) = azure_container_prefix(s.url()) {
                let settings = cloud_settings(config, "azure_");
                let account = azure_account(&settings, name)?;
                let credentials = azure_credentials(&settings);
                return icechunk::storage::new_azure_blob_storage(
                    account,
                    container,
                    (!prefix.is_empty()).then_some(prefix),
                    Some(credentials),
                    Some(settings),
                )
                .await
                .map_err(|e| ic(name, e));
            }
            if let Some((bucket, prefix)) = gcs_bucket_prefix(s.url()) {
                let settings = cloud_settings(config, "google_");
                let credentials = gcs_credentials(&settings);
                return icechunk::storage::new_gcs_storage(
                    bucket,
                    (!prefix.is_empty()).then_some(prefix),
                    Some(credentials),
                    Some(settings),
                    Vec::new(),
                    Vec::new(),
                )
                .map_err(|e| ic(name, e));
            }
            let Some((bucket, prefix)) = s3_bucket_prefix(s.url()) else {
                return Err(Error::Unsupported {
                    name: name.to_owned(),
                    what: "Icechunk repositories on object stores: s3://, gs:// and az:// only \
                           (Icechunk has no storage over plain HTTP)"
                        .into(),
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

/// The JSON text of the node metadata at `key`.
fn json(key: &str, text: serde_json::Result<String>) -> Result<String> {
    text.map_err(|e| Error::InvalidArgument(format!("{key}: {e}")))
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

/// The virtual chunk containers of `sources` (URL prefixes) and the credentials that
/// authorize each (`None`: the environment's).
type Containers = (
    Vec<VirtualChunkContainer>,
    HashMap<String, Option<Credentials>>,
);

fn containers(sources: &[String], name: &str, config: &[(String, String)]) -> Result<Containers> {
    let mut all = Vec::new();
    let mut authorized = HashMap::new();
    for s in sources {
        let (c, credentials) = container(s, name, config)?;
        authorized.insert(c.url_prefix().to_owned(), credentials);
        all.push(c);
    }
    Ok((all, authorized))
}

/// The Icechunk path of the node at `path` (ours: `""` for the root, `a/b` below it).
fn ic_path(path: &str, name: &str) -> Result<Path> {
    Path::new(&format!("/{path}")).map_err(|e| ic(name, e))
}

/// Icechunk's chunk coordinates for `indices`.
fn ic_coords(indices: &[u64], name: &str) -> Result<ChunkIndices> {
    indices
        .iter()
        .map(|&i| u32::try_from(i))
        .collect::<std::result::Result<Vec<_>, _>>()
        .map(ChunkIndices)
        .map_err(|_| {
            Error::InvalidArgument(format!(
                "{name}: chunk {indices:?}: Icechunk's chunk indices are 32-bit"
            ))
        })
}

/// What [`IcechunkWriter::finish`] committed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IcechunkCommit {
    /// The id of the snapshot `main` now points at.
    pub snapshot: String,
    /// For [`IcechunkWriter::update`]: what changed.
    pub update: Option<UpdateCounts>,
}

impl IcechunkWriter {
    /// Creates a repository at `dst` (a local directory that is empty or absent, or an
    /// `s3://` prefix that holds none) whose virtual chunks may come from below each of
    /// `sources` (URL prefixes: `file:///…/`, `s3://…/`; see
    /// [`container_url`](crate::container_url)). `config`: object-store settings as
    /// [`Location::parse`] takes them (`AWS_ENDPOINT_URL`, `AWS_ACCESS_KEY_ID`, …; any case),
    /// over the environment's, for the repository and the S3 sources.
    ///
    /// The references are committed on a branch of their own; `main` holds the empty first
    /// snapshot until [`finish`](Self::finish) moves it to the last one, so a reader never
    /// sees a partial repository, however many parts the references are committed in.
    ///
    /// # Errors
    /// [`Error::Unsupported`] for a repository on an object store other than S3 and Azure or
    /// a source of another scheme; [`Error::Icechunk`] if Icechunk cannot create it (e.g. `dst` holds
    /// one already).
    pub fn create(dst: &Location, sources: &[String], config: &[(String, String)]) -> Result<Self> {
        let name = dst.to_string();
        let (all, authorized) = containers(sources, &name, config)?;
        let mut repo_config = RepositoryConfig::default();
        for c in all {
            repo_config
                .set_virtual_chunk_container(c)
                .map_err(|e| ic(&name, e))?;
        }
        let (repo, store, work, initial) = block_on(async {
            let storage = storage(dst, &name, config, true).await?;
            Repository::create(Arc::clone(&storage))
                .config(repo_config)
                .spec_version(SpecVersionBin::V1)
                .authorize_virtual_chunk_access(authorized.clone())
                .execute()
                .await
                .map_err(|e| ic(&name, e))?;
            Self::start(open_for_writing(storage, authorized, &name).await?, &name).await
        })??;
        Ok(Self::new(name, repo, store, work, initial, None, config))
    }

    /// Opens the existing repository at `dst` (as [`create`](Self::create) makes them) to
    /// make `main` hold this run's nodes and references, in one new commit that sets only
    /// what changed and deletes what the run no longer produces (see the module docs). The
    /// virtual chunk containers of `sources` are added to its configuration if missing.
    ///
    /// # Errors
    /// [`Error::Icechunk`] if there is no repository at `dst` or Icechunk cannot open it;
    /// [`Error::Unsupported`] as for `create`.
    pub fn update(dst: &Location, sources: &[String], config: &[(String, String)]) -> Result<Self> {
        let name = dst.to_string();
        let (all, authorized) = containers(sources, &name, config)?;
        let (started, before) = block_on(async {
            let storage = storage(dst, &name, config, false).await?;
            // Opened once for its configuration (the containers), then for writing.
            let repo = Repository::open(Arc::clone(&storage))
                .execute()
                .await
                .map_err(|e| ic(&name, e))?;
            let mut repo_config = repo.config().clone();
            let mut missing = false;
            for c in all {
                if !repo_config
                    .virtual_chunk_containers()
                    .any(|have| *have == c)
                {
                    missing = true;
                    repo_config
                        .set_virtual_chunk_container(c)
                        .map_err(|e| ic(&name, e))?;
                }
            }
            if missing {
                repo.reopen(Some(repo_config), Some(authorized.clone()))
                    .await
                    .map_err(|e| ic(&name, e))?
                    .save_config()
                    .await
                    .map_err(|e| ic(&name, e))?;
            }
            let started =
                Self::start(open_for_writing(storage, authorized, &name).await?, &name).await?;
            let before = sources_before(&started.1, &name).await?;
            Ok::<_, Error>((started, before))
        })??;
        let (repo, store, work, initial) = started;
        Ok(Self::new(
            name,
            repo,
            store,
            work,
            initial,
            Some(Update {
                before,
                ..Update::default()
            }),
            config,
        ))
    }

    /// Whether `dst` holds an Icechunk repository (`config` as for [`create`](Self::create)).
    ///
    /// # Errors
    /// [`Error::Icechunk`] if its storage cannot be read; [`Error::Unsupported`] as for
    /// `create`.
    pub fn exists(dst: &Location, config: &[(String, String)]) -> Result<bool> {
        let name = dst.to_string();
        block_on(async {
            let storage = storage(dst, &name, config, false).await?;
            Repository::exists(storage, None)
                .await
                .map_err(|e| ic(&name, e))
        })?
    }

    /// The writer's own branch at `main`'s tip, and a session on it.
    async fn start(
        repo: Repository,
        name: &str,
    ) -> Result<(Repository, Store, String, SnapshotId)> {
        let initial = repo.lookup_branch(BRANCH).await.map_err(|e| ic(name, e))?;
        let work = work_branch();
        repo.create_branch(&work, &initial)
            .await
            .map_err(|e| ic(name, e))?;
        let store = Self::session(&repo, &work, name).await?;
        Ok((repo, store, work, initial))
    }

    fn new(
        name: String,
        repo: Repository,
        store: Store,
        work: String,
        initial: SnapshotId,
        update: Option<Update>,
        config: &[(String, String)],
    ) -> Self {
        Self {
            name,
            repo,
            store,
            work,
            initial,
            arrays: DeclaredArrays::default(),
            pending: 0,
            commits: 0,
            commit_every: COMMIT_EVERY,
            update,
            done: false,
            config: config.to_vec(),
            http_checksums: HashMap::new(),
        }
    }

    /// Commits a part every `n` chunks (at least 1; 2¹⁶ by default): Icechunk
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

    fn set(&self, key: &str, text: String) -> Result<()> {
        block_on(self.store.set(key, text.into()))?.map_err(|e| ic(&self.name, e))
    }

    /// Commits the last references (for [`update`](Self::update), after deleting what the run
    /// no longer produces) and moves `main` to the snapshot that holds them all, only if
    /// `main` is still where the writer found it: another writer's commit in between is an
    /// error, not overwritten.
    ///
    /// # Errors
    /// [`Error::Icechunk`].
    pub fn finish(mut self) -> Result<IcechunkCommit> {
        block_on(async {
            self.prune().await?;
            let last = self.commit("scifmt virtualize").await?;
            self.repo
                .reset_branch(BRANCH, &last, Some(&self.initial))
                .await
                .map_err(|e| ic(&self.name, e))?;
            self.repo
                .delete_branch(&self.work)
                .await
                .map_err(|e| ic(&self.name, e))?;
            self.done = true;
            Ok(IcechunkCommit {
                snapshot: last.to_string(),
                update: self.update.as_ref().map(|u| u.counts),
            })
        })?
    }

    /// For an update: deletes the chunks of this run's arrays that it did not produce (their
    /// file unreferenced or changed, or a stored chunk it did not store) and the nodes it did
    /// not write.
    async fn prune(&mut self) -> Result<()> {
        let Some(update) = self.update.as_mut() else {
            return Ok(());
        };
        let name = &self.name;
        let session = self.store.session();
        let mut guard = session.write().await;
        for array in self.arrays.paths() {
            let path = ic_path(array, name)?;
            let stored = update.stored.get(array);
            let stale: Vec<ChunkIndices> = guard
                .array_chunk_iterator(&path)
                .await
                .try_filter_map(|info| {
                    let keep = match &info.payload {
                        ChunkPayload::Virtual(v) => update
                            .files
                            .get(v.location.url())
                            .is_some_and(|now| *now == v.checksum),
                        _ => stored.is_some_and(|s| s.contains(&info.coord.0)),
                    };
                    std::future::ready(Ok((!keep).then_some(info.coord)))
                })
                .try_collect()
                .await
                .map_err(|e| ic(name, e))?;
            update.counts.deleted += stale.len() as u64;
            guard
                .delete_chunks(&path, stale)
                .await
                .map_err(|e| ic(name, e))?;
        }
        let nodes: Vec<(NodeType, Path)> = guard
            .list_nodes(&Path::root())
            .await
            .map_err(|e| ic(name, e))?
            .map(|n| n.map(|n| (n.node_type(), n.path)))
            .collect::<std::result::Result<_, _>>()
            .map_err(|e| ic(name, e))?;
        for (kind, path) in nodes {
            if update.nodes.contains(path.as_str()) || guard.get_node(&path).await.is_err() {
                // Written by this run, or deleted with its parent group.
                continue;
            }
            match kind {
                NodeType::Group => guard.delete_group(path).await,
                NodeType::Array => guard.delete_array(path).await,
            }
            .map_err(|e| ic(name, e))?;
            update.counts.nodes_deleted += 1;
        }
        Ok(())
    }

    /// For an update: records the node at `path` as written; whether its `zarr.json` is
    /// `text` already.
    fn node_unchanged(&mut self, path: &str, key: &str, text: &str) -> Result<bool> {
        let Some(update) = self.update.as_mut() else {
            return Ok(false);
        };
        update
            .nodes
            .insert(ic_path(path, &self.name)?.as_str().to_owned());
        let now = block_on(self.store.get(key, &ByteRange::ALL))?;
        Ok(now.is_ok_and(|b| b.as_ref() == text.as_bytes()))
    }

    /// For an update: records the chunk `indices` of `array` as produced (`payload`: what it
    /// is now); whether the repository holds it so already.
    fn chunk_unchanged(
        &mut self,
        array: &str,
        indices: &[u64],
        payload: &ChunkPayload,
    ) -> Result<bool> {
        let Some(update) = self.update.as_mut() else {
            return Ok(false);
        };
        let coords = ic_coords(indices, &self.name)?;
        match payload {
            ChunkPayload::Virtual(v) => {
                if !update.files.contains_key(v.location.url()) {
                    update
                        .files
                        .insert(v.location.url().to_owned(), v.checksum.clone());
                }
            }
            _ => {
                update
                    .stored
                    .entry(array.to_owned())
                    .or_default()
                    .insert(coords.0.clone());
            }
        }
        let path = ic_path(array, &self.name)?;
        let session = self.store.session();
        let have = block_on(async { session.read().await.get_chunk_ref(&path, &coords).await })?
            .map_err(|e| ic(&self.name, e))?;
        let same = have.as_ref() == Some(payload);
        if same {
            update.counts.unchanged += 1;
        } else {
            update.counts.set += 1;
        }
        Ok(same)
    }
}

impl ReferenceSink for IcechunkWriter {
    fn group(&mut self, path: &str, group: &GroupMetadataV3) -> Result<()> {
        check_node_path(path)?;
        let key = node_key(path, "zarr.json");
        let text = json(&key, serde_json::to_string(group))?;
        if self.node_unchanged(path, &key, &text)? {
            return Ok(());
        }
        self.set(&key, text)
    }

    fn array(&mut self, path: &str, array: &ArrayMetadataV3) -> Result<()> {
        check_node_path(path)?;
        let key = node_key(path, "zarr.json");
        self.arrays.declare(path, &key, array)?;
        let text = json(&key, serde_json::to_string(array))?;
        if self.node_unchanged(path, &key, &text)? {
            if let Some(update) = self.update.as_mut() {
                update
                    .same_arrays
                    .insert(ic_path(path, &self.name)?.to_string());
            }
            return Ok(());
        }
        self.set(&key, text)
    }

    /// For an update: `Some(n)` if `main` held `n` virtual chunks of `url`, all in `array`
    /// (whose metadata this run found as it was) and all with the checksum `checksum` gives
    /// now; they are then kept and counted unchanged.
    fn unchanged_source(
        &mut self,
        array: &str,
        url: &str,
        checksum: &Checksum,
    ) -> Result<Option<u64>> {
        if self.update.is_none() {
            return Ok(None);
        }
        let path = ic_path(array, &self.name)?.to_string();
        let now = self.checksum(url, checksum)?;
        let Some(update) = self.update.as_mut() else {
            return Ok(None);
        };
        let same = update.before.get(url).filter(|b| {
            update.same_arrays.contains(&path)
                && b.array.as_deref() == Some(path.as_str())
                && now.is_some()
                && b.checksum == now
        });
        let Some(before) = same else {
            return Ok(None);
        };
        let n = before.count;
        update.files.insert(url.to_owned(), now);
        update.counts.unchanged += n;
        Ok(Some(n))
    }

    fn reference(&mut self, r: &ChunkReference<'_>) -> Result<()> {
        let key = self.arrays.chunk_key(&self.name, r.array, r.indices)?;
        let reference = VirtualChunkRef {
            location: VirtualChunkLocation::from_url(r.url).map_err(|e| ic(&self.name, e))?,
            offset: r.offset,
            length: r.length,
            checksum: match r.checksum {
                Some(c) => self.checksum(r.url, c)?,
                None => None,
            },
        };
        let payload = ChunkPayload::Virtual(reference);
        if self.chunk_unchanged(r.array, r.indices, &payload)? {
            return Ok(());
        }
        let ChunkPayload::Virtual(reference) = payload else {
            unreachable!("made virtual above")
        };
        block_on(self.store.set_virtual_ref(&key, reference, true))?
            .map_err(|e| ic(&self.name, e))?;
        self.added()
    }

    /// Sets the chunk to `bytes` (Icechunk keeps chunks up to its inline threshold, 512 bytes
    /// by default, in the manifest; larger ones as chunk objects of the repository).
    fn inline(&mut self, array: &str, indices: &[u64], bytes: &[u8]) -> Result<()> {
        let key = self.arrays.chunk_key(&self.name, array, indices)?;
        let bytes = bytes::Bytes::copy_from_slice(bytes);
        if self.chunk_unchanged(array, indices, &ChunkPayload::Inline(bytes.clone()))? {
            return Ok(());
        }
        block_on(self.store.set(&key, bytes))?.map_err(|e| ic(&self.name, e))?;
        self.added()
    }
}

impl IcechunkWriter {
    /// The checksum Icechunk records for a reference into `url` whose version `c` names.
    ///
    /// For an `http(s)://` source with an ETag it is the source's `Last-Modified` time instead:
    /// Icechunk (2.3.1) sends a recorded ETag in `If-Match` without its quotes, which HTTP
    /// servers that follow RFC 9110 (Apache, nginx, any WebDAV server) never match, so every
    /// read would fail; `If-Unmodified-Since`, which it sends for a time, they all honour. The
    /// time comes from one `HEAD` per file, whose ETag must still be the one read (else
    /// [`Error::Changed`]); like a local file's, it has whole seconds (a rewrite within the
    /// second it names passes Icechunk's check).
    fn checksum(&mut self, url: &str, c: &Checksum) -> Result<Option<IcChecksum>> {
        let Checksum::ETag(etag) = c else {
            return Ok(ic_checksum(c));
        };
        if !(url.starts_with("http://") || url.starts_with("https://")) {
            return Ok(ic_checksum(c));
        }
        if let Some(known) = self.http_checksums.get(url) {
            return Ok(known.clone());
        }
        let s = crate::store_for_url(url, &self.config)?;
        let meta = block_on(object_store::ObjectStoreExt::head(
            s.store.as_ref(),
            &s.path,
        ))?
        .map_err(|source| Error::Remote {
            url: s.url.clone(),
            source,
        })?;
        if meta.e_tag.as_deref().map(crate::normalize_etag) != Some(crate::normalize_etag(etag)) {
            return Err(Error::Changed { url: s.url });
        }
        let seconds = meta.last_modified.timestamp();
        let checksum = u32::try_from(seconds)
            .ok()
            .map(|s| IcChecksum::LastModified(SecondsSinceEpoch(s)));
        self.http_checksums.insert(url.to_owned(), checksum.clone());
        Ok(checksum)
    }

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
            let storage = storage(dst, "test", config, false).await.unwrap();
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

    /// The virtual chunk containers of the repository at `dst`: URL prefix and store config.
    fn virtual_chunk_containers(
        dst: &Location,
        config: &[(String, String)],
    ) -> Vec<(String, ObjectStoreConfig)> {
        block_on(async {
            let storage = storage(dst, "test", config, false).await.unwrap();
            let repo = Repository::open(storage).execute().await.unwrap();
            repo.config()
                .virtual_chunk_containers()
                .map(|c| (c.url_prefix().to_owned(), c.store.clone()))
                .collect::<Vec<_>>()
        })
        .unwrap()
    }

    /// Writes the bytes 0..=255 to the object `src` and returns its checksum from `HEAD`.
    fn write_bytes_0_to_255(src: &Location) -> Checksum {
        src.write_small(
            &(0u8..=255).collect::<Vec<_>>(),
            crate::Durability::default(),
        )
        .unwrap();
        let Location::Store(s) = src else {
            unreachable!("an object store URL")
        };
        let meta = block_on(object_store::ObjectStoreExt::head(s.store(), s.path()))
            .unwrap()
            .unwrap();
        Checksum::of_object(&meta)
    }

    /// A new repository at `dst` (sources below `prefix`) whose 8-byte array `a` has its two
    /// chunks at bytes 100 and 16 of `url`, with `checksum`.
    fn write_two_references(
        dst: &Location,
        prefix: &str,
        url: &str,
        checksum: &Checksum,
        config: &[(String, String)],
    ) {
        let w = IcechunkWriter::create(dst, &[prefix.to_owned()], config).unwrap();
        with_two_references(w, url, checksum).finish().unwrap();
    }

    /// `w` given the 8-byte array `a` whose two chunks are at bytes 100 and 16 of `url`, with
    /// `checksum` (not finished).
    fn with_two_references(
        mut w: IcechunkWriter,
        url: &str,
        checksum: &Checksum,
    ) -> IcechunkWriter {
        w.group("", &GroupMetadataV3::new()).unwrap();
        w.array("a", &eight_bytes()).unwrap();
        for (i, offset) in [(0u64, 100u64), (1, 16)] {
            w.reference(
                &ChunkReference::new("a", &[i], url, offset, 4).with_checksum(Some(checksum)),
            )
            .unwrap();
        }
        w
    }

    /// An array of 8 bytes in chunks of 4.
    fn eight_bytes() -> ArrayMetadataV3 {
        bytes_in_fours(8)
    }

    /// An array of `len` bytes in chunks of 4.
    fn bytes_in_fours(len: u64) -> ArrayMetadataV3 {
        serde_json::from_value(serde_json::json!({
            "zarr_format": 3, "node_type": "array", "shape": [len], "data_type": "uint8",
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [4]}},
            "chunk_key_encoding": {"name": "default"}, "fill_value": 0,
            "codecs": [{"name": "bytes"}]}))
        .unwrap()
    }

    /// A directory with `src/one.bin` (bytes 0..=255) and `src/two.bin` (255..=0): the
    /// directory, the prefix URL of `src/`, and each file's path and URL.
    fn two_sources() -> (tempfile::TempDir, String, [(std::path::PathBuf, String); 2]) {
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path().join("src");
        std::fs::create_dir(&src).unwrap();
        let (one, two) = (src.join("one.bin"), src.join("two.bin"));
        std::fs::write(&one, (0u8..=255).collect::<Vec<_>>()).unwrap();
        std::fs::write(&two, (0u8..=255).rev().collect::<Vec<_>>()).unwrap();
        let prefix = reference_url(&Location::Local(src)).unwrap();
        let url = |p: &std::path::Path| reference_url(&Location::Local(p.to_path_buf())).unwrap();
        let (u1, u2) = (url(&one), url(&two));
        (dir, prefix, [(one, u1), (two, u2)])
    }

    /// A file's checksum now.
    fn checksum(f: &std::path::Path) -> Checksum {
        Checksum::of_file(&std::fs::metadata(f).unwrap(), f).unwrap()
    }

    #[test]
    fn an_update_keeps_the_references_of_sources_found_unchanged() {
        let (dir, prefix, [(one, u1), (two, u2)]) = two_sources();
        let (c1, c2) = (checksum(&one), checksum(&two));
        let repo = Location::Local(dir.path().join("repo"));
        let sources = std::slice::from_ref(&prefix);
        // a/0, a/1 from one.bin, a/2 from two.bin; b/0 from two.bin too.
        let mut w = IcechunkWriter::create(&repo, sources, &[]).unwrap();
        w.group("", &GroupMetadataV3::new()).unwrap();
        w.array("a", &bytes_in_fours(16)).unwrap();
        w.array("b", &eight_bytes()).unwrap();
        for (array, i, url, offset, c) in [
            ("a", 0u64, &u1, 0u64, &c1),
            ("a", 1, &u1, 4, &c1),
            ("a", 2, &u2, 8, &c2),
            ("b", 0, &u2, 0, &c2),
        ] {
            w.reference(&ChunkReference::new(array, &[i], url, offset, 4).with_checksum(Some(c)))
                .unwrap();
        }
        w.finish().unwrap();

        let mut w = IcechunkWriter::update(&repo, sources, &[]).unwrap();
        w.group("", &GroupMetadataV3::new()).unwrap();
        w.array("a", &bytes_in_fours(16)).unwrap();
        w.array("b", &eight_bytes()).unwrap();
        let other = Checksum::ETag("\"x\"".into());
        assert_eq!(
            w.unchanged_source("a", &u1, &other).unwrap(),
            None,
            "another version"
        );
        assert_eq!(
            w.unchanged_source("b", &u1, &c1).unwrap(),
            None,
            "another array"
        );
        assert_eq!(
            w.unchanged_source("a", &u2, &c2).unwrap(),
            None,
            "in two arrays"
        );
        assert_eq!(w.unchanged_source("a", &u1, &c1).unwrap(), Some(2));
        w.reference(&ChunkReference::new("a", &[2], &u2, 8, 4).with_checksum(Some(&c2)))
            .unwrap();
        w.reference(&ChunkReference::new("b", &[0], &u2, 0, 4).with_checksum(Some(&c2)))
            .unwrap();
        let update = w.finish().unwrap();
        assert_eq!(
            update.update,
            Some(UpdateCounts {
                unchanged: 4,
                ..UpdateCounts::default()
            }),
            "one.bin's chunks kept without being given"
        );
        let read = |key: &str| read_main(&repo, &[], &prefix, None, key);
        assert_eq!(read("a/c/0").unwrap(), [0, 1, 2, 3]);
        assert_eq!(read("a/c/1").unwrap(), [4, 5, 6, 7]);

        // An array whose metadata changed is given everything again.
        let mut w = IcechunkWriter::update(&repo, sources, &[]).unwrap();
        w.group("", &GroupMetadataV3::new()).unwrap();
        w.array("a", &bytes_in_fours(20)).unwrap();
        assert_eq!(w.unchanged_source("a", &u1, &c1).unwrap(), None);
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

    /// A second run over an existing repository: references already there are not set again,
    /// a changed or deleted file's references and a node the run no longer writes are
    /// deleted, `main` moves by one commit (the first snapshot stays in its history), and a
    /// writer that started before another one finished fails instead of overwriting it.
    #[test]
    fn an_update_sets_what_changed_and_deletes_what_is_gone() {
        let (dir, prefix, [(one, u1), (two, u2)]) = two_sources();
        let repo = Location::Local(dir.path().join("repo"));
        let sources = std::slice::from_ref(&prefix);
        // Run 1: a/0, a/1 from one.bin, a/2 from two.bin, a/3 stored; array b. The second
        // run, over unchanged sources, is the same.
        let (c1, c2) = (checksum(&one), checksum(&two));
        let refs = [(0u64, &u1, 0u64, &c1), (1, &u1, 4, &c1), (2, &u2, 8, &c2)];
        let same = |w: &mut IcechunkWriter| {
            w.group("", &GroupMetadataV3::new()).unwrap();
            w.array("a", &bytes_in_fours(16)).unwrap();
            w.array("b", &eight_bytes()).unwrap();
            for &(i, url, offset, c) in &refs {
                w.reference(&ChunkReference::new("a", &[i], url, offset, 4).with_checksum(Some(c)))
                    .unwrap();
            }
            w.inline("a", &[3], &[1, 2, 3, 4]).unwrap();
            w.reference(&ChunkReference::new("b", &[0], &u1, 0, 4).with_checksum(Some(&c1)))
                .unwrap();
        };
        let mut w = IcechunkWriter::create(&repo, sources, &[]).unwrap();
        same(&mut w);
        let first = w.finish().unwrap().snapshot;
        let read = |key: &str| read_main(&repo, &[], &prefix, None, key);
        assert_eq!(read("a/c/2").unwrap(), [247, 246, 245, 244]);

        // Unchanged sources: nothing set, nothing deleted.
        let mut w = IcechunkWriter::update(&repo, sources, &[]).unwrap();
        same(&mut w);
        let unchanged = w.finish().unwrap();
        assert_eq!(
            unchanged.update,
            Some(UpdateCounts {
                unchanged: 5,
                ..UpdateCounts::default()
            })
        );

        // two.bin rewritten (a new checksum, one chunk at another offset), one.bin's a/1 no
        // longer referenced, a/3 no longer stored, b gone.
        std::fs::write(&two, [5u8; 256]).unwrap();
        let f = std::fs::File::options().write(true).open(&two).unwrap();
        f.set_modified(std::time::SystemTime::now() + std::time::Duration::from_secs(60))
            .unwrap();
        let c2 = checksum(&two);
        // A writer that starts now and finishes after the update below must fail.
        let mut late = IcechunkWriter::update(&repo, sources, &[]).unwrap();
        same(&mut late);
        let mut w = IcechunkWriter::update(&repo, sources, &[]).unwrap();
        w.group("", &GroupMetadataV3::new()).unwrap();
        w.array("a", &bytes_in_fours(16)).unwrap();
        w.reference(&ChunkReference::new("a", &[0], &u1, 0, 4).with_checksum(Some(&c1)))
            .unwrap();
        w.reference(&ChunkReference::new("a", &[1], &u2, 16, 4).with_checksum(Some(&c2)))
            .unwrap();
        let update = w.finish().unwrap();
        assert_eq!(
            update.update,
            Some(UpdateCounts {
                unchanged: 1,
                set: 1,
                deleted: 2,
                nodes_deleted: 1
            })
        );
        assert_eq!(read("a/c/0").unwrap(), [0, 1, 2, 3]);
        assert_eq!(read("a/c/1").unwrap(), [5, 5, 5, 5]);
        for gone in ["a/c/2", "a/c/3", "b/zarr.json", "b/c/0"] {
            assert!(read(gone).is_err(), "{gone}");
        }
        assert!(
            late.finish().is_err(),
            "main moved since the late writer started"
        );
        assert_eq!(read("a/c/1").unwrap(), [5, 5, 5, 5]);
        // A writer dropped unfinished (an error, Ctrl-C) leaves no branch either.
        let mut dropped = IcechunkWriter::update(&repo, sources, &[]).unwrap();
        dropped.group("", &GroupMetadataV3::new()).unwrap();
        drop(dropped);
        // main: the update on top of the unchanged run on top of the first snapshot.
        let history = block_on(async {
            let storage = storage(&repo, "repo", &[], false).await.unwrap();
            let r = Repository::open(storage).execute().await.unwrap();
            let ancestry = r
                .ancestry(&VersionInfo::BranchTipRef(BRANCH.into()))
                .await
                .unwrap();
            ancestry
                .map_ok(|s| s.id.to_string())
                .try_collect::<Vec<_>>()
                .await
                .unwrap()
        })
        .unwrap();
        assert_eq!(history[0], update.snapshot);
        assert_eq!(history[1], unchanged.snapshot);
        assert!(history.contains(&first));
        let branches = block_on(async {
            let storage = storage(&repo, "repo", &[], false).await.unwrap();
            let r = Repository::open(storage).execute().await.unwrap();
            r.list_branches().await.unwrap()
        })
        .unwrap();
        assert_eq!(
            branches.into_iter().collect::<Vec<_>>(),
            [BRANCH.to_owned()]
        );
    }

    /// The repository on S3 (the test server), of an S3 source: `main` stays the empty first
    /// snapshot while the parts are committed, holds every reference once the writer
    /// finishes, and a rewritten source fails the read (its ETag).
    #[test]
    fn a_repository_on_s3_reads_back_and_main_moves_only_when_finished() {
        let server = s3_testserver::TestServer::start().unwrap();
        let config = server.env();
        let src = Location::parse(&server.url("src/data.bin"), &config).unwrap();
        let checksum = write_bytes_0_to_255(&src);
        assert!(matches!(checksum, Checksum::ETag(_)));
        let prefix = server.url("src");
        let url = server.url("src/data.bin");
        let dst = Location::parse(&server.url("repos/one"), &config).unwrap();
        let w = IcechunkWriter::create(&dst, std::slice::from_ref(&prefix), &config)
            .unwrap()
            .with_commit_every(1);
        let w = with_two_references(w, &url, &checksum);
        assert_eq!(w.commits, 2, "two parts committed before finishing");
        let read = |key: &str| {
            let credentials = s3_credentials(&config).map(Credentials::S3);
            read_main(&dst, &config, &prefix, credentials, key)
        };
        // Parts committed, main not moved: the array is not there yet.
        assert!(read("a/zarr.json").is_err());
        let snapshot = w.finish().unwrap();
        assert!(!snapshot.snapshot.is_empty());
        assert_eq!(snapshot.update, None);
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
            let storage = storage(&dst, "repos/one", &config, false).await.unwrap();
            let repo = Repository::open(storage).execute().await.unwrap();
            repo.list_branches().await.unwrap()
        })
        .unwrap();
        assert_eq!(
            branches.into_iter().collect::<Vec<_>>(),
            [BRANCH.to_owned()]
        );
    }

    /// The repository on Azure (Azurite, the Azure Storage emulator, when it is installed: see
    /// testkit's `azurite`), of an `az://` source: `main` moves when the writer finishes, the
    /// chunks read back through Icechunk's Azure virtual chunk container, whose configuration
    /// in the repository names the account and its endpoint but not its key, and a rewritten
    /// source fails the read (its ETag).
    #[test]
    fn a_repository_on_azure_reads_back() {
        let Some(azurite) = testkit::azurite::Azurite::start().unwrap() else {
            eprintln!(
                "a_repository_on_azure_reads_back did not run: Azurite is not installed (cargo xtask azurite)"
            );
            return;
        };
        azurite.create_container("scifmt").unwrap();
        let config = azurite.env();
        let url = "az://scifmt/src/data.bin";
        let src = Location::parse(url, &config).unwrap();
        let head = write_bytes_0_to_255(&src);
        // The checksum as a producer finds it, from the listing: Azure lists ETags without the
        // quotes its HEAD gives them, and the read pinned to it must pass all the same.
        let listed = Location::parse("az://scifmt/src", &config)
            .unwrap()
            .list()
            .unwrap();
        let [(_, _, Some(etag))] = listed.as_slice() else {
            panic!("one object with an ETag: {listed:?}");
        };
        let checksum = Checksum::ETag(etag.clone());
        assert_eq!(checksum, head);
        let prefix = "az://scifmt/src";
        let dst = Location::parse("az://scifmt/repos/one", &config).unwrap();
        let w = IcechunkWriter::create(&dst, &[prefix.to_owned()], &config)
            .unwrap()
            .with_commit_every(1);
        let w = with_two_references(w, url, &checksum);
        let credentials = Some(Credentials::Azure(azure_credentials(&cloud_settings(
            &config, "azure_",
        ))));
        let read = |key: &str| read_main(&dst, &config, prefix, credentials.clone(), key);
        assert!(read("a/zarr.json").is_err(), "main moves only at the end");
        let commit = w.finish().unwrap();
        assert!(!commit.snapshot.is_empty());
        assert_eq!(read("a/c/0").unwrap(), [100, 101, 102, 103]);
        assert_eq!(read("a/c/1").unwrap(), [16, 17, 18, 19]);
        let containers = virtual_chunk_containers(&dst, &config);
        let [(url_prefix, ObjectStoreConfig::Azure(options))] = containers.as_slice() else {
            panic!("one Azure container: {containers:?}");
        };
        assert_eq!(url_prefix, "az://scifmt/src/");
        assert_eq!(
            options.get("account").map(String::as_str),
            Some(testkit::azurite::ACCOUNT)
        );
        assert_eq!(
            options.get("azure_storage_endpoint"),
            Some(&azurite.endpoint())
        );
        assert!(
            !options.values().any(|v| v == testkit::azurite::KEY),
            "{options:?}"
        );
        // The source rewritten (same size, other bytes, a new ETag): the read fails.
        src.write_small(&[7u8; 256], crate::Durability::default())
            .unwrap();
        let e = read("a/c/1").unwrap_err();
        assert!(e.contains("checksum") && e.contains(url), "{e}");
    }

    /// A repository of a `gs://` source (on fake-gcs-server, a Cloud Storage emulator, when it
    /// is installed: see testkit's `fake_gcs`): the chunks read back through Icechunk's GCS
    /// virtual chunk container, whose configuration in the repository names the service's base
    /// URL and nothing else, with the checksum a producer finds in the listing. (The emulator
    /// ignores `If-Match`, so a rewritten source cannot be shown to fail here.) A repository on
    /// `gs://` is refused by name.
    #[test]
    fn a_repository_of_a_gcs_source_reads_back() {
        let Some(gcs) = testkit::fake_gcs::FakeGcs::start().unwrap() else {
            eprintln!(
                "a_repository_of_a_gcs_source_reads_back did not run: fake-gcs-server is not installed (cargo xtask fake-gcs)"
            );
            return;
        };
        gcs.create_bucket("scifmt").unwrap();
        gcs.put("scifmt", "src/data.bin", &(0u8..=255).collect::<Vec<_>>())
            .unwrap();
        let config = gcs.env();
        let url = "gs://scifmt/src/data.bin";
        let listed = Location::parse("gs://scifmt/src", &config)
            .unwrap()
            .list()
            .unwrap();
        let [(_, 256, Some(etag))] = listed.as_slice() else {
            panic!("one object of 256 bytes with an ETag: {listed:?}");
        };
        let Location::Store(s) = Location::parse(url, &config).unwrap() else {
            unreachable!("an object store URL")
        };
        let meta = block_on(object_store::ObjectStoreExt::head(s.store(), s.path()))
            .unwrap()
            .unwrap();
        let checksum = Checksum::ETag(etag.clone());
        assert_eq!(checksum, Checksum::of_object(&meta));
        let prefix = "gs://scifmt/src";
        let dir = tempfile::tempdir().unwrap();
        let dst = Location::Local(dir.path().join("repo"));
        write_two_references(&dst, prefix, url, &checksum, &config);
        let credentials = Some(Credentials::Gcs(gcs_credentials(&cloud_settings(
            &config, "google_",
        ))));
        assert!(matches!(
            credentials,
            Some(Credentials::Gcs(GcsCredentials::Anonymous))
        ));
        let read = |key: &str| read_main(&dst, &config, prefix, credentials.clone(), key);
        assert_eq!(read("a/c/0").unwrap(), [100, 101, 102, 103]);
        assert_eq!(read("a/c/1").unwrap(), [16, 17, 18, 19]);
        let containers = virtual_chunk_containers(&dst, &config);
        let [(url_prefix, ObjectStoreConfig::Gcs(options))] = containers.as_slice() else {
            panic!("one GCS container: {containers:?}");
        };
        assert_eq!(url_prefix, "gs://scifmt/src/");
        let want = HashMap::from([("google_base_url".to_owned(), gcs.endpoint())]);
        assert_eq!(options, &want);
    }

    /// The repository on Cloud Storage (s3-testserver's Cloud Storage dialect: fake-gcs-server
    /// lacks the XML `PUT` Icechunk writes with), of a `gs://` source on the same server: `main`
    /// moves when the writer finishes, the writes carry the bearer token the settings give, the
    /// chunks read back through Icechunk's GCS virtual chunk container (its configuration in the
    /// repository names the base URL only, never the token), and a rewritten source fails the
    /// read (its ETag).
    #[test]
    fn a_repository_on_gcs_reads_back() {
        let server = s3_testserver::TestServer::start_gcs().unwrap();
        let s3 = server.store();
        let key = object_store::path::Path::from("src/data.bin");
        let put = |bytes: Vec<u8>| {
            block_on(object_store::ObjectStoreExt::put(
                s3.as_ref(),
                &key,
                bytes.into(),
            ))
            .unwrap()
            .unwrap()
        };
        put((0u8..=255).collect());
        let config: Vec<(String, String)> = [
            ("google_base_url", server.endpoint()),
            ("google_bearer_token", server.gcs_token().to_owned()),
            ("google_skip_signature", "true".to_owned()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect();
        let prefix = server.gcs_url("src");
        let url = server.gcs_url("src/data.bin");
        let listed = Location::parse(&prefix, &config).unwrap().list().unwrap();
        let [(_, 256, Some(etag))] = listed.as_slice() else {
            panic!("one object of 256 bytes with an ETag: {listed:?}");
        };
        let checksum = Checksum::ETag(etag.clone());
        let dst = Location::parse(&server.gcs_url("repos/one"), &config).unwrap();
        let w = IcechunkWriter::create(&dst, std::slice::from_ref(&prefix), &config)
            .unwrap()
            .with_commit_every(1);
        let w = with_two_references(w, &url, &checksum);
        let credentials = Some(Credentials::Gcs(gcs_credentials(&cloud_settings(
            &config, "google_",
        ))));
        let read = |key: &str| read_main(&dst, &config, &prefix, credentials.clone(), key);
        assert!(read("a/zarr.json").is_err(), "main moves only at the end");
        let commit = w.finish().unwrap();
        assert!(!commit.snapshot.is_empty());
        assert_eq!(read("a/c/0").unwrap(), [100, 101, 102, 103]);
        assert_eq!(read("a/c/1").unwrap(), [16, 17, 18, 19]);
        let writes = server
            .log()
            .iter()
            .filter(|r| r.method == "PUT" && r.key.starts_with("repos/one/"))
            .count();
        assert!(
            writes >= 3,
            "the repository's objects went to the server: {writes}"
        );
        let containers = virtual_chunk_containers(&dst, &config);
        let [(url_prefix, ObjectStoreConfig::Gcs(options))] = containers.as_slice() else {
            panic!("one GCS container: {containers:?}");
        };
        assert_eq!(url_prefix, &format!("{prefix}/"));
        let want = HashMap::from([("google_base_url".to_owned(), server.endpoint())]);
        assert_eq!(options, &want);
        // The source rewritten (same size, other bytes, a new ETag): the read fails.
        put(vec![7u8; 256]);
        let e = read("a/c/1").unwrap_err();
        assert!(e.contains("checksum") && e.contains(&url), "{e}");
        // Without the token (anonymous), nothing can be written.
        let anonymous: Vec<(String, String)> = config
            .iter()
            .filter(|(k, _)| k != "google_bearer_token")
            .cloned()
            .collect();
        let other = Location::parse(&server.gcs_url("repos/two"), &anonymous).unwrap();
        assert!(IcechunkWriter::create(&other, std::slice::from_ref(&prefix), &anonymous).is_err());
    }

    /// A repository of an `http://` source (s3-testserver's WebDAV server): the chunks read
    /// back through Icechunk's HTTP virtual chunk container (plain HTTP allowed by its
    /// options, nothing else stored), recorded with the source's Last-Modified time (the
    /// listed ETag checked by a `HEAD`); a source rewritten later fails the read, and one
    /// whose ETag changed between listing and writing is refused.
    #[test]
    fn a_repository_of_an_http_source_reads_back() {
        let server = s3_testserver::WebDavServer::start().unwrap();
        std::fs::create_dir(server.root().join("src")).unwrap();
        let file = server.root().join("src/data.bin");
        std::fs::write(&file, (0u8..=255).collect::<Vec<_>>()).unwrap();
        let prefix = server.url("src");
        let url = server.url("src/data.bin");
        let listed = Location::parse(&prefix, &[]).unwrap().list().unwrap();
        let [(_, 256, Some(etag))] = listed.as_slice() else {
            panic!("one file of 256 bytes with an ETag: {listed:?}");
        };
        let checksum = Checksum::ETag(etag.clone());
        let dir = tempfile::tempdir().unwrap();
        let dst = Location::Local(dir.path().join("repo"));
        write_two_references(&dst, &prefix, &url, &checksum, &[]);
        let read = |key: &str| read_main(&dst, &[], &prefix, None, key);
        assert_eq!(read("a/c/0").unwrap(), [100, 101, 102, 103]);
        assert_eq!(read("a/c/1").unwrap(), [16, 17, 18, 19]);
        let containers = virtual_chunk_containers(&dst, &[]);
        let [(url_prefix, ObjectStoreConfig::Http(config))] = containers.as_slice() else {
            panic!("one HTTP container: {containers:?}");
        };
        assert_eq!(url_prefix, &format!("{prefix}/"));
        let allow = HashMap::from([("allow_http".to_owned(), "true".to_owned())]);
        assert_eq!((&config.opts, config.headers.is_empty()), (&allow, true));
        // The source rewritten a second later (Icechunk's checksum for HTTP sources is the
        // Last-Modified time, whole seconds): the read fails.
        std::fs::write(&file, [7u8; 300]).unwrap();
        let later = std::time::SystemTime::now() + std::time::Duration::from_secs(2);
        std::fs::File::options()
            .write(true)
            .open(&file)
            .unwrap()
            .set_modified(later)
            .unwrap();
        let e = read("a/c/1").unwrap_err();
        assert!(e.contains("checksum") && e.contains(&url), "{e}");
        // The listed ETag is no longer the file's: the reference is refused.
        let other = Location::Local(dir.path().join("other"));
        let mut w = IcechunkWriter::create(&other, std::slice::from_ref(&prefix), &[]).unwrap();
        w.array("a", &eight_bytes()).unwrap();
        let stale = ChunkReference::new("a", &[0], &url, 0, 4).with_checksum(Some(&checksum));
        assert!(matches!(w.reference(&stale), Err(Error::Changed { .. })));
        // A repository on the HTTP server: refused, naming where repositories can be.
        let on_http = Location::parse(&server.url("repo"), &[]).unwrap();
        let e = IcechunkWriter::create(&on_http, std::slice::from_ref(&prefix), &[]).unwrap_err();
        assert!(e.to_string().contains("s3://, gs:// and az:// only"), "{e}");
    }
}
