//! Cargo features per codec: BloscLZ is always built in; LZ4/LZ4HC, zstd and zlib follow the
//! features `lz4`, `zstd` and `zlib`. Encoding with a codec whose feature is off is refused with
//! a typed error naming the codec and the feature (decoding: `fixtures.rs`).

#![allow(clippy::unwrap_used, reason = "a failed unwrap is a failed test")]

use blosc_chunk::{CParams, Codec, Error, Filter};

#[test]
fn codec_availability_follows_the_cargo_features() {
    assert!(Codec::BloscLz.is_enabled());
    assert_eq!(Codec::BloscLz.feature(), None);
    assert_eq!(Codec::Lz4.is_enabled(), cfg!(feature = "lz4"));
    assert_eq!(Codec::Lz4Hc.is_enabled(), cfg!(feature = "lz4"));
    assert_eq!(Codec::Zstd.is_enabled(), cfg!(feature = "zstd"));
    assert_eq!(Codec::Zlib.is_enabled(), cfg!(feature = "zlib"));
    assert!(!Codec::Other(3).is_enabled());
    assert_eq!(Codec::Other(3).feature(), None);
}

#[test]
fn encoding_with_a_disabled_codec_is_a_typed_error_and_enabled_ones_round_trip() {
    let data: Vec<u8> = (0..50_000u32).flat_map(|i| (i / 7).to_le_bytes()).collect();
    for codec in [
        Codec::BloscLz,
        Codec::Lz4,
        Codec::Lz4Hc,
        Codec::Zstd,
        Codec::Zlib,
    ] {
        for use_dict in [false, true] {
            let mut cp = CParams::new(codec, 5, 4, Filter::Shuffle);
            cp.use_dict = use_dict && codec != Codec::BloscLz && codec != Codec::Zlib;
            let r = blosc_chunk::compress(&data, &cp);
            if codec.is_enabled() {
                let chunk = r.unwrap();
                assert_eq!(blosc_chunk::decompress(&chunk).unwrap(), data, "{codec}");
            } else {
                let feature = codec.feature().unwrap();
                assert_eq!(r, Err(Error::CodecDisabled { codec, feature }), "{codec}");
            }
        }
    }
}

/// Inputs that never reach the codec (below 32 bytes, or clevel 0) are refused all the same:
/// the answer depends on the parameters, not on the data.
#[cfg(not(all(feature = "lz4", feature = "zstd", feature = "zlib")))]
#[test]
fn disabled_codec_is_refused_even_for_inputs_stored_raw() {
    for codec in [Codec::Lz4, Codec::Zstd, Codec::Zlib] {
        if codec.is_enabled() {
            continue;
        }
        let mut cp = CParams::new(codec, 0, 1, Filter::NoFilter);
        assert!(matches!(
            blosc_chunk::compress(&[1, 2, 3], &cp),
            Err(Error::CodecDisabled { .. })
        ));
        cp.clevel = 5;
        assert!(matches!(
            blosc_chunk::compress(&[], &cp),
            Err(Error::CodecDisabled { .. })
        ));
    }
}
