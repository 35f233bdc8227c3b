//! Compares a WKW mag (or dataset) with a Zarr v3 array (or dataset) block by block, decoded:
//! every WKW file against the shard with the same index, absent files, shards and chunks
//! reading as zeros.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use rayon::prelude::*;

use crate::dataset::{PROPERTIES_JSON, Source, detect, layer_name, mags, read_json};
use crate::error::{Error, Result};
use crate::mag::{
    Ctx, Known, WkwSource, all_zero, list_shards, list_wkw_files, read_layout, read_wkw_header,
    undecodable,
};
use crate::meta::Layout;
use crate::options::{ConvertOptions, Format, Progress};
use crate::shard::ShardReader;
use scifmt_io::Location;

/// A differing block: the first differing byte and the block's coordinates in its shard.
type Found = Option<(u64, [u32; 3])>;

/// At most this many differences are listed (all are counted).
const MAX_LISTED: usize = 100;

/// One block whose voxels differ.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Difference {
    /// The WKW mag directory (its path, or its URL without credentials).
    pub wkw: PathBuf,
    /// The Zarr array directory (its path, or its URL without credentials).
    pub zarr: PathBuf,
    /// Voxel position `(x, y, z)` (in the mag) of the first differing voxel.
    pub voxel: [u64; 3],
    /// Its channel.
    pub channel: u64,
}

impl std::fmt::Display for Difference {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let [x, y, z] = self.voxel;
        write!(
            f,
            "{} and {} differ at voxel ({x}, {y}, {z}) channel {} (first in its block)",
            self.wkw.display(),
            self.zarr.display(),
            self.channel
        )
    }
}

/// What [`verify`] found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct VerifyReport {
    /// Array pairs (mags) compared.
    pub arrays: u64,
    /// Shard / file pairs compared.
    pub shards: u64,
    /// Blocks compared.
    pub blocks: u64,
    /// Differing blocks (all of them counted).
    pub differing_blocks: u64,
    /// The first differing blocks (at most 100), one entry per block.
    pub differences: Vec<Difference>,
}

impl VerifyReport {
    /// Whether both sides hold the same voxels.
    #[must_use]
    pub fn is_ok(&self) -> bool {
        self.differing_blocks == 0
    }

    fn add(&mut self, other: Self) {
        self.arrays += other.arrays;
        self.shards += other.shards;
        self.blocks += other.blocks;
        self.differing_blocks += other.differing_blocks;
        let room = MAX_LISTED.saturating_sub(self.differences.len());
        self.differences
            .extend(other.differences.into_iter().take(room));
    }
}

/// Compares `a` and `b` voxel for voxel (block by block, decoded): a WKW mag with a Zarr v3
/// array, or a WKW dataset with a Zarr3 dataset (layers matched by name, mags by mag), in
/// either order. Blocks outside one side read as zeros there.
///
/// Each side is a local path or a [`Location`] on an object store; both are read as a
/// conversion reads its source: in batches of blocks (a WKW file's header and jump table,
/// a shard's index, then each batch's blocks or chunks in coalesced ranged reads pinned to
/// the version first seen), never a whole file or shard at once.
///
/// # Errors
/// [`Error::InvalidArgument`] if the two are not one WKW and one Zarr side of the same
/// geometry; the errors of reading either side (naming the file or URL), including corrupt
/// blocks and chunks.
pub fn verify(
    a: impl Into<Location>,
    b: impl Into<Location>,
    options: &ConvertOptions,
    progress: &(dyn Fn(&Progress) + Sync),
) -> Result<VerifyReport> {
    let (a, b): (Location, Location) = (a.into(), b.into());
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(options.threads)
        .build()
        .map_err(|e| Error::Internal(format!("thread pool: {e}")))?;
    let ctx = Ctx {
        options,
        pool: &pool,
        progress,
    };
    let pairs = match (detect(&a)?, detect(&b)?) {
        (Source::WkwMag, Source::Zarr3Array) => vec![(a, b)],
        (Source::Zarr3Array, Source::WkwMag) => vec![(b, a)],
        (Source::Dataset(Format::Wkw), Source::Dataset(Format::Zarr3)) => dataset_pairs(&a, &b)?,
        (Source::Dataset(Format::Zarr3), Source::Dataset(Format::Wkw)) => dataset_pairs(&b, &a)?,
        (x, y) => {
            return Err(Error::InvalidArgument(format!(
                "cannot compare {a} ({x:?}) with {b} ({y:?}): need one WKW and one Zarr3 side"
            )));
        }
    };
    let mut report = VerifyReport::default();
    for (wkw_dir, zarr_dir) in pairs {
        report.add(verify_mag(&wkw_dir, &zarr_dir, &ctx)?);
    }
    Ok(report)
}

/// Matching mag directories of a WKW dataset and a Zarr3 dataset.
fn dataset_pairs(wkw_root: &Location, zarr_root: &Location) -> Result<Vec<(Location, Location)>> {
    let wp = wkw_root.join(PROPERTIES_JSON);
    let zp = zarr_root.join(PROPERTIES_JSON);
    let (wdoc, zdoc) = (read_json(&wp)?, read_json(&zp)?);
    let list = |doc: &serde_json::Value,
                root: &Location,
                path: &Path|
     -> Result<BTreeMap<(String, [u64; 3]), Location>> {
        let mut out = BTreeMap::new();
        for layer in doc
            .get("dataLayers")
            .and_then(|l| l.as_array())
            .into_iter()
            .flatten()
        {
            let name = layer_name(layer, path)?.to_owned();
            for m in mags(root, layer, path)? {
                out.insert((name.clone(), m.mag), m.dir);
            }
        }
        Ok(out)
    };
    let w = list(&wdoc, wkw_root, &wp.name())?;
    let z = list(&zdoc, zarr_root, &zp.name())?;
    if w.keys().ne(z.keys()) {
        return Err(Error::InvalidArgument(format!(
            "{wp} has layers/mags {:?}, {zp} has {:?}",
            w.keys().collect::<Vec<_>>(),
            z.keys().collect::<Vec<_>>()
        )));
    }
    Ok(w.into_values().zip(z.into_values()).collect())
}

/// A WKW file and a shard (with their lengths and ETags) of one position, each possibly
/// absent.
type Sides = (Option<(Location, Known)>, Option<(Location, Known)>);

fn verify_mag(wkw_dir: &Location, zarr_dir: &Location, ctx: &Ctx<'_>) -> Result<VerifyReport> {
    let options = ctx.options;
    let header = read_wkw_header(wkw_dir)?;
    let layout = read_layout(zarr_dir)?;
    layout.check_limits(&options.limits)?;
    if header.voxel_type() != layout.voxel_type
        || header.num_channels() != layout.channels
        || header.block_len() != layout.block_len
        || header.file_len() != layout.file_len
    {
        return Err(Error::InvalidArgument(format!(
            "{wkw_dir} ({header:?}) and {zarr_dir} ({layout:?}) differ in geometry"
        )));
    }
    let mut files: BTreeMap<[u64; 3], Sides> = BTreeMap::new();
    for (idx, key, known) in list_wkw_files(wkw_dir)? {
        files.entry(idx.map(u64::from)).or_default().0 = Some((wkw_dir.join(&key), known));
    }
    for (idx, shard, known) in list_shards(zarr_dir, &layout)? {
        files.entry(idx).or_default().1 = Some((shard, known));
    }
    let total = files.len() as u64;
    let mut report = VerifyReport {
        arrays: 1,
        ..VerifyReport::default()
    };
    let block_bytes = usize::try_from(layout.block_bytes()).unwrap_or(usize::MAX);
    let max_chunk = layout.codec.max_stored(block_bytes) as u64;
    let batch = ctx.batch();
    let (wkw_name, zarr_name) = (wkw_dir.name(), zarr_dir.name());
    for (done, (idx, (wf, zf))) in files.into_iter().enumerate() {
        let source = match wf {
            Some((at, known)) => WkwSource::open(&at, Some(known), &header, ctx)?,
            None => None,
        };
        let shard = match zf {
            Some((at, known)) => match at.open(Some(known), &options.remote)? {
                Some(r) => Some(ShardReader::open(r, &layout, max_chunk)?),
                None => None,
            },
            None => None,
        };
        let n = layout.blocks_per_shard();
        let mut first = 0;
        while first < n {
            let last = n.min(first + batch);
            let ks: Vec<u64> = (first..last).collect();
            let mut coords = Vec::with_capacity(ks.len());
            for &k in &ks {
                let b = morton_code::decode_3d_u64(k)
                    .map_err(|e| Error::Internal(format!("block {k}: {e}")))?;
                coords.push(b);
            }
            ctx.options.cancel.check()?;
            let left: Vec<Option<Vec<u8>>> = match &source {
                Some(s) => s.read(&ks)?.into_iter().map(Some).collect(),
                None => vec![None; ks.len()],
            };
            let right = match &shard {
                Some(s) => s.read_blocks(&layout, &coords)?,
                None => vec![None; ks.len()],
            };
            let items: Vec<_> = ks
                .into_iter()
                .zip(coords)
                .zip(left.into_iter().zip(right))
                .collect();
            let results: Vec<Result<Found>> = ctx.pool.install(|| {
                items
                    .into_par_iter()
                    .map(|((k, b), (w, z))| {
                        let mut left = vec![0u8; block_bytes];
                        if let (Some(stored), Some(s)) = (w, &source) {
                            wkw::decode_block(&stored, s.blocks.header().block_type(), &mut left)
                                .map_err(|e| undecodable(&s.blocks, k, &e))?;
                        }
                        let mut right = vec![0u8; block_bytes];
                        if let (Some(parts), Some(s)) = (z, &shard) {
                            layout.decode_parts(&parts, &mut right).map_err(|e| {
                                Error::corrupt(s.path(), format!("chunk of block {k}: {e}"))
                            })?;
                        }
                        if left == right || (all_zero(&left) && all_zero(&right)) {
                            return Ok(None);
                        }
                        let at = left
                            .iter()
                            .zip(&right)
                            .position(|(x, y)| x != y)
                            .unwrap_or(0);
                        Ok(Some((at as u64, b)))
                    })
                    .collect()
            });
            for r in results {
                report.blocks += 1;
                if let Some((at, b)) = r? {
                    report.differing_blocks += 1;
                    if report.differences.len() < MAX_LISTED {
                        report
                            .differences
                            .push(difference(&layout, idx, b, at, &wkw_name, &zarr_name));
                    }
                }
            }
            first = last;
        }
        report.shards += 1;
        (ctx.progress)(&Progress {
            done: done as u64 + 1,
            total,
            array: zarr_name.clone(),
        });
    }
    Ok(report)
}

/// The voxel and channel at byte `at` of block `b` of shard `idx`.
fn difference(
    layout: &Layout,
    idx: [u64; 3],
    b: [u32; 3],
    at: u64,
    wkw: &Path,
    zarr: &Path,
) -> Difference {
    let size = u64::from(layout.voxel_type.size());
    let c = u64::from(layout.channels);
    let bl = u64::from(layout.block_len);
    let voxel = at / size;
    let channel = voxel % c;
    let v = voxel / c;
    let local = [v % bl, (v / bl) % bl, v / (bl * bl)];
    let voxel = [0, 1, 2].map(|d| idx[d] * layout.shard_len() + u64::from(b[d]) * bl + local[d]);
    Difference {
        wkw: wkw.to_path_buf(),
        zarr: zarr.to_path_buf(),
        voxel,
        channel,
    }
}
