//! The frame trailer (what C-Blosc2's `frame_update_trailer` writes):
//!
//! ```text
//! 94 | 01 | vlmetalayers section (offsets relative to the trailer start) | ce u32 trailer_len
//!    | d8 00 | 16 zero bytes (fingerprint type 0 = none)
//! ```

use crate::bytes::Bytes;
use crate::error::{Error, Result};
use crate::layers::{self, Section};

/// Length of the fixed tail: `ce` + u32 trailer_len + `d8 00` + 16 fingerprint bytes.
pub(crate) const TAIL_LEN: usize = 23;
/// Smallest trailer C-Blosc2 accepts (`FRAME_TRAILER_MINLEN`).
pub(crate) const TRAILER_MIN_LEN: u64 = 25;

/// Reads `trailer_len` from the last [`TAIL_LEN`] bytes of a frame of length `frame_len`
/// whose header is `header_len` bytes, and checks `25 <= trailer_len <= frame_len - header_len`.
pub(crate) fn trailer_len(tail: &[u8], frame_len: u64, header_len: u64) -> Result<u64> {
    let base = frame_len.saturating_sub(TAIL_LEN as u64);
    let b = Bytes::new(tail, base);
    b.marker("trailer_len", 0, 0xce)?;
    let len = u64::from(b.be_u32("trailer_len", 1)?);
    let room = frame_len.saturating_sub(header_len);
    if len < TRAILER_MIN_LEN || len > room {
        return Err(Error::invalid(
            "trailer_len",
            base + 1,
            format!("{len} not in {TRAILER_MIN_LEN}..={room} (frame_len - header_len)"),
        ));
    }
    Ok(len)
}

/// Parses the vlmetalayers from a complete trailer starting at frame offset `base`.
pub(crate) fn parse(trailer: &[u8], base: u64) -> Result<Vec<(String, Vec<u8>)>> {
    let b = Bytes::new(trailer, base);
    b.marker("trailer array", 0, 0x94)?;
    let version = b.u8("trailer version", 1)?;
    if version > 0x7f {
        return Err(Error::invalid(
            "trailer version",
            base + 1,
            format!("{version:#04x} is not a positive fixint"),
        ));
    }
    let end = trailer.len().saturating_sub(TAIL_LEN);
    let body = trailer.get(..end).ok_or(Error::Truncated {
        what: "trailer",
        offset: base,
        needed: TAIL_LEN as u64,
        available: trailer.len() as u64,
    })?;
    layers::parse(body, 2, base, Section::Trailer)
}

/// Encodes a trailer holding `vlmetalayers` (name, compressed chunk) in order.
pub(crate) fn encode(vlmetalayers: &[(String, Vec<u8>)]) -> Result<Vec<u8>> {
    let mut out = vec![0x94, 0x01];
    out.extend(layers::encode(vlmetalayers, 2, Section::Trailer)?);
    let len = u32::try_from(out.len() + TAIL_LEN).map_err(|_| Error::Overflow {
        what: "trailer_len",
    })?;
    out.push(0xce);
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(&[0xd8, 0x00]);
    out.extend_from_slice(&[0u8; 16]);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixture_trailers_round_trip_byte_exact() {
        for (name, tlen) in [
            ("lz4_shuffle_meta_vlmeta.b2frame", 146),
            ("b2nd_f4_20x30.b2nd", 85),
            ("fill_special_zero.b2frame", 35),
        ] {
            let p = format!(
                "{}/../../testdata/blosc/frames/{name}",
                env!("CARGO_MANIFEST_DIR")
            );
            let f = std::fs::read(p).unwrap();
            let n = f.len() as u64;
            let got = trailer_len(&f[f.len() - TAIL_LEN..], n, 97).unwrap();
            assert_eq!(got, tlen, "{name}");
            let start = f.len() - usize::try_from(tlen).unwrap();
            let vl = parse(&f[start..], start as u64).unwrap();
            assert_eq!(encode(&vl).unwrap(), &f[start..], "{name}");
        }
    }

    #[test]
    fn bad_trailer_len_is_an_error() {
        let mut tail = [0u8; TAIL_LEN];
        tail[0] = 0xce;
        tail[1..5].copy_from_slice(&24u32.to_be_bytes());
        assert!(trailer_len(&tail, 200, 97).is_err());
        tail[1..5].copy_from_slice(&104u32.to_be_bytes());
        assert!(trailer_len(&tail, 200, 97).is_err());
        tail[1..5].copy_from_slice(&103u32.to_be_bytes());
        assert_eq!(trailer_len(&tail, 200, 97).unwrap(), 103);
        tail[0] = 0xcf;
        assert!(matches!(
            trailer_len(&tail, 200, 97),
            Err(Error::Marker { .. })
        ));
    }
}
