//! Proptest: random sequences of writes (random boxes across files and blocks, all voxel types,
//! 1–3 channels, both orders, all block types) read back equal to an in-memory model.
// Helpers outside #[test] functions unwrap and panic like the tests themselves.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
#![allow(clippy::cast_possible_truncation)] // small test indices and wrapping test bytes

use proptest::prelude::*;
use wkw::{Array, ArrayViewMut, BlockType, Dataset, Header, Order, VoxelType};

/// The model: a dense Fortran (C, X, Y, Z) array over `[0, SIDE)³`.
const SIDE: u32 = 24;

#[derive(Debug, Clone)]
struct WriteOp {
    off: [u32; 3],
    shape: [u32; 3],
    order: Order,
    seed: u8,
}

fn write_op() -> impl Strategy<Value = WriteOp> {
    (
        [0u32..SIDE, 0u32..SIDE, 0u32..SIDE],
        [1u32..14, 1u32..14, 1u32..14],
        any::<bool>(),
        any::<u8>(),
    )
        .prop_map(|(off, shape, c, seed)| {
            let shape = [0, 1, 2].map(|a| shape[a].min(SIDE - off[a]));
            WriteOp {
                off,
                shape,
                order: if c { Order::C } else { Order::Fortran },
                seed,
            }
        })
}

fn header() -> impl Strategy<Value = Header> {
    (0usize..10, 1u8..4, 0u32..4, 0u32..3, 0usize..3).prop_map(|(vt, ch, b, f, bt)| {
        let bt = [BlockType::Raw, BlockType::Lz4, BlockType::Lz4Hc][bt];
        Header::new(VoxelType::ALL[vt], ch, 1 << b, 1 << f, bt).unwrap()
    })
}

fn model_offset(h: &Header, c: usize, p: [u32; 3]) -> usize {
    let ts = usize::from(h.voxel_type().size());
    let vs = usize::from(h.voxel_size());
    let s = SIDE as usize;
    ((p[2] as usize * s + p[1] as usize) * s + p[0] as usize) * vs + c * ts
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn writes_read_back_like_the_model(
        h in header(),
        ops in proptest::collection::vec(write_op(), 1..4),
        read in write_op(),
        mode in 0usize..3,
    ) {
        // Every way of running: the calling thread only, rayon's global pool and a given pool
        // (both joined by the calling thread, which is outside them).
        #[cfg(feature = "parallel")]
        static POOL: std::sync::OnceLock<rayon::ThreadPool> = std::sync::OnceLock::new();
        let threads = match mode {
            0 => wkw::Threads::Caller,
            #[cfg(feature = "parallel")]
            2 => wkw::Threads::Pool(POOL.get_or_init(|| {
                rayon::ThreadPoolBuilder::new().num_threads(3).build().unwrap()
            })),
            _ => wkw::Threads::Rayon,
        };
        let opts = wkw::Options::default().with_threads(threads);
        let dir = tempfile::tempdir().unwrap();
        let ds = Dataset::create_with(dir.path().join("ds"), h, opts.clone()).unwrap();
        let vs = usize::from(h.voxel_size());
        let ts = usize::from(h.voxel_type().size());
        let nc = usize::from(h.num_channels());
        let s = SIDE as usize;
        let mut model = vec![0u8; s * s * s * vs];
        for op in &ops {
            // Fortran data with distinct bytes, converted to the op's order.
            let n: usize = op.shape.iter().map(|&v| v as usize).product::<usize>() * vs;
            let bytes: Vec<u8> = (0..n).map(|i| (i as u8).wrapping_mul(31).wrapping_add(op.seed)).collect();
            let f = Array::from_bytes(h.voxel_type(), h.num_channels(), op.shape, Order::Fortran, bytes).unwrap();
            for z in 0..op.shape[2] {
                for y in 0..op.shape[1] {
                    for x in 0..op.shape[0] {
                        for c in 0..nc {
                            let src = f.offset_of(c as u8, [x, y, z]).unwrap();
                            let dst = model_offset(&h, c, [op.off[0] + x, op.off[1] + y, op.off[2] + z]);
                            model[dst..dst + ts].copy_from_slice(&f.as_bytes()[src..src + ts]);
                        }
                    }
                }
            }
            ds.write(op.off, &f.to_order(op.order).view()).unwrap();
        }
        // Whole model region, both orders, from a fresh handle too.
        let whole = ds.read([0; 3], [SIDE; 3], Order::Fortran).unwrap();
        prop_assert!(whole.as_bytes() == &model[..]);
        let fresh = Dataset::open_with(dir.path().join("ds"), opts.clone()).unwrap();
        let c = fresh.read([0; 3], [SIDE; 3], Order::C).unwrap();
        prop_assert!(c.to_order(Order::Fortran).as_bytes() == &model[..]);
        // A random box via read_into in the op's order.
        let mut buf = vec![0x5au8; read.shape.iter().map(|&v| v as usize).product::<usize>() * vs];
        let mut view = ArrayViewMut::new(h.voxel_type(), h.num_channels(), read.shape, read.order, &mut buf).unwrap();
        ds.read_into(read.off, &mut view).unwrap();
        let got = Array::from_bytes(h.voxel_type(), h.num_channels(), read.shape, read.order, buf).unwrap();
        let got = got.to_order(Order::Fortran);
        for z in 0..read.shape[2] {
            for y in 0..read.shape[1] {
                for x in 0..read.shape[0] {
                    for ch in 0..nc {
                        let g = got.offset_of(ch as u8, [x, y, z]).unwrap();
                        let m = model_offset(&h, ch, [read.off[0] + x, read.off[1] + y, read.off[2] + z]);
                        prop_assert_eq!(&got.as_bytes()[g..g + ts], &model[m..m + ts]);
                    }
                }
            }
        }
        let report = wkw::verify(dir.path().join("ds"), opts, &|_| ()).unwrap();
        prop_assert!(report.is_ok());
    }
}

/// Concurrent writers of the same compressed file (the reference shares one tmp name): with
/// the lock and unique temporary names every write lands completely.
#[test]
fn concurrent_writers_of_one_compressed_file() {
    let dir = tempfile::tempdir().unwrap();
    let h = Header::new(VoxelType::U8, 1, 4, 4, BlockType::Lz4).unwrap();
    let ds = Dataset::create(dir.path(), h).unwrap();
    std::thread::scope(|s| {
        for t in 0..4u8 {
            let ds = &ds;
            s.spawn(move || {
                for i in 0..4u8 {
                    let a = Array::from_bytes(
                        VoxelType::U8,
                        1,
                        [4, 4, 4],
                        Order::C,
                        vec![t * 10 + i + 1; 64],
                    )
                    .unwrap();
                    ds.write([u32::from(t) * 4, u32::from(i) * 4, 0], &a.view())
                        .unwrap();
                }
            });
        }
    });
    let all = ds.read([0; 3], [16, 16, 4], Order::Fortran).unwrap();
    for t in 0..4u32 {
        for i in 0..4u32 {
            let off = all.offset_of(0, [t * 4, i * 4, 0]).unwrap();
            assert_eq!(all.as_bytes()[off], u8::try_from(t * 10 + i + 1).unwrap());
        }
    }
    let names: Vec<_> = std::fs::read_dir(dir.path().join("z0/y0"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert!(
        names.iter().all(|n| !n.to_string_lossy().ends_with(".tmp")),
        "{names:?}"
    );
}

#[test]
fn dataset_is_send_and_sync() {
    fn check<T: Send + Sync>() {}
    check::<Dataset>();
}

#[test]
fn fsync_durability_writes_and_reads_back() {
    for bt in [BlockType::Raw, BlockType::Lz4Hc] {
        let dir = tempfile::tempdir().unwrap();
        let opts = wkw::Options::default().with_durability(wkw::Durability::Fsync);
        let h = Header::new(VoxelType::U32, 2, 4, 2, bt).unwrap();
        let ds = Dataset::create_with(dir.path(), h, opts.clone()).unwrap();
        let bytes: Vec<u8> = (0..5 * 6 * 7 * 8u32).map(|i| (i % 251) as u8).collect();
        let a = Array::from_bytes(VoxelType::U32, 2, [5, 6, 7], Order::C, bytes).unwrap();
        ds.write([6, 7, 3], &a.view()).unwrap();
        assert_eq!(ds.read([6, 7, 3], [5, 6, 7], Order::C).unwrap(), a);
        let reopened = Dataset::open_with(dir.path(), opts).unwrap();
        assert_eq!(reopened.read([6, 7, 3], [5, 6, 7], Order::C).unwrap(), a);
    }
}

/// The header/jump-table cache never serves a stale jump table: a file replaced behind the
/// dataset's back (another process writing it) is re-read.
#[test]
fn cache_notices_replaced_files() {
    let dir = tempfile::tempdir().unwrap();
    let h = Header::new(VoxelType::U8, 1, 4, 2, BlockType::Lz4).unwrap();
    let reader = Dataset::create(dir.path(), h).unwrap();
    let writer = Dataset::open(dir.path()).unwrap();
    for round in 1..=5u8 {
        let a = Array::from_bytes(VoxelType::U8, 1, [8, 8, 8], Order::C, vec![round; 512]).unwrap();
        // Different compressed sizes each round (a varying prefix).
        let mut b = a.clone();
        b.as_bytes_mut()[..usize::from(round) * 37]
            .iter_mut()
            .enumerate()
            .for_each(|(i, v)| *v = i as u8);
        writer.write([0; 3], &b.view()).unwrap();
        for _ in 0..2 {
            assert_eq!(reader.read([0; 3], [8, 8, 8], Order::C).unwrap(), b);
        }
    }
}

/// A C-order read of a box too tall for one column stage (split in z, one segment per row)
/// equals the Fortran-order read, across many files, some missing; `read_into` too.
#[test]
fn tall_c_order_reads_are_split_in_z() {
    let dir = tempfile::tempdir().unwrap();
    // 2 channels of u16 and 32³ blocks: 4 KiB of column stage per voxel of z, so a box taller
    // than 2048 voxels is split; 64-voxel files, so it spans dozens of them.
    let h = Header::new(VoxelType::U16, 2, 32, 2, BlockType::Lz4).unwrap();
    let ds = Dataset::create(dir.path(), h).unwrap();
    let shape = [3u32, 2, 3000];
    let n = 2 * 2 * shape.iter().map(|&s| s as usize).product::<usize>();
    let bytes: Vec<u8> = (0..n).map(|i| (i * 7 % 251) as u8).collect();
    let written = Array::from_bytes(VoxelType::U16, 2, shape, Order::Fortran, bytes).unwrap();
    ds.write([30, 31, 100], &written.view()).unwrap();
    assert_eq!(
        ds.read([30, 31, 100], shape, Order::C).unwrap(),
        written.to_order(Order::C)
    );
    // Past the written part: files that do not exist read as zeros.
    let (at, wide) = ([29, 30, 50], [5u32, 4, 3100]);
    let c = ds.read(at, wide, Order::C).unwrap();
    assert_eq!(
        ds.read(at, wide, Order::Fortran)
            .unwrap()
            .to_order(Order::C),
        c
    );
    let mut buf = vec![0xAA; c.as_bytes().len()];
    let mut view = ArrayViewMut::new(VoxelType::U16, 2, wide, Order::C, &mut buf).unwrap();
    ds.read_into(at, &mut view).unwrap();
    assert_eq!(buf, c.as_bytes());
}

/// A compressed write removes the `<name>.wkw_tmp` that an interrupted write of the reference
/// implementation (wkw 1.1.24) left beside the file, as the reference's own next write does; a
/// raw write (in place, for both) leaves it, as the reference does.
#[test]
fn compressed_writes_remove_the_references_leftover() {
    for (bt, removed) in [
        (BlockType::Lz4, true),
        (BlockType::Lz4Hc, true),
        (BlockType::Raw, false),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let ds =
            Dataset::create(dir.path(), Header::new(VoxelType::U8, 1, 8, 2, bt).unwrap()).unwrap();
        let folder = dir.path().join("z0").join("y0");
        std::fs::create_dir_all(&folder).unwrap();
        let leftover = folder.join("x0.wkw_tmp");
        std::fs::write(&leftover, b"an interrupted write").unwrap();
        let a =
            Array::from_bytes(VoxelType::U8, 1, [4, 4, 4], Order::Fortran, vec![3; 64]).unwrap();
        ds.write([0, 0, 0], &a.view()).unwrap();
        assert_eq!(!leftover.exists(), removed, "{bt:?}");
        assert_eq!(ds.read([0, 0, 0], [4, 4, 4], Order::Fortran).unwrap(), a);
        let listed: Vec<_> = ds
            .list_files()
            .unwrap()
            .into_iter()
            .map(|(i, _)| i)
            .collect();
        assert_eq!(listed, [[0, 0, 0]], "{bt:?}");
    }
}
