//! ZFP (codecs 33 ZFP_ACC, 34 ZFP_PREC, 35 ZFP_RATE): each block of float32/float64 items is
//! one raw ZFP stream (no ZFP header) of the b2nd block, whose dimensions (1 to 4) become the
//! ZFP field with the last b2nd dimension as ZFP's fastest `x`. The codec meta sets the mode:
//! accuracy `10^(meta as i8)`, precision `meta + 3 + 2·ndim` bits (at most 64), rate
//! `meta / 100 · 8 · typesize` bits per value (not word-aligned). The ZFP codec itself is
//! `zfp-rs`, a pure-Rust ZFP that is bit-identical to libzfp.

use zfp_rs::{
    ZfpBitStream, ZfpConfig, ZfpDimensionality, ZfpField, ZfpFieldMut, ZfpScalarType,
    ZfpStreamAlignment,
};

use super::{BlockShape, geometry};
use crate::codec_id::Codec;
use crate::error::{Error, Result};

/// The ZFP field dimensions (`[nx, ny, nz, nw]`, x fastest) of a b2nd block.
fn dims(shape: &BlockShape) -> Result<([usize; 4], ZfpDimensionality)> {
    let d = shape.dims();
    let dim = match d.len() {
        1 => ZfpDimensionality::D1,
        2 => ZfpDimensionality::D2,
        3 => ZfpDimensionality::D3,
        4 => ZfpDimensionality::D4,
        _ => return Err(geometry("zfp", "ZFP takes blocks of 1 to 4 dimensions")),
    };
    let mut out = [0usize; 4];
    for (o, &v) in out.iter_mut().zip(d.iter().rev()) {
        *o = v as usize;
    }
    Ok((out, dim))
}

fn scalar(typesize: usize) -> Result<ZfpScalarType> {
    match typesize {
        4 => Ok(ZfpScalarType::F32),
        8 => Ok(ZfpScalarType::F64),
        _ => Err(geometry(
            "zfp",
            "ZFP takes typesize 4 (float32) or 8 (float64)",
        )),
    }
}

/// The stream parameters C-Blosc2 sets for `codec` with `meta`.
fn config(
    codec: Codec,
    meta: u8,
    ty: ZfpScalarType,
    dim: ZfpDimensionality,
    typesize: usize,
) -> Result<ZfpConfig> {
    match codec {
        Codec::ZfpAcc => Ok(ZfpConfig::fixed_accuracy(
            10f64.powi(i32::from(meta.cast_signed())),
        )),
        Codec::ZfpPrec => {
            let extra = 3 + 2 * dim as u32;
            Ok(ZfpConfig::fixed_precision(u32::from(meta) + extra))
        }
        Codec::ZfpRate => {
            #[allow(clippy::cast_precision_loss, reason = "typesize is 4 or 8")]
            let rate = f64::from(meta) / 100.0 * typesize as f64 * 8.0;
            ZfpConfig::fixed_rate(rate, ty, dim, ZfpStreamAlignment::Unaligned)
                .map_err(|_| geometry("zfp", "rate (codec meta) out of range"))
        }
        _ => Err(Error::Unsupported {
            what: "codec",
            id: u32::from(codec.id()),
        }),
    }
}

fn zfp_err(_: impl core::fmt::Display) -> Error {
    geometry("zfp", "corrupt ZFP stream")
}

/// Decodes one ZFP stream into `dst` (one whole b2nd block of `typesize` 4 or 8).
pub(crate) fn decompress(
    codec: Codec,
    meta: u8,
    shape: Option<&BlockShape>,
    typesize: usize,
    src: &[u8],
    dst: &mut [u8],
) -> Result<()> {
    let shape = super::need_shape("zfp", shape)?;
    let (d, dim) = dims(shape)?;
    let ty = scalar(typesize)?;
    let items = shape.items().ok_or(Error::Overflow {
        what: "block shape",
    })?;
    if items.checked_mul(typesize) != Some(dst.len()) {
        return Err(geometry(
            "zfp",
            "block length differs from the block shape x typesize",
        ));
    }
    let cfg = config(codec, meta, ty, dim, typesize)?;
    let mut bs = ZfpBitStream::from_bytes(src).map_err(zfp_err)?;
    let fdims = &d[..dim as usize];
    macro_rules! run {
        ($t:ty, $n:expr) => {{
            let mut vals: Vec<$t> = vec![0.0; items];
            {
                let mut f = match $n {
                    1 => ZfpFieldMut::new(&mut vals, [fdims[0]]),
                    2 => ZfpFieldMut::new(&mut vals, [fdims[0], fdims[1]]),
                    3 => ZfpFieldMut::new(&mut vals, [fdims[0], fdims[1], fdims[2]]),
                    _ => ZfpFieldMut::new(&mut vals, [fdims[0], fdims[1], fdims[2], fdims[3]]),
                }
                .map_err(zfp_err)?;
                bs.decompress(&cfg, &mut f).map_err(zfp_err)?;
            }
            for (o, v) in dst.chunks_exact_mut(typesize).zip(&vals) {
                o.copy_from_slice(&v.to_le_bytes());
            }
        }};
    }
    if typesize == 4 {
        run!(f32, fdims.len());
    } else {
        run!(f64, fdims.len());
    }
    Ok(())
}

/// Encodes one block like C-Blosc2's ZFP plugin: the stream if it is shorter than the block
/// and fits in `dst`, else `Ok(0)` (the caller stores the block raw).
pub(crate) fn compress(
    codec: Codec,
    meta: u8,
    shape: Option<&BlockShape>,
    typesize: usize,
    src: &[u8],
    dst: &mut [u8],
) -> Result<usize> {
    let shape = super::need_shape("zfp", shape)?;
    let (d, dim) = dims(shape)?;
    let ty = scalar(typesize)?;
    let items = shape.items().ok_or(Error::Overflow {
        what: "block shape",
    })?;
    if items.checked_mul(typesize) != Some(src.len()) {
        return Err(geometry(
            "zfp",
            "block length differs from the block shape x typesize",
        ));
    }
    let cfg = config(codec, meta, ty, dim, typesize)?;
    let fdims = &d[..dim as usize];
    let cap = cfg
        .maximum_size(ty, fdims_array(fdims))
        .ok_or(geometry("zfp", "block too large for ZFP"))?;
    let mut bs = ZfpBitStream::new(cap).map_err(zfp_err)?;
    macro_rules! run {
        ($t:ty) => {{
            let vals: Vec<$t> = src
                .chunks_exact(typesize)
                .map(|b| <$t>::from_le_bytes(b.try_into().unwrap_or_default()))
                .collect();
            let f = match fdims.len() {
                1 => ZfpField::new(&vals, [fdims[0]]),
                2 => ZfpField::new(&vals, [fdims[0], fdims[1]]),
                3 => ZfpField::new(&vals, [fdims[0], fdims[1], fdims[2]]),
                _ => ZfpField::new(&vals, [fdims[0], fdims[1], fdims[2], fdims[3]]),
            }
            .map_err(zfp_err)?;
            bs.compress(&cfg, &f).map_err(zfp_err)?
        }};
    }
    let n = if typesize == 4 { run!(f32) } else { run!(f64) };
    if n == 0 || n >= src.len() || n > dst.len() {
        return Ok(0);
    }
    dst[..n].copy_from_slice(&bs.as_bytes()[..n]);
    Ok(n)
}

fn fdims_array(f: &[usize]) -> [usize; 4] {
    let mut a = [0usize; 4];
    a[..f.len()].copy_from_slice(f);
    a
}
