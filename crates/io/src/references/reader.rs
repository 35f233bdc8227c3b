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
/// `StorageError` quoting it), never other bytes. Reads of objects fetch neighbouring
/// references with the one asked for ([`with_read_ahead`](Self::with_read_ahead)); those are
/// then served from memory, as the referenced version's bytes, even if the object changes
/// after that fetch: every fetch is checked, a store opened later sees the change.
///
/// The whole reference file is held in memory (parsed once).
pub struct ReferenceStore {
    name: String,
    entries: HashMap<String, Entry>,
    sources: Vec<Source>,
    config: Vec<(String, String)>,
    options: RemoteOptions,
    stores: Mutex<HashMap<String, Arc<dyn ObjectStore>>>,
    /// Each source's referenced byte ranges `(start, end)`, sorted: what a read-ahead window
    /// may span.
    ranges: Vec<Vec<(u64, u64)>>,
    /// The most bytes one read of an object fetches for the references after the one asked
    /// for (0: none).
    read_ahead: u64,
    windows: Mutex<Windows>,
}

/// The default of [`ReferenceStore::with_read_ahead`] (4 MiB).
pub const DEFAULT_READ_AHEAD: u64 = 4 << 20;

/// The most bytes the read-ahead windows of one [`ReferenceStore`] hold (64 MiB); the oldest
/// windows are dropped beyond it.
const WINDOW_CACHE_BYTES: u64 = 64 << 20;

/// The largest gap between two referenced ranges of one object that a window spans (bytes
/// read and dropped).
const WINDOW_GAP: u64 = 4 << 10;

/// Bytes `start..end` of one object, fetched once for the references they hold (read-ahead).
#[derive(Debug)]
struct Window {
    end: u64,
    /// Filled by the first reader of a reference in it; `None` if that fetch failed (the
    /// readers then read their own ranges, and get the error themselves).
    bytes: std::sync::OnceLock<Option<Bytes>>,
}

/// The read-ahead windows of a store, by (source, start), and their bytes in the order made.
#[derive(Debug, Default)]
struct Windows {
    by_start: std::collections::BTreeMap<(usize, u64), Arc<Window>>,
    made: std::collections::VecDeque<((usize, u64), u64)>,
    bytes: u64,
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
        let mut ranges = vec![Vec::new(); sources.len()];
        for e in entries.values() {
            if let Entry::Range {
                source,
                offset,
                length: Some(n),
            } = e
            {
                // No overflow: checked above.
                ranges[*source].push((*offset, offset + n));
            }
        }
        for r in &mut ranges {
            r.sort_unstable();
            r.dedup();
        }
        Ok(Self {
            name: name.to_owned(),
            entries,
            sources,
            config: config.to_vec(),
            options,
            stores: Mutex::new(HashMap::new()),
            ranges,
            read_ahead: DEFAULT_READ_AHEAD,
            windows: Mutex::new(Windows::default()),
        })
    }

    /// Reads of objects fetch up to `bytes` more than the reference asked for: the references
    /// that follow it in the same object (none further than 4 KiB from the one before), and
    /// up to half as many bytes of those before it, which are then served from memory. Chunks
    /// of a region are mostly neighbours in their files (WKW blocks in Morton order, b2nd
    /// chunks in a frame), so one request serves many where each would cost a round trip.
    /// Windows do not overlap; at most 64 MiB of them are kept (the oldest dropped). Local
    /// files are read chunk by chunk. 0 turns it off; [`DEFAULT_READ_AHEAD`] by default.
    #[must_use]
    pub fn with_read_ahead(mut self, bytes: u64) -> Self {
        self.read_ahead = bytes;
        self
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
            }) => self.read_source(*source, *offset, *length).map(Some),
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

    fn read_source(&self, index: usize, offset: u64, length: Option<u64>) -> Result<Bytes> {
        let source = &self.sources[index];
        let path = reference_path(&source.url).or_else(|| {
            (!crate::overlap::is_url(std::path::Path::new(&source.url)))
                .then(|| std::path::PathBuf::from(&source.url))
        });
        if let Some(path) = path {
            return read_local(&path, &source.url, source.checksum.as_ref(), offset, length);
        }
        if let Some(n) = length
            && self.read_ahead > 0
            && let Some(bytes) = self.read_windowed(index, offset, n)?
        {
            return Ok(bytes);
        }
        self.read_object(source, offset, length)
    }

    /// Bytes `offset..offset + length` of the object `source` (all of it for `None`), pinned to
    /// its checksum.
    fn read_object(&self, source: &Source, offset: u64, length: Option<u64>) -> Result<Bytes> {
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

    /// Bytes `offset..offset + n` of source `index` from a read-ahead window: one that holds
    /// them, or a new one starting there (see [`with_read_ahead`](Self::with_read_ahead));
    /// `None` if its fetch failed (the caller reads the range itself, which reports the
    /// error: a changed source among them).
    fn read_windowed(&self, index: usize, offset: u64, n: u64) -> Result<Option<Bytes>> {
        let end = offset.checked_add(n).ok_or_else(|| {
            Error::InvalidArgument(format!("{}: range {offset}+{n} overflows", self.name))
        })?;
        let (start, window) = {
            let mut w = self.windows.lock().unwrap_or_else(PoisonError::into_inner);
            let before = w
                .by_start
                .range((index, 0)..=(index, offset))
                .next_back()
                .map(|(&(_, s), win)| (s, Arc::clone(win)));
            match before {
                Some((s, win)) if win.end >= end => (s, win),
                before => {
                    let prev_end = before.map_or(0, |(_, win)| win.end);
                    let next = w
                        .by_start
                        .range((index, offset + 1)..=(index, u64::MAX))
                        .next()
                        .map_or(u64::MAX, |(&(_, s), _)| s);
                    let (win_start, win_end) = self.window_span(index, offset, end, prev_end, next);
                    let win = Arc::new(Window {
                        end: win_end,
                        bytes: std::sync::OnceLock::new(),
                    });
                    w.by_start.insert((index, win_start), Arc::clone(&win));
                    w.made.push_back(((index, win_start), win_end - win_start));
                    w.bytes += win_end - win_start;
                    while w.bytes > WINDOW_CACHE_BYTES && w.made.len() > 1 {
                        if let Some((key, len)) = w.made.pop_front() {
                            w.by_start.remove(&key);
                            w.bytes -= len;
                        }
                    }
                    (win_start, win)
                }
            }
        };
        // The first reader to get here fetches the window; the others wait for it.
        let bytes = window.bytes.get_or_init(|| {
            self.read_object(&self.sources[index], start, Some(window.end - start))
                .ok()
                .filter(|b| b.len() as u64 == window.end - start)
        });
        let Some(bytes) = bytes else {
            let mut w = self.windows.lock().unwrap_or_else(PoisonError::into_inner);
            if w.by_start
                .get(&(index, start))
                .is_some_and(|win| Arc::ptr_eq(win, &window))
            {
                w.by_start.remove(&(index, start));
                let before = w.made.len();
                w.made.retain(|(key, _)| *key != (index, start));
                if w.made.len() < before {
                    w.bytes -= window.end - start;
                }
            }
            return Ok(None);
        };
        // In range: the window spans offset..end.
        let from = usize::try_from(offset - start).unwrap_or(usize::MAX);
        let to = usize::try_from(end - start).unwrap_or(usize::MAX);
        Ok(bytes.get(from..to).map(|_| bytes.slice(from..to)))
    }

    /// The span of a new window of source `index` around the reference `offset..end`: the
    /// references after it (sorted; gaps of at most [`WINDOW_GAP`]) up to `read_ahead` more
    /// bytes, and those before it up to half that (chunks are not always read in file order),
    /// between the end of the window before (`prev_end`) and the start of the one after
    /// (`next`).
    fn window_span(
        &self,
        index: usize,
        offset: u64,
        end: u64,
        prev_end: u64,
        next: u64,
    ) -> (u64, u64) {
        let ranges = &self.ranges[index];
        let at = ranges.partition_point(|&(s, _)| s < offset);
        let limit = end.saturating_add(self.read_ahead).min(next.max(end));
        let mut win_end = end;
        for &(s, e) in &ranges[at..] {
            if s > win_end.saturating_add(WINDOW_GAP) || e > limit {
                break;
            }
            win_end = win_end.max(e);
        }
        let floor = offset
            .saturating_sub(self.read_ahead / 2)
            .max(prev_end.min(offset));
        let mut win_start = offset;
        for &(s, e) in ranges[..at].iter().rev() {
            if e.saturating_add(WINDOW_GAP) < win_start || s < floor {
                break;
            }
            win_start = win_start.min(s);
        }
        (win_start, win_end)
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

    /// 64 references of 1 KiB, back to back, into one object on the S3 test server (and one
    /// 64 KiB further on); the store over them, the server, and the object's bytes.
    fn adjacent_chunks() -> (ReferenceStore, s3_testserver::TestServer, Vec<u8>) {
        let server = s3_testserver::TestServer::start().unwrap();
        let config = server.env();
        let data: Vec<u8> = (0..192 * 1024u32).map(|i| (i % 251) as u8).collect();
        let object = Location::parse(&server.url("src/data.bin"), &config).unwrap();
        object
            .write_small(&data, crate::Durability::default())
            .unwrap();
        let Location::Store(s) = &object else {
            unreachable!("an s3:// URL")
        };
        let meta = block_on(object_store::ObjectStoreExt::head(s.store(), s.path()))
            .unwrap()
            .unwrap();
        let url = server.url("src/data.bin");
        let mut refs = serde_json::Map::new();
        for i in 0..64u64 {
            refs.insert(format!("a/c/{i}"), serde_json::json!([url, i * 1024, 1024]));
        }
        refs.insert("a/c/64".into(), serde_json::json!([url, 128 * 1024, 1024]));
        let doc = serde_json::json!({
            "version": 1, "refs": refs,
            "scifmt": {"version": 1, "checksums": {url: Checksum::of_object(&meta).to_json()}}
        });
        let store = ReferenceStore::from_json(
            "refs.json",
            &serde_json::to_vec(&doc).unwrap(),
            &config,
            RemoteOptions::default(),
        )
        .unwrap();
        (store, server, data)
    }

    /// GET requests for objects since the last reset.
    fn gets(server: &s3_testserver::TestServer) -> usize {
        server.log().iter().filter(|r| r.is_object_get()).count()
    }

    #[test]
    fn neighbouring_references_are_read_ahead_in_one_request() {
        let (store, server, data) = adjacent_chunks();
        let chunk = |i: usize| &data[i * 1024..(i + 1) * 1024];
        server.reset_stats();
        for i in 0..64 {
            assert_eq!(store.read(&format!("a/c/{i}")).unwrap().unwrap(), chunk(i));
        }
        assert_eq!(gets(&server), 1, "64 KiB of neighbours in one window");
        // The far reference (64 KiB away) is a window of its own; read again, none is fetched.
        assert_eq!(store.read("a/c/64").unwrap().unwrap(), chunk(128));
        for i in [5, 0, 63] {
            assert_eq!(store.read(&format!("a/c/{i}")).unwrap().unwrap(), chunk(i));
        }
        assert_eq!(gets(&server), 2);

        // 8 KiB of read-ahead: windows of 9 chunks forward from the first one read.
        let (store, server, data) = adjacent_chunks();
        let store = store.with_read_ahead(8 * 1024);
        server.reset_stats();
        for i in 0..64 {
            assert_eq!(
                store.read(&format!("a/c/{i}")).unwrap().unwrap(),
                &data[i * 1024..(i + 1) * 1024]
            );
        }
        assert_eq!(gets(&server), 8);
        // Backwards, windows reach half as far back: 5 chunks each.
        let (store, server, _) = adjacent_chunks();
        let store = store.with_read_ahead(8 * 1024);
        server.reset_stats();
        for i in (0..64).rev() {
            store.read(&format!("a/c/{i}")).unwrap().unwrap();
        }
        assert_eq!(gets(&server), 13);
        // None: a request per chunk.
        let (store, server, _) = adjacent_chunks();
        let store = store.with_read_ahead(0);
        server.reset_stats();
        for i in 0..64 {
            store.read(&format!("a/c/{i}")).unwrap().unwrap();
        }
        assert_eq!(gets(&server), 64);
    }

    #[test]
    fn read_ahead_from_threads_fetches_each_window_once_and_checks_the_source() {
        let (store, server, data) = adjacent_chunks();
        server.reset_stats();
        std::thread::scope(|scope| {
            for t in 0..4 {
                let (store, data) = (&store, &data);
                scope.spawn(move || {
                    for i in (t..64).step_by(4) {
                        let got = store.read(&format!("a/c/{i}")).unwrap().unwrap();
                        assert_eq!(got, &data[i * 1024..(i + 1) * 1024]);
                    }
                });
            }
        });
        // Whichever thread comes first makes a window of all 64 (2 MiB back, 4 MiB forward);
        // the others wait for its one GET.
        assert_eq!(gets(&server), 1);
        // The object rewritten: a new window's read fails as a changed source.
        let object = Location::parse(&server.url("src/data.bin"), &server.env()).unwrap();
        object
            .write_small(&[7u8; 192 * 1024], crate::Durability::default())
            .unwrap();
        let e = store.read("a/c/64").unwrap_err();
        assert!(matches!(e, Error::Changed { .. }), "{e}");
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
