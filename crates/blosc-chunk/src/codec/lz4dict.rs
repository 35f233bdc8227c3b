//! A safe LZ4 block decoder that can reference an external dictionary (used only for chunks
//! with a dictionary section; plain LZ4 streams go through liblz4).

/// Decodes the LZ4 block `src` into `dst` with `dict` logically preceding the output.
/// Returns the number of bytes written, or `None` for malformed input.
pub(crate) fn decompress(src: &[u8], dict: &[u8], dst: &mut [u8]) -> Option<usize> {
    let mut ip = 0usize;
    let mut op = 0usize;
    loop {
        let token = *src.get(ip)?;
        ip += 1;
        let mut lit = usize::from(token >> 4);
        if lit == 15 {
            loop {
                let b = *src.get(ip)?;
                ip += 1;
                lit = lit.checked_add(usize::from(b))?;
                if b != 255 {
                    break;
                }
            }
        }
        let lit_src = src.get(ip..ip.checked_add(lit)?)?;
        dst.get_mut(op..op.checked_add(lit)?)?
            .copy_from_slice(lit_src);
        ip += lit;
        op += lit;
        if ip == src.len() {
            return Some(op);
        }
        let off = usize::from(u16::from_le_bytes([*src.get(ip)?, *src.get(ip + 1)?]));
        ip += 2;
        if off == 0 {
            return None;
        }
        let mut mlen = usize::from(token & 15);
        if mlen == 15 {
            loop {
                let b = *src.get(ip)?;
                ip += 1;
                mlen = mlen.checked_add(usize::from(b))?;
                if b != 255 {
                    break;
                }
            }
        }
        mlen += 4;
        if op.checked_add(mlen)? > dst.len() {
            return None;
        }
        for _ in 0..mlen {
            let b = if off <= op {
                dst[op - off]
            } else {
                let back = off - op;
                *dict.get(dict.len().checked_sub(back)?)?
            };
            dst[op] = b;
            op += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn matches_liblz4_without_dict() {
        let src: Vec<u8> = (0..10000u32).map(|i| ((i / 5) % 97) as u8).collect();
        let c = lz4::block::compress(&src, None, false).unwrap();
        let mut d = vec![0; src.len()];
        assert_eq!(super::decompress(&c, &[], &mut d), Some(src.len()));
        assert_eq!(d, src);
    }
}
