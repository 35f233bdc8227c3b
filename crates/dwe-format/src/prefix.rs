//! Streaming-friendly parsing: header and entropy models from the first bytes of a file, before
//! the bulk (chunks, jump table, compressed words) has arrived.

use crate::bytes::{u32_at, us};
use crate::error::{Error, Result};
use crate::header::Header;
use crate::layout::Layout;
use crate::model::EntropyModel;

/// What [`Prefix::parse`] found.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum PrefixStatus {
    /// Call again once at least this many bytes (from the start of the file) are available.
    NeedBytes(u64),
    /// Header and all models are parsed.
    Ready(Prefix),
}

/// The header and the T entropy models of a file, parsed from its first bytes.
#[derive(Debug, Clone, PartialEq)]
pub struct Prefix {
    /// The header.
    pub header: Header,
    /// The models of time steps 0..T.
    pub models: Vec<EntropyModel>,
    /// The bytes this needed: `4·jump_table_address` (stream) or `4·meta_size` (block).
    pub len: u64,
}

impl Prefix {
    /// Parses as much as `prefix` (the first bytes of a file of the given layout) allows.
    ///
    /// The total length is known from the header (`4·file_size`) once 40 bytes are in; the
    /// models need the first `4·jump_table_address` (stream) or `4·meta_size` (block) bytes.
    ///
    /// # Errors
    /// Header and model errors as for a whole file ([`Error::BadMagic`],
    /// [`Error::InvalidHeader`], [`Error::InvalidModel`], [`Error::OutOfRange`]).
    pub fn parse(prefix: &[u8], layout: Layout) -> Result<PrefixStatus> {
        if prefix.len() < Header::ENCODED_LEN {
            return Ok(PrefixStatus::NeedBytes(Header::ENCODED_LEN as u64));
        }
        let header = Header::parse(prefix)?;
        header.check_common()?;
        let end = 4 * u64::from(header.section_address);
        let t_count = header.num_timesteps;
        if header.section_address > header.file_size || header.section_address <= Header::WORDS {
            return Err(Error::InvalidHeader {
                field: "meta_size/jump_table_address",
                value: u64::from(header.section_address),
                reason: "must be > 10 and <= file_size",
            });
        }
        if (prefix.len() as u64) < end {
            return Ok(PrefixStatus::NeedBytes(end));
        }
        let section = prefix
            .get(..us(header.section_address) * 4)
            .unwrap_or_default();
        let mut models = Vec::new();
        match layout {
            Layout::Stream => {
                let mut offset = Header::ENCODED_LEN;
                for t in 0..t_count {
                    let (m, len) = EntropyModel::parse(section, offset, t)?;
                    models.push(m);
                    offset += len;
                }
            }
            Layout::Block => {
                for t in 0..t_count {
                    let addr = u32_at(section, Header::ENCODED_LEN + 4 * us(t), "timestep_addrs")?;
                    let (m, _) = EntropyModel::parse(section, 4 * us(addr), t)?;
                    models.push(m);
                }
            }
        }
        Ok(PrefixStatus::Ready(Self {
            header,
            models,
            len: end,
        }))
    }
}
