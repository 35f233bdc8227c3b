//! Closing replaced data files off the writer's thread.
//!
//! A write into a compressed file builds a new file and renames it over the old one. The old
//! file's pages and disk blocks are released when its last handle is closed, and the kernel does
//! that work inside `close`: for a 16 MiB file in the page cache it took about 11 ms on ext4,
//! a third of a whole-file 256³ LZ4 write. Writers keep the old file open until the rename is
//! done (so the rename itself frees nothing) and hand the handle to [`close`], which passes it
//! to a background thread unless the dataset runs on [`Threads::Caller`].
//!
//! The background thread is started on first use, one per process (a forked child starts its
//! own). Handing over never blocks: when the queue is full, its lock is busy or the thread
//! cannot be started, the caller closes the file itself. At most [`QUEUE`] handles wait.

use std::fs::File;
use std::sync::Mutex;
use std::sync::mpsc::{SyncSender, TrySendError, sync_channel};

use crate::options::Threads;

/// Handles that may wait for the background thread.
const QUEUE: usize = 16;

/// The background thread's queue and the process it was started in.
static CLOSER: Mutex<Option<(u32, SyncSender<File>)>> = Mutex::new(None);

/// Closes `file`: on the calling thread with [`Threads::Caller`] (or without the `parallel`
/// feature), else on the background thread.
pub(crate) fn close(file: File, threads: Threads) {
    if cfg!(feature = "parallel") && threads != Threads::Caller {
        close_later(file);
    } else {
        drop(file);
    }
}

/// Hands `file` to the background thread, or closes it here when that would block.
fn close_later(file: File) {
    let Ok(mut closer) = CLOSER.try_lock() else {
        return;
    };
    let pid = std::process::id();
    let file = match closer.take() {
        Some((owner, queue)) if owner == pid => match queue.try_send(file) {
            Ok(()) | Err(TrySendError::Full(_)) => {
                *closer = Some((owner, queue));
                return;
            }
            Err(TrySendError::Disconnected(file)) => file,
        },
        // A queue inherited through fork: its thread is not in this process. Dropping it
        // could wait on a lock that thread held at the fork, so it is leaked instead.
        Some(inherited) => {
            std::mem::forget(inherited);
            file
        }
        None => file,
    };
    let (queue, handles) = sync_channel::<File>(QUEUE);
    let started = std::thread::Builder::new()
        .name("wkw-close".into())
        .spawn(move || handles.into_iter().for_each(drop));
    if started.is_ok() && queue.try_send(file).is_ok() {
        *closer = Some((pid, queue));
    }
}

#[cfg(all(test, target_os = "linux", feature = "parallel"))]
mod tests {
    #![allow(clippy::unwrap_used, reason = "a failed unwrap is a failed test")]

    use std::path::Path;
    use std::time::{Duration, Instant};

    use super::*;

    /// Whether this process has a handle open on `path`'s inode (by `/proc/self/fd`).
    fn open_in_this_process(path: &Path) -> bool {
        use std::os::unix::fs::MetadataExt;
        let ino = std::fs::metadata(path).unwrap().ino();
        std::fs::read_dir("/proc/self/fd")
            .unwrap()
            .any(|e| std::fs::metadata(e.unwrap().path()).is_ok_and(|m| m.ino() == ino))
    }

    #[test]
    fn handed_over_files_get_closed_and_the_caller_closes_its_own() {
        let dir = tempfile::tempdir().unwrap();
        // More files than the queue holds, so some are closed by the caller.
        let paths: Vec<_> = (0..3 * QUEUE)
            .map(|i| {
                let p = dir.path().join(format!("f{i}"));
                std::fs::write(&p, b"x").unwrap();
                p
            })
            .collect();
        for p in &paths {
            close(File::open(p).unwrap(), Threads::Rayon);
        }
        let deadline = Instant::now() + Duration::from_secs(20);
        while paths.iter().any(|p| open_in_this_process(p)) {
            assert!(Instant::now() < deadline, "handles still open after 20 s");
            std::thread::sleep(Duration::from_millis(5));
        }
        let p = dir.path().join("caller");
        std::fs::write(&p, b"x").unwrap();
        close(File::open(&p).unwrap(), Threads::Caller);
        assert!(!open_in_this_process(&p));
    }
}
