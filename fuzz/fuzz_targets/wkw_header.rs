//! wkw: parse an untrusted 16-byte header; what parses must round-trip and its geometry
//! accessors must not overflow.
#![no_main]

use libfuzzer_sys::fuzz_target;
use wkw::Header;

fuzz_target!(|data: &[u8]| {
    let Ok(h) = Header::parse(data) else {
        return;
    };
    let bytes = h.to_bytes();
    assert_eq!(
        Header::parse(&bytes).ok(),
        Some(h),
        "header did not round-trip"
    );
    let _ = (
        h.per_dim_log2(),
        h.block_len(),
        h.file_len(),
        h.file_len_vx(),
    );
    let _ = (
        h.file_len_vx_log2(),
        h.blocks_per_file(),
        h.block_voxels(),
        h.block_bytes(),
    );
    let _ = (
        h.raw_file_len(),
        h.voxel_size(),
        h.num_channels(),
        h.data_offset(),
    );
    let _ = (h.expected_data_offset(), h.check_data_offset());
    assert_eq!(
        h.for_data_file().expected_data_offset(),
        h.for_data_file().data_offset()
    );
});
