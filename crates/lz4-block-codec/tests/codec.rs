//! The codec against blocks the reference `wkw` package (1.1.24, liblz4 through `wkwrap`) wrote,
//! against hostile blocks, and inside zarrs arrays.

#![allow(clippy::unwrap_used, reason = "a failed unwrap is a failed test")]

use std::path::{Path, PathBuf};
use std::sync::Arc;

use lz4_block_codec::{Error, Lz4BlockCodec, Lz4BlockConfiguration};
use proptest::prelude::*;

fn testdata() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/wkw")
}

/// One compressed WKW data file: block type (2 LZ4, 3 LZ4HC), decoded block size and the
/// stored blocks (from the jump table after the 16-byte header).
struct WkwFile {
    name: String,
    block_type: u8,
    block_bytes: usize,
    blocks: Vec<Vec<u8>>,
}

fn read_wkw(path: &Path) -> Option<WkwFile> {
    let bytes = std::fs::read(path).unwrap();
    assert_eq!(&bytes[..3], b"WKW", "{}", path.display());
    let per_dim = bytes[4];
    let (block_len, file_len) = (1usize << (per_dim & 0x0f), 1usize << (per_dim >> 4));
    let (block_type, voxel_size) = (bytes[5], usize::from(bytes[7]));
    if block_type == 1 {
        return None;
    }
    let data_offset =
        usize::try_from(u64::from_le_bytes(bytes[8..16].try_into().unwrap())).unwrap();
    let n = file_len.pow(3);
    let ends: Vec<usize> = (0..n)
        .map(|i| {
            let at = 16 + 8 * i;
            usize::try_from(u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap())).unwrap()
        })
        .collect();
    let mut start = data_offset;
    let blocks = ends
        .iter()
        .map(|&end| {
            let b = bytes[start..end].to_vec();
            start = end;
            b
        })
        .collect();
    Some(WkwFile {
        name: path.display().to_string(),
        block_type,
        block_bytes: block_len.pow(3) * voxel_size,
        blocks,
    })
}

fn reference_files() -> Vec<WkwFile> {
    let mut out = Vec::new();
    let mut stack = vec![testdata()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "wkw")
                && p.file_name().is_some_and(|n| n != "header.wkw")
                && let Some(f) = read_wkw(&p)
            {
                out.push(f);
            }
        }
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

#[test]
fn reference_wkw_blocks_decode_and_lz4hc_reencodes_byte_identically() {
    let files = reference_files();
    let (lz4, hc) = files.iter().fold((0, 0), |(a, b), f| {
        (
            a + usize::from(f.block_type == 2),
            b + usize::from(f.block_type == 3),
        )
    });
    assert!(
        lz4 >= 3 && hc >= 3,
        "fixtures: {lz4} LZ4 and {hc} LZ4HC files"
    );
    let fast = Lz4BlockCodec::default();
    let hc9 = Lz4BlockCodec::new(Lz4BlockConfiguration::Hc { level: 9 }).unwrap();
    let mut blocks = 0;
    for f in &files {
        for (k, stored) in f.blocks.iter().enumerate() {
            let what = format!("{} block {k}", f.name);
            let decoded = fast
                .decode(stored, f.block_bytes)
                .unwrap_or_else(|e| panic!("{what}: {e}"));
            // Sized: one byte more or less than the block is an error.
            assert!(fast.decode(stored, f.block_bytes + 1).is_err(), "{what}");
            assert!(fast.decode(stored, f.block_bytes - 1).is_err(), "{what}");
            if f.block_type == 3 {
                // LZ4HC level 9, WKW's: the reference's bytes exactly.
                assert_eq!(&hc9.encode(&decoded).unwrap(), stored, "{what}");
            } else {
                // LZ4's fast mode differs between liblz4 versions (the fixtures' README): the
                // block must decode to the same content.
                let again = fast.encode(&decoded).unwrap();
                assert_eq!(
                    fast.decode(&again, f.block_bytes).unwrap(),
                    decoded,
                    "{what}"
                );
            }
            blocks += 1;
        }
    }
    assert!(blocks > 100, "{blocks} blocks checked");
}

#[test]
fn empty_chunks_and_impossible_sizes() {
    let codec = Lz4BlockCodec::default();
    let stored = codec.encode(&[]).unwrap();
    assert_eq!(stored, [0]);
    assert!(codec.decode(&stored, 0).unwrap().is_empty());
    assert!(codec.decode(&[], 0).is_err());
    // A block of 10 bytes cannot decode to a gigabyte: refused before allocating.
    match codec.decode(&[0u8; 10], 1 << 30) {
        Err(Error::Corrupt { detail, .. }) => assert!(detail.contains("at most"), "{detail}"),
        other => panic!("{other:?}"),
    }
    // Bad configurations.
    assert!(Lz4BlockCodec::new(Lz4BlockConfiguration::Hc { level: 13 }).is_err());
    assert!(Lz4BlockCodec::new(Lz4BlockConfiguration::Fast { acceleration: 0 }).is_err());
    for bad in [
        serde_json::json!({"mode": "hc"}),
        serde_json::json!({"mode": "hc", "level": 0}),
        serde_json::json!({"mode": "frame"}),
        serde_json::json!({"acceleration": 1.5}),
        serde_json::json!({"size_prefix": true}),
        serde_json::json!([]),
    ] {
        assert!(Lz4BlockConfiguration::from_json(&bad).is_err(), "{bad}");
    }
    assert_eq!(
        Lz4BlockConfiguration::from_json(&serde_json::json!({"mode": "fast", "acceleration": 8}))
            .unwrap()
            .to_json(),
        serde_json::json!({"mode": "fast", "acceleration": 8})
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Any bytes, any claimed size: a result or an error, never a panic, and a result has
    /// exactly the claimed size.
    #[test]
    fn hostile_blocks_are_errors_never_panics(
        stored in proptest::collection::vec(any::<u8>(), 0..600),
        size in 0usize..40_000,
    ) {
        if let Ok(out) = Lz4BlockCodec::default().decode(&stored, size) {
            prop_assert_eq!(out.len(), size);
        }
    }

    /// Damaged real blocks: never a panic, never a wrong size.
    #[test]
    fn damaged_blocks_are_errors_or_exact(
        data in proptest::collection::vec(0u8..4, 1..5_000),
        flip in any::<usize>(),
        cut in any::<usize>(),
    ) {
        let codec = Lz4BlockCodec::new(Lz4BlockConfiguration::Hc { level: 9 }).unwrap();
        let mut stored = codec.encode(&data).unwrap();
        let at = flip % stored.len();
        stored[at] ^= 0x5a;
        stored.truncate(stored.len() - cut % stored.len());
        if let Ok(out) = codec.decode(&stored, data.len()) {
            prop_assert_eq!(out.len(), data.len());
        }
    }

    /// Round trips in every mode.
    #[test]
    fn round_trips(
        data in proptest::collection::vec(0u8..8, 0..20_000),
        acceleration in 1u32..100,
        level in 1u32..=12,
    ) {
        for config in [
            Lz4BlockConfiguration::Fast { acceleration },
            Lz4BlockConfiguration::Hc { level },
        ] {
            let codec = Lz4BlockCodec::new(config).unwrap();
            let stored = codec.encode(&data).unwrap();
            prop_assert!(stored.len() <= Lz4BlockCodec::bound(data.len()).unwrap());
            prop_assert_eq!(codec.decode(&stored, data.len()).unwrap(), data.clone());
        }
    }
}

/// zarrs opens an array whose chunk files are WKW blocks as the reference wrote them (copied
/// out of an LZ4HC file, no byte changed) and reads each block back, transposed to (c, x, y, z)
/// as WKW's Fortran order; it also writes and reads its own chunks.
#[test]
fn zarrs_reads_wkw_blocks_in_place_and_round_trips() {
    use zarrs::array::{Array, ArraySubset};
    use zarrs::filesystem::FilesystemStore;

    let file = reference_files()
        .into_iter()
        .find(|f| f.name.contains("f32_lz4hc_b16_f2"))
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(FilesystemStore::new(dir.path()).unwrap());
    let b: u64 = 16;
    let metadata = serde_json::json!({
        "zarr_format": 3,
        "node_type": "array",
        "shape": [1, b, b, b * 8],
        "data_type": "float32",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [1, b, b, b]}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": 0.0,
        "dimension_names": ["c", "x", "y", "z"],
        "codecs": [
            {"name": "transpose", "configuration": {"order": [3, 2, 1, 0]}},
            {"name": "bytes", "configuration": {"endian": "little"}},
            {"name": "lz4-block", "configuration": {"mode": "hc", "level": 9}}
        ]
    });
    std::fs::write(dir.path().join("zarr.json"), metadata.to_string()).unwrap();
    // The file's 8 blocks as chunks 0..8 along z (their Morton order is not needed here).
    for (k, stored) in file.blocks.iter().enumerate() {
        let chunk = dir.path().join(format!("c/0/0/0/{k}"));
        std::fs::create_dir_all(chunk.parent().unwrap()).unwrap();
        std::fs::write(&chunk, stored).unwrap();
    }
    let array = Array::open(store.clone(), "/").unwrap();
    let codec = Lz4BlockCodec::default();
    for (k, stored) in file.blocks.iter().enumerate() {
        let raw = codec.decode(stored, file.block_bytes).unwrap();
        // WKW block bytes: x fastest, then y, then z (one channel).
        let want: Vec<f32> = raw
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
            .collect();
        let k = k as u64;
        let subset = ArraySubset::new_with_ranges(&[0..1, 0..b, 0..b, k * b..(k + 1) * b]);
        let got: Vec<f32> = array.retrieve_array_subset(&subset).unwrap();
        // zarrs returns C order over (c, x, y, z): z fastest.
        let n = usize::try_from(b).unwrap();
        for x in 0..n {
            for y in 0..n {
                for z in 0..n {
                    assert_eq!(
                        got[(x * n + y) * n + z],
                        want[x + n * (y + n * z)],
                        "block {k}"
                    );
                }
            }
        }
    }
    // zarrs writes chunks with the codec and reads them back.
    let data: Vec<f32> = (0..b * b * b).map(|i| (i % 97) as f32).collect();
    let subset = ArraySubset::new_with_ranges(&[0..1, 0..b, 0..b, 0..b]);
    array.store_array_subset(&subset, &data).unwrap();
    let back: Vec<f32> = array.retrieve_array_subset(&subset).unwrap();
    assert_eq!(back, data);
    // A corrupt stored chunk is an error naming the codec's problem, not wrong data.
    std::fs::write(dir.path().join("c/0/0/0/1"), [0xffu8; 40]).unwrap();
    let subset = ArraySubset::new_with_ranges(&[0..1, 0..b, 0..b, b..2 * b]);
    let e = array
        .retrieve_array_subset::<Vec<f32>>(&subset)
        .unwrap_err();
    assert!(e.to_string().contains("lz4-block"), "{e}");
}

/// The configuration key `size` (every chunk's decoded size): zarrs reads the reference's blocks
/// when it matches the chunk, writes it back with the metadata, and refuses to decode when it
/// differs or is not a non-negative integer.
#[test]
fn zarrs_checks_and_keeps_the_size_key() {
    use zarrs::array::{Array, ArraySubset};
    use zarrs::filesystem::FilesystemStore;

    let file = reference_files()
        .into_iter()
        .find(|f| f.name.contains("f32_lz4hc_b16_f2"))
        .unwrap();
    let b: u64 = 16;
    let open = |size: serde_json::Value| {
        let dir = tempfile::tempdir().unwrap();
        let metadata = serde_json::json!({
            "zarr_format": 3,
            "node_type": "array",
            "shape": [1, b, b, b],
            "data_type": "float32",
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [1, b, b, b]}},
            "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
            "fill_value": 0.0,
            "codecs": [
                {"name": "transpose", "configuration": {"order": [3, 2, 1, 0]}},
                {"name": "bytes", "configuration": {"endian": "little"}},
                {"name": "lz4-block", "configuration": {"mode": "hc", "level": 9, "size": size}}
            ]
        });
        std::fs::write(dir.path().join("zarr.json"), metadata.to_string()).unwrap();
        std::fs::create_dir_all(dir.path().join("c/0/0/0")).unwrap();
        std::fs::write(dir.path().join("c/0/0/0/0"), &file.blocks[0]).unwrap();
        let store = Arc::new(FilesystemStore::new(dir.path()).unwrap());
        (dir, Array::open(store, "/"))
    };
    let subset = ArraySubset::new_with_ranges(&[0..1, 0..b, 0..b, 0..b]);
    let block_bytes = file.block_bytes as u64;

    // The right size: the block decodes, and the key is kept in the metadata zarrs writes.
    let (_dir, array) = open(block_bytes.into());
    let array = array.unwrap();
    let got: Vec<f32> = array.retrieve_array_subset(&subset).unwrap();
    let raw = Lz4BlockCodec::default()
        .decode(&file.blocks[0], file.block_bytes)
        .unwrap();
    let n = usize::try_from(b).unwrap();
    for (i, v) in raw.chunks_exact(4).enumerate() {
        let (x, y, z) = (i % n, (i / n) % n, i / (n * n));
        assert_eq!(
            got[(x * n + y) * n + z],
            f32::from_le_bytes(v.try_into().unwrap())
        );
    }
    let written = serde_json::to_value(array.metadata()).unwrap();
    let codecs = written["codecs"].as_array().unwrap();
    assert_eq!(codecs[2]["configuration"]["size"], block_bytes, "{written}");

    // Another size: an error naming both sizes, no data.
    let (_dir, array) = open((block_bytes + 4).into());
    let e = array
        .unwrap()
        .retrieve_array_subset::<Vec<f32>>(&subset)
        .unwrap_err();
    assert!(e.to_string().contains("`size`"), "{e}");

    // Not a non-negative integer: the array does not open.
    for bad in [
        serde_json::json!(-1),
        serde_json::json!("16384"),
        serde_json::json!(1.5),
    ] {
        let (_dir, array) = open(bad.clone());
        let e = array.unwrap_err();
        assert!(e.to_string().contains("size"), "{bad}: {e}");
    }
}
