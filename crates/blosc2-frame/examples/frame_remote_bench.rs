//! Remote-read benchmark of [`RemoteB2nd`] against "download the frame, then read locally", on
//! the `s3-testserver` binary with injected latency. Driven by `cargo xtask remote-bench`
//! (which also runs wkw's benchmark and the tensorstore peer and prints the table); not a test
//! and not part of CI.
//!
//! ```text
//! frame_remote_bench prepare --out DIR        # DIR/data/frame/array.b2nd (skipped if present)
//! frame_remote_bench run --data DIR [--reps N] [--only SCENARIO:PEER]
//!                                        # needs the server's environment (AWS_*, S3_TESTSERVER_*)
//! ```
//!
//! Data: `frame/array.b2nd`, a b2nd array of 1024×1024×256 `u32` (1 GiB logical), chunks 128³
//! (8 MiB, 128 chunks), blocks 32³, LZ4 + shuffle; smooth labels, 1/16 of the items with a
//! random low byte.
//!
//! Scenario `b2nd-8-chunks` (C order): region [100:180, 100:180, 60:200], 8 chunks.
//!
//! Peers: `scifmt` (default options: 64 requests in flight), `download` (the object in 8 MiB
//! ranged GETs, 8 in flight, written to a temporary file, read with [`B2ndArray`]).
//!
//! Output: one `RESULT key=value …` line per peer and repetition
//! (`s3_testserver::bench::report`).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use blosc2_frame::blosc_chunk::{CParams, Codec, Filter};
use blosc2_frame::object_store::path::Path as ObjectPath;
use blosc2_frame::object_store::{GetOptions, ObjectStore, ObjectStoreExt};
use blosc2_frame::{B2ndArray, B2ndMeta, Durability, RemoteB2nd, b2nd_frame};
use futures::StreamExt;
use s3_testserver::bench::{
    self, DOWNLOAD_CONCURRENCY, Res, Sample, err, measure, mix, profile, report, selected,
};
use sha2::{Digest, Sha256};

/// b2nd array shape (C order), chunks and blocks.
const B2ND_SHAPE: [u64; 3] = [1024, 1024, 256];
const B2ND_CHUNKS: [u64; 3] = [128, 128, 128];
const B2ND_BLOCKS: [u64; 3] = [32, 32, 32];
/// Changes when the prepared data would change.
const DATA_VERSION: &str = "remote-bench frame data v2";

const B2ND_REGION: (&str, [u64; 3], [u64; 3]) = ("b2nd-8-chunks", [100, 100, 60], [180, 180, 200]);

/// Part size of the download peer's ranged GETs of large objects (as `aws s3 cp`).
const DOWNLOAD_PART: u64 = 8 << 20;

fn main() -> std::process::ExitCode {
    bench::main(prepare, run)
}

// Synthetic data: the casts truncate on purpose (hash bits to bytes), and the smooth field stays
// within 160..=1440, so no sign is lost.
#[allow(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    reason = "synthetic data, see above"
)]
fn prepare(out: &Path) -> Res<()> {
    if bench::prepared(out, "frame", DATA_VERSION) {
        eprintln!(
            "remote_bench: frame data in {} is up to date",
            out.display()
        );
        return Ok(());
    }
    let dir = out.join("data").join("frame");
    if dir.exists() {
        std::fs::remove_dir_all(&dir).map_err(err("removing old data"))?;
    }
    std::fs::create_dir_all(&dir).map_err(err("frame dir"))?;

    // 1 GiB of u32 labels of a smooth field, 1/16 of the items with a random low byte.
    let t = Instant::now();
    let [d0, d1, d2] = B2ND_SHAPE.map(|d| d as usize);
    let (p0, p1, p2) = (
        profile(d0, 53.0, 0.3),
        profile(d1, 47.0, 1.3),
        profile(d2, 29.0, 2.3),
    );
    let mut bytes = vec![0u8; d0 * d1 * d2 * 4];
    for (i, item) in bytes.chunks_exact_mut(4).enumerate() {
        let (a, b, c) = (i / (d1 * d2), (i / d2) % d1, i % d2);
        let label = ((p0[a] + p1[b] + p2[c] + 200.0) * 4.0) as u32;
        let h = mix(i as u64);
        let v = if h & 15 == 0 {
            label ^ ((h >> 8) as u32 & 0xff)
        } else {
            label
        };
        item.copy_from_slice(&v.to_le_bytes());
    }
    let meta =
        B2ndMeta::new(&B2ND_SHAPE, &B2ND_CHUNKS, &B2ND_BLOCKS, "<u4").map_err(err("b2nd meta"))?;
    let mut cp = CParams::new(Codec::Lz4, 5, 4, Filter::Shuffle);
    cp.nthreads = 2;
    let w = b2nd_frame(&bytes, &meta, 4, &cp).map_err(err("b2nd frame"))?;
    drop(bytes);
    w.write_file(dir.join("array.b2nd"), Durability::None)
        .map_err(err("frame write"))?;
    eprintln!("remote_bench: b2nd frame written in {:.1?}", t.elapsed());
    bench::mark_prepared(out, "frame", DATA_VERSION)
}

/// Download peer: HEAD for the size at open; the object in 8 MiB ranged GETs (concurrently,
/// written in order), then a local read.
async fn download(
    store: &Arc<dyn ObjectStore>,
    start: [u64; 3],
    stop: [u64; 3],
) -> Res<Sample<Vec<u8>>> {
    let tmp = tempfile::tempdir().map_err(err("tempdir"))?;
    let file = tmp.path().join("array.b2nd");
    let key = ObjectPath::from("frame/array.b2nd");
    let head_key = key.clone();
    let s = measure(
        || async { Ok(store.head(&head_key).await.map_err(err("HEAD"))?.size) },
        |size: u64| async move {
            use tokio::io::AsyncWriteExt as _;
            let mut out = tokio::fs::File::create(&file)
                .await
                .map_err(err("create"))?;
            let parts = size.div_ceil(DOWNLOAD_PART);
            let mut stream = futures::stream::iter((0..parts).map(|p| {
                let range = p * DOWNLOAD_PART..((p + 1) * DOWNLOAD_PART).min(size);
                let key = key.clone();
                async move {
                    store
                        .get_opts(
                            &key,
                            GetOptions {
                                range: Some(range.into()),
                                ..GetOptions::default()
                            },
                        )
                        .await
                        .map_err(err("GET range"))?
                        .bytes()
                        .await
                        .map_err(err("GET body"))
                }
            }))
            .buffered(DOWNLOAD_CONCURRENCY);
            while let Some(part) = stream.next().await {
                out.write_all(&part?).await.map_err(err("write"))?;
            }
            out.flush().await.map_err(err("flush"))?;
            drop(out);
            let file = file.clone();
            bench::blocking(move || {
                let a = B2ndArray::open(&file).map_err(err("local open"))?;
                a.read_region(&start, &stop).map_err(err("local read"))
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
    let frame_path = dir.join("data").join("frame").join("array.b2nd");

    // Expected result and bytes needed, from the local copy.
    let (name, start, stop) = B2ND_REGION;
    let (want, needed) = {
        let a = B2ndArray::open(&frame_path).map_err(err("local frame"))?;
        let want = a.read_region(&start, &stop).map_err(err("local region"))?;
        let meta = a.meta().clone();
        let mut needed = 0u64;
        let mut touched = 0;
        for ci in 0..meta.nchunks() {
            let per = meta.chunks_per_dim();
            let (c0, c1, c2) = (ci / (per[1] * per[2]), (ci / per[2]) % per[1], ci % per[2]);
            let hit = [c0, c1, c2].iter().enumerate().all(|(d, &c)| {
                let lo = c * meta.chunkshape[d];
                lo < stop[d] && lo + meta.chunkshape[d] > start[d]
            });
            if hit {
                touched += 1;
                let i = usize::try_from(ci).map_err(err("chunk index"))?;
                needed += a.frame().chunk(i).map_err(err("chunk"))?.len() as u64;
            }
        }
        let size = std::fs::metadata(&frame_path)
            .map_err(err("frame size"))?
            .len();
        println!(
            "EXPECT scenario={name} sha256={} needed={needed} chunks_touched={touched} frame_bytes={size} logical_bytes={}",
            hex::encode(Sha256::digest(&want)),
            B2ND_SHAPE.iter().product::<u64>() * 4
        );
        (want, needed)
    };

    // Repetition 0 is a warm-up (connections, page cache) and is reported as rep=0; the table
    // drops it. The peers alternate their order from one repetition to the next.
    for rep in 0..=reps {
        let peers: [&str; 2] = if rep % 2 == 0 {
            ["scifmt", "download"]
        } else {
            ["download", "scifmt"]
        };
        for peer in peers.into_iter().filter(|p| selected(&only, name, p)) {
            let s = if peer == "scifmt" {
                measure(
                    || async {
                        RemoteB2nd::open(
                            Arc::clone(&store),
                            ObjectPath::from("frame/array.b2nd"),
                            blosc2_frame::RemoteOptions::default(),
                        )
                        .await
                        .map_err(err("RemoteB2nd::open"))
                    },
                    |a: RemoteB2nd| async move {
                        a.read_region(&start, &stop)
                            .await
                            .map_err(err("remote region"))
                    },
                )
                .await?
            } else {
                download(&store, start, stop).await?
            };
            if s.data != want {
                return Err(format!("{name}: {peer} read different items"));
            }
            report(
                name,
                peer,
                rep,
                &s,
                needed,
                &hex::encode(Sha256::digest(&s.data)),
            );
        }
    }
    Ok(())
}
