//! A WKW mag made by the `wkw` crate for the tests.

#![allow(dead_code, reason = "each test binary uses a part")]

use std::path::Path;

pub(crate) type TestResult = Result<(), Box<dyn std::error::Error>>;

/// Box written into [`make_mag`]'s mag: offset and shape.
pub(crate) const OFFSET: [u32; 3] = [5, 3, 1];
pub(crate) const SHAPE: [u32; 3] = [70, 40, 30];

/// A WKW mag of u16 × 2 channels, 8³ blocks, 2³ blocks per file, of `block_type`, holding a
/// ramp in the box [`OFFSET`] + [`SHAPE`] (5 × 3 × 2 = 30 files).
pub(crate) fn make_mag(root: &Path, block_type: wkw::BlockType) -> Result<wkw::Array, wkw::Error> {
    let header = wkw::Header::new(wkw::VoxelType::U16, 2, 8, 2, block_type)?;
    let ds = wkw::Dataset::create(root, header)?;
    let n = 2 * SHAPE.iter().map(|&s| s as usize).product::<usize>();
    let values: Vec<u16> = (0..n)
        .map(|v| u16::try_from(v % 65_000).unwrap_or(0) + 1)
        .collect();
    let array = wkw::Array::from_vec(2, SHAPE, wkw::Order::Fortran, values)?;
    ds.write(OFFSET, &array.view())?;
    Ok(array)
}

/// Every file below `root` (relative path → bytes).
pub(crate) fn tree(root: &Path) -> std::io::Result<std::collections::BTreeMap<String, Vec<u8>>> {
    let mut out = std::collections::BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir)? {
            let path = entry?.path();
            if path.is_dir() {
                stack.push(path);
            } else {
                let rel = path
                    .strip_prefix(root)
                    .map_err(std::io::Error::other)?
                    .to_string_lossy()
                    .into_owned();
                out.insert(rel, std::fs::read(&path)?);
            }
        }
    }
    Ok(out)
}

/// The two conversion sources of the resume and kill tests, in `dir`: an LZ4 mag from
/// [`make_mag`] at `dir/wkw` and its Zarr v3 conversion at `dir/zarr-src`.
pub(crate) fn lz4_mag_and_its_zarr3(
    dir: &Path,
) -> Result<(std::path::PathBuf, std::path::PathBuf), Box<dyn std::error::Error>> {
    let wkw_src = dir.join("wkw");
    make_mag(&wkw_src, wkw::BlockType::Lz4)?;
    let zarr_src = dir.join("zarr-src");
    wkw_zarr::convert(
        &wkw_src,
        &zarr_src,
        wkw_zarr::Format::Zarr3,
        &wkw_zarr::ConvertOptions::default(),
        &|_| {},
    )?;
    Ok((wkw_src, zarr_src))
}

/// `prefix` on the server, through its client (3 quick retries per request).
pub(crate) fn at(server: &s3_testserver::TestServer, prefix: &str) -> wkw_zarr::Location {
    wkw_zarr::Location::store(
        server.store(),
        scifmt_io::object_store::path::Path::from(prefix),
        &server.url(prefix),
    )
}

/// Every object under `prefix` (relative key → bytes).
pub(crate) fn objects(
    server: &s3_testserver::TestServer,
    prefix: &str,
) -> Result<std::collections::BTreeMap<String, Vec<u8>>, Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    server.download_prefix(prefix, dir.path())?;
    Ok(tree(dir.path())?)
}
