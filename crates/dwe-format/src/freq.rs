//! The reference builder's frequency quantiser: turns symbol counts into 12-bit frequencies
//! (initial proportional weights, remainder to the largest gains, then unit trades while they
//! save bits; see [`crate::file_format`]). Needed only to write files byte-identical to the
//! reference.

use crate::error::{Error, Result};
use crate::model::{EntropyModel, TOTAL};

struct Entry {
    symbol: i16,
    count: u64,
    weight: u64,
    win: f64,
    loss: f64,
}

impl Entry {
    fn update(&mut self) {
        let c = self.count as f64;
        let w = self.weight as f64;
        self.win = if self.weight >= u64::from(TOTAL - 1) {
            f64::NEG_INFINITY
        } else {
            c * ((w + 1.0) / w).log2()
        };
        self.loss = if self.weight <= 1 {
            f64::INFINITY
        } else {
            c * (w / (w - 1.0)).log2()
        };
    }
}

/// The model the reference builder chooses for symbols with the given counts
/// (`(symbol, count)`, counts ≥ 1, distinct symbols, any order).
///
/// # Errors
/// [`Error::InvalidParameter`] for no symbols or a zero count, [`Error::TooManySymbols`]
/// (with time step 0) for more than 4096 symbols.
pub fn optimal_model(counts: &[(i16, u64)]) -> Result<EntropyModel> {
    let n = counts.len();
    if n == 0 || counts.iter().any(|&(_, c)| c == 0) {
        return Err(Error::InvalidParameter {
            what: "symbol counts",
            reason: "need at least one symbol, all counts >= 1".into(),
        });
    }
    if n > TOTAL as usize {
        return Err(Error::TooManySymbols {
            timestep: 0,
            count: n,
        });
    }
    if let [(s, _)] = counts {
        return EntropyModel::new(vec![*s, s.wrapping_add(1)], vec![4095, 1]);
    }
    let n64 = n as u64;
    let free = u64::from(TOTAL) - n64;
    let total: u64 = counts.iter().map(|&(_, c)| c).sum();
    let mut entries: Vec<Entry> = counts
        .iter()
        .map(|&(symbol, count)| {
            let mut e = Entry {
                symbol,
                count,
                weight: 1
                    + (u128::from(count) * u128::from(free) / u128::from(total))
                        .try_into()
                        .unwrap_or(0u64),
                win: 0.0,
                loss: 0.0,
            };
            e.update();
            e
        })
        .collect();
    let assigned: u64 = entries.iter().map(|e| e.weight).sum();
    let remaining = usize::try_from(u64::from(TOTAL).saturating_sub(assigned)).unwrap_or(0);
    entries.sort_by(|a, b| b.win.total_cmp(&a.win).then(a.symbol.cmp(&b.symbol)));
    for e in entries.iter_mut().take(remaining) {
        e.weight += 1;
        e.update();
    }
    loop {
        // Buyer: maximal win, last on ties. Seller: minimal loss, first on ties.
        let mut buyer = 0;
        let mut seller = 0;
        for (i, e) in entries.iter().enumerate() {
            if e.win >= entries[buyer].win {
                buyer = i;
            }
            if e.loss < entries[seller].loss {
                seller = i;
            }
        }
        if buyer == seller || entries[buyer].win <= entries[seller].loss {
            break;
        }
        entries[seller].weight -= 1;
        entries[seller].update();
        entries[buyer].weight += 1;
        entries[buyer].update();
    }
    entries.sort_by(|a, b| b.weight.cmp(&a.weight).then(a.symbol.cmp(&b.symbol)));
    let symbols = entries.iter().map(|e| e.symbol).collect();
    let frequencies = entries
        .iter()
        .map(|e| u16::try_from(e.weight).unwrap_or(0))
        .collect();
    EntropyModel::new(symbols, frequencies)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn degenerate_single_symbol() {
        let m = optimal_model(&[(0, 8)]).unwrap();
        assert_eq!(m.symbols(), [0, 1]);
        assert_eq!(m.frequencies(), [4095, 1]);
        let m = optimal_model(&[(i16::MAX, 3)]).unwrap();
        assert_eq!(m.symbols(), [i16::MAX, i16::MIN]);
    }

    #[test]
    fn sums_to_4096_and_keeps_every_symbol() {
        let counts: Vec<(i16, u64)> = (-150i16..150)
            .zip(0u64..)
            .map(|(s, i)| (s, 1 + (i % 17) * 31))
            .collect();
        let m = optimal_model(&counts).unwrap();
        assert_eq!(m.symbols().len(), 300);
        assert_eq!(
            m.frequencies().iter().map(|&f| u32::from(f)).sum::<u32>(),
            4096
        );
    }
}
