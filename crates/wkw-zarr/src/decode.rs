//! Decoding the stored inner chunks of a [`Layout`] into WKW blocks: the compressor's output
//! re-laid from the chunk's `transpose` order into WKW block order, and blocks assembled from
//! one inner chunk per channel when the chunks split the channels.

use crate::meta::Layout;

std::thread_local! {
    /// Per-thread decoded inner chunk before it is re-laid in WKW order.
    static SCRATCH: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
    /// Per-thread decoded one-channel inner chunk, and the same re-laid.
    static PART: std::cell::RefCell<(Vec<u8>, Vec<u8>)> =
        const { std::cell::RefCell::new((Vec::new(), Vec::new())) };
}

impl Layout {
    /// Decodes the stored inner chunk `stored` into `out` (one WKW block's bytes, which it
    /// must fill exactly), re-laying the voxels when the chunk is not in WKW order.
    ///
    /// # Errors
    /// What is wrong with the chunk.
    pub(crate) fn decode_chunk(&self, stored: &[u8], out: &mut [u8]) -> Result<(), String> {
        let Some(order) = self.order else {
            return self.codec.decode(stored, out);
        };
        SCRATCH.with(|cell| {
            let mut buf = cell.borrow_mut();
            buf.resize(out.len(), 0);
            self.codec.decode(stored, &mut buf)?;
            relay(
                &buf,
                out,
                order,
                usize::from(self.channels),
                self.block_len as usize,
                self.voxel_type.size() as usize,
            );
            Ok(())
        })
    }

    /// Decodes the stored inner chunks of one block (`parts`, one per channel when they
    /// split the channels; absent ones are the fill value 0) into `out`, the WKW block.
    ///
    /// # Errors
    /// What is wrong with a chunk.
    pub(crate) fn decode_parts(
        &self,
        parts: &[Option<Vec<u8>>],
        out: &mut [u8],
    ) -> Result<(), String> {
        if !self.split {
            return match parts {
                [Some(stored)] => self.decode_chunk(stored, out),
                [None] => {
                    out.fill(0);
                    Ok(())
                }
                _ => Err(format!("{} chunks for one block", parts.len())),
            };
        }
        let c = usize::from(self.channels);
        if parts.len() != c {
            return Err(format!(
                "{} chunks for a block of {c} channels",
                parts.len()
            ));
        }
        let size = self.voxel_type.size() as usize;
        let one = out.len() / c;
        let b = self.block_len as usize;
        PART.with(|cell| {
            let mut cell = cell.borrow_mut();
            let (buf, laid) = &mut *cell;
            buf.resize(one, 0);
            laid.resize(one, 0);
            for (ch, part) in parts.iter().enumerate() {
                let Some(stored) = part else {
                    out.chunks_exact_mut(size)
                        .skip(ch)
                        .step_by(c)
                        .for_each(|v| v.fill(0));
                    continue;
                };
                self.codec
                    .decode(stored, buf)
                    .map_err(|e| format!("channel {ch}: {e}"))?;
                let voxels: &[u8] = match self.order {
                    Some(order) => {
                        relay(buf, laid, order, 1, b, size);
                        laid
                    }
                    None => buf,
                };
                for (dst, src) in out
                    .chunks_exact_mut(size)
                    .skip(ch)
                    .step_by(c)
                    .zip(voxels.chunks_exact(size))
                {
                    dst.copy_from_slice(src);
                }
            }
            Ok(())
        })
    }
}

/// Re-lays a decoded inner chunk `src` stored in transpose `order` (see
/// [`Layout::order`]) into `dst` in WKW block order, one voxel of `size` bytes at a time.
fn relay(
    src: &[u8],
    dst: &mut [u8],
    order: [usize; 4],
    channels: usize,
    block_len: usize,
    size: usize,
) {
    let dims = [channels, block_len, block_len, block_len];
    // The stride (in voxels) of each axis in `src`: the product of the later axes' lengths.
    let mut stride = [0usize; 4];
    let mut s = 1;
    for &axis in order.iter().rev() {
        stride[axis] = s;
        s *= dims[axis];
    }
    let mut out = dst.chunks_exact_mut(size);
    for z in 0..block_len {
        for y in 0..block_len {
            for x in 0..block_len {
                let base = x * stride[1] + y * stride[2] + z * stride[3];
                for c in 0..channels {
                    let at = (base + c * stride[0]) * size;
                    if let (Some(o), Some(v)) = (out.next(), src.get(at..at + size)) {
                        o.copy_from_slice(v);
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::ChunkCodec;
    use crate::error::{Error, Result};

    fn layout() -> Result<Layout> {
        let h = wkw::Header::new(wkw::VoxelType::U16, 3, 16, 4, wkw::BlockType::Lz4)?;
        Ok(Layout::for_wkw(
            &h,
            [100, 64, 1],
            ChunkCodec::Zstd {
                level: 5,
                checksum: true,
            },
        ))
    }

    #[test]
    fn channel_split_chunks_assemble_a_block_absent_ones_zero() -> Result<()> {
        // 3 channels of u16, 16³ blocks; inner chunks (1, 16, 16, 16) in C order, no codec.
        let mut l = layout()?;
        l.split = true;
        l.order = Some([0, 1, 2, 3]);
        l.codec = ChunkCodec::None;
        let b = 16usize;
        let value = |ch: usize, x: usize, y: usize, z: usize| {
            u16::try_from(ch * 4096 + x * 256 + y * 16 + z).unwrap_or(0) + 1
        };
        let chunk = |ch: usize| -> Vec<u8> {
            let mut v = Vec::new();
            for x in 0..b {
                for y in 0..b {
                    for z in 0..b {
                        v.extend_from_slice(&value(ch, x, y, z).to_le_bytes());
                    }
                }
            }
            v
        };
        let parts = [Some(chunk(0)), None, Some(chunk(2))];
        let mut out = vec![0xaau8; 3 * 2 * b * b * b];
        l.decode_parts(&parts, &mut out).map_err(Error::Internal)?;
        let mut want = Vec::new();
        for z in 0..b {
            for y in 0..b {
                for x in 0..b {
                    for ch in 0..3 {
                        let v = if ch == 1 { 0 } else { value(ch, x, y, z) };
                        want.extend_from_slice(&v.to_le_bytes());
                    }
                }
            }
        }
        assert_eq!(out, want);
        assert_eq!(
            l.positions([1, 2, 3]).collect::<Vec<_>>(),
            [27, 64 + 27, 128 + 27]
        );
        assert!(l.decode_parts(&parts[..1], &mut out).is_err());
        assert!(
            l.decode_parts(&[Some(vec![1, 2, 3]), None, None], &mut out)
                .is_err()
        );
        Ok(())
    }

    #[test]
    fn relay_puts_c_ordered_voxels_in_wkw_order() {
        // 2 channels, side 2, 2-byte voxels; C order: c slowest, then x, y, z fastest.
        let (c, b, size) = (2usize, 2usize, 2usize);
        let mut src = Vec::new();
        for ch in 0..c {
            for x in 0..b {
                for y in 0..b {
                    for z in 0..b {
                        let v = u16::try_from(ch * 1000 + x * 100 + y * 10 + z).unwrap_or(u16::MAX);
                        src.extend_from_slice(&v.to_le_bytes());
                    }
                }
            }
        }
        let mut dst = vec![0u8; src.len()];
        relay(&src, &mut dst, [0, 1, 2, 3], c, b, size);
        let mut want = Vec::new();
        for z in 0..b {
            for y in 0..b {
                for x in 0..b {
                    for ch in 0..c {
                        let v = u16::try_from(ch * 1000 + x * 100 + y * 10 + z).unwrap_or(u16::MAX);
                        want.extend_from_slice(&v.to_le_bytes());
                    }
                }
            }
        }
        assert_eq!(dst, want);
    }
}
