//! Resource limits: small hostile `.dwe` files whose headers claim huge dimensions are refused
//! before any large allocation, and whole-file decodes respect the caller's caps. A counting
//! global allocator measures the peak heap growth of each call.

#![allow(
    clippy::unwrap_used,
    clippy::cast_possible_truncation,
    reason = "a failed unwrap is a failed test; test sizes are small"
)]

use std::path::PathBuf;

use dwe_format::{Limits, OpenOptions};

use testkit::{lock_serial, peak_during};

#[global_allocator]
static GLOBAL: testkit::CountingAlloc = testkit::CountingAlloc;

const SMALL: usize = 1 << 20;

fn fixture(layout: &str, name: &str) -> Vec<u8> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../testdata/dwe")
        .join(layout)
        .join(name);
    std::fs::read(p).unwrap()
}

fn set_word(data: &mut [u8], i: usize, v: u32) {
    data[4 * i..4 * i + 4].copy_from_slice(&v.to_le_bytes());
}

#[test]
fn headers_claiming_huge_dimensions_are_refused_before_allocating() {
    let _g = lock_serial();
    for (layout, name) in [
        ("stream", "random_6_100_16_j20.dwe"),
        ("block", "random_6_100_16_c20.dwe"),
    ] {
        let good = fixture(layout, name);
        assert!(OpenOptions::new().open(&good).is_ok());
        // Words 5, 6, 7 of the header are T, V, K.
        for (t, v, k) in [
            (1 << 24, 100, 16),       // 2^24 time steps: 384 GiB of decoder tables
            (6, 1 << 30, 1 << 10),    // V·K = 2^40 values per step
            (6, u32::MAX, u32::MAX),  // V·K overflows
            (u32::MAX, u32::MAX, 16), // everything
        ] {
            let mut bad = good.clone();
            set_word(&mut bad, 5, t);
            set_word(&mut bad, 6, v);
            set_word(&mut bad, 7, k);
            let (peak, r) = peak_during(|| OpenOptions::new().open(&bad).map(|f| f.decode_all()));
            assert!(
                !matches!(r, Ok(Ok(_))),
                "{layout} T={t} V={v} K={k} decoded from a {}-byte file",
                bad.len()
            );
            assert!(
                peak < SMALL,
                "{layout} T={t} V={v} K={k}: refusing it allocated {peak} bytes"
            );
        }
    }
}

#[test]
fn whole_file_decodes_respect_the_caps() {
    let _g = lock_serial();
    let data = fixture("stream", "random_6_100_16_j20.dwe");
    // T·V·K = 9600 values: above a 1000-value cap for whole-file decodes.
    let l = Limits::default().with_max_total_values(1000);
    let f = OpenOptions::new().with_limits(l).open(&data).unwrap();
    let (peak, r) = peak_during(|| f.decode_all());
    assert!(r.is_err());
    assert!(
        peak < 64 << 10,
        "refusing decode_all allocated {peak} bytes"
    );
    // One time step (V·K = 1600) is within the caps.
    assert_eq!(f.timestep(2).unwrap().len(), 1600);
    // V·K = 1600 above a 1000-value per-step cap: refused at open.
    let l = Limits::default().with_max_timestep_values(1000);
    let (peak, r) = peak_during(|| OpenOptions::new().with_limits(l).open(&data).map(|_| ()));
    assert!(r.is_err());
    assert!(peak < 64 << 10, "refusing the open allocated {peak} bytes");
}
