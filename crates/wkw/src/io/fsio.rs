//! Positional writes on the local file system (no shared cursor, so one handle serves many
//! threads; positional reads are `scifmt_io::ReadAt`'s). A leaf module: plain `std::io`
//! results, no crate types.

use std::fs::File;
use std::io;

/// Writes all of `buf` at `offset`.
pub(crate) fn write_all_at(file: &File, buf: &[u8], offset: u64) -> io::Result<()> {
    #[cfg(unix)]
    {
        std::os::unix::fs::FileExt::write_all_at(file, buf, offset)
    }
    #[cfg(windows)]
    {
        let mut done = 0usize;
        while done < buf.len() {
            let rest = buf.get(done..).unwrap_or_default();
            let n = std::os::windows::fs::FileExt::seek_write(file, rest, offset + done as u64)?;
            if n == 0 {
                return Err(io::ErrorKind::WriteZero.into());
            }
            done += n;
        }
        Ok(())
    }
}
