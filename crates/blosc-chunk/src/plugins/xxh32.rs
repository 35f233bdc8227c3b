//! XXH32 (Yann Collet's xxHash, 32-bit variant), written from its published specification
//! (<https://github.com/Cyan4973/xxHash/blob/dev/doc/xxhash_spec.md>); NDLZ hashes cells and rows
//! with it (seed 1).

const P1: u32 = 0x9E37_79B1;
const P2: u32 = 0x85EB_CA77;
const P3: u32 = 0xC2B2_AE3D;
const P4: u32 = 0x27D4_EB2F;
const P5: u32 = 0x1656_67B1;

fn word(b: &[u8]) -> u32 {
    u32::from_le_bytes([b[0], b[1], b[2], b[3]])
}

fn round(acc: u32, lane: u32) -> u32 {
    acc.wrapping_add(lane.wrapping_mul(P2))
        .rotate_left(13)
        .wrapping_mul(P1)
}

/// The XXH32 hash of `data` with `seed`.
pub(crate) fn xxh32(data: &[u8], seed: u32) -> u32 {
    let mut rest = data;
    let mut h = if data.len() >= 16 {
        let mut v = [
            seed.wrapping_add(P1).wrapping_add(P2),
            seed.wrapping_add(P2),
            seed,
            seed.wrapping_sub(P1),
        ];
        let (stripes, tail) = data.as_chunks::<16>();
        for s in stripes {
            for (k, acc) in v.iter_mut().enumerate() {
                *acc = round(*acc, word(&s[4 * k..]));
            }
        }
        rest = tail;
        v[0].rotate_left(1)
            .wrapping_add(v[1].rotate_left(7))
            .wrapping_add(v[2].rotate_left(12))
            .wrapping_add(v[3].rotate_left(18))
    } else {
        seed.wrapping_add(P5)
    };
    #[allow(
        clippy::cast_possible_truncation,
        reason = "the spec adds the length mod 2^32"
    )]
    {
        h = h.wrapping_add(data.len() as u32);
    }
    let (words, bytes) = rest.as_chunks::<4>();
    for w in words {
        h = h
            .wrapping_add(u32::from_le_bytes(*w).wrapping_mul(P3))
            .rotate_left(17)
            .wrapping_mul(P4);
    }
    for &b in bytes {
        h = h
            .wrapping_add(u32::from(b).wrapping_mul(P5))
            .rotate_left(11)
            .wrapping_mul(P1);
    }
    h ^= h >> 15;
    h = h.wrapping_mul(P2);
    h ^= h >> 13;
    h = h.wrapping_mul(P3);
    h ^ (h >> 16)
}

#[cfg(test)]
mod tests {
    #[test]
    fn known_values() {
        // Reference values of the xxHash project (empty input, seed 0 and 1).
        assert_eq!(super::xxh32(b"", 0), 0x02CC_5D05);
        assert_eq!(super::xxh32(b"", 1), 0x0B2C_B792);
        let v: Vec<u8> = (0..37).collect();
        assert_eq!(super::xxh32(&v, 1), 0x2909_08E6);
    }
}
