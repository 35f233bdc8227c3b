//! offset-codec: untrusted codec configuration JSON (bare `configuration` objects and whole
//! `{"name", "configuration"}` entries). What parses must round-trip through JSON, build a
//! codec within the limits, and encode→decode a payload; range mapping must stay in bounds.
#![no_main]

use libfuzzer_sys::fuzz_target;
use offset_codec::{
    ByteRange, CodecConfiguration, Limits, OffsetCodec, OffsetConfiguration, PadConfiguration,
};

const MAX: u64 = 1 << 20;

fn check(config: CodecConfiguration, data: &[u8]) {
    // JSON round trip.
    let again = CodecConfiguration::from_json(&config.to_json()).expect("our JSON must parse");
    assert_eq!(again, config);
    let Ok(codec) = OffsetCodec::new(config) else {
        return;
    };
    let payload = &data[..data.len().min(64)];
    let Ok(encoded) = codec.encode(payload) else {
        return;
    };
    assert_eq!(
        codec.encoded_len(payload.len() as u64).ok(),
        Some(encoded.len() as u64)
    );
    assert_eq!(
        codec.decode(&encoded).expect("decode what we encoded"),
        payload
    );
    let strict = codec.clone().with_strict(true);
    assert_eq!(strict.decode(&encoded).expect("strict decode"), payload);
    let n = encoded.len() as u64;
    for range in [
        ByteRange::FromStart {
            offset: 0,
            length: None,
        },
        ByteRange::FromStart {
            offset: n / 3,
            length: Some(n / 2),
        },
        ByteRange::FromStart {
            offset: u64::MAX,
            length: Some(u64::MAX),
        },
        ByteRange::Suffix(n / 2),
        ByteRange::Suffix(u64::MAX),
    ] {
        if let Ok(r) = codec.map_range(range, n) {
            assert!(
                r.start <= r.end && r.end <= n,
                "{range:?} mapped outside the chunk: {r:?}"
            );
        }
        if let Ok(plan) = codec.plan_range(range) {
            let _ = plan.finish(&encoded);
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(value) = serde_json::from_slice::<serde_json::Value>(data) else {
        return;
    };
    let limits = Limits::default().with_max_nbytes(MAX);
    if let Ok(c) = OffsetConfiguration::from_json_with_limits(&value, &limits) {
        check(c.into(), data);
    }
    if let Ok(c) = PadConfiguration::from_json_with_limits(&value, &limits) {
        check(c.into(), data);
    }
    if let Ok(c) = CodecConfiguration::from_json_with_limits(&value, &limits) {
        check(c, data);
    }
    // Also every nested object, so a whole zarr.json finds its codec entries.
    if let Some(codecs) = value.get("codecs").and_then(|c| c.as_array()) {
        for entry in codecs {
            if let Ok(c) = CodecConfiguration::from_json_with_limits(entry, &limits) {
                check(c, data);
            }
        }
    }
});
