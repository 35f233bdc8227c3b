//! The name → bin32 layout shared by header metalayers and trailer vlmetalayers, parsed at
//! the positions C-Blosc2 uses rather than with a generic msgpack decoder:
//!
//! ```text
//! 93 | cd u16 idx_size | de u16 N | N × (fixstr name, d2 i32 offset) | dc u16 N | N × (c6 u32 len, content)
//! ```
//!
//! Header: offsets are absolute from the frame start and `idx_size` counts from the `93` byte.
//! Trailer: offsets are relative to the trailer start and `idx_size` counts from the `cd` byte.

use crate::bytes::Bytes;
use crate::error::{Error, Result};

/// C-Blosc2's `BLOSC2_MAX_METALAYERS`.
pub const MAX_METALAYERS: usize = 16;
/// C-Blosc2's `BLOSC2_MAX_VLMETALAYERS`.
pub const MAX_VLMETALAYERS: usize = 8192;
/// C-Blosc2's `BLOSC2_METALAYER_NAME_MAXLEN`.
pub const MAX_NAME_LEN: usize = 31;

/// Which of the two sections is parsed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Section {
    /// Header metalayers.
    Header,
    /// Trailer vlmetalayers.
    Trailer,
}

impl Section {
    fn kind(self) -> &'static str {
        match self {
            Self::Header => "metalayer",
            Self::Trailer => "vlmetalayer",
        }
    }

    fn max(self) -> usize {
        match self {
            Self::Header => MAX_METALAYERS,
            Self::Trailer => MAX_VLMETALAYERS,
        }
    }
}

/// Parses the section whose `93` byte is at `start` in `region`. Offsets in the map are relative
/// to `region[0]`; every content must end at or before `region.len()`. `base` is the frame
/// position of `region[0]` (for error offsets).
pub(crate) fn parse(
    region: &[u8],
    start: usize,
    base: u64,
    section: Section,
) -> Result<Vec<(String, Vec<u8>)>> {
    let b = Bytes::new(region, base);
    let kind = section.kind();
    b.marker("metalayer array", start, 0x93)?;
    b.marker("metalayer idx_size", start + 1, 0xcd)?;
    b.marker("metalayer map", start + 4, 0xde)?;
    let n = usize::from(b.be_u16("metalayer count", start + 5)?);
    if n > section.max() {
        return Err(Error::invalid(
            "metalayer count",
            base + (start + 5) as u64,
            format!("{n} {kind}s, at most {} allowed", section.max()),
        ));
    }
    let mut pos = start + 7;
    let mut entries = Vec::with_capacity(n);
    for _ in 0..n {
        let m = b.u8("metalayer name", pos)?;
        if m & 0xe0 != 0xa0 {
            return Err(Error::Marker {
                what: "metalayer name (fixstr)",
                offset: base + pos as u64,
                expected: 0xa0,
                found: m,
            });
        }
        let len = usize::from(m & 0x1f);
        let raw = b.get("metalayer name", pos + 1, len)?;
        let name = String::from_utf8(raw.to_vec())
            .map_err(|_| Error::invalid("metalayer name", base + pos as u64, "not valid UTF-8"))?;
        pos += 1 + len;
        b.marker("metalayer offset", pos, 0xd2)?;
        let off = b.be_i32("metalayer offset", pos + 1)?;
        let off = usize::try_from(off).map_err(|_| {
            Error::invalid(
                "metalayer offset",
                base + pos as u64,
                format!("negative: {off}"),
            )
        })?;
        pos += 5;
        entries.push((name, off));
    }
    b.marker("metalayer contents", pos, 0xdc)?;
    let count = usize::from(b.be_u16("metalayer content count", pos + 1)?);
    if count != n {
        return Err(Error::invalid(
            "metalayer content count",
            base + (pos + 1) as u64,
            format!("{count} contents for {n} names"),
        ));
    }
    let mut out = Vec::with_capacity(n);
    for (name, off) in entries {
        b.marker("metalayer content (bin32)", off, 0xc6)?;
        let len = b.be_u32("metalayer content length", off + 1)?;
        let len = usize::try_from(len).map_err(|_| Error::Overflow {
            what: "metalayer content length",
        })?;
        let content = b.get("metalayer content", off + 5, len)?;
        out.push((name, content.to_vec()));
    }
    Ok(out)
}

/// Encodes a section whose `93` byte will sit at position `at` relative to the offsets'
/// origin (87 for the header: offsets from the frame start; 2 for the trailer: offsets from the
/// trailer start).
pub(crate) fn encode(layers: &[(String, Vec<u8>)], at: usize, section: Section) -> Result<Vec<u8>> {
    if layers.len() > section.max() {
        return Err(Error::InvalidArgument(format!(
            "{} {}s, at most {} allowed",
            layers.len(),
            section.kind(),
            section.max()
        )));
    }
    let map_len: usize = 7 + layers.iter().map(|(n, _)| 1 + n.len() + 5).sum::<usize>();
    let mut out =
        Vec::with_capacity(map_len + 3 + layers.iter().map(|(_, c)| 5 + c.len()).sum::<usize>());
    let idx_size = match section {
        Section::Header => map_len,
        Section::Trailer => map_len - 1,
    };
    out.push(0x93);
    out.push(0xcd);
    out.extend_from_slice(&u16_field("metalayer idx_size", idx_size)?.to_be_bytes());
    out.push(0xde);
    out.extend_from_slice(&u16_field("metalayer count", layers.len())?.to_be_bytes());
    let mut content_pos = at + map_len + 3;
    for (name, content) in layers {
        check_name(name)?;
        out.push(0xa0 | u8::try_from(name.len()).map_err(|_| Error::Overflow { what: "name" })?);
        out.extend_from_slice(name.as_bytes());
        out.push(0xd2);
        let off = i32::try_from(content_pos).map_err(|_| Error::Overflow {
            what: "metalayer offset",
        })?;
        out.extend_from_slice(&off.to_be_bytes());
        content_pos = content_pos
            .checked_add(5 + content.len())
            .ok_or(Error::Overflow {
                what: "metalayer offset",
            })?;
    }
    out.push(0xdc);
    out.extend_from_slice(&u16_field("metalayer count", layers.len())?.to_be_bytes());
    for (_, content) in layers {
        out.push(0xc6);
        let len = u32::try_from(content.len()).map_err(|_| Error::Overflow {
            what: "metalayer content length",
        })?;
        out.extend_from_slice(&len.to_be_bytes());
        out.extend_from_slice(content);
    }
    Ok(out)
}

/// Names must be 1..=31 bytes (they are stored as a msgpack fixstr).
pub(crate) fn check_name(name: &str) -> Result<()> {
    if name.is_empty() || name.len() > MAX_NAME_LEN {
        return Err(Error::InvalidArgument(format!(
            "metalayer name {name:?} must be 1..={MAX_NAME_LEN} bytes"
        )));
    }
    Ok(())
}

fn u16_field(what: &'static str, v: usize) -> Result<u16> {
    u16::try_from(v).map_err(|_| Error::Overflow { what })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(name: &str) -> Vec<u8> {
        let p = format!(
            "{}/../../testdata/blosc/frames/{name}",
            env!("CARGO_MANIFEST_DIR")
        );
        std::fs::read(p).unwrap()
    }

    #[test]
    fn header_section_round_trips_byte_exact() {
        let f = frame("lz4_shuffle_meta_vlmeta.b2frame");
        let layers = parse(&f[..135], 87, 0, Section::Header).unwrap();
        assert_eq!(layers.len(), 2);
        assert_eq!(layers[0], ("m1".to_string(), vec![0x93, 1, 2, 3]));
        assert_eq!(layers[1], ("mymeta".to_string(), vec![0x81, 0xa1, 0x61, 1]));
        assert_eq!(encode(&layers, 87, Section::Header).unwrap(), &f[87..135]);
    }

    #[test]
    fn trailer_section_round_trips_byte_exact() {
        let f = frame("lz4_shuffle_meta_vlmeta.b2frame");
        let start = f.len() - 146;
        let trailer = &f[start..];
        let layers = parse(trailer, 2, start as u64, Section::Trailer).unwrap();
        let names: Vec<&str> = layers.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["info", "bin"]);
        let enc = encode(&layers, 2, Section::Trailer).unwrap();
        assert_eq!(enc, &trailer[2..2 + enc.len()]);
    }

    #[test]
    fn empty_sections_match_c() {
        assert_eq!(
            encode(&[], 87, Section::Header).unwrap(),
            [0x93, 0xcd, 0, 7, 0xde, 0, 0, 0xdc, 0, 0]
        );
        assert_eq!(
            encode(&[], 2, Section::Trailer).unwrap(),
            [0x93, 0xcd, 0, 6, 0xde, 0, 0, 0xdc, 0, 0]
        );
    }

    #[test]
    fn bad_offsets_are_errors() {
        let f = frame("lz4_shuffle_meta_vlmeta.b2frame");
        let mut v = f[..135].to_vec();
        v[0x62..0x66].copy_from_slice(&200i32.to_be_bytes()); // m1 offset past the header
        assert!(parse(&v, 87, 0, Section::Header).is_err());
        let mut v = f[..135].to_vec();
        v[0x62..0x66].copy_from_slice(&(-1i32).to_be_bytes());
        assert!(matches!(
            parse(&v, 87, 0, Section::Header),
            Err(Error::Invalid {
                what: "metalayer offset",
                ..
            })
        ));
    }
}
