//! The two flag bytes of a chunk header as bit sets.
//!
//! * `flags` (byte 2 of every header): bit 0 byte shuffle, bit 1 memcpyed, bit 2 bit shuffle,
//!   bit 3 delta, bit 4 "don't split"; bits 0 and 2 together mean the 32-byte extended header
//!   follows. Bits 5–7 are not flags but the codec's stream format code.
//! * `blosc2_flags` (byte 31 of the extended header): bit 0 a dictionary section follows the
//!   block starts, bit 3 lazy chunk, bit 7 instrumented; bits 4–6 are not flags but the
//!   special-value code (1 zeros, 2 NaN, 3 value, 4 uninitialised).
//!
//! Both types keep every bit they are given (`from_bits_retain`), so the codes travel with them.
//! Source: `blosc2.h` and `README_CHUNK_FORMAT.rst` of C-Blosc2
//! (<https://github.com/Blosc/c-blosc2/blob/main/README_CHUNK_FORMAT.rst>).

bitflags::bitflags! {
    /// The header `flags` byte.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    pub(crate) struct Flags: u8 {
        /// Byte shuffle (Blosc1 header); with `BITSHUFFLE`, the extended-header marker.
        const SHUFFLE = 0x01;
        /// The payload is the raw input.
        const MEMCPYED = 0x02;
        /// Bit shuffle (Blosc1 header); with `SHUFFLE`, the extended-header marker.
        const BITSHUFFLE = 0x04;
        /// Delta filter (Blosc1 header).
        const DELTA = 0x08;
        /// Blocks hold one stream each.
        const DONT_SPLIT = 0x10;
        /// Both shuffle bits: a 32-byte extended header.
        const EXTENDED = Self::SHUFFLE.bits() | Self::BITSHUFFLE.bits();
        // Bits 5–7: the codec format code.
        const _ = !0;
    }
}

impl Flags {
    /// The codec's stream format code (bits 5–7).
    pub(crate) fn codec_format(self) -> u8 {
        self.bits() >> 5
    }

    /// These flags with the codec format code `format` (0–7) in bits 5–7.
    pub(crate) fn with_codec_format(self, format: u8) -> Self {
        Self::from_bits_retain(self.bits() | (format << 5))
    }
}

bitflags::bitflags! {
    /// The extended header's `blosc2_flags` byte.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    pub(crate) struct Blosc2Flags: u8 {
        /// A dictionary section follows the block starts.
        const USE_DICT = 0x01;
        /// An in-memory lazy chunk (no data).
        const LAZY = 0x08;
        /// The streams hold instrumentation records.
        const INSTRUMENTED = 0x80;
        // Bits 4–6: the special-value code.
        const _ = !0;
    }
}

impl Blosc2Flags {
    /// The special-value code (bits 4–6; 0 = not special).
    pub(crate) fn special_code(self) -> u8 {
        (self.bits() >> 4) & 0x07
    }

    /// The flags of a special chunk with code `code` (1–4).
    pub(crate) fn special(code: u8) -> Self {
        Self::from_bits_retain((code & 0x07) << 4)
    }
}

#[cfg(test)]
mod tests {
    use super::{Blosc2Flags, Flags};

    #[test]
    fn codes_travel_with_the_flags() {
        let f = Flags::EXTENDED.with_codec_format(4) | Flags::DONT_SPLIT;
        assert_eq!(f.bits(), 0x95);
        assert_eq!(f.codec_format(), 4);
        assert!(f.contains(Flags::SHUFFLE | Flags::BITSHUFFLE));
        let b = Blosc2Flags::special(3) | Blosc2Flags::USE_DICT;
        assert_eq!(b.bits(), 0x31);
        assert_eq!(b.special_code(), 3);
        assert_eq!(Blosc2Flags::from_bits_retain(0xff).special_code(), 7);
    }
}
