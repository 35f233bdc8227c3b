#![doc = include_str!("../README.md")]

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use blosc_chunk::{BloscConfig, ZarrsBloscCodec, ZarrsOptions};
use zarrs::array::codec::api::BytesToBytesCodecTraits;
use zarrs::array::{Array, ArrayBuilder, ArrayError};
use zarrs::metadata::Configuration;
use zarrs::storage::store::MemoryStore;
use zarrs::storage::{ListableStorageTraits, ReadableStorageTraits, StorageError};

/// Shape of every benchmark array (elements): 2 Mi elements.
pub const SHAPE: [u64; 3] = [32, 256, 256];
/// Shape of its chunks: 8 chunks.
pub const CHUNK_SHAPE: [u64; 3] = [4, 256, 256];

/// The element types of the rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DType {
    /// `uint8`.
    U8,
    /// `uint16`.
    U16,
    /// `float32`.
    F32,
}

impl DType {
    /// The Zarr v3 data type name.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::U8 => "uint8",
            Self::U16 => "uint16",
            Self::F32 => "float32",
        }
    }

    /// Bytes per element.
    #[must_use]
    pub const fn size(self) -> usize {
        match self {
            Self::U8 => 1,
            Self::U16 => 2,
            Self::F32 => 4,
        }
    }
}

/// One benchmark row: data type, Blosc compressor and shuffle mode (clevel 5, automatic
/// block size).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Row {
    /// Element type.
    pub dtype: DType,
    /// Zarr `cname`: `blosclz`, `lz4` or `zstd`.
    pub cname: &'static str,
    /// Zarr v3 `shuffle`: `shuffle` or `bitshuffle`.
    pub shuffle: &'static str,
}

impl Row {
    /// `dtype/cname+shuffle`.
    #[must_use]
    pub fn name(&self) -> String {
        format!("{}/{}+{}", self.dtype.name(), self.cname, self.shuffle)
    }

    /// The Zarr v3 `blosc` codec configuration of the row.
    #[must_use]
    pub fn configuration(&self) -> Configuration {
        let value = serde_json::json!({
            "cname": self.cname, "clevel": 5, "shuffle": self.shuffle,
            "typesize": self.dtype.size(), "blocksize": 0
        });
        match value {
            serde_json::Value::Object(map) => Configuration::from(map),
            _ => Configuration::default(),
        }
    }

    /// The array's values as little-endian bytes: a smooth 3-D signal with a little
    /// deterministic noise (compresses 2–4×, like measured data).
    #[must_use]
    pub fn data(&self) -> Vec<u8> {
        let [ni, nj, nk] = SHAPE;
        let mut out = Vec::with_capacity(element_count() * self.dtype.size());
        for i in 0..ni {
            for j in 0..nj {
                for k in 0..nk {
                    let noise = (i.wrapping_mul(2_654_435_761) ^ j.wrapping_mul(40_503) ^ k) % 7;
                    #[allow(clippy::cast_precision_loss, reason = "small integers")]
                    let x = ((i as f32) * 0.2).sin() * 40.0
                        + ((j as f32) * 0.05).cos() * 30.0
                        + (k as f32) * 0.1
                        + noise as f32;
                    match self.dtype {
                        #[allow(
                            clippy::cast_possible_truncation,
                            clippy::cast_sign_loss,
                            reason = "x + 100 lies in 0..256"
                        )]
                        DType::U8 => out.push((x + 100.0) as u8),
                        #[allow(
                            clippy::cast_possible_truncation,
                            clippy::cast_sign_loss,
                            reason = "x * 50 + 5000 lies in 0..65536"
                        )]
                        DType::U16 => out.extend(((x * 50.0 + 5000.0) as u16).to_le_bytes()),
                        DType::F32 => out.extend((x * 0.37).to_le_bytes()),
                    }
                }
            }
        }
        out
    }
}

/// Elements of the array.
#[must_use]
pub fn element_count() -> usize {
    let n: u64 = SHAPE.iter().product();
    usize::try_from(n).unwrap_or(usize::MAX)
}

/// The rows: uint8, uint16 and float32 × BloscLZ, LZ4, zstd × shuffle, bitshuffle.
#[must_use]
pub fn rows() -> Vec<Row> {
    let mut out = Vec::new();
    for dtype in [DType::U8, DType::U16, DType::F32] {
        for cname in ["blosclz", "lz4", "zstd"] {
            for shuffle in ["shuffle", "bitshuffle"] {
                out.push(Row {
                    dtype,
                    cname,
                    shuffle,
                });
            }
        }
    }
    out
}

/// blosc-chunk's codec for `row` (one thread per chunk, as zarrs' C-Blosc codec).
///
/// # Errors
/// The configuration error of blosc-chunk (none for the rows of [`rows`]).
pub fn ours(row: &Row) -> Result<Arc<dyn BytesToBytesCodecTraits>, blosc_chunk::Error> {
    let config = BloscConfig::from_v3(&row.configuration())?;
    Ok(Arc::new(ZarrsBloscCodec::new(
        config,
        ZarrsOptions::default(),
    )))
}

/// A new in-memory array of `row` with the `bytes` codec and `blosc` (`codec`).
///
/// # Errors
/// zarrs' error creating the array.
pub fn array(
    row: &Row,
    codec: Arc<dyn BytesToBytesCodecTraits>,
) -> Result<Array<MemoryStore>, zarrs::array::ArrayCreateError> {
    array_in(row, codec, Arc::new(MemoryStore::new()))
}

/// The array of `row` with `codec` over `store` (e.g. another array's store, to read its
/// chunks with a different codec implementation).
///
/// # Errors
/// zarrs' error creating the array.
pub fn array_in(
    row: &Row,
    codec: Arc<dyn BytesToBytesCodecTraits>,
    store: Arc<MemoryStore>,
) -> Result<Array<MemoryStore>, zarrs::array::ArrayCreateError> {
    let mut builder = ArrayBuilder::new(SHAPE, CHUNK_SHAPE, row.dtype.name(), 0u8);
    if row.dtype == DType::F32 {
        builder = ArrayBuilder::new(SHAPE, CHUNK_SHAPE, row.dtype.name(), 0.0f32);
    } else if row.dtype == DType::U16 {
        builder = ArrayBuilder::new(SHAPE, CHUNK_SHAPE, row.dtype.name(), 0u16);
    }
    builder.bytes_to_bytes_codecs(vec![codec]).build(store, "/")
}

/// Every stored object of `array`'s store by key (chunks only: metadata is never stored here).
///
/// # Errors
/// The store's error.
pub fn stored(array: &Array<MemoryStore>) -> Result<BTreeMap<String, Vec<u8>>, StorageError> {
    let store = array.storage();
    let mut out = BTreeMap::new();
    for key in store.list()? {
        if let Some(bytes) = store.get(&key)? {
            out.insert(key.to_string(), bytes.to_vec());
        }
    }
    Ok(out)
}

/// Codec options with zarrs' concurrency knob (`concurrent_target`) at `threads`.
#[must_use]
pub fn options(threads: usize) -> zarrs::array::codec::api::CodecOptions {
    zarrs::array::codec::api::CodecOptions::default().with_concurrent_target(threads)
}

/// Writes the whole array from `data` (little-endian bytes of the row's type).
///
/// # Errors
/// zarrs' error.
pub fn write(array: &Array<MemoryStore>, data: &[u8], threads: usize) -> Result<(), ArrayError> {
    let bytes = zarrs::array::ArrayBytes::new_flen(data.to_vec());
    array.store_array_subset_opt(&array.subset_all(), bytes, &options(threads))
}

/// Reads the whole array as little-endian bytes.
///
/// # Errors
/// zarrs' error.
pub fn read(array: &Array<MemoryStore>, threads: usize) -> Result<Vec<u8>, ArrayError> {
    let bytes: zarrs::array::ArrayBytes<'static> =
        array.retrieve_array_subset_opt(&array.subset_all(), &options(threads))?;
    Ok(bytes
        .into_fixed()
        .map(std::borrow::Cow::into_owned)
        .unwrap_or_default())
}

/// Runs `a` and `b` alternately (`a` first in even repetitions, `b` first in odd ones) after
/// `warmup` rounds and returns the median time of each over `reps` rounds, so that the slow
/// drifts of a shared machine hit both alike.
pub fn interleave(
    warmup: usize,
    reps: usize,
    mut a: impl FnMut(),
    mut b: impl FnMut(),
) -> (Duration, Duration) {
    let (mut ta, mut tb) = (Vec::with_capacity(reps), Vec::with_capacity(reps));
    for i in 0..warmup + reps {
        let (da, db) = if i % 2 == 0 {
            let da = timed(&mut a);
            (da, timed(&mut b))
        } else {
            let db = timed(&mut b);
            (timed(&mut a), db)
        };
        if i >= warmup {
            ta.push(da);
            tb.push(db);
        }
    }
    (median(ta), median(tb))
}

fn timed(f: &mut impl FnMut()) -> Duration {
    let t = Instant::now();
    f();
    t.elapsed()
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v.get(v.len() / 2).copied().unwrap_or_default()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    /// Rows of each data type, compressor and shuffle mode round-trip through zarrs with
    /// blosc-chunk's codec, over several chunks (three rows: debug builds are slow).
    #[test]
    fn rows_round_trip_with_our_codec() {
        for row in rows().into_iter().step_by(7) {
            let array = array(&row, ours(&row).unwrap()).unwrap();
            let data = row.data();
            write(&array, &data, 2).unwrap();
            assert_eq!(stored(&array).unwrap().len(), 8, "{}", row.name());
            assert_eq!(read(&array, 1).unwrap(), data, "{}", row.name());
        }
    }
}
