//! The C-Blosc2 plugin fixtures in `testdata/blosc/plugins/` (b2nd arrays made by
//! python-blosc2 4.14.1), read by both blosc-chunk's and blosc2-frame's tests: the manifest's
//! entries with the parameters each array was compressed with, as the numbers C-Blosc2 uses
//! (each crate maps them to its own types), and the entries' files.

use std::path::PathBuf;

use serde_json::Value;

/// One array of `testdata/blosc/plugins/manifest.json`.
#[derive(Debug, Clone)]
pub struct PluginFixture {
    /// The array's name (the stem of its files).
    pub name: String,
    /// Bytes per item (the chunks' typesize).
    pub itemsize: usize,
    /// The array's shape.
    pub shape: Vec<u64>,
    /// The b2nd block shape.
    pub blocks: Vec<u64>,
    /// The filter ids of the six slots.
    pub filters: [u8; 6],
    /// The filters' meta bytes.
    pub filters_meta: [u8; 6],
    /// The codec id (plugin codecs included).
    pub codec: u8,
    /// The codec's meta byte.
    pub codec_meta: u8,
    /// The compression level.
    pub clevel: u8,
    /// C-Blosc2's split mode number (1 always, 2 never, 3 auto, 4 forward-compatible).
    pub splitmode: u8,
    files: Value,
}

impl PluginFixture {
    /// The bytes of the entry's file of kind `suffix` (such as `"c0.cdata"` or `"b2nd"`), or
    /// `None` if the entry has none.
    ///
    /// # Panics
    /// If the listed file cannot be read (a broken checkout fails the test loudly).
    #[must_use]
    #[allow(clippy::expect_used, reason = "test support: see # Panics")]
    pub fn file(&self, suffix: &str) -> Option<Vec<u8>> {
        let name = self.files[suffix].as_str()?;
        Some(std::fs::read(plugins_dir().join(name)).expect("plugin fixture file"))
    }

    /// Whether the array uses NDCELL / NDMEAN or a ZFP codec, which need the block shape.
    #[must_use]
    pub fn needs_blockshape(&self) -> bool {
        matches!(self.codec, 33..=35) || self.filters.iter().any(|f| matches!(f, 32 | 33))
    }
}

fn plugins_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../testdata/blosc/plugins")
}

/// Every entry of the plugin fixtures' manifest, in its order.
///
/// # Panics
/// If the manifest cannot be read or an entry lacks a field (a broken checkout).
#[must_use]
#[allow(
    clippy::expect_used,
    clippy::cast_possible_truncation,
    reason = "test support: see # Panics; the manifest's numbers fit"
)]
pub fn plugin_fixtures() -> Vec<PluginFixture> {
    let text = std::fs::read_to_string(plugins_dir().join("manifest.json")).expect("manifest");
    let v: Value = serde_json::from_str(&text).expect("manifest JSON");
    let num = |e: &Value, k: &str| e[k].as_u64().expect("manifest number");
    let list = |e: &Value, k: &str| -> Vec<u64> {
        let a = e[k].as_array().expect("manifest list");
        a.iter()
            .map(|x| x.as_u64().expect("manifest number"))
            .collect()
    };
    let slots = |e: &Value, k: &str| {
        let mut s = [0u8; 6];
        for (d, x) in s.iter_mut().zip(list(e, k)) {
            *d = x as u8;
        }
        s
    };
    let entries = v["entries"].as_array().expect("manifest entries");
    entries
        .iter()
        .map(|e| PluginFixture {
            name: e["name"].as_str().expect("entry name").to_string(),
            itemsize: num(e, "itemsize") as usize,
            shape: list(e, "shape"),
            blocks: list(e, "blocks"),
            filters: slots(e, "filters"),
            filters_meta: slots(e, "filters_meta"),
            codec: num(e, "codec") as u8,
            codec_meta: num(e, "codec_meta") as u8,
            clevel: num(e, "clevel") as u8,
            splitmode: num(e, "splitmode") as u8,
            files: e["files"].clone(),
        })
        .collect()
}
