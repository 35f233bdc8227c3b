//! [`ReferenceStore`]: zarrs' readable storage over a kerchunk JSON reference file, reading
//! each chunk from its source in place and checking the source's [`Checksum`] first.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use base64::Engine;
use bytes::Bytes;
use object_store::ObjectStore;
use object_store::path::Path as ObjectPath;
use serde_json::Value;
use zarrs_storage::byte_range::{ByteRange, ByteRangeIterator};
use zarrs_storage::{
    ListableStorageTraits, MaybeBytes, MaybeBytesIterator, ReadableStorageTraits, StorageError,
    StoreKey, StoreKeys, StoreKeysPrefixes, StorePrefix,
};

use crate::error::{Error, Result};
use crate::location::Location;
use crate::read_at::ReadAt;
use crate::references::chunk::{Checksum, reference_path};
use crate::references::kerchunk::SCIFMT_KEY;
use crate::remote::object::Object;
use crate::remote::options::RemoteOptions;
use crate::remote::runtime::block_on;
use crate::remote::store::store_for_url;

/// The largest reference file [`ReferenceStore::open`] reads by default (1 GiB).
pub const DEFAULT_MAX_REFERENCE_BYTES: u64 = 1 << 30;

/// One key of the reference file.
#[derive(Debug, Clone)]
enum Entry {
    /// The value itself (metadata documents).
    Inline(Bytes),
    /// Bytes `offset..offset + length` of source `source` (`length` `None`: the whole source).
    Range {
        source: usize,
        offset: u64,
        length: Option<u64>,
    },
}

/// A source a reference points into.
#[derive(Debug, Clone)]
struct Source {
    url: String,
    checksum: Option<Checksum>,
}

/// A [zarrs](https://docs.rs/zarrs) readable (and listable) storage over a kerchunk JSON
/// reference file (version 1, or version 0's bare key map; no templates or generators): a
/// key's value is its inline text (`base64:` for binary), or bytes of a local file
/// (`file://` URLs, paths) or of an object (`s3://`, `gs://`, `az://`, `http(s)://`, … with
/// the stores [`store_for_url`] builds from the environment and `config`).
///
/// Before a chunk is read its source is checked against the checksum the reference file keeps
/// for it (see [`KerchunkWriter`](crate::KerchunkWriter)): an object's read is pinned to its
/// ETag (`If-Match`), a local file's modification time is compared before and after the read.
/// A source changed since the references were made is [`Error::Changed`] (a zarrs
/// `StorageError` quoting it), never other bytes.
///
/// The whole reference file is held in memory (parsed once).
pub struct ReferenceStore {
    name: String,
    entries: HashMap<String, Entry>,
    sources: Vec<Source>,
    config: Vec<(String, String)>,
    options: RemoteOptions,
    stores: Mutex<HashMap<String, Arc<dyn ObjectStore>>>,
}

impl std::fmt::Debug for ReferenceStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReferenceStore")
            .field("name", &self.name)
            .field("keys", &self.entries.len())
            .field("sources", &self.sources.len())
            .finish_non_exhaustive()
    }
}

impl ReferenceStore {
    /// Reads the reference file at `refs` (at most `max_bytes` long; see
    /// [`DEFAULT_MAX_REFERENCE_BYTES`]); sources on stores are reached with the stores
    /// [`store_for_url`] builds from the environment and `config`, read with `options`.
    ///
    /// # Errors
    /// [`Error::Io`] / [`Error::Remote`] reading it; [`Error::LimitExceeded`] beyond
    /// `max_bytes`; as [`ReferenceStore::from_json`].
    pub fn open(
        refs: &Location,
        config: &[(String, String)],
        options: RemoteOptions,
        max_bytes: u64,
    ) -> Result<Self> {
        if let Some(n) = refs.size()?
            && n > max_bytes
        {
            return Err(Error::LimitExceeded {
                what: "reference file",
                requested: n,
                limit: max_bytes,
            });
        }
        let bytes = refs.read_all()?.ok_or_else(|| Error::Format {
            name: refs.to_string(),
            what: "no such file".into(),
        })?;
        if bytes.len() as u64 > max_bytes {
            return Err(Error::LimitExceeded {
                what: "reference file",
                requested: bytes.len() as u64,
                limit: max_bytes,
            });
        }
        Self::from_json(&refs.to_string(), &bytes, config, options)
    }

    /// Parses a reference file's text (`name` names it in errors).
    ///
    /// # Errors
    /// [`Error::Format`] for text that is not a kerchunk reference file;
    /// [`Error::Unsupported`] for templates, generators or another version.
    pub fn from_json(
        name: &str,
        text: &[u8],
        config: &[(String, String)],
        options: RemoteOptions,
    ) -> Result<Self> {
        let bad = |what: String| Error::Format {
            name: name.to_owned(),
            what,
        };
        let doc: Value = serde_json::from_slice(text).map_err(|e| bad(e.to_string()))?;
        let refs = match doc.get("version") {
            None => &doc,
            Some(v) if v.as_u64() == Some(1) => {
                for key in ["templates", "gen"] {
                    if doc.get(key).is_some_and(|t| !t.is_null()) {
                        return Err(Error::Unsupported {
                            name: name.to_owned(),
                            what: format!("kerchunk `{key}`"),
                        });
                    }
                }
                doc.get("refs")
                    .ok_or_else(|| bad("version 1 without `refs`".into()))?
            }
            Some(v) => {
                return Err(Error::Unsupported {
                    name: name.to_owned(),
                    what: format!("kerchunk version {v}"),
                });
            }
        };
        let map = refs
            .as_object()
            .ok_or_else(|| bad("`refs` is not an object".into()))?;
        let checksums = checksums_of(&doc, name)?;
        let mut sources: Vec<Source> = Vec::new();
        let mut by_url: HashMap<String, usize> = HashMap::new();
        let mut entries = HashMap::with_capacity(map.len());
        for (key, value) in map {
            let entry = match value {
                Value::String(s) => Entry::Inline(match s.strip_prefix("base64:") {
                    Some(b64) => base64::engine::general_purpose::STANDARD
                        .decode(b64)
                        .map(Bytes::from)
                        .map_err(|e| bad(format!("{key}: {e}")))?,
                    None => Bytes::from(s.clone().into_bytes()),
                }),
                Value::Array(parts) => {
                    let url = parts
                        .first()
                        .and_then(Value::as_str)
                        .ok_or_else(|| bad(format!("{key}: {value} has no URL")))?;
                    let (offset, length) = match parts.len() {
                        1 => (0, None),
                        3 => {
                            let n = |v: &Value| {
                                v.as_u64().ok_or_else(|| {
                                    bad(format!("{key}: {value}: {v} is not a size"))
                                })
                            };
                            (n(&parts[1])?, Some(n(&parts[2])?))
                        }
                        _ => {
                            return Err(bad(format!(
                                "{key}: {value} is not [URL, offset, length]"
                            )));
                        }
                    };
                    if let Some(len) = length
                        && offset.checked_add(len).is_none()
                    {
                        return Err(bad(format!("{key}: range {offset}+{len} overflows")));
                    }
                    let source = match by_url.get(url) {
                        Some(&i) => i,
                        None => {
                            sources.push(Source {
                                url: url.to_owned(),
                                checksum: checksums.get(url).cloned(),
                            });
                            by_url.insert(url.to_owned(), sources.len() - 1);
                            sources.len() - 1
                        }
                    };
                    Entry::Range {
                        source,
                        offset,
                        length,
                    }
                }
                other => return Err(bad(format!("{key}: {other} is not a reference"))),
            };
            entries.insert(key.clone(), entry);
        }
        Ok(Self {
            name: name.to_owned(),
            entries,
            sources,
            config: config.to_vec(),
            options,
            stores: Mutex::new(HashMap::new()),
        })
    }

    /// The number of keys.
    #[must_use]
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether there are no keys.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The bytes of `key` (`None`: no such key), read from its source.
    ///
    /// # Errors
    /// [`Error::Changed`] for a source that changed since the references were made;
    /// [`Error::Io`] / [`Error::Remote`] reading it; [`Error::Format`] for a range outside the
    /// source.
    pub fn read(&self, key: &str) -> Result<Option<Bytes>> {
        match self.entries.get(key) {
            None => Ok(None),
            Some(Entry::Inline(b)) => Ok(Some(b.clone())),
            Some(Entry::Range {
                source,
                offset,
                length,
            }) => {
                let source = &self.sources[*source];
                self.read_source(source, *offset, *length).map(Some)
            }
        }
    }

    /// The length of `key`'s value without reading it.
    fn len_of(&self, key: &str) -> Result<Option<u64>> {
        match self.entries.get(key) {
            None => Ok(None),
            Some(Entry::Inline(b)) => Ok(Some(b.len() as u64)),
            Some(Entry::Range {
                length: Some(n), ..
            }) => Ok(Some(*n)),
            Some(Entry::Range { .. }) => Ok(self.read(key)?.map(|b| b.len() as u64)),
        }
    }

    fn read_source(&self, source: &Source, offset: u64, length: Option<u64>) -> Result<Bytes> {
        let path = reference_path(&source.url).or_else(|| {
            (!crate::overlap::is_url(std::path::Path::new(&source.url)))
                .then(|| std::path::PathBuf::from(&source.url))
        });
        if let Some(path) = path {
            return read_local(&path, &source.url, source.checksum.as_ref(), offset, length);
        }
        let object = self.object(&source.url)?;
        let object = match &source.checksum {
            Some(Checksum::ETag(e)) => object.with_etag(Some(e.clone())),
            Some(c @ Checksum::LastModified { .. }) => {
                let meta = block_on(object.head())??.ok_or_else(|| Error::Changed {
                    url: source.url.clone(),
                })?;
                if Checksum::of_object(&object_store::ObjectMeta {
                    e_tag: None,
                    ..meta.clone()
                }) != *c
                {
                    return Err(Error::Changed {
                        url: source.url.clone(),
                    });
                }
                object
            }
            None => object,
        };
        let got = match length {
            Some(n) => block_on(object.get_range(offset..offset + n, &self.options))??,
            None => block_on(object.get_all(u64::MAX, &self.options))??,
        };
        got.ok_or_else(|| Error::Changed {
            url: source.url.clone(),
        })
    }

    /// The object `url` names, on a store built once per scheme and host.
    fn object(&self, url: &str) -> Result<Object> {
        let parsed = url::Url::parse(url)
            .map_err(|e| Error::InvalidArgument(format!("reference URL {url}: {e}")))?;
        let root = match (parsed.host_str(), parsed.port()) {
            (Some(h), Some(p)) => format!("{}://{h}:{p}", parsed.scheme()),
            (Some(h), None) => format!("{}://{h}", parsed.scheme()),
            _ => format!("{}://", parsed.scheme()),
        };
        let store = {
            let mut stores = self.stores.lock().unwrap_or_else(PoisonError::into_inner);
            match stores.get(&root) {
                Some(s) => Arc::clone(s),
                None => {
                    let s = store_for_url(&format!("{root}/"), &self.config)?.store;
                    stores.insert(root, Arc::clone(&s));
                    s
                }
            }
        };
        let path = ObjectPath::from_url_path(parsed.path())
            .map_err(|e| Error::InvalidArgument(format!("reference URL {url}: {e}")))?;
        Ok(Object::new(store, path, crate::redact::redact(url)))
    }
}

/// Bytes `offset..offset + length` of the local file `path` (named `url`), checking its
/// modification time against `checksum` before and after the read.
fn read_local(
    path: &std::path::Path,
    url: &str,
    checksum: Option<&Checksum>,
    offset: u64,
    length: Option<u64>,
) -> Result<Bytes> {
    let changed = || Error::Changed {
        url: url.to_owned(),
    };
    let file = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && checksum.is_some() => {
            return Err(changed());
        }
        Err(e) => return Err(Error::io(path, e)),
    };
    let stamp = |f: &std::fs::File| -> Result<(Checksum, u64)> {
        let meta = f.metadata().map_err(|e| Error::io(path, e))?;
        Ok((Checksum::of_file(&meta, path)?, meta.len()))
    };
    let (before, size) = stamp(&file)?;
    if checksum.is_some_and(|c| *c != before) {
        return Err(changed());
    }
    let end = match length {
        Some(n) => offset.checked_add(n),
        None => Some(size),
    };
    let Some(end) = end.filter(|&e| e <= size && offset <= e) else {
        return Err(Error::Format {
            name: url.to_owned(),
            what: format!("bytes {offset}+{length:?} lie outside its {size} bytes"),
        });
    };
    let n = usize::try_from(end - offset).map_err(|_| Error::LimitExceeded {
        what: "referenced chunk",
        requested: end - offset,
        limit: usize::MAX as u64,
    })?;
    let mut buf = vec![0u8; n];
    file.read_exact_at(&mut buf, offset)
        .map_err(|e| Error::io(path, e))?;
    if checksum.is_some() && stamp(&file)?.0 != before {
        return Err(changed());
    }
    Ok(Bytes::from(buf))
}

/// The checksums section of a parsed kerchunk document (URL → checksum); `name` names the
/// document in errors.
///
/// # Errors
/// [`Error::Format`] for a malformed section.
fn checksums_of(doc: &serde_json::Value, name: &str) -> Result<HashMap<String, Checksum>> {
    let mut out = HashMap::new();
    let Some(section) = doc.get(SCIFMT_KEY) else {
        return Ok(out);
    };
    let bad = |what: String| Error::Format {
        name: name.to_owned(),
        what,
    };
    let Some(map) = section.get("checksums").and_then(|c| c.as_object()) else {
        return Err(bad(format!("{SCIFMT_KEY}.checksums is not an object")));
    };
    for (url, v) in map {
        let c = Checksum::from_json(v)
            .ok_or_else(|| bad(format!("checksum of {url}: {v} is not a checksum")))?;
        out.insert(url.clone(), c);
    }
    Ok(out)
}

/// A storage error with this crate's message (which names the source, without credentials).
fn other(e: Error) -> StorageError {
    StorageError::Other(e.to_string())
}

impl ReadableStorageTraits for ReferenceStore {
    fn get(&self, key: &StoreKey) -> Result<MaybeBytes, StorageError> {
        self.read(key.as_str()).map_err(other)
    }

    fn get_partial_many<'a>(
        &'a self,
        key: &StoreKey,
        byte_ranges: ByteRangeIterator<'a>,
    ) -> Result<MaybeBytesIterator<'a>, StorageError> {
        let Some(whole) = self.read(key.as_str()).map_err(other)? else {
            return Ok(None);
        };
        let size = whole.len() as u64;
        let mut out = Vec::new();
        for r in byte_ranges {
            let (start, end) = match r {
                ByteRange::FromStart(s, Some(n)) => (Some(s), s.checked_add(n)),
                ByteRange::FromStart(s, None) => (Some(s), Some(size)),
                ByteRange::Suffix(n) => (size.checked_sub(n), Some(size)),
            };
            let range = start
                .zip(end)
                .filter(|&(s, e)| s <= e && e <= size)
                .and_then(|(s, e)| Some(usize::try_from(s).ok()?..usize::try_from(e).ok()?));
            match range {
                Some(range) => out.push(Ok(whole.slice(range))),
                _ => {
                    return Err(StorageError::Other(format!(
                        "{}: byte range {r} outside the {size} bytes of {key}",
                        self.name
                    )));
                }
            }
        }
        Ok(Some(Box::new(out.into_iter())))
    }

    fn size_key(&self, key: &StoreKey) -> Result<Option<u64>, StorageError> {
        self.len_of(key.as_str()).map_err(other)
    }

    fn supports_get_partial(&self) -> bool {
        false
    }
}

impl ListableStorageTraits for ReferenceStore {
    fn list(&self) -> Result<StoreKeys, StorageError> {
        self.list_prefix(&StorePrefix::root())
    }

    fn list_prefix(&self, prefix: &StorePrefix) -> Result<StoreKeys, StorageError> {
        let mut keys: Vec<StoreKey> = self
            .entries
            .keys()
            .filter(|k| k.starts_with(prefix.as_str()))
            .map(|k| StoreKey::new(k.clone()))
            .collect::<Result<_, _>>()?;
        keys.sort();
        Ok(keys)
    }

    fn list_dir(&self, prefix: &StorePrefix) -> Result<StoreKeysPrefixes, StorageError> {
        let mut keys = Vec::new();
        let mut prefixes = std::collections::BTreeSet::new();
        for k in self.entries.keys() {
            let Some(rest) = k.strip_prefix(prefix.as_str()) else {
                continue;
            };
            match rest.split_once('/') {
                None => keys.push(StoreKey::new(k.clone())?),
                Some((dir, _)) => {
                    prefixes.insert(format!("{}{dir}/", prefix.as_str()));
                }
            }
        }
        keys.sort();
        let prefixes = prefixes
            .into_iter()
            .map(StorePrefix::new)
            .collect::<Result<Vec<_>, _>>()?;
        Ok(StoreKeysPrefixes::new(keys, prefixes))
    }

    fn size_prefix(&self, prefix: &StorePrefix) -> Result<u64, StorageError> {
        let mut total = 0u64;
        for k in self
            .entries
            .keys()
            .filter(|k| k.starts_with(prefix.as_str()))
        {
            total = total.saturating_add(self.len_of(k).map_err(other)?.unwrap_or(0));
        }
        Ok(total)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "a failed unwrap is a failed test")]

    use super::*;

    #[test]
    fn local_sources_are_read_in_place_and_checked() {
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path().join("src.bin");
        std::fs::write(&src, b"0123456789").unwrap();
        let meta = std::fs::metadata(&src).unwrap();
        let url = format!("file://{}", src.display());
        let c = Checksum::of_file(&meta, &src).unwrap().to_json();
        let doc = serde_json::json!({
            "version": 1,
            "refs": {"zarr.json": "{}", "a/c/0": [url, 2, 3], "b": "base64:AAE="},
            "scifmt": {"version": 1, "checksums": {url.clone(): c}}
        });
        let text = serde_json::to_vec(&doc).unwrap();
        let s =
            ReferenceStore::from_json("refs.json", &text, &[], RemoteOptions::default()).unwrap();
        assert_eq!(s.read("a/c/0").unwrap().unwrap(), &b"234"[..]);
        assert_eq!(s.read("b").unwrap().unwrap(), &[0u8, 1][..]);
        assert_eq!(s.read("zarr.json").unwrap().unwrap(), &b"{}"[..]);
        assert!(s.read("nope").unwrap().is_none());
        let listed = s.list_dir(&StorePrefix::root()).unwrap();
        assert_eq!(listed.prefixes().len(), 1);
        // Rewritten (another modification time): refused.
        std::fs::write(&src, b"9876543210").unwrap();
        let f = std::fs::File::options().write(true).open(&src).unwrap();
        f.set_modified(meta.modified().unwrap() + std::time::Duration::from_secs(3))
            .unwrap();
        let e = s.read("a/c/0").unwrap_err();
        assert!(matches!(e, Error::Changed { .. }), "{e}");
        assert!(e.to_string().contains(&url), "{e}");
    }

    #[test]
    fn inline_chunks_are_written_as_base64_and_read_back() {
        use crate::references::chunk::ReferenceSink;
        use crate::{Durability, KerchunkWriter};
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("refs.json");
        let mut w =
            KerchunkWriter::create(&out.as_path().into(), &RemoteOptions::<()>::default()).unwrap();
        let array: zarrs_metadata::v3::ArrayMetadataV3 =
            serde_json::from_value(serde_json::json!({
            "zarr_format": 3, "node_type": "array", "shape": [4, 4], "data_type": "uint8",
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [2, 2]}},
            "chunk_key_encoding": {"name": "default"}, "fill_value": 0,
            "codecs": [{"name": "bytes"}]}))
            .unwrap();
        w.array("a", &array).unwrap();
        let bytes = [0u8, 1, 254, 255];
        w.inline("a", &[1, 0], &bytes).unwrap();
        // Undeclared arrays and indices of another rank are refused as for references.
        assert!(w.inline("b", &[0, 0], &bytes).is_err());
        assert!(w.inline("a", &[0], &bytes).is_err());
        let summary = w.finish(Durability::None).unwrap();
        assert_eq!((summary.inline, summary.references), (1, 0));
        let doc: Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
        assert_eq!(doc["refs"]["a/c/1/0"], "base64:AAH+/w==");
        let s = ReferenceStore::open(
            &out.as_path().into(),
            &[],
            RemoteOptions::default(),
            crate::DEFAULT_MAX_REFERENCE_BYTES,
        )
        .unwrap();
        assert_eq!(s.read("a/c/1/0").unwrap().unwrap(), &bytes[..]);
    }

    #[test]
    fn malformed_reference_files_are_errors() {
        for bad in [
            &b"[]"[..],
            b"{\"version\": 1}",
            b"{\"version\": 2, \"refs\": {}}",
            b"{\"version\": 1, \"refs\": {\"a\": [1, 2, 3]}}",
            b"{\"version\": 1, \"refs\": {\"a\": [\"s3://b/k\", 2]}}",
            b"{\"version\": 1, \"refs\": {\"a\": [\"s3://b/k\", 18446744073709551615, 2]}}",
            b"{\"version\": 1, \"refs\": {\"a\": 7}}",
            b"{\"version\": 1, \"refs\": {}, \"templates\": {\"u\": \"x\"}}",
            b"{\"version\": 1, \"refs\": {}, \"scifmt\": {\"checksums\": {\"u\": 1}}}",
        ] {
            assert!(
                ReferenceStore::from_json("r", bad, &[], RemoteOptions::default()).is_err(),
                "{}",
                String::from_utf8_lossy(bad)
            );
        }
    }
}
