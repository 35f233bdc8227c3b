//! The in-library plugins of C-Blosc2 3.3.5 (BYTEDELTA, INT_TRUNC, NDCELL, NDMEAN filters;
//! NDLZ codec) against the fixtures in `testdata/blosc/plugins/` made by python-blosc2 4.14.1:
//! chunk 0 of every array decodes to what python-blosc2 decompresses, and our encoder writes
//! the stored chunk byte for byte from the chunk's raw content.

#![allow(
    clippy::unwrap_used,
    clippy::cast_possible_truncation,
    reason = "test helpers: a failed unwrap is a failed test; sizes fit in usize"
)]
use blosc_chunk::{BlockShape, CParams, Codec, DParams, Error, Filter, SplitMode};
use testkit::{PluginFixture, plugin_fixtures};

/// The fixtures whose codec this build has.
fn entries() -> Vec<PluginFixture> {
    plugin_fixtures()
        .into_iter()
        .filter(|e| Codec::from_id(e.codec).is_enabled())
        .collect()
}

/// 25 arrays with the plugin filters and NDLZ, 9 more with ZFP (feature `zfp`); fewer when a
/// codec feature the fixtures use (lz4, zstd) is off (`cargo xtask features` runs such builds).
fn expected_arrays() -> usize {
    let all = 25 + if Codec::ZfpAcc.is_enabled() { 9 } else { 0 };
    if Codec::Lz4.is_enabled() && Codec::Zstd.is_enabled() {
        all
    } else {
        entries().len()
    }
}

fn blockshape(e: &PluginFixture) -> BlockShape {
    BlockShape::new(&e.blocks).unwrap()
}

fn cparams(e: &PluginFixture) -> CParams {
    let mut cp = CParams::default();
    cp.codec = Codec::from_id(e.codec);
    cp.codec_meta = e.codec_meta;
    cp.clevel = e.clevel;
    cp.typesize = e.itemsize;
    cp.filters = e.filters.map(Filter::from_id);
    cp.filters_meta = e.filters_meta;
    cp.splitmode = match e.splitmode {
        1 => SplitMode::Always,
        2 => SplitMode::Never,
        3 => SplitMode::Auto,
        _ => SplitMode::ForwardCompat,
    };
    cp.blocksize = (e.blocks.iter().product::<u64>() as usize) * cp.typesize;
    cp.blockshape = Some(blockshape(e));
    cp
}

#[test]
fn every_plugin_chunk_decodes_like_python_blosc2() {
    let mut n = 0;
    for e in entries() {
        let name = &e.name;
        let chunk = e.file("c0.cdata").unwrap();
        let want = e.file("c0.dec").or_else(|| e.file("c0.raw")).unwrap();
        let p = DParams::default().with_blockshape(blockshape(&e));
        let got =
            blosc_chunk::decompress_ctx(&chunk, &p).unwrap_or_else(|err| panic!("{name}: {err}"));
        assert!(got == want, "{name}: decoded bytes differ");
        // Item access decodes the same bytes.
        let ts = e.itemsize;
        let nitems = want.len() / ts;
        let mid = blosc_chunk::getitem_ctx(&chunk, nitems / 3, nitems / 2, &p).unwrap();
        assert!(
            mid == want[nitems / 3 * ts..(nitems / 3 + nitems / 2) * ts],
            "{name}: getitem"
        );
        // Without the block shape, cell filters and ZFP say what they miss.
        let bare = blosc_chunk::decompress(&chunk);
        let memcpyed = chunk[2] & 0x02 != 0;
        if e.needs_blockshape() && !memcpyed {
            assert!(
                matches!(bare, Err(Error::MissingBlockShape { .. })),
                "{name}: {bare:?}"
            );
        } else {
            assert!(bare.unwrap() == want, "{name}: without block shape");
        }
        n += 1;
    }
    assert_eq!(n, expected_arrays());
}

#[test]
fn every_plugin_chunk_encodes_byte_identical() {
    let mut n = 0;
    for e in entries() {
        let name = &e.name;
        let chunk = e.file("c0.cdata").unwrap();
        let raw = e.file("c0.raw").unwrap();
        let cp = cparams(&e);
        let ours = blosc_chunk::compress(&raw, &cp).unwrap_or_else(|err| panic!("{name}: {err}"));
        assert!(
            ours == chunk,
            "{name}: our chunk differs (len {} vs {}; header {:02x?} vs {:02x?})",
            ours.len(),
            chunk.len(),
            &ours[..32.min(ours.len())],
            &chunk[..32]
        );
        n += 1;
    }
    assert_eq!(n, expected_arrays());
}

/// SHUFFLE + BYTEDELTA chunks decode to the data on every layout the one-pass decoder takes
/// (type sizes 2, 4, 8 and 16, one stream per byte plane or one stream per block, incompressible
/// planes stored raw) and on those it leaves to the general pipeline (other type sizes, a
/// BYTEDELTA meta other than the type size, a last block that is not whole elements), into
/// fresh and into caller-initialized memory, whole and by items.
#[test]
fn shuffle_bytedelta_round_trips_on_every_layout() {
    let mut x = 0x1357_9bdfu32;
    let data: Vec<u8> = (0..70_000u32)
        .map(|i| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            // Smooth high bytes, noisy low bytes (the noisy planes are stored raw).
            if i % 4 < 2 {
                x.to_le_bytes()[0]
            } else {
                (i / 97) as u8
            }
        })
        .collect();
    for ts in [2usize, 3, 4, 8, 16] {
        for meta in [0u8, ts as u8, 2] {
            for split in [SplitMode::Always, SplitMode::Never] {
                for len in [0usize, 1, 15, 16 * ts, 1000, 4096 * ts + 5, 70_000] {
                    let src = &data[..len];
                    let mut cp = CParams::default();
                    cp.typesize = ts;
                    cp.codec = Codec::BloscLz;
                    cp.splitmode = split;
                    cp.blocksize = 16 * 1024 / ts * ts;
                    cp.filters = [Filter::NoFilter; 6];
                    cp.filters[0] = Filter::Shuffle;
                    cp.filters[1] = Filter::ByteDelta;
                    cp.filters_meta[1] = meta;
                    let chunk = blosc_chunk::compress(src, &cp).unwrap();
                    let what = format!("ts {ts} meta {meta} {split:?} len {len}");
                    assert!(blosc_chunk::decompress(&chunk).unwrap() == src, "{what}");
                    let mut out = vec![0xA5; len];
                    assert_eq!(blosc_chunk::decompress_into(&chunk, &mut out).unwrap(), len);
                    assert!(out == src, "{what}: into");
                    if len >= 2 * ts {
                        let items = len / ts;
                        let mid = blosc_chunk::getitem(&chunk, items / 3, items / 2).unwrap();
                        let want = &src[items / 3 * ts..(items / 3 + items / 2) * ts];
                        assert!(mid == want, "{what}: getitem");
                    }
                }
            }
        }
    }
}
