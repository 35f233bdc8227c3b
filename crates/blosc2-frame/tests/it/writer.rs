#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::cast_possible_truncation,
    clippy::cast_possible_wrap,
    clippy::cast_sign_loss
)]
//! Writer: byte-exact rebuilds of reference frames from their recorded python-blosc2 calls,
//! and round trips of every write operation.

use crate::common;

use blosc2_frame::blosc_chunk::{self, CParams, Codec, Filter, SplitMode};
use blosc2_frame::{
    B2ndArray, B2ndMeta, ChunkLocation, Durability, Fill, Frame, FrameParams, FrameWriter,
    b2nd_frame,
};
use common::testdata;

fn i32s(v: impl IntoIterator<Item = i32>) -> Vec<u8> {
    v.into_iter().flat_map(i32::to_le_bytes).collect()
}

fn i64s(v: impl IntoIterator<Item = i64>) -> Vec<u8> {
    v.into_iter().flat_map(i64::to_le_bytes).collect()
}

fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(testdata().join("frames").join(name)).unwrap()
}

/// Reports the first differing byte to make failures readable.
fn assert_same(got: &[u8], want: &[u8], what: &str) {
    if got != want {
        let at = got
            .iter()
            .zip(want)
            .position(|(a, b)| a != b)
            .unwrap_or(got.len().min(want.len()));
        panic!(
            "{what}: {} vs {} bytes, first difference at {at}: got {:02x?} want {:02x?}",
            got.len(),
            want.len(),
            &got[at.saturating_sub(4)..(at + 12).min(got.len())],
            &want[at.saturating_sub(4)..(at + 12).min(want.len())]
        );
    }
}

/// python: `CParams(...)` for the calls in the manifest (`nthreads=1`, AUTO_SPLIT recorded as
/// python-blosc2's default split mode).
fn py_cparams(codec: Codec, typesize: usize, filters: &[Filter]) -> CParams {
    let mut c = CParams::default();
    c.codec = codec;
    c.clevel = 5;
    c.typesize = typesize;
    if !filters.is_empty() {
        c.filters = [Filter::NoFilter; 6];
        c.filters[..filters.len()].copy_from_slice(filters);
    }
    c.splitmode = SplitMode::Auto;
    c.nthreads = 1;
    c
}

#[test]
fn rebuild_lz4_shuffle_meta_vlmeta_byte_exact() {
    let mut w = FrameWriter::new(FrameParams::new(
        py_cparams(Codec::Lz4, 4, &[Filter::Shuffle]),
        100_000,
    ))
    .unwrap();
    w.add_metalayer("m1", &[0x93, 1, 2, 3]).unwrap();
    w.add_metalayer("mymeta", &[0x81, 0xa1, b'a', 1]).unwrap();
    w.append_data(&i32s(0..25_000)).unwrap();
    w.append_data(&i32s(std::iter::repeat_n(0, 25_000)))
        .unwrap();
    w.append_data(&i32s((0..10_000).map(|i| i * 3))).unwrap();
    w.set_vlmetalayer("info", b"\x81\xa5hello\xa5world")
        .unwrap();
    w.set_vlmetalayer("bin", &[0xc4, 3, 0, 1, 2]).unwrap();
    assert_same(
        &w.to_bytes().unwrap(),
        &fixture("lz4_shuffle_meta_vlmeta.b2frame"),
        "lz4 frame",
    );
}

/// A writer that keeps the bytes and the length of the largest single `write` call.
#[derive(Default)]
struct RecordingWriter {
    bytes: Vec<u8>,
    largest_write: usize,
}

impl std::io::Write for RecordingWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.largest_write = self.largest_write.max(buf.len());
        self.bytes.extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn write_to_streams_the_same_bytes_as_write_file_and_to_bytes() {
    let cp = py_cparams(Codec::Zstd, 8, &[Filter::Delta, Filter::Shuffle]);
    let mut w = FrameWriter::new(FrameParams::new(cp, 8000)).unwrap();
    w.add_metalayer("m1", &[0x93, 1, 2, 3]).unwrap();
    for k in 0..40i64 {
        w.append_data(&i64s((0..1000).map(|i| i * (k + 1) + k)))
            .unwrap();
    }
    w.set_vlmetalayer("info", b"\x81\xa5hello\xa5world")
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("f.b2frame");
    w.write_file(&path, Durability::None).unwrap();
    let from_file = std::fs::read(&path).unwrap();
    let mut rec = RecordingWriter::default();
    w.write_to(&mut rec).unwrap();
    assert_same(&rec.bytes, &from_file, "write_to vs write_file");
    assert_same(&w.to_bytes().unwrap(), &from_file, "to_bytes vs write_file");
    // Streamed piece by piece: no single write holds more than one part (header, one chunk,
    // index or trailer), let alone the whole frame.
    let largest_chunk = (0..40)
        .map(|i| {
            Frame::from_slice(&from_file)
                .unwrap()
                .chunk(i)
                .unwrap()
                .len()
        })
        .max()
        .unwrap();
    assert!(
        rec.largest_write <= largest_chunk.max(1000),
        "largest write {} bytes, largest chunk {largest_chunk}, frame {}",
        rec.largest_write,
        from_file.len()
    );
    // Into a file handle, as the documentation suggests (buffered).
    let other = dir.path().join("g.b2frame");
    let mut out = std::io::BufWriter::new(std::fs::File::create(&other).unwrap());
    w.write_to(&mut out).unwrap();
    drop(out);
    assert_eq!(std::fs::read(&other).unwrap(), from_file);
}

#[test]
fn rebuild_zstd_delta_shuffle_many_chunks_byte_exact() {
    let cp = py_cparams(Codec::Zstd, 8, &[Filter::Delta, Filter::Shuffle]);
    let mut w = FrameWriter::new(FrameParams::new(cp, 8000)).unwrap();
    for k in 0..40i64 {
        w.append_data(&i64s((0..1000).map(|i| i * (k + 1) + k)))
            .unwrap();
    }
    w.append_data(&i64s(0..300)).unwrap();
    assert_same(
        &w.to_bytes().unwrap(),
        &fixture("zstd_delta_shuffle_many_chunks.b2frame"),
        "zstd frame",
    );
}

#[test]
fn rebuild_fill_special_frames_byte_exact() {
    for (name, ts, chunksize, fill) in [
        ("fill_special_zero.b2frame", 4, 4000, Fill::Zeros),
        ("fill_special_nan.b2frame", 8, 8000, Fill::Nan),
        ("fill_special_uninit.b2frame", 4, 4000, Fill::Uninit),
        (
            "fill_special_value.b2frame",
            8,
            8000,
            Fill::Value(3.5f64.to_le_bytes().to_vec()),
        ),
    ] {
        let mut cp = CParams::default();
        cp.codec = Codec::Zstd;
        cp.typesize = ts;
        cp.splitmode = SplitMode::Auto;
        let mut p = FrameParams::new(cp, chunksize);
        p.nthreads_decompress = 2; // recorded by python-blosc2's default DParams on the 2-core generator machine
        let mut w = FrameWriter::new(p).unwrap();
        w.fill_special(2500, &fill).unwrap();
        assert_same(&w.to_bytes().unwrap(), &fixture(name), name);
    }
}

#[test]
fn rebuild_b2nd_frames_byte_exact() {
    // blosc2.asarray(np.arange(600,'<f4').reshape(20,30), chunks=(8,16), blocks=(4,8), zstd 5); vlmeta['note']='hi'
    let meta = B2ndMeta::new(&[20, 30], &[8, 16], &[4, 8], "<f4").unwrap();
    let data: Vec<u8> = (0..600).flat_map(|i| (i as f32).to_le_bytes()).collect();
    let mut w = b2nd_frame(&data, &meta, 4, &py_cparams(Codec::Zstd, 4, &[])).unwrap();
    w.set_vlmetalayer("note", &[0xa2, b'h', b'i']).unwrap();
    assert_same(
        &w.to_bytes().unwrap(),
        &fixture("b2nd_f4_20x30.b2nd"),
        "b2nd f4",
    );
    // (np.arange(693) % 1000).astype('<u2').reshape(7,9,11), chunks (4,5,6), blocks (2,3,4), blosclz + shuffle
    let meta = B2ndMeta::new(&[7, 9, 11], &[4, 5, 6], &[2, 3, 4], "<u2").unwrap();
    let data: Vec<u8> = (0..693u16).flat_map(|i| (i % 1000).to_le_bytes()).collect();
    let w = b2nd_frame(
        &data,
        &meta,
        2,
        &py_cparams(Codec::BloscLz, 2, &[Filter::Shuffle]),
    )
    .unwrap();
    assert_same(
        &w.to_bytes().unwrap(),
        &fixture("b2nd_u2_7x9x11.b2nd"),
        "b2nd u2",
    );
}

#[test]
fn rebuild_b2nd_zeros_then_update_byte_exact() {
    // blosc2.zeros((50,40), '<f8', chunks=(20,20), blocks=(10,10), cparams=CParams(nthreads=1)); z[0:5,0:5]=1.0
    let meta = B2ndMeta::new(&[50, 40], &[20, 20], &[10, 10], "<f8").unwrap();
    let cp = py_cparams(Codec::Zstd, 8, &[]);
    let mut w = blosc2_frame::b2nd_zeros(&meta, 8, &cp).unwrap();
    // Chunk 0 in block-major order: block (0,0) holds rows 0-9, cols 0-9.
    let chunk0: Vec<u8> = (0..400)
        .flat_map(|k| {
            let (r, c) = (k / 10, k % 10);
            (if k < 100 && r < 5 && c < 5 {
                1.0f64
            } else {
                0.0
            })
            .to_le_bytes()
        })
        .collect();
    let mut cp8 = cp.clone();
    cp8.blocksize = 800;
    w.update_chunk(0, blosc_chunk::compress(&chunk0, &cp8).unwrap())
        .unwrap();
    assert_same(
        &w.to_bytes().unwrap(),
        &fixture("b2nd_zeros_f8_50x40.b2nd"),
        "b2nd zeros",
    );
}

/// Reads `bytes` back and checks chunk contents and metadata against `expect`.
fn check_frame(f: &Frame<'_>, expect: &[Vec<u8>]) {
    assert_eq!(f.nchunks(), expect.len());
    for (i, want) in expect.iter().enumerate() {
        assert_eq!(&f.decompress_chunk(i).unwrap(), want, "chunk {i}");
    }
    assert_eq!(f.decompress_all().unwrap(), expect.concat());
}

fn chunk_of(seed: i32, n: usize) -> Vec<u8> {
    i32s((0..n as i32).map(|i| i.wrapping_mul(seed) ^ (i >> 3)))
}

fn compress(cp: &CParams, d: &[u8]) -> Vec<u8> {
    blosc_chunk::compress(d, cp).unwrap()
}

#[test]
fn every_write_operation_round_trips() {
    let cp = py_cparams(Codec::Lz4, 4, &[Filter::Shuffle]);
    let mut w = FrameWriter::new(FrameParams::new(cp.clone(), 4000)).unwrap();
    w.add_metalayer("meta", &[0x93, 1, 2, 3]).unwrap();
    let mut model: Vec<Vec<u8>> = Vec::new();
    for k in 1..=4 {
        let d = chunk_of(k, 1000);
        w.append_buffer(&d).unwrap();
        model.push(d);
    }
    // Metalayers are fixed once chunks exist; updates must keep the size.
    assert!(w.add_metalayer("late", b"x").is_err());
    assert!(w.update_metalayer("meta", &[0x93, 1, 2]).is_err());
    w.update_metalayer("meta", &[0x93, 7, 8, 9]).unwrap();
    // update / insert / delete / reorder
    let d = chunk_of(99, 1000);
    w.update_chunk(1, compress(&cp, &d)).unwrap();
    model[1] = d;
    let d = chunk_of(55, 1000);
    w.insert_chunk(0, compress(&cp, &d)).unwrap();
    model.insert(0, d);
    w.delete_chunk(2).unwrap();
    model.remove(2);
    w.reorder(&[3, 0, 2, 1]).unwrap();
    model = [3, 0, 2, 1].iter().map(|&k| model[k].clone()).collect();
    assert!(w.reorder(&[0, 0, 1, 2]).is_err());
    // Special runs and zero chunks become special offsets.
    w.fill_special(1000, &Fill::Zeros).unwrap();
    model.push(vec![0; 4000]);
    w.append_buffer(&[0u8; 4000]).unwrap();
    model.push(vec![0; 4000]);
    w.fill_special(1500, &Fill::Value(7i32.to_le_bytes().to_vec()))
        .unwrap();
    model.push(i32s([7; 1000]));
    model.push(i32s([7; 500]));
    // Partial last chunk: nothing may follow.
    assert!(w.append_buffer(&chunk_of(1, 1000)).is_err());
    assert!(w.insert_chunk(0, compress(&cp, &chunk_of(1, 10))).is_err());
    // vlmetalayers
    w.set_vlmetalayer("a", b"\xa1x").unwrap();
    w.set_vlmetalayer("b", &[0x92, 1, 2]).unwrap();
    w.set_vlmetalayer("a", b"\xa3xyz").unwrap();
    w.delete_vlmetalayer("b").unwrap();
    assert!(w.delete_vlmetalayer("b").is_err());

    let bytes = w.to_bytes().unwrap();
    let f = Frame::from_slice(&bytes).unwrap();
    check_frame(&f, &model);
    assert_eq!(f.metalayer("meta"), Some(&[0x93, 7, 8, 9][..]));
    assert_eq!(f.vlmetalayers().len(), 1);
    assert_eq!(f.vlmetalayer("a").unwrap(), b"\xa3xyz");
    assert_eq!(f.index()[4], ChunkLocation::Zeros);
    assert_eq!(f.index()[5], ChunkLocation::Zeros);
    assert!(matches!(f.index()[6], ChunkLocation::Stored(_)));

    // Editing a frame read back gives the same frame again.
    let again = FrameWriter::from_frame(&f).unwrap().to_bytes().unwrap();
    assert_eq!(again, bytes);

    // File and sparse-directory output read back identically.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("x.b2frame");
    w.write_file(&path, Durability::Fsync).unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), bytes);
    check_frame(&Frame::open(&path).unwrap(), &model);
    let sdir = dir.path().join("x.sparse");
    w.write_sparse(&sdir, Durability::None).unwrap();
    let s = Frame::open(&sdir).unwrap();
    assert!(s.is_sparse());
    check_frame(&s, &model);
    assert_eq!(s.vlmetalayer("a").unwrap(), b"\xa3xyz");
    // Only the temp-free final names remain.
    let names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert!(names.iter().all(|n| !n.ends_with(".tmp")), "{names:?}");
}

#[test]
fn sparse_edit_keeps_old_chunk_files_until_the_new_index_is_in_place() {
    let dir = tempfile::tempdir().unwrap();
    let src = testdata().join("frames/sparse_lz4.b2frame");
    let sdir = dir.path().join("s.b2frame");
    std::fs::create_dir(&sdir).unwrap();
    for e in std::fs::read_dir(&src).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), sdir.join(e.file_name())).unwrap();
    }
    let f = Frame::open(&sdir).unwrap();
    let mut model: Vec<Vec<u8>> = (0..f.nchunks())
        .map(|i| f.decompress_chunk(i).unwrap())
        .collect();
    let mut w = FrameWriter::from_frame(&f).unwrap();
    drop(f);
    let cp = py_cparams(Codec::Lz4, 4, &[]);
    let d = chunk_of(3, 1000);
    w.update_chunk(2, compress(&cp, &d)).unwrap();
    model[2] = d;
    w.delete_chunk(0).unwrap();
    model.remove(0);
    w.write_sparse(&sdir, Durability::None).unwrap();
    let f = Frame::open(&sdir).unwrap();
    check_frame(&f, &model);
    assert_eq!(f.metalayer("m"), Some(&[1u8][..]));
    assert_eq!(f.vlmetalayer("k").unwrap(), b"\xa1v");
    // Unchanged chunks kept their numbers, the updated one got a new number (max + 1 = 4),
    // and the files no longer referenced (0 and the replaced 1) are gone.
    assert_eq!(
        f.index(),
        [
            ChunkLocation::Stored(3),
            ChunkLocation::Stored(4),
            ChunkLocation::Stored(2),
            ChunkLocation::Zeros
        ]
    );
    let mut files: Vec<String> = std::fs::read_dir(&sdir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    files.sort();
    assert_eq!(
        files,
        [
            "00000002.chunk",
            "00000003.chunk",
            "00000004.chunk",
            "chunks.b2frame"
        ]
    );
}

#[test]
fn b2nd_write_read_round_trip_16_dims_and_edges() {
    // 16-D array (markers 0xa0), odd edge chunks, blocks not dividing chunks.
    let shape = [3u64, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 5];
    let chunks = [2u64, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 3];
    let blocks = [1u64, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2];
    let meta = B2ndMeta::new(&shape, &chunks, &blocks, "<u2").unwrap();
    let n: u64 = shape.iter().product();
    let data: Vec<u8> = (0..n as u16)
        .flat_map(|i| (i * 7 + 1).to_le_bytes())
        .collect();
    let w = b2nd_frame(&data, &meta, 2, &py_cparams(Codec::Zstd, 2, &[])).unwrap();
    let bytes = w.to_bytes().unwrap();
    let a = B2ndArray::from_slice(&bytes).unwrap();
    assert_eq!(a.meta(), &meta);
    assert_eq!(a.read_all().unwrap(), data);
    let mut lo = vec![0u64; 16];
    let mut hi = shape.to_vec();
    lo[0] = 1;
    lo[15] = 2;
    hi[15] = 4;
    let got = a.read_region(&lo, &hi).unwrap();
    // Region [1..3, 0..2, …, 0..2, 2..4]: 2*2*2*2 items.
    let mut want = Vec::new();
    for x0 in 1..3u64 {
        for x1 in 0..2u64 {
            for x14 in 0..2u64 {
                for x15 in 2..4u64 {
                    let lin = ((x0 * 2 + x1) * 2 + x14) * 5 + x15;
                    want.extend_from_slice(&data[(lin * 2) as usize..(lin * 2 + 2) as usize]);
                }
            }
        }
    }
    assert_eq!(got, want);
    // Wide structured items (typesize > 255 is stored as 1 in chunks and header).
    let meta = B2ndMeta::new(&[5], &[2], &[2], "[('a', '<f8', (40,))]").unwrap();
    let data: Vec<u8> = (0..5 * 320).map(|i| (i % 251) as u8).collect();
    let w = b2nd_frame(&data, &meta, 320, &py_cparams(Codec::Lz4, 320, &[])).unwrap();
    let bytes = w.to_bytes().unwrap();
    let a = B2ndArray::from_slice(&bytes).unwrap();
    assert_eq!(a.frame().header().typesize, 1);
    assert_eq!(a.itemsize(), 320);
    assert_eq!(a.read_region(&[1], &[4]).unwrap(), data[320..1280]);
}

#[test]
fn loaded_sparse_frame_written_elsewhere_never_reuses_foreign_files() {
    let dir = tempfile::tempdir().unwrap();
    let f = Frame::open(testdata().join("frames/sparse_lz4.b2frame")).unwrap();
    let want = f.decompress_all().unwrap();
    let w = FrameWriter::from_frame(&f).unwrap();
    // The target already holds unrelated chunk files with the same numbers.
    let other = dir.path().join("other.b2frame");
    std::fs::create_dir(&other).unwrap();
    for n in 0..4 {
        std::fs::write(other.join(format!("{n:08X}.chunk")), b"not a chunk at all").unwrap();
    }
    w.write_sparse(&other, Durability::None).unwrap();
    assert_eq!(Frame::open(&other).unwrap().decompress_all().unwrap(), want);
}

#[test]
fn variable_size_frames_store_special_chunks_as_data() {
    let cp = py_cparams(Codec::Zstd, 4, &[]);
    let mut w = FrameWriter::new(FrameParams::new(cp.clone(), 0)).unwrap();
    w.append_buffer(&i32s(0..100)).unwrap();
    w.append_buffer(&[0u8; 4000]).unwrap();
    w.append_chunk(blosc_chunk::zeros_chunk(64, 4).unwrap())
        .unwrap();
    w.append_buffer(&i32s(0..7)).unwrap();
    let bytes = w.to_bytes().unwrap();
    let f = Frame::from_slice(&bytes).unwrap();
    assert!(f.header().variable_chunks);
    assert_eq!(f.header().format_version, 3);
    assert!(
        f.index()
            .iter()
            .all(|l| matches!(l, ChunkLocation::Stored(_)))
    );
    let sizes: Vec<usize> = (0..4).map(|i| f.chunk_nbytes(i).unwrap()).collect();
    assert_eq!(sizes, [400, 4000, 64, 28]);
    let mut want = i32s(0..100);
    want.extend([0u8; 4064]);
    want.extend(i32s(0..7));
    assert_eq!(f.decompress_all().unwrap(), want);
    assert_eq!(f.get_slice(99, 1117).unwrap(), want[396..4468]);
}

#[test]
fn failed_write_leaves_the_old_file_and_no_temporary() {
    let dir = tempfile::tempdir().unwrap();
    let cp = py_cparams(Codec::Lz4, 4, &[]);
    let mut w = FrameWriter::new(FrameParams::new(cp, 4000)).unwrap();
    w.append_data(&i32s(0..2500)).unwrap();
    let target = dir.path().join("a.b2frame");
    w.write_file(&target, Durability::Fsync).unwrap();
    let old = std::fs::read(&target).unwrap();
    // The rename cannot replace a non-empty directory: the write fails after the temporary
    // file was complete, and must clean it up.
    let blocked = dir.path().join("blocked");
    std::fs::create_dir(&blocked).unwrap();
    std::fs::write(blocked.join("keep"), b"x").unwrap();
    assert!(w.write_file(&blocked, Durability::None).is_err());
    // Rewriting the real file replaces it whole.
    w.append_data(&i32s(0..1000)).unwrap_err(); // the last chunk is partial: refused
    w.set_vlmetalayer("v", &[0xc0]).unwrap();
    w.write_file(&target, Durability::None).unwrap();
    let new = std::fs::read(&target).unwrap();
    assert_ne!(new, old);
    assert_eq!(
        Frame::from_slice(&new).unwrap().vlmetalayer("v").unwrap(),
        [0xc0]
    );
    let mut names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, ["a.b2frame", "blocked"]);
}

#[test]
fn rebuild_to_cframe_variant_byte_exact() {
    // sc.to_cframe() of the lz4 frame: C records the block size of its last compression
    // (40000, the partial last chunk) in the header, threads 0/1, and vlmetalayers re-compressed with
    // BLOSC2_CPARAMS_DEFAULTS (BloscLZ, typesize 8).
    let cp = py_cparams(Codec::Lz4, 4, &[Filter::Shuffle]);
    let mut p = FrameParams::new(cp, 100_000);
    p.header_blocksize = Some(40_000);
    p.nthreads_compress = 0;
    p.vlmeta_cparams = CParams::default();
    let mut w = FrameWriter::new(p).unwrap();
    w.add_metalayer("m1", &[0x93, 1, 2, 3]).unwrap();
    w.add_metalayer("mymeta", &[0x81, 0xa1, b'a', 1]).unwrap();
    w.append_data(&i32s(0..25_000)).unwrap();
    w.append_data(&i32s(std::iter::repeat_n(0, 25_000)))
        .unwrap();
    w.append_data(&i32s((0..10_000).map(|i| i * 3))).unwrap();
    w.set_vlmetalayer("info", b"\x81\xa5hello\xa5world")
        .unwrap();
    w.set_vlmetalayer("bin", &[0xc4, 3, 0, 1, 2]).unwrap();
    assert_same(
        &w.to_bytes().unwrap(),
        &fixture("lz4_shuffle_meta_vlmeta.cframe.b2frame"),
        "to_cframe frame",
    );
}

#[test]
fn empty_frame_round_trips() {
    let cp = py_cparams(Codec::Zstd, 8, &[]);
    let mut w = FrameWriter::new(FrameParams::new(cp, 8000)).unwrap();
    w.add_metalayer("m", &[0xc0]).unwrap();
    let bytes = w.to_bytes().unwrap();
    let f = Frame::from_slice(&bytes).unwrap();
    assert_eq!(f.nchunks(), 0);
    assert!(f.decompress_all().unwrap().is_empty());
    if let Ok(p) = std::env::var("BLOSC2_FRAME_DUMP_EMPTY") {
        std::fs::write(p, &bytes).unwrap();
    }
}

#[test]
fn streamed_file_equals_in_memory_frame() {
    use blosc2_frame::FrameFileWriter;
    let dir = tempfile::tempdir().unwrap();
    let cp = py_cparams(Codec::Lz4, 4, &[Filter::Shuffle]);
    let mut w = FrameWriter::new(FrameParams::new(cp.clone(), 100_000)).unwrap();
    w.add_metalayer("m1", &[0x93, 1, 2, 3]).unwrap();
    w.add_metalayer("mymeta", &[0x81, 0xa1, b'a', 1]).unwrap();
    let path = dir.path().join("s.b2frame");
    let mut s = FrameFileWriter::create(
        &path,
        FrameParams::new(cp, 100_000),
        &[("m1", &[0x93, 1, 2, 3]), ("mymeta", &[0x81, 0xa1, b'a', 1])],
        Durability::Fsync,
    )
    .unwrap();
    for d in [
        i32s(0..25_000),
        i32s(std::iter::repeat_n(0, 25_000)),
        i32s((0..10_000).map(|i| i * 3)),
    ] {
        w.append_data(&d).unwrap();
        s.append_data(&d).unwrap();
    }
    finish_feeding(&mut w, &mut s);
    assert!(!path.exists(), "nothing under the real name before finish");
    s.finish().unwrap();
    let got = std::fs::read(&path).unwrap();
    assert_eq!(got, w.to_bytes().unwrap());
    assert_same(
        &got,
        &fixture("lz4_shuffle_meta_vlmeta.b2frame"),
        "streamed frame",
    );
    // An abandoned writer leaves nothing behind.
    let other = dir.path().join("abandoned.b2frame");
    abandon_writer(&other, false);
    let names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(names, ["s.b2frame"]);
}

#[test]
fn rebuild_sparse_frame_byte_exact() {
    // SChunk(chunksize=4000, CParams(typesize=4, nthreads=1, codec=LZ4), contiguous=False,
    // meta={'m': 1}); 3 x append_data(arange(1000)*(k+1)); insert_data(1, full(1000, 5));
    // append_data(zeros(1000)); vlmeta['k'] = 'v'
    let mut cp = py_cparams(Codec::Lz4, 4, &[]);
    cp.filters = CParams::default().filters;
    let mut w = FrameWriter::new(FrameParams::new(cp.clone(), 4000)).unwrap();
    w.add_metalayer("m", &[1]).unwrap();
    for k in 0..3 {
        w.append_data(&i32s((0..1000).map(|i| i * (k + 1))))
            .unwrap();
    }
    w.insert_chunk(1, blosc_chunk::compress(&i32s([5; 1000]), &cp).unwrap())
        .unwrap();
    w.append_data(&i32s([0; 1000])).unwrap();
    w.set_vlmetalayer("k", &[0xa1, b'v']).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("s.b2frame");
    w.write_sparse(&out, Durability::None).unwrap();
    let src = testdata().join("frames/sparse_lz4.b2frame");
    let mut names: Vec<String> = std::fs::read_dir(&src)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    let mut ours: Vec<String> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    ours.sort();
    assert_eq!(ours, names);
    for n in names {
        assert_same(
            &std::fs::read(out.join(&n)).unwrap(),
            &std::fs::read(src.join(&n)).unwrap(),
            &n,
        );
    }
}

/// Every file of a directory, sorted by name.
fn dir_files(dir: &std::path::Path) -> Vec<(String, Vec<u8>)> {
    let mut v: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            (
                e.file_name().into_string().unwrap(),
                std::fs::read(e.path()).unwrap(),
            )
        })
        .collect();
    v.sort();
    v
}

#[test]
fn streamed_sparse_frame_equals_write_sparse() {
    use blosc2_frame::FrameFileWriter;
    let dir = tempfile::tempdir().unwrap();
    let cp = py_cparams(Codec::Lz4, 4, &[Filter::Shuffle]);
    let meta: [(&str, &[u8]); 2] = [("m1", &[0x93, 1, 2, 3]), ("mymeta", &[0x81, 0xa1, b'a', 1])];
    let mut w = FrameWriter::new(FrameParams::new(cp.clone(), 100_000)).unwrap();
    for (n, c) in meta {
        w.add_metalayer(n, c).unwrap();
    }
    let want = dir.path().join("want.b2frame");
    let got = dir.path().join("got.b2frame");
    let mut s = FrameFileWriter::create_sparse(
        &got,
        FrameParams::new(cp.clone(), 100_000),
        &meta,
        Durability::Fsync,
    )
    .unwrap();
    // A zero run between stored chunks: special offsets take no chunk file number.
    for d in [
        i32s(0..25_000),
        i32s(std::iter::repeat_n(0, 25_000)),
        i32s((0..25_000).map(|i| i % 7)),
        i32s((0..10_000).map(|i| i * 3)),
    ] {
        w.append_data(&d).unwrap();
        s.append_data(&d).unwrap();
    }
    finish_feeding(&mut w, &mut s);
    assert!(!got.join("chunks.b2frame").exists());
    assert_eq!(s.nchunks(), 4);
    s.finish().unwrap();
    w.write_sparse(&want, Durability::None).unwrap();
    let (g, wt) = (dir_files(&got), dir_files(&want));
    assert_eq!(
        g.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>(),
        [
            "00000000.chunk",
            "00000001.chunk",
            "00000002.chunk",
            "chunks.b2frame"
        ]
    );
    assert_eq!(g, wt);
    let f = Frame::open(&got).unwrap();
    assert_eq!(f.nchunks(), 4);
    assert_eq!(f.metalayer("mymeta"), Some(&[0x81, 0xa1, b'a', 1][..]));
    assert_eq!(f.vlmetalayer("bin").unwrap(), [0xc4, 3, 0, 1, 2]);

    // Replacing that frame: an abandoned writer removes its chunk files and leaves the old
    // frame as it was; a finished one numbers its files above the old ones and deletes them.
    let before = dir_files(&got);
    let small = FrameParams::new(py_cparams(Codec::Lz4, 4, &[]), 4000);
    let mut s = FrameFileWriter::create_sparse(&got, small.clone(), &[], Durability::None).unwrap();
    s.append_data(&i32s(0..2500)).unwrap();
    drop(s);
    assert_eq!(dir_files(&got), before);
    let mut s = FrameFileWriter::create_sparse(&got, small, &[], Durability::None).unwrap();
    s.append_data(&i32s(0..2500)).unwrap();
    s.finish().unwrap();
    let names: Vec<String> = dir_files(&got).into_iter().map(|(n, _)| n).collect();
    assert_eq!(
        names,
        [
            "00000003.chunk",
            "00000004.chunk",
            "00000005.chunk",
            "chunks.b2frame"
        ]
    );
    assert_eq!(
        Frame::open(&got).unwrap().decompress_all().unwrap(),
        i32s(0..2500)
    );

    // An abandoned writer that created its directory removes it.
    let fresh = dir.path().join("fresh.b2frame");
    abandon_writer(&fresh, true);
    assert!(!fresh.exists());
}

/// The common end of the streamed-writer tests: a write after a partial chunk is refused, and
/// both writers get the fixture's two vlmetalayers.
fn finish_feeding(w: &mut FrameWriter, s: &mut blosc2_frame::FrameFileWriter) {
    assert!(s.append_data(&i32s(0..10)).is_err()); // after a partial chunk
    for (name, v) in [
        ("info", &b"\x81\xa5hello\xa5world"[..]),
        ("bin", &[0xc4, 3, 0, 1, 2][..]),
    ] {
        w.set_vlmetalayer(name, v).unwrap();
        s.set_vlmetalayer(name, v).unwrap();
    }
}

/// Starts a streamed frame at `path` (sparse or contiguous), appends a partial chunk and drops
/// the writer without finishing it.
fn abandon_writer(path: &std::path::Path, sparse: bool) {
    use blosc2_frame::FrameFileWriter;
    let params = FrameParams::new(py_cparams(Codec::Lz4, 4, &[]), 4000);
    let mut s = if sparse {
        FrameFileWriter::create_sparse(path, params, &[], Durability::None)
    } else {
        FrameFileWriter::create(path, params, &[], Durability::None)
    }
    .unwrap();
    s.append_data(&i32s(0..1000)).unwrap();
}

#[test]
fn finish_new_never_replaces_an_existing_frame() {
    use blosc2_frame::FrameFileWriter;
    let dir = tempfile::tempdir().unwrap();
    let params = || FrameParams::new(py_cparams(Codec::Lz4, 4, &[]), 4000);
    let names = |d: &std::path::Path| {
        let mut v: Vec<String> = std::fs::read_dir(d)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        v.sort();
        v
    };
    // Contiguous: a new name is written; an existing file (created after the writer started)
    // is left as it is and no temporary file stays.
    let path = dir.path().join("f.b2frame");
    let mut s = FrameFileWriter::create(&path, params(), &[], Durability::None).unwrap();
    s.append_data(&i32s(0..1000)).unwrap();
    assert!(s.finish_new().unwrap());
    let first = std::fs::read(&path).unwrap();
    let mut s = FrameFileWriter::create(&path, params(), &[], Durability::None).unwrap();
    s.append_data(&i32s(0..2000)).unwrap();
    assert!(!s.finish_new().unwrap());
    assert_eq!(std::fs::read(&path).unwrap(), first);
    assert_eq!(names(dir.path()), ["f.b2frame"]);

    // Sparse: an index that appears meanwhile is kept, with its chunks; ours are removed.
    let sparse = dir.path().join("sparse");
    let mut s = FrameFileWriter::create_sparse(&sparse, params(), &[], Durability::None).unwrap();
    s.append_data(&i32s(0..3000)).unwrap();
    let mut w = FrameWriter::new(params()).unwrap();
    w.append_data(&i32s(0..500)).unwrap();
    w.write_sparse(&sparse, Durability::None).unwrap();
    let theirs = Frame::open(&sparse).unwrap().decompress_all().unwrap();
    assert!(!s.finish_new().unwrap());
    assert_eq!(
        Frame::open(&sparse).unwrap().decompress_all().unwrap(),
        theirs
    );
    assert_eq!(names(&sparse).len(), 2, "{:?}", names(&sparse));
}
