//! Opening files and decoding residuals and values.

use std::path::Path;

use crate::ans::{Decoder, LOWER, Underrun};
use crate::bytes::{u32_at, us};
use crate::error::{Error, Result};
use crate::header::Header;
use crate::layout::{self, BlockIndex, Index, Layout, StreamIndex};
use crate::limits::Limits;
use crate::model::{DecodeTable, EntropyModel, Slot, TOTAL};
use crate::tree::{self, interior_preorder, path_to};

/// How to open a file: layout choice, limits, integrity checking.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct OpenOptions {
    layout: Option<Layout>,
    limits: Limits,
    check_integrity: bool,
}

impl OpenOptions {
    /// Defaults: detect the layout, default [`Limits`], no integrity checks.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Read the file as this layout instead of detecting it.
    #[must_use]
    pub fn with_layout(mut self, layout: Layout) -> Self {
        self.layout = Some(layout);
        self
    }

    /// Use these limits.
    #[must_use]
    pub fn with_limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Check, while decoding whole chunks (block layout) or whole time steps (stream layout),
    /// that the decoder ends in state 0x10000 / passes every jump-table row exactly. Off by
    /// default, like the reference reader; [`DweFile::verify`] checks everything at once.
    #[must_use]
    pub fn with_check_integrity(mut self, on: bool) -> Self {
        self.check_integrity = on;
        self
    }

    /// Opens a file held in memory (anything that derefs to bytes: `Vec<u8>`, `&[u8]`, a map).
    ///
    /// # Errors
    /// Any structural problem: see [`Error`]. With no explicit layout,
    /// [`Error::AmbiguousLayout`] or [`Error::UnknownLayout`] when detection fails.
    pub fn open<B: AsRef<[u8]>>(&self, data: B) -> Result<DweFile<B>> {
        let parsed = layout::parse(data.as_ref(), self.layout, &self.limits)?;
        let layout = match parsed.index {
            Index::Block(_) => Layout::Block,
            Index::Stream(_) => Layout::Stream,
        };
        let tables = parsed.models.iter().map(DecodeTable::new).collect();
        Ok(DweFile {
            data,
            header: parsed.header,
            layout,
            models: parsed.models,
            tables,
            index: parsed.index,
            limits: self.limits,
            check_integrity: self.check_integrity,
        })
    }

    /// Reads a whole file into memory and opens it.
    ///
    /// # Errors
    /// I/O errors, [`Error::LimitExceeded`] if the file is larger than
    /// [`Limits::max_file_bytes`], and everything [`OpenOptions::open`] reports.
    pub fn read_file(&self, path: impl AsRef<Path>) -> Result<DweFile<Vec<u8>>> {
        use std::io::Read;
        let file = std::fs::File::open(path)?;
        let len = file.metadata()?.len();
        Limits::check("input bytes", len, self.limits.max_file_bytes)?;
        let mut data = Vec::new();
        // Never trust the metadata alone: read at most one byte past the limit.
        file.take(self.limits.max_file_bytes.saturating_add(1))
            .read_to_end(&mut data)?;
        self.open(data)
    }

    /// Memory-maps a file and opens it.
    ///
    /// # Safety
    /// The file must not be modified or truncated (by this or another process) while the
    /// returned value or anything borrowed from it is alive: a memory map exposes such changes
    /// as changing or vanishing memory, which is undefined behaviour for a `&[u8]`. Use
    /// [`OpenOptions::read_file`] when that cannot be guaranteed.
    ///
    /// # Errors
    /// I/O errors and everything [`OpenOptions::open`] reports.
    #[allow(
        unsafe_code,
        reason = "memory-mapping is unsafe by nature; the caller vouches for the file (# Safety)"
    )]
    pub unsafe fn map_file(&self, path: impl AsRef<Path>) -> Result<DweFile<memmap2::Mmap>> {
        let file = std::fs::File::open(path)?;
        // SAFETY: the caller guarantees (see `# Safety`) that the file stays unmodified while
        // the map lives; the map is read-only and owned by the returned value.
        let map = unsafe { memmap2::Mmap::map(&file)? };
        self.open(map)
    }
}

/// An opened `.dwe` file (either layout) over bytes of type `B`.
///
/// Two layers are exposed: the **residual layer** (what the entropy coder stores, per time step)
/// and the **value layer** (the quantised embeddings, reconstructed through the bisection tree
/// with wrapping i16 arithmetic exactly like the reference reader). Values are i16; `*_f32`
/// methods multiply by `scale_factor`.
pub struct DweFile<B> {
    data: B,
    header: Header,
    layout: Layout,
    models: Vec<EntropyModel>,
    tables: Vec<DecodeTable>,
    index: Index,
    pub(crate) limits: Limits,
    check_integrity: bool,
}

impl<B> core::fmt::Debug for DweFile<B> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("DweFile")
            .field("header", &self.header)
            .field("layout", &self.layout)
            .finish_non_exhaustive()
    }
}

impl<B: AsRef<[u8]>> DweFile<B> {
    /// Opens `data` with default options (layout detected, default limits).
    ///
    /// # Errors
    /// See [`OpenOptions::open`].
    pub fn from_bytes(data: B) -> Result<Self> {
        OpenOptions::new().open(data)
    }

    /// The header.
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// The layout of this file.
    pub fn layout(&self) -> Layout {
        self.layout
    }

    /// T.
    pub fn num_timesteps(&self) -> u32 {
        self.header.num_timesteps
    }

    /// V.
    pub fn vocab_size(&self) -> u32 {
        self.header.vocab_size
    }

    /// K.
    pub fn embedding_dim(&self) -> u32 {
        self.header.embedding_dim
    }

    /// The scale factor.
    pub fn scale_factor(&self) -> f32 {
        self.header.scale_factor
    }

    /// The entropy model of time step `t`, if `t < T`.
    pub fn model(&self, t: u32) -> Option<&EntropyModel> {
        self.models.get(us(t))
    }

    /// The underlying bytes.
    pub fn as_bytes(&self) -> &[u8] {
        self.data.as_ref()
    }

    /// Gives the bytes back.
    pub fn into_inner(self) -> B {
        self.data
    }

    pub(crate) fn k(&self) -> usize {
        us(self.header.embedding_dim)
    }

    pub(crate) fn vk(&self) -> usize {
        // Checked against the limits (a u64) at open time; fits in usize on 64-bit targets and
        // is below the default limits on 32-bit ones.
        us(self.header.vocab_size).saturating_mul(self.k())
    }

    pub(crate) fn check_t(&self, t: u32) -> Result<()> {
        if t >= self.header.num_timesteps {
            return Err(Error::IndexOutOfRange {
                what: "time step",
                index: u64::from(t),
                len: u64::from(self.header.num_timesteps),
            });
        }
        Ok(())
    }

    pub(crate) fn check_word(&self, word: u32) -> Result<()> {
        if word >= self.header.vocab_size {
            return Err(Error::IndexOutOfRange {
                what: "word",
                index: u64::from(word),
                len: u64::from(self.header.vocab_size),
            });
        }
        Ok(())
    }

    /// A zeroed buffer of V·K values (checked against the limits).
    pub(crate) fn timestep_buffer(&self) -> Result<Vec<i16>> {
        Limits::check(
            "values per time step (V·K)",
            self.vk() as u64,
            self.limits.max_timestep_values,
        )?;
        Ok(vec![0; self.vk()])
    }

    fn table(&self, t: u32) -> Result<&DecodeTable> {
        self.tables.get(us(t)).ok_or(Error::IndexOutOfRange {
            what: "time step",
            index: u64::from(t),
            len: u64::from(self.header.num_timesteps),
        })
    }

    /// Jump-table row `row`: (offset in u16 words, state).
    fn jump_row(&self, s: &StreamIndex, row: usize) -> Result<(usize, u32)> {
        let at = s.jump_table.saturating_add(row.saturating_mul(8));
        let offset = u32_at(self.data.as_ref(), at, "jump table")?;
        let state = u32_at(self.data.as_ref(), at.saturating_add(4), "jump table")?;
        Ok((us(offset), state))
    }

    /// Decodes the residuals of words `first_word ..` of time step `t` into `out`
    /// (`out.len()` must be a multiple of K and stay within V words).
    pub(crate) fn decode_words(&self, t: u32, first_word: usize, out: &mut [i16]) -> Result<()> {
        let table = &self.table(t)?.slots;
        let k = self.k();
        let data = self.data.as_ref();
        match &self.index {
            Index::Stream(s) => {
                let row = us(t) * s.points + first_word / s.interval;
                let (offset, state) = self.jump_row(s, row)?;
                let src = data.get(s.section..).unwrap_or_default();
                let mut dec = Decoder::new(src, offset, state);
                let underrun = |u: Underrun| Error::WordUnderrun {
                    timestep: t,
                    offset: (s.section + 2 * u.0) as u64,
                };
                dec.skip(table, (k * (first_word % s.interval)) as u64)
                    .map_err(underrun)?;
                let full = first_word == 0 && out.len() == self.vk();
                if full && self.check_integrity {
                    self.decode_stream_checked(s, t, &mut dec, out)
                        .map_err(|e| match e {
                            CheckedErr::Underrun(u) => underrun(u),
                            CheckedErr::Other(e) => e,
                        })
                } else {
                    // Long runs: a second decoder starts at the jump-table row nearest the
                    // middle and both halves decode interleaved (`decode_pair_into`).
                    let words = out.len() / k.max(1);
                    let mid = (first_word + words / 2) / s.interval * s.interval;
                    if words >= 2 * s.interval && mid > first_word {
                        let (offset, state) =
                            self.jump_row(s, us(t) * s.points + mid / s.interval)?;
                        let mut second = Decoder::new(src, offset, state);
                        let (a, b) = out.split_at_mut((mid - first_word) * k);
                        dec.decode_pair_into(&mut second, (table, table), a, b)
                            .map_err(|(_, u)| underrun(u))
                    } else {
                        dec.decode_into(table, out).map_err(underrun)
                    }
                }
            }
            Index::Block(b) => self.decode_block_words(b, t, first_word, out),
        }
    }

    /// The residuals of word `word` at two time steps (`a.len()` = `b.len()` = K): in the stream
    /// layout both decodes (jump to the row, skip, decode) run interleaved; otherwise one after
    /// the other.
    fn decode_word_pair(
        &self,
        word: usize,
        (ta, a): (u32, &mut [i16]),
        (tb, b): (u32, &mut [i16]),
    ) -> Result<()> {
        let Index::Stream(s) = &self.index else {
            self.decode_words(ta, word, a)?;
            return self.decode_words(tb, word, b);
        };
        let src = self.data.as_ref().get(s.section..).unwrap_or_default();
        let open = |t: u32| -> Result<Decoder<'_>> {
            let (offset, state) = self.jump_row(s, us(t) * s.points + word / s.interval)?;
            Ok(Decoder::new(src, offset, state))
        };
        let (mut da, mut db) = (open(ta)?, open(tb)?);
        let tables: (&[Slot; TOTAL as usize], &[Slot; TOTAL as usize]) =
            (&self.table(ta)?.slots, &self.table(tb)?.slots);
        let underrun = |(side, u): (u8, Underrun)| Error::WordUnderrun {
            timestep: if side == 0 { ta } else { tb },
            offset: (s.section + 2 * u.0) as u64,
        };
        da.skip_pair(&mut db, tables, (self.k() * (word % s.interval)) as u64)
            .map_err(underrun)?;
        da.decode_pair_into(&mut db, tables, a, b).map_err(underrun)
    }

    /// Full-time-step stream decode that compares against every jump-table row it passes.
    fn decode_stream_checked(
        &self,
        s: &StreamIndex,
        t: u32,
        dec: &mut Decoder<'_>,
        out: &mut [i16],
    ) -> Result<(), CheckedErr> {
        let table = &self.table(t).map_err(CheckedErr::Other)?.slots;
        let step = s.interval * self.k();
        for (p, piece) in out.chunks_mut(step).enumerate() {
            let row = us(t) * s.points + p;
            let (offset, state) = self.jump_row(s, row).map_err(CheckedErr::Other)?;
            if (dec.pos, dec.state) != (offset, state) {
                return Err(CheckedErr::Other(row_mismatch(row, offset, state, dec)));
            }
            dec.decode_into(table, piece)
                .map_err(CheckedErr::Underrun)?;
        }
        Ok(())
    }

    fn decode_block_words(
        &self,
        b: &BlockIndex,
        t: u32,
        first_word: usize,
        mut out: &mut [i16],
    ) -> Result<()> {
        let table = &self.table(t)?.slots;
        let k = self.k();
        let data = self.data.as_ref();
        let chunk_table = b.chunk_tables.get(us(t)).copied().unwrap_or_default();
        // Decoder at the start of chunk `c`, and the byte offset of its words (for errors).
        let open = |c: usize| -> Result<(Decoder<'_>, usize)> {
            let base = 4 * us(u32_at(data, chunk_table + 4 * c, "chunk_addrs")?);
            let src = data.get(base..).unwrap_or_default();
            let dec = Decoder::for_chunk(src).map_err(|u| underrun_at(t, base, u))?;
            Ok((dec, base))
        };
        let end_check = |c: usize, dec: &Decoder<'_>| -> Result<()> {
            if self.check_integrity && dec.state != LOWER {
                return Err(Error::Integrity {
                    what: format!("end state of chunk {c} of time step {t}"),
                    expected: u64::from(LOWER),
                    found: u64::from(dec.state),
                });
            }
            Ok(())
        };
        let chunk_len = b.chunk_size * k;
        let mut word = first_word;
        while !out.is_empty() {
            let c = word / b.chunk_size;
            let within = word % b.chunk_size;
            if within == 0 && out.len() >= 2 * chunk_len && chunk_len > 0 {
                // Two whole chunks: independent streams, decoded interleaved.
                let (mut d0, base0) = open(c)?;
                let (mut d1, base1) = open(c + 1)?;
                let (pair, tail) = core::mem::take(&mut out).split_at_mut(2 * chunk_len);
                let (h0, h1) = pair.split_at_mut(chunk_len);
                d0.decode_pair_into(&mut d1, (table, table), h0, h1)
                    .map_err(|(side, u)| {
                        underrun_at(t, if side == 0 { base0 } else { base1 }, u)
                    })?;
                end_check(c, &d0)?;
                end_check(c + 1, &d1)?;
                out = tail;
                word += 2 * b.chunk_size;
                continue;
            }
            let (mut dec, base) = open(c)?;
            let underrun = |u: Underrun| underrun_at(t, base, u);
            dec.skip(table, (k * within) as u64).map_err(underrun)?;
            let n_words = (b.chunk_size - within).min(out.len() / k.max(1));
            let (head, tail) = core::mem::take(&mut out).split_at_mut(n_words * k);
            dec.decode_into(table, head).map_err(underrun)?;
            if within == 0 && n_words == b.chunk_size {
                end_check(c, &dec)?;
            }
            out = tail;
            word += n_words;
            if n_words == 0 {
                break;
            }
        }
        Ok(())
    }

    /// The residuals of time step `t`, `[V][K]` flattened (what the entropy coder stores).
    ///
    /// # Errors
    /// [`Error::IndexOutOfRange`], [`Error::LimitExceeded`], decoding errors such as
    /// [`Error::WordUnderrun`].
    pub fn residuals(&self, t: u32) -> Result<Vec<i16>> {
        self.check_t(t)?;
        let mut out = self.timestep_buffer()?;
        self.decode_words(t, 0, &mut out)?;
        Ok(out)
    }

    /// Decodes the residuals of time step `t` into `out` (which must hold exactly V·K values),
    /// without allocating.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for a wrong `out` length, otherwise as
    /// [`DweFile::residuals`].
    pub fn residuals_into(&self, t: u32, out: &mut [i16]) -> Result<()> {
        self.check_t(t)?;
        if out.len() != self.vk() {
            return Err(Error::InvalidParameter {
                what: "out",
                reason: format!("length {} is not V·K = {}", out.len(), self.vk()),
            });
        }
        self.decode_words(t, 0, out)
    }

    /// The residuals of one word at time step `t` (K values), by random access.
    ///
    /// # Errors
    /// As [`DweFile::residuals`].
    pub fn residual_vector(&self, word: u32, t: u32) -> Result<Vec<i16>> {
        self.check_t(t)?;
        self.check_word(word)?;
        let mut out = vec![0; self.k()];
        self.decode_words(t, us(word), &mut out)?;
        Ok(out)
    }

    /// The quantised embeddings of time step `t`, `[V][K]` flattened: decodes time steps 0 and
    /// T−1 and the bisection path to `t` (about log2(T) + 2 time steps).
    ///
    /// # Errors
    /// As [`DweFile::residuals`].
    pub fn timestep(&self, t: u32) -> Result<Vec<i16>> {
        self.check_t(t)?;
        let last = self.header.num_timesteps - 1;
        if t == 0 || t == last {
            return self.residuals(t);
        }
        let mut left = self.residuals(0)?;
        let mut right = self.residuals(last)?;
        let mut cur = self.timestep_buffer()?;
        for node in path_to(self.header.num_timesteps, t) {
            self.decode_words(node.t, 0, &mut cur)?;
            tree::reconstruct_in_place(&mut cur, &left, &right);
            match t.cmp(&node.t) {
                core::cmp::Ordering::Equal => break,
                core::cmp::Ordering::Less => core::mem::swap(&mut right, &mut cur),
                core::cmp::Ordering::Greater => core::mem::swap(&mut left, &mut cur),
            }
        }
        Ok(cur)
    }

    /// The quantised embedding of `word` at time step `t` (K values), by random access: decodes
    /// one K-vector from each of about log2(T) + 2 time steps.
    ///
    /// # Errors
    /// As [`DweFile::residuals`].
    pub fn vector(&self, word: u32, t: u32) -> Result<Vec<i16>> {
        self.check_t(t)?;
        self.check_word(word)?;
        let last = self.header.num_timesteps - 1;
        if t == 0 || t == last {
            return self.residual_vector(word, t);
        }
        let w = us(word);
        let k = self.k();
        // The residuals of every time step needed (0, T−1, the bisection path to t) are
        // independent: decode them two at a time, then reconstruct along the path.
        let path = path_to(self.header.num_timesteps, t);
        let steps: Vec<u32> = [0, last]
            .into_iter()
            .chain(path.iter().map(|n| n.t))
            .collect();
        let mut rows = vec![0i16; steps.len() * k];
        for (pair, out) in steps.chunks(2).zip(rows.chunks_mut(2 * k)) {
            match *pair {
                [ta, tb] => {
                    let (a, b) = out.split_at_mut(k);
                    self.decode_word_pair(w, (ta, a), (tb, b))?;
                }
                _ => {
                    for (&ts, row) in pair.iter().zip(out.chunks_mut(k)) {
                        self.decode_words(ts, w, row)?;
                    }
                }
            }
        }
        let mut rows = rows.chunks(k).map(<[i16]>::to_vec);
        let mut left = rows.next().unwrap_or_default();
        let mut right = rows.next().unwrap_or_default();
        let mut cur = vec![0; k];
        for node in path {
            cur = rows.next().unwrap_or_default();
            tree::reconstruct_in_place(&mut cur, &left, &right);
            match t.cmp(&node.t) {
                core::cmp::Ordering::Equal => break,
                core::cmp::Ordering::Less => core::mem::swap(&mut right, &mut cur),
                core::cmp::Ordering::Greater => core::mem::swap(&mut left, &mut cur),
            }
        }
        Ok(cur)
    }

    /// The quantised embeddings of `word` at every time step, `[T][K]` flattened (one K-vector
    /// decoded per time step).
    ///
    /// # Errors
    /// As [`DweFile::residuals`].
    pub fn trajectory(&self, word: u32) -> Result<Vec<i16>> {
        self.check_word(word)?;
        let k = self.k();
        let t_count = us(self.header.num_timesteps);
        let total = (t_count as u64).saturating_mul(k as u64);
        Limits::check(
            "trajectory values (T·K)",
            total,
            self.limits.max_total_values,
        )?;
        let mut out = vec![0i16; t_count * k];
        let w = us(word);
        let last = self.header.num_timesteps - 1;
        self.decode_words(0, w, out.get_mut(..k).unwrap_or_default())?;
        let at = |t: u32| us(t) * k..us(t) * k + k;
        self.decode_words(last, w, out.get_mut(at(last)).unwrap_or_default())?;
        let mut left = vec![0; k];
        let mut right = vec![0; k];
        for node in interior_preorder(self.header.num_timesteps) {
            left.copy_from_slice(out.get(at(node.left)).unwrap_or_default());
            right.copy_from_slice(out.get(at(node.right)).unwrap_or_default());
            let cur = out.get_mut(at(node.t)).unwrap_or_default();
            self.decode_words(node.t, w, cur)?;
            tree::reconstruct_in_place(cur, &left, &right);
        }
        Ok(out)
    }

    /// [`DweFile::timestep`] scaled to f32 (`scale_factor × value`).
    ///
    /// # Errors
    /// As [`DweFile::timestep`].
    pub fn timestep_f32(&self, t: u32) -> Result<Vec<f32>> {
        Ok(self.scaled(&self.timestep(t)?))
    }

    /// [`DweFile::vector`] scaled to f32.
    ///
    /// # Errors
    /// As [`DweFile::vector`].
    pub fn vector_f32(&self, word: u32, t: u32) -> Result<Vec<f32>> {
        Ok(self.scaled(&self.vector(word, t)?))
    }

    /// [`DweFile::trajectory`] scaled to f32.
    ///
    /// # Errors
    /// As [`DweFile::trajectory`].
    pub fn trajectory_f32(&self, word: u32) -> Result<Vec<f32>> {
        Ok(self.scaled(&self.trajectory(word)?))
    }

    fn scaled(&self, values: &[i16]) -> Vec<f32> {
        let s = self.header.scale_factor;
        values.iter().map(|&v| f32::from(v) * s).collect()
    }

    fn total_buffer(&self) -> Result<Vec<i16>> {
        let total = (self.vk() as u64).saturating_mul(u64::from(self.header.num_timesteps));
        Limits::check(
            "values in file (T·V·K)",
            total,
            self.limits.max_total_values,
        )?;
        let n = usize::try_from(total).map_err(|_| Error::LimitExceeded {
            what: "values in file (T·V·K)",
            requested: total,
            limit: usize::MAX as u64,
        })?;
        Ok(vec![0; n])
    }

    /// All residuals, `[T][V][K]` flattened.
    ///
    /// # Errors
    /// As [`DweFile::residuals`]; [`Error::LimitExceeded`] beyond [`Limits::max_total_values`].
    pub fn all_residuals(&self) -> Result<Vec<i16>> {
        let mut out = self.total_buffer()?;
        let vk = self.vk().max(1);
        for (t, chunk) in (0u32..).zip(out.chunks_mut(vk)) {
            self.decode_words(t, 0, chunk)?;
        }
        Ok(out)
    }

    /// The whole quantised tensor, `[T][V][K]` flattened.
    ///
    /// # Errors
    /// As [`DweFile::all_residuals`].
    pub fn decode_all(&self) -> Result<Vec<i16>> {
        let mut x = self.all_residuals()?;
        self.reconstruct_all(&mut x);
        Ok(x)
    }

    /// Turns a full residual tensor into values in place (tree pre-order: parents first).
    fn reconstruct_all(&self, x: &mut [i16]) {
        let vk = self.vk();
        for node in interior_preorder(self.header.num_timesteps) {
            let (l, m, r) = (us(node.left), us(node.t), us(node.right));
            // l < m < r, so the three slices are disjoint.
            let (lo, hi) = x.split_at_mut(m * vk);
            let (mid, rest) = hi.split_at_mut(vk.min(hi.len()));
            let left = lo.get(l * vk..l * vk + vk).unwrap_or_default();
            let ro = (r - m - 1) * vk;
            let right = rest.get(ro..ro + vk).unwrap_or_default();
            tree::reconstruct_in_place(mid, left, right);
        }
    }

    /// Decodes the whole file in parallel across time steps (feature `parallel`).
    ///
    /// # Errors
    /// As [`DweFile::decode_all`].
    #[cfg(feature = "parallel")]
    pub fn decode_all_parallel(&self) -> Result<Vec<i16>>
    where
        B: Sync,
    {
        use rayon::prelude::*;
        let mut x = self.total_buffer()?;
        let vk = self.vk().max(1);
        x.par_chunks_mut(vk)
            .enumerate()
            .try_for_each(|(t, chunk)| {
                let t = u32::try_from(t).map_err(|_| Error::IndexOutOfRange {
                    what: "time step",
                    index: t as u64,
                    len: u64::from(self.header.num_timesteps),
                })?;
                self.decode_words(t, 0, chunk)
            })?;
        self.reconstruct_all(&mut x);
        Ok(x)
    }

    /// Checks every integrity property the format allows, decoding everything once.
    ///
    /// Block layout: every chunk decodes its C·K symbols and ends in state 0x10000. Stream
    /// layout: decoding straight through all time steps in tree order passes every jump-table
    /// row exactly (offset and state), and ends in state 0x10000 at the last stored word.
    ///
    /// # Errors
    /// [`Error::Integrity`] or a decoding error.
    pub fn verify(&self) -> Result<()> {
        let mut buf = vec![0i16; self.k()];
        match &self.index {
            Index::Block(b) => {
                for t in 0..self.header.num_timesteps {
                    let table = &self.table(t)?.slots;
                    let chunk_table = b.chunk_tables.get(us(t)).copied().unwrap_or_default();
                    for c in 0..b.chunks_per_step {
                        let addr = us(u32_at(
                            self.data.as_ref(),
                            chunk_table + 4 * c,
                            "chunk_addrs",
                        )?);
                        let base = 4 * addr;
                        let src = self.data.as_ref().get(base..).unwrap_or_default();
                        let underrun = |u: Underrun| Error::WordUnderrun {
                            timestep: t,
                            offset: (base + 2 * u.0) as u64,
                        };
                        let mut dec = Decoder::for_chunk(src).map_err(underrun)?;
                        dec.skip(table, (b.chunk_size * self.k()) as u64)
                            .map_err(underrun)?;
                        if dec.state != LOWER {
                            return Err(Error::Integrity {
                                what: format!("end state of chunk {c} of time step {t}"),
                                expected: u64::from(LOWER),
                                found: u64::from(dec.state),
                            });
                        }
                    }
                }
            }
            Index::Stream(s) => {
                let order = tree::tree_order(self.header.num_timesteps);
                let first = order.first().copied().unwrap_or_default();
                let (offset, state) = self.jump_row(s, us(first) * s.points)?;
                let src = self.data.as_ref().get(s.section..).unwrap_or_default();
                let mut dec = Decoder::new(src, offset, state);
                if offset != 0 {
                    return Err(row_mismatch(0, offset, state, &Decoder::new(src, 0, state)));
                }
                let v = us(self.header.vocab_size);
                for &t in &order {
                    let table = &self.table(t)?.slots;
                    let underrun = |u: Underrun| Error::WordUnderrun {
                        timestep: t,
                        offset: (s.section + 2 * u.0) as u64,
                    };
                    for p in 0..s.points {
                        let row = us(t) * s.points + p;
                        let (offset, state) = self.jump_row(s, row)?;
                        if (dec.pos, dec.state) != (offset, state) {
                            return Err(row_mismatch(row, offset, state, &dec));
                        }
                        let words = s.interval.min(v - p * s.interval);
                        for _ in 0..words {
                            dec.decode_into(table, &mut buf).map_err(underrun)?;
                        }
                    }
                }
                if dec.state != LOWER {
                    return Err(Error::Integrity {
                        what: "final state of the stream".into(),
                        expected: u64::from(LOWER),
                        found: u64::from(dec.state),
                    });
                }
                if dec.pos != s.section_words && dec.pos + 1 != s.section_words {
                    return Err(Error::Integrity {
                        what: "u16 words consumed by the stream".into(),
                        expected: s.section_words as u64,
                        found: dec.pos as u64,
                    });
                }
            }
        }
        Ok(())
    }
}

enum CheckedErr {
    Underrun(Underrun),
    Other(Error),
}

fn row_mismatch(row: usize, offset: usize, state: u32, dec: &Decoder<'_>) -> Error {
    let (what, expected, found) = if dec.pos == offset {
        ("state", u64::from(state), u64::from(dec.state))
    } else {
        ("offset", offset as u64, dec.pos as u64)
    };
    Error::Integrity {
        what: format!("jump table row {row} {what} (reached by sequential decoding)"),
        expected,
        found,
    }
}

/// A decoder underrun at u16 word `u.0` of the words starting at byte `base`.
fn underrun_at(t: u32, base: usize, u: Underrun) -> Error {
    Error::WordUnderrun {
        timestep: t,
        offset: (base + 2 * u.0) as u64,
    }
}
