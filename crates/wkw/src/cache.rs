//! The cache of parsed headers/jump tables of recently read data files, keyed by file index
//! and validated against the file's [`Stamp`] (length + modification time), so a file replaced
//! by another writer is parsed again.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::file::FileMeta;
use crate::storage::Stamp;

/// Parsed headers/jump tables of recently read files, validated against the file's stamp.
#[derive(Debug)]
pub(crate) struct MetaCache {
    capacity: usize,
    inner: Mutex<CacheInner>,
}

#[derive(Debug, Default)]
struct CacheInner {
    tick: u64,
    map: HashMap<[u32; 3], (Stamp, Arc<FileMeta>, u64)>,
}

impl MetaCache {
    pub(crate) fn new(capacity: usize) -> Self {
        Self {
            capacity,
            inner: Mutex::new(CacheInner::default()),
        }
    }

    pub(crate) fn get(&self, index: [u32; 3], stamp: Option<Stamp>) -> Option<Arc<FileMeta>> {
        let stamp = stamp?;
        let mut g = self.inner.lock().ok()?;
        g.tick += 1;
        let tick = g.tick;
        match g.map.get_mut(&index) {
            Some((s, meta, used)) if *s == stamp => {
                *used = tick;
                Some(Arc::clone(meta))
            }
            _ => None,
        }
    }

    pub(crate) fn put(&self, index: [u32; 3], stamp: Option<Stamp>, meta: &Arc<FileMeta>) {
        let (Some(stamp), true) = (stamp, self.capacity > 0) else {
            return;
        };
        let Ok(mut g) = self.inner.lock() else {
            return;
        };
        g.tick += 1;
        let tick = g.tick;
        if g.map.len() >= self.capacity && !g.map.contains_key(&index) {
            let oldest = g
                .map
                .iter()
                .min_by_key(|(_, (_, _, u))| *u)
                .map(|(k, _)| *k);
            if let Some(k) = oldest {
                g.map.remove(&k);
            }
        }
        g.map.insert(index, (stamp, Arc::clone(meta), tick));
    }

    pub(crate) fn invalidate(&self, index: [u32; 3]) {
        if let Ok(mut g) = self.inner.lock() {
            g.map.remove(&index);
        }
    }
}
