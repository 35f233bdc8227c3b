//! `serde` feature: the public header/metadata types round-trip through JSON with the field
//! names the CLI's `--json` output relies on.
#![cfg(feature = "serde")]
#![allow(clippy::unwrap_used, reason = "a failed unwrap is a failed test")]

use crate::common;

use dwe_format::{Dims, DweFile, EntropyModel, Header, Layout, Limits, WriteLayout};
use serde_json::json;

#[test]
fn fixture_headers_and_models_round_trip_through_json() {
    for fx in common::fixtures() {
        for (path, layout) in [(&fx.stream, Layout::Stream), (&fx.block, Layout::Block)] {
            let bytes = std::fs::read(path).unwrap();
            let file = DweFile::from_bytes(bytes.as_slice()).unwrap();
            let h = *file.header();
            let v = serde_json::to_value(h).unwrap();
            assert_eq!(v["num_timesteps"], json!(fx.dims.num_timesteps), "{path:?}");
            assert_eq!(v["vocab_size"], json!(fx.dims.vocab_size), "{path:?}");
            assert_eq!(v["embedding_dim"], json!(fx.dims.embedding_dim), "{path:?}");
            assert_eq!(v["file_size"], json!(bytes.len() / 4), "{path:?}");
            let back: Header = serde_json::from_value(v).unwrap();
            assert_eq!(back.to_bytes(), h.to_bytes(), "{path:?}");
            assert_eq!(
                serde_json::to_value(file.layout()).unwrap(),
                json!(match layout {
                    Layout::Stream => "stream",
                    _ => "block",
                })
            );
            let m = file.model(0).unwrap();
            let mv = serde_json::to_value(m).unwrap();
            assert_eq!(mv["symbols"].as_array().unwrap().len(), m.symbols().len());
            let back: EntropyModel = serde_json::from_value(mv).unwrap();
            assert_eq!(&back, m);
        }
    }
}

#[test]
fn write_parameters_have_snake_case_names() {
    let dims = Dims::new(3, 4, 2);
    let v = serde_json::to_value(dims).unwrap();
    assert_eq!(
        v,
        json!({"num_timesteps": 3, "vocab_size": 4, "embedding_dim": 2})
    );
    assert_eq!(serde_json::from_value::<Dims>(v).unwrap(), dims);
    for (layout, want) in [
        (
            WriteLayout::Block { chunk_size: 2 },
            json!({"block": {"chunk_size": 2}}),
        ),
        (
            WriteLayout::Stream { jump_interval: 5 },
            json!({"stream": {"jump_interval": 5}}),
        ),
    ] {
        assert_eq!(serde_json::to_value(layout).unwrap(), want);
        assert_eq!(serde_json::from_value::<WriteLayout>(want).unwrap(), layout);
    }
    let l = Limits::default();
    let v = serde_json::to_value(l).unwrap();
    assert_eq!(v["max_file_bytes"], json!(4u64 << 30));
    assert_eq!(serde_json::from_value::<Limits>(v).unwrap(), l);
}

#[test]
fn deserializing_an_invalid_model_is_refused() {
    // Frequencies must sum to 4096.
    let bad = json!({"symbols": [0, 1], "frequencies": [1, 2]});
    assert!(serde_json::from_value::<EntropyModel>(bad).is_err());
    let good = json!({"symbols": [0, 1], "frequencies": [4000, 96]});
    let m: EntropyModel = serde_json::from_value(good).unwrap();
    assert_eq!(m.frequencies(), [4000, 96]);
}
