//! Queries with the upstream reader's semantics, bit for bit: i32 dot products with wrapping
//! adds, scaled as `f32(s²) · f32(dot)`.

use crate::bytes::us;
use crate::error::Result;
use crate::limits::Limits;
use crate::reader::DweFile;

/// Dot product in i32 with wrapping adds (the reference's release-mode arithmetic).
#[inline]
fn dot(a: &[i16], b: &[i16]) -> i32 {
    a.iter().zip(b).fold(0i32, |acc, (&x, &y)| {
        acc.wrapping_add(i32::from(x) * i32::from(y))
    })
}

impl<B: AsRef<[u8]>> DweFile<B> {
    /// For each pair `(words1[p], words2[p])` and time step t, the real-valued dot product
    /// `f32(s·s) × f32(dot_i32)` (s = scale_factor, all in f32), flattened `[pair][T]`.
    /// Empty inputs or inputs of different length give an empty result, like the reference.
    ///
    /// # Errors
    /// [`Error::IndexOutOfRange`](crate::Error::IndexOutOfRange) for a word ≥ V; decoding errors.
    pub fn pairwise_trajectories(&self, words1: &[u32], words2: &[u32]) -> Result<Vec<f32>> {
        if words1.is_empty() || words1.len() != words2.len() {
            return Ok(Vec::new());
        }
        let mut unique: Vec<u32> = words1.iter().chain(words2).copied().collect();
        unique.sort_unstable();
        unique.dedup();
        let t_count = us(self.num_timesteps());
        let k = self.k();
        Limits::check(
            "trajectory values (words·T·K)",
            (unique.len() as u64)
                .saturating_mul(t_count as u64)
                .saturating_mul(k as u64),
            self.limits.max_total_values,
        )?;
        let trajectories = unique
            .iter()
            .map(|&w| self.trajectory(w))
            .collect::<Result<Vec<_>>>()?;
        let find = |w: u32| {
            unique
                .binary_search(&w)
                .ok()
                .and_then(|i| trajectories.get(i))
        };
        let s = self.scale_factor();
        let s2 = s * s;
        let mut out = Vec::with_capacity(words1.len() * t_count);
        for (&a, &b) in words1.iter().zip(words2) {
            let (Some(ta), Some(tb)) = (find(a), find(b)) else {
                continue;
            };
            for (va, vb) in ta.chunks(k).zip(tb.chunks(k)) {
                #[allow(clippy::cast_precision_loss)] // the reference converts i32 to f32 too
                out.push(s2 * dot(va, vb) as f32);
            }
        }
        Ok(out)
    }

    /// For each target word, the `amt` words with the largest i32 dot product with it at time
    /// step `t` (the target itself excluded), flattened `[target][rank]`. Ties favour lower word
    /// ids; unfilled ranks hold `u32::MAX`. Rows follow `target_words`, duplicates included.
    ///
    /// # Errors
    /// [`Error::IndexOutOfRange`](crate::Error::IndexOutOfRange), limit and decoding errors.
    pub fn most_related_to_at_t(
        &self,
        target_words: &[u32],
        t: u32,
        amt: usize,
    ) -> Result<Vec<u32>> {
        self.check_t(t)?;
        for &w in target_words {
            self.check_word(w)?;
        }
        Limits::check(
            "query result entries",
            (target_words.len() as u64).saturating_mul(amt as u64),
            self.limits.max_timestep_values,
        )?;
        let x = self.timestep(t)?;
        let k = self.k();
        let mut unique: Vec<u32> = target_words.to_vec();
        unique.sort_unstable();
        unique.dedup();
        let mut lists = Vec::with_capacity(unique.len());
        for &target in &unique {
            let tv = x
                .get(us(target) * k..us(target) * k + k)
                .unwrap_or_default();
            let mut top: Vec<(u32, i32)> = vec![(u32::MAX, i32::MIN); amt];
            for (w, v) in (0u32..).zip(x.chunks(k)) {
                if w == target {
                    continue;
                }
                let score = dot(v, tv);
                let Some(last) = top.last_mut() else { break };
                if score > last.1 {
                    *last = (w, score);
                    let mut i = amt - 1;
                    while i > 0 && top.get(i - 1).is_some_and(|e| e.1 < score) {
                        top.swap(i - 1, i);
                        i -= 1;
                    }
                }
            }
            lists.push(top);
        }
        let mut out = Vec::with_capacity(target_words.len() * amt);
        for w in target_words {
            if let Some(list) = unique.binary_search(w).ok().and_then(|i| lists.get(i)) {
                out.extend(list.iter().map(|e| e.0));
            }
        }
        Ok(out)
    }

    /// The words whose dot product with `target` changed most between the first and the last
    /// time step, with the reference's mixing rule: the top `min_increasing` increases and
    /// `min_decreasing` decreases are guaranteed places, the remaining places go to the largest
    /// changes in either direction; the `amt` results are ordered by change, descending.
    ///
    /// # Errors
    /// [`Error::IndexOutOfRange`](crate::Error::IndexOutOfRange), limit and decoding errors.
    pub fn largest_changes_wrt(
        &self,
        target: u32,
        amt: usize,
        min_increasing: usize,
        min_decreasing: usize,
    ) -> Result<Vec<u32>> {
        self.check_word(target)?;
        let k = self.k();
        let first = self.residuals(0)?;
        let last = self.residuals(self.num_timesteps() - 1)?;
        let at = |w: u32| us(w) * k..us(w) * k + k;
        let t0 = first.get(at(target)).unwrap_or_default();
        let t1 = last.get(at(target)).unwrap_or_default();
        let mut inc: Vec<(u32, i64)> = Vec::new();
        let mut dec: Vec<(u32, i64)> = Vec::new();
        let insert = |list: &mut Vec<(u32, i64)>, entry: (u32, i64)| {
            let pos = list.iter().take_while(|e| e.1 >= entry.1).count();
            if pos < amt {
                list.insert(pos, entry);
                list.truncate(amt);
            }
        };
        for (w, (a, b)) in (0u32..).zip(first.chunks(k).zip(last.chunks(k))) {
            if w == target {
                continue;
            }
            let d = i64::from(dot(b, t1)) - i64::from(dot(a, t0));
            insert(&mut inc, (w, d));
            insert(&mut dec, (w, -d));
        }
        let mi = min_increasing.min(inc.len());
        let md = min_decreasing.min(dec.len());
        let (inc_head, inc_tail) = inc.split_at(mi);
        let (dec_head, dec_tail) = dec.split_at(md);
        let mut all: Vec<(u32, i64)> = inc_head
            .iter()
            .chain(dec_head)
            .chain(inc_tail)
            .chain(dec_tail)
            .copied()
            .collect();
        let guaranteed = mi + md;
        if let Some(tail) = all.get_mut(guaranteed..) {
            tail.sort_by_key(|e| core::cmp::Reverse(e.1));
        }
        all.truncate(amt);
        all.sort_by_key(|e| core::cmp::Reverse(e.1));
        Ok(all.into_iter().map(|e| e.0).collect())
    }
}
