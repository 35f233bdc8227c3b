//! LZ4 and LZ4HC compression against an external dictionary, through liblz4's streaming API.
//!
//! The `lz4` crate exposes only one-shot block compression, and `lz4-sys` (which compiles
//! liblz4 1.10.0 for it) declares `LZ4_createStream` / `LZ4_freeStream` but none of
//! `LZ4_loadDict`, `LZ4_compress_fast_continue` or the LZ4HC streaming functions. So the
//! streaming functions C-Blosc2 uses for dictionary chunks are declared here; they live in the
//! same liblz4 that `lz4-sys` compiles and links (all of `lz4.c` and `lz4hc.c`). Each stream is compressed
//! after reloading the dictionary, as C-Blosc2 does, so streams stay independent.
//!
//!
//! [`decompress_uninit`] decodes a block through `LZ4_decompress_safe` into memory that has
//! not been initialized (the `lz4` crate takes only `&mut [u8]`), so a block decoded straight
//! into a fresh output buffer need not be zero-filled first.
//!
//! [`HcState`] is one-shot LZ4HC with a state that is kept from block to block.
//!
//! All compressors here write into memory that need not be initialized (liblz4 only stores
//! into the destination), so a stream is compressed straight into the spare capacity of the
//! chunk being built, with no copy from a scratch buffer; [`compress_fast`] is the one-shot
//! LZ4 call for that (the `lz4` crate takes only `&mut [u8]`).
//!
//! `unsafe`: the FFI calls. Every pointer/length pair comes from a live Rust slice, the stream
//! states are owned by [`DictStream`] and [`HcState`] (created once, freed in `Drop`), and the dictionary is
//! owned by the same value, so it outlives every call that references it.
#![allow(unsafe_code, reason = "FFI calls into liblz4; see the SAFETY comments")]

use core::ffi::{c_char, c_int, c_void};
use core::mem::MaybeUninit;

unsafe extern "C" {
    fn LZ4_decompress_safe(
        src: *const c_char,
        dst: *mut c_char,
        compressed_size: c_int,
        dst_capacity: c_int,
    ) -> c_int;
    fn LZ4_compress_fast(
        src: *const c_char,
        dst: *mut c_char,
        src_size: c_int,
        dst_capacity: c_int,
        acceleration: c_int,
    ) -> c_int;
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
    fn LZ4_compress_HC_extStateHC_fastReset(
        state: *mut c_void,
        src: *const c_char,
        dst: *mut c_char,
        src_size: c_int,
        dst_capacity: c_int,
        level: c_int,
    ) -> c_int;
}

/// An LZ4HC state for one-shot compression, kept (in an encoder's per-thread scratch) from one
/// block to the next: `LZ4_compress_HC` allocates, zero-fills and frees a 256 KiB state on
/// every call, once per block.
#[derive(Debug)]
pub(crate) struct HcState(*mut c_void);

// SAFETY: the state is plain memory that this value owns alone; liblz4 keeps no reference to
// it and no thread affinity, so it may move to (and be used and freed on) another thread.
unsafe impl Send for HcState {}

impl HcState {
    /// A fresh state; `None` if liblz4 cannot allocate it.
    pub(crate) fn new() -> Option<Self> {
        // SAFETY: a constructor without arguments (it allocates and initializes the state); a
        // null result is handled below.
        let state = unsafe { LZ4_createStreamHC() };
        (!state.is_null()).then_some(Self(state))
    }

    /// LZ4HC of `src` at `level` into `dst` (its length is the capacity): the same bytes as
    /// `LZ4_compress_HC`, through liblz4's fast reset, which instead of clearing the tables
    /// moves the state's index base past every position it has seen, so no old entry is within
    /// reach of the new block. Returns the compressed size, 0 if it does not fit or `src` is
    /// empty (liblz4's optimal parser, levels 10–12, reads before an empty input; a Blosc
    /// stream is never empty).
    pub(crate) fn compress(
        &mut self,
        src: &[u8],
        dst: &mut [MaybeUninit<u8>],
        level: i32,
    ) -> usize {
        let Some((slen, dlen)) = int_lens(src, dst) else {
            return 0;
        };
        if slen == 0 {
            return 0;
        }
        // SAFETY: `self.0` is a live, initialized LZ4HC state (created in `new`, freed only in
        // `drop`), which is what the fast reset requires; `src` is readable for `slen` bytes
        // and `dst` writable for `dlen` bytes (it may be uninitialized: liblz4 only stores into
        // it), and liblz4 writes at most `dst_capacity` bytes.
        let n = unsafe {
            LZ4_compress_HC_extStateHC_fastReset(
                self.0,
                src.as_ptr().cast(),
                dst.as_mut_ptr().cast(),
                slen,
                dlen,
                level,
            )
        };
        usize::try_from(n).unwrap_or(0)
    }
}

impl Drop for HcState {
    fn drop(&mut self) {
        // SAFETY: the state came from `LZ4_createStreamHC` and is freed exactly once.
        unsafe { LZ4_freeStreamHC(self.0) };
    }
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
        dst: &mut [MaybeUninit<u8>],
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
        // `self`; `src` is readable for `slen` bytes and `dst` writable for `dlen` bytes (it may
        // be uninitialized: liblz4 only stores into it), and liblz4 writes at most
        // `dst_capacity` bytes.
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

/// The lengths of a source and a destination as liblz4's `int`s; `None` if either is larger.
fn int_lens(src: &[u8], dst: &[MaybeUninit<u8>]) -> Option<(c_int, c_int)> {
    Some((
        c_int::try_from(src.len()).ok()?,
        c_int::try_from(dst.len()).ok()?,
    ))
}

/// LZ4 of `src` with `acceleration` into `dst` (its length is the capacity; it may be
/// uninitialized): `LZ4_compress_fast`, the call C-Blosc makes. Returns the compressed size
/// (`dst[..n]` is then initialized), 0 if it does not fit.
pub(crate) fn compress_fast(src: &[u8], dst: &mut [MaybeUninit<u8>], acceleration: i32) -> usize {
    let Some((slen, dlen)) = int_lens(src, dst) else {
        return 0;
    };
    // SAFETY: `src` is readable for `slen` bytes and `dst` writable for `dlen` bytes;
    // `LZ4_compress_fast` only stores into `dst`, at most `dst_capacity` bytes, and returns how
    // many it wrote from the start of `dst` (0 if the block does not fit).
    let n = unsafe {
        LZ4_compress_fast(
            src.as_ptr().cast(),
            dst.as_mut_ptr().cast(),
            slen,
            dlen,
            acceleration,
        )
    };
    usize::try_from(n).unwrap_or(0)
}

/// Decodes the LZ4 block `src` into `dst`; `true` only if it decoded to exactly `dst.len()`
/// bytes, in which case every byte of `dst` has been written. `dst` may be uninitialized.
pub(crate) fn decompress_uninit(src: &[u8], dst: &mut [MaybeUninit<u8>]) -> bool {
    let Some((slen, dlen)) = int_lens(src, dst) else {
        return false;
    };
    // SAFETY: `src` is readable for `slen` bytes and `dst` writable for `dlen` bytes.
    // `LZ4_decompress_safe` is liblz4's decoder for untrusted input: it writes at most
    // `dst_capacity` bytes, never reads outside `src`, reads back from `dst` only bytes it has
    // already written in this call (a match reaching before `dst` is an error), and returns
    // the number of bytes written from the start of `dst` (negative on error). It stores plain
    // bytes only, so the written part of `dst` is initialized.
    let n =
        unsafe { LZ4_decompress_safe(src.as_ptr().cast(), dst.as_mut_ptr().cast(), slen, dlen) };
    n == dlen
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "test")]
mod tests {
    use super::*;
    use crate::testutil::written;

    /// One reused state writes what `LZ4_compress_HC` (through the `lz4` crate) writes, call
    /// after call: across levels and sizes, and after a call whose output did not fit (which
    /// leaves the state dirty). An empty input is refused at every level.
    #[test]
    fn reused_hc_state_writes_what_lz4_compress_hc_writes() {
        let mut x = 0x1234_5678u32;
        let mut noise = move |n: usize| -> Vec<u8> {
            (0..n)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 17;
                    x ^= x << 5;
                    x.to_le_bytes()[0]
                })
                .collect()
        };
        let text: Vec<u8> = (0..300_000u32)
            .map(|i| ((i % 97) ^ (i / 1000) ^ (i % 13 * 7)).to_le_bytes()[0])
            .collect();
        let inputs: Vec<Vec<u8>> = vec![
            text[..70_000].to_vec(),
            noise(50_000),
            text[1000..].to_vec(),
            noise(300),
            text[5..40_005].to_vec(),
        ];
        let mut hc = HcState::new().unwrap();
        for level in [1, 5, 9, 12] {
            assert_eq!(hc.compress(&[], &mut [MaybeUninit::new(0); 16], level), 0);
            for input in &inputs {
                for capacity in [input.len() + input.len() / 255 + 16, input.len() / 2] {
                    let mut ours = vec![MaybeUninit::uninit(); capacity];
                    let n = hc.compress(input, &mut ours, level);
                    let mut theirs = vec![0u8; capacity];
                    let mode = lz4::block::CompressionMode::HIGHCOMPRESSION(level);
                    let m = lz4::block::compress_to_buffer(input, Some(mode), false, &mut theirs)
                        .unwrap_or(0);
                    assert_eq!(n, m, "level {level}, {} bytes into {capacity}", input.len());
                    assert!(written(&ours, n) == theirs[..m]);
                }
            }
        }
    }

    /// `compress_fast` into uninitialized memory writes what the `lz4` crate's one-shot LZ4
    /// writes, at every acceleration C-Blosc uses, and 0 when the block does not fit.
    #[test]
    fn compress_fast_writes_what_lz4_compress_fast_writes() {
        let data: Vec<u8> = (0..100_000u32)
            .map(|i| {
                ((i % 251) ^ (i / 700) ^ (i.wrapping_mul(2_654_435_761) >> 29)).to_le_bytes()[0]
            })
            .collect();
        for accel in 1..=9 {
            for capacity in [data.len() + data.len() / 255 + 16, data.len() / 3, 0] {
                let mut ours = vec![MaybeUninit::uninit(); capacity];
                let n = compress_fast(&data, &mut ours, accel);
                let mut theirs = vec![0u8; capacity];
                let mode = lz4::block::CompressionMode::FAST(accel);
                let m = lz4::block::compress_to_buffer(&data, Some(mode), false, &mut theirs)
                    .unwrap_or(0);
                assert_eq!(n, m, "acceleration {accel}, capacity {capacity}");
                assert!(written(&ours, n) == theirs[..m]);
            }
        }
    }

    #[test]
    fn decodes_into_uninit_memory_exactly_and_refuses_bad_input() {
        let data: Vec<u8> = (0..100_000u32)
            .map(|i| ((i % 251) ^ (i / 700)).to_le_bytes()[0])
            .collect();
        let comp = lz4::block::compress(&data, None, false).unwrap();
        let mut out = vec![MaybeUninit::<u8>::uninit(); data.len()];
        assert!(decompress_uninit(&comp, &mut out));
        // SAFETY: `decompress_uninit` returned `true`, so every element was written.
        #[allow(unsafe_code, reason = "checking what was written")]
        let got: Vec<u8> = out.iter().map(|b| unsafe { b.assume_init() }).collect();
        assert!(got == data);
        // Too small or too large an output, and a truncated stream, are refused.
        assert!(!decompress_uninit(&comp, &mut out[..data.len() - 1]));
        let mut big = vec![MaybeUninit::<u8>::uninit(); data.len() + 1];
        assert!(!decompress_uninit(&comp, &mut big));
        assert!(!decompress_uninit(&comp[..comp.len() / 2], &mut out));
        // A match pointing before the start of the output.
        assert!(!decompress_uninit(
            &[0x0f, 0x05, 0x00, 0x00],
            &mut out[..20]
        ));
    }
}
