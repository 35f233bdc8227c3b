//! zarrs (an independent Zarr v3 implementation) reads the arrays we write equal to the WKW
//! source, for every codec choice.

use crate::common;

use std::sync::Arc;

use common::{OFFSET, SHAPE, TestResult, make_mag};
use wkw_zarr::{BlockType, ConvertOptions, Format, ZarrCodec, convert};
use zarrs::array::{Array, ArrayBytes, ArraySubset};
use zarrs::filesystem::FilesystemStore;

#[test]
fn zarrs_reads_our_shards() -> TestResult {
    for (bt, codec) in [
        (BlockType::Lz4, ZarrCodec::Auto),
        (BlockType::Raw, ZarrCodec::Auto),
        (BlockType::Raw, ZarrCodec::Zstd { level: 1 }),
        (BlockType::Lz4Hc, ZarrCodec::None),
    ] {
        let dir = tempfile::tempdir()?;
        let src = dir.path().join("wkw");
        make_mag(&src, bt)?;
        let dst = dir.path().join("zarr");
        convert(
            &src,
            &dst,
            Format::Zarr3,
            &ConvertOptions::default().with_codec(codec),
            &|_| {},
        )?;
        let array = Array::open(Arc::new(FilesystemStore::new(&dst)?), "/")?;
        assert_eq!(array.shape(), &[2, 80, 48, 32]);
        // A box reaching beyond the written one, so absent chunks (fill value) are read too.
        let lo = [0, 2, 1, 0];
        let size = [2, 76, 45, 32];
        let subset = ArraySubset::new_with_ranges(
            &(0..4).map(|d| lo[d]..lo[d] + size[d]).collect::<Vec<_>>(),
        );
        let bytes: ArrayBytes<'static> = array.retrieve_array_subset(&subset)?;
        let got = bytes.into_fixed()?.into_owned();
        let want = wkw::Dataset::open(&src)?.read([2, 1, 0], [76, 45, 32], wkw::Order::C)?;
        assert_eq!(&got[..], want.as_bytes(), "{bt:?} {codec:?}");
        let _ = (OFFSET, SHAPE);
    }
    Ok(())
}
