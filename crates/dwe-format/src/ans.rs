//! The range-variant ANS coder of the format: u32 state, u16 words, 12-bit
//! precision, refill below 2^16. Our own implementation; `constriction`'s `SmallAnsCoder` is the
//! same coder and serves as the benchmark peer.

use crate::model::{PRECISION, Slot, TOTAL};

/// Lower bound of the normalised state, initial encoder state, block end state.
pub(crate) const LOWER: u32 = 1 << 16;

/// The decoder needed a word at u16 index `.0` of its source, past the end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Underrun(pub(crate) usize);

/// Decoder over a little-endian u16 word source; words are read in increasing address order.
#[derive(Debug, Clone)]
pub(crate) struct Decoder<'a> {
    pub(crate) state: u32,
    /// Next word to read, as a u16 index into `words`.
    pub(crate) pos: usize,
    words: &'a [u8],
}

impl<'a> Decoder<'a> {
    /// A decoder at word `pos` of `words` with the given state.
    pub(crate) fn new(words: &'a [u8], pos: usize, state: u32) -> Self {
        Self { state, pos, words }
    }

    /// A block-layout chunk decoder: the state is the first two words, high half first.
    pub(crate) fn for_chunk(words: &'a [u8]) -> Result<Self, Underrun> {
        let hi = word(words, 0).ok_or(Underrun(0))?;
        let lo = word(words, 1).ok_or(Underrun(1))?;
        Ok(Self::new(words, 2, (u32::from(hi) << 16) | u32::from(lo)))
    }

    /// Decodes `out.len()` symbols into `out` (the hot loop: state and position in locals).
    #[inline]
    pub(crate) fn decode_into(
        &mut self,
        slots: &[Slot; TOTAL as usize],
        out: &mut [i16],
    ) -> Result<(), Underrun> {
        let words = self.words;
        let mut state = self.state;
        let mut pos = self.pos;
        let mut result = Ok(());
        for o in out {
            *o = step(slots, &mut state);
            if !refill(words, &mut state, &mut pos) {
                result = Err(Underrun(pos));
                break;
            }
        }
        self.state = state;
        self.pos = pos;
        result
    }

    /// Decodes `out` with `self` and `other_out` with `other`, two independent streams, in one
    /// loop: the two state-dependency chains (table load → multiply → refill) overlap, which
    /// nearly doubles the symbol rate of a single chain. The longer side finishes alone.
    ///
    /// On an underrun, both decoders' states and positions are saved and the error names the
    /// failing side (0 = `self`, 1 = `other`) and its word index.
    ///
    /// `slots` decodes `self`'s stream, `other_slots` the other's (the same table for two halves
    /// of one time step, different ones for two time steps).
    pub(crate) fn decode_pair_into(
        &mut self,
        other: &mut Self,
        (slots, other_slots): (&[Slot; TOTAL as usize], &[Slot; TOTAL as usize]),
        out: &mut [i16],
        other_out: &mut [i16],
    ) -> Result<(), (u8, Underrun)> {
        let n = out.len().min(other_out.len());
        let (out_a, rest_a) = out.split_at_mut(n);
        let (out_b, rest_b) = other_out.split_at_mut(n);
        let (wa, wb) = (self.words, other.words);
        let (mut sa, mut pa, mut sb, mut pb) = (self.state, self.pos, other.state, other.pos);
        let mut failed = None;
        for (oa, ob) in out_a.iter_mut().zip(out_b.iter_mut()) {
            *oa = step(slots, &mut sa);
            *ob = step(other_slots, &mut sb);
            if !refill(wa, &mut sa, &mut pa) {
                failed = Some(true);
                break;
            }
            if !refill(wb, &mut sb, &mut pb) {
                failed = Some(false);
                break;
            }
        }
        (self.state, self.pos, other.state, other.pos) = (sa, pa, sb, pb);
        match failed {
            Some(true) => Err((0, Underrun(pa))),
            Some(false) => Err((1, Underrun(pb))),
            None => {
                self.decode_into(slots, rest_a).map_err(|u| (0, u))?;
                other.decode_into(other_slots, rest_b).map_err(|u| (1, u))
            }
        }
    }

    /// Decodes and discards `count` symbols of each of two streams, interleaved (as
    /// [`Decoder::decode_pair_into`]).
    pub(crate) fn skip_pair(
        &mut self,
        other: &mut Self,
        tables: (&[Slot; TOTAL as usize], &[Slot; TOTAL as usize]),
        count: u64,
    ) -> Result<(), (u8, Underrun)> {
        let mut a = [0i16; 256];
        let mut b = [0i16; 256];
        let mut left = count;
        while left > 0 {
            let n = usize::try_from(left.min(256)).unwrap_or(256);
            self.decode_pair_into(
                other,
                tables,
                a.get_mut(..n).unwrap_or_default(),
                b.get_mut(..n).unwrap_or_default(),
            )?;
            left -= n as u64;
        }
        Ok(())
    }

    /// Decodes and discards `count` symbols (through `decode_into` on a small scratch buffer,
    /// which measured faster than a store-free loop).
    #[inline]
    pub(crate) fn skip(
        &mut self,
        slots: &[Slot; TOTAL as usize],
        count: u64,
    ) -> Result<(), Underrun> {
        let mut scratch = [0i16; 256];
        let mut left = count;
        while left > 0 {
            let n = usize::try_from(left.min(256)).unwrap_or(256);
            self.decode_into(slots, scratch.get_mut(..n).unwrap_or_default())?;
            left -= n as u64;
        }
        Ok(())
    }
}

/// Decodes one symbol: looks up the slot of `state`'s low 12 bits and advances the state.
#[inline(always)]
fn step(slots: &[Slot; TOTAL as usize], state: &mut u32) -> i16 {
    // The mask keeps the index below 4096, the table length.
    let slot = slots[(*state & (TOTAL - 1)) as usize];
    // (state >> 12) < 2^20, freq <= 4095 and bias < freq: fits in u32.
    *state = (*state >> PRECISION) * u32::from(slot.freq) + u32::from(slot.bias);
    slot.symbol
}

/// Refills a state that fell below [`LOWER`] with the next word; `false` if the source ended.
#[inline(always)]
fn refill(words: &[u8], state: &mut u32, pos: &mut usize) -> bool {
    if *state < LOWER {
        let Some(w) = word(words, *pos) else {
            return false;
        };
        *state = (*state << 16) | u32::from(w);
        *pos += 1;
    }
    true
}

/// The u16 word at index `i` of a little-endian word source.
#[inline(always)]
fn word(words: &[u8], i: usize) -> Option<u16> {
    let b = 2 * i;
    match words.get(b..b + 2) {
        Some(&[x, y]) => Some(u16::from_le_bytes([x, y])),
        _ => None,
    }
}

/// Stack (LIFO) encoder: symbols are encoded in reverse decode order; `words` holds the pushed
/// words in push order (the file stores them reversed).
#[derive(Debug, Clone)]
pub(crate) struct Encoder {
    pub(crate) state: u32,
    pub(crate) words: Vec<u16>,
}

impl Encoder {
    pub(crate) fn new() -> Self {
        Self {
            state: LOWER,
            words: Vec::new(),
        }
    }

    /// Encodes a symbol with frequency `freq` (≥ 1) and cumulative frequency `cdf`. Returns
    /// `false` (and does nothing) if `freq` is 0.
    #[inline(always)]
    pub(crate) fn encode(&mut self, freq: u16, cdf: u16) -> bool {
        let f = u32::from(freq);
        if f == 0 {
            return false;
        }
        if (self.state >> (32 - 16 + 4)) >= f {
            self.words.push(low16(self.state));
            self.state >>= 16;
        }
        self.state = ((self.state / f) << PRECISION) | ((self.state % f) + u32::from(cdf));
        true
    }
}

/// The low 16 bits of `x`.
#[inline(always)]
pub(crate) fn low16(x: u32) -> u16 {
    #[allow(clippy::cast_possible_truncation)] // truncation is the point
    let w = x as u16;
    w
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{DecodeTable, EncodeTable, EntropyModel};

    #[test]
    fn encode_decode_round_trip() {
        let model = EntropyModel::new(vec![0, 3, -7], vec![4000, 90, 6]).unwrap();
        let mut et = EncodeTable::new();
        et.fill(&model);
        let dt = DecodeTable::new(&model);
        let msg: Vec<i16> = (0..1000).map(|i| [0, 0, 3, 0, -7][i % 5]).collect();
        let mut enc = Encoder::new();
        for &s in msg.iter().rev() {
            let (f, c) = et.entries[usize::from(s.cast_unsigned())];
            assert!(enc.encode(f, c));
        }
        enc.words.push(low16(enc.state));
        enc.words.push(low16(enc.state >> 16));
        let bytes: Vec<u8> = enc
            .words
            .iter()
            .rev()
            .flat_map(|w| w.to_le_bytes())
            .collect();
        let mut dec = Decoder::for_chunk(&bytes).unwrap();
        let mut out = vec![0i16; msg.len()];
        dec.decode_into(&dt.slots, &mut out).unwrap();
        assert_eq!(out, msg);
        assert_eq!(dec.state, LOWER);
        assert_eq!(dec.pos, enc.words.len());
    }

    #[test]
    fn pair_decoding_equals_two_single_decodes() {
        let model = EntropyModel::new(vec![0, 3, -7, 9], vec![3000, 700, 300, 96]).unwrap();
        let mut et = EncodeTable::new();
        et.fill(&model);
        let dt = DecodeTable::new(&model);
        let chunk = |msg: &[i16]| -> Vec<u8> {
            let mut enc = Encoder::new();
            for &s in msg.iter().rev() {
                let (f, c) = et.entries[usize::from(s.cast_unsigned())];
                assert!(enc.encode(f, c));
            }
            enc.words.push(low16(enc.state));
            enc.words.push(low16(enc.state >> 16));
            enc.words
                .iter()
                .rev()
                .flat_map(|w| w.to_le_bytes())
                .collect()
        };
        for (la, lb) in [(1000, 1000), (1000, 37), (5, 900), (0, 10)] {
            let ma: Vec<i16> = (0..la).map(|i| [0, 0, 3, 0, -7, 9][(i * 7) % 6]).collect();
            let mb: Vec<i16> = (0..lb).map(|i| [9, 0, 0, 3][(i * 5) % 4]).collect();
            let (ca, cb) = (chunk(&ma), chunk(&mb));
            let mut da = Decoder::for_chunk(&ca).unwrap();
            let mut db = Decoder::for_chunk(&cb).unwrap();
            let (mut oa, mut ob) = (vec![0i16; la], vec![0i16; lb]);
            da.decode_pair_into(&mut db, (&dt.slots, &dt.slots), &mut oa, &mut ob)
                .unwrap();
            assert_eq!((oa, ob), (ma, mb));
            assert_eq!((da.state, db.state), (LOWER, LOWER));
            assert_eq!((da.pos, db.pos), (ca.len() / 2, cb.len() / 2));
        }
        // An underrun on either side is reported with that side's word index.
        let ca = chunk(&[3; 200]);
        let mut da = Decoder::for_chunk(&ca[..ca.len() / 2]).unwrap();
        let mut db = Decoder::for_chunk(&ca).unwrap();
        let (mut oa, mut ob) = (vec![0i16; 200], vec![0i16; 200]);
        let err = da.decode_pair_into(&mut db, (&dt.slots, &dt.slots), &mut oa, &mut ob);
        assert_eq!(err, Err((0, Underrun(ca.len() / 4))));
    }

    #[test]
    fn underrun_is_reported() {
        let model = EntropyModel::new(vec![0, 1], vec![2048, 2048]).unwrap();
        let dt = DecodeTable::new(&model);
        let mut dec = Decoder::new(&[], 0, LOWER);
        let mut out = [0i16; 64];
        assert_eq!(dec.decode_into(&dt.slots, &mut out), Err(Underrun(0)));
        assert!(Decoder::for_chunk(&[1, 2]).is_err());
    }
}
