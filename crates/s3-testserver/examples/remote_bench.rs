//! Remote-read benchmark: scifmt's remote readers against "download the whole files,
//! then read locally", on the `s3-testserver` binary with injected latency. Driven by
//! `cargo xtask remote-bench` (which also runs the tensorstore peer and prints the table); not
//! a test and not part of CI.
//!
//! ```text
//! remote_bench prepare --out DIR        # DIR/data/{wkw,frame}, DIR/volume.u8 (skipped if present)
//! remote_bench run --data DIR [--reps N] [--only SCENARIO:PEER]
//!                                        # needs the server's environment (AWS_*, S3_TESTSERVER_*)
//! ```
//!
//! Data:
//! - `wkw`: a 512³ `u8` dataset, LZ4, block_len 32, file_len 4 (files of 128³ voxels, 64 files),
//!   smooth labels with 1/32 of the voxels random.
//!   `volume.u8` holds the same voxels raw (x fastest) for the Zarr copy the tensorstore peer reads.
//! - `frame/array.b2nd`: a b2nd array of 1024×1024×256 `u32` (1 GiB logical), chunks 128³
//!   (8 MiB, 128 chunks), blocks 32³, LZ4 + shuffle; smooth labels, 1/16 of the items with a
//!   random low byte.
//!
//! Scenarios (box offsets in x, y, z; b2nd in C order):
//! - `wkw-256-aligned`: 256³ at (128, 128, 128): 8 whole files;
//! - `wkw-256-unaligned`: 256³ at (100, 60, 200): parts of 27 files;
//! - `b2nd-8-chunks`: region [100:180, 100:180, 60:200]: 8 chunks.
//!
//! Peers: `scifmt` (the remote readers with default options: 64 requests in flight),
//! `scifmt-c16` (wkw only: `RemoteOptions::concurrency(16)`), `download`
//! (whole objects fetched with 8 requests in flight, written to a temporary directory, read
//! with the local reader).
//!
//! Output: one `RESULT key=value …` line per scenario, peer and repetition (see `report`).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use blosc2_frame::blosc_chunk::{CParams, Codec, Filter};
use blosc2_frame::{B2ndArray, B2ndMeta, Durability, RemoteB2nd, b2nd_frame};
use futures::{StreamExt, TryStreamExt};
use object_store::aws::AmazonS3Builder;
use object_store::path::Path as ObjectPath;
use object_store::{GetOptions, ObjectStore, ObjectStoreExt};
use sha2::{Digest, Sha256};
use wkw::{Array, BlockType, Dataset, Header, Order, RemoteDataset, VoxelType};

type Res<T> = Result<T, String>;

/// Side of the wkw volume.
const SIDE: u32 = 512;
/// b2nd array shape (C order), chunks and blocks.
const B2ND_SHAPE: [u64; 3] = [1024, 1024, 256];
const B2ND_CHUNKS: [u64; 3] = [128, 128, 128];
const B2ND_BLOCKS: [u64; 3] = [32, 32, 32];
/// Changes when the prepared data would change.
const DATA_VERSION: &str = "remote-bench data v2";

const WKW_BOXES: [(&str, [u32; 3], [u32; 3]); 2] = [
    ("wkw-256-aligned", [128, 128, 128], [256, 256, 256]),
    ("wkw-256-unaligned", [100, 60, 200], [256, 256, 256]),
];
const B2ND_REGION: (&str, [u64; 3], [u64; 3]) = ("b2nd-8-chunks", [100, 100, 60], [180, 180, 200]);

/// Concurrency of the download peer (the same as the remote readers' default).
const DOWNLOAD_CONCURRENCY: usize = 8;
/// Part size of the download peer's ranged GETs of large objects (as `aws s3 cp`).
const DOWNLOAD_PART: u64 = 8 << 20;

fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("prepare") => flag(&args, "--out").and_then(|d| prepare(Path::new(&d))),
        Some("run") => flag(&args, "--data").and_then(|d| {
            let reps = flag(&args, "--reps")
                .ok()
                .map_or(Ok(3), |r| r.parse().map_err(|e| format!("--reps: {e}")))?;
            let only = flag(&args, "--only").unwrap_or_default();
            run(Path::new(&d), reps, &only)
        }),
        _ => Err(
            "usage: remote_bench prepare --out DIR | run --data DIR [--reps N] [--only SCENARIO:PEER]"
                .to_owned(),
        ),
    };
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("remote_bench: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

fn flag(args: &[String], name: &str) -> Res<String> {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .cloned()
        .ok_or_else(|| format!("missing {name}"))
}

fn err<E: std::fmt::Display>(what: &str) -> impl FnOnce(E) -> String + '_ {
    move |e| format!("{what}: {e}")
}

// ---------------------------------------------------------------------------------------------
// Data

/// A cheap deterministic hash (for the random voxels).
fn mix(mut x: u64) -> u64 {
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^= x >> 33;
    x = x.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    x ^ (x >> 33)
}

/// A smooth profile along one axis.
fn profile(n: usize, period: f64, phase: f64) -> Vec<f64> {
    (0..n)
        .map(|i| 40.0 * ((i as f64) / period + phase).sin())
        .collect()
}

// Synthetic data: the casts truncate on purpose (hash bits to bytes), and the smooth fields stay
// within 40..=360 (u8 after / 6) and 160..=1440 (u32), so no sign is lost.
#[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
fn prepare(out: &Path) -> Res<()> {
    let stamp = out.join("PREPARED");
    if std::fs::read_to_string(&stamp).is_ok_and(|s| s == DATA_VERSION) {
        eprintln!("remote_bench: data in {} is up to date", out.display());
        return Ok(());
    }
    let data = out.join("data");
    if data.exists() {
        std::fs::remove_dir_all(&data).map_err(err("removing old data"))?;
    }
    std::fs::create_dir_all(&data).map_err(err("creating the data directory"))?;

    // wkw volume: labels of a smooth field, 1/8 of the voxels random.
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
    let ds = Dataset::create(data.join("wkw"), header).map_err(err("wkw create"))?;
    ds.write([0, 0, 0], &vol.view()).map_err(err("wkw write"))?;
    std::fs::write(out.join("volume.u8"), vol.as_bytes()).map_err(err("volume.u8"))?;
    eprintln!("remote_bench: wkw volume written in {:.1?}", t.elapsed());
    drop(vol);

    // b2nd: 1 GiB of u32 labels of a smooth field, 1/16 of the items with a random low byte.
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
    std::fs::create_dir_all(data.join("frame")).map_err(err("frame dir"))?;
    w.write_file(data.join("frame").join("array.b2nd"), Durability::None)
        .map_err(err("frame write"))?;
    eprintln!("remote_bench: b2nd frame written in {:.1?}", t.elapsed());

    std::fs::write(&stamp, DATA_VERSION).map_err(err("stamp"))
}

// ---------------------------------------------------------------------------------------------
// The server's control endpoint

/// Minimal HTTP GET of the control endpoint (`S3_TESTSERVER_CONTROL`).
fn control(path: &str) -> Res<String> {
    use std::io::{Read, Write};
    let base = std::env::var("S3_TESTSERVER_CONTROL").map_err(err("S3_TESTSERVER_CONTROL"))?;
    let addr = base.trim_start_matches("http://").trim_end_matches('/');
    let mut s = std::net::TcpStream::connect(addr).map_err(err("control connect"))?;
    write!(s, "GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n").map_err(err("control write"))?;
    let mut out = String::new();
    s.read_to_string(&mut out).map_err(err("control read"))?;
    let (head, body) = out.split_once("\r\n\r\n").ok_or("control: bad answer")?;
    if !head.starts_with("HTTP/1.0 200") {
        return Err(format!("control {path}: {head}"));
    }
    Ok(body.to_owned())
}

/// Counters of the requests since the last reset.
#[derive(Debug, Default, Clone, Copy)]
struct Counts {
    requests: u64,
    critical_path: u64,
    bytes: u64,
    errors: u64,
    /// First request's arrival to the last response's end, on the server (ms).
    span_ms: f64,
}

fn stats() -> Res<Counts> {
    let body = control("/stats")?;
    let field = |name: &str| -> Res<u64> { number(&body, name) };
    Ok(Counts {
        requests: field("requests")?,
        critical_path: field("critical_path")?,
        bytes: field("bytes_sent")?,
        errors: field("errors")?,
        span_ms: number(&body, "span_ms")?,
    })
}

/// A number field of the `/stats` JSON.
fn number<T: std::str::FromStr>(body: &str, name: &str) -> Res<T>
where
    T::Err: std::fmt::Display,
{
    let key = format!("\"{name}\":");
    let at = body
        .find(&key)
        .ok_or_else(|| format!("stats: no {name} in {body}"))?;
    body[at + key.len()..]
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '.')
        .collect::<String>()
        .parse()
        .map_err(|e| format!("stats {name}: {e}"))
}

fn reset() -> Res<()> {
    control("/reset").map(drop)
}

// ---------------------------------------------------------------------------------------------
// Measurement

/// One measured operation: open, then read.
struct Sample {
    open_s: f64,
    read_s: f64,
    open: Counts,
    read: Counts,
    data: Output,
}

/// What a read returns (kept as the reader made it: copying it is not part of the read).
enum Output {
    Wkw(Array),
    Bytes(Vec<u8>),
}

impl Output {
    fn as_bytes(&self) -> &[u8] {
        match self {
            Self::Wkw(a) => a.as_bytes(),
            Self::Bytes(b) => b,
        }
    }
}

fn sha256_hex(data: &[u8]) -> String {
    hex::encode(Sha256::digest(data))
}

#[allow(clippy::too_many_arguments)]
fn report(scenario: &str, peer: &str, rep: usize, s: &Sample, needed: u64, hash: &str) {
    println!(
        "RESULT scenario={scenario} peer={peer} rep={rep} open_s={:.6} read_s={:.6} \
         open_requests={} open_rt={} open_bytes={} read_requests={} read_rt={} read_bytes={} \
         read_span_ms={:.3} errors={} needed={needed} sha256={hash}",
        s.open_s,
        s.read_s,
        s.open.requests,
        s.open.critical_path,
        s.open.bytes,
        s.read.requests,
        s.read.critical_path,
        s.read.bytes,
        s.read.span_ms,
        s.open.errors + s.read.errors,
    );
}

/// Times `open` and then `read` (which gets open's output), with the server's counters of each.
async fn measure<O, F1, F2, Fut1, Fut2>(open: F1, read: F2) -> Res<Sample>
where
    F1: FnOnce() -> Fut1,
    Fut1: std::future::Future<Output = Res<O>>,
    F2: FnOnce(O) -> Fut2,
    Fut2: std::future::Future<Output = Res<Output>>,
{
    reset()?;
    let t = Instant::now();
    let opened = open().await?;
    let open_s = t.elapsed().as_secs_f64();
    let open_counts = stats()?;
    reset()?;
    let t = Instant::now();
    let data = read(opened).await?;
    let read_s = t.elapsed().as_secs_f64();
    let read_counts = stats()?;
    Ok(Sample {
        open_s,
        read_s,
        open: open_counts,
        read: read_counts,
        data,
    })
}

fn store_from_env() -> Res<Arc<dyn ObjectStore>> {
    let var = |k: &str| {
        std::env::var(k).map_err(|_| format!("{k} is not set (run under the server's environment)"))
    };
    let s3 = AmazonS3Builder::new()
        .with_endpoint(var("AWS_ENDPOINT_URL")?)
        .with_bucket_name(var("S3_TESTSERVER_BUCKET")?)
        .with_access_key_id(var("AWS_ACCESS_KEY_ID")?)
        .with_secret_access_key(var("AWS_SECRET_ACCESS_KEY")?)
        .with_region(var("AWS_REGION")?)
        .with_allow_http(true)
        .with_virtual_hosted_style_request(false)
        .build()
        .map_err(err("S3 client"))?;
    Ok(Arc::new(s3))
}

/// Compressed bytes of the blocks of `local` that the box touches, plus the touched files'
/// headers and jump tables.
fn wkw_needed(local: &Dataset, offset: [u32; 3], shape: [u32; 3]) -> Res<u64> {
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

/// GET a whole object into memory.
async fn get_all(store: &Arc<dyn ObjectStore>, key: &ObjectPath) -> Res<bytes::Bytes> {
    store
        .get(key)
        .await
        .map_err(err("GET"))?
        .bytes()
        .await
        .map_err(err("GET body"))
}

/// Download peer, wkw: `header.wkw` at open; the touched files whole (concurrently), then a
/// local read.
async fn wkw_download(
    store: &Arc<dyn ObjectStore>,
    offset: [u32; 3],
    shape: [u32; 3],
) -> Res<Sample> {
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
            tokio::task::spawn_blocking(move || {
                let ds = Dataset::open(&root2).map_err(err("local open"))?;
                let a = ds
                    .read(offset, shape, Order::Fortran)
                    .map_err(err("local read"))?;
                Ok(Output::Wkw(a))
            })
            .await
            .map_err(err("join"))?
        },
    )
    .await?;
    drop(tmp);
    Ok(s)
}

/// Download peer, frame: HEAD for the size at open; the object in 8 MiB ranged GETs
/// (concurrently, written in order), then a local read.
async fn b2nd_download(
    store: &Arc<dyn ObjectStore>,
    start: [u64; 3],
    stop: [u64; 3],
) -> Res<Sample> {
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
            tokio::task::spawn_blocking(move || {
                let a = B2ndArray::open(&file).map_err(err("local open"))?;
                a.read_region(&start, &stop)
                    .map(Output::Bytes)
                    .map_err(err("local read"))
            })
            .await
            .map_err(err("join"))?
        },
    )
    .await?;
    drop(tmp);
    Ok(s)
}

fn run(dir: &Path, reps: usize, only: &str) -> Res<()> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(err("runtime"))?;
    rt.block_on(run_async(dir.to_path_buf(), reps, only))
}

/// Whether `scenario`/`peer` is selected by `only` (empty: all; else a substring of
/// `scenario:peer`).
fn selected(only: &str, scenario: &str, peer: &str) -> bool {
    only.is_empty() || format!("{scenario}:{peer}").contains(only)
}

async fn run_async(dir: PathBuf, reps: usize, only: &str) -> Res<()> {
    let store = store_from_env()?;
    let data = dir.join("data");
    let local = Dataset::open(data.join("wkw")).map_err(err("local wkw"))?;
    let frame_path = data.join("frame").join("array.b2nd");

    // Expected results and bytes needed, from the local copies.
    let mut wkw_expected = Vec::new();
    for (name, offset, shape) in WKW_BOXES {
        let want = local
            .read(offset, shape, Order::Fortran)
            .map_err(err("local read"))?;
        let needed = wkw_needed(&local, offset, shape)?;
        let hash = sha256_hex(want.as_bytes());
        println!("EXPECT scenario={name} sha256={hash} needed={needed}");
        wkw_expected.push((want.as_bytes().to_vec(), needed, hash));
    }
    let (name, start, stop) = B2ND_REGION;
    let (b2nd_want, b2nd_needed) = {
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
            sha256_hex(&want),
            B2ND_SHAPE.iter().product::<u64>() * 4
        );
        (want, needed)
    };

    // Repetition 0 is a warm-up (connections, page cache) and is reported as rep=0; the table
    // drops it. Peers alternate their order from one repetition to the next.
    for rep in 0..=reps {
        for (i, (name, offset, shape)) in WKW_BOXES.iter().enumerate() {
            let (want, needed, hash) = &wkw_expected[i];
            let mut peers = ["scifmt", "scifmt-c16", "download"];
            peers.rotate_left(rep % 3);
            for peer in peers.into_iter().filter(|p| selected(only, name, p)) {
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
                            let a = ds
                                .read(*offset, *shape, Order::Fortran)
                                .await
                                .map_err(err("remote read"))?;
                            Ok(Output::Wkw(a))
                        },
                    )
                    .await?
                } else {
                    wkw_download(&store, *offset, *shape).await?
                };
                if s.data.as_bytes() != want.as_slice() {
                    return Err(format!("{name}: {peer} read different voxels"));
                }
                report(name, peer, rep, &s, *needed, hash);
            }
        }
        let peers: [&str; 2] = if rep % 2 == 0 {
            ["scifmt", "download"]
        } else {
            ["download", "scifmt"]
        };
        for peer in peers.into_iter().filter(|p| selected(only, name, p)) {
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
                            .map(Output::Bytes)
                            .map_err(err("remote region"))
                    },
                )
                .await?
            } else {
                b2nd_download(&store, start, stop).await?
            };
            if s.data.as_bytes() != b2nd_want.as_slice() {
                return Err(format!("{name}: {peer} read different items"));
            }
            report(
                name,
                peer,
                rep,
                &s,
                b2nd_needed,
                &sha256_hex(s.data.as_bytes()),
            );
        }
    }
    Ok(())
}
