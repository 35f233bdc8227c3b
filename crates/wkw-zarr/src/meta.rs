//! The `zarr.json` of a converted array, read and written through zarrs' Zarr v3 metadata
//! model (`zarrs_metadata`, `zarrs_metadata_ext`): built from a WKW geometry, and parsed (for
//! the way back) into the same description, refusing layouts whose inner chunks are not WKW
//! blocks. Decoding the chunks of a layout is in `decode`.

use std::num::NonZeroU64;
use std::path::Path;

use blosc_chunk::BloscConfig;
use serde::Deserialize;
use serde_json::Value;
use wkw::VoxelType;
use zarrs_metadata::v3::{ArrayMetadataV3, FillValueMetadataV3, MetadataV3};
use zarrs_metadata::{ChunkKeySeparator, Configuration, Endianness};
use zarrs_metadata_ext::chunk_grid::regular::RegularChunkGridConfiguration;
use zarrs_metadata_ext::chunk_key_encoding::default::DefaultChunkKeyEncodingConfiguration;
use zarrs_metadata_ext::codec::bytes::{BytesCodecConfiguration, BytesCodecConfigurationV1};
use zarrs_metadata_ext::codec::gzip::{
    GzipCodecConfiguration, GzipCodecConfigurationV1, GzipCompressionLevel,
};
use zarrs_metadata_ext::codec::sharding::{
    ShardingCodecConfiguration, ShardingCodecConfigurationV1, ShardingIndexLocation,
};
use zarrs_metadata_ext::codec::transpose::{
    TransposeCodecConfiguration, TransposeCodecConfigurationV1, TransposeOrder,
};
use zarrs_metadata_ext::codec::zstd::{ZstdCodecConfiguration, ZstdCodecConfigurationV1};

use crate::codec::ChunkCodec;
use crate::error::{Error, Result};

/// Name of a Zarr v3 node's metadata document.
pub const ZARR_JSON: &str = "zarr.json";

/// A sharded Zarr v3 array whose inner chunks are WKW blocks: dimensions `(c, x, y, z)`,
/// inner chunk `(c, b, b, b)` (stored Fortran-ordered, channels fastest, as webknossos-libs
/// writes it, or in another `transpose` order re-laid per chunk), shards `(c, s, s, s)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Layout {
    pub(crate) voxel_type: VoxelType,
    pub(crate) channels: u8,
    /// `[x, y, z]` extent in voxels (the channel extent is `channels`).
    pub(crate) shape: [u64; 3],
    /// Inner chunk (WKW block) side in voxels.
    pub(crate) block_len: u32,
    /// Shard (WKW file) side in blocks.
    pub(crate) file_len: u32,
    pub(crate) codec: ChunkCodec,
    /// How a decoded inner chunk lays out its voxels when not as a WKW block: the
    /// `transpose` order over the axes `(c, x, y, z)` (a 3-d array's `(x, y, z)` shifted by
    /// one), slowest axis first; `None` when the bytes are a WKW block's (channels fastest,
    /// then x, y, z).
    pub(crate) order: Option<[usize; 4]>,
    /// Inner chunks hold one channel each (`(1, b, b, b)` with several channels): a WKW
    /// block is assembled from one chunk per channel.
    pub(crate) split: bool,
    /// Whether the array has the channel dimension (4-d); 3-d arrays have one channel.
    pub(crate) has_c: bool,
    /// The shard index ends with a crc32c checksum.
    pub(crate) index_crc: bool,
    /// The shard index is at the end of the shard (else at the start).
    pub(crate) index_at_end: bool,
    /// Chunk key separator (`/` or `.`).
    pub(crate) separator: char,
}

/// Zarr `data_type` name of a WKW voxel type.
pub(crate) fn data_type_name(t: VoxelType) -> &'static str {
    match t {
        VoxelType::U8 => "uint8",
        VoxelType::U16 => "uint16",
        VoxelType::U32 => "uint32",
        VoxelType::U64 => "uint64",
        VoxelType::F32 => "float32",
        VoxelType::F64 => "float64",
        VoxelType::I8 => "int8",
        VoxelType::I16 => "int16",
        VoxelType::I32 => "int32",
        _ => "int64",
    }
}

fn voxel_type_of(name: &str) -> Option<VoxelType> {
    VoxelType::ALL
        .into_iter()
        .find(|&t| data_type_name(t) == name)
}

impl Layout {
    /// The layout of a WKW mag with `header`, holding voxels `[0, extent)`; `shape` is the
    /// extent rounded up to whole shards (as webknossos-libs does).
    pub(crate) fn for_wkw(header: &wkw::Header, extent: [u64; 3], codec: ChunkCodec) -> Self {
        let shard = u64::from(header.file_len_vx());
        Self {
            voxel_type: header.voxel_type(),
            channels: header.num_channels(),
            shape: extent.map(|e| e.div_ceil(shard).max(1) * shard),
            block_len: header.block_len(),
            file_len: header.file_len(),
            codec,
            order: None,
            split: false,
            has_c: true,
            index_crc: true,
            index_at_end: true,
            separator: '/',
        }
    }

    /// Checks the decoded block and the shard index against `limits` before anything of
    /// that size is allocated.
    ///
    /// # Errors
    /// [`Error::LimitExceeded`].
    pub(crate) fn check_limits(&self, limits: &wkw::Limits) -> Result<()> {
        if self.block_bytes() > limits.max_block_bytes {
            return Err(Error::LimitExceeded {
                what: "inner chunk",
                requested: self.block_bytes(),
                limit: limits.max_block_bytes,
            });
        }
        if self.chunks_per_shard() > limits.max_blocks_per_file {
            return Err(Error::LimitExceeded {
                what: "inner chunks per shard",
                requested: self.chunks_per_shard(),
                limit: limits.max_blocks_per_file,
            });
        }
        Ok(())
    }

    /// Shard side in voxels.
    pub(crate) fn shard_len(&self) -> u64 {
        u64::from(self.block_len) * u64::from(self.file_len)
    }

    /// Inner chunks per shard.
    pub(crate) fn chunks_per_shard(&self) -> u64 {
        self.blocks_per_shard() * self.parts() as u64
    }

    /// WKW blocks per shard (file).
    pub(crate) fn blocks_per_shard(&self) -> u64 {
        u64::from(self.file_len).pow(3)
    }

    /// Inner chunks per WKW block: one per channel when they split the channels, else one.
    pub(crate) fn parts(&self) -> usize {
        if self.split {
            usize::from(self.channels)
        } else {
            1
        }
    }

    /// The shard-index positions of the inner chunks of the block at block coordinates `b`
    /// (C order over the shard's chunk grid `(c, x, y, z)`).
    pub(crate) fn positions(&self, b: [u32; 3]) -> impl Iterator<Item = usize> {
        let at = index_position(self.file_len, b);
        let per_channel = (self.file_len as usize).pow(3);
        (0..self.parts()).map(move |ch| ch * per_channel + at)
    }

    /// Bytes of a decoded inner chunk (one WKW block).
    pub(crate) fn block_bytes(&self) -> u64 {
        u64::from(self.block_len).pow(3)
            * u64::from(self.voxel_type.size())
            * u64::from(self.channels)
    }

    /// Bytes of the encoded shard index.
    pub(crate) fn index_bytes(&self) -> u64 {
        self.chunks_per_shard() * 16 + if self.index_crc { 4 } else { 0 }
    }

    /// Shards along x, y, z.
    pub(crate) fn shard_grid(&self) -> [u64; 3] {
        self.shape.map(|s| s.div_ceil(self.shard_len()))
    }

    /// The key of shard `(x, y, z)` below the array (`c/0/x/y/z` for 4-d arrays).
    pub(crate) fn shard_key(&self, idx: [u64; 3]) -> String {
        let s = self.separator;
        let [x, y, z] = idx;
        if self.has_c {
            format!("c{s}0{s}{x}{s}{y}{s}{z}")
        } else {
            format!("c{s}{x}{s}{y}{s}{z}")
        }
    }

    /// The WKW header (dataset header, data offset 0) of this geometry with `block_type`.
    pub(crate) fn wkw_header(
        &self,
        block_type: wkw::BlockType,
        path: &Path,
    ) -> Result<wkw::Header> {
        wkw::Header::new(
            self.voxel_type,
            self.channels,
            self.block_len,
            self.file_len,
            block_type,
        )
        .map_err(|e| Error::unsupported(path, format!("no WKW geometry for this array: {e}")))
    }

    /// The `zarr.json` document, JSON-equal to what webknossos-libs 4.3.3 (tensorstore)
    /// writes.
    ///
    /// # Errors
    /// [`Error::Internal`] if the layout cannot be expressed (a zero extent).
    pub(crate) fn to_json(&self) -> Result<Value> {
        serde_json::to_value(self.to_metadata()?).map_err(|e| Error::Internal(e.to_string()))
    }

    /// The array metadata: shape `(c, x, y, z)`, one `sharding_indexed` codec whose inner
    /// codecs are `transpose` (WKW block order), `bytes` and the compressor, its index
    /// little-endian `bytes` and `crc32c`.
    fn to_metadata(&self) -> Result<ArrayMetadataV3> {
        let c = u64::from(self.channels);
        let b = u64::from(self.block_len);
        let s = self.shard_len();
        let [x, y, z] = self.shape;
        let (shape, shard, inner, names): (Vec<u64>, Vec<u64>, Vec<u64>, &[&str]) = if self.has_c {
            (
                vec![c, x, y, z],
                vec![c, s, s, s],
                vec![if self.split { 1 } else { c }, b, b, b],
                &["c", "x", "y", "z"],
            )
        } else {
            (
                vec![x, y, z],
                vec![s, s, s],
                vec![b, b, b],
                &["x", "y", "z"],
            )
        };
        let order: Vec<usize> = match self.order {
            // WKW blocks: channels fastest, then x, y, z.
            None if self.has_c => vec![3, 2, 1, 0],
            None => vec![2, 1, 0],
            Some(o) if self.has_c => o.to_vec(),
            Some(o) => o[1..].iter().map(|a| a.saturating_sub(1)).collect(),
        };
        let order = TransposeOrder::new(&order).map_err(|e| Error::Internal(e.to_string()))?;
        let endian = (self.voxel_type.size() > 1).then_some(Endianness::Little);
        let mut inner_codecs = vec![
            MetadataV3::new_with_configuration(
                "transpose",
                TransposeCodecConfiguration::V1(TransposeCodecConfigurationV1::new(order)),
            ),
            MetadataV3::new_with_configuration(
                "bytes",
                BytesCodecConfiguration::V1(BytesCodecConfigurationV1::new(endian)),
            ),
        ];
        match self.codec {
            ChunkCodec::None => {}
            ChunkCodec::Zstd { level, checksum } => {
                inner_codecs.push(MetadataV3::new_with_configuration(
                    "zstd",
                    ZstdCodecConfiguration::V1(ZstdCodecConfigurationV1::new(
                        level.into(),
                        checksum,
                    )),
                ))
            }
            ChunkCodec::Blosc(config) => inner_codecs.push(MetadataV3::new_with_configuration(
                BloscConfig::NAME,
                config.to_v3(),
            )),
            ChunkCodec::Gzip { level } => {
                let level = GzipCompressionLevel::new(level)
                    .map_err(|l| Error::Internal(format!("gzip level {l}")))?;
                inner_codecs.push(MetadataV3::new_with_configuration(
                    "gzip",
                    GzipCodecConfiguration::V1(GzipCodecConfigurationV1::new(level)),
                ));
            }
        }
        let mut index_codecs = vec![MetadataV3::new_with_configuration(
            "bytes",
            BytesCodecConfiguration::V1(BytesCodecConfigurationV1::new(Some(Endianness::Little))),
        )];
        if self.index_crc {
            index_codecs.push(MetadataV3::new_with_configuration(
                "crc32c",
                Configuration::default(),
            ));
        }
        let sharding = ShardingCodecConfiguration::V1(ShardingCodecConfigurationV1 {
            chunk_shape: non_zero(&inner)?,
            codecs: inner_codecs,
            index_codecs,
            index_location: if self.index_at_end {
                ShardingIndexLocation::End
            } else {
                ShardingIndexLocation::Start
            },
        });
        let mut sharding: serde_json::Map<String, Value> = Configuration::from(sharding).into();
        if self.index_at_end {
            // tensorstore leaves out `index_location` when it is the default (`end`).
            sharding.remove("index_location");
        }
        // tensorstore writes the fill value of float types as a float.
        let fill = self.fill_value();
        // `{"name": "default"}` (the `/` separator) as tensorstore writes it, the
        // configuration only for `.`.
        let key_encoding = match self.separator {
            '.' => Configuration::from(DefaultChunkKeyEncodingConfiguration {
                separator: ChunkKeySeparator::Dot,
            }),
            _ => Configuration::default(),
        };
        Ok(ArrayMetadataV3::new(
            shape,
            MetadataV3::new_with_configuration(
                "regular",
                RegularChunkGridConfiguration {
                    chunk_shape: non_zero(&shard)?,
                },
            ),
            MetadataV3::new(data_type_name(self.voxel_type)),
            fill,
            vec![MetadataV3::new_with_configuration(
                "sharding_indexed",
                sharding,
            )],
        )
        .with_chunk_key_encoding(MetadataV3::new_with_configuration("default", key_encoding))
        .with_dimension_names(Some(names.iter().copied())))
    }

    /// The array metadata of a virtual (unsharded) array whose chunks are the WKW blocks
    /// themselves, read in place: shape `(c, x, y, z)` as [`Layout::to_metadata`] has it,
    /// chunks `(c, b, b, b)`, codecs `transpose [3, 2, 1, 0]` → `bytes` (little endian) →
    /// `compressor` (`None` for raw blocks), fill value 0, chunk keys `c/0/x/y/z`.
    ///
    /// # Errors
    /// [`Error::Internal`] if the layout cannot be expressed (a zero extent).
    pub(crate) fn to_virtual_metadata(
        &self,
        compressor: Option<MetadataV3>,
    ) -> Result<ArrayMetadataV3> {
        let c = u64::from(self.channels);
        let b = u64::from(self.block_len);
        let [x, y, z] = self.shape;
        let order =
            TransposeOrder::new(&[3, 2, 1, 0]).map_err(|e| Error::Internal(e.to_string()))?;
        let endian = (self.voxel_type.size() > 1).then_some(Endianness::Little);
        let mut codecs = vec![
            MetadataV3::new_with_configuration(
                "transpose",
                TransposeCodecConfiguration::V1(TransposeCodecConfigurationV1::new(order)),
            ),
            MetadataV3::new_with_configuration(
                "bytes",
                BytesCodecConfiguration::V1(BytesCodecConfigurationV1::new(endian)),
            ),
        ];
        codecs.extend(compressor);
        Ok(ArrayMetadataV3::new(
            vec![c, x, y, z],
            MetadataV3::new_with_configuration(
                "regular",
                RegularChunkGridConfiguration {
                    chunk_shape: non_zero(&[c, b, b, b])?,
                },
            ),
            MetadataV3::new(data_type_name(self.voxel_type)),
            self.fill_value(),
            codecs,
        )
        .with_chunk_key_encoding(MetadataV3::new_with_configuration(
            "default",
            Configuration::default(),
        ))
        .with_dimension_names(Some(["c", "x", "y", "z"])))
    }

    /// The fill value 0, written as a float for float types (as tensorstore writes it).
    fn fill_value(&self) -> FillValueMetadataV3 {
        match self.voxel_type {
            VoxelType::F32 | VoxelType::F64 => serde_json::Number::from_f64(0.0)
                .map_or(FillValueMetadataV3::Number(0u64.into()), |n| {
                    FillValueMetadataV3::Number(n)
                }),
            _ => FillValueMetadataV3::Number(0u64.into()),
        }
    }

    /// Parses an array's `zarr.json` (read from `path`), accepting any sharded array whose
    /// inner chunks are WKW blocks (see the crate's FORMAT.md).
    ///
    /// # Errors
    /// [`Error::Metadata`] for malformed metadata (not a Zarr v3 array, a configuration that
    /// does not parse), [`Error::Unsupported`] for a valid array this crate does not convert.
    pub(crate) fn parse(doc: &Value, path: &Path) -> Result<Self> {
        let meta = ArrayMetadataV3::deserialize(doc)
            .map_err(|e| Error::metadata(path, format!("not a Zarr v3 array: {e}")))?;
        Self::from_metadata(&meta, path)
    }

    /// The layout of the array `meta` describes (read from `path`).
    fn from_metadata(meta: &ArrayMetadataV3, path: &Path) -> Result<Self> {
        let bad = |what: String| Error::metadata(path, what);
        let unsupported = |what: String| Error::unsupported(path, what);
        if let Some((name, _)) = meta
            .additional_fields
            .iter()
            .find(|(_, f)| f.must_understand())
        {
            return Err(unsupported(format!(
                "field {name:?} that must be understood"
            )));
        }
        if !meta.storage_transformers.is_empty() {
            return Err(unsupported("storage transformers".into()));
        }
        let shape = &meta.shape;
        let has_c = match shape.len() {
            4 => true,
            3 => false,
            n => return Err(unsupported(format!("{n}-d array (need (c,) x, y, z)"))),
        };
        if let Some(names) = &meta.dimension_names {
            let want: &[&str] = if has_c {
                &["c", "x", "y", "z"]
            } else {
                &["x", "y", "z"]
            };
            let ok = names.len() == want.len()
                && names
                    .iter()
                    .zip(want)
                    .all(|(a, b)| a.as_deref().is_none_or(|a| a == *b));
            if !ok {
                return Err(unsupported(format!(
                    "dimension_names {names:?} (need {want:?})"
                )));
            }
        }
        let dt = meta.data_type.name();
        let voxel_type = voxel_type_of(dt).ok_or_else(|| unsupported(format!("data_type {dt}")))?;
        let fill_zero = match &meta.fill_value {
            FillValueMetadataV3::Number(n) => n.as_f64() == Some(0.0),
            FillValueMetadataV3::String(s) => s == "0" || s == "0.0",
            FillValueMetadataV3::Bool(b) => !b,
            _ => false,
        };
        if !fill_zero {
            return Err(unsupported("fill_value other than 0".into()));
        }
        let encoding = &meta.chunk_key_encoding;
        if encoding.name() != "default" {
            return Err(unsupported(format!(
                "chunk_key_encoding {encoding} (need \"default\")"
            )));
        }
        let separator = match configuration::<DefaultChunkKeyEncodingConfiguration>(encoding, path)?
            .separator
        {
            ChunkKeySeparator::Slash => '/',
            ChunkKeySeparator::Dot => '.',
        };
        if meta.chunk_grid.name() != "regular" {
            return Err(unsupported("chunk grid other than \"regular\"".into()));
        }
        let shard: Vec<u64> =
            configuration::<RegularChunkGridConfiguration>(&meta.chunk_grid, path)?
                .chunk_shape
                .iter()
                .map(|v| v.get())
                .collect();
        let [sharding] = &meta.codecs[..] else {
            return Err(unsupported(
                "codecs other than exactly one sharding_indexed (an unsharded array)".into(),
            ));
        };
        if sharding.name() != "sharding_indexed" {
            return Err(unsupported(format!(
                "codec {sharding} (need sharding_indexed)"
            )));
        }
        let cfg = match configuration::<ShardingCodecConfiguration>(sharding, path)? {
            ShardingCodecConfiguration::V1(cfg) => cfg,
            other => return Err(unsupported(format!("sharding_indexed {other}"))),
        };
        let inner: Vec<u64> = cfg.chunk_shape.iter().map(|v| v.get()).collect();
        let channels = if has_c { shape[0] } else { 1 };
        if shard.len() != shape.len() || inner.len() != shape.len() {
            return Err(bad("chunk shapes and shape differ in length".into()));
        }
        let space = usize::from(has_c);
        let split = has_c && channels > 1 && inner[0] == 1 && shard[0] == channels;
        if has_c && !split && (shard[0] != channels || inner[0] != channels) {
            return Err(unsupported(format!(
                "chunks split the {channels} channels (chunk shapes {shard:?} / {inner:?})"
            )));
        }
        let b = inner[space];
        let s = shard[space];
        let cube = inner[space..].iter().all(|&v| v == b) && shard[space..].iter().all(|&v| v == s);
        if !cube || !b.is_power_of_two() || !s.is_multiple_of(b) || !(s / b).is_power_of_two() {
            return Err(unsupported(format!(
                "inner chunks {inner:?} in shards {shard:?} (need power-of-two cubes, shards a power-of-two cube of them)"
            )));
        }
        let channels =
            u8::try_from(channels).map_err(|_| unsupported(format!("{channels} channels")))?;
        let block_len = u32::try_from(b).map_err(|_| unsupported(format!("inner chunk {b}")))?;
        let file_len = u32::try_from(s / b).map_err(|_| unsupported(format!("shard {s}")))?;
        // The geometry must be one WKW can hold (4-bit log2 lengths, voxelSize ≤ 255): this
        // also bounds every size computed from it.
        wkw::Header::new(
            voxel_type,
            channels,
            block_len,
            file_len,
            wkw::BlockType::Raw,
        )
        .map_err(|e| unsupported(format!("no WKW geometry for this array: {e}")))?;
        let (codec, order) = parse_inner_codecs(&cfg.codecs, has_c, voxel_type, path)?;
        let order = wkw_order(order, if split { 1 } else { channels }, block_len);
        let index_crc = parse_index(&cfg.index_codecs, path)?;
        let index_at_end = cfg.index_location == ShardingIndexLocation::End;
        let mut xyz = [0u64; 3];
        xyz.copy_from_slice(&shape[space..]);
        Ok(Self {
            voxel_type,
            channels,
            shape: xyz,
            block_len,
            file_len,
            codec,
            order,
            split,
            has_c,
            index_crc,
            index_at_end,
            separator,
        })
    }
}

/// `dims` as a chunk shape (every one positive).
fn non_zero(dims: &[u64]) -> Result<Vec<NonZeroU64>> {
    dims.iter()
        .map(|&d| {
            NonZeroU64::new(d).ok_or_else(|| Error::Internal(format!("chunk shape {dims:?}")))
        })
        .collect()
}

/// The configuration of `meta` (a codec, chunk grid or chunk key encoding of the document at
/// `path`) as zarrs' type `T`; [`Error::Metadata`] when it does not parse.
fn configuration<T: serde::de::DeserializeOwned>(meta: &MetadataV3, path: &Path) -> Result<T> {
    meta.to_typed_configuration()
        .map_err(|e| Error::metadata(path, format!("{} {meta}: {e}", meta.name())))
}

/// Inner codecs: optionally `transpose` (any order), `bytes` (little endian), then `zstd`,
/// `blosc`, `gzip` or nothing. Returns the compressor and the transpose order over `(c, x, y, z)`
/// (the identity without `transpose`: C order).
fn parse_inner_codecs(
    list: &[MetadataV3],
    has_c: bool,
    voxel_type: VoxelType,
    path: &Path,
) -> Result<(ChunkCodec, [usize; 4])> {
    let n = if has_c { 4 } else { 3 };
    let mut it = list.iter().peekable();
    let mut order = [0, 1, 2, 3];
    if let Some(t) = it.next_if(|c| c.name() == "transpose") {
        let given = match configuration::<TransposeCodecConfiguration>(t, path)? {
            TransposeCodecConfiguration::V1(c) => c.order.0,
            other => return Err(Error::unsupported(path, format!("transpose {other}"))),
        };
        if given.len() != n {
            return Err(Error::metadata(
                path,
                format!("transpose {t} (need an order: a permutation of 0..{n})"),
            ));
        }
        // A 3-d array's axes (x, y, z) are (c, x, y, z)'s 1, 2, 3; its one channel goes first.
        let shift = 4 - n;
        for (slot, axis) in order[shift..].iter_mut().zip(given) {
            *slot = axis + shift;
        }
    }
    match it.next() {
        Some(c) if c.name() == "bytes" => {
            let endian = match configuration::<BytesCodecConfiguration>(c, path)? {
                BytesCodecConfiguration::V1(c) => c.endian,
                other => return Err(Error::unsupported(path, format!("bytes {other}"))),
            };
            if voxel_type.size() > 1 && endian != Some(Endianness::Little) {
                return Err(Error::unsupported(
                    path,
                    "big-endian (or unspecified) bytes codec",
                ));
            }
        }
        other => {
            return Err(Error::unsupported(
                path,
                format!(
                    "inner codec {} (need bytes, after an optional transpose)",
                    other.map_or_else(|| "none".to_owned(), ToString::to_string)
                ),
            ));
        }
    }
    let codec = match it.next() {
        None => ChunkCodec::None,
        Some(c) if c.name() == "zstd" => match configuration::<ZstdCodecConfiguration>(c, path)? {
            ZstdCodecConfiguration::V1(z) => ChunkCodec::Zstd {
                level: z.level.into(),
                checksum: z.checksum,
            },
            ZstdCodecConfiguration::Numcodecs(z) => ChunkCodec::Zstd {
                level: z.level.into(),
                checksum: false,
            },
            other => return Err(Error::unsupported(path, format!("zstd {other}"))),
        },
        Some(c) if c.name() == BloscConfig::NAME => ChunkCodec::Blosc(parse_blosc(c, path)?),
        Some(c) if c.name() == "gzip" => match configuration::<GzipCodecConfiguration>(c, path)? {
            GzipCodecConfiguration::V1(g) => ChunkCodec::Gzip {
                level: g.level.as_u32(),
            },
            other => return Err(Error::unsupported(path, format!("gzip {other}"))),
        },
        Some(c) => {
            return Err(Error::unsupported(
                path,
                format!("inner codec {c} (need zstd, blosc, gzip or none)"),
            ));
        }
    };
    if let Some(c) = it.next() {
        return Err(Error::unsupported(
            path,
            format!("inner codec {c} after the compressor"),
        ));
    }
    Ok((codec, order))
}

/// A Zarr v3 `blosc` codec's configuration, read by blosc-chunk's [`BloscConfig`]. Decoding
/// needs none of it (a Blosc chunk's header says how it was made), but it must be valid: a
/// `cname` this crate lacks (`snappy`) is [`Error::Unsupported`], anything else wrong
/// [`Error::Metadata`].
fn parse_blosc(c: &MetadataV3, path: &Path) -> Result<BloscConfig> {
    let cfg = c.configuration().cloned().unwrap_or_default();
    BloscConfig::from_v3(&cfg).map_err(|e| match e {
        blosc_chunk::Error::Unsupported { .. } => {
            Error::unsupported(path, format!("blosc codec {c}: {e}"))
        }
        e => Error::metadata(path, format!("blosc codec {c}: {e}")),
    })
}

/// `None` when an inner chunk in transpose `order` (over `(c, x, y, z)`, slowest first) lays
/// out its bytes as a WKW block does (channels fastest, then x, y, z: the axes longer than 1
/// in descending order); else the order.
fn wkw_order(order: [usize; 4], channels: u8, block_len: u32) -> Option<[usize; 4]> {
    let long = |axis: usize| {
        if axis == 0 {
            channels > 1
        } else {
            block_len > 1
        }
    };
    let axes: Vec<usize> = order.into_iter().filter(|&a| long(a)).collect();
    if axes.windows(2).all(|w| w[0] > w[1]) {
        None
    } else {
        Some(order)
    }
}

/// Index codecs: little-endian `bytes`, optionally `crc32c`; whether the crc32c is there.
fn parse_index(list: &[MetadataV3], path: &Path) -> Result<bool> {
    let little = |c: &MetadataV3| {
        c.name() == "bytes"
            && matches!(
                configuration::<BytesCodecConfiguration>(c, path),
                Ok(BytesCodecConfiguration::V1(BytesCodecConfigurationV1 {
                    endian: Some(Endianness::Little)
                }))
            )
    };
    match list {
        [bytes] if little(bytes) => Ok(false),
        [bytes, crc] if little(bytes) && crc.name() == "crc32c" => Ok(true),
        _ => Err(Error::unsupported(
            path,
            format!(
                "index_codecs [{}] (need little-endian bytes, optionally crc32c)",
                list.iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        )),
    }
}

/// The C-order position in the shard index of the block at block coordinates `(x, y, z)`
/// inside its shard (the channel dimension has one chunk).
pub(crate) fn index_position(file_len: u32, b: [u32; 3]) -> usize {
    let f = file_len as usize;
    (b[0] as usize * f + b[1] as usize) * f + b[2] as usize
}

#[cfg(test)]
mod tests {
    use blosc_chunk::{BloscShuffle, Codec};
    use serde_json::json;

    use super::*;

    fn layout() -> Result<Layout> {
        let h = wkw::Header::new(VoxelType::U16, 3, 16, 4, wkw::BlockType::Lz4)?;
        Ok(Layout::for_wkw(
            &h,
            [100, 64, 1],
            ChunkCodec::Zstd {
                level: 5,
                checksum: true,
            },
        ))
    }

    #[test]
    fn written_metadata_parses_back() -> Result<()> {
        let l = layout()?;
        assert_eq!(l.shape, [128, 64, 64]);
        let doc = l.to_json()?;
        assert_eq!(Layout::parse(&doc, Path::new("zarr.json"))?, l);
        // Layouts read from other writers write back what they read.
        for (order, split, separator) in [
            (Some([0, 1, 2, 3]), false, '.'),
            (Some([0, 1, 3, 2]), true, '/'),
        ] {
            let mut other = l.clone();
            other.order = order;
            other.split = split;
            other.separator = separator;
            other.index_crc = false;
            other.index_at_end = false;
            assert_eq!(
                Layout::parse(&other.to_json()?, Path::new("zarr.json"))?,
                other
            );
        }
        Ok(())
    }

    #[test]
    fn blosc_metadata_parses_back() -> Result<()> {
        let mut l = layout()?;
        l.codec = ChunkCodec::Blosc(
            BloscConfig::new(Codec::Zlib, 3, BloscShuffle::BitShuffle, Some(2), 4096)
                .map_err(|e| Error::Internal(e.to_string()))?,
        );
        assert_eq!(Layout::parse(&l.to_json()?, Path::new("zarr.json"))?, l);
        Ok(())
    }

    #[test]
    fn transpose_orders_and_their_wkw_equivalents() -> Result<()> {
        let l = layout()?;
        let with = |codecs: Value| -> Result<Layout> {
            let mut d = l.to_json()?;
            *d.pointer_mut("/codecs/0/configuration/codecs")
                .ok_or_else(|| Error::Internal("codecs".into()))? = codecs;
            Layout::parse(&d, Path::new("zarr.json"))
        };
        let bytes = json!({"name": "bytes", "configuration": {"endian": "little"}});
        let t = |o: Value| json!({"name": "transpose", "configuration": {"order": o}});
        assert_eq!(with(json!([t(json!([3, 2, 1, 0])), bytes]))?.order, None);
        assert_eq!(with(json!([bytes]))?.order, Some([0, 1, 2, 3]));
        assert_eq!(
            with(json!([t(json!([0, 3, 2, 1])), bytes]))?.order,
            Some([0, 3, 2, 1])
        );
        // One channel: the channel axis may be anywhere.
        assert_eq!(wkw_order([0, 3, 2, 1], 1, 16), None);
        assert_eq!(wkw_order([3, 2, 0, 1], 1, 16), None);
        assert_eq!(wkw_order([3, 1, 2, 0], 1, 16), Some([3, 1, 2, 0]));
        Ok(())
    }

    #[test]
    fn hostile_or_unsupported_metadata_is_an_error_not_a_panic() -> Result<()> {
        let doc = layout()?.to_json()?;
        let edits: Vec<(&str, Value)> = vec![
            (
                "/codecs/0/configuration/chunk_shape",
                json!([3, 16, 16, 15]),
            ),
            (
                "/codecs/0/configuration/chunk_shape",
                json!([3, 1 << 20, 1 << 20, 1 << 20]),
            ),
            (
                "/chunk_grid/configuration/chunk_shape",
                json!([3, 1u64 << 40, 1u64 << 40, 1u64 << 40]),
            ),
            (
                "/chunk_grid/configuration/chunk_shape",
                json!([3, 48, 48, 48]),
            ),
            (
                "/chunk_grid/configuration/chunk_shape",
                json!([1, 64, 64, 64]),
            ),
            ("/shape", json!([3, 1, 2])),
            ("/shape", json!("big")),
            ("/data_type", json!("complex128")),
            ("/fill_value", json!(7)),
            ("/chunk_key_encoding", json!({"name": "v2"})),
            (
                "/codecs/0/configuration/codecs/0/configuration/order",
                json!([0, 1, 1, 3]),
            ),
            (
                "/codecs/0/configuration/codecs/0/configuration/order",
                json!([4, 3, 2, 1]),
            ),
            (
                "/codecs/0/configuration/codecs/1/configuration/endian",
                json!("big"),
            ),
            ("/codecs/0/configuration/codecs/2/name", json!("lzma")),
            (
                "/codecs/0/configuration/index_codecs/0/configuration/endian",
                json!("big"),
            ),
            ("/codecs/0/name", json!("blosc")),
            ("/codecs/0/configuration/chunk_shape", json!([3, 0, 16, 16])),
            (
                "/codecs/0/configuration/codecs/0/configuration/order",
                json!([]),
            ),
            (
                "/codecs/0/configuration/codecs/0/configuration/order",
                json!([1, 0]),
            ),
            (
                "/codecs/0/configuration/codecs/2/configuration/level",
                json!("x"),
            ),
            ("/codecs/0/configuration/codecs/2/configuration", json!([])),
            ("/codecs/0/configuration/index_codecs", json!([])),
            ("/codecs/0/configuration/codecs", json!({})),
            ("/codecs", json!([])),
            ("/dimension_names", json!(["c", "y", "x", "z"])),
            ("/chunk_grid/name", json!("rectangular")),
            (
                "/chunk_key_encoding",
                json!({"name": "default", "configuration": {"separator": "-"}}),
            ),
            ("/data_type", json!({"name": 7})),
            ("/fill_value", json!("NaN")),
            ("/zarr_format", json!(2)),
            ("/node_type", json!("group")),
        ];
        for (pointer, value) in edits {
            let mut d = doc.clone();
            *d.pointer_mut(pointer)
                .ok_or_else(|| Error::Internal(pointer.into()))? = value.clone();
            let r = Layout::parse(&d, Path::new("zarr.json"));
            assert!(
                matches!(r, Err(Error::Metadata { .. } | Error::Unsupported { .. })),
                "{pointer} = {value}: {r:?}"
            );
        }
        Ok(())
    }
}
