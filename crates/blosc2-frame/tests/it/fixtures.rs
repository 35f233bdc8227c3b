#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::cast_possible_truncation,
    clippy::cast_possible_wrap,
    clippy::cast_sign_loss
)]
//! Every reference-made frame (python-blosc2 4.14.1 / C-Blosc2 3.3.5, plus two C-Blosc2 compat
//! frames) read through every entry point and checked against `testdata/blosc/manifest.json`.

use crate::common;

use blosc2_frame::{B2ndArray, ChunkLocation, Frame, FrameType, Limits};
use common::{frame_entries, sha256_hex, testdata};
use serde_json::Value;

fn hexmap(v: &Value) -> Vec<(String, Vec<u8>)> {
    let mut out: Vec<(String, Vec<u8>)> = v
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, h)| (k.clone(), hex::decode(h.as_str().unwrap()).unwrap()))
        .collect();
    out.sort();
    out
}

/// Checks one opened frame against its manifest entry.
fn check(frame: &Frame<'_>, e: &Value) {
    let path = e["path"].as_str().unwrap();
    let h = frame.header();
    assert_eq!(
        u64::from(h.header_len),
        e["header_len"].as_u64().unwrap(),
        "{path}"
    );
    assert_eq!(
        frame.trailer_len(),
        e["trailer_len"].as_u64().unwrap(),
        "{path}"
    );
    assert_eq!(
        frame.nchunks() as u64,
        e["nchunks"].as_u64().unwrap(),
        "{path}"
    );
    assert_eq!(
        u64::from(h.chunksize),
        e["chunksize"].as_u64().unwrap(),
        "{path}"
    );
    assert_eq!(
        u64::from(h.typesize),
        e["typesize"].as_u64().unwrap(),
        "{path}"
    );
    assert_eq!(h.nbytes, e["decompressed_len"].as_u64().unwrap(), "{path}");
    let sizes: Vec<u64> = e["chunk_nbytes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap())
        .collect();
    for (i, &n) in sizes.iter().enumerate() {
        assert_eq!(frame.chunk_nbytes(i).unwrap() as u64, n, "{path} chunk {i}");
        let d = frame.decompress_chunk(i).unwrap();
        assert_eq!(d.len() as u64, n, "{path} chunk {i}");
    }
    let all = frame.decompress_all().unwrap();
    assert_eq!(
        all.len() as u64,
        e["decompressed_len"].as_u64().unwrap(),
        "{path}"
    );
    if let Some(sha) = e["sha256_decompressed"].as_str() {
        assert_eq!(sha256_hex(&all), sha, "{path}");
    }
    // Per-chunk content equals the matching slice of the whole.
    let mut pos = 0;
    for i in 0..frame.nchunks() {
        let d = frame.decompress_chunk(i).unwrap();
        if !path.contains("uninit") {
            assert_eq!(d, all[pos..pos + d.len()], "{path} chunk {i}");
        }
        pos += d.len();
    }
    // Metalayers: raw bytes.
    let metas: Vec<(String, Vec<u8>)> = {
        let mut v: Vec<_> = frame
            .metalayers()
            .iter()
            .map(|l| (l.name.clone(), l.content.clone()))
            .collect();
        v.sort();
        v
    };
    assert_eq!(metas, hexmap(&e["metalayers_raw_hex"]), "{path}");
    // Vlmetalayers: stored (compressed) chunk and decompressed content.
    let vl_raw: Vec<(String, Vec<u8>)> = {
        let mut v: Vec<_> = frame
            .vlmetalayers()
            .iter()
            .map(|l| (l.name.clone(), l.content.clone()))
            .collect();
        v.sort();
        v
    };
    assert_eq!(vl_raw, hexmap(&e["vlmetalayers_chunk_hex"]), "{path}");
    for (name, want) in hexmap(&e["vlmetalayers_decompressed_hex"]) {
        assert_eq!(
            frame.vlmetalayer(&name).unwrap(),
            want,
            "{path} vlmeta {name}"
        );
    }
    assert_eq!(
        h.has_vlmetalayers,
        !frame.vlmetalayers().is_empty(),
        "{path}"
    );
}

#[test]
fn every_fixture_frame_from_file_slice_and_offset() {
    let entries = frame_entries();
    assert_eq!(entries.len(), 23);
    for e in &entries {
        let path = e["path"].as_str().unwrap();
        let full = testdata().join(path);
        // From a file (or sparse directory), positional reads.
        let f = Frame::open(&full).unwrap();
        check(&f, e);
        if path.contains("sparse") {
            assert!(f.is_sparse());
            assert_eq!(f.header().frame_type, FrameType::Sparse);
            continue;
        }
        assert_eq!(f.header().frame_type, FrameType::Contiguous);
        // From a byte slice: chunks are borrowed.
        let bytes = std::fs::read(&full).unwrap();
        let f = Frame::from_slice(&bytes).unwrap();
        check(&f, e);
        // Embedded at an offset inside a larger buffer with trailing garbage.
        let mut big = vec![0xA5u8; 1000];
        big.extend_from_slice(&bytes);
        big.extend_from_slice(&[0x5A; 333]);
        let f = Frame::from_reader(big.as_slice(), 1000, &Limits::default()).unwrap();
        check(&f, e);
        // ... and the same through a file.
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("embedded.bin");
        std::fs::write(&p, &big).unwrap();
        let f = Frame::open_at(&p, 1000, &Limits::default()).unwrap();
        check(&f, e);
    }
}

#[test]
fn in_memory_frames_must_match_their_length() {
    let bytes = std::fs::read(testdata().join("frames/fill_special_zero.b2frame")).unwrap();
    let mut longer = bytes.clone();
    longer.push(0);
    assert!(Frame::from_slice(&longer).is_err());
    assert!(Frame::from_slice(&bytes[..bytes.len() - 1]).is_err());
}

#[test]
fn index_special_offsets_and_layouts() {
    let f = Frame::open(testdata().join("frames/lz4_shuffle_meta_vlmeta.b2frame")).unwrap();
    assert!(matches!(f.index()[0], ChunkLocation::Stored(0)));
    assert_eq!(f.index()[1], ChunkLocation::Zeros);
    assert!(matches!(f.index()[2], ChunkLocation::Stored(_)));
    let f = Frame::open(testdata().join("frames/sparse_lz4.b2frame")).unwrap();
    let idx: Vec<ChunkLocation> = f.index().to_vec();
    assert_eq!(
        idx,
        [
            ChunkLocation::Stored(0),
            ChunkLocation::Stored(3),
            ChunkLocation::Stored(1),
            ChunkLocation::Stored(2),
            ChunkLocation::Zeros
        ]
    );
    for (name, loc) in [
        ("fill_special_zero", ChunkLocation::Zeros),
        ("fill_special_nan", ChunkLocation::Nan),
        ("fill_special_uninit", ChunkLocation::Uninit),
    ] {
        let f = Frame::open(testdata().join(format!("frames/{name}.b2frame"))).unwrap();
        assert!(f.index().iter().all(|&l| l == loc), "{name}");
    }
}

#[test]
fn header_fields_decoded() {
    let f = Frame::open(testdata().join("frames/zstd_delta_shuffle_many_chunks.b2frame")).unwrap();
    let h = f.header();
    assert_eq!((h.codec_code, h.clevel, h.codec_id()), (5, 5, 5));
    assert_eq!(h.filters, [3, 1, 0, 0, 0, 0]);
    assert_eq!(
        (
            h.format_version,
            h.offsets_width,
            h.variable_chunks,
            h.vl_blocks
        ),
        (2, 1, false, false)
    );
    assert_eq!(h.splitmode, 3);
    assert!(!h.use_dict);
    let f = Frame::open(testdata().join("legacy/varchunks-lz4-3.0.0.b2frame")).unwrap();
    let h = f.header();
    assert_eq!(
        (
            h.format_version,
            h.variable_chunks,
            h.vl_blocks,
            h.chunksize
        ),
        (3, true, false, 0)
    );
    let f = Frame::open(testdata().join("legacy/vlblocks-lz4-fixed-3.0.0.b2frame")).unwrap();
    assert!(f.header().vl_blocks);
}

#[test]
fn metalayer_and_vlmetalayer_values_decode_as_msgpack() {
    use rmpv::Value as V;
    let f = Frame::open(testdata().join("frames/lz4_shuffle_meta_vlmeta.b2frame")).unwrap();
    assert_eq!(
        f.metalayer_value("m1").unwrap(),
        V::Array(vec![V::from(1), V::from(2), V::from(3)])
    );
    assert_eq!(
        f.metalayer_value("mymeta").unwrap(),
        V::Map(vec![(V::from("a"), V::from(1))])
    );
    assert_eq!(
        f.vlmetalayer_value("info").unwrap(),
        V::Map(vec![(V::from("hello"), V::from("world"))])
    );
    assert_eq!(
        f.vlmetalayer_value("bin").unwrap(),
        V::Binary(vec![0, 1, 2])
    );
    assert!(f.metalayer("nope").is_none());
    assert!(f.vlmetalayer("nope").is_err());
}

#[test]
fn get_slice_matches_decompress_all() {
    for name in [
        "frames/zstd_delta_shuffle_many_chunks.b2frame",
        "frames/lz4_shuffle_meta_vlmeta.b2frame",
        "frames/fill_special_value.b2frame",
        "frames/fill_special_nan.b2frame",
        "frames/sparse_lz4.b2frame",
        "legacy/varchunks-lz4-3.0.0.b2frame",
        "legacy/vlblocks-lz4-fixed-3.0.0.b2frame",
    ] {
        let f = Frame::open(testdata().join(name)).unwrap();
        let all = f.decompress_all().unwrap();
        let ts = f.header().typesize as u64;
        let n = all.len() as u64 / ts;
        let mut cases = vec![(0, n), (0, 0), (n, n), (0, 1), (n - 1, n)];
        let mut x = 12345u64;
        for _ in 0..40 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let a = (x >> 33) % (n + 1);
            let b = (x >> 13) % (n + 1);
            cases.push((a.min(b), a.max(b)));
        }
        for (a, b) in cases {
            let got = f.get_slice(a, b).unwrap();
            assert_eq!(
                got,
                all[(a * ts) as usize..(b * ts) as usize],
                "{name} {a}..{b}"
            );
        }
        assert!(f.get_slice(0, n + 1).is_err());
        assert!(f.get_slice(2, 1).is_err());
    }
}

/// The logical arrays of the first three b2nd fixtures and the sparse one, recomputed from the
/// generator calls recorded in the manifest. The per-dtype arrays (entries with `values`) are
/// checked against their numpy expressions in `typed.rs`; here their C-order sha256 vouches
/// for them.
fn expected_array(path: &str) -> Option<Vec<u8>> {
    match path {
        "frames/b2nd_f4_20x30.b2nd" => {
            Some((0..600).flat_map(|i| (i as f32).to_le_bytes()).collect())
        }
        "frames/b2nd_u2_7x9x11.b2nd" => {
            Some((0..693u16).flat_map(|i| (i % 1000).to_le_bytes()).collect())
        }
        "frames/b2nd_zeros_f8_50x40.b2nd" => Some(
            (0..2000)
                .flat_map(|k| {
                    let (r, c) = (k / 40, k % 40);
                    (if r < 5 && c < 5 { 1.0f64 } else { 0.0 }).to_le_bytes()
                })
                .collect(),
        ),
        // `written_values` everywhere but in chunk (1, 1) (rows 16..32, columns 20..40),
        // never written: zeros.
        "frames/b2nd_sparse_i4_37x45.b2nd" => Some(
            (0..37 * 45)
                .flat_map(|k: i32| {
                    let (r, c) = (k / 45, k % 45);
                    let written = !((16..32).contains(&r) && (20..40).contains(&c));
                    (if written { k * 3 - 2000 } else { 0 }).to_le_bytes()
                })
                .collect(),
        ),
        _ => {
            assert!(
                has_values(path),
                "{path}: no recipe and no manifest `values`"
            );
            None
        }
    }
}

/// Whether the manifest entry of `path` records the numpy expression that made it.
fn has_values(path: &str) -> bool {
    frame_entries()
        .iter()
        .any(|e| e["path"] == path && e["values"].is_string())
}

#[test]
fn b2nd_metadata_and_full_array() {
    for e in frame_entries().iter().filter(|e| e["kind"] == "b2nd") {
        let path = e["path"].as_str().unwrap();
        let a = B2ndArray::open(testdata().join(path)).unwrap();
        let dims = |k: &str| -> Vec<u64> {
            e[k].as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_u64().unwrap())
                .collect()
        };
        assert_eq!(a.shape(), dims("shape"), "{path}");
        assert_eq!(a.meta().chunkshape, dims("chunks"), "{path}");
        assert_eq!(a.meta().blockshape, dims("blocks"), "{path}");
        assert_eq!(a.dtype(), e["dtype"].as_str().unwrap(), "{path}");
        assert_eq!(
            a.itemsize() as u64,
            e["typesize"].as_u64().unwrap(),
            "{path}"
        );
        let all = a.read_all().unwrap();
        assert_eq!(
            sha256_hex(&all),
            e["sha256_array_c_order"].as_str().unwrap(),
            "{path}"
        );
        if let Some(want) = expected_array(path) {
            assert_eq!(all, want, "{path}");
        }
    }
}

/// Element `idx` (C order over `shape`) of a region read must equal the array's element.
#[test]
fn b2nd_regions_match_the_array() {
    for e in frame_entries().iter().filter(|e| e["kind"] == "b2nd") {
        let path = e["path"].as_str().unwrap();
        let a = B2ndArray::open(testdata().join(path)).unwrap();
        let full = expected_array(path).unwrap_or_else(|| {
            let all = a.read_all().unwrap();
            assert_eq!(
                sha256_hex(&all),
                e["sha256_array_c_order"].as_str().unwrap(),
                "{path}"
            );
            all
        });
        let shape = a.shape().to_vec();
        let n = shape.len();
        let isz = a.itemsize();
        let mut x = 99u64;
        let mut regions: Vec<(Vec<u64>, Vec<u64>)> = vec![
            (vec![0; n], shape.clone()),
            (vec![0; n], vec![1; n]),
            (shape.iter().map(|s| s - 1).collect(), shape.clone()),
            (vec![0; n], vec![0; n]),
        ];
        for _ in 0..60 {
            let mut lo = Vec::new();
            let mut hi = Vec::new();
            for &s in &shape {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let p = (x >> 33) % (s + 1);
                let q = (x >> 7) % (s + 1);
                lo.push(p.min(q));
                hi.push(p.max(q));
            }
            regions.push((lo, hi));
        }
        for (lo, hi) in regions {
            let got = a.read_region(&lo, &hi).unwrap();
            let rshape: Vec<u64> = lo.iter().zip(&hi).map(|(a, b)| b - a).collect();
            let count: u64 = rshape.iter().product();
            assert_eq!(
                got.len() as u64,
                count * isz as u64,
                "{path} {lo:?}..{hi:?}"
            );
            for k in 0..count {
                // Unravel k over rshape, then index the full array.
                let mut rem = k;
                let mut coord = vec![0u64; n];
                for d in (0..n).rev() {
                    coord[d] = lo[d] + rem % rshape[d];
                    rem /= rshape[d];
                }
                let mut lin = 0u64;
                for d in 0..n {
                    lin = lin * shape[d] + coord[d];
                }
                let (g, w) = ((k as usize) * isz, (lin as usize) * isz);
                assert_eq!(
                    got[g..g + isz],
                    full[w..w + isz],
                    "{path} {lo:?}..{hi:?} item {coord:?}"
                );
            }
        }
        assert!(
            a.read_region(
                &vec![0; n],
                &shape.iter().map(|s| s + 1).collect::<Vec<_>>()
            )
            .is_err()
        );
        assert!(a.read_region(&[0], &[1]).is_err() || n == 1);
    }
}

#[test]
fn plain_frames_are_not_b2nd() {
    let f = Frame::open(testdata().join("frames/fill_special_zero.b2frame")).unwrap();
    assert!(matches!(
        B2ndArray::new(f),
        Err(blosc2_frame::Error::NotB2nd)
    ));
}

#[test]
fn sparse_frame_opens_from_its_frame_file_too() {
    let dir = testdata().join("frames/sparse_lz4.b2frame");
    let a = Frame::open(&dir).unwrap();
    let b = Frame::open(dir.join("chunks.b2frame")).unwrap();
    assert!(b.is_sparse());
    assert_eq!(a.decompress_all().unwrap(), b.decompress_all().unwrap());
    // As a contiguous frame it is refused (type mismatch), as C does.
    let bytes = std::fs::read(dir.join("chunks.b2frame")).unwrap();
    assert!(matches!(
        Frame::from_slice(&bytes),
        Err(blosc2_frame::Error::FrameType {
            expected: 0,
            found: 1
        })
    ));
}
