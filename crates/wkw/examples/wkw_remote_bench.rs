//! Remote-read benchmark of [`RemoteDataset`] against "download the touched files whole, then
//! read locally", on the `s3-testserver` binary with injected latency. Driven by
//! `cargo xtask remote-bench` (which also runs blosc2-frame's benchmark and the tensorstore peer
//! and prints the table); not a test and not part of CI.
//!
//! ```text
//! wkw_remote_bench prepare --out DIR        # DIR/data/wkw, DIR/volume.u8 (skipped if present)
//! wkw_remote_bench run --data DIR [--reps N] [--only SCENARIO:PEER]
//!                                        # needs the server's environment (AWS_*, S3_TESTSERVER_*)
//! ```
//!
//! Data: a 512³ `u8` dataset, LZ4, block_len 32, file_len 4 (files of 128³ voxels, 64 files),
//! smooth labels with 1/32 of the voxels random. `volume.u8` holds the same voxels raw (x
//! fastest) for the Zarr copy the tensorstore peer reads.
//!
//! Scenarios (box offsets in x, y, z):
//! - `wkw-256-aligned`: 256³ at (128, 128, 128): 8 whole files;
//! - `wkw-256-unaligned`: 256³ at (100, 60, 200): parts of 27 files.
//!
//! Peers: `scifmt` (default options: 64 requests in flight), `scifmt-c16`
//! (`RemoteOptions::default().with_concurrency(16)`), `download` (the touched files fetched
//! whole, 8 in flight, written to a temporary directory, read with [`Dataset`]).
//!
//! Output: one `RESULT key=value …` line per scenario, peer and repetition
//! (`s3_testserver::bench::report`).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use futures::{StreamExt, TryStreamExt};
use s3_testserver::bench::{
    self, DOWNLOAD_CONCURRENCY, Res, Sample, err, get_all, measure, mix, profile, report, selected,
};
use sha2::{Digest, Sha256};
use wkw::object_store::ObjectStore;
use wkw::object_store::path::Path as ObjectPath;
use wkw::{Array, BlockType, Dataset, Header, Order, RemoteDataset, VoxelType};

/// Side of the volume.
const SIDE: u32 = 512;
/// Changes when the prepared data would change.
const DATA_VERSION: &str = "remote-bench wkw data v2";

const WKW_BOXES: [(&str, [u32; 3], [u32; 3]); 2] = [
    ("wkw-256-aligned", [128, 128, 128], [256, 256, 256]),
    ("wkw-256-unaligned", [100, 60, 200], [256, 256, 256]),
];

fn main() -> std::process::ExitCode {
    bench::main(prepare, run)
}

// Synthetic data: the casts truncate on purpose (hash bits to bytes), and the smooth field stays
// within 40..=360 (u8 after / 6), so no sign is lost.
#[allow(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    reason = "synthetic data, see above"
)]
fn prepare(out: &Path) -> Res<()> {
    if bench::prepared(out, "wkw", DATA_VERSION) {
        eprintln!("remote_bench: wkw data in {} is up to date", out.display());
        return Ok(());
    }
    let root = out.join("data").join("wkw");
    if root.exists() {
        std::fs::remove_dir_all(&root).map_err(err("removing old data"))?;
    }
    std::fs::create_dir_all(out.join("data")).map_err(err("creating the data directory"))?;

    // Labels of a smooth field, 1/32 of the voxels random.
    let t = Instant::now();
    let n = SIDE as usize;
    let (px, py, pz) = (
        profile(n, 23.0, 0.0),
        profile(n, 31.0, 1.0),
        profile(n, 19.0, 2.0),
    );
    let pd = profile(2 * n, 41.0, 0.5);
    let mut vol =
        Array::zeros(VoxelType::U8, 1, [SIDE; 3], Order::Fortran).map_err(err("array"))?;
    for (i, v) in vol.as_bytes_mut().iter_mut().enumerate() {
        let (x, y, z) = (i % n, (i / n) % n, i / (n * n));
        let h = mix(i as u64);
        *v = if h & 31 == 0 {
            (h >> 8) as u8
        } else {
            let f = px[x] + py[y] + pz[z] + pd[x + z] + 200.0;
            (f / 6.0) as u8
        };
    }
    let header = Header::new(VoxelType::U8, 1, 32, 4, BlockType::Lz4).map_err(err("wkw header"))?;
    let ds = Dataset::create(&root, header).map_err(err("wkw create"))?;
    ds.write([0, 0, 0], &vol.view()).map_err(err("wkw write"))?;
    std::fs::write(out.join("volume.u8"), vol.as_bytes()).map_err(err("volume.u8"))?;
    eprintln!("remote_bench: wkw volume written in {:.1?}", t.elapsed());
    bench::mark_prepared(out, "wkw", DATA_VERSION)
}

/// Compressed bytes of the blocks of `local` that the box touches, plus the touched files'
/// headers and jump tables.
fn needed(local: &Dataset, offset: [u32; 3], shape: [u32; 3]) -> Res<u64> {
    let h = local.header();
    let (fl, bl) = (u64::from(h.file_len_vx()), u64::from(h.block_len()));
    let mut total = 0u64;
    for (idx, path) in local.list_files().map_err(err("list"))? {
        let info = wkw::inspect_file(&path, &wkw::Limits::default()).map_err(err("inspect"))?;
        let lens = info
            .block_lengths
            .ok_or("raw file in a compressed dataset")?;
        let base = idx.map(|i| u64::from(i) * fl);
        let mut touched = false;
        for (k, len) in lens.iter().enumerate() {
            // Blocks are in Morton order, x in the lowest bit.
            let mut c = [0u64; 3];
            for bit in 0..21 {
                for (a, ca) in c.iter_mut().enumerate() {
                    *ca |= ((k as u64 >> (3 * bit + a)) & 1) << bit;
                }
            }
            let hit = (0..3).all(|a| {
                let lo = base[a] + c[a] * bl;
                lo < u64::from(offset[a]) + u64::from(shape[a]) && lo + bl > u64::from(offset[a])
            });
            if hit {
                total += len;
                touched = true;
            }
        }
        if touched {
            total += 16 + 8 * lens.len() as u64;
        }
    }
    Ok(total)
}

/// Download peer: `header.wkw` at open; the touched files whole (concurrently), then a local
/// read.
async fn download(
    store: &Arc<dyn ObjectStore>,
    offset: [u32; 3],
    shape: [u32; 3],
) -> Res<Sample<Array>> {
    let tmp = tempfile::tempdir().map_err(err("tempdir"))?;
    let root = tmp.path().to_path_buf();
    let header_path = root.join("header.wkw");
    let s = measure(
        || async {
            let h = get_all(store, &ObjectPath::from("wkw/header.wkw")).await?;
            tokio::fs::write(&header_path, &h)
                .await
                .map_err(err("write header"))?;
            Header::parse(&h).map_err(err("header.wkw"))
        },
        |header: Header| async move {
            let fl = header.file_len_vx();
            let files: Vec<[u32; 3]> = {
                let r = |a: usize| (offset[a] / fl)..=((offset[a] + shape[a] - 1) / fl);
                let mut v = Vec::new();
                for z in r(2) {
                    for y in r(1) {
                        for x in r(0) {
                            v.push([x, y, z]);
                        }
                    }
                }
                v
            };
            futures::stream::iter(files.into_iter().map(|[x, y, z]| {
                let root = root.clone();
                async move {
                    let rel = format!("z{z}/y{y}/x{x}.wkw");
                    let data = get_all(store, &ObjectPath::from(format!("wkw/{rel}"))).await?;
                    let dest = root.join(&rel);
                    if let Some(p) = dest.parent() {
                        tokio::fs::create_dir_all(p).await.map_err(err("mkdir"))?;
                    }
                    tokio::fs::write(&dest, &data)
                        .await
                        .map_err(err("write file"))
                }
            }))
            .buffer_unordered(DOWNLOAD_CONCURRENCY)
            .try_collect::<Vec<()>>()
            .await?;
            let root2 = root.clone();
            bench::blocking(move || {
                let ds = Dataset::open(&root2).map_err(err("local open"))?;
                ds.read(offset, shape, Order::Fortran)
                    .map_err(err("local read"))
            })
            .await
        },
    )
    .await?;
    drop(tmp);
    Ok(s)
}

async fn run(dir: PathBuf, reps: usize, only: String) -> Res<()> {
    let store = bench::store_from_env()?;
    let local = Dataset::open(dir.join("data").join("wkw")).map_err(err("local wkw"))?;

    // Expected results and bytes needed, from the local copy.
    let mut expected = Vec::new();
    for (name, offset, shape) in WKW_BOXES {
        let want = local
            .read(offset, shape, Order::Fortran)
            .map_err(err("local read"))?;
        let needed = needed(&local, offset, shape)?;
        let hash = hex::encode(Sha256::digest(want.as_bytes()));
        println!("EXPECT scenario={name} sha256={hash} needed={needed}");
        expected.push((want.as_bytes().to_vec(), needed, hash));
    }

    // Repetition 0 is a warm-up (connections, page cache) and is reported as rep=0; the table
    // drops it. Peers rotate their order from one repetition to the next.
    for rep in 0..=reps {
        for (i, (name, offset, shape)) in WKW_BOXES.iter().enumerate() {
            let (want, needed, hash) = &expected[i];
            let mut peers = ["scifmt", "scifmt-c16", "download"];
            peers.rotate_left(rep % 3);
            for peer in peers.into_iter().filter(|p| selected(&only, name, p)) {
                let s = if peer.starts_with("scifmt") {
                    let options = if peer == "scifmt" {
                        wkw::RemoteOptions::default()
                    } else {
                        wkw::RemoteOptions::default().with_concurrency(16)
                    };
                    measure(
                        || async {
                            RemoteDataset::open(
                                Arc::clone(&store),
                                ObjectPath::from("wkw"),
                                options,
                            )
                            .await
                            .map_err(err("RemoteDataset::open"))
                        },
                        |ds: RemoteDataset| async move {
                            ds.read(*offset, *shape, Order::Fortran)
                                .await
                                .map_err(err("remote read"))
                        },
                    )
                    .await?
                } else {
                    download(&store, *offset, *shape).await?
                };
                if s.data.as_bytes() != want.as_slice() {
                    return Err(format!("{name}: {peer} read different voxels"));
                }
                report(name, peer, rep, &s, *needed, hash);
            }
        }
    }
    Ok(())
}
