//! The vocabulary of virtual references: [`ChunkReference`], the source's [`Checksum`], the
//! [`ReferenceSink`] producers stream into, chunk keys, and the URLs references name sources by.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};
use zarrs_metadata::v3::{ArrayMetadataV3, GroupMetadataV3, MetadataV3};

use crate::error::{Error, Result};
use crate::location::Location;

/// What a reference's source looked like when the reference was made. A reader compares it
/// with the source before (and, locally, after) reading, so a source that was replaced or
/// rewritten since is an error ([`Error::Changed`]), never other voxels.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Checksum {
    /// The object's ETag (object stores), as the store reported it (quotes included).
    ETag(String),
    /// The file's modification time (local files; objects of stores without ETags), to the
    /// nanosecond where the file system keeps it.
    LastModified {
        /// Whole seconds since 1970-01-01T00:00:00Z.
        seconds: i64,
        /// Nanoseconds within the second (0..1e9).
        nanos: u32,
    },
}

impl Checksum {
    /// The modification time of a local file from its metadata (`path` names it in errors).
    ///
    /// # Errors
    /// [`Error::Io`] when the file system keeps no modification time.
    pub fn of_file(meta: &std::fs::Metadata, path: &Path) -> Result<Self> {
        let modified = meta.modified().map_err(|e| Error::io(path, e))?;
        Ok(Self::from_system_time(modified))
    }

    /// The checksum of a time (before 1970 counted backwards).
    #[must_use]
    pub fn from_system_time(t: SystemTime) -> Self {
        match t.duration_since(UNIX_EPOCH) {
            Ok(d) => Self::LastModified {
                seconds: i64::try_from(d.as_secs()).unwrap_or(i64::MAX),
                nanos: d.subsec_nanos(),
            },
            Err(e) => {
                let d = e.duration();
                let secs = i64::try_from(d.as_secs()).unwrap_or(i64::MAX);
                // -1.25 s is seconds -2, nanos 0.75e9.
                if d.subsec_nanos() == 0 {
                    Self::LastModified {
                        seconds: -secs,
                        nanos: 0,
                    }
                } else {
                    Self::LastModified {
                        seconds: -secs - 1,
                        nanos: 1_000_000_000 - d.subsec_nanos(),
                    }
                }
            }
        }
    }

    /// The checksum of an object as a store reported it: its ETag (quoted, see
    /// [`normalize_etag`](crate::normalize_etag)), or its last-modified time when the store
    /// has no ETags.
    #[must_use]
    pub fn of_object(meta: &object_store::ObjectMeta) -> Self {
        match &meta.e_tag {
            Some(e) => Self::ETag(crate::normalize_etag(e)),
            None => Self::LastModified {
                seconds: meta.last_modified.timestamp(),
                nanos: meta.last_modified.timestamp_subsec_nanos(),
            },
        }
    }

    /// As JSON: `{"etag": "…"}` or `{"last_modified": [seconds, nanos]}`.
    #[must_use]
    pub fn to_json(&self) -> Value {
        match self {
            Self::ETag(e) => json!({ "etag": e }),
            Self::LastModified { seconds, nanos } => json!({ "last_modified": [seconds, nanos] }),
        }
    }

    /// From the JSON [`Checksum::to_json`] writes; `None` for anything else.
    #[must_use]
    pub fn from_json(v: &Value) -> Option<Self> {
        let map = v.as_object()?;
        if map.len() != 1 {
            return None;
        }
        if let Some(e) = map.get("etag") {
            return e.as_str().map(|e| Self::ETag(e.to_owned()));
        }
        let pair = map.get("last_modified")?.as_array()?;
        match pair.as_slice() {
            [s, n] => Some(Self::LastModified {
                seconds: s.as_i64()?,
                nanos: u32::try_from(n.as_u64()?)
                    .ok()
                    .filter(|&n| n < 1_000_000_000)?,
            }),
            _ => None,
        }
    }
}

/// One chunk of a Zarr v3 array that is a byte range of a source file or object.
///
/// Borrowed, so that a producer streams millions of them without an allocation each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct ChunkReference<'a> {
    /// The array's node path below the hierarchy's root (`""` for the root itself,
    /// `color/1` for an array of a group), as declared by [`ReferenceSink::array`].
    pub array: &'a str,
    /// The chunk's indices in the array's chunk grid (one per dimension).
    pub indices: &'a [u64],
    /// Where the bytes are: a store URL without credentials (`s3://bucket/key`), or a local file
    /// as `file://` and its absolute path (see [`reference_url`]).
    pub url: &'a str,
    /// First byte of the chunk in the source.
    pub offset: u64,
    /// Length of the chunk in bytes.
    pub length: u64,
    /// What the source looked like when the reference was made (see [`Checksum`]).
    pub checksum: Option<&'a Checksum>,
}

impl<'a> ChunkReference<'a> {
    /// Chunk `indices` of the array at `array` is bytes `offset..offset + length` of `url`.
    #[must_use]
    pub fn new(array: &'a str, indices: &'a [u64], url: &'a str, offset: u64, length: u64) -> Self {
        Self {
            array,
            indices,
            url,
            offset,
            length,
            checksum: None,
        }
    }

    /// Sets [`ChunkReference::checksum`].
    #[must_use]
    pub fn with_checksum(self, checksum: Option<&'a Checksum>) -> Self {
        Self { checksum, ..self }
    }
}

/// Where a producer of virtual references streams them: the hierarchy's nodes first (each
/// array before its references), then the references, in any order. Memory stays bounded
/// whatever the number of references: writers stream them out.
pub trait ReferenceSink {
    /// Declares the group at `path` (`""`: the root; `/`-separated names otherwise).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a path that is not a node path, a node declared twice; the
    /// writer's errors.
    fn group(&mut self, path: &str, group: &GroupMetadataV3) -> Result<()>;

    /// Declares the array at `path`, before its references.
    ///
    /// # Errors
    /// As [`ReferenceSink::group`]; [`Error::Unsupported`] for a chunk key encoding the writer
    /// cannot write keys of.
    fn array(&mut self, path: &str, array: &ArrayMetadataV3) -> Result<()>;

    /// Adds one reference (to an array declared before).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for an undeclared array or indices of the wrong rank; the
    /// writer's errors.
    fn reference(&mut self, reference: &ChunkReference<'_>) -> Result<()>;

    /// Adds one chunk whose encoded bytes are given inline rather than referenced (a small
    /// chunk no source holds, e.g. a run of NaNs a Blosc2 frame stores only as a flag in its
    /// index). The default refuses: writers that cannot store inline chunks keep it.
    ///
    /// # Errors
    /// [`Error::Unsupported`] from writers without inline chunks (the default);
    /// otherwise as [`ReferenceSink::reference`].
    fn inline(&mut self, array: &str, indices: &[u64], bytes: &[u8]) -> Result<()> {
        let _ = bytes;
        Err(Error::Unsupported {
            name: format!("{array:?} chunk {indices:?}"),
            what: "inline chunks: this reference writer stores byte-range references only (not supported yet)".into(),
        })
    }

    /// Asked by a producer before it reads a source whose version it knows without reading
    /// it (a listing's ETag, a file's modification time): `Some(n)` if this sink already
    /// holds the source's `n` references in `array`, made from the source at this version,
    /// and keeps them as they are (an update of an earlier run's output; the producer then
    /// skips the source); `None` to be given its references. The default is `None`: writers
    /// that start empty are given everything.
    ///
    /// # Errors
    /// The writer's errors looking it up.
    fn unchanged_source(
        &mut self,
        array: &str,
        url: &str,
        checksum: &Checksum,
    ) -> Result<Option<u64>> {
        let _ = (array, url, checksum);
        Ok(None)
    }
}

/// Checks that `path` is a node path: empty (the root) or `/`-separated names, none empty,
/// `.`, `..`, holding `\` or starting with `__` (reserved by Zarr v3).
///
/// # Errors
/// [`Error::InvalidArgument`] naming the path.
pub(crate) fn check_node_path(path: &str) -> Result<()> {
    if path.is_empty() {
        return Ok(());
    }
    let ok = path.split('/').all(|s| {
        !s.is_empty() && s != "." && s != ".." && !s.contains('\\') && !s.starts_with("__")
    });
    if ok {
        Ok(())
    } else {
        Err(Error::InvalidArgument(format!(
            "{path:?} is not a Zarr node path (`/`-separated names)"
        )))
    }
}

/// `path/name`, or `name` for the root.
pub(crate) fn node_key(path: &str, name: &str) -> String {
    if path.is_empty() {
        name.to_owned()
    } else {
        format!("{path}/{name}")
    }
}

/// How an array names its chunks: Zarr v3's `default` (`c/1/2`) or `v2` (`1.2`) chunk key
/// encoding with its separator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct KeyEncoding {
    v2: bool,
    separator: char,
}

impl KeyEncoding {
    /// The encoding `meta` (an array's `chunk_key_encoding`) names; `name` is the node in
    /// errors.
    ///
    /// # Errors
    /// [`Error::Unsupported`] for another encoding or separator.
    pub(crate) fn of(meta: &MetadataV3, name: &str) -> Result<Self> {
        let v2 = match meta.name() {
            "default" => false,
            "v2" => true,
            other => {
                return Err(Error::Unsupported {
                    name: name.to_owned(),
                    what: format!("chunk key encoding {other:?} (need default or v2)"),
                });
            }
        };
        let separator = match meta
            .configuration()
            .and_then(|c| c.get("separator"))
            .map(|s| s.as_str())
        {
            None => {
                if v2 {
                    '.'
                } else {
                    '/'
                }
            }
            Some(Some("/")) => '/',
            Some(Some(".")) => '.',
            Some(other) => {
                return Err(Error::Unsupported {
                    name: name.to_owned(),
                    what: format!("chunk key separator {other:?} (need \"/\" or \".\")"),
                });
            }
        };
        Ok(Self { v2, separator })
    }

    /// The key of the chunk at `indices`, relative to its array.
    pub(crate) fn key(self, indices: &[u64]) -> String {
        let mut s = String::with_capacity(2 + indices.len() * 4);
        if !self.v2 {
            s.push('c');
        }
        for (i, v) in indices.iter().enumerate() {
            if i > 0 || !self.v2 {
                s.push(self.separator);
            }
            s.push_str(&v.to_string());
        }
        if self.v2 && indices.is_empty() {
            s.push('0');
        }
        s
    }
}

/// The arrays a reference writer has declared, by node path: how each names its chunks, and
/// its rank. The writers ([`crate::KerchunkWriter`], the Icechunk writer) check every chunk
/// against it.
#[derive(Debug, Default)]
pub(crate) struct DeclaredArrays(HashMap<String, (KeyEncoding, usize)>);

impl DeclaredArrays {
    /// Declares the array at `path` (its `zarr.json` at `key`, named in errors).
    ///
    /// # Errors
    /// [`Error::Unsupported`] for a chunk key encoding other than `default` and `v2`.
    pub(crate) fn declare(&mut self, path: &str, key: &str, array: &ArrayMetadataV3) -> Result<()> {
        let encoding = KeyEncoding::of(&array.chunk_key_encoding, key)?;
        self.0
            .insert(path.to_owned(), (encoding, array.shape.len()));
        Ok(())
    }

    /// The store key of chunk `indices` of the declared array `array`; `writer` names the
    /// output in errors.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for an array that was not declared, or indices of another
    /// rank.
    pub(crate) fn chunk_key(&self, writer: &str, array: &str, indices: &[u64]) -> Result<String> {
        let Some(&(encoding, rank)) = self.0.get(array) else {
            return Err(Error::InvalidArgument(format!(
                "{writer}: a chunk of {array:?}, which was not declared as an array"
            )));
        };
        if indices.len() != rank {
            return Err(Error::InvalidArgument(format!(
                "{writer}: chunk {indices:?} of the {rank}-d array {array:?}"
            )));
        }
        Ok(node_key(array, &encoding.key(indices)))
    }

    /// The paths of the declared arrays.
    #[cfg_attr(
        not(feature = "icechunk"),
        expect(dead_code, reason = "only the Icechunk writer lists them")
    )]
    pub(crate) fn paths(&self) -> impl Iterator<Item = &str> {
        self.0.keys().map(String::as_str)
    }
}

/// The URL a reference names the file or object at `location` by: a store URL as it is
/// (without credentials), a local path as `file://` and the absolute path with symlinks
/// resolved (it must exist), without percent-encoding (as fsspec's local file system reads
/// it).
///
/// # Errors
/// [`Error::Io`] if the local path cannot be resolved; [`Error::Unsupported`] for a path that
/// is not UTF-8.
pub fn reference_url(location: &Location) -> Result<String> {
    match location {
        Location::Store(s) => Ok(s.url().to_owned()),
        Location::Local(p) => {
            let abs = std::fs::canonicalize(p).map_err(|e| Error::io(p, e))?;
            let text = abs.to_str().ok_or_else(|| Error::Unsupported {
                name: p.display().to_string(),
                what: "a path that is not UTF-8 cannot be named in a reference".into(),
            })?;
            Ok(format!("file://{text}"))
        }
    }
}

/// The URL prefix below which lie all the files a source at `location` references are in (a
/// virtual chunk container's prefix, ending in `/`): its [`reference_url`] if it is a
/// directory or prefix, its parent's if it is a file or object (a `.b2nd` frame).
///
/// # Errors
/// As [`reference_url`]; [`Error::Io`] / [`Error::Remote`] telling a file from a directory.
pub fn container_url(location: &Location) -> Result<String> {
    let url = reference_url(location)?;
    let url = if location.size()?.is_some() {
        match url.trim_end_matches('/').rsplit_once('/') {
            Some((parent, _)) => parent.to_owned(),
            None => url,
        }
    } else {
        url
    };
    Ok(format!("{}/", url.trim_end_matches('/')))
}

/// The local path a `file://` reference URL names (see [`reference_url`]).
#[must_use]
pub fn reference_path(url: &str) -> Option<PathBuf> {
    url.strip_prefix("file://").map(PathBuf::from)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "a failed unwrap is a failed test")]

    use super::*;

    #[test]
    fn chunk_keys_follow_the_encoding() {
        let default = KeyEncoding::of(&MetadataV3::new("default"), "a").unwrap();
        assert_eq!(default.key(&[0, 1, 2, 3]), "c/0/1/2/3");
        assert_eq!(default.key(&[]), "c");
        let dot: MetadataV3 =
            serde_json::from_value(json!({"name": "default", "configuration": {"separator": "."}}))
                .unwrap();
        assert_eq!(KeyEncoding::of(&dot, "a").unwrap().key(&[4, 5]), "c.4.5");
        let v2 = KeyEncoding::of(&MetadataV3::new("v2"), "a").unwrap();
        assert_eq!(v2.key(&[4, 5]), "4.5");
        assert_eq!(v2.key(&[]), "0");
        assert!(matches!(
            KeyEncoding::of(&MetadataV3::new("fanout"), "a"),
            Err(Error::Unsupported { .. })
        ));
    }

    #[test]
    fn a_container_is_the_directory_of_a_file_and_a_directory_itself() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a.b2nd");
        std::fs::write(&file, b"x").unwrap();
        let base = reference_url(&Location::Local(dir.path().to_path_buf())).unwrap();
        for at in [file.as_path(), dir.path()] {
            assert_eq!(
                container_url(&Location::Local(at.to_path_buf())).unwrap(),
                format!("{base}/")
            );
        }
        let server = s3_testserver::TestServer::start().unwrap();
        let config = server.env();
        let object = Location::parse(&server.url("ds/a.b2nd"), &config).unwrap();
        object
            .write_small(b"x", crate::Durability::default())
            .unwrap();
        assert_eq!(container_url(&object).unwrap(), server.url("ds/"));
        let prefix = Location::parse(&server.url("ds"), &config).unwrap();
        assert_eq!(container_url(&prefix).unwrap(), server.url("ds/"));
    }

    #[test]
    fn checksums_round_trip_as_json() {
        for c in [
            Checksum::ETag("\"abc\"".into()),
            Checksum::LastModified {
                seconds: 1_700_000_000,
                nanos: 123_456_789,
            },
            Checksum::from_system_time(UNIX_EPOCH - std::time::Duration::from_millis(1250)),
        ] {
            assert_eq!(Checksum::from_json(&c.to_json()), Some(c));
        }
        assert_eq!(
            Checksum::from_system_time(UNIX_EPOCH - std::time::Duration::from_millis(1250)),
            Checksum::LastModified {
                seconds: -2,
                nanos: 750_000_000
            }
        );
        assert_eq!(
            Checksum::from_json(&json!({"last_modified": [1, 2_000_000_000]})),
            None
        );
        assert_eq!(Checksum::from_json(&json!({"etag": 1})), None);
    }

    #[test]
    fn node_paths_are_checked() {
        for ok in ["", "a", "color/1", "a/2-2-1"] {
            check_node_path(ok).unwrap();
        }
        for bad in ["/a", "a/", "a//b", "..", "a/./b", "__x", "a\\b"] {
            assert!(check_node_path(bad).is_err(), "{bad}");
        }
    }
}
