//! The output of a decode: the caller's initialized bytes, or memory that has never been
//! written (a freshly allocated Python `bytes`, a `Vec`'s spare capacity).
//!
//! Uninitialized output is zero-filled block by block, just before the block is decoded into
//! it, so the fill runs on memory the decoder is about to write while it is in cache, instead
//! of a separate pass over the whole output first (which costs about a fifth of a fast LZ4
//! decode of 4 MiB).

use core::mem::MaybeUninit;

/// Where decoded bytes go.
pub(super) enum Output<'a> {
    /// Initialized bytes (a caller's `&mut [u8]`).
    Init(&'a mut [u8]),
    /// Memory that may never have been written.
    Uninit(&'a mut [MaybeUninit<u8>]),
}

impl<'a> Output<'a> {
    pub(super) fn len(&self) -> usize {
        match self {
            Self::Init(s) => s.len(),
            Self::Uninit(s) => s.len(),
        }
    }

    /// The first `n` bytes, or `None` if there are fewer.
    pub(super) fn prefix(self, n: usize) -> Option<Self> {
        match self {
            Self::Init(s) => s.get_mut(..n).map(Self::Init),
            Self::Uninit(s) => s.get_mut(..n).map(Self::Uninit),
        }
    }

    /// Consecutive pieces of `size` bytes (the last one may be shorter); `size > 0`.
    pub(super) fn pieces(&mut self, size: usize) -> impl Iterator<Item = Output<'_>> {
        let (init, uninit) = match self {
            Self::Init(s) => (Some(s.chunks_mut(size).map(Output::Init)), None),
            Self::Uninit(s) => (None, Some(s.chunks_mut(size).map(Output::Uninit))),
        };
        init.into_iter()
            .flatten()
            .chain(uninit.into_iter().flatten())
    }

    /// The bytes, after every piece of [`Output::pieces`] has been initialized.
    ///
    /// # Safety
    ///
    /// Each byte of an `Uninit` output must have been written, e.g. through [`Output::init`]
    /// or [`Output::copy_from`] on the pieces that cover it.
    #[allow(unsafe_code, reason = "the caller vouches that every byte was written")]
    pub(super) unsafe fn assume_written(self) -> &'a mut [u8] {
        match self {
            Self::Init(s) => s,
            // SAFETY: the caller guarantees every element is initialized.
            Self::Uninit(s) => unsafe { cast(s) },
        }
    }

    /// The output written by `write` as initialized bytes, or `None` if `write` returned
    /// `false`; an `Init` output is handed to `write` as `MaybeUninit` bytes.
    ///
    /// # Safety
    ///
    /// `write` must return `true` only after writing every element it was given, and must
    /// never store an uninitialized value (it is handed initialized bytes in that form too).
    #[allow(unsafe_code, reason = "the caller vouches for `write`")]
    pub(super) unsafe fn written_by(
        self,
        write: impl FnOnce(&mut [MaybeUninit<u8>]) -> bool,
    ) -> Option<&'a mut [u8]> {
        let s: &'a mut [MaybeUninit<u8>] = match self {
            // SAFETY: same layout; `write` stores only initialized values (caller's promise),
            // so the bytes stay initialized.
            Self::Init(s) => unsafe {
                &mut *(core::ptr::from_mut::<[u8]>(s) as *mut [MaybeUninit<u8>])
            },
            Self::Uninit(s) => s,
        };
        // SAFETY: `write` returned `true`, so it wrote every element (caller's promise).
        write(s).then(|| unsafe { cast(s) })
    }

    /// `src` copied in (`src.len() == self.len()`), as initialized bytes.
    pub(super) fn copy_from(self, src: &[u8]) -> &'a mut [u8] {
        match self {
            Self::Init(s) => {
                s.copy_from_slice(src);
                s
            }
            Self::Uninit(s) => {
                copy_into(s, src);
                assume_init(s)
            }
        }
    }

    /// Every byte set to `v`.
    pub(super) fn fill(self, v: u8) -> &'a mut [u8] {
        match self {
            Self::Init(s) => {
                s.fill(v);
                s
            }
            Self::Uninit(s) => {
                s.fill(MaybeUninit::new(v));
                assume_init(s)
            }
        }
    }

    /// The bytes as initialized memory: uninitialized memory is zero-filled first.
    pub(super) fn init(self) -> &'a mut [u8] {
        match self {
            Self::Init(s) => s,
            Self::Uninit(s) => {
                s.fill(MaybeUninit::new(0));
                assume_init(s)
            }
        }
    }
}

/// `src` copied into `d` (same length).
fn copy_into(d: &mut [MaybeUninit<u8>], src: &[u8]) {
    // Compiled to a `memcpy`.
    for (d, &v) in d.iter_mut().zip(src) {
        d.write(v);
    }
}

/// `s` as bytes; every element of `s` has just been written.
fn assume_init(s: &mut [MaybeUninit<u8>]) -> &mut [u8] {
    // SAFETY: every caller (`copy_from`, `fill`, `init`) writes every element of `s` just
    // before.
    #[allow(unsafe_code, reason = "see SAFETY")]
    unsafe {
        cast(s)
    }
}

/// `s` as bytes.
///
/// # Safety
///
/// Every element of `s` must be initialized.
#[allow(
    unsafe_code,
    reason = "the caller vouches that every element is initialized"
)]
unsafe fn cast(s: &mut [MaybeUninit<u8>]) -> &mut [u8] {
    // SAFETY: `MaybeUninit<u8>` has the size, alignment and layout of `u8`; the caller
    // guarantees all elements are initialized, and the returned slice borrows `s` mutably for
    // its whole lifetime, so nothing can store an uninitialized value into it meanwhile.
    unsafe { &mut *(core::ptr::from_mut::<[MaybeUninit<u8>]>(s) as *mut [u8]) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uninit_pieces_are_zeroed_and_copies_are_exact() {
        let mut mem = vec![MaybeUninit::<u8>::uninit(); 10];
        let mut out = Output::Uninit(&mut mem);
        let pieces: Vec<_> = out.pieces(4).collect();
        assert_eq!(
            pieces.iter().map(Output::len).collect::<Vec<_>>(),
            [4, 4, 2]
        );
        let mut it = pieces.into_iter();
        assert_eq!(it.next().unwrap().init(), &[0; 4]);
        assert_eq!(it.next().unwrap().copy_from(&[1, 2, 3, 4]), &[1, 2, 3, 4]);
        let last = it.next().unwrap().init();
        last[1] = 9;
        assert_eq!(last, &[0, 9]);
        // SAFETY: all three pieces were written above.
        #[allow(unsafe_code, reason = "testing assume_written")]
        let all = unsafe { out.assume_written() };
        assert_eq!(all, &[0, 0, 0, 0, 1, 2, 3, 4, 0, 9]);
        let mut bytes = [7u8; 3];
        assert_eq!(Output::Init(&mut bytes).prefix(2).unwrap().init(), &[7, 7]);
        assert!(Output::Init(&mut bytes).prefix(4).is_none());
    }
}
