//! Replays the kept fuzz findings and hand-made hostile configurations in
//! `testdata/regressions/offset-codec/offset_config/` through the configuration parsers the
//! `offset_config` fuzz target drives: each must give `Ok` or a typed `Err`, never a panic;
//! what parses must round-trip through JSON and encode→decode.

#![allow(clippy::unwrap_used, reason = "a failed unwrap is a failed test")]

use offset_codec::{
    CodecConfiguration, Limits, OffsetCodec, OffsetConfiguration, PadConfiguration,
};

fn check(config: CodecConfiguration) {
    assert_eq!(
        CodecConfiguration::from_json(&config.to_json()).unwrap(),
        config
    );
    let Ok(codec) = OffsetCodec::new(config) else {
        return;
    };
    if let Ok(enc) = codec.encode(b"payload") {
        assert_eq!(codec.decode(&enc).unwrap(), b"payload");
    }
}

fn replay(data: &[u8]) {
    let Ok(value) = serde_json::from_slice::<serde_json::Value>(data) else {
        return;
    };
    let limits = Limits::default().with_max_nbytes(1 << 20);
    match OffsetConfiguration::from_json_with_limits(&value, &limits) {
        Ok(c) => check(c.into()),
        Err(e) => assert!(!e.to_string().is_empty()),
    }
    if let Ok(c) = PadConfiguration::from_json_with_limits(&value, &limits) {
        check(c.into());
    }
    if let Ok(c) = CodecConfiguration::from_json_with_limits(&value, &limits) {
        check(c);
    }
}

#[test]
fn offset_config_regressions_replay() {
    testkit::replay_all("offset-codec", "offset_config", replay);
}
