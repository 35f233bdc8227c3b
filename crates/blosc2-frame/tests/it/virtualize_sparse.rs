//! Sparse b2nd frames as virtual Zarr v3 references: python-blosc2's sparse b2nd array
//! (`frames/b2nd_sparse_i4_37x45.b2nd/`, a directory of `chunks.b2frame` and `%08X.chunk`
//! files) virtualized into kerchunk JSON, each chunk a whole chunk file. Chunk by chunk the
//! referenced bytes decode (`B2ndCodec`) to what this crate reads from the sparse frame, the
//! whole array read back by zarrs equals the frame's decoding and python-blosc2's hash of it;
//! missing, short and rewritten chunk files, damaged `chunks.b2frame`; on the S3 test server
//! one listing and no chunk byte.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common::{frame_entries, key_of, sha256_hex, testdata};
use crate::virtualize::{Counting, open_refs, read_whole, same_as_frame, to_kerchunk};

use std::path::{Path, PathBuf};

use blosc2_frame::{
    B2ndArray, B2ndCodec, B2ndCodecConfig, ChunkLocation, Error, Frame, SPARSE_FRAME_FILE,
    VirtualizeOptions, virtualize,
};
use s3_testserver::TestServer;
use scifmt_io::object_store::ObjectStoreExt;
use scifmt_io::object_store::path::Path as ObjectPath;
use scifmt_io::{Checksum, Location, reference_path};
use serde_json::Value;

type TestResult = Result<(), Box<dyn std::error::Error>>;

/// The sparse b2nd fixture (MANIFEST.md, section 3c of the generator).
const SPARSE_B2ND: &str = "frames/b2nd_sparse_i4_37x45.b2nd";

/// The fixture directory.
fn fixture() -> PathBuf {
    testdata().join(SPARSE_B2ND)
}

/// A copy of the fixture directory in `dir` (tests that damage it).
fn copy_fixture(dir: &Path) -> Result<PathBuf, Box<dyn std::error::Error>> {
    let to = dir.join("sparse.b2nd");
    std::fs::create_dir(&to)?;
    for entry in std::fs::read_dir(fixture())? {
        let entry = entry?;
        std::fs::copy(entry.path(), to.join(entry.file_name()))?;
    }
    Ok(to)
}

/// The index entries of the stored chunks: (chunk, file number).
fn stored(frame: &Frame<'_>) -> Vec<(usize, u64)> {
    frame
        .index()
        .iter()
        .enumerate()
        .filter_map(|(i, l)| match l {
            ChunkLocation::Stored(n) => Some((i, *n)),
            _ => None,
        })
        .collect()
}

#[test]
fn the_reference_sparse_array_reads_back_chunk_by_chunk() -> TestResult {
    let _b2nd = blosc2_frame::register();
    let dir = tempfile::tempdir()?;
    let path = fixture();
    let out = dir.path().join("refs.json");
    let summary = to_kerchunk(&Location::Local(path.clone()), &out)?;
    let frame = Frame::open(&path)?;
    assert!(frame.is_sparse());
    let array = B2ndArray::open(&path)?;
    let meta = array.meta().clone();
    // What the fixture was made to hold: blocks smaller than chunks, partially filled edge
    // chunks, a zero run.
    assert_ne!(meta.blockshape, meta.chunkshape);
    assert!(
        meta.shape
            .iter()
            .zip(&meta.chunkshape)
            .any(|(s, c)| s % c != 0)
    );
    let zeros = frame
        .index()
        .iter()
        .filter(|l| matches!(l, ChunkLocation::Zeros))
        .count() as u64;
    assert!(zeros > 0, "the fixture has a zero run");
    let stored = stored(&frame);
    let mut numbers: Vec<u64> = stored.iter().map(|(_, n)| *n).collect();
    numbers.sort_unstable();
    numbers.dedup();
    assert_eq!(
        (
            summary.arrays,
            summary.files,
            summary.references,
            summary.inline,
            summary.fill_chunks
        ),
        (
            1,
            1 + numbers.len() as u64,
            stored.len() as u64,
            0,
            meta.nchunks() - stored.len() as u64
        )
    );
    assert_eq!(summary.fill_chunks, zeros);
    // Only chunks.b2frame was read (its header, metalayers, index and trailer; the reader
    // reads the header twice), never a chunk file (their metadata only).
    let index_file = std::fs::metadata(path.join(SPARSE_FRAME_FILE))?.len();
    assert!(
        summary.bytes_read > 0 && summary.bytes_read <= 2 * index_file,
        "{} of {index_file}",
        summary.bytes_read
    );
    let doc: Value = serde_json::from_slice(&std::fs::read(&out)?)?;
    let zarr: Value = serde_json::from_str(doc["refs"]["zarr.json"].as_str().ok_or("zarr.json")?)?;
    let config = B2ndCodecConfig::from_entry(&zarr["codecs"][0])?;
    assert_eq!(config.blockshape, meta.blockshape);
    let codec = B2ndCodec::new(config)?;
    let dir_url = format!("file://{}", std::fs::canonicalize(&path)?.display());
    let grid = meta.chunks_per_dim();
    let isz = array.itemsize();
    let mut checksums = 0;
    for (i, loc) in frame.index().iter().enumerate() {
        let (key, idx) = key_of(i, &grid);
        let r = &doc["refs"][&key];
        let ChunkLocation::Stored(num) = *loc else {
            assert!(r.is_null(), "{key}: {r}");
            continue;
        };
        // The whole chunk file: its URL, offset 0, its length, its own checksum.
        let url = r[0].as_str().ok_or("url")?;
        assert_eq!(url, format!("{dir_url}/{num:08X}.chunk"), "{key}");
        let file = reference_path(url).ok_or("a file:// URL")?;
        let file_meta = std::fs::metadata(&file)?;
        assert_eq!(r[1].as_u64(), Some(0), "{key}");
        assert_eq!(r[2].as_u64(), Some(file_meta.len()), "{key}");
        assert_eq!(
            doc["scifmt"]["checksums"][url],
            Checksum::of_file(&file_meta, &file)?.to_json(),
            "{key}"
        );
        checksums += 1;
        // The referenced bytes are the chunk the frame reads, and decode to its region.
        let bytes = std::fs::read(&file)?;
        assert_eq!(&bytes[..], &frame.chunk(i)?[..], "{key}");
        let decoded = codec.decode(&bytes, &meta.chunkshape, isz)?;
        let lo: Vec<u64> = idx
            .iter()
            .zip(&meta.chunkshape)
            .map(|(i, c)| i * c)
            .collect();
        let hi: Vec<u64> = lo
            .iter()
            .zip(&meta.chunkshape)
            .zip(&meta.shape)
            .map(|((l, c), s)| (l + c).min(*s))
            .collect();
        let region = array.read_region(&lo, &hi)?;
        let rshape: Vec<u64> = lo.iter().zip(&hi).map(|(a, b)| b - a).collect();
        let count: u64 = rshape.iter().product();
        for k in 0..count {
            let mut rest = k;
            let mut at = 0u64;
            let mut inner = vec![0u64; rshape.len()];
            for d in (0..rshape.len()).rev() {
                inner[d] = rest % rshape[d];
                rest /= rshape[d];
            }
            for (d, x) in inner.iter().enumerate() {
                at = at * meta.chunkshape[d] + x;
            }
            let (g, w) = (usize::try_from(at)? * isz, usize::try_from(k)? * isz);
            assert_eq!(
                decoded[g..g + isz],
                region[w..w + isz],
                "{key} item {inner:?}"
            );
        }
    }
    assert_eq!(
        doc["scifmt"]["checksums"].as_object().map(|m| m.len()),
        Some(checksums)
    );
    // Read back whole by zarrs: this crate's decoding of the sparse frame, and the array
    // python-blosc2 returned (its C-order sha256 in the manifest; `<i4` on a little-endian
    // machine is the native order zarrs returns).
    let store = open_refs(&out, &[])?;
    same_as_frame(&store, "/", &path)?;
    let entry = frame_entries()
        .into_iter()
        .find(|e| e["path"] == SPARSE_B2ND)
        .ok_or("manifest entry")?;
    if cfg!(target_endian = "little") {
        assert_eq!(
            sha256_hex(&read_whole(&store, "/")?),
            entry["sha256_array_c_order"].as_str().ok_or("sha")?
        );
    }
    // The frame's chunks.b2frame names the same frame: the same references.
    let out2 = dir.path().join("refs2.json");
    to_kerchunk(&Location::Local(path.join(SPARSE_FRAME_FILE)), &out2)?;
    let doc2: Value = serde_json::from_slice(&std::fs::read(&out2)?)?;
    assert_eq!(doc2["refs"], doc["refs"]);
    Ok(())
}

#[test]
fn missing_and_short_chunk_files_are_errors_naming_them() -> TestResult {
    let dir = tempfile::tempdir()?;
    let path = copy_fixture(dir.path())?;
    let frame = Frame::open(&path)?;
    let (chunk, num) = stored(&frame)[2];
    let name = format!("{num:08X}.chunk");
    let file = path.join(&name);
    let o = VirtualizeOptions::default();
    // Missing: NotFound naming the file and the chunk; the sink got nothing.
    std::fs::remove_file(&file)?;
    let mut sink = Counting::default();
    let e = virtualize(path.as_path(), &mut sink, &o).unwrap_err();
    let text = e.to_string();
    assert!(
        matches!(&e, Error::Io(io) if io.kind() == std::io::ErrorKind::NotFound),
        "{e:?}"
    );
    assert!(
        text.contains(&name) && text.contains(&format!("chunk {chunk} ")),
        "{text}"
    );
    assert_eq!((sink.arrays, sink.references), (0, 0));
    // Shorter than a chunk header.
    std::fs::write(&file, [0u8; 15])?;
    let invalid = |e: Error| {
        assert!(
            matches!(
                e,
                Error::Invalid {
                    what: "chunk file",
                    ..
                }
            ) && e.to_string().contains(&name),
            "{e}"
        );
    };
    invalid(virtualize(path.as_path(), &mut sink, &o).unwrap_err());
    // A directory in its place.
    std::fs::remove_file(&file)?;
    std::fs::create_dir(&file)?;
    invalid(virtualize(path.as_path(), &mut sink, &o).unwrap_err());
    assert_eq!((sink.arrays, sink.references), (0, 0));
    Ok(())
}

#[test]
fn a_chunk_file_rewritten_after_virtualizing_fails_the_read() -> TestResult {
    let _b2nd = blosc2_frame::register();
    let dir = tempfile::tempdir()?;
    let path = copy_fixture(dir.path())?;
    let out = dir.path().join("refs.json");
    to_kerchunk(&Location::Local(path.clone()), &out)?;
    let store = open_refs(&out, &[])?;
    same_as_frame(&store, "/", &path)?;
    // The same bytes written again, with another modification time: refused all the same.
    let frame = Frame::open(&path)?;
    let (_, num) = stored(&frame)[1];
    let name = format!("{num:08X}.chunk");
    let file = path.join(&name);
    let before = std::fs::metadata(&file)?.modified()?;
    let bytes = std::fs::read(&file)?;
    std::fs::write(&file, &bytes)?;
    std::fs::File::options()
        .write(true)
        .open(&file)?
        .set_modified(before + std::time::Duration::from_secs(5))?;
    let e = read_whole(&store, "/").unwrap_err().to_string();
    assert!(e.contains("changed") && e.contains(&name), "{e}");
    Ok(())
}

#[test]
fn damaged_index_files_are_typed_errors() -> TestResult {
    let dir = tempfile::tempdir()?;
    let path = copy_fixture(dir.path())?;
    let index = path.join(SPARSE_FRAME_FILE);
    let good = std::fs::read(&index)?;
    let o = VirtualizeOptions::default();
    let mut errors = 0;
    // A byte flipped at every position, every truncation: an error or a virtualization
    // (whose sink saw what the summary says), never a panic.
    for k in 0..good.len() {
        let mut bad = good.clone();
        bad[k] ^= 0x5a;
        std::fs::write(&index, &bad)?;
        let mut sink = Counting::default();
        match virtualize(path.as_path(), &mut sink, &o) {
            Err(_) => errors += 1,
            Ok(s) => assert_eq!((s.arrays, s.references), (sink.arrays, sink.references)),
        }
        std::fs::write(&index, &good[..k])?;
        assert!(virtualize(path.as_path(), &mut Counting::default(), &o).is_err());
    }
    assert!(errors > 0);
    std::fs::write(&index, &good)?;
    // An index of more chunks than the limits allow.
    let e = virtualize(
        path.as_path(),
        &mut Counting::default(),
        &VirtualizeOptions::default()
            .with_limits(blosc2_frame::Limits::default().with_max_nchunks(3)),
    )
    .unwrap_err();
    assert!(matches!(e, Error::LimitExceeded { .. }), "{e}");
    // A sparse frame's index file under another name: its chunk files cannot be found.
    let renamed = dir.path().join("index.b2frame");
    std::fs::copy(&index, &renamed)?;
    let e = virtualize(renamed.as_path(), &mut Counting::default(), &o).unwrap_err();
    assert!(matches!(e, Error::NotVirtualizable { .. }), "{e}");
    Ok(())
}

#[test]
fn listed_etags_are_the_chunk_files_checksums() -> TestResult {
    // An in-memory store, whose listings carry ETags (as S3's do).
    let _b2nd = blosc2_frame::register();
    let dir = tempfile::tempdir()?;
    let store: std::sync::Arc<dyn scifmt_io::object_store::ObjectStore> =
        std::sync::Arc::new(scifmt_io::object_store::memory::InMemory::new());
    for entry in std::fs::read_dir(fixture())? {
        let entry = entry?;
        let key = format!("x/a.b2nd/{}", entry.file_name().to_string_lossy());
        scifmt_io::block_on(store.put(
            &ObjectPath::from(key.as_str()),
            std::fs::read(entry.path())?.into(),
        ))??;
    }
    let src = Location::store(
        std::sync::Arc::clone(&store),
        ObjectPath::from("x/a.b2nd"),
        "memory:///x/a.b2nd",
    );
    let out = dir.path().join("refs.json");
    let summary = to_kerchunk(&src, &out)?;
    let frame = Frame::open(fixture())?;
    assert_eq!(summary.references, stored(&frame).len() as u64);
    let doc: Value = serde_json::from_slice(&std::fs::read(&out)?)?;
    for &(_, num) in &stored(&frame) {
        let key = format!("x/a.b2nd/{num:08X}.chunk");
        let head = scifmt_io::block_on(store.head(&ObjectPath::from(key.as_str())))??;
        let url = format!("memory:///{key}");
        let etag = doc["scifmt"]["checksums"][&url]["etag"].as_str();
        assert!(etag.is_some() && etag == head.e_tag.as_deref(), "{url}");
    }
    Ok(())
}

#[test]
fn on_s3_a_sparse_frame_is_one_listing_and_no_chunk_bytes() -> TestResult {
    let _b2nd = blosc2_frame::register();
    let dir = tempfile::tempdir()?;
    let server = TestServer::start()?;
    let prefix = "src/sparse.b2nd";
    let uploaded = server.upload_dir(&fixture(), prefix)?;
    let frame = Frame::open(fixture())?;
    let stored = stored(&frame);
    assert!(uploaded > stored.len());
    server.reset_stats();
    let src = Location::store(
        server.store(),
        ObjectPath::from(prefix),
        &server.url(prefix),
    );
    let out = dir.path().join("refs.json");
    let summary = to_kerchunk(&src, &out)?;
    assert_eq!(summary.references, stored.len() as u64);
    let log = server.log();
    // No chunk file was fetched: the test server's listings carry no ETags, so each chunk
    // file had a HEAD (no body), nothing else; chunks.b2frame's bytes are what the summary
    // says.
    let index_key = format!("{prefix}/{SPARSE_FRAME_FILE}");
    let heads = log.iter().filter(|r| r.key.ends_with(".chunk")).count();
    for r in log.iter().filter(|r| r.key.ends_with(".chunk")) {
        assert!(r.method == "HEAD" && r.bytes_sent == 0, "{r:?}");
    }
    assert!(heads == 0 || heads == stored.len(), "{heads}");
    let sent: u64 = log
        .iter()
        .filter(|r| r.is_object_get() && r.key == index_key)
        .map(|r| r.bytes_sent)
        .sum();
    assert_eq!(sent, summary.bytes_read);
    // One listing of the directory.
    let lists = log
        .iter()
        .filter(|r| r.method == "GET" && !r.is_object_get())
        .count();
    assert_eq!(lists, 1, "{log:#?}");
    // Each reference is a whole chunk object, with its ETag.
    let doc: Value = serde_json::from_slice(&std::fs::read(&out)?)?;
    let grid = B2ndArray::open(fixture())?.meta().chunks_per_dim();
    for &(i, num) in &stored {
        let (key, _) = key_of(i, &grid);
        let object = format!("{prefix}/{num:08X}.chunk");
        let head = scifmt_io::block_on(server.store().head(&ObjectPath::from(object.as_str())))??;
        let r = &doc["refs"][&key];
        assert_eq!(r[0], server.url(&object), "{key}");
        assert_eq!(r[1], 0, "{key}");
        assert_eq!(r[2].as_u64(), Some(head.size), "{key}");
        let etag = doc["scifmt"]["checksums"][server.url(&object)]["etag"].as_str();
        assert!(
            etag.is_some() && etag == head.e_tag.as_deref(),
            "{key}: {etag:?} {:?} {}",
            head.e_tag,
            doc["scifmt"]
        );
    }
    // Read back from the server: equal to the local decoding.
    let store = open_refs(&out, &server.env())?;
    same_as_frame(&store, "/", &fixture())?;
    // A chunk object gone: NotFound naming it and the chunk.
    let (chunk, num) = stored[0];
    let object = format!("{prefix}/{num:08X}.chunk");
    scifmt_io::block_on(server.store().delete(&ObjectPath::from(object.as_str())))??;
    let mut sink = Counting::default();
    let e = virtualize(&src, &mut sink, &VirtualizeOptions::default()).unwrap_err();
    assert!(
        matches!(
            &e,
            Error::Remote {
                source: scifmt_io::object_store::Error::NotFound { .. },
                ..
            }
        ),
        "{e:?}"
    );
    let text = e.to_string();
    assert!(
        text.contains(&server.url(&object)) && text.contains(&format!("chunk {chunk} ")),
        "{text}"
    );
    assert_eq!((sink.arrays, sink.references), (0, 0));
    Ok(())
}
