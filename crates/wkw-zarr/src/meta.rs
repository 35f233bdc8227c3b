//! The `zarr.json` of a converted array: built from a WKW geometry, and parsed (for the way
//! back) into the same description, refusing layouts whose inner chunks are not WKW blocks.

use std::path::Path;

use serde_json::{Value, json};
use wkw::VoxelType;

use crate::codec::ChunkCodec;
use crate::error::{Error, Result};
use crate::options::{BloscCname, BloscShuffle};

/// Name of a Zarr v3 node's metadata document.
pub const ZARR_JSON: &str = "zarr.json";

std::thread_local! {
    /// Per-thread decoded inner chunk before it is re-laid in WKW order.
    static SCRATCH: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
    /// Per-thread decoded one-channel inner chunk, and the same re-laid.
    static PART: std::cell::RefCell<(Vec<u8>, Vec<u8>)> =
        const { std::cell::RefCell::new((Vec::new(), Vec::new())) };
}

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

    /// Decodes the stored inner chunk `stored` into `out` (one WKW block's bytes, which it
    /// must fill exactly), re-laying the voxels when the chunk is not in WKW order.
    ///
    /// # Errors
    /// What is wrong with the chunk.
    pub(crate) fn decode_chunk(&self, stored: &[u8], out: &mut [u8]) -> Result<(), String> {
        let Some(order) = self.order else {
            return self.codec.decode(stored, out);
        };
        SCRATCH.with(|cell| {
            let mut buf = cell.borrow_mut();
            buf.resize(out.len(), 0);
            self.codec.decode(stored, &mut buf)?;
            relay(
                &buf,
                out,
                order,
                usize::from(self.channels),
                self.block_len as usize,
                self.voxel_type.size() as usize,
            );
            Ok(())
        })
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

    /// Decodes the stored inner chunks of one block (`parts`, one per channel when they
    /// split the channels; absent ones are the fill value 0) into `out`, the WKW block.
    ///
    /// # Errors
    /// What is wrong with a chunk.
    pub(crate) fn decode_parts(
        &self,
        parts: &[Option<Vec<u8>>],
        out: &mut [u8],
    ) -> Result<(), String> {
        if !self.split {
            return match parts {
                [Some(stored)] => self.decode_chunk(stored, out),
                [None] => {
                    out.fill(0);
                    Ok(())
                }
                _ => Err(format!("{} chunks for one block", parts.len())),
            };
        }
        let c = usize::from(self.channels);
        if parts.len() != c {
            return Err(format!(
                "{} chunks for a block of {c} channels",
                parts.len()
            ));
        }
        let size = self.voxel_type.size() as usize;
        let one = out.len() / c;
        let b = self.block_len as usize;
        PART.with(|cell| {
            let mut cell = cell.borrow_mut();
            let (buf, laid) = &mut *cell;
            buf.resize(one, 0);
            laid.resize(one, 0);
            for (ch, part) in parts.iter().enumerate() {
                let Some(stored) = part else {
                    out.chunks_exact_mut(size)
                        .skip(ch)
                        .step_by(c)
                        .for_each(|v| v.fill(0));
                    continue;
                };
                self.codec
                    .decode(stored, buf)
                    .map_err(|e| format!("channel {ch}: {e}"))?;
                let voxels: &[u8] = match self.order {
                    Some(order) => {
                        relay(buf, laid, order, 1, b, size);
                        laid
                    }
                    None => buf,
                };
                for (dst, src) in out
                    .chunks_exact_mut(size)
                    .skip(ch)
                    .step_by(c)
                    .zip(voxels.chunks_exact(size))
                {
                    dst.copy_from_slice(src);
                }
            }
            Ok(())
        })
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

    /// The `zarr.json` document, exactly as webknossos-libs 4.3.3 (tensorstore) writes it.
    pub(crate) fn to_json(&self) -> Value {
        let c = u64::from(self.channels);
        let b = u64::from(self.block_len);
        let s = self.shard_len();
        let bytes = if self.voxel_type.size() == 1 {
            json!({"name": "bytes"})
        } else {
            json!({"name": "bytes", "configuration": {"endian": "little"}})
        };
        let mut inner = vec![
            json!({"name": "transpose", "configuration": {"order": [3, 2, 1, 0]}}),
            bytes,
        ];
        match self.codec {
            ChunkCodec::None => {}
            ChunkCodec::Zstd { level, checksum } => inner.push(
                json!({"name": "zstd", "configuration": {"level": level, "checksum": checksum}}),
            ),
            ChunkCodec::Blosc {
                cname,
                clevel,
                shuffle,
                typesize,
                blocksize,
            } => inner.push(json!({"name": "blosc", "configuration": {
                "typesize": typesize, "cname": cname.name(), "clevel": clevel,
                "shuffle": shuffle.name(), "blocksize": blocksize}})),
            ChunkCodec::Gzip { level } => {
                inner.push(json!({"name": "gzip", "configuration": {"level": level}}));
            }
        }
        let [x, y, z] = self.shape;
        // tensorstore writes the fill value of float types as a float.
        let fill = if matches!(self.voxel_type, VoxelType::F32 | VoxelType::F64) {
            json!(0.0)
        } else {
            json!(0)
        };
        json!({
            "zarr_format": 3,
            "node_type": "array",
            "shape": [c, x, y, z],
            "data_type": data_type_name(self.voxel_type),
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [c, s, s, s]}},
            "chunk_key_encoding": {"name": "default"},
            "fill_value": fill,
            "codecs": [{
                "name": "sharding_indexed",
                "configuration": {
                    "chunk_shape": [c, b, b, b],
                    "codecs": inner,
                    "index_codecs": [
                        {"name": "bytes", "configuration": {"endian": "little"}},
                        {"name": "crc32c"}
                    ]
                }
            }],
            "dimension_names": ["c", "x", "y", "z"]
        })
    }

    /// Parses an array's `zarr.json` (read from `path`), accepting any sharded array whose
    /// inner chunks are WKW blocks (see the crate's FORMAT.md).
    ///
    /// # Errors
    /// [`Error::Metadata`] for malformed metadata, [`Error::Unsupported`] for a valid array
    /// this crate does not convert.
    pub(crate) fn parse(doc: &Value, path: &Path) -> Result<Self> {
        let bad = |what: &str| Error::metadata(path, what.to_owned());
        let unsupported = |what: String| Error::unsupported(path, what);
        if doc.get("zarr_format") != Some(&json!(3)) {
            return Err(bad("not a Zarr v3 document (zarr_format is not 3)"));
        }
        if doc.get("node_type").and_then(Value::as_str) != Some("array") {
            return Err(bad("not an array (node_type is not \"array\")"));
        }
        let dims = |v: Option<&Value>, what: &str| -> Result<Vec<u64>> {
            v.and_then(Value::as_array)
                .and_then(|a| a.iter().map(Value::as_u64).collect::<Option<Vec<_>>>())
                .ok_or_else(|| bad(&format!("{what} is not a list of integers")))
        };
        let shape = dims(doc.get("shape"), "shape")?;
        let has_c = match shape.len() {
            4 => true,
            3 => false,
            n => return Err(unsupported(format!("{n}-d array (need (c,) x, y, z)"))),
        };
        if let Some(names) = doc.get("dimension_names").filter(|v| !v.is_null()) {
            let want: &[&str] = if has_c {
                &["c", "x", "y", "z"]
            } else {
                &["x", "y", "z"]
            };
            let ok = names.as_array().is_some_and(|n| {
                n.len() == want.len() && n.iter().zip(want).all(|(a, b)| a.is_null() || a == b)
            });
            if !ok {
                return Err(unsupported(format!(
                    "dimension_names {names} (need {want:?})"
                )));
            }
        }
        let dt = doc
            .get("data_type")
            .and_then(Value::as_str)
            .ok_or_else(|| bad("data_type is not a string"))?;
        let voxel_type = voxel_type_of(dt).ok_or_else(|| unsupported(format!("data_type {dt}")))?;
        let fill_zero = match doc.get("fill_value") {
            Some(Value::Number(n)) => n.as_f64() == Some(0.0),
            Some(Value::String(s)) => s == "0" || s == "0.0",
            Some(Value::Bool(b)) => !b,
            _ => false,
        };
        if !fill_zero {
            return Err(unsupported("fill_value other than 0".into()));
        }
        let separator = match doc.get("chunk_key_encoding") {
            // A name alone stands for the codec with its default configuration (Zarr v3
            // "extension definition" short form, as zarrs writes it).
            Some(Value::String(name)) if name == "default" => '/',
            Some(e) if e.get("name").and_then(Value::as_str) == Some("default") => {
                match e
                    .pointer("/configuration/separator")
                    .and_then(Value::as_str)
                {
                    None | Some("/") => '/',
                    Some(".") => '.',
                    Some(s) => return Err(bad(&format!("chunk key separator {s:?}"))),
                }
            }
            other => {
                return Err(unsupported(format!(
                    "chunk_key_encoding {} (need \"default\")",
                    other.unwrap_or(&Value::Null)
                )));
            }
        };
        if doc.pointer("/chunk_grid/name").and_then(Value::as_str) != Some("regular") {
            return Err(unsupported("chunk grid other than \"regular\"".into()));
        }
        let shard = dims(
            doc.pointer("/chunk_grid/configuration/chunk_shape"),
            "chunk_shape",
        )?;
        let codecs = doc
            .get("codecs")
            .and_then(Value::as_array)
            .ok_or_else(|| bad("codecs is not a list"))?;
        let [sharding] = &codecs[..] else {
            return Err(unsupported(
                "codecs other than exactly one sharding_indexed (an unsharded array)".into(),
            ));
        };
        if sharding.get("name").and_then(Value::as_str) != Some("sharding_indexed") {
            return Err(unsupported(format!(
                "codec {sharding} (need sharding_indexed)"
            )));
        }
        let cfg = sharding
            .get("configuration")
            .ok_or_else(|| bad("sharding_indexed has no configuration"))?;
        let inner = dims(cfg.get("chunk_shape"), "sharding_indexed chunk_shape")?;
        let channels = if has_c { shape[0] } else { 1 };
        if shard.len() != shape.len() || inner.len() != shape.len() {
            return Err(bad("chunk shapes and shape differ in length"));
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
        if !cube || !b.is_power_of_two() || s % b != 0 || !(s / b).is_power_of_two() {
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
        let (codec, order) = parse_inner_codecs(cfg.get("codecs"), has_c, voxel_type, path)?;
        let order = wkw_order(order, if split { 1 } else { channels }, block_len);
        let (index_crc, index_at_end) = parse_index(cfg, path)?;
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

/// Inner codecs: optionally `transpose` (any order), `bytes` (little endian), then `zstd`,
/// `blosc`, `gzip` or nothing. Returns the compressor and the transpose order over `(c, x, y, z)`
/// (the identity without `transpose`: C order).
fn parse_inner_codecs(
    codecs: Option<&Value>,
    has_c: bool,
    voxel_type: VoxelType,
    path: &Path,
) -> Result<(ChunkCodec, [usize; 4])> {
    let list = codecs
        .and_then(Value::as_array)
        .ok_or_else(|| Error::metadata(path, "sharding_indexed codecs is not a list"))?;
    let name = |c: &Value| {
        c.get("name")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned()
    };
    let n = if has_c { 4 } else { 3 };
    let mut it = list.iter().peekable();
    let mut order = [0, 1, 2, 3];
    if let Some(t) = it.next_if(|c| name(c) == "transpose") {
        let given: Option<Vec<usize>> = t
            .pointer("/configuration/order")
            .and_then(Value::as_array)
            .and_then(|o| {
                o.iter()
                    .map(|v| v.as_u64().and_then(|v| usize::try_from(v).ok()))
                    .collect()
            });
        let valid = given.as_ref().is_some_and(|g| {
            let mut sorted = g.clone();
            sorted.sort_unstable();
            sorted.into_iter().eq(0..n)
        });
        let Some(given) = given.filter(|_| valid) else {
            return Err(Error::metadata(
                path,
                format!("transpose {t} (need an order: a permutation of 0..{n})"),
            ));
        };
        // A 3-d array's axes (x, y, z) are (c, x, y, z)'s 1, 2, 3; its one channel goes first.
        let shift = 4 - n;
        for (slot, axis) in order[shift..].iter_mut().zip(given) {
            *slot = axis + shift;
        }
    }
    match it.next() {
        Some(c) if name(c) == "bytes" => {
            let endian = c.pointer("/configuration/endian").and_then(Value::as_str);
            if voxel_type.size() > 1 && endian != Some("little") {
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
                    other.unwrap_or(&Value::Null)
                ),
            ));
        }
    }
    let codec = match it.next() {
        None => ChunkCodec::None,
        Some(c) if name(c) == "zstd" => ChunkCodec::Zstd {
            level: c
                .pointer("/configuration/level")
                .and_then(Value::as_i64)
                .and_then(|l| i32::try_from(l).ok())
                .unwrap_or(0),
            checksum: c
                .pointer("/configuration/checksum")
                .and_then(Value::as_bool)
                .unwrap_or(false),
        },
        Some(c) if name(c) == "blosc" => parse_blosc(c, voxel_type, path)?,
        Some(c) if name(c) == "gzip" => ChunkCodec::Gzip {
            level: c
                .pointer("/configuration/level")
                .and_then(Value::as_u64)
                .and_then(|l| u32::try_from(l).ok())
                .filter(|&l| l <= 9)
                .ok_or_else(|| {
                    Error::metadata(path, format!("gzip codec {c}: level is not 0–9"))
                })?,
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

/// A Zarr v3 `blosc` codec's configuration (`cname`, `clevel`, `shuffle`, `typesize`,
/// `blocksize`). Decoding needs none of it (a Blosc chunk's header says how it was made),
/// but it must be valid.
fn parse_blosc(c: &Value, voxel_type: VoxelType, path: &Path) -> Result<ChunkCodec> {
    let bad = |what: String| Error::metadata(path, format!("blosc codec {c}: {what}"));
    let cfg = c.get("configuration");
    let field = |key: &str| cfg.and_then(|v| v.get(key));
    let cname = field("cname").and_then(Value::as_str).unwrap_or("");
    let cname = BloscCname::from_name(cname).ok_or_else(|| {
        Error::unsupported(
            path,
            format!("blosc cname {cname:?} (need blosclz, lz4, lz4hc, zlib or zstd)"),
        )
    })?;
    let clevel = field("clevel")
        .and_then(Value::as_u64)
        .and_then(|v| u8::try_from(v).ok())
        .filter(|&v| v <= 9)
        .ok_or_else(|| bad("clevel is not 0–9".into()))?;
    let shuffle = field("shuffle")
        .and_then(Value::as_str)
        .and_then(BloscShuffle::from_name)
        .ok_or_else(|| bad("shuffle is not noshuffle, shuffle or bitshuffle".into()))?;
    let typesize = match field("typesize") {
        None | Some(Value::Null) if shuffle == BloscShuffle::NoShuffle => voxel_type.size(),
        v => v
            .and_then(Value::as_u64)
            .and_then(|v| u8::try_from(v).ok())
            .filter(|&v| v >= 1)
            .ok_or_else(|| bad("typesize is not 1–255".into()))?,
    };
    let blocksize = match field("blocksize") {
        None | Some(Value::Null) => 0,
        v => v
            .and_then(Value::as_u64)
            .and_then(|v| usize::try_from(v).ok())
            .ok_or_else(|| bad("blocksize is not a non-negative integer".into()))?,
    };
    Ok(ChunkCodec::Blosc {
        cname,
        clevel,
        shuffle,
        typesize,
        blocksize,
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

/// Re-lays a decoded inner chunk `src` stored in transpose `order` (see
/// [`Layout::order`]) into `dst` in WKW block order, one voxel of `size` bytes at a time.
pub(crate) fn relay(
    src: &[u8],
    dst: &mut [u8],
    order: [usize; 4],
    channels: usize,
    block_len: usize,
    size: usize,
) {
    let dims = [channels, block_len, block_len, block_len];
    // The stride (in voxels) of each axis in `src`: the product of the later axes' lengths.
    let mut stride = [0usize; 4];
    let mut s = 1;
    for &axis in order.iter().rev() {
        stride[axis] = s;
        s *= dims[axis];
    }
    let mut out = dst.chunks_exact_mut(size);
    for z in 0..block_len {
        for y in 0..block_len {
            for x in 0..block_len {
                let base = x * stride[1] + y * stride[2] + z * stride[3];
                for c in 0..channels {
                    let at = (base + c * stride[0]) * size;
                    if let (Some(o), Some(v)) = (out.next(), src.get(at..at + size)) {
                        o.copy_from_slice(v);
                    }
                }
            }
        }
    }
}

/// Index codecs (`bytes` little endian, optionally `crc32c`) and location.
fn parse_index(cfg: &Value, path: &Path) -> Result<(bool, bool)> {
    let at_end = match cfg.get("index_location").and_then(Value::as_str) {
        None | Some("end") => true,
        Some("start") => false,
        Some(other) => {
            return Err(Error::metadata(path, format!("index_location {other:?}")));
        }
    };
    let list = cfg
        .get("index_codecs")
        .and_then(Value::as_array)
        .ok_or_else(|| Error::metadata(path, "index_codecs is not a list"))?;
    let names: Vec<(&str, Option<&str>)> = list
        .iter()
        .map(|c| {
            (
                c.get("name").and_then(Value::as_str).unwrap_or(""),
                c.pointer("/configuration/endian").and_then(Value::as_str),
            )
        })
        .collect();
    match &names[..] {
        [("bytes", Some("little"))] => Ok((false, at_end)),
        [("bytes", Some("little")), ("crc32c", _)] => Ok((true, at_end)),
        _ => Err(Error::unsupported(
            path,
            format!(
                "index_codecs {} (need little-endian bytes, optionally crc32c)",
                Value::Array(list.clone())
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
        let doc = l.to_json();
        assert_eq!(Layout::parse(&doc, Path::new("zarr.json"))?, l);
        Ok(())
    }

    #[test]
    fn blosc_metadata_parses_back() -> Result<()> {
        let mut l = layout()?;
        l.codec = ChunkCodec::Blosc {
            cname: BloscCname::Zlib,
            clevel: 3,
            shuffle: BloscShuffle::BitShuffle,
            typesize: 2,
            blocksize: 4096,
        };
        assert_eq!(Layout::parse(&l.to_json(), Path::new("zarr.json"))?, l);
        Ok(())
    }

    #[test]
    fn transpose_orders_and_their_wkw_equivalents() -> Result<()> {
        let l = layout()?;
        let with = |codecs: Value| -> Result<Layout> {
            let mut d = l.to_json();
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
    fn channel_split_chunks_assemble_a_block_absent_ones_zero() -> Result<()> {
        // 3 channels of u16, 16³ blocks; inner chunks (1, 16, 16, 16) in C order, no codec.
        let mut l = layout()?;
        l.split = true;
        l.order = Some([0, 1, 2, 3]);
        l.codec = ChunkCodec::None;
        let b = 16usize;
        let value = |ch: usize, x: usize, y: usize, z: usize| {
            u16::try_from(ch * 4096 + x * 256 + y * 16 + z).unwrap_or(0) + 1
        };
        let chunk = |ch: usize| -> Vec<u8> {
            let mut v = Vec::new();
            for x in 0..b {
                for y in 0..b {
                    for z in 0..b {
                        v.extend_from_slice(&value(ch, x, y, z).to_le_bytes());
                    }
                }
            }
            v
        };
        let parts = [Some(chunk(0)), None, Some(chunk(2))];
        let mut out = vec![0xaau8; 3 * 2 * b * b * b];
        l.decode_parts(&parts, &mut out).map_err(Error::Internal)?;
        let mut want = Vec::new();
        for z in 0..b {
            for y in 0..b {
                for x in 0..b {
                    for ch in 0..3 {
                        let v = if ch == 1 { 0 } else { value(ch, x, y, z) };
                        want.extend_from_slice(&v.to_le_bytes());
                    }
                }
            }
        }
        assert_eq!(out, want);
        assert_eq!(
            l.positions([1, 2, 3]).collect::<Vec<_>>(),
            [27, 64 + 27, 128 + 27]
        );
        assert!(l.decode_parts(&parts[..1], &mut out).is_err());
        assert!(
            l.decode_parts(&[Some(vec![1, 2, 3]), None, None], &mut out)
                .is_err()
        );
        Ok(())
    }

    #[test]
    fn relay_puts_c_ordered_voxels_in_wkw_order() {
        // 2 channels, side 2, 2-byte voxels; C order: c slowest, then x, y, z fastest.
        let (c, b, size) = (2usize, 2usize, 2usize);
        let mut src = Vec::new();
        for ch in 0..c {
            for x in 0..b {
                for y in 0..b {
                    for z in 0..b {
                        let v = u16::try_from(ch * 1000 + x * 100 + y * 10 + z).unwrap_or(u16::MAX);
                        src.extend_from_slice(&v.to_le_bytes());
                    }
                }
            }
        }
        let mut dst = vec![0u8; src.len()];
        relay(&src, &mut dst, [0, 1, 2, 3], c, b, size);
        let mut want = Vec::new();
        for z in 0..b {
            for y in 0..b {
                for x in 0..b {
                    for ch in 0..c {
                        let v = u16::try_from(ch * 1000 + x * 100 + y * 10 + z).unwrap_or(u16::MAX);
                        want.extend_from_slice(&v.to_le_bytes());
                    }
                }
            }
        }
        assert_eq!(dst, want);
    }

    #[test]
    fn hostile_or_unsupported_metadata_is_an_error_not_a_panic() -> Result<()> {
        let doc = layout()?.to_json();
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
