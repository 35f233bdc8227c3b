//! [`KerchunkParquetWriter`]: virtual references as kerchunk's Parquet reference directory, the
//! layout fsspec's `LazyReferenceMapper` reads (`ReferenceFileSystem` given the directory),
//! for hierarchies with too many chunks for one JSON document.
//!
//! The directory holds:
//! - `.zmetadata`: JSON `{"metadata": {KEY: DOCUMENT, …}, "record_size": N, "scifmt": {…}}`,
//!   written last (a directory without it is incomplete). `metadata` has the Zarr **v2**
//!   documents of every node (`.zgroup`, `.zarray`, `.zattrs` under their keys, e.g.
//!   `color/1/.zarray`): fsspec finds an array's chunk grid in its `.zarray`, so the hierarchy
//!   is Zarr v2 (see `zarr_v2` for how the v3 arrays translate). `scifmt` keeps each source's
//!   [`Checksum`](crate::Checksum) as the kerchunk JSON writer does.
//! - `ARRAY/refs.R.parq`, one per record of N chunks: the chunks numbered `R·N … R·N + N − 1`
//!   in C order over the array's chunk grid (chunk key `i.j.k`), one row each, with columns
//!   `path` (string, null for a chunk not stored), `offset` and `size` (int64), `raw`
//!   (binary, the bytes of an inline chunk), in Snappy-compressed pages (`path`
//!   dictionary-encoded). A record's file has N rows (the last record:
//!   up to the grid's last chunk); a record without chunks has no file (its chunks are
//!   missing, as fsspec reads it).
//!
//! fsspec keys a record by the array's directory, so an array at the root of the hierarchy has
//! no place: the writer refuses it (a single array goes to kerchunk JSON).
//!
//! Memory stays bounded: references are spooled to a temporary file per array and, when the
//! writer finishes, sorted in batches of at most [`SORT_BATCH`] references (larger spools are
//! first split into ranges of chunk numbers, recursively); one record's rows are in memory at
//! a time.

use std::collections::{BTreeMap, HashSet};
use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Seek, SeekFrom, Write};
use std::sync::Arc;

use parquet::data_type::{ByteArray, ByteArrayType, Int64Type};
use parquet::file::properties::{EnabledStatistics, WriterProperties};
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::types::{ColumnPath, TypePtr};
use serde_json::{Map, Value, json};
use zarrs_metadata::v3::{ArrayMetadataV3, GroupMetadataV3};

use crate::durable::Durability;
use crate::error::{Error, Result};
use crate::location::Location;
use crate::references::chunk::{ChunkReference, ReferenceSink, check_node_path, node_key};
use crate::references::kerchunk::{ChecksumSpool, KerchunkSummary, SCIFMT_KEY, json_string};
use crate::references::zarr_v2::{v2_array, v2_group};
use crate::remote::options::RemoteOptions;

/// Chunks per record file unless [`KerchunkParquetWriter::with_record_size`] says otherwise
/// (kerchunk's own default).
pub const DEFAULT_RECORD_SIZE: u64 = 100_000;

/// References sorted in memory at once when the writer finishes (each about 100 bytes with its
/// URL: some 25 MiB).
pub const SORT_BATCH: u64 = 1 << 18;

/// Ranges a spool too large to sort at once is split into.
const SPLIT: u64 = 16;

/// The Parquet schema of a record file (fsspec's columns).
const SCHEMA: &str = "message schema {
    OPTIONAL BYTE_ARRAY path (STRING);
    REQUIRED INT64 offset;
    REQUIRED INT64 size;
    OPTIONAL BYTE_ARRAY raw;
}";

/// Writes kerchunk's Parquet reference directory (see the module docs for its layout) to a
/// local directory or an object store prefix. Files go straight to their names; `.zmetadata`
/// last, so a reader finds nothing before [`KerchunkParquetWriter::finish`] completes. The
/// caller provides an empty destination (the CLI builds a local one in a sibling directory).
///
/// ```
/// # #[cfg(feature = "parquet")] {
/// use scifmt_io::{ChunkReference, Durability, KerchunkParquetWriter, ReferenceSink, RemoteOptions};
/// use scifmt_io::zarrs_metadata::v3::{ArrayMetadataV3, GroupMetadataV3};
///
/// let dir = tempfile::tempdir()?;
/// let out = dir.path().join("refs");
/// let mut w = KerchunkParquetWriter::create(&out.as_path().into(), &RemoteOptions::<()>::default())?;
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
/// let meta: serde_json::Value = serde_json::from_slice(&std::fs::read(out.join(".zmetadata"))?)?;
/// assert_eq!(meta["metadata"]["a/.zarray"]["chunks"], serde_json::json!([4]));
/// assert!(out.join("a/refs.0.parq").is_file());
/// # }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct KerchunkParquetWriter {
    root: Location,
    remote: RemoteOptions,
    name: String,
    record_size: u64,
    metadata: Map<String, Value>,
    arrays: BTreeMap<String, Spool>,
    nodes: HashSet<String>,
    /// The checksum entries (`"URL": {…}`, comma-separated), spooled.
    checksums: ChecksumSpool,
    summary: KerchunkSummary,
}

impl std::fmt::Debug for KerchunkParquetWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KerchunkParquetWriter")
            .field("name", &self.name)
            .field("record_size", &self.record_size)
            .field("summary", &self.summary)
            .finish_non_exhaustive()
    }
}

/// One array's references, spooled.
struct Spool {
    grid: Vec<u64>,
    /// Chunks in the grid.
    total: u64,
    file: BufWriter<File>,
    entries: u64,
}

/// A spooled reference: chunk number, then a reference or inline bytes.
#[derive(Debug)]
struct Entry {
    chunk: u64,
    offset: u64,
    length: u64,
    /// The URL of a reference, the bytes of an inline chunk.
    data: Data,
}

#[derive(Debug)]
enum Data {
    Url(String),
    Inline(Vec<u8>),
}

impl Entry {
    fn write_to(&self, out: &mut impl Write) -> std::io::Result<()> {
        let (kind, bytes) = match &self.data {
            Data::Url(u) => (0u8, u.as_bytes()),
            Data::Inline(b) => (1u8, b.as_slice()),
        };
        let len = u32::try_from(bytes.len()).map_err(std::io::Error::other)?;
        out.write_all(&self.chunk.to_le_bytes())?;
        out.write_all(&self.offset.to_le_bytes())?;
        out.write_all(&self.length.to_le_bytes())?;
        out.write_all(&[kind])?;
        out.write_all(&len.to_le_bytes())?;
        out.write_all(bytes)
    }

    fn read_from(input: &mut impl Read) -> std::io::Result<Self> {
        let mut head = [0u8; 29];
        input.read_exact(&mut head)?;
        let word = |i: usize| {
            let mut w = [0u8; 8];
            w.copy_from_slice(&head[i..i + 8]);
            u64::from_le_bytes(w)
        };
        let mut len = [0u8; 4];
        len.copy_from_slice(&head[25..29]);
        let mut bytes = vec![0u8; u32::from_le_bytes(len) as usize];
        input.read_exact(&mut bytes)?;
        let data = if head[24] == 0 {
            Data::Url(String::from_utf8(bytes).map_err(std::io::Error::other)?)
        } else {
            Data::Inline(bytes)
        };
        Ok(Self {
            chunk: word(0),
            offset: word(8),
            length: word(16),
            data,
        })
    }
}

fn spool_err(e: std::io::Error) -> Error {
    Error::io(std::env::temp_dir(), e)
}

fn new_spool() -> Result<BufWriter<File>> {
    Ok(BufWriter::with_capacity(
        1 << 16,
        tempfile::tempfile().map_err(spool_err)?,
    ))
}

/// The spooled file, rewound for reading.
fn rewind(spool: BufWriter<File>) -> Result<BufReader<File>> {
    let mut file = spool.into_inner().map_err(|e| spool_err(e.into_error()))?;
    file.seek(SeekFrom::Start(0)).map_err(spool_err)?;
    Ok(BufReader::with_capacity(1 << 16, file))
}

impl KerchunkParquetWriter {
    /// Starts a reference directory at `dst` (a local directory or an object store prefix,
    /// which the caller has made sure is empty), with [`DEFAULT_RECORD_SIZE`] chunks per
    /// record.
    ///
    /// # Errors
    /// [`Error::Io`] if the temporary spool cannot be created.
    pub fn create<F>(dst: &Location, remote: &RemoteOptions<F>) -> Result<Self> {
        Ok(Self {
            root: dst.clone(),
            remote: remote.shared(),
            name: dst.to_string(),
            record_size: DEFAULT_RECORD_SIZE,
            metadata: Map::new(),
            arrays: BTreeMap::new(),
            nodes: HashSet::new(),
            checksums: ChecksumSpool::new()?,
            summary: KerchunkSummary::default(),
        })
    }

    /// The name errors give the output (default: the destination's), e.g. the final name of a
    /// directory built under another.
    #[must_use]
    pub fn with_name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// Chunks per record file (at least 1).
    #[must_use]
    pub fn with_record_size(mut self, record_size: u64) -> Self {
        self.record_size = record_size.max(1);
        self
    }

    fn node(&mut self, path: &str) -> Result<()> {
        check_node_path(path)?;
        if !self.nodes.insert(path.to_owned()) {
            return Err(Error::InvalidArgument(format!(
                "{}: node {path:?} declared twice",
                self.name
            )));
        }
        self.summary.nodes += 1;
        Ok(())
    }

    fn spooled(&mut self, array: &str, indices: &[u64]) -> Result<(&mut Spool, u64)> {
        let name = &self.name;
        let Some(spool) = self.arrays.get_mut(array) else {
            return Err(Error::InvalidArgument(format!(
                "{name}: a chunk of {array:?}, which was not declared as an array"
            )));
        };
        if indices.len() != spool.grid.len() || indices.iter().zip(&spool.grid).any(|(i, g)| i >= g)
        {
            return Err(Error::InvalidArgument(format!(
                "{name}: chunk {indices:?} of {array:?}, whose chunk grid is {:?}",
                spool.grid
            )));
        }
        // C order; below the grid's total, which `array` checked.
        let number = indices
            .iter()
            .zip(&spool.grid)
            .fold(0u64, |n, (&i, &g)| n * g + i);
        Ok((spool, number))
    }

    fn push(
        &mut self,
        array: &str,
        indices: &[u64],
        entry: impl FnOnce(u64) -> Entry,
    ) -> Result<()> {
        let (spool, chunk) = self.spooled(array, indices)?;
        entry(chunk).write_to(&mut spool.file).map_err(spool_err)?;
        spool.entries += 1;
        Ok(())
    }

    /// Writes every array's record files, then `.zmetadata`.
    ///
    /// # Errors
    /// [`Error::Io`], [`Error::Remote`] writing; [`Error::InvalidArgument`] for a chunk given
    /// twice or an offset or size beyond Parquet's `int64`.
    pub fn finish(mut self, durability: Durability) -> Result<KerchunkSummary> {
        let arrays = std::mem::take(&mut self.arrays);
        for (path, spool) in arrays {
            let out = Records {
                root: &self.root,
                name: &self.name,
                field: &path,
                record_size: self.record_size,
                total: spool.total,
                durability,
                schema: parquet::schema::parser::parse_message_type(SCHEMA)
                    .map(Arc::new)
                    .map_err(|e| Error::InvalidArgument(format!("Parquet schema: {e}")))?,
            };
            let entries = spool.entries;
            let span = spool
                .total
                .div_ceil(self.record_size)
                .saturating_mul(self.record_size);
            out.range(rewind(spool.file)?, entries, 0, span, &mut self.summary)?;
        }
        // `.zmetadata`: the documents, then the checksums, streamed.
        let mut head = serde_json::to_string(&json!({
            "metadata": self.metadata,
            "record_size": self.record_size,
        }))
        .map_err(|e| Error::InvalidArgument(format!("{}: .zmetadata: {e}", self.name)))?;
        head.pop(); // the closing brace
        head.push_str(&format!(
            ",{}:{{\"version\":1,\"checksums\":{{",
            json_string(SCIFMT_KEY)
        ));
        let mut out = self.root.join(".zmetadata").create(&self.remote)?;
        out.write_all(head.as_bytes())?;
        let bytes = head.len() as u64 + self.checksums.drain(|piece| out.write_all(piece))?;
        out.write_all(b"}}}")?;
        out.finish(durability)?;
        self.summary.bytes = self.summary.bytes.saturating_add(bytes + 3);
        Ok(self.summary)
    }
}

/// Where one array's record files go.
struct Records<'a> {
    root: &'a Location,
    name: &'a str,
    field: &'a str,
    record_size: u64,
    total: u64,
    durability: Durability,
    schema: TypePtr,
}

impl Records<'_> {
    /// Writes the records of the `count` entries in `spool`, whose chunk numbers are in
    /// `lo..hi` (multiples of the record size): sorted in memory, or split into ranges first.
    fn range(
        &self,
        mut spool: BufReader<File>,
        count: u64,
        lo: u64,
        hi: u64,
        summary: &mut KerchunkSummary,
    ) -> Result<()> {
        if count == 0 {
            return Ok(());
        }
        if count <= SORT_BATCH || hi - lo <= self.record_size {
            let mut entries = Vec::new();
            for _ in 0..count {
                entries.push(Entry::read_from(&mut spool).map_err(spool_err)?);
            }
            entries.sort_unstable_by_key(|e| e.chunk);
            return self.write(&entries, summary);
        }
        // Ranges of whole records, each smaller than `lo..hi`.
        let width = (hi - lo)
            .div_ceil(SPLIT)
            .div_ceil(self.record_size)
            .saturating_mul(self.record_size);
        let parts = (hi - lo).div_ceil(width);
        let mut splits = (0..parts)
            .map(|_| Ok((new_spool()?, 0u64)))
            .collect::<Result<Vec<_>>>()?;
        for _ in 0..count {
            let e = Entry::read_from(&mut spool).map_err(spool_err)?;
            let i = e
                .chunk
                .checked_sub(lo)
                .and_then(|d| usize::try_from(d / width).ok())
                .unwrap_or(usize::MAX);
            let (file, n) = splits.get_mut(i).ok_or_else(|| {
                Error::InvalidArgument(format!(
                    "{}: chunk number {} out of range",
                    self.name, e.chunk
                ))
            })?;
            e.write_to(file).map_err(spool_err)?;
            *n += 1;
        }
        drop(spool);
        for (i, (file, n)) in splits.into_iter().enumerate() {
            let start = lo + i as u64 * width;
            self.range(rewind(file)?, n, start, (start + width).min(hi), summary)?;
        }
        Ok(())
    }

    /// Writes the record files of `entries` (sorted by chunk number).
    fn write(&self, entries: &[Entry], summary: &mut KerchunkSummary) -> Result<()> {
        let mut rest = entries;
        while let Some(first) = rest.first() {
            let record = first.chunk / self.record_size;
            let end = rest
                .iter()
                .position(|e| e.chunk / self.record_size != record)
                .unwrap_or(rest.len());
            let (these, next) = rest.split_at(end);
            let bytes = self.record(record, these)?;
            let key = format!("{}/refs.{record}.parq", self.field);
            self.root.join(&key).write_small(&bytes, self.durability)?;
            summary.bytes = summary.bytes.saturating_add(bytes.len() as u64);
            for e in these {
                match e.data {
                    Data::Url(_) => summary.references += 1,
                    Data::Inline(_) => summary.inline += 1,
                }
            }
            rest = next;
        }
        Ok(())
    }

    /// One record file: its rows, `entries` (sorted, all of `record`) in their places.
    fn record(&self, record: u64, entries: &[Entry]) -> Result<Vec<u8>> {
        let first = record * self.record_size;
        let rows = usize::try_from(self.record_size.min(self.total - first))
            .map_err(|_| Error::InvalidArgument("record size beyond memory".into()))?;
        let mut path_def = vec![0i16; rows];
        let mut paths = Vec::new();
        let mut offsets = vec![0i64; rows];
        let mut sizes = vec![0i64; rows];
        let mut raw_def = vec![0i16; rows];
        let mut raws = Vec::new();
        let int64 = |v: u64, what: &str, chunk: u64| {
            i64::try_from(v).map_err(|_| {
                Error::InvalidArgument(format!(
                    "{}: chunk {chunk} of {:?}: {what} {v} is beyond Parquet's int64",
                    self.name, self.field
                ))
            })
        };
        let mut previous = None;
        for e in entries {
            if previous == Some(e.chunk) {
                return Err(Error::InvalidArgument(format!(
                    "{}: chunk number {} of {:?} given twice",
                    self.name, e.chunk, self.field
                )));
            }
            previous = Some(e.chunk);
            let row = usize::try_from(e.chunk - first).unwrap_or(usize::MAX);
            if row >= rows {
                return Err(Error::InvalidArgument(format!(
                    "{}: chunk number {} beyond the grid of {:?}",
                    self.name, e.chunk, self.field
                )));
            }
            match &e.data {
                Data::Url(url) => {
                    path_def[row] = 1;
                    paths.push(ByteArray::from(url.as_str()));
                    offsets[row] = int64(e.offset, "offset", e.chunk)?;
                    sizes[row] = int64(e.length, "length", e.chunk)?;
                }
                Data::Inline(bytes) => {
                    raw_def[row] = 1;
                    raws.push(ByteArray::from(bytes.clone()));
                    sizes[row] = int64(bytes.len() as u64, "length", e.chunk)?;
                }
            }
        }
        let parquet_err = |e: parquet::errors::ParquetError| {
            Error::InvalidArgument(format!(
                "{}: Parquet record {record} of {:?}: {e}",
                self.name, self.field
            ))
        };
        // What fastparquet (fsspec's default engine) reads as fsspec expects: Snappy pages,
        // column statistics (without a null count it takes `offset` and `size` for nullable,
        // and pandas makes them floats), and a dictionary only for `path` (the URLs repeat
        // from row to row) when it has values (fastparquet fails on a dictionary page of a
        // column without any).
        let props = Arc::new(
            WriterProperties::builder()
                .set_compression(parquet::basic::Compression::SNAPPY)
                .set_dictionary_enabled(false)
                .set_column_dictionary_enabled(ColumnPath::from("path"), !paths.is_empty())
                .set_statistics_enabled(EnabledStatistics::Chunk)
                .build(),
        );
        let mut buf = Vec::new();
        let mut w = SerializedFileWriter::new(&mut buf, Arc::clone(&self.schema), props)
            .map_err(parquet_err)?;
        let mut group = w.next_row_group().map_err(parquet_err)?;
        let mut column = |write: &mut dyn FnMut(
            &mut parquet::file::writer::SerializedColumnWriter<'_>,
        ) -> parquet::errors::Result<usize>| {
            let mut c = group
                .next_column()
                .map_err(parquet_err)?
                .ok_or_else(|| Error::InvalidArgument("Parquet schema: too few columns".into()))?;
            write(&mut c).map_err(parquet_err)?;
            c.close().map_err(parquet_err)
        };
        column(&mut |c| {
            c.typed::<ByteArrayType>()
                .write_batch(&paths, Some(&path_def), None)
        })?;
        column(&mut |c| c.typed::<Int64Type>().write_batch(&offsets, None, None))?;
        column(&mut |c| c.typed::<Int64Type>().write_batch(&sizes, None, None))?;
        column(&mut |c| {
            c.typed::<ByteArrayType>()
                .write_batch(&raws, Some(&raw_def), None)
        })?;
        group.close().map_err(parquet_err)?;
        w.close().map_err(parquet_err)?;
        Ok(buf)
    }
}

impl ReferenceSink for KerchunkParquetWriter {
    fn group(&mut self, path: &str, group: &GroupMetadataV3) -> Result<()> {
        self.node(path)?;
        let (zgroup, zattrs) = v2_group(group);
        self.metadata.insert(node_key(path, ".zgroup"), zgroup);
        if !zattrs.is_empty() {
            self.metadata
                .insert(node_key(path, ".zattrs"), Value::Object(zattrs));
        }
        Ok(())
    }

    fn array(&mut self, path: &str, array: &ArrayMetadataV3) -> Result<()> {
        if path.is_empty() {
            return Err(Error::Unsupported {
                name: self.name.clone(),
                what: "an array at the root, which kerchunk Parquet references cannot hold (fsspec finds an array's record files by its directory): put it in a group (a dataset root, or several sources), or write kerchunk JSON (`--to kerchunk`)".into(),
            });
        }
        let v2 = v2_array(&format!("{}: {path}", self.name), array)?;
        let total = v2
            .grid
            .iter()
            .try_fold(1u64, |acc, &g| acc.checked_mul(g))
            .filter(|&t| t < u64::MAX / 2)
            .ok_or_else(|| Error::Unsupported {
                name: format!("{}: {path}", self.name),
                what: format!("a chunk grid of {:?} chunks", v2.grid),
            })?;
        self.node(path)?;
        self.metadata.insert(node_key(path, ".zarray"), v2.zarray);
        self.metadata
            .insert(node_key(path, ".zattrs"), Value::Object(v2.zattrs));
        self.arrays.insert(
            path.to_owned(),
            Spool {
                grid: v2.grid,
                total,
                file: new_spool()?,
                entries: 0,
            },
        );
        Ok(())
    }

    fn reference(&mut self, r: &ChunkReference<'_>) -> Result<()> {
        self.push(r.array, r.indices, |chunk| Entry {
            chunk,
            offset: r.offset,
            length: r.length,
            data: Data::Url(r.url.to_owned()),
        })?;
        if self.checksums.add(r.url, r.checksum)? {
            self.summary.sources += 1;
        }
        Ok(())
    }

    /// Writes the chunk's bytes in the `raw` column (fsspec reads them as the chunk).
    fn inline(&mut self, array: &str, indices: &[u64], bytes: &[u8]) -> Result<()> {
        self.push(array, indices, |chunk| Entry {
            chunk,
            offset: 0,
            length: 0,
            data: Data::Inline(bytes.to_vec()),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use parquet::file::reader::{FileReader, SerializedFileReader};
    use parquet::record::Field;

    fn metadata(shape: &[u64], chunks: &[u64]) -> ArrayMetadataV3 {
        serde_json::from_value(json!({
            "zarr_format": 3, "node_type": "array", "shape": shape, "data_type": "uint8",
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": chunks}},
            "chunk_key_encoding": {"name": "default"}, "fill_value": 0,
            "codecs": [{"name": "bytes"}]}))
        .expect("metadata")
    }

    /// A record file's row: path, offset, size, raw.
    type Row = (Option<String>, i64, i64, Option<Vec<u8>>);

    /// The rows of a record file.
    fn rows(file: &std::path::Path) -> Vec<Row> {
        let reader = SerializedFileReader::new(File::open(file).expect("record")).expect("parquet");
        reader
            .get_row_iter(None)
            .expect("rows")
            .map(|row| {
                let row = row.expect("row");
                let cols: Vec<&Field> = row.get_column_iter().map(|(_, f)| f).collect();
                let path = match cols[0] {
                    Field::Str(s) => Some(s.clone()),
                    Field::Null => None,
                    f => panic!("path {f:?}"),
                };
                let int = |f: &Field| match f {
                    Field::Long(v) => *v,
                    f => panic!("int {f:?}"),
                };
                let raw = match cols[3] {
                    Field::Bytes(b) => Some(b.data().to_vec()),
                    Field::Null => None,
                    f => panic!("raw {f:?}"),
                };
                (path, int(cols[1]), int(cols[2]), raw)
            })
            .collect()
    }

    fn write(
        record_size: u64,
        shape: &[u64],
        chunks: &[u64],
        refs: &[(Vec<u64>, u64)],
    ) -> (tempfile::TempDir, KerchunkSummary) {
        let dir = tempfile::tempdir().expect("dir");
        let out = dir.path().join("refs");
        let mut w =
            KerchunkParquetWriter::create(&out.as_path().into(), &RemoteOptions::<()>::default())
                .expect("writer")
                .with_record_size(record_size);
        w.group("", &GroupMetadataV3::new()).expect("root");
        w.group("g", &GroupMetadataV3::new()).expect("group");
        w.array("g/a", &metadata(shape, chunks)).expect("array");
        for (indices, offset) in refs {
            let url = format!("file:///x/{}", offset / 100);
            w.reference(&ChunkReference::new("g/a", indices, &url, *offset, 7))
                .expect("reference");
        }
        w.inline("g/a", &vec![0; shape.len()], b"abc").ok();
        let summary = w.finish(Durability::None).expect("finish");
        (dir, summary)
    }

    #[test]
    fn records_hold_the_chunks_in_c_order_and_only_where_there_are_chunks() {
        // A 4 × 5 grid, records of 6 chunks: numbers 0..6, 6..12, 12..18, 18..20.
        let refs = vec![(vec![3, 4], 1900), (vec![0, 1], 100), (vec![1, 0], 500)];
        let (dir, summary) = write(6, &[8, 10], &[2, 2], &refs);
        assert_eq!(
            (summary.references, summary.inline, summary.nodes),
            (3, 1, 3)
        );
        let out = dir.path().join("refs");
        let r0 = rows(&out.join("g/a/refs.0.parq"));
        assert_eq!(r0.len(), 6);
        assert_eq!(r0[0], (None, 0, 3, Some(b"abc".to_vec())));
        assert_eq!(r0[1], (Some("file:///x/1".into()), 100, 7, None));
        assert_eq!(r0[5], (Some("file:///x/5".into()), 500, 7, None));
        assert_eq!(r0[2], (None, 0, 0, None));
        assert!(!out.join("g/a/refs.1.parq").exists());
        assert!(!out.join("g/a/refs.2.parq").exists());
        let r3 = rows(&out.join("g/a/refs.3.parq"));
        assert_eq!(r3.len(), 2, "the last record ends with the grid");
        assert_eq!(r3[1], (Some("file:///x/19".into()), 1900, 7, None));

        let meta: Value =
            serde_json::from_slice(&std::fs::read(out.join(".zmetadata")).expect("zmetadata"))
                .expect("json");
        assert_eq!(meta["record_size"], 6);
        assert_eq!(meta["metadata"][".zgroup"], json!({"zarr_format": 2}));
        assert_eq!(meta["metadata"]["g/.zgroup"], json!({"zarr_format": 2}));
        assert_eq!(meta["metadata"]["g/a/.zarray"]["shape"], json!([8, 10]));
        assert_eq!(meta["metadata"]["g/a/.zarray"]["dtype"], "|u1");
        assert_eq!(meta["scifmt"], json!({"version": 1, "checksums": {}}));
    }

    #[test]
    fn spools_larger_than_a_sort_batch_are_split_into_ranges() {
        // Every chunk of a 600 × 500 grid (more than SORT_BATCH), given in reverse.
        let (rows_n, cols_n) = (600u64, 500u64);
        assert!(rows_n * cols_n > SORT_BATCH);
        let dir = tempfile::tempdir().expect("dir");
        let out = dir.path().join("refs");
        let mut w =
            KerchunkParquetWriter::create(&out.as_path().into(), &RemoteOptions::<()>::default())
                .expect("writer")
                .with_record_size(10_000);
        w.group("", &GroupMetadataV3::new()).expect("root");
        w.array("a", &metadata(&[rows_n, cols_n], &[1, 1]))
            .expect("array");
        for n in (0..rows_n * cols_n).rev() {
            let indices = [n / cols_n, n % cols_n];
            w.reference(&ChunkReference::new("a", &indices, "s3://b/k", n, 1))
                .expect("reference");
        }
        let summary = w.finish(Durability::None).expect("finish");
        assert_eq!(summary.references, rows_n * cols_n);
        for record in 0..30 {
            let r = rows(&out.join(format!("a/refs.{record}.parq")));
            assert_eq!(r.len(), 10_000);
            for (i, row) in r.iter().enumerate().step_by(97) {
                let n = record * 10_000 + i64::try_from(i).expect("row");
                assert_eq!(row, &(Some("s3://b/k".into()), n, 1, None));
            }
        }
    }

    #[test]
    fn misuse_is_an_error_naming_what() {
        let dir = tempfile::tempdir().expect("dir");
        let mut w = KerchunkParquetWriter::create(
            &dir.path().join("r").as_path().into(),
            &RemoteOptions::<()>::default(),
        )
        .expect("writer");
        let e = w.array("", &metadata(&[4], &[2])).expect_err("root array");
        assert!(e.to_string().contains("root"), "{e}");
        w.array("a", &metadata(&[4], &[2])).expect("array");
        let e = w
            .reference(&ChunkReference::new("a", &[2], "s3://b/k", 0, 1))
            .expect_err("beyond the grid");
        assert!(e.to_string().contains("chunk grid"), "{e}");
        let e = w
            .reference(&ChunkReference::new("b", &[0], "s3://b/k", 0, 1))
            .expect_err("undeclared");
        assert!(e.to_string().contains("not declared"), "{e}");
        w.reference(&ChunkReference::new("a", &[1], "s3://b/k", 0, 1))
            .expect("reference");
        w.reference(&ChunkReference::new("a", &[1], "s3://b/k", 5, 1))
            .expect("spooled");
        let e = w.finish(Durability::None).expect_err("twice");
        assert!(e.to_string().contains("twice"), "{e}");
        assert!(
            !dir.path().join("r/.zmetadata").exists(),
            "no .zmetadata when failed"
        );
    }
}
