//! The benchmark workloads and the C-Blosc2 peers, shared by `benches/blosc.rs` (criterion)
//! and `examples/interleaved_vs_c.rs` (interleaved timing).
//!
//! Peers, both driven through C-Blosc2's context API (`blosc2_create_cctx` /
//! `blosc2_create_dctx` with an explicit thread count, `blosc2_compress_ctx` /
//! `blosc2_decompress_ctx`):
//! - the C-Blosc2 2.15 that the `blosc2-src` crate compiles and links statically (SSE2 only,
//!   no zlib);
//! - when the environment variable [`LIB_ENV`] names a `libblosc2.so` (such as the one shipped
//!   in the python-blosc2 4.14.1 wheel, C-Blosc2 3.3.5 with runtime AVX2 dispatch; `cargo xtask
//!   blosc-peer` fetches it), that library, loaded at run time.
#![allow(
    dead_code,
    unsafe_code,
    unreachable_pub,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::cast_possible_truncation,
    clippy::cast_possible_wrap,
    clippy::cast_sign_loss,
    reason = "benchmark support: FFI calls into the C peers, synthetic data"
)]

use std::ffi::{CStr, c_char, c_int, c_void};
use std::ptr::null_mut;

use blosc_chunk::{CParams, Codec, Filter};
use blosc2_src::{blosc2_context, blosc2_cparams};

/// Uncompressed size of every workload: 4 MiB.
pub(crate) const N: usize = 4 << 20;

/// The environment variable naming a shared C-Blosc2 library to load as a second peer.
pub(crate) const LIB_ENV: &str = "SCIFMT_BLOSC2_LIB";

/// xorshift64 noise source, so the workloads are the same on every run.
fn xorshift(s: &mut u64) -> u64 {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    *s
}

pub(crate) fn int32_ramp_noise() -> Vec<u8> {
    let mut s = 0x1234_5678_9abc_def1u64;
    (0..N / 4)
        .flat_map(|i| {
            let v = (i as u32)
                .wrapping_mul(3)
                .wrapping_add((xorshift(&mut s) % 64) as u32);
            v.to_le_bytes()
        })
        .collect()
}

pub(crate) fn f32_sine_noise() -> Vec<u8> {
    let mut s = 0x0fed_cba9_8765_4321u64;
    (0..N / 4)
        .flat_map(|i| {
            let noise = (xorshift(&mut s) % 1000) as f32 / 1.0e5;
            ((i as f32 / 1000.0).sin() * 100.0 + noise).to_le_bytes()
        })
        .collect()
}

/// A detector-like 16-bit signal: a slow sine around mid-range plus 0..31 counts of noise.
pub(crate) fn u16_sine_noise() -> Vec<u8> {
    let mut s = 0x5a5a_1234_dead_beefu64;
    (0..N / 2)
        .flat_map(|i| {
            let base = 30_000.0 + 2_000.0 * (i as f32 / 5000.0).sin();
            let v = base as u16 + (xorshift(&mut s) % 32) as u16;
            v.to_le_bytes()
        })
        .collect()
}

/// One input buffer of the benchmark.
pub(crate) struct Workload {
    pub(crate) name: &'static str,
    pub(crate) typesize: usize,
    pub(crate) data: Vec<u8>,
}

/// The three workloads: int32, float32 and uint16 buffers of [`N`] bytes.
pub(crate) fn workloads() -> Vec<Workload> {
    vec![
        Workload {
            name: "int32-ramp",
            typesize: 4,
            data: int32_ramp_noise(),
        },
        Workload {
            name: "f32-sine",
            typesize: 4,
            data: f32_sine_noise(),
        },
        Workload {
            name: "u16-sine",
            typesize: 2,
            data: u16_sine_noise(),
        },
    ]
}

/// One codec + filter configuration, always at clevel 5 with the filters in the last slots
/// (one filter: slot 5; two: slots 4 and 5, applied in that order).
pub(crate) struct Config {
    pub(crate) name: &'static str,
    pub(crate) codec: Codec,
    /// The filters in the order they are applied, each with its `filters_meta` byte.
    pub(crate) filters: &'static [(Filter, u8)],
}

pub(crate) const CLEVEL: u8 = 5;

/// Every codec once with byte shuffle, LZ4 with bitshuffle, and LZ4 and zstd with shuffle +
/// BYTEDELTA (python-blosc2's pipeline for floats; see [`filter_slots`] for the metas).
/// The C-Blosc2 that `blosc2-src` builds has no plugins, so only a loaded library runs the
/// BYTEDELTA rows.
pub(crate) const CONFIGS: [Config; 8] = [
    Config {
        name: "blosclz+shuffle",
        codec: Codec::BloscLz,
        filters: &[(Filter::Shuffle, 0)],
    },
    Config {
        name: "lz4+shuffle",
        codec: Codec::Lz4,
        filters: &[(Filter::Shuffle, 0)],
    },
    Config {
        name: "lz4hc+shuffle",
        codec: Codec::Lz4Hc,
        filters: &[(Filter::Shuffle, 0)],
    },
    Config {
        name: "zstd+shuffle",
        codec: Codec::Zstd,
        filters: &[(Filter::Shuffle, 0)],
    },
    Config {
        name: "zlib+shuffle",
        codec: Codec::Zlib,
        filters: &[(Filter::Shuffle, 0)],
    },
    Config {
        name: "lz4+bitshuffle",
        codec: Codec::Lz4,
        filters: &[(Filter::BitShuffle, 0)],
    },
    Config {
        name: "lz4+shuffle+bytedelta",
        codec: Codec::Lz4,
        filters: &[(Filter::Shuffle, 0), (Filter::ByteDelta, 0)],
    },
    Config {
        name: "zstd+shuffle+bytedelta",
        codec: Codec::Zstd,
        filters: &[(Filter::Shuffle, 0), (Filter::ByteDelta, 0)],
    },
];

/// The six filter slots of `c` and their metas. BYTEDELTA's meta is the number of byte streams
/// (python-blosc2 passes the typesize): C-Blosc2 3.3.5 refuses 0.
pub(crate) fn filter_slots(c: &Config, typesize: usize) -> ([Filter; 6], [u8; 6]) {
    let mut filters = [Filter::NoFilter; 6];
    let mut metas = [0u8; 6];
    let first = 6 - c.filters.len();
    for (k, &(f, m)) in c.filters.iter().enumerate() {
        filters[first + k] = f;
        metas[first + k] = if f == Filter::ByteDelta && m == 0 {
            u8::try_from(typesize).unwrap()
        } else {
            m
        };
    }
    (filters, metas)
}

pub(crate) fn ours_params(c: &Config, typesize: usize, nthreads: usize) -> CParams {
    let mut p = CParams::default();
    p.codec = c.codec;
    p.clevel = CLEVEL;
    p.typesize = typesize;
    (p.filters, p.filters_meta) = filter_slots(c, typesize);
    p.nthreads = nthreads;
    p
}

/// `blosc2_dparams` of C-Blosc2 3.x, which appended `typesize` to the 2.x struct (3.3.5's
/// `include/blosc2.h`). `blosc2_cparams` did not change between 2.15 and 3.3.5 (same fields in
/// the same order), so `blosc2_src::blosc2_cparams` serves both peers.
#[repr(C)]
struct DParamsV3 {
    nthreads: i16,
    schunk: *mut c_void,
    postfilter: Option<unsafe extern "C" fn(*mut c_void) -> c_int>,
    postparams: *mut c_void,
    typesize: i32,
}

type CtxFn =
    unsafe extern "C" fn(*mut blosc2_context, *const c_void, i32, *mut c_void, i32) -> c_int;

/// How a peer makes its contexts: the bundled build through its bindings, a loaded library
/// through the symbols looked up in it.
enum Create {
    Bundled,
    Loaded {
        cctx: unsafe extern "C" fn(blosc2_cparams) -> *mut blosc2_context,
        dctx: unsafe extern "C" fn(DParamsV3) -> *mut blosc2_context,
    },
}

/// One C-Blosc2 library.
pub(crate) struct CPeer {
    /// Short column label, e.g. `c2.15-sse2`.
    pub(crate) label: String,
    /// What `blosc2_get_version_string` returned.
    pub(crate) version: String,
    create: Create,
    compress: CtxFn,
    decompress: CtxFn,
    free: unsafe extern "C" fn(*mut blosc2_context),
    /// Keeps a loaded library mapped while the function pointers above are in use; declared
    /// last so it is dropped last.
    lib: Option<libloading::Library>,
}

impl CPeer {
    /// The statically linked C-Blosc2 of `blosc2-src`, initialised. It is built without its
    /// bundled zstd (that copy's thread-pool symbols clash with `zstd-sys`, which zarrs links
    /// multithreaded), so its zstd rows are `n/a`; the loaded library ([`LIB_ENV`], what
    /// `cargo xtask blosc-peer` uses) has zstd.
    pub(crate) fn bundled() -> Self {
        // SAFETY: `blosc2_init` sets up the library's global state and may be called before
        // any other call; `blosc2_get_version_string` returns a pointer to a static C string.
        let version = unsafe {
            blosc2_src::blosc2_init();
            CStr::from_ptr(blosc2_src::blosc2_get_version_string())
        };
        Self {
            label: "c2.15-sse2".into(),
            version: version.to_string_lossy().into_owned(),
            create: Create::Bundled,
            compress: blosc2_src::blosc2_compress_ctx,
            decompress: blosc2_src::blosc2_decompress_ctx,
            free: blosc2_src::blosc2_free_ctx,
            lib: None,
        }
    }

    /// The library named by [`LIB_ENV`], loaded and initialised; `None` when the variable is
    /// unset. Panics with the reason when it is set but the library cannot be used.
    pub(crate) fn from_env() -> Option<Self> {
        let path = std::env::var_os(LIB_ENV)?;
        // SAFETY: loading runs the library's initialisers; C-Blosc2's only set up static
        // tables. libloading opens it RTLD_LOCAL, so its symbols (its own LZ4, zstd, ...) do
        // not interpose on the ones linked into this executable, nor ours on its.
        let lib = unsafe { libloading::Library::new(&path) }
            .unwrap_or_else(|e| panic!("{LIB_ENV}={}: {e}", path.to_string_lossy()));
        // SAFETY: each symbol is looked up with the signature C-Blosc2 3.3.5's `blosc2.h`
        // declares for it (contexts are opaque pointers; `DParamsV3` mirrors its
        // `blosc2_dparams`); the library stays loaded in `lib` as long as the pointers live.
        let (init, version, cctx, dctx, compress, decompress, free) = unsafe {
            (
                *lib.get::<unsafe extern "C" fn() -> c_int>(b"blosc2_init\0")
                    .expect("blosc2_init"),
                *lib.get::<unsafe extern "C" fn() -> *const c_char>(b"blosc2_get_version_string\0")
                    .expect("blosc2_get_version_string"),
                *lib.get::<unsafe extern "C" fn(blosc2_cparams) -> *mut blosc2_context>(
                    b"blosc2_create_cctx\0",
                )
                .expect("blosc2_create_cctx"),
                *lib.get::<unsafe extern "C" fn(DParamsV3) -> *mut blosc2_context>(
                    b"blosc2_create_dctx\0",
                )
                .expect("blosc2_create_dctx"),
                *lib.get::<CtxFn>(b"blosc2_compress_ctx\0")
                    .expect("blosc2_compress_ctx"),
                *lib.get::<CtxFn>(b"blosc2_decompress_ctx\0")
                    .expect("blosc2_decompress_ctx"),
                *lib.get::<unsafe extern "C" fn(*mut blosc2_context)>(b"blosc2_free_ctx\0")
                    .expect("blosc2_free_ctx"),
            )
        };
        // SAFETY: as for the bundled peer: one-time initialisation, then a static string.
        let version = unsafe {
            init();
            CStr::from_ptr(version())
        }
        .to_string_lossy()
        .into_owned();
        assert!(
            version.starts_with("3."),
            "{LIB_ENV} names C-Blosc2 {version}; this harness mirrors the 3.x `blosc2_dparams`"
        );
        Some(Self {
            label: format!("c{version}"),
            version,
            create: Create::Loaded { cctx, dctx },
            compress,
            decompress,
            free,
            lib: Some(lib),
        })
    }

    /// Whether this peer was loaded from [`LIB_ENV`].
    pub(crate) fn is_loaded(&self) -> bool {
        self.lib.is_some()
    }

    /// A compression context for `c` at clevel 5 with `nthreads` threads; `None` when the
    /// library refuses the parameters.
    pub(crate) fn cctx(&self, c: &Config, typesize: usize, nthreads: usize) -> Option<Ctx<'_>> {
        let (slots, filters_meta) = filter_slots(c, typesize);
        let filters = slots.map(Filter::id);
        let p = blosc2_cparams {
            compcode: c.codec.id(),
            compcode_meta: 0,
            clevel: CLEVEL,
            use_dict: 0,
            typesize: typesize as i32,
            nthreads: nthreads as i16,
            blocksize: 0,
            splitmode: blosc2_src::BLOSC_FORWARD_COMPAT_SPLIT,
            schunk: null_mut(),
            filters,
            filters_meta,
            prefilter: None,
            preparams: null_mut(),
            tuner_params: null_mut(),
            tuner_id: 0,
            instr_codec: false,
            codec_params: null_mut(),
            filter_params: [null_mut(); 6],
        };
        // SAFETY: `p` is a complete `blosc2_cparams` without callbacks or schunk; the context
        // copies what it needs.
        let ptr = unsafe {
            match self.create {
                Create::Bundled => blosc2_src::blosc2_create_cctx(p),
                Create::Loaded { cctx, .. } => cctx(p),
            }
        };
        Ctx::new(self, ptr)
    }

    /// A decompression context with `nthreads` threads.
    pub(crate) fn dctx(&self, nthreads: usize) -> Option<Ctx<'_>> {
        // SAFETY: complete parameter structs of the respective version, no callbacks.
        let ptr = unsafe {
            match self.create {
                Create::Bundled => blosc2_src::blosc2_create_dctx(blosc2_src::blosc2_dparams {
                    nthreads: nthreads as i16,
                    schunk: null_mut(),
                    postfilter: None,
                    postparams: null_mut(),
                }),
                Create::Loaded { dctx, .. } => dctx(DParamsV3 {
                    nthreads: nthreads as i16,
                    schunk: null_mut(),
                    postfilter: None,
                    postparams: null_mut(),
                    typesize: 8,
                }),
            }
        };
        Ctx::new(self, ptr)
    }
}

/// A C-Blosc2 context, freed on drop.
pub(crate) struct Ctx<'p> {
    peer: &'p CPeer,
    ptr: *mut blosc2_context,
}

impl<'p> Ctx<'p> {
    fn new(peer: &'p CPeer, ptr: *mut blosc2_context) -> Option<Self> {
        (!ptr.is_null()).then_some(Self { peer, ptr })
    }

    /// Calls `f` (this peer's `blosc2_compress_ctx` or `blosc2_decompress_ctx`, which share
    /// one signature) on this context; the C return value.
    fn call(&mut self, f: CtxFn, src: &[u8], dst: &mut [u8]) -> c_int {
        // SAFETY: `f` is one of this peer's context functions and `self.ptr` a live context
        // of this peer (C-Blosc2 checks whether a context is for compression or decompression
        // and returns an error on a mismatch); `src` and `dst` are live, non-overlapping
        // buffers of the lengths passed.
        unsafe {
            f(
                self.ptr,
                src.as_ptr().cast(),
                src.len() as i32,
                dst.as_mut_ptr().cast(),
                dst.len() as i32,
            )
        }
    }

    /// Compresses `src` into `dst` (on a compression context); the compressed size, or `None`
    /// on a C error (such as a codec the library was built without).
    pub(crate) fn compress(&mut self, src: &[u8], dst: &mut [u8]) -> Option<usize> {
        let n = self.call(self.peer.compress, src, dst);
        (n > 0).then_some(n as usize)
    }

    /// Decompresses the chunk `src` into `dst` (on a decompression context); the decompressed
    /// size, or `None` on a C error.
    pub(crate) fn decompress(&mut self, src: &[u8], dst: &mut [u8]) -> Option<usize> {
        let n = self.call(self.peer.decompress, src, dst);
        (n >= 0).then_some(n as usize)
    }
}

impl Drop for Ctx<'_> {
    fn drop(&mut self) {
        // SAFETY: `self.ptr` came from this peer's create function and is freed once.
        unsafe { (self.peer.free)(self.ptr) };
    }
}

/// Set (to anything) together with [`LIB_ENV`] to leave the bundled peer out, so that a
/// profile of the example holds only ours (the executable) and the loaded library: the bundled
/// C-Blosc2 and ours link the same LZ4 and zstd symbols, which a profile cannot tell apart.
pub(crate) const ONLY_LOADED_ENV: &str = "SCIFMT_BLOSC2_ONLY_LOADED";

/// The bundled peer (unless [`ONLY_LOADED_ENV`] is set and a library is loaded), and the
/// loaded one when [`LIB_ENV`] is set.
pub(crate) fn peers() -> Vec<CPeer> {
    let loaded = CPeer::from_env();
    let only_loaded = loaded.is_some() && std::env::var_os(ONLY_LOADED_ENV).is_some();
    let mut v = Vec::new();
    if !only_loaded {
        v.push(CPeer::bundled());
    }
    v.extend(loaded);
    v
}
