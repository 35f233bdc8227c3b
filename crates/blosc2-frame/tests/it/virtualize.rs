//! b2nd frames as virtual Zarr v3 references: the python-blosc2 b2nd fixtures virtualized into
//! kerchunk JSON, read back by zarrs through `scifmt_io::ReferenceStore` (each chunk a byte
//! range of the frame, decoded by the `b2nd` codec) and compared with this crate's own decoding
//! of the frame (which the fixture tests check against python-blosc2's values); special chunks
//! (zeros, NaN runs), refusals, a source rewritten after virtualizing, and on the S3 test
//! server only the frame's metadata is read. Sparse frames: `virtualize_sparse.rs`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common::{key_of, testdata};

use std::path::Path;
use std::sync::Arc;

use blosc2_frame::blosc_chunk::CParams;
use blosc2_frame::{
    B2ND_METALAYER, B2ndArray, B2ndCodec, B2ndCodecConfig, B2ndMeta, ChunkLocation, Error, Fill,
    Frame, FrameParams, FrameWriter, VirtualizeOptions, VirtualizeSummary, b2nd_frame_from_slice,
    is_frame_source, virtualize, virtualize_at,
};
use s3_testserver::TestServer;
use scifmt_io::object_store::ObjectStoreExt;
use scifmt_io::{Durability, KerchunkWriter, Location, ReferenceStore, RemoteOptions};
use serde_json::Value;
use zarrs::array::{Array, ArrayBytes, ArraySubset};

type TestResult = Result<(), Box<dyn std::error::Error>>;

/// The b2nd fixtures made by python-blosc2 (MANIFEST.md): 1- to 4-D, every integer width, f4,
/// f8, both byte orders, blocks smaller than chunks, edge chunks, zero runs.
const B2ND_FIXTURES: [&str; 12] = [
    "b2nd_be_f8_11x10.b2nd",
    "b2nd_be_i4_9x13.b2nd",
    "b2nd_f4_20x30.b2nd",
    "b2nd_i1_5x6x7.b2nd",
    "b2nd_i2_40x9.b2nd",
    "b2nd_i4_12x11.b2nd",
    "b2nd_i8_25x7.b2nd",
    "b2nd_u1_33x17.b2nd",
    "b2nd_u2_7x9x11.b2nd",
    "b2nd_u4_500.b2nd",
    "b2nd_u8_5x4x3x3.b2nd",
    "b2nd_zeros_f8_50x40.b2nd",
];

/// `src` virtualized into the kerchunk file `out` (at the root).
pub(crate) fn to_kerchunk(
    src: &Location,
    out: &Path,
) -> Result<VirtualizeSummary, Box<dyn std::error::Error>> {
    let mut w = KerchunkWriter::create(&out.into(), &RemoteOptions::<()>::default())?;
    let summary = virtualize(src, &mut w, &VirtualizeOptions::default())?;
    let written = w.finish(Durability::None)?;
    assert_eq!(written.references, summary.references);
    assert_eq!(written.inline, summary.inline);
    Ok(summary)
}

pub(crate) fn open_refs(
    path: &Path,
    config: &[(String, String)],
) -> Result<Arc<ReferenceStore>, scifmt_io::Error> {
    Ok(Arc::new(ReferenceStore::open(
        &path.into(),
        config,
        RemoteOptions::default(),
        scifmt_io::DEFAULT_MAX_REFERENCE_BYTES,
    )?))
}

/// The whole array at `node`, read through zarrs (native byte order).
pub(crate) fn read_whole(
    store: &Arc<ReferenceStore>,
    node: &str,
) -> Result<Vec<u8>, Box<dyn std::error::Error>> {
    let array = Array::open(Arc::clone(store), node)?;
    let shape = array.shape().to_vec();
    let subset = ArraySubset::new_with_ranges(&shape.iter().map(|&n| 0..n).collect::<Vec<_>>());
    let bytes: ArrayBytes<'static> = array.retrieve_array_subset(&subset)?;
    Ok(bytes.into_fixed()?.into_owned())
}

/// This crate's decoding of `array` in C order, in this machine's byte order (zarrs' `b2nd`
/// codec converts from the stored order).
fn decoded_native(array: &B2ndArray<'_>) -> Result<Vec<u8>, Box<dyn std::error::Error>> {
    let mut bytes = array.read_all()?;
    let size = array.itemsize();
    let stored_big = array.dtype().starts_with('>');
    if size > 1 && stored_big != cfg!(target_endian = "big") {
        for item in bytes.chunks_mut(size) {
            item.reverse();
        }
    }
    Ok(bytes)
}

/// The array at `node` read through the references equals this crate's decoding of the frame
/// at `frame`.
pub(crate) fn same_as_frame(
    store: &Arc<ReferenceStore>,
    node: &str,
    frame: &Path,
) -> Result<(), Box<dyn std::error::Error>> {
    let array = B2ndArray::open(frame)?;
    let got = read_whole(store, node)?;
    assert!(
        got == decoded_native(&array)?,
        "{node} ({}) differs from the frame's decoding",
        frame.display()
    );
    Ok(())
}

/// A sink that counts what it gets (and has no inline chunks).
#[derive(Default)]
pub(crate) struct Counting {
    pub(crate) arrays: u64,
    pub(crate) references: u64,
}

impl scifmt_io::ReferenceSink for Counting {
    fn group(
        &mut self,
        _: &str,
        _: &scifmt_io::zarrs_metadata::v3::GroupMetadataV3,
    ) -> scifmt_io::Result<()> {
        Ok(())
    }

    fn array(
        &mut self,
        _: &str,
        _: &scifmt_io::zarrs_metadata::v3::ArrayMetadataV3,
    ) -> scifmt_io::Result<()> {
        self.arrays += 1;
        Ok(())
    }

    fn reference(&mut self, _: &scifmt_io::ChunkReference<'_>) -> scifmt_io::Result<()> {
        self.references += 1;
        Ok(())
    }
}

#[test]
fn every_b2nd_fixture_reads_back_item_for_item() -> TestResult {
    let _b2nd = blosc2_frame::register();
    let dir = tempfile::tempdir()?;
    for name in B2ND_FIXTURES {
        let path = testdata().join("frames").join(name);
        let out = dir.path().join(format!("{name}.json"));
        let summary = to_kerchunk(&Location::Local(path.clone()), &out)?;
        let frame = Frame::open(&path)?;
        let array = B2ndArray::open(&path)?;
        let meta = array.meta().clone();
        let stored = frame
            .index()
            .iter()
            .filter(|l| matches!(l, ChunkLocation::Stored(_)))
            .count() as u64;
        assert_eq!(
            (
                summary.arrays,
                summary.files,
                summary.references,
                summary.inline
            ),
            (1, 1, stored, 0),
            "{name}"
        );
        assert_eq!(
            summary.references + summary.fill_chunks,
            meta.nchunks(),
            "{name}"
        );
        // Header, metalayers, index and trailer only: less than the file, and no chunk.
        let size = std::fs::metadata(&path)?.len();
        assert!(
            summary.bytes_read < size,
            "{name}: {} of {size}",
            summary.bytes_read
        );
        let store = open_refs(&out, &[])?;
        same_as_frame(&store, "/", &path)?;
        // The metadata is the b2nd metalayer's.
        let zarr: Value = serde_json::from_slice(&store.read("zarr.json")?.ok_or("zarr.json")?)?;
        assert_eq!(zarr["shape"], serde_json::json!(meta.shape), "{name}");
        assert_eq!(
            zarr["chunk_grid"]["configuration"]["chunk_shape"],
            serde_json::json!(meta.chunkshape)
        );
        let codec = &zarr["codecs"][0];
        assert_eq!(codec["name"], "b2nd");
        let config = B2ndCodecConfig::from_entry(codec)?;
        assert_eq!(config.blockshape, meta.blockshape, "{name}");
        assert_ne!(meta.blockshape, meta.chunkshape, "{name}: blocks = chunks");
        let endian = if meta.dtype.starts_with('>') {
            "big"
        } else {
            "little"
        };
        assert_eq!(codec["configuration"]["endian"], endian, "{name}");
        // Each reference is the chunk the frame stores: its bytes start with that chunk.
        let doc: Value = serde_json::from_slice(&std::fs::read(&out)?)?;
        let bytes = std::fs::read(&path)?;
        let grid = meta.chunks_per_dim();
        for (i, loc) in frame.index().iter().enumerate() {
            let (key, _) = key_of(i, &grid);
            let r = &doc["refs"][&key];
            match loc {
                ChunkLocation::Stored(_) => {
                    let chunk = frame.chunk(i)?;
                    let (off, len) = (
                        r[1].as_u64().ok_or("offset")?,
                        r[2].as_u64().ok_or("length")?,
                    );
                    let at = usize::try_from(off)?;
                    assert_eq!(&bytes[at..at + chunk.len()], &chunk[..], "{name} {key}");
                    assert!(len >= chunk.len() as u64, "{name} {key}");
                    assert!(r[0].as_str().is_some_and(|u| u.starts_with("file://")));
                }
                _ => assert!(r.is_null(), "{name} {key}: {r}"),
            }
        }
        // The checksum of the source is kept.
        assert_eq!(
            doc["scifmt"]["checksums"].as_object().map(|m| m.len()),
            Some(1)
        );
    }
    Ok(())
}

#[test]
fn zero_runs_read_as_the_fill_value() -> TestResult {
    let _b2nd = blosc2_frame::register();
    let dir = tempfile::tempdir()?;
    let path = testdata().join("frames/b2nd_zeros_f8_50x40.b2nd");
    let frame = Frame::open(&path)?;
    let zeros = frame
        .index()
        .iter()
        .filter(|l| matches!(l, ChunkLocation::Zeros))
        .count() as u64;
    assert!(zeros > 0, "the fixture has zero runs");
    let out = dir.path().join("refs.json");
    let summary = to_kerchunk(&Location::Local(path.clone()), &out)?;
    assert_eq!(summary.fill_chunks, zeros);
    let store = open_refs(&out, &[])?;
    same_as_frame(&store, "/", &path)?;
    // The values (z[0:5, 0:5] = 1.0, zeros elsewhere), as python-blosc2 wrote them.
    let got = read_whole(&store, "/")?;
    let values: Vec<f64> = got
        .chunks(8)
        .map(|b| f64::from_ne_bytes(b.try_into().unwrap_or_default()))
        .collect();
    let ones = values.iter().filter(|&&v| v == 1.0).count();
    assert_eq!(ones, 25);
    assert_eq!(values.iter().filter(|&&v| v == 0.0).count(), 50 * 40 - 25);
    Ok(())
}

/// A 2-D float64 b2nd frame of 3 x 2 chunks (blocks smaller than chunks) whose chunks 1 and
/// 4 are NaN runs and chunk 3 a zero run, the others stored.
fn frame_with_nan_runs() -> Result<(Vec<u8>, Vec<f64>), Box<dyn std::error::Error>> {
    let meta = B2ndMeta::new(&[9, 8], &[3, 4], &[2, 2], "<f8")?;
    let codec = B2ndCodec::new(B2ndCodecConfig::new(&meta.blockshape))?;
    let chunk_items = meta.chunk_items();
    let mut cp = CParams::default();
    cp.typesize = 8;
    let mut w = FrameWriter::new(FrameParams::new(cp, usize::try_from(chunk_items * 8)?))?;
    w.add_metalayer(B2ND_METALAYER, &meta.to_bytes()?)?;
    let mut want = vec![0.0f64; 72];
    for i in 0..6u64 {
        let (ci, cj) = (i / 2, i % 2);
        match i {
            1 | 4 => {
                w.fill_special(chunk_items, &Fill::Nan)?;
                for r in ci * 3..ci * 3 + 3 {
                    for c in cj * 4..cj * 4 + 4 {
                        want[usize::try_from(r * 8 + c)?] = f64::NAN;
                    }
                }
            }
            3 => w.fill_special(chunk_items, &Fill::Zeros)?,
            _ => {
                let mut items = Vec::new();
                for r in ci * 3..ci * 3 + 3 {
                    for c in cj * 4..cj * 4 + 4 {
                        let v = (r * 8 + c) as f64 + 0.5;
                        want[usize::try_from(r * 8 + c)?] = v;
                        items.extend_from_slice(&v.to_le_bytes());
                    }
                }
                w.append_chunk(codec.encode(&items, &meta.chunkshape, 8)?)?;
            }
        }
    }
    Ok((w.to_bytes()?, want))
}

#[test]
fn nan_runs_are_inline_chunks() -> TestResult {
    let _b2nd = blosc2_frame::register();
    let dir = tempfile::tempdir()?;
    let (bytes, want) = frame_with_nan_runs()?;
    let path = dir.path().join("nan.b2nd");
    std::fs::write(&path, &bytes)?;
    let frame = Frame::open(&path)?;
    assert_eq!(
        frame.index()[1..5],
        [
            ChunkLocation::Nan,
            ChunkLocation::Stored(frame.index()[2].raw()),
            ChunkLocation::Zeros,
            ChunkLocation::Nan
        ]
    );
    let out = dir.path().join("refs.json");
    let summary = to_kerchunk(&Location::Local(path.clone()), &out)?;
    assert_eq!(
        (summary.references, summary.inline, summary.fill_chunks),
        (3, 2, 1)
    );
    let doc: Value = serde_json::from_slice(&std::fs::read(&out)?)?;
    assert!(
        doc["refs"]["c/0/1"]
            .as_str()
            .is_some_and(|s| s.starts_with("base64:"))
    );
    let store = open_refs(&out, &[])?;
    same_as_frame(&store, "/", &path)?;
    let got: Vec<f64> = read_whole(&store, "/")?
        .chunks(8)
        .map(|b| f64::from_ne_bytes(b.try_into().unwrap_or_default()))
        .collect();
    assert_eq!(got.len(), want.len());
    for (k, (g, w)) in got.iter().zip(&want).enumerate() {
        assert!(
            g.to_bits() == w.to_bits() || (g.is_nan() && w.is_nan()),
            "{k}: {g} {w}"
        );
    }
    // A sink without inline chunks refuses the NaN run, naming it.
    let mut sink = Counting::default();
    let e = virtualize(path.as_path(), &mut sink, &VirtualizeOptions::default()).unwrap_err();
    assert!(
        matches!(e, Error::Sink(scifmt_io::Error::Unsupported { .. })),
        "{e}"
    );
    assert!(e.to_string().contains("[0, 1]"), "{e}");
    Ok(())
}

#[test]
fn plain_super_chunks_and_other_dtypes_are_refused() -> TestResult {
    let dir = tempfile::tempdir()?;
    let o = VirtualizeOptions::default();
    let mut w = Counting::default();
    for (name, what) in [
        ("frames/lz4_shuffle_meta_vlmeta.b2frame", "b2nd"),
        ("frames/fill_special_nan.b2frame", "b2nd"),
        // A sparse frame (its directory, its index file) of a plain super-chunk.
        ("frames/sparse_lz4.b2frame", "b2nd"),
        ("frames/sparse_lz4.b2frame/chunks.b2frame", "b2nd"),
    ] {
        let e = virtualize(testdata().join(name).as_path(), &mut w, &o).unwrap_err();
        let text = e.to_string();
        assert!(matches!(e, Error::NotVirtualizable { .. }), "{name}: {e}");
        assert!(
            text.contains(what) && text.contains("file://"),
            "{name}: {text}"
        );
    }
    // A structured dtype: no Zarr v3 data type.
    let meta = B2ndMeta::new(&[4], &[4], &[2], "[('a', '<i2'), ('b', '<i2')]")?;
    let mut cp = CParams::default();
    cp.typesize = 4;
    let mut fw = FrameWriter::new(FrameParams::new(cp, 16))?;
    fw.add_metalayer(B2ND_METALAYER, &meta.to_bytes()?)?;
    fw.append_buffer(&[1u8; 16])?;
    let p = dir.path().join("structured.b2nd");
    std::fs::write(&p, fw.to_bytes()?)?;
    let e = virtualize(p.as_path(), &mut w, &o).unwrap_err();
    assert!(
        matches!(e, Error::NotVirtualizable { .. }) && e.to_string().contains("dtype"),
        "{e}"
    );
    // Cancelled before anything is read.
    let cancel = scifmt_io::Cancel::new();
    cancel.cancel();
    let e = virtualize(
        testdata().join("frames").join(B2ND_FIXTURES[0]).as_path(),
        &mut w,
        &VirtualizeOptions::default().with_cancel(cancel),
    )
    .unwrap_err();
    assert!(matches!(e, Error::Cancelled), "{e}");
    Ok(())
}

#[test]
fn frame_sources_are_told_apart_from_other_data() -> TestResult {
    let dir = tempfile::tempdir()?;
    let frames = testdata().join("frames");
    let local = |p: &Path| Location::from(p);
    // Fixtures by name and magic, a sparse frame's directory.
    for name in B2ND_FIXTURES {
        assert!(is_frame_source(&local(&frames.join(name))), "{name}");
    }
    assert!(is_frame_source(&local(&frames.join("sparse_lz4.b2frame"))));
    // The magic alone, whatever the name; the name alone (missing files, URLs; any case).
    let renamed = dir.path().join("data.bin");
    std::fs::copy(frames.join(B2ND_FIXTURES[0]), &renamed)?;
    assert!(is_frame_source(&local(&renamed)));
    assert!(is_frame_source(&local(&dir.path().join("missing.B2nd"))));
    for url in ["memory:///x/a.b2nd", "memory:///x/a.B2FRAME"] {
        assert!(is_frame_source(&Location::parse(url, &[])?), "{url}");
    }
    // Other data: a WKW mag, a plain directory, a short file, a JSON file, other URLs.
    let short = dir.path().join("short.dat");
    std::fs::write(&short, b"\x90\xa8b2f")?;
    for p in [
        testdata().join("../wkw/u8_raw_b8_f4"),
        dir.path().to_path_buf(),
        short,
        dir.path().join("refs.json"),
    ] {
        assert!(!is_frame_source(&local(&p)), "{}", p.display());
    }
    assert!(!is_frame_source(&Location::parse("memory:///x/mag/", &[])?));
    // A directory that is not a sparse frame is refused saying so.
    let mut w = Counting::default();
    let e = virtualize(dir.path(), &mut w, &VirtualizeOptions::default()).unwrap_err();
    assert!(
        matches!(e, Error::NotVirtualizable { .. })
            && e.to_string().contains("a directory without"),
        "{e}"
    );
    Ok(())
}

#[test]
fn hostile_frames_are_typed_errors() -> TestResult {
    let dir = tempfile::tempdir()?;
    let good = std::fs::read(testdata().join("frames/b2nd_u2_7x9x11.b2nd"))?;
    let mut errors = 0;
    // Every truncation and a byte flipped at every position of the metadata: an error or a
    // virtualization, never a panic.
    let p = dir.path().join("bad.b2nd");
    let frame = Frame::from_slice(&good)?;
    let header_len = frame.header().header_len as usize;
    let index_start = header_len + usize::try_from(frame.header().cbytes)?;
    let positions: Vec<usize> = (0..header_len).chain(index_start..good.len()).collect();
    for &k in &positions {
        let mut bad = good.clone();
        bad[k] ^= 0x5a;
        std::fs::write(&p, &bad)?;
        let mut sink = Counting::default();
        match virtualize(p.as_path(), &mut sink, &VirtualizeOptions::default()) {
            Err(_) => errors += 1,
            Ok(s) => assert_eq!((s.arrays, s.references), (sink.arrays, sink.references)),
        }
        std::fs::write(&p, &good[..k])?;
        let mut sink = Counting::default();
        assert!(virtualize(p.as_path(), &mut sink, &VirtualizeOptions::default()).is_err());
    }
    assert!(errors > 0);
    // A frame whose index claims more chunks than the limits allow.
    let e = virtualize(
        testdata().join("frames/b2nd_u2_7x9x11.b2nd").as_path(),
        &mut Counting::default(),
        &VirtualizeOptions::default()
            .with_limits(blosc2_frame::Limits::default().with_max_nchunks(3)),
    )
    .unwrap_err();
    assert!(matches!(e, Error::LimitExceeded { .. }), "{e}");
    Ok(())
}

#[test]
fn several_frames_are_arrays_of_one_group() -> TestResult {
    let _b2nd = blosc2_frame::register();
    let dir = tempfile::tempdir()?;
    let out = dir.path().join("refs.json");
    let mut w = KerchunkWriter::create(&out.as_path().into(), &RemoteOptions::<()>::default())?;
    scifmt_io::ReferenceSink::group(
        &mut w,
        "",
        &scifmt_io::zarrs_metadata::v3::GroupMetadataV3::new(),
    )?;
    let a = testdata().join("frames/b2nd_i2_40x9.b2nd");
    let b = testdata().join("frames/b2nd_be_f8_11x10.b2nd");
    let o = VirtualizeOptions::default();
    virtualize_at(&Location::Local(a.clone()), "a", &mut w, &o)?;
    virtualize_at(&Location::Local(b.clone()), "b", &mut w, &o)?;
    w.finish(Durability::None)?;
    let store = open_refs(&out, &[])?;
    same_as_frame(&store, "/a", &a)?;
    same_as_frame(&store, "/b", &b)?;
    Ok(())
}

#[test]
fn a_frame_rewritten_after_virtualizing_fails_the_read() -> TestResult {
    let _b2nd = blosc2_frame::register();
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("a.b2nd");
    std::fs::copy(testdata().join("frames/b2nd_f4_20x30.b2nd"), &path)?;
    let out = dir.path().join("refs.json");
    to_kerchunk(&Location::Local(path.clone()), &out)?;
    let store = open_refs(&out, &[])?;
    same_as_frame(&store, "/", &path)?;
    // The same bytes written again, with another modification time: refused all the same.
    let before = std::fs::metadata(&path)?.modified()?;
    let bytes = std::fs::read(&path)?;
    std::fs::write(&path, &bytes)?;
    std::fs::File::options()
        .write(true)
        .open(&path)?
        .set_modified(before + std::time::Duration::from_secs(5))?;
    let e = read_whole(&store, "/").unwrap_err().to_string();
    assert!(e.contains("changed") && e.contains("a.b2nd"), "{e}");
    Ok(())
}

/// A b2nd frame of `n` x `n` u32 of little compressibility.
fn big_frame(n: u64) -> Result<Vec<u8>, Box<dyn std::error::Error>> {
    let mut x = 0x2545_f491_4f6c_dd1du64;
    let values: Vec<u32> = (0..n * n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 32) as u32
        })
        .collect();
    let f = b2nd_frame_from_slice(
        &values,
        &[n, n],
        &[100, 128],
        &[25, 32],
        &CParams::default(),
    )?;
    Ok(f.to_bytes()?)
}

#[test]
fn on_s3_only_the_metadata_is_read_and_refs_carry_the_etag() -> TestResult {
    let _b2nd = blosc2_frame::register();
    let dir = tempfile::tempdir()?;
    let bytes = big_frame(1000)?;
    let local = dir.path().join("big.b2nd");
    std::fs::write(&local, &bytes)?;
    let server = TestServer::start()?;
    let key = "src/big.b2nd";
    scifmt_io::block_on(server.store().put(
        &scifmt_io::object_store::path::Path::from(key),
        bytes.clone().into(),
    ))??;
    server.reset_stats();
    let src = Location::store(
        server.store(),
        scifmt_io::object_store::path::Path::from(key),
        &server.url(key),
    );
    let out = dir.path().join("refs.json");
    let summary = to_kerchunk(&src, &out)?;
    let frame = Frame::open(&local)?;
    assert_eq!(summary.references, frame.nchunks() as u64);
    // What was fetched is what the summary says, and far less than the object.
    let sent: u64 = server
        .log()
        .iter()
        .filter(|r| r.is_object_get() && r.key == key)
        .map(|r| r.bytes_sent)
        .sum();
    assert_eq!(sent, summary.bytes_read);
    let size = bytes.len() as u64;
    assert!(size > 3_000_000, "{size}");
    assert!(
        summary.bytes_read * 50 < size,
        "{} of {size}",
        summary.bytes_read
    );
    // The references name the object and carry its ETag.
    let doc: Value = serde_json::from_slice(&std::fs::read(&out)?)?;
    assert_eq!(doc["refs"]["c/0/0"][0], server.url(key));
    let head = scifmt_io::block_on(
        server
            .store()
            .head(&scifmt_io::object_store::path::Path::from(key)),
    )??;
    let etag = doc["scifmt"]["checksums"][server.url(key)]["etag"].as_str();
    assert!(etag.is_some() && etag == head.e_tag.as_deref(), "{etag:?}");
    // Read back on the server: equal to the local decoding.
    let store = open_refs(&out, &server.env())?;
    same_as_frame(&store, "/", &local)?;
    // Replaced (the same bytes, a new object): the read is refused.
    scifmt_io::block_on(
        server
            .store()
            .put(&scifmt_io::object_store::path::Path::from(key), {
                let mut b = bytes.clone();
                b.push(0);
                b.into()
            }),
    )??;
    // The store that read it keeps serving the referenced bytes it fetched (its read-ahead
    // windows); a store opened now fetches and is refused.
    same_as_frame(&store, "/", &local)?;
    let e = read_whole(&open_refs(&out, &server.env())?, "/")
        .unwrap_err()
        .to_string();
    assert!(e.contains("changed") && e.contains("big.b2nd"), "{e}");
    Ok(())
}
