//! The 16-byte WKW header (every `.wkw` file, including `header.wkw`) and the geometry it
//! implies. Field layout and meaning: the public specification,
//! <https://github.com/scalableminds/webknossos-wrap#file-header>, and the crate's `FORMAT.md`
//! (signed voxel types 7–10, dataOffset rules, the geometry bounds checked here).

use crate::error::{Error, FormatError, Result};

/// Magic bytes at offset 0.
pub const MAGIC: [u8; 3] = *b"WKW";
/// The only format version.
pub const VERSION: u8 = 1;

/// Largest supported `log2(voxels per file side)` (block + file nibble): keeps every absolute
/// coordinate inside `u32`.
const MAX_FILE_SIDE_LOG2: u32 = 31;
/// Largest supported `log2(blocks per file side)`: 21 bits per axis of a 64-bit Morton key.
const MAX_FILE_LEN_LOG2: u32 = 21;

/// How the blocks of a file are encoded (header offset 5). With the `serde` feature:
/// `"raw"`, `"lz4"`, `"lz4hc"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "lowercase"))]
#[non_exhaustive]
pub enum BlockType {
    /// 1: uncompressed blocks back to back.
    Raw,
    /// 2: LZ4 blocks (`LZ4_compress_default`) behind a jump table.
    Lz4,
    /// 3: LZ4 blocks compressed in high-compression mode (level 9); decoded like [`Self::Lz4`].
    Lz4Hc,
}

impl BlockType {
    /// The on-disk value.
    #[must_use]
    pub fn to_u8(self) -> u8 {
        match self {
            Self::Raw => 1,
            Self::Lz4 => 2,
            Self::Lz4Hc => 3,
        }
    }

    /// Parses the on-disk value.
    ///
    /// # Errors
    /// [`FormatError::InvalidBlockType`] for values other than 1, 2, 3.
    pub fn from_u8(v: u8) -> Result<Self, FormatError> {
        match v {
            1 => Ok(Self::Raw),
            2 => Ok(Self::Lz4),
            3 => Ok(Self::Lz4Hc),
            other => Err(FormatError::InvalidBlockType(other)),
        }
    }

    /// Whether blocks are LZ4-compressed (a jump table follows the header).
    #[must_use]
    pub fn is_compressed(self) -> bool {
        self != Self::Raw
    }
}

/// The type of one voxel value (header offset 6). Values 7–10 (signed integers) are not in the
/// format README but are written and read by the reference implementations. With the `serde`
/// feature: the Rust type's name, `"u8"` … `"f64"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "lowercase"))]
#[non_exhaustive]
pub enum VoxelType {
    /// 1: `u8`.
    U8,
    /// 2: `u16`.
    U16,
    /// 3: `u32`.
    U32,
    /// 4: `u64`.
    U64,
    /// 5: `f32`.
    F32,
    /// 6: `f64`.
    F64,
    /// 7: `i8`.
    I8,
    /// 8: `i16`.
    I16,
    /// 9: `i32`.
    I32,
    /// 10: `i64`.
    I64,
}

impl VoxelType {
    /// All types in on-disk order.
    pub const ALL: [Self; 10] = [
        Self::U8,
        Self::U16,
        Self::U32,
        Self::U64,
        Self::F32,
        Self::F64,
        Self::I8,
        Self::I16,
        Self::I32,
        Self::I64,
    ];

    /// The on-disk value.
    #[must_use]
    pub fn to_u8(self) -> u8 {
        match self {
            Self::U8 => 1,
            Self::U16 => 2,
            Self::U32 => 3,
            Self::U64 => 4,
            Self::F32 => 5,
            Self::F64 => 6,
            Self::I8 => 7,
            Self::I16 => 8,
            Self::I32 => 9,
            Self::I64 => 10,
        }
    }

    /// Parses the on-disk value.
    ///
    /// # Errors
    /// [`FormatError::InvalidVoxelType`] for values outside 1..=10.
    pub fn from_u8(v: u8) -> Result<Self, FormatError> {
        v.checked_sub(1)
            .and_then(|i| Self::ALL.get(usize::from(i)).copied())
            .ok_or(FormatError::InvalidVoxelType(v))
    }

    /// Bytes per value.
    #[must_use]
    pub fn size(self) -> u8 {
        match self {
            Self::U8 | Self::I8 => 1,
            Self::U16 | Self::I16 => 2,
            Self::U32 | Self::I32 | Self::F32 => 4,
            Self::U64 | Self::I64 | Self::F64 => 8,
        }
    }
}

/// A parsed, validated WKW header.
///
/// `header.wkw` carries `data_offset == 0`; data files carry the offset of block 0 (16 for raw
/// files, `16 + 8·N` for compressed ones, N = blocks per file).
///
/// ```
/// use wkw::{BlockType, Header, VoxelType};
/// let h = Header::new(VoxelType::U8, 1, 32, 32, BlockType::Raw)?;
/// assert_eq!(h.to_bytes(), [0x57, 0x4b, 0x57, 1, 0x55, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0]);
/// assert_eq!(Header::parse(&h.to_bytes())?, h);
/// assert_eq!(h.file_len_vx(), 1024);
/// # Ok::<(), wkw::Error>(())
/// ```
///
/// With the `serde` feature a header is the object
/// `{"voxel_type": "u16", "num_channels": 3, "voxel_size": 6, "block_len": 32, "file_len": 32,
/// "block_type": "lz4", "data_offset": 0}` (lengths in voxels and blocks, as [`Header::new`]
/// takes them); on input `voxel_size` may be left out, and the same checks as
/// [`Header::new`] apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize, serde::Deserialize),
    serde(try_from = "HeaderFields", into = "HeaderFields")
)]
pub struct Header {
    block_len_log2: u8,
    file_len_log2: u8,
    block_type: BlockType,
    voxel_type: VoxelType,
    voxel_size: u8,
    data_offset: u64,
}

impl Header {
    /// Encoded size in bytes.
    pub const ENCODED_LEN: usize = 16;

    /// A dataset header (`data_offset` 0) from lengths in voxels/blocks, as the reference's
    /// `wkw.Header(voxel_type, num_channels, block_len=32, file_len=32, block_type)`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if a length is not a power of two or `num_channels` is 0;
    /// [`Error::Header`] if the geometry or voxel size is unsupported.
    pub fn new(
        voxel_type: VoxelType,
        num_channels: u8,
        block_len: u32,
        file_len: u32,
        block_type: BlockType,
    ) -> Result<Self> {
        if !block_len.is_power_of_two() || !file_len.is_power_of_two() {
            return Err(Error::InvalidArgument(format!(
                "block_len {block_len} and file_len {file_len} must be powers of two"
            )));
        }
        let voxel_size = voxel_type
            .size()
            .checked_mul(num_channels)
            .filter(|&s| s > 0)
            .ok_or_else(|| {
                Error::InvalidArgument(format!(
                    "{num_channels} channels of {voxel_type:?} do not fit the 1..=255 byte voxelSize"
                ))
            })?;
        let b = u8::try_from(block_len.trailing_zeros()).unwrap_or(u8::MAX);
        let f = u8::try_from(file_len.trailing_zeros()).unwrap_or(u8::MAX);
        if b > 15 || f > 15 {
            return Err(Error::InvalidArgument(format!(
                "block_len {block_len} / file_len {file_len} do not fit a 4-bit log2"
            )));
        }
        let bytes = Self {
            block_len_log2: b,
            file_len_log2: f,
            block_type,
            voxel_type,
            voxel_size,
            data_offset: 0,
        }
        .to_bytes();
        Ok(Self::parse(&bytes)?)
    }

    /// Parses and validates the first 16 bytes of `bytes`.
    ///
    /// Checks magic, version, block type, voxel type, voxelSize (positive multiple of the type
    /// size) and that the geometry fits the index types (file side < 2³¹ voxels, ≤ 2²¹ blocks per
    /// file side, file size < 2⁶⁴ bytes). dataOffset is checked separately
    /// ([`Header::check_data_offset`]) because `header.wkw` and data files differ.
    ///
    /// # Errors
    /// The [`FormatError`] variant naming the first bad field.
    pub fn parse(bytes: &[u8]) -> Result<Self, FormatError> {
        let h: &[u8; 16] = bytes
            .get(..Self::ENCODED_LEN)
            .and_then(|s| s.try_into().ok())
            .ok_or(FormatError::Truncated {
                what: "header",
                offset: 0,
                needed: 16,
                available: bytes.len() as u64,
            })?;
        let [
            m0,
            m1,
            m2,
            version,
            per_dim,
            block_type,
            voxel_type,
            voxel_size,
            o0,
            o1,
            o2,
            o3,
            o4,
            o5,
            o6,
            o7,
        ] = *h;
        if [m0, m1, m2] != MAGIC {
            return Err(FormatError::BadMagic {
                found: [m0, m1, m2],
            });
        }
        if version != VERSION {
            return Err(FormatError::UnsupportedVersion(version));
        }
        let block_type = BlockType::from_u8(block_type)?;
        let voxel_type = VoxelType::from_u8(voxel_type)?;
        if voxel_size == 0 || voxel_size % voxel_type.size() != 0 {
            return Err(FormatError::InvalidVoxelSize {
                voxel_size,
                type_size: voxel_type.size(),
            });
        }
        let header = Self {
            block_len_log2: per_dim & 0x0f,
            file_len_log2: per_dim >> 4,
            block_type,
            voxel_type,
            voxel_size,
            data_offset: u64::from_le_bytes([o0, o1, o2, o3, o4, o5, o6, o7]),
        };
        header.check_geometry()?;
        Ok(header)
    }

    fn check_geometry(&self) -> Result<(), FormatError> {
        let per_dim_log2 = self.per_dim_log2();
        let geometry = |why| FormatError::Geometry { per_dim_log2, why };
        if u32::from(self.file_len_log2) > MAX_FILE_LEN_LOG2 {
            return Err(geometry("more than 2^21 blocks per file side"));
        }
        if u32::from(self.block_len_log2) + u32::from(self.file_len_log2) > MAX_FILE_SIDE_LOG2 {
            return Err(geometry("file side of 2^31 voxels or more"));
        }
        // Raw file size 16 + N·blockBytes and the jump table 16 + 8·N must fit u64.
        let vox = 3 * (u32::from(self.block_len_log2) + u32::from(self.file_len_log2));
        let ok = 1u64
            .checked_shl(vox)
            .and_then(|v| v.checked_mul(u64::from(self.voxel_size)))
            .and_then(|v| v.checked_add(16))
            .is_some();
        let jump_table_ok = self
            .blocks_per_file()
            .checked_mul(8)
            .and_then(|v| v.checked_add(16))
            .is_some();
        if !ok || !jump_table_ok {
            return Err(geometry("file size overflows 64 bits"));
        }
        Ok(())
    }

    /// The 16 encoded bytes.
    #[must_use]
    pub fn to_bytes(&self) -> [u8; 16] {
        let mut out = [0u8; 16];
        let o = self.data_offset.to_le_bytes();
        let head = [
            MAGIC[0],
            MAGIC[1],
            MAGIC[2],
            VERSION,
            self.per_dim_log2(),
            self.block_type.to_u8(),
            self.voxel_type.to_u8(),
            self.voxel_size,
        ];
        for (dst, src) in out.iter_mut().zip(head.iter().chain(o.iter())) {
            *dst = *src;
        }
        out
    }

    /// The same header with another data offset.
    #[must_use]
    pub fn with_data_offset(mut self, data_offset: u64) -> Self {
        self.data_offset = data_offset;
        self
    }

    /// The same header with another block type (data offset reset to 0).
    #[must_use]
    pub fn with_block_type(mut self, block_type: BlockType) -> Self {
        self.block_type = block_type;
        self.data_offset = 0;
        self
    }

    /// The header a new data file of this dataset gets: dataOffset 16 (raw) or `16 + 8·N`.
    #[must_use]
    pub fn for_data_file(self) -> Self {
        let off = self.expected_data_offset();
        self.with_data_offset(off)
    }

    /// `16` for raw files, `16 + 8·N` for compressed files.
    #[must_use]
    pub fn expected_data_offset(&self) -> u64 {
        if self.block_type.is_compressed() {
            // check_geometry guarantees 16 + 8·N fits u64.
            self.blocks_per_file().saturating_mul(8).saturating_add(16)
        } else {
            16
        }
    }

    /// Checks dataOffset of a data file: raw files need `≥ 16` and room for all blocks in
    /// `u64`, compressed files exactly `16 + 8·N`.
    ///
    /// # Errors
    /// [`FormatError::DataOffset`].
    pub fn check_data_offset(&self) -> Result<(), FormatError> {
        let found = self.data_offset;
        if self.block_type.is_compressed() {
            let expected = self.expected_data_offset();
            if found != expected {
                return Err(FormatError::DataOffset {
                    found,
                    why: format!(
                        "compressed files need 16 + 8*{} = {expected}",
                        self.blocks_per_file()
                    ),
                });
            }
        } else if found < 16 {
            return Err(FormatError::DataOffset {
                found,
                why: "raw blocks cannot start inside the 16-byte header".into(),
            });
        } else if self.raw_file_len().is_none() {
            return Err(FormatError::DataOffset {
                found,
                why: "the blocks would end beyond 2^64".into(),
            });
        }
        Ok(())
    }

    /// The perDimLog2 byte.
    #[must_use]
    pub fn per_dim_log2(&self) -> u8 {
        (self.file_len_log2 << 4) | (self.block_len_log2 & 0x0f)
    }
    /// log2 of the block side in voxels.
    #[must_use]
    pub fn block_len_log2(&self) -> u8 {
        self.block_len_log2
    }
    /// log2 of the file side in blocks.
    #[must_use]
    pub fn file_len_log2(&self) -> u8 {
        self.file_len_log2
    }
    /// Block side in voxels.
    #[must_use]
    pub fn block_len(&self) -> u32 {
        1 << self.block_len_log2
    }
    /// File side in blocks.
    #[must_use]
    pub fn file_len(&self) -> u32 {
        1 << self.file_len_log2
    }
    /// log2 of the file side in voxels.
    #[must_use]
    pub fn file_len_vx_log2(&self) -> u32 {
        u32::from(self.block_len_log2) + u32::from(self.file_len_log2)
    }
    /// File side in voxels.
    #[must_use]
    pub fn file_len_vx(&self) -> u32 {
        1 << self.file_len_vx_log2()
    }
    /// Blocks per file (`file_len³`).
    #[must_use]
    pub fn blocks_per_file(&self) -> u64 {
        1 << (3 * u32::from(self.file_len_log2))
    }
    /// Voxels per block (`block_len³`).
    #[must_use]
    pub fn block_voxels(&self) -> u64 {
        1 << (3 * u32::from(self.block_len_log2))
    }
    /// Bytes of one raw block.
    #[must_use]
    pub fn block_bytes(&self) -> u64 {
        // Bounded by check_geometry.
        self.block_voxels() * u64::from(self.voxel_size)
    }
    /// Length of a complete raw file (`dataOffset + N·blockBytes`), `None` on overflow.
    #[must_use]
    pub fn raw_file_len(&self) -> Option<u64> {
        self.blocks_per_file()
            .checked_mul(self.block_bytes())
            .and_then(|v| v.checked_add(self.data_offset.max(16)))
    }
    /// Block encoding.
    #[must_use]
    pub fn block_type(&self) -> BlockType {
        self.block_type
    }
    /// Voxel value type.
    #[must_use]
    pub fn voxel_type(&self) -> VoxelType {
        self.voxel_type
    }
    /// Bytes per voxel (all channels).
    #[must_use]
    pub fn voxel_size(&self) -> u8 {
        self.voxel_size
    }
    /// Channels per voxel.
    #[must_use]
    pub fn num_channels(&self) -> u8 {
        self.voxel_size / self.voxel_type.size()
    }
    /// Absolute offset of block 0 (0 in `header.wkw`).
    #[must_use]
    pub fn data_offset(&self) -> u64 {
        self.data_offset
    }

    /// Compares everything except dataOffset with the dataset header; with `allow_block_type`
    /// the block type may differ.
    pub(crate) fn check_matches(
        &self,
        dataset: &Self,
        allow_block_type: bool,
    ) -> Result<(), FormatError> {
        let pairs: [(&'static str, u64, u64); 4] = [
            (
                "perDimLog2",
                u64::from(self.per_dim_log2()),
                u64::from(dataset.per_dim_log2()),
            ),
            (
                "voxelType",
                u64::from(self.voxel_type.to_u8()),
                u64::from(dataset.voxel_type.to_u8()),
            ),
            (
                "voxelSize",
                u64::from(self.voxel_size),
                u64::from(dataset.voxel_size),
            ),
            (
                "blockType",
                u64::from(self.block_type.to_u8()),
                if allow_block_type {
                    u64::from(self.block_type.to_u8())
                } else {
                    u64::from(dataset.block_type.to_u8())
                },
            ),
        ];
        for (field, file, dataset) in pairs {
            if file != dataset {
                return Err(FormatError::HeaderMismatch {
                    field,
                    file,
                    dataset,
                });
            }
        }
        Ok(())
    }
}

/// The serde form of a [`Header`].
#[cfg(feature = "serde")]
#[derive(serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct HeaderFields {
    voxel_type: VoxelType,
    num_channels: u8,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    voxel_size: Option<u8>,
    block_len: u32,
    file_len: u32,
    block_type: BlockType,
    data_offset: u64,
}

#[cfg(feature = "serde")]
impl From<Header> for HeaderFields {
    fn from(h: Header) -> Self {
        Self {
            voxel_type: h.voxel_type(),
            num_channels: h.num_channels(),
            voxel_size: Some(h.voxel_size()),
            block_len: h.block_len(),
            file_len: h.file_len(),
            block_type: h.block_type(),
            data_offset: h.data_offset(),
        }
    }
}

#[cfg(feature = "serde")]
impl TryFrom<HeaderFields> for Header {
    type Error = Error;

    fn try_from(f: HeaderFields) -> Result<Self> {
        let h = Self::new(
            f.voxel_type,
            f.num_channels,
            f.block_len,
            f.file_len,
            f.block_type,
        )?;
        if let Some(vs) = f.voxel_size
            && vs != h.voxel_size()
        {
            return Err(Error::InvalidArgument(format!(
                "voxel_size {vs} is not {} channel(s) of {:?}",
                f.num_channels, f.voxel_type
            )));
        }
        Ok(h.with_data_offset(f.data_offset))
    }
}
