//! [`KerchunkWriter`]: virtual references as a kerchunk JSON file (version 1), streamed.
//!
//! The file is `{"version": 1, "refs": {KEY: VALUE, …}, "scifmt": {"checksums": {URL: …}}}`:
//! every node's `zarr.json` is a key whose value is the document as a JSON string, every chunk
//! a key (its Zarr v3 store key, e.g. `color/1/c/0/3/1/2`) whose value is `[URL, offset,
//! length]` (or, for a chunk given inline, `"base64:…"`) — what fsspec's `ReferenceFileSystem`
//! reads, and zarr-python 3 through it. kerchunk has no place for a source's version, so the
//! [`Checksum`] of every source is kept under the top-level key `scifmt` (other readers ignore
//! it; [`ReferenceStore`](crate::ReferenceStore) checks it).
//!
//! Nothing grows with the number of references: references go out through a 1 MiB buffer into
//! the staged file or upload ([`Location::create`]), the checksums into an anonymous temporary
//! file that is appended when the writer finishes; only the declared arrays (their paths and
//! chunk key encodings) are kept.

use std::io::{BufWriter, Read, Seek, SeekFrom, Write};

use zarrs_metadata::v3::{ArrayMetadataV3, GroupMetadataV3};

use crate::durable::Durability;
use crate::error::{Error, Result};
use crate::location::{Location, Sink};
use crate::references::chunk::{
    Checksum, ChunkReference, DeclaredArrays, ReferenceSink, check_node_path, node_key,
};
use crate::remote::options::RemoteOptions;

/// The top-level key of the checksums section.
pub(crate) const SCIFMT_KEY: &str = "scifmt";

/// The entries of a checksums section (`"URL": {…}`, comma-separated), spooled to an anonymous
/// temporary file: one per source, written when its first reference comes (a producer gives
/// a source's references together).
pub(crate) struct ChecksumSpool {
    spool: BufWriter<std::fs::File>,
    written: u64,
    last_url: Option<String>,
}

fn spool_err(e: std::io::Error) -> Error {
    Error::io(std::env::temp_dir(), e)
}

impl ChecksumSpool {
    pub(crate) fn new() -> Result<Self> {
        Ok(Self {
            spool: BufWriter::new(tempfile::tempfile().map_err(spool_err)?),
            written: 0,
            last_url: None,
        })
    }

    /// Records `url`'s checksum unless its entry was the last one written; whether it wrote
    /// an entry (a new source).
    pub(crate) fn add(&mut self, url: &str, checksum: Option<&Checksum>) -> Result<bool> {
        let Some(c) = checksum else {
            return Ok(false);
        };
        if self.last_url.as_deref() == Some(url) {
            return Ok(false);
        }
        let sep = if self.written > 0 { "," } else { "" };
        let text = format!("{sep}{}:{}", json_string(url), c.to_json());
        self.spool.write_all(text.as_bytes()).map_err(spool_err)?;
        self.written += 1;
        self.last_url = Some(url.to_owned());
        Ok(true)
    }

    /// Passes the entries, in pieces, to `out`; their length.
    pub(crate) fn drain(self, mut out: impl FnMut(&[u8]) -> Result<()>) -> Result<u64> {
        let mut file = self
            .spool
            .into_inner()
            .map_err(|e| spool_err(e.into_error()))?;
        file.seek(SeekFrom::Start(0)).map_err(spool_err)?;
        let mut chunk = vec![0u8; 1 << 16];
        let mut total = 0u64;
        loop {
            let n = file.read(&mut chunk).map_err(spool_err)?;
            if n == 0 {
                return Ok(total);
            }
            out(&chunk[..n])?;
            total += n as u64;
        }
    }
}

/// Bytes buffered before they go to the output.
const BUFFER: usize = 1 << 20;

/// Writes a kerchunk JSON reference file (see the module docs for its layout) to a local path
/// or an object, streaming: it appears under its name only when [`KerchunkWriter::finish`]
/// completes (a staged file renamed into place, or an upload).
///
/// ```
/// # #[cfg(feature = "references")] {
/// use scifmt_io::{ChunkReference, Durability, KerchunkWriter, ReferenceSink, RemoteOptions};
/// use scifmt_io::zarrs_metadata::v3::{ArrayMetadataV3, GroupMetadataV3};
///
/// let dir = tempfile::tempdir()?;
/// let out = dir.path().join("refs.json");
/// let mut w = KerchunkWriter::create(&out.as_path().into(), &RemoteOptions::<()>::default())?;
/// w.group("", &GroupMetadataV3::new())?;
/// let array: ArrayMetadataV3 = serde_json::from_value(serde_json::json!({
///     "zarr_format": 3, "node_type": "array", "shape": [8], "data_type": "uint8",
///     "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [4]}},
///     "chunk_key_encoding": {"name": "default"}, "fill_value": 0,
///     "codecs": [{"name": "bytes"}]}))?;
/// w.array("a", &array)?;
/// w.reference(&ChunkReference::new("a", &[1], "file:///data/x.bin", 16, 4))?;
/// let summary = w.finish(Durability::None)?;
/// assert_eq!(summary.references, 1);
/// let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(&out)?)?;
/// assert_eq!(doc["refs"]["a/c/1"], serde_json::json!(["file:///data/x.bin", 16, 4]));
/// # }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct KerchunkWriter {
    name: String,
    out: Sink,
    buf: Vec<u8>,
    /// The checksum entries (`"URL": {…}`, comma-separated), appended at the end.
    checksums: ChecksumSpool,
    entries: u64,
    arrays: DeclaredArrays,
    nodes: std::collections::HashSet<String>,
    summary: KerchunkSummary,
}

/// What a [`KerchunkWriter`] wrote.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct KerchunkSummary {
    /// Groups and arrays declared.
    pub nodes: u64,
    /// Chunk references.
    pub references: u64,
    /// Chunks written inline (`base64:` values).
    pub inline: u64,
    /// Distinct sources (checksum entries).
    pub sources: u64,
    /// Bytes of the reference file.
    pub bytes: u64,
}

impl std::fmt::Debug for KerchunkWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KerchunkWriter")
            .field("name", &self.name)
            .field("summary", &self.summary)
            .finish_non_exhaustive()
    }
}

impl KerchunkWriter {
    /// Starts the reference file at `dst` (replacing what is there once finished; a caller
    /// that must not replace checks first).
    ///
    /// # Errors
    /// [`Error::Io`] if the temporary files cannot be created.
    pub fn create<F>(dst: &Location, remote: &RemoteOptions<F>) -> Result<Self> {
        let out = dst.create(remote)?;
        let mut w = Self {
            name: dst.to_string(),
            out,
            buf: Vec::with_capacity(BUFFER),
            checksums: ChecksumSpool::new()?,
            entries: 0,
            arrays: DeclaredArrays::default(),
            nodes: std::collections::HashSet::new(),
            summary: KerchunkSummary::default(),
        };
        w.put(b"{\"version\":1,\"refs\":{")?;
        Ok(w)
    }

    /// Appends `bytes` to the output, through the buffer.
    fn put(&mut self, bytes: &[u8]) -> Result<()> {
        self.buf.extend_from_slice(bytes);
        self.summary.bytes = self.summary.bytes.saturating_add(bytes.len() as u64);
        if self.buf.len() >= BUFFER {
            self.out.write_all(&self.buf)?;
            self.buf.clear();
        }
        Ok(())
    }

    /// Appends one `"key": value` entry of `refs` (`value` already JSON).
    fn entry(&mut self, key: &str, value: &str) -> Result<()> {
        let mut text = String::with_capacity(key.len() + value.len() + 8);
        if self.entries > 0 {
            text.push(',');
        }
        text.push_str(&json_string(key));
        text.push(':');
        text.push_str(value);
        self.entries += 1;
        self.put(text.as_bytes())
    }

    fn node(&mut self, path: &str, doc: serde_json::Result<String>) -> Result<()> {
        check_node_path(path)?;
        if !self.nodes.insert(path.to_owned()) {
            return Err(Error::InvalidArgument(format!(
                "{}: node {path:?} declared twice",
                self.name
            )));
        }
        let text =
            doc.map_err(|e| Error::InvalidArgument(format!("{}: node {path:?}: {e}", self.name)))?;
        self.summary.nodes += 1;
        self.entry(&node_key(path, "zarr.json"), &json_string(&text))
    }

    /// Completes the file: the checksums section is appended, then the file is renamed into
    /// place (fsynced with [`Durability::Fsync`]) or the upload completed.
    ///
    /// # Errors
    /// [`Error::Io`]; the upload's errors (it is aborted).
    pub fn finish(mut self, durability: Durability) -> Result<KerchunkSummary> {
        self.put(format!("}},\"{SCIFMT_KEY}\":{{\"version\":1,\"checksums\":{{").as_bytes())?;
        let checksums = self.checksums;
        let (buf, out) = (&mut self.buf, &mut self.out);
        let n = checksums.drain(|piece| {
            buf.extend_from_slice(piece);
            if buf.len() >= BUFFER {
                out.write_all(buf)?;
                buf.clear();
            }
            Ok(())
        })?;
        self.summary.bytes = self.summary.bytes.saturating_add(n);
        self.buf.extend_from_slice(b"}}}");
        self.summary.bytes = self.summary.bytes.saturating_add(3);
        self.out.write_all(&self.buf)?;
        self.out.finish(durability)?;
        Ok(self.summary)
    }
}

impl ReferenceSink for KerchunkWriter {
    fn group(&mut self, path: &str, group: &GroupMetadataV3) -> Result<()> {
        self.node(path, serde_json::to_string(group))
    }

    fn array(&mut self, path: &str, array: &ArrayMetadataV3) -> Result<()> {
        self.arrays
            .declare(path, &node_key(path, "zarr.json"), array)?;
        self.node(path, serde_json::to_string(array))
    }

    fn reference(&mut self, r: &ChunkReference<'_>) -> Result<()> {
        let key = self.arrays.chunk_key(&self.name, r.array, r.indices)?;
        let value = format!("[{},{},{}]", json_string(r.url), r.offset, r.length);
        self.entry(&key, &value)?;
        self.summary.references += 1;
        if self.checksums.add(r.url, r.checksum)? {
            self.summary.sources += 1;
        }
        Ok(())
    }

    /// Writes the chunk as a `base64:` value (fsspec's `ReferenceFileSystem` and this crate's
    /// `ReferenceStore`, feature `zarrs`, read it as the chunk's bytes).
    fn inline(&mut self, array: &str, indices: &[u64], bytes: &[u8]) -> Result<()> {
        use base64::Engine;
        let key = self.arrays.chunk_key(&self.name, array, indices)?;
        let text = format!(
            "base64:{}",
            base64::engine::general_purpose::STANDARD.encode(bytes)
        );
        self.entry(&key, &json_string(&text))?;
        self.summary.inline += 1;
        Ok(())
    }
}

/// `s` as a JSON string literal.
pub(crate) fn json_string(s: &str) -> String {
    // Serializing a `str` cannot fail.
    serde_json::to_string(s).unwrap_or_default()
}
