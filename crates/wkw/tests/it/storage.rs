//! A user-supplied [`wkw::Storage`]: the fixtures served from memory read exactly like the
//! local files, and such a dataset refuses writes.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::collections::HashMap;
use std::io;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use common::*;
use wkw::{Dataset, Error, Order, ReadAt, Stamp, Storage, StorageFile};

#[derive(Debug, Default)]
struct Memory {
    files: HashMap<String, Arc<Vec<u8>>>,
    opened: Arc<AtomicUsize>,
}

struct MemFile(Arc<Vec<u8>>);

impl ReadAt for MemFile {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        let start = usize::try_from(offset).map_err(io::Error::other)?;
        let src = self
            .0
            .get(start..start + buf.len())
            .ok_or_else(|| io::Error::from(io::ErrorKind::UnexpectedEof))?;
        buf.copy_from_slice(src);
        Ok(())
    }
    fn size(&self) -> io::Result<u64> {
        Ok(self.0.len() as u64)
    }
}

impl StorageFile for MemFile {
    fn stamp(&self) -> Option<Stamp> {
        Some((self.0.len() as u64, None))
    }
}

impl Storage for Memory {
    fn open(&self, key: &str) -> io::Result<Option<Box<dyn StorageFile>>> {
        self.opened.fetch_add(1, Ordering::Relaxed);
        Ok(self
            .files
            .get(key)
            .map(|b| Box::new(MemFile(Arc::clone(b))) as Box<dyn StorageFile>))
    }
    fn display_path(&self, key: &str) -> PathBuf {
        PathBuf::from("mem:").join(key)
    }
}

fn load(root: &std::path::Path) -> Memory {
    let mut m = Memory::default();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let key = p
                    .strip_prefix(root)
                    .unwrap()
                    .to_str()
                    .unwrap()
                    .replace('\\', "/");
                m.files.insert(key, Arc::new(std::fs::read(&p).unwrap()));
            }
        }
    }
    m
}

#[test]
fn a_custom_storage_reads_like_the_file_system_and_is_read_only() {
    for name in [
        "u16_3ch_lz4_b8_f4",
        "u64_raw_b4_f2_multi",
        "f32_lz4hc_b16_f2",
    ] {
        let local = Dataset::open(testdata().join(name)).unwrap();
        let mem = load(&testdata().join(name));
        let opened = Arc::clone(&mem.opened);
        let ds = Dataset::open_storage(Box::new(mem), wkw::Options::default()).unwrap();
        assert_eq!(ds.header(), local.header());
        assert_eq!(ds.root(), std::path::Path::new("mem:"));
        for order in [Order::Fortran, Order::C] {
            let want = local.read([1, 2, 3], [40, 33, 20], order).unwrap();
            assert_eq!(
                ds.read([1, 2, 3], [40, 33, 20], order).unwrap().as_bytes(),
                want.as_bytes()
            );
        }
        assert!(opened.load(Ordering::Relaxed) > 1);
        let a = ds.read([0, 0, 0], [2, 2, 2], Order::C).unwrap();
        assert!(matches!(
            ds.write([0, 0, 0], &a.view()),
            Err(Error::Unsupported(_))
        ));
        assert!(matches!(ds.list_files(), Err(Error::Unsupported(_))));
    }
    let empty = Memory::default();
    assert!(matches!(
        Dataset::open_storage(Box::new(empty), wkw::Options::default()),
        Err(Error::NotADataset { .. })
    ));
}
