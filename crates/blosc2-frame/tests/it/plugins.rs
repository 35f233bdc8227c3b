//! b2nd arrays compressed with C-Blosc2 3.3.5's plugin filters (BYTEDELTA, INT_TRUNC, NDCELL,
//! NDMEAN) and the NDLZ codec, made by python-blosc2 4.14.1 (`testdata/blosc/plugins/`): every
//! array reads back equal to python-blosc2's `arr[...]`, regions too, and `b2nd_frame` with the
//! same parameters writes every chunk byte for byte.

#![allow(
    clippy::unwrap_used,
    clippy::cast_possible_truncation,
    reason = "test helpers: a failed unwrap is a failed test; sizes fit in usize"
)]
use blosc2_frame::blosc_chunk::{CParams, Codec, Filter, SplitMode};
use blosc2_frame::{B2ndArray, Frame, b2nd_frame};
use testkit::{PluginFixture, plugin_fixtures};

/// The fixtures whose codec this build has.
fn entries() -> Vec<PluginFixture> {
    plugin_fixtures()
        .into_iter()
        .filter(|e| Codec::from_id(e.codec).is_enabled())
        .collect()
}

/// 25 arrays with the plugin filters and NDLZ, 9 more with ZFP (feature `zfp`).
fn expected_arrays() -> usize {
    if Codec::ZfpAcc.is_enabled() { 34 } else { 25 }
}

/// The array's compression parameters; `b2nd_frame` takes the typesize and the block shape
/// from its arguments and the b2nd metadata.
fn cparams(e: &PluginFixture) -> CParams {
    let mut cp = CParams::default();
    cp.filters = e.filters.map(Filter::from_id);
    cp.filters_meta = e.filters_meta;
    cp.codec = Codec::from_id(e.codec);
    cp.codec_meta = e.codec_meta;
    cp.clevel = e.clevel;
    cp.splitmode = match e.splitmode {
        1 => SplitMode::Always,
        2 => SplitMode::Never,
        3 => SplitMode::Auto,
        _ => SplitMode::ForwardCompat,
    };
    cp
}

#[test]
fn every_plugin_array_reads_like_python_blosc2() {
    let mut arrays = 0;
    let mut chunks = 0;
    for e in entries() {
        let name = &e.name;
        let frame = e.file("b2nd").unwrap();
        let want = e.file("out.bin").or_else(|| e.file("in.bin")).unwrap();
        let a = B2ndArray::from_slice(&frame).unwrap();
        let got = a.read_all().unwrap_or_else(|err| panic!("{name}: {err}"));
        assert!(got == want, "{name}: array differs");
        // A region in the middle (partial chunks and blocks) through the item-access path.
        let shape = &e.shape;
        let start: Vec<u64> = shape.iter().map(|&n| n / 3).collect();
        let stop: Vec<u64> = shape.iter().map(|&n| n - n / 4).collect();
        let region = a.read_region(&start, &stop).unwrap();
        let ts = e.itemsize;
        let mut expect = Vec::new();
        let mut idx = start.clone();
        'outer: loop {
            let mut flat = 0u64;
            for (d, &i) in idx.iter().enumerate() {
                flat = flat * shape[d] + i;
            }
            let f = flat as usize * ts;
            expect.extend_from_slice(&want[f..f + ts]);
            for d in (0..idx.len()).rev() {
                idx[d] += 1;
                if idx[d] < stop[d] {
                    continue 'outer;
                }
                idx[d] = start[d];
            }
            break;
        }
        assert!(region == expect, "{name}: region differs");
        arrays += 1;
        chunks += a.frame().nchunks();
    }
    assert_eq!(arrays, expected_arrays());
    assert!(chunks >= 100, "{chunks} chunks");
}

#[test]
fn b2nd_frame_writes_every_plugin_chunk_byte_identical() {
    let mut chunks = 0;
    for e in entries() {
        let name = &e.name;
        let frame = e.file("b2nd").unwrap();
        let input = e.file("in.bin").unwrap();
        let theirs = B2ndArray::from_slice(&frame).unwrap();
        let ts = e.itemsize;
        let w = b2nd_frame(&input, theirs.meta(), ts, &cparams(&e))
            .unwrap_or_else(|err| panic!("{name}: {err}"));
        let bytes = w.to_bytes().unwrap();
        let ours = Frame::from_slice(&bytes).unwrap();
        let theirs = theirs.frame();
        assert_eq!(ours.nchunks(), theirs.nchunks(), "{name}");
        for i in 0..theirs.nchunks() {
            let (a, b) = (ours.chunk(i).unwrap(), theirs.chunk(i).unwrap());
            assert!(a == b, "{name}: chunk {i} differs");
            chunks += 1;
        }
    }
    assert!(chunks >= 100, "{chunks} chunks");
    eprintln!("{chunks} chunks byte-identical");
}

#[test]
fn a_cell_filter_chunk_without_its_frame_names_the_missing_block_shape() {
    let e = entries()
        .into_iter()
        .find(|e| e.name == "ndcell_f8_meta2_3d")
        .unwrap();
    let frame = e.file("b2nd").unwrap();
    let f = Frame::from_slice(&frame).unwrap();
    let chunk = f.chunk(0).unwrap();
    let err = blosc2_frame::blosc_chunk::decompress(&chunk).unwrap_err();
    assert!(err.to_string().contains("block shape"), "{err}");
    assert!(f.decompress_chunk(0).is_ok());
}
