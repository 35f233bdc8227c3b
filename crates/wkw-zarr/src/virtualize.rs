//! WKW data as virtual Zarr v3 references: every block of every WKW file becomes one chunk of
//! an unsharded Zarr v3 array, referenced in place (the file's URL, the block's offset and
//! length, the file's ETag or modification time), without reading a voxel.
//!
//! The hierarchy is the one a conversion writes (see [`convert`](crate::convert)): a dataset is
//! a root group with a group per layer (its OME-NGFF `multiscales`) and an array per mag at
//! `<layer>/<mag>`; a single mag is the array at the root. The arrays have the conversion's
//! shape `(c, x, y, z)`; their chunk is one block `(c, b, b, b)` with the codecs
//! `transpose [3, 2, 1, 0]` → `bytes` → `lz4-block` (LZ4 and LZ4HC files; see the
//! `lz4-block-codec` crate) or no compressor (raw files). A missing file is a run of missing
//! chunks (the fill value 0).
//!
//! Only headers and jump tables are read: a raw file's 16-byte header, a compressed file's
//! header and jump table (`16 + 8 · blocks` bytes), one ranged read per file; on a store these
//! go out `concurrency × 4` files at a time, each pinned to the ETag of the listing. The
//! references are streamed into the [`ReferenceSink`] file by file: memory holds one batch of
//! jump tables and the mag's file listing, whatever the number of blocks.

use futures::StreamExt;
use scifmt_io::zarrs_metadata::v3::{GroupMetadataV3, MetadataV3};
use scifmt_io::{Checksum, ChunkReference, Location, Prefetched, ReferenceSink, reference_url};
use wkw::{BlockReader, BlockType, Header};

use crate::codec::ChunkCodec;
use crate::dataset::{self, Source, detect};
use crate::error::{Error, Result};
use crate::mag::{Item, plan_wkw_to_zarr, read_wkw_header};
use crate::meta::Layout;
use crate::options::{Cancel, Format, Progress, RemoteOptions};

/// Options of [`virtualize`], built as `VirtualizeOptions::default().with_…(…)`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct VirtualizeOptions {
    /// Allocation caps for the WKW headers and jump tables read.
    pub limits: wkw::Limits,
    /// Requests to object stores: `concurrency` (files are read `concurrency × 4` at a time),
    /// `max_request_bytes` (a longer jump table is read in pieces), read retries.
    pub remote: RemoteOptions,
    /// Raised to stop between files ([`Error::Cancelled`]); nothing is resumable, the sink
    /// decides what becomes of what it received.
    pub cancel: Cancel,
    /// Only the arrays at or below this node path (`/`-separated, relative to each source as
    /// [`virtualize`] names its nodes: `"color"` a layer, `"color/2-2-1"` a mag); `""` (the
    /// default) all. Only their files are read; every group is still declared (a dataset's
    /// groups come from its `datasource-properties.json`, no WKW file is read for them).
    pub only: String,
}

impl Default for VirtualizeOptions {
    fn default() -> Self {
        Self {
            limits: wkw::Limits::default(),
            remote: RemoteOptions::default(),
            cancel: Cancel::new(),
            only: String::new(),
        }
    }
}

impl VirtualizeOptions {
    /// Sets the allocation caps for WKW input.
    #[must_use]
    pub fn with_limits(mut self, limits: wkw::Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Sets the options of object-store requests.
    #[must_use]
    pub fn with_remote(mut self, remote: RemoteOptions) -> Self {
        self.remote = remote;
        self
    }

    /// Sets the flag that stops the run (shared with the caller, who raises it).
    #[must_use]
    pub fn with_cancel(mut self, cancel: Cancel) -> Self {
        self.cancel = cancel;
        self
    }

    /// Virtualizes only the arrays at or below node path `only` (see [`Self::only`];
    /// surrounding `/` ignored).
    #[must_use]
    pub fn with_only(mut self, only: &str) -> Self {
        only.trim_matches('/').clone_into(&mut self.only);
        self
    }

    /// Whether the array at node path `path` (relative to its source) is virtualized.
    fn selects(&self, path: &str) -> bool {
        self.only.is_empty()
            || path == self.only
            || path
                .strip_prefix(self.only.as_str())
                .is_some_and(|rest| rest.starts_with('/'))
    }
}

/// What [`virtualize`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct VirtualizeSummary {
    /// Groups declared.
    pub groups: u64,
    /// Arrays (mags) declared.
    pub arrays: u64,
    /// WKW files referenced: read (header and jump table each), or kept as the sink held
    /// them (`unchanged_files`).
    pub files: u64,
    /// Files not read because the sink already held their references at the version a
    /// listing or a `stat` gives (an update: [`ReferenceSink::unchanged_source`]).
    pub unchanged_files: u64,
    /// Chunk references (one per block of every file).
    pub references: u64,
    /// Bytes read from the WKW files (headers and jump tables; `header.wkw` and the dataset's
    /// `datasource-properties.json` not counted).
    pub bytes_read: u64,
}

impl VirtualizeSummary {
    fn add(&mut self, o: &Self) {
        self.groups += o.groups;
        self.arrays += o.arrays;
        self.files += o.files;
        self.unchanged_files += o.unchanged_files;
        self.references += o.references;
        self.bytes_read += o.bytes_read;
    }
}

/// Streams the virtual references of `src` — a webKNOSSOS WKW dataset (every layer and mag)
/// or a WKW mag — into `sink`: the nodes first, then one reference per block of every file
/// (see the module docs for the layout). `progress` is called after every file.
///
/// # Errors
/// [`Error::Unsupported`] for a source that is not WKW (a Zarr dataset or array) or a file
/// whose block type differs from its mag's `header.wkw` (an array has one codec);
/// [`Error::Corrupt`] / [`Error::Wkw`] for a bad header or jump table (naming the file);
/// [`Error::Remote`] for failed requests, and for a file replaced while it is read
/// (`scifmt_io::Error::Changed`); [`Error::Cancelled`]; the sink's errors.
pub fn virtualize(
    src: impl Into<Location>,
    sink: &mut dyn ReferenceSink,
    options: &VirtualizeOptions,
    progress: &(dyn Fn(&Progress) + Sync),
) -> Result<VirtualizeSummary> {
    source(&src.into(), "", sink, options, progress)
}

/// [`virtualize`] into the node at path `at` (`""` for the root; `/`-separated names
/// otherwise: the caller declares the groups above it), for callers that put WKW sources
/// beside others in one hierarchy.
///
/// # Errors
/// As [`virtualize`]; the sink's errors for a path that is not a node path.
pub fn virtualize_at(
    src: &Location,
    at: &str,
    sink: &mut dyn ReferenceSink,
    options: &VirtualizeOptions,
    progress: &(dyn Fn(&Progress) + Sync),
) -> Result<VirtualizeSummary> {
    source(src, at, sink, options, progress)
}

/// [`virtualize`] for several sources at once: the root is a group, each source the group
/// (dataset) or array (mag) named like its directory (the last segment of its path or URL).
///
/// # Errors
/// [`Error::InvalidArgument`] for no sources, a source without a name, or two with one name;
/// as [`virtualize`].
pub fn virtualize_all(
    srcs: &[Location],
    sink: &mut dyn ReferenceSink,
    options: &VirtualizeOptions,
    progress: &(dyn Fn(&Progress) + Sync),
) -> Result<VirtualizeSummary> {
    if srcs.is_empty() {
        return Err(Error::InvalidArgument("no sources to virtualize".into()));
    }
    // Named as `scifmt virtualize` names any sources side by side (WKW or not).
    let names = scifmt_io::node_names(srcs)?;
    sink.group("", &GroupMetadataV3::new())?;
    let mut summary = VirtualizeSummary {
        groups: 1,
        ..VirtualizeSummary::default()
    };
    for (s, name) in srcs.iter().zip(&names) {
        summary.add(&source(s, name, sink, options, progress)?);
    }
    Ok(summary)
}

/// `at/name`, or `name` at the root.
fn child(at: &str, name: &str) -> String {
    if at.is_empty() {
        name.to_owned()
    } else {
        format!("{at}/{name}")
    }
}

/// One source at node path `at`.
fn source(
    src: &Location,
    at: &str,
    sink: &mut dyn ReferenceSink,
    options: &VirtualizeOptions,
    progress: &(dyn Fn(&Progress) + Sync),
) -> Result<VirtualizeSummary> {
    match detect(src)? {
        Source::WkwMag if !options.selects("") => Ok(VirtualizeSummary::default()),
        Source::WkwMag => mag(src, at, None, sink, options, progress),
        Source::Dataset(Format::Wkw) => {
            sink.group(at, &GroupMetadataV3::new())?;
            let mut summary = VirtualizeSummary {
                groups: 1,
                ..VirtualizeSummary::default()
            };
            for (name, group) in dataset::layer_groups(src)? {
                sink.group(&child(at, &name), &group)?;
                summary.groups += 1;
            }
            for a in dataset::dataset_arrays(src, Format::Zarr3)? {
                if !options.selects(&a.dst) {
                    continue;
                }
                let from = if a.src.is_empty() {
                    src.clone()
                } else {
                    src.join(&a.src)
                };
                summary.add(&mag(
                    &from,
                    &child(at, &a.dst),
                    a.extent,
                    sink,
                    options,
                    progress,
                )?);
            }
            Ok(summary)
        }
        kind => Err(Error::unsupported(
            src.name(),
            format!("{kind:?} (virtual references are made of WKW data; Zarr is already Zarr)"),
        )),
    }
}

/// The `lz4-block` codec entry that decodes blocks of `block_type` (`None` for raw blocks).
fn compressor(block_type: BlockType) -> Result<Option<MetadataV3>> {
    let config = match block_type {
        BlockType::Raw => return Ok(None),
        BlockType::Lz4Hc => lz4_block_codec::Lz4BlockConfiguration::Hc { level: 9 },
        _ => lz4_block_codec::Lz4BlockConfiguration::default(),
    };
    serde_json::from_value(config.to_entry())
        .map(Some)
        .map_err(|e| Error::Internal(format!("lz4-block entry: {e}")))
}

/// A file whose header and jump table were read: its block ranges, its checksum, the bytes
/// read.
struct Opened {
    blocks: BlockReader,
    checksum: Checksum,
    read: u64,
}

/// Bytes of a file's header and jump table (the first `16 + 8 · blocks` bytes of a compressed
/// file, 16 of a raw one), within `limits`.
fn head_len(header: &Header, len: u64, limits: &wkw::Limits) -> Result<u64> {
    let table = if header.block_type().is_compressed() {
        let n = header.blocks_per_file();
        if n > limits.max_blocks_per_file {
            return Err(Error::LimitExceeded {
                what: "jump table entries",
                requested: n,
                limit: limits.max_blocks_per_file,
            });
        }
        n.checked_mul(8)
            .ok_or_else(|| Error::Internal(format!("jump table of {n} blocks")))?
    } else {
        0
    };
    Ok(len.min(table.saturating_add(16)))
}

/// Opens the local file `path` (named `name`) by its header and jump table; a file that
/// changes while it is read is `scifmt_io::Error::Changed`.
fn open_local(
    path: &std::path::Path,
    name: &str,
    header: &Header,
    limits: &wkw::Limits,
) -> Result<Opened> {
    use scifmt_io::ReadAt;
    let f = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    let stamp = |f: &std::fs::File| -> Result<(Checksum, u64)> {
        let m = f.metadata().map_err(|e| Error::io(path, e))?;
        Ok((Checksum::of_file(&m, path)?, m.len()))
    };
    let (checksum, size) = stamp(&f)?;
    let n = head_len(header, size, limits)?;
    let mut buf = vec![0u8; usize::try_from(n).map_err(|_| Error::Internal(format!("{n} bytes")))?];
    f.read_exact_at(&mut buf, 0)
        .map_err(|e| Error::io(path, e))?;
    if stamp(&f)? != (checksum.clone(), size) {
        return Err(scifmt_io::Error::Changed {
            url: name.to_owned(),
        }
        .into());
    }
    opened(buf.into(), size, name, header, limits, checksum)
}

/// A file of `size` bytes (named `name`) from its first bytes `head`: its header checked
/// against the mag's `header`, then its jump table parsed.
fn opened(
    head: scifmt_io::bytes::Bytes,
    size: u64,
    name: &str,
    header: &Header,
    limits: &wkw::Limits,
    checksum: Checksum,
) -> Result<Opened> {
    if let Some(first) = head.get(..16) {
        let fh = Header::parse(first).map_err(|e| Error::corrupt(name, e.to_string()))?;
        check_file_header(&fh, header, name)?;
    }
    let read = head.len() as u64;
    let mut prefix = Prefetched::new(size);
    prefix.insert(0, head);
    let blocks = BlockReader::open_storage(Box::new(prefix), name, limits)?;
    Ok(Opened {
        blocks,
        checksum,
        read,
    })
}

/// Opens the files `items` of the mag at the store location `mag` by their headers and jump
/// tables, concurrently, each read pinned to the ETag of the listing.
fn open_remote(
    mag: &scifmt_io::StoreLocation,
    items: &[Item],
    header: &Header,
    options: &VirtualizeOptions,
) -> Result<Vec<Opened>> {
    let heads = items
        .iter()
        .map(|(_, _, (len, _))| head_len(header, *len, &options.limits))
        .collect::<Result<Vec<u64>>>()?;
    let remote = &options.remote;
    let fetched: Vec<scifmt_io::Result<(Option<Vec<scifmt_io::bytes::Bytes>>, scifmt_io::Object)>> =
        scifmt_io::block_on(
            futures::stream::iter(items.iter().zip(&heads).map(|((_, key, (_, etag)), &n)| {
                let object = mag.join(key).object().with_etag(etag.clone());
                async move {
                    let got = object
                        .get_ranges(std::slice::from_ref(&(0..n)), remote)
                        .await?;
                    Ok((got, object))
                }
            }))
            .buffered(remote.concurrency.max(1))
            .collect(),
        )?;
    let mut out = Vec::with_capacity(items.len());
    for ((_, _, (len, _)), got) in items.iter().zip(fetched) {
        let (got, object) = got?;
        let name = object.url().to_owned();
        let bytes = got
            .and_then(|mut v| v.pop())
            .ok_or_else(|| Error::corrupt(&name, "listed, but gone"))?;
        let checksum = match object.etag() {
            Some(e) => Checksum::ETag(e.to_owned()),
            None => {
                let meta = scifmt_io::block_on(object.head())??
                    .ok_or_else(|| Error::corrupt(&name, "listed, but gone"))?;
                Checksum::of_object(&meta)
            }
        };
        out.push(opened(
            bytes,
            *len,
            &name,
            header,
            &options.limits,
            checksum,
        )?);
    }
    Ok(out)
}

/// The mag at `src` as the array at node path `at`; `extent` is the layer's bounding-box end
/// in this mag (datasets).
fn mag(
    src: &Location,
    at: &str,
    extent: Option<[u64; 3]>,
    sink: &mut dyn ReferenceSink,
    options: &VirtualizeOptions,
    progress: &(dyn Fn(&Progress) + Sync),
) -> Result<VirtualizeSummary> {
    let header = read_wkw_header(src)?;
    let (end, files) = plan_wkw_to_zarr(src, extent)?;
    let layout = Layout::for_wkw(&header, end, ChunkCodec::None);
    layout.check_limits(&options.limits)?;
    let meta = layout.to_virtual_metadata(compressor(header.block_type())?)?;
    sink.array(at, &meta)?;
    let base = reference_url(src)?;
    let side = u64::from(header.file_len());
    let total = files.len() as u64;
    let mut summary = VirtualizeSummary {
        arrays: 1,
        ..VirtualizeSummary::default()
    };
    let per_batch = match src {
        Location::Local(_) => 1,
        Location::Store(_) => options.remote.concurrency.max(1).saturating_mul(4),
    };
    let mut indices = [0u64; 4];
    for batch in files.chunks(per_batch) {
        options.cancel.check()?;
        // Files the sink holds at the version their listing or a stat gives are not read.
        let mut unread = Vec::with_capacity(batch.len());
        for item in batch {
            let (_, key, (_, etag)) = item;
            let url = format!("{base}/{key}");
            let version = match src {
                Location::Local(dir) => {
                    let path = dir.join(key);
                    let m = std::fs::metadata(&path).map_err(|e| Error::io(&path, e))?;
                    Some(Checksum::of_file(&m, &path)?)
                }
                Location::Store(_) => etag.clone().map(Checksum::ETag),
            };
            let kept = match &version {
                Some(v) => sink.unchanged_source(at, &url, v)?,
                None => None,
            };
            if let Some(n) = kept {
                summary.files += 1;
                summary.unchanged_files += 1;
                summary.references += n;
                progress(&Progress {
                    done: summary.files,
                    total,
                    array: src.name(),
                });
            } else {
                unread.push(item.clone());
            }
        }
        let batch = unread.as_slice();
        let opened = match src {
            Location::Local(dir) => batch
                .iter()
                .map(|(_, key, _)| {
                    open_local(
                        &dir.join(key),
                        &format!("{base}/{key}"),
                        &header,
                        &options.limits,
                    )
                })
                .collect::<Result<Vec<_>>>()?,
            Location::Store(s) => open_remote(s, batch, &header, options)?,
        };
        for ((idx, key, _), file) in batch.iter().zip(opened) {
            let url = format!("{base}/{key}");
            let origin = idx.map(|i| i.saturating_mul(side));
            for k in 0..file.blocks.block_count() {
                let (start, stop) = file.blocks.stored_range(k)?;
                if stop == start && header.block_type().is_compressed() {
                    return Err(Error::corrupt(
                        &url,
                        format!("block {k} is empty (0 bytes at offset {start}): no LZ4 block"),
                    ));
                }
                let b = morton_code::decode_3d_u64(k)
                    .map_err(|e| Error::Internal(format!("block {k}: {e}")))?;
                for d in 0..3 {
                    indices[d + 1] = origin[d]
                        .checked_add(u64::from(b[d]))
                        .ok_or_else(|| Error::Internal(format!("chunk index of block {k}")))?;
                }
                let r = ChunkReference::new(at, &indices, &url, start, stop - start)
                    .with_checksum(Some(&file.checksum));
                sink.reference(&r)?;
            }
            summary.files += 1;
            summary.references += file.blocks.block_count();
            summary.bytes_read += file.read;
            progress(&Progress {
                done: summary.files,
                total,
                array: src.name(),
            });
        }
    }
    Ok(summary)
}

/// A data file's header must describe its mag's blocks: the voxel type, channels, block and
/// file side of `header.wkw`, and its block type (one array has one codec).
fn check_file_header(file: &Header, mag: &Header, url: &str) -> Result<()> {
    if file.voxel_type() != mag.voxel_type()
        || file.voxel_size() != mag.voxel_size()
        || file.block_len() != mag.block_len()
        || file.file_len() != mag.file_len()
    {
        return Err(Error::corrupt(
            url,
            format!("file header {file:?} differs from the mag's header.wkw {mag:?}"),
        ));
    }
    if file.block_type() != mag.block_type() {
        return Err(Error::unsupported(
            url,
            format!(
                "{:?} blocks in a mag whose header.wkw says {:?}: one virtual array has one codec",
                file.block_type(),
                mag.block_type()
            ),
        ));
    }
    Ok(())
}
