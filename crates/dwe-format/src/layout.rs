//! The two container layouts (block and stream) and structural layout detection: a file is
//! parsed both ways and must pass exactly one (see [`crate::file_format`]).

use crate::bytes::{add, mul, u32_at, us};
use crate::error::{Error, Result};
use crate::header::Header;
use crate::limits::Limits;
use crate::model::{EntropyModel, TABLE_BYTES};

/// Which container layout a file uses. Both share magic and version 1.0.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
#[non_exhaustive]
pub enum Layout {
    /// The project spec v1.0 "block container": `meta_size`, `timestep_addrs`, per-time-step
    /// meta blocks with `chunk_addrs`, one independent ANS stream per chunk of `chunk_size` words.
    Block,
    /// The later upstream "stream container" (what real files use): models back to back, a
    /// jump table of (offset, state) rows every `jump_interval` words, one global ANS stream.
    Stream,
}

/// Where a block-layout file keeps its chunk tables.
#[derive(Debug, Clone)]
pub(crate) struct BlockIndex {
    /// `chunk_size` C in words.
    pub(crate) chunk_size: usize,
    /// V / C.
    pub(crate) chunks_per_step: usize,
    /// Byte offset of each time step's `chunk_addrs` table.
    pub(crate) chunk_tables: Vec<usize>,
}

/// Where a stream-layout file keeps its jump table and compressed words.
#[derive(Debug, Clone)]
pub(crate) struct StreamIndex {
    /// `jump_interval` J in words.
    pub(crate) interval: usize,
    /// Jump points per time step, P = ceil(V / J).
    pub(crate) points: usize,
    /// Byte offset of the jump table.
    pub(crate) jump_table: usize,
    /// Byte offset of the compressed section.
    pub(crate) section: usize,
    /// u16 words in the compressed section, including a possible pad word.
    pub(crate) section_words: usize,
}

/// Layout-specific index.
#[derive(Debug, Clone)]
pub(crate) enum Index {
    Block(BlockIndex),
    Stream(StreamIndex),
}

/// A parsed file structure (no decoder tables yet).
#[derive(Debug, Clone)]
pub(crate) struct Parsed {
    pub(crate) header: Header,
    pub(crate) models: Vec<EntropyModel>,
    pub(crate) index: Index,
}

/// Checks shared by both layouts: header, size, limits.
fn common(data: &[u8], limits: &Limits) -> Result<Header> {
    Limits::check("input bytes", data.len() as u64, limits.max_file_bytes)?;
    let header = Header::parse(data)?;
    if header.file_len() != data.len() as u64 {
        return Err(Error::FileSize {
            declared: header.file_size,
            actual: data.len() as u64,
        });
    }
    header.check_common()?;
    let vk = u64::from(header.vocab_size) * u64::from(header.embedding_dim);
    Limits::check("values per time step (V·K)", vk, limits.max_timestep_values)?;
    Limits::check(
        "decoder tables (24 KiB per time step)",
        u64::from(header.num_timesteps).saturating_mul(TABLE_BYTES),
        limits.max_table_bytes,
    )?;
    Ok(header)
}

/// Parses `data` as the given layout, or detects it when `layout` is `None`.
pub(crate) fn parse(data: &[u8], layout: Option<Layout>, limits: &Limits) -> Result<Parsed> {
    match layout {
        Some(Layout::Stream) => parse_stream(data, limits),
        Some(Layout::Block) => parse_block(data, limits),
        None => {
            // Header-level problems are reported as such, not as "neither layout".
            common(data, limits)?;
            let stream = parse_stream(data, limits);
            let block = parse_block(data, limits);
            match (stream, block) {
                (Ok(_), Ok(_)) => Err(Error::AmbiguousLayout),
                (Ok(p), Err(_)) | (Err(_), Ok(p)) => Ok(p),
                (Err(s), Err(b)) => Err(Error::UnknownLayout {
                    stream: Box::new(s),
                    block: Box::new(b),
                }),
            }
        }
    }
}

fn out_of_range(what: &'static str, index: usize, value: u64, bound: String) -> Error {
    Error::OutOfRange {
        what,
        index: index as u64,
        value,
        bound,
    }
}

/// Stream layout: models back to back, jump table, one global ANS stream.
pub(crate) fn parse_stream(data: &[u8], limits: &Limits) -> Result<Parsed> {
    let header = common(data, limits)?;
    let jta = header.section_address;
    if jta <= Header::WORDS || jta > header.file_size {
        return Err(Error::InvalidHeader {
            field: "jump_table_address",
            value: u64::from(jta),
            reason: "must be > 10 and <= file_size",
        });
    }
    let t_count = header.num_timesteps;
    let mut models = Vec::new();
    let mut offset = Header::ENCODED_LEN;
    let end = 4 * us(jta);
    for t in 0..t_count {
        if offset >= end {
            return Err(Error::InvalidModel {
                timestep: t,
                offset: offset as u64,
                reason: "entropy-model section ends before all models",
            });
        }
        let (model, len) = EntropyModel::parse(data, offset, t)?;
        offset += len;
        models.push(model);
    }
    // The section ends exactly at the jump table, or one u16 (pad) before it.
    if offset != end && offset + 2 != end {
        return Err(out_of_range(
            "entropy-model section end (byte offset)",
            0,
            offset as u64,
            format!("{end} or {} (jump_table_address)", end.saturating_sub(2)),
        ));
    }
    let interval = us(header.interval);
    let points = us(header.vocab_size).div_ceil(interval);
    let rows = mul(us(t_count), points, "jump table rows")?;
    let section_addr = add(
        us(jta),
        mul(rows, 2, "jump table size")?,
        "compressed section",
    )?;
    if section_addr > us(header.file_size) {
        return Err(out_of_range(
            "compressed section address (jump_table_address + 2·T·ceil(V/J))",
            0,
            section_addr as u64,
            format!("<= file_size {}", header.file_size),
        ));
    }
    let section_words = 2 * (us(header.file_size) - section_addr);
    let jump_table = 4 * us(jta);
    for row in 0..rows {
        let off = u32_at(data, jump_table + 8 * row, "jump table")?;
        if us(off) > section_words {
            return Err(out_of_range(
                "jump table offset",
                row,
                u64::from(off),
                format!("<= {section_words} (u16 words in compressed section)"),
            ));
        }
    }
    Ok(Parsed {
        header,
        models,
        index: Index::Stream(StreamIndex {
            interval,
            points,
            jump_table,
            section: 4 * section_addr,
            section_words,
        }),
    })
}

/// Block layout: `timestep_addrs`, meta blocks with `chunk_addrs`, one ANS stream per chunk.
pub(crate) fn parse_block(data: &[u8], limits: &Limits) -> Result<Parsed> {
    let header = common(data, limits)?;
    let file_size = header.file_size;
    if header.section_address > file_size {
        return Err(Error::InvalidHeader {
            field: "meta_size",
            value: u64::from(header.section_address),
            reason: "must be <= file_size",
        });
    }
    let chunk_size = us(header.interval);
    let v = us(header.vocab_size);
    if !v.is_multiple_of(chunk_size) {
        return Err(Error::InvalidHeader {
            field: "chunk_size",
            value: chunk_size as u64,
            reason: "must divide vocab_size",
        });
    }
    let chunks_per_step = v / chunk_size;
    let t_count = header.num_timesteps;
    if u64::from(file_size) < u64::from(Header::WORDS) + u64::from(t_count) {
        return Err(Error::InvalidHeader {
            field: "num_timesteps",
            value: u64::from(t_count),
            reason: "timestep_addrs do not fit in file_size",
        });
    }
    let mut models = Vec::new();
    let mut chunk_tables = Vec::new();
    for t in 0..t_count {
        let i = us(t);
        let addr = u32_at(data, Header::ENCODED_LEN + 4 * i, "timestep_addrs")?;
        if addr >= file_size {
            return Err(out_of_range(
                "timestep_addrs",
                i,
                u64::from(addr),
                format!("< file_size {file_size}"),
            ));
        }
        let (model, len) = EntropyModel::parse(data, 4 * us(addr), t)?;
        let table = 4 * us(addr) + 4 * (len / 2).div_ceil(2);
        let table_end = add(
            table,
            mul(chunks_per_step, 4, "chunk_addrs")?,
            "chunk_addrs",
        )?;
        if table_end > data.len() {
            return Err(crate::bytes::truncated(
                data,
                table,
                (table_end - table) as u64,
                "chunk_addrs",
            ));
        }
        for c in 0..chunks_per_step {
            let chunk = u32_at(data, table + 4 * c, "chunk_addrs")?;
            if chunk >= file_size {
                return Err(out_of_range(
                    "chunk_addrs",
                    c,
                    u64::from(chunk),
                    format!("< file_size {file_size} (time step {t})"),
                ));
            }
        }
        models.push(model);
        chunk_tables.push(table);
    }
    Ok(Parsed {
        header,
        models,
        index: Index::Block(BlockIndex {
            chunk_size,
            chunks_per_step,
            chunk_tables,
        }),
    })
}
