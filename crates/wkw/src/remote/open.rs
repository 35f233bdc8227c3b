//! Opening a remote dataset (its `header.wkw`) and creating one (a create-only put of it).

use std::path::{Path as FsPath, PathBuf};
use std::sync::Arc;

use object_store::path::Path;
use object_store::{ObjectStore, PutMode};
use scifmt_io::{Object, ReadAt, child, join_url, store_url};

use super::read::read_start;
use super::write::put_options;
use super::{Inner, RemoteDataset, RemoteOptions};
use crate::dataset::cache::MetaCache;
use crate::dataset::root::{Dataset, HEADER_FILE_NAME, check_block_limit, parse_dataset_header};
use crate::error::{Error, Result};
use crate::format::header::Header;

impl RemoteDataset {
    /// Opens the dataset whose `header.wkw` is at `prefix/header.wkw` in `store`.
    ///
    /// # Errors
    /// [`Error::NotADataset`] without `header.wkw`; [`Error::Format`] if it is invalid;
    /// [`Error::LimitExceeded`] for blocks above the limits; [`Error::Remote`] if the request
    /// fails.
    pub async fn open(
        store: Arc<dyn ObjectStore>,
        prefix: Path,
        options: RemoteOptions,
    ) -> Result<Self> {
        let url = store_url(store.as_ref(), &prefix);
        Self::open_at(store, prefix, url, options).await
    }

    /// Opens the dataset at `url` (`s3://bucket/path`, `gs://…`, `az://…`, `http(s)://…`,
    /// `file:///…`, `memory:///…`), configured from the environment like
    /// `AmazonS3Builder::from_env` (`AWS_ENDPOINT_URL`, `AWS_ACCESS_KEY_ID`,
    /// `AWS_SECRET_ACCESS_KEY`, `AWS_REGION`, `AWS_ALLOW_HTTP`, …; `GOOGLE_*` and `AZURE_*`
    /// for the other clouds). The cloud schemes need this crate's `aws`, `gcp`, `azure` or
    /// `http` feature.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a malformed URL; [`Error::Remote`] for an unsupported
    /// scheme or bad configuration; otherwise as [`RemoteDataset::open`].
    pub async fn open_url(url: &str, options: RemoteOptions) -> Result<Self> {
        let (store, prefix, url) = store_for_url(url, &[])?;
        Self::open_at(store, prefix, url, options).await
    }

    /// [`RemoteDataset::open_url`] with store configuration `config` (keys as
    /// `object_store::parse_url_opts` takes them, e.g. `("aws_endpoint_url", "http://…")`;
    /// upper-case environment-variable names work too) applied after the environment's.
    ///
    /// # Errors
    /// As [`RemoteDataset::open_url`].
    pub async fn open_url_with_config(
        url: &str,
        config: &[(String, String)],
        options: RemoteOptions,
    ) -> Result<Self> {
        let (store, prefix, url) = store_for_url(url, config)?;
        Self::open_at(store, prefix, url, options).await
    }

    /// Creates a dataset: uploads `header.wkw` (dataOffset 0) below `prefix`, failing if one
    /// exists (a conditional create where the store supports it).
    ///
    /// # Errors
    /// [`Error::AlreadyExists`] if `header.wkw` exists; [`Error::LimitExceeded`] for blocks above
    /// the limits; [`Error::Remote`] if the request fails.
    pub async fn create(
        store: Arc<dyn ObjectStore>,
        prefix: Path,
        header: Header,
        options: RemoteOptions,
    ) -> Result<Self> {
        let url = store_url(store.as_ref(), &prefix);
        Self::create_at(store, prefix, url, header, options).await
    }

    /// [`RemoteDataset::create`] at a URL (see [`RemoteDataset::open_url`]).
    ///
    /// # Errors
    /// As [`RemoteDataset::create`] and [`RemoteDataset::open_url`].
    pub async fn create_url(url: &str, header: Header, options: RemoteOptions) -> Result<Self> {
        let (store, prefix, url) = store_for_url(url, &[])?;
        Self::create_at(store, prefix, url, header, options).await
    }

    /// [`RemoteDataset::create_url`] with store configuration `config` (as
    /// [`RemoteDataset::open_url_with_config`] takes it).
    ///
    /// # Errors
    /// As [`RemoteDataset::create_url`].
    pub async fn create_url_with_config(
        url: &str,
        config: &[(String, String)],
        header: Header,
        options: RemoteOptions,
    ) -> Result<Self> {
        let (store, prefix, url) = store_for_url(url, config)?;
        Self::create_at(store, prefix, url, header, options).await
    }

    async fn open_at(
        store: Arc<dyn ObjectStore>,
        prefix: Path,
        url: String,
        options: RemoteOptions,
    ) -> Result<Self> {
        let header_url = join_url(&url, HEADER_FILE_NAME);
        let object = Object::new(
            Arc::clone(&store),
            child(&prefix, HEADER_FILE_NAME),
            header_url.clone(),
        );
        // Only the 16 header bytes matter; a shorter object is a truncated header.
        let Some(start) = read_start(&object, 16, &options).await? else {
            return Err(Error::NotADataset {
                path: PathBuf::from(url),
            });
        };
        let n = usize::try_from(start.len().min(16)).unwrap_or(16);
        let mut bytes = vec![0u8; n];
        start
            .read_exact_at(&mut bytes, 0)
            .map_err(|e| Error::io(&header_url, e))?;
        let header =
            parse_dataset_header(&bytes, FsPath::new(&header_url), &options.format.dataset)?;
        Ok(Self::from_parts(store, prefix, url, header, options))
    }

    async fn create_at(
        store: Arc<dyn ObjectStore>,
        prefix: Path,
        url: String,
        header: Header,
        options: RemoteOptions,
    ) -> Result<Self> {
        check_block_limit(&header, &options.format.dataset)?;
        let header = header.with_data_offset(0);
        let header_url = join_url(&url, HEADER_FILE_NAME);
        // Create-only, one request (a `HEAD` check first on stores without create-only puts,
        // where a race can still replace it).
        let put = scifmt_io::put(
            Arc::clone(&store),
            child(&prefix, HEADER_FILE_NAME),
            header_url.clone(),
            header.to_bytes().to_vec().into(),
            PutMode::Create,
            &put_options(&options, &PutMode::Create),
        )
        .await;
        match put {
            Ok(()) => Ok(Self::from_parts(store, prefix, url, header, options)),
            Err(scifmt_io::Error::Conflict { .. }) => Err(Error::AlreadyExists {
                path: PathBuf::from(header_url),
            }),
            Err(e) => Err(e.into()),
        }
    }

    fn from_parts(
        store: Arc<dyn ObjectStore>,
        prefix: Path,
        url: String,
        header: Header,
        options: RemoteOptions,
    ) -> Self {
        let local = Dataset::detached(PathBuf::from(&url), header, options.format.dataset.clone());
        Self {
            inner: Arc::new(Inner {
                cache: MetaCache::new(options.format.dataset.cache_capacity),
                store,
                prefix,
                url,
                options,
                local,
            }),
        }
    }
}

/// The store, the prefix inside it and the message URL for `url` (see
/// [`scifmt_io::store_for_url`]).
fn store_for_url(
    url: &str,
    config: &[(String, String)],
) -> Result<(Arc<dyn ObjectStore>, Path, String)> {
    let s = scifmt_io::store_for_url(url, config)?;
    Ok((s.store, s.path, s.url))
}
