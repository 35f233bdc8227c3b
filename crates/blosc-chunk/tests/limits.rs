//! Resource limits: small hostile chunks that claim huge sizes are refused before any large
//! allocation. A counting global allocator measures the peak heap growth of each call.

#![allow(clippy::unwrap_used, reason = "a failed unwrap is a failed test")]

use blosc_chunk::{
    CParams, Codec, DParams, Error, Filter, Limits, SplitMode, decompress, decompress_with,
    getitem, getitem_ctx, getitem_into, getitem_into_ctx, zeros_chunk,
};

use testkit::{lock_serial, peak_during};

#[global_allocator]
static GLOBAL: testkit::CountingAlloc = testkit::CountingAlloc;

/// Nothing a refused input does may come near this (the inputs claim ~2 GiB).
const SMALL: usize = 1 << 20;

/// A 32-byte extended Blosc2 header (no special value unless `blosc2_flags` says so).
fn header(flags: u8, nbytes: i32, blocksize: i32, cbytes: i32, blosc2_flags: u8) -> Vec<u8> {
    let mut h = vec![5, 1, flags, 1];
    h.extend_from_slice(&nbytes.to_le_bytes());
    h.extend_from_slice(&blocksize.to_le_bytes());
    h.extend_from_slice(&cbytes.to_le_bytes());
    h.extend_from_slice(&[0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, blosc2_flags]);
    assert_eq!(h.len(), 32);
    h
}

const HUGE: i32 = i32::MAX - 32;

#[test]
fn chunk_claiming_2_gib_of_data_is_refused_before_allocating() {
    let _g = lock_serial();
    // Extended header (flags 0x05), 2 GiB claimed, 256 KiB blocks, one block offset, no data.
    let mut chunk = header(0x05, HUGE, 1 << 18, 40, 0);
    chunk.extend_from_slice(&40i32.to_le_bytes());
    chunk.extend_from_slice(&0i32.to_le_bytes());
    let (peak, r) = peak_during(|| decompress(&chunk));
    assert!(r.is_err(), "a 40-byte chunk cannot hold 2 GiB");
    assert!(peak < SMALL, "refusing it allocated {peak} bytes");
    let (peak, r) = peak_during(|| getitem(&chunk, 0, 4));
    assert!(r.is_err());
    assert!(peak < SMALL, "getitem allocated {peak} bytes");
}

#[test]
fn memcpyed_chunk_claiming_2_gib_is_refused_before_allocating() {
    let _g = lock_serial();
    // flags 0x07: extended + memcpyed, but only the 32-byte header is present.
    let chunk = header(0x07, HUGE, 1 << 18, 32, 0);
    let (peak, r) = peak_during(|| decompress(&chunk));
    assert!(r.is_err());
    assert!(peak < SMALL, "refusing it allocated {peak} bytes");
}

#[test]
fn special_chunk_beyond_max_nbytes_is_refused_before_allocating() {
    let _g = lock_serial();
    // A valid 32-byte "all zeros" chunk of 2 GiB: legitimate data, but above the caller's cap.
    let chunk = zeros_chunk(usize::try_from(HUGE).unwrap(), 1).unwrap();
    assert_eq!(chunk.len(), 32);
    let (peak, r) =
        peak_during(|| decompress_with(&chunk, &Limits::default().with_max_nbytes(1 << 20)));
    let err = r.unwrap_err();
    assert!(
        err.to_string().contains("limit") || err.to_string().contains("exceed"),
        "{err}"
    );
    assert!(peak < SMALL, "refusing it allocated {peak} bytes");
    // Within the cap the same kind of chunk decodes, allocating about its size. The counters are
    // process-wide, so the test harness freeing a few bytes on another thread can pull the
    // measured peak slightly below 64 KiB: the lower bound only shows the counter is live.
    let small = zeros_chunk(1 << 16, 1).unwrap();
    let (peak, r) =
        peak_during(|| decompress_with(&small, &Limits::default().with_max_nbytes(1 << 20)));
    assert_eq!(r.unwrap(), vec![0u8; 1 << 16]);
    assert!(
        (1 << 15..SMALL).contains(&peak),
        "decoding 64 KiB allocated {peak} bytes"
    );
}

#[test]
fn default_limit_is_the_format_maximum() {
    let _g = lock_serial();
    assert_eq!(Limits::default().max_nbytes, blosc_chunk::MAX_BUFFERSIZE);
    // Above the default maximum (C-Blosc2's BLOSC2_MAX_BUFFERSIZE): refused by default.
    let chunk = header(0x05, i32::MAX, 1 << 18, 32, 0x10);
    let (peak, r) = peak_during(|| decompress(&chunk));
    assert!(r.is_err());
    assert!(peak < SMALL, "refusing it allocated {peak} bytes");
}

/// Default decoding parameters with `max_nbytes` as the limit.
fn limited(max_nbytes: usize) -> DParams {
    let mut p = DParams::default();
    p.limits = Limits::default().with_max_nbytes(max_nbytes);
    p
}

/// A variable-length-block chunk (format version 6, `blosc2_flags2` bit 0): header, one block
/// start per block, then per block its uncompressed size and one BloscLZ stream. `nbytes` is
/// what the header claims.
fn vl_chunk(nbytes: i32, blocks: &[(i32, &[u8])]) -> Vec<u8> {
    let nblocks = i32::try_from(blocks.len()).unwrap();
    let mut chunk = header(0x05, nbytes, nblocks, 0, 0);
    chunk[0] = 6;
    chunk[30] = 0x01;
    chunk[21] = 0; // no filter: the streams hold the data itself
    let mut body = Vec::new();
    let mut start = 32 + 4 * blocks.len();
    for (usize_field, stream) in blocks {
        chunk.extend_from_slice(&i32::try_from(start).unwrap().to_le_bytes());
        body.extend_from_slice(&usize_field.to_le_bytes());
        body.extend_from_slice(stream);
        start += 4 + stream.len();
    }
    chunk.extend_from_slice(&body);
    let cbytes = i32::try_from(chunk.len()).unwrap();
    chunk[12..16].copy_from_slice(&cbytes.to_le_bytes());
    chunk
}

/// One BloscLZ stream holding `data`, cut out of a single-block, unsplit, unfiltered chunk made
/// by this crate's encoder.
fn blosclz_stream(data: &[u8]) -> Vec<u8> {
    let mut cp = CParams::new(Codec::BloscLz, 5, 1, Filter::NoFilter);
    cp.splitmode = SplitMode::Never;
    let chunk = blosc_chunk::compress(data, &cp).unwrap();
    let h = blosc_chunk::ChunkHeader::parse(&chunk).unwrap();
    assert_eq!(h.nblocks(), 1);
    assert!(
        !h.is_memcpyed() && h.special().is_none(),
        "data must compress"
    );
    let stream_at = usize::try_from(i32::from_le_bytes(chunk[32..36].try_into().unwrap())).unwrap();
    let csize = i32::from_le_bytes(chunk[stream_at..stream_at + 4].try_into().unwrap());
    let csize = usize::try_from(csize).unwrap();
    assert!(
        csize < data.len(),
        "the stream must be coded, not stored raw"
    );
    chunk[stream_at + 4..stream_at + 4 + csize].to_vec()
}

#[test]
fn vl_block_chunk_claiming_huge_nbytes_is_refused_by_getitem_before_allocating() {
    let _g = lock_serial();
    // One VL block claiming 2 GiB, four bytes of stream: fits C-Blosc2's maximum, so only the
    // caller's limit can refuse it.
    let chunk = vl_chunk(HUGE, &[(HUGE, &[0x20, 0, 0, 0])]);
    let params = limited(1 << 20);
    let mut out = [0u8; 4];
    let (peak, r) = peak_during(|| getitem_into_ctx(&chunk, 0, 4, &mut out, &params));
    assert!(
        matches!(r, Err(Error::LimitExceeded { what: "nbytes", .. })),
        "{r:?}"
    );
    assert!(peak < SMALL, "getitem_into_ctx allocated {peak} bytes");
    let (peak, r) = peak_during(|| getitem_ctx(&chunk, 0, 4, &params));
    assert!(matches!(r, Err(Error::LimitExceeded { .. })), "{r:?}");
    assert!(peak < SMALL, "getitem_ctx allocated {peak} bytes");
    // Above the format maximum, the default limits refuse it too (getitem_into used to decode
    // VL chunks with no limit at all and allocate the claimed size).
    let chunk = vl_chunk(i32::MAX, &[(i32::MAX, &[0x20, 0, 0, 0])]);
    let (peak, r) = peak_during(|| getitem_into(&chunk, 0, 4, &mut out));
    assert!(matches!(r, Err(Error::LimitExceeded { .. })), "{r:?}");
    assert!(peak < SMALL, "getitem_into allocated {peak} bytes");
    let (peak, r) = peak_during(|| getitem(&chunk, 0, 4));
    assert!(matches!(r, Err(Error::LimitExceeded { .. })), "{r:?}");
    assert!(peak < SMALL, "getitem allocated {peak} bytes");
}

#[test]
fn vl_block_chunk_within_the_limit_gives_the_same_items_as_a_full_decode() {
    let _g = lock_serial();
    let a: Vec<u8> = (0..3000u32)
        .map(|i| u8::try_from(i / 40 % 251).unwrap())
        .collect();
    let b: Vec<u8> = (0..1000u32)
        .map(|i| u8::try_from(i / 8 % 13).unwrap())
        .collect();
    let (sa, sb) = (blosclz_stream(&a), blosclz_stream(&b));
    let chunk = vl_chunk(4000, &[(3000, &sa), (1000, &sb)]);
    let full = decompress(&chunk).unwrap();
    assert_eq!(
        full,
        [a, b].concat(),
        "the VL chunk decodes to its two blocks"
    );
    let params = limited(4000);
    let mut out = vec![0u8; 1500];
    assert_eq!(
        getitem_into_ctx(&chunk, 2500, 1500, &mut out, &params).unwrap(),
        1500
    );
    assert_eq!(out, &full[2500..4000]);
    assert_eq!(getitem_ctx(&chunk, 10, 20, &params).unwrap(), &full[10..30]);
    // One byte under nbytes: refused.
    let tight = limited(3999);
    assert!(matches!(
        getitem_ctx(&chunk, 0, 1, &tight),
        Err(Error::LimitExceeded { .. })
    ));
}
