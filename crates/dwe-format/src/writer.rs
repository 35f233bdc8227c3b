//! Writing both layouts from a quantised i16 tensor, byte-identical to the reference builders.

use std::path::Path;

use crate::ans::{Encoder, low16};
use crate::bytes::us;
use crate::error::{Error, Result};
use crate::freq::optimal_model;
use crate::header::Header;
use crate::model::{EncodeTable, EntropyModel};
use crate::tree::{self, interior_preorder};
use scifmt_io::Durability;

/// Shape of a tensor `[T][V][K]` (time steps, words, components).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Dims {
    /// T (≥ 2).
    pub num_timesteps: u32,
    /// V (≥ 1).
    pub vocab_size: u32,
    /// K (≥ 1).
    pub embedding_dim: u32,
}

impl Dims {
    /// A shape.
    #[must_use]
    pub const fn new(num_timesteps: u32, vocab_size: u32, embedding_dim: u32) -> Self {
        Self {
            num_timesteps,
            vocab_size,
            embedding_dim,
        }
    }

    /// V·K, or `None` on overflow.
    fn vk(&self) -> Option<usize> {
        us(self.vocab_size).checked_mul(us(self.embedding_dim))
    }

    /// T·V·K, or `None` on overflow.
    #[must_use]
    pub fn len(&self) -> Option<usize> {
        self.vk()?.checked_mul(us(self.num_timesteps))
    }

    /// Whether T·V·K is zero.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == Some(0)
    }
}

/// Which layout to write, with its parameter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
#[non_exhaustive]
pub enum WriteLayout {
    /// Block container; `chunk_size` must be ≥ 1 and divide V.
    Block {
        /// Words per independently coded chunk.
        chunk_size: u32,
    },
    /// Stream container; `jump_interval` must be in 1..=V (need not divide V).
    Stream {
        /// Words between jump-table rows.
        jump_interval: u32,
    },
}

fn param(what: &'static str, reason: impl Into<String>) -> Error {
    Error::InvalidParameter {
        what,
        reason: reason.into(),
    }
}

fn check_dims(values: &[i16], dims: Dims) -> Result<usize> {
    if dims.num_timesteps < 2 {
        return Err(param("num_timesteps", "must be at least 2"));
    }
    if dims.vocab_size == 0 || dims.embedding_dim == 0 {
        return Err(param("dims", "vocab_size and embedding_dim must be >= 1"));
    }
    let vk = dims.vk().filter(|&vk| u32::try_from(vk).is_ok());
    let (Some(vk), Some(len)) = (vk, dims.len()) else {
        return Err(param("dims", "V·K must fit in u32"));
    };
    if values.len() != len {
        return Err(param(
            "values",
            format!("length {} does not match T·V·K = {len}", values.len()),
        ));
    }
    Ok(vk)
}

/// The residuals the coder stores, `[T][V][K]` flattened: time steps 0 and T−1 as
/// they are, every other time step minus the truncating average of its two tree parents.
///
/// # Errors
/// [`Error::InvalidParameter`] for a bad shape, [`Error::ResidualOverflow`] when a residual does
/// not fit in i16 (never wrapped).
pub fn residuals(values: &[i16], dims: Dims) -> Result<Vec<i16>> {
    let vk = check_dims(values, dims)?;
    let mut res = values.to_vec();
    let k = us(dims.embedding_dim);
    for node in interior_preorder(dims.num_timesteps) {
        let at = |t: u32| us(t) * vk..us(t) * vk + vk;
        let x = values.get(at(node.t)).unwrap_or_default();
        let l = values.get(at(node.left)).unwrap_or_default();
        let r = values.get(at(node.right)).unwrap_or_default();
        let out = res.get_mut(at(node.t)).unwrap_or_default();
        for (i, (((o, &x), &a), &b)) in out.iter_mut().zip(x).zip(l).zip(r).enumerate() {
            let d = i32::from(x) - i32::from(tree::predict(a, b));
            *o = i16::try_from(d).map_err(|_| Error::ResidualOverflow {
                timestep: node.t,
                word: u32::try_from(i / k).unwrap_or(u32::MAX),
                component: u32::try_from(i % k).unwrap_or(u32::MAX),
                value: d,
            })?;
        }
    }
    Ok(res)
}

/// The model the reference builder writes for one time step's residuals.
fn model_for(res: &[i16], t: u32, counts: &mut [u64]) -> Result<EntropyModel> {
    counts.fill(0);
    for &r in res {
        if let Some(c) = counts.get_mut(usize::from(r.cast_unsigned())) {
            *c += 1;
        }
    }
    let list: Vec<(i16, u64)> = (0..=u16::MAX)
        .zip(counts.iter())
        .filter(|&(_, &c)| c > 0)
        .map(|(s, &c)| (s.cast_signed(), c))
        .collect();
    if list.len() > 4096 {
        return Err(Error::TooManySymbols {
            timestep: t,
            count: list.len(),
        });
    }
    optimal_model(&list)
}

fn encode_symbols<'a>(
    enc: &mut Encoder,
    table: &EncodeTable,
    symbols: impl Iterator<Item = &'a i16>,
) -> Result<()> {
    for &s in symbols {
        let (f, c) = table
            .entries
            .get(usize::from(s.cast_unsigned()))
            .copied()
            .unwrap_or_default();
        if !enc.encode(f, c) {
            return Err(param("residuals", "symbol missing from its model"));
        }
    }
    Ok(())
}

fn to_u32(x: usize, what: &'static str) -> Result<u32> {
    u32::try_from(x).map_err(|_| param(what, "file would exceed 2^32 u32 words"))
}

fn push_u16s(out: &mut Vec<u8>, words: impl Iterator<Item = u16>) {
    for w in words {
        out.extend_from_slice(&w.to_le_bytes());
    }
}

/// Encodes a quantised tensor `[T][V][K]` (flattened, C order) as a `.dwe` file in memory.
///
/// Time steps are stored in tree order with residuals against the truncating average of their
/// parents; each time step's frequencies come from the reference quantiser, so the output is
/// byte-identical to the reference builders.
///
/// # Errors
/// [`Error::InvalidParameter`] for a bad shape or layout parameter, [`Error::ResidualOverflow`],
/// [`Error::TooManySymbols`].
pub fn encode(
    values: &[i16],
    dims: Dims,
    scale_factor: f32,
    layout: WriteLayout,
) -> Result<Vec<u8>> {
    encode_with_progress(values, dims, scale_factor, layout, &mut |_, _| {})
}

/// Like [`encode`], calling `progress(done, total)` as the work advances: once per time step
/// when its entropy model is built, then once per time step when it is encoded
/// (`total = 2 × T`; `done` rises by one each call and ends at `total`). The output is the same.
///
/// # Errors
/// As [`encode`].
pub fn encode_with_progress(
    values: &[i16],
    dims: Dims,
    scale_factor: f32,
    layout: WriteLayout,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<Vec<u8>> {
    let vk = check_dims(values, dims)?;
    match layout {
        WriteLayout::Block { chunk_size } => {
            if chunk_size == 0 || !dims.vocab_size.is_multiple_of(chunk_size) {
                return Err(param("chunk_size", "must be >= 1 and divide vocab_size"));
            }
        }
        WriteLayout::Stream { jump_interval } => {
            if jump_interval == 0 || jump_interval > dims.vocab_size {
                return Err(param("jump_interval", "must be in 1..=vocab_size"));
            }
        }
    }
    let res = residuals(values, dims)?;
    let total = 2 * u64::from(dims.num_timesteps);
    let mut done = 0u64;
    let mut step_done = || {
        done += 1;
        progress(done, total);
    };
    let mut counts = vec![0u64; 1 << 16];
    let mut models = Vec::with_capacity(us(dims.num_timesteps));
    for (t, step) in (0u32..).zip(res.chunks(vk)) {
        models.push(model_for(step, t, &mut counts)?);
        step_done();
    }
    let e = Encoding {
        res: &res,
        dims,
        vk,
        scale_factor,
        models: &models,
    };
    match layout {
        WriteLayout::Block { chunk_size } => write_block(&e, chunk_size, &mut step_done),
        WriteLayout::Stream { jump_interval } => write_stream(&e, jump_interval, &mut step_done),
    }
}

/// What both layout writers need: residuals `[T][V][K]` and one entropy model per time step.
struct Encoding<'a> {
    res: &'a [i16],
    dims: Dims,
    vk: usize,
    scale_factor: f32,
    models: &'a [EntropyModel],
}

impl Encoding<'_> {
    /// The residuals of time step `t`, with `table` filled from its model.
    fn step(&self, t: u32, table: &mut EncodeTable) -> Result<&[i16]> {
        let model = self
            .models
            .get(us(t))
            .ok_or_else(|| param("models", "missing"))?;
        table.fill(model);
        let at = us(t) * self.vk;
        Ok(self.res.get(at..at + self.vk).unwrap_or_default())
    }
}

fn write_stream(e: &Encoding<'_>, interval: u32, step_done: &mut dyn FnMut()) -> Result<Vec<u8>> {
    let Encoding {
        dims,
        scale_factor,
        models,
        ..
    } = *e;
    let k = us(dims.embedding_dim);
    let j = us(interval);
    let v = us(dims.vocab_size);
    let points = v.div_ceil(j);
    let mut rows = vec![(0usize, 0u32); us(dims.num_timesteps) * points];
    let mut enc = Encoder::new();
    let mut table = EncodeTable::new();
    for &t in tree::tree_order(dims.num_timesteps).iter().rev() {
        let step = e.step(t, &mut table)?;
        for (i, word) in step.chunks(k).enumerate().rev() {
            encode_symbols(&mut enc, &table, word.iter().rev())?;
            if i % j == 0
                && let Some(row) = rows.get_mut(us(t) * points + i / j)
            {
                *row = (enc.words.len(), enc.state);
            }
        }
        step_done();
    }
    let n = enc.words.len();
    let mut out = Vec::new();
    out.extend_from_slice(&[0; Header::ENCODED_LEN]);
    for m in models {
        m.write(&mut out);
    }
    if out.len() % 4 != 0 {
        out.extend_from_slice(&[0, 0]);
    }
    let jta = to_u32(out.len() / 4, "jump_table_address")?;
    for &(pushed, state) in &rows {
        out.extend_from_slice(&to_u32(n - pushed, "jump offset")?.to_le_bytes());
        out.extend_from_slice(&state.to_le_bytes());
    }
    push_u16s(&mut out, enc.words.iter().rev().copied());
    if n % 2 == 1 {
        out.extend_from_slice(&[0, 0]);
    }
    let header = Header {
        minor_version: 0,
        file_size: to_u32(out.len() / 4, "file_size")?,
        section_address: jta,
        num_timesteps: dims.num_timesteps,
        vocab_size: dims.vocab_size,
        embedding_dim: dims.embedding_dim,
        interval,
        scale_factor,
    };
    out.get_mut(..Header::ENCODED_LEN)
        .unwrap_or_default()
        .copy_from_slice(&header.to_bytes());
    Ok(out)
}

fn write_block(e: &Encoding<'_>, chunk_size: u32, step_done: &mut dyn FnMut()) -> Result<Vec<u8>> {
    let Encoding {
        dims,
        scale_factor,
        models,
        ..
    } = *e;
    let k = us(dims.embedding_dim);
    let c_len = us(chunk_size) * k;
    let t_count = us(dims.num_timesteps);
    let chunks_per_step = us(dims.vocab_size / chunk_size);
    // All chunk streams (already in file order, padded to even length), in tree order.
    let mut chunk_words: Vec<u16> = Vec::new();
    // Start (in u16 words within `chunk_words`) of chunk c of time step t.
    let mut chunk_start = vec![0usize; t_count * chunks_per_step];
    let mut table = EncodeTable::new();
    let mut enc = Encoder::new();
    for t in tree::tree_order(dims.num_timesteps) {
        let step = e.step(t, &mut table)?;
        for (c, chunk) in step.chunks(c_len).enumerate() {
            enc.state = crate::ans::LOWER;
            enc.words.clear();
            encode_symbols(&mut enc, &table, chunk.iter().rev())?;
            enc.words.push(low16(enc.state));
            enc.words.push(low16(enc.state >> 16));
            if let Some(s) = chunk_start.get_mut(us(t) * chunks_per_step + c) {
                *s = chunk_words.len();
            }
            chunk_words.extend(enc.words.iter().rev());
            if enc.words.len() % 2 == 1 {
                chunk_words.push(0);
            }
        }
        step_done();
    }
    // Layout: header, timestep_addrs, meta blocks back to back, chunks.
    let mut meta_addr = Vec::with_capacity(t_count);
    let mut addr = 10 + t_count;
    for m in models {
        meta_addr.push(addr);
        addr += m.encoded_u16_len().div_ceil(2) + chunks_per_step;
    }
    let meta_size = addr;
    let mut out = Vec::new();
    out.extend_from_slice(&[0; Header::ENCODED_LEN]);
    for &a in &meta_addr {
        out.extend_from_slice(&to_u32(a, "timestep_addrs")?.to_le_bytes());
    }
    for (t, m) in models.iter().enumerate() {
        m.write(&mut out);
        if out.len() % 4 != 0 {
            out.extend_from_slice(&[0, 0]);
        }
        for c in 0..chunks_per_step {
            let start = chunk_start
                .get(t * chunks_per_step + c)
                .copied()
                .unwrap_or_default();
            let a = to_u32(meta_size + start / 2, "chunk_addrs")?;
            out.extend_from_slice(&a.to_le_bytes());
        }
    }
    push_u16s(&mut out, chunk_words.iter().copied());
    let header = Header {
        minor_version: 0,
        file_size: to_u32(out.len() / 4, "file_size")?,
        section_address: to_u32(meta_size, "meta_size")?,
        num_timesteps: dims.num_timesteps,
        vocab_size: dims.vocab_size,
        embedding_dim: dims.embedding_dim,
        interval: chunk_size,
        scale_factor,
    };
    out.get_mut(..Header::ENCODED_LEN)
        .unwrap_or_default()
        .copy_from_slice(&header.to_bytes());
    Ok(out)
}

/// Encodes like [`encode`] and replaces `path` atomically: the bytes go to a new temporary file
/// in the same directory, which is then renamed over `path`. With [`Durability::Fsync`] the
/// file is fsynced before the rename and (on Unix) its directory after.
///
/// # Errors
/// As [`encode`], plus I/O errors (the temporary file is removed on failure).
pub fn write_file(
    path: impl AsRef<Path>,
    values: &[i16],
    dims: Dims,
    scale_factor: f32,
    layout: WriteLayout,
    durability: Durability,
) -> Result<()> {
    write_file_with_progress(
        path,
        values,
        dims,
        scale_factor,
        layout,
        durability,
        &mut |_, _| {},
    )
}

/// [`write_file`] reporting progress as [`encode_with_progress`] does.
///
/// # Errors
/// As [`write_file`].
pub fn write_file_with_progress(
    path: impl AsRef<Path>,
    values: &[i16],
    dims: Dims,
    scale_factor: f32,
    layout: WriteLayout,
    durability: Durability,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<()> {
    let bytes = encode_with_progress(values, dims, scale_factor, layout, progress)?;
    scifmt_io::write_atomically(path.as_ref(), durability, |w| {
        std::io::Write::write_all(w, &bytes).map_err(Error::Io)
    })
}
