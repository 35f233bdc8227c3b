//! LZ4 and LZ4HC compression against an external dictionary, through liblz4's streaming API.
//!
//! The `lz4` crate exposes only one-shot block compression, and `lz4-sys` (which compiles
//! liblz4 1.10.0 for it) declares `LZ4_createStream` / `LZ4_freeStream` but none of
//! `LZ4_loadDict`, `LZ4_compress_fast_continue` or the LZ4HC streaming functions. So the
//! streaming functions C-Blosc2 uses for dictionary chunks are declared here; they live in the
//! same liblz4 that `lz4-sys` compiles and links (all of `lz4.c` and `lz4hc.c`). Each stream is compressed
//! after reloading the dictionary, as C-Blosc2 does, so streams stay independent.
//!
//! `unsafe`: the FFI calls. Every pointer/length pair comes from a live Rust slice, the stream
//! states are owned by [`DictStream`] (created once, freed in `Drop`), and the dictionary is
//! owned by the same value, so it outlives every call that references it.
#![allow(unsafe_code, reason = "FFI calls into liblz4; see the SAFETY comments")]

use core::ffi::{c_char, c_int, c_void};

unsafe extern "C" {
    fn LZ4_createStream() -> *mut c_void;
    fn LZ4_freeStream(stream: *mut c_void) -> c_int;
    fn LZ4_loadDict(stream: *mut c_void, dict: *const c_char, dict_size: c_int) -> c_int;
    fn LZ4_compress_fast_continue(
        stream: *mut c_void,
        src: *const c_char,
        dst: *mut c_char,
        src_size: c_int,
        dst_capacity: c_int,
        acceleration: c_int,
    ) -> c_int;
    fn LZ4_createStreamHC() -> *mut c_void;
    fn LZ4_freeStreamHC(stream: *mut c_void) -> c_int;
    fn LZ4_resetStreamHC_fast(stream: *mut c_void, level: c_int);
    fn LZ4_loadDictHC(stream: *mut c_void, dict: *const c_char, dict_size: c_int) -> c_int;
    fn LZ4_compress_HC_continue(
        stream: *mut c_void,
        src: *const c_char,
        dst: *mut c_char,
        src_size: c_int,
        dst_capacity: c_int,
    ) -> c_int;
}

/// An LZ4 (fast or HC) stream state plus the dictionary it compresses against.
#[derive(Debug)]
pub(crate) struct DictStream {
    state: *mut c_void,
    hc: bool,
    /// The dictionary, in an allocation with spare room after it: liblz4 treats a dictionary
    /// that ends exactly where the source starts as a prefix, which C-Blosc2 never does.
    dict: Vec<u8>,
}

impl DictStream {
    /// A stream for `dict` (at most 64 KiB are used by LZ4); `None` if liblz4 cannot allocate
    /// the state or the dictionary is larger than an `int`.
    pub(crate) fn new(dict: &[u8], hc: bool) -> Option<Self> {
        c_int::try_from(dict.len()).ok()?;
        let mut owned = Vec::with_capacity(dict.len() + 16);
        owned.extend_from_slice(dict);
        // SAFETY: plain constructors without arguments; a null result is handled below.
        let state = unsafe {
            if hc {
                LZ4_createStreamHC()
            } else {
                LZ4_createStream()
            }
        };
        if state.is_null() {
            return None;
        }
        Some(Self {
            state,
            hc,
            dict: owned,
        })
    }

    /// Compresses `src` into `dst` (its length is the capacity) after reloading the dictionary:
    /// LZ4 with `acceleration`, LZ4HC at `level`. Returns the compressed size, 0 if it does not
    /// fit.
    pub(crate) fn compress(
        &mut self,
        src: &[u8],
        dst: &mut [u8],
        acceleration: i32,
        level: i32,
    ) -> usize {
        let (Ok(slen), Ok(dlen), Ok(dict_len)) = (
            c_int::try_from(src.len()),
            c_int::try_from(dst.len()),
            c_int::try_from(self.dict.len()),
        ) else {
            return 0;
        };
        // SAFETY: `state` is a live stream of the right kind (created in `new`, freed only in
        // `drop`); the dictionary pointer/length come from `self.dict`, which lives as long as
        // `self`; `src` is readable for `slen` bytes and `dst` writable for `dlen` bytes, and
        // liblz4 writes at most `dst_capacity` bytes.
        let n = unsafe {
            if self.hc {
                LZ4_resetStreamHC_fast(self.state, level);
                LZ4_loadDictHC(self.state, self.dict.as_ptr().cast(), dict_len);
                LZ4_compress_HC_continue(
                    self.state,
                    src.as_ptr().cast(),
                    dst.as_mut_ptr().cast(),
                    slen,
                    dlen,
                )
            } else {
                LZ4_loadDict(self.state, self.dict.as_ptr().cast(), dict_len);
                LZ4_compress_fast_continue(
                    self.state,
                    src.as_ptr().cast(),
                    dst.as_mut_ptr().cast(),
                    slen,
                    dlen,
                    acceleration,
                )
            }
        };
        usize::try_from(n).unwrap_or(0)
    }
}

impl Drop for DictStream {
    fn drop(&mut self) {
        // SAFETY: `state` came from the matching constructor and is freed exactly once.
        unsafe {
            if self.hc {
                LZ4_freeStreamHC(self.state);
            } else {
                LZ4_freeStream(self.state);
            }
        }
    }
}
