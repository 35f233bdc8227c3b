//! [`ReadAt`]: the one positional-read trait of the scifmt crates (frame readers, WKW files,
//! conversions), so that a reader never loads a whole file to read one part of it.

use std::fs::File;
use std::io;

/// A byte source read at explicit positions (like `pread`), shareable between threads.
///
/// Implemented for byte slices, `Vec<u8>`, [`File`] and [`Prefetched`](crate::Prefetched)
/// (byte ranges fetched from an object store); implement it for anything else (an archive
/// member, a counting wrapper in tests, …). Reading past the end is an error, never a short
/// read.
///
/// ```
/// use scifmt_io::ReadAt;
/// let data = vec![1u8, 2, 3, 4, 5];
/// let mut buf = [0u8; 2];
/// data.read_exact_at(&mut buf, 3)?;
/// assert_eq!(buf, [4, 5]);
/// assert_eq!(data.size()?, 5);
/// assert!(data.read_exact_at(&mut buf, 4).is_err());
/// # Ok::<(), std::io::Error>(())
/// ```
pub trait ReadAt {
    /// Fills `buf` with the bytes at `offset..offset + buf.len()`.
    ///
    /// # Errors
    /// `UnexpectedEof` when the source is shorter, or any I/O error.
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()>;

    /// Total length of the source in bytes.
    ///
    /// # Errors
    /// Any I/O error (e.g. from `metadata`).
    fn size(&self) -> io::Result<u64>;
}

impl ReadAt for [u8] {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        let start = usize::try_from(offset).map_err(|_| eof())?;
        let src = start
            .checked_add(buf.len())
            .and_then(|end| self.get(start..end))
            .ok_or_else(eof)?;
        buf.copy_from_slice(src);
        Ok(())
    }

    fn size(&self) -> io::Result<u64> {
        Ok(self.len() as u64)
    }
}

impl ReadAt for Vec<u8> {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        self.as_slice().read_exact_at(buf, offset)
    }

    fn size(&self) -> io::Result<u64> {
        Ok(self.len() as u64)
    }
}

impl ReadAt for File {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        #[cfg(unix)]
        {
            std::os::unix::fs::FileExt::read_exact_at(self, buf, offset)
        }
        #[cfg(windows)]
        {
            let mut done = 0usize;
            while done < buf.len() {
                let rest = buf.get_mut(done..).ok_or_else(eof)?;
                let pos = offset.checked_add(done as u64).ok_or_else(eof)?;
                let n = std::os::windows::fs::FileExt::seek_read(self, rest, pos)?;
                if n == 0 {
                    return Err(eof());
                }
                done += n;
            }
            Ok(())
        }
        #[cfg(not(any(unix, windows)))]
        {
            use std::io::{Read, Seek, SeekFrom};
            let mut f = self;
            f.seek(SeekFrom::Start(offset))?;
            f.read_exact(buf)
        }
    }

    fn size(&self) -> io::Result<u64> {
        Ok(self.metadata()?.len())
    }
}

impl<T: ReadAt + ?Sized> ReadAt for &T {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        (**self).read_exact_at(buf, offset)
    }

    fn size(&self) -> io::Result<u64> {
        (**self).size()
    }
}

impl<T: ReadAt + ?Sized> ReadAt for Box<T> {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        (**self).read_exact_at(buf, offset)
    }

    fn size(&self) -> io::Result<u64> {
        (**self).size()
    }
}

impl<T: ReadAt + ?Sized> ReadAt for std::sync::Arc<T> {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        (**self).read_exact_at(buf, offset)
    }

    fn size(&self) -> io::Result<u64> {
        (**self).size()
    }
}

fn eof() -> io::Error {
    io::Error::new(
        io::ErrorKind::UnexpectedEof,
        "read past the end of the source",
    )
}
