//! Entropy models: the per-time-step symbol table with 12-bit frequencies, its on-disk encoding
//! (u16 count, i16 symbols, n−1 frequencies packed as 12-bit fields with zero padding in front;
//! see [`crate::file_format`]) and the 4096-entry decoder lookup table.

use crate::bytes::{truncated, u16_at};
use crate::error::{Error, Result};

/// Frequencies of a model sum to `1 << PRECISION`.
pub const PRECISION: u32 = 12;
/// The frequency total, 4096.
pub(crate) const TOTAL: u32 = 1 << PRECISION;
/// Largest number of symbols a model can have.
pub const MAX_SYMBOLS: usize = 4096;

/// An entropy model: distinct i16 symbols in file order with frequencies ≥ 1 summing to 4096.
///
/// The order fixes the cumulative distribution: symbol `i` owns the quantiles
/// `cdf[i] .. cdf[i] + freq[i]` with `cdf[i] = Σ_{j<i} freq[j]`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(try_from = "RawModel"))]
pub struct EntropyModel {
    symbols: Vec<i16>,
    frequencies: Vec<u16>,
}

/// The serialized form of an [`EntropyModel`], validated by [`EntropyModel::new`] on the way in.
#[cfg(feature = "serde")]
#[derive(serde::Deserialize)]
struct RawModel {
    symbols: Vec<i16>,
    frequencies: Vec<u16>,
}

#[cfg(feature = "serde")]
impl TryFrom<RawModel> for EntropyModel {
    type Error = Error;

    fn try_from(raw: RawModel) -> Result<Self> {
        Self::new(raw.symbols, raw.frequencies)
    }
}

impl EntropyModel {
    /// A model from symbols and **all** n frequencies (including the last one, which files infer).
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] unless 2 ≤ n ≤ 4096, both lists have the same length, every
    /// frequency is ≥ 1 and they sum to exactly 4096.
    pub fn new(symbols: Vec<i16>, frequencies: Vec<u16>) -> Result<Self> {
        let bad = |reason: &str| {
            Err(Error::InvalidParameter {
                what: "entropy model",
                reason: reason.to_owned(),
            })
        };
        if symbols.len() != frequencies.len() {
            return bad("symbols and frequencies differ in length");
        }
        if !(2..=MAX_SYMBOLS).contains(&symbols.len()) {
            return bad("number of symbols must be in 2..=4096");
        }
        if frequencies.contains(&0) {
            return bad("zero frequency");
        }
        if frequencies.iter().map(|&f| u32::from(f)).sum::<u32>() != TOTAL {
            return bad("frequencies do not sum to 4096");
        }
        Ok(Self {
            symbols,
            frequencies,
        })
    }

    /// The symbols in file order.
    #[must_use]
    pub fn symbols(&self) -> &[i16] {
        &self.symbols
    }

    /// All n frequencies in file order (the last is the inferred one).
    #[must_use]
    pub fn frequencies(&self) -> &[u16] {
        &self.frequencies
    }

    /// Encoded length in u16 words: `1 + n + floor(3n/4)`.
    #[must_use]
    pub fn encoded_u16_len(&self) -> usize {
        encoded_u16_len(self.symbols.len())
    }

    /// Parses the model starting at byte `offset` of `data`; returns it and its length in bytes.
    pub(crate) fn parse(data: &[u8], offset: usize, timestep: u32) -> Result<(Self, usize)> {
        let invalid = |reason| Error::InvalidModel {
            timestep,
            offset: offset as u64,
            reason,
        };
        let n = usize::from(u16_at(data, offset, "entropy model")?);
        if n < 2 {
            return Err(invalid("num_symbols must be at least 2"));
        }
        if n > MAX_SYMBOLS {
            return Err(invalid("num_symbols must be at most 4096"));
        }
        let len = 2 * encoded_u16_len(n);
        let body = offset
            .checked_add(len)
            .and_then(|end| data.get(offset + 2..end))
            .ok_or_else(|| truncated(data, offset, len as u64, "entropy model"))?;
        let (sym_bytes, freq_bytes) = body.split_at(2 * n);
        let symbols: Vec<i16> = sym_bytes
            .chunks_exact(2)
            .map(|b| i16::from_le_bytes([b[0], b[1]]))
            .collect();
        let words: Vec<u16> = freq_bytes
            .chunks_exact(2)
            .map(|b| u16::from_le_bytes([b[0], b[1]]))
            .collect();
        let mut frequencies = Vec::with_capacity(n);
        unpack_u12(&words, n - 1, &mut frequencies);
        let mut sum = 0u32;
        for &f in &frequencies {
            if f == 0 {
                return Err(invalid("zero frequency"));
            }
            sum += u32::from(f);
        }
        if sum >= TOTAL {
            return Err(invalid("stored frequencies sum to 4096 or more"));
        }
        // TOTAL - sum is in 1..=4095 here.
        frequencies.push(u16::try_from(TOTAL - sum).map_err(|_| invalid("frequency sum"))?);
        Ok((
            Self {
                symbols,
                frequencies,
            },
            len,
        ))
    }

    /// Appends the encoding (`num_symbols`, symbols, packed frequencies) as LE u16 words.
    pub(crate) fn write(&self, out: &mut Vec<u8>) {
        let n = u16::try_from(self.symbols.len()).unwrap_or(u16::MAX);
        out.extend_from_slice(&n.to_le_bytes());
        for s in &self.symbols {
            out.extend_from_slice(&s.to_le_bytes());
        }
        let stored = self.frequencies.len().saturating_sub(1);
        for w in pack_u12(self.frequencies.get(..stored).unwrap_or_default()) {
            out.extend_from_slice(&w.to_le_bytes());
        }
    }
}

/// `1 + n + floor(3n/4)`: u16 words of a model with n symbols.
pub(crate) fn encoded_u16_len(n: usize) -> usize {
    1 + n + 3 * n / 4
}

/// Packs 12-bit values MSB-first into u16 words, zero padding at the front (the frequency
/// packing of the format).
#[must_use]
pub fn pack_u12(values: &[u16]) -> Vec<u16> {
    let bits = 12 * values.len();
    let words = bits.div_ceil(16);
    let mut out = Vec::with_capacity(words);
    let mut acc: u32 = 0;
    let mut nbits = 16 * words - bits; // leading zero padding
    for &v in values {
        acc = (acc << 12) | u32::from(v & 0xFFF);
        nbits += 12;
        while nbits >= 16 {
            nbits -= 16;
            out.push(((acc >> nbits) & 0xFFFF) as u16);
            acc &= (1 << nbits) - 1;
        }
    }
    out
}

/// Unpacks `count` 12-bit values from `words` (the inverse of [`pack_u12`]); padding bits are
/// ignored. Missing words read as zero.
pub fn unpack_u12(words: &[u16], count: usize, out: &mut Vec<u16>) {
    let total_words = (12 * count).div_ceil(16);
    let mut skip = 16 * total_words - 12 * count;
    let mut acc: u32 = 0;
    let mut nbits = 0usize;
    for i in 0..total_words {
        acc = (acc << 16) | u32::from(words.get(i).copied().unwrap_or(0));
        nbits += 16;
        if skip > 0 {
            nbits -= skip;
            acc &= (1 << nbits) - 1;
            skip = 0;
        }
        while nbits >= 12 {
            nbits -= 12;
            out.push(((acc >> nbits) & 0xFFF) as u16);
            acc &= (1 << nbits) - 1;
        }
    }
}

/// One entry of the decoder lookup table, for quantile `q` (8-byte aligned: one load).
#[derive(Debug, Clone, Copy, Default)]
#[repr(C, align(8))]
pub(crate) struct Slot {
    /// Frequency of the symbol owning `q`.
    pub(crate) freq: u16,
    /// `q - cdf` of that symbol.
    pub(crate) bias: u16,
    /// The symbol.
    pub(crate) symbol: i16,
}

/// The 4096-entry lookup table of one model: quantile → (symbol, frequency, offset).
#[derive(Debug, Clone)]
pub(crate) struct DecodeTable {
    pub(crate) slots: Box<[Slot; TOTAL as usize]>,
}

/// Bytes of one [`DecodeTable`].
pub(crate) const TABLE_BYTES: u64 = (TOTAL as u64) * (core::mem::size_of::<Slot>() as u64);

impl DecodeTable {
    pub(crate) fn new(model: &EntropyModel) -> Self {
        let mut slots = Box::new([Slot::default(); TOTAL as usize]);
        let mut q = 0usize;
        for (&symbol, &freq) in model.symbols.iter().zip(&model.frequencies) {
            for bias in 0..freq {
                if let Some(slot) = slots.get_mut(q) {
                    *slot = Slot { freq, bias, symbol };
                }
                q += 1;
            }
        }
        Self { slots }
    }
}

/// Symbol → (frequency, cdf) for the encoder, indexed by the symbol's u16 bit pattern.
#[derive(Debug)]
pub(crate) struct EncodeTable {
    pub(crate) entries: Vec<(u16, u16)>,
}

impl EncodeTable {
    pub(crate) fn new() -> Self {
        Self {
            entries: vec![(0, 0); 1 << 16],
        }
    }

    pub(crate) fn fill(&mut self, model: &EntropyModel) {
        self.entries.fill((0, 0));
        let mut cdf = 0u16;
        for (&s, &f) in model.symbols.iter().zip(&model.frequencies) {
            if let Some(e) = self.entries.get_mut(usize::from(s.cast_unsigned())) {
                *e = (f, cdf);
            }
            cdf = cdf.wrapping_add(f);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packs_the_upstream_example_and_a_reference_written_model() {
        // The example of the upstream format page.
        assert_eq!(
            pack_u12(&[0x167, 0x289, 0x3ab, 0x0cd, 0x5ef]),
            [0x0167, 0x2893, 0xab0c, 0xd5ef]
        );
        // Time step 0 of the reference-made fixture stream/small_2_4_4_j2.dwe: stored
        // frequencies 2560, 512, 256, 256, 256 (the sixth is inferred), 4 bits of padding.
        // (Every model of every fixture is re-encoded byte for byte by the writer tests.)
        assert_eq!(
            pack_u12(&[2560, 512, 256, 256, 256]),
            [0x0a00, 0x2001, 0x0010, 0x0100]
        );
        assert!(pack_u12(&[]).is_empty());
    }

    #[test]
    fn unpack_inverts_pack() {
        for m in 0..40u16 {
            let vals: Vec<u16> = (0..m).map(|i| (i * 997 + 13) & 0xFFF).collect();
            let mut out = Vec::new();
            unpack_u12(&pack_u12(&vals), vals.len(), &mut out);
            assert_eq!(out, vals);
        }
    }

    #[test]
    fn unpack_real_example() {
        // small_2_4_4, t=0: n=6.
        let mut out = Vec::new();
        unpack_u12(&[0x0a00, 0x2001, 0x0010, 0x0100], 5, &mut out);
        assert_eq!(out, [2560, 512, 256, 256, 256]);
    }

    #[test]
    fn table_covers_all_quantiles() {
        let m = EntropyModel::new(vec![5, -1, 7], vec![4000, 95, 1]).unwrap();
        let t = DecodeTable::new(&m);
        assert_eq!(t.slots[0].symbol, 5);
        assert_eq!(t.slots[3999].bias, 3999);
        assert_eq!(t.slots[4000].symbol, -1);
        assert_eq!(t.slots[4000].bias, 0);
        assert_eq!(t.slots[4095].symbol, 7);
        assert_eq!(t.slots[4095].freq, 1);
    }
}
