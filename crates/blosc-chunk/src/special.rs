//! Special-value chunks, byte-identical to C-Blosc2's `blosc2_chunk_zeros/nans/uninit/repeatval`.

use crate::encode::CParams;
use crate::error::{Error, Result};
use crate::flags::{Blosc2Flags, Flags};
use crate::header::{
    EXTENDED_HEADER_LENGTH, Filter, HeaderFields, MAX_BUFFERSIZE, MAX_FILTERS, SpecialValue,
    VERSION_FORMAT_STABLE,
};
use crate::tune;

fn special_chunk(
    kind: SpecialValue,
    nbytes: usize,
    typesize: usize,
    value: &[u8],
    cparams: &CParams,
) -> Result<Vec<u8>> {
    if typesize == 0 {
        return Err(Error::InvalidParam {
            what: "typesize",
            why: "must be at least 1",
        });
    }
    if !nbytes.is_multiple_of(typesize) {
        return Err(Error::InvalidParam {
            what: "nbytes",
            why: "must be a multiple of typesize",
        });
    }
    if nbytes > MAX_BUFFERSIZE {
        return Err(Error::InvalidParam {
            what: "nbytes",
            why: "above BLOSC2_MAX_BUFFERSIZE",
        });
    }
    let ts = if typesize > 255 { 1 } else { typesize };
    let has_shuffle = cparams.filters.contains(&Filter::Shuffle);
    let blocksize = tune::compute_blocksize(
        cparams.clevel,
        ts,
        nbytes,
        cparams.blocksize,
        cparams.codec,
        has_shuffle,
        cparams.splitmode,
    );
    let cbytes = EXTENDED_HEADER_LENGTH + value.len();
    let mut out = vec![0u8; cbytes];
    HeaderFields {
        version: VERSION_FORMAT_STABLE,
        flags: Flags::EXTENDED,
        typesize: u8::try_from(ts).unwrap_or(1),
        nbytes,
        blocksize,
        cbytes,
        filters: [0; MAX_FILTERS],
        udcodec: 0,
        compcode_meta: 0,
        filters_meta: [0; MAX_FILTERS],
        blosc2_flags: Blosc2Flags::special(kind.code()),
    }
    .write(&mut out, true)?;
    out[EXTENDED_HEADER_LENGTH..].copy_from_slice(value);
    Ok(out)
}

fn params_for(typesize: usize) -> CParams {
    CParams {
        typesize,
        ..CParams::default()
    }
}

/// A chunk of `nbytes` zero bytes (32 bytes long).
///
/// The header's block size is what C-Blosc2 computes for the default parameters; use
/// [`special_chunk_with`] to match other parameters.
///
/// # Errors
///
/// [`Error::InvalidParam`] if `typesize` is 0 or `nbytes` is not a multiple of it.
pub fn zeros_chunk(nbytes: usize, typesize: usize) -> Result<Vec<u8>> {
    special_chunk(
        SpecialValue::Zeros,
        nbytes,
        typesize,
        &[],
        &params_for(typesize),
    )
}

/// A chunk of NaNs (`typesize` 4: float32, 8: float64).
///
/// # Errors
///
/// As [`zeros_chunk`]; also if `typesize` is not 4 or 8.
pub fn nans_chunk(nbytes: usize, typesize: usize) -> Result<Vec<u8>> {
    if !matches!(typesize, 4 | 8) {
        return Err(Error::InvalidParam {
            what: "typesize",
            why: "nan chunks need typesize 4 or 8",
        });
    }
    special_chunk(
        SpecialValue::Nan,
        nbytes,
        typesize,
        &[],
        &params_for(typesize),
    )
}

/// A chunk whose content is unspecified (decoded as zeros by this crate).
///
/// # Errors
///
/// As [`zeros_chunk`].
pub fn uninit_chunk(nbytes: usize, typesize: usize) -> Result<Vec<u8>> {
    special_chunk(
        SpecialValue::Uninit,
        nbytes,
        typesize,
        &[],
        &params_for(typesize),
    )
}

/// A chunk repeating `value` (`value.len()` is the type size) to `nbytes` bytes.
///
/// # Errors
///
/// As [`zeros_chunk`] with `typesize = value.len()`.
pub fn repeatval_chunk(nbytes: usize, value: &[u8]) -> Result<Vec<u8>> {
    special_chunk(
        SpecialValue::Value,
        nbytes,
        value.len(),
        value,
        &params_for(value.len()),
    )
}

/// Any special chunk with explicit compression parameters (they only decide the header's
/// block size and typesize). `value` is used for [`SpecialValue::Value`] only.
///
/// # Errors
///
/// As [`zeros_chunk`].
pub fn special_chunk_with(
    kind: SpecialValue,
    nbytes: usize,
    value: &[u8],
    cparams: &CParams,
) -> Result<Vec<u8>> {
    match kind {
        SpecialValue::Value => special_chunk(kind, nbytes, value.len(), value, cparams),
        _ => special_chunk(kind, nbytes, cparams.typesize, &[], cparams),
    }
}
