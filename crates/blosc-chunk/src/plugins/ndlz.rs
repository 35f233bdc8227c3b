//! NDLZ (codec 32): an LZ-style codec for 2-D blocks of 1-byte items that matches whole cells
//! (4x4 or 8x8 items; the codec meta) and rows of cells against cells stored earlier in the
//! same stream. Stream layout and matching rules: `FORMAT.md`, section "NDLZ".

use super::xxh32::xxh32;
use super::{BlockShape, geometry};
use crate::error::Result;

/// Bytes before the first cell: `ndim` (2) and the block shape as two little-endian `i32`.
const HEADER: usize = 9;
/// A match must be nearer than this (`MAX_DISTANCE`).
const MAX_DISTANCE: usize = 65_535;
/// Hash tables have `1 << HASH_LOG` entries.
const HASH_LOG: u32 = 12;

const TOKEN_LITERAL: u8 = 0;
const TOKEN_SAME: u8 = 0x40;
const TOKEN_CELL: u8 = 0xC0;

fn hash(b: &[u8]) -> usize {
    (xxh32(b, 1) >> (32 - HASH_LOG)) as usize
}

/// Items of the cell at grid position `g` along a dimension of `n` items (cut at the edge).
fn pad(n: usize, cell: usize, g: usize, grid: usize) -> usize {
    if g == grid - 1 && !n.is_multiple_of(cell) {
        n % cell
    } else {
        cell
    }
}

fn le_u16(src: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes([*src.get(at)?, *src.get(at + 1)?]))
}

fn le_i32(src: &[u8], at: usize) -> Option<i32> {
    let s = src.get(at..at.checked_add(4)?)?;
    Some(i32::from_le_bytes([s[0], s[1], s[2], s[3]]))
}

/// `len` bytes at `start`, or a corrupt-stream error.
fn slice(src: &[u8], start: Option<usize>, len: usize) -> Result<&[u8]> {
    start
        .and_then(|s| src.get(s..s.checked_add(len)?))
        .ok_or(geometry(
            "ndlz",
            "a reference or literal lies outside the stream",
        ))
}

/// Decodes one NDLZ stream (`meta` = cell edge 4 or 8) into `dst`, which must be exactly the
/// block the stream describes.
pub(crate) fn decompress(meta: u8, src: &[u8], dst: &mut [u8]) -> Result<()> {
    let cell = match meta {
        4 => 4usize,
        8 => 8usize,
        _ => return Err(geometry("ndlz", "codec meta (cell size) must be 4 or 8")),
    };
    if src.len() < HEADER || src[0] != 2 {
        return Err(geometry("ndlz", "stream does not start with ndim 2"));
    }
    let b0 = le_i32(src, 1).and_then(|v| usize::try_from(v).ok());
    let b1 = le_i32(src, 5).and_then(|v| usize::try_from(v).ok());
    let (Some(b0), Some(b1)) = (b0, b1) else {
        return Err(geometry("ndlz", "negative block shape in the stream"));
    };
    if b0.checked_mul(b1) != Some(dst.len()) || dst.is_empty() {
        return Err(geometry(
            "ndlz",
            "the stream's block shape differs from the block",
        ));
    }
    let grid0 = b0.div_ceil(cell);
    let grid1 = b1.div_ceil(cell);
    let mut pos = HEADER;
    let mut buf = [0u8; 64];
    for g0 in 0..grid0 {
        let p0 = pad(b0, cell, g0, grid0);
        for g1 in 0..grid1 {
            let p1 = pad(b1, cell, g1, grid1);
            let cur = pos;
            let token = *src
                .get(cur)
                .ok_or(geometry("ndlz", "the stream ends before the last cell"))?;
            // Where the cell's rows come from: a slice of the stream, or `buf`.
            let from: &[u8] = match token {
                TOKEN_LITERAL => {
                    pos = cur + 1 + p0 * p1;
                    slice(src, Some(cur + 1), p0 * p1)?
                }
                TOKEN_CELL => {
                    let off = le_u16(src, cur + 1)
                        .ok_or(geometry("ndlz", "the stream ends inside a token"))?;
                    pos = cur + 3;
                    slice(src, cur.checked_sub(usize::from(off)), p0 * p1)?
                }
                TOKEN_SAME => {
                    let v = *src
                        .get(cur + 1)
                        .ok_or(geometry("ndlz", "the stream ends inside a token"))?;
                    pos = cur + 2;
                    buf.fill(v);
                    &buf[..cell * cell]
                }
                t if cell == 4 => {
                    pos = rows4(t, src, cur, &mut buf)?;
                    &buf[..16]
                }
                t => {
                    pos = rows8(t, src, cur, &mut buf)?;
                    &buf[..64]
                }
            };
            let orig = g0 * cell * b1 + g1 * cell;
            for i in 0..p0 {
                let o = orig + i * b1;
                let s = slice(from, Some(i * p1), p1)?;
                dst.get_mut(o..o + p1)
                    .ok_or(geometry("ndlz", "a cell lies outside the block"))?
                    .copy_from_slice(s);
            }
        }
    }
    Ok(())
}

/// The other rows of a 4x4 row match (token ≥ 0x20 and not a cell token): fills `buf`, returns
/// the position after the token's bytes.
fn rows4(token: u8, src: &[u8], cur: usize, buf: &mut [u8; 64]) -> Result<usize> {
    let off = |at: usize| le_u16(src, at).ok_or(geometry("ndlz", "the stream ends inside a token"));
    let mut pos;
    if token >= 224 {
        // Three rows from one reference, the fourth literal.
        let (i, j, k) = match token >> 3 {
            28 => (1, 2, 3),
            29 => (0, 1, 2),
            30 => (0, 1, 3),
            _ => (0, 2, 3),
        };
        // C adds 3 to the 16-bit offset (wrapping) and goes back from the end of the offset.
        let o = usize::from(off(cur + 1)?.wrapping_add(3));
        let r = slice(src, (cur + 3).checked_sub(o), 12)?;
        buf[i * 4..i * 4 + 4].copy_from_slice(&r[..4]);
        buf[j * 4..j * 4 + 4].copy_from_slice(&r[4..8]);
        buf[k * 4..k * 4 + 4].copy_from_slice(&r[8..12]);
        pos = cur + 3;
        let l = (0..4).find(|l| ![i, j, k].contains(l)).unwrap_or(0);
        buf[l * 4..l * 4 + 4].copy_from_slice(slice(src, Some(pos), 4)?);
        pos += 4;
    } else if (128..=191).contains(&token) {
        // Two rows from one reference, the other two literal.
        let (i, j) = if token == 128 {
            (2, 3)
        } else {
            let t = usize::from(token - 128);
            let i = t >> 5;
            (i, (t >> 3) - (i << 2))
        };
        let o = usize::from(off(cur + 1)?.wrapping_add(3));
        let r = slice(src, (cur + 3).checked_sub(o), 8)?;
        buf[i * 4..i * 4 + 4].copy_from_slice(&r[..4]);
        buf[j * 4..j * 4 + 4].copy_from_slice(&r[4..8]);
        pos = cur + 3;
        for k in (0..4).filter(|k| *k != i && *k != j) {
            buf[k * 4..k * 4 + 4].copy_from_slice(slice(src, Some(pos), 4)?);
            pos += 4;
        }
    } else if (40..=63).contains(&token) {
        // Two row pairs from two references: rows 0 and j, then the other two.
        let j = usize::from((token - 32) >> 3);
        let mut rest = (1..4).filter(|k| *k != j);
        let l = rest.next().unwrap_or(0);
        let m = rest.next().unwrap_or(0);
        let o1 = usize::from(off(cur + 1)?.wrapping_add(5));
        let o2 = usize::from(off(cur + 3)?.wrapping_add(5));
        let r1 = slice(src, (cur + 5).checked_sub(o1), 8)?;
        let r2 = slice(src, (cur + 5).checked_sub(o2), 8)?;
        buf[0..4].copy_from_slice(&r1[..4]);
        buf[j * 4..j * 4 + 4].copy_from_slice(&r1[4..8]);
        buf[l * 4..l * 4 + 4].copy_from_slice(&r2[..4]);
        buf[m * 4..m * 4 + 4].copy_from_slice(&r2[4..8]);
        pos = cur + 5;
    } else {
        return Err(geometry("ndlz", "invalid token"));
    }
    Ok(pos)
}

/// The rows of an 8x8 row match (tokens `0xA8 | r`: rows r..r+3 from a reference; `0x88 | r`:
/// rows r..r+2); the other rows follow literally.
fn rows8(token: u8, src: &[u8], cur: usize, buf: &mut [u8; 64]) -> Result<usize> {
    let n = match token >> 3 {
        21 => 3,
        17 => 2,
        _ => return Err(geometry("ndlz", "invalid token")),
    };
    let r = usize::from(token & 7);
    if r + n > 8 {
        return Err(geometry("ndlz", "row match past the cell"));
    }
    let o = le_u16(src, cur + 1).ok_or(geometry("ndlz", "the stream ends inside a token"))?;
    let refd = slice(src, cur.checked_sub(usize::from(o)), 8 * n)?;
    buf[r * 8..(r + n) * 8].copy_from_slice(refd);
    let mut pos = cur + 3;
    for l in (0..8).filter(|l| *l < r || *l >= r + n) {
        buf[l * 8..l * 8 + 8].copy_from_slice(slice(src, Some(pos), 8)?);
        pos += 8;
    }
    Ok(pos)
}

/// Hash tables and pending updates of the encoder.
struct Tables {
    cell: Vec<u32>,
    triple: Vec<u32>,
    pair: Vec<u32>,
}

/// Whether the `n` bytes of `out` at table entry `at` (non-zero) equal `want`.
fn same_at(out: &[u8], at: u32, want: &[u8]) -> bool {
    at != 0
        && out
            .get(at as usize..at as usize + want.len())
            .is_some_and(|s| s == want)
}

/// Encodes one block with NDLZ like C-Blosc2 3.3.5: returns `Ok(0)` when the stream does not
/// fit in `dst` or is not smaller than the block (the caller stores the block raw), an error
/// where C-Blosc2 fails the whole chunk.
pub(crate) fn compress(
    meta: u8,
    shape: Option<&BlockShape>,
    src: &[u8],
    dst: &mut [u8],
) -> Result<usize> {
    let cell = match meta {
        4 => 4usize,
        8 => 8usize,
        _ => return Err(geometry("ndlz", "codec meta (cell size) must be 4 or 8")),
    };
    let shape = super::need_shape("ndlz", shape)?;
    let [b0, b1] = shape.dims() else {
        return Err(geometry("ndlz", "needs a 2-D block shape"));
    };
    let (b0, b1) = (*b0 as usize, *b1 as usize);
    if b0.checked_mul(b1) != Some(src.len()) {
        return Err(geometry(
            "ndlz",
            "block length differs from the block shape (typesize must be 1)",
        ));
    }
    if dst.len() < HEADER {
        return Err(geometry("ndlz", "output smaller than the stream header"));
    }
    let csize = cell * cell;
    // C computes this in `int`: for blocks under one cell it is below 17.
    let overhead = (src.len() / csize).saturating_sub(1).saturating_mul(2) + 17;
    if src.len() < csize || dst.len() < overhead {
        return Ok(0);
    }
    let limit = dst.len();
    let mut out: Vec<u8> = Vec::with_capacity(limit.min(src.len() + 80));
    out.push(2);
    out.extend_from_slice(&i32::try_from(b0).unwrap_or(0).to_le_bytes());
    out.extend_from_slice(&i32::try_from(b1).unwrap_or(0).to_le_bytes());
    let mut t = Tables {
        cell: vec![0; 1 << HASH_LOG],
        triple: vec![0; 1 << HASH_LOG],
        pair: vec![0; 1 << HASH_LOG],
    };
    // Hashes of the last pending updates survive from cell to cell, as in C.
    let mut hash_triple = [0usize; 6];
    let mut hash_pair = [0usize; 7];
    let grid0 = b0.div_ceil(cell);
    let grid1 = b1.div_ceil(cell);
    let mut cbuf = [0u8; 64];
    for g0 in 0..grid0 {
        for g1 in 0..grid1 {
            if out.len() + csize + 1 > limit {
                return Ok(0);
            }
            let orig = g0 * cell * b1 + g1 * cell;
            let edge = (b0 % cell != 0 && g0 == grid0 - 1) || (b1 % cell != 0 && g1 == grid1 - 1);
            if edge {
                let p0 = pad(b0, cell, g0, grid0);
                let p1 = pad(b1, cell, g1, grid1);
                out.push(TOKEN_LITERAL);
                for i in 0..p0 {
                    let o = orig + i * b1;
                    out.extend_from_slice(&src[o..o + p1]);
                }
            } else {
                for i in 0..cell {
                    let o = orig + i * b1;
                    cbuf[i * cell..(i + 1) * cell].copy_from_slice(&src[o..o + cell]);
                }
                let c = &cbuf[..csize];
                encode_cell(c, &mut out, &mut t, &mut hash_triple, &mut hash_pair);
            }
            if out.len() > src.len() {
                return Ok(0);
            }
        }
    }
    dst[..out.len()].copy_from_slice(&out);
    Ok(out.len())
}

/// Distance from `anchor + add` back to table entry `at`, if it is a usable match.
fn near(anchor: usize, add: usize, at: u32) -> bool {
    let d = (anchor + add).wrapping_sub(at as usize);
    d != 0 && d < MAX_DISTANCE
}

/// The 16-bit offset C stores: `anchor - entry`, truncated.
fn offset16(anchor: usize, at: u32) -> [u8; 2] {
    #[allow(clippy::cast_possible_truncation, reason = "C stores a uint16_t")]
    let o = anchor.wrapping_sub(at as usize) as u16;
    o.to_le_bytes()
}

/// The cell-level start shared by both cell sizes: a run of one value, or a whole-cell match.
/// Returns `true` when the cell was written.
fn whole_cell(c: &[u8], out: &mut Vec<u8>, t: &Tables, hc: usize) -> bool {
    let anchor = out.len();
    let at = t.cell[hc];
    let matched = same_at(out, at, c);
    if c.iter().all(|&v| v == c[0]) {
        out.push(TOKEN_SAME);
        out.push(c[0]);
        return true;
    }
    if matched && near(anchor, 0, at) {
        out.push(TOKEN_CELL);
        out.extend_from_slice(&offset16(anchor, at));
        return true;
    }
    false
}

fn row4(c: &[u8], r: usize) -> &[u8] {
    &c[r * 4..r * 4 + 4]
}

/// One full cell (4x4 or 8x8): a run of one byte, a repeat of an earlier cell, a match of
/// some of its rows, or a literal.
fn encode_cell(
    c: &[u8],
    out: &mut Vec<u8>,
    t: &mut Tables,
    hash_triple: &mut [usize; 6],
    hash_pair: &mut [usize; 7],
) {
    let hc = hash(c);
    if whole_cell(c, out, t, hc) {
        return;
    }
    let mut upd_triple = [0u32; 6];
    let mut upd_pair = [0u32; 7];
    // Runs of three and of two rows: 2 and 3 in a 4x4 cell, 6 and 7 in an 8x8 one.
    let (triples, pairs) = if c.len() == 16 { (2, 3) } else { (6, 7) };
    let (ut, up) = (&mut upd_triple[..triples], &mut upd_pair[..pairs]);
    let matched = if c.len() == 16 {
        match_rows4(c, out, t, (ut, hash_triple), (up, hash_pair))
    } else {
        match_rows8(c, out, t, (ut, hash_triple), (up, hash_pair))
    };
    if !matched {
        literal(
            c,
            out,
            t,
            hc,
            (&upd_triple[..triples], hash_triple),
            (&upd_pair[..pairs], hash_pair),
        );
    }
}

/// The row matches of a 4x4 cell: writes the first one found and returns `true`, else notes
/// in `upd_*` / `hash_*` the positions and hashes of its runs of rows for [`literal`].
fn match_rows4(
    c: &[u8],
    out: &mut Vec<u8>,
    t: &Tables,
    (upd_triple, hash_triple): (&mut [u32], &mut [usize; 6]),
    (upd_pair, hash_pair): (&mut [u32], &mut [usize; 7]),
) -> bool {
    let anchor = out.len();
    let pos32 = |x: usize| u32::try_from(x).unwrap_or(0);
    // Two row pairs: rows 0 and j, then the two others.
    for j in 1..4 {
        let mut bp = [0u8; 8];
        bp[..4].copy_from_slice(row4(c, 0));
        bp[4..].copy_from_slice(row4(c, j));
        let at1 = t.pair[hash(&bp)];
        if !(same_at(out, at1, &bp) && near(anchor, 0, at1)) {
            continue;
        }
        let mut rest = (1..4).filter(|k| *k != j);
        let l = rest.next().unwrap_or(0);
        let m = rest.next().unwrap_or(0);
        bp[..4].copy_from_slice(row4(c, l));
        bp[4..].copy_from_slice(row4(c, m));
        let at2 = t.pair[hash(&bp)];
        if same_at(out, at2, &bp) && near(anchor, l * 4, at2) {
            #[allow(clippy::cast_possible_truncation, reason = "j < 4")]
            out.push(0x20 | ((j as u8) << 3));
            out.extend_from_slice(&offset16(anchor, at1));
            out.extend_from_slice(&offset16(anchor, at2));
            return true;
        }
    }
    // Three rows.
    for i in 0..2 {
        for j in i + 1..3 {
            for k in j + 1..4 {
                let mut bt = [0u8; 12];
                bt[..4].copy_from_slice(row4(c, i));
                bt[4..8].copy_from_slice(row4(c, j));
                bt[8..].copy_from_slice(row4(c, k));
                let h = hash(&bt);
                let at = t.triple[h];
                if at == 0 && j - i == 1 && k - j == 1 {
                    upd_triple[i] = pos32(anchor + 1 + i * 4);
                    hash_triple[i] = h;
                }
                if same_at(out, at, &bt) && near(anchor, i * 4, at) {
                    #[allow(clippy::cast_possible_truncation, reason = "j + k - 2 < 8")]
                    let token = if i == 1 {
                        0xE0
                    } else {
                        0xE0 | (((j + k - 2) as u8) << 3)
                    };
                    out.push(token);
                    out.extend_from_slice(&offset16(anchor, at));
                    let l = (0..4).find(|l| ![i, j, k].contains(l)).unwrap_or(0);
                    let row = row4(c, l).to_vec();
                    out.extend_from_slice(&row);
                    return true;
                }
            }
        }
    }
    // One row pair.
    for i in 0..3 {
        for j in i + 1..4 {
            let mut bp = [0u8; 8];
            bp[..4].copy_from_slice(row4(c, i));
            bp[4..].copy_from_slice(row4(c, j));
            let h = hash(&bp);
            let at = t.pair[h];
            if at == 0 && j - i == 1 {
                upd_pair[i] = pos32(anchor + 1 + i * 4);
                hash_pair[i] = h;
            }
            if same_at(out, at, &bp) && near(anchor, i * 4, at) {
                #[allow(clippy::cast_possible_truncation, reason = "i, j < 4")]
                let token = if i == 2 {
                    0x80
                } else {
                    0x80 | ((i as u8) << 5) | ((j as u8) << 3)
                };
                out.push(token);
                out.extend_from_slice(&offset16(anchor, at));
                for k in (0..4).filter(|k| *k != i && *k != j) {
                    let row = row4(c, k).to_vec();
                    out.extend_from_slice(&row);
                }
                return true;
            }
        }
    }
    false
}

/// [`match_rows4`] of an 8x8 cell.
fn match_rows8(
    c: &[u8],
    out: &mut Vec<u8>,
    t: &Tables,
    (upd_triple, hash_triple): (&mut [u32], &mut [usize; 6]),
    (upd_pair, hash_pair): (&mut [u32], &mut [usize; 7]),
) -> bool {
    let anchor = out.len();
    let pos32 = |x: usize| u32::try_from(x).unwrap_or(0);
    for (n, base, count) in [(3usize, 0xA8u8, 6usize), (2, 0x88, 7)] {
        for i in 0..count {
            let start = i * 8;
            let rows = &c[start..start + 8 * n];
            let h = hash(rows);
            let at = if n == 3 { t.triple[h] } else { t.pair[h] };
            if at == 0 {
                if n == 3 {
                    upd_triple[i] = pos32(anchor + 1 + start);
                    hash_triple[i] = h;
                } else {
                    upd_pair[i] = pos32(anchor + 1 + start);
                    hash_pair[i] = h;
                }
            }
            if same_at(out, at, rows) && near(anchor, start, at) {
                #[allow(clippy::cast_possible_truncation, reason = "i < 8")]
                out.push(base | i as u8);
                out.extend_from_slice(&offset16(anchor, at));
                for l in (0..8).filter(|l| *l < i || *l >= i + n) {
                    out.extend_from_slice(&c[l * 8..l * 8 + 8]);
                }
                return true;
            }
        }
    }
    false
}

/// A cell that matched nothing (4x4 or 8x8), written as a literal at the end of `out`. The
/// tables learn the cell (`hc` is its hash) and, when its first run of three (two) rows was
/// new, its runs: position `upd[k]` at hash `hashes[k]` for every run `k`, where an unset
/// `upd[k]` writes 0 at the hash that slot kept from an earlier cell, as C-Blosc2 does.
fn literal(
    c: &[u8],
    out: &mut Vec<u8>,
    t: &mut Tables,
    hc: usize,
    (upd_triple, hash_triple): (&[u32], &[usize]),
    (upd_pair, hash_pair): (&[u32], &[usize]),
) {
    t.cell[hc] = u32::try_from(out.len() + 1).unwrap_or(0);
    if upd_triple.first().is_some_and(|&u| u != 0) {
        for (&u, &h) in upd_triple.iter().zip(hash_triple) {
            t.triple[h] = u;
        }
    }
    if upd_pair.first().is_some_and(|&u| u != 0) {
        for (&u, &h) in upd_pair.iter().zip(hash_pair) {
            t.pair[h] = u;
        }
    }
    out.push(TOKEN_LITERAL);
    out.extend_from_slice(c);
}
