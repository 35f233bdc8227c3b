//! morton-code: encode/decode round trips in 2-D and 3-D, batch = scalar, and box iteration
//! (ranges, indices, next_in_box) against a direct membership test.
#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use morton_code as m;

#[derive(Debug, Arbitrary)]
struct Input {
    p3: Vec<[u32; 3]>,
    p2: Vec<[u32; 2]>,
    keys: Vec<u64>,
    bmin: [u16; 3],
    bext: [u8; 3],
}

fuzz_target!(|inp: Input| {
    for &p in &inp.p3 {
        if let Ok(k) = m::encode_3d_u64(p) {
            assert_eq!(m::decode_3d_u64(k).ok(), Some(p));
            assert_eq!(m::encode_3d_u64_wrapping(p), k);
        } else {
            assert!(p.iter().any(|&c| c >= 1 << m::BITS_3D_U64));
        }
        if let Ok(k) = m::encode_3d_u32(p) {
            assert_eq!(m::decode_3d_u32(k).ok(), Some(p));
        }
        let w = m::decode_3d_u64_wrapping(m::encode_3d_u64_wrapping(p));
        assert_eq!(w, p.map(|c| c & ((1 << m::BITS_3D_U64) - 1)));
    }
    for &p in &inp.p2 {
        assert_eq!(m::decode_2d_u64(m::encode_2d_u64(p)), p);
        let q = [p[0] as u16, p[1] as u16];
        assert_eq!(m::decode_2d_u32(m::encode_2d_u32(q)), q);
    }
    for &k in &inp.keys {
        assert_eq!(m::encode_2d_u64(m::decode_2d_u64(k)), k);
        if let Ok(p) = m::decode_3d_u64(k) {
            assert_eq!(m::encode_3d_u64(p).ok(), Some(k));
        }
    }
    // Batch conversions agree with the scalar ones (or fail where a scalar fails).
    let mut out = vec![0u64; inp.p3.len()];
    match m::encode_3d_u64_batch(&inp.p3, &mut out) {
        Ok(()) => {
            for (p, k) in inp.p3.iter().zip(&out) {
                assert_eq!(m::encode_3d_u64(*p).ok(), Some(*k));
            }
            let mut back = vec![[0u32; 3]; out.len()];
            m::decode_3d_u64_batch(&out, &mut back).expect("decode our keys");
            assert_eq!(back, inp.p3);
        }
        Err(_) => assert!(inp.p3.iter().any(|&p| m::encode_3d_u64(p).is_err())),
    }
    let mut out2 = vec![0u64; inp.p2.len()];
    m::encode_2d_u64_batch(&inp.p2, &mut out2).expect("2-D batch");
    let mut back2 = vec![[0u32; 2]; out2.len()];
    m::decode_2d_u64_batch(&out2, &mut back2).expect("2-D batch decode");
    assert_eq!(back2, inp.p2);

    // A small 3-D box: iteration visits exactly its cells, in increasing key order.
    let min = inp.bmin.map(|c| u32::from(c) % 4096);
    let max = [0, 1, 2].map(|i| min[i] + u32::from(inp.bext[i] % 9));
    let Ok(b) = m::MortonBox::<3>::new(min, max) else {
        return;
    };
    let keys: Vec<u64> = b.indices().collect();
    assert_eq!(keys.len() as u128, b.cell_count());
    assert!(keys.windows(2).all(|w| w[0] < w[1]));
    for &k in &keys {
        assert!(b.contains(m::decode_3d_u64(k).expect("box key")));
    }
    let ranged: u64 = b.ranges().map(|r| r.end - r.start).sum();
    assert_eq!(u128::from(ranged), b.cell_count());
    if let Some(&first) = keys.first() {
        assert_eq!(b.next_in_box(0), Some(first));
        for w in keys.windows(2) {
            assert_eq!(b.next_in_box(w[0] + 1), Some(w[1]));
        }
    }
});
