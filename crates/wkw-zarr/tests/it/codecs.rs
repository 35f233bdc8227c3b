//! The `blosc` inner codec and Zarr arrays whose inner chunks are not in WKW order: WKW →
//! Zarr3 (blosc, every cname and shuffle) → WKW round trips whose chunks are exactly
//! blosc-chunk's Blosc1 output for the block; C-ordered (and otherwise transposed) sharded
//! arrays written by zarrs (zstd, blosc, gzip or no compressor; inner chunks holding every
//! channel or one) convert to WKW equal to what zarrs wrote; corrupt blosc chunks and bad blosc settings are errors naming the file.

use crate::common;

use std::path::Path;
use std::sync::Arc;

use blosc_chunk::{Blocksize, BloscShuffle, CParams, Codec, Filter};
use common::{SHAPE, TestResult, make_mag};
use serde_json::{Value, json};
use wkw_zarr::{BlockType, ConvertOptions, Error, Existing, Format, ZarrCodec, convert, verify};
use zarrs::array::{Array, ArrayMetadata, ArraySubset};
use zarrs::filesystem::FilesystemStore;

/// The `(offset, nbytes)` of every present chunk of the shard at `path` (index at the end,
/// with crc32c, `chunks` entries).
fn shard_chunks(bytes: &[u8], chunks: usize) -> Vec<(usize, usize)> {
    let index = &bytes[bytes.len() - 16 * chunks - 4..bytes.len() - 4];
    index
        .chunks_exact(16)
        .filter_map(|e| {
            let off = u64::from_le_bytes(e[..8].try_into().ok()?);
            let len = u64::from_le_bytes(e[8..].try_into().ok()?);
            if off == u64::MAX {
                return None;
            }
            Some((usize::try_from(off).ok()?, usize::try_from(len).ok()?))
        })
        .collect()
}

/// Every shard file below the Zarr array `root`.
fn shards(root: &Path) -> Result<Vec<std::path::PathBuf>, Box<dyn std::error::Error>> {
    Ok(common::tree(root)?
        .into_keys()
        .filter(|k| k.starts_with("c/"))
        .map(|k| root.join(k))
        .collect())
}

#[test]
fn wkw_to_blosc_zarr3_and_back_for_every_cname_and_shuffle() -> TestResult {
    let dir = tempfile::tempdir()?;
    let src = dir.path().join("wkw");
    let array = make_mag(&src, BlockType::Lz4)?;
    for cname in [Codec::Lz4, Codec::Zstd, Codec::BloscLz, Codec::Zlib] {
        for shuffle in [
            BloscShuffle::AutoShuffle,
            BloscShuffle::NoShuffle,
            BloscShuffle::Shuffle,
            BloscShuffle::BitShuffle,
        ] {
            let case = format!("{cname:?} {shuffle:?}");
            let zarr = dir.path().join("zarr");
            let back = dir.path().join("back");
            let codec = ZarrCodec::Blosc {
                cname,
                clevel: 5,
                shuffle,
                typesize: None,
                blocksize: Blocksize::Auto,
            };
            let options = ConvertOptions::default()
                .with_codec(codec)
                .with_existing(Existing::Overwrite)
                .with_threads(2);
            convert(&src, &zarr, Format::Zarr3, &options, &|_| {})?;
            // u16 voxels: typesize 2, zarr-python's default shuffle for them is `shuffle`.
            let filter = shuffle.resolve(2);
            let meta: Value = serde_json::from_slice(&std::fs::read(zarr.join("zarr.json"))?)?;
            assert_eq!(
                meta.pointer("/codecs/0/configuration/codecs/2"),
                Some(&json!({"name": "blosc", "configuration": {"typesize": 2,
                    "cname": cname.name(), "clevel": 5, "shuffle": filter.name(), "blocksize": 0}})),
                "{case}"
            );
            // Every chunk is blosc-chunk's Blosc1 output (C-Blosc 1.21's bytes) for its block.
            let params = CParams::blosc1(
                cname,
                5,
                2,
                match filter {
                    BloscShuffle::NoShuffle => Filter::NoFilter,
                    BloscShuffle::Shuffle => Filter::Shuffle,
                    _ => Filter::BitShuffle,
                },
            );
            let mut chunks = 0;
            for shard in shards(&zarr)? {
                let bytes = std::fs::read(&shard)?;
                for (off, len) in shard_chunks(&bytes, 8) {
                    let chunk = &bytes[off..off + len];
                    let block = blosc_chunk::decompress(chunk)?;
                    assert_eq!(block.len(), 2 * 2 * 8 * 8 * 8, "{case}");
                    assert_eq!(blosc_chunk::compress(&block, &params)?, chunk, "{case}");
                    chunks += 1;
                }
            }
            assert!(chunks > 0, "{case}");
            assert!(verify(&src, &zarr, &options, &|_| {})?.is_ok(), "{case}");
            convert(&zarr, &back, Format::Wkw, &options, &|_| {})?;
            let got =
                wkw::Dataset::open(&back)?.read(common::OFFSET, SHAPE, wkw::Order::Fortran)?;
            assert_eq!(got, array, "{case}");
        }
    }
    Ok(())
}

#[test]
fn explicit_typesize_and_blocksize_are_written_and_bad_settings_refused() -> TestResult {
    let dir = tempfile::tempdir()?;
    let src = dir.path().join("wkw");
    make_mag(&src, BlockType::Raw)?;
    let codec = ZarrCodec::Blosc {
        cname: Codec::Lz4,
        clevel: 9,
        shuffle: BloscShuffle::Shuffle,
        typesize: Some(4),
        blocksize: Blocksize::from(256),
    };
    let zarr = dir.path().join("zarr");
    let options = ConvertOptions::default().with_codec(codec);
    convert(&src, &zarr, Format::Zarr3, &options, &|_| {})?;
    let params = {
        let mut p = CParams::blosc1(blosc_chunk::Codec::Lz4, 9, 4, Filter::Shuffle);
        p.blocksize = 256;
        p
    };
    let shard = shards(&zarr)?.into_iter().next().ok_or("no shard")?;
    let bytes = std::fs::read(&shard)?;
    for (off, len) in shard_chunks(&bytes, 8) {
        let chunk = &bytes[off..off + len];
        let header = blosc_chunk::ChunkHeader::parse(chunk)?;
        assert_eq!(header.typesize(), 4);
        assert_eq!(
            blosc_chunk::compress(&blosc_chunk::decompress(chunk)?, &params)?,
            chunk
        );
    }
    assert!(verify(&src, &zarr, &options, &|_| {})?.is_ok());

    for bad in [
        ZarrCodec::Blosc {
            cname: Codec::Lz4,
            clevel: 10,
            shuffle: BloscShuffle::AutoShuffle,
            typesize: None,
            blocksize: Blocksize::Auto,
        },
        ZarrCodec::Blosc {
            cname: Codec::Lz4,
            clevel: 5,
            shuffle: BloscShuffle::AutoShuffle,
            typesize: Some(0),
            blocksize: Blocksize::Auto,
        },
        // A codec Zarr's `blosc` cannot name.
        ZarrCodec::blosc(Codec::NdLz, 5),
    ] {
        let err = convert(
            &src,
            dir.path().join("bad"),
            Format::Zarr3,
            &ConvertOptions::default()
                .with_codec(bad)
                .with_existing(Existing::Overwrite),
            &|_| {},
        )
        .err()
        .ok_or("bad blosc settings converted")?;
        assert!(matches!(err, Error::InvalidArgument(_)), "{err:?}");
    }
    Ok(())
}

#[test]
fn zarrs_reads_the_blosc_arrays() -> TestResult {
    let _registration = blosc_chunk::register(blosc_chunk::ZarrsOptions::default());
    let dir = tempfile::tempdir()?;
    let src = dir.path().join("wkw");
    make_mag(&src, BlockType::Lz4)?;
    for cname in Codec::BLOSC1 {
        let dst = dir.path().join(cname.name());
        convert(
            &src,
            &dst,
            Format::Zarr3,
            &ConvertOptions::default().with_codec(ZarrCodec::blosc(cname, 5)),
            &|_| {},
        )?;
        let array = Array::open(Arc::new(FilesystemStore::new(&dst)?), "/")?;
        let subset = ArraySubset::new_with_ranges(&[0..2, 2..78, 1..46, 0..32]);
        let got: Vec<u16> = array.retrieve_array_subset(&subset)?;
        let want = wkw::Dataset::open(&src)?.read([2, 1, 0], [76, 45, 32], wkw::Order::C)?;
        let want: Vec<u16> = want
            .as_bytes()
            .chunks_exact(2)
            .map(|b| u16::from_le_bytes([b[0], b[1]]))
            .collect();
        assert_eq!(got, want, "{cname:?}");
    }
    Ok(())
}

/// A sharded array written by zarrs: `shape`, inner chunks of side 8 (holding every channel,
/// or one if `split`) in shards of side 16 (holding every channel), inner `codecs`, filled
/// with a ramp; returns the values in C order.
fn zarrs_array(
    root: &Path,
    shape: &[u64],
    split: bool,
    inner_codecs: Value,
) -> Result<Vec<u16>, Box<dyn std::error::Error>> {
    let c = if shape.len() == 4 {
        Some(shape[0])
    } else {
        None
    };
    let dims = |side: u64, c: Option<u64>| -> Vec<u64> {
        c.into_iter().chain(std::iter::repeat_n(side, 3)).collect()
    };
    let inner_c = if split { c.map(|_| 1) } else { c };
    let meta = json!({
        "zarr_format": 3, "node_type": "array", "shape": shape, "data_type": "uint16",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": dims(16, c)}},
        "chunk_key_encoding": {"name": "default"}, "fill_value": 0,
        "codecs": [{"name": "sharding_indexed", "configuration": {
            "chunk_shape": dims(8, inner_c), "codecs": inner_codecs,
            "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}},
                             {"name": "crc32c"}]}}]
    });
    let meta: ArrayMetadata = serde_json::from_value(meta)?;
    let array = Array::new_with_metadata(Arc::new(FilesystemStore::new(root)?), "/", meta)?;
    array.store_metadata()?;
    let n: u64 = shape.iter().product();
    // Zeros in the first region, so some inner chunks are all fill value.
    let values: Vec<u16> = (0..n)
        .map(|i| {
            if i % 997 < 50 {
                0
            } else {
                u16::try_from(i % 60_000).unwrap_or(0) + 1
            }
        })
        .collect();
    array.store_array_subset(&array.subset_all(), values.clone())?;
    Ok(values)
}

#[test]
fn c_ordered_transposed_and_channel_split_zarr_arrays_convert_to_wkw() -> TestResult {
    let _registration = blosc_chunk::register(blosc_chunk::ZarrsOptions::default());
    let blosc = json!({"name": "blosc", "configuration": {"cname": "lz4", "clevel": 5,
        "shuffle": "bitshuffle", "typesize": 2, "blocksize": 0}});
    let zstd = json!({"name": "zstd", "configuration": {"level": 3, "checksum": false}});
    let bytes = json!({"name": "bytes", "configuration": {"endian": "little"}});
    let cases = [
        // zarr-python's default: C order, no transpose.
        (vec![3, 32, 16, 48], false, json!([bytes, zstd])),
        (vec![32, 16, 48], false, json!([bytes, blosc])),
        (
            vec![2, 32, 16, 48],
            false,
            json!([bytes, {"name": "gzip", "configuration": {"level": 6}}]),
        ),
        // Some other permutations.
        (
            vec![2, 32, 16, 48],
            false,
            json!([{"name": "transpose", "configuration": {"order": [2, 0, 3, 1]}}, bytes]),
        ),
        (
            vec![32, 16, 48],
            false,
            json!([{"name": "transpose", "configuration": {"order": [1, 2, 0]}}, bytes, blosc]),
        ),
        // Inner chunks of one channel each, C order and webknossos-libs' order.
        (vec![3, 32, 16, 48], true, json!([bytes, blosc])),
        (
            vec![2, 32, 16, 48],
            true,
            json!([{"name": "transpose", "configuration": {"order": [3, 2, 1, 0]}}, bytes, zstd]),
        ),
    ];
    for (shape, split, codecs) in cases {
        let case = format!("{shape:?} split {split} {codecs}");
        let dir = tempfile::tempdir()?;
        let zarr = dir.path().join("zarr");
        let values = zarrs_array(&zarr, &shape, split, codecs)?;
        let wkw_dir = dir.path().join("wkw");
        let options = ConvertOptions::default().with_threads(2);
        convert(&zarr, &wkw_dir, Format::Wkw, &options, &|_| {})?;
        let (c, xyz) = match shape[..] {
            [c, x, y, z] => (c, [x, y, z]),
            [x, y, z] => (1, [x, y, z]),
            _ => return Err("shape".into()),
        };
        let ds = wkw::Dataset::open(&wkw_dir)?;
        assert_eq!(u64::from(ds.header().num_channels()), c, "{case}");
        let got = ds.read(
            [0, 0, 0],
            xyz.map(|v| u32::try_from(v).unwrap_or(u32::MAX)),
            wkw::Order::C,
        )?;
        let want: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        assert_eq!(got.as_bytes(), &want[..], "{case}");
        assert!(
            verify(&wkw_dir, &zarr, &options, &|_| {})?.is_ok(),
            "{case}"
        );
        // And verify sees a voxel that differs, at its place.
        let one = wkw::Array::from_vec(
            u8::try_from(c)?,
            [1, 1, 1],
            wkw::Order::Fortran,
            vec![7u16; usize::try_from(c)?],
        )?;
        ds.write([9, 4, 17], &one.view())?;
        let report = verify(&wkw_dir, &zarr, &options, &|_| {})?;
        assert_eq!(report.differing_blocks, 1, "{case}");
        assert_eq!(report.differences[0].voxel, [9, 4, 17], "{case}");
    }
    Ok(())
}

#[test]
fn shards_splitting_the_channels_stay_unsupported() -> TestResult {
    let dir = tempfile::tempdir()?;
    let zarr = dir.path().join("zarr");
    std::fs::create_dir_all(&zarr)?;
    let doc = json!({
        "zarr_format": 3, "node_type": "array", "shape": [3, 32, 32, 32], "data_type": "uint8",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [1, 16, 16, 16]}},
        "chunk_key_encoding": {"name": "default"}, "fill_value": 0,
        "codecs": [{"name": "sharding_indexed", "configuration": {
            "chunk_shape": [1, 8, 8, 8], "codecs": [{"name": "bytes"}],
            "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}]}}]
    });
    std::fs::write(zarr.join("zarr.json"), serde_json::to_vec(&doc)?)?;
    let err = convert(
        &zarr,
        dir.path().join("wkw"),
        Format::Wkw,
        &ConvertOptions::default(),
        &|_| {},
    )
    .err()
    .ok_or("converted")?;
    assert!(matches!(err, Error::Unsupported { .. }), "{err:?}");
    assert!(err.to_string().contains("zarr.json"), "{err}");
    assert!(err.to_string().contains("split the 3 channels"), "{err}");
    Ok(())
}

/// A change to a shard's bytes.
type Corruption = Box<dyn Fn(&mut [u8])>;

#[test]
fn a_corrupt_blosc_chunk_or_bad_blosc_metadata_is_an_error_naming_the_file() -> TestResult {
    let dir = tempfile::tempdir()?;
    let src = dir.path().join("wkw");
    make_mag(&src, BlockType::Lz4)?;
    let zarr = dir.path().join("zarr");
    let options = ConvertOptions::default().with_codec(ZarrCodec::blosc(Codec::Lz4, 5));
    convert(&src, &zarr, Format::Zarr3, &options, &|_| {})?;
    let shard = shards(&zarr)?.into_iter().next().ok_or("no shard")?;
    let good = std::fs::read(&shard)?;
    let (off, len) = shard_chunks(&good, 8)[0];
    let corruptions: Vec<(&str, Corruption)> = vec![
        // nbytes far beyond the block.
        (
            "nbytes",
            Box::new(move |b: &mut [u8]| {
                b[off + 4..off + 8].copy_from_slice(&u32::MAX.to_le_bytes())
            }),
        ),
        // nbytes two bytes short of the block: decodes, but not to one block.
        (
            "nbytes short",
            Box::new(move |b: &mut [u8]| {
                let n = u32::from_le_bytes(b[off + 4..off + 8].try_into().unwrap_or([0; 4]));
                b[off + 4..off + 8].copy_from_slice(&(n - 2).to_le_bytes());
            }),
        ),
        // The compressed payload scrambled.
        (
            "payload",
            Box::new(move |b: &mut [u8]| b[off + 16..off + len].fill(0xa5)),
        ),
    ];
    for (what, corrupt) in corruptions {
        let mut bytes = good.clone();
        corrupt(&mut bytes);
        std::fs::write(&shard, &bytes)?;
        for result in [
            convert(
                &zarr,
                dir.path().join("out"),
                Format::Wkw,
                &ConvertOptions::default().with_existing(Existing::Overwrite),
                &|_| {},
            )
            .map(|_| ()),
            verify(&src, &zarr, &options, &|_| {}).map(|_| ()),
        ] {
            let err = result
                .err()
                .ok_or(format!("{what}: a corrupt chunk read"))?;
            assert!(matches!(err, Error::Corrupt { .. }), "{what}: {err:?}");
            assert!(
                err.to_string().contains(&shard.display().to_string()),
                "{what}: {err}"
            );
        }
    }
    std::fs::write(&shard, &good)?;
    // Bad blosc settings in zarr.json.
    let meta_path = zarr.join("zarr.json");
    let meta: Value = serde_json::from_slice(&std::fs::read(&meta_path)?)?;
    for (field, value) in [
        ("typesize", json!(0)),
        ("clevel", json!(12)),
        ("shuffle", json!("twist")),
        ("blocksize", json!(-1)),
        ("cname", json!("snappy")),
    ] {
        let mut m = meta.clone();
        *m.pointer_mut(&format!(
            "/codecs/0/configuration/codecs/2/configuration/{field}"
        ))
        .ok_or("no field")? = value;
        std::fs::write(&meta_path, serde_json::to_vec(&m)?)?;
        let err = convert(
            &zarr,
            dir.path().join("out"),
            Format::Wkw,
            &ConvertOptions::default().with_existing(Existing::Overwrite),
            &|_| {},
        )
        .err()
        .ok_or(format!("{field}: converted"))?;
        assert!(
            matches!(err, Error::Metadata { .. } | Error::Unsupported { .. }),
            "{field}: {err:?}"
        );
        assert!(err.to_string().contains("zarr.json"), "{field}: {err}");
    }
    Ok(())
}
