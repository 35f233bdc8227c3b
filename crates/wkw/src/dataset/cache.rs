//! The cache of parsed headers/jump tables of recently read data files, keyed by file index
//! and validated against the file's [`Stamp`] (length + modification time; an object's ETag for
//! remote datasets), so a file replaced
//! by another writer is parsed again.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::format::file::FileMeta;
use crate::io::storage::Stamp;

/// Parsed headers/jump tables of recently read files, validated against the file's stamp.
#[derive(Debug)]
pub(crate) struct MetaCache<S = Stamp> {
    capacity: usize,
    inner: Mutex<CacheInner<S>>,
}

#[derive(Debug)]
struct CacheInner<S> {
    tick: u64,
    map: HashMap<[u32; 3], (S, Arc<FileMeta>, u64)>,
}

impl<S: PartialEq> MetaCache<S> {
    pub(crate) fn new(capacity: usize) -> Self {
        Self {
            capacity,
            inner: Mutex::new(CacheInner {
                tick: 0,
                map: HashMap::new(),
            }),
        }
    }

    pub(crate) fn get(&self, index: [u32; 3], stamp: Option<S>) -> Option<Arc<FileMeta>> {
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

    pub(crate) fn put(&self, index: [u32; 3], stamp: Option<S>, meta: &Arc<FileMeta>) {
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

    /// The entry of `index` whatever its stamp, with the stamp it was stored under (remote
    /// reads validate it with a conditional request instead of comparing stamps first).
    #[cfg(feature = "object_store")]
    pub(crate) fn latest(&self, index: [u32; 3]) -> Option<(S, Arc<FileMeta>)>
    where
        S: Clone,
    {
        let mut g = self.inner.lock().ok()?;
        g.tick += 1;
        let tick = g.tick;
        let (s, meta, used) = g.map.get_mut(&index)?;
        *used = tick;
        Some((s.clone(), Arc::clone(meta)))
    }

    pub(crate) fn invalidate(&self, index: [u32; 3]) {
        if let Ok(mut g) = self.inner.lock() {
            g.map.remove(&index);
        }
    }
}
